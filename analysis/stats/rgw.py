"""The RGW campaign (``capture/rgw``, issue 28) against the getput diary
(``../shared/seeds/cbt-rgw-getput-diary.txt``, ``data/published/rgw-getput-diary.csv``).

Per run, from the tidy tables: PUT and GET throughput (MiB/s) and mean latency (ms) from getput's total
lines (``kind`` getput, job ``put``/``get``), rados bench's write and seq bandwidth for the ``rados`` arm,
and from the run's 1 s system log over the PUT phase's inner window (:data:`PUT_WINDOW`, s of the log):
radosgw's CPU (cores), the machine's CPU busy share and the bucket-index pool's ops in flight summed over
OSDs.  Contrasts are ratios of geometric means with Welch's t on logs (95 % CI, two-sided p) and the
repeats per arm that a two-sample t-test needs for 80 % power at the observed effect (statsmodels).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .verdicts import CONTRADICTED, NOT_MEASURABLE, REPRODUCED, UNDECIDED, bh, rule

ALPHA = 0.05
MIB = float(1 << 20)
#: the PUT phase inside a run's system log (s): the load generator starts PUTs 1–3 s in (interpreter, bucket
#: creation, a 1 s common start) and runs them load.put_s (60) seconds, so 5–60 s is PUT alone
PUT_WINDOW = (5.0, 60.0)
#: the diary's HDD-filestore arms (its section "RGW with HDD backed OSDs") and ours that answer them
DIARY_ARMS = {"1bucket_0shards": "shards-1", "1bucket_8shards": "shards-8", "64buckets_or_shards": "shards-64"}


def _sel(t: pd.DataFrame, campaign: str) -> pd.DataFrame:
    return t[t["campaign"].astype(str) == campaign]


def _folder(source: pd.Series) -> pd.Series:
    return source.astype(str).str.rsplit("/", n=1).str[0]


def run_table(summary: pd.DataFrame, series: pd.DataFrame, campaign: str) -> pd.DataFrame:
    """One row per run (arm, repeat): ``put_mib_s``, ``get_mib_s``, ``put_lat_ms``, ``put_errors`` (getput
    arms) or ``put_mib_s`` = rados bench write, ``get_mib_s`` = its seq read (rados arm); ``rgw_cores``,
    ``cpu_busy`` and ``index_in_flight`` over :data:`PUT_WINDOW`."""
    s = _sel(summary, campaign)
    keys = ["arm", "repeat"]
    rows: dict[tuple, dict[str, Any]] = {}

    def put(key, **kw):
        rows.setdefault(key, {}).update(kw)

    g = s[(s["kind"].astype(str) == "getput") & s["job"].astype(str).isin(["put", "get"])]
    for (arm, rep, job, metric), v in g.groupby(["arm", "repeat", "job", "metric"], observed=True)["value"]:
        phase = str(job)
        if metric == "bw":
            put((arm, rep), **{f"{phase}_mib_s": float(v.iloc[0]) / MIB})
        elif metric == "lat_mean":
            put((arm, rep), **{f"{phase}_lat_ms": float(v.iloc[0]) / 1e6})
        elif metric == "errors":
            put((arm, rep), **{f"{phase}_errors": float(v.iloc[0])})
    r = s[(s["kind"].astype(str) == "rados-bench") & (s["metric"].astype(str) == "bw")]
    for (arm, rep, src), v in r.groupby(["arm", "repeat", "source"], observed=True)["value"]:
        phase = "put" if str(src).rsplit("/", 1)[-1].startswith("write") else "get"
        put((arm, rep), **{f"{phase}_mib_s": float(v.iloc[0]) / MIB})
    se = _sel(series, campaign)
    se = se[(se["kind"].astype(str) == "sysutil") & se["t_s"].between(*PUT_WINDOW)]
    for metric, col, how in (("proc_cpu", "rgw_cores", "mean"), ("osd_pool_in_flight", "index_in_flight", "sum"),
                             ("cpu_busy", "cpu_busy", "mean")):
        x = se[se["metric"].astype(str) == metric]
        if metric == "proc_cpu":
            x = x[x["job"].astype(str) == "radosgw"]
        if x.empty:
            continue
        per_t = x.groupby(["arm", "repeat", "t_s"], observed=True)["value"].agg(how)  # over OSDs / CPUs
        for (arm, rep), v in per_t.groupby(level=[0, 1], observed=True):
            put((arm, rep), **{col: float(v.mean())})
    out = pd.DataFrame([{"arm": a, "repeat": int(rp), **d} for (a, rp), d in rows.items()])
    if out.empty:
        return out
    if "rgw_cores" in out and "put_mib_s" in out:
        out["rgw_cores_per_100mib_s"] = out["rgw_cores"] / out["put_mib_s"] * 100
        out.loc[out["arm"] == "rados", "rgw_cores_per_100mib_s"] = np.nan
    return out.sort_values(keys).reset_index(drop=True)


def cbt_runs(summary: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """CBT's own getput runs: the getput totals of a CBT archive whose ``source`` starts with ``prefix``
    (``rgw/rgw-cbt-2026/``: ``<arm>/results/<iteration>/id-…/…/output.gw0.localhost.gz``), one row per
    arm and CBT iteration (``repeat``): ``put_mib_s``, ``put_lat_ms``, ``put_errors``.  CBT's archive carries
    no campaign or arm of ours, so both come from the path."""
    cols = ["arm", "repeat", "put_mib_s", "put_lat_ms", "put_errors"]
    src = summary["source"].astype(str)
    s = summary[src.str.startswith(prefix) & (summary["kind"].astype(str) == "getput")
                & (summary["job"].astype(str) == "put")]
    if s.empty:
        return pd.DataFrame(columns=cols)
    arm = s["source"].astype(str).str.slice(len(prefix)).str.split("/", n=1).str[0]
    w = (s.assign(arm=arm.to_numpy(), metric=s["metric"].astype(str), repeat=s["repeat"].astype(int))
         .pivot_table(index=["arm", "repeat"], columns="metric", values="value", aggfunc="first"))
    out = pd.DataFrame({"put_mib_s": w["bw"] / MIB, "put_lat_ms": w.get("lat_mean") / 1e6,
                        "put_errors": w.get("errors")}).reset_index()
    return out[cols].sort_values(["arm", "repeat"]).reset_index(drop=True)


def cbt_vs_harness(cbt: pd.DataFrame, runs: pd.DataFrame, ref: str, metric: str = "put_mib_s",
                   alpha: float = ALPHA) -> pd.DataFrame:
    """Each CBT arm over our harness's arm ``ref`` on ``metric`` (:func:`log_ratio`): the same load through
    CBT and through ``capture.rgw``."""
    base = runs.loc[runs["arm"] == ref, metric].dropna().to_numpy()
    rows = [{"arm": f"CBT {arm}", "vs": ref, **log_ratio(g[metric].dropna().to_numpy(), base, alpha)}
            for arm, g in cbt.groupby("arm")]
    return pd.DataFrame(rows).set_index("arm")


def arm_table(runs: pd.DataFrame, metric: str = "put_mib_s") -> pd.DataFrame:
    """Per arm: runs, median, min, max, mean and SD of ``metric``."""
    g = runs.dropna(subset=[metric]).groupby("arm")[metric]
    return pd.DataFrame({"n": g.size(), "median": g.median(), "min": g.min(), "max": g.max(), "mean": g.mean(),
                         "sd": g.std(ddof=1)})


def log_ratio(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA) -> dict[str, float]:
    """``a`` over ``b`` as a ratio of geometric means, Welch's t on logs (``scipy.stats.ttest_ind``,
    ``equal_var=False``, its CI): ratio, CI, p, Cohen's d on the raw values, and the repeats per arm for
    power 0.8 at that d (NaN with fewer than two runs a side)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    la, lb = np.log(a), np.log(b)
    out = {"n_a": len(a), "n_b": len(b), "ratio": float(np.exp(la.mean() - lb.mean()))}
    if len(a) < 2 or len(b) < 2:
        return {**out, "lo": np.nan, "hi": np.nan, "p": np.nan, "d": np.nan, "repeats_needed": np.nan}
    sd = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    d = (a.mean() - b.mean()) / sd if sd > 0 else np.inf
    if la.var(ddof=1) + lb.var(ddof=1) == 0:  # no spread on either side: the ratio is exact
        lo = hi = out["ratio"]
        p = 0.0 if out["ratio"] != 1 else 1.0
    else:
        t = stats.ttest_ind(la, lb, equal_var=False)
        ci = t.confidence_interval(1 - alpha)
        lo, hi, p = float(np.exp(ci.low)), float(np.exp(ci.high)), float(t.pvalue)
    return {**out, "lo": lo, "hi": hi, "p": p, "d": float(d), "repeats_needed": _n_per_arm(d, alpha)}


def _n_per_arm(d: float, alpha: float = ALPHA, power: float = 0.8) -> float:
    """Runs per arm for a two-sided two-sample t-test to reach ``power`` at effect ``d``
    (:func:`analysis.stats.consistency._n_per_arm`); 2 when d is infinite (no spread)."""
    from .consistency import n_per_arm
    if not np.isfinite(d):
        return 2.0
    return float(n_per_arm(np.array([d]), alpha, power)[0])


def contrasts(runs: pd.DataFrame, metric: str = "put_mib_s", ref: str = "shards-1",
              alpha: float = ALPHA) -> pd.DataFrame:
    """Every other arm against ``ref`` on ``metric`` (:func:`log_ratio`)."""
    v = runs.dropna(subset=[metric])
    base = v.loc[v["arm"] == ref, metric].to_numpy()
    rows = [{"arm": arm, "vs": ref, **log_ratio(g[metric].to_numpy(), base, alpha)}
            for arm, g in v.groupby("arm") if arm != ref]
    return pd.DataFrame(rows).set_index("arm")


def published_vs_measured(published: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The diary's HDD arms beside ours: each arm's write throughput and its share of rados bench on the
    same cluster (the diary: rados bench 550–600 MB/s, three runs 580, 580, 564; ours: the rados arm's
    mean).  ``origin`` says which numbers are the diary's (published) and which measured here."""
    hdd = published[(published["setup"].astype(str) == "hdd") & (published["metric"] == "write_bw")
                    & (published["kind"] == "measured")]
    rados_pub = hdd[(hdd["tool"] == "rados_bench") & hdd["run"].astype(str).str.len().gt(0)]["value"].astype(float)
    rados_ours = runs.loc[runs["arm"] == "rados", "put_mib_s"].dropna()
    rows = []
    for pub_arm, ours in DIARY_ARMS.items():
        p = hdd[(hdd["tool"] == "getput") & (hdd["arm"] == pub_arm)]["value"].astype(float)
        m = runs.loc[runs["arm"] == ours, "put_mib_s"].dropna()
        rows.append({"diary arm": pub_arm, "our arm": ours, "diary MB/s": p.mean() if len(p) else np.nan,
                     "diary runs": len(p), "diary / rados": p.mean() / rados_pub.mean() if len(p) else np.nan,
                     "ours MiB/s (median)": m.median() if len(m) else np.nan,
                     "ours min–max": f"{m.min():.2f}–{m.max():.2f}" if len(m) else "",
                     "ours / rados": m.mean() / rados_ours.mean() if len(m) and len(rados_ours) else np.nan})
    return pd.DataFrame(rows)


def claims(runs: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """The diary's HDD claims tested on our runs: each a contrast of two arms (ratio, CI, p), the diary's
    ratio from its stated numbers, q (Benjamini–Hochberg over these claims) and a verdict by the rules of
    :mod:`analysis.stats.verdicts` (direction and size: ``reproduced``, ``same direction, smaller`` /
    ``larger``, ``contradicted``, ``undecided`` with the repeats per arm that would decide it, ``not
    measurable here``).  The parity claim (64 shards vs rados bench): ``reproduced`` when the CI lies
    within ±10 % of parity, ``contradicted`` when q < α and the CI lies wholly outside that band, else
    ``undecided``."""
    c1 = contrasts(runs, ref="shards-1", alpha=alpha)
    rados = runs[runs["arm"] == "rados"]["put_mib_s"].dropna().to_numpy()
    s64 = runs[runs["arm"] == "shards-64"]["put_mib_s"].dropna().to_numpy()
    specs = [
        ("more shards (64) write faster than one unsharded bucket", "shards-64", "shards-1", 574.0 / 220.0, 1),
        ("8 shards write faster than one unsharded bucket (220 → 400 MB/s)", "shards-8", "shards-1", 400.0 / 220.0, 1),
        ("a bucket per process writes faster than one unsharded bucket", "bucket-per-proc", "shards-1",
         574.0 / 220.0, 1),
        ("64 shards write about as fast as rados bench (574 vs 575 MB/s)", "shards-64", "rados", 574.0 / 574.7, 0),
    ]
    rows = []
    for text, a, b, diary, direction in specs:
        if a == "shards-64" and b == "rados":
            r = log_ratio(s64, rados, alpha) if len(s64) and len(rados) else None
        else:
            r = c1.loc[a].to_dict() if a in c1.index else None
        if r is not None and not np.isfinite(r.get("p", np.nan)):
            r = None
        rows.append({"claim": text, "arm": a, "vs": b, "diary ratio": round(diary, 3), "direction": direction,
                     **({k: r[k] for k in ("ratio", "lo", "hi", "p", "repeats_needed")} if r else {})})
    out = pd.DataFrame(rows)
    for k in ("ratio", "lo", "hi", "p", "repeats_needed"):
        if k not in out:
            out[k] = np.nan
    out["q"] = bh(out["p"].to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        v, _, _ = rule(out["q"], np.log(out["ratio"]), np.log(out["lo"]), np.log(out["hi"]),
                       np.log(out["diary ratio"]), alpha)
    parity = out["direction"] == 0
    band = (out["lo"] >= 0.9) & (out["hi"] <= 1.1)
    outside = (out["lo"] > 1.1) | (out["hi"] < 0.9)
    v = np.where(parity & out["q"].notna(),
                 np.select([band, (out["q"] < alpha) & outside], [REPRODUCED, CONTRADICTED], UNDECIDED), v)
    out["verdict"] = v
    return out.drop(columns="direction")


def conclusion(runs: pd.DataFrame, claim_table: pd.DataFrame, machine: str = "this VM") -> str:
    """Markdown: the verdicts, each arm's PUT median, the RGW/rados ratio and RGW's CPU per 100 MiB/s."""
    arms = arm_table(runs)
    lines = ["**What the RGW campaign says here** (computed from the runs above):", ""]
    for _, r in claim_table.iterrows():
        if r["verdict"] == NOT_MEASURABLE:
            lines.append(f"- {r['claim']}: not measurable here (too few runs).")
            continue
        extra = "" if r["verdict"] != UNDECIDED or not np.isfinite(r.get("repeats_needed", np.nan)) else \
            f"; about {int(r['repeats_needed'])} runs per arm would decide it"
        lines.append(f"- {r['claim']}: **{r['verdict']}** — ours {r['ratio']:.2f}× (95 % CI {r['lo']:.2f}–{r['hi']:.2f}, "
                     f"p = {r['p']:.3g}, BH q = {r['q']:.3g}), the diary {r['diary ratio']:.2f}×{extra}.")
    if "rados" in arms.index:
        best = arms.drop(index="rados")["median"].idxmax() if len(arms) > 1 else None
        if best is not None:
            lines.append(f"- The fastest RGW arm ({best}, median {arms.loc[best, 'median']:.2f} MiB/s) reached "
                         f"{arms.loc[best, 'median'] / arms.loc['rados', 'median']:.0%} of rados bench "
                         f"({arms.loc['rados', 'median']:.2f} MiB/s) at the same concurrency.")
    if "rgw_cores_per_100mib_s" in runs:
        c = runs.dropna(subset=["rgw_cores_per_100mib_s"])["rgw_cores_per_100mib_s"]
        if len(c):
            lines.append(f"- radosgw used {c.median():.2f} cores per 100 MiB/s of PUTs (median over RGW runs, "
                         f"{c.min():.2f}–{c.max():.2f}); the diary's 32 MB tcmalloc cache: about 1 core per 100 MB/s, "
                         "128 MB: 0.6–0.7.")
    lines += ["", f"Scale: one radosgw and 4 OSDs on {machine}, each OSD limited to an HDD-like IO budget; the "
              "diary's cluster had 24 HDD OSDs on 4 hosts. Ratios compare, absolute MiB/s do not."]
    return "\n".join(lines)

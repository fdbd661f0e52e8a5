"""The same scheduler experiment on two Ceph releases (issue 24): Pacific 16.2.15 (``qos-v2``) and Reef
18.2.7 (``qos-reef``), one campaign design (capture/campaigns/qos-reef.yaml), one machine.

- :func:`allocations` — the mClock allocations each arm's OSDs *reported* (``run.json``'s
  ``osd_config.effective``, from ``ceph config show-with-defaults osd.0``), as shares of the OSD's IOPS
  capacity so the two releases' units meet: Pacific 16.2 reports res/lim in IOPS per op shard (lim 999999 =
  none), Reef 18.2 fractions of the OSD's capacity (lim 0 = none).
- :func:`release_contrast` — per scenario, arm and metric: Reef over Pacific (ratio of geometric means,
  Welch t on logs, 95 % CI; the runs of two campaigns are independent samples).
- :func:`interaction` — does the scheduler effect itself change between releases?  Per scenario and
  metric, least squares on log(value) with repeat-block fixed effects (a block = one bring-up of one
  release: the level of a bring-up shifts every arm in it, qos-v2's pilot saw 946 vs 705 IOPS between two)
  and arm effects common to both releases, plus ``reef × arm`` terms: their F test against the model
  without them is the interaction test; each term is that arm's effect against ``ref`` on Reef over the
  same on Pacific (a ratio, with t test and CI); statsmodels OLS fits both models.
- :func:`operator_table` — per background operation, the (release, arm) that got through it fastest and
  the one with the smallest client cost here, with the effect size against the next best and its CI.

Absolute values are compared only between these two campaigns: same machine, same throttled regime.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from statsmodels.regression.linear_model import OLS
from scipy import stats

from ..ingest.base import IngestError
from ..ingest.context import ceph_release_of
from .abtest import welch
from .verdicts import DECIDED, LARGER, REPRODUCED, SMALLER

#: verdicts in which the claim's direction holds
SAME_DIRECTION = (REPRODUCED, SMALLER, LARGER)

RELEASES = ("pacific", "reef")
CLASSES = ("client", "background_recovery", "background_best_effort")
#: Pacific 16.2's "no limit" for ``*_lim`` (IOPS per shard)
PACIFIC_LIM_NONE = 999999
ALPHA = 0.05


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.nan


def _pick(eff: dict[str, Any], key: str) -> float:
    """An hdd/ssd pair's value: the plain option if set (> 0), else the ssd one if both differ (the
    harness pins hdd = ssd; ``bluestore_debug_enforce_settings`` is ssd), else either."""
    plain, hdd, ssd = (_num(eff.get(k)) for k in (key, f"{key}_hdd", f"{key}_ssd"))
    if plain > 0:
        return plain
    return ssd if np.isfinite(ssd) else hdd


def allocations_from_effective(eff: dict[str, Any], release: str) -> pd.DataFrame:
    """One row per mClock class of what an OSD reported: ``res``/``wgt``/``lim`` as printed, and
    ``res_share``/``lim_share`` as fractions of the OSD's IOPS capacity (``lim_share`` NaN = no limit).
    Empty for a WPQ OSD."""
    if str(eff.get("osd_op_queue")) != "mclock_scheduler":
        return pd.DataFrame(columns=["class", "res", "wgt", "lim", "res_share", "lim_share"])
    cap = _pick(eff, "osd_mclock_max_capacity_iops")
    shards = _pick(eff, "osd_op_num_shards")
    rows = []
    for cls in CLASSES:
        res, wgt, lim = (_num(eff.get(f"osd_mclock_scheduler_{cls}_{k}")) for k in ("res", "wgt", "lim"))
        if release == "pacific":
            per_osd = shards / cap if cap > 0 and shards > 0 else np.nan
            res_s = res * per_osd
            lim_s = np.nan if lim >= PACIFIC_LIM_NONE else lim * per_osd
        elif release == "reef":
            res_s, lim_s = res, (np.nan if lim == 0 else lim)
        else:
            raise ValueError(f"release {release!r}: expected one of {', '.join(RELEASES)}")
        rows.append({"class": cls, "res": res, "wgt": wgt, "lim": lim, "res_share": res_s, "lim_share": lim_s})
    return pd.DataFrame(rows)


def read_run_configs(data_dir: str | Path, campaigns: Iterable[str]) -> pd.DataFrame:
    """Every ``run.json`` under ``data_dir`` of ``campaigns``: ``campaign, scenario, arm, repeat, release,
    effective`` (the dict the harness recorded).  Pilot and warm-up folders are skipped by campaign name."""
    want = set(campaigns)
    rows = []
    for p in sorted(Path(data_dir).rglob("run.json")):
        if "_inprogress" in p.parts or "_superseded" in p.parts:
            continue
        try:
            d = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise IngestError(p, f"expected a JSON object (run.json): {e}", line=getattr(e, "lineno", None)) from None
        if not isinstance(d, dict):
            raise IngestError(p, "expected a JSON object (run.json)", line=1)
        if d.get("campaign") not in want:
            continue
        eff = (d.get("osd_config") or {}).get("effective") or {}
        rel = (ceph_release_of(d) or (None, None))[0]
        rows.append({"campaign": d["campaign"], "scenario": d.get("scenario"), "arm": d.get("arm"),
                     "repeat": d.get("repeat"), "release": rel, "effective": eff, "path": str(p)})
    return pd.DataFrame(rows, columns=["campaign", "scenario", "arm", "repeat", "release", "effective", "path"])


def allocations(configs: pd.DataFrame) -> pd.DataFrame:
    """Per (release, arm, class) the allocation its OSDs reported (:func:`allocations_from_effective`),
    with ``runs`` (how many runs reported it) and ``variants`` (distinct reports: 1 unless a run differed).
    Only mClock arms have rows."""
    rows = []
    for (rel, arm), g in configs.groupby(["release", "arm"], sort=True):
        seen = {}
        for eff in g["effective"]:
            a = allocations_from_effective(eff, rel)
            if a.empty:
                continue
            key = tuple(np.nan_to_num(a[["res", "wgt", "lim"]].to_numpy(float).ravel(), nan=-1.0).round(6))
            seen.setdefault(key, [a, 0])
            seen[key][1] += 1
        if not seen:
            continue
        a, n = max(seen.values(), key=lambda v: v[1])
        profile = str(g["effective"].iloc[0].get("osd_mclock_profile"))
        rows.append(a.assign(release=rel, arm=arm, profile=profile, runs=n, variants=len(seen)))
    if not rows:
        return pd.DataFrame(columns=["release", "arm", "profile", "class", "res", "wgt", "lim", "res_share",
                                     "lim_share", "runs", "variants"])
    out = pd.concat(rows, ignore_index=True)
    return out[["release", "arm", "profile", "class", "res", "wgt", "lim", "res_share", "lim_share", "runs",
                "variants"]]


def allocation_table(alloc: pd.DataFrame) -> pd.DataFrame:
    """:func:`allocations` side by side: index (arm, class), per release ``res / wgt / lim`` as shares of
    capacity (``lim`` "none" = no limit)."""
    def fmt(r) -> str:
        lim = "none" if not np.isfinite(r["lim_share"]) else f"{r['lim_share']:.2f}"
        return f"{r['res_share']:.2f} / {r['wgt']:g} / {lim}"
    if alloc.empty:
        return pd.DataFrame()
    t = alloc.assign(cell=alloc.apply(fmt, axis=1)).pivot_table(index=["arm", "class"], columns="release",
                                                                 values="cell", aggfunc="first")
    return t.reindex(columns=[r for r in RELEASES if r in t.columns])


def release_values(facts: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, metric) of both campaigns, ``release, campaign, scenario, arm, repeat (str), metric,
    value``: ``op_rate`` (objects/s through the run's window; scenarios with an operation) and ``client_iops``
    (IOPS in that window, or over the client run for the baseline) from ``facts``
    (:func:`analysis.stats.pilot.run_facts` rows with ``release``), and ``clat_mean`` (ms) from ``metrics``
    (:func:`analysis.stats.qos_derived.run_metrics` rows with ``release``)."""
    keys = ["release", "campaign", "scenario", "arm", "repeat"]
    f = facts.melt(id_vars=keys, value_vars=["op_rate", "client_iops"], var_name="metric", value_name="value")
    f = f[(f["metric"] != "op_rate") | (f["scenario"].astype(str) != "baseline")]
    m = metrics.loc[metrics["metric"] == "clat_mean", keys + ["metric", "value"]]
    out = pd.concat([f, m], ignore_index=True).dropna(subset=["value"])
    return out.astype({k: str for k in keys}).reset_index(drop=True)


def release_contrast(values: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """``values``: one row per run, ``release, scenario, arm, metric, value``.  Per (scenario, arm, metric)
    present on both releases: ``n_pacific``, ``n_reef``, medians, ``ratio`` = Reef / Pacific geometric-mean
    ratio with ``lo``/``hi`` (CI 1 − alpha) and Welch ``p`` on logs (NaN with < 2 runs a side)."""
    rows = []
    for (scen, arm, metric), g in values.groupby(["scenario", "arm", "metric"], sort=True):
        a = g.loc[g["release"] == "pacific", "value"].to_numpy(float)
        b = g.loc[g["release"] == "reef", "value"].to_numpy(float)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if not len(a) or not len(b):
            continue
        r = {"scenario": scen, "arm": arm, "metric": metric, "n_pacific": len(a), "n_reef": len(b),
             "median_pacific": np.median(a), "median_reef": np.median(b), "ratio": np.nan, "lo": np.nan,
             "hi": np.nan, "p": np.nan}
        if len(a) >= 2 and len(b) >= 2 and (a > 0).all() and (b > 0).all():
            w = welch(a, b, alpha)
            if w["test"]:
                r.update(ratio=float(np.exp(w["mean"])), lo=float(np.exp(w["lo"])), hi=float(np.exp(w["hi"])),
                         p=w["p"])
        elif (a > 0).all() and (b > 0).all():
            r["ratio"] = float(np.exp(np.log(b).mean() - np.log(a).mean()))
        rows.append(r)
    return pd.DataFrame(rows, columns=["scenario", "arm", "metric", "n_pacific", "n_reef", "median_pacific",
                                       "median_reef", "ratio", "lo", "hi", "p"])


def _design(d: pd.DataFrame, arms: Sequence[str], ref: str, with_interaction: bool) -> tuple[np.ndarray, list[str]]:
    blocks = sorted(d["block"].unique())
    cols, names = [], []
    for b in blocks:  # one level per block (no separate intercept): a release's level lives in its blocks
        cols.append((d["block"] == b).to_numpy(float))
        names.append(f"block[{b}]")
    for a in arms:
        if a == ref:
            continue
        cols.append((d["arm"] == a).to_numpy(float))
        names.append(f"arm[{a}]")
    if with_interaction:
        for a in arms:
            if a == ref:
                continue
            cols.append(((d["arm"] == a) & (d["release"] == "reef")).to_numpy(float))
            names.append(f"reef:arm[{a}]")
    return np.column_stack(cols), names


def interaction(values: pd.DataFrame, ref: str = "wpq", alpha: float = ALPHA) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Release × arm interaction per (scenario, metric) of ``values`` (one row per run: ``release, scenario,
    arm, repeat, metric, value``; positive values; arms present on both releases only, ``ref`` among them).

    Returns ``(tests, terms)``.  ``tests``: per (scenario, metric) ``arms``, ``runs``, ``F``, ``df_num``,
    ``df_den``, ``p`` of the interaction terms together.  ``terms``: per (scenario, metric, arm ≠ ref)
    ``ratio`` = exp(coefficient) = (arm/ref on Reef) / (arm/ref on Pacific), its ``lo``/``hi`` (CI 1 − alpha)
    and ``p``; also ``effect_pacific`` / ``effect_reef`` (arm/ref from the cell means of log value).
    Blocks: ``(release, repeat)``."""
    tests, terms = [], []
    v = values[np.isfinite(values["value"]) & (values["value"] > 0)]
    for (scen, metric), g in v.groupby(["scenario", "metric"], sort=True):
        both = set(g.loc[g["release"] == "pacific", "arm"]) & set(g.loc[g["release"] == "reef", "arm"])
        if ref not in both or len(both) < 2:
            continue
        d = g[g["arm"].isin(both)].copy()
        d["block"] = d["release"].astype(str) + "/" + d["repeat"].astype(str)
        arms = sorted(both, key=lambda a: (a != ref, a))
        y = np.log(d["value"].to_numpy(float))
        X1, names = _design(d, arms, ref, True)
        X0, _ = _design(d, arms, ref, False)
        r1, r0 = np.linalg.matrix_rank(X1), np.linalg.matrix_rank(X0)
        if len(y) - r1 < 1 or r1 == r0:
            continue
        full, restricted = OLS(y, X1).fit(), OLS(y, X0).fit()
        with np.errstate(divide="ignore", invalid="ignore"):
            F, p, df_num = full.compare_f_test(restricted)
        tests.append({"scenario": scen, "metric": metric, "arms": len(arms), "runs": len(y), "F": float(F),
                      "df_num": int(df_num), "df_den": int(full.df_resid), "p": float(p)})
        if r1 < X1.shape[1]:
            continue  # terms not identifiable one by one (an arm missing from every block of a release)
        ci = full.conf_int(alpha)
        cell = d.assign(ly=y).groupby(["release", "arm"])["ly"].mean()
        for i, nm in enumerate(names):
            if not nm.startswith("reef:"):
                continue
            arm = nm[len("reef:arm["):-1]
            terms.append({"scenario": scen, "metric": metric, "arm": arm, "ref": ref,
                          "effect_pacific": float(np.exp(cell[("pacific", arm)] - cell[("pacific", ref)])),
                          "effect_reef": float(np.exp(cell[("reef", arm)] - cell[("reef", ref)])),
                          "ratio": float(np.exp(full.params[i])), "lo": float(np.exp(ci[i, 0])),
                          "hi": float(np.exp(ci[i, 1])), "p": float(full.pvalues[i]), "df": int(full.df_resid)})
    return (pd.DataFrame(tests, columns=["scenario", "metric", "arms", "runs", "F", "df_num", "df_den", "p"]),
            pd.DataFrame(terms, columns=["scenario", "metric", "arm", "ref", "effect_pacific", "effect_reef",
                                         "ratio", "lo", "hi", "p", "df"]))


#: the background operation each scenario is about, and the metric that says how fast it went
OP_OF_SCENARIO = {"scrub": "scrub", "snaptrim": "snaptrim", "snaptrim_recovery": "snaptrim"}


def operator_table(facts: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """For a cluster operator: per scenario with a background operation, over every (release, arm) with ≥ 2
    runs, the fastest (highest median ``op_rate``, objects/s through the run's window) and the cheapest
    for the client (lowest median ``drop_pct``, the client's IOPS drop during the operation against the same
    run before it, %).  ``facts``: :func:`analysis.stats.pilot.run_facts` rows with ``release`` and
    ``drop_pct``.  Each winner's effect against the runner-up: ``vs`` (the runner-up), ``effect`` (op rate:
    ratio of geometric means; client cost: difference of means, percentage points) with ``lo``/``hi`` and
    Welch ``p``; ``n``/``n_vs`` runs.  ``pareto``: the (release, arm) pairs no other beats on both."""
    rows = []
    f = facts[facts["scenario"].isin(list(OP_OF_SCENARIO))]
    for scen, g in f.groupby("scenario", sort=True):
        g = g.assign(cell=g["release"].astype(str) + " · " + g["arm"].astype(str))
        n = g.groupby("cell").size()
        g = g[g["cell"].isin(n[n >= 2].index)]
        if g["cell"].nunique() < 2:
            continue
        med = g.groupby("cell").agg(rate=("op_rate", "median"), drop=("drop_pct", "median"))
        pareto = [c for c in med.index
                  if not ((med["rate"] >= med.loc[c, "rate"]) & (med["drop"] <= med.loc[c, "drop"])
                          & ((med["rate"] > med.loc[c, "rate"]) | (med["drop"] < med.loc[c, "drop"]))).any()]
        for what, col, order in (("fastest", "rate", False), ("cheapest for the client", "drop", True)):
            ranked = med[col].sort_values(ascending=order)
            best, second = ranked.index[0], ranked.index[1]
            a = g.loc[g["cell"] == second, "op_rate" if col == "rate" else "drop_pct"].to_numpy(float)
            b = g.loc[g["cell"] == best, "op_rate" if col == "rate" else "drop_pct"].to_numpy(float)
            if col == "rate":
                w = welch(a[a > 0], b[b > 0], alpha)
                eff, lo, hi = (np.exp(w["mean"]), np.exp(w["lo"]), np.exp(w["hi"])) if w["test"] else (np.nan,) * 3
                unit = "× op rate"
            else:
                res = stats.ttest_ind(b, a, equal_var=False)
                ci = res.confidence_interval(1 - alpha)
                eff, lo, hi, w = b.mean() - a.mean(), ci.low, ci.high, {"p": res.pvalue}
                unit = "pp client drop"
            rows.append({"scenario": scen, "op": OP_OF_SCENARIO[scen], "criterion": what, "best": best,
                         "n": int(n[best]), "median": med.loc[best, col], "vs": second, "n_vs": int(n[second]),
                         "median_vs": med.loc[second, col],
                         "effect": eff, "lo": lo, "hi": hi, "unit": unit, "p": w.get("p", np.nan),
                         "pareto": ", ".join(sorted(pareto))})
    return pd.DataFrame(rows, columns=["scenario", "op", "criterion", "best", "n", "median", "vs", "n_vs", "median_vs",
                                       "effect", "lo", "hi", "unit", "p", "pareto"])


def claims_by_release(table: pd.DataFrame, campaigns: dict[str, str]) -> pd.DataFrame:
    """The claims table (:func:`analysis.stats.claims.claims_table` rows of several campaigns) one row per
    testable claim with each release's verdict side by side: ``campaigns`` maps release → campaign (e.g.
    ``{"pacific": "qos-v2", "reef": "qos-reef"}``).  ``holds on``: where the claim's direction holds
    (:mod:`analysis.stats.verdicts`: reproduced, or the same direction smaller or larger): ``both``,
    ``pacific only``, ``reef only``, ``neither`` (both decided, neither holds) or ``undecided`` (a release
    has it undecided / not measurable)."""
    t = table[pd.to_numeric(table["direction"], errors="coerce").notna()]
    cols = {}
    for rel, camp in campaigns.items():
        c = t[t["campaign"].astype(str) == camp].set_index("claim_id")
        cols[rel] = c["verdict"]
        cols[f"ours_{rel}"] = c["ours"]
    out = pd.DataFrame(cols)
    first = t.drop_duplicates("claim_id").set_index("claim_id")
    out.insert(0, "published", first["published"].reindex(out.index))
    out.insert(0, "study", first["study"].reindex(out.index))
    rels = list(campaigns)
    holds = pd.DataFrame({r: out[r].isin(SAME_DIRECTION) for r in rels})
    decided = pd.DataFrame({r: out[r].isin(DECIDED) for r in rels})
    out["holds on"] = np.select(
        [holds.all(axis=1), *[holds[r] & ~holds.drop(columns=r).any(axis=1) & decided.all(axis=1) for r in rels],
         decided.all(axis=1)],
        ["both", *[f"{r} only" for r in rels], "neither"], default="undecided")
    return out.sort_index()


def conclusion(tests: pd.DataFrame, terms: pd.DataFrame, by_release: pd.DataFrame, operator: pd.DataFrame,
               alpha: float = 0.05) -> str:
    """The closing section of the two-release comparison (Markdown), computed from :func:`interaction`
    (``tests``: the F test of the release × arm terms per scenario and metric; ``terms``: one per arm),
    :func:`claims_by_release` (``by_release``: where each seed claim holds) and :func:`operator_table`
    (``operator``: the fastest and the cheapest (release, arm) per operation, each against its runner-up)."""
    lines = ["## Conclusions", ""]
    if len(tests):
        rej = tests[tests["p"] < alpha]
        lines.append(f"- **Does an arm's effect against WPQ change between releases?** The interaction F test "
                     f"rejects in {len(rej)} of {len(tests)} scenario × metric cells at α = {alpha}"
                     + (" (" + ", ".join(f"{r.scenario} {r.metric}" for r in rej.itertuples()) + ")" if len(rej) else "")
                     + f"; {int((terms['p'] < alpha).sum())} of {len(terms)} single arm terms differ "
                     f"(≈ {alpha * len(terms):.1f} by chance).")
        if (terms["p"] < alpha).any():
            big = terms.loc[(terms["p"] < alpha)].assign(d=lambda t: np.abs(np.log(t["ratio"]))).sort_values("d").iloc[-1]
            lines.append(f"  The largest change: {big['arm']} in {big['scenario']} {big['metric']}, its effect against "
                         f"WPQ {big['effect_pacific']:.2f}× on Pacific and {big['effect_reef']:.2f}× on Reef "
                         f"(ratio {big['ratio']:.2f}, CI {big['lo']:.2f}–{big['hi']:.2f}).")
    if len(by_release):
        h = by_release["holds on"].value_counts()
        lines.append("- **The seeds' claims by release:** " + "; ".join(f"{k} {int(n)}" for k, n in h.items()) + ".")
    if len(operator):
        won = operator[operator["p"] < alpha]
        lines.append(f"- **For an operator:** of {len(operator)} (operation, criterion) winners, {len(won)} are told apart "
                     f"from their runner-up at α = {alpha}"
                     + (": " + "; ".join(f"{r.scenario} {r.criterion}: {r.best} over {r.vs} ({r.effect:.2f} {r.unit})"
                                         for r in won.itertuples()) if len(won) else
                        "; where they are not, the winner is this machine's best guess, not a finding") + ".")
    return "\n".join(lines)

"""The mClock-vs-WPQ studies' metrics, defined as the seeds define them, computed per captured run.

One function per definition; notebooks 30 and 31 and :mod:`analysis.stats.reconcile` use these and
nothing else.  Input: the tidy ``summary`` / ``series`` tables of ``analysis.ingest`` over
``data/raw/ceph-qos/`` (fio 3.33 json+ and 1 s averaged logs, the ``ceph-pg-timeline`` reader).
Output units are the seeds': IOPS, ms, objects/s, s, MiB/s.

Metric names are :data:`analysis.published.qos.METRICS`:

- ``client_iops``: fio's average IOPS over the whole client run (read + write for randrw);
- ``client_bw``: fio's average bandwidth over the whole run, directions summed (MiB/s);
- ``clat_mean``: fio's mean completion latency over every IO of the run (ms);
- ``clat_during``: the mean of fio's 1 s clat windows that end while the test's background operation is
  active (part 1's "clat (snaptrim)", "clat (trim+rec)"; part 2's "latency for just the duration of the
  scrub"); directions weighted by their IOPS in the same windows (ms);
- ``clat_p95`` / ``clat_p99`` / ``clat_p99.5``: fio's completion-latency percentiles of the write
  direction over the whole run (ms; percentiles of two directions cannot be pooled);
- ``client_iops_op``: the client's IOPS (fio's 1 s windows, directions summed) from the operation's start
  to its end, or to the client's end when it did not end within the client run (right-censored: slow
  arms are measured over the client's time), :func:`analysis.stats.arms.op_windows`;
- ``client_iops_pre``: the same run's client IOPS from 10 s (after fio's warm-up) to the operation's
  start, where that is at least :data:`analysis.stats.arms.MIN_PRE_WINDOWS` windows: the client without
  the operation in the same bring-up of the cluster, a reference for the client drop that needs no
  baseline run (which in a blocked campaign may come from another bring-up);
- ``snaptrim_rate`` / ``recovery_rate``: objects trimmed / misplaced objects recovered per second over the
  operation's duration; ``scrub_rate``: logical MiB scrubbed per second; ``*_duration``: s, from the
  pool/PG timeline; ``*_objects``: objects trimmed / recovered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..labels import str_eq, str_isin
from .arms import MIN_PRE_WINDOWS, RUN_KEYS, client_during, op_windows, run_table

#: background operation whose active window defines ``clat_during`` in each captured scenario
DURING_OP = {"snaptrim": "snaptrim", "snaptrim_recovery": "snaptrim", "scrub": "scrub", "recovery_scrub": "scrub"}
#: timeline summary metric → (seed metric, factor to the seed's unit)
TIMELINE = {"snaptrim_rate": ("snaptrim_rate", 1.0), "snaptrim_duration": ("snaptrim_duration", 1.0),
            "snaptrim_objects": ("snaptrim_objects", 1.0), "recovery_rate": ("recovery_rate", 1.0),
            "recovery_duration": ("recovery_duration", 1.0), "recovery_objects": ("recovery_objects", 1.0),
            "scrub_rate": ("scrub_rate", 1 / 2**20), "scrub_duration": ("scrub_duration", 1.0)}
PERCENTILES = ("clat_p95", "clat_p99", "clat_p99.5")
UNITS = {"client_iops_op": "IOPS", "client_iops_pre": "IOPS", "clat_outside": "ms", "client_bw": "MiB/s", "clat_p95": "ms", "clat_p99": "ms", "clat_p99.5": "ms", "client_iops": "IOPS", "clat_mean": "ms", "clat_during": "ms", "client_iops_during": "IOPS",
         "snaptrim_rate": "objects/s", "recovery_rate": "objects/s", "scrub_rate": "MiB/s",
         "snaptrim_duration": "s", "recovery_duration": "s", "scrub_duration": "s",
         "snaptrim_objects": "objects", "recovery_objects": "objects"}


def clat_during(series: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per run: ``clat_during`` (ms) and ``client_iops_during`` (IOPS, directions summed) over the 1 s
    fio windows inside the scenario's :data:`DURING_OP` window, and ``clat_outside`` (ms) over the
    run's other windows (the client without the operation: part 1's per-test "baseline" clat) (see :func:`analysis.stats.arms.client_during`);
    clat is the IOPS-weighted mean of the directions' window means.  Runs whose operation did not finish
    have no window and no row."""
    parts = []
    for op in sorted(set(DURING_OP.values())):
        lat = client_during(series, summary, op, "clat", 1e-6)
        iops = client_during(series, summary, op, "iops", 1.0)
        if lat.empty or iops.empty:
            continue
        keys = [k for k in RUN_KEYS if k in lat]
        m = lat.merge(iops, on=keys + ["ddir"], suffixes=("_clat", "_iops"))
        m = m[m["scenario"].map(DURING_OP).eq(op)]
        m["w"] = m["during_iops"] * m["during_clat"]
        g = m.groupby(keys, observed=True)
        m["wo"] = m["outside_iops"] * m["outside_clat"]
        parts.append(pd.DataFrame({"clat_during": g["w"].sum() / g["during_iops"].sum(),
                                   "client_iops_during": g["during_iops"].sum(),
                                   "clat_outside": g["wo"].sum() / g["outside_iops"].sum()}).reset_index())
    if not parts:
        return pd.DataFrame(columns=RUN_KEYS + ["clat_during", "client_iops_during", "clat_outside"])
    return pd.concat(parts, ignore_index=True)


def run_metrics(summary: pd.DataFrame, series: pd.DataFrame, campaign: str | None = None,
                windows: bool = False) -> pd.DataFrame:
    """Long table, one row per (run, metric): ``campaign, scenario, arm, repeat, op_queue, profile,
    metric, value, unit`` with every metric of the module docstring that the run has (``client_iops_op``
    and ``client_iops_pre`` only with ``windows``: the claims table's within-run client drop)."""
    if campaign is not None:
        summary = summary[str_eq(summary["campaign"], campaign)]
        series = series[str_eq(series["campaign"], campaign)]
    runs = run_table(summary)
    keys = [k for k in RUN_KEYS if k in runs]
    wide = runs[keys + ["op_queue", "profile", "iops", "clat_mean_ms"]].rename(
        columns={"iops": "client_iops", "clat_mean_ms": "clat_mean"})
    tl = summary[str_eq(summary["kind"], "ceph-pg-timeline") & summary["metric"].isin(list(TIMELINE))]
    if not tl.empty:
        t = tl.pivot_table(index=keys, columns="metric", values="value", aggfunc="max", observed=True)
        for src, (dst, f) in TIMELINE.items():
            if src in t:
                t[src] = t[src] * f
        t = t.rename(columns={k: v[0] for k, v in TIMELINE.items()}).reset_index()
        t["repeat"] = pd.to_numeric(t["repeat"].astype(str)).astype("int64")
        for k in keys[:-1]:
            t[k] = t[k].astype(str)
        wide = wide.astype({k: str for k in keys[:-1]}).merge(t, on=keys, how="left")
    bw = summary[str_eq(summary["kind"], "fio-json") & str_eq(summary["metric"], "bw")]
    if not bw.empty:
        b = (bw.groupby(keys, observed=True)["value"].sum() / 2**20).rename("client_bw").reset_index()
        b["repeat"] = pd.to_numeric(b["repeat"].astype(str)).astype("int64")
        wide = wide.astype({k: str for k in keys[:-1]}).merge(b.astype({k: str for k in keys[:-1]}), on=keys, how="left")
    pc = summary[str_eq(summary["kind"], "fio-json") & summary["metric"].isin(PERCENTILES)
                 & str_eq(summary["ddir"], "write")]
    if not pc.empty:
        p = pc.pivot_table(index=keys, columns="metric", values="value", aggfunc="max", observed=True) / 1e6
        p = p.reset_index()
        p["repeat"] = pd.to_numeric(p["repeat"].astype(str)).astype("int64")
        wide = wide.astype({k: str for k in keys[:-1]}).merge(p.astype({k: str for k in keys[:-1]}), on=keys, how="left")
    w = op_windows(summary, series) if windows else pd.DataFrame(columns=["op"])
    w = w[w["op"].notna()]
    if not w.empty:
        o = pd.DataFrame({**{k: w[k] for k in keys[:-1]}, "repeat": pd.to_numeric(w["repeat"]).astype("int64"),
                          "client_iops_op": w["client_iops"],
                          "client_iops_pre": w["client_iops_pre"].where(w["pre_windows"] >= MIN_PRE_WINDOWS)})
        wide = wide.astype({k: str for k in keys[:-1]}).merge(o, on=keys, how="left")
    d = clat_during(series, summary)
    if not d.empty:
        d = d.astype({k: str for k in keys[:-1]})
        d["repeat"] = pd.to_numeric(d["repeat"]).astype("int64")
        wide = wide.merge(d, on=keys, how="left")
    long = wide.melt(id_vars=keys + ["op_queue", "profile"], var_name="metric", value_name="value")
    long = long.dropna(subset=["value"])
    long["unit"] = long["metric"].map(UNITS)
    long["profile"] = long["profile"].fillna("").astype(str).replace({"<NA>": "", "nan": ""})
    return long.sort_values(keys + ["metric"]).reset_index(drop=True)


def drop_vs_baseline(metrics: pd.DataFrame, metric: str = "client_iops", baseline_scenario: str = "baseline",
                     baseline_arm: str = "wpq") -> pd.DataFrame:
    """Each run's ``metric`` relative to the baseline (fio alone, no background operation): the median
    over the repeats of ``baseline_arm`` in ``baseline_scenario`` — the seeds' single baseline number
    ("WPQ sees a decrease of 27% in the client IOPS").  Columns: run keys, ``value``, ``baseline``,
    ``change_pct`` = (value / baseline − 1) × 100."""
    m = metrics[metrics["metric"] == metric]
    base = m[(m["scenario"] == baseline_scenario) & (m["arm"] == baseline_arm)]["value"].median()
    out = m.drop(columns=["metric"]).assign(baseline=base)
    out["change_pct"] = (out["value"] / base - 1) * 100 if np.isfinite(base) else np.nan
    return out.reset_index(drop=True)


#: the pool whose object count a background operation changes, and the sign of its rate
RATE_SOURCE = {"snaptrim": ("snap", ("objects",), -1.0), "scrub": ("scrub", ("objects_scrubbed",), 1.0),
               "recovery": (None, ("objects_degraded", "objects_misplaced"), -1.0)}


def background_rate_series(series: pd.DataFrame, op: str, campaign: str | None = None, lag: int = 5) -> pd.DataFrame:
    """A background operation's rate over time per run, from the pool/PG timeline (≈1 s samples):
    snaptrim = clones removed from the ``snap`` pool per second, scrub = objects of the ``scrub`` pool
    scrubbed per second, recovery = degraded + misplaced objects (all pools) recovered per second (the
    timeline reader's ``recovery_objects``); negative steps
    (e.g. objects written while the pool fills) are clipped to 0.  Ceph updates pool and PG counts every
    few seconds, so the rate is taken over ``lag`` samples (a backward difference), not
    sample to sample.  Columns: run keys, ``t_s`` (s since
    fio's spawn, the timeline's clock), ``value`` (objects/s)."""
    pool, metrics, sign = RATE_SOURCE[op]
    s = series[str_eq(series["kind"], "ceph-pg-timeline") & str_isin(series["metric"], metrics)]
    if campaign is not None:
        s = s[str_eq(s["campaign"], campaign)]
    if pool is not None:
        s = s[str_eq(s["job"], pool)]
    keys = [k for k in RUN_KEYS if k in s]
    d = s[keys + ["t_s", "value"]].astype({k: str for k in keys})
    d = d.groupby(keys + ["t_s"], observed=True)["value"].sum().reset_index().sort_values(keys + ["t_s"])
    g = d.groupby(keys, observed=True)
    rate = (sign * g["value"].diff(lag) / g["t_s"].diff(lag)).clip(lower=0)
    out = d.assign(value=rate).dropna(subset=["value"])
    out["repeat"] = pd.to_numeric(out["repeat"]).astype("int64")
    return out.reset_index(drop=True)


def client_series(series: pd.DataFrame, metric: str = "clat", campaign: str | None = None,
                  factor: float = 1e-6) -> pd.DataFrame:
    """fio's 1 s averaged client log per run on the timeline's clock (t + ``fio_t0_after_spawn_s``),
    directions combined (mean of the directions' windows at the same second for clat, sum for iops);
    clat ns → ms by ``factor``.  Columns: run keys, ``t_s``, ``value``."""
    s = series[str_eq(series["kind"], "fio-log") & str_eq(series["metric"], metric)]
    if campaign is not None:
        s = s[str_eq(s["campaign"], campaign)]
    keys = [k for k in RUN_KEYS if k in s]
    t0 = pd.to_numeric(s["fio_t0_after_spawn_s"].astype(str), errors="coerce").fillna(0.0)
    d = pd.DataFrame({**{k: s[k].astype(str) for k in keys}, "t_s": (s["t_s"] + t0).round(0),
                      "value": s["value"] * factor})
    agg = "sum" if metric == "iops" else "mean"
    out = d.groupby(keys + ["t_s"], observed=True)["value"].agg(agg).reset_index()
    out["repeat"] = pd.to_numeric(out["repeat"]).astype("int64")
    return out

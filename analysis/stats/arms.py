"""Campaign runs as one row each, and per-arm medians (the numbers a QoS comparison starts from).

Input is the tidy ``summary`` table of ``analysis.ingest`` over ``data/raw/ceph-qos/`` (fio 3.33
json+ and the ``ceph-pg-timeline`` reader, keys from each run's ``run.json``).  Units in the output:
IOPS 1/s; latencies ms (fio prints ns); durations s.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..labels import str_eq

RUN_KEYS = ["campaign", "scenario", "arm", "repeat"]
#: tuned values carried as run keys by ``analysis.ingest.context.TUNED_KEYS`` (and what else a run says)
RUN_FACTS = ["op_queue", "profile", "max_scrubs", "scrub_cost", "requested_scrub_priority",
             "background_unfinished", "redone"]
DURATIONS = ["scrub_duration", "snaptrim_duration", "recovery_duration"]
#: scenario → the operation it is about (its window defines "during"); the timeline's metric prefix
MAIN_OP = {"scrub": "scrub", "recovery_scrub": "scrub", "snaptrim": "snaptrim",
           "snaptrim_recovery": "snaptrim", "recovery": "recovery"}
#: fewest 1 s client windows before the operation for a run's own pre-operation reference
MIN_PRE_WINDOWS = 5


def run_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per measured run: client IOPS (all directions), mean clat over all IOs and per
    direction p99 clat (ms), and the background-operation durations (s; NaN where the run had none).

    ``clat_mean_ms`` over directions is the IO-count-weighted mean of fio's per-direction means
    (exact: fio's mean is over every IO).  p99 cannot be pooled from per-direction percentiles, so it
    stays per direction (``clat_p99_write_ms``, ``clat_p99_read_ms``).  A scenario's durations come
    from the timeline of the same run; if a pool reports one twice (it should not) the longest wins.
    """
    s = summary.dropna(subset=[k for k in RUN_KEYS if k in summary.columns])
    if s.empty:
        return pd.DataFrame(columns=RUN_KEYS + RUN_FACTS + ["iops", "clat_mean_ms"] + DURATIONS)
    keys = [k for k in RUN_KEYS if k in s.columns]
    facts = [k for k in RUN_FACTS if k in s.columns]
    base = s[keys + facts].astype("string").drop_duplicates(subset=keys).set_index(keys)

    fio = s[str_eq(s["kind"], "fio-json")]
    fio = fio[fio["metric"].isin(["iops", "total_ios", "clat_mean", "clat_p99"])]
    w = fio.pivot_table(index=keys + ["ddir"], columns="metric", values="value", aggfunc="sum",
                        observed=True)
    w = w.reset_index()
    for c in ("iops", "total_ios", "clat_mean", "clat_p99"):
        if c not in w:
            w[c] = np.nan
    w["clat_x_n"] = w["clat_mean"] * w["total_ios"]
    g = w.groupby(keys, observed=True)
    out = pd.DataFrame({"iops": g["iops"].sum(min_count=1),
                        "clat_mean_ms": g["clat_x_n"].sum(min_count=1) / g["total_ios"].sum(min_count=1) / 1e6})
    for d in ("write", "read"):
        wd = w[str_eq(w["ddir"], d)].set_index(keys)
        out[f"iops_{d}"] = wd["iops"]
        out[f"clat_p99_{d}_ms"] = wd["clat_p99"] / 1e6

    tl = s[str_eq(s["kind"], "ceph-pg-timeline") & s["metric"].isin(DURATIONS)]
    dur = tl.pivot_table(index=keys, columns="metric", values="value", aggfunc="max", observed=True)
    out = out.join(dur, how="outer")
    for c in DURATIONS:
        if c not in out:
            out[c] = np.nan
    out = out.reset_index()
    out[keys] = out[keys].astype("string")  # the keys as base has them (repeat is Int64 in the tables)
    out = base.join(out.set_index(keys), how="right").reset_index()
    out["repeat"] = pd.to_numeric(out["repeat"]).astype("int64")
    return out.sort_values(keys).reset_index(drop=True)


def arm_medians(runs: pd.DataFrame, by: Sequence[str] = ("scenario", "arm"),
                values: Sequence[str] | None = None) -> pd.DataFrame:
    """Median of each value over the repeats of each (scenario, arm), with ``n`` = repeats and, per
    duration, ``n_<duration>`` = how many of those runs have one (a run whose operation had not ended
    when the harness stopped waiting has none: a median over fewer runs is flagged that way)."""
    if values is None:
        values = [c for c in ["iops", "clat_mean_ms", "clat_p99_write_ms", "clat_p99_read_ms"] + DURATIONS
                  if c in runs and runs[c].notna().any()]
    g = runs.groupby(list(by), observed=True, sort=True)
    out = g[list(values)].median()
    out.insert(0, "n", g.size())
    for c in values:
        if c in DURATIONS:
            out[f"n_{c}"] = g[c].count()
    return out


def client_during(series: pd.DataFrame, summary: pd.DataFrame, op: str, metric: str = "clat",
                  factor: float = 1e-6) -> pd.DataFrame:
    """Each run's client ``metric`` (fio's 1 s averaged log, ns → ms by ``factor``) while the
    background operation ``op`` (``scrub``, ``snaptrim`` or ``recovery``) ran, per direction.

    The window is [``<op>_start``, ``<op>_start`` + ``<op>_duration``] on the timeline's clock (t=0 at
    fio's spawn); a fio log row (t = the end of its averaging window, on fio's clock) is moved onto it
    by the run's ``fio_t0_after_spawn_s``.  Columns: run keys, ``ddir``, ``during`` (mean of the
    windows inside), ``outside`` (mean of the other windows of the same run), ``windows`` (count
    inside).  Runs where the operation did not finish (no duration) are left out.
    """
    keys = [k for k in RUN_KEYS if k in summary.columns]
    tl = summary[str_eq(summary["kind"], "ceph-pg-timeline")
                 & summary["metric"].isin([f"{op}_start", f"{op}_duration"])]
    win = tl.pivot_table(index=keys, columns="metric", values="value", aggfunc="max", observed=True)
    if win.empty or f"{op}_duration" not in win or f"{op}_start" not in win:
        return pd.DataFrame(columns=keys + ["ddir", "during", "outside", "windows"])
    win = win.dropna().rename(columns={f"{op}_start": "start", f"{op}_duration": "dur"}).reset_index()
    s = series[str_eq(series["kind"], "fio-log") & str_eq(series["metric"], metric)]
    s = s[keys + ["ddir", "t_s", "value", "fio_t0_after_spawn_s"]].copy()
    for k in keys:
        s[k] = s[k].astype(str)
        win[k] = win[k].astype(str)
    s = s.merge(win, on=keys, how="inner")
    t = s["t_s"] + pd.to_numeric(s["fio_t0_after_spawn_s"].astype(str), errors="coerce").fillna(0.0)
    s["inside"] = (t >= s["start"]) & (t <= s["start"] + s["dur"])
    s["v"] = s["value"] * factor
    s["ddir"] = s["ddir"].astype(str)
    g = s.groupby(keys + ["ddir", "inside"], observed=True)["v"].agg(["mean", "size"]).unstack("inside")
    out = pd.DataFrame({"during": g[("mean", True)] if ("mean", True) in g else np.nan,
                        "outside": g[("mean", False)] if ("mean", False) in g else np.nan,
                        "windows": g[("size", True)].fillna(0).astype(int) if ("size", True) in g else 0})
    out = out.reset_index()
    out["repeat"] = pd.to_numeric(out["repeat"]).astype("int64")
    return out


def during_table(during: pd.DataFrame, ddir: str = "write") -> pd.DataFrame:
    """``client_during`` rows (with an ``op`` column) → per (scenario, op, arm): ``n`` runs and the
    medians of ``during``, ``outside`` (ms) and ``windows``; ``ratio`` = during / outside medians."""
    w = during[during["ddir"] == ddir]
    g = w.groupby(["scenario", "op", "arm"], observed=True)
    out = g[["during", "outside", "windows"]].median()
    out.insert(0, "n", g.size())
    out["ratio"] = out["during"] / out["outside"]
    return out


def scrub_tuning_table(runs: pd.DataFrame, during: pd.DataFrame, scenario: str = "scrub") -> pd.DataFrame:
    """The scrub scenario's arms grouped by the values the OSDs ran (``queue`` = mClock profile or
    ``wpq``; ``setting`` = max scrubs, scrub cost in MiB, requested-scrub priority), never by arm name:
    ``n`` and medians of IOPS, mean clat, clat during the scrub (write, ms) and scrub duration (s)."""
    sd = during[(during["op"] == "scrub") & (during["ddir"] == "write")]
    s = runs[runs["scenario"] == scenario].merge(
        sd[["scenario", "arm", "repeat", "during"]].rename(columns={"during": "clat_during_scrub_ms"}),
        on=["scenario", "arm", "repeat"], how="left")
    s["queue"] = s["profile"].fillna("wpq").astype(str)
    cost_mib = (pd.to_numeric(s["scrub_cost"]) / 2**20).round(0).astype("Int64").astype(str)
    s["setting"] = ("max_scrubs=" + s["max_scrubs"].astype(str) + " cost=" + cost_mib + "MiB"
                    + " prio=" + s["requested_scrub_priority"].astype(str))
    g = s.groupby(["queue", "setting"], observed=True)
    out = g[["iops", "clat_mean_ms", "clat_during_scrub_ms", "scrub_duration"]].median()
    out.insert(0, "n", g.size())
    return out


def op_windows(summary: pd.DataFrame, series: pd.DataFrame, warmup_s: float = 10.0) -> pd.DataFrame:
    """Per run, the main operation's window (:data:`MAIN_OP`) and the client IOPS in it and before it.

    Clock: the timeline's (t = 0 at fio's spawn); fio 3.33's 1 s IOPS log rows are moved onto it by the
    run's ``fio_t0_after_spawn_s`` and rounded to the second, directions summed per second.  Columns
    (keys as strings): ``op`` (None for a scenario without one), ``op_start`` and ``op_duration`` (s;
    duration NaN when the operation had not ended when the timeline stopped), ``client_end`` (s, fio's
    last window), ``ended_in_client`` (start + duration ≤ client_end + 1 s), ``win_lo``/``win_hi``: the
    window, [start, start + duration] when the operation ended within the client run, else [start,
    client_end] (right-censored: a slow arm is measured over the client's time); a run without an
    operation: [``warmup_s``, client_end]; ``client_iops`` (IOPS, mean of the windows inside),
    ``client_iops_pre`` (IOPS, the same run's windows from ``warmup_s`` to the operation's start: a
    reference within the run) and ``pre_windows`` (how many such windows)."""
    keys = [k for k in RUN_KEYS if k in summary.columns]
    s = summary.dropna(subset=keys)
    se = series.dropna(subset=keys)
    runs = pd.DataFrame({k: s[k].astype(str) for k in keys}).drop_duplicates().reset_index(drop=True)
    io = se[str_eq(se["kind"], "fio-log") & str_eq(se["metric"], "iops")]
    t0 = io["fio_t0_after_spawn_s"] if "fio_t0_after_spawn_s" in io else pd.Series(0.0, index=io.index)
    t_fio = io["t_s"] + pd.to_numeric(t0.astype(str), errors="coerce").fillna(0.0)
    io = pd.DataFrame({**{k: io[k].astype(str) for k in keys}, "t": t_fio.round(0), "v": io["value"]})
    io = io.groupby(keys + ["t"], observed=True)["v"].sum().reset_index()
    runs = runs.merge(io.groupby(keys)["t"].max().rename("client_end").reset_index(), on=keys, how="left")
    runs["op"] = pd.Series([MAIN_OP.get(sc) for sc in runs["scenario"]], index=runs.index, dtype=object)
    tl = s[str_eq(s["kind"], "ceph-pg-timeline")]
    tl = pd.DataFrame({**{k: tl[k].astype(str) for k in keys}, "metric": tl["metric"].astype(str),
                       "value": tl["value"]})
    piv = tl.pivot_table(index=keys, columns="metric", values="value", aggfunc="max", observed=True)
    start = np.full(len(runs), np.nan)
    dur = np.full(len(runs), np.nan)
    idx = pd.MultiIndex.from_frame(runs[keys])
    for op in runs["op"].dropna().unique():
        m = (runs["op"] == op).to_numpy()
        for col, out in ((f"{op}_start", start), (f"{op}_duration", dur)):
            if col in piv:
                out[m] = piv[col].reindex(idx[m]).to_numpy(float)
    runs["op_start"], runs["op_duration"] = start, dur
    runs["ended_in_client"] = (runs["op_start"] + runs["op_duration"]) <= runs["client_end"] + 1.0
    runs["win_lo"] = np.where(runs["op"].notna(), runs["op_start"], warmup_s)
    runs["win_hi"] = np.where(runs["ended_in_client"], runs["op_start"] + runs["op_duration"], runs["client_end"])
    m = io.merge(runs[keys + ["win_lo", "win_hi", "op_start"]], on=keys, how="inner")
    inside = m[(m["t"] >= m["win_lo"]) & (m["t"] <= m["win_hi"])]
    pre = m[(m["t"] >= warmup_s) & (m["t"] < m["op_start"])]
    runs = runs.merge(inside.groupby(keys)["v"].mean().rename("client_iops").reset_index(), on=keys, how="left")
    g = pre.groupby(keys)["v"]
    runs = runs.merge(pd.DataFrame({"client_iops_pre": g.mean(), "pre_windows": g.size()}).reset_index(),
                      on=keys, how="left")
    runs["pre_windows"] = runs["pre_windows"].fillna(0).astype("int64")
    return runs


def campaign_conclusion(med: pd.DataFrame, regime: pd.DataFrame, campaign: str,
                        max_cpu_busy: float = 0.60, min_queue_per_osd: float = 8.0) -> str:
    """The closing section of a measured QoS campaign (Markdown), computed: runs and cells (``med``:
    :func:`arm_medians`, indexed by scenario and arm, with ``n``), per scenario the best and worst arm by
    median client IOPS, per background operation the fastest and slowest arm by median duration, and the
    regime (``regime``: :func:`analysis.stats.pilot.regime_table`) against the pilot gate's limits (machine
    CPU busy ≤ ``max_cpu_busy``, ≥ ``min_queue_per_osd`` ops queued per OSD, ``pilot.THRESHOLDS``): where
    the OSDs are CPU-bound, their queues hold few ops and no scheduler has anything to reorder."""
    m = med.reset_index()
    lines = ["## Conclusions", "",
             f"- **Coverage.** {int(m['n'].sum())} runs of `{campaign}` in {m['scenario'].nunique()} scenarios × "
             f"{m['arm'].nunique()} arms (cells of {int(m['n'].min())}–{int(m['n'].max())} repeats)."]
    best = []
    for scen, g in m.dropna(subset=["iops"]).groupby("scenario", sort=True, observed=True):
        if len(g) < 2:
            continue
        hi, lo = g.loc[g["iops"].idxmax()], g.loc[g["iops"].idxmin()]
        best.append(f"{scen}: {hi['arm']} {hi['iops']:.0f} vs {lo['arm']} {lo['iops']:.0f} ({hi['iops'] / lo['iops']:.2f}×)")
    if best:
        lines.append("- **Client IOPS, best and worst arm by median** — " + "; ".join(best) + ".")
    ops = []
    for col in [c for c in m.columns if c.endswith("_duration") and not c.startswith("n_")]:
        for scen, g in m.dropna(subset=[col]).groupby("scenario", sort=True, observed=True):
            if len(g) < 2:
                continue
            fast, slow = g.loc[g[col].idxmin()], g.loc[g[col].idxmax()]
            ops.append(f"{col.removesuffix('_duration')} in {scen}: {fast['arm']} {fast[col]:.1f} s, "
                       f"{slow['arm']} {slow[col]:.1f} s")
    if ops:
        lines.append("- **Background operations, fastest and slowest arm by median duration** — " + "; ".join(ops) + ".")
    lines += regime_lines(regime, campaign, max_cpu_busy, min_queue_per_osd)
    return "\n".join(lines)


def _span(s: pd.Series, fmt: str) -> str:
    s = s.dropna()
    if s.empty:
        return "not recorded"
    return f"{s.min():{fmt}}" if s.min() == s.max() else f"{s.min():{fmt}}–{s.max():{fmt}}"


def regime_lines(regime: pd.DataFrame, campaign: str, max_cpu_busy: float = 0.60,
                 min_queue_per_osd: float = 8.0) -> list[str]:
    """Markdown bullets: ``campaign``'s regime (:func:`analysis.stats.pilot.regime_table`) against the pilot
    gate's limits — CPU-bound or a shallow queue means the op queue has little to reorder — and the other
    campaigns of the table beside it."""
    lines: list[str] = []
    own, other = regime[regime["campaign"] == campaign], regime[regime["campaign"] != campaign]
    if len(own):
        cpu, q = own["cpu_busy"], own["queue_per_osd"]
        cpu_bound = bool(cpu.notna().any() and (cpu > max_cpu_busy).all())
        shallow = bool(q.notna().any() and (q < min_queue_per_osd).all())
        cannot = "so this campaign cannot decide which scheduler serves the client better"
        verdict = (f"the OSDs were CPU-bound: their queues hold few ops and the op queue has little to reorder, {cannot}"
                   if cpu_bound else f"the OSDs' queues were shallow: the op queue has little to reorder, {cannot}"
                   if shallow else "within the pilot gate's limits: the op queue can decide here")
        lines.append(f"- **Regime.** Machine CPU busy while the operations ran {_span(cpu, '.2f')} (gate ≤ "
                     f"{max_cpu_busy:g}), ops queued per OSD {_span(q, '.1f')} (gate ≥ {min_queue_per_osd:g}), the "
                     f"fastest arm's operation rate over the slowest's {_span(own['op_rate_spread'], '.2f')}: "
                     f"{verdict}.")
        if len(other):
            lines.append(f"  For comparison, {', '.join(f'`{c}`' for c in dict.fromkeys(other['campaign']))}: CPU busy "
                         f"{_span(other['cpu_busy'], '.2f')}, ops queued per OSD {_span(other['queue_per_osd'], '.1f')}, "
                         f"rate spread {_span(other['op_rate_spread'], '.2f')}.")
    return lines

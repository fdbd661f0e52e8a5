"""A against B on any ingested data: per matching cell and metric, the repeats of each side compared.

In the spirit of benchstat and CBT's ``compare.py``, with the statistics stated:

* **The sample is the run**, never the 1 s windows inside it: one value per run and metric, from the tidy
  ``summary`` table of :mod:`analysis.ingest` (any layout: capture runs, CBT archives, bare fio/rados bench
  outputs).  A run is the ``run`` key: the run.json folder, the CBT ``id-…`` folder, else the fio invocation
  (its JSON, and the logs whose companion it is: the ingest keys them so), else the file.
  Within a run, throughputs (units ``1/s``, ``B/s``) of its jobs and files are summed (a CBT run has one
  output per client volume); mean latencies (``*_mean`` in ns) are combined weighted by each part's
  ``total_ios`` (Σ mean·n / Σ n: fio's ``group_reporting`` and CBT's formatter combine them so, and
  :mod:`analysis.stats.cbt_totals` is CBT's rule); other latencies (percentiles) and durations are averaged
  over the parts, unweighted (a percentile of several parts cannot be recovered from theirs).  A CBT
  ``workloads:`` test (rows with ``total_iodepth``) is one run whatever its volumes' own iodepth, device,
  number and client (:data:`PER_VOLUME_KEYS`).
  fio's ``All clients`` job (``fio --client``) is dropped: it repeats its clients' sum; so are fio's logs
  (``fio-log``, ``fio-hist-log``) of a run that has its fio JSON, whose summary they restate.
* **A cell** is what must match on both sides: ``kind``, ``ddir``, ``metric``, ``unit`` and the workload
  keys present in the data (:data:`WORKLOAD_KEYS`: scenario, our run.json's target/rw/bs, CBT's benchmark,
  mode, op_size, iodepth, …, and what fio recorded in its JSON: rw, bs, iodepth, numjobs, ioengine, …).
  A :data:`CONTRAST_KEYS` key whose values do not overlap between the sides is what they differ in
  (:func:`contrast`), not a cell key.
  Cells on one side only are listed (``verdict`` ``only old`` / ``only new``), never dropped.
* **Per side**: n runs, the median with a distribution-free 95 % CI from order statistics (binomial; it
  needs n ≥ 6, else NaN: three repeats cannot bound a median at 95 %).
* **The test**: Welch's t-test on the log values (``Welch t (log)``; a ratio is the natural scale for
  throughput and latency, and Welch assumes no equal spread), two-sided; the effect is the ratio of the
  geometric means as % change with its Welch 95 % CI (it excludes 0 exactly when p < alpha).  Values ≤ 0
  (a metric that can be 0) use Welch on the raw values and the difference of means (``Welch t``).
  ``q``: Benjamini–Hochberg over every tested row (a grid is many cells × metrics: the verdicts keep the
  expected share of false discoveries among them ≤ alpha; ``expected_by_chance`` = alpha × tested rows
  would pass raw p < alpha by chance alone); ``p_holm``, Holm's family-wise adjustment, beside it.
* **Verdict**: ``~`` when q ≥ alpha; else ``better`` / ``worse`` by the metric's direction (throughputs and
  rates higher is better; latencies and durations lower).  ``one run a side: no test`` when each side has
  one run (its Δ median is the ratio of the two runs, with no p-value); ``cannot test`` when a side has
  fewer than 2 runs or no spread on either side.  The effect's CI is per row (unadjusted).
* **Across workloads** (:func:`across_workloads`): a grid of one-run cells cannot decide any one cell, but
  the cells together can say whether B is better across the grid: the per-cell ratios are the sample.  ``repeats_needed``: runs per side for power 0.8 at alpha to detect the
  observed change at the observed spread (:func:`analysis.stats.consistency.n_per_arm`, two-sample t).
* ``regression``: ``worse`` and |effect| ≥ ``threshold`` % — what ``python -m analysis compare`` exits 1 on.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .consistency import ALPHA, holm, n_per_arm

HIGHER_BETTER = ("1/s", "B/s")
LOWER_BETTER = ("ns", "s")
#: the metrics compared by default (the tidy tables' names): client throughput and latency (fio, rados
#: bench), background-operation durations and rates (the cephqos-pg-timeline)
DEFAULT_METRICS = ("iops", "bw", "lat_mean", "clat_mean", "clat_p50", "clat_p99", "clat_p99.9",
                   "scrub_duration", "scrub_rate", "snaptrim_duration", "snaptrim_rate",
                   "recovery_duration", "recovery_rate")
#: run keys that say which workload a run ran (both sides must match on those the data has): our run.json's,
#: CBT's YAML, and what fio recorded in its own JSON (``analysis.ingest.fio_workload``; ``bs_B`` in bytes,
#: not the text ``bs``: ``4k`` and ``4096`` are one block size)
WORKLOAD_KEYS = ("scenario", "target", "rw", "rwmixread", "bs_B", "bs_read_B", "bs_write_B", "benchmark", "workload",
                 "mode", "readmode", "op_size", "total_iodepth", "iodepth", "numjobs", "ioengine", "direct",
                 "concurrent_ops", "concurrent_procs", "pool_profile", "vol_size", "osd_ra", "size_B", "runtime_s",
                 "time_based", "ramp_time_s", "fio_options")
#: workload keys that change what ran but not what kind of workload it was (how much, how long, fio's other
#: options): cell keys where the two sides' values overlap; where they do not (every A run 4 GiB, every B run
#: 16 GiB) they are what A and B *also differ* in, said in the header (:func:`contrast`), else no cell matches
SECONDARY_KEYS = ("size_B", "runtime_s", "time_based", "ramp_time_s", "fio_options")
#: keys that say where or with what a workload ran, not what it was: when the two sides' values do not
#: overlap (two devices' bench_fio folders, libaio against io_uring) they are what A and B differ in, reported
#: (:func:`contrast`), not cell keys — else no cell could match
CONTRAST_KEYS = ("target", "ioengine", "fio_version")
CELL = ("kind", "ddir", "metric", "unit")
#: keys of one volume of a CBT test (rows with ``total_iodepth``): the volume's share of the depth, its
#: device, its number and client — the test's volumes run at once and are one run, totalled as CBT does
PER_VOLUME_KEYS = ("iodepth", "target", "volume", "client_host")
#: ``by="auto"``: the keys tried, in order, for the one that holds both compared values — our captures'
#: ``arm``, then :func:`osd_qos` (CBT archives and any run that records its OSD settings), then CBT's ``archive``
AUTO_KEYS = ("arm", "osd_qos", "archive")
FIO_LOGS = ("fio-log", "fio-hist-log")
COLUMNS = ["n_old", "n_new", "median_old", "median_old_lo", "median_old_hi", "median_new", "median_new_lo",
           "median_new_hi", "delta_pct", "effect_pct", "effect_lo", "effect_hi", "test", "p", "p_holm", "q",
           "repeats_needed", "verdict", "regression"]
SIDES = ("old", "new")


class CompareError(ValueError):
    """Input that cannot be compared (no runs on a side, a split key the data lacks)."""


def _values(s: pd.DataFrame, k: str) -> set[str]:
    return set(s[k].dropna().astype(str).unique()) if k in s else set()


def contrast(old: pd.DataFrame, new: pd.DataFrame) -> dict[str, tuple[list[str], list[str]]]:
    """The :data:`CONTRAST_KEYS` and :data:`SECONDARY_KEYS` whose values on the two sides do not overlap:
    key → (old's, new's values)."""
    out = {}
    for k in (*CONTRAST_KEYS, *SECONDARY_KEYS):
        a, b = _values(old, k), _values(new, k)
        if a and b and not a & b:
            out[k] = (sorted(a), sorted(b))
    return out


def workload_keys(*summaries: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    """The :data:`WORKLOAD_KEYS` that some summary has with a value (less ``exclude``, and for two
    summaries less the keys they differ in: :func:`contrast`)."""
    differ = contrast(*summaries) if len(summaries) == 2 else {}
    return [k for k in WORKLOAD_KEYS if k not in exclude and k not in differ
            and any(k in s and s[k].notna().any() for s in summaries)]


def run_values(summary: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str] | None = DEFAULT_METRICS,
               ) -> pd.DataFrame:
    """One value per run and cell: columns ``keys`` + :data:`CELL` + ``run``, ``value`` (the tool's unit:
    B/s, 1/s, ns, s).  Throughputs are summed over a run's jobs and files, other units averaged."""
    s = summary
    if metrics is not None:
        s = s[s["metric"].astype(str).isin(list(metrics))]
    if "job" in s:
        s = s[~s["job"].astype(str).str.fullmatch(r"All clients(@\d+)?")]
    run = s["run"].astype("string") if "run" in s else pd.Series(pd.NA, index=s.index, dtype="string")
    run = run.fillna(s["source"].astype("string"))
    kind = s["kind"].astype("string")
    # fio's logs restate its JSON summary (window means): read them only for runs without the JSON
    # (a log fio did not number by job, in a file of several reporting groups, belongs to the invocation)
    invocation = run.str.replace(r"#group[^/]*$", "", regex=True)
    is_json = (kind == "fio-json").fillna(False)
    keep = ~(kind.isin(FIO_LOGS).fillna(False) & (run.isin(run[is_json].unique())
                                                  | invocation.isin(invocation[is_json].unique())))
    s, run = s[keep.to_numpy()], run[keep.to_numpy()]
    cols = {k: (s[k].astype("string").fillna("") if k in s else pd.Series("", index=s.index, dtype="string"))
            for k in [*keys, *CELL]}
    if "total_iodepth" in s:  # a CBT test: its volumes' own depth and device are parts of one run, not cells
        test = s["total_iodepth"].notna().to_numpy()
        for k in PER_VOLUME_KEYS:
            if k in cols:
                cols[k] = cols[k].mask(test, "")
    value = s["value"].astype(float)
    weight = _io_weights(summary, s) if metrics is None or any(str(m).endswith("_mean") for m in metrics) else None
    frame = pd.DataFrame({**cols, "run": run, "value": value})
    if weight is not None:  # a mean latency of several parts: weighted by their IOs, as fio and CBT combine
        frame["w"], frame["wv"] = weight, weight * value
    g = frame.groupby([*keys, *CELL, "run"], sort=True, observed=True)
    out = pd.DataFrame({"sum": g["value"].sum(), "mean": g["value"].mean()})
    if weight is not None:
        ws = g["w"].sum(min_count=1)
        known = g["w"].count() == g["value"].count()
        out["mean"] = out["mean"].where(~(known & (ws > 0)), g["wv"].sum() / ws)
    out = out.reset_index()
    out["value"] = np.where(out["unit"].isin(HIGHER_BETTER), out["sum"], out["mean"])
    return out.drop(columns=["sum", "mean"])


def _io_weights(summary: pd.DataFrame, s: pd.DataFrame) -> np.ndarray:
    """Per row of ``s`` (a subset of ``summary``): the ``total_ios`` of its source, job and direction where
    the row is a mean latency (``*_mean`` in ns), else NaN — the weights of Σ(mean·n)/Σn."""
    part = ["source", "job", "ddir"]
    if any(k not in summary for k in part):
        return np.full(len(s), np.nan)
    ios = summary[summary["metric"].astype(str) == "total_ios"]
    keys = lambda t: pd.MultiIndex.from_frame(t[part].astype("string").fillna(""))  # noqa: E731
    lookup = pd.Series(ios["value"].to_numpy(float), index=keys(ios))
    lookup = lookup[~lookup.index.duplicated()]
    w = lookup.reindex(keys(s)).to_numpy(float)
    is_mean = (s["metric"].astype(str).str.endswith("_mean") & (s["unit"].astype(str) == "ns")).to_numpy()
    return np.where(is_mean, w, np.nan)


def _workloads(v: pd.DataFrame, keys: Sequence[str], most: int = 3) -> str:
    """The workloads of one side's :func:`run_values` in words (``rw=write bs_B=4096``), the commonest first."""
    shown = [k for k in keys if k in v and (v[k] != "").any()]
    if not shown:
        kinds = v["kind"].value_counts()
        return ", ".join(kinds.index[:most]) + (f" (+{len(kinds) - most} more)" if len(kinds) > most else "")
    combos = v.drop_duplicates([*shown, "run"])[shown].value_counts(sort=True)
    words = [" ".join(_words(k, x) for k, x in zip(shown, c) if x) or "(no workload keys)" for c in combos.index[:most]]
    return ", ".join(words) + (f" (+{len(combos) - most} more)" if len(combos) > most else "")


def no_common(va: pd.DataFrame, vb: pd.DataFrame, keys: Sequence[str]) -> str:
    """One line for two sides (:func:`run_values`) with no cell in common: what each has."""
    varied = [k for k in keys if len(set(va.get(k, pd.Series(dtype=str))) | set(vb.get(k, pd.Series(dtype=str)))) > 1]
    metrics = set(va["metric"]) & set(vb["metric"])
    what = [k for k in ("rw", "mode", "benchmark") if k in keys and k not in varied] + varied or list(keys)
    why = "no workload in common" if metrics else "no metric in common"
    return f"A has {_workloads(va, what)}, B has {_workloads(vb, what)}: {why}"


def median_ci(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics (``scipy.stats.quantile_test`` at p = ½):
    (NaN, NaN) when even (min, max) covers less than ``confidence`` (n < 6 at 95 %)."""
    x = np.asarray(x, float)
    if len(x) == 0:
        return np.nan, np.nan
    ci = stats.quantile_test(x, p=0.5).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


def welch(a: np.ndarray, b: np.ndarray, alpha: float) -> dict:
    """Welch t of b against a (``scipy.stats.ttest_ind``, ``equal_var=False``, and its confidence interval):
    on logs when every value is positive (effect: ratio of geometric means, %), else on the raw values
    (effect: difference of means, % of a's mean)."""
    log = (a > 0).all() and (b > 0).all()
    xa, xb = (np.log(a), np.log(b)) if log else (a, b)
    diff = xb.mean() - xa.mean()
    if not (_spread(xa) or _spread(xb)):
        return dict(test="", p=np.nan, d=np.nan, mean=diff, lo=np.nan, hi=np.nan, log=log)
    with warnings.catch_warnings():
        # runs nearly identical (fio's p99 from one histogram bin): scipy warns of precision loss in the
        # variance; the spread was checked non-zero above and such a cell comes out ~ (a p near 1)
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        res = stats.ttest_ind(xb, xa, equal_var=False)
    ci = res.confidence_interval(1 - alpha)
    pooled = np.sqrt(((len(xa) - 1) * xa.var(ddof=1) + (len(xb) - 1) * xb.var(ddof=1)) / (len(xa) + len(xb) - 2))
    return dict(test="Welch t (log)" if log else "Welch t", p=float(res.pvalue),
                d=abs(diff) / pooled if pooled > 0 else np.inf, mean=diff, lo=float(ci.low), hi=float(ci.high),
                log=log, ma=a.mean())


def _spread(x: np.ndarray) -> bool:
    """Whether values differ by more than floating-point rounding (runs given one value each: the mean of six
    equal logs is not always that log, and a variance of 1e-32 gave p = 1e-70 between two sets of copies)."""
    return len(x) > 1 and float(np.ptp(x)) > 1e-12 * float(np.abs(x).max())


def _pct(w: dict, key: str) -> float:
    v = w[key]
    return float(100 * np.expm1(v)) if w["log"] else float(100 * v / w["ma"]) if w.get("ma") else np.nan


def compare(old: pd.DataFrame, new: pd.DataFrame, keys: Sequence[str] | None = None,
            metrics: Sequence[str] | None = DEFAULT_METRICS, alpha: float = ALPHA, threshold_pct: float = 5.0,
            power: float = 0.8) -> pd.DataFrame:
    """Compare two ``summary`` tables (old = A, new = B): one row per cell (index: ``keys`` + :data:`CELL`),
    columns :data:`COLUMNS` (module docstring).  ``keys`` default: :func:`workload_keys` of both."""
    keys = list(workload_keys(old, new) if keys is None else keys)
    va, vb = run_values(old, keys, metrics), run_values(new, keys, metrics)
    if va.empty and vb.empty:
        raise CompareError("no runs with the compared metrics on either side "
                           f"(metrics: {', '.join(metrics) if metrics else 'all'})")
    idx = [*keys, *CELL]
    if not va.empty and not vb.empty:
        common = va[idx].drop_duplicates().merge(vb[idx].drop_duplicates(), on=idx)
        if common.empty:
            raise CompareError(no_common(va, vb, keys))
    both = pd.concat([va.assign(side="old"), vb.assign(side="new")], ignore_index=True)
    values = {k: g.to_numpy(float) for k, g in both.groupby([*idx, "side"], sort=False)["value"]}
    cells = list(both[idx].drop_duplicates().sort_values(idx).itertuples(index=False, name=None))
    rows = []
    none = np.array([])
    for cell in cells:
        a, b = values.get((*cell, "old"), none), values.get((*cell, "new"), none)
        r = dict.fromkeys(COLUMNS, np.nan)
        r.update(n_old=len(a), n_new=len(b), test="", verdict="", regression=False)
        for side, x in (("old", a), ("new", b)):
            if len(x):
                r[f"median_{side}"] = float(np.median(x))
                r[f"median_{side}_lo"], r[f"median_{side}_hi"] = median_ci(x)
        if len(a) and len(b) and r["median_old"]:
            r["delta_pct"] = 100 * (r["median_new"] / r["median_old"] - 1)
        if not len(a) or not len(b):
            r["verdict"] = "only new" if not len(a) else "only old"
        elif len(a) == len(b) == 1:
            r["verdict"] = "one run a side: no test"
        elif min(len(a), len(b)) < 2:
            r["verdict"] = f"cannot test: n = {len(a)} vs {len(b)} runs (a side needs ≥ 2)"
        else:
            w = welch(a, b, alpha)
            if not w["test"]:
                r["verdict"] = "cannot test: no spread on either side"
            else:
                unit = cell[len(keys) + CELL.index("unit")]
                sign = 1 if unit in HIGHER_BETTER else -1 if unit in LOWER_BETTER else 0
                r.update(test=w["test"], p=w["p"], effect_pct=_pct(w, "mean"), effect_lo=_pct(w, "lo"),
                         effect_hi=_pct(w, "hi"))
                r["repeats_needed"] = float(n_per_arm(np.array([w["d"]]), alpha, power)[0]) \
                    if np.isfinite(w["d"]) else np.nan
                r["direction"] = "better" if sign * w["mean"] > 0 else "worse" if sign else "differs"
        rows.append(r)
    out = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(list(cells), names=idx), columns=[*COLUMNS, "direction"])
    tested = out["p"].notna().to_numpy()
    if tested.any():
        out.loc[tested, "p_holm"] = holm(out.loc[tested, "p"].to_numpy(float))
        out.loc[tested, "q"] = stats.false_discovery_control(out.loc[tested, "p"].to_numpy(float), method="bh")
        sig = tested & (out["q"] < alpha).to_numpy()
        out.loc[tested, "verdict"] = np.where(sig[tested], out.loc[tested, "direction"], "~")
        out["regression"] = ((out["verdict"] == "worse") & (out["effect_pct"].abs() >= threshold_pct)).to_numpy()
    out = out.drop(columns="direction")[COLUMNS]
    for c in ("n_old", "n_new"):
        out[c] = out[c].astype(int)
    out["regression"] = out["regression"].astype(bool)
    out.attrs.update(alpha=alpha, threshold_pct=threshold_pct, keys=keys,
                     expected_by_chance=alpha * int(tested.sum()))
    return out


ACROSS_COLUMNS = ["cells", "better", "worse", "within", "gmean_ratio", "ratio_lo", "ratio_hi", "p_signed_rank",
                  "q", "verdict", "basis"]


def across_workloads(table: pd.DataFrame, alpha: float | None = None, threshold_pct: float | None = None,
                     ) -> pd.DataFrame:
    """The paired view of a grid: per ``kind, ddir, metric, unit``, over the cells both sides have (one
    value per cell: its median of runs), the cells ``better`` / ``worse`` by at least ``threshold_pct`` and
    ``within`` it, the geometric mean of new/old over the cells with a t 95 % CI on the log ratios, and
    Wilcoxon's signed-rank test of the log ratios against 0 (``scipy.stats.wilcoxon``, two-sided).  The
    cells are the sample — different workloads, not repeats — so this says whether B is better *across
    this grid*, not in any one cell.  ``q``: Benjamini–Hochberg over these rows; ``verdict`` better / worse
    when q < alpha, else ``~``; fewer than 6 cells cannot reach p < 0.05 in the signed-rank test."""
    alpha = table.attrs.get("alpha", ALPHA) if alpha is None else alpha
    thr = table.attrs.get("threshold_pct", 5.0) if threshold_pct is None else threshold_pct
    t = table.reset_index()
    t = t[(t["n_old"] > 0) & (t["n_new"] > 0) & (t["median_old"] > 0) & (t["median_new"] > 0)]
    rows, idx = [], []
    for cell, g in t.groupby(list(CELL), sort=True, observed=True):
        x = np.log(g["median_new"].to_numpy(float) / g["median_old"].to_numpy(float))
        unit = cell[CELL.index("unit")]
        sign = 1 if unit in HIGHER_BETTER else -1 if unit in LOWER_BETTER else 0
        chg = 100 * np.expm1(x) * (sign or 1)
        n = len(x)
        r = dict.fromkeys(ACROSS_COLUMNS, np.nan)
        r.update(cells=n, better=int((chg >= thr).sum()) if sign else 0, worse=int((chg <= -thr).sum()) if sign else 0,
                 within=int((np.abs(chg) < thr).sum()), gmean_ratio=float(np.exp(x.mean())),
                 basis=f"across {n} workload{'s' if n != 1 else ''}, not repeats", verdict="")
        if n >= 2 and x.std(ddof=1) > 0:
            ci = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
            r.update(ratio_lo=float(np.exp(ci.low)), ratio_hi=float(np.exp(ci.high)))
            r["p_signed_rank"] = float(stats.wilcoxon(x).pvalue) if np.any(x != 0) else 1.0
        else:
            r["verdict"] = "one workload: no test" if n == 1 else "no spread: no test"
        rows.append(r)
        idx.append(cell)
    out = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(idx, names=list(CELL)) if idx else None,
                       columns=ACROSS_COLUMNS)
    tested = out["p_signed_rank"].notna().to_numpy()
    if tested.any():
        out.loc[tested, "q"] = stats.false_discovery_control(out.loc[tested, "p_signed_rank"].to_numpy(float))
        units = out.index.get_level_values("unit")[tested]
        up = out.loc[tested, "gmean_ratio"].to_numpy(float) > 1
        better = np.where(np.isin(units, HIGHER_BETTER), up, np.where(np.isin(units, LOWER_BETTER), ~up, False))
        out.loc[tested, "verdict"] = np.where(out.loc[tested, "q"].to_numpy(float) < alpha,
                                              np.where(better, "better", "worse"), "~")
    out.attrs.update(alpha=alpha, threshold_pct=thr)
    return out


def across_display(across: pd.DataFrame) -> pd.DataFrame:
    """:func:`across_workloads` for people: the ratio new/old as % change with its CI, counts, p, q."""
    t = across.reset_index()
    pct = lambda v: "" if pd.isna(v) else f"{100 * (v - 1):+.1f} %"  # noqa: E731
    return pd.DataFrame({
        "kind ddir": t["kind"].astype(str) + " " + t["ddir"].astype(str), "metric": t["metric"],
        "cells": t["cells"], "better / worse / within": [f"{b} / {w} / {n}" for b, w, n in
                                                         zip(t["better"], t["worse"], t["within"])],
        "geometric mean change [95 % CI]": [pct(g) + ("" if pd.isna(lo) else f" [{pct(lo)}, {pct(hi)}]")
                                            for g, lo, hi in zip(t["gmean_ratio"], t["ratio_lo"], t["ratio_hi"])],
        "p (signed rank)": t["p_signed_rank"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
        "q (BH)": t["q"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
        "verdict": t["verdict"], "basis": t["basis"]})


def osd_qos(summary: pd.DataFrame) -> pd.Series:
    """The OSD's QoS setting in one word per row: the mClock profile under ``mclock_scheduler`` (``profile``),
    else the op queue (``wpq``); NA where the row has no ``op_queue`` (a block-layer IO scheduler's run)."""
    na = pd.Series(pd.NA, index=summary.index, dtype="string")
    q = summary["op_queue"].astype("string") if "op_queue" in summary else na
    prof = summary["profile"].astype("string") if "profile" in summary else na
    return q.mask(((q == "mclock_scheduler").fillna(False) & prof.notna()).astype(bool), prof)


def run_set(summary: pd.DataFrame) -> pd.Series:
    """The set of runs a row belongs to: its ``campaign``; for a CBT archive without one, the folder that
    holds the archive's folder (``archive``'s parent; ``.`` for archives at the top); else ``.``."""
    na = pd.Series(pd.NA, index=summary.index, dtype="string")
    out = summary["campaign"].astype("string") if "campaign" in summary else na
    if "archive" in summary:
        arch = summary["archive"].astype("string")
        parent = arch.str.rpartition("/")[0]
        out = out.fillna(parent.where(arch.isna() | (parent != ""), "."))
    return out.fillna(".")


@dataclass
class Choice:
    """Where ``by="auto"`` compares: the rows of one run set, the key that splits them and why."""
    rows: pd.DataFrame
    key: str
    run_set: str
    note: str


def choose(summary: pd.DataFrame, old_value: str, new_value: str, prefer: Mapping[str, str] | None = None,
           metrics: Sequence[str] | None = DEFAULT_METRICS) -> Choice:
    """Find ``old_value`` against ``new_value`` in data the user did not describe.  Rows of the compared
    ``metrics`` are grouped by :func:`run_set` (a campaign, or a folder of CBT archives: runs of one sitting
    are never pooled with another's); in each set the first of :data:`AUTO_KEYS` holding both values splits
    it.  The set is the one matching ``prefer`` (e.g. ``{"campaign": "qos-v2"}``) when that has both, else
    the set with the most runs on its smaller side (ties: the first name).  CompareError when no set has
    both values, naming what the data has."""
    s = summary
    if metrics is not None:
        s = s[s["metric"].astype(str).isin(list(metrics))]
    if s.empty:
        raise CompareError("no rows of the compared metrics (" + ", ".join(metrics or ()) + ")")
    s = s.assign(osd_qos=osd_qos(s))
    sets = run_set(s)
    run = (s["run"].astype("string") if "run" in s else pd.Series(pd.NA, index=s.index, dtype="string")
           ).fillna(s["source"].astype("string"))
    found: list[tuple[str, str, int]] = []  # (run set, key, runs on the smaller side)
    for name in sorted(sets.unique()):
        inset = (sets == name).to_numpy()
        for key in AUTO_KEYS:
            if key not in s:
                continue
            col = s.loc[inset, key].astype("string")
            n = [run[inset][(col == v).fillna(False).to_numpy()].nunique() for v in (old_value, new_value)]
            if min(n) > 0:
                found.append((name, key, min(n)))
                break
    if not found:
        have = {k: sorted(s[k].astype("string").dropna().unique()) for k in AUTO_KEYS if k in s}
        raise CompareError(f"no set of runs has both {old_value!r} and {new_value!r} in "
                           + ", ".join(AUTO_KEYS) + " (the data has: "
                           + ("; ".join(f"{k}: {', '.join(v[:8]) or '-'}" for k, v in have.items()) or "none of them")
                           + "); name two data paths, or --by KEY with --old-value/--new-value")
    pick = None
    for k, v in (prefer or {}).items():
        if k in s:
            match = set(sets[(s[k].astype("string") == str(v)).fillna(False).to_numpy()].unique())
            pick = next((f for f in found if f[0] in match), None)
            if pick:
                break
    why = f"the preferred {', '.join(f'{k}={v}' for k, v in (prefer or {}).items())}"
    if pick is None:
        pick = max(found, key=lambda f: f[2])  # the first of the largest: found is in name order
        why = "the most runs a side"
    others = [f"{f[0]} ({f[2]} a side)" for f in found if f is not pick]
    note = (f"compared within {pick[0]} by {pick[1]} ({why}; {pick[2]} runs on the smaller side, all cells)"
            + (f"; also holding both: {', '.join(others)}" if others else ""))
    return Choice(s[(sets == pick[0]).to_numpy()], pick[1], pick[0], note)


def split(summary: pd.DataFrame, by: str, old: str | None = None, new: str | None = None,
          ) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """One table split in two by the values of column ``by``: (old rows, new rows, old value, new value).
    Without ``old``/``new`` the column must have exactly two values (old: the first in sorted order)."""
    if by not in summary:
        hint = " (scheduler is two columns: op_queue, the OSD's; io_scheduler, the block layer's)" \
            if by == "scheduler" else ""
        raise CompareError(f"the data has no column {by!r} to split by{hint} "
                           f"(columns: {', '.join(c for c in summary.columns if c not in ('value',))})")
    col = summary[by].astype("string")
    values = sorted(col.dropna().unique())
    if old is None or new is None:
        if len(values) != 2:
            raise CompareError(f"{by!r} has {len(values)} values ({', '.join(values)}): "
                               "name the two to compare (--old VALUE --new VALUE)")
        old, new = old or values[0], new or values[1]
    for v in (old, new):
        if v not in values:
            raise CompareError(f"{by!r} has no value {v!r} (values: {', '.join(values)})")
    return summary[(col == old).fillna(False)], summary[(col == new).fillna(False)], old, new


def two_valued(summary: pd.DataFrame) -> str | None:
    """The first of :data:`CONTRAST_KEYS` that has exactly two values in ``summary`` (a bench_fio output of
    two targets), else None.  Rows of CBT tests (``total_iodepth``) are left out: their ``target`` is one
    volume's image, and the volumes of a test are one run, never A against B."""
    if "total_iodepth" in summary:
        summary = summary[summary["total_iodepth"].isna()]
    return next((k for k in CONTRAST_KEYS if len(_values(summary, k)) == 2), None)


@dataclass
class Sides:
    """The two summaries to compare, their names, the split key (kept out of the cell keys), notes on
    what was not read (failed, empty or unrecognised files, partial ones) and on runs that are copies of
    each other (``duplicates``: :func:`copies` of each side and between them, for the JSON output)."""
    old: pd.DataFrame
    new: pd.DataFrame
    names: tuple[str, str]
    exclude: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    duplicates: dict = field(default_factory=dict)


#: the run of one reporting group of a fio file (``<json>#group<N>``)
_GROUP = re.compile(r"#group[^/]*$")


def run_of(summary: pd.DataFrame) -> pd.Series:
    """Each row's run: the ``run`` key, else its source file (as :func:`run_values` takes it)."""
    run = summary["run"].astype("string") if "run" in summary else pd.Series(pd.NA, index=summary.index,
                                                                             dtype="string")
    return run.fillna(summary["source"].astype("string"))


def run_contents(summary: pd.DataFrame, sha256: Mapping[str, str]) -> pd.Series:
    """Per row of ``summary``: what its run holds, as text — its reporting group (``#group<N>``: two groups
    of one file hold the same bytes and are not copies of each other) and the sorted SHA-256 of every file
    the run's rows come from (``sha256``: path → hash, the ingest's ``files`` table) — NA where a file's hash
    is unknown.  Two runs with one content hold the same bytes."""
    run = run_of(summary)
    sha = summary["source"].astype(str).map(dict(sha256))
    pairs = pd.DataFrame({"run": run.to_numpy(), "sha": sha.to_numpy()}).drop_duplicates()
    per_run = {}
    for r, g in pairs.groupby("run", sort=False)["sha"]:
        if g.notna().all() and (g.astype(str) != "").all():
            m = _GROUP.search(str(r))
            per_run[r] = (m.group() if m else "") + ":" + ",".join(sorted(set(g.astype(str))))
    return pd.Series(run.map(per_run).to_numpy(), index=summary.index, dtype="string")


def _run_workloads(summary: pd.DataFrame, run: pd.Series, extra: Sequence[str] = ()) -> dict[str, str]:
    """run → the workload it ran, as text (the kinds and :data:`WORKLOAD_KEYS` values of its rows): copies
    of one workload are repeats of one cell; the same bytes under two workloads are two cells' runs."""
    keys = [k for k in ("kind", *WORKLOAD_KEYS, *extra) if k in summary]
    t = pd.DataFrame({k: summary[k].astype("string").fillna("").to_numpy() for k in keys})
    t["run"] = run.to_numpy()
    t = t.drop_duplicates()
    row = t[keys].astype(str).agg("\x1f".join, axis=1) if keys else pd.Series("", index=t.index)
    return {r: "\x1e".join(sorted(set(g))) for r, g in row.groupby(t["run"], sort=False)}


def copies(summary: pd.DataFrame, content: pd.Series, extra: Sequence[str] = (),
           order: Sequence[str] | None = None) -> dict[str, list]:
    """The runs of ``summary`` that hold the same bytes (``content``: :func:`run_contents` per row):
    ``same`` — groups of one workload, each ``{"kept": the first run (``order``, else by name), "copies":
    the others, "sha256": the files' hashes}``, repeats that are one run; ``elsewhere`` — groups whose runs
    ran different workloads (kept: they are not repeats of one cell, but one of them is mislabelled)."""
    run = run_of(summary)
    t = pd.DataFrame({"run": run.to_numpy(), "content": content.to_numpy()}).dropna().drop_duplicates("run")
    out: dict[str, list] = {"same": [], "elsewhere": []}
    if t["content"].duplicated().any():
        rank = {r: i for i, r in enumerate(order)} if order is not None else {}
        wl = _run_workloads(summary, run, extra)
        for c, g in t[t["content"].duplicated(keep=False)].groupby("content", sort=True):
            runs = sorted(g["run"], key=lambda r: (rank.get(r, len(rank)), r))
            sha = c.split(":", 1)[1].split(",")
            by_wl: dict[str, list[str]] = {}
            for r in runs:
                by_wl.setdefault(wl.get(r, ""), []).append(r)
            for rs in by_wl.values():
                if len(rs) > 1:
                    out["same"].append({"kept": rs[0], "copies": rs[1:], "sha256": sha})
            if len(by_wl) > 1:
                out["elsewhere"].append({"runs": [rs[0] for rs in by_wl.values()], "sha256": sha})
        first = lambda r: (rank.get(r, len(rank)), r)  # noqa: E731
        out["same"].sort(key=lambda g: first(g["kept"]))
        out["elsewhere"].sort(key=lambda g: first(g["runs"][0]))
    return out


def _few(xs: Sequence[str], most: int = 3) -> str:
    return ", ".join(xs[:most]) + (f" (+{len(xs) - most} more)" if len(xs) > most else "")


def copies_notes(name: str, found: Mapping[str, list], runs: int, allowed: bool) -> list[str]:
    """The ``note:`` lines on one side's (or a history's) :func:`copies`: which runs hold the same bytes,
    and whether they were counted once (the default) or each (``allowed``: ``--allow-duplicates``)."""
    notes = []
    same = found.get("same") or []
    if same:
        n = sum(len(g["copies"]) for g in same)
        how = ("each counted, as --allow-duplicates asks" if allowed else
               "counted once (--allow-duplicates counts each)")
        notes.append(f"{name}: {n} of {runs} runs hold the same bytes as another run of the same workload (every "
                     f"file's sha256 equal), {how}: "
                     + "; ".join(f"{_few(g['copies'])} = {g['kept']}" for g in same[:3])
                     + (f"; +{len(same) - 3} more group(s)" if len(same) > 3 else ""))
    for g in (found.get("elsewhere") or [])[:3]:
        notes.append(f"{name}: runs {_few(g['runs'])} hold the same bytes (sha256 {g['sha256'][0][:12]}…) under "
                     "different workload keys: each kept in its own cell")
    return notes


def drop_copies(summary: pd.DataFrame, found: Mapping[str, list]) -> pd.DataFrame:
    """``summary`` without the rows of the runs :func:`copies` found to repeat a kept one."""
    gone = {r for g in found.get("same") or [] for r in g["copies"]}
    return summary[~run_of(summary).isin(gone).to_numpy()] if gone else summary


def _copies_of_sides(s: Sides, content: tuple[pd.Series, pd.Series], allowed: bool) -> Sides:
    """``s`` with each side's copies (:func:`copies`) counted once unless ``allowed``, and notes: which runs
    were copies, which runs the two sides share, and whether A and B are the same bytes."""
    info: dict = {"allowed": allowed}
    sides_ = []
    for side, label, t, c in (("old", "A", s.old, content[0]), ("new", "B", s.new, content[1])):
        c = c.reindex(t.index)
        found = copies(t, c)
        info[side] = found["same"]
        info[f"{side}_elsewhere"] = found["elsewhere"]
        s.notes += copies_notes(f"{label} ({s.names[0 if side == 'old' else 1]})", found, int(run_of(t).nunique()),
                                allowed)
        sides_.append((t if allowed else drop_copies(t, found), c))
    (a, ca), (b, cb) = sides_
    ra = pd.DataFrame({"run": run_of(a).to_numpy(), "c": ca.reindex(a.index).to_numpy()}).dropna().drop_duplicates()
    rb = pd.DataFrame({"run": run_of(b).to_numpy(), "c": cb.reindex(b.index).to_numpy()}).dropna().drop_duplicates()
    shared = ra.merge(rb, on="c", suffixes=("_old", "_new"))
    info["shared"] = [{"old": o, "new": n} for o, n in zip(shared["run_old"], shared["run_new"])]
    all_known = len(ra) == run_of(a).nunique() and len(rb) == run_of(b).nunique()
    info["same_bytes"] = bool(all_known and len(ra) and set(ra["c"]) == set(rb["c"]))
    if info["same_bytes"]:
        s.notes.append(f"A and B hold the same bytes: each of their {ra['c'].nunique()} distinct run(s) is on both "
                       "sides (every file's sha256 equal), so no change can show")
    elif len(shared):
        s.notes.append(f"A and B share {len(shared)} run(s) with the same bytes (every file's sha256 equal), one "
                       "measurement on both sides: " + _few([f"{o} = {n}" for o, n in
                                                            zip(shared["run_old"], shared["run_new"])]))
    s.old, s.new, s.duplicates = a, b, info
    return s


def select_where(summary: pd.DataFrame, where: Mapping[str, str] | None, path: str | Path,
                 error: type[ValueError] = CompareError) -> pd.DataFrame:
    """The rows of ``summary`` (read from ``path``) whose run keys equal ``where``; ``error`` naming the
    path when the data has no such key."""
    t = summary
    for k, v in (where or {}).items():
        if k not in t:
            raise error(f"{path}: the data has no column {k!r} to select {k}={v}")
        t = t[(t[k].astype("string") == str(v)).fillna(False)]
    return t


def parse_options(pct: str, where: Sequence[str] | None) -> tuple[float, dict[str, str]]:
    """A percentage option (``5`` or ``5%``) and ``KEY=VALUE`` selections; ValueError when unreadable, or when
    the percentage is not a finite number ≥ 0 (``nan``, ``inf`` or a negative one would turn the regression
    gate off: no change is ever at least that large)."""
    v = float(str(pct).strip().removesuffix("%"))
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{pct!r}: expected a finite percentage ≥ 0")
    sel = [w.split("=", 1) for w in where or []]
    if any(len(kv) != 2 for kv in sel):
        raise ValueError(f"{where}: expected KEY=VALUE")
    return v, dict(sel)


def sides(old: str | Path, new: str | Path | None = None, by: str | None = None, old_value: str | None = None,
          new_value: str | None = None, where: Mapping[str, str] | None = None, jobs: int = 1,
          prefer: Mapping[str, str] | None = None, metrics: Sequence[str] | None = DEFAULT_METRICS,
          allow_duplicates: bool = False) -> Sides:
    """Load ``old`` and ``new`` (:func:`analysis.ingest.anysource.load`: folders, archives, files or ingested
    tables; each gets the derived key :func:`osd_qos`), keep the rows whose run keys equal ``where`` (e.g.
    ``{"campaign": "qos-v2"}``), or split ``old`` by ``by`` (:func:`split`) when ``new`` is None;
    ``by="auto"`` finds the run set and key holding ``old_value`` and ``new_value`` (:func:`choose`, with
    ``prefer`` and ``metrics``).  Runs of one side that hold the same bytes (every file's SHA-256) and ran
    one workload are one run, counted once (the first by name), unless ``allow_duplicates``; the notes say
    which, and which runs the two sides share (:func:`copies`, ``Sides.duplicates``).  CompareError for a
    side with no rows, or for neither / both of ``new`` and ``by``; IngestError for a path that cannot be
    read."""
    s = _sides(old, new, by, old_value, new_value, where, jobs, prefer, metrics)
    return _copies_of_sides(s, s.duplicates.pop("content"), allow_duplicates)


def _sides(old: str | Path, new: str | Path | None, by: str | None, old_value: str | None,
           new_value: str | None, where: Mapping[str, str] | None, jobs: int,
           prefer: Mapping[str, str] | None, metrics: Sequence[str] | None) -> Sides:
    """:func:`sides` before its copies are found: ``duplicates["content"]`` holds each side's
    :func:`run_contents` (aligned on the rows' index)."""
    from ..ingest.anysource import load
    if (new is None) == (by is None):
        raise CompareError("give two data paths (OLD NEW), or one path and a key to split it by (--by KEY)")
    notes: list[str] = []
    tables, contents = [], []
    for path in ([old] if new is None else [old, new]):
        src = load(path, jobs=jobs)
        notes += [f"{path}: {err}" for _, err in src.failed]
        if src.skipped:
            notes.append(f"{path}: {len(src.skipped)} file(s) not read (" + ", ".join(
                f"{r}: {st}" for r, st in src.skipped[:5]) + (", …" if len(src.skipped) > 5 else "") + ")")
        notes += [f"{path}: {r}: partial: {why}" for r, why in src.partial[:5]]
        if len(src.partial) > 5:
            notes.append(f"{path}: +{len(src.partial) - 5} more partial file(s)")
        t = select_where(src.summary, where, path)
        if t.empty:
            raise CompareError(f"{path}: nothing readable (no benchmark output with a summary"
                               + (f" where {', '.join(f'{k}={v}' for k, v in where.items())})" if where else ")"))
        tables.append(t.assign(osd_qos=osd_qos(t)) if "osd_qos" not in t else t)
        f = src.files
        sha = dict(zip(f["path"].astype(str), f["sha256"].astype("string").fillna(""))) \
            if len(f) and "sha256" in f and "path" in f else {}
        contents.append(run_contents(tables[-1], sha))
    content = {"content": (contents[0], contents[-1])}
    if new is None and by == "auto":
        if not old_value or not new_value:
            raise CompareError("--by auto needs the two values to compare (--old-value, --new-value)")
        try:
            c = choose(tables[0], old_value, new_value, prefer, metrics)
        except CompareError as e:
            key = two_valued(tables[0])
            if key is None:
                raise
            a, b, va, vb = split(tables[0], key)
            return Sides(a, b, (f"{key}={va}", f"{key}={vb}"), [key],
                         [*notes, f"{e}; the data has two {key}s instead: compared {vb} against {va}"], content)
        a, b, va, vb = split(c.rows, c.key, old_value, new_value)
        return Sides(a, b, (f"{c.key}={va}", f"{c.key}={vb}"), [c.key], [*notes, c.note], content)
    if new is None:
        a, b, va, vb = split(tables[0], by, old_value, new_value)
        return Sides(a, b, (f"{by}={va}", f"{by}={vb}"), [by], notes, content)
    return Sides(tables[0], tables[1], (str(old), str(new)), [], notes, content)


def summary_line(table: pd.DataFrame) -> str:
    """One line: rows per verdict, the regressions, and how many differences alpha alone would give."""
    v = table["verdict"].where(~table["verdict"].str.startswith("cannot test"), "cannot test")
    counts = v.value_counts()
    order = ["better", "worse", "differs", "~", "one run a side: no test", "cannot test", "only old", "only new"]
    parts = [f"{int(counts[k])} {k}" for k in order if k in counts]
    return (f"{len(table)} cells: " + ", ".join(parts)
            + f"; {int(table['regression'].sum())} regression(s) beyond {table.attrs.get('threshold_pct', 5):g} %"
            + f"; {table.attrs.get('expected_by_chance', 0):.1f} of the tested would differ at "
              f"alpha {table.attrs.get('alpha', ALPHA):g} by chance alone")


def conclusion(table: pd.DataFrame, names: tuple[str, str] | None = None) -> str:
    """The closing section of a comparison (Markdown), computed from :func:`compare`'s table: the verdict
    counts (:func:`summary_line`), every cell that tells the two sides apart (``better``, ``worse``,
    ``differs``) with its change and CI, and the repeats per side the median undecided cell would need."""
    old, new = names or ("old", "new")
    lines = ["## Conclusion", "", f"- **{new} against {old}:** {summary_line(table)}."]
    t = table.reset_index()
    keys = [k for k in varying_keys(table) if k in t]
    told = t[t["verdict"].isin(["better", "worse", "differs"])]
    for verdict, g in told.groupby("verdict", sort=True):
        cells = "; ".join(" ".join([*(_kv(k, str(r[k])) for k in keys if str(r[k])),
                                    *(str(r[k]) for k in ("kind", "ddir", "metric") if str(r[k]))])
                          + f" {r['effect_pct']:+.1f} % [{r['effect_lo']:+.1f}, {r['effect_hi']:+.1f}]"
                          for _, r in g.iterrows())
        lines.append(f"- **{verdict}** ({len(g)}): {cells}.")
    if not len(told):
        lines.append("- **No cell tells the two sides apart** at these runs.")
    undecided = t.loc[t["verdict"] == "~", "repeats_needed"].dropna()
    if len(undecided):
        lines.append(f"- **Undecided cells** ({len(undecided)}) would need a median of {np.median(undecided):.0f} runs "
                     f"per side to tell their observed change (power 0.8).")
    return "\n".join(lines)


_DISPLAY = {"B/s": (2 ** 20, "MiB/s"), "ns": (1e3, "µs"), "1/s": (1, "1/s"), "s": (1, "s")}


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table for people: the cell keys in one column, values in display units (MiB/s, µs), a median
    with its CI as text, the change and its CI, p, the verdict."""
    t = table.reset_index()
    keys = [k for k in varying_keys(table) if k in t]
    scale = t["unit"].map(lambda u: _DISPLAY.get(u, (1, u))[0]).astype(float)
    unit = t["unit"].map(lambda u: _DISPLAY.get(u, (1, u))[1])

    def med(side: str) -> pd.Series:
        m, lo, hi = (t[f"median_{side}{s}"] / scale for s in ("", "_lo", "_hi"))
        txt = m.map(lambda x: "" if pd.isna(x) else f"{x:.4g}")
        ci = [f" [{a:.4g}, {b:.4g}]" if pd.notna(a) else "" for a, b in zip(lo, hi)]
        return txt + pd.Series(ci, index=t.index)

    cell = pd.Series([" ".join(_kv(k, x) for k, x in zip(keys, row) if x)
                      for row in t[keys].astype(str).itertuples(index=False, name=None)], index=t.index, dtype=object)
    eff = [("" if pd.isna(e) else f"{e:+.1f} % [{lo:+.1f}, {hi:+.1f}]")
           for e, lo, hi in zip(t["effect_pct"], t["effect_lo"], t["effect_hi"])]
    return pd.DataFrame({
        "cell": (cell + " " + t["kind"].astype(str) + " " + t["ddir"].astype(str)).str.strip(),
        "metric": t["metric"], "unit": unit, "n": t["n_old"].astype(str) + "/" + t["n_new"].astype(str),
        "old median [95 % CI]": med("old"), "new median [95 % CI]": med("new"),
        "Δ median": t["delta_pct"].map(lambda x: "" if pd.isna(x) else f"{x:+.1f} %"),
        "change [95 % CI]": eff, "p": t["p"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
        "q (BH)": t["q"].map(lambda x: "" if pd.isna(x) else f"{x:.3g}"),
        "verdict": t["verdict"] + np.where(t["regression"], " (regression)", ""),
        "repeats needed": t["repeats_needed"].map(lambda x: "" if pd.isna(x) else f"{x:.0f}")})


#: keys whose values say what they are (shown bare in a cell's name); the others as ``key=value``
_BARE = ("scenario", "rw", "mode", "benchmark", "target")


def _kv(k: str, v: str) -> str:
    return v if k in _BARE else f"{k}={v}"


def _human(k: str, v: str) -> str:
    """A key's value for a sentence: sizes (``*_B``) in IEC units (``4 GiB``), the rest as they are."""
    if not k.endswith("_B"):
        return v
    try:
        n = float(v)
    except ValueError:
        return v
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:g} {unit}"
        n /= 1024
    return v


def _words(k: str, v: str) -> str:
    """``key=value`` with the value in :func:`_human` units (a sentence, not a table cell)."""
    return v if k in _BARE else f"{k}={_human(k, v)}"


def _recorded(t: pd.DataFrame, k: str) -> list[str]:
    """The distinct values of cell key ``k`` where a cell has one (a cell without it holds '')."""
    return [v for v in t[k].astype(str).unique() if v]


def varying_keys(table: pd.DataFrame) -> list[str]:
    """The cell keys of a :func:`compare` table that take more than one value across the cells that have
    them (a key with one value wherever it is recorded — fio's iodepth beside timeline rows — does not)."""
    t = table.index.to_frame(index=False)
    return [k for k in table.attrs.get("keys", []) if k in t and len(_recorded(t, k)) > 1]


def header(table: pd.DataFrame, differ: Mapping[str, tuple[list[str], list[str]]] | None = None) -> list[str]:
    """Lines that say what every cell shares (keys with one value wherever recorded) and what the two sides
    differ in (:func:`contrast`), above the cells."""
    t = table.index.to_frame(index=False)
    const = [_kv(k, _recorded(t, k)[0]) for k in table.attrs.get("keys", []) if k in t and len(_recorded(t, k)) == 1]
    out = [f"every cell (that records it): {' '.join(const)}"] if const else []
    also = [f"{k} {', '.join(_human(k, x) for x in a)} vs {', '.join(_human(k, x) for x in b)}"
            for k, (a, b) in (differ or {}).items()]
    if also:
        out.append(f"also differ (not cell keys): {'; '.join(also)}")
    return out


def markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``table`` (its values as text; ``|`` escaped)."""
    def esc(x: object) -> str:
        return str(x).replace("|", "\\|")
    lines = ["| " + " | ".join(esc(c) for c in table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(esc(x) for x in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)

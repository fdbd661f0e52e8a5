"""The pilot gate of a CBT campaign (``python -m capture.cbt pilot``): can an op-scheduler effect appear in
these CBT workloads here, and how many CBT iterations does the campaign need to see it?

Input: the ingested pilot folder (``data/raw/cbt/<campaign>-pilot``): per arm a CBT archive
(``<arm>/results/…``: librbdfio's fio 3.33 output, radosbench's ``rados bench`` 16.2 output) and the
harness record (``harness/<arm>/``: run.json, the 1 Hz ``sysutil`` log with the per-OSD op-queue probe).

Per arm (:func:`arm_regime`), over the *busy* samples (some OSD has an op in flight; CBT's idle-monitoring
sleeps and pool set-up are left out): ``queue_max_osd`` (median of the busiest OSD's ops ``queued for pg``),
``queue_per_osd`` (median of the sum over OSDs ÷ OSDs), ``cpu_busy`` (mean busy fraction of the
machine's CPUs), ``busy_s`` (seconds).

Per pair of arms (:func:`pair_table`): :func:`analysis.stats.abtest.compare` on the archives' runs (the
run is the sample: one value per CBT ``id-…`` folder and iteration), throughput cells (:data:`PRIMARY`).

Gate (:data:`THRESHOLDS`): the busiest OSD queues ≥ 8 ops in both arms (ops wait, so the scheduler has a
choice to make), the machine is ≤ 60 % busy in both (device-bound, not CPU-bound), and at least one
throughput cell changes by ≥ 5 % (``min_effect_pct``), an amount that ``max_iterations`` iterations detect
with power 0.8 (``repeats_needed`` of the Welch test on log values ≤ 10).  Iterations: the largest
``repeats_needed`` among those detectable cells, at least ``min_iterations`` — enough to decide every cell
the budget can.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from . import abtest

THRESHOLDS = {"min_queue_max_osd": 8.0, "max_cpu_busy": 0.60, "max_iterations": 10, "min_iterations": 3,
              "min_effect_pct": 5.0}
#: the cells that decide: client throughput (fio IOPS, rados bench IOPS and bandwidth)
PRIMARY = ("iops", "bw")


def arm_regime(series: pd.DataFrame, by: str = "arm") -> pd.DataFrame:
    """Per ``by`` value: queue and CPU over the busy samples of its sysutil series (module docstring)."""
    s = series[series["kind"].astype(str) == "sysutil"] if "kind" in series else series
    rows = []
    for arm, g in s.groupby(s[by].astype(str), sort=True):
        m = g["metric"].astype(str)
        def wide(metric):
            return g[m == metric].pivot_table(index="t_s", columns="job", values="value",
                                                         aggfunc="mean", observed=True)
        inflight, queued, cpu = wide("osd_in_flight"), wide("osd_queued"), wide("cpu_busy")
        if inflight.empty or queued.empty:
            rows.append({by: arm, "busy_s": 0.0, "queue_max_osd": np.nan, "queue_per_osd": np.nan,
                         "cpu_busy": np.nan, "osds": 0})
            continue
        busy = inflight.index[(inflight.fillna(0) > 0).any(axis=1)]
        q = queued.reindex(busy)
        c = cpu.reindex(busy)
        rows.append({by: arm, "busy_s": float(len(busy)),
                     "queue_max_osd": float(np.nanmedian(q.max(axis=1))) if len(q) else np.nan,
                     "queue_per_osd": float(np.nanmedian(q.sum(axis=1) / q.shape[1])) if len(q) else np.nan,
                     "cpu_busy": float(np.nanmean(c.to_numpy())) if c.size else np.nan,
                     "osds": int(queued.shape[1])})
    return pd.DataFrame(rows)


def pair_table(summary: pd.DataFrame, old: str, new: str, by: str = "archive") -> pd.DataFrame:
    """abtest.compare of the runs of ``by == old`` against ``by == new``, throughput cells only."""
    a, b, _, _ = abtest.split(summary, by, old, new)
    t = abtest.compare(a, b, metrics=PRIMARY, keys=abtest.workload_keys(a, b, exclude=[by]))
    return t


def iterations_for(table: pd.DataFrame, thresholds: dict[str, float] = THRESHOLDS) -> tuple[int | None, int]:
    """(iterations, detectable cells): the largest ``repeats_needed`` ≤ max_iterations among cells whose
    observed change is at least ``min_effect_pct`` (a 0.1 % change between near-identical runs is "detectable"
    and meaningless), at least min_iterations; None when no cell is detectable within the budget."""
    need = table["repeats_needed"].to_numpy(float)
    big = np.abs(table["delta_pct"].to_numpy(float)) >= thresholds["min_effect_pct"]
    ok = need[np.isfinite(need) & (need <= thresholds["max_iterations"]) & big]
    if not len(ok):
        return None, 0
    return max(int(thresholds["min_iterations"]), int(math.ceil(ok.max()))), int(len(ok))


def verdict(summary: pd.DataFrame, series: pd.DataFrame, pair: tuple[str, str], arms: list[str],
            thresholds: dict[str, float] = THRESHOLDS) -> dict[str, Any]:
    """Go / no-go for the campaign's ``pair`` of arms, with every pilot pair's figures for a redesign."""
    regime = arm_regime(series)
    reg = regime.set_index("arm").to_dict("index")
    pairs = {}
    for old in arms:
        for new in arms:
            if old >= new or old not in reg or new not in reg:
                continue
            t = pair_table(summary, old, new)
            iters, n_ok = iterations_for(t, thresholds)
            why = []
            for arm in (old, new):
                r = reg[arm]
                if not r["queue_max_osd"] >= thresholds["min_queue_max_osd"]:
                    why.append(f"{arm}: busiest OSD queues {r['queue_max_osd']:.1f} ops "
                               f"(< {thresholds['min_queue_max_osd']:g})")
                if not r["cpu_busy"] <= thresholds["max_cpu_busy"]:
                    why.append(f"{arm}: machine {100 * r['cpu_busy']:.0f} % busy "
                               f"(> {100 * thresholds['max_cpu_busy']:.0f} %)")
            if iters is None:
                why.append(f"no throughput cell detectable within {thresholds['max_iterations']} iterations")
            cells = t.reset_index()
            pairs[f"{old}|{new}"] = {
                "arms": [old, new], "go": not why, "why": "; ".join(why), "iterations": iters,
                "detectable_cells": n_ok, "cells": int(len(t)),
                "table": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                           for k, v in row.items()} for row in cells.to_dict("records")]}
    key = "|".join(sorted(pair))
    chosen = pairs.get(key)
    out: dict[str, Any] = {"thresholds": thresholds, "regime": regime.to_dict("records"), "pairs": pairs,
                           "arms": list(pair)}
    if chosen is None:
        out.update(go=False, why=f"the pilot has no data for the pair {pair}", iterations=None)
    else:
        out.update(go=chosen["go"], why=chosen["why"], iterations=chosen["iterations"])
    return out

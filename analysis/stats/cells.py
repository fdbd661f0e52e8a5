"""Per-cell spread and scheduler effect of a repeated campaign (the block-layer IO-scheduler study).

A *cell* is one workload (``scenario``: tool, target, direction, size, concurrency) under one IO
scheduler; its repeats are the runs of that pair.  Input is the tidy ``summary`` table of
``analysis.ingest`` (keys from each run's ``run.json``).  Output units are the input's (bandwidth B/s,
IOPS 1/s, latency ns); ``cv`` is the sample standard deviation (ddof 1) over the mean.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..labels import str_eq, str_isin

CELL = ["scenario", "io_scheduler"]


def cell_values(summary: pd.DataFrame, campaign: str, kind: str, metric: str,
                ddir: str | Sequence[str] | None = None, job: str | None = None) -> pd.DataFrame:
    """One value per run: ``campaign, scenario, io_scheduler, ddir, repeat, value`` for ``metric`` of the
    files of ``kind`` (e.g. ``fio-json`` ``bw``, ``radosbench`` ``bw``).  A run with several jobs of
    that kind and direction is summed (fio jobs of one run; one job per run in the capture campaigns)."""
    s = summary[str_eq(summary["campaign"], campaign) & str_eq(summary["kind"], kind)
                & str_eq(summary["metric"], metric)]
    if ddir is not None:
        s = s[str_isin(s["ddir"], [ddir] if isinstance(ddir, str) else list(ddir))]
    if job is not None:
        s = s[str_eq(s["job"], job)]
    keys = ["campaign", "scenario", "io_scheduler", "ddir", "repeat"]
    out = (s.assign(**{k: s[k].astype(str) for k in keys if k != "repeat"})
           .groupby(keys, observed=True, sort=True)["value"].sum().reset_index())
    out["repeat"] = pd.to_numeric(out["repeat"]).astype("int64")
    return out


def cell_spread(values: pd.DataFrame, by: Sequence[str] = ("scenario", "ddir", "io_scheduler")) -> pd.DataFrame:
    """Per cell: ``n`` repeats, ``median``, ``mean``, ``std`` (ddof 1), ``cv`` = std/mean, ``min``,
    ``max`` and ``range_rel`` = (max − min)/median."""
    g = values.groupby(list(by), observed=True, sort=True)["value"]
    out = pd.DataFrame({"n": g.size(), "median": g.median(), "mean": g.mean(), "std": g.std(ddof=1),
                        "min": g.min(), "max": g.max()})
    out["cv"] = out["std"] / out["mean"]
    out["range_rel"] = (out["max"] - out["min"]) / out["median"]
    return out


def scheduler_effect(values: pd.DataFrame, by: Sequence[str] = ("scenario", "ddir"),
                     group: str = "io_scheduler", min_n: int = 3) -> pd.DataFrame:
    """Per workload: Kruskal–Wallis H and p over the schedulers' repeats (each group needs ``min_n``
    values, else NaN), the scheduler with the highest and the lowest median, and ``best_over_worst`` =
    the ratio of those medians (higher is better: bandwidth, IOPS)."""
    rows = []
    for key, d in values.groupby(list(by), observed=True, sort=True):
        groups = {k: v["value"].to_numpy(float) for k, v in d.groupby(group, observed=True, sort=True)}
        med = pd.Series({k: float(np.median(v)) for k, v in groups.items()})
        ok = len(groups) >= 2 and min(len(v) for v in groups.values()) >= min_n \
            and np.ptp(np.concatenate(list(groups.values()))) > 0
        h, p = stats.kruskal(*groups.values()) if ok else (np.nan, np.nan)
        key = key if isinstance(key, tuple) else (key,)
        rows.append((*key, len(groups), min(len(v) for v in groups.values()), float(h), float(p),
                     med.idxmax(), med.idxmin(), float(med.max() / med.min()) if med.min() > 0 else np.nan))
    return pd.DataFrame(rows, columns=list(by) + ["groups", "min_n", "kw_h", "kw_p", "best", "worst",
                                                  "best_over_worst"])

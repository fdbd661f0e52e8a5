"""A CBT test's volumes combined as CBT's own post-processing combines them.

CBT runs one fio per RBD volume of a test, all at once, and its formatter totals them
(``post_processing/formatter/test_run_result.py`` at ceph/cbt 9d6480f: ``_get_io_details`` over one file's
jobs and its ``read``/``write`` directions, ``_sum_io_details`` across files; the same rule in the later
``benchmark_run_result.py``):

* ``iops`` (1/s), ``bw`` (fio's ``bw_bytes``, B/s), ``io_bytes`` (B) and ``total_ios`` (count): summed;
* mean latency: fio's **completion** latency ``clat_ns.mean`` (ns), weighted by each part's ``total_ios``:
  Σ(mean·n) / Σn (``_sum_mean_values``) — not an unweighted mean over volumes, and not ``lat_ns``;
* its standard deviation (ns): the pooled one, sqrt((Σ((n−1)·sd² + n·mean²) − N·M²) / (N − 1)) with N = Σn
  and M the weighted mean (``_sum_standard_deviation_values``).

CBT writes these as strings in ``visualisation/<bs>_<rw>.json`` (``bandwidth_bytes``, ``iops``,
``latency``, ``std_deviation``, ``total_ios``, ``io_bytes``) and the ``latency_at_max_*`` in ms.  It adds a
mixed workload's read and write into one row; :func:`combine_volumes` keeps them apart unless asked
(``directions="cbt"``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

#: the summary metrics combined (fio-json rows; units as the tables store them)
METRICS = ("iops", "bw", "io_bytes", "total_ios", "clat_mean", "clat_stddev")
#: fio's directions CBT totals (``jobs_of_interest``: trim and sync are left out)
DIRECTIONS = ("read", "write")
OUT_COLUMNS = ["iops", "bw", "io_bytes", "total_ios", "clat_mean", "clat_stddev", "files"]


def combine_volumes(frame: pd.DataFrame, by: Sequence[str] = ("run",), directions: str = "each") -> pd.DataFrame:
    """Per ``by`` (a CBT test: ``run``) and ``ddir``, the fio-json ``summary`` rows of ``frame`` combined as
    CBT combines a test's volumes (module docstring).  Columns: ``by``, ``ddir``, ``iops`` (1/s), ``bw``
    (B/s), ``io_bytes`` (B), ``total_ios`` (count), ``clat_mean`` and ``clat_stddev`` (ns), ``files`` (how
    many outputs: volumes × clients).  ``directions="cbt"``: read and write added into one row
    (``ddir`` = ``read+write``), as CBT's JSON has them.  A group without IOs has NaN latency."""
    if directions not in ("each", "cbt"):
        raise ValueError(f"directions: expected 'each' or 'cbt', got {directions!r}")
    s = frame
    if "kind" in s:
        s = s[s["kind"].astype(str) == "fio-json"]
    s = s[s["metric"].astype(str).isin(METRICS) & s["ddir"].astype(str).isin(DIRECTIONS)]
    if "job" in s:  # fio's client/server total restates its clients
        s = s[~s["job"].astype(str).str.fullmatch(r"All clients(@\d+)?")]
    by = list(by)
    part = [*by, "source", "job", "ddir"]
    cols = {k: s[k].astype("string") for k in part}
    wide = pd.DataFrame({**cols, "metric": s["metric"].astype(str), "value": s["value"].astype(float)}) \
        .pivot_table(index=part, columns="metric", values="value", aggfunc="first", observed=True, dropna=False) \
        .dropna(how="all").reset_index()
    for m in METRICS:
        if m not in wide:
            wide[m] = np.nan
    if directions == "cbt":
        wide["ddir"] = "read+write"
    n, mean, sd = wide["total_ios"], wide["clat_mean"], wide["clat_stddev"].fillna(0.0)
    wide = wide.assign(_nm=n * mean, _ss=(n - 1) * sd * sd + n * mean * mean)
    g = wide.groupby([*by, "ddir"], sort=True, observed=True, dropna=False)
    out = g[["iops", "bw", "io_bytes", "total_ios", "_nm", "_ss"]].sum(min_count=1)
    out["files"] = g["source"].nunique()
    N = out["total_ios"]
    out["clat_mean"] = np.where(N > 0, out["_nm"] / N, np.nan)
    var = (out["_ss"] - N * out["clat_mean"] ** 2) / (N - 1)
    out["clat_stddev"] = np.where(N > 1, np.sqrt(np.clip(var, 0.0, None)), np.nan)
    out = out.drop(columns=["_nm", "_ss"]).reset_index()[[*by, "ddir", *OUT_COLUMNS]]
    out.columns.name = None
    return out

"""Measured runs as consistency rounds: the processed series table → ``test, round, value, t_s``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..labels import str_eq, str_isin
from .consistency import as_rounds


def _load(table: str, data_dir: str | Path, processed_dir: str | Path, campaigns: Sequence[str] | None = None,
          columns: Sequence[str] | None = None) -> pd.DataFrame:
    from analysis.store import TableSetError, read_table
    flt = None if campaigns is None else [("campaign", "in", [str(c) for c in campaigns])]
    try:
        return read_table(processed_dir, table, columns=None if columns is None else list(columns), filters=flt)
    except TableSetError as e:  # never a silent re-read of the raw data: say what builds the tables
        raise TableSetError(f"{e} (DATA={data_dir})") from None


def load_series(data_dir: str | Path, processed_dir: str | Path, campaigns: Sequence[str] | None = None,
                columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The series table of the set in ``processed_dir`` (``make data`` builds it from ``data_dir``);
    ``analysis.store.TableSetError`` naming the command when it is missing or incomplete.  ``campaigns``:
    only those campaigns' rows, read by Parquet filter (the whole table here is 4.7 M rows, 1.3 GB in
    memory and 5 s; one campaign 0.6 s); ``columns``: only those (run keys included)."""
    return _load("series", data_dir, processed_dir, campaigns, columns)


def load_summary(data_dir: str | Path, processed_dir: str | Path, campaigns: Sequence[str] | None = None,
                 columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The summary table of the set in ``processed_dir``, as :func:`load_series`."""
    return _load("summary", data_dir, processed_dir, campaigns, columns)


def measured_rounds(series: pd.DataFrame, metric: str, test: Sequence[str] = ("io_scheduler",),
                    round: str = "repeat", ddir: str | None = "read", campaign: str | None = None,
                    kind: str | None = None, t_min: float | None = None) -> pd.DataFrame:
    """One metric's windowed series (one unit, as stored) as rounds: ``test`` = the run keys joined by
    '/', ``round`` = the repeat; rows without those keys are dropped.  ``ddir=None`` keeps every
    direction (put ``ddir`` in ``test`` then); ``campaign``/``kind`` select one campaign or source
    (e.g. ``rados-bench``); ``t_min`` drops samples before that time (s), e.g. rados bench's second-0
    line, printed before any operation has completed."""
    keep = series["metric"] == metric
    if ddir is not None:
        keep &= series["ddir"] == ddir
    if campaign is not None:
        keep &= series["campaign"] == campaign
    if kind is not None:
        keep &= series["kind"] == kind
    if t_min is not None:
        keep &= series["t_s"] >= t_min
    s = series[keep].dropna(subset=[*test, round])
    return as_rounds(s, list(test), round)


def run_values(summary: pd.DataFrame, campaign: str, kind: str, metric: str, test: Sequence[str],
               ddir: str | Sequence[str] | None = None) -> pd.DataFrame:
    """One value per run from the tool's own summary (e.g. fio-json ``bw``, rados-bench ``bw`` in B/s):
    ``test`` (the ``test`` keys joined by '/'), ``round`` (the repeat, int), ``value`` (summed over the
    run's jobs of that direction) and ``order``, the run's place in the campaign: its start time in
    seconds since the epoch (run.json ``started``) where recorded, else the capture's ``plan_order``.
    A direction that is zero in every run of a test (fio's unused read/write side) is dropped; a test
    left with two directions raises ValueError unless ``ddir`` is one of the ``test`` keys."""
    s = summary[str_eq(summary["campaign"], campaign) & str_eq(summary["kind"], kind)
                & str_eq(summary["metric"], metric)]
    if ddir is not None:
        s = s[str_isin(s["ddir"], [ddir] if isinstance(ddir, str) else list(ddir))]
    started = pd.to_datetime(s["started"].astype(str), utc=True, errors="coerce", format="%Y-%m-%dT%H:%M:%S%z") \
        if "started" in s else pd.Series(pd.NaT, index=s.index)
    order = (started - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    if "plan_order" in s:
        order = order.fillna(pd.to_numeric(s["plan_order"].astype(str), errors="coerce"))
    v = pd.DataFrame({"test": s[list(test)].astype(str).agg("/".join, axis=1), "ddir": s["ddir"].astype(str),
                      "round": pd.to_numeric(s["repeat"].astype(str)).astype("int64"),
                      "value": s["value"].astype(float), "order": order})
    keys = ["test", "ddir", "round"]
    out = v.groupby(keys, sort=True).agg(value=("value", "sum"), order=("order", "min")).reset_index()
    # fio reports every direction of a job; a direction that is zero in every run of a test was not run
    out = out[out.groupby(["test", "ddir"])["value"].transform("max") > 0]
    if out.groupby("test")["ddir"].nunique().max() > 1 and "ddir" not in test:
        raise ValueError(f"{campaign} {kind} {metric}: a test has several directions; "
                         "pass ddir or include 'ddir' in test")
    return out.drop(columns="ddir").reset_index(drop=True)


def means_table(values: pd.DataFrame) -> pd.DataFrame:
    """Round × test table of :func:`run_values` (the chapter's summary layout)."""
    return (values.pivot(index="round", columns="test", values="value")
            .rename_axis(index=None, columns=None))

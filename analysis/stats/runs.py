"""Measured runs as consistency rounds: the processed series table → ``test, round, value, t_s``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .consistency import as_rounds


def _load(table: str, data_dir: str | Path, processed_dir: str | Path) -> pd.DataFrame:
    p = Path(processed_dir) / f"{table}.parquet"
    if p.is_file():
        return pd.read_parquet(p)
    from analysis.ingest.walk import ingest
    return getattr(ingest(data_dir, progress=False), table)


def load_series(data_dir: str | Path, processed_dir: str | Path) -> pd.DataFrame:
    """``processed_dir/series.parquet`` (from ``make data``) if it exists, else ``data_dir`` ingested in memory."""
    return _load("series", data_dir, processed_dir)


def load_summary(data_dir: str | Path, processed_dir: str | Path) -> pd.DataFrame:
    """``processed_dir/summary.parquet`` (from ``make data``) if it exists, else ``data_dir`` ingested in memory."""
    return _load("summary", data_dir, processed_dir)


def measured_rounds(series: pd.DataFrame, metric: str, test: tuple[str, ...] = ("scheduler",),
                    round: str = "repeat", ddir: str = "read") -> pd.DataFrame:
    """One metric's windowed series (one unit, as stored) as rounds: ``test`` = the run keys joined by
    '/', ``round`` = the repeat; rows without those keys are dropped."""
    s = series[(series["metric"] == metric) & (series["ddir"] == ddir)].dropna(subset=[*test, round])
    return as_rounds(s, list(test), round)

"""What the published-number modules share: paths, the typed reading of a published CSV and the
provenance check's row loop."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "data" / "published"
SEEDS = ROOT.parent / "shared" / "seeds"


def seed_rows(df: pd.DataFrame, seeds: str | Path, csv: str, problems: list[str]) -> Iterator[tuple[str, object, list[str]]]:
    """Each row of ``df`` with where it is (``<csv> row <n> (<metric> '<printed>')``, row 2 = the CSV's
    first data line) and the lines of its seed file (read once per seed, in place under ``seeds``); a row
    whose seed is not there is reported in ``problems`` and skipped."""
    texts: dict[str, list[str] | None] = {}
    for i, r in enumerate(df.itertuples(index=False), start=2):
        where = f"{csv} row {i} ({r.metric} {r.printed!r})"
        if r.seed not in texts:
            p = Path(seeds) / r.seed
            texts[r.seed] = p.read_text(encoding="utf-8").splitlines() if p.is_file() else None
        lines = texts[r.seed]
        if lines is None:
            problems.append(f"{where}: seed {r.seed} not found in {seeds}")
            continue
        yield where, r, lines


class ProvenanceError(ValueError):
    """A published row that does not match its seed: names the CSV, the row (1-based, header = 1) and why."""


def read_published(path: str | Path, columns: list[str], approx_default: str | None = None) -> pd.DataFrame:
    """A published CSV with typed columns: ``value`` float (empty: no number printed), ``seed_line`` and
    ``approx`` int (an empty ``approx`` is ``approx_default``, or an error without one), the rest text.
    :class:`ProvenanceError` names the file and line (header = line 1) of the first cell that is not a number."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in df]
    if missing:
        raise ProvenanceError(f"{path}: missing columns {missing}; expected {columns}")
    df = df[columns].copy()
    for col in ("value", "seed_line", "approx"):
        raw = df[col]
        if col == "value":
            raw = raw.replace("", None)
        elif col == "approx" and approx_default is not None:
            raw = raw.replace("", approx_default)
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna() & raw.notna()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ProvenanceError(f"{path}:{i + 2}: {col} {df[col].iloc[i]!r} is not a number")
        df[col] = num
    df["seed_line"] = df["seed_line"].astype("int64")
    df["approx"] = df["approx"].astype("int64")
    return df

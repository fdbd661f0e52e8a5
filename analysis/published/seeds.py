"""Paths shared by the published-number modules and their provenance check's row loop."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

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

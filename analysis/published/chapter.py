"""Numbers printed by the studies in ``../shared/seeds``, as tidy tables with provenance.

The workload-characterization chapter's tables are transcribed from the seed text by
:func:`transcribe_chapter` (its pipe tables are parsed in place; the seed is never copied) into
``data/published/ceph-chapter-tables.csv``, one row per printed cell::

    seed, section, table, caption, seed_line, row, column, printed, value, unit, origin, note

``printed`` is the cell exactly as printed (so the printed precision is kept); ``value`` is its number
(the seed prints minus signs as en dashes, read here as minus). ``seed_line`` is 1-based.
:func:`load_chapter_tables` reads the CSV back; :func:`chapter_matrix` pivots one table to row × column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .seeds import PUBLISHED, ROOT

CHAPTER_SEED = "ceph-workload-characterization-chapter.txt"
CHAPTER_CSV = PUBLISHED / "ceph-chapter-tables.csv"
COLUMNS = ["seed", "section", "table", "caption", "seed_line", "row", "column", "printed", "value",
           "unit", "origin", "note"]


@dataclass(frozen=True)
class TableSpec:
    caption: str          # the line printed just above the table in the seed
    table: str            # our short name
    section: str          # the chapter section it is printed in
    units: dict[str, str]  # row label → unit; key "*" is the default, "col:<label>" overrides by column


#: the chapter's storage nodes, the columns of its per-node tables (idle time)
NODES = [f"wasp{i}" for i in range(4, 13)]

CHAPTER_TABLES = (
    TableSpec("Total Idle Time in the First 240 Seconds", "idle_time_240s", "Filestore IO Pattern",
              {"*": "s", "col:unlabelled_13": "unknown", "col:unlabelled_14": "unknown"}),
    TableSpec("An Example of the Hypothesis Approach", "hypothesis_example",
              "Performance Consistency Verification",
              {"Normal": "count", "Non-normal": "count", "Invalid": "count", "F-value": "1",
               "P-value": "1", "Result": "code"}),
    TableSpec("Summary for Bandwidth of Rados Bench", "bandwidth_summary",
              "Performance Consistency Verification", {"*": "MB/s", "Std/Mean": "1"}),
    TableSpec("Comparison via Range Tolerance Approach", "diff_ratio",
              "Performance Consistency Verification", {"*": "1"}),
    TableSpec("Ratio of Values within a Given Range Around Mean", "range_ratio",
              "Performance Consistency Verification", {"*": "1"}),
)

_NOTES = {
    "idle_time_240s": "header cells 13 and 14 are empty in the seed (two bare '|' lines follow the header)",
    "bandwidth_summary": "unit not printed; rados bench reports MB/s",
}
_MINUS = str.maketrans({"\u2013": "-", "\u2212": "-"})


def _cells(line: str) -> list[str]:
    cells = [c.strip() for c in line.split("|")]
    return cells[:-1] if cells and cells[-1] == "" else cells


def _number(text: str) -> float:
    try:
        return float(text.translate(_MINUS))
    except ValueError:
        return np.nan


def _unit(spec: TableSpec, row: str, col: str) -> str:
    return spec.units.get(f"col:{col}") or spec.units.get(row) or spec.units.get("*", "unknown")


def transcribe_chapter(seed: str | Path) -> pd.DataFrame:
    """Parse the chapter's tables listed in :data:`CHAPTER_TABLES` from the seed text, in place.

    A table is the pipe-table that follows its caption line: a header row, optional bare ``|`` lines,
    a ``---`` separator, then data rows until the first line without ``|``. Data rows longer than the
    header get columns named ``unlabelled_<1-based position>``. Raises ``ValueError`` naming the
    caption if a table is not found, so a changed seed fails loudly.
    """
    seed = Path(seed)
    lines = seed.read_text(encoding="utf-8").splitlines()
    out = []
    for spec in CHAPTER_TABLES:
        try:
            i = lines.index(spec.caption)
        except ValueError:
            raise ValueError(f"{seed.name}: caption {spec.caption!r} not found") from None
        header = _cells(lines[i + 1])
        j = i + 2
        while j < len(lines) and not lines[j].startswith("---"):
            j += 1
        if j == len(lines):
            raise ValueError(f"{seed.name}:{i + 2}: no '---' separator after {spec.caption!r}")
        j += 1
        while j < len(lines) and "|" in lines[j]:
            cells = _cells(lines[j])
            cols = header[1:] + [f"unlabelled_{k + 1}" for k in range(len(header), len(cells))]
            for col, text in zip(cols, cells[1:]):
                out.append({"section": spec.section, "table": spec.table, "caption": spec.caption,
                            "seed_line": j + 1, "row": cells[0].translate(_MINUS).replace("\u00b1 ", "±"),
                            "column": col, "printed": text, "value": _number(text),
                            "unit": _unit(spec, cells[0], col), "note": _NOTES.get(spec.table, "")})
            j += 1
    df = pd.DataFrame(out).assign(seed=seed.name, origin="published")
    return df[COLUMNS]


def write_chapter_tables(seed: str | Path, out: str | Path = CHAPTER_CSV) -> Path:
    """Transcribe the seed and write the CSV (UTF-8, no index)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    transcribe_chapter(seed).to_csv(out, index=False)
    return out


def load_chapter_tables(path: str | Path = CHAPTER_CSV) -> pd.DataFrame:
    """The chapter's printed tables, long format (see the module docstring); ``printed`` stays text."""
    return pd.read_csv(path, dtype={"printed": str, "note": str}, keep_default_na=False,
                       na_values={"value": [""]})


def chapter_matrix(tables: pd.DataFrame, table: str, field: str = "value") -> pd.DataFrame:
    """One printed table as row × column (printed order kept); ``field`` is ``value`` or ``printed``."""
    t = tables[tables["table"] == table]
    m = t.pivot(index="row", columns="column", values=field)
    return m.loc[t["row"].unique(), t["column"].unique()].rename_axis(index=None, columns=None)


decimals_of = np.vectorize(lambda s: len(s.split(".")[1]) if "." in s else 0, otypes=[int])
decimals_of.__doc__ = "Printed decimals of each cell string (``'0.160'`` → 3, ``'1'`` → 0)."

if __name__ == "__main__":  # python -m analysis.published.chapter ../shared/seeds/<chapter>.txt
    import sys
    print(write_chapter_tables(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "seeds" / CHAPTER_SEED))

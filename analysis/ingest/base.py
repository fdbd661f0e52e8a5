"""The tidy schema every reader returns, and the one error type a reader may raise.

Canonical units (one per metric, across every source): latencies ``ns``, bandwidth ``B/s``,
rates ``1/s``, durations ``s``, sizes ``B``, plain counts ``count``.  Figures convert for display.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..schema import CATEGORY_COLUMNS, SERIES_COLUMNS, SUMMARY_COLUMNS  # noqa: F401 (the readers' names)

UNITS = {"ns", "B/s", "1/s", "s", "B", "count", "ratio"}
DDIRS = ("read", "write", "trim")

MIB = 1024 * 1024


#: CBT's archive: ``json_output.N.<host>`` is what CBT extracted from ``output.N.<host>`` beside it (the
#: tool's own stdout: fio's text and JSON, rados bench's text), cbt/benchmark/librbdfio.py and
#: radosbench.py ``parse()``
CBT_DERIVED_PREFIX = "json_output."


def cbt_derived(path: str | Path) -> bool:
    """Is ``path`` a copy CBT derived from the tool output beside it (``json_output.N.<host>`` next to
    ``output.N.<host>``)?  Read, it would count the run twice."""
    p = Path(path)
    return p.name.startswith(CBT_DERIVED_PREFIX) and (p.parent / p.name[len("json_"):]).is_file()


class IngestError(ValueError):
    """Bad input: names the file, the 1-based line (or byte offset) and what was expected."""

    def __init__(self, path: str | Path, message: str, line: int | None = None,
                 offset: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.offset = offset
        self.message = message
        where = self.path
        if line is not None:
            where += f":{line}"
        elif offset is not None:
            where += f": byte {offset}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable across processes (dask, multiprocessing)
        return (IngestError, (self.path, self.message, self.line, self.offset))


class Label:
    """A column of one label, ``n`` rows (a file's ``source``): made a categorical only when read
    (:func:`column`) — the ingest replaces ``source`` with the path under the root and never reads it,
    and each file's distinct path would cost a new categories index (~80 µs)."""

    __slots__ = ("label", "n")

    def __init__(self, label: str, n: int) -> None:
        self.label, self.n = label, n

    def __len__(self) -> int:
        return self.n

    def categorical(self) -> pd.Categorical:
        return cat(np.zeros(self.n, dtype=np.int8), (self.label,))


class Tidy:
    """A tidy table as the readers build it: ready 1-D columns (categoricals, float64 arrays, a
    :class:`Label`) of one length, in ``columns`` order.  What the ingest needs of a file's rows (value
    rules, stacking a batch's files into one table) it takes from these arrays; a DataFrame
    (:meth:`frame`, ~70 µs) is built only when someone asks for one (``Parsed.summary``/``series``)."""

    __slots__ = ("cols", "columns", "n")

    def __init__(self, cols: dict[str, Any], columns: list[str]) -> None:
        lengths = {c: len(cols[c]) for c in columns}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"tidy columns of different lengths: {lengths}")
        self.cols = {c: cols[c] for c in columns}
        self.columns = list(columns)
        self.n = next(iter(lengths.values()), 0)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"Tidy({self.n} rows: {', '.join(self.columns)})"

    def frame(self) -> pd.DataFrame:
        return tidy_frame({c: column(self, c) for c in self.columns}, self.columns)

    @staticmethod
    def of(frame: pd.DataFrame) -> "Tidy":
        """The columns of a DataFrame (their arrays, not copied)."""
        return Tidy({str(c): frame[c].array for c in frame.columns}, [str(c) for c in frame.columns])


def column(table: "pd.DataFrame | Tidy", name: str):
    """The array behind one column of a DataFrame or a :class:`Tidy` (a categorical or a numpy-backed array)."""
    if not isinstance(table, Tidy):
        return table[name].array
    c = table.cols[name]
    if isinstance(c, Label):
        c = table.cols[name] = c.categorical()
    return c


def has_column(table: "pd.DataFrame | Tidy", name: str) -> bool:
    return name in (table.cols if isinstance(table, Tidy) else table.columns)


def as_frame(table: "pd.DataFrame | Tidy") -> pd.DataFrame:
    return table.frame() if isinstance(table, Tidy) else table


class Parsed:
    """One file, read.

    ``kind``     detected format, e.g. ``"fio-json"``, ``"fio-log"``, ``"fio-hist-log"``, ``"rados-bench"``.
    ``meta``     what the file tells: tool version, job options, block size, assumptions made.
    ``summary``  tidy: ``source, job, ddir, metric, value, unit``.
    ``series``   the same plus ``t_s`` (float seconds since the start of the run).
    ``partial``  the file is incomplete (e.g. interrupted run, no summary block); values are what was there.
    ``tables``   per-event tables beside the tidy ones (blktrace: "requests", "bios"), not stored by ``walk``.

    ``summary`` and ``series`` are DataFrames when read; a reader may hand them over as :class:`Tidy`
    columns, and the frame is built on first access (the ingest reads ``tidy_summary``/``tidy_series``,
    the tables as the reader gave them, and never builds it)."""

    def __init__(self, path: str, kind: str, meta: dict[str, Any] | None = None,
                 summary: "pd.DataFrame | Tidy | None" = None, series: "pd.DataFrame | Tidy | None" = None,
                 partial: bool = False, tables: dict[str, pd.DataFrame] | None = None) -> None:
        self.path, self.kind, self.partial = path, kind, partial
        self.meta = {} if meta is None else meta
        self.tables = {} if tables is None else tables
        self._summary, self._series = summary, series
        self._by_job_ddir: dict | None = None

    def __repr__(self) -> str:
        return (f"Parsed(path={self.path!r}, kind={self.kind!r}, summary={len(self.tidy_summary)} rows, "
                f"series={len(self.tidy_series)} rows, partial={self.partial})")

    @property
    def summary(self) -> pd.DataFrame:
        if not isinstance(self._summary, pd.DataFrame):
            self._summary = empty_frame(SUMMARY_COLUMNS) if self._summary is None else self._summary.frame()
        return self._summary

    @summary.setter
    def summary(self, value: "pd.DataFrame | Tidy") -> None:
        self._summary, self._by_job_ddir = value, None

    @property
    def series(self) -> pd.DataFrame:
        if not isinstance(self._series, pd.DataFrame):
            self._series = empty_frame(SERIES_COLUMNS) if self._series is None else self._series.frame()
        return self._series

    @series.setter
    def series(self, value: "pd.DataFrame | Tidy") -> None:
        self._series = value

    @property
    def tidy_summary(self) -> "pd.DataFrame | Tidy":
        """The summary as the reader gave it (a :class:`Tidy` or a DataFrame), without building a frame."""
        return _empty_tidy(SUMMARY_COLUMNS) if self._summary is None else self._summary

    @property
    def tidy_series(self) -> "pd.DataFrame | Tidy":
        return _empty_tidy(SERIES_COLUMNS) if self._series is None else self._series

    def with_meta(self, meta: dict[str, Any]) -> "Parsed":
        """A copy with its own ``meta`` (the rows and tables shared, as the reader gave them)."""
        return Parsed(self.path, self.kind, meta, self._summary, self._series, self.partial, self.tables)

    @property
    def tool_version(self) -> str | None:
        return self.meta.get("tool_version")

    def values_of(self, job: str, ddir: str) -> dict[str, float]:
        """``{metric: value}`` of one job and direction of the summary (indexed once per object: fio
        logs look up their companion JSON's summary once per direction, thousands of times a walk)."""
        if self._by_job_ddir is None:
            s = self.tidy_summary
            idx: dict[tuple[str, str], dict[str, float]] = {}
            for j, d, m, v in zip(map(str, column(s, "job")), map(str, column(s, "ddir")),
                                  map(str, column(s, "metric")), np.asarray(column(s, "value"), np.float64)):
                idx.setdefault((j, d), {})[m] = float(v)
            self._by_job_ddir = idx
        return self._by_job_ddir.get((str(job), str(ddir)), {})

    def value(self, metric: str, ddir: str | None = None, job: str | None = None) -> float:
        """The single summary value for ``metric`` (optionally one ddir/job); KeyError if absent or ambiguous."""
        s = self.summary
        m = s["metric"] == metric
        if ddir is not None:
            m &= s["ddir"] == ddir
        if job is not None:
            m &= s["job"] == job
        hit = s.loc[m, "value"]
        if len(hit) != 1:
            raise KeyError(f"{metric} ddir={ddir} job={job}: {len(hit)} rows in summary of {self.path}")
        return float(hit.iloc[0])


_EMPTY_TIDY: dict[tuple[str, ...], Tidy] = {}


def _empty_tidy(columns: list[str]) -> Tidy:
    key = tuple(columns)
    if key not in _EMPTY_TIDY:
        _EMPTY_TIDY[key] = Tidy.of(empty_frame(columns))
    return _EMPTY_TIDY[key]


_EMPTY: dict[tuple[str, ...], pd.DataFrame] = {}
_DTYPES: dict[tuple[str, ...], pd.CategoricalDtype] = {}


def json_number(x: Any) -> float | None:
    """A JSON value as float: numbers, and strings that read as one ("4096"); None for anything else
    (missing, booleans, objects, other text)."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return None
    return None


def cat(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    """A categorical from ready codes (-1 = missing) over ``str`` categories, without validation.

    The dtype of each distinct category list is built once and reused: building it (a ``str`` index,
    uniqueness check) costs ~80 µs, reusing it ~1 µs, and readers build ~100 k small categoricals
    over the shipped data.  Callers guarantee the codes are in range and the categories distinct.
    """
    key = tuple(categories)
    dt = _DTYPES.get(key)
    if dt is None:
        if len(_DTYPES) > 50_000:  # job names differ per file; keep the cache bounded
            _DTYPES.clear()
        # pandas' public constructor (it checks the categories, ~90 µs): 242 distinct lists over data/raw
        dt = _DTYPES[key] = pd.CategoricalDtype(pd.Index(list(key), dtype="str"))
    return pd.Categorical.from_codes(codes, dtype=dt, validate=False)


def category_names(c: pd.Categorical) -> list[str]:
    """A categorical's categories as Python ``str`` (~4 µs for a few labels; the value rules and the batch
    stacking ask ~60 k times over the shipped data: 0.2 s of its ~37 CPU s)."""
    return list(map(str, c.categories.to_numpy(dtype=object)))


def empty_frame(columns: list[str]) -> pd.DataFrame:
    """A 0-row tidy frame with the right dtypes (a copy of a template built once per column list)."""
    key = tuple(columns)
    if key not in _EMPTY:
        df = pd.DataFrame({c: pd.Series(dtype="float64" if c in ("value", "t_s") else "object")
                           for c in columns})
        _EMPTY[key] = categorize(df)
    return _EMPTY[key].copy()


def tidy_frame(cols: dict[str, Any], columns: list[str]) -> pd.DataFrame:
    """A frame of ready 1-D columns (categoricals, float64 arrays) in ``columns`` order, through pandas'
    public dict constructor with ``copy=False``: the float arrays are not copied into a 2-D block.
    ~70 µs a frame (pandas 3.1, this VM), so readers build one series frame per file, not one per
    metric (:func:`series_metrics_frame`, :func:`series_blocks_frame`).  Lengths are checked."""
    df = pd.DataFrame({c: cols[c] for c in columns}, copy=False)
    # one cached column Index per column list: its lookup table is built once, not per frame (a fresh
    # Index per frame makes each later ``df[name]`` rebuild it: ~0.2 ms per small file)
    key = tuple(columns)
    idx = _COLUMN_INDEX.get(key)
    if idx is None:
        idx = _COLUMN_INDEX[key] = df.columns
    df.columns = idx
    return df


_COLUMN_INDEX: dict[tuple[str, ...], pd.Index] = {}


def labels_categorical(labels: Sequence[str]) -> pd.Categorical:
    """Labels → categorical with ``str`` categories in order of first appearance (no pandas astype:
    ~3x cheaper for the few-dozen-row frames readers build per file)."""
    at: dict[str, int] = {}
    codes = np.fromiter((-1 if x is None or x != x else at.setdefault(str(x), len(at)) for x in labels),
                        dtype=np.int32, count=len(labels))
    return cat(codes, list(at))


def categorize(df: pd.DataFrame) -> pd.DataFrame:
    """Cast the key columns to categoricals and value/t_s to float64 (in place where possible)."""
    for c in CATEGORY_COLUMNS:
        if c in df.columns and not isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype("category")
    for c in ("value", "t_s"):
        if c in df.columns and df[c].dtype != np.float64:
            df[c] = df[c].astype("float64")
    return df


def summary_frame(source: str, rows: Iterable[tuple[str, str, str, float, str]]) -> pd.DataFrame:
    """Build a summary frame from ``(job, ddir, metric, value, unit)`` tuples."""
    rows = list(rows)
    if not rows:
        return empty_frame(SUMMARY_COLUMNS)
    job, ddir, metric, value, unit = zip(*rows)
    cols = {"source": Label(source, len(rows)), "job": labels_categorical(job),
            "ddir": labels_categorical(ddir), "metric": labels_categorical(metric),
            "value": np.asarray(value, dtype=np.float64), "unit": labels_categorical(unit)}
    return Tidy(cols, SUMMARY_COLUMNS)


def series_frame(source: str, job: str | pd.Categorical, ddir: pd.Categorical | np.ndarray | str, metric: str,
                 unit: str, t_s: np.ndarray, value: np.ndarray) -> pd.DataFrame:
    """Build one metric's series (vectorised, without copying ``t_s``/``value`` when they are float64).

    ``ddir`` is one label, a ready categorical (cheapest: build it from codes), or an array of labels;
    ``job`` one label or a ready categorical (a log holding several jobs' segments).
    """
    n = len(t_s)

    def const(label: str) -> pd.Categorical:
        return cat(np.zeros(n, dtype=np.int8), (label,))

    cols = {
        "source": Label(source, n),
        "job": job if isinstance(job, pd.Categorical) else const(job),
        "ddir": (const(ddir) if isinstance(ddir, str) else
                 ddir if isinstance(ddir, pd.Categorical) else labels_categorical(ddir)),
        "metric": const(metric),
        "value": np.asarray(value, dtype=np.float64),
        "unit": const(unit),
        "t_s": np.asarray(t_s, dtype=np.float64),
    }
    return Tidy(cols, SERIES_COLUMNS)


def series_blocks_frame(source: str, t_s: np.ndarray,
                        blocks: list[tuple[str, str, str, str, np.ndarray]]) -> pd.DataFrame:
    """Many series on one time axis as one frame: ``blocks`` are ``(job, ddir, metric, unit, values)``
    with ``len(values) == len(t_s)``.  Labels become categoricals from codes (no per-block frames)."""
    n, k = len(t_s), len(blocks)
    if not k:
        return empty_frame(SERIES_COLUMNS)

    def labels(i: int) -> pd.Categorical:
        cats = list(dict.fromkeys(b[i] for b in blocks))
        at = {c: j for j, c in enumerate(cats)}
        return cat(np.repeat(np.array([at[b[i]] for b in blocks], dtype=np.int32), n), cats)
    cols = {"source": Label(source, n * k),
            "job": labels(0), "ddir": labels(1), "metric": labels(2),
            "value": np.concatenate([np.asarray(b[4], dtype=np.float64) for b in blocks]),
            "unit": labels(3), "t_s": np.tile(np.asarray(t_s, dtype=np.float64), k)}
    return Tidy(cols, SERIES_COLUMNS)


def series_metrics_frame(source: str, job: str, ddir: pd.Categorical | str, t_s: np.ndarray,
                         metrics: list[tuple[str, str, np.ndarray]]) -> pd.DataFrame:
    """Several metrics of one job on one time axis (``metrics`` = ``(metric, unit, values)``, each
    ``len(t_s)`` long), metric after metric, as one frame: what :func:`series_frame` per metric and
    :func:`concat_tidy` give, without the per-metric frames.  ``ddir`` is one label or a categorical
    with a label per time."""
    n, k = len(t_s), len(metrics)
    if not n or not k:
        return empty_frame(SERIES_COLUMNS)
    zeros = np.zeros(n * k, dtype=np.int8)
    units = list(dict.fromkeys(u for _, u, _ in metrics))
    cols = {"source": Label(source, n * k), "job": cat(zeros, (job,)),
            "ddir": (cat(zeros, (ddir,)) if isinstance(ddir, str) else
                     cat(np.tile(ddir.codes, k), list(ddir.categories))),
            "metric": cat(np.repeat(np.arange(k, dtype=np.int32), n), [m for m, _, _ in metrics]),
            "value": np.concatenate([np.asarray(v, dtype=np.float64) for _, _, v in metrics]),
            "unit": cat(np.repeat(np.array([units.index(u) for _, u, _ in metrics], dtype=np.int8), n), units),
            "t_s": np.tile(np.asarray(t_s, dtype=np.float64), k)}
    return Tidy(cols, SERIES_COLUMNS)


def union_str_categoricals(cols: list) -> pd.Categorical:
    """One categorical over ``cols`` (categoricals, or Series/arrays of labels), categories as ``str``
    in order of first appearance.  Vectorised per column: each distinct categories object is mapped to
    the union once (the many small frames of one kind share a handful, see :func:`cat`), then the codes
    are remapped with numpy."""
    union: dict[str, int] = {}
    # a memo for this call only, as copy.deepcopy's: keyed by id() of categories objects it holds, so no id is
    # reused while it lives (by value would hash every label list: the point is not to iterate them again)
    maps: dict[int, tuple[pd.Index, np.ndarray]] = {}
    codes = []
    for col in cols:
        arr = col if isinstance(col, pd.Categorical) else \
            col.array if isinstance(getattr(col, "dtype", None), pd.CategoricalDtype) else pd.Categorical(col)
        hit = maps.get(id(arr.categories))
        if hit is None:
            m = np.array([union.setdefault(str(x), len(union)) for x in arr.categories.tolist()] + [-1],
                         dtype=np.int32)
            hit = maps[id(arr.categories)] = (arr.categories, m)
        codes.append(hit[1][arr.codes])  # code -1 (missing) picks the trailing -1
    cats = pd.Index(list(union), dtype="str")
    if not codes:
        return pd.Categorical([], categories=cats)
    return cat(np.concatenate(codes), list(union)) if len(union) < 1024 else \
        pd.Categorical.from_codes(np.concatenate(codes), categories=cats)


def concat_tidy(frames: list, columns: list[str]) -> "Tidy | pd.DataFrame":
    """Concatenate tidy tables (DataFrames or :class:`Tidy`), unifying categoricals (plain concat would fall
    back to object): a :class:`Tidy`, or an empty frame when there are no rows."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_frame(columns)
    if len(frames) == 1:
        return frames[0] if isinstance(frames[0], Tidy) else frames[0].reset_index(drop=True)
    out = {}
    for c in columns:
        if c in CATEGORY_COLUMNS:
            out[c] = union_str_categoricals([column(f, c) for f in frames])
        else:
            out[c] = np.concatenate([np.asarray(column(f, c), dtype=np.float64) for f in frames])
    return Tidy(out, columns)


#: the longest line a text reader takes (fio normal and terse output, job files, getput, blkparse, btt): the
#: longest real one in data/raw, the fixtures, tests/outside and ../shared/corpus is 1,205 bytes (fio terse
#: v3); a job file with a 200 MB section name took 1.7 GB to parse and 9 GB to ingest
TEXT_LINE_MAX_BYTES = 64 << 10


def check_line_lengths(path: str | Path, data: bytes | bytearray | memoryview, what: str) -> None:
    """``IngestError`` at the first line of ``data`` longer than :data:`TEXT_LINE_MAX_BYTES` (``what``: the
    format, for the message); nothing for shorter ones.  Steps from the last line break of each window of
    that many bytes to the next: about 600 ``rfind`` calls for 40 MB of short lines."""
    n, cap = len(data), TEXT_LINE_MAX_BYTES
    if n <= cap:
        return
    mv = data if isinstance(data, bytes) else bytes(data)
    start = 0
    while n - start > cap:
        last = mv.rfind(b"\n", start, start + cap + 1)
        if last < 0:  # no line break within cap + 1 bytes of a line's start
            nxt = mv.find(b"\n", start)
            raise IngestError(Path(path), f"a line of {(n if nxt < 0 else nxt) - start:,} bytes: expected {what} "
                                          f"lines of at most {cap >> 10} KiB", line=mv.count(b"\n", 0, start) + 1)
        start = last + 1


def text_lines(data: bytes | str) -> tuple[list[str], list[str]]:
    """A text tool output (blkparse, btt) as its lines, and what makes it incomplete: a last line with no
    newline after it was cut inside (it is dropped and said so)."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray, memoryview)) else data
    lines = text.split("\n")
    incomplete: list[str] = []
    if lines and lines[-1].strip():  # no newline after the last line: the file was cut inside it
        incomplete.append(f"the file ends inside line {len(lines)} (cut): that line is not read")
        lines = lines[:-1]
    return lines, incomplete


def line_of_offset(data: bytes | str, offset: int) -> int:
    """1-based line number of a byte/char offset."""
    nl = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(nl, 0, max(0, offset)) + 1

"""Fast scanner for comma-separated integer tables (fio logs, fio histogram logs).

The file is memory-mapped and parsed by a small C loop (``_cscan.c``, built once by ``_native``,
called through ctypes with the GIL released, one thread per core over newline-aligned chunks): no
Python per row, no copy of the file.  Grammar per line: ``int (',' ' '* int)* '\\r'? '\\n'``, with an
optional leading ``-``; blank lines are skipped.  No counting pass: outputs are sized by a bound
(a line takes ≥ 2·ncol bytes; untouched pages of the over-sized allocation cost no memory) and the
chunks' rows are moved together afterwards.  Tables come back column-major, so ``tab[:, k]`` is
a contiguous int64 column.
"""

from __future__ import annotations

import ctypes
import re
import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from . import _native
from ._scanerr import scan_error
from .base import IngestError

T = TypeVar("T")
#: files smaller than this are parsed on one thread (tests lower it to exercise the chunking)
CHUNK_MIN_BYTES = 8 << 20
#: threads per large file (None: one per core, at most 8); a Dask worker sets 1, the cluster being the parallelism
THREADS: int | None = None
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
_I64 = ctypes.c_int64
_P = ctypes.c_void_p


def _lib() -> ctypes.CDLL | None:
    """The C scanner with its signatures, or None: switched off (``CEPHQOS_NATIVE=0``) or not buildable
    here; the callers then take their plain path (:mod:`._plain`), which gives the same tables."""
    return _configured() if _native.enabled() else None


def native() -> bool:
    """True when the readers use the C scanner (built, loadable and not switched off)."""
    return _lib() is not None


@cache
def _configured() -> ctypes.CDLL | None:
    lib = _native.library("_cscan")
    if lib is None:
        return None
    err = [ctypes.POINTER(_I64), ctypes.POINTER(_I64)]
    lib.parse_rows.argtypes = [_P, _I64, _I64, _I64, _P, _I64, _I64, _I64, *err]
    lib.parse_rows.restype = _I64
    lib.parse_fio_log.argtypes = [_P, _I64, _I64, _I64, _P, _P, _P, _P, _I64, _I64, *err]
    lib.parse_fio_log.restype = _I64
    lib.pg_rows.argtypes = [ctypes.c_char_p, _I64, _I64, _P, _I64, _I64, _P, _P, _P, _I64, _P, _P, _P, _P]
    lib.pg_rows.restype = _I64
    lib.pg_lines.argtypes = [ctypes.c_char_p, _I64, _I64, _P, _P, _P]
    lib.pg_lines.restype = _I64
    return lib


@dataclass
class PgLines:
    """A timeline's lines as ``pg_lines`` in ``_cscan.c`` classifies them (split at ``\n`` as
    ``bytes.split`` splits): line ``i`` is ``data[start[i]:start[i + 1] - 1]``; ``kind`` 0 blank, 1 a
    sample line of the poller's shape (``ceph_timeline._FAST_SAMPLE``, no ``:`` in its rows), 2 other;
    ``pos[i]`` (kind 1): the time number's start and end, the rows' start and end (byte offsets)."""
    start: np.ndarray
    kind: np.ndarray
    pos: np.ndarray


def pg_lines(data: bytes) -> PgLines:
    """Every line of a cephqos-pg-timeline classified in one C pass (see :class:`PgLines`)."""
    maxlines = data.count(b"\n") + 1
    start = np.empty(maxlines + 1, np.int64)
    kind = np.empty(maxlines, np.int8)
    pos = np.zeros((maxlines, 4), np.int64)
    n = _lib().pg_lines(data, len(data), maxlines, start.ctypes.data, kind.ctypes.data, pos.ctypes.data)
    if n != maxlines:
        raise AssertionError(f"pg_lines: {n} lines, expected {maxlines}")
    return PgLines(start, kind, pos)


#: ``pg_rows`` field types besides a numeric column's index (as in ``_cscan.c``)
PG_PGID, PG_STATE, PG_ANY = -1, -2, -3


@dataclass
class PgRows:
    """The PG rows of a timeline's sample lines, column-wise (see :func:`pg_rows`)."""
    n_per: np.ndarray             # rows per sample line
    numbers: np.ndarray           # (numeric fields, rows) float64, NaN = null
    codes: np.ndarray             # (2, rows) int32: pgid and state as indexes into ``names``
    names: tuple[list[str], list[str]]  # distinct pgids, distinct states (order of first appearance)


def pg_rows(blob: bytes, nlines: int, ftypes: list[int], nnum: int) -> PgRows | None:
    """``pg_rows`` in ``_cscan.c``: the rows of ``nlines`` sample lines' row bytes (what lies between
    ``"pgs":[[`` and ``]]``, one line each, joined by ``\n``), each field typed by ``ftypes`` (a numeric
    column's index, or :data:`PG_PGID`/:data:`PG_STATE`/:data:`PG_ANY`).  None when the bytes hold
    anything but plain JSON scalars in rows of ``len(ftypes)`` values (then ``json`` must read them), and
    where the C part is off (:func:`native`)."""
    lib = _lib()
    if lib is None:
        return None
    maxrows = blob.count(b"[") + nlines  # every row but a line's first starts with '['
    n_per = np.zeros(nlines, np.int64)
    num = np.empty((max(nnum, 1), maxrows), np.float64)
    codes = np.empty((2, maxrows), np.int32)
    nuniq = np.zeros(2, np.int64)
    ft = np.asarray(ftypes, np.int64)
    cap = 1 << 12  # hash slots per text column: 2048 distinct pgids, then ×4 as often as needed
    while True:
        table = np.empty(2 * cap, np.int32)
        uoff = np.empty(2 * cap, np.int64)
        ulen = np.empty(2 * cap, np.int64)
        rows = lib.pg_rows(blob, len(blob), len(ft), ft.ctypes.data, nlines, maxrows, n_per.ctypes.data,
                              num.ctypes.data, codes.ctypes.data, cap, table.ctypes.data, uoff.ctypes.data,
                              ulen.ctypes.data, nuniq.ctypes.data)
        if rows != -(1 << 63):
            break
        cap *= 4
    if rows < 0:
        return None
    names = tuple([blob[o:o + k].decode("ascii") for o, k in zip(uoff[s * cap:s * cap + nuniq[s]].tolist(),
                                                                  ulen[s * cap:s * cap + nuniq[s]].tolist())]
                  for s in (0, 1))
    return PgRows(n_per, num[:nnum, :rows], codes[:, :rows], names)


def _call(fn, *args) -> tuple[int, int, int]:
    """A C parse function's (rows, error byte offset or -1, error code)."""
    off, code = _I64(), _I64()
    n = fn(*args, ctypes.byref(off), ctypes.byref(code))
    return int(n), int(off.value), int(code.value)


#: a line of comma-separated integers (blanks around a field allowed): one regex match, not a test per
#: field (a histogram log's line has 1,856 fields)
_INT_FIELDS = re.compile(rb"[ \t]*-?[0-9]+[ \t]*(?:,[ \t]*-?[0-9]+[ \t]*)*")


def first_line_fields(head: bytes) -> tuple[bytes, ...] | None:
    """Comma-separated fields of the first non-blank line of ``head`` if all are integers, else None.

    The last answer is kept: detection and then the reader ask about the same head (a histogram log's
    line has 1,856 fields)."""
    global _LAST_FIELDS
    last = _LAST_FIELDS
    if last[0] is not None and last[0] == head:
        return last[1]
    out = _first_line_fields(head)
    _LAST_FIELDS = (head, out)  # one rebinding: threads see either pair whole
    return out


_LAST_FIELDS: tuple[bytes | None, tuple[bytes, ...] | None] = (None, None)


def _first_line_fields(head: bytes) -> tuple[bytes, ...] | None:
    for line in head.split(b"\n", 8)[:8]:
        line = line.strip()
        if not line:
            continue
        if _INT_FIELDS.fullmatch(line) is None:
            return None
        if b" " in line or b"\t" in line:  # blanks only around the commas (the grammar above)
            line = line.replace(b" ", b"").replace(b"\t", b"")
        return tuple(line.split(b","))
    return None


def _chunks(buf: np.ndarray, n: int) -> list[tuple[int, int]]:
    size = len(buf)
    bounds = [0]
    for k in range(1, n):
        pos = size * k // n
        nl = np.flatnonzero(buf[pos:pos + (1 << 20)] == 10)
        if len(nl) == 0:
            break
        cut = pos + int(nl[0]) + 1
        if cut > bounds[-1]:
            bounds.append(cut)
    bounds.append(size)
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i + 1] > bounds[i]]


def _u8(data) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


def over_file(path: Path, fn: Callable[[bytes | mmap.mmap], T]) -> T:
    """``fn(data)`` over the file's bytes as ``bytes`` (a file under ``CHUNK_MIN_BYTES``) or a
    read-only ``mmap`` (``find``, ``rfind``, slices, ``re`` and ``np.frombuffer`` work on both), which
    saves a large text the copy into a fresh ``bytes`` object."""
    return _over_file(path, None, fn, view=lambda d: d)


def _over_file(path: Path, data: bytes | None, fn: Callable[[np.ndarray], T],
               view: Callable = _u8) -> T:
    """``fn(view(data))`` over the file's bytes (``view``: a uint8 array by default): ``data`` if
    given, a read for a file under ``CHUNK_MIN_BYTES``, else a read-only memory map."""
    if data is not None:
        return fn(view(data))
    size = os.path.getsize(path)
    if size == 0 or size < CHUNK_MIN_BYTES:  # small: one read, no mapping a stray view could pin
        with open(path, "rb") as f:
            return fn(view(f.read()))
    err: IngestError | None = None
    # MAP_POPULATE (Linux) maps the cached pages in one go instead of one page fault per 4 KiB
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ)
        try:
            buf = view(mm)
            try:
                return fn(buf)
            except IngestError as e:  # re-raised below, after the map is released
                err = IngestError(e.path, e.message, line=e.line, offset=e.offset)
            finally:
                del buf
        finally:
            try:
                mm.close()
            except BufferError:  # a view still referenced elsewhere (e.g. a sampling profiler's frame):
                pass             # the map is released when that view is collected
    raise err


def _drive(path: Path, buf: np.ndarray, ncol: int, threads: int | None,
           alloc: Callable[[int], None], parse: Callable[[int, int, int, int], tuple[int, int, int]],
           compact: Callable[[int, int, int], None]) -> int:
    """Parse newline-aligned chunks, one thread each, with no counting pass; returns the row count.

    ``alloc(bound)`` sizes the outputs for at most ``bound`` rows (a line takes ≥ 2·ncol bytes, so the
    rows before byte b are ≤ b // (2·ncol)); ``parse(row0, start, end, row_limit)`` fills rows from
    ``row0`` (that bound at ``start``); ``compact(src, dst, n)`` moves a later chunk's ``n`` rows down
    to follow the earlier ones.  The earliest error in file order is raised as an ``IngestError``.
    """
    size = len(buf)
    per = 2 * ncol
    alloc((size + 1) // per)
    if size == 0:
        return 0
    nthreads = threads or THREADS or min(os.cpu_count() or 1, 8)
    parts = _chunks(buf, nthreads if size > CHUNK_MIN_BYTES else 1)
    lims = [s // per for s, _ in parts[1:]] + [(size + 1) // per]
    jobs = [(s // per, s, e, lim) for (s, e), lim in zip(parts, lims)]
    if len(jobs) == 1:
        res = [parse(*jobs[0])]
    else:
        with ThreadPoolExecutor(len(jobs)) as ex:
            res = list(ex.map(lambda j: parse(*j), jobs))
    for _rows, err, code in res:
        if err >= 0:  # first failing chunk in file order is the earliest error
            raise scan_error(path, buf, ncol, err, code)
    n = res[0][0]
    for (row0, *_), (rows, *_) in zip(jobs[1:], res[1:]):
        compact(row0, n, rows)
        n += rows
    return n


def read_int_table(path: str | Path, ncol: int, threads: int | None = None,
                   data: bytes | None = None) -> np.ndarray:
    """All rows of an integer CSV with ``ncol`` columns as an int64 (rows × ncol) array whose columns
    are contiguous (a row slice of a Fortran-ordered array).

    The file is memory-mapped unless ``data`` (its already-decompressed content) is given.
    Raises ``IngestError`` with the 1-based line of the first malformed row.
    """
    path = Path(path)
    box: list[np.ndarray] = []
    if _lib() is None:
        from ._plain import int_table
        return _over_file(path, data, lambda buf: int_table(path, buf, ncol)[0])

    def run(buf: np.ndarray) -> np.ndarray:
        def alloc(bound: int) -> None:
            box.append(np.empty((bound, ncol), dtype=np.int64, order="F"))

        def parse(row0: int, start: int, end: int, limit: int) -> tuple[int, int, int]:
            out = box[0]
            return _call(_lib().parse_rows, buf.ctypes.data, start, end, ncol, out.ctypes.data,
                         out.shape[0], row0, limit)

        def compact(src: int, dst: int, n: int) -> None:
            box[0][dst:dst + n] = box[0][src:src + n]

        n = _drive(path, buf, ncol, threads, alloc, parse, compact)
        return box[0][:n]

    return _over_file(path, data, run)


@dataclass
class FioLogColumns:
    """What the fio-log reader keeps of a log: time and value as logged (float64, exact below 2**53),
    direction codes (int8, 0-3) with their counts, and the block-size min/max and column-5 max (None
    without the column)."""

    t: np.ndarray
    value: np.ndarray
    ddir: np.ndarray
    bs_min: int | None
    bs_max: int | None
    col5_max: int | None
    ddir_counts: np.ndarray  #: rows per direction code 0-3
    blank_lines: int = 0     #: blank lines skipped (with the rows: the lines, for error line numbers)


def read_fio_log(path: str | Path, ncol: int, threads: int | None = None,
                 data: bytes | None = None) -> FioLogColumns:
    """A 4-6 column fio log (``time_ms, value, ddir, bs[, offset|prio][, prio]``) as columns.

    Same grammar and errors as ``read_int_table``, plus an ``IngestError`` for a direction outside 0-3.
    """
    if not 4 <= ncol <= 6:
        raise ValueError(f"a fio log has 4-6 columns, not {ncol}")
    path = Path(path)
    box: dict[str, np.ndarray] = {}
    big = np.iinfo(np.int64)
    if _lib() is None:
        return _over_file(path, data, lambda buf: _fio_log_plain(path, buf, ncol))

    def run(buf: np.ndarray) -> FioLogColumns:
        aggs: list[np.ndarray] = []

        def alloc(bound: int) -> None:
            box.update(t=np.empty(bound), v=np.empty(bound), d=np.empty(bound, dtype=np.int8))

        def parse(row0: int, start: int, end: int, limit: int) -> tuple[int, int, int]:
            agg = np.array([big.max, big.min, big.min, 0, 0, 0, 0, 0], dtype=np.int64)
            aggs.append(agg)
            return _call(_lib().parse_fio_log, buf.ctypes.data, start, end, ncol,
                         box["t"].ctypes.data, box["v"].ctypes.data, box["d"].ctypes.data,
                         agg.ctypes.data, row0, limit)

        def compact(src: int, dst: int, n: int) -> None:
            for a in box.values():
                a[dst:dst + n] = a[src:src + n]

        n = _drive(path, buf, ncol, threads, alloc, parse, compact)
        a = np.array(aggs, dtype=np.int64).reshape(-1, 8)
        return FioLogColumns(box["t"][:n], box["v"][:n], box["d"][:n],
                             int(a[:, 0].min()) if n else None, int(a[:, 1].max()) if n else None,
                             int(a[:, 2].max()) if n and ncol >= 5 else None, a[:, 3:7].sum(axis=0),
                             int(a[:, 7].sum()))

    return _over_file(path, data, run)


def _fio_log_plain(path: Path, buf: np.ndarray, ncol: int) -> FioLogColumns:
    """:func:`read_fio_log` by the plain path (:func:`._plain.int_table`): the same columns."""
    from ._plain import int_table
    tab, blank = int_table(path, buf, ncol, fio=True)
    n = len(tab)
    d = tab[:, 2].astype(np.int8)
    return FioLogColumns(tab[:, 0].astype(np.float64), tab[:, 1].astype(np.float64), d,
                         int(tab[:, 3].min()) if n else None, int(tab[:, 3].max()) if n else None,
                         int(tab[:, 4].max()) if n and ncol >= 5 else None,
                         np.bincount(d, minlength=4).astype(np.int64), blank)


def iter_fio_log(path: str | Path, ncol: int, chunk_bytes: int = 32 << 20, threads: int | None = None):
    """:func:`read_fio_log` over consecutive newline-aligned blocks of about ``chunk_bytes`` of the
    (decompressed) file, yielding one :class:`FioLogColumns` per block: memory is bounded by the block,
    not the file.  Errors name the line in the whole file.

    A block is what one ``read(chunk_bytes)`` gives after the previous block's unfinished line, cut at
    its last newline (a line longer than a block: read on).  The blocks are read into one reused buffer
    (``readinto``), not into a fresh ``bytes`` each — for a 1 GiB log that is 1.4 s of copying and page
    faults fewer per pass, this VM."""
    from .compress import open_stream

    path = Path(path)
    lines_before, start = 0, 0  # start: bytes of an unfinished line at the front of buf
    buf = bytearray(2 * chunk_bytes)
    with open_stream(path) as f:
        while True:
            if len(buf) < start + chunk_bytes:  # a line longer than a block: room for another block
                buf = buf + bytes(start + chunk_bytes - len(buf))
            with memoryview(buf) as mv:
                got = f.readinto(mv[start:start + chunk_bytes]) or 0
            end = start + got
            if end == 0:
                return
            if got:
                cut = buf.rfind(b"\n", 0, end) + 1
                if cut == 0:  # no newline yet: read on
                    start = end
                    continue
            else:
                cut = end  # end of the stream: the unfinished line, if any
            with memoryview(buf) as mv, mv[:cut] as block:
                try:
                    cols = read_fio_log(path, ncol, threads=threads, data=block)
                except IngestError as e:
                    raise IngestError(path, e.message, line=None if e.line is None else e.line + lines_before) \
                        from None
            lines_before += len(cols.t) + cols.blank_lines  # every row and blank line of a block ends in '\n'
            yield cols
            if not got:
                return
            buf[:end - cut] = buf[cut:end]  # the unfinished line to the front
            start = end - cut

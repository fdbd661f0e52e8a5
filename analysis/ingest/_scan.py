"""Fast scanner for comma-separated integer tables (fio logs, fio histogram logs).

The file is memory-mapped and parsed by a numba-compiled byte loop (released GIL, one thread per
core over newline-aligned chunks): no Python per row, no copy of the file.  Grammar per line:
``int (',' ' '* int)* '\\r'? '\\n'``, with an optional leading ``-``; blank lines are skipped.
"""

from __future__ import annotations

import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numba import njit

from .base import IngestError, line_of_offset

ERR_CHAR, ERR_COLS, ERR_LONG = 1, 2, 3


@njit(nogil=True, cache=True)
def _count_rows(buf, start, end):
    n = 0
    nonblank = False
    for i in range(start, end):
        b = buf[i]
        if b == 10:
            if nonblank:
                n += 1
            nonblank = False
        elif b != 13 and b != 32:
            nonblank = True
    if nonblank:
        n += 1
    return n


@njit(nogil=True, cache=True)
def _parse(buf, start, end, out, row0):
    """Parse rows into out[row0:]; returns (rows, error byte offset or -1, error code).

    States: 0 = before a field (spaces allowed), 1 = in digits, 2 = after a field (spaces allowed).
    """
    ncol = out.shape[1]
    r = row0
    c = 0
    v = 0
    ndig = 0
    neg = False
    state = 0
    blank = True
    i = start
    while i < end:
        b = buf[i]
        if 48 <= b <= 57:
            if state == 2:
                return r - row0, i, ERR_CHAR
            state = 1
            blank = False
            v = v * 10 + (b - 48)
            ndig += 1
            if ndig > 18:
                return r - row0, i, ERR_LONG
        elif b == 32:
            if state == 1:
                state = 2
        elif b == 44:  # ','
            if state == 0 or (state == 2 and ndig == 0):
                return r - row0, i, ERR_CHAR
            if c >= ncol - 1:
                return r - row0, i, ERR_COLS
            out[r, c] = -v if neg else v
            c += 1
            v = 0
            ndig = 0
            neg = False
            state = 0
        elif b == 45:  # '-'
            if state != 0 or neg:
                return r - row0, i, ERR_CHAR
            neg = True
            blank = False
        elif b == 10 or b == 13:
            if b == 13:
                if i + 1 >= end or buf[i + 1] != 10:
                    return r - row0, i, ERR_CHAR
                i += 1
            if not blank:
                if ndig == 0:
                    return r - row0, i, ERR_CHAR
                if c != ncol - 1:
                    return r - row0, i, ERR_COLS
                out[r, c] = -v if neg else v
                r += 1
            c = 0
            v = 0
            ndig = 0
            neg = False
            state = 0
            blank = True
        else:
            return r - row0, i, ERR_CHAR
        i += 1
    if not blank:
        if ndig == 0:
            return r - row0, end, ERR_CHAR
        if c != ncol - 1:
            return r - row0, end, ERR_COLS
        out[r, c] = -v if neg else v
        r += 1
    return r - row0, -1, 0


def first_line_fields(head: bytes) -> list[bytes] | None:
    """Comma-separated fields of the first non-blank line of ``head`` if all are integers, else None."""
    for line in head.split(b"\n", 8)[:8]:
        line = line.strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(b",")]
        if all(p.lstrip(b"-").isdigit() for p in parts):
            return parts
        return None
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


def read_int_table(path: str | Path, ncol: int, threads: int | None = None,
                   data: bytes | None = None) -> np.ndarray:
    """All rows of an integer CSV with ``ncol`` columns as an int64 (rows × ncol) array.

    The file is memory-mapped unless ``data`` (its already-decompressed content) is given.
    Raises ``IngestError`` with the 1-based line of the first malformed row.
    """
    path = Path(path)
    if data is not None:
        return _table(path, np.frombuffer(data, dtype=np.uint8), ncol, threads)
    if os.path.getsize(path) == 0:
        return np.empty((0, ncol), dtype=np.int64)
    err: IngestError | None = None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        buf = np.frombuffer(mm, dtype=np.uint8)
        try:
            return _table(path, buf, ncol, threads)
        except IngestError as e:  # re-raised below, after the map is released
            err = IngestError(e.path, e.message, line=e.line, offset=e.offset)
        finally:
            del buf
    raise err


def _table(path: Path, buf: np.ndarray, ncol: int, threads: int | None) -> np.ndarray:
    size = len(buf)
    if size == 0:
        return np.empty((0, ncol), dtype=np.int64)
    nthreads = threads or min(os.cpu_count() or 1, 8)
    parts = _chunks(buf, nthreads if size > (8 << 20) else 1)
    with ThreadPoolExecutor(len(parts)) as ex:
        counts = list(ex.map(lambda p: _count_rows(buf, p[0], p[1]), parts))
    out = np.empty((sum(counts), ncol), dtype=np.int64)
    row0 = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    with ThreadPoolExecutor(len(parts)) as ex:
        res = list(ex.map(lambda a: _parse(buf, a[0][0], a[0][1], out, a[1]), zip(parts, row0)))
    for _rows, err, code in res:
        if err >= 0:  # first failing chunk in file order is the earliest error
            line = line_of_offset(bytes(buf[:err]), err)
            text = bytes(buf[max(0, err - 40):err]).split(b"\n")[-1]
            if err < size and buf[err] not in (10, 13):
                text += bytes(buf[err:err + 1])
            what = {ERR_COLS: f"expected {ncol} comma-separated integers per line",
                    ERR_LONG: "integer longer than 18 digits (not a count fio could have written)",
                    ERR_CHAR: "expected an integer, ',' or end of line"}[code]
            raise IngestError(path, f"{what} (near {text[-30:]!r})", line=line)
    return out

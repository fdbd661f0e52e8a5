"""The plain path of the integer-table scanner: pyarrow's CSV reader and numpy, no C compiler.

Same grammar as ``scan`` in ``_cscan.c`` (per line ``' '* int (' '* ',' ' '* int){ncol-1} ' '* '\\r'?
'\\n'``, an int being ``'-'? [0-9]{1,18}``; a line of spaces is blank and skipped), the same tables and
the same errors (file, line, what was expected): ``tests/test_scan_plain.py`` holds the two paths equal
on real fio logs and on damaged ones.  :func:`._scan.read_int_table` and :func:`._scan.read_fio_log`
come here when the C part is off (``CEPHQOS_NATIVE=0``) or cannot be built.

Two steps.  A quick accept: one table lookup and ``bincount`` over the bytes (only digits, ``-``,
``,``, space, ``\\r`` before ``\\n``), pyarrow's multi-threaded CSV parse into int64 (it trims the
spaces around a field, rejects anything but an integer and a row of another width), and no leading
zero with every magnitude under 10**18, which proves every integer was written with at most 18 digits.  Anything that step
does not prove (a line of spaces, a leading zero, any damage) goes to the exact step: one regular
expression finds the first line outside the grammar, whose error is then read byte by byte as the C
scanner reads it (one line, not the file).  Measured against C in ``make bench``.
"""

from __future__ import annotations

import itertools
import re
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ._scanerr import ERR_CHAR, ERR_COLS, ERR_DDIR, ERR_LONG, scan_error

#: byte classes: 0 outside the grammar, 1 digit, 2 '-', ',' or ' ', 3 '\r', 4 '\n'
_CLASS = np.zeros(256, np.uint8)
_CLASS[np.frombuffer(b"0123456789", np.uint8)] = 1
_CLASS[np.frombuffer(b"-, ", np.uint8)] = 2
_CLASS[13], _CLASS[10] = 3, 4
#: 10, 100, ..., 1e18
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def int_table(path: Path, buf: np.ndarray, ncol: int, fio: bool = False) -> tuple[np.ndarray, int]:
    """Every row of ``buf`` (uint8) as an int64 (rows × ncol) table with contiguous columns, and the number
    of blank lines skipped.  ``fio``: a fio log, whose third column (direction) must be 0-3.  Raises
    ``IngestError`` where and as the C scanner does."""
    got = _quick(buf, ncol)
    if got is None:
        return _exact(path, buf, ncol, fio)
    if fio:
        _ddir_error(path, buf, ncol, got[0])
    return got


def _ddir_error(path: Path, buf: np.ndarray, ncol: int, table: np.ndarray) -> None:
    """Raise the C scanner's error for the first row whose direction (column 3) is outside 0-3, if any."""
    bad = np.flatnonzero((table[:, 2] < 0) | (table[:, 2] > 3))
    if len(bad):
        data = bytes(buf)
        start = _row_start(data, int(bad[0]))
        raise scan_error(path, buf, ncol, start + _field_digits(data[start:start + 4096], 2), ERR_DDIR)


def _read(data, ncol: int) -> pa.Table:
    """pyarrow's CSV parse of ``data`` into ``ncol`` int64 columns (empty lines skipped, no nulls)."""
    names = [f"c{k}" for k in range(ncol)]
    return pacsv.read_csv(
        pa.BufferReader(pa.py_buffer(data)),
        read_options=pacsv.ReadOptions(column_names=names),
        parse_options=pacsv.ParseOptions(ignore_empty_lines=True),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.int64() for c in names}, null_values=[],
                                             strings_can_be_null=False, quoted_strings_can_be_null=False))


def _columns(tb: pa.Table, ncol: int) -> np.ndarray:
    out = np.empty((tb.num_rows, ncol), np.int64, order="F")
    for k, col in enumerate(tb.columns):
        out[:, k] = col.to_numpy()
    return out


def _quick(buf: np.ndarray, ncol: int) -> tuple[np.ndarray, int] | None:
    """The table when the quick checks prove ``buf`` is in the grammar, else None."""
    n = len(buf)
    if n == 0:
        return np.empty((0, ncol), np.int64, order="F"), 0
    cls = _CLASS[buf]
    if np.count_nonzero(cls == 0):
        return None
    cr = np.flatnonzero(cls == 3)
    if len(cr) and (cr[-1] == n - 1 or (buf[cr + 1] != 10).any()):
        return None
    digit = cls == 1
    # a leading zero ('0' first in its run of digits, a digit after it): the exact step reads the file
    zero = buf == 48
    if (zero[1:-1] & digit[2:] & ~digit[:-2]).any() or (n > 1 and zero[0] and digit[1]):
        return None
    try:
        tb = _read(buf, ncol)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # any row pyarrow does not take as ncol ints
        return None
    if tb.num_columns != ncol or tb.num_rows == 0:
        return None
    table = _columns(tb, ncol)
    # no leading zero and every |value| < 1e18: every integer was written with at most 18 digits
    if table.max() >= _POW10[-1] or table.min() <= -_POW10[-1]:
        return None
    last_open = int(buf[-1] != 10)  # the last line is a row without its '\n'
    return table, int(np.count_nonzero(cls == 4)) - (len(table) - last_open)


@cache
def _bad_line(ncol: int) -> re.Pattern:
    """The first line outside the grammar (a line's ``'\\r'`` must stand before its ``'\\n'``)."""
    num = rb" *-?[0-9]{1,18} *"
    good = rb"(?: *|" + num + (rb"," + num) * (ncol - 1) + rb")(?:\r(?=\n))?$"
    return re.compile(rb"^(?!" + good + rb")", re.M)


_BLANK = re.compile(rb"^ *\r?\n", re.M)
_BLANK_END = re.compile(rb"(?:^|(?<=\n)) +\Z")
_NONBLANK = re.compile(rb"^(?! *\r?$)", re.M)


def _exact(path: Path, buf: np.ndarray, ncol: int, fio: bool) -> tuple[np.ndarray, int]:
    data = bytes(buf)
    m = _bad_line(ncol).search(data)
    if m is not None and m.start() == len(data):  # "$" after a last '\n': the empty end, not a line
        m = None
    good = data if m is None else data[:m.start()]
    body, blank = _BLANK.subn(b"", good)
    body = _BLANK_END.sub(b"", body)
    table = _columns(_read(body, ncol), ncol) if body else np.empty((0, ncol), np.int64, order="F")
    if m is None:
        return table, blank
    if fio:  # a direction error on an earlier line comes first, as in C
        _ddir_error(path, buf, ncol, table)
    end = data.find(b"\n", m.start())
    off, code = _line_error(data[m.start():len(data) if end < 0 else end + 1], ncol, fio)
    raise scan_error(path, buf, ncol, m.start() + off, code)


def _row_start(data: bytes, row: int) -> int:
    """Byte offset of the start of the ``row``-th (0-based) non-blank line."""
    return next(itertools.islice(_NONBLANK.finditer(data), row, None)).start()


def _field_digits(line: bytes, field: int) -> int:
    """Offset in ``line`` (a row in the grammar) of the first digit of field ``field`` (0-based)."""
    i = 0
    for _ in range(field):
        i = line.index(b",", i) + 1
    while line[i:i + 1] in (b" ", b"-"):
        i += 1
    return i


def _line_error(line: bytes, ncol: int, fio: bool) -> tuple[int, int]:
    """``(offset in line, ERR_*)`` of the first error the C scanner finds in ``line`` (the line with its
    ``'\\n'``, if it has one), read byte by byte as ``scan`` in ``_cscan.c`` does (``fio``: with its
    direction check on the third field)."""
    end = len(line)
    i = 0
    while i < end and line[i] == 32:
        i += 1
    if i < end and line[i] == 13:  # a blank line's '\r' without its '\n'
        return i, ERR_CHAR
    for c in range(ncol):
        while i < end and line[i] == 32:
            i += 1
        if i < end and line[i] == 45:
            i += 1
        d0 = i
        while i < end and 48 <= line[i] <= 57:
            if i - d0 >= 18:
                return i, ERR_LONG
            i += 1
        if i == d0:
            return i, ERR_CHAR
        if fio and c == 2 and (line[d0 - 1:d0] == b"-" and line[d0:i].strip(b"0") or int(line[d0:i]) > 3):
            return d0, ERR_DDIR
        while i < end and line[i] == 32:
            i += 1
        if c < ncol - 1:
            if i >= end or line[i] in (10, 13):
                return i, ERR_COLS
            if line[i] != 44:
                return i, ERR_CHAR
            i += 1
        elif i < end:
            if line[i] == 44:
                return i, ERR_COLS
            if line[i] == 13:
                if i + 1 >= end or line[i + 1] != 10:
                    return i, ERR_CHAR
                i += 1
            if line[i] != 10:
                return i, ERR_CHAR
    raise AssertionError(f"_line_error: {line[:60]!r} is in the grammar")  # the regex said it is not

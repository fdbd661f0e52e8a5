"""``rados bench`` output (text, ``--show-time``, and ``--format json``), Ceph 0.47 to 16.x.

What the tool prints (``src/common/obj_bencher.cc``; the layout below was read from several versions
of that file in ceph/ceph and forks of it, not guessed):

* optional ``hints = 1`` (printed by ``rados.cc``; in the 2018+ outputs seen, not in 2012–2016 ones);
* write runs only: ``Maintaining C concurrent writes of B bytes [to objects of size O] for (at least |
  up to) S seconds[ or N objects][.]`` and (not in 0.47) ``Object prefix: P``;
* a table, one row per second, its column header repeated every 20 rows after a line
  ``[<time>][ ]min lat: X max lat: Y avg lat: Z``.  Header labels are right-aligned by
  ``setw(5) "sec" setw(8) "Cur ops" setw(10)`` ×4 then ``setw(10) "last lat"``/``"avg lat"`` (old) or
  ``setw(12) "last lat(s)"``/``"avg lat(s)"`` (late 2016 and later).  Rows: old code streamed
  ``setw(5) setw(8) setw(10)…`` with no separator, so a value as wide as its field runs into the previous
  one (``0.468750.00526002``); later code (already under the old labels) writes ``setw(5) ' ' setw(7)
  ' ' setw(9) …`` (×4 ``setw(9)`` then two ``setw(9)``, or two ``setw(11)`` with the "(s)" labels), so
  values are always space-separated but a value wider than its field (``%g`` gives up to 11
  characters, e.g. ``0.000775721``) shifts the rest of the row.  Field *end*
  columns are the same in header and rows (5, 13, 23, 33, 43, 53, 63|65, 73|77), so rows of the header's
  width are cut at those columns (exact even for run-together values); other rows are split on
  whitespace; rows that are neither are split with the ``%g`` grammar (no leading/trailing zeros).
  A row with no completion in its interval prints ``0`` for cur MB/s and ``-`` for last lat (→ NaN).
  With ``--show-time`` every line written through ``out()`` starts with ``<localtime> `` (not the
  summary lines after the first).
* a summary: ``Total time run:``, ``Total writes made:``/``Total reads made:``, ``Write size:``/
  ``Read size:``, ``Object size:``, ``Bandwidth (MB/sec):``, write: ``Stddev Bandwidth:``, ``Max/Min
  bandwidth (MB/sec):``; later ``Average IOPS:`` (seq read printed ``Average IOPS`` without the colon
  in the Jewel-era and first "(s)"-era sources read; 16.2 prints the colon), ``Stddev/Max/Min IOPS:``; ``Average Latency[(s)]:``, write: ``Stddev
  Latency[(s)]:``, ``Max latency[(s)]:``, ``Min latency[(s)]:``; 2012 builds print a blank line inside it.
* after a write without ``--no-cleanup``: ``Cleaning up (deleting benchmark objects)``, ``Removed N
  objects`` (some versions), ``Clean up completed and total clean up time :T``.

Units: "MB/sec" is MiB/s — obj_bencher computes ``finished * op_size / seconds / (1024*1024)`` for the
summary bandwidth and ``(finished - previous) * op_size / (1024*1024) / cycles`` for cur MB/s — so
bandwidth becomes B/s by × 1048576.  Latencies are printed in seconds and become ns.  Conversions are
exact from the printed decimal (integer mantissa × 2**20 or × 10**9, then one correctly rounded
division by a power of ten), so ``0.000894677`` s is exactly 894677 ns.

Tidy output: ``job`` is ``""``; ``ddir`` is ``write`` for write runs, ``read`` for seq/rand.  Summary
metrics (only those printed): ``bw bw_stddev bw_max bw_min`` (B/s), ``iops iops_stddev iops_max
iops_min`` (1/s), ``lat_mean lat_stddev lat_max lat_min`` (ns), ``total_time`` (s), ``ops_total``
(count), ``op_size object_size`` (B; from the banner when the summary lacks them).  Series (``t_s`` =
the ``sec`` column): ``cur_ops started finished`` (count), ``avg_bw cur_bw`` (B/s), ``last_lat
avg_lat`` (ns).

``--format json`` (same kind, ``meta["format"] = "json"``, same metric names): one object with
``concurrent_ios object_size op_size seconds_to_run max_objects object_prefix`` (write),
``datas: [{sec cur_ops started finished avg_bw cur_bw last_lat avg_lat}]`` and ``total_time_run
total_writes_made|total_reads_made write_size|read_size object_size bandwidth [stddev_bandwidth
max_bandwidth min_bandwidth] average_iops stddev_iops max_iops min_iops average_latency
[stddev_latency] max_latency (old: "max_latency:") min_latency``, every value a string.  Quirks handled:
``hints = 1`` before the object; write's ``stddev_iops`` is ``dump_format("%d", <double>)`` (an
undefined value, e.g. ``"1319543728"``) — a value without a decimal point is dropped and named in
``meta["dropped"]``; a row without completions in its second prints ``last_lat`` ``0`` where the
text prints ``-``: it becomes NaN here too (``meta["json_no_change_rows"]``).

``meta["mode"]``: ``write`` (banner or ``Total writes made``); ``seq`` when the summary has the seq-only
``Average IOPS`` without colon; ``rand`` for a read summary with ``Average IOPS:`` in an output whose
latency labels lack ``(s)`` (in that era only seq dropped the colon); otherwise ``read`` — seq and
rand print identical output and the file does not say which (``meta["mode_evidence"]`` says why).

``meta["check_ops_total_vs_table"]``: the status line is a snapshot taken once a second, and every
version drains the in-flight ops before printing the summary, so the rule is ``last finished + last
Cur ops == last started <= ops_total`` with ``ops_total - last started`` (ops started after the last
snapshot) at most ``concurrency + max per-second increase of started × max(1, total_time - last
sec)``.  Equality with the last ``started`` is reported as ``exact`` (true when the run ended within
a second of its last row); it is not required (fibird: 4995339 vs 4992911 at sec 1799 of 1800.01 s).

Non-table lines (messenger debug prints, ``-->`` lines, client log lines, anything unrecognised)
are skipped and counted in ``meta["skipped_lines"]``.  A line that starts like a table row
(optional timestamp, spaces, an integer, whitespace) must parse as one, else ``IngestError`` with
its line number; so must a summary line's value.  ``partial`` is True for a table without a summary.

Speed: numpy splits the lines and takes a line as a table-row candidate by a few of its bytes
(:func:`_lines`); the other lines are sorted into column headers and ``min lat`` lines by gathered
bytes.  Every row is then read by the exact parser (``_slow_row``, Decimal, one rounding).  rados bench
prints one row a second: the shipped outputs hold at most 90 lines and an hour's run 3,600, which this
reads in about 0.1 s (``make bench``); the C row kernel that read a 1M-line synthetic output at par with
``read_csv`` was retired with that target.
"""

from __future__ import annotations

import json
import math
import mmap
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._scan import over_file
from .base import (IngestError, Parsed, SERIES_COLUMNS, cat, empty_frame, line_of_offset,
                   summary_frame, Label, Tidy)

KIND = "rados-bench"
#: parse(path, None) reads the file itself (memory-mapped when large): detect.read passes no bytes
STREAMING = True
TOOL = "rados bench"

MIB = 1048576

#: series metrics in table column order (after ``sec``) and their units
SERIES_METRICS = (("cur_ops", "count"), ("started", "count"), ("finished", "count"),
                  ("avg_bw", "B/s"), ("cur_bw", "B/s"), ("last_lat", "ns"), ("avg_lat", "ns"))
COLUMN_NAMES = ("sec", "Cur ops", "started", "finished", "avg MB/s", "cur MB/s", "last lat",
                "avg lat")

# ------------------------------------------------------------------------------------------ patterns
_TS = (r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?"
       r"(?:Z|[+-]\d\d:?\d\d|[A-Za-z][A-Za-z ]*?[A-Za-z])?")
_TS_OPT = rf"(?:(?P<ts>{_TS})\s*)?"
#: a printed number (``%g``, ``%f``, ``nan``/``inf``); exponents of at most 3 digits (a double's
#: range), which also keeps Decimal arithmetic far from its overflow limits
_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d{1,3})?|\.\d+(?:[eE][-+]?\d{1,3})?|nan|inf)"

RE_HEADER = re.compile(
    r"^(?P<prefix>.*?)(?P<c0>\s*sec)(?P<c1>\s+Cur ops)(?P<c2>\s+started)(?P<c3>\s+finished)"
    r"(?P<c4>\s+avg MB/s)(?P<c5>\s+cur MB/s)(?P<c6>\s+last lat(?P<s1>\(s\))?)"
    r"(?P<c7>\s+avg lat(?P<s2>\(s\))?)\s*$")
RE_HINTS = re.compile(rf"^{_TS_OPT}hints = (?P<v>\d+)\s*$")
RE_BANNER = re.compile(
    rf"^{_TS_OPT}Maintaining (?P<conc>\d+) concurrent writes of (?P<op>\d+) bytes"
    r"(?: to objects of size (?P<obj>\d+))? for (?P<how>up to|at least) (?P<secs>\d+) seconds"
    r"(?: or (?P<maxobj>\d+) objects)?(?P<dot>\.)?\s*$")
RE_PREFIX = re.compile(rf"^{_TS_OPT}Object prefix: (?P<v>\S+)\s*$")
RE_MINLAT = re.compile(rf"^{_TS_OPT}min lat: (?P<min>\S+) max lat: (?P<max>\S+) "
                       r"avg lat: (?P<avg>\S+)\s*$")
RE_CLEAN_START = re.compile(rf"^{_TS_OPT}Cleaning up \(deleting benchmark objects\)\s*$")
RE_REMOVED = re.compile(rf"^{_TS_OPT}Removed (?P<v>\d+) objects?\s*$")
RE_CLEAN_DONE = re.compile(rf"^{_TS_OPT}Clean up completed and total clean up time ?:\s*"
                           r"(?P<v>\S+)\s*$")
RE_SLOW_CLEAN = re.compile(rf"^{_TS_OPT}Warning: using slow linear search\s*$")
_SUMMARY_KEYS = {
    # printed label → (metric, unit kind); unit kind: s, count, B, mibs, iops, lat
    "Total time run": ("total_time", "s"),
    "Total writes made": ("ops_total", "count"),
    "Total reads made": ("ops_total", "count"),
    "Write size": ("op_size", "B"),
    "Read size": ("op_size", "B"),
    "Object size": ("object_size", "B"),
    "Bandwidth (MB/sec)": ("bw", "mibs"),
    "Stddev Bandwidth": ("bw_stddev", "mibs"),
    "Max bandwidth (MB/sec)": ("bw_max", "mibs"),
    "Min bandwidth (MB/sec)": ("bw_min", "mibs"),
    "Average IOPS": ("iops", "iops"),
    "Stddev IOPS": ("iops_stddev", "iops"),
    "Max IOPS": ("iops_max", "iops"),
    "Min IOPS": ("iops_min", "iops"),
    "Average Latency": ("lat_mean", "lat"),
    "Stddev Latency": ("lat_stddev", "lat"),
    "Max latency": ("lat_max", "lat"),
    "Min latency": ("lat_min", "lat"),
}
RE_SUMMARY = re.compile(
    rf"^{_TS_OPT}(?P<key>Total time run|Total writes made|Total reads made|Write size|Read size|"
    r"Object size|Bandwidth \(MB/sec\)|Stddev Bandwidth|Max bandwidth \(MB/sec\)|"
    r"Min bandwidth \(MB/sec\)|Average IOPS|Stddev IOPS|Max IOPS|Min IOPS|"
    r"Average Latency|Stddev Latency|Max latency|Min latency)(?P<s>\(s\))?(?P<colon>:?)"
    r"(?:[ \t]+(?P<v>\S+)|(?P<empty>))[ \t]*$")
#: a line that starts like a table row: optional timestamp, spaces, an integer, whitespace
RE_ROWLIKE = re.compile(rf"^(?:{_TS}\s)?\s*\d+(?:\s|$)")
RE_ROW_TS = re.compile(rf"^(?P<ts>{_TS})(?=\s)")
#: one ``%g`` value as obj_bencher prints it (no leading zeros, no trailing fraction zeros): used
#: only to split run-together values in rows that are neither of the header's width nor whitespace
#: separated
RE_GNUM = re.compile(r"-(?!\d)|(?:0|[1-9]\d*)(?:\.\d*[1-9])?(?:e[-+]\d+)?")

_UNIT = {"s": "s", "count": "count", "B": "B", "mibs": "B/s", "iops": "1/s", "lat": "ns"}

P10 = np.array([10.0 ** k for k in range(23)])

# ----------------------------------------------------------------------------- vectorised scan
K_OTHER, K_BADROW = 3, 4


@dataclass
class Lines:
    """A rados bench text's lines as :func:`_lines` classifies them.

    ``rows`` (8, n) float64 for the table-row candidates (``rowline``: their 0-based line numbers): its
    values are filled by the exact parser; columns 0 and 1 hold the line's start and end byte offsets
    until then (``bad``: all set, every row is left to that parser).  ``other`` (4, m) int64: start,
    content start (after a timestamp prefix), end (before ``'\r'``), line number of every other line."""
    rows: np.ndarray
    rowline: np.ndarray
    bad: np.ndarray
    other: np.ndarray
    lines: int


def _lines(buf: np.ndarray, P: int, e0: int) -> Lines:
    """Every line of a rados bench text, vectorised: split at ``'\n'`` (a last line without one counts;
    one ``'\r'`` before it is dropped); with a ``P``-byte timestamp prefix (``P`` > 0), a line longer than
    ``P`` whose byte 0 is a digit, byte 4 a ``-`` and byte ``P-1`` a space has its content start after
    it; a line is a table-row candidate when ``e0`` > 0 (the header's sec column ends at byte ``e0`` of
    the content), its content is at least ``e0`` bytes and ``max(e0, 5)`` bytes remain in the buffer
    from the content start, its byte ``e0-1`` is a digit, byte 4 is not ``-`` (a date: a timestamped
    non-row line) and byte 0 is a space or a digit."""
    n = len(buf)
    nl = np.flatnonzero(buf == 10)
    start = np.concatenate([[0], nl + 1])
    le = np.concatenate([nl, [n]])
    keep = start < n
    start, le = start[keep], le[keep]
    at = lambda i: buf[np.clip(i, 0, max(n - 1, 0))] if n else np.zeros(len(i), np.uint8)  # noqa: E731
    end = le - ((le > start) & (at(le - 1) == 13))
    digit = lambda b: (b >= 48) & (b <= 57)  # noqa: E731
    cs = start.copy()
    if P > 0:
        ts = (end - start > P) & (at(start + P - 1) == 32) & digit(at(start)) & (at(np.minimum(start + 4, n - 1)) == 45)
        cs[ts] += P
    cand = np.zeros(len(start), bool)
    if e0 > 0:
        k = max(e0, 5)
        cand = (n >= k) & (cs <= n - k) & (end - cs >= e0)
        c0, c4, cl = at(cs), at(cs + 4), at(cs + e0 - 1)
        cand &= digit(cl) & (c4 != 45) & ((c0 == 32) | digit(c0))
    line = np.arange(len(start), dtype=np.int64)
    rows = np.full((8, int(cand.sum())), np.nan)
    rows[0], rows[1] = start[cand], end[cand]
    o = ~cand
    return Lines(rows, line[cand], np.ones(rows.shape[1], bool),
                 np.stack([start[o], cs[o], end[o], line[o]]).astype(np.int64), len(start))


def _scan(data: bytes, buf: np.ndarray, P: int, tmpl: bytes, ml_off: int, e0: int) -> dict[str, Any]:
    """Classify every line and parse the table rows, vectorised.

    :func:`_lines` splits the lines and takes a line as a table-row candidate by a few of its bytes
    (content start after a ``P``-byte timestamp prefix; byte 0 a space or digit, byte 4 not ``-``,
    byte ``e0-1`` a digit); the exact parser reads the candidates.  Here the other lines are sorted
    into column headers (the first header's text ``tmpl`` after the prefix) and periodic ``min lat:``
    lines (at byte ``ml_off``, as the first one).

    Returns rows (8, n) for the candidates (``rowline``: their 0-based line numbers), the header /
    ``min lat`` line numbers, and ``other``: (start, end, line, kind) of the lines left to Python —
    K_OTHER (banner, summary, trailers, noise) and K_BADROW (a row candidate: Python parses it exactly
    or raises; ``rowpos`` maps its line to its column in rows)."""
    L = _lines(buf, P, e0)
    rows, rowline = L.rows, L.rowline
    o_start, o_cs, o_end, o_line = L.other
    keep = np.ones(len(o_line), bool)
    hdr = np.zeros(0, np.int64)
    T = len(tmpl)
    if T:
        h = np.flatnonzero((o_end - o_cs) == T)
        if len(h):
            win = np.lib.stride_tricks.sliding_window_view(buf, T)
            h = h[(win[o_cs[h]] == np.frombuffer(tmpl, np.uint8)).all(axis=1)]
            keep[h] = False
            hdr = o_line[h]
    ml = np.zeros(0, np.int64)
    if ml_off >= 0:
        r2 = np.flatnonzero(keep & ((o_end - o_start) >= ml_off + 8))
        if len(r2):
            win8 = np.lib.stride_tricks.sliding_window_view(buf, 8)
            r2 = r2[(win8[o_start[r2] + ml_off] == np.frombuffer(b"min lat:", np.uint8)).all(axis=1)]
            keep[r2] = False
            ml = o_line[r2]
    pend = np.flatnonzero(L.bad)
    pend_lines = rowline[pend]
    rest = np.flatnonzero(keep)
    other = np.stack([
        np.concatenate([o_start[rest], rows[0, pend].astype(np.int64)]),
        np.concatenate([o_end[rest], rows[1, pend].astype(np.int64)]),
        np.concatenate([o_line[rest], pend_lines]),
        np.concatenate([np.full(len(rest), K_OTHER, np.int64), np.full(len(pend), K_BADROW, np.int64)]),
    ], axis=1)
    other = other[np.argsort(other[:, 2], kind="stable")]
    return {"rows": rows, "rowline": rowline, "hdr": hdr, "ml": ml, "other": other,
            "rowpos": dict(zip(pend_lines.tolist(), pend.tolist())), "lines": L.lines}


# ------------------------------------------------------------------------------------- detection
_SNIFF = (
    re.compile(rb"Maintaining \d+ concurrent writes of \d+ bytes"),
    re.compile(rb"sec\s+Cur ops\s+started\s+finished\s+avg MB/s\s+cur MB/s\s+last lat"),
    re.compile(rb"Total time run:[ \t]*[\d.]+\s*\n\s*Total (?:writes|reads) made:"),
    re.compile(rb'"(?:datas|total_(?:writes|reads)_made|concurrent_ios)"\s*:'),
)


#: a literal each of the _SNIFF patterns contains
_SNIFF_LITERALS = (b"concurrent writes", b"Cur ops", b"Total time run:", b'"')


def sniff(head: bytes) -> bool:
    """True when ``head`` (the first 64 KiB) looks like ``rados bench`` output (text or JSON)."""
    if not head or b"fio version" in head:  # a NUL byte in the text: parse fails with its line
        return False
    if not any(k in head for k in _SNIFF_LITERALS):  # what each pattern below needs: a fast no
        return False
    if any(p.search(head) for p in _SNIFF[:3]):
        return True
    if _SNIFF[3].search(head):
        # JSON: require rados bench's own table/summary keys, not just any JSON
        return (b'"cur_ops"' in head or b'"total_time_run"' in head
                or b'"concurrent_ios"' in head and b'"object_prefix"' in head)
    return False


# ----------------------------------------------------------------------------------------- helpers
def _dec(text: str) -> Decimal:
    """A printed number as an exact Decimal (``-``/nan → NaN); raises ValueError."""
    t = text.strip()
    if not re.fullmatch(_NUM, t, flags=re.IGNORECASE):
        raise ValueError(t)
    try:
        d = Decimal(t)
    except InvalidOperation:
        raise ValueError(t) from None
    return d


def _conv(d: Decimal, kind: str) -> float:
    """Exact conversion of a printed value to the canonical unit (one rounding)."""
    if d.is_nan():
        return math.nan
    if d.is_infinite():
        return float(d)
    if kind == "mibs":
        return float(d * MIB)
    if kind == "lat":
        return float(d.scaleb(9))
    return float(d)


def _err(path, msg: str, line: int | None = None) -> IngestError:
    return IngestError(path, msg, line=line)


def _strip_ts(text: str) -> tuple[str | None, str]:
    m = RE_ROW_TS.match(text)
    if m:
        return m.group("ts"), text[m.end():]
    return None, text


def _slow_row(text: str, ends: list[int] | None) -> tuple[list[Decimal] | None, str]:
    """Exact Python parser for one table row (also: a timestamp prefix of
    another length, run-together values in a row wider than the header, exponents, nan).  Returns
    (8 Decimals with NaN for '-', "") or (None, what was expected)."""
    ts, body = _strip_ts(text)
    if ts is not None and body[:1] == " ":  # "<timestamp> " then the row
        body = body[1:]
    body = body.rstrip()
    toks = body.split()
    if len(toks) != 8 and ends is not None and len(body) == ends[-1]:
        toks = [body[a:b] for a, b in zip([0] + ends[:-1], ends)]
    if len(toks) != 8:
        # run-together values: split each token with the %g grammar
        toks2: list[str] = []
        for t in toks:
            parts = RE_GNUM.findall(t)
            if "".join(parts) != t:
                return None, (f"8 numeric columns (sec, Cur ops, started, finished, avg MB/s, "
                              f"cur MB/s, last lat, avg lat), got {t[:30]!r}")
            toks2.extend(parts)
        toks = toks2
    if len(toks) != 8:
        return None, (f"8 columns (sec, Cur ops, started, finished, avg MB/s, cur MB/s, last lat, "
                      f"avg lat), found {len(toks)}")
    vals = []
    for k, t in enumerate(toks):
        t = t.strip()
        if t == "-" and k == 6:
            vals.append(Decimal("NaN"))
            continue
        try:
            d = _dec(t)
        except ValueError:
            return None, f"column {k + 1} ({COLUMN_NAMES[k]}): a number, got {t[:30]!r}"
        if k < 4 and (d.is_nan() or d < 0 or "." in t or "e" in t.lower()):
            return None, f"column {k + 1} ({COLUMN_NAMES[k]}): a count, got {t[:30]!r}"
        vals.append(d)
    return vals, ""


def _row_values(row: list[Decimal]) -> list[float]:
    return [_conv(d, "count" if k < 4 else ("mibs" if k < 6 else "lat")) for k, d in enumerate(row)]


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------------------- parse
def parse(path: str | Path, data: bytes | None) -> Parsed:
    """Parse one ``rados bench`` stdout (text or ``--format json``); ``data`` None: the file, read
    (memory-mapped when large) here.  Raises ``IngestError``."""
    path = Path(path)
    if data is None:
        return over_file(path, lambda d: _parse(path, d))
    return _parse(path, bytes(data) if not isinstance(data, bytes) else data)


def _parse(path: Path, data: bytes | mmap.mmap) -> Parsed:
    """``parse`` over the bytes, or a read-only map of them (slices, ``find``, ``re`` only)."""
    if re.search(rb"\S", data[:1 << 16]) is None and re.search(rb"\S", data) is None:
        raise _err(path, "empty file: expected rados bench output (a table or a summary)", 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise IngestError(path, "binary data (NUL byte): expected rados bench text output",
                          line=line_of_offset(data[:nul], nul))
    # JSON?  optional "hints = N" lines, then '{'
    head = data[:1 << 16].lstrip()
    while head.startswith(b"hints"):
        nl = head.find(b"\n")
        if nl < 0:
            break
        head = head[nl + 1:].lstrip()
    if head.startswith(b"{"):
        return _parse_json(path, bytes(data))
    return _parse_text(path, data)


# ------------------------------------------------------------------------------------------- text
def _find_header(data: bytes) -> tuple[int, re.Match | None]:
    """(byte offset of the first valid column header line, its match)."""
    pos = 0
    for _ in range(1000):
        i = data.find(b"Cur ops", pos)
        if i < 0:
            return -1, None
        ls = data.rfind(b"\n", 0, i) + 1
        le = data.find(b"\n", i)
        le = len(data) if le < 0 else le
        line = data[ls:le].decode("latin-1").rstrip("\r")  # 1 char per byte: columns = bytes
        m = RE_HEADER.match(line)
        if m and (not m.group("prefix").strip() or re.fullmatch(_TS, m.group("prefix").strip())):
            return ls, m
        pos = le
    return -1, None


def _header_layout(hm: re.Match | None) -> tuple[int, np.ndarray, bytes, bool, dict[str, Any] | None]:
    """From the first column header: the ``--show-time`` prefix width ``P`` (bytes, 0 without), the field
    end columns after it, the header's bytes after it, whether its latency labels end in ``(s)``, and
    ``meta["header_variant"]`` (None and empty without a header)."""
    if hm is None:
        return 0, np.zeros(0, np.int64), b"", False, None
    ptrim = hm.group("prefix").rstrip()
    # --show-time: every table line starts with "<timestamp> " (P bytes), then the row
    P = len(ptrim) + 1 if ptrim else 0
    hline = hm.string
    ends_abs = [hm.end(f"c{k}") for k in range(8)]
    ends = np.array([e - P for e in ends_abs], np.int64)
    tmpl = hline[P:].encode("latin-1")
    s_variant = bool(hm.group("s1"))
    header_variant = {
        "labels": "last lat(s)  avg lat(s)" if s_variant else "last lat   avg lat",
        "field_end_columns": [int(x) for x in ends],
        "indent": len(hm.group("c0")) - 3 - (1 if ptrim else 0),
        "timestamp_prefix": bool(ptrim),
    }
    return P, ends, tmpl, s_variant, header_variant


@dataclass
class _TextLines:
    """What the lines other than the scanned table rows hold (``ln``: 0-based line numbers).

    ``summary``: metric → (printed value, label, ln); ``summary_start``: ln of ``Total time run:``;
    ``summary_labels_s``: the summary's latency labels end in ``(s)``; ``iops_no_colon``: ``Average IOPS``
    without colon; ``banner``: (ln, match) of the write banner; ``extra_rows``: (ln, values) of rows only
    the exact parser recognised; ``extra_hdr``: ln of headers the scan did not match; ``dropped_rows``:
    columns of the scan's rows that were no rows; ``skipped``: 1-based numbers of unrecognised lines;
    ``ml_count``/``last_minlat``: periodic ``min lat`` lines (count, last (ln, match))."""
    summary: dict[str, tuple[Decimal, str, int]] = field(default_factory=dict)
    summary_start: int | None = None
    summary_labels_s: bool | None = None
    iops_no_colon: bool = False
    banner: tuple[int, re.Match] | None = None
    extra_rows: list[tuple[int, list[Decimal]]] = field(default_factory=list)
    extra_hdr: list[int] = field(default_factory=list)
    dropped_rows: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    cleanup: dict[str, Any] = field(default_factory=dict)
    hints: int | None = None
    object_prefix: str | None = None
    first_ts: str | None = None
    ml_count: int = 0
    last_minlat: tuple[int, re.Match] | None = None


def _summary_line(path: Path, m: re.Match, ln: int, st: _TextLines) -> None:
    """One summary line (an ``RE_SUMMARY`` match on 0-based line ``ln``) into ``st.summary``: its value
    must be a number (a finite one for counts and sizes), each metric printed once, in one summary."""
    lineno = ln + 1
    key = m.group("key")
    if key == "Total time run":
        if st.summary_start is not None:
            raise _err(path, "a second summary ('Total time run:'): expected one rados "
                             "bench run per file", lineno)
        st.summary_start = ln
    v = m.group("v")
    if v is None:
        raise _err(path, f"summary line '{key}': expected a value", lineno)
    try:
        d = _dec(v)
    except ValueError:
        raise _err(path, f"summary line '{key}': expected a number, got {v[:40]!r}",
                   lineno) from None
    metric, ukind = _SUMMARY_KEYS[key]
    if ukind in ("count", "B") and not math.isfinite(float(d)):
        raise _err(path, f"summary line '{key}': expected a finite count, got {v[:40]!r}", lineno)
    if metric in st.summary and st.summary[metric][1] != key:
        raise _err(path, f"summary line '{key}': both '{st.summary[metric][1]}' and '{key}' "
                         "printed", lineno)
    if metric in st.summary:
        raise _err(path, f"summary line '{key}' printed twice", lineno)
    st.summary[metric] = (d, key, ln)
    if key == "Average IOPS" and not m.group("colon"):
        st.iops_no_colon = True
    if key.split()[-1] in ("Latency", "latency"):
        st.summary_labels_s = bool(m.group("s"))
    if m.group("ts") and st.first_ts is None:
        st.first_ts = m.group("ts")


def _cleanup_line(path: Path, text: str, lineno: int, cleanup: dict[str, Any]) -> bool:
    """A line of the cleanup after a write run into ``cleanup`` (time in s); False for any other line."""
    if RE_CLEAN_START.match(text):
        cleanup["started"] = True
        return True
    m = RE_REMOVED.match(text)
    if m:
        cleanup["removed_objects"] = int(m.group("v"))
        return True
    m = RE_CLEAN_DONE.match(text)
    if m:
        try:
            cleanup["cleanup_time_s"] = float(_dec(m.group("v")))
        except ValueError:
            raise _err(path, "'Clean up completed' line: expected a time in seconds",
                       lineno) from None
        return True
    if RE_SLOW_CLEAN.match(text):
        cleanup["slow_linear_search"] = True
        return True
    return False


def _other_line(path: Path, text: str, ln: int, st: _TextLines, ends_list: list[int] | None) -> None:
    """Sort one line that is not a scanned table row (0-based ``ln``) into ``st``: summary, periodic
    latency, column header, banner, object prefix, hints, cleanup, a row only the exact parser reads
    (else ``IngestError``), or skipped."""
    lineno = ln + 1
    m = RE_SUMMARY.match(text)
    if m:
        _summary_line(path, m, ln, st)
        return
    m = RE_MINLAT.match(text)
    if m:
        st.ml_count += 1
        st.last_minlat = (ln, m)
        return
    if RE_HEADER.match(text):
        st.extra_hdr.append(ln)
        return
    m = RE_BANNER.match(text)
    if m:
        if st.banner is not None:
            raise _err(path, "a second 'Maintaining … concurrent writes' banner: expected one "
                             "rados bench run per file", lineno)
        st.banner = (ln, m)
        if m.group("ts") and st.first_ts is None:
            st.first_ts = m.group("ts")
        return
    m = RE_PREFIX.match(text)
    if m:
        st.object_prefix = m.group("v")
        return
    m = RE_HINTS.match(text)
    if m:
        st.hints = int(m.group("v"))
        return
    if _cleanup_line(path, text, lineno, st.cleanup):
        return
    if RE_ROWLIKE.match(text):
        row, why = _slow_row(text, ends_list)
        if row is None:
            raise _err(path, f"bad table row: expected {why}", lineno)
        st.extra_rows.append((ln, row))
        return
    if text.strip():
        st.skipped.append(lineno)


def _read_other_lines(path: Path, data: bytes, res: dict[str, Any], ends_list: list[int] | None) -> _TextLines:
    """The lines :func:`_scan` left to Python, in line order: row candidates are read by the exact parser
    into ``res["rows"]`` (in place; one that is no row after all is sorted like any other line)."""
    st = _TextLines(ml_count=len(res["ml"]))
    rows, rowpos = res["rows"], res["rowpos"]
    for start, end, ln, kind in res["other"].tolist():
        text = _decode(data[start:end])
        if kind == K_BADROW:
            row, why = _slow_row(text, ends_list)
            if row is not None:
                rows[:, rowpos[ln]] = _row_values(row)
                continue
            if RE_ROWLIKE.match(text):
                raise _err(path, f"bad table row: expected {why}", ln + 1)
            st.dropped_rows.append(rowpos[ln])  # not a row after all: classify it below
        _other_line(path, text, ln, st, ends_list)
    return st


def _table_rows(path: Path, res: dict[str, Any], st: _TextLines) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The table (8, n) in line order and its rows' 0-based line numbers (scanned rows less the dropped
    ones, plus rows only the exact parser read), and all header lines; raises on a row before the first
    header or after the summary, and on a file with neither rows nor a summary."""
    rows, rowline = res["rows"], res["rowline"]
    if st.dropped_rows:
        keep = np.ones(len(rowline), bool)
        keep[st.dropped_rows] = False
        rows, rowline = rows[:, keep], rowline[keep]
    if st.extra_rows:
        # rows only Python recognised (e.g. another timestamp width): merge them in line order
        xl = np.array([r[0] for r in st.extra_rows], np.int64)
        xv = np.array([_row_values(r[1]) for r in st.extra_rows])
        rowline = np.concatenate([rowline, xl])
        order = np.argsort(rowline, kind="stable")
        rowline = rowline[order]
        rows = np.concatenate([rows, xv.T], axis=1)[:, order]
    nrows = len(rowline)
    all_hdr = sorted(res["hdr"].tolist() + st.extra_hdr)
    if nrows:
        first_hdr = all_hdr[0] if all_hdr else None
        if first_hdr is None or rowline[0] < first_hdr:
            raise _err(path, "table row before the column header ('sec Cur ops started …'): "
                             "expected the header first", int(rowline[0]) + 1)
        if st.summary_start is not None and rowline[-1] > st.summary_start:
            bad = int(rowline[rowline > st.summary_start][0]) + 1
            raise _err(path, "table row after the summary: expected one rados bench run per file",
                       bad)
    if not nrows and not st.summary:
        raise _err(path, "no rados bench table rows or summary found: expected a table under "
                         "'sec Cur ops started finished avg MB/s cur MB/s last lat avg lat' or a "
                         "'Total time run:' summary", max(1, res["lines"]))
    return rows, rowline, all_hdr


def _text_meta(meta: dict[str, Any], st: _TextLines, data: bytes, s_variant: bool,
               header_variant: dict[str, Any] | None, nrows: int, n_hdr: int) -> tuple[str, dict[str, Any]]:
    """Mode, banner, sizes, cleanup, line counts and era guess into ``meta``; returns the ddir and the run's
    ``concurrency``/``op_size``/``object_size`` (B; the summary's sizes over the banner's)."""
    summary = st.summary
    mode, mode_evidence = _mode(st.banner, summary, st.iops_no_colon, st.summary_labels_s, s_variant,
                                st.hints, data)
    ddir = {"write": "write", "seq": "read", "rand": "read", "read": "read"}.get(mode, "")
    meta["mode"] = mode
    meta["mode_evidence"] = mode_evidence
    concurrency = op_size = object_size = duration = max_objects = None
    if st.banner is not None:
        bm = st.banner[1]
        concurrency = int(bm.group("conc"))
        op_size = int(bm.group("op"))
        object_size = int(bm.group("obj")) if bm.group("obj") else None
        duration = int(bm.group("secs"))
        max_objects = int(bm.group("maxobj")) if bm.group("maxobj") else None
        meta["banner"] = {"duration_kind": bm.group("how"), "line": st.banner[0] + 1}
    if "op_size" in summary:
        op_size = int(summary["op_size"][0])
    if "object_size" in summary:
        object_size = int(summary["object_size"][0])
    meta.update({
        "concurrency": concurrency, "op_size": op_size, "object_size": object_size,
        "duration_requested": duration, "max_objects": max_objects,
        "object_prefix": st.object_prefix, "hints": st.hints,
        "header_variant": header_variant,
        "show_time": bool(header_variant and header_variant["timestamp_prefix"])
        or st.first_ts is not None,
        "cleanup": st.cleanup or None,
        "table": bool(nrows), "table_rows": int(nrows), "header_lines": n_hdr,
        "periodic_lat_lines": int(st.ml_count),
        "skipped_lines": len(st.skipped), "skipped_line_numbers": st.skipped[:20],
        "no_final_newline": data[-1:] != b"\n",
    })
    if st.last_minlat is not None:
        mm = st.last_minlat[1]
        meta["last_periodic_lat"] = {"line": st.last_minlat[0] + 1, "timestamp": mm.group("ts"),
                                     "min": mm.group("min"), "max": mm.group("max"),
                                     "avg": mm.group("avg")}
    meta["era_guess"] = _era(data, s_variant, st.summary_labels_s, st.banner, summary, st.hints)
    return ddir, {"concurrency": concurrency, "op_size": op_size, "object_size": object_size}


def _text_summary_rows(summary: dict[str, tuple[Decimal, str, int]], ddir: str, op_size: int | None,
                       object_size: int | None, meta: dict[str, Any]) -> list[tuple]:
    """Tidy summary rows in canonical units, and op/object size (B) from the banner when the summary
    does not print them (``meta["op_size_from"]``/``["object_size_from"]``)."""
    srows = []
    for metric, (d, key, _ln) in summary.items():
        srows.append(("", ddir, metric, _conv(d, _SUMMARY_KEYS[key][1]),
                     _UNIT[_SUMMARY_KEYS[key][1]]))
    if "op_size" not in summary and op_size is not None:
        srows.append(("", ddir, "op_size", float(op_size), "B"))
        meta["op_size_from"] = "banner"
    if "object_size" not in summary and object_size is not None:
        srows.append(("", ddir, "object_size", float(object_size), "B"))
        meta["object_size_from"] = "banner"
    return srows


def _parse_text(path: Path, data: bytes) -> Parsed:
    buf = np.frombuffer(data, np.uint8)
    meta: dict[str, Any] = {"tool": TOOL, "tool_version": None, "format": "text"}
    hpos, hm = _find_header(data)
    P, ends, tmpl, s_variant, header_variant = _header_layout(hm)
    ml_first = data.find(b"min lat: ")
    ml_off = -1
    if ml_first >= 0:
        ml_off = ml_first - (data.rfind(b"\n", 0, ml_first) + 1)

    # the header's layout; rows of the '(s)' era are always space-separated
    res = _scan(data, buf, P, tmpl, ml_off, int(ends[0]) if len(ends) else 0)
    st = _read_other_lines(path, data, res, [int(x) for x in ends] if len(ends) else None)
    rows, rowline, all_hdr = _table_rows(path, res, st)
    nrows = len(rowline)
    ddir, run = _text_meta(meta, st, data, s_variant, header_variant, nrows, len(all_hdr))
    srows = _text_summary_rows(st.summary, ddir, run["op_size"], run["object_size"], meta)
    source = str(path)
    sdf = summary_frame(source, srows)
    series = _series_frame(source, ddir, rows) if nrows else empty_frame(SERIES_COLUMNS)

    if nrows:
        _table_meta(meta, rows, st.summary, run["concurrency"])
        meta["first_row"]["line"] = int(rowline[0]) + 1
        meta["last_row"]["line"] = int(rowline[-1]) + 1
    partial = bool(nrows) and st.summary_start is None
    if partial:
        meta["partial_reason"] = "table without a summary (interrupted run or cut file)"
    if not nrows:
        meta["table_note"] = "summary only: no table rows in this file"
    return Parsed(path=source, kind=KIND, meta=meta, summary=sdf, series=series, partial=partial)


def _row_dict(v: np.ndarray) -> dict[str, float]:
    keys = ("sec",) + tuple(m for m, _ in SERIES_METRICS)
    return {k: (None if math.isnan(x) else float(x)) for k, x in zip(keys, v.tolist())}


def _table_meta(meta: dict, rows: np.ndarray, summary: dict, concurrency: int | None) -> None:
    """first/last row, sec monotonicity and the ops_total cross-check, from the (8, n) table."""
    sec = rows[0]
    meta["sec_monotonic"] = bool(np.all(sec[1:] > sec[:-1]))
    meta["first_row"] = _row_dict(rows[:, 0])
    meta["last_row"] = _row_dict(rows[:, -1])
    if "ops_total" in summary:
        meta["check_ops_total_vs_table"] = _check(rows, summary, concurrency)


def _check(rows: np.ndarray, summary: dict, concurrency: int | None) -> dict[str, Any]:
    sec, cur, started, finished = (float(x) for x in rows[:4, -1])
    total = float(summary["ops_total"][0])
    st = rows[2]
    max_step = float(max(0.0, np.max(np.diff(st)))) if len(st) > 1 else 0.0
    ttime = float(summary["total_time"][0]) if "total_time" in summary else None
    slack = max(1.0, (ttime - sec) if ttime is not None else 1.0)
    conc = float(concurrency) if concurrency is not None else cur
    bound = conc + max_step * slack
    gap = total - started
    ok_row = finished + cur == started
    ok = bool(ok_row and finished <= started <= total and gap <= bound)
    return {
        "rule": "last finished + last Cur ops == last started <= ops_total, and ops_total - last "
                "started <= concurrency + max per-second increase of started × max(1, total_time "
                "- last sec); exact = (ops_total == last started)",
        "ops_total": int(total), "last_sec": sec, "last_started": int(started),
        "last_finished": int(finished), "last_cur_ops": int(cur),
        "started_after_last_row": int(gap), "bound": bound,
        "exact": bool(total == started), "ok": ok,
    }


def _mode(banner, summary, iops_no_colon, summary_labels_s, s_variant, hints,
          data: bytes) -> tuple[str | None, str]:
    if banner is not None:
        return "write", "'Maintaining … concurrent writes' banner"
    if "ops_total" in summary:
        key = summary["ops_total"][1]
        if key == "Total writes made":
            return "write", "'Total writes made' in the summary"
        if iops_no_colon:
            return "seq", ("'Average IOPS' without colon: printed only by seq_read_bench "
                           "(obj_bencher.cc, Jewel to Luminous)")
        if "iops" in summary and summary_labels_s is False:
            return "rand", ("read summary with 'Average IOPS:' and latency labels without '(s)': in "
                            "that era seq_read_bench printed 'Average IOPS' without colon")
        return "read", ("'Total reads made': seq and rand print identical output in this "
                        "version; the file does not say which")
    if "iops" in summary and iops_no_colon:
        return "seq", "'Average IOPS' without colon (seq_read_bench)"
    # table only: a write run prints its banner before the table
    stripped = data[:1 << 16].lstrip()
    if hints is not None and re.match(rb"hints = \d+\s*\n(?:\S+ )?\s*sec\s+Cur ops", stripped):
        return "read", "no write banner between 'hints = N' and the table (seq or rand)"
    return None, "neither a write banner nor a summary: mode unknown"


def _era(data: bytes, s_variant: bool, summary_labels_s, banner, summary, hints) -> dict[str, Any]:
    """A coarse guess of the Ceph era from output-format markers (rados bench prints no version)."""
    marks: list[str] = []
    guess = None
    if re.search(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", data[:1 << 16]):
        marks.append("ISO-8601 timestamps with 'T'")
        guess = guess or "Octopus 15.x or later (or a late-2019 master build)"
    if hints is not None:
        marks.append("'hints = N' line")
        guess = guess or "Kraken 11.x / Luminous 12.x or later"
    if s_variant or summary_labels_s:
        marks.append("latency labels with '(s)'")
        guess = guess or "late 2016 (Kraken 11.x / Luminous 12.x) or later"
    elif summary_labels_s is False or header_has_plain(data):
        marks.append("latency labels without '(s)'")
    if banner is not None:
        bm = banner[1]
        if bm.group("how") == "at least":
            marks.append("banner 'for at least N seconds.'")
            guess = guess or "about 0.47-0.5x (2012)"
        elif bm.group("maxobj") is None:
            marks.append("banner 'for up to N seconds' without 'or N objects'")
        if bm.group("obj"):
            marks.append("banner 'to objects of size'")
    if summary and "iops" in summary:
        marks.append("IOPS lines in the summary")
        guess = guess or "Hammer 0.94 / Jewel 10.x (2015-2016)"
    elif summary:
        marks.append("no IOPS lines in the summary")
        guess = guess or "before Hammer (2012-2014)"
    return {"note": "guess from the output format, not stated in the file", "markers": marks,
            "guess": guess}


def header_has_plain(data: bytes) -> bool:
    return re.search(rb"cur MB/s\s+last lat\s+avg lat\s*\r?\n", data[:1 << 16]) is not None


def _series_frame(source: str, ddir: str, rows: np.ndarray) -> pd.DataFrame:
    """Tidy series for the 7 table metrics from the column-major (8, n) table, one allocation per
    column (no per-metric frames, no concatenation of categoricals)."""
    n = rows.shape[1]
    k = len(SERIES_METRICS)
    value = np.ascontiguousarray(rows[1:]).reshape(-1)
    t_s = np.tile(rows[0], k)
    zeros = np.zeros(n * k, np.int8)
    metrics = [m for m, _ in SERIES_METRICS]
    units = ["count", "B/s", "ns"]
    unit_code = np.repeat(np.array([units.index(u) for _, u in SERIES_METRICS], np.int8), n)
    return Tidy({
        "source": Label(source, len(zeros)),
        "job": cat(zeros, [""]),
        "ddir": cat(zeros, [ddir]),
        "metric": cat(np.repeat(np.arange(k, dtype=np.int8), n), metrics),
        "value": value,
        "unit": cat(unit_code, units),
        "t_s": t_s,
    }, SERIES_COLUMNS)


# ------------------------------------------------------------------------------------------- JSON
_JSON_SUMMARY = {
    "total_time_run": ("total_time", "s"),
    "total_writes_made": ("ops_total", "count"),
    "total_reads_made": ("ops_total", "count"),
    "write_size": ("op_size", "B"),
    "read_size": ("op_size", "B"),
    "object_size": ("object_size", "B"),
    "bandwidth": ("bw", "mibs"),
    "stddev_bandwidth": ("bw_stddev", "mibs"),
    "max_bandwidth": ("bw_max", "mibs"),
    "min_bandwidth": ("bw_min", "mibs"),
    "average_iops": ("iops", "iops"),
    "stddev_iops": ("iops_stddev", "iops"),
    "max_iops": ("iops_max", "iops"),
    "min_iops": ("iops_min", "iops"),
    "average_latency": ("lat_mean", "lat"),
    "stddev_latency": ("lat_stddev", "lat"),
    "max_latency": ("lat_max", "lat"),
    "max_latency:": ("lat_max", "lat"),  # old obj_bencher wrote the key with a colon
    "min_latency": ("lat_min", "lat"),
}
_JSON_ROW = ("sec", "cur_ops", "started", "finished", "avg_bw", "cur_bw", "last_lat", "avg_lat")
#: text obj_bencher writes with plain cout while the JSON formatter still buffers the object (a write
#: without --no-cleanup): it can start mid-line, right after the last flushed '}'
_TEXT_LINE_IN_JSON = re.compile(
    rb"(?:\d{4}-\d\d-\d\d[ T][\d:.]+\S* )?(?:Cleaning up \(deleting benchmark objects\)|"
    rb"Removed \d+ objects?|Clean up completed and total clean up time ?:[ \t]*[\d.e+-]+|"
    rb"Warning: using slow linear search)[ \t]*\r?\n")


def _clean_time(path: Path, data: bytes, v: str, last: bool = False) -> float:
    """The printed clean-up time (s); an error names the first (``last``: the last) ``Clean up completed``
    line of the file."""
    try:
        return float(_dec(v))
    except ValueError:
        at = (data.rfind if last else data.find)(b"Clean up completed")
        raise _err(path, "'Clean up completed' line: expected a time in seconds, got "
                         f"{v[:30]!r}", line_of_offset(data, at) if at >= 0 else 1) from None


def _json_decode(path: Path, data: bytes, text: str, cleanup: dict[str, Any]) -> tuple[Any, int, str]:
    """The JSON value from the first ``{`` of ``text``, where it ends, and the text it was read from: when
    obj_bencher's cleanup lines were printed into the open object, they go into ``cleanup`` and are read
    as newlines (so error line numbers still match the file)."""
    dec = json.JSONDecoder(parse_float=str, parse_int=str)
    try:
        obj, end = dec.raw_decode(text, text.find("{"))
        return obj, end, text
    except json.JSONDecodeError as e:
        # cleanup text printed while the JSON object was still open (write without --no-cleanup)
        lines = _TEXT_LINE_IN_JSON.findall(data)
        if not lines:
            raise _err(path, f"invalid JSON: {e.msg}", e.lineno) from None
    for ln in lines:
        s = _decode(ln)
        m = RE_REMOVED.match(s)
        if m:
            cleanup["removed_objects"] = int(m.group("v"))
        m = RE_CLEAN_DONE.match(s)
        if m:
            cleanup["cleanup_time_s"] = _clean_time(path, data, m.group("v"))
        if s.startswith("Cleaning up"):
            cleanup["started"] = True
    # replaced by newlines (JSON whitespace), so error line numbers still match the file
    text2 = _decode(_TEXT_LINE_IN_JSON.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data))
    try:
        obj, end = dec.raw_decode(text2, text2.find("{"))
    except json.JSONDecodeError as e2:
        raise _err(path, f"invalid JSON: {e2.msg}", e2.lineno) from None
    return obj, end, text2


def _json_trailer(path: Path, data: bytes, rest: str, cleanup: dict[str, Any], meta: dict[str, Any]) -> None:
    """The text after the JSON object: cleanup lines into ``cleanup``, anything else ``meta["trailing_text"]``."""
    for ln in rest.splitlines():
        s = ln.strip()
        if not s:
            continue
        m = RE_REMOVED.match(s)
        if m:
            cleanup["removed_objects"] = int(m.group("v"))
        elif (m := RE_CLEAN_DONE.match(s)):
            cleanup["cleanup_time_s"] = _clean_time(path, data, m.group("v"), last=True)
        elif RE_CLEAN_START.match(s):
            cleanup["started"] = True
        else:
            meta.setdefault("trailing_text", []).append(s[:200])


def _line_of_key(text: str, key: str) -> int:
    """1-based line of the first ``"key"`` in the JSON text (1 when absent)."""
    i = text.find(f'"{key}"')
    return line_of_offset(text, i) if i >= 0 else 1


def _json_table(path: Path, datas: list, text: str) -> tuple[np.ndarray, int]:
    """``datas`` as an (n, 8) table in canonical units (columns of ``_JSON_ROW``), and the number of rows
    without a completion in their second (their last_lat NaN and cur_bw 0, as the text prints them)."""
    try:
        df = pd.DataFrame.from_records(datas)
    except (TypeError, ValueError, AttributeError):
        raise _err(path, "JSON 'datas': expected a list of objects",
                   _line_of_key(text, "datas")) from None
    missing = [k for k in _JSON_ROW if k not in df.columns]
    if missing or df[list(_JSON_ROW)].isna().to_numpy().any():
        raise _err(path, "JSON 'datas' row: expected keys " + ", ".join(_JSON_ROW),
                   _line_of_key(text, "datas"))
    vals = np.empty((len(df), 8))
    for k, key in enumerate(_JSON_ROW):
        try:
            vals[:, k] = _json_col(df[key], "count" if k < 4 else ("mibs" if k < 6 else "lat"))
        except ValueError as e:
            raise _err(path, f"JSON 'datas' column '{_JSON_ROW[k]}': expected numbers, got "
                             f"{str(e)[:40]!r}", _line_of_key(text, _JSON_ROW[k])) from None
    if np.any(vals[:, :4] != np.floor(vals[:, :4])) or np.any(vals[:, :4] < 0):
        raise _err(path, "JSON 'datas': sec/cur_ops/started/finished must be non-negative "
                         "integers", _line_of_key(text, "datas"))
    # rows without a completion in their second: text prints '-' for last lat
    prev = np.concatenate([[0.0], vals[:-1, 3]])
    nc = vals[:, 3] == prev
    vals[nc, 6] = np.nan
    vals[nc, 5] = 0.0
    return vals, int(nc.sum())


def _json_summary(path: Path, obj: dict, text: str) -> tuple[dict[str, tuple[Decimal, str]], dict[str, str]]:
    """The summary keys present: metric → (printed value, key), and the values dropped with the reason
    (write's ``stddev_iops`` printed with ``%d``)."""
    summary: dict[str, tuple[Decimal, str]] = {}
    dropped = {}
    for key, (metric, ukind) in _JSON_SUMMARY.items():
        if key not in obj:
            continue
        v = obj[key]
        if not isinstance(v, str):
            v = str(v)
        if key == "stddev_iops" and "." not in v:
            dropped["stddev_iops"] = (f"{v!r}: obj_bencher formats this double with %d (undefined "
                                      "value), not a measurement")
            continue
        try:
            d = _dec(v)
        except ValueError:
            raise _err(path, f"JSON '{key}': expected a number, got {v[:40]!r}",
                       _line_of_key(text, key)) from None
        if ukind in ("count", "B") and not math.isfinite(float(d)):
            raise _err(path, f"JSON '{key}': expected a finite count, got {v[:40]!r}", _line_of_key(text, key))
        summary[metric] = (d, key)
    return summary, dropped


def _json_int(path: Path, obj: dict, text: str, key: str) -> int | None:
    """An integer key of the object (None when absent)."""
    if key not in obj:
        return None
    try:
        return int(str(obj[key]))
    except ValueError:
        raise _err(path, f"JSON '{key}': expected an integer", _line_of_key(text, key)) from None


def _json_mode(obj: dict) -> tuple[str | None, str]:
    """``write``/``read``/None and why: JSON has no seq-only marker."""
    if "concurrent_ios" in obj or "total_writes_made" in obj:
        return "write", "JSON write keys (concurrent_ios / total_writes_made)"
    if "total_reads_made" in obj:
        return "read", "'total_reads_made': seq and rand print identical JSON; not stated which"
    return None, "no write or read keys"


def _parse_json(path: Path, data: bytes) -> Parsed:
    meta: dict[str, Any] = {"tool": TOOL, "tool_version": None, "format": "json"}
    text = _decode(data)
    hints = re.search(r"hints = (\d+)", text[:text.find("{")])
    cleanup: dict[str, Any] = {}
    obj, end, text = _json_decode(path, data, text, cleanup)
    if not isinstance(obj, dict):
        raise _err(path, "JSON: expected an object with rados bench keys", 1)
    _json_trailer(path, data, text[end:].strip(), cleanup, meta)
    datas = obj.get("datas")
    if datas is not None and not isinstance(datas, list):
        raise _err(path, "JSON 'datas': expected a list of per-second rows", _line_of_key(text, "datas"))
    known = set(_JSON_SUMMARY) | {"datas", "concurrent_ios", "op_size", "seconds_to_run",
                                  "max_objects", "object_prefix"}
    if not datas and not any(k in obj for k in _JSON_SUMMARY):
        raise _err(path, "JSON without rados bench 'datas' or summary keys (total_time_run, …)",
                   1)
    # per-second rows → columns, vectorised conversion
    vals, no_change = _json_table(path, datas, text) if datas else (np.empty((0, 8)), 0)
    summary, dropped = _json_summary(path, obj, text)
    if dropped:
        meta["dropped"] = dropped
    mode, ev = _json_mode(obj)
    ddir = {"write": "write", "read": "read"}.get(mode, "")
    op_size = _json_int(path, obj, text, "op_size")
    object_size = _json_int(path, obj, text, "object_size")
    if "op_size" in summary:
        op_size = int(summary["op_size"][0])
    meta.update({
        "mode": mode, "mode_evidence": ev, "concurrency": _json_int(path, obj, text, "concurrent_ios"),
        "op_size": op_size, "object_size": object_size,
        "duration_requested": _json_int(path, obj, text, "seconds_to_run"),
        "max_objects": _json_int(path, obj, text, "max_objects"),
        "object_prefix": obj.get("object_prefix"), "hints": int(hints.group(1)) if hints else None,
        "header_variant": None, "show_time": False, "cleanup": cleanup or None,
        "table": bool(len(vals)), "table_rows": int(len(vals)), "json_no_change_rows": no_change,
        "unknown_keys": sorted(set(obj) - known),
        "era_guess": {"note": "guess from the output format, not stated in the file",
                      "markers": ["--format json (Jewel 10.x on)"], "guess": "Jewel 10.x on"},
    })
    rows = [("", ddir, metric, _conv(d, _JSON_SUMMARY[key][1]), _UNIT[_JSON_SUMMARY[key][1]])
            for metric, (d, key) in summary.items()]
    if "op_size" not in summary and op_size is not None:
        rows.append(("", ddir, "op_size", float(op_size), "B"))
    if "object_size" not in summary and object_size is not None:
        rows.append(("", ddir, "object_size", float(object_size), "B"))
    source = str(path)
    if len(vals):
        _table_meta(meta, vals.T, {k: (v[0],) for k, v in summary.items()}, meta["concurrency"])
    partial = bool(len(vals)) and "total_time" not in summary
    return Parsed(path=source, kind=KIND, meta=meta, summary=summary_frame(source, rows),
                  series=_series_frame(source, ddir, vals.T) if len(vals)
                  else empty_frame(SERIES_COLUMNS),
                  partial=partial)


def _json_col(values: pd.Series, kind: str) -> np.ndarray:
    """Decimal strings → canonical unit, exactly (integer mantissa × scale, one rounding)."""
    s = np.char.strip(values.to_numpy().astype(str))
    neg = np.char.startswith(s, "-")
    body = np.where(neg, np.char.lstrip(s, "-"), s)
    dot = np.char.find(body, ".")
    fd = np.where(dot >= 0, np.char.str_len(body) - dot - 1, 0).astype(np.int64)
    digits = np.char.replace(body, ".", "", count=1)
    ndig = np.char.str_len(digits)
    valid = np.char.isdigit(digits) & (ndig > 0) & (ndig <= 18)
    if not valid.all():
        raise ValueError(str(s[~valid][0]))
    m = digits.astype(np.int64)
    mult = MIB if kind == "mibs" else 1
    x = -fd + (9 if kind == "lat" else 0)
    v = (m * mult).astype(np.float64) if np.all(m < (1 << 33)) else m.astype(np.float64) * mult
    out = np.where(x >= 0, v * P10[np.clip(x, 0, 22)], v / P10[np.clip(-x, 0, 22)])
    return np.where(neg, -out, out)

"""getput output (Mark Seger's Swift/S3 load generator), standalone and as CBT archives it (``output.gwN``).

The format is read from getput itself, github.com/markseger/getput commit 8df6328 (``../shared/tools/getput``:
``print_header``, ``print_line``, ``print_output`` and the main loop of ``getput``; the man page ``getput.1``):

* a header ``Rank Test Clts Proc OSize Start End MB/Sec Ops Ops/Sec Errs Latency Median LatRange
  [11 --ldist bounds] %CPU [Timestamp] Ret``; ``Rank`` is there unless ``--rank ''`` (its default is ``0``),
  ``Timestamp`` with ``--utc``.  It is printed again whenever the process count changes (unless ``--repeat``),
  never with ``--nohead``.  gpmulti's merged header (``#Test Clts Proc …``, no rank, ``TimeStamp``) is read too;
* one line per test, ``print_line``: ``"%-4s " rank, "%-5s %4d %4s %6s  %8s  %8s %8.2f %5d" (test, 1, procs,
  cvt2KMG(size), start, end, MB/s, ops), "%10.2f %4d %s %7.3f %5.2f-%05.2f" (ops/s, errs, mean, median, min,
  max)``, with ``--ldist`` ``" %5d"`` × 11, ``"  %5.2f"`` %CPU, with ``--utc`` ``" %d"``, ``" %3d"`` retries.
  Test names: ``put get del`` (``-t p,g,d``), ``putR getR delR`` (random ``P G D``; 8df6328's option check
  refuses them but ``print_line`` still names them), mixed ``pNgM`` and, with ``--mixopts m``, its parts ``pN``
  and ``gM``.  A test with no ops prints latency ``000.00`` and range ``0.00-00.00``;
* ``--psum``: before each total, one line per process with ``Proc`` = the process number (0 … N-1; in a
  ``--mixopts m`` part only that part's processes, named ``put``/``get``); the total has ``Proc`` = N;
* ``--putsperproc``: ``PutsPerProc: a:b:…`` after a put test (objects written per process);
* ``--echo``: the command line, after ``#``; anything else (API errors, warnings, debug) is skipped and counted.

Units: ``MB/Sec`` is MiB/s: ``rate = bytes / elapsed / 1024 / 1024`` per process in ``print_output`` (so B/s =
MB/Sec × 2**20), summed over processes for the total, as ``Ops/Sec``.  Latencies are printed in seconds (mean and
median 3 decimals, min and max 2) and become ns; ``%CPU`` is the client host's busy share of all CPUs over the
test (``/proc/stat`` cpu line: everything but idle and iowait) and becomes a ratio.  ``OSize`` is
``cvt2KMG``: a multiple of 1024 is divided by 1024 while above 1023 with Python 2 integer division, so ``1m``
is 1 MiB but also what 1.5 MiB prints; read back as getput's ``cvtFromKMG`` (k, m, g = 2**10, 2**20, 2**30):
a lower bound when the size was not a multiple of its unit (the MB/Sec check below then finds the size the
line implies: ``meta["osize_exact"]`` False, ``meta["checks"]["osize_truncated"]``; a CBT path's op_size is exact).  For gets it is the bytes read
(the last process's), for deletes the object size: a delete's MB/Sec is nominal (ops × size), so it is not
emitted as ``bw``.  The total's ``Ret`` is its last process's retries: ``print_output`` does not sum them.

Cross-checks (an ``IngestError`` naming ``file:line`` when one fails): MB/Sec = Ops/Sec × OSize / 2**20 within
the print rounding (or, for a k/m/g size, an implied size that is a multiple of 1024 below the next unit); min ≤ median, mean ≤ max; the ``--ldist`` buckets add
up to Ops; a total equals the sum of its ``--psum`` lines (Ops, Errs, buckets exactly; MB/Sec, Ops/Sec within
rounding); ``PutsPerProc`` has one count per process.  ``partial``: the last line is cut (no newline), a
header or ``--psum`` lines have no total after them, or getput stopped on an error (``Error --`` line).

Tidy rows (summary only: getput prints no time series): ``job`` is the test name (``put``, ``p3g2``; ``put#1``
… when a name recurs in the file) and ``<job>/proc<i>`` for a ``--psum`` process; ``ddir`` ``write`` for puts,
``read`` for gets, ``''`` for deletes and mixed totals.  Metrics: ``bw`` (B/s), ``iops`` (1/s), ``ops_total``
``errors`` ``retries`` (count), ``lat_mean lat_median lat_min lat_max`` (ns), ``client_cpu`` (ratio),
``op_size`` (B), ``procs clients`` (count; totals), ``span`` (s, End − Start on the HH:MM:SS clock),
``lat_bin_<lower bound in ns>`` (count, ``--ldist``: ops with latency in [bound, next bound)) and
``puts_per_proc`` (count, per process job).  A CBT path ``…/osd_ra-N/op_size-N/procs-N/<test>/<ctype>/
output.gwN`` gives ``meta["cbt"]`` (those keys and the gateway), checked against the lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .base import IngestError, Parsed, check_line_lengths, summary_frame

KIND = "getput"
TOOL = "getput"
FORMAT_COMMIT = "8df6328"
MIB = 1 << 20
#: ``--ldist`` bucket lower bounds in units of 10**-ldist s (``print_header``, ``latcalc``)
LDIST_STEPS = (0, 1, 2, 3, 4, 5, 10, 20, 30, 40, 50)
_SIZE_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}

_TEST = r"(?:putR|getR|delR|put|get|del|p\d+g\d+|p\d+|g\d+)"
_NUM = r"\d+(?:\.\d+)?"
_HDR_BASE = ("Test", "Clts", "Proc", "OSize", "Start", "End", "MB/Sec", "Ops", "Ops/Sec", "Errs", "Latency",
             "Median", "LatRange")
RE_HEADER = re.compile(r"^\s*(?:Rank\s+)?#?Test\s+Clts\s+Proc\s+OSize\s+Start\s+End\s+MB/Sec\s+Ops\s+Ops/Sec\s+"
                       r"Errs\s+Latency\s+Median\s+LatRange\b")
#: a result line: optional rank, a test name, then a number (what must parse once it starts so)
RE_STARTS = re.compile(rf"^\s*(?:\d+\s+)?{_TEST}\s+\d")
RE_PPP = re.compile(r"^PutsPerProc:\s*(.*?)\s*$")
#: a whole result line (sniffing output printed with --nohead)
RE_FULL = re.compile(rf"^\s*(?:\d+\s+)?{_TEST}\s+\d+\s+\d+\s+\d+[kmgKMG]?\s+\d\d:\d\d:\d\d\s+\d\d:\d\d:\d\d\s+"
                     rf"{_NUM}\s+\d+\s+{_NUM}\s+\d+\s+{_NUM}\s+{_NUM}\s+{_NUM}-{_NUM}(?:\s+\d+){{0,11}}\s+{_NUM}"
                     r"(?:\s+\d+)?\s+\d+\s*$")
#: fields of a result line; at most 15 integer digits (a count or rate a run can print; damage beyond that)
_INT, _DEC = r"\d{1,15}", r"\d{1,15}(?:\.\d{1,9})?"
_FIELD = {"int": re.compile(_INT), "dec": re.compile(_DEC), "size": re.compile(_INT + r"[kmgKMG]?"),
          "time": re.compile(r"\d\d:\d\d:\d\d"), "range": re.compile(rf"({_DEC})-({_DEC})"),
          "test": re.compile(_TEST)}
_WRITE, _READ = re.compile(r"put|putR|p\d+"), re.compile(r"get|getR|g\d+")
_MIXED_PART = re.compile(r"[pg]\d+")


def sniff(head: bytes) -> bool:
    """A getput header line in the head, or (``--nohead``) a first non-blank line that is a whole result line."""
    text = head.decode("latin-1")
    if "Clts" in text and any(RE_HEADER.match(ln) for ln in text.splitlines()[:200]):
        return True
    rest = text.lstrip()  # the first non-blank line, without splitting the whole head into lines
    brk = _LINE_BREAK.search(rest)
    return RE_FULL.match(rest[:brk.start()] if brk else rest) is not None


#: what str.splitlines() splits a latin-1 text at
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85]")


def size_from_kmg(text: str) -> int:
    """getput's ``cvtFromKMG``: ``4m`` → 4194304, ``1k`` → 1024, ``1000`` → 1000 (k/m/g = 2**10/20/30, any case)."""
    m = re.fullmatch(r"(\d+)([kmgKMG]?)", text.strip())
    if m is None:
        raise ValueError(f"not a getput size: {text!r}")
    return int(m.group(1)) * _SIZE_UNIT[m.group(2).lower()]


def size_to_kmg(num: int) -> str:
    """getput's ``cvt2KMG`` (Python 2 integer division): 4194304 → ``4m``, 1572864 → ``1m``, 1000 → ``1000``."""
    temp, suffix, mods = num, "", "kmg"
    if num // 1024 * 1024 == num:
        while temp > 1023 and mods:
            temp, suffix, mods = temp // 1024, mods[0], mods[1:]
    return f"{temp}{suffix}"


def _err(path: Path, msg: str, line: int | None) -> IngestError:
    return IngestError(path, msg, line=line)


def _layout(tokens: list[str], path: Path, lineno: int) -> dict[str, Any]:
    """Column positions from a header's tokens: rank, ldist bounds (s, as printed), timestamp."""
    rank = tokens[0] == "Rank"
    rest = tokens[1:] if rank else list(tokens)
    if rest and rest[0] == "#Test":  # gpmulti's merged header
        rest[0] = "Test"
    if tuple(rest[:13]) != _HDR_BASE:
        raise _err(path, "getput header: expected 'Rank Test Clts Proc OSize Start End MB/Sec Ops Ops/Sec Errs "
                         "Latency Median LatRange …'", lineno)
    rest = rest[13:]
    ldist: list[str] = []
    while rest and _FIELD["dec"].fullmatch(rest[0]):
        ldist.append(rest.pop(0))
    tail = tuple(rest)
    if len(ldist) not in (0, 11) or tail not in (("%CPU", "Ret"), ("%CPU", "Timestamp", "Ret"),
                                                   ("%CPU", "TimeStamp", "Ret")):
        raise _err(path, "getput header: expected 0 or 11 --ldist bounds after LatRange, then '%CPU [Timestamp] "
                         f"Ret', got {' '.join(ldist + list(tail))!r}", lineno)
    return {"rank": rank, "ldist": ldist or None, "nldist": len(ldist), "utc": len(tail) == 3}


def _infer_layout(tokens: list[str]) -> dict[str, Any]:
    """Column layout of a line printed without a header (``--nohead``): from its field count."""
    rank = not _FIELD["test"].fullmatch(tokens[0])
    n = len(tokens) - rank - 15  # 13 base fields, %CPU, Ret
    nldist = 11 if n >= 11 else 0
    return {"rank": rank, "ldist": None, "nldist": nldist, "utc": n - nldist == 1}


def _fields(layout: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, kind) of each token of a result line of ``layout``."""
    f = [("rank", "int")] if layout["rank"] else []
    f += [("test", "test"), ("clts", "int"), ("proc", "int"), ("osize", "size"), ("start", "time"),
          ("end", "time"), ("mbps", "dec"), ("ops", "int"), ("iops", "dec"), ("errs", "int"), ("lat", "dec"),
          ("median", "dec"), ("range", "range")]
    f += [(f"b{i}", "int") for i in range(layout["nldist"])]
    f += [("cpu", "dec")] + ([("ts", "int")] if layout["utc"] else []) + [("ret", "int")]
    return f


_EXPECT = {"int": "an integer", "dec": "a decimal number", "size": "a size (digits, optional k/m/g)",
           "time": "HH:MM:SS", "range": "min-max seconds (%5.2f-%05.2f)", "test": "a test name (put, get, del, "
           "putR, getR, delR, pNgM, pN, gM)"}


def _row(tokens: list[str], layout: dict[str, Any], path: Path, lineno: int) -> dict[str, Any] | None:
    """One result line's fields as strings; None when its field count does not fit ``layout``."""
    fields = _fields(layout)
    if len(tokens) != len(fields):
        return None
    out: dict[str, Any] = {"line": lineno}
    for (name, kind), tok in zip(fields, tokens):
        if not _FIELD[kind].fullmatch(tok):
            raise _err(path, f"getput result line, column {name}: expected {_EXPECT[kind]}, got {tok[:30]!r}",
                       lineno)
        out[name] = tok
    lo, hi = out.pop("range").split("-")
    out["min"], out["max"] = lo, hi
    return out


def _decimals(s: pd.Series) -> np.ndarray:
    """Digits after the point of each printed decimal (0 for none)."""
    dot = s.str.find(".")
    return np.where(dot >= 0, s.str.len() - dot - 1, 0)


def _half_unit(s: pd.Series) -> np.ndarray:
    return 0.5 * 10.0 ** -_decimals(s)


def _seconds_of_day(s: pd.Series) -> np.ndarray:
    hms = s.str.split(":", expand=True).astype(np.int64).to_numpy()
    return hms[:, 0] * 3600 + hms[:, 1] * 60 + hms[:, 2]


def _cbt_keys(path: Path) -> dict[str, Any] | None:
    """CBT's getput layout (cbt/benchmark/getput.py): ``…/osd_ra-%08d/op_size-%08d/procs-%08d/<test>/<ctype>/
    output.gw<N>``, in an archive ``output.gw<N>.<host>`` (CBT's ``sync_files`` copies each client's file
    with its host appended), perhaps compressed (``.gz``); None for any other path."""
    from .discovery import plain_name
    parts = path.parts
    m = re.fullmatch(r"output\.gw(\d+)(?:\..+)?", plain_name(path.name))
    if m is None or len(parts) < 6:
        return None
    keys: dict[str, Any] = {}
    for key, part in zip(("osd_ra", "op_size", "procs"), parts[-6:-3]):
        km = re.fullmatch(rf"{key}-(\d+)", part)
        if km is None:
            return None
        keys[key] = int(km.group(1))
    keys.update(test=parts[-3], ctype=parts[-2], gateway=int(m.group(1)))
    return keys


def _group(rows: list[dict[str, Any]], path: Path) -> tuple[list[tuple[list[int], int]], list[int]]:
    """Totals and their ``--psum`` lines: ``[(psum row indices, total row index)]`` and the trailing per-process
    rows left without a total (only possible at the end of the file: a cut run).

    A block is processes 0, 1, …, N-1 then the total with Proc N and Ops = their sum (``print_output``); a
    ``--mixopts m`` part (``pN``/``gM``) totals the run of ``put``/``get`` lines just before it; a line that
    is in no block is a total of its own (no ``--psum``).  Among splits, the one with fewest lone totals wins
    (``put 0``, ``put 1``, ``put 2`` is one block of two processes, not a 1-process block and a lone line)."""
    groups: list[tuple[list[int], int]] = []
    n = len(rows)
    i = 0
    while i < n:
        seg, name = rows[i]["segment"], rows[i]["test"]
        j = i
        while j + 1 < n and rows[j + 1]["segment"] == seg and rows[j + 1]["test"] == name:
            j += 1
        # a --mixopts m part after this run: the run is its processes
        nxt = rows[j + 1] if j + 1 < n and rows[j + 1]["segment"] == seg else None
        if nxt is not None and _MIXED_PART.fullmatch(nxt["test"]) and name in ("put", "get") \
                and nxt["test"][0] == name[0] and int(nxt["proc"]) == j - i + 1 \
                and int(nxt["ops"]) == sum(int(rows[k]["ops"]) for k in range(i, j + 1)):
            groups.append((list(range(i, j + 1)), j + 1))
            i = j + 2
            continue
        split, left = _split_run(rows, i, j, last=j == n - 1)
        if split is None:
            raise _err(path, f"--psum lines of '{name}' do not add up: expected processes 0, 1, …, N-1 then "
                             "their total with Proc N and Ops equal to their sum", rows[i]["line"])
        groups += split
        if left:  # per-process lines at the very end of the file: the run was cut after them (partial)
            return groups, left
        i = j + 1
    return groups, []


def _split_run(rows: list[dict[str, Any]], i: int, j: int, last: bool):
    """Split rows i..j (one test name) into (psum rows, total) blocks and lone totals, fewest lone totals first;
    ``last``: trailing per-process rows without a total are allowed (returned second).  (None, []) when no
    split exists."""
    proc = [int(rows[k]["proc"]) for k in range(i, j + 1)]
    ops = [int(rows[k]["ops"]) for k in range(i, j + 1)]
    m = len(proc)
    best: dict[int, tuple[int, list, list] | None] = {m: (0, [], [])}
    for s in range(m - 1, -1, -1):
        cands = []
        if proc[s] != 0 and best[s + 1] is not None:  # a lone total
            c, g, left = best[s + 1]
            cands.append((c + 1, [([], i + s)] + g, left))
        total = 0
        for k in range(s, m):  # k: candidate total's position; processes s..k-1
            if k > s and proc[k - 1] != k - 1 - s:
                break
            if k > s and proc[k] == k - s and ops[k] == total and best[k + 1] is not None:
                c, g, left = best[k + 1]
                cands.append((c, [(list(range(i + s, i + k)), i + k)] + g, left))
            total += ops[k]
        if last and all(proc[s + t] == t for t in range(m - s)):  # a cut block: processes only
            cands.append((m, [], list(range(i + s, i + m))))
        best[s] = min(cands, key=lambda x: x[0]) if cands else None
    if best[0] is None:
        return None, []
    return best[0][1], best[0][2]


@dataclass
class _Lines:
    """What a getput output's lines hold, in file order: ``rows`` (result lines' fields as strings, with
    their header ``segment`` and ``--ldist`` layout), ``ppp`` (``PutsPerProc``: line, counts, result rows
    before it), ``headers`` (printed or inferred layouts), ``skipped`` lines, ``errors_printed`` (getput's
    own error lines) and ``empty_headers`` (headers with no result line under them)."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    ppp: list[tuple[int, list[int], int]] = field(default_factory=list)
    headers: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors_printed: int = 0
    empty_headers: int = 0
    segment: int = 0
    layout: dict[str, Any] | None = None

    def segment_empty(self) -> bool:
        """A header was printed and no result line followed it (yet)."""
        return bool(self.headers) and not any(r["segment"] == self.segment for r in self.rows)


def _puts_per_proc(body: str, path: Path, no: int, cut_here: bool) -> list[int] | None:
    """The per-process counts of a ``PutsPerProc:`` line; None for a damaged line cut at the end of the file."""
    if not re.fullmatch(r"\d{1,15}(?::\d{1,15})*", body):
        if cut_here:
            return None
        raise _err(path, f"PutsPerProc: expected counts separated by ':', got {body[:40]!r}", no)
    return [int(x) for x in body.split(":")]


def _result_line(tokens: list[str], lay: dict[str, Any], segment: int, path: Path, no: int, cut_here: bool,
                 meta: dict[str, Any]) -> dict[str, Any] | None:
    """A result line's fields (:func:`_row`) with its header segment and ``--ldist`` layout; None (and
    ``meta["cut_line"]``) for a line that does not fit ``lay`` but is the cut last line of the file."""
    try:
        r = _row(tokens, lay, path, no)
    except IngestError:
        if cut_here:
            meta["cut_line"] = no
            return None
        raise
    if r is None:
        if cut_here:
            meta["cut_line"] = no
            return None
        want = len(_fields(lay))
        raise _err(path, f"getput result line: expected {want} fields "
                         f"({' '.join(n for n, _ in _fields(lay))}), got {len(tokens)}", no)
    r["segment"] = segment
    r["ldist"] = lay["ldist"] if lay["nldist"] else None
    r["nldist"] = lay["nldist"]
    return r


def _read_lines(lines: list[str], cut: bool, path: Path, meta: dict[str, Any]) -> _Lines:
    """Sort every line: header, ``PutsPerProc``, ``--echo`` command line, result line, or skipped."""
    got = _Lines()
    for no, raw in enumerate(lines, start=1):
        ln = raw.rstrip("\r")
        s = ln.strip()
        cut_here = cut and no == len(lines)
        if not s:
            continue
        if RE_HEADER.match(ln):
            if got.segment_empty():
                got.empty_headers += 1
            got.layout = _layout(s.split(), path, no)
            got.segment += 1
            got.headers.append({"line": no, **{k: got.layout[k] for k in ("rank", "ldist", "utc")}})
            continue
        m = RE_PPP.match(s)
        if m:
            counts = _puts_per_proc(m.group(1), path, no, cut_here)
            if counts is not None:
                got.ppp.append((no, counts, len(got.rows)))
            continue
        if s.startswith("#") and not got.headers and not got.rows:
            meta.setdefault("echo", s.lstrip("# ").strip())
            continue
        if RE_STARTS.match(ln):
            tokens = s.split()
            if got.layout is None:  # --nohead: the first result line fixes the layout of the lines after it
                got.layout = _infer_layout(tokens)
                got.headers.append({"line": None, "inferred_from_line": no,
                                    **{k: got.layout[k] for k in ("rank", "ldist", "utc")}})
            r = _result_line(tokens, got.layout, got.segment, path, no, cut_here, meta)
            if r is not None:
                got.rows.append(r)
            continue
        if s.startswith("Error --") or "Unexpected Error" in s or "try -d128 for more clues" in s:
            got.errors_printed += 1
        got.skipped.append(s)
    if got.segment_empty():
        got.empty_headers += 1
    return got


def parse(path: str | Path, data: bytes | None) -> Parsed:
    """Read one getput output (module docstring); raises ``IngestError`` naming ``file:line``."""
    path = Path(path)
    if data is None:
        data = path.read_bytes()
    check_line_lengths(path, data, "getput output")
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    cut = bool(lines) and lines[-1] != ""  # no newline after the last line: the file was cut there
    if not cut:
        lines = lines[:-1]
    meta: dict[str, Any] = {"tool": TOOL, "tool_version": None, "format_source": f"getput {FORMAT_COMMIT}",
                            "units": "MB/Sec is MiB/s (bytes / elapsed / 1024 / 1024); latencies printed in s"}
    got = _read_lines(lines, cut, path, meta)
    rows = got.rows
    groups, left = _group(rows, path)
    partial_why = []
    if cut:
        partial_why.append("the last line has no newline (file cut)")
    if left:
        partial_why.append(f"{len(left)} --psum line(s) at the end without their total")
    if got.empty_headers:
        partial_why.append(f"{got.empty_headers} header(s) without result lines")
    if got.errors_printed:
        partial_why.append("getput printed an error (a test stopped or was not reported)")
    summary, checks = _tidy(rows, groups, got.ppp, path, meta)
    meta.update({"headers": got.headers, "result_lines": len(rows), "tests": len(groups),
                 "psum": any(g[0] for g in groups), "skipped_lines": len(got.skipped),
                 "skipped_sample": got.skipped[:5], "errors_printed": got.errors_printed, "checks": checks,
                 "ranks": sorted({r["rank"] for r in rows if "rank" in r})})
    if partial_why:
        meta["partial_reason"] = "; ".join(partial_why)
    return Parsed(path=str(path), kind=KIND, meta=meta, summary=summary, partial=bool(partial_why))


def _check_cbt(cbt: dict[str, Any], df: pd.DataFrame, rows: list[dict[str, Any]], num: dict[str, np.ndarray],
               groups: list[tuple[list[int], int]], checks: dict[str, Any]) -> np.ndarray:
    """The lines against the CBT path's op_size (puts and deletes) and procs (totals), noted in ``checks``;
    returns which lines print the path's op_size (their size in B is then exact)."""
    same = df["osize"].to_numpy() == size_to_kmg(cbt["op_size"])
    putdel = ~df["test"].str.match(r"get|g\d").to_numpy()
    if (putdel & ~same).any():
        k = int(np.flatnonzero(putdel & ~same)[0])
        checks["cbt_op_size"] = (f"line {rows[k]['line']}: OSize {rows[k]['osize']} is not the path's op_size "
                                 f"{cbt['op_size']} ({size_to_kmg(cbt['op_size'])})")
    else:
        checks["cbt_op_size"] = "ok"
    tot_procs = {int(num["proc"][t]) for ps, t in groups if not _MIXED_PART.fullmatch(rows[t]["test"])}
    checks["cbt_procs"] = "ok" if tot_procs <= {cbt["procs"]} else \
        f"totals name {sorted(tot_procs)} processes, the path procs-{cbt['procs']:08d}"
    return same


def _check_rates(path: Path, df: pd.DataFrame, rows: list[dict[str, Any]], num: dict[str, np.ndarray],
                 size: np.ndarray, suffixed: np.ndarray, unit: np.ndarray, exact: np.ndarray,
                 checks: dict[str, Any], meta: dict[str, Any]) -> None:
    """MB/Sec = Ops/Sec × OSize (``size``, B) / 2**20 within print rounding, or a k/m/g OSize (``unit``: its
    multiplier, B) that cvt2KMG printed truncated (``meta["osize_exact"]`` False, ``checks["osize_truncated"]``);
    raises on any other line."""
    meta["osize_exact"] = True
    hm, hi_ = _half_unit(df["mbps"]), _half_unit(df["iops"])
    tol = hm + hi_ * size / MIB + 1e-9
    bad = np.abs(num["mbps"] - num["iops"] * size / MIB) > tol
    # … or a size cvt2KMG printed truncated: a multiple of 1024 in [printed, printed + unit) that the printed
    # MB/Sec and Ops/Sec allow (their rounding propagated to the implied size)
    with np.errstate(divide="ignore", invalid="ignore"):
        imp_lo = np.maximum((num["mbps"] - hm) * MIB / (num["iops"] + hi_), size)
        imp_hi = np.minimum(np.where(num["iops"] > hi_, (num["mbps"] + hm) * MIB / (num["iops"] - hi_), np.inf),
                            size + unit - 1024)
    truncated = bad & suffixed & ~exact & (np.ceil(imp_lo / 1024) * 1024 <= imp_hi)
    if truncated.any():
        meta["osize_exact"] = False
        checks["osize_truncated"] = [f"line {rows[k]['line']}: OSize {rows[k]['osize']} with MB/Sec/Ops/Sec "
                                     f"implies {imp_lo[k]:.0f}-{min(imp_hi[k], 1e18):.0f} B (cvt2KMG truncates a "
                                     "size that is not a multiple of its unit)" for k in np.flatnonzero(truncated)]
    bad &= ~truncated
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise _err(path, f"MB/Sec {df['mbps'].iloc[k]} is not Ops/Sec {df['iops'].iloc[k]} × OSize "
                         f"{df['osize'].iloc[k]} / 2**20 = {num['iops'][k] * size[k] / MIB:.4f} (print rounding "
                         f"allows ±{tol[k]:.4f}): expected getput's rate = ops × size / elapsed / 2**20",
                   int(df["line"].iloc[k]))
    checks["mbps_vs_iops_x_osize_max_abs_diff"] = float(np.max(np.abs(num["mbps"] - num["iops"] * size / MIB)))


def _check_latency_order(path: Path, df: pd.DataFrame, num: dict[str, np.ndarray]) -> None:
    """min ≤ median, mean ≤ max on lines with ops, within print rounding (min/max 2 decimals, mean/median 3)."""
    slack = _half_unit(df["min"]) + 0.0005 + 1e-9
    for c in ("median", "lat"):
        wrong = (num["ops"] > 0) & ((num[c] < num["min"] - slack) | (num[c] > num["max"] + slack))
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            raise _err(path, f"{'Median' if c == 'median' else 'Latency'} {df[c].iloc[k]} s outside LatRange "
                             f"{df['min'].iloc[k]}-{df['max'].iloc[k]}: expected min ≤ it ≤ max",
                       int(df["line"].iloc[k]))


def _check_ldist(path: Path, df: pd.DataFrame, rows: list[dict[str, Any]], num: dict[str, np.ndarray],
                 nb: np.ndarray, checks: dict[str, Any]) -> None:
    """The ``--ldist`` buckets of each line with them (``nb`` > 0) add up to its Ops (latcalc counts every op once)."""
    if (nb > 0).any():
        bins = df.loc[nb > 0, [f"b{i}" for i in range(11)]].astype(np.int64).to_numpy()
        sums = bins.sum(axis=1)
        wrong = sums != num["ops"][nb > 0]
        if wrong.any():
            k = int(np.flatnonzero(nb > 0)[np.flatnonzero(wrong)[0]])
            raise _err(path, f"--ldist buckets add up to {int(sums[np.flatnonzero(wrong)[0]])}, Ops is "
                             f"{rows[k]['ops']}: expected one bucket per op (latcalc)", rows[k]["line"])
        checks["ldist_sum_eq_ops"] = "ok"


def _check_psum(path: Path, df: pd.DataFrame, rows: list[dict[str, Any]], num: dict[str, np.ndarray],
                nb: np.ndarray, groups: list[tuple[list[int], int]], checks: dict[str, Any]) -> None:
    """Each total against its ``--psum`` lines: Errs and buckets exactly, MB/Sec and Ops/Sec within rounding."""
    for ps, t in groups:
        if not ps:
            continue
        for c, exact_sum in (("errs", True), ("mbps", False), ("iops", False)):
            got, want = num[c][t], num[c][ps].sum()
            allow = 0 if exact_sum else float(_half_unit(df[c].iloc[[t] + ps]).sum()) + 1e-9
            if abs(got - want) > allow:
                raise _err(path, f"total {c} {df[c].iloc[t]} is not the sum of its {len(ps)} --psum lines "
                                 f"({want:g}): expected print_output's sum", rows[t]["line"])
        if nb[t] and (df.loc[ps, [f"b{i}" for i in range(11)]].astype(np.int64).sum().to_numpy()
                      != df.loc[t, [f"b{i}" for i in range(11)]].astype(np.int64).to_numpy()).any():
            raise _err(path, "total --ldist buckets are not the sum of its --psum lines", rows[t]["line"])
    if any(g[0] for g in groups):
        checks["psum_sums"] = "ok"


def _jobs(rows: list[dict[str, Any]], groups: list[tuple[list[int], int]], role: np.ndarray) -> list[str]:
    """Job label per line: the test name per total (``name#k`` when it recurs), ``<job>/proc<i>`` per process."""
    names = [rows[t]["test"] for _, t in groups]
    count = pd.Series(names).value_counts()
    seen: dict[str, int] = {}
    job = [""] * len(rows)
    for (ps, t), name in zip(groups, names):
        k = seen.get(name, 0)
        seen[name] = k + 1
        job[t] = name if count[name] == 1 else f"{name}#{k}"
        for p in ps:
            job[p] = f"{job[t]}/proc{rows[p]['proc']}"
    keep = role >= 0  # trailing psum lines of a cut run: no total, but their own numbers stand
    for k in np.flatnonzero(~keep):
        job[k] = f"{rows[k]['test']}/proc{rows[k]['proc']}"
    return job


def _ddirs(test: pd.Series, proc: np.ndarray, is_total: np.ndarray) -> np.ndarray:
    """``write`` for puts, ``read`` for gets, ``''`` otherwise; a mixed test's process by its number ``proc``."""
    ddir = np.where(test.str.fullmatch(_WRITE.pattern), "write", np.where(test.str.fullmatch(_READ.pattern), "read", ""))
    mixed = test.str.fullmatch(r"p\d+g\d+").to_numpy()
    sel = mixed & ~is_total
    if sel.any():  # a mixed test's process: put when instance % (p+g) < p (getput main loop)
        pg = test[sel].str.extract(r"p(\d+)g(\d+)").astype(np.int64).to_numpy()
        is_put = proc[sel].astype(np.int64) % (pg[:, 0] + pg[:, 1]) < pg[:, 0]
        ddir[sel] = np.where(is_put, "write", "read")
    return ddir


def _metric_columns(df: pd.DataFrame, num: dict[str, np.ndarray], size: np.ndarray, job: list[str],
                    ddir: np.ndarray, is_total: np.ndarray) -> tuple[pd.DataFrame, dict[str, str]]:
    """One column per summary metric in canonical units (one row per line), and each metric's unit."""
    test = df["test"]
    span = (_seconds_of_day(df["end"]) - _seconds_of_day(df["start"])) % 86400
    wide = pd.DataFrame({
        "job": job, "ddir": ddir,
        "bw": np.where(test.str.match(r"del").to_numpy(), np.nan, num["mbps"] * MIB),
        "iops": num["iops"], "ops_total": num["ops"], "errors": num["errs"], "retries": num["ret"],
        "lat_mean": np.round(num["lat"] * 1e9), "lat_median": np.round(num["median"] * 1e9),
        "lat_min": np.round(num["min"] * 1e9), "lat_max": np.round(num["max"] * 1e9),
        "client_cpu": num["cpu"] / 100, "op_size": size,
        "procs": np.where(is_total, num["proc"], np.nan), "clients": np.where(is_total, num["clts"], np.nan),
        "span": span.astype(np.float64)})
    units = {"bw": "B/s", "iops": "1/s", "ops_total": "count", "errors": "count", "retries": "count",
             "lat_mean": "ns", "lat_median": "ns", "lat_min": "ns", "lat_max": "ns", "client_cpu": "ratio",
             "op_size": "B", "procs": "count", "clients": "count", "span": "s"}
    return wide, units


def _add_ldist_bins(wide: pd.DataFrame, units: dict[str, str], rows: list[dict[str, Any]], df: pd.DataFrame,
                    nb: np.ndarray, meta: dict[str, Any]) -> None:
    """``--ldist`` bucket counts as ``lat_bin_<lower bound in ns>`` columns (bounds from the header; buckets
    printed without one are not emitted)."""
    bounds = {tuple(r["ldist"]) for r in rows if r["ldist"]}
    if (nb > 0).any():
        have = np.array([r["ldist"] is not None for r in rows])
        if (~have & (nb > 0)).any():
            meta["ldist_unlabelled"] = "bucket counts printed without a header: their bounds are unknown, not emitted"
        for b in bounds:
            sel = np.array([r["ldist"] is not None and tuple(r["ldist"]) == b for r in rows])
            for i, lo in enumerate(b):
                name = f"lat_bin_{int(Decimal(lo).scaleb(9))}"
                wide.loc[sel, name] = df.loc[sel, f"b{i}"].astype(np.float64)
                units[name] = "count"
        meta["ldist_bounds_s"] = [list(b) for b in sorted(bounds)]


def _puts_per_proc_rows(path: Path, ppp: list, groups: list[tuple[list[int], int]], rows: list[dict[str, Any]],
                        num: dict[str, np.ndarray], test: pd.Series, job: list[str], ddir: np.ndarray) -> list[tuple]:
    """``puts_per_proc`` rows (count): one per process of the put total printed just before each ``PutsPerProc``
    line, whose counts must be one per process and (put tests) add up to its Ops."""
    extra = []
    for line, counts, before in ppp:
        prev = [t for _, t in groups if t < before]
        if not prev:
            raise IngestError(path, "PutsPerProc: expected it after a put test's result line", line=line)
        t = prev[-1]
        want = int(num["proc"][t])
        if len(counts) != want:
            raise IngestError(path, f"PutsPerProc: {len(counts)} counts, expected one per process ({want}, the "
                                    f"Proc of line {rows[t]['line']})", line=line)
        if test.iloc[t] in ("put", "putR") and sum(counts) != int(num["ops"][t]):
            raise IngestError(path, f"PutsPerProc: counts add up to {sum(counts)}, expected the put's Ops "
                                    f"{rows[t]['ops']} (line {rows[t]['line']})", line=line)
        extra += [(f"{job[t]}/proc{i}", ddir[t] or "write", "puts_per_proc", float(c), "count")
                  for i, c in enumerate(counts)]
    return extra


def _tidy(rows: list[dict[str, Any]], groups: list[tuple[list[int], int]], ppp: list, path: Path,
          meta: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Cross-check the rows (vectorised over lines) and build the tidy summary."""
    source = str(path)
    if not rows:
        return summary_frame(source, []), {}
    df = pd.DataFrame(rows)
    n = len(df)
    role = np.full(n, -1)  # index of the group's total for psum rows; own index for totals
    for ps, t in groups:
        role[t] = t
        role[ps] = t
    num = {c: pd.to_numeric(df[c]).to_numpy(np.float64)
           for c in ("clts", "proc", "mbps", "ops", "iops", "errs", "lat", "median", "min", "max", "cpu", "ret")}
    size = df["osize"].map(size_from_kmg).to_numpy(np.float64)
    suffixed = df["osize"].str.contains(r"[kmgKMG]$", regex=True).to_numpy()
    unit = df["osize"].str[-1].str.lower().map(_SIZE_UNIT).fillna(1).to_numpy(np.float64)
    cbt = _cbt_keys(path)
    checks: dict[str, Any] = {}
    exact = ~suffixed.copy()
    if cbt is not None:
        meta["cbt"] = cbt
        same = _check_cbt(cbt, df, rows, num, groups, checks)
        size = np.where(same, float(cbt["op_size"]), size)
        exact |= same
    _check_rates(path, df, rows, num, size, suffixed, unit, exact, checks, meta)
    _check_latency_order(path, df, num)
    nb = df["nldist"].to_numpy()
    _check_ldist(path, df, rows, num, nb, checks)
    _check_psum(path, df, rows, num, nb, groups, checks)
    job = _jobs(rows, groups, role)
    is_total = role == np.arange(n)
    ddir = _ddirs(df["test"], num["proc"], is_total)
    wide, units = _metric_columns(df, num, size, job, ddir, is_total)
    _add_ldist_bins(wide, units, rows, df, nb, meta)
    long = wide.melt(id_vars=["job", "ddir"], var_name="metric", value_name="value").dropna(subset=["value"])
    extra = _puts_per_proc_rows(path, ppp, groups, rows, num, df["test"], job, ddir)
    long = long.sort_values(["job"], kind="stable", key=lambda s: s.map({j: i for i, j in enumerate(dict.fromkeys(job))}))
    tuples = list(zip(long["job"], long["ddir"], long["metric"], long["value"].astype(float),
                      long["metric"].map(units)))
    return summary_frame(source, tuples + extra), checks

"""blkparse's default text output (kind ``blkparse``), blktrace 1.0–1.3, with or without its summary.

Event lines use blkparse's default format ``%D %2c %8s %5T.%9t %5p %2a %3d`` then per action:
``sector + nsect [comm]`` (Q M F G I D S), ``sector + nsect [error]`` (C), ``[comm]`` (P), ``[comm] N``
(U, UT), ``sector + nsect <- (maj,min) from`` (A), ``sector / new [comm]`` (X), and for passthrough
requests a byte count and the command bytes in parentheses; a request without data prints no sector
(e.g. ``D  FN [kworker]``).  Lines that start like an event (``maj,min cpu seq sec.nsec``) must parse,
else ``IngestError`` with the line number; message records (``m``), the doc samples' ``...``/``^C``
elisions and anything else are skipped and counted (``meta["skipped_lines"]``).

The summary blkparse prints at the end (per CPU ``CPUn (maj,min):`` and, with more than one CPU,
``Total (maj,min):``; since 1.0.2 also depth lines, ``Throughput (R/W):`` and a separate ``Skips:``
line) becomes the tidy summary, ``job`` = device: per ``ddir`` ``queued dispatches requeues completed
merges`` (count), ``queued_bytes dispatches_bytes completed_bytes merges_bytes`` (B; blkparse prints
KiB), ``depth`` (count); ``io_unplugs timer_unplugs events skips`` (count, ddir ""); ``bw`` (B/s, from
``Throughput``; KiB/s × 1024).  Without a Total block the CPU blocks of the device are summed (depth: the
maximum).  A file with events but no summary is ``partial``; so is one that ends mid-line (the cut line is
not read) or whose summary lacks blkparse's closing ``Events (maj,min): N entries`` line (output cut).

The events go through the same per-request/per-bio model as the binary reader
(``blktrace.io_tables``; action letters and RWBS turned back into action codes and category bits), so
``tables`` holds ``requests`` and ``bios`` and the summary adds ``q2c_mean d2c_mean q2d_mean`` (ns) per
device and ddir.  ``meta["crosscheck"]`` compares the counts recomputed from the events with blkparse's
own ``Completed``/``Queued`` figures (equal when the file holds every event of the trace).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import blktrace as bt
from .base import IngestError, Parsed, check_line_lengths, summary_frame, text_lines

KIND = "blkparse"
_EVENT_START = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s")
_EVENT = re.compile(
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+(?P<sec>\d+)\.(?P<nsec>\d{9})\s+"
    r"(?P<pid>\d+)\s+(?P<act>[A-Za-z]{1,2})\s+(?P<rwbs>[A-Z]+)\b\s*(?P<rest>.*?)\s*$")
_SECT = re.compile(r"^(?P<sector>\d+) \+ (?P<nsect>\d+)")
_SNIFF = re.compile(rb"\A(?:[^\n]*\n){0,20}?\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d{9}\s+\d+\s+[A-Za-z]{1,2}\s+[A-Z]+")
_BLOCK = re.compile(r"^(?:CPU(?P<cpu>\d+)|Total) \((?P<dev>\d+,\d+)\):\s*$")
_PAIR = re.compile(r"(?P<key>Reads Queued|Writes Queued|Read Dispatches|Write Dispatches|Reads Requeued|"
                   r"Writes Requeued|Reads Completed|Writes Completed|Read Merges|Write Merges|Read depth|"
                   r"Write depth|IO unplugs|Timer unplugs):\s*(?P<n>\d+)(?:,\s*(?P<kib>\d+)KiB)?")
_EVENTS = re.compile(r"^Events \((?P<dev>\d+,\d+)\): (?P<n>\d+) entries(?:, (?P<skips>\d+) skips)?")
_THRU = re.compile(r"^Throughput \(R/W\): (?P<r>[\d.]+)KiB/s / (?P<w>[\d.]+)KiB/s")
_SKIPS = re.compile(r"^Skips: (?P<n>\d+) forward")
_KEYS = {"Queued": "queued", "Dispatches": "dispatches", "Requeued": "requeues", "Completed": "completed",
         "Merges": "merges", "depth": "depth", "IO unplugs": "io_unplugs", "Timer unplugs": "timer_unplugs"}
_LETTER = {v: k for k, v in bt.ACTIONS.items() if len(v) == 1}
_LETTER["UT"] = 11


def sniff(head: bytes) -> bool:
    return _SNIFF.match(head) is not None


def _categories(rwbs: np.ndarray) -> np.ndarray:
    """Category bits from blkparse's RWBS (inverse of ``blktrace.rwbs``), vectorised over unique values."""
    u, inv = np.unique(rwbs.astype(str), return_inverse=True)
    bits = []
    for s in u:
        c = 0
        i = 0
        if s.startswith("F") and len(s) > 1 and s[1] in "DWRN":
            c |= bt.TC_FLUSH
            i = 1
        head = s[i:i + 1]
        c |= {"D": bt.TC_DISCARD, "W": bt.TC_WRITE, "R": bt.TC_READ}.get(head, 0)
        for ch, bit in (("F", bt.TC_FUA), ("A", bt.TC_AHEAD), ("S", bt.TC_SYNC), ("M", bt.TC_META)):
            if ch in s[i + 1:]:
                c |= bit
        bits.append(c)
    return np.asarray(bits, dtype=np.int64)[inv]


def _summary_blocks(lines: list[str], start: int) -> tuple[dict, dict, dict, int | None]:
    """Per (device, block) counters; events per device; throughput per device; skips."""
    blocks: dict[tuple[str, str], dict[str, float]] = {}
    events: dict[str, tuple[int, int | None]] = {}
    thru: dict[str, tuple[float, float]] = {}
    skips = None
    cur: tuple[str, str] | None = None
    last_dev = None
    for ln in lines[start:]:
        m = _BLOCK.match(ln)
        if m:
            cur = (m["dev"], "total" if m["cpu"] is None else f"cpu{m['cpu']}")
            blocks[cur] = {}
            last_dev = m["dev"]
            continue
        m = _EVENTS.match(ln)
        if m:
            events[m["dev"]] = (int(m["n"]), int(m["skips"]) if m["skips"] else None)
            cur = None
            continue
        m = _THRU.match(ln)
        if m and last_dev is not None:
            thru[last_dev] = (float(m["r"]) * 1024, float(m["w"]) * 1024)
            cur = None
            continue
        m = _SKIPS.match(ln)
        if m:
            skips = int(m["n"])
            continue
        if cur is not None:
            for p in _PAIR.finditer(ln):
                blocks[cur][p["key"]] = float(p["n"])
                if p["kib"] is not None:
                    blocks[cur][p["key"] + " KiB"] = float(p["kib"])
    return blocks, events, thru, skips


def _tool_rows(blocks: dict, events: dict, thru: dict, skips: int | None) -> list[tuple]:
    rows: list[tuple] = []
    devs = sorted({d for d, _ in blocks} | set(events), key=lambda d: tuple(map(int, d.split(","))))
    for dev in devs:
        if (dev, "total") in blocks:
            tot = blocks[(dev, "total")]
        else:
            cpus = [v for (d, b), v in blocks.items() if d == dev]
            tot = {}
            for v in cpus:
                for k, x in v.items():
                    tot[k] = max(tot.get(k, 0.0), x) if "depth" in k else tot.get(k, 0.0) + x
        for key, x in tot.items():
            kib = key.endswith(" KiB")
            base = key[:-4] if kib else key
            if base in ("IO unplugs", "Timer unplugs"):
                rows.append((dev, "", _KEYS[base], x, "count"))
                continue
            ddir = "read" if base.startswith("Read") else "write"
            metric = _KEYS[base.split(" ", 1)[1]]
            rows.append((dev, ddir, metric + ("_bytes" if kib else ""), x * 1024 if kib else x,
                         "B" if kib else "count"))
        if dev in events:
            rows.append((dev, "", "events", float(events[dev][0]), "count"))
            if events[dev][1] is not None:
                rows.append((dev, "", "skips", float(events[dev][1]), "count"))
        if dev in thru:
            rows.append((dev, "read", "bw", thru[dev][0], "B/s"))
            rows.append((dev, "write", "bw", thru[dev][1], "B/s"))
    if skips is not None and len(devs) == 1:
        rows.append((devs[0], "", "skips", float(skips), "count"))
    return rows


def _event_fields(path: Path, s: pd.Series) -> tuple[np.ndarray, pd.DataFrame, np.ndarray]:
    """Which lines start like an event, their fields as printed (strings) and their 0-based line
    numbers; raises on an event line that does not parse or has a field of more than 18 digits."""
    is_event = s.str.match(_EVENT_START).fillna(False).to_numpy()
    ev = s[is_event].str.extract(_EVENT)
    bad = ev["maj"].isna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(is_event)[np.flatnonzero(bad)[0]])
        raise IngestError(path, "expected a blkparse event line 'maj,min cpu seq sec.nsec pid action rwbs "
                                "...' (default format)", line=i + 1)
    ev_line = np.flatnonzero(is_event)
    for col in ("maj", "min", "cpu", "seq", "sec", "nsec", "pid"):  # int64 holds 18 digits; blkparse prints fewer
        if col in ev and (long := (ev[col].str.len() > 18).to_numpy(bool)).any():
            raise IngestError(path, f"expected a blkparse event line: the {col} field has more than 18 digits",
                              line=int(ev_line[np.flatnonzero(long)[0]]) + 1)
    return is_event, ev, ev_line


def _trace(path: Path, ev: pd.DataFrame, code: np.ndarray, line: np.ndarray) -> tuple[bt.Trace, np.ndarray]:
    """The events (known actions only, action ``code`` each, 0-based ``line`` each) as the binary reader's
    :class:`blktrace.Trace` (times in ns from the first event, sorted by time), and which are passthrough
    requests; raises on a sector, sector count or errno too long to be one."""
    rwbs = ev["rwbs"].to_numpy(dtype=object)
    cat = _categories(rwbs) if len(ev) else np.zeros(0, np.int64)
    rest = ev["rest"].fillna("")
    pc = rest.str.match(r"^(?:\d+ )?\(").to_numpy(dtype=bool)  # passthrough: byte count and "(cdb ..)"
    cat = cat | np.where(pc, bt.TC_PC, 0)
    sect = rest.str.extract(_SECT)
    if (long := (sect["sector"].str.len() > 18).fillna(False).to_numpy(bool)
            | (sect["nsect"].str.len() > 18).fillna(False).to_numpy(bool)).any():
        raise IngestError(path, "expected a blkparse event line: a sector or sector count of more than 18 digits",
                          line=int(line[np.flatnonzero(long)[0]]) + 1)
    sector = pd.to_numeric(sect["sector"]).fillna(0).to_numpy(np.int64)
    nsect = pd.to_numeric(sect["nsect"]).fillna(0).to_numpy(np.int64)
    t = ev["sec"].astype(np.int64).to_numpy() * 1_000_000_000 + ev["nsec"].astype(np.int64).to_numpy()
    err = np.zeros(len(ev), np.int64)
    is_c = code == bt.TA_C
    if is_c.any():
        e = rest[is_c].str.extract(r"\[(-?\d+)\]\s*$")[0]
        if (huge := (e.str.lstrip("-").str.len() > 9).fillna(False).to_numpy(bool)).any():  # an errno, not this
            at = np.flatnonzero(is_c)[np.flatnonzero(huge)[0]]
            raise IngestError(path, "expected a blkparse completion's [error] to be an errno (at most 9 digits)",
                              line=int(line[at]) + 1)
        err[is_c] = pd.to_numeric(e).fillna(0).abs().to_numpy(np.int64)
    dev = ev["maj"].astype(np.int64).to_numpy() << 20 | ev["min"].astype(np.int64).to_numpy()
    o = np.argsort(t, kind="stable")
    t0 = int(t[o[0]]) if len(t) else 0
    tr = bt.Trace(time=t[o] - t0, sector=sector[o], nbytes=nsect[o] * 512, action=(cat[o] << 16) | code[o],
                  pid=ev["pid"].astype(np.int64).to_numpy()[o], device=dev[o], error=err[o], t0_ns=t0, comm={},
                  order="text", records=len(t), span_ns=int(t[o[-1]]) - t0 if len(t) else 0)
    return tr, pc


def _crosscheck(requests: pd.DataFrame, bios: pd.DataFrame, devices: np.ndarray,
                rows: list[tuple]) -> tuple[list[tuple], dict[str, Any]]:
    """Per device and ddir from the events: ``q2c_mean d2c_mean q2d_mean`` summary rows (ns), and the
    completed/queued counts against blkparse's own summary ``rows`` (``meta["crosscheck"]``)."""
    ours = []
    cross: dict[str, Any] = {}
    tool = {(r[0], r[1], r[2]): r[3] for r in rows}
    for d in np.unique(devices):
        name = bt.dev_name(int(d))
        for ddir in ("read", "write"):
            r = requests[(requests["dev"] == d) & (requests["ddir"] == ddir)]
            b = bios[(bios["dev"] == d) & (bios["ddir"] == ddir)]
            for m in ("q2c", "d2c", "q2d"):
                v = b[f"{m}_ns"].to_numpy()
                v = v[np.isfinite(v)]
                if len(v):
                    ours.append((name, ddir, f"{m}_mean", float(v.mean()), "ns"))
            for metric, mine in (("completed", len(r)), ("queued", len(b))):
                if (name, ddir, metric) in tool:
                    cross[f"{name} {ddir} {metric}"] = {"tool": int(tool[(name, ddir, metric)]), "events": mine,
                                                        "ok": int(tool[(name, ddir, metric)]) == mine}
    return ours, cross


def parse(path: str | Path, data: bytes) -> Parsed:
    path = Path(path)
    check_line_lengths(path, data, "blkparse output")
    lines, incomplete = text_lines(data)
    s = pd.Series(lines, dtype=object)
    is_event, ev, ev_line = _event_fields(path, s)
    # the summary starts at the first block header after the events
    first_block = next((i for i, ln in enumerate(lines) if _BLOCK.match(ln)), None)
    blocks, events, thru, skips = (_summary_blocks(lines, first_block) if first_block is not None
                                   else ({}, {}, {}, None))
    if first_block is not None and (late := ev_line[ev_line > first_block]).size:
        raise IngestError(path, "expected blkparse's summary at the end, but an event line follows it (two "
                                "blkparse outputs in one file?)", line=int(late[0]) + 1)
    act_letter = ev["act"].to_numpy(dtype=object)
    known = np.isin(act_letter, list(_LETTER))
    body = slice(0, first_block if first_block is not None else len(lines))
    other = ~is_event[body] & s[body].str.strip().astype(bool).to_numpy()
    skipped = int(other.sum()) + int((~known).sum())  # elisions, messages, unknown actions
    ev = ev[known]
    act_letter = act_letter[known]
    code = np.vectorize(_LETTER.get, otypes=[np.int64])(act_letter) if len(ev) else np.zeros(0, np.int64)
    tr, pc = _trace(path, ev, code, ev_line[known])
    requests, bios, notes = bt.io_tables(tr)
    rows = _tool_rows(blocks, events, thru, skips)
    ours, cross = _crosscheck(requests, bios, tr.device, rows)
    if len(ev) and not blocks:
        incomplete.append("no summary block (blkparse interrupted, or output cut)")
    elif blocks and not events:
        incomplete.append("the summary has no closing 'Events (maj,min): N entries' line (output cut)")
    partial = bool(incomplete)
    meta: dict[str, Any] = {"tool_version": "blkparse (blktrace 1.x) default format", "events": int(len(ev)),
                            "skipped_lines": skipped, "pc_events": int(pc.sum()), "t0_ns": tr.t0_ns, "crosscheck": cross,
                            **notes}
    if partial:
        meta["incomplete"] = incomplete
    return Parsed(path=str(path), kind=KIND, meta=meta, summary=summary_frame(path.name, rows + ours),
                  partial=partial, tables={"requests": requests, "bios": bios})

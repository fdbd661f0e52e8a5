"""fio's text outputs: the normal (human) report and the terse (``--minimal``) lines, fio 2.0 to 3.x.

Both give the rows of :mod:`.fio` (``iops`` 1/s, ``bw`` B/s, ``io_bytes`` B, ``runtime`` s, ``slat_``/``clat_``/
``lat_`` ``mean``/``stddev``/``min``/``max`` and ``clat_pNN`` in ns), to the precision fio printed them;
``meta["resolution"]`` holds one unit of the last digit printed, in the table's unit.

**Normal** (fio stat.c ``show_thread_status_normal``): a block per job (or reporting group), from
``name: (groupid=N, jobs=N): err= N: pid=N`` to its ``issued`` line.

* fio ≥ 2.17: ``read: IOPS=12.3k, BW=623KiB/s (638kB/s)(30.4MiB/50032msec)``: num2str's 4 significant digits
  (``significant_figures``, fio ≥ 3.7), SI (``k``) or IEC (``Ki``) prefixes as printed.  Before fio 2.20 the
  digits after the point are not a decimal fraction (num2str printed the remainder's leading digits):
  such a value is known to one unit of its prefix.
* fio < 2.17: ``read : io=3071.7MB, bw=55552KB/s, iops=13887, runt= 56621msec``: 6 digits, ``K``/``M``/``G``/
  ``P``/``E`` are powers of ``kb_base`` (1024 assumed: fio's default; ``P`` is the 4th power, fio's own
  slip) and the digits after the point are not a fraction either.
* ``slat``/``clat``/``lat (nsec|usec|msec): min=, max=, avg=, stdev=``: min/max truncated to the unit
  printed (and to 6 digits: ``max=4248.6k``), avg/stdev to 0.01 of it.  fio 2.x prints µs or ms, 3.x ns,
  µs or ms.  ``clat percentiles (unit)``: fio 3.x rounds up to the unit printed, fio 2.x prints µs bins
  as they are and rounds up to ms.
* ``issued``: the exact IO count of each direction, the ``total_ios`` rows; with the runtime (exact, ms) it
  gives fio's own IOPS to all its digits: ``meta["derived"]`` (the ``iops`` row stays as printed).  The
  ``bw (KiB/s): … avg=`` line is the mean of the bandwidth samples, another quantity: ``meta["samples"]``.
* ``Run status group`` and ``Disk stats`` lines go to ``meta["run_status"]`` and ``meta["disk_util"]``.

**Terse** (fio stat.c ``show_thread_status_terse_all``/``show_ddir_status_terse``; HOWTO "Terse output"):
one ``;``-separated line per job.  v2 ``2;name;groupid;error`` (no fio version), v3–v5
``N;fio-X;name;groupid;error``; then per direction 41 fields (v5: 47): io KiB, bw KiB/s, IOPS, runtime ms
(integers, truncated), slat/clat min;max;mean;stdev µs, 20 ``P%=V`` clat percentiles (µs), lat
min;max;mean;stdev µs, bw min;max;agg%;mean;stdev KiB/s (v5: + samples, IOPS min;max;mean;stdev;samples).
Directions: v3 read, write; v2 (fio ≥ 2.0.10), v4, v5 read, write, trim; v2 before fio 2.0.10 read, write;
``unified_rw_reporting`` one ``mixed`` block (or the usual ones and a ``mixed`` one).  Then CPU (5), IO
depths (7), µs (10) and ms (12) latency buckets; v3+ disk utilisation (9 per disk); with
``continue_on_error`` two counts; the job description (v2: on the next line).  fio 3.x keeps ns and prints
``ns / 1000``: min, max and percentiles are truncated to µs, means keep 6 decimals (1e-3 ns).  Before fio
2.0.8 the terse bandwidth was bytes/ms (1000 B/s), not KiB/s.

A file holding several formats (``--output-format=normal,terse,json``): a fio JSON in it is read by
:mod:`.fio` (detection tries it first: the JSON is exact); without JSON, terse and normal lines together are
read as ``fio-terse`` (more digits) with the ``total_ios`` of the normal blocks, the two compared in
``meta["normal_terse_check"]``.  Neither format records job options: ``meta["workload"]`` holds only the
reporting groups (:func:`.fio_workload.workload`); the options fio prints before a run
(``name: (g=0): rw=…, bs=…, ioengine=…, iodepth=…``) are kept in ``meta["job_header"]``.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import IngestError, Parsed, check_line_lengths, summary_frame, text_lines
from .fio import unique_names
from .fio_workload import workload

KIND = "fio-text"
KINDS = ("fio-text", "fio-terse")
_LAT_KINDS = ("slat", "clat", "lat")
_NS = {"nsec": 1.0, "usec": 1e3, "msec": 1e6}

# ------------------------------------------------------------------------------------------ sniffing
_HEADER = re.compile(r"^(?P<name>.*?): \(groupid=(?P<gid>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)"
                     r"(?: \((?P<verr>.*?)\))?: pid=(?P<pid>\d+)(?::\s*(?P<time>.*?))?\s*$")
_RUN_STATUS = re.compile(r"^Run status group (?P<gid>\d+) \(all jobs\):\s*$")
_DISK_STATS = re.compile(r"^\s*Disk stats \(read/write\):\s*$")
_TERSE_START = re.compile(r"^(?:[345];fio-[^;\n]*;[^\n]*?;\d+;-?\d+;|2;[^;\n]*;\d+;-?\d+;)\d+;\d+;\d+;\d+;")
_SNIFF_NORMAL = re.compile(rb"^[^\n]*: \(groupid=\d+, jobs=\d+\): err=\s*-?\d+|^Run status group \d+ \(all jobs\):"
                           rb"|^[ \t]*Disk stats \(read/write\):", re.M)
_SNIFF_TERSE = re.compile(rb"^(?:[345];fio-[^;\n]*;[^\n]*?;\d+;-?\d+;|2;[^;\n]*;\d+;-?\d+;)\d+;\d+;\d+;\d+;[^\n]*%=",
                          re.M)


def sniff(head: bytes) -> str | None:
    """``fio-terse`` for a terse line (with or without normal output around it), ``fio-text`` for a normal
    job block, ``Run status group`` or ``Disk stats`` header; None otherwise, or when the text is quoted in a
    Markdown code fence (a README)."""
    if b"groupid=" not in head and b"%=" not in head and b"Run status" not in head and b"Disk stats" not in head:
        return None
    terse = _SNIFF_TERSE.search(head)
    normal = _SNIFF_NORMAL.search(head)
    first = min((m.start() for m in (terse, normal) if m), default=None)
    if first is None or b"```" in head[:first]:
        return None
    return "fio-terse" if terse else "fio-text"


# ------------------------------------------------------------------------------------------ numbers
_AMOUNT = re.compile(r"^(?P<num>\d+)(?:\.(?P<frac>\d+))?(?P<prefix>[kKMGTPE]i?)?(?P<unit>B|bit)?(?P<per>/s)?$")
_NEW_POWER = {"k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_IEC_POWER = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_OLD_POWER = {"K": 1, "M": 2, "G": 3, "P": 4, "E": 5}  # fio < 2.17 num2str: "", K, M, G, P, E


@dataclass
class _Era:
    """How this output's numbers were printed (from its syntax and, when printed, fio's version)."""
    old_style: bool = False          # fio < 2.17: "io=, bw=, iops=, runt=" lines, K/M/G in kb_base
    fraction: bool = True            # digits after the point are a decimal fraction (fio ≥ 2.20)


def _amount(text: str, era: _Era, binary: bool) -> tuple[float, float]:
    """A num2str value as printed (``12.3k``, ``41.0MiB/s``, ``3071.7MB``, ``666KB/s``) → (value in the base
    unit: count, B or B/s; bits become bytes; resolution: one unit of the last digit, or of the prefix when
    the digits after the point are not a fraction).  ``binary``: what fio < 2.17 means by K (kb_base 1024
    for sizes and rates, 1000 for counts).  ValueError for anything else."""
    m = _AMOUNT.match(text.strip())
    if m is None:
        raise ValueError(text)
    p = m["prefix"] or ""
    if era.old_style:
        if p.endswith("i") or p not in _OLD_POWER and p:
            raise ValueError(text)
        mult = float((1024 if binary else 1000) ** _OLD_POWER.get(p, 0))
    else:
        iec = p.endswith("i")  # fio ≥ 2.17 num2str: SI k, M, G … or IEC Ki, Mi, Gi …
        power = _IEC_POWER.get(p[:-1]) if iec else _NEW_POWER.get(p, 0 if not p else None)
        if power is None:
            raise ValueError(text)
        mult = float((1024 if iec else 1000) ** power)
    if m["unit"] == "bit":
        mult /= 8.0
    frac = m["frac"] or ""
    value = (int(m["num"]) + (int(frac) / 10 ** len(frac) if frac else 0.0)) * mult
    res = mult / 10 ** len(frac) if frac and era.fraction and not era.old_style else mult
    return value, res


_INT = re.compile(r"^\d+$")
_FLOAT = re.compile(r"^-?\d+(?:\.\d+)?$")
_PCT_FIELD = re.compile(r"^(?P<q>\d+(?:\.\d+)?)%=(?P<v>\d+)$")
_PERCENT = re.compile(r"^(?:-?\d+(?:\.\d+)?|-?nan|-?inf)%$")


def _pct_name(q: float) -> str | None:
    """A percentile (99.5) → its metric suffix (``p99.5``, as :mod:`.fio` names them); None outside (0, 100]."""
    return "p" + format(q, "g") if 0.0 < q <= 100.0 else None


def _version(text: str | None) -> tuple[int, ...] | None:
    """``fio-2.1.2`` / ``fio-3.33-12-gabc`` → (2, 1, 2) / (3, 33); None when not a version."""
    m = re.match(r"^fio-(\d+(?:\.\d+)*)", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


# ------------------------------------------------------------------------------------------ normal output
_DDIR_NEW = re.compile(r"^\s+(?P<ddir>read|write|trim|mixed)\s*: IOPS=(?P<iops>[^,\s]+), BW=(?P<bw>\S+) "
                       r"\((?P<bwalt>[^)]*)\)\((?P<io>[^/)]+)/(?P<runt>\d+)msec\)(?P<rest>.*)$")
_DDIR_OLD = re.compile(r"^\s+(?P<ddir>read|write|trim|mixed)\s*: io=\s*(?P<io>[^,\s]+), bw=\s*(?P<bw>[^,\s]+?)/s, "
                       r"iops=\s*(?P<iops>[^,\s]+)\s*, runt=\s*(?P<runt>\d+)msec\s*$")
_DDIR_ANY = re.compile(r"^\s+(?:read|write|trim|mixed)\s*: (?:IOPS|io)=")
_LAT = re.compile(r"^\s+(?P<lk>slat|clat|lat) \((?P<unit>nsec|usec|msec)\):\s*min=\s*(?P<min>\S+?),\s*max=\s*"
                  r"(?P<max>\S+?),\s*avg=\s*(?P<avg>\d+\.\d+),\s*stdev=\s*(?P<dev>\d+\.\d+)\s*$")
_LAT_ANY = re.compile(r"^\s+(?:slat|clat|lat) \((?:nsec|usec|msec)\):\s*min=")
_PCT_HEAD = re.compile(r"^\s+(?P<pre>.+?) percentiles \((?P<unit>nsec|usec|msec)\):\s*$")
_PCT_LINE = re.compile(r"^\s+\|(?P<body>.*)$")
_PCT_ENTRY = re.compile(r"\s*(?P<q>\d+(?:\.\d+)?)th=\[\s*(?P<v>\d+)\]\s*,?")
_SAMPLES = re.compile(r"^\s+(?P<what>bw|iops)\s*(?:\(\s*(?P<unit>[A-Za-z]+)\s*/s\))?\s*:\s*(?P<kv>min=.*)$")
_KV = re.compile(r"(?P<k>\w+)=\s*(?P<v>-?\d+(?:\.\d+)?|-?nan)%?")
_CPU = re.compile(r"^\s+cpu\s*: usr=(?P<usr>[\d.]+)%, sys=(?P<sys>[\d.]+)%, ctx=(?P<ctx>\d+), majf=(?P<majf>\d+), "
                  r"minf=(?P<minf>\d+)")
_ISSUED = re.compile(r"^\s+issued\b[^:]*:\s*total=(?P<tot>(?:[rwd]=)?\d+(?:[/,](?:[rwd]=)?\d+)*)")
_JOB_HEAD = re.compile(r"^(?P<name>.*?): \(g=(?P<gid>\d+)\): rw=(?P<rw>[^,]+), bs=(?P<bs>.*?), "
                       r"ioengine=(?P<engine>[^,]+), iodepth=(?P<depth>\d+)\s*$")
_GROUP_NEW = re.compile(r"^\s+(?P<ddir>READ|WRITE|TRIM|MIXED): bw=(?P<bw>\S+) \([^)]*\), (?P<bwmin>[^-\s]+)-"
                        r"(?P<bwmax>\S+) \([^)]*\), io=(?P<io>\S+) \([^)]*\), run=(?P<rmin>\d+)-(?P<rmax>\d+)msec")
_GROUP_OLD = re.compile(r"^\s+(?P<ddir>READ|WRITE|TRIM|MIXED): io=(?P<io>[^,\s]+), aggrb=(?P<bw>[^,\s]+?)/s, "
                        r"minb=(?P<bwmin>[^,\s]+?)/s, maxb=(?P<bwmax>[^,\s]+?)/s, mint=(?P<rmin>\d+)msec, "
                        r"maxt=(?P<rmax>\d+)msec")
_DISK = re.compile(r"^\s+(?P<dev>[^:\s][^:]*): ios=(?P<read_ios>\d+)/(?P<write_ios>\d+), "
                   r"(?:sectors=(?P<read_sectors>\d+)/(?P<write_sectors>\d+), )?merge=(?P<read_merges>\d+)/"
                   r"(?P<write_merges>\d+), ticks=(?P<read_ticks>\d+)/(?P<write_ticks>\d+), "
                   r"in_queue=(?P<in_queue>\d+), util=(?P<util>[\d.]+)%")
_VERSION_LINE = re.compile(r"^(fio-\d[\w.+\-]*)\s*$")
#: block lines not tabled: the latency buckets, IO depths, submit/complete, latency target, errors, description
_KNOWN = re.compile(r"^\s+(?:lat \((?:nsec|usec|msec)\)\s*:|IO depths\s*:|submit\s*:|complete\s*:|latency\s*:|"
                    r"errors\s*:|Description\s*:|(?:slat|clat|lat) prio |fsync/fdatasync/sync_file_range:|sync \()")


@dataclass
class _Dir:
    """One direction of a normal job block: (value, resolution) per metric, in the table's units."""
    values: dict[str, tuple[float, float]] = field(default_factory=dict)
    runtime_ms: int = 0


@dataclass
class _Job:
    name: str
    groupid: int
    members: int
    error: int
    line: int
    dirs: dict[str, _Dir] = field(default_factory=dict)
    totals: list[int] | None = None
    samples: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


@dataclass
class _Normal:
    jobs: list[_Job] = field(default_factory=list)
    run_status: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    disk_util: dict[str, dict[str, float]] = field(default_factory=dict)
    job_header: dict[str, dict[str, str]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    era: _Era = field(default_factory=_Era)


def _bad(path: Path, ln: int, what: str, line: str) -> IngestError:
    return IngestError(path, f"expected {what}, found {line.strip()[:80]!r}", line=ln)


def _latency(path: Path, ln: int, line: str, d: _Dir, era: _Era) -> None:
    m = _LAT.match(line)
    if m is None:
        raise _bad(path, ln, "'slat|clat|lat (nsec|usec|msec): min=N, max=N, avg=X.XX, stdev=X.XX'", line)
    unit = _NS[m["unit"]]
    lk = m["lk"]
    try:
        mn, rmn = _amount(m["min"], era, binary=False)
        mx, rmx = _amount(m["max"], era, binary=False)
    except ValueError:
        raise _bad(path, ln, f"{lk} min/max as fio prints them (a number, maybe k/M-suffixed)", line) from None
    d.values[f"{lk}_mean"] = (float(m["avg"]) * unit, 0.01 * unit)
    d.values[f"{lk}_stddev"] = (float(m["dev"]) * unit, 0.01 * unit)
    d.values[f"{lk}_min"] = (mn * unit, rmn * unit)
    d.values[f"{lk}_max"] = (mx * unit, rmx * unit)


def _percentiles(path: Path, lines: list[str], i: int, d: _Dir | None, lk: str | None, unit: float) -> int:
    """Read the ``|  1.00th=[  302], …`` lines after the percentile header ``lines[i]``; returns the index of
    the first line after them.  ``d``/``lk`` None: a block not tabled (sync, per-priority)."""
    j, n = i + 1, 0
    while j < len(lines) and (m := _PCT_LINE.match(lines[j])):
        pos = 0
        for e in _PCT_ENTRY.finditer(m["body"]):
            if e.start() != pos:
                break
            pos = e.end()
            name = _pct_name(float(e["q"]))
            if name is None:
                raise _bad(path, j + 1, "percentiles in (0, 100]", lines[j])
            n += 1
            if d is not None and lk is not None:
                d.values[f"{lk}_{name}"] = (int(e["v"]) * unit, unit)
        if m["body"][pos:].strip():
            raise _bad(path, j + 1, "percentile entries 'NN.NNth=[ value]'", lines[j])
        j += 1
    if not n:
        raise _bad(path, i + 2, "the percentile lines ('|  1.00th=[  302], …') after the header",
                   lines[i + 1] if i + 1 < len(lines) else "the end of the file")
    return j


def _samples(m: re.Match) -> dict[str, float]:
    """The ``bw (KiB/s): min=…`` / ``iops : min=…`` sample statistics (bw in B/s)."""
    scale = 1.0
    if m["what"] == "bw":
        unit = (m["unit"] or "KiB").strip()
        scale = {"KiB": 1024.0, "KB": 1024.0, "kB": 1000.0, "MiB": 1024.0 ** 2, "MB": 1024.0 ** 2,
                 "Kibit": 128.0, "kbit": 125.0, "Kbit": 128.0, "Mibit": 1024.0 ** 2 / 8}.get(unit, float("nan"))
    out = {}
    for kv in _KV.finditer(m["kv"]):
        k, v = kv["k"], float(kv["v"])
        out[f"{m['what']}_{k}"] = v if k in ("per", "samples") else v * scale
    return out


def _ddir_line(path: Path, ln: int, line: str, era: _Era) -> tuple[str, _Dir]:
    m = _DDIR_NEW.match(line)
    old = False
    if m is None:
        m = _DDIR_OLD.match(line)
        old = m is not None
    if m is None:
        raise _bad(path, ln, "'<ddir>: IOPS=N, BW=R (R)(S/Nmsec)' (fio ≥ 2.17) or "
                             "'<ddir>: io=S, bw=R/s, iops=N, runt=Nmsec' (fio < 2.17)", line)
    if old and not era.old_style:
        era.old_style, era.fraction = True, False
    d = _Dir()
    try:
        iops, r_iops = _amount(m["iops"], era, binary=False)
        bw, r_bw = _amount(m["bw"], era, binary=True)
        io, r_io = _amount(m["io"], era, binary=True)
    except ValueError:
        raise _bad(path, ln, "IOPS, bandwidth and size as fio's num2str prints them (e.g. 12.3k, 41.0MiB/s, "
                             "123MiB)", line) from None
    d.runtime_ms = int(m["runt"])
    d.values["iops"] = (iops, r_iops)
    d.values["bw"] = (bw, r_bw)
    d.values["io_bytes"] = (io, r_io)
    d.values["runtime"] = (d.runtime_ms / 1000.0, 0.001)
    return m["ddir"], d


def _normal(path: Path, lines: list[str], skip: set[int], version: tuple[int, ...] | None) -> _Normal:
    """The normal output's job blocks, run-status and disk lines (``skip``: indices of lines of other
    formats: terse, JSON)."""
    out = _Normal()
    if version is not None and version < (2, 20):
        out.era.fraction = False
    job: _Job | None = None
    cur: _Dir | None = None
    section = None  # "group" / "disk" after their headers
    group = None
    i, n = 0, len(lines)

    def close(at: int) -> None:
        nonlocal job
        if job is not None and job.totals is None:
            raise IngestError(path, f"expected the job block of {job.name!r} (line {job.line}) to go on to its "
                                    "'issued' line: the output is cut inside that block", line=at + 1)
        job = None

    while i < n:
        line = lines[i]
        if i in skip:
            close(i)
            section = None
            i += 1
            continue
        if (m := _HEADER.match(line)) is not None:
            close(i)
            section = None
            job = _Job(m["name"], int(m["gid"]), int(m["jobs"]), int(m["err"]), i + 1)
            out.jobs.append(job)
            cur = None
            i += 1
            continue
        if (m := _RUN_STATUS.match(line)) is not None:
            close(i)
            section, group = "group", out.run_status.setdefault(m["gid"], {})
            i += 1
            continue
        if _DISK_STATS.match(line):
            close(i)
            section = "disk"
            i += 1
            continue
        indented = line[:1].isspace()
        if job is not None and indented:
            if _DDIR_ANY.match(line):
                ddir, cur = _ddir_line(path, i + 1, line, out.era)
                if ddir in job.dirs:
                    raise _bad(path, i + 1, f"one {ddir} line per job block", line)
                job.dirs[ddir] = cur
            elif _LAT_ANY.match(line):
                if cur is None:
                    raise _bad(path, i + 1, "a read/write/trim line before the latencies", line)
                _latency(path, i + 1, line, cur, out.era)
            elif (h := _PCT_HEAD.match(line)) is not None:
                pre = h["pre"].strip()
                tabled = pre in _LAT_KINDS and cur is not None
                i = _percentiles(path, lines, i, cur if tabled else None, pre if tabled else None, _NS[h["unit"]])
                continue
            elif (s := _SAMPLES.match(line)) is not None:
                if cur is not None:
                    job.samples.setdefault(list(job.dirs)[-1], {}).update(_samples(s))
            elif (c := _CPU.match(line)) is not None:
                job.cpu = {k: float(v) for k, v in c.groupdict().items()}
                cur = None
            elif (t := _ISSUED.match(line)) is not None:
                job.totals = [int(x.split("=")[-1]) for x in re.split(r"[/,]", t["tot"])]
                cur = None
            elif line.strip() and not _KNOWN.match(line) and len(out.unread) < 20:
                out.unread.append(f"{i + 1}: {line.strip()[:100]}")
            i += 1
            continue
        if job is not None and line.strip():
            close(i)  # a line that is not part of a block (fio's own messages, another format)
        if section == "group" and indented and (g := _GROUP_NEW.match(line) or _GROUP_OLD.match(line)):
            old = g.re is _GROUP_OLD
            if old and not out.era.old_style:
                out.era.old_style, out.era.fraction = True, False
            try:
                group[g["ddir"].lower()] = {
                    "bw": _amount(g["bw"] + ("/s" if old else ""), out.era, True)[0],
                    "bw_min": _amount(g["bwmin"] + ("/s" if old else ""), out.era, True)[0],
                    "bw_max": _amount(g["bwmax"] + ("/s" if old else ""), out.era, True)[0],
                    "io_bytes": _amount(g["io"], out.era, True)[0],
                    "runtime_min": int(g["rmin"]) / 1000.0, "runtime_max": int(g["rmax"]) / 1000.0}
            except ValueError:
                out.unread.append(f"{i + 1}: {line.strip()[:100]}")
        elif section == "disk" and indented and (d := _DISK.match(line)):
            dev = d["dev"].strip()
            out.disk_util[dev] = {k: (float(v) / 100.0 if k == "util" else int(v))
                                  for k, v in d.groupdict().items() if k != "dev" and v is not None}
        elif (h := _JOB_HEAD.match(line)) is not None:
            out.job_header[h["name"]] = {"groupid": h["gid"], "rw": h["rw"], "bs": h["bs"],
                                         "ioengine": h["engine"], "iodepth": h["depth"]}
        elif line.strip() and section is not None and indented:
            if len(out.unread) < 20:
                out.unread.append(f"{i + 1}: {line.strip()[:100]}")
        elif line.strip():
            section = None
        i += 1
    close(n - 1)
    return out


# ------------------------------------------------------------------------------------------ terse output
_LAYOUTS = {2: (("read", "write", "trim"), ("read", "write")), 3: (("read", "write"),),
            4: (("read", "write", "trim"),), 5: (("read", "write", "trim"),)}
_TAIL = 5 + 7 + 10 + 12  # CPU, IO depths, µs and ms latency buckets


def _kinds_ok(f: list[str], i: int, ver: int) -> int | None:
    """The index (relative to ``i``) of the first field of a direction block at ``f[i]`` that is not where
    terse v``ver`` puts it; None when all are."""
    ints = (0, 1, 2, 3, 4, 5, 8, 9, 32, 33, 36, 37) + ((41, 42, 43, 46) if ver == 5 else ())
    floats = (6, 7, 10, 11, 34, 35, 39, 40) + ((44, 45) if ver == 5 else ())
    for k in ints:
        if not _INT.match(f[i + k]):
            return k
    for k in floats:
        if not _FLOAT.match(f[i + k]) and f[i + k] not in ("nan", "-nan"):
            return k
    for k in range(12, 32):
        if not _PCT_FIELD.match(f[i + k]):
            return k
    return None if _PERCENT.match(f[i + 38]) else 38


def _after_ok(f: list[str], j: int) -> int | None:
    """The first field of the CPU/depth/latency-bucket part at ``f[j]`` out of place; None when all fit."""
    for k in range(_TAIL):
        ok = _INT.match(f[j + k]) if 2 <= k <= 4 else _PERCENT.match(f[j + k])
        if not ok:
            return k
    return None


@dataclass
class _TerseJob:
    ver: int
    name: str
    groupid: int
    error: int
    version: str | None
    line: int
    blocks: list[tuple[str, list[str]]]
    tail: dict[str, Any]


def _terse_line(path: Path, ln: int, line: str) -> _TerseJob:
    """One terse record: the layout of its version whose fields all sit where fio puts them (plain, or
    ``unified_rw_reporting``'s ``mixed`` block alone or after the others)."""
    f = line.rstrip("\r").split(";")
    ver = int(f[0]) if f[0] in ("2", "3", "4", "5") else None
    if ver is None:
        raise _bad(path, ln, "a terse line starting with its version (2-5)", line)
    head, block = (4 if ver == 2 else 5), (47 if ver == 5 else 41)
    if len(f) < head + 1 or (ver != 2 and not f[1].startswith("fio")):
        raise _bad(path, ln, f"'{ver};fio-<version>;jobname;groupid;error;…' (terse v{ver})", line)
    if not (_INT.match(f[head - 2]) and re.match(r"^-?\d+$", f[head - 1])):
        raise _bad(path, ln, f"terse v{ver}: groupid and error (integers) after the job name", line)
    plain = _LAYOUTS[ver]
    for lay in plain + (("mixed",),) + tuple(lay + ("mixed",) for lay in plain):
        need = head + len(lay) * block + _TAIL
        if len(f) < need or any(_kinds_ok(f, head + b * block, ver) is not None for b in range(len(lay))) \
                or _after_ok(f, head + len(lay) * block) is not None:
            continue
        cpu = f[need - _TAIL: need - _TAIL + 5]
        blocks = [(d, f[head + b * block: head + (b + 1) * block]) for b, d in enumerate(lay)]
        return _TerseJob(ver, f[head - 3], int(f[head - 2]), int(f[head - 1]), f[1] if ver != 2 else None, ln,
                         blocks, {"cpu": cpu, **_terse_tail(path, ln, f[need:], ver)})
    need = head + len(plain[0]) * block + _TAIL
    if len(f) < need:
        raise IngestError(path, f"expected a terse v{ver} line of at least {need} ';'-separated fields (fio stat.c's "
                                f"layout), found {len(f)}: a cut or damaged line", line=ln)
    k = next((head + b * block + k for b in range(len(plain[0]))
              if (k := _kinds_ok(f, head + b * block, ver)) is not None), None)
    if k is None:
        k = need - _TAIL + _after_ok(f, need - _TAIL)
    raise IngestError(path, f"expected terse v{ver}'s fields in fio's order: field {k + 1} ({f[k][:30]!r}) is not "
                            f"what v{ver} prints there ({len(f)} fields: one missing or extra?)", line=ln)


def _terse_tail(path: Path, ln: int, rest: list[str], ver: int) -> dict[str, Any]:
    """Disk utilisation groups (v3+: name; 7 counts; util%), then ``continue_on_error``'s two counts, then
    the description (whatever is left)."""
    disks: dict[str, dict[str, float]] = {}
    i = 0
    keys = ("read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue")
    while ver >= 3 and len(rest) - i >= 1 and rest[i] and not _FLOAT.match(rest[i]) and i + 1 < len(rest) \
            and _INT.match(rest[i + 1]):
        g = rest[i:i + 9]
        if len(g) < 9 or not all(_INT.match(x) for x in g[1:8]) or not _PERCENT.match(g[8]):
            raise _bad(path, ln, "disk utilisation as 'name;7 counts;util%' after the latency buckets",
                       ";".join(rest[i:i + 9]))
        name = g[0] if g[0] != "slaves" else f"{list(disks)[-1] if disks else ''}/slaves"
        disks[name] = {**{k: int(v) for k, v in zip(keys, g[1:8])}, "util": float(g[8][:-1]) / 100.0}
        i += 9
    out: dict[str, Any] = {"disk_util": disks}
    if len(rest) - i >= 2 and _INT.match(rest[i]) and re.match(r"^-?\d+$", rest[i + 1]):
        out["errors"] = {"total": int(rest[i]), "first": int(rest[i + 1])}
        i += 2
    if i < len(rest) and (desc := ";".join(rest[i:])):
        out["description"] = desc
    return out


def _terse_rows(tj: _TerseJob, name: str, bw_unit: float, rows: list, samples: dict, unmeasured: set) -> None:
    """A terse job's rows: per direction used, io (KiB → B), bw (KiB/s → B/s), IOPS, runtime (ms → s),
    latencies and percentiles (µs → ns); the bandwidth/IOPS sample statistics into ``samples``."""
    for ddir, b in tj.blocks:
        io_kib, bw, iops, runt = (int(x) for x in b[:4])
        if not (io_kib or bw or iops or runt):
            continue
        rows += [(name, ddir, "iops", float(iops), "1/s"), (name, ddir, "bw", bw * bw_unit, "B/s"),
                 (name, ddir, "io_bytes", io_kib * 1024.0, "B"), (name, ddir, "runtime", runt / 1000.0, "s")]
        for lk, at in (("slat", 4), ("clat", 8), ("lat", 32)):
            mn, mx, mean, dev = int(b[at]), int(b[at + 1]), float(b[at + 2]), float(b[at + 3])
            if not (mn or mx or mean):
                unmeasured.add(lk)  # fio prints zeros for a latency it did not measure
                continue
            rows += [(name, ddir, f"{lk}_mean", mean * 1e3, "ns"), (name, ddir, f"{lk}_stddev", dev * 1e3, "ns"),
                     (name, ddir, f"{lk}_min", mn * 1e3, "ns"), (name, ddir, f"{lk}_max", mx * 1e3, "ns")]
            if lk == "clat":
                for p in b[12:32]:
                    m = _PCT_FIELD.match(p)
                    pn = _pct_name(float(m["q"]))
                    if pn is not None:
                        rows.append((name, ddir, f"clat_{pn}", int(m["v"]) * 1e3, "ns"))
        s = {"bw_min": int(b[36]) * 1024.0, "bw_max": int(b[37]) * 1024.0, "bw_agg": _num(b[38][:-1]),
             "bw_mean": float(b[39]) * 1024.0, "bw_dev": float(b[40]) * 1024.0}
        if len(b) == 47:
            s.update(bw_samples=int(b[41]), iops_min=int(b[42]), iops_max=int(b[43]), iops_mean=float(b[44]),
                     iops_stddev=float(b[45]), iops_samples=int(b[46]))
        samples.setdefault(name, {})[ddir] = s


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _terse_bw_unit(tj: _TerseJob) -> tuple[float, str]:
    """B/s per printed bandwidth unit: KiB/s, except fio < 2.0.8 (bytes/ms = 1000 B/s; fio commit
    "Fix terse bandwidth").  Terse v2 names no version: told from the fields (bw against io/runtime)."""
    v = _version(tj.version)
    if v is not None:
        return (1000.0, "bytes/ms (fio < 2.0.8)") if v < (2, 0, 8) else (1024.0, "KiB/s")
    for _, b in tj.blocks:
        io_kib, bw, _, runt = (int(x) for x in b[:4])
        if runt and io_kib * 1000 // runt > 200:  # enough digits to tell 1000 from 1024
            kib, old = io_kib * 1000 / runt, io_kib * 1024 / runt
            if abs(bw - kib) <= 1 + 0.004 * kib:
                return 1024.0, "KiB/s (terse v2: bw agrees with io/runtime in KiB/s)"
            if abs(bw - old) <= 1 + 0.004 * old:
                return 1000.0, "bytes/ms (terse v2 of fio < 2.0.8: bw agrees with io/runtime in bytes/ms)"
    return 1024.0, "KiB/s (terse v2 names no fio version; assumed: fio ≥ 2.0.8)"


def _terse_offset(line: str) -> int | None:
    """Where a terse record starts in ``line``: 0, or after a description fio 2.x wrote at the start of the
    line (``;desc3;fio-2.1.2;…``: v3/v4 put a job's description on the next line, then the next record);
    None when the line holds none.  A line that starts like one (``3;fio-``) is one, to fail when damaged."""
    if _TERSE_START.match(line) or re.match(r"^[345];fio-", line):
        return 0
    if line.startswith(";") and (m := re.search(r"[345];fio-", line)) and _TERSE_START.match(line[m.start():]):
        return m.start()
    return None


def _terse(path: Path, lines: list[str], json_at: set[int]) -> tuple[list[_TerseJob], set[int]]:
    """The terse records of the file (line indices outside the JSON), with their descriptions: v2 (and fio
    2.x v3/v4) write it on the line after the record, ``;desc``."""
    jobs: list[_TerseJob] = []
    used: set[int] = set()
    for i, line in enumerate(lines):
        if i in json_at or _HEADER.match(line):
            continue
        off = _terse_offset(line)
        if off is None:
            if line.startswith(";") and jobs and jobs[-1].line == i:  # the description line of the record above
                if line[1:].strip():
                    jobs[-1].tail.setdefault("description", line[1:].rstrip("\r"))
                used.add(i)
            continue
        if off and jobs and jobs[-1].line == i:
            jobs[-1].tail.setdefault("description", line[1:off])
        jobs.append(_terse_line(path, i + 1, line[off:]))
        used.add(i)
    return jobs, used


# ------------------------------------------------------------------------------------------ the file
def _json_lines(text: str, lines: list[str]) -> tuple[set[int], int | None]:
    """Line indices of a fio JSON document inside the text (``--output-format=json,normal``), and its first
    line (1-based); to the end of the file when it does not decode (cut)."""
    m = re.search(r'^\{\s*"fio version"', text, re.M)
    if m is None:
        return set(), None
    first = text.count("\n", 0, m.start())
    try:
        _, end = json.JSONDecoder().raw_decode(text[m.start():])
        last = text.count("\n", 0, m.start() + end)
    except (json.JSONDecodeError, RecursionError):
        last = len(lines) - 1
    return set(range(first, last + 1)), first + 1


def parse(path: str | Path, data: bytes) -> Parsed:
    """A fio normal and/or terse output (fio 2.0–3.x): the rows of :mod:`.fio`, ``meta`` as module docstring."""
    path = Path(path)
    if b"\x00" in data:
        raise IngestError(path, "expected fio text output, found a NUL byte",
                          line=data.count(b"\n", 0, data.index(b"\x00")) + 1)
    check_line_lengths(path, data, "fio text output")
    text = data.decode("utf-8", errors="replace")
    lines, incomplete = text_lines(text)
    cut = len(lines) + 1 if incomplete else None  # the last line has no newline: read, but a record it cuts fails
    if cut is not None:
        lines = text.split("\n")
    json_at, json_first = _json_lines(text, lines)
    try:
        tjobs, terse_used = _terse(path, lines, json_at)
        version = next((tj.version for tj in tjobs if tj.version), None) or next(
            (m.group(1) for ln in lines[:200] if (m := _VERSION_LINE.match(ln))), None)
        normal = _normal(path, lines, json_at | terse_used, _version(version))
    except IngestError as e:
        if cut is not None and e.line in (cut, cut + 1):
            raise IngestError(path, f"the file ends inside line {cut} (no newline after it: cut): {e.message}",
                              line=e.line) from None
        raise
    if not tjobs and not normal.jobs and not normal.run_status and not normal.disk_util:
        raise IngestError(path, "expected fio normal output (a 'name: (groupid=N, jobs=N): err=…' block, "
                                "'Run status group') or terse lines ('3;fio-…;')", line=1)
    return _result(path, lines, tjobs, normal, version, json_first, incomplete)


def _result(path: Path, lines: list[str], tjobs: list[_TerseJob], normal: _Normal, version: str | None,
            json_first: int | None, incomplete: list[str]) -> Parsed:
    source = str(path)
    n_names = unique_names([j.name for j in normal.jobs])
    meta: dict[str, Any] = {"tool": "fio", "tool_version": version}
    if tjobs:
        names = unique_names([tj.name for tj in tjobs])
        rows = _terse_meta(tjobs, names, normal, meta)
        if normal.jobs:
            rows += _normal_totals(normal, n_names, names, meta)
            meta["normal_terse_check"] = _check(rows, normal, n_names, names)
            meta["derived"] = _derived(normal, n_names)
    else:
        names = n_names
        rows = _normal_rows(normal, names)
        meta.update(format="normal", jobs=names, groups={n: j.groupid for n, j in zip(names, normal.jobs)},
                    job_errors={n: j.error for n, j in zip(names, normal.jobs) if j.error},
                    members={n: j.members for n, j in zip(names, normal.jobs)},
                    samples={n: j.samples for n, j in zip(names, normal.jobs) if j.samples},
                    cpu={n: j.cpu for n, j in zip(names, normal.jobs) if j.cpu},
                    disk_util=normal.disk_util,
                    resolution={n: {d: {k: r for k, (_, r) in v.values.items()} for d, v in j.dirs.items()}
                                for n, j in zip(names, normal.jobs)},
                    derived=_derived(normal, names), precision=_normal_precision(normal.era))
        if normal.era.old_style:
            meta["kb_base_assumed"] = 1024
    meta.update(run_status=normal.run_status, job_header=normal.job_header, unread_lines=normal.unread,
                workload=_workload(names, meta["groups"], version))
    if json_first is not None:
        meta["json_at_line"] = json_first
        meta["note"] = ("fio JSON is in this file too: detection reads the file as fio-json (exact values); "
                        "these rows come from its text parts")
    first = min([tj.line for tj in tjobs] + [j.line for j in normal.jobs] + [len(lines) + 1]
                + [i + 1 for i, ln in enumerate(lines[:2000]) if _RUN_STATUS.match(ln) or _DISK_STATS.match(ln)]) - 1
    preamble = "\n".join(ln for ln in lines[:first] if ln.strip()).strip()
    meta["preamble"] = preamble[:2000] or None
    meta["interrupted"] = any("terminating on signal" in ln for ln in lines)
    meta["incomplete"] = incomplete
    partial = meta["interrupted"] or bool(meta["job_errors"]) or bool(incomplete)
    return Parsed(path=source, kind="fio-terse" if tjobs else "fio-text", meta=meta,
                  summary=summary_frame(source, rows), partial=partial)


def _terse_meta(tjobs: list[_TerseJob], names: list[str], normal: _Normal, meta: dict[str, Any]) -> list[tuple]:
    """The terse records' rows, and their ``meta``."""
    rows: list[tuple[str, str, str, float, str]] = []
    samples: dict[str, Any] = {}
    unmeasured: set[str] = set()
    units = set()
    for tj, name in zip(tjobs, names):
        unit, why = _terse_bw_unit(tj)
        units.add(why)
        _terse_rows(tj, name, unit, rows, samples, unmeasured)
    fmt = "+".join(f"terse-v{v}" for v in sorted({tj.ver for tj in tjobs})) + ("+normal" if normal.jobs else "")
    cpu = {n: {"usr": _num(tj.tail["cpu"][0][:-1]), "sys": _num(tj.tail["cpu"][1][:-1]), "ctx": int(tj.tail["cpu"][2]),
               "majf": int(tj.tail["cpu"][3]), "minf": int(tj.tail["cpu"][4])} for n, tj in zip(names, tjobs)}
    meta.update(
        format=fmt, jobs=names, groups={n: tj.groupid for n, tj in zip(names, tjobs)},
        job_errors={n: tj.error for n, tj in zip(names, tjobs) if tj.error},
        samples=samples, cpu=cpu, latency_not_measured=sorted(unmeasured), bw_unit=sorted(units),
        disk_util=next((tj.tail["disk_util"] for tj in tjobs if tj.tail.get("disk_util")), normal.disk_util),
        continue_on_error={n: tj.tail["errors"] for n, tj in zip(names, tjobs) if "errors" in tj.tail},
        descriptions={n: tj.tail["description"] for n, tj in zip(names, tjobs) if "description" in tj.tail},
        resolution={"iops": 1.0, "bw": 1024.0, "io_bytes": 1024.0, "runtime": 0.001, "lat_min_max": 1000.0,
                    "lat_mean_stddev": 0.001, "percentiles": 1000.0},
        precision=("terse: io KiB, bw KiB/s, IOPS and runtime ms are integers (truncated); latencies µs: min, max "
                   "and percentiles integers (fio 3.x: ns / 1000, truncated), mean and stdev 6 decimals; the "
                   "percentiles are clat's unless the job set lat_percentiles=1 (not recorded in terse)"))
    return rows


_TAKES_GROUPS = "groups" in inspect.signature(workload).parameters


def _workload(jobs: list[str], groups: dict[str, int], version: str | None) -> dict[str, Any]:
    """:func:`.fio_workload.workload` of a text output: no options recorded, so only the reporting groups."""
    return workload({}, {}, jobs, version, groups=groups) if _TAKES_GROUPS else workload({}, {}, jobs, version)


def _normal_rows(normal: _Normal, names: list[str]) -> list[tuple[str, str, str, float, str]]:
    """Rows of the normal blocks: per direction iops, bw, io_bytes, total_ios (the issued count), runtime,
    then each latency kind's moments and percentiles, in the units of :mod:`.base`."""
    unit = {"iops": "1/s", "bw": "B/s", "io_bytes": "B", "runtime": "s"}
    rows = []
    for name, job in zip(names, normal.jobs):
        for ddir, d in job.dirs.items():
            for k in ("iops", "bw", "io_bytes"):
                rows.append((name, ddir, k, d.values[k][0], unit[k]))
            tot = _total(job, ddir)
            if tot is not None:
                rows.append((name, ddir, "total_ios", float(tot), "count"))
            rows.append((name, ddir, "runtime", d.values["runtime"][0], "s"))
            for k, (v, _) in d.values.items():
                if k not in unit:
                    rows.append((name, ddir, k, v, "ns"))
    return rows


def _total(job: _Job, ddir: str) -> int | None:
    """The issued count of a direction (``total=r,w,t[,s]`` or ``r=/w=/d=``); None for ``mixed``."""
    i = {"read": 0, "write": 1, "trim": 2}.get(ddir)
    return job.totals[i] if job.totals is not None and i is not None and i < len(job.totals) else None


def _derived(normal: _Normal, names: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """fio's IOPS to all its digits: the issued count over the runtime (both printed exactly)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, job in zip(names, normal.jobs):
        for ddir, d in job.dirs.items():
            tot = _total(job, ddir)
            if tot is not None and d.runtime_ms:
                out.setdefault(name, {})[ddir] = {"iops": tot * 1000.0 / d.runtime_ms}
    return out


def _normal_precision(era: _Era) -> str:
    if era.old_style:
        return ("normal, fio < 2.17: io/bw/iops with up to 6 digits; K/M/G/P are powers of kb_base (1024 assumed); "
                "digits after the point are not a decimal fraction: a value is known to one unit of its prefix; "
                "latency min/max truncated to the unit printed, avg/stdev to 0.01 of it")
    frac = "" if era.fraction else "; before fio 2.20 the digits after the point are not a decimal fraction"
    return ("normal, fio ≥ 2.17: IOPS/BW/io with 4 significant digits (num2str; fio ≥ 3.7 significant_figures), "
            "SI/IEC prefixes as printed; latency min/max truncated to the unit printed, avg/stdev to 0.01 of it; "
            "fio 3.x percentiles rounded up to the unit printed" + frac)


def _normal_totals(normal: _Normal, n_names: list[str], t_names: list[str], meta: dict) -> list[tuple]:
    """``total_ios`` rows from the normal blocks of a file that also holds the terse lines, when both list the
    same jobs in the same order."""
    if n_names != t_names:
        meta["normal_jobs_differ"] = {"normal": n_names, "terse": t_names}
        return []
    rows = []
    for name, job in zip(n_names, normal.jobs):
        for ddir in job.dirs:
            tot = _total(job, ddir)
            if tot is not None:
                rows.append((name, ddir, "total_ios", float(tot), "count"))
    return rows


def _check(rows: list[tuple], normal: _Normal, n_names: list[str], t_names: list[str]) -> dict[str, Any]:
    """The normal blocks' values against the terse rows of the same file: each within the two resolutions."""
    if n_names != t_names:
        return {"compared": 0}
    terse = {(r[0], r[1], r[2]): r[3] for r in rows}
    res_t = {"iops": 1.0, "bw": 1024.0, "io_bytes": 1024.0, "runtime": 0.001}
    bad, n = [], 0
    for name, job in zip(n_names, normal.jobs):
        for ddir, d in job.dirs.items():
            for k, (v, r) in d.values.items():
                t = terse.get((name, ddir, k))
                if t is None:
                    continue
                rt = res_t.get(k, 1000.0 if not k.endswith(("_mean", "_stddev")) else 0.001)
                n += 1
                if abs(t - v) > r + rt:
                    bad.append({"job": name, "ddir": ddir, "metric": k, "terse": t, "normal": v})
    return {"compared": n, "mismatches": bad[:20], "ok": not bad}

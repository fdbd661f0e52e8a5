"""Whether a file holds all that its run's record says was written: a cut at a record boundary.

A file cut exactly at a line (JSONL) or at a record (a binary block trace) reads cleanly: only what the
capture recorded of it beside the file can tell.  ``capture/`` writes, in each run's ``run.json``:

- ``cpu.wall_s``: the wall time (s) over which the run's 1 Hz monitor wrote ``sysutil.jsonl``
  (``capture/ceph/monitor.py`` ``SysMon`` and ``CpuAccount``, ``capture/block/cpu.py``).  The monitor
  writes its first line one interval after it starts and its last when it is stopped, so the log covers
  ``span + interval`` = ``wall_s`` (over the 1,696 sysutil logs of data/raw: 0.001–0.064 s less).
- ``trace.bytes``: the bytes the block tracer wrote into ``trace.blktrace`` (``capture/block/system.py``);
  ``<phase>.trace.bytes`` for ``trace-<phase>.blktrace`` (``capture/block/rados.py``).  Equal to the file's
  uncompressed size in all 48 traces of data/raw.

:func:`shortfall` says why a file holds less, or None.  Files without such a record (anyone else's) are
not checked here; their readers' own checks (a truncated last line or record) still apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed
from .compress import open_stream
from .discovery import plain_name

#: the kinds :func:`shortfall` checks
CHECKED_KINDS = ("sysutil", "blktrace")
#: a sysutil log may end this many intervals before its run's wall time (measured: at most 0.064 s)
SYSUTIL_SLACK_INTERVALS = 0.5


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def _sysutil(parsed: Parsed, record: dict[str, Any]) -> str | None:
    cpu = record.get("cpu")
    wall = _number(cpu.get("wall_s")) if isinstance(cpu, dict) else None
    span, interval = _number(parsed.meta.get("span_s")), _number(parsed.meta.get("interval_s"))
    if wall is None or span is None or interval is None or not interval > 0:
        return None
    covered = span + interval
    if wall - covered <= SYSUTIL_SLACK_INTERVALS * interval:
        return None
    return (f"its lines cover {covered:.4g} s, the monitor ran {wall:.4g} s (run.json cpu.wall_s; one line per "
            f"{interval:.3g} s): the log was cut")


def _trace_record(record: dict[str, Any], name: str) -> tuple[str, dict[str, Any]] | None:
    """(where in run.json, the trace record) for a trace file of that name, or None."""
    stem = plain_name(name)
    stem = stem[:-len(".blktrace")] if stem.endswith(".blktrace") else stem
    if stem == "trace":
        tr = record.get("trace")
        return ("trace", tr) if isinstance(tr, dict) else None
    if stem.startswith("trace-"):
        phase = record.get(stem[len("trace-"):])
        tr = phase.get("trace") if isinstance(phase, dict) else None
        return (f"{stem[len('trace-'):]}.trace", tr) if isinstance(tr, dict) else None
    return None


def _uncompressed_size(path: Path) -> int:
    n = 0
    with open_stream(path) as f:
        while chunk := f.read(1 << 20):
            n += len(chunk)
    return n


def _blktrace(parsed: Parsed, record: dict[str, Any], path: Path, data: bytes | None) -> str | None:
    found = _trace_record(record, path.name)
    if found is None:
        return None
    where, tr = found
    want = tr.get("bytes")
    if not isinstance(want, int) or isinstance(want, bool) or want <= 0:
        return None
    have = len(data) if data is not None else _uncompressed_size(path)
    parsed.meta["recorded_bytes"] = {"run.json": where, "bytes": want, "file_bytes": have}
    if have >= want:
        return None
    return (f"it holds {have:,} bytes of the {want:,} the tracer wrote (run.json {where}.bytes; "
            f"{100 * have / want:.0f} %): the trace was cut")


def shortfall(parsed: Parsed, path: Path, record: dict[str, Any] | None, data: bytes | None = None) -> str | None:
    """Why ``parsed`` (read from ``path``; ``data`` its uncompressed content when the caller holds it)
    holds less than its run's ``record`` (run.json as a dict) says was written, or None."""
    if not record:
        return None
    if parsed.kind == "sysutil":
        return _sysutil(parsed, record)
    if parsed.kind == "blktrace":
        return _blktrace(parsed, record, path, data)
    return None


def mark_partial(parsed: Parsed, why: str) -> None:
    """``parsed`` partial, ``why`` added to the reasons its reader gave (``incomplete`` or ``partial_reason``)."""
    parsed.partial = True
    meta = parsed.meta
    if isinstance(meta.get("incomplete"), list):
        meta["incomplete"].append(why)
    elif meta.get("partial_reason"):
        meta["partial_reason"] = f"{meta['partial_reason']}; {why}"
    else:
        meta["partial_reason"] = why

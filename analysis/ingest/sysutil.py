"""Reader for the capture's 1 Hz system-utilisation log (``sysutil.jsonl``, ``capture/ceph/monitor.py``).

One JSON object per line, written once a second from /proc (Linux ≥ 4.18 field layout):
``{"t": unix s, "cpu": {"cpu0": busy fraction, …}, "iowait": {"cpu0": fraction, …},
"steal": {"cpu0": fraction, …} (optional), "mem": {"MemTotal": B, "MemAvailable": B, "Cached": B}, "disk": {"vda": {"reads", "read_B", "writes",
"write_B", "io_ms"}, …}, "load": 1-min load average}``.  CPU fractions are of the interval since the
previous line; disk figures are /proc/diskstats deltas over that interval, and a device idle for the
whole interval is left out of the line (read here as zero).  Optional ``"osd": {"osd.0": {"queued": ops,
"in_flight": ops, "cpu": fraction of one CPU}, …}`` (``capture/ceph/opqueue.py``, from the admin
socket; null where a sample failed, read as NaN, never as 0), with ``"pool_in_flight"`` when the capture
watched one pool (RGW's bucket index: ``capture/rgw``); optional ``"proc": {"radosgw": {"cpu": fraction of
one CPU}}``.

Time base: ``t_s`` = seconds since the first line (``meta["t0_unix"]``); a run's ``run.json`` anchors
(unix s) align it with fio's and the timeline's clocks (same host clock).

Series (``ddir`` ""): ``cpu_busy``, ``cpu_iowait`` and ``cpu_steal`` (ratio, job = ``cpuN``);
per OSD (job = ``osd.N``) ``osd_queued``, ``osd_in_flight`` and ``osd_pool_in_flight`` (count) and
``osd_cpu`` (ratio); per watched process (job = its name) ``proc_cpu`` (ratio); ``mem_available`` and
``mem_cached`` (B, job ""); per device (job = device name) ``disk_read_iops``/``disk_write_iops`` (1/s),
``disk_read_bw``/``disk_write_bw`` (B/s), ``disk_util`` (ratio: io_ms / interval, the %util of
iostat); ``load1`` (count, job "").  Summary: the mean of each series over the file (``<metric>`` with
the same job), ``cpu_busy`` with job "all" (mean over CPUs), ``disk_util_max`` per device (ratio) and
``samples`` (count).  The interval of a line is the time since the previous one (the first line: the
median interval, ``meta["interval_s"]``).  A truncated last line (interrupted capture) makes the result
``partial``.

Two readers, one result: the line-by-line one (``json.loads`` per line, :func:`_records`) is the
reference; files of :data:`ARROW_MIN_BYTES` or more are first offered to Arrow's JSON reader
(:func:`_columns_arrow`), which hands back anything but plain numeric objects
(``tests/test_sysutil_fast.py`` holds the two to the same tables or the same error).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .base import IngestError, Parsed, series_blocks_frame, summary_frame

KIND = "sysutil"
_SNIFF = re.compile(rb'\A(?:\xef\xbb\xbf)?[ \t\r\n]*\{[ \t]*"t"[ \t]*:[ \t]*[0-9.eE+]+[ \t]*,[ \t]*"cpu"[ \t]*:[ \t]*\{')
#: /proc/diskstats delta field → (metric, unit); each is divided by the interval
_DISK = {"reads": ("disk_read_iops", "1/s"), "writes": ("disk_write_iops", "1/s"),
         "read_B": ("disk_read_bw", "B/s"), "write_B": ("disk_write_bw", "B/s"),
         "io_ms": ("disk_util", "ratio")}
_EXPECT = ('expected one JSON object per line with "t" (unix s), "cpu", "iowait", "mem", "disk", "load" '
           "(capture/ceph/monitor.py SysMon)")


def sniff(head: bytes) -> bool:
    """A first line that is a JSON object starting ``{"t": <number>, "cpu": {``."""
    return _SNIFF.match(head) is not None


#: no sample SysMon writes comes near this (bytes per 1 s interval, memory in B, load, fractions, counts)
_MAX = 1e15


def _flat(obj: dict[str, Any], prefix: str, out: dict[str, Any]) -> str | None:
    """Flatten a sample into ``out`` (``{"disk\tvda\treads": value}``), checking each leaf on the way:
    the first value that is not a JSON number or null, or whose magnitude is at least :data:`_MAX`, is
    returned as ``"key.sub = value"``; None when all are."""
    for k, v in obj.items():
        if not prefix and k == "osd_error" and type(v) is str:
            continue  # SysMon's note of a lost probe sample (text): that line has no OSD figures (NaN)
        if type(v) is dict:
            if (bad := _flat(v, f"{prefix}{k}\t", out)) is not None:
                return bad
        elif v is None or ((type(v) is float or type(v) is int) and abs(v) < _MAX):
            out[prefix + k] = v
        else:  # bool, text, list, a huge number, inf/NaN
            return f"{prefix.replace(chr(9), '.')}{k} = {json.dumps(v)[:40]}"
    return None


def _records(path: Path, data: bytes) -> tuple[list[dict[str, Any]], bool]:
    text = data.decode("utf-8", errors="strict") if isinstance(data, bytes) else data
    lines = text.split("\n")
    recs: list[dict[str, Any]] = []
    partial = False
    last = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    for i, ln in enumerate(lines):
        if not ln.strip():
            continue
        try:
            obj = json.loads(ln)
        except json.JSONDecodeError as e:
            if i == last and not text.endswith("\n"):
                partial = True  # the capture was interrupted mid-line
                break
            raise IngestError(path, f"{_EXPECT}: {e.msg}", line=i + 1) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("t"), (int, float)) \
                or isinstance(obj.get("t"), bool) or not isinstance(obj.get("cpu"), dict):
            raise IngestError(path, _EXPECT, line=i + 1)
        flat: dict[str, Any] = {}
        bad = _flat(obj, "", flat)
        if bad:
            raise IngestError(path, f"{bad}: expected a number (or null) below {_MAX:.0e}, as SysMon writes "
                                    "every sample", line=i + 1)
        if recs and obj["t"] < recs[-1]["t"] - 1.0:
            raise IngestError(path, f"time goes back: t={obj['t']} after t={recs[-1]['t']} "
                                    "(expected one file per run, lines in time order)", line=i + 1)
        recs.append(flat)
    if not recs:
        raise IngestError(path, _EXPECT, line=1)
    return recs, partial


def _columns(recs: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Flat records → ``{"disk\tvda\treads": float64 array}``, one value per record (NaN where a record
    lacks the key or holds null).  A plain loop over the ~60–200 lines of a file: ``pandas.json_normalize``
    and a ``to_numeric`` per column cost 4 ms a file, 1,399 files in the shipped data."""
    keys: dict[str, None] = {}
    for r in recs:
        keys.update(dict.fromkeys(r))
    return {k: np.array([r.get(k) for r in recs], dtype=np.float64) for k in keys}  # None → NaN


def _leaves(arr, prefix: str, out: dict[str, np.ndarray]) -> bool:
    """Arrow's column ``arr`` → ``out`` (``{"disk\tvda\treads": float64}``), struct fields joined with a
    tab, a missing or null object making its fields NaN (a device idle for the second); False when a
    value is not a number or null (text, bool, list)."""
    import pyarrow as pa
    if pa.types.is_struct(arr.type):
        return all(_leaves(child, f"{prefix}{arr.type.field(i).name}\t", out)
                   for i, child in enumerate(arr.flatten()))  # flatten: the object's nulls in its fields
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_null(arr.type)):
        return False
    out[prefix[:-1]] = arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    return True


#: files at least this large go through Arrow first (below it, Arrow's fixed cost of ~1 ms per call is
#: more than the line-by-line reader needs; measured on this VM: 2 KB 0.9 vs 1.4 ms, 90 KB 3.4 vs 1.1 ms)
ARROW_MIN_BYTES = 16 << 10


def _columns_arrow(data: bytes) -> dict[str, np.ndarray] | None:
    """What :func:`_records` + :func:`_columns` give, read by Arrow's JSON reader (3× faster on a 90 KB
    file); None — read line by line then — unless every line is an object whose values are numbers,
    null or objects of them, with a number ``t`` (non-decreasing within 1 s) and an object ``cpu``, and
    no number is :data:`_MAX` or more.  Arrow refuses duplicate keys, a key whose type changes and
    lines that are not JSON, so those too go line by line."""
    import pyarrow as pa
    try:
        return _arrow_flat(data)
    except (pa.ArrowException, UnicodeDecodeError):  # not JSON to Arrow, or a key not UTF-8 (found by fuzzing)
        return None


def _arrow_flat(data: bytes) -> dict[str, np.ndarray] | None:
    import pyarrow as pa
    import pyarrow.json as pa_json
    tab = pa_json.read_json(pa.py_buffer(data), read_options=pa_json.ReadOptions(
        use_threads=False, block_size=max(1 << 20, len(data) + 1)))
    if tab.num_rows == 0 or "t" not in tab.column_names or "cpu" not in tab.column_names:
        return None
    out: dict[str, np.ndarray] = {}
    for name in tab.column_names:
        col = tab.column(name).combine_chunks()
        if name in ("t", "cpu") and (col.null_count or pa.types.is_null(col.type)):
            return None
        if name == "cpu" and not pa.types.is_struct(col.type) or not _leaves(col, f"{name}\t", out):
            return None
    t = out["t"]
    if (np.diff(t) < -1.0).any() or any((np.abs(v[~np.isnan(v)]) >= _MAX).any() for v in out.values()):
        return None
    return out


def parse(path: str | Path, data: bytes) -> Parsed:
    path = Path(path)
    flat = _columns_arrow(data) if isinstance(data, bytes) and len(data) >= ARROW_MIN_BYTES else None
    partial = False
    if flat is None:
        try:
            recs, partial = _records(path, data)
        except UnicodeDecodeError as e:
            raise IngestError(path, f"{_EXPECT}: not UTF-8", offset=e.start) from None
        flat = _columns(recs)
    t = flat["t"]
    dt = np.diff(t)
    interval = float(np.median(dt)) if len(dt) else 1.0
    dt = np.concatenate([[interval], dt])
    dt[dt <= 0] = np.nan  # two lines with one stamp: no rate for the second
    t0 = float(t[0])
    t_s = t - t0
    source = path.name
    blocks: list[tuple[str, str, str, str, np.ndarray]] = []
    means: list[tuple[str, str, str, float, str]] = []

    def add(job: str, metric: str, unit: str, values: np.ndarray) -> None:
        blocks.append((job, "", metric, unit, values))
        if np.isfinite(values).any():
            means.append((job, "", metric, float(np.nanmean(values)), unit))

    cpus = sorted((c.split("\t", 1)[1] for c in flat if c.startswith("cpu\t")),
                  key=lambda c: (len(c), c))
    busy = []
    for c in cpus:
        v = flat[f"cpu\t{c}"]
        busy.append(v)
        add(c, "cpu_busy", "ratio", v)
        if f"iowait\t{c}" in flat:
            add(c, "cpu_iowait", "ratio", flat[f"iowait\t{c}"])
        if f"steal\t{c}" in flat:
            add(c, "cpu_steal", "ratio", flat[f"steal\t{c}"])
    if busy:
        means.append(("all", "", "cpu_busy", float(np.nanmean(np.vstack(busy))), "ratio"))
    for key, metric in (("MemAvailable", "mem_available"), ("Cached", "mem_cached")):
        col = f"mem\t{key}"
        if col in flat:
            add("", metric, "B", flat[col])
    devices = sorted({c.split("\t")[1] for c in flat if c.startswith("disk\t")})
    for dev in devices:
        for field, (metric, unit) in _DISK.items():
            col = f"disk\t{dev}\t{field}"
            raw = np.where(np.isnan(flat[col]), 0.0, flat[col]) if col in flat else np.zeros(len(t))
            v = raw / 1000.0 / dt if field == "io_ms" else raw / dt
            add(dev, metric, unit, v)
            if field == "io_ms" and np.isfinite(v).any():
                means.append((dev, "", "disk_util_max", float(np.nanmax(v)), "ratio"))
    if "load" in flat:
        add("", "load1", "count", flat["load"])
    osds = sorted({c.split("\t")[1] for c in flat if c.startswith("osd\t")},
                  key=lambda o: (len(o), o))
    for osd in osds:
        for field, metric, unit in (("queued", "osd_queued", "count"), ("in_flight", "osd_in_flight", "count"),
                                    ("pool_in_flight", "osd_pool_in_flight", "count"), ("cpu", "osd_cpu", "ratio")):
            col = f"osd\t{osd}\t{field}"
            if col in flat:
                add(osd, metric, unit, flat[col])
    procs = sorted({c.split("\t")[1] for c in flat if c.startswith("proc\t")})
    for name in procs:
        if f"proc\t{name}\tcpu" in flat:
            add(name, "proc_cpu", "ratio", flat[f"proc\t{name}\tcpu"])
    means.append(("", "", "samples", float(len(t)), "count"))
    meta = {"tool_version": "capture/ceph SysMon", "t0_unix": t0, "interval_s": interval,
            "span_s": float(t[-1] - t0) if len(t) else 0.0,
            "cpus": cpus, "devices": devices, "osds": osds, "procs": procs, "samples": len(t)}
    if partial:
        meta["incomplete"] = ["truncated last line (interrupted capture)"]
    series = series_blocks_frame(source, t_s, blocks) if blocks else None
    out = Parsed(path=str(path), kind=KIND, meta=meta, summary=summary_frame(source, means), partial=partial)
    if series is not None:
        out.series = series
    return out

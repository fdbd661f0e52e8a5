"""Binary ``blk_io_trace`` records (kind ``blktrace``), read with numpy — no blkparse needed.

Format (``include/uapi/linux/blktrace_api.h``; blktrace 1.x, record version 7): a stream of records,
each a 48-byte header ``magic u32 (0x65617400 | version), sequence u32, time u64 (ns), sector u64
(512 B units), bytes u32, action u32, pid u32, device u32 (dev_t, major = >> 20), cpu u32, error u16,
pdu_len u16`` followed by ``pdu_len`` bytes of payload.  Both blktrace's per-CPU files
(``<dev>.blktrace.<cpu>``) and the kernel's ``blk`` ftrace tracer with ``options/bin`` (one stream,
sequence 0, no process-name records; ``../shared/notes/blk-ftrace.md``) write it; byte order is the
tracing host's (detected from the magic).  ``action`` = category bits << 16 | action code (+ 0x100
when a cgroup id leads the payload); codes 1–17 are Q M F G S R D C P U T I X B A abort drv-data,
notify records (category bit 0x400) carry process names (0), timestamps (1) or messages (2, e.g. BFQ's).

Decoding (:func:`decode`): the record chain is followed from byte 0, a block of ``DECODE_BLOCK_BYTES`` at
a time when the reader reads the file itself (then the trace is never held whole); the event records' fields become
int64 columns and notify records are only counted (their process names kept) — stated plainly in
:func:`_events_numpy` (every header as one structured array), done in one C pass by :func:`_events_c`
(``_blkscan.c``: no per-record header copy, the CPU-order rule checked on the way), tested equal.

Events become a per-request table and a per-bio table (``io_tables``):

* a bio is a Q event (filesystem category; passthrough ``PC`` and notify records are left out);
* a Q followed by a back merge (M) joined the request that ended at its first sector, a front merge (F)
  the one that started at its end: its parent is the most recent Q ending (starting) there, and the
  parent chains are followed to the bio that allocated the request (the root); a request starts at the
  smallest sector of its bios;
* a request's completion is the first C on the same device at that start sector after its last bio
  was queued; its issue is the last D at the C's sector before the C (so a requeued request counts from
  its last issue, as btt does); G and I are the first at the root's sector after its Q, if before D;
* a group of bios with no C at its start sector (a request merged into another without a trace event,
  e.g. an elevator request-request merge) takes the first C, after its last Q, whose range covers it
  (the 8 nearest start sectors below are tried); what still has no C is counted in ``meta``.

Per bio: ``q2c = C − Q``, ``d2c = C − D``, ``q2d = D − Q`` (ns) — averaged over bios they are btt's
Q2C/D2C/Q2D (btt weights D2C by bio too).  Per request (one row per C event, so the counts are
blkparse's "Reads/Writes Completed"): sector, bytes, RWBS as blkparse prints it, pid of its first
bio, and the Q (first bio), G, I, D, C times.  ``ddir`` follows blkparse's accounting: ``write`` when
the write category bit is set, else ``read`` (so a flush or a zero-byte request counts as a read).

Tidy output (``job`` = device ``"maj,min"``, plus ``"all"`` over devices; ``ddir`` ``read``/``write`` and
``""`` for both): summary ``completed`` (count), ``completed_bytes`` (B), ``queued``, ``queued_bytes``,
``merges``, ``requeues`` (count), ``iops`` (1/s) and ``bw`` (B/s) over the trace span (first to last
event), ``q2c_mean q2c_p50 q2c_p95 q2c_p99 q2c_max``, the same for ``d2c`` and ``q2d`` (ns), ``events``
(count of non-notify records, as blkparse's "Events (dev): N entries" counts them; job only) and
``span`` (s).  Series per 1 s bin of completion time: ``iops`` (1/s), ``bw``
(B/s), ``d2c_mean`` and ``q2c_mean`` (ns).  ``t_s`` is seconds since the first record.

Large traces (``STREAM_MIN_BYTES``, gzip an eighth of it; ``detect.read`` picks it) go to
:func:`parse_stream`: records are read and chained in blocks, put back in time order through a hold-back
of ``REORDER_RECORDS`` records, and paired window by window (``WINDOW_RECORDS`` events per step, the same
as look-back and look-ahead margin) with :func:`io_tables` itself; the summary, series, request rows and
meta counts equal :func:`parse`'s (means within 1e-12 relative, as tested; percentiles exact, two passes).  The rules
above look arbitrarily far back (merge → Q, parent, D) or ahead (C at a start sector, the covering scan);
where a window cannot see far enough and the answer may differ, ``meta['stream_bounds']`` counts it and
the result is marked partial (never silently different).  Memory, independent of the file size: the
16 MiB key filter, the reorder hold-back (56 B per record), and ≈ 0.9 KiB per event of the window
(3 × ``WINDOW_RECORDS`` events); the per-second series (a few rows per second of trace) is kept whole.
With a sink that takes the request rows (``sink.requests``: the Dask path's parts) nothing else grows.
Measured here (``scale.run_batch`` on one replicated real trace, default steps, peak RSS of the whole
process, imports included): 339 MiB for 572 MiB / 7.8 M records, 356 MiB for 1.14 GiB / 15.5 M records
(``parse`` on the 572 MiB trace: 2,097 MiB then; ``make bench``'s 515 MiB trace: 1,227 MiB with the input
bytes held whole, 2026-11-26; 707 MiB since :func:`decode` reads the file a block at a time, 2026-11-27).  Without that sink the request rows are concatenated
into ``tables['requests']`` (as the serial ingest keeps every table).
"""

from __future__ import annotations

import ctypes
import io
import os
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from . import _native
from .base import IngestError, Parsed, as_frame, categorize, series_frame, summary_frame

KIND = "blktrace"
#: parse(path, None) reads the file itself, a block at a time (gzip/xz/bzip2 decompressed on the fly)
STREAMING = True
STREAMING_COMPRESSED = True
MAGIC = 0x65617400
VERSION = 7
HEADER = 48
_FIELDS = [("magic", "u4"), ("sequence", "u4"), ("time", "u8"), ("sector", "u8"), ("bytes", "u4"),
           ("action", "u4"), ("pid", "u4"), ("device", "u4"), ("cpu", "u4"), ("error", "u2"),
           ("pdu_len", "u2")]

# action codes (__BLK_TA_*) and blkparse's letter for each
ACTIONS = {1: "Q", 2: "M", 3: "F", 4: "G", 5: "S", 6: "R", 7: "D", 8: "C", 9: "P", 10: "U", 11: "T",
           12: "I", 13: "X", 14: "B", 15: "A", 16: "abort", 17: "drv-data"}
TA_Q, TA_M, TA_F, TA_G, TA_R, TA_D, TA_C, TA_I = 1, 2, 3, 4, 6, 7, 8, 12
TA_CGROUP = 0x100
# category bits (BLK_TC_*), after >> 16
TC_READ, TC_WRITE, TC_FLUSH, TC_SYNC = 0x1, 0x2, 0x4, 0x8
TC_PC, TC_NOTIFY, TC_AHEAD, TC_META, TC_DISCARD, TC_FUA = 0x200, 0x400, 0x800, 0x1000, 0x2000, 0x8000
TN_PROCESS, TN_TIMESTAMP, TN_MESSAGE = 0, 1, 2

PERCENTILES = (50, 95, 99)
_CHUNK_RECORDS = 1 << 20


def _dtype(order: str) -> np.dtype:
    return np.dtype([(n, order + t) for n, t in _FIELDS])


def sniff(head: bytes) -> bool:
    """The first record's magic (either byte order; any version byte, so that ``parse`` can name it)."""
    if len(head) < 4:
        return False
    return any(int.from_bytes(head[:4], order) & 0xFFFFFF00 == MAGIC for order in ("little", "big"))


def byte_order(path: Path, data: bytes | memoryview) -> str:
    if len(data) < 4:
        raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) at byte 0", offset=0)
    for order, code in (("little", "<"), ("big", ">")):
        m = int.from_bytes(bytes(data[:4]), order)
        if m & 0xFFFFFF00 == MAGIC:
            if m & 0xFF != VERSION:
                raise IngestError(path, f"blk_io_trace record version {m & 0xFF}; this reader knows version "
                                        f"{VERSION} (blktrace 1.x)", offset=0)
            return code
    raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) at byte 0", offset=0)


def _magic_positions(buf: np.ndarray, magic: int, order: str) -> np.ndarray:
    """Byte offsets where the 4-byte magic occurs (any alignment), ascending; 64 MiB windows."""
    n = len(buf)
    win = 64 << 20
    dt = np.dtype(order + "u4")
    out = []
    for lo in range(0, n, win):
        hi = min(n, lo + win + 3)
        w = buf[lo:hi]
        for a in range(4):
            m = (len(w) - a) // 4
            if m <= 0:
                continue
            hits = np.flatnonzero(w[a:a + 4 * m].view(dt) == magic) * 4 + (a + lo)
            out.append(hits[hits < lo + win])
    pos = np.concatenate(out) if out else np.zeros(0, np.int64)
    return np.sort(pos.astype(np.int64))


def _u16_at(buf: np.ndarray, at: np.ndarray, order: str) -> np.ndarray:
    lo, hi = buf[at].astype(np.int64), buf[at + 1].astype(np.int64)
    return lo | (hi << 8) if order == "<" else (lo << 8) | hi


def record_offsets(path: Path, buf: np.ndarray, order: str) -> np.ndarray:
    """Byte offset of every record, following the ``48 + pdu_len`` chain from byte 0.

    The magic may also occur inside a payload; candidates off the chain are dropped (pointer doubling,
    vectorised).  Raises ``IngestError`` at the byte where the chain breaks (wrong magic, truncated
    header or payload).
    """
    n = len(buf)
    lib = _clib()
    if lib is not None and n:
        return _chain_c(lib, path, buf, order)
    cand = _magic_positions(buf, MAGIC | VERSION, order)
    if len(cand) == 0 or cand[0] != 0:
        raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) at byte 0", offset=0)
    whole = cand + HEADER <= n
    nxt = np.full(len(cand), n + 1, dtype=np.int64)  # n + 1: header cut short
    nxt[whole] = cand[whole] + HEADER + _u16_at(buf, cand[whole] + 46, order)
    if whole.all() and nxt[-1] == n and np.array_equal(nxt[:-1], cand[1:]):
        return cand  # the usual case: no magic inside a payload
    k = len(cand)
    end, broken = k, k + 1
    j = np.searchsorted(cand, nxt)
    ok = j < k
    ok[ok] = cand[j[ok]] == nxt[ok]
    jump = np.where(ok, j, np.where(nxt == n, end, broken))
    jump = np.concatenate([jump, [end, broken]])
    on = np.zeros(k + 2, dtype=bool)
    on[0] = True
    steps = 1
    while steps <= k + 1:  # after round r, every node within 2**r hops of record 0 is marked
        on[jump[on]] = True
        jump = jump[jump]
        steps *= 2
    if on[broken]:
        # the on-chain record whose successor is not a record
        nodes = np.flatnonzero(on[:k])
        j0 = np.searchsorted(cand, nxt)  # recompute the one-hop successors
        bad_nodes = nodes[~((nxt[nodes] == n) | ((j0[nodes] < k) & (cand[np.minimum(j0[nodes], k - 1)] == nxt[nodes])))]
        b = int(bad_nodes[0])
        at = int(cand[b])
        if at + HEADER > n:
            raise IngestError(path, f"truncated record: {n - at} of {HEADER} header bytes before the end of "
                                    "the file", offset=at)
        if nxt[b] > n:
            raise IngestError(path, f"truncated record: pdu_len {int(nxt[b] - at - HEADER)} runs past the end "
                                    f"of the file ({n} bytes)", offset=at)
        if nxt[b] + HEADER > n:  # the next header is cut before its magic is whole: C's rule, header first
            raise IngestError(path, f"truncated record: {n - int(nxt[b])} of {HEADER} header bytes before the "
                                    "end of the file", offset=int(nxt[b]))
        raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) after the "
                                f"record at byte {at}", offset=int(nxt[b]))
    return cand[on[:k]]


def _clib():
    """The C record walker/gatherer (``_blkscan.c``) with its signatures, or None where it is switched off
    (``CEPHQOS_NATIVE=0``) or cannot be built; then the numpy path does the same work."""
    return _clib_configured() if _native.enabled() else None


@cache
def _clib_configured():
    """The C record walker/gatherer (``_blkscan.c``), or None where no C compiler is available (then
    the numpy path below does the same work, ~3x slower)."""
    lib = _native.library("_blkscan")
    if lib is None:
        return None
    i64, p = ctypes.c_int64, ctypes.c_void_p
    lib.blk_chain.argtypes = [p, i64, ctypes.c_uint32, i64, p, i64, ctypes.POINTER(i64), ctypes.POINTER(i64)]
    lib.blk_chain.restype = i64
    lib.blk_gather.argtypes = [p, p, i64, p]
    lib.blk_gather.restype = None
    lib.blk_events.argtypes = [p, p, i64, i64, p, i64, p, p, p, p, p]
    lib.blk_events.restype = i64
    lib.blk_asof.argtypes = [i64, p, p, i64, p, p, p, i64, i64, i64, i64, p, p, p, p, p]
    lib.blk_asof.restype = i64
    return lib


def _chain_c(lib, path: Path, buf: np.ndarray, order: str) -> np.ndarray:
    """``record_offsets`` in C: follow ``48 + pdu_len`` from byte 0, same errors as the numpy path."""
    n = len(buf)
    starts = np.empty(n // HEADER + 1, dtype=np.int64)
    off, code = ctypes.c_int64(), ctypes.c_int64()
    swap = int((order == "<") != (sys.byteorder == "little"))
    k = lib.blk_chain(buf.ctypes.data, n, MAGIC | VERSION, swap, starts.ctypes.data, len(starts),
                      ctypes.byref(off), ctypes.byref(code))
    if k >= 0:
        return starts[:k].copy()
    at, c = int(off.value), int(code.value)
    if c == 1:
        if at == 0:
            raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) at byte 0", offset=0)
        walked = -1 - k  # records before the failing one; the last of them points at it
        raise IngestError(path, f"expected a blk_io_trace record (magic {MAGIC | VERSION:#x}) after the "
                                f"record at byte {int(starts[walked - 1])}", offset=at)
    if c == 2:
        raise IngestError(path, f"truncated record: {n - at} of {HEADER} header bytes before the end of "
                                "the file", offset=at)
    pdu = int(_u16_at(buf, np.array([at + 46]), order)[0])
    raise IngestError(path, f"truncated record: pdu_len {pdu} runs past the end of the file ({n} bytes)",
                      offset=at)


def _headers(buf: np.ndarray, starts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The 48-byte headers at ``starts`` as one structured array (payload bytes squeezed out)."""
    n = len(buf)
    if len(starts) and np.all(np.diff(starts) == HEADER) and starts[-1] + HEADER == n:
        return buf[int(starts[0]):].view(dtype).copy() if starts[0] else buf.view(dtype).copy()
    lib = _clib()
    if lib is not None:
        out = np.empty(len(starts), dtype=dtype)
        st = np.ascontiguousarray(starts, dtype=np.int64)
        lib.blk_gather(buf.ctypes.data, st.ctypes.data, len(st), out.ctypes.data)
        return out
    out = np.empty(len(starts), dtype=dtype)
    for c0 in range(0, len(starts), _CHUNK_RECORDS):
        s = starts[c0:c0 + _CHUNK_RECORDS]
        lo = int(s[0])
        hi = int(s[-1]) + HEADER
        keep = np.zeros(hi - lo + 1, dtype=np.int8)
        keep[s - lo] += 1  # indices are distinct within each of the two assignments
        keep[s - lo + HEADER] -= 1
        mask = np.cumsum(keep[:-1], dtype=np.int8) > 0
        out[c0:c0 + len(s)] = buf[lo:hi][mask].view(dtype)
    return out


#: a CPU's records go back in time by more than this (ns): not one trace (the kernel writes each CPU's
#: records in time order, with interrupts off in blktrace, from one ring buffer in ftrace)
CPU_BACK_NS = 1_000_000


def check_cpu_order(path: Path, device: np.ndarray, cpu: np.ndarray, time: np.ndarray, at: np.ndarray,
                    last: dict[int, int] | None = None) -> None:
    """``IngestError`` at the first event record in file order (not a notify; columns in file order,
    ``at`` = byte offset) whose time is more than :data:`CPU_BACK_NS` before an earlier record of the same device and
    CPU; ``last`` carries each (device, CPU)'s latest time from block to block of a streamed read."""
    if not len(time):
        return
    key = (device.astype(np.int64) << 32) | cpu.astype(np.int64)
    t = time.astype(np.int64, copy=False)
    o = np.argsort(key, kind="stable")
    k, ts = key[o], t[o]
    new = np.r_[True, k[1:] != k[:-1]]
    start_t = np.array([last.get(int(x), np.iinfo(np.int64).min) if last else np.iinfo(np.int64).min
                        for x in k[new]], dtype=np.int64)
    if new.sum() == 1:
        run = np.maximum.accumulate(ts)
    else:
        run = pd.Series(ts).groupby(np.cumsum(new) - 1).cummax().to_numpy()  # each key's latest time so far
    prev = np.r_[np.iinfo(np.int64).min, run[:-1]]
    prev[new] = start_t
    back = (prev - ts > CPU_BACK_NS) & (prev > np.iinfo(np.int64).min)
    if back.any():
        i = int(np.flatnonzero(back)[np.argmin(o[back])])  # the first in file order
        j = int(o[i])
        raise IngestError(path, f"expected each CPU's records in time order: CPU {int(cpu[j])} of device "
                                f"{dev_name(int(device[j]))} goes back {(prev[i] - ts[i]) / 1e6:.3f} ms "
                                "(a trace concatenated with itself, or two traces in one file?)",
                          offset=int(at[j]))
    if last is not None:
        end = np.r_[new[1:], True]
        for x, tt in zip(k[end], run[end]):
            last[int(x)] = max(int(tt), last.get(int(x), int(tt)))


def _bad_action(path: Path, action: int, offset: int) -> IngestError:
    return IngestError(path, f"unknown action {action:#x} (expected codes 1–17, or a notify record 0–2)",
                       offset=offset)


def check_actions(path: Path, h: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The notify mask of headers ``h``; ``IngestError`` (byte offset from ``starts``) at the first
    record whose action code is unknown: an event code outside 1–17, a notify code above 2."""
    act = h["action"].astype(np.int64)
    code, cat = act & 0xFF, act >> 16
    notify = (cat & TC_NOTIFY) != 0
    bad = (~notify & ((code < 1) | (code > 17))) | (notify & (code > TN_MESSAGE))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _bad_action(path, int(h["action"][i]), int(starts[i]))
    return notify


def process_names(buf: np.ndarray, h: np.ndarray, starts: np.ndarray) -> dict[int, str]:
    """pid → name from the process-name notify records among ``h`` (code 0 with a payload, the name
    NUL-terminated in it); the last record of a pid wins; dict in file order of those records."""
    act = h["action"].astype(np.int64)
    proc = np.flatnonzero((((act >> 16) & TC_NOTIFY) != 0) & ((act & 0xFF) == TN_PROCESS) & (h["pdu_len"] > 0))
    comm: dict[int, str] = {}
    if len(proc):
        _, last = np.unique(h["pid"][proc][::-1], return_index=True)
        for i in np.sort(proc[::-1][last]):
            a = int(starts[i]) + HEADER
            comm[int(h["pid"][i])] = bytes(buf[a:a + int(h["pdu_len"][i])]).split(b"\0", 1)[0].decode("utf-8", "replace")
    return comm


@dataclass
class Trace:
    """Event records (notify records left out), time order (stable).  ``time`` ns since the first record
    of any kind, ``t0_ns`` its raw time; ``records``, ``notify``, ``span_ns`` (last − first record) and
    ``notify_devices`` describe the whole file, notify records included."""

    time: np.ndarray
    sector: np.ndarray
    nbytes: np.ndarray
    action: np.ndarray
    pid: np.ndarray
    device: np.ndarray
    error: np.ndarray
    t0_ns: int
    comm: dict[int, str]
    order: str
    records: int = 0
    notify: int = 0
    span_ns: int = 0
    notify_devices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


#: int64 columns of each event record in :func:`decode` (``at``: its byte offset), from header fields
_EVENT_COLS = {"time": "time", "sector": "sector", "nbytes": "bytes", "action": "action", "pid": "pid",
               "device": "device", "cpu": "cpu", "error": "error"}


@dataclass
class _Events:
    cols: dict[str, np.ndarray]  # _EVENT_COLS + "at", file order
    comm: dict[int, str]
    notify: int
    t_min: int
    t_max: int
    notify_devices: np.ndarray
    order: str = "<"


def _events_numpy(path: Path, buf: np.ndarray, starts: np.ndarray, order: str) -> _Events:
    """The format stated plainly: every header as one structured array, then the event records' fields."""
    h = _headers(buf, starts, _dtype(order))
    notify = check_actions(path, h, starts)
    keep = ~notify
    cols = {c: h[f][keep].astype(np.int64) for c, f in _EVENT_COLS.items()}
    cols["at"] = starts[keep]
    t = h["time"].astype(np.int64)
    return _Events(cols, process_names(buf, h[notify], starts[notify]), int(notify.sum()),
                   int(t.min()) if len(t) else 0, int(t.max()) if len(t) else 0,
                   np.unique(h["device"][notify]).astype(np.int64))


class _CState:
    """What :func:`_events_c` carries from block to block (``blk_events``'s in/out arguments): counts,
    time range, notify devices, each (device, CPU)'s latest event time."""

    def __init__(self) -> None:
        self.stats = np.zeros(16, np.int64)
        self.stats[1], self.stats[2] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
        self.ndev = np.zeros(64, np.int64)
        self.key = np.zeros(1024, np.uint64)
        self.latest = np.zeros(1024, np.int64)


_EV_NAMES = ("time", "sector", "nbytes", "action", "pid", "device", "error")


def _events_c(lib, path: Path, buf: np.ndarray, starts: np.ndarray, order: str, state: _CState | None = None,
              out: dict[str, np.ndarray] | None = None, at: int = 0, base: int = 0) -> _Events | None:
    """:func:`_events_numpy` and :func:`check_cpu_order` in one C pass (``blk_events``), without the
    structured copy of every header; None when the numpy path must decide (a CPU going back in time —
    it names the same record — or more devices and CPUs than the C pass tracks).

    One block of a longer trace: ``state`` carries the counts and the CPU-order rule from the previous
    blocks, the events go to ``out`` from row ``at`` (columns long enough), ``base`` is ``buf[0]``'s
    byte offset in the file (for errors)."""
    k = len(starts)
    st_ = state or _CState()
    cols = out if out is not None else {c: np.empty(k, np.int64) for c in _EV_NAMES}
    ptrs = np.array([cols[c].ctypes.data + 8 * at for c in _EV_NAMES], dtype=np.uintp)
    proc = np.empty(k, np.int64)
    st = np.ascontiguousarray(starts, dtype=np.int64)
    swap = int((order == "<") != (sys.byteorder == "little"))
    n = lib.blk_events(buf.ctypes.data, st.ctypes.data, k, swap, ptrs.ctypes.data, CPU_BACK_NS,
                       proc.ctypes.data, st_.stats.ctypes.data, st_.ndev.ctypes.data, st_.key.ctypes.data,
                       st_.latest.ctypes.data)
    stats = st_.stats
    if n < 0:
        if stats[5] == 1:
            o = int(st[stats[6]])
            raise _bad_action(path, int(buf[o + 28:o + 32].view(np.dtype(order + "u4"))[0]), base + o)
        return None
    pi = st[proc[:stats[3]]]
    comm = process_names(buf, _headers(buf, pi, _dtype(order)), pi) if len(pi) else {}
    some = stats[1] <= stats[2]
    return _Events({c: a[at:at + n] for c, a in cols.items()}, comm, int(stats[0]),
                   int(stats[1]) if some else 0, int(stats[2]) if some else 0, np.unique(st_.ndev[:stats[4]]))


#: bytes of the input decoded at a time by :func:`decode` (read from the file into one buffer of this
#: size: the trace is never held whole, only its event columns, 56 B per event)
DECODE_BLOCK_BYTES = 32 << 20


def _blocks(path: Path, data: bytes | memoryview | None, block_bytes: int):
    """The trace as blocks of whole records: ``(arr, starts, base, order)`` with ``arr`` the block's bytes
    (valid until the next block), ``starts`` the records' offsets in it and ``base`` the byte offset of
    ``arr[0]`` in the file.  From ``data`` (views, no copy) or, when None, read sequentially from the file
    (gzip/xz/bzip2 decompressed on the fly) into one reused buffer of ``block_bytes`` (grown when one
    record is larger); a record chain continues across block edges.  ``IngestError`` names the absolute
    byte offset of a bad record."""
    from .compress import open_stream
    size = max(int(block_bytes), HEADER)
    f = None if data is not None else open_stream(path)
    mv = memoryview(data) if data is not None else None
    if f is not None and isinstance(f, io.BufferedReader):  # plain file: no larger buffer than the file
        size = max(HEADER, min(size, os.fstat(f.fileno()).st_size + 1))  # (zeroing 32 MiB costs ~8 ms)
    buf = bytearray(size) if f is not None else None
    try:
        base, have, order, eof = 0, 0, None, False
        while True:
            if f is not None:  # top the buffer up after the carried tail
                with memoryview(buf) as view:
                    while have < len(buf) and not eof:
                        got = f.readinto(view[have:])
                        eof = not got
                        have += got or 0
                arr = np.frombuffer(buf, dtype=np.uint8)[:have]
            else:
                end = min(len(mv), base + size)
                eof = end == len(mv)
                arr = np.frombuffer(mv[base:end], dtype=np.uint8)
                have = len(arr)
            if order is None:
                order = byte_order(path, arr[:4].tobytes())
            if not have:
                return
            starts, used = _block_records(path, arr, order, base, eof)
            if not used:  # one record longer than the block: a larger block
                del arr
                size *= 2
                if f is not None:  # a new buffer: the caller may still hold a view of the old one
                    grown = bytearray(2 * len(buf))
                    grown[:have] = buf[:have]
                    buf = grown
                continue
            yield arr[:used], starts, base, order
            del arr
            base += used
            if f is not None:
                rest = have - used
                buf[:rest] = buf[used:have]
                have = rest
            if eof and (f is None or not have):
                return
    finally:
        if f is not None:
            f.close()


def _block_records(path: Path, arr: np.ndarray, order: str, base: int, eof: bool) -> tuple[np.ndarray, int]:
    """Offsets of the whole records of one block and the bytes they span (a record cut by the block's
    end waits for the next block unless the file ended there)."""
    import re
    try:
        return record_offsets(path, arr, order), len(arr)
    except IngestError as e:
        if e.message.startswith("truncated") and not eof:
            used = int(e.offset)
            return (record_offsets(path, arr[:used], order) if used else np.zeros(0, np.int64)), used
        msg = re.sub(r"at byte (\d+)", lambda m: f"at byte {int(m.group(1)) + base}", e.message)
        msg = msg.replace(f"({len(arr)} bytes)", f"({base + len(arr)} bytes)")
        raise IngestError(path, msg, offset=base + int(e.offset or 0)) from None


def _events_blocks(lib, path: Path, data: bytes | memoryview | None, block_bytes: int) -> _Events | None:
    """:func:`_events_c` block by block over :func:`_blocks`; None as :func:`_events_c`."""
    if data is not None:
        cap = len(data) // HEADER + 1
    else:
        from .compress import compression
        with open(path, "rb") as fh:
            comp = compression(fh.read(8))
        cap = path.stat().st_size // HEADER + 1 if comp is None else 0
    # columns at their upper bound (one event per 48 bytes): pages never written are never resident
    cols = {c: np.empty(max(cap, 1), np.int64) for c in _EV_NAMES}
    state, at, comm, rec = _CState(), 0, {}, None
    for arr, starts, base, order in _blocks(path, data, block_bytes):
        if at + len(starts) > len(cols["time"]):  # compressed input: grow
            grow = max(2 * len(cols["time"]), at + len(starts))
            for c in _EV_NAMES:
                a = np.empty(grow, np.int64)
                a[:at] = cols[c][:at]
                cols[c] = a
        rec = _events_c(lib, path, arr, starts, order, state, cols, at, base)
        if rec is None:
            return None
        at += len(rec.cols["time"])
        for pid, name in rec.comm.items():  # the last record of a pid wins, in file order
            comm.pop(pid, None)
            comm[pid] = name
    if rec is None:  # not one record
        byte_order(path, b"")
    rec.cols = {c: a[:at] for c, a in cols.items()}
    rec.comm = comm
    rec.order = order
    return rec


def decode(path: str | Path, data: bytes | memoryview | None = None,
           block_bytes: int = DECODE_BLOCK_BYTES) -> Trace:
    """Decode every record of a binary trace (``data``, or the file itself when None, read a block at a
    time); ``IngestError`` with the byte offset on bad input."""
    path = Path(path)
    lib = _clib()
    rec = _events_blocks(lib, path, data, block_bytes) if lib is not None else None
    if rec is not None:
        order = rec.order
    else:  # the format stated plainly, whole file: no C compiler, or the C pass stopped (it names no record)
        if data is None:
            from .compress import read_all
            data = read_all(path)
        order = byte_order(path, data)
        buf = np.frombuffer(data, dtype=np.uint8)
        starts = record_offsets(path, buf, order)
        rec = _events_numpy(path, buf, starts, order)
        check_cpu_order(path, rec.cols["device"], rec.cols.pop("cpu"), rec.cols["time"], rec.cols.pop("at"))
        del starts, buf
    ev = rec.cols
    t = ev["time"]
    if len(t) > 1 and not (t[1:] >= t[:-1]).all():
        o = np.argsort(t, kind="stable")
        for c in list(ev):  # one column at a time: one extra column in memory, not seven
            ev[c] = ev[c][o]
        del o
    t = ev["time"]
    t -= rec.t_min
    return Trace(time=t, sector=ev["sector"], nbytes=ev["nbytes"], action=ev["action"], pid=ev["pid"],
                 device=ev["device"], error=ev["error"], t0_ns=rec.t_min, comm=rec.comm, order=order,
                 records=len(t) + rec.notify, notify=rec.notify, span_ns=rec.t_max - rec.t_min,
                 notify_devices=rec.notify_devices)


def dev_name(dev: np.ndarray | int) -> np.ndarray | str:
    """``"maj,min"`` as blkparse prints a kernel dev_t (major = dev >> 20, minor = low 20 bits)."""
    if isinstance(dev, (int, np.integer)):
        return f"{int(dev) >> 20},{int(dev) & 0xFFFFF}"
    return np.array([f"{d >> 20},{d & 0xFFFFF}" for d in np.unique(dev)], dtype=object)[
        np.searchsorted(np.unique(dev), dev)]


def _rwbs_codes(action: np.ndarray, nbytes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """blkparse's RWBS column (``fill_rwbs``): [F]{D|W|R|N}[F][A][S][M], as (labels, code per record)."""
    cat = (action >> 16) & 0xFFFF
    key = cat * 2 + (nbytes > 0)
    uk, inv = np.unique(key, return_inverse=True)
    labels = []
    for k in uk:
        c, has = int(k) >> 1, int(k) & 1
        s = "F" if c & TC_FLUSH else ""
        s += "D" if c & TC_DISCARD else "W" if c & TC_WRITE else "R" if has else "N"
        s += ("F" if c & TC_FUA else "") + ("A" if c & TC_AHEAD else "") + ("S" if c & TC_SYNC else "")
        s += "M" if c & TC_META else ""
        labels.append(s)
    return labels, inv


def rwbs(action: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """blkparse's RWBS column for each record (object array)."""
    labels, inv = _rwbs_codes(action, nbytes)
    return np.asarray(labels, dtype=object)[inv]


def _labels(codes: np.ndarray, labels) -> pd.api.extensions.ExtensionArray:
    """``labels[codes]`` as pandas' default string array, built by one Arrow take (converting a numpy
    array of Python strings costs ~15× more)."""
    return pd.array(pa.array(list(labels), pa.string()).take(pa.array(np.asarray(codes, np.int64))),
                    dtype=pd.StringDtype(na_value=np.nan))


# ---------------------------------------------------------------------------------------------------
# Pairing events into requests and bios (io_tables): the rules of the module docstring, one helper each
# ---------------------------------------------------------------------------------------------------

def asof_join(left: pd.DataFrame, right: pd.DataFrame, by: list[str], direction: str,
          allow_exact: bool = True, lt: str = "t", rt: str = "t") -> np.ndarray:
    """Row index into ``right`` (−1: none) of the as-of match for each row of ``left``: what
    :func:`asof_join_pandas` (``pandas.merge_asof``) gives, by the C join ``blk_asof`` (``_blkscan.c``: a
    hash of the keys, a binary search in time; 4–8× faster, tested equal) when it is built and every
    column is an integer."""
    if not len(left) or not len(right):
        return np.full(len(left), -1, dtype=np.int64)
    lib = _clib()
    cols = [left[c] for c in by + [lt]] + [right[c] for c in by + [rt]]
    if lib is None or not all(c.dtype.kind in "iu" for c in cols):
        return asof_join_pandas(left, right, by, direction, allow_exact, lt, rt)
    nk, nl, nr = len(by), len(left), len(right)
    lkeys = np.ascontiguousarray(np.stack([c.to_numpy() for c in cols[:nk]]).astype(np.int64, copy=False))
    rkeys = np.ascontiguousarray(np.stack([c.to_numpy() for c in cols[nk + 1:-1]]).astype(np.int64, copy=False))
    ltime = np.ascontiguousarray(cols[nk].to_numpy(), dtype=np.int64)
    rtime = np.ascontiguousarray(cols[-1].to_numpy(), dtype=np.int64)
    rorder = np.argsort(rtime, kind="stable").astype(np.int64, copy=False)
    cap = 1 << max(4, int(2 * nr - 1).bit_length())
    table, gid = np.empty(cap, np.int64), np.empty(nr, np.int64)
    start, rows, out = np.empty(nr + 1, np.int64), np.empty(nr, np.int64), np.empty(nl, np.int64)
    rc = lib.blk_asof(nl, lkeys.ctypes.data, ltime.ctypes.data, nr, rkeys.ctypes.data, rtime.ctypes.data,
                      rorder.ctypes.data, nk, 0 if direction == "backward" else 1, int(allow_exact), cap,
                      table.ctypes.data, gid.ctypes.data, start.ctypes.data, rows.ctypes.data, out.ctypes.data)
    if rc != 0:
        raise AssertionError(f"blk_asof: {rc}")
    return out


def asof_join_pandas(left: pd.DataFrame, right: pd.DataFrame, by: list[str], direction: str,
                 allow_exact: bool = True, lt: str = "t", rt: str = "t") -> np.ndarray:
    """The reference of :func:`asof_join`: ``pandas.merge_asof`` over both sides stably sorted by time."""
    if not len(left) or not len(right):
        return np.full(len(left), -1, dtype=np.int64)
    L = left[by + [lt]].rename(columns={lt: "_t"}).assign(_l=np.arange(len(left)))
    R = right[by + [rt]].rename(columns={rt: "_t"}).assign(_r=np.arange(len(right), dtype=np.int64))
    L = L.sort_values("_t", kind="stable")
    R = R.sort_values("_t", kind="stable")
    m = pd.merge_asof(L, R, on="_t", by=by, direction=direction, allow_exact_matches=allow_exact)
    out = np.full(len(left), -1, dtype=np.int64)
    r = m["_r"].to_numpy()
    ok = ~pd.isna(r)
    out[m["_l"].to_numpy()[ok]] = r[ok].astype(np.int64)
    return out


def _root(parent: np.ndarray) -> np.ndarray:
    """Follow parent pointers to the root (pointer jumping; a root is its own parent)."""
    p = parent.copy()
    while True:
        q = p[p]
        if np.array_equal(q, p):
            return p
        p = q


def _pairing_events(tr: Trace, w: np.ndarray, ix: np.ndarray) -> pd.DataFrame:
    """The events at ``ix`` with the fields pairing uses: ``t`` (ns), ``dev``, ``sector``, ``nsect``
    (512 B units), ``w`` (write category bit), ``pid``."""
    return pd.DataFrame({"t": tr.time[ix], "dev": tr.device[ix], "sector": tr.sector[ix],
                         "nsect": tr.nbytes[ix] >> 9, "w": w[ix], "pid": tr.pid[ix]})


def _merge_owners(merges: pd.DataFrame, Q: pd.DataFrame, notes: dict, extra: dict | None):
    """Rule 1: the Q each merge event belongs to, the latest Q with the same dev, sector and size.
    Returns per bio its merge kind (int8: 0 none, 2 back M, 3 front F) and the time of its merge event
    (ns; its Q time when none), and the mask of merge events that found their Q."""
    nq = len(Q)
    mq = asof_join(merges, Q, ["dev", "sector", "nsect"], "backward")
    merge = np.zeros(nq, dtype=np.int8)  # 0 none, 2 back (M), 3 front (F)
    m_t = Q["t"].to_numpy().copy()
    okm = mq >= 0
    merge[mq[okm]] = merges["kind"].to_numpy()[okm]
    m_t[mq[okm]] = merges["t"].to_numpy()[okm]
    notes["merge_events_without_q"] = int((~okm).sum())
    if extra is not None:
        extra.update(merge_q=mq, merge_rows=merges.index.to_numpy(), n_q=nq)
        extra["parent_miss"] = np.zeros(nq, dtype=bool)
    return merge, m_t, okm


def _merge_parents(Q: pd.DataFrame, merge: np.ndarray, notes: dict, extra: dict | None) -> np.ndarray:
    """Rule 2: parent (Q row) of each merged bio, the latest earlier Q ending at its start (M) or
    starting at its end (F); a bio without one is its own parent."""
    nq = len(Q)
    Qk = Q.assign(end=Q["sector"] + Q["nsect"], qi=np.arange(nq))
    parent = np.arange(nq)
    for kind, lkey, rkey in ((TA_M, "sector", "end"), (TA_F, "end", "sector")):
        lm = Qk[merge == kind]
        if not len(lm):
            continue
        left = pd.DataFrame({"dev": lm["dev"].to_numpy(), "k": lm[lkey].to_numpy(), "t": lm["t"].to_numpy()})
        right = pd.DataFrame({"dev": Qk["dev"].to_numpy(), "k": Qk[rkey].to_numpy(), "t": Qk["t"].to_numpy()})
        p = asof_join(left, right, ["dev", "k"], "backward", allow_exact=False)
        parent[lm["qi"].to_numpy()[p >= 0]] = p[p >= 0]
        if extra is not None:
            extra["parent_miss"][lm["qi"].to_numpy()[p < 0]] = True
        notes[f"{'back' if kind == TA_M else 'front'}_merges_without_parent"] = int((p < 0).sum())
    return parent


def _bio_groups(Q: pd.DataFrame, root: np.ndarray, m_t: np.ndarray) -> pd.DataFrame:
    """Rule 3: the groups of bios (one request each, before any untraced request-request merge), indexed
    by root bio: ``start`` (smallest sector), ``nsect``, ``t_first`` (first Q, ns), ``t_last`` (last Q
    or merge event, ns), ``n`` (bios), ``dev``."""
    g = pd.DataFrame({"root": root, "sector": Q["sector"].to_numpy(), "nsect": Q["nsect"].to_numpy(),
                      "t": Q["t"].to_numpy(), "m_t": m_t}).groupby("root", sort=True)
    grp = pd.DataFrame({"start": g["sector"].min(), "nsect": g["nsect"].sum(), "t_first": g["t"].min(),
                        "t_last": g["m_t"].max(), "n": g.size()})
    grp["dev"] = Q["dev"].to_numpy()[grp.index.to_numpy()]
    return grp


def _group_completions(grp: pd.DataFrame, C: pd.DataFrame, root: np.ndarray, notes: dict,
                       extra: dict | None) -> np.ndarray:
    """Rule 4: C row (−1: none) of each group, the first C at its start sector after its last bio, else
    the first covering one (:func:`_covering`)."""
    gl = grp.reset_index(drop=True).rename(columns={"start": "sector"})
    c_of = asof_join(gl, C, ["dev", "sector"], "forward", lt="t_last")
    miss = np.flatnonzero(c_of < 0)
    scan = {}
    if len(miss) and len(C):
        c_of[miss] = _covering(grp.iloc[miss], C, scan=scan)
    if extra is not None:
        extra.update(root=root, grp=grp, c_of=c_of, fallback=miss, scan=scan)
    notes["bio_groups"] = int(len(grp))
    notes["bio_groups_without_completion"] = int((c_of < 0).sum())
    return c_of


def _issue_times(C: pd.DataFrame, D: pd.DataFrame, notes: dict, extra: dict | None) -> np.ndarray:
    """Rule 5: issue time (ns, float; NaN: none) of each completion, the last D at the C's sector before it."""
    d_of = asof_join(C, D, ["dev", "sector"], "backward")
    notes["completions_without_issue"] = int((d_of < 0).sum())
    if extra is not None:
        extra["d_of"] = d_of
    return (np.where(d_of >= 0, D["t"].to_numpy()[np.maximum(d_of, 0)], np.nan) if len(D)
            else np.full(len(C), np.nan))


def _bio_rows(Q: pd.DataFrame, grp: pd.DataFrame, root: np.ndarray, c_of: np.ndarray, merge: np.ndarray,
              c_t: np.ndarray, d_t: np.ndarray) -> pd.DataFrame:
    """The ``bios`` table of :func:`io_tables`: one row per Q, its request's D and C times (ns)."""
    nq = len(Q)
    gi = np.searchsorted(grp.index.to_numpy(), root)
    req = c_of[gi] if len(grp) else np.full(nq, -1)
    has = req >= 0
    q_t = Q["t"].to_numpy().astype(np.float64)
    bc = np.where(has, c_t[np.maximum(req, 0)] if len(c_t) else np.nan, np.nan)
    bd = np.where(has, d_t[np.maximum(req, 0)] if len(c_t) else np.nan, np.nan)
    return pd.DataFrame({"dev": Q["dev"].to_numpy(), "sector": Q["sector"].to_numpy(),
                         "nbytes": Q["nsect"].to_numpy() * 512, "ddir": _labels(Q["w"].to_numpy(), ("read", "write")),
                         "pid": Q["pid"].to_numpy(), "merge": _labels(merge, ("", "", "M", "F")),
                         "q_ns": q_t, "d_ns": bd, "c_ns": bc, "q2c_ns": bc - q_t, "d2c_ns": bc - bd,
                         "q2d_ns": bd - q_t, "req": req})


def _first_after(left: pd.DataFrame, right: pd.DataFrame, dlim: np.ndarray) -> np.ndarray:
    """Time (ns, float) of the first ``right`` event at each ``left`` row's dev and sector from its time on,
    NaN where there is none or it comes after ``dlim`` (the request's issue)."""
    j = asof_join(left, right, ["dev", "sector"], "forward")
    tv = np.where(j >= 0, right["t"].to_numpy()[np.maximum(j, 0)] if len(right) else 0, -1)
    return np.where((j >= 0) & (tv <= dlim), tv, np.nan)


def _request_leads(Q: pd.DataFrame, G: pd.DataFrame, I: pd.DataFrame, grp: pd.DataFrame, c_of: np.ndarray,
                   d_t: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per request (C row): first Q time, bio count, pid of the root bio of its earliest group, and that
    bio's G and I times if before the issue (ns, NaN / −1 / 0 where no group completed there)."""
    nC = len(d_t)
    first_q = np.full(nC, np.nan)
    n_bios = np.zeros(nC, dtype=np.int64)
    pid = np.full(nC, -1, dtype=np.int64)
    g_t = np.full(nC, np.nan)
    i_t = np.full(nC, np.nan)
    if nC and len(grp):
        ok = c_of >= 0
        gg = grp[ok].assign(c=c_of[ok])
        agg = gg.groupby("c").agg(t_first=("t_first", "min"), n=("n", "sum"))
        first_q[agg.index.to_numpy()] = agg["t_first"].to_numpy()
        n_bios[agg.index.to_numpy()] = agg["n"].to_numpy()
        # the root bio of the earliest group of each request
        lead = gg.sort_values("t_first", kind="stable").drop_duplicates("c")
        roots = lead.index.to_numpy()
        pid[lead["c"].to_numpy()] = Q["pid"].to_numpy()[roots]
        cc = lead["c"].to_numpy()
        rq = Q.iloc[roots].reset_index(drop=True)  # the root bios: dev, sector, t
        dlim = np.nan_to_num(d_t[cc], nan=np.inf)
        gt_ = _first_after(rq, G, dlim)
        g_t[cc] = gt_
        after_g = rq.assign(t=np.where(np.isnan(gt_), rq["t"].to_numpy(), gt_).astype(np.int64))
        it_ = _first_after(after_g, I, dlim)
        alt = _first_after(after_g.assign(sector=lead["start"].to_numpy()), I, dlim)
        i_t[cc] = np.where(np.isnan(it_), alt, it_)
    return first_q, n_bios, pid, g_t, i_t


def io_tables(tr: Trace, extra: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(requests, bios, notes) from decoded records; see the module docstring for the rules.

    ``requests``: one row per C event — ``dev sector nbytes rwbs ddir pid n_bios q_ns g_ns i_ns d_ns
    c_ns q2c_ns d2c_ns q2d_ns error`` (times ns since the first record; NaN where no event matched).
    ``bios``: one row per Q — ``dev sector nbytes ddir pid merge ('', 'M', 'F') q_ns d_ns c_ns q2c_ns
    d2c_ns q2d_ns req`` (``req`` = row of ``requests``, −1 when no completion was found).
    ``extra`` (a dict, for :func:`parse_stream`) receives intermediate arrays; results are unchanged.
    """
    act = tr.action
    code = act & 0xFF
    cat = act >> 16
    fs = (cat & (TC_NOTIFY | TC_PC)) == 0
    w = (cat & TC_WRITE) != 0
    Q, G, I, D, C = (_pairing_events(tr, w, np.flatnonzero(fs & (code == c)))
                     for c in (TA_Q, TA_G, TA_I, TA_D, TA_C))
    mix = np.flatnonzero(fs & ((code == TA_M) | (code == TA_F)))
    merges = _pairing_events(tr, w, mix).assign(kind=code[mix])
    notes: dict[str, Any] = {}
    merge, m_t, okm = _merge_owners(merges, Q, notes, extra)
    root = _root(_merge_parents(Q, merge, notes, extra))
    grp = _bio_groups(Q, root, m_t)
    c_of = _group_completions(grp, C, root, notes, extra)
    d_t = _issue_times(C, D, notes, extra)
    c_t = C["t"].to_numpy().astype(np.float64)
    bios = _bio_rows(Q, grp, root, c_of, merge, c_t, d_t)
    first_q, n_bios, pid, g_t, i_t = _request_leads(Q, G, I, grp, c_of, d_t)
    csel = fs & (code == TA_C)
    requests = pd.DataFrame({
        "dev": C["dev"].to_numpy(), "sector": C["sector"].to_numpy(), "nbytes": C["nsect"].to_numpy() * 512,
        "rwbs": _labels(*_rwbs_codes(act[csel], tr.nbytes[csel])[::-1]),
        "ddir": _labels(C["w"].to_numpy(), ("read", "write")), "pid": pid, "n_bios": n_bios,
        "q_ns": first_q, "g_ns": g_t, "i_ns": i_t, "d_ns": d_t, "c_ns": c_t,
        "q2c_ns": c_t - first_q, "d2c_ns": c_t - d_t, "q2d_ns": d_t - first_q,
        "error": tr.error[csel]})
    notes["merges"] = int(okm.sum())
    notes["requeues"] = int((fs & (code == TA_R)).sum())
    return requests, bios, notes


def _covering(groups: pd.DataFrame, C: pd.DataFrame, tries: int = 8, scan: dict | None = None) -> np.ndarray:
    """For bio groups with no C at their start: the first C after them whose range covers them.
    ``scan`` (optional) receives per group ``lo``: the lowest sector of the same device that the scan
    looked at, −1 when it ran out of that device's C events (then any lower sector could matter)."""
    cd, cs, cn, ct = (C[k].to_numpy() for k in ("dev", "sector", "nsect", "t"))
    o = np.lexsort((-ct, cs, cd))  # by dev, sector, then latest first
    cd, cs, cn, ct = cd[o], cs[o], cn[o], ct[o]
    gd, gs, gn, gt = (groups[k].to_numpy() for k in ("dev", "start", "nsect", "t_last"))
    devs = np.unique(cd)
    key_c = np.searchsorted(devs, cd) * (1 << 44) + cs  # sorted: dev, then sector
    gcode = np.searchsorted(devs, gd)
    known = (gcode < len(devs)) & (devs[np.minimum(gcode, len(devs) - 1)] == gd)
    pos = np.where(known, np.searchsorted(key_c, gcode * (1 << 44) + gs, side="right") - 1, -1)
    out = np.full(len(groups), -1, dtype=np.int64)
    for k in range(tries):
        p = pos - k
        todo = (out < 0) & (p >= 0)
        if not todo.any():
            break
        pp = np.maximum(p, 0)
        hit = todo & (cd[pp] == gd) & (cs[pp] + cn[pp] >= gs + gn) & (ct[pp] >= gt)
        out[hit] = o[pp[hit]]
    if scan is not None:  # where the scan stopped: the hit's sector, or the last (tries-th) entry
        last = pos - (tries - 1)
        lq = np.maximum(last, 0)
        full = (last >= 0) & (cd[lq] == gd)
        inv = np.empty(len(o), dtype=np.int64)
        inv[o] = np.arange(len(o))
        hs = cs[inv[np.maximum(out, 0)]] if len(o) else np.zeros(len(out), np.int64)
        scan["lo"] = np.where(out >= 0, hs, np.where(full, cs[lq], -1))
    return out


def _stats(rows: list, job: str, ddir: str, b: pd.DataFrame, r: pd.DataFrame, span_s: float,
           merges: int) -> None:
    """Summary rows for one device/direction: ``b`` its bios (Q rows), ``r`` its requests (C rows)."""
    n = len(r)
    rows.append((job, ddir, "completed", float(n), "count"))
    rows.append((job, ddir, "completed_bytes", float(r["nbytes"].sum()), "B"))
    rows.append((job, ddir, "queued", float(len(b)), "count"))
    rows.append((job, ddir, "queued_bytes", float(b["nbytes"].sum()), "B"))
    rows.append((job, ddir, "merges", float(merges), "count"))
    if span_s > 0:
        rows.append((job, ddir, "iops", n / span_s, "1/s"))
        rows.append((job, ddir, "bw", float(r["nbytes"].sum()) / span_s, "B/s"))
    for m in ("q2c", "d2c", "q2d"):
        v = b[f"{m}_ns"].to_numpy()
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        rows.append((job, ddir, f"{m}_mean", float(v.mean()), "ns"))
        for p, x in zip(PERCENTILES, np.percentile(v, PERCENTILES)):
            rows.append((job, ddir, f"{m}_p{p}", float(x), "ns"))
        rows.append((job, ddir, f"{m}_max", float(v.max()), "ns"))


def parse(path: str | Path, data: bytes | memoryview | None = None) -> Parsed:
    path = Path(path)
    tr = decode(path, data)
    requests, bios, notes = io_tables(tr)
    source = path.name
    span_s = tr.span_ns / 1e9
    code = tr.action & 0xFF
    cat = tr.action >> 16
    fs = (cat & (TC_NOTIFY | TC_PC)) == 0
    mergef = fs & ((code == TA_M) | (code == TA_F))
    mw = (cat & TC_WRITE) != 0
    rows: list = []
    devs = np.union1d(np.unique(tr.device), tr.notify_devices)  # a notify-only device still gets a job
    for dev in list(devs) + [None]:
        job = "all" if dev is None else dev_name(int(dev))
        if dev is None and len(devs) < 2:
            continue
        rsel = np.ones(len(requests), bool) if dev is None else (requests["dev"] == dev).to_numpy()
        bsel = np.ones(len(bios), bool) if dev is None else (bios["dev"] == dev).to_numpy()
        esel = np.ones(len(tr.time), bool) if dev is None else tr.device == dev
        if dev is not None:
            rows.append((job, "", "events", float(esel.sum()), "count"))
        for ddir in ("read", "write", ""):
            rr = rsel & ((requests["ddir"] == ddir).to_numpy() if ddir else True)
            bb = bsel & ((bios["ddir"] == ddir).to_numpy() if ddir else True)
            mm = esel & mergef & ((mw if ddir == "write" else ~mw) if ddir else True)
            _stats(rows, job, ddir, bios[bb], requests[rr], span_s, int(mm.sum()))
    rows.append(("all" if len(devs) > 1 else dev_name(int(devs[0])) if len(devs) else "", "", "span",
                 span_s, "s"))
    summary = summary_frame(source, rows)
    frames = []
    if len(requests):
        sec = np.floor(requests["c_ns"].to_numpy() / 1e9).astype(np.int64)
        for (dev, ddir), r in requests.assign(sec=sec).groupby(["dev", "ddir"], sort=True):
            g = r.groupby("sec")
            idx = g.size().index.to_numpy()
            t = idx.astype(np.float64)
            job = dev_name(int(dev))
            frames.append(series_frame(source, job, ddir, "iops", "1/s", t, g.size().to_numpy(np.float64)))
            frames.append(series_frame(source, job, ddir, "bw", "B/s", t, g["nbytes"].sum().to_numpy(np.float64)))
            frames.append(series_frame(source, job, ddir, "d2c_mean", "ns", t, g["d2c_ns"].mean().to_numpy()))
            frames.append(series_frame(source, job, ddir, "q2c_mean", "ns", t, g["q2c_ns"].mean().to_numpy()))
    meta: dict[str, Any] = {
        "tool_version": f"blk_io_trace v{VERSION}", "byte_order": "little" if tr.order == "<" else "big",
        "records": tr.records, "t0_ns": tr.t0_ns, "devices": [dev_name(int(d)) for d in devs],
        "notify_records": tr.notify, "pc_records": int(((cat & TC_PC) != 0).sum()),
        "process_names": tr.comm, **notes}
    out = Parsed(path=str(path), kind=KIND, meta=meta, summary=summary,
                 tables={"requests": requests, "bios": bios})
    if frames:
        out.series = categorize(pd.concat([as_frame(f) for f in frames], ignore_index=True))
    return out


# ---------------------------------------------------------------------------------------------------
# Bounded-memory reading (parse_stream)
# ---------------------------------------------------------------------------------------------------

#: traces at least this large on disk (compressed: an eighth of it) are read in blocks (parse_stream)
STREAM_MIN_BYTES = 256 << 20
#: records decoded per block
BLOCK_RECORDS = 1 << 18
#: events (Q M F G I D C) per commit step; also the look-back and look-ahead margin of each window
WINDOW_RECORDS = 1 << 16
#: records held back to restore time order (records out of order by more than this: meta, partial)
REORDER_RECORDS = 1 << 14
_BLOOM = 1 << 24            # bits (one byte each) of the filter of keys that left the window
_MAX_CHECKS = 1 << 20       # covering-rule results remembered for later C events
_MAX_PROBE = 1 << 16        # sectors probed in the filter for one covering-rule hit
_NBIN = 8192                # coarse bins: 64 per power of two of |value| (ns), both signs
_KEEP = ("time", "sector", "nbytes", "action", "pid", "device", "error")


def _chunks(path: Path, block_records: int):
    """(headers, absolute starts, order, process names) per block of records (:func:`_blocks` of
    ``block_records`` × 48 bytes), read sequentially; ``IngestError`` names the absolute byte offset."""
    for arr, starts, base, order in _blocks(path, None, max(block_records, 1) * HEADER):
        if len(starts):
            h = _headers(arr, starts, _dtype(order))
            try:
                notify = check_actions(path, h, starts)
            except IngestError as e:
                raise IngestError(path, e.message, offset=base + int(e.offset)) from None
            yield h, starts + base, order, process_names(arr, h[notify], starts[notify])


def _grouped(chunks, at_least: int):
    """Consecutive blocks of :func:`_chunks` joined until they hold ``at_least`` records (tiny blocks
    are read and chained as such, but sorted and paired in larger steps)."""
    acc: list = []
    n = 0
    for item in chunks:
        acc.append(item)
        n += len(item[0])
        if n >= at_least:
            yield _join(acc)
            acc, n = [], 0
    if acc:
        yield _join(acc)


def _join(acc: list):
    if len(acc) == 1:
        return acc[0]
    comm: dict[int, str] = {}
    for a in acc:
        comm.update(a[3])
    return (np.concatenate([a[0] for a in acc]), np.concatenate([a[1] for a in acc]), acc[-1][2], comm)


class _Bloom:
    """Keys (int64 tuples) that left the window: ``maybe(keys)`` is False only for keys never added."""

    def __init__(self, bits: int = _BLOOM):
        self.b = np.zeros(bits, dtype=bool)
        self.mask = np.uint64(bits - 1)

    def _h(self, cols: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
        h = np.full(len(cols[0]), 0x9E3779B97F4A7C15, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for c in cols:
                h = (h ^ np.asarray(c).astype(np.uint64)) * np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(31)
            g = (h * np.uint64(0x94D049BB133111EB)) ^ (h >> np.uint64(29))
        return h & self.mask, g & self.mask

    def add(self, *cols) -> None:
        cols = np.broadcast_arrays(*[np.asarray(c) for c in cols])
        if len(cols[0]):
            a, b = self._h(cols)
            self.b[a] = True
            self.b[b] = True

    def maybe(self, *cols) -> np.ndarray:
        cols = np.broadcast_arrays(*[np.asarray(c) for c in cols])
        if not len(cols[0]):
            return np.zeros(0, dtype=bool)
        a, b = self._h(cols)
        return self.b[a] & self.b[b]


def _sorted_batches(path: Path, block_records: int, reorder: int, st: dict):
    """Records in time order (stable), as dicts of arrays, plus counters in ``st``.  A record is
    released once it is older than every one of the last ``reorder`` records read; a later record older
    than a released one sets ``st['reorder_exceeded']`` (then the order, and so the result, may differ
    from :func:`parse`)."""
    pend: dict[str, np.ndarray] | None = None
    thr = None
    last: dict[int, int] = {}
    for h, starts, order, comm in _grouped(_chunks(path, block_records), max(4096, reorder // 4)):
        ev = ((h["action"] >> 16) & TC_NOTIFY) == 0
        check_cpu_order(path, h["device"][ev], h["cpu"][ev], h["time"][ev], starts[ev], last)
        st["order"] = order
        st["comm"].update(comm)
        blk = {"time": h["time"].astype(np.int64), "sector": h["sector"].astype(np.int64),
               "nbytes": h["bytes"].astype(np.int64), "action": h["action"].astype(np.int64),
               "pid": h["pid"].astype(np.int64), "device": h["device"].astype(np.int64),
               "error": h["error"].astype(np.int64)}
        if thr is not None and len(blk["time"]) and blk["time"].min() < thr:
            st["reorder_exceeded"] += int((blk["time"] < thr).sum())
        pend = blk if pend is None else {k: np.concatenate([pend[k], blk[k]]) for k in _KEEP}
        t = pend["time"]
        if len(t) <= reorder:
            continue
        cut = int(t[len(t) - reorder:].min())
        out = t < cut
        if not out.any():
            continue
        thr = cut if thr is None else max(thr, cut)
        sel = np.flatnonzero(out)
        o = sel[np.argsort(t[sel], kind="stable")]
        yield {k: v[o] for k, v in pend.items()}
        keep = ~out
        pend = {k: v[keep] for k, v in pend.items()}
    if pend is not None and len(pend["time"]):
        o = np.argsort(pend["time"], kind="stable")
        yield {k: v[o] for k, v in pend.items()}


def _trace_of(ev: dict[str, np.ndarray], t0: int, order: str) -> Trace:
    return Trace(time=ev["time"] - t0, sector=ev["sector"], nbytes=ev["nbytes"], action=ev["action"],
                 pid=ev["pid"], device=ev["device"], error=ev["error"], t0_ns=t0, comm={}, order=order)


#: event kinds the windowed pairing keeps (filesystem category only)
_PAIRED = (TA_Q, TA_M, TA_F, TA_G, TA_I, TA_D, TA_C)


@dataclass
class _Step:
    """One step of :class:`_Pairing`: :func:`io_tables` on the window's events (``tr``, ``ex`` its
    intermediate arrays, ``req`` and ``bios`` its tables), the window's action codes, the global event
    indices of its Q, C and M/F events, and the commit range [A, B) of global indices.  The commit masks
    are set by :meth:`_Pairing.commit_masks`: ``creq`` (C rows), ``cb`` (bio rows), ``breq`` (each bio's
    C row, −1: none) and ``bc`` (its global C index, −1: none)."""

    A: int
    B: int
    tr: Trace
    ex: dict[str, Any]
    req: pd.DataFrame
    bios: pd.DataFrame
    code: np.ndarray
    gQ: np.ndarray
    gC: np.ndarray
    gM: np.ndarray
    creq: np.ndarray | None = None
    cb: np.ndarray | None = None
    breq: np.ndarray | None = None
    bc: np.ndarray | None = None

    def merges_here(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(merge_q, merge_rows, here)``: each merge event's Q row (−1: none), its row among the window's
        M/F events, and whether it is in [A, B)."""
        mq, mrow = self.ex["merge_q"], self.ex["merge_rows"]
        mg = self.gM[mrow] if len(mrow) else self.gM
        return mq, mrow, (mg >= self.A) & (mg < self.B)


class _Pairing:
    """What :func:`_committed` carries from step to step: the kept events [S, N) (``win``, global event
    indices), the start A of the next commit range, the bios committed so far (global Q index, sorted)
    with the global C index they were committed with, the covering scans remembered for later C events
    (rows dev, lo, hi, t_last) and the filter of keys that left the window."""

    def __init__(self, window: int, st: dict):
        self.window, self.st, self.bounds = window, st, st["bounds"]
        self.bloom = _Bloom()
        self.win: dict[str, np.ndarray] | None = None
        self.S = self.N = self.A = 0
        self.done_q = np.zeros(0, dtype=np.int64)
        self.done_c = np.zeros(0, dtype=np.int64)
        self.chk = np.zeros((0, 4), dtype=np.int64)

    def bump(self, k: str, n: int) -> None:
        if n:
            self.bounds[k] = self.bounds.get(k, 0) + int(n)

    def add(self, ev: dict[str, np.ndarray]) -> None:
        """Append events (the kinds in ``_PAIRED``, time order) to the window."""
        self.win = ev if self.win is None else {k: np.concatenate([self.win[k], ev[k]]) for k in _KEEP}
        self.N += len(ev["time"])

    def full(self) -> bool:
        """Whether the window holds a commit range and its look-ahead margin."""
        return self.N - self.A >= 2 * self.window

    def step(self, final: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Pair the window, check what it cannot see, and commit: (request rows, bio rows) of this step."""
        s = self.pair(final)
        dropped = self.S > 0
        self.check_later_c(s)
        self.commit_masks(s)
        if dropped:
            self.check_lookups(s)
        self.check_late_merges(s)
        self.check_covering(s, dropped, final)
        self.count_notes(s)
        rows, bout = s.req[s.creq].copy(), s.bios[s.cb].copy()
        self.remember(s)
        if not final:
            self.slide(s.B, s.gQ)
        return rows, bout

    def pair(self, final: bool) -> _Step:
        """:func:`io_tables` on the window's events [S, N); the commit range is [A, A + W), or [A, N) at the end."""
        A = self.A
        B = self.N if final else A + self.window
        tr = _trace_of(self.win, 0, self.st["order"])
        ex: dict[str, Any] = {}
        req, bios, _ = io_tables(tr, ex)
        g = np.arange(self.S, self.N, dtype=np.int64)
        code = self.win["action"] & 0xFF
        return _Step(A, B, tr, ex, req, bios, code, g[code == TA_Q], g[code == TA_C],
                     g[(code == TA_M) | (code == TA_F)])

    def check_later_c(self, s: _Step) -> None:
        """Remembered covering scans against C events new to this window (a C after a committed scan at a
        sector it looked at)."""
        st, chk = self.st, self.chk
        newc = s.gC >= st["seen_upto"]
        if len(chk) and newc.any():
            cdv = self.win["device"][s.code == TA_C][newc]
            csec, ctt = s.req["sector"].to_numpy()[newc], s.req["c_ns"].to_numpy()[newc]
            rows_per = max(1, (1 << 22) // len(cdv))  # ≤ 4 M cells per comparison matrix, whatever the step
            for i in range(0, len(chk), rows_per):
                c = chk[i:i + rows_per]
                hit = ((cdv[None, :] == c[:, 0:1]) & (csec[None, :] >= c[:, 1:2]) & (csec[None, :] <= c[:, 2:3])
                       & (ctt[None, :] >= c[:, 3:4]))
                self.bump("covering_scan_later_c", int(hit.any(axis=1).sum()))
        st["seen_upto"] = self.N

    def commit_masks(self, s: _Step) -> None:
        """Which rows commit here: C events in [A, B), bios with their C there (or, without one, queued
        there) not committed before; a bio committed before must agree."""
        A, B, gC, gQ = s.A, s.B, s.gC, s.gQ
        s.creq = (gC >= A) & (gC < B)
        s.breq = breq = s.bios["req"].to_numpy()
        s.bc = bc = np.where(breq >= 0, gC[np.maximum(breq, 0)] if len(gC) else -1, -1)
        prev = np.isin(gQ, self.done_q)
        if prev.any():  # committed before: must agree
            j = np.searchsorted(self.done_q, gQ[prev])
            self.bump("later_window_disagrees", int((self.done_c[j] != bc[prev]).sum()))
        s.cb = ~prev & np.where(breq >= 0, (bc >= A) & (bc < B), (gQ >= A) & (gQ < B))
        self.bump("completion_before_window_step", int((~prev & (breq >= 0) & (bc < A)).sum()))

    def check_lookups(self, s: _Step) -> None:
        """Look-ups that found nothing in the window where a key that left it may match (the filter): a
        merge event's Q, a merged bio's parent, a completion's issue."""
        tr, ex, code, bloom = s.tr, s.ex, s.code, self.bloom
        mq, mrow, here = s.merges_here()
        mwin = here & (mq < 0)
        if mwin.any():
            mm = np.flatnonzero((code == TA_M) | (code == TA_F))[mrow[mwin]]
            self.bump("merge_q_may_precede_window", int(bloom.maybe(1, tr.device[mm], tr.sector[mm],
                                                                    tr.nbytes[mm] >> 9).sum()))
        pm = ex["parent_miss"] & s.cb
        if pm.any():
            q = code == TA_Q
            kind = s.bios["merge"].to_numpy()[pm]
            d, sec, n_ = tr.device[q][pm], tr.sector[q][pm], (tr.nbytes[q] >> 9)[pm]
            back = kind == "M"
            self.bump("parent_may_precede_window", int(bloom.maybe(2, d[back], sec[back]).sum())
                      + int(bloom.maybe(3, d[~back], (sec + n_)[~back]).sum()))
        dm = s.creq & (ex["d_of"] < 0)
        if dm.any():
            c = code == TA_C
            self.bump("issue_may_precede_window", int(bloom.maybe(4, tr.device[c][dm], tr.sector[c][dm]).sum()))

    def check_late_merges(self, s: _Step) -> None:
        """Merge events committed here whose Q was committed by an earlier step (a late merge)."""
        mq, mrow, here = s.merges_here()
        if len(mrow):
            mine = here & (mq >= 0)
            self.bump("merge_after_commit", int(np.isin(s.gQ[mq[mine]], self.done_q).sum()))

    def check_covering(self, s: _Step, dropped: bool, final: bool) -> None:
        """Covering-rule groups committed here: the sectors each scanned are probed in the filter (once
        events have left the window), and the scans remembered for later C events."""
        ex = s.ex
        fb = ex["fallback"]
        if not len(fb):
            return
        grp, c_of = ex["grp"], ex["c_of"]
        lo = ex["scan"].get("lo", np.full(len(fb), -1, dtype=np.int64))
        mine = s.cb[grp.index.to_numpy()[fb]]  # by the root bio (window Q row) of each group
        if not mine.any():
            return
        gd, gs = grp["dev"].to_numpy()[fb][mine], grp["start"].to_numpy()[fb][mine]
        gt, hit = grp["t_last"].to_numpy()[fb][mine], c_of[fb][mine] >= 0
        lo_ = lo[mine]
        if dropped:
            self.probe_scanned(gd, gs, hit, lo_)
        if not final:
            new = np.stack([gd, np.where(hit, lo_ + 1, np.maximum(lo_, 0)), gs, gt], axis=1)
            self.chk = np.concatenate([self.chk, new.astype(np.int64)])
            if len(self.chk) > _MAX_CHECKS:
                self.bump("covering_checks_dropped", len(self.chk) - _MAX_CHECKS)
                self.chk = self.chk[-_MAX_CHECKS:]

    def probe_scanned(self, gd: np.ndarray, gs: np.ndarray, hit: np.ndarray, lo_: np.ndarray) -> None:
        """Probe the filter for a C that left the window at each sector a covering scan looked at (device
        ``gd``, sectors ``lo_`` … ``gs``; unchecked when the scan ran out or spans over ``_MAX_PROBE``)."""
        span = np.where(lo_ >= 0, gs - lo_ + 1, 0)
        big = (lo_ < 0) & hit | (span > _MAX_PROBE)
        self.bump("covering_scan_unchecked", int(big.sum()))
        ok = hit & ~big & (span > 0)
        if ok.any():
            reps = span[ok]
            owner = np.repeat(np.arange(int(ok.sum())), reps)
            sec = np.repeat(lo_[ok], reps) + (np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps))
            mb = self.bloom.maybe(5, np.repeat(gd[ok], reps), sec)
            self.bump("covering_scan_may_see_older_c", int(np.unique(owner[mb]).size))

    def count_notes(self, s: _Step) -> None:
        """:func:`io_tables`' notes, counted for what commits here."""
        cnt, ex, cb = self.st["notes"], s.ex, s.cb
        mq, mrow, here = s.merges_here()
        if len(mrow):
            cnt["merges"] += int((here & (mq >= 0)).sum())
            cnt["merge_events_without_q"] += int((here & (mq < 0)).sum())
        pm = ex["parent_miss"] & cb
        kind = s.bios["merge"].to_numpy()
        cnt["back_merges_without_parent"] += int((pm & (kind == "M")).sum())
        cnt["front_merges_without_parent"] += int((pm & (kind == "F")).sum())
        isroot = ex["root"] == np.arange(len(s.gQ))
        cnt["bio_groups"] += int((isroot & cb).sum())
        cnt["bio_groups_without_completion"] += int((isroot & cb & (s.breq < 0)).sum())
        cnt["completions_without_issue"] += int((s.creq & (ex["d_of"] < 0)).sum())

    def remember(self, s: _Step) -> None:
        """Add the bios committed here (with their global C index) to the committed ones, sorted by Q."""
        done_q = np.concatenate([self.done_q, s.gQ[s.cb]])
        done_c = np.concatenate([self.done_c, s.bc[s.cb]])
        o = np.argsort(done_q, kind="stable")
        self.done_q, self.done_c = done_q[o], done_c[o]

    def slide(self, B: int, gQ: np.ndarray) -> None:
        """Next commit range from ``B``: events before its look-back margin leave the window (their keys
        go to the filter); a bio leaving uncommitted was in flight for more than W events."""
        self.A = B
        S2 = max(0, B - self.window)
        lost = (gQ < S2) & ~np.isin(gQ, self.done_q)
        self.bump("in_flight_beyond_window", int(lost.sum()))
        k = S2 - self.S
        if k > 0:
            self.forget({c: v[:k] for c, v in self.win.items()})
            self.win = {c_: v[k:] for c_, v in self.win.items()}
            self.S = S2
        live = self.done_q >= self.S
        self.done_q, self.done_c = self.done_q[live], self.done_c[live]

    def forget(self, ev: dict[str, np.ndarray]) -> None:
        """The filter keys of events leaving the window: Q (1: dev, sector, size; 2: dev, end; 3: dev,
        start), D (4: dev, sector), C (5: dev, sector)."""
        bloom = self.bloom
        c2 = ev["action"] & 0xFF
        q = c2 == TA_Q
        bloom.add(1, ev["device"][q], ev["sector"][q], ev["nbytes"][q] >> 9)
        bloom.add(2, ev["device"][q], ev["sector"][q] + (ev["nbytes"][q] >> 9))
        bloom.add(3, ev["device"][q], ev["sector"][q])
        d = c2 == TA_D
        bloom.add(4, ev["device"][d], ev["sector"][d])
        c = c2 == TA_C
        bloom.add(5, ev["device"][c], ev["sector"][c])


def _committed(path: Path, block_records: int, window: int, reorder: int, st: dict):
    """The pairing of :func:`io_tables`, window by window: yields (requests, bios) committed per step.

    Each step runs :func:`io_tables` on the events [A − W, B + W) (W = ``window``) and commits the C
    events in [A, B) with their bios, and the bios queued in [A, B) without a completion.  What a
    window cannot see is checked, and counted in ``st['bounds']`` when it may matter (then the result
    is marked partial): a lookup that found nothing in the window while a key that left it may match
    (filter, no false negatives); a bio still uncommitted when it leaves the window (in flight for
    more than W events); a committed result that a later window contradicts; a C event after the
    window at a sector a committed covering-rule result scanned."""
    pairing = _Pairing(window, st)
    t0 = None
    for ev in _sorted_batches(path, block_records, reorder, st):
        if t0 is None:
            t0 = int(ev["time"][0])
            st["t0"] = t0
        ev["time"] = ev["time"] - t0
        st["accumulate"](ev)
        act = ev["action"]
        code, cat = act & 0xFF, act >> 16
        fs = (cat & (TC_NOTIFY | TC_PC)) == 0
        keep = fs & np.isin(code, _PAIRED)
        pairing.add({k: v[keep] for k, v in ev.items()})
        while pairing.full():
            yield pairing.step(False)
    if pairing.win is not None:
        yield pairing.step(True)


def _vbin(v: np.ndarray) -> np.ndarray:
    """Coarse bin of a value (ns): 64 per power of two of |v| + 1, negative values below, monotone."""
    lb = np.minimum((np.log2(np.abs(v) + 1.0) * 64).astype(np.int64), _NBIN // 2 - 1)
    return np.where(v >= 0, _NBIN // 2 + lb, _NBIN // 2 - 1 - lb)


def _np_percentile(n: int, q: float, order_stat) -> float:
    """``numpy.percentile(v, q)`` (linear) from two order statistics ``order_stat(k)`` (0-based)."""
    qq = np.float64(q) / 100
    vi = (n - 1) * qq  # numpy's 'linear' virtual index
    lo = np.floor(vi)
    if vi >= n - 1:
        return float(order_stat(n - 1))
    if vi < 0:
        return float(order_stat(0))
    a, b = np.float64(order_stat(int(lo))), np.float64(order_stat(int(lo) + 1))
    t = np.float64(vi - lo)
    d = b - a
    return float(b - d * (1 - t)) if t >= 0.5 else float(a + d * t)


def _targets(n: int, q: float) -> list[int]:
    qq = np.float64(q) / 100
    vi = (n - 1) * qq  # numpy's 'linear' virtual index
    if vi >= n - 1:
        return [n - 1]
    if vi < 0:
        return [0]
    lo = int(np.floor(vi))
    return [lo, lo + 1]


#: the notes of :func:`io_tables` that :func:`parse_stream` counts step by step (``requeues``: per record)
_STREAM_NOTES = ("merge_events_without_q", "back_merges_without_parent", "front_merges_without_parent",
                 "bio_groups", "bio_groups_without_completion", "completions_without_issue", "merges")
_LATENCIES = ("q2c", "d2c", "q2d")


def _stream_pass(path: Path, block: int, window: int, reorder: int, collect) -> dict[str, Any]:
    """One pass over the trace: ``collect.records(ev)`` sees every batch of records (time order, ns since
    the first), ``collect.commit(rows, bios)`` every step's committed rows (:func:`_committed`); returns
    the pass's state: process names, ``bounds``, ``reorder_exceeded``, ``order``, ``t0``, ``notes``."""
    st: dict[str, Any] = {"comm": {}, "bounds": {}, "seen_upto": 0, "reorder_exceeded": 0, "order": "<",
                          "notes": {k: 0 for k in _STREAM_NOTES}}
    st["accumulate"] = collect.records
    for rows, bios in _committed(path, block, window, reorder, st):
        collect.commit(rows, bios)
    return st


class _StreamTotals:
    """The first pass of :func:`parse_stream`: counts, latency moments and coarse histograms, the
    per-second series, and the request rows (to ``req_sink`` when given, else kept in ``req``)."""

    def __init__(self, req_sink=None):
        self.req_sink = req_sink
        self.n = self.notify = self.pc = self.requeues = 0
        self.tmax = 0
        self.dev_events: dict[int, int] = {}
        self.merges: dict[tuple[int, str], int] = {}
        self.devs: set[int] = set()
        self.cnt: dict[tuple, list] = {}     # (dev, ddir) -> completed, bytes
        self.mom: dict[tuple, list] = {}     # (dev, ddir, metric) -> n, sum, max
        self.hist: dict[tuple, np.ndarray] = {}
        self.series: list[pd.DataFrame] = []
        self.req: list[pd.DataFrame] = []
        self.req_rows = 0
        self.queued: dict[tuple, list] = {}  # (dev, ddir) -> queued, bytes

    def records(self, ev: dict[str, np.ndarray]) -> None:
        """Per-record counts: records, notify and PC records, requeues, events and merges per device, queued."""
        act = ev["action"]
        code, cat = act & 0xFF, act >> 16
        self.n += len(act)
        if len(act):
            self.tmax = max(self.tmax, int(ev["time"][-1]))
        nt = (cat & TC_NOTIFY) != 0
        self.notify += int(nt.sum())
        self.pc += int(((cat & TC_PC) != 0).sum())
        fs = (cat & (TC_NOTIFY | TC_PC)) == 0
        self.requeues += int((fs & (code == TA_R)).sum())
        u, c = np.unique(ev["device"], return_counts=True)
        self.devs.update(int(x) for x in u)
        u, c = np.unique(ev["device"][~nt], return_counts=True)
        for d, k in zip(u, c):
            self.dev_events[int(d)] = self.dev_events.get(int(d), 0) + int(k)
        w = (cat & TC_WRITE) != 0
        mf = fs & ((code == TA_M) | (code == TA_F))
        for ddir, sel in (("write", mf & w), ("read", mf & ~w)):
            u, c = np.unique(ev["device"][sel], return_counts=True)
            for d, k in zip(u, c):
                self.merges[(int(d), ddir)] = self.merges.get((int(d), ddir), 0) + int(k)
        q = fs & (code == TA_Q)
        if q.any():
            df = pd.DataFrame({"dev": ev["device"][q], "w": w[q], "b": (ev["nbytes"][q] >> 9) * 512})
            for (d, ww), gq in df.groupby(["dev", "w"]):
                k = (int(d), "write" if ww else "read")
                a = self.queued.setdefault(k, [0, 0])
                a[0] += len(gq)
                a[1] += int(gq["b"].sum())

    def commit(self, rows: pd.DataFrame, bios: pd.DataFrame) -> None:
        """One step's committed request rows and bios."""
        if self.req_sink is not None:  # straight to the caller's part: never all in memory
            if len(rows):
                self.req_sink(rows)
                self.req_rows += len(rows)
        else:
            self.req.append(rows)
        for (d, dd), r in rows.groupby(["dev", "ddir"]):
            a = self.cnt.setdefault((int(d), dd), [0, 0])
            a[0] += len(r)
            a[1] += int(r["nbytes"].sum())
        self.latencies(bios)
        if len(rows):
            self.per_second(rows)

    def latencies(self, bios: pd.DataFrame) -> None:
        """Count, sum, max and coarse histogram (:func:`_vbin`) of each bio latency per device and direction."""
        for (d, dd), b in bios.groupby(["dev", "ddir"]):
            for m in _LATENCIES:
                v = b[f"{m}_ns"].to_numpy()
                v = v[np.isfinite(v)]
                if not len(v):
                    continue
                k = (int(d), dd, m)
                a = self.mom.setdefault(k, [0, 0.0, -np.inf])
                a[0] += len(v)
                a[1] += float(v.sum())
                a[2] = max(a[2], float(v.max()))
                h = self.hist.setdefault(k, np.zeros(_NBIN, dtype=np.int64))
                h += np.bincount(_vbin(v), minlength=_NBIN)

    def per_second(self, rows: pd.DataFrame) -> None:
        """Per (dev, ddir, second of completion): requests ``n``, bytes ``b``, D2C and Q2C sums (ns) and counts."""
        sec = np.floor(rows["c_ns"].to_numpy() / 1e9).astype(np.int64)
        d2c, q2c = rows["d2c_ns"].to_numpy(), rows["q2c_ns"].to_numpy()
        df = pd.DataFrame({"dev": rows["dev"].to_numpy(), "ddir": rows["ddir"].to_numpy(), "sec": sec,
                           "n": 1, "b": rows["nbytes"].to_numpy().astype(np.float64),
                           "ds": np.nan_to_num(d2c), "dn": np.isfinite(d2c).astype(np.int64),
                           "qs": np.nan_to_num(q2c), "qn": np.isfinite(q2c).astype(np.int64)})
        agg = df.groupby(["dev", "ddir", "sec"]).sum()
        self.series.append(agg)
        if len(self.series) > 8:
            self.series = [pd.concat(self.series).groupby(level=[0, 1, 2]).sum()]


def _stream_jobs(devs: list[int]) -> list[int | None]:
    """The summary's jobs in :func:`parse`'s order: each device, then None ("all") for two or more."""
    return [d for d in devs + [None] if not (d is None and len(devs) < 2)]


def _members(devs: list[int], job: int | None, dd: str) -> list[tuple[int, str]]:
    """The (dev, ddir) keys a summary job and direction (``""``: both) sums over."""
    return [(d, x) for d in (devs if job is None else [job]) for x in (("read", "write") if dd == "" else (dd,))]


def _order_stat_targets(hist: dict[tuple, np.ndarray], devs: list[int]) -> dict[tuple, dict[int, tuple[int, int]]]:
    """Order statistics the percentiles need, per (job, ddir, metric): target rank → (coarse bin, rank
    within the bin), from the first pass's histograms."""
    need: dict[tuple, dict[int, tuple[int, int]]] = {}
    for job in _stream_jobs(devs):
        for dd in ("read", "write", ""):
            for m in _LATENCIES:
                ks = [k for k in _members(devs, job, dd) if (*k, m) in hist]
                if not ks:
                    continue
                h = sum(hist[(*k, m)] for k in ks)
                n = int(h.sum())
                cum = np.cumsum(h)
                tg = {}
                for q in PERCENTILES:
                    for r in _targets(n, q):
                        b = int(np.searchsorted(cum, r, side="right"))
                        tg[r] = (b, r - (int(cum[b - 1]) if b else 0))
                need[(job, dd, m)] = tg
    return need


class _OrderStats:
    """The second pass of :func:`parse_stream`: the distinct values (and their counts) of each bin that
    holds a needed order statistic, per (job, ddir, metric)."""

    def __init__(self, need: dict[tuple, dict[int, tuple[int, int]]]):
        self.need = need
        self.kept: dict[tuple, dict[int, tuple[np.ndarray, np.ndarray]]] = {}

    def records(self, ev) -> None:
        pass

    def commit(self, rows: pd.DataFrame, bios: pd.DataFrame) -> None:
        for (job, dd, m), tg in self.need.items():
            sel = np.ones(len(bios), bool)
            if job is not None:
                sel &= (bios["dev"] == job).to_numpy()
            if dd:
                sel &= (bios["ddir"] == dd).to_numpy()
            v = bios[f"{m}_ns"].to_numpy()[sel]
            v = v[np.isfinite(v)]
            if not len(v):
                continue
            bins = _vbin(v)
            kk = self.kept.setdefault((job, dd, m), {})
            for b in {b for b, _ in tg.values()}:
                u, c = np.unique(v[bins == b], return_counts=True)
                if b in kk:
                    u0, c0 = kk[b]
                    u, inv = np.unique(np.concatenate([u0, u]), return_inverse=True)
                    c = np.bincount(inv, weights=np.concatenate([c0, c])).astype(np.int64)
                kk[b] = (u, c)


def _stream_latency_rows(rows_out: list, name: str, key: tuple, ks: list, p1: _StreamTotals,
                         p2: _OrderStats) -> None:
    """Summary rows ``<metric>_mean _p50 _p95 _p99 _max`` (ns) of one metric of one job and direction
    (``key`` = (job, ddir, metric), ``ks`` its (dev, ddir) members)."""
    job, dd, m = key
    mm = [p1.mom[(*k, m)] for k in ks if (*k, m) in p1.mom]
    n = sum(a[0] for a in mm)
    if not n:
        return
    rows_out.append((name, dd, f"{m}_mean", sum(a[1] for a in mm) / n, "ns"))
    tg, kk = p2.need[key], p2.kept.get(key, {})

    def stat(r):
        b, rr = tg[r]
        u, c = kk[b]
        return u[np.searchsorted(np.cumsum(c), rr, side="right")]

    for p in PERCENTILES:
        rows_out.append((name, dd, f"{m}_p{p}", _np_percentile(n, p, stat), "ns"))
    rows_out.append((name, dd, f"{m}_max", max(a[2] for a in mm), "ns"))


def _stream_summary(p1: _StreamTotals, p2: _OrderStats, devs: list[int], span_s: float) -> list:
    """The summary rows, in :func:`parse`'s order."""
    rows_out: list = []
    for job in _stream_jobs(devs):
        name = "all" if job is None else dev_name(int(job))
        if job is not None:
            rows_out.append((name, "", "events", float(p1.dev_events.get(job, 0)), "count"))
        for dd in ("read", "write", ""):
            ks = _members(devs, job, dd)
            comp = sum(p1.cnt.get(k, [0, 0])[0] for k in ks)
            cbytes = sum(p1.cnt.get(k, [0, 0])[1] for k in ks)
            rows_out.append((name, dd, "completed", float(comp), "count"))
            rows_out.append((name, dd, "completed_bytes", float(cbytes), "B"))
            rows_out.append((name, dd, "queued", float(sum(p1.queued.get(k, [0, 0])[0] for k in ks)), "count"))
            rows_out.append((name, dd, "queued_bytes", float(sum(p1.queued.get(k, [0, 0])[1] for k in ks)), "B"))
            rows_out.append((name, dd, "merges", float(sum(p1.merges.get(k, 0) for k in ks)), "count"))
            if span_s > 0:
                rows_out.append((name, dd, "iops", comp / span_s, "1/s"))
                rows_out.append((name, dd, "bw", float(cbytes) / span_s, "B/s"))
            for m in _LATENCIES:
                _stream_latency_rows(rows_out, name, (job, dd, m), ks, p1, p2)
    rows_out.append(("all" if len(devs) > 1 else dev_name(int(devs[0])) if devs else "", "", "span", span_s, "s"))
    return rows_out


def _stream_series(source: str, parts: list[pd.DataFrame]) -> list:
    """The per-second series (``iops bw d2c_mean q2c_mean``) from the first pass's partial sums."""
    frames = []
    if parts:
        agg = pd.concat(parts).groupby(level=[0, 1, 2]).sum().sort_index()
        for (dev, ddir), a in agg.groupby(level=[0, 1], sort=True):
            t = a.index.get_level_values(2).to_numpy().astype(np.float64)
            job = dev_name(int(dev))
            dn, qn = a["dn"].to_numpy(), a["qn"].to_numpy()
            frames.append(series_frame(source, job, ddir, "iops", "1/s", t, a["n"].to_numpy(np.float64)))
            frames.append(series_frame(source, job, ddir, "bw", "B/s", t, a["b"].to_numpy(np.float64)))
            with np.errstate(invalid="ignore", divide="ignore"):
                frames.append(series_frame(source, job, ddir, "d2c_mean", "ns", t,
                                           np.where(dn > 0, a["ds"].to_numpy() / dn, np.nan)))
                frames.append(series_frame(source, job, ddir, "q2c_mean", "ns", t,
                                           np.where(qn > 0, a["qs"].to_numpy() / qn, np.nan)))
    return frames


def _stream_meta(st: dict[str, Any], p1: _StreamTotals, devs: list[int], streamed: dict[str, Any],
                 bounds: dict[str, int]) -> dict[str, Any]:
    """:func:`parse_stream`'s meta: :func:`parse`'s keys, ``streamed`` (its steps and passes), the
    ``stream_bounds`` counts and, with a request sink, ``requests_streamed``."""
    meta_req = {"requests_streamed": int(p1.req_rows)} if p1.req_sink is not None else {}
    return {
        "tool_version": f"blk_io_trace v{VERSION}", "byte_order": "little" if st["order"] == "<" else "big",
        "records": int(p1.n), "t0_ns": int(st.get("t0", 0)), "devices": [dev_name(int(d)) for d in devs],
        "notify_records": int(p1.notify), "pc_records": int(p1.pc), "process_names": st["comm"],
        **st["notes"], "requeues": int(p1.requeues), "streamed": streamed, "stream_bounds": bounds, **meta_req}


def parse_stream(path: str | Path, sink=None, block_records: int | None = None,
                 window_records: int | None = None, reorder_records: int | None = None) -> Parsed:
    """A binary trace read in blocks of ``block_records`` records with bounded memory; the same
    summary, series, ``tables['requests']`` and meta counts as :func:`parse` (means merged per step: equal
    within 1e-12 relative as tested; percentiles exact, in two passes: a coarse histogram (64 bins per power of two),
    then the distinct values of the bins holding the needed order statistics).  No ``bios`` table.

    The pairing runs window by window (:func:`_committed`): rules whose look-back or look-ahead leaves
    the window of ``window_records`` events are checked and, where they may matter, counted in
    ``meta['stream_bounds']`` and the result marked partial.  Records out of time order by more than
    ``reorder_records`` records are counted in ``meta['stream_bounds']['reorder']`` (partial too).
    ``sink(frame)`` receives the series once, at the end (then ``Parsed.series`` is empty: a few rows per
    second of trace); when the sink has a ``requests`` method, the request rows go to it step by step
    (then ``tables['requests']`` is empty and ``meta['requests_streamed']`` counts them), otherwise they
    are concatenated into ``tables['requests']``."""
    path = Path(path)
    block = block_records or BLOCK_RECORDS
    window = max(window_records or WINDOW_RECORDS, 1)
    reorder = reorder_records if reorder_records is not None else max(REORDER_RECORDS, block)
    p1 = _StreamTotals(getattr(sink, "requests", None))
    st = _stream_pass(path, block, window, reorder, p1)
    devs = sorted(p1.devs)
    need = _order_stat_targets(p1.hist, devs)
    p2 = _OrderStats(need)
    if need:
        _stream_pass(path, block, window, reorder, p2)
    span_s = float(p1.tmax) / 1e9 if p1.n else 0.0
    source = path.name
    summary = summary_frame(source, _stream_summary(p1, p2, devs, span_s))
    frames = _stream_series(source, p1.series)
    requests = (pd.concat(p1.req, ignore_index=True) if p1.req else
                io_tables(_trace_of({k: np.zeros(0, np.int64) for k in _KEEP}, 0, "<"))[0])
    bounds = dict(st["bounds"])
    if st["reorder_exceeded"]:
        bounds["reorder"] = st["reorder_exceeded"]
    streamed = {"block_records": block, "window_records": window, "reorder_records": reorder,
                "passes": 2 if need else 1, "percentiles": "exact: a histogram pass, then the distinct "
                "values of the bins holding the order statistics"}
    meta = _stream_meta(st, p1, devs, streamed, bounds)
    series = categorize(pd.concat([as_frame(f) for f in frames], ignore_index=True)) if frames else None
    out = Parsed(path=str(path), kind=KIND, meta=meta, summary=summary, tables={"requests": requests})
    if bounds:
        out.partial = True
    if series is not None:
        if sink is not None:
            sink(series)
            meta["series_rows"] = int(len(series))
        else:
            out.series = series
    return out

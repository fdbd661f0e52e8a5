"""Per-OSD op-queue depth and CPU, sampled through each OSD's admin socket (Ceph 16.2 / 18.2).

``dump_op_pq_state`` prints nothing useful for either queue in 16.2.15, so the depth is the count of
ops in ``dump_ops_in_flight`` whose ``type_data.flag_point`` is ``queued for pg`` (client ops and
replica sub-ops waiting in the op queue; background work — scrub, snaptrim, recovery — is queued too
but is not listed there).  The admin socket is spoken directly (the ``ceph daemon`` CLI costs ~0.3 s
of CPU per call on this 2-core VM, 4 OSDs a second would be most of a core): send the JSON command
and a NUL, read a 4-byte big-endian length, then that many bytes of JSON.  Stdlib only.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

QUEUED = "queued for pg"
CLK = os.sysconf("SC_CLK_TCK")


def asok_command(path: str | Path, prefix: str, timeout: float = 2.0) -> Any:
    """One admin-socket command → its JSON reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix, "format": "json"}).encode() + b"\0")
        head = b""
        while len(head) < 4:
            b = s.recv(4 - len(head))
            if not b:
                raise ConnectionError(f"{path}: closed before the reply length")
            head += b
        (n,) = struct.unpack(">I", head)
        buf = bytearray()
        while len(buf) < n:
            b = s.recv(min(1 << 20, n - len(buf)))
            if not b:
                raise ConnectionError(f"{path}: closed after {len(buf)} of {n} bytes")
            buf += b
    return json.loads(bytes(buf))


def queue_counts(doc: Any) -> dict[str, int]:
    """``dump_ops_in_flight`` JSON → ``queued`` (flag_point ``queued for pg``) and ``in_flight``."""
    ops = (doc or {}).get("ops", []) if isinstance(doc, dict) else []
    queued = sum(1 for op in ops if (op.get("type_data") or {}).get("flag_point") == QUEUED)
    return {"queued": queued, "in_flight": len(ops)}


def proc_cpu_ticks(pid: int) -> int | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, IndexError, ValueError):
        return None


class OsdProbe:
    """Called once a tick by :class:`capture.ceph.monitor.SysMon` (sockets ``<run_dir>/osd.N.asok``, as
    :func:`capture.ceph.config.render_ceph_conf` names them): per OSD ``queued``, ``in_flight``
    (counts) and ``cpu`` (fraction of one CPU since the previous tick).  ``pids`` is a callable that
    returns the current ``{"osd.N": pid}`` (OSDs restart between runs).  With ``pool`` (a pool id) also
    ``pool_in_flight``: the ops in flight whose PG is in that pool (their description names the PG
    ``<pool>.<seed>``; e.g. RGW's bucket-index ops)."""

    def __init__(self, run_dir: Path, pids, pool: int | None = None) -> None:
        self.run_dir, self.pids, self.pool = Path(run_dir), pids, pool
        self.prev: dict[str, tuple[float, int]] = {}

    def __call__(self) -> dict[str, dict[str, float | int | None]]:
        out: dict[str, dict[str, float | int | None]] = {}
        now = time.time()
        for name, pid in sorted(self.pids().items()):
            if not name.startswith("osd."):
                continue
            rec: dict[str, float | int | None] = {}
            try:
                doc = asok_command(self.run_dir / f"{name}.asok", "dump_ops_in_flight")
                rec.update(queue_counts(doc))
                if self.pool is not None:
                    tag = f" {self.pool}."
                    rec["pool_in_flight"] = sum(1 for op in (doc or {}).get("ops", [])
                                                if tag in str(op.get("description", "")))
            except (OSError, ValueError, ConnectionError):
                rec.update(queued=None, in_flight=None)  # a restarting OSD: no sample, not zero
                if self.pool is not None:
                    rec["pool_in_flight"] = None
            ticks = proc_cpu_ticks(pid)
            last = self.prev.get(name)
            if ticks is not None and last is not None and last[1] <= ticks and now > last[0]:
                rec["cpu"] = round((ticks - last[1]) / CLK / (now - last[0]), 4)
            else:
                rec["cpu"] = None
            if ticks is not None:
                self.prev[name] = (now, ticks)
            out[name] = rec
        return out

"""System utilisation at 1 Hz from /proc, and the CPU taken by work outside the benchmark.

``SysMon`` writes JSONL: per line ``t`` (unix s), ``cpu`` (per-CPU busy fraction since the previous
line, from /proc/stat: everything but idle+iowait), ``iowait`` per CPU, ``mem`` (MemTotal,
MemAvailable, Cached in B), ``steal`` per CPU (time the hypervisor ran something else), ``disk`` (per device from /proc/diskstats:
reads, writes, read/written bytes, io_ms — deltas since the previous line), ``load`` (1-min load
average), and with a probe (:class:`capture.ceph.opqueue.OsdProbe`) ``osd``: per OSD ``queued``,
``in_flight`` (ops) and ``cpu`` (fraction of one CPU).
``outside_cpu`` compares the machine's busy CPU time with the CPU time of the benchmark's processes.
"""

from __future__ import annotations

import json
import os
import re
import resource
import threading
import time
from pathlib import Path

CLK = os.sysconf("SC_CLK_TCK")
DISK_RE = re.compile(r"^(vd[a-z]+|sd[a-z]+|nvme\d+n\d+|loop\d+|xvd[a-z]+)$")


def cpu_times() -> dict[str, list[int]]:
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu"):
            f = line.split()
            out[f[0]] = [int(x) for x in f[1:]]
    return out


def busy_s(before: list[int], after: list[int]) -> float:
    """Busy CPU seconds between two /proc/stat rows (user..steal minus idle, iowait; no guest)."""
    d = [a - b for a, b in zip(after[:8], before[:8])]
    return (sum(d) - d[3] - d[4]) / CLK


def proc_cpu_s(pid: int) -> float | None:
    """utime + stime of a process and its waited-for children (s), or None if it is gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / CLK
    except (OSError, IndexError, ValueError):
        return None


def diskstats() -> dict[str, list[int]]:
    out = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if len(f) >= 14 and DISK_RE.match(f[2]):
            # reads, sectors read, writes, sectors written, io_ms
            out[f[2]] = [int(f[3]), int(f[5]), int(f[7]), int(f[9]), int(f[12])]
    return out


def meminfo() -> dict[str, int]:
    want = {"MemTotal", "MemAvailable", "Cached"}
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in want:
            out[k] = int(v.split()[0]) * 1024
    return out


class SysMon(threading.Thread):
    def __init__(self, path: Path, interval: float = 1.0, probe=None, procs=None) -> None:
        """``probe()`` → the line's ``osd`` section (:class:`capture.ceph.opqueue.OsdProbe`); ``procs()`` →
        its ``proc`` section, ``{name: {"cpu": fraction of one CPU}}`` (e.g. radosgw)."""
        super().__init__(daemon=True)
        self.path, self.interval, self.probe, self.procs = path, interval, probe, procs
        self.stop_evt = threading.Event()

    def run(self) -> None:
        prev_c, prev_d = cpu_times(), diskstats()
        nxt = time.time()
        with open(self.path, "w", buffering=1) as out:
            while not self.stop_evt.is_set():
                nxt += self.interval
                self.stop_evt.wait(max(0.0, nxt - time.time()))
                c, d = cpu_times(), diskstats()
                cpu, iow, steal = {}, {}, {}
                for k, v in c.items():
                    if k == "cpu":
                        continue
                    tot = sum(a - b for a, b in zip(v[:8], prev_c[k][:8])) or 1
                    cpu[k] = round(busy_s(prev_c[k], v) * CLK / tot, 4)
                    iow[k] = round((v[4] - prev_c[k][4]) / tot, 4)
                    steal[k] = round((v[7] - prev_c[k][7]) / tot, 4) if len(v) > 7 else 0.0
                disk = {k: [a - b for a, b in zip(v, prev_d.get(k, v))] for k, v in d.items()}
                disk = {k: {"reads": x[0], "read_B": x[1] * 512, "writes": x[2], "write_B": x[3] * 512,
                            "io_ms": x[4]} for k, x in disk.items() if any(x)}
                rec = {"t": round(time.time(), 3), "cpu": cpu, "iowait": iow, "steal": steal,
                       "mem": meminfo(), "disk": disk,
                       "load": float(Path("/proc/loadavg").read_text().split()[0])}
                if self.probe is not None:
                    try:
                        rec["osd"] = self.probe()
                    except Exception as e:  # a sample lost, never the monitor
                        rec["osd_error"] = f"{type(e).__name__}: {e}"[:200]
                if self.procs is not None:
                    rec["proc"] = self.procs()
                out.write(json.dumps(rec, separators=(",", ":")) + "\n")
                prev_c, prev_d = c, d

    def stop(self) -> None:
        self.stop_evt.set()
        self.join(5)


class CpuAccount:
    """Busy CPU of the whole machine vs CPU of the benchmark (daemons, fio, pollers, this harness
    and every child it waited for) over a run; the difference is work outside the benchmark."""

    def __init__(self) -> None:
        self.t0 = time.time()
        self.c0 = cpu_times()["cpu"]
        self.self0 = self._self()
        self.pid0: dict[int, float] = {}

    @staticmethod
    def _self() -> float:
        a = resource.getrusage(resource.RUSAGE_SELF)
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    def track(self, pids: list[int]) -> None:
        for p in pids:
            if p not in self.pid0:
                v = proc_cpu_s(p)
                if v is not None:
                    self.pid0[p] = v

    def result(self, pids: list[int], bench_extra_s: float = 0.0) -> dict[str, float]:
        """``bench_extra_s``: CPU of benchmark processes that ended after ``track`` (e.g. fio, waited
        by a thread and so already in RUSAGE_CHILDREN — do not pass those twice)."""
        wall = time.time() - self.t0
        busy = busy_s(self.c0, cpu_times()["cpu"])
        bench = self._self() - self.self0 + bench_extra_s
        for p in set(pids) | set(self.pid0):
            v = proc_cpu_s(p)
            if v is not None and p in self.pid0:
                bench += v - self.pid0[p]
        outside = max(0.0, busy - bench)
        c1 = cpu_times()["cpu"]
        d = [a - b for a, b in zip(c1[:8], self.c0[:8])]
        steal = d[7] / sum(d) if len(d) > 7 and sum(d) > 0 else 0.0
        return {"steal_frac": round(steal, 4), "wall_s": round(wall, 3), "machine_busy_cpu_s": round(busy, 3),
                "benchmark_cpu_s": round(bench, 3), "outside_cpu_s": round(outside, 3),
                "outside_cpu_frac": round(outside / wall, 4) if wall > 0 else 0.0,
                "ncpu": os.cpu_count() or 1}

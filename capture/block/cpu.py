"""CPU taken by work outside a block benchmark.

On a loop device much of the benchmark's own CPU runs in kernel threads (the loop workers that submit
the direct IO, kworkers, ksoftirqd) and in interrupt context, none of which is fio's process time.
Counting it as "outside" (as the Ceph harness's ``CpuAccount`` does) would mark every busy run as
disturbed, so here

    outside = machine busy (user + nice + system + irq + softirq) − this harness and its children (fio)
              − CPU of kernel threads (PF_KTHREAD)

over the run, also minus the CPU of long-lived benchmark processes named with ``track`` (the Ceph
daemons of the rados campaign, which are not waited-for children): what is left is user-space work by
other processes, including short-lived ones (a
compiler started by a build), which per-process sampling would miss.  Steal time is reported apart.
Interrupt time is not subtracted on its own: on this kernel the softirq work of a loop device shows
both in /proc/stat's softirq column and in ksoftirqd's stime, so subtracting both made ``outside``
negative on a quiet machine (measured in the smoke campaign).  All inputs are tick-sampled, so a
few-second run carries ~±0.2 CPU-s of noise; ``outside_cpu_signed_s`` keeps the unclamped value.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

CLK = os.sysconf("SC_CLK_TCK")
PF_KTHREAD = 0x00200000


def _stat_cpu() -> dict[str, float]:
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    v = [int(x) / CLK for x in f[1:9]]
    return {"user": v[0], "nice": v[1], "system": v[2], "irq": v[5], "softirq": v[6], "steal": v[7]}


def _kthreads() -> dict[tuple[int, int], float]:
    """(pid, start time) → utime + stime (s) of every kernel thread."""
    out = {}
    for d in os.scandir("/proc"):
        if not d.name.isdigit():
            continue
        try:
            with open(f"/proc/{d.name}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[6]) & PF_KTHREAD:
            out[(int(d.name), int(f[19]))] = (int(f[11]) + int(f[12])) / CLK
    return out


def _self() -> float:
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _proc_cpu(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / CLK


class OutsideCpu:
    def __init__(self, pids: list[int] | None = None) -> None:
        self.t0 = time.time()
        self.s0 = _stat_cpu()
        self.k0 = _kthreads()
        self.self0 = _self()
        self.p0 = {p: v for p in (pids or []) if (v := _proc_cpu(p)) is not None}

    def result(self) -> dict[str, float]:
        wall = time.time() - self.t0
        s1, k1 = _stat_cpu(), _kthreads()
        d = {k: s1[k] - self.s0[k] for k in s1}
        busy = d["user"] + d["nice"] + d["system"]
        bench = _self() - self.self0
        for p, v0 in self.p0.items():  # a daemon that died keeps what it used until its last read
            v = _proc_cpu(p)
            bench += (v - v0) if v is not None else 0.0
        kthr = sum(v - self.k0.get(key, 0.0) for key, v in k1.items())
        signed = busy + d["irq"] + d["softirq"] - bench - kthr
        outside = max(0.0, signed)
        r = lambda x: round(x, 3)  # noqa: E731
        return {"wall_s": r(wall), "machine_busy_cpu_s": r(busy + d["irq"] + d["softirq"]),
                "benchmark_cpu_s": r(bench), "kernel_threads_cpu_s": r(kthr),
                "irq_cpu_s": r(d["irq"] + d["softirq"]), "steal_cpu_s": r(d["steal"]),
                "outside_cpu_s": r(outside), "outside_cpu_signed_s": r(signed), "outside_cpu_frac": round(outside / wall, 4) if wall > 0 else 0.0,
                "ncpu": os.cpu_count() or 1}

"""getput's result lines, written the way getput prints them (Mark Seger's getput, commit 8df6328,
``../shared/tools/getput/getput``: ``print_header``, ``print_line``, ``median_calc``, ``cvt2KMG``,
``ptime``; read for the format only, getput is Python 2 and does not run here).

Header ``Test Clts Proc OSize Start End MB/Sec Ops Ops/Sec Errs Latency Median LatRange %CPU Ret``;
one line per test: ``Proc`` is the process count on the total line and the process number on the
``--psum`` per-process lines before it; ``Clts`` is printed as 1; ``OSize`` is 4m/128k style (exact
multiples of 1024 only); ``Start``/``End`` are local HH:MM:SS; ``MB/Sec`` is the sum over processes of
ops × size / elapsed / 2**20 (MiB/s, despite the name); ``Ops/Sec`` the sum of ops / elapsed;
``Latency`` the mean and ``Median`` the upper median (``list[n // 2]``) in seconds; ``LatRange`` min-max
in seconds (``%5.2f-%05.2f``); ``%CPU`` the machine's non-idle, non-iowait share of /proc/stat's first seven fields over the
test; ``Ret`` the retries.  With ``rank`` (getput's ``--rank``, ``'0'`` unless given: what getput run by CBT
prints) a ``Rank`` column comes first: ``"%4s " % 'Rank'`` in the header, ``"%-4s " % rank`` on each line.
Pure functions: no boto3 or Ceph needed (tests/test_capture_rgw.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

TEST_NAMES = {"p": "put", "P": "putR", "g": "get", "G": "getR", "d": "del", "D": "delR"}


def header(rank: str | None = None) -> str:
    """getput's column header (no --ldist or --utc; the Rank column when ``rank`` is given)."""
    h = ("%4s " % "Rank" if rank else "") + "%4s  %4s %4s %6s  %-8s  %-8s %8s %5s" % ("Test", "Clts", "Proc", "OSize", "Start", "End", "MB/Sec", "Ops")
    h += "%10s %4s %7s %7s  %10s" % ("Ops/Sec", "Errs", "Latency", "Median", "LatRange")
    return h + "   %CPU" + " Ret"


def size_kmg(n: int) -> str:
    """4194304 → '4m', 1000 → '1000' (getput's cvt2KMG: suffixes only for exact multiples of 1024)."""
    if n % 1024:
        return str(n)
    v, suffix = n, ""
    for s in "kmg":
        if v <= 1023 or v % 1024:
            break
        v, suffix = v // 1024, s
    return f"{v}{suffix}"


def hms(t: float) -> str:
    """Local wall-clock HH:MM:SS, as getput's ``ptime`` (the 4th field of ``time.ctime``)."""
    return time.ctime(t).split()[3]


def upper_median(values: Sequence[float]) -> float:
    """getput's ``median_calc``: the element at n // 2 of the sorted list (0 when empty)."""
    s = sorted(values)
    return s[len(s) // 2] if s else 0.0


def cpu_busy_percent(stat_before: str, stat_after: str) -> float:
    """%CPU from two ``cpu `` lines of /proc/stat: fields 1–7 (user nice system idle iowait irq softirq)
    summed as the total, all but idle and iowait as busy."""
    a, b = stat_before.split(), stat_after.split()
    d = [int(b[i]) - int(a[i]) for i in range(1, 8)]
    tot = sum(d)
    return 100.0 * (tot - d[3] - d[4]) / tot if tot else 0.0


@dataclass
class ProcResult:
    """One process's share of a test: ops, errors, per-op latencies (s), its first start and last end
    (Unix s), retries, and the bytes of one op (the object size; a get's bytes read)."""
    ops: int
    errs: int
    latencies: list[float] = field(default_factory=list)
    t0: float = 0.0
    tf: float = 0.0
    retries: int = 0
    xfer: int = 0

    @property
    def elapsed(self) -> float:
        return self.tf - self.t0


def line(test: str, procs: int, r: ProcResult, rate_mib_s: float, ops_s: float, cpu: float,
         latencies: Sequence[float], lat_total: float, lat_min: float, lat_max: float,
         rank: str | None = None) -> str:
    """One result line as getput's ``print_line`` formats it."""
    latency = "%7.3f" % (lat_total / r.ops) if r.ops else "000.00"
    if not r.ops:
        lat_min = lat_max = 0.0
    s = ("%-4s " % rank if rank else "") + "%-5s %4d %4s %6s  %8s  %8s %8.2f %5d" % (TEST_NAMES.get(test, test), 1, procs, size_kmg(r.xfer),
                                                 hms(r.t0), hms(r.tf), rate_mib_s, r.ops)
    s += "%10.2f %4d %s %7.3f %5.2f-%05.2f" % (ops_s, r.errs, latency, upper_median(latencies), lat_min, lat_max)
    return s + "  %5.2f" % cpu + " %3d" % r.retries


def test_lines(test: str, results: list[ProcResult], cpu: float, psum: bool = False,
               rank: str | None = None) -> list[str]:
    """The lines getput prints for one test over ``results`` (one per process): with ``psum`` one line
    per process (Proc = its number, 0-based as getput's instance), then the total (Proc = process count,
    MB/Sec and Ops/Sec summed over processes, latency over every op, earliest start, latest end; Ret the
    last process's retries, as getput's loop leaves it)."""
    out, rate_t, iops_t, all_lat = [], 0.0, 0.0, []
    for i, r in enumerate(results):
        rate = r.ops * r.xfer / r.elapsed / 1024 / 1024 if r.elapsed > 0 else 0.0
        iops = r.ops / r.elapsed if r.elapsed > 0 else 0.0
        if psum:
            out.append(line(test, i, r, rate, iops, cpu, r.latencies, sum(r.latencies),
                            min(r.latencies, default=0.0), max(r.latencies, default=0.0), rank))
        rate_t += rate
        iops_t += iops
        all_lat += r.latencies
    tot = ProcResult(ops=sum(r.ops for r in results), errs=sum(r.errs for r in results),
                     t0=min(r.t0 for r in results), tf=max(r.tf for r in results),
                     retries=results[-1].retries, xfer=results[-1].xfer)  # getput prints the last process's
    out.append(line(test, len(results), tot, rate_t, iops_t, cpu, all_lat, sum(all_lat),
                    min(all_lat, default=0.0), max(all_lat, default=0.0), rank))
    return out

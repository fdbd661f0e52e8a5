"""Per-OSD IO limits with the kernel's blkio controller: each ``ceph-osd`` in its own cgroup with read
and write IOPS limits on the disk that holds its BlueStore file (../shared/notes/ceph-throttled-osd.md).

Why: unthrottled OSDs on 2 vCPUs are CPU-bound and their op queue holds a handful of ops, so no
scheduler setting can matter; a device-bound OSD (the seeds' regime) queues tens of ops.  BlueStore
reads and writes its block file with O_DIRECT, which blkio throttling sees.

cgroup v1 (``/sys/fs/cgroup/blkio``): ``blkio.throttle.{read,write}_iops_device`` = ``MAJ:MIN N``; a
process is moved with ``cgroup.procs`` and, because threads that existed before the move can stay
behind on some kernels, every thread id is written to ``tasks`` too.  cgroup v2: ``io.max`` =
``MAJ:MIN riops=N wiops=N`` in a child of a cgroup2 mount whose ``cgroup.controllers`` has ``io``;
``cgroup.procs`` moves every thread.  New threads inherit the cgroup of the thread that creates them.
A restarted OSD is a new PID in the root group: attach again after every (re)start, then
:meth:`Throttle.outside` must be empty.  The pure functions here are tested without root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

V1_ROOT = Path("/sys/fs/cgroup/blkio")
PREFIX = "cephqos-"


class ThrottleError(RuntimeError):
    pass


def detect(sys_cgroup: Path = Path("/sys/fs/cgroup"), mounts: str | None = None) -> tuple[str, Path]:
    """("v1", blkio root) or ("v2", a cgroup2 mount whose controllers include ``io``)."""
    v1 = sys_cgroup / "blkio"
    if (v1 / "blkio.throttle.read_iops_device").exists():
        return "v1", v1
    if mounts is None:
        mounts = Path("/proc/self/mounts").read_text()
    for line in mounts.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] == "cgroup2":
            ctl = Path(f[1]) / "cgroup.controllers"
            try:
                if "io" in ctl.read_text().split():
                    return "v2", Path(f[1])
            except OSError:
                continue
    raise ThrottleError("no blkio controller: neither /sys/fs/cgroup/blkio (cgroup v1) nor a cgroup2 "
                        "mount with the io controller; per-OSD IO limits need one of them")


def whole_disk(majmin: str, sys_dev_block: Path = Path("/sys/dev/block")) -> str:
    """The whole disk's ``MAJ:MIN`` for a device or partition (throttle rules take whole disks)."""
    d = sys_dev_block / majmin
    if not d.exists():
        raise ThrottleError(f"{majmin}: no such block device in {sys_dev_block}")
    if (d / "partition").exists():
        return (d.resolve().parent / "dev").read_text().strip()
    return majmin


def device_of(path: str | Path) -> str:
    """``MAJ:MIN`` of the disk that holds ``path`` (the OSD's BlueStore file)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        raise ThrottleError(f"{path} is on a filesystem without a block device (device {major}:{minor}, "
                            "e.g. tmpfs or overlay): put cluster.workdir on a disk to throttle it")
    return whole_disk(f"{major}:{minor}")


def limit_files(version: str, dev: str, read_iops: int, write_iops: int) -> dict[str, str]:
    """File name → content that sets the limits in one cgroup."""
    if read_iops <= 0 or write_iops <= 0:
        raise ThrottleError(f"IOPS limits must be positive (read {read_iops}, write {write_iops})")
    if version == "v1":
        return {"blkio.throttle.read_iops_device": f"{dev} {int(read_iops)}",
                "blkio.throttle.write_iops_device": f"{dev} {int(write_iops)}"}
    if version == "v2":
        return {"io.max": f"{dev} riops={int(read_iops)} wiops={int(write_iops)}"}
    raise ThrottleError(f"unknown cgroup version {version!r}")


def read_limits(version: str, text_by_file: dict[str, str], dev: str) -> dict[str, int | None]:
    """The read/write IOPS limits a cgroup reports for ``dev`` (what the kernel took), None if unset."""
    out: dict[str, int | None] = {"read_iops": None, "write_iops": None}
    if version == "v1":
        for key, fname in (("read_iops", "blkio.throttle.read_iops_device"),
                           ("write_iops", "blkio.throttle.write_iops_device")):
            for line in text_by_file.get(fname, "").splitlines():
                f = line.split()
                if len(f) == 2 and f[0] == dev:
                    out[key] = int(f[1])
    else:
        for line in text_by_file.get("io.max", "").splitlines():
            f = line.split()
            if f and f[0] == dev:
                kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
                for key, k in (("read_iops", "riops"), ("write_iops", "wiops")):
                    if kv.get(k, "max") != "max":
                        out[key] = int(kv[k])
    return out


def thread_cgroup(proc_cgroup: str, version: str) -> str | None:
    """The blkio (v1) or unified (v2) cgroup path of a thread from its ``/proc/<tid>/cgroup``."""
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, ctrls, path = parts
        if version == "v1" and "blkio" in ctrls.split(","):
            return path
        if version == "v2" and hid == "0" and ctrls == "":
            return path
    return None


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


@dataclass
class Throttle:
    """One cgroup per OSD under the controller's root, named ``cephqos-osd<N>``."""
    read_iops: int
    write_iops: int
    dev: str
    version: str
    root: Path

    @classmethod
    def for_path(cls, path: Path, read_iops: int, write_iops: int) -> "Throttle":
        version, root = detect()
        return cls(int(read_iops), int(write_iops), device_of(path), version, root)

    def group(self, osd: int) -> Path:
        return self.root / f"{PREFIX}osd{osd}"

    def rel(self, osd: int) -> str:
        """The cgroup path as /proc/<tid>/cgroup prints it."""
        return "/" + str(self.group(osd).relative_to(self.root))

    def setup(self, osd: int) -> None:
        g = self.group(osd)
        if self.version == "v2":
            sub = self.root / "cgroup.subtree_control"
            if "io" not in sub.read_text().split():
                sub.write_text("+io")
        g.mkdir(exist_ok=True)
        for name, text in limit_files(self.version, self.dev, self.read_iops, self.write_iops).items():
            (g / name).write_text(text + "\n")
        got = read_limits(self.version, {n: (g / n).read_text() for n in
                                         limit_files(self.version, self.dev, 1, 1)}, self.dev)
        if got != {"read_iops": self.read_iops, "write_iops": self.write_iops}:
            raise ThrottleError(f"{g}: the kernel reports limits {got} for {self.dev}, wanted "
                                f"{self.read_iops}/{self.write_iops}")

    def attach(self, osd: int, pid: int) -> None:
        """Move a running OSD and all its threads into its cgroup (created if needed)."""
        self.setup(osd)
        g = self.group(osd)
        try:
            (g / "cgroup.procs").write_text(f"{pid}\n")
            if self.version == "v1":
                for tid in threads(pid):
                    try:
                        (g / "tasks").write_text(f"{tid}\n")
                    except ProcessLookupError:
                        pass  # a thread that ended meanwhile
        except OSError as e:
            raise ThrottleError(f"moving osd.{osd} (pid {pid}) into {g}: {e}") from None

    def outside(self, osd: int, pid: int) -> list[int]:
        """Thread ids of the OSD process that are not in its cgroup (must be empty)."""
        want, bad = self.rel(osd), []
        for tid in threads(pid):
            try:
                text = Path(f"/proc/{pid}/task/{tid}/cgroup").read_text()
            except OSError:
                continue  # ended
            if thread_cgroup(text, self.version) != want:
                bad.append(tid)
        return bad

    def attach_all(self, osd_pids: dict[str, int]) -> dict[str, int]:
        """Attach every ``osd.N`` of ``osd_pids`` and check every thread; returns threads per OSD.
        Raises ``ThrottleError`` naming the OSD if any thread stayed outside."""
        counts = {}
        for name, pid in sorted(osd_pids.items()):
            if not name.startswith("osd."):
                continue
            n = int(name.split(".", 1)[1])
            self.attach(n, pid)
            bad = self.outside(n, pid)
            if bad:
                raise ThrottleError(f"{name} (pid {pid}): threads {bad[:10]} are outside {self.group(n)}")
            counts[name] = len(threads(pid))
        return counts

    def check_all(self, osd_pids: dict[str, int]) -> None:
        for name, pid in sorted(osd_pids.items()):
            if name.startswith("osd."):
                bad = self.outside(int(name.split(".", 1)[1]), pid)
                if bad:
                    raise ThrottleError(f"{name} (pid {pid}): threads {bad[:10]} are outside their cgroup")

    def record(self) -> dict[str, object]:
        return {"cgroup_version": self.version, "controller_root": str(self.root), "device": self.dev,
                "read_iops": self.read_iops, "write_iops": self.write_iops,
                "cgroup_prefix": str(self.root / PREFIX) + "osd<N>"}

    def remove(self, osds: Iterable[int]) -> None:
        """Remove the (empty: its OSDs stopped) cgroups; errors ignored."""
        for n in osds:
            try:
                self.group(n).rmdir()
            except OSError:
                pass

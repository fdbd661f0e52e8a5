"""Loop devices, IO schedulers, file systems and the kernel's ``blk`` tracer — each undone on exit.

Facts this relies on (``../shared/notes/blk-ftrace.md``, measured on this VM): ``losetup -f --show
--direct-io=on FILE`` gives a loop device whose ``queue/scheduler`` accepts none, mq-deadline, kyber
and bfq; the ``blktrace`` program is blocked by kernel lockdown, but the ``blk`` ftrace tracer with
``options/bin`` = 1 and ``options/context-info`` = 0 streams the same binary ``blk_io_trace`` records
through ``trace_pipe`` (~200k events/s, ~49 B/event; 64 MiB of buffer lost nothing).

Everything changed is restored: schedulers to what they were, tracer files to their saved values;
only loop devices this process attached are detached, only mounts it made are unmounted.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

TRACING = Path("/sys/kernel/debug/tracing")
MKFS = {"xfs": ["mkfs.xfs", "-f", "-q"], "ext4": ["mkfs.ext4", "-F", "-q"], "btrfs": ["mkfs.btrfs", "-f", "-q"]}
PACKAGES = ["fio", "xfsprogs", "e2fsprogs", "btrfs-progs", "blktrace"]
TOOLS = {"fio": "fio", "mkfs.xfs": "xfsprogs", "mkfs.ext4": "e2fsprogs", "mkfs.btrfs": "btrfs-progs",
         "blkparse": "blktrace", "btt": "blktrace"}


class BlockError(RuntimeError):
    """A device, file-system or tracer step failed: says which and what the system printed."""


def sh(argv: list[str], **kw) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise BlockError(f"{' '.join(argv)} failed ({r.returncode}): {(r.stderr or r.stdout).strip()[:400]}")
    return r.stdout


def open_sitting(root: Path, runs: list[Any], max_runs: int | None, campaign_file: Path,
                 problem: Callable[[Path, Path], str | None], root_why: str) -> list[Any]:
    """The runs this sitting of a loop-device harness (block, history) does, after the checks it makes
    before touching the machine: root (else :class:`BlockError` with ``root_why``), Debian's packages, the
    campaign file kept beside the data (``problem``: :func:`capture.common.campaign.freeze_campaign_file`'s
    rule for a changed file), the half-finished runs of an earlier sitting cleared.  ``[]`` (said, no check
    made) when every run is done."""
    from capture.common.campaign import freeze_campaign_file
    from capture.common.sitting import clear_stage, log_progress, to_do
    todo = to_do(root, runs, max_runs, log_progress)
    if not todo:
        return []
    if os.geteuid() != 0:
        raise BlockError(root_why)
    ensure_packages(log_progress)
    freeze_campaign_file(campaign_file, root, problem, log_progress)
    clear_stage(root, log_progress)
    return todo


def ensure_packages(log: Callable[[str], None]) -> None:
    missing = sorted({pkg for tool, pkg in TOOLS.items() if not shutil.which(tool)})
    if missing:
        log(f"installing Debian packages ({', '.join(missing)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "-o", "DPkg::Lock::Timeout=600"] + missing, check=True, env=env)


class LoopDevice:
    """A loop device (direct IO) on a backing file of ``size_mib``, prefilled from /dev/urandom so
    that reads see real data rather than holes (``prefill=False``: a fresh sparse file, for a user
    that writes before it reads, e.g. a BlueStore OSD).  ``close()`` restores the scheduler and
    detaches it."""

    def __init__(self, backing: Path, size_mib: int, log: Callable[[str], None] = print,
                 prefill: bool = True) -> None:
        self.backing = backing
        backing.parent.mkdir(parents=True, exist_ok=True)
        if not prefill:
            with open(backing, "wb") as f:  # truncate: nothing of an earlier cluster survives
                f.truncate(size_mib << 20)
        elif not backing.exists() or backing.stat().st_size != size_mib << 20:
            t = time.time()
            with open("/dev/urandom", "rb") as src, open(backing, "wb") as dst:
                for _ in range(size_mib):
                    dst.write(src.read(1 << 20))
                dst.flush()
                os.fsync(dst.fileno())
            log(f"  {backing}: {size_mib} MiB of random data in {time.time() - t:.0f} s")
        self.path = sh(["losetup", "-f", "--show", "--direct-io=on", str(backing)]).strip()
        self.name = Path(self.path).name
        self.original_scheduler = self.scheduler()
        self.mountpoint: Path | None = None
        self.devno = Path(f"/sys/block/{self.name}/dev").read_text().strip().replace(":", ",")  # "7,3"

    def _sched_file(self) -> Path:
        return Path(f"/sys/block/{self.name}/queue/scheduler")

    def scheduler(self) -> str:
        txt = self._sched_file().read_text()
        return txt[txt.index("[") + 1:txt.index("]")] if "[" in txt else txt.strip()

    def schedulers(self) -> list[str]:
        return self._sched_file().read_text().replace("[", "").replace("]", "").split()

    def set_scheduler(self, name: str) -> str:
        """Switch and read back (the kernel may refuse a name it lacks: raise, naming what it offers)."""
        try:
            self._sched_file().write_text(name)
        except OSError as e:
            raise BlockError(f"{self.name}: cannot select IO scheduler {name!r} ({e.strerror}); "
                             f"offered: {' '.join(self.schedulers())}") from None
        got = self.scheduler()
        if got != name:
            raise BlockError(f"{self.name}: asked for scheduler {name!r}, the queue reports {got!r}")
        return got

    def make_fs(self, fs: str, mountpoint: Path) -> None:
        sh(MKFS[fs] + [self.path])
        mountpoint.mkdir(parents=True, exist_ok=True)
        sh(["mount", self.path, str(mountpoint)])
        self.mountpoint = mountpoint

    def close(self) -> None:
        if self.mountpoint is not None:
            subprocess.run(["umount", str(self.mountpoint)], capture_output=True)
            self.mountpoint = None
        try:
            self._sched_file().write_text(self.original_scheduler)
        except OSError:
            pass
        subprocess.run(["losetup", "-d", self.path], capture_output=True)


class BlkTracer:
    """Records the block events of one or more devices as binary ``blk_io_trace`` records into one
    file ``out`` (each record carries its device number).

    ``with BlkTracer("loop3", path): ...`` or ``BlkTracer(["loop3", "loop4"], path)`` — on enter: mount debugfs if needed, save the tracer files
    it touches, set ``buffer_size_kb``, ``options/context-info`` 0, ``options/bin`` 1, the device's
    ``trace/enable`` 1, ``current_tracer`` blk, and copy ``trace_pipe`` to ``out`` in a thread; on
    exit: disable the device's tracing, drain the pipe, restore every saved value, unmount what it
    mounted.  ``stats`` says bytes written and the ring buffer's overrun count (lost events).
    """

    FILES = ("buffer_size_kb", "options/context-info", "options/bin", "current_tracer", "tracing_on")

    def __init__(self, dev: str | list[str], out: Path, buffer_kb: int = 65536) -> None:
        self.devs = [dev] if isinstance(dev, str) else list(dev)
        self.out, self.buffer_kb = out, buffer_kb
        self.saved: dict[str, str] = {}
        self.mounted = False
        self.stats: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._enables = [Path(f"/sys/block/{d}/trace/enable") for d in self.devs]

    def _w(self, rel: str, value: str) -> None:
        p = TRACING / rel
        try:
            p.write_text(value)
        except OSError as e:
            raise BlockError(f"cannot write {value!r} to {p}: {e.strerror}") from None

    def __enter__(self) -> "BlkTracer":
        if not TRACING.is_dir():
            sh(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"])
            self.mounted = True
        if not (TRACING / "current_tracer").exists():
            raise BlockError(f"{TRACING} has no current_tracer: ftrace is not available in this kernel")
        if "blk" not in (TRACING / "available_tracers").read_text().split():
            raise BlockError("the kernel's ftrace has no 'blk' tracer (CONFIG_BLK_DEV_IO_TRACE off)")
        for f in self.FILES:
            self.saved[f] = (TRACING / f).read_text().strip().split()[0] if f == "buffer_size_kb" \
                else (TRACING / f).read_text().strip()
        self.saved_enable = [e.read_text().strip() for e in self._enables]
        try:
            self._w("current_tracer", "nop")
            self._w("buffer_size_kb", str(self.buffer_kb))
            self._w("options/context-info", "0")
            self._w("options/bin", "1")
            for e in self._enables:
                e.write_text("1")
            self._w("current_tracer", "blk")
            self._w("tracing_on", "1")
        except Exception:
            self._restore()
            raise
        fd = os.open(TRACING / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._copy, args=(fd,), daemon=True)
        self._thread.start()
        return self

    def _copy(self, fd: int) -> None:
        n = 0
        with open(self.out, "wb") as f:
            idle = 0
            while True:
                r, _, _ = select.select([fd], [], [], 0.2)
                chunk = b""
                if r:
                    try:
                        chunk = os.read(fd, 1 << 20)
                    except OSError as e:
                        if e.errno != errno.EAGAIN:
                            raise
                if chunk:
                    f.write(chunk)
                    n += len(chunk)
                    idle = 0
                elif self._stop.is_set():
                    idle += 1
                    if idle >= 3:  # drained: three empty polls after the stop
                        break
        os.close(fd)
        self.stats["bytes"] = n

    def _overruns(self) -> int:
        total = 0
        for st in (TRACING / "per_cpu").glob("cpu*/stats"):
            for line in st.read_text().splitlines():
                if line.startswith("overrun:"):
                    total += int(line.split()[1])
        return total

    def _restore(self) -> None:
        for e, v in zip(self._enables, getattr(self, "saved_enable", ["0"] * len(self._enables))):
            try:
                e.write_text(v)
            except OSError:
                pass
        for f in ("current_tracer", "options/bin", "options/context-info", "buffer_size_kb", "tracing_on"):
            if f in self.saved:
                try:
                    (TRACING / f).write_text(self.saved[f])
                except OSError:
                    pass
        if self.mounted:
            subprocess.run(["umount", "/sys/kernel/debug"], capture_output=True)
            self.mounted = False

    def __exit__(self, *exc) -> None:
        for e in self._enables:
            try:
                e.write_text("0")  # no new events; what is buffered still drains
            except OSError:
                pass
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.stats["overruns"] = self._overruns()
        self._restore()

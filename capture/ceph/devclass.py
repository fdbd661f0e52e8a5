"""The device class the OSDs see: the kernel's ``queue/rotational`` flag of the disk under their BlueStore
files, and the IOPS capacity their own benchmark gives mClock.

Why (rig v3, docs/capture.md): Ceph 16.2's mClock costs an item ``round(cost_per_io + cost_per_byte ×
bytes)`` scheduler units (``mClockScheduler::calc_scaled_cost``), where a rotational OSD divides the
``_hdd`` microsecond options by 10⁶ and a non-rotational one the ``_ssd`` options by 10³.  File-backed OSDs
on this VM's virtio disk report rotational, so with the ssd values pinned into the ``_hdd`` options a
50 MiB scrub item costs round(0.58) = 1, the same as a 4 KiB client IO: the cost model cannot respond.
The seeds' NVMe OSDs are non-rotational: flag the disk non-rotational before the OSDs are made (their CRUSH
class becomes ``ssd``; BlueStore reads the flag at every mount) and put it back at teardown.

The seeds let the OSD benchmark its capacity ("determined by the automated procedure", part 2 line 72);
the start-up benchmark can hang an OSD in 16.2.15, so the harness runs the same benchmark (``ceph tell
osd.N bench`` of 12,288,000 bytes in 4 KiB writes, Ceph's own start-up arguments) once the IO limits are
in force, and sets each OSD's ``osd_mclock_max_capacity_iops_{hdd,ssd}`` to the IOPS it reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SYS_DEV_BLOCK = Path("/sys/dev/block")
#: ``ceph tell osd.N bench`` arguments of the OSD's own start-up benchmark (OSD::run_osd_bench_test:
#: total bytes, block size, object size, object count)
BENCH_ARGS = ("12288000", "4096", "4194304", "100")


def rotational_file(majmin: str, sys_dev_block: Path = SYS_DEV_BLOCK) -> Path:
    """``/sys/dev/block/<MAJ:MIN>/queue/rotational`` of a whole disk."""
    f = sys_dev_block / majmin / "queue" / "rotational"
    if not f.exists():
        raise OSError(f"{f}: no rotational flag for block device {majmin}")
    return f


class Rotational:
    """Sets a disk's rotational flag and puts the old one back (idempotent)."""

    def __init__(self, majmin: str, want: int, sys_dev_block: Path = SYS_DEV_BLOCK) -> None:
        self.majmin, self.want, self.file = majmin, int(want), rotational_file(majmin, sys_dev_block)
        self.was: int | None = None

    def apply(self) -> dict[str, Any]:
        self.was = int(self.file.read_text().strip())
        self.file.write_text(f"{self.want}\n")
        now = int(self.file.read_text().strip())
        if now != self.want:
            raise OSError(f"{self.file}: wrote {self.want}, the kernel keeps {now}")
        return self.record()

    def restore(self) -> None:
        if self.was is not None:
            self.file.write_text(f"{self.was}\n")
            self.was = None

    def record(self) -> dict[str, Any]:
        return {"device": self.majmin, "rotational_before": self.was, "rotational_set": self.want}


def bench_iops(doc: dict[str, Any]) -> float:
    """IOPS from ``ceph tell osd.N bench`` JSON (``bytes_written``, ``elapsed_sec``, ``iops`` in 16.2 and
    18.2; where ``iops`` is missing: bytes / 4096 / seconds)."""
    if isinstance(doc.get("iops"), (int, float)) and doc["iops"] > 0:
        return float(doc["iops"])
    b, s = float(doc.get("bytes_written", 0)), float(doc.get("elapsed_sec", 0))
    if b <= 0 or s <= 0:
        raise ValueError(f"osd bench gave no rate: {doc}")
    return b / int(BENCH_ARGS[1]) / s


def rotational_of(metadata: list[dict[str, Any]]) -> dict[str, str]:
    """``osd.N`` → the ``bluestore_bdev_rotational`` each OSD reports (``ceph osd metadata``)."""
    return {f"osd.{m.get('id')}": str(m.get("bluestore_bdev_rotational", m.get("rotational", "?")))
            for m in metadata}

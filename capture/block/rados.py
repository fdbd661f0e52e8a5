"""rados bench on BlueStore OSDs whose block and DB devices are loop devices, one IO scheduler per run.

Set-up per sitting: 2 loop devices per OSD (data ``device.size_mib``, DB ``device.db_mib``; fresh
sparse backing files), a single-node Ceph 16.2 cluster (``capture.ceph.cluster``) with its OSDs made on
those devices, op queue WPQ with the ssd pinning of the Ceph campaign, and one pool ``bench``
(``cluster.pg_num`` PGs, ``cluster.pool_size`` replicas).  Per run: the scheduler is written to every
OSD device and read back, then ``rados bench <write_s> write -b <bs> -t <qd> --no-cleanup``, then
``rados bench <seq_s> seq -t <qd>`` over the objects just written, then ``rados cleanup`` (outside the
measured phases).  Files per run: ``write.txt.gz``, ``seq.txt.gz`` (the tool's own output),
``sysutil.jsonl.gz``, for traced runs ``trace-write.blktrace.gz`` and ``trace-seq.blktrace.gz`` (osd.0's
data and DB devices in one stream; ``run.json`` says which device number is which), and ``run.json``.
Undo on exit: daemons stopped, cluster directory removed, schedulers restored, loop devices detached.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from capture.ceph.cluster import Cluster, ClusterError
from capture.ceph.config import SSD_PINNED
from capture.ceph.monitor import SysMon
from capture.ceph.runner import machine_facts
from capture.common.sitting import KeptUnderRoot

from . import campaign as bc
from .cpu import OutsideCpu
from .system import BlkTracer, BlockError, LoopDevice

POOL = "bench"


def rados_argv(conf: str, phase: str, seconds: float, bs_bytes: int, iodepth: int) -> list[str]:
    """Ceph 16.2 ``rados bench`` command line for one phase (``write`` keeps its objects)."""
    argv = ["rados", "--conf", conf, "-p", POOL, "bench", f"{seconds:g}", phase, "-t", str(iodepth)]
    if phase == "write":
        argv += ["-b", str(bs_bytes), "--no-cleanup"]
    return argv


def _gzip_text(src: str, dst: Path) -> None:
    tmp = dst.with_name(dst.name + ".tmp")
    with gzip.open(tmp, "wt", compresslevel=9) as g:
        g.write(src)
    tmp.replace(dst)


class RadosBlockRunner(KeptUnderRoot):
    def __init__(self, doc: dict[str, Any], root: Path, log: Callable[[str], None]) -> None:
        self.doc, self.root, self.log = doc, root, log
        self.work = Path(doc["device"].get("backing_dir", "/var/tmp/cephqos-rados-block"))
        c = doc["cluster"]
        self.data: list[LoopDevice] = []
        self.db: list[LoopDevice] = []
        self.cl: Cluster | None = None
        self.workdir = Path(c["workdir"])
        self.versions: Any = None

    def all_devices(self) -> list[LoopDevice]:
        return self.data + self.db

    def set_up(self) -> None:
        from capture.ceph.cluster import ensure_packages as ceph_packages, preflight
        doc, c = self.doc, self.doc["cluster"]
        preflight(self.workdir)
        ceph_packages(self.log)
        for i in range(c["osds"]):
            self.data.append(LoopDevice(self.work / f"osd{i}-data.img", doc["device"]["size_mib"], self.log,
                                        prefill=False))
            self.db.append(LoopDevice(self.work / f"osd{i}-db.img", doc["device"]["db_mib"], self.log,
                                      prefill=False))
        self.log("  OSD devices: " + ", ".join(f"osd.{i} data {d.name} db {b.name}"
                                               for i, (d, b) in enumerate(zip(self.data, self.db))))
        self.cl = Cluster(self.workdir, c["osds"], doc["device"]["size_mib"] << 20,
                          int(c["osd_memory_target_mib"]) << 20, self.log,
                          devices=[(d.path, b.path) for d, b in zip(self.data, self.db)])
        settings = {**SSD_PINNED, "osd_op_queue": "wpq",
                    "osd_scrub_min_interval": 1e8, "osd_scrub_max_interval": 1e9, "osd_deep_scrub_interval": 1e9}
        self.cl.up(settings)
        pg = str(c["pg_num"])
        if int(c["pool_size"]) == 1:  # Pacific refuses a one-replica pool unless told
            self.cl.ceph("config", "set", "global", "mon_allow_pool_size_one", "true")
        self.cl.ceph("osd", "pool", "create", POOL, pg, pg)
        self.cl.ceph("osd", "pool", "set", POOL, "size", str(c["pool_size"]), "--yes-i-really-mean-it")
        self.cl.ceph("osd", "pool", "application", "enable", POOL, "rados")
        self.cl.wait_clean()
        self.settings = settings
        self.versions = self.cl.ceph("versions", fmt_json=True)
        self.brought_up = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def close(self) -> None:
        if self.cl is not None:
            self.cl.down()
            shutil.rmtree(self.cl.dir, ignore_errors=True)
            self.cl = None
        for dev in reversed(self.all_devices()):
            dev.close()
            try:
                dev.backing.unlink()
            except OSError:
                pass
        self.data, self.db = [], []

    def _bench(self, stage: Path, phase: str, cell: dict[str, Any], traced: bool) -> dict[str, Any]:
        """One rados bench phase; with ``traced``, a short block trace of osd.0's devices mid-phase."""
        ra = self.doc["rados"]
        secs = float(ra["write_s"] if phase == "write" else ra["seq_s"])
        argv = rados_argv(str(self.cl.conf), phase, secs, bc.bs_bytes(cell["bs"]), cell["iodepth"])
        out: dict[str, Any] = {"argv": argv, "started_unix": round(time.time(), 3)}
        tracer: threading.Thread | None = None
        if traced:
            tr = self.doc["trace"]
            devs = [self.data[0].name, self.db[0].name]

            # a write phase runs its full length: skip its first seconds (connections, PG warm-up); a
            # seq read ends when it has read every object written, often within a second or two
            delay = 2.0 if phase == "write" else 0.3

            def trace() -> None:
                time.sleep(delay)
                t = time.time()
                try:
                    with BlkTracer(devs, stage / f"trace-{phase}.blktrace", int(tr.get("buffer_kb", 65536))) as bt:
                        time.sleep(float(tr.get("seconds", 0.5)))
                    out["trace"] = {"started_unix": round(t, 3), "seconds": float(tr.get("seconds", 0.5)),
                                    **bt.stats}
                except Exception as e:  # reported by the caller: a run without its trace is redone
                    out["trace_error"] = f"{type(e).__name__}: {e}"
            tracer = threading.Thread(target=trace, daemon=True)
            tracer.start()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=secs + 120)
        except subprocess.TimeoutExpired:
            raise BlockError(f"rados bench {phase} still running {secs + 120:.0f} s after a {secs:g} s phase "
                             f"(a stuck or dead OSD? see {self.cl.dir}/log)") from None
        if tracer is not None:
            tracer.join(60)
        out["seconds"] = round(time.time() - out["started_unix"], 3)
        out["rc"] = p.returncode
        if p.returncode != 0:
            raise BlockError(f"rados bench {phase} exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
        if "trace_error" in out:
            raise BlockError(f"block trace during {phase}: {out['trace_error']}")
        _gzip_text(p.stdout, stage / f"{phase}.txt.gz")
        if p.stderr.strip():
            (stage / f"{phase}.stderr").write_text(p.stderr)
        tb = stage / f"trace-{phase}.blktrace"
        if tb.exists() and tb.stat().st_size == 0:  # the phase did no block IO there in the window
            tb.unlink()
            out["trace"]["note"] = "no block IO on the traced devices during the window: no file kept"
        if tb.exists():
            with open(tb, "rb") as f, gzip.open(str(tb) + ".gz", "wb", compresslevel=9) as g:
                shutil.copyfileobj(f, g)
            tb.unlink()
        return out

    def one(self, run: bc.Run) -> dict[str, Any]:
        doc, cl = self.doc, self.cl
        assert cl is not None, "set_up() first"
        dead = {k: p.returncode for k, p in cl.procs.items() if p.poll() is not None}
        if dead:  # not a run to redo: the cluster itself is broken, so the sitting stops
            raise RuntimeError(f"Ceph daemons exited {dead}; see {cl.dir}/log (e.g. ENOSPC: larger "
                               "device.size_mib)")
        cell = bc.cell_of(doc, run.scenario)
        stage = self.root / bc.INPROGRESS / run.relpath
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        scheds = {d.name: d.set_scheduler(run.arm) for d in self.all_devices()}
        traced = bc.traced(doc, run)
        info: dict[str, Any] = {
            "campaign": doc["campaign"], "scenario": run.scenario, "arm": run.arm, "scheduler": run.arm,
            "profile": None, "repeat": run.repeat, "plan_order": run.order, "tool": "rados bench",
            "bs": cell["bs"], "bs_B": bc.bs_bytes(cell["bs"]), "iodepth": cell["iodepth"],
            "osd_op_queue": "wpq", "osds": doc["cluster"]["osds"], "pool_size": doc["cluster"]["pool_size"],
            "pg_num": doc["cluster"]["pg_num"], "origin": "measured", "machine": machine_facts(),
            "device_schedulers": scheds,
            "devices": {f"osd.{i}": {"data": d.name, "data_devno": d.devno, "db": b.name, "db_devno": b.devno}
                        for i, (d, b) in enumerate(zip(self.data, self.db))},
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cluster_up": self.brought_up,
            "ceph_versions": self.versions, "osd_settings": self.settings}
        if traced:  # which "maj,min" in the trace is which (ingest's blktrace job names are these)
            info["trace_dev_data"] = self.data[0].devno
            info["trace_dev_db"] = self.db[0].devno
        mon = SysMon(stage / "sysutil.jsonl")
        acct = OutsideCpu(list(cl.pids().values()))
        mon.start()
        try:
            info["write"] = self._bench(stage, "write", cell, traced)
            info["seq"] = self._bench(stage, "seq", cell, traced)
        finally:
            mon.stop()
            info["cpu"] = acct.result()
            t = time.time()
            try:
                cl.rados("-p", POOL, "cleanup", timeout=600)
            except ClusterError as e:
                raise BlockError(f"cleanup of the bench objects failed: {e}") from None
            info["cleanup_s"] = round(time.time() - t, 2)
            time.sleep(float(doc["rados"].get("settle_s", 1)))
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        for f in stage.glob("*.jsonl"):
            with open(f, "rb") as src, gzip.open(str(f) + ".gz", "wb", compresslevel=9) as g:
                shutil.copyfileobj(src, g)
            f.unlink()
        return info



"""python -m capture.block {plan,run} — IO-scheduler campaigns on loop devices: fio on the devices and on
file systems made on them, or rados bench on BlueStore OSDs whose devices they are (``rados`` campaigns).

  plan CAMPAIGN.yaml [--out DIR]                     the run order and which runs are done
  run CAMPAIGN.yaml [--out DIR] [--max-minutes M] [--max-runs N]
                                                     set up the devices, do the runs not yet done, undo

Run it alone on the machine (no tests, builds or helpers beside it): each run measures the CPU used by
user-space work outside the benchmark (``capture.block.cpu``) and redoes a run that was disturbed.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from capture.ceph.campaign import file_extension_problem
from capture.ceph.cluster import ClusterError
from capture.ceph.monitor import SysMon
from capture.ceph.runner import compress_stage, machine_facts
from capture.common.cli import add_campaign_command, exit_status, show_plan
from capture.common.sitting import (KeptUnderRoot, deadline_after, do_runs, guarded, interrupt_on_sigterm, log_progress,
                                    log_runs_left, now_stamp)

from . import campaign as bc
from .cpu import OutsideCpu
from .rados import RadosBlockRunner
from .system import BlkTracer, BlockError, LoopDevice, open_sitting, sh

DEFAULT_OUT = Path("data/raw/block")


def cmd_plan(a) -> int:
    doc = bc.load(a.campaign)
    return show_plan(a.out / doc["campaign"], bc.plan(doc), order_width=5,
                     note=lambda r: "  [trace]" if bc.traced(doc, r) else "")


class BlockRunner(KeptUnderRoot):
    def __init__(self, doc: dict[str, Any], root: Path) -> None:
        self.doc, self.root = doc, root
        self.work = Path(doc["device"].get("backing_dir", "/var/tmp/cephqos-block"))
        self.devices: dict[str, LoopDevice] = {}
        self.fio_version = sh(["fio", "--version"]).strip()

    def set_up(self, targets: set[str]) -> None:
        size = self.doc["device"]["size_mib"]
        for t in sorted(targets):
            dev = LoopDevice(self.work / f"{t}.img", size, log_progress)
            self.devices[t] = dev
            if t != "raw":
                dev.make_fs(t, self.work / f"mnt-{t}")
                # lay the file out once, so read runs read written blocks, not a fresh layout
                t0 = time.time()
                sh(["fio", "--name=layout", f"--filename={dev.mountpoint / 'fio.dat'}", "--rw=write", "--bs=1M",
                    "--direct=1", "--ioengine=libaio", "--iodepth=16", f"--size={self.doc['fio']['file_mib']}M",
                    "--output=/dev/null"])
                log_progress(f"  {t} on {dev.name}: {self.doc['fio']['file_mib']} MiB file laid out in {time.time() - t0:.0f} s")
            else:
                log_progress(f"  raw on {dev.name}")

    def close(self) -> None:
        for dev in reversed(list(self.devices.values())):
            dev.close()
        self.devices.clear()

    def one(self, run: bc.Run) -> dict[str, Any]:
        doc = self.doc
        cell = bc.cell_of(doc, run.scenario)
        dev = self.devices[cell["target"]]
        stage = self.root / bc.INPROGRESS / run.relpath
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        sched = dev.set_scheduler(run.arm)
        filename = dev.path if cell["target"] == "raw" else str(dev.mountpoint / "fio.dat")
        argv = bc.fio_argv(doc, cell, filename)
        info: dict[str, Any] = {
            "campaign": doc["campaign"], "scenario": run.scenario, "arm": run.arm, "scheduler": sched,
            "profile": None, "repeat": run.repeat, "target": cell["target"], "rw": cell["rw"], "bs": cell["bs"],
            "bs_B": bc.bs_bytes(cell["bs"]), "iodepth": cell["iodepth"], "device": dev.name,
            "device_size_mib": doc["device"]["size_mib"], "fio": self.fio_version, "fio_argv": argv,
            "origin": "measured", "machine": machine_facts(), "attempt": 1,
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        mon = SysMon(stage / "sysutil.jsonl")
        acct = OutsideCpu()
        mon.start()
        err = open(stage / "fio.stderr", "w")
        proc = None
        try:
            proc = subprocess.Popen(argv, cwd=stage, stdout=subprocess.DEVNULL, stderr=err)
            if bc.traced(doc, run):
                tr = doc["trace"]
                time.sleep(float(doc["fio"]["ramp_s"]) + 0.2)  # past fio start-up and ramp
                t_tr = time.time()
                with BlkTracer(dev.name, stage / "trace.blktrace", int(tr.get("buffer_kb", 65536))) as bt:
                    time.sleep(float(tr.get("seconds", 0.5)))
                info["trace"] = {"device": dev.name, "started_unix": round(t_tr, 3),
                                 "seconds": float(tr.get("seconds", 0.5)), **bt.stats}
            rc = proc.wait(timeout=float(doc["fio"]["runtime_s"]) + float(doc["fio"]["ramp_s"]) + 120)
        finally:
            if proc is not None and proc.poll() is None:  # a tracer or timeout error: do not leave fio behind
                proc.kill()
                proc.wait()
            err.close()
            mon.stop()
        info["cpu"] = acct.result()
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        info["fio_rc"] = rc
        if rc != 0:
            raise BlockError(f"fio exited {rc}: {(stage / 'fio.stderr').read_text()[-400:]}")
        for f in stage.glob("*.log"):
            if f.stat().st_size == 0:
                f.unlink()
        tb = stage / "trace.blktrace"
        if tb.exists():
            with open(tb, "rb") as f, gzip.open(str(tb) + ".gz", "wb", compresslevel=9) as g:
                shutil.copyfileobj(f, g)
            tb.unlink()
        compress_stage(stage)
        return info



def sitting_summary(rados: bool, info: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A kept run's fields for the sitting record, and its log line (CPU outside fio or rados bench,
    kernel-thread CPU s, each block trace's size and overruns)."""
    cpu = info["cpu"]
    traces = [info[k]["trace"] for k in ("write", "seq") if "trace" in info.get(k, {})] if rados \
        else ([info["trace"]] if "trace" in info else [])
    text = (f"outside CPU {cpu['outside_cpu_frac']:.3f}, kernel threads {cpu['kernel_threads_cpu_s']:.1f} s"
            + "".join(f"; trace {t['bytes']} B, overruns {t['overruns']}" for t in traces))
    return {"wall_s": cpu["wall_s"]}, text


def cmd_run(a) -> int:
    doc = bc.load(a.campaign)
    root = a.out / doc["campaign"]
    runs = bc.plan(doc)
    # the Ceph harness's rule for a changed campaign file (what the block harness has always used)
    todo = open_sitting(root, runs, a.max_runs, Path(a.campaign), file_extension_problem,
                        "needs root (losetup, mkfs, mount, IO schedulers, ftrace, Ceph daemons): run it with sudo, "
                        "e.g. `sudo make capture-block`")
    if not todo:
        return 0
    deadline = deadline_after(a.max_minutes)
    thr = float(doc.get("disturbed_outside_cpu_frac", 0.15))
    rados = "rados" in doc
    runner: Any = RadosBlockRunner(doc, root, log_progress) if rados else BlockRunner(doc, root)
    sitting: dict[str, Any] = {"started": now_stamp(), "planned": len(todo), "runs": []}
    interrupt_on_sigterm()

    def work() -> None:
        if rados:
            runner.set_up()
        else:
            runner.set_up({bc.cell_of(doc, r.scenario)["target"] for r in todo})
        do_runs(todo, runner, threshold=thr, deadline=deadline, log=log_progress,
                errors=(BlockError, ClusterError) if rados else (BlockError,), sitting=sitting,
                summary=lambda info: sitting_summary(rados, info))
    return guarded(work, close=runner.close, root=root, record=sitting, log=log_progress,
                   undoing="undoing device set-up", after=lambda: log_runs_left(root, runs, log_progress))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.block", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run"):
        p = add_campaign_command(sub, name, DEFAULT_OUT)
        if name == "run":
            p.add_argument("--max-minutes", type=float, default=None)
            p.add_argument("--max-runs", type=int, default=None)
    a = ap.parse_args(argv)
    return exit_status(lambda: cmd_plan(a) if a.cmd == "plan" else cmd_run(a), (bc.CampaignError, BlockError))


if __name__ == "__main__":
    sys.exit(main())

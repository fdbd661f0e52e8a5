"""python -m capture.history {plan,run} — benchmark histories with changes made at known points.

  plan CAMPAIGN.yaml [--out DIR]        the run order and which runs are done
  run CAMPAIGN.yaml [--out DIR]         pilot (once), then the runs not yet done

One loop device (direct IO) over a file of random data; fio runs in a cgroup v1 blkio group whose
``blkio.throttle.read_iops_device`` caps the device's read IOPS (``../shared/notes/fio-history-noise.md``:
uncapped the loop device is CPU-bound and drifts by itself; capped, the level is the cap).  Each history's
cap is changed at the points its campaign file names; run.json records the cap (``cap_read_iops``), the
change made at that point (``change``) and the truth the tests check against.

The pilot (``<out>/<campaign>/pilot.json``, before the first run): one uncapped run and ``repeats`` runs
at the first history's first cap.  Go only when the uncapped rate is ≥ 1.25 × the largest cap (every cap
binds) and the capped runs' coefficient of variation is < 2 % with their median within 2 % of the cap
(the level is the cap); else the campaign is refused (exit 1) and must be redesigned.

Run it alone on the machine (no tests, builds or helpers beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from capture.block.cpu import OutsideCpu
from capture.block.system import BlockError, LoopDevice, open_sitting, sh
from capture.ceph.runner import compress_stage, machine_facts
from capture.common.cli import add_campaign_command, exit_status, show_plan
from capture.common.sitting import (KeptUnderRoot, do_runs, guarded, interrupt_on_sigterm, log_progress, log_runs_left,
                                    now_stamp)

from . import campaign as hc

DEFAULT_OUT = Path("data/raw/history")
CGROUP = Path("/sys/fs/cgroup/blkio/cephqos-history")


def _same_file(_old: Path, _new: Path) -> str | None:
    return "a history campaign file cannot change once runs exist (start a new campaign name)"


class HistoryRunner(KeptUnderRoot):
    def __init__(self, doc: dict[str, Any], root: Path) -> None:
        self.doc, self.root = doc, root
        self.work = Path(doc["device"].get("backing_dir", "/var/tmp/cephqos-history"))
        self.dev: LoopDevice | None = None
        self.fio_version = sh(["fio", "--version"]).strip()

    def set_up(self) -> None:
        self.dev = LoopDevice(self.work / "history.img", int(self.doc["device"]["size_mib"]), log_progress)
        self.dev.set_scheduler(self.doc["device"].get("scheduler", "none"))
        CGROUP.mkdir(exist_ok=True)
        log_progress(f"  {self.dev.name} ({self.dev.devno.replace(',', ':')}), cgroup {CGROUP}")

    def close(self) -> None:
        if self.dev is not None:
            self._cap(None)
            self.dev.close()
            self.dev = None
        try:
            CGROUP.rmdir()
        except OSError:
            pass

    def _cap(self, iops: int | None) -> None:
        assert self.dev is not None
        (CGROUP / "blkio.throttle.read_iops_device").write_text(
            f"{self.dev.devno.replace(',', ':')} {0 if iops is None else int(iops)}\n")  # 0 lifts the cap

    def argv(self) -> list[str]:
        f = self.doc["fio"]
        assert self.dev is not None
        return ["fio", "--name=history", f"--filename={self.dev.path}", f"--rw={f['rw']}", f"--bs={f['bs']}",
                f"--iodepth={f['iodepth']}", f"--ioengine={f['ioengine']}", "--direct=1", "--time_based",
                f"--runtime={f['runtime_s']}s", f"--ramp_time={int(float(f['ramp_s']) * 1000)}ms",
                f"--size={f['size_mib']}M", "--output-format=json", "--output=fio.json"]

    def fio(self, stage: Path, cap: int | None) -> tuple[list[str], dict[str, Any]]:
        """fio in the capped cgroup (``cap`` None: uncapped); → (argv, the CPU outside fio)."""
        self._cap(cap)
        argv = self.argv()
        acct = OutsideCpu()
        with open(stage / "fio.stderr", "w") as err:
            rc = subprocess.run(["sh", "-c", f'echo $$ > {CGROUP}/cgroup.procs && exec "$@"', "sh", *argv],
                                cwd=stage, stdout=subprocess.DEVNULL, stderr=err,
                                timeout=float(self.doc["fio"]["runtime_s"]) + 60).returncode
        if rc != 0:
            raise BlockError(f"fio exited {rc}: {(stage / 'fio.stderr').read_text()[-400:]}")
        return argv, acct.result()

    @staticmethod
    def iops(stage: Path) -> float:
        j = json.loads((stage / "fio.json").read_text())
        return float(sum(job["read"]["iops"] + job["write"]["iops"] for job in j["jobs"]))

    def pilot(self) -> dict[str, Any]:
        """The pilot (module docstring) → its record; written to ``<root>/pilot.json`` by the caller."""
        doc = self.doc
        caps = [c for h in doc["histories"].values() for c in h.values()]
        first = doc["histories"][sorted(doc["histories"])[0]][0]
        stage = self.root / hc.INPROGRESS / "pilot"
        stage.mkdir(parents=True, exist_ok=True)
        self.fio(stage, None)
        uncapped = self.iops(stage)
        capped = []
        for _ in range(doc["repeats"]):
            self.fio(stage, first)
            capped.append(self.iops(stage))
        shutil.rmtree(stage, ignore_errors=True)
        med = statistics.median(capped)
        cv = statistics.stdev(capped) / statistics.mean(capped) if len(capped) > 1 else float("nan")
        go = uncapped >= 1.25 * max(caps) and cv < 0.02 and abs(med / first - 1) < 0.02
        return {"when": now_stamp(), "uncapped_iops": round(uncapped, 1), "cap": first,
                "capped_iops": [round(x, 1) for x in capped], "capped_cv": round(cv, 5),
                "largest_cap": max(caps), "go": bool(go),
                "rule": "go when uncapped ≥ 1.25 × the largest cap, capped CV < 2 %, capped median within 2 % of the cap"}

    def one(self, run: hc.Run) -> dict[str, Any]:
        doc = self.doc
        assert self.dev is not None
        stage = self.root / hc.INPROGRESS / run.relpath
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        point = int(run.arm.split("-")[1])
        caps = doc["histories"][run.scenario]
        cap = hc.cap_at(doc, run.scenario, point)
        change = ""
        if point in caps and point > 0:
            change = f"read IOPS cap {hc.cap_at(doc, run.scenario, point - 1)} → {cap}"
        f = doc["fio"]
        info: dict[str, Any] = {
            "campaign": doc["campaign"], "history": run.scenario, "point": point, "repeat": run.repeat,
            "scenario": f"fio-raw-{f['rw']}-{str(f['bs']).lower()}-qd{f['iodepth']}", "target": "raw",
            "cap_read_iops": cap, "change": change,
            "last_change_point": max(p for p in caps if p <= point),
            "device": self.dev.name, "device_size_mib": doc["device"]["size_mib"],
            "io_scheduler": self.dev.scheduler(), "fio": self.fio_version, "origin": "measured",
            "machine": machine_facts(), "plan_order": run.order,
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3], "started": now_stamp()}
        argv, cpu = self.fio(stage, cap)
        info.update(fio_argv=argv, cpu=cpu, fio_rc=0, loadavg_after=Path("/proc/loadavg").read_text().split()[:3])
        compress_stage(stage)
        return info


def cmd_run(a) -> int:
    doc = hc.load(a.campaign)
    root = a.out / doc["campaign"]
    runs = hc.plan(doc)
    todo = open_sitting(root, runs, a.max_runs, Path(a.campaign), _same_file,
                        "needs root (losetup, cgroup blkio throttle): run it as root, e.g. `sudo make capture-history`")
    if not todo:
        return 0
    runner = HistoryRunner(doc, root)
    sitting: dict[str, Any] = {"started": now_stamp(), "planned": len(todo), "runs": []}
    interrupt_on_sigterm()
    verdict: dict[str, Any] = {}

    def work() -> None:
        runner.set_up()
        pj = root / "pilot.json"
        if not pj.exists():
            p = runner.pilot()
            tmp = pj.with_suffix(".tmp")
            tmp.write_text(json.dumps(p, indent=1) + "\n")
            os.replace(tmp, pj)
            log_progress(f"pilot: uncapped {p['uncapped_iops']:.0f} IOPS, capped at {p['cap']}: "
                         f"{p['capped_iops']} (CV {p['capped_cv']:.4f}) → {'go' if p['go'] else 'NO-GO'}")
        verdict.update(json.loads(pj.read_text()))
        if not verdict["go"]:
            log_progress(f"the pilot said no-go ({pj}): redesign the campaign (caps, device), not run")
            return
        do_runs(todo, runner, threshold=float(doc.get("disturbed_outside_cpu_frac", 0.15)), deadline=None,
                log=log_progress, errors=(BlockError, subprocess.TimeoutExpired), sitting=sitting,
                summary=lambda info: ({"wall_s": info["cpu"]["wall_s"]},
                                      f"cap {info['cap_read_iops']}, outside CPU {info['cpu']['outside_cpu_frac']:.3f}"))
    rc = guarded(work, close=runner.close, root=root, record=sitting, log=log_progress,
                 undoing="lifting the cap, detaching the loop device",
                 after=lambda: log_runs_left(root, runs, log_progress))
    return rc or (0 if verdict.get("go") else 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.history", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run"):
        p = add_campaign_command(sub, name, DEFAULT_OUT)
        if name == "run":
            p.add_argument("--max-runs", type=int, default=None)
    a = ap.parse_args(argv)
    return exit_status(lambda: (show_plan(a.out / hc.load(a.campaign)["campaign"], hc.plan(hc.load(a.campaign)))
                                if a.cmd == "plan" else cmd_run(a)), (hc.CampaignError, BlockError))


if __name__ == "__main__":
    sys.exit(main())

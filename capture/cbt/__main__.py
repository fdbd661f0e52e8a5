"""python -m capture.cbt {pilot,run} CAMPAIGN.yaml [--out DIR] — CBT (../shared/tools/cbt, unmodified) run
for real against the single-node cluster of :mod:`capture.ceph`, one CBT invocation per arm.

Per arm: set the arm's OSD settings, restart the OSDs, check they run them, attach the per-OSD IO limits,
run ``cbt.py -a <archive> <yaml>`` (CBT's ``use_existing: True``) while the 1 Hz sampler records CPU and
each OSD's op queue, check the archive is complete, gzip its files one by one (names + ``.gz``; ingest
reads them by content), then move it into place.  Layout under ``<out>/<campaign>/``:

* ``<arm>/results/…`` — CBT's archive as CBT wrote it (``results/cbt_config.yaml``,
  ``results/<iteration>/id-<hash>/…``), files gzipped;
* ``harness/<arm>/`` — this harness's record: ``run.json`` (arm, settings asked for and seen, timings,
  CPU, versions, the CBT command), ``sysutil.jsonl.gz``, ``osd_config.json.gz``, ``cbt.yaml`` (what CBT
  was given), ``cbt.log.gz`` (CBT's own log), ``done`` (written last).

The arms of one sitting share one bring-up (one PG placement, one prefilled librbdfio volume) and run in
the campaign seed's order.  Run it alone on the machine (root; it installs pdsh, python3-yaml and
python3-lxml for CBT, and Ceph 16.2 + fio, if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from capture.ceph.cluster import ClusterError, ensure_packages, preflight, where
from capture.common.campaign import CampaignError
from capture.common.cli import add_campaign_command, exit_status
from capture.common.sitting import (do_runs, guarded, interrupt_on_sigterm, log_arms_left, log_progress,
                                    now_stamp)

from . import campaign as cc
from .archive import (CBT_DIR, CBT_PACKAGES, DONE, HARNESS, INPROGRESS, ROOT, ArmRun,  # noqa: F401
                      ArmStaging, count_outputs, ensure_cbt, gzip_tree, is_done, stage_arms)

DEFAULT_OUT = Path("data/raw/cbt")


class CbtRunner(ArmStaging):
    """Bring-up through :class:`capture.ceph.runner.Runner` (same cluster, limits and settings code as the
    QoS campaigns), one CBT invocation per arm."""

    def __init__(self, doc: dict[str, Any], campaign_file: Path, out: Path, iterations: int, log=log_progress) -> None:
        from capture.ceph.runner import Runner
        self.doc, self.file, self.log, self.iterations = doc, campaign_file, log, iterations
        # absolute: CBT runs in its own folder and refuses a relative tmp_dir
        self.root = (out / doc["campaign"]).resolve()
        self.runner = Runner(doc, campaign_file, out, log)
        self.cl = self.runner.cl
        self.cbt_commit = "unknown"

    def bring_up(self) -> None:
        self.cbt_commit = ensure_cbt(self.log)
        self.runner.bring_up()

    def one(self, run: ArmRun) -> dict[str, Any]:
        from capture.ceph.config import arm_settings
        from capture.ceph.monitor import CpuAccount, SysMon
        from capture.ceph.opqueue import OsdProbe
        from capture.ceph.runner import client_target, machine_facts
        from capture.ceph.throttle import ThrottleError
        r, cl = self.runner, self.cl
        stage = self.stage(run)
        shutil.rmtree(stage, ignore_errors=True)
        harness, archive = stage / HARNESS, stage / "archive"
        harness.mkdir(parents=True)
        arm = self.doc["arms"][run.arm]
        info: dict[str, Any] = {"campaign": run.campaign, "arm": run.arm, "plan_order": run.order,
                                "origin": "measured", "ceph_release": r.release,
                                "scheduler": arm["osd_op_queue"], "profile": arm.get("osd_mclock_profile"),
                                "tool": "cbt", "cbt_commit": self.cbt_commit, "iterations": self.iterations}
        t0 = time.time()
        want = arm_settings(arm, r.capacity, r.shards, r.release)
        for k in sorted(r.applied_scenario_keys - set(want)):  # an earlier arm's key this one lacks
            cl.ceph("config", "set", "osd", k, str(r.base[k])) if k in r.base else cl.ceph("config", "rm", "osd", k)
        cl.config_set("osd", want)
        r.applied_scenario_keys = set(want)
        info["osd_restart_s"] = round(cl.restart_osds(), 1)
        info["osd_config"] = {"requested": want, **r.verify(want, harness)}
        if r.throttle is not None:
            try:
                info["throttle"] = {**r.throttle.record(), "threads_checked": r.throttle.attach_all(cl.pids())}
            except ThrottleError as e:
                raise ClusterError(f"per-OSD IO limits not in force: {e}") from None
        info["pg_primaries"] = r.pg_primaries()
        conf = self.cl.conf_arg
        cfg = cc.cbt_config(self.doc, conf_file=conf, mon_addr=f"{cl.ip}:6789",
                            tmp_dir=str(self.cbt_tmp(run)),
                            iterations=self.iterations, image=client_target(self.doc))
        (harness / "cbt.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True))
        argv = ["/usr/bin/python3", str(CBT_DIR / "cbt.py"), "-a", str(archive), str(harness / "cbt.yaml")]
        acct = CpuAccount()
        acct.track(list(cl.pids().values()))
        mon = SysMon(harness / "sysutil.jsonl", probe=OsdProbe(cl.dir / "run", cl.pids))
        mon.start()
        t_cbt = time.time()
        try:
            with open(harness / "cbt.log", "w") as logf:
                # CEPH_CONF: fio's rbd engine (CBT passes it no conf) finds the cluster through librados
                rc = subprocess.run(argv, cwd=CBT_DIR, stdout=logf, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, CEPH_CONF=conf, LC_ALL="C")).returncode
        finally:
            mon.stop()
        info["cbt_s"] = round(time.time() - t_cbt, 1)
        info["cbt_argv"] = argv
        info["cbt_exit"] = rc
        r.check_limits("CBT")
        if rc != 0:
            tail = (harness / "cbt.log").read_text(errors="replace")[-600:]
            raise ClusterError(f"cbt.py exited {rc} (log {harness / 'cbt.log'}): …{tail}")
        want_n = cc.expected_outputs(self.doc, self.iterations)
        got_n = count_outputs(archive / "results")
        info["outputs"] = {"expected": want_n, "found": got_n}
        if got_n != want_n:
            raise ClusterError(f"CBT's archive is incomplete: outputs per benchmark {got_n}, expected {want_n} "
                               f"(log {harness / 'cbt.log'})")
        info["cpu"] = acct.result(list(cl.pids().values()))
        info["steal_flagged"] = info["cpu"]["steal_frac"] > r.steal_flag
        info["files_gzipped"] = gzip_tree(archive) + gzip_tree(harness)
        shutil.rmtree(self.cbt_tmp(run), ignore_errors=True)
        info.update(cluster=r.cluster_facts, machine=machine_facts(), campaign_file=self.file.name,
                    duration_s=round(time.time() - t0, 1))
        return info

def pilot_iterations(root: Path) -> tuple[int | None, list[str] | None, str]:
    """(iterations, arms, why) from ``<root>/pilot.json`` (``python -m analysis cbt-pilot``)."""
    p = root / "pilot.json"
    if not p.is_file():
        return None, None, f"no pilot verdict at {p}: run `make capture-cbt-pilot` and `make cbt-pilot-verdict` first"
    try:
        doc = json.loads(p.read_text())
        if not doc["go"]:
            return None, None, f"{p}: the pilot says no-go ({doc.get('why', '')})"
        return int(doc["iterations"]), list(doc["arms"]), f"{p}: go, {doc['iterations']} iterations"
    except (ValueError, KeyError, TypeError) as e:
        return None, None, f"{p}: not a pilot verdict ({e})"


def arm_summary(info: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A kept arm's fields for the sitting record, and its log line."""
    return ({"duration_s": info["duration_s"], "cbt_s": info["cbt_s"]},
            f"CBT {info['cbt_s']:.0f} s; outputs {info['outputs']['found']}; outside CPU "
            f"{info['cpu']['outside_cpu_frac']:.3f}; steal {info['cpu']['steal_frac']:.3f}")


def sitting(doc: dict[str, Any], campaign_file: Path, out: Path, arms: list[str], iterations: int) -> int:
    """Bring up, run ``arms`` not yet done (one CBT invocation each, ``iterations`` each), tear down.
    → 0 when every arm is done, 1 when some are not, 130 after an interrupt."""
    root = out / doc["campaign"]
    preflight(*where(Path(doc["cluster"].get("workdir", "/var/tmp/cephqos-cbt")), "pacific"))
    ensure_packages(log_progress, "pacific")
    todo = stage_arms(doc["campaign"], campaign_file, root, arms)
    if not todo:
        log_progress(f"{doc['campaign']}: every arm is done")
        return 0
    runner = CbtRunner(doc, campaign_file, out, iterations)
    record: dict[str, Any] = {"started": now_stamp(), "planned": [r.arm for r in todo],
                              "iterations": iterations, "runs": []}
    interrupt_on_sigterm()

    def work() -> None:
        runner.bring_up()
        do_runs(todo, runner, threshold=float(doc.get("disturbed_outside_cpu_frac", 0.15)), deadline=None,
                log=log_progress, errors=(ClusterError,), sitting=record,
                after_failure=lambda: runner.cl.wait_clean(timeout=600), summary=arm_summary)
    rc = guarded(work, close=runner.runner.teardown, root=root, record=record, log=log_progress,
                 after=lambda: log_arms_left(arms, [a for a in arms if not is_done(root, a)], log_progress))
    return rc if rc else (0 if all(is_done(root, a) for a in arms) else 1)


def cmd_pilot(a) -> int:
    """``pilot``: the campaign's pilot arms, ``pilot.iterations`` each, as ``<campaign>-pilot``."""
    doc = cc.load(a.campaign)
    pdoc = {**doc, "campaign": doc["campaign"] + cc.PILOT_SUFFIX}
    arms = cc.arm_order(doc, doc["pilot"]["arms"], pilot=True)
    log_progress(f"pilot {pdoc['campaign']}: arms {arms}, {doc['pilot']['iterations']} iterations each")
    return sitting(pdoc, Path(a.campaign), a.out, arms, int(doc["pilot"]["iterations"]))


def cmd_run(a) -> int:
    """``run``: the arms and iterations the pilot's go names, or with --force the campaign's own."""
    doc = cc.load(a.campaign)
    iters, arms, why = pilot_iterations(a.out / doc["campaign"])
    if iters is None:
        if not a.force:
            raise CampaignError(why + " (--force runs campaign_arms × iterations anyway)")
        iters, arms = int(doc["iterations"]), list(doc["campaign_arms"])
        doc = {**doc, "forced": True}
    log_progress(why)
    return sitting(doc, Path(a.campaign), a.out, cc.arm_order(doc, arms), iters)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.cbt", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pilot", "run"):
        p = add_campaign_command(sub, name, DEFAULT_OUT)
        if name == "run":
            p.add_argument("--force", action="store_true",
                           help="run campaign_arms × iterations without a pilot go (marked forced)")
    a = ap.parse_args(argv)
    return exit_status(lambda: cmd_pilot(a) if a.cmd == "pilot" else cmd_run(a), (CampaignError, ClusterError))


if __name__ == "__main__":
    sys.exit(main())

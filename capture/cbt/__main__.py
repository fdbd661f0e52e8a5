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
import gzip
import re
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from capture.ceph.campaign import CampaignError
from capture.ceph.cluster import ClusterError, ensure_packages, preflight, where
from capture.sitting import do_runs, write_record

from . import campaign as cc

ROOT = Path(__file__).resolve().parents[2]
#: the CBT snapshot (../shared/tools/README.md); CEPHQOS_CBT overrides
CBT_DIR = Path(os.environ.get("CEPHQOS_CBT", ROOT.parent / "shared" / "tools" / "cbt"))
CBT_PACKAGES = ["pdsh", "python3-yaml", "python3-lxml"]
DEFAULT_OUT = Path("data/raw/cbt")
HARNESS = "harness"
INPROGRESS = "_inprogress"
DONE = "done"


def _log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


@dataclass(frozen=True)
class ArmRun:
    """One CBT invocation: an arm, with all its iterations."""
    campaign: str
    arm: str
    order: int

    @property
    def relpath(self) -> str:
        return self.arm


def ensure_cbt(log) -> str:
    """CBT's Python modules and tools present; returns the snapshot's git commit if recorded."""
    if not (CBT_DIR / "cbt.py").is_file():
        raise ClusterError(f"no CBT at {CBT_DIR} (../shared/tools/cbt, or set CEPHQOS_CBT)")
    ok = subprocess.run(["/usr/bin/python3", "-c", "import yaml, lxml"], capture_output=True).returncode == 0
    if not ok or not shutil.which("pdsh"):
        log(f"installing Debian packages for CBT ({', '.join(CBT_PACKAGES)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "-o", "DPkg::Lock::Timeout=600"] + CBT_PACKAGES, check=True, env=env)
    readme = (CBT_DIR.parent / "README.md")
    text = readme.read_text() if readme.is_file() else ""
    m = re.search(r"commit\s+([0-9a-f]{40})", text)
    return m.group(1) if m else "unknown"


def is_done(root: Path, arm: str) -> bool:
    return (root / HARNESS / arm / DONE).is_file()


def gzip_tree(top: Path) -> int:
    """gzip every non-empty file below ``top`` in place (``f`` → ``f.gz``, no name or time in the header, so
    the same bytes give the same file; an empty file stays as CBT left it); returns the count."""
    n = 0
    for f in sorted(p for p in top.rglob("*") if p.is_file() and not p.name.endswith(".gz")
                    and p.stat().st_size > 0):
        with open(f, "rb") as src, open(str(f) + ".gz", "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as g:
                shutil.copyfileobj(src, g)
        f.unlink()
        n += 1
    return n


def count_outputs(results: Path) -> dict[str, int]:
    """Tool outputs per benchmark in a CBT archive's ``results/`` (``output.N.<node>``, not the
    ``json_output`` copies CBT derives from them), read from each id folder's benchmark_config.yaml."""
    out: dict[str, int] = {}
    for cfg in results.glob("*/id-*/benchmark_config.yaml"):
        bench = (yaml.safe_load(cfg.read_text()) or {}).get("cluster", {}).get("benchmark", "?")
        # output.N.<node>, not fio's logs (output.N_iops.1.log.<node>, …) nor CBT's json_output copies
        n = sum(1 for p in cfg.parent.rglob("output.*") if p.is_file() and re.fullmatch(r"output\.\d+\..+", p.name))
        out[bench] = out.get(bench, 0) + n
    return out


class ArmStaging:
    """Where one CBT invocation per arm is staged (``<root>/_inprogress/<arm>/{archive,harness}``, CBT's
    ``tmp_dir`` beside it) and how a finished arm moves into place; ``root`` is the campaign's folder.  Shared by
    :class:`CbtRunner` and :class:`capture.rgw.cbt.RgwCbtRunner`."""
    root: Path

    def stage(self, run: ArmRun) -> Path:
        return self.root / INPROGRESS / run.arm

    def cbt_tmp(self, run: ArmRun) -> Path:
        return self.root / INPROGRESS / f"cbt-tmp-{run.arm}"

    def finish(self, run: ArmRun, info: dict[str, Any]) -> Path:
        """run.json and ``done`` (last) into the harness record; the archive, then the record, into place."""
        stage = self.stage(run)
        h = stage / HARNESS
        (h / "run.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
        (h / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z") + "\n")
        dest, hdest = self.root / run.arm, self.root / HARNESS / run.arm
        for d in (dest, hdest):
            if d.exists():  # an archive without its done record: an earlier sitting died between the moves
                aside = self.root / "_superseded" / f"{d.name}-{time.strftime('%Y%m%dT%H%M%S')}"
                aside.parent.mkdir(parents=True, exist_ok=True)
                os.replace(d, aside)
        hdest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / "archive", dest)
        os.replace(h, hdest)
        shutil.rmtree(stage, ignore_errors=True)
        return dest

    def discard(self, run: ArmRun) -> None:
        shutil.rmtree(self.stage(run), ignore_errors=True)
        shutil.rmtree(self.cbt_tmp(run), ignore_errors=True)


class CbtRunner(ArmStaging):
    """Bring-up through :class:`capture.ceph.runner.Runner` (same cluster, limits and settings code as the
    QoS campaigns), one CBT invocation per arm."""

    def __init__(self, doc: dict[str, Any], campaign_file: Path, out: Path, iterations: int, log=_log) -> None:
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


def sitting(doc: dict[str, Any], campaign_file: Path, out: Path, arms: list[str], iterations: int) -> int:
    root = out / doc["campaign"]
    preflight(*where(Path(doc["cluster"].get("workdir", "/var/tmp/cephqos-cbt")), "pacific"))
    ensure_packages(_log, "pacific")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(campaign_file, root / "campaign.yaml")
    shutil.rmtree(root / INPROGRESS, ignore_errors=True)
    todo = [ArmRun(doc["campaign"], a, i) for i, a in enumerate(arms) if not is_done(root, a)]
    if not todo:
        _log(f"{doc['campaign']}: every arm is done")
        return 0
    runner = CbtRunner(doc, campaign_file, out, iterations)
    record: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "planned": [r.arm for r in todo],
                              "iterations": iterations, "runs": []}

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    rc = 0
    try:
        runner.bring_up()
        do_runs(todo, runner, threshold=float(doc.get("disturbed_outside_cpu_frac", 0.15)), deadline=None,
                log=_log, errors=(ClusterError,), sitting=record,
                after_failure=lambda: runner.cl.wait_clean(timeout=600),
                summary=lambda info: ({"duration_s": info["duration_s"], "cbt_s": info["cbt_s"]},
                                      f"CBT {info['cbt_s']:.0f} s; outputs {info['outputs']['found']}; outside CPU "
                                      f"{info['cpu']['outside_cpu_frac']:.3f}; steal {info['cpu']['steal_frac']:.3f}"))
    except KeyboardInterrupt as e:
        _log(f"interrupted ({e}); tearing down")
        rc = 130
    except Exception as e:
        _log(f"ERROR: {type(e).__name__}: {e}; tearing down")
        rc = 1
    finally:
        runner.runner.teardown()
        write_record(root, record)  # sitting-*.json: the capture's record, context for ingest
        left = [a for a in arms if not is_done(root, a)]
        _log(f"{len(arms) - len(left)}/{len(arms)} arms done" + (f"; to do: {', '.join(left)}" if left else ""))
    return rc if rc else (0 if all(is_done(root, a) for a in arms) else 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.cbt", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pilot", "run"):
        p = sub.add_parser(name)
        p.add_argument("campaign")
        p.add_argument("--out", type=Path, default=DEFAULT_OUT)
        if name == "run":
            p.add_argument("--force", action="store_true",
                           help="run campaign_arms × iterations without a pilot go (marked forced)")
    a = ap.parse_args(argv)
    try:
        doc = cc.load(a.campaign)
        if a.cmd == "pilot":
            pdoc = {**doc, "campaign": doc["campaign"] + cc.PILOT_SUFFIX}
            arms = cc.arm_order(doc, doc["pilot"]["arms"], pilot=True)
            _log(f"pilot {pdoc['campaign']}: arms {arms}, {doc['pilot']['iterations']} iterations each")
            return sitting(pdoc, Path(a.campaign), a.out, arms, int(doc["pilot"]["iterations"]))
        iters, arms, why = pilot_iterations(a.out / doc["campaign"])
        if iters is None:
            if not a.force:
                raise CampaignError(why + " (--force runs campaign_arms × iterations anyway)")
            iters, arms = int(doc["iterations"]), list(doc["campaign_arms"])
            doc = {**doc, "forced": True}
        _log(why)
        return sitting(doc, Path(a.campaign), a.out, cc.arm_order(doc, arms), iters)
    except (CampaignError, ClusterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""python -m capture.ceph {plan,pilot,run,teardown} — WPQ-vs-mClock campaigns on a local Ceph cluster
(16.2 on the host, or 18.2 in the chroot of ``make ceph-reef`` with ``ceph: reef`` in the campaign).

  plan CAMPAIGN.yaml [--out DIR]            the run order and which runs are done
  pilot CAMPAIGN.yaml [--out DIR] [--round N --scenarios S …]
                                            the campaign's pilot (``<campaign>-pilot``: two arms per
                                            scenario once, after a discarded warm-up; a later round
                                            ``-pilot-rN`` re-pilots redesigned scenarios); then
                                            ``python -m analysis pilot`` decides go / no-go
  run CAMPAIGN.yaml [--out DIR] [--max-minutes M] [--max-runs N] [--force]
                                            bring a cluster up, do the runs not yet done, tear down;
                                            a campaign with ``throttle`` needs its pilot's go
                                            (``<out>/<campaign>/pilot.json``) unless --force
  teardown [--workdir DIR]                  kill a leftover cluster's daemons (by its pid files)

Run it alone on the machine: no tests, builds or helpers beside it (each run measures the CPU used
outside the benchmark and redoes a run that was disturbed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path

from capture.sitting import do_runs, write_record

from . import campaign as cp
from .cluster import ClusterError, ensure_packages, preflight, teardown_workdir, where

DEFAULT_OUT = Path("data/raw/ceph-qos")


def log_progress(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def cmd_plan(a) -> int:
    doc = cp.load(a.campaign)
    root = a.out / doc["campaign"]
    runs = cp.plan(doc)
    for r in runs:
        print(f"{r.order:4d}  {cp.status(root, r):8s} {r.relpath}")
    left = cp.remaining(root, runs)
    print(f"{len(runs)} runs, {len(runs) - len(left)} done, {len(left)} to do")
    return 0


def freeze_campaign_file(src: Path, root: Path) -> None:
    """The campaign file is copied beside the data once; a later sitting must use the same file, or one
    that only raises repeats (:func:`capture.ceph.campaign.extension_problem`: e.g. the repeats a pilot's
    power estimate asks for once the planned ones are in).  Then the file the earlier runs ran with is
    kept as ``campaign-<sha256[:12]>.yaml`` (each run.json names its file's SHA-256) and the new one
    takes its place."""
    import hashlib
    import os
    root.mkdir(parents=True, exist_ok=True)
    dst = root / "campaign.yaml"
    if dst.exists():
        if dst.read_bytes() != src.read_bytes():
            why = cp.extension_problem(cp.load(dst), cp.load(src))
            if why is not None:
                raise cp.CampaignError(f"{src} differs from {dst}, the file the first sitting ran with: {why}; "
                                       "a campaign's settings cannot change between sittings, only its repeats "
                                       "can be raised (start a new campaign name instead)")
            keep = root / f"campaign-{hashlib.sha256(dst.read_bytes()).hexdigest()[:12]}.yaml"
            tmp = root / ".campaign.yaml.tmp"
            shutil.copyfile(dst, tmp)
            os.replace(tmp, keep)
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
            log_progress(f"{src} raises repeats only: the campaign goes on with it ({dst}); the earlier file is kept "
                 f"as {keep.name}")
    else:
        shutil.copyfile(src, dst)


def pilot_verdict(path: Path) -> tuple[bool, str]:
    """(go, why) from a pilot.json written by ``python -m analysis pilot``."""
    if not path.exists():
        return False, f"no pilot verdict at {path}: run `make capture-pilot CAMPAIGN=…` first"
    try:
        doc = json.loads(path.read_text())
        bad = [s for s, v in doc["scenarios"].items() if not v["go"]]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return False, f"{path}: not a pilot verdict ({e})"
    if bad:
        return False, f"{path}: the pilot says no-go for {', '.join(bad)}"
    return True, f"{path}: go for every scenario"


def cmd_run(a) -> int:
    doc = cp.load(a.campaign)
    root = a.out / doc["campaign"]
    forced = False
    if doc.get("throttle"):
        go, why = pilot_verdict(root / "pilot.json")
        if not go and not a.force:
            raise cp.CampaignError(why + " (--force runs it anyway, marked forced in its data)")
        forced = not go
        log_progress(why + ("; FORCED" if forced else ""))
    runs = cp.plan(doc)
    if doc.get("throttle"):
        # a block cut by an earlier sitting's end is run again whole (see sitting(): blocks never split)
        cp.supersede_split_blocks(root, runs, log_progress)
    todo = cp.remaining(root, runs)
    if a.max_runs is not None:
        todo = todo[:a.max_runs]
    if not todo:
        log_progress("nothing to do: every run has its done marker")
        return 0
    return sitting(doc, Path(a.campaign), a.out, todo, runs, a.max_minutes, forced=forced)


def cmd_pilot(a) -> int:
    doc = cp.load(a.campaign)
    pdoc = cp.pilot_doc(doc, a.round, a.scenarios)
    runs = cp.plan(pdoc)
    todo = cp.remaining(a.out / pdoc["campaign"], runs)
    if not todo:
        log_progress(f"pilot {pdoc['campaign']}: every run is done; now `python -m analysis pilot`")
        return 0
    log_progress(f"pilot {pdoc['campaign']}: {len(todo)} runs " + ", ".join(r.relpath for r in todo))
    return sitting(pdoc, Path(a.campaign), a.out, todo, runs, a.max_minutes, warmup=True)


def sitting(doc, campaign_file: Path, out: Path, todo, runs, max_minutes, forced: bool = False,
            warmup: bool | None = None) -> int:
    """One sitting: bring-up, the warm-up run (discarded) if asked, ``todo``, teardown, the record."""
    from .runner import Runner
    root = out / doc["campaign"]
    release = doc.get("ceph", "pacific")
    preflight(*where(Path(doc["cluster"].get("workdir", "/var/tmp/cephqos-cluster")), release))
    ensure_packages(log_progress, release)
    freeze_campaign_file(campaign_file, root)
    if (root / "_inprogress").exists():
        log_progress(f"removing half-finished runs from an earlier sitting: {root / '_inprogress'}")
        shutil.rmtree(root / "_inprogress")
    deadline = time.time() + max_minutes * 60 if max_minutes else None
    runner = Runner(doc, campaign_file, out, log_progress)
    runner.forced = forced
    record = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "planned": len(todo), "runs": [],
               "forced": forced}

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    rc = 0
    thr = float(doc.get("disturbed_outside_cpu_frac", 0.15))
    try:
        runner.bring_up()
        if doc.get("warmup", False) if warmup is None else warmup:
            w = cp.warmup_run(doc)
            log_progress(f"warm-up run {w.scenario}/{w.arm} (discarded: the first run after bring-up is slower)")
            t = time.time()
            try:
                runner.one(w)
            except ClusterError as e:
                log_progress(f"  warm-up failed ({e}); going on")
            runner.discard(w)
            record["warmup_s"] = round(time.time() - t, 1)
        # a throttled campaign's client level depends on the bring-up's PG map (the pilot: WPQ baseline 946
        # vs 705 IOPS in two bring-ups): its (repeat, scenario) blocks are never split between sittings
        blk = (lambda r: (r.repeat, r.scenario)) if doc.get("throttle") else None
        do_runs(todo, runner, threshold=thr, deadline=deadline, log=log_progress, errors=(ClusterError,), block=blk,
                sitting=record, after_failure=lambda: runner.cl.wait_clean(timeout=600),
                summary=lambda info: ({"duration_s": info["duration_s"],
                                       "steal_frac": info["cpu"].get("steal_frac")},
                                      f"{info['duration_s']:.0f} s; outside CPU {info['cpu']['outside_cpu_frac']:.3f}; "
                                      f"steal {info['cpu'].get('steal_frac', 0):.3f}; "
                                      f"unfinished: {info['background_unfinished'] or 'none'}"))
    except KeyboardInterrupt as e:
        log_progress(f"interrupted ({e}); tearing down")
        rc = 130
    except Exception as e:
        log_progress(f"ERROR: {type(e).__name__}: {e}; tearing down")
        rc = 1
    finally:
        runner.teardown()
        write_record(root, record)  # sitting-*.json: the capture's record, context for ingest
        left = cp.remaining(root, runs)
        log_progress(f"{len(runs) - len(left)}/{len(runs)} runs done; {len(left)} to do")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.ceph", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("campaign")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    r = sub.add_parser("run")
    r.add_argument("campaign")
    r.add_argument("--out", type=Path, default=DEFAULT_OUT)
    r.add_argument("--max-minutes", type=float, default=None)
    r.add_argument("--max-runs", type=int, default=None)
    r.add_argument("--force", action="store_true", help="run although the pilot said no-go (marked forced)")
    pp = sub.add_parser("pilot")
    pp.add_argument("campaign")
    pp.add_argument("--out", type=Path, default=DEFAULT_OUT)
    pp.add_argument("--max-minutes", type=float, default=None)
    pp.add_argument("--round", type=int, default=1,
                    help="pilot round (2, 3 … after a redesign: <campaign>-pilot-rN; earlier rounds are kept)")
    pp.add_argument("--scenarios", nargs="+", default=None, help="a later round's scenarios (and their baselines)")
    t = sub.add_parser("teardown")
    t.add_argument("--workdir", type=Path, default=Path("/var/tmp/cephqos-cluster"))
    a = ap.parse_args(argv)
    try:
        if a.cmd == "plan":
            return cmd_plan(a)
        if a.cmd == "run":
            return cmd_run(a)
        if a.cmd == "pilot":
            return cmd_pilot(a)
        print("killed PIDs:", teardown_workdir(a.workdir))
        return 0
    except (cp.CampaignError, ClusterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

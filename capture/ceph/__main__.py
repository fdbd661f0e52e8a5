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
import sys
import time
from pathlib import Path

from capture.common import campaign as common_campaign
from capture.common.cli import add_campaign_command, exit_status, show_plan
from capture.common.sitting import (clear_stage, deadline_after, do_runs, guarded, interrupt_on_sigterm,
                                    log_progress, log_runs_left, now_stamp, to_do)

from . import campaign as cp
from .cluster import ClusterError, ensure_packages, preflight, teardown_workdir, where

DEFAULT_OUT = Path("data/raw/ceph-qos")


def cmd_plan(a) -> int:
    doc = cp.load(a.campaign)
    return show_plan(a.out / doc["campaign"], cp.plan(doc))


def freeze_campaign_file(src: Path, root: Path) -> None:
    """The campaign file is copied beside the data once; a later sitting must use the same file, or one
    that only raises repeats (:func:`capture.ceph.campaign.extension_problem`: e.g. the repeats a pilot's
    power estimate asks for once the planned ones are in); see
    :func:`capture.common.campaign.freeze_campaign_file`."""
    common_campaign.freeze_campaign_file(src, root, cp.file_extension_problem, log_progress)


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
        short = cp.repeats_short(doc, json.loads((root / "pilot.json").read_text())) if go else {}
        if short and not doc.get("repeats_note"):
            raise cp.CampaignError(
                f"{a.campaign}: fewer repeats than its pilot asks for ("
                + ", ".join(f"{k} {p} < {r}" for k, (p, r) in short.items())
                + "): raise repeats, or say why in the campaign's repeats_note")
        if short:
            log_progress(f"fewer repeats than the pilot asks ({', '.join(short)}): {doc['repeats_note']}")
    runs = cp.plan(doc)
    if doc.get("throttle"):
        # a block cut by an earlier sitting's end is run again whole (see sitting(): blocks never split)
        cp.supersede_split_blocks(root, runs, log_progress)
    todo = to_do(root, runs, a.max_runs, log_progress)
    if not todo:
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
    clear_stage(root, log_progress)
    deadline = deadline_after(max_minutes)
    runner = Runner(doc, campaign_file, out, log_progress)
    runner.forced = forced
    record = {"started": now_stamp(), "planned": len(todo), "runs": [], "forced": forced}
    interrupt_on_sigterm()
    thr = float(doc.get("disturbed_outside_cpu_frac", 0.15))

    mode = cp.warmup_mode(doc) if warmup is None else ("sitting" if warmup else "none")

    def work() -> None:
        runner.bring_up()
        if mode == "sitting":
            record["warmup_s"] = warm_up(runner, doc)
        # a throttled campaign's client level depends on the bring-up's PG map (the pilot: WPQ baseline 946
        # vs 705 IOPS in two bring-ups): its (repeat, scenario) blocks are never split between sittings
        blk = (lambda r: (r.repeat, r.scenario)) if doc.get("throttle") or mode == "block" else None
        per_block = None
        if mode == "block":
            record["block_warmups"] = []

            def per_block(run) -> None:  # the discarded run before each block, named in its runs' run.json
                s = warm_up(runner, doc, run)
                runner.block_warmup = {"scenario": run.scenario, "arm": run.arm, "wall_s": s}
                record["block_warmups"].append({"block": f"{run.scenario}/rep-{run.repeat:02d}", "wall_s": s})
        do_runs(todo, runner, threshold=thr, deadline=deadline, log=log_progress, errors=(ClusterError,), block=blk,
                sitting=record, after_failure=lambda: runner.cl.wait_clean(timeout=600), summary=run_summary,
                before_block=per_block)
    return guarded(work, close=runner.teardown, root=root, record=record, log=log_progress,
                   after=lambda: log_runs_left(root, runs, log_progress))


def warm_up(runner, doc, before=None) -> float:
    """The discarded warm-up run (the first run after bring-up, or of a block with ``before`` its first
    run, is slower; a failure is logged, not raised); → its wall time (s, one decimal)."""
    w = cp.warmup_run(doc, before)
    log_progress(f"warm-up run {w.scenario}/{w.arm} (discarded: the first run "
                 f"{'of a block' if before is not None else 'after bring-up'} is slower)")
    t = time.time()
    try:
        runner.one(w)
    except ClusterError as e:
        log_progress(f"  warm-up failed ({e}); going on")
    runner.discard(w)
    return round(time.time() - t, 1)


def run_summary(info) -> tuple[dict, str]:
    """A kept run's fields for the sitting record, and its log line."""
    return ({"duration_s": info["duration_s"], "steal_frac": info["cpu"].get("steal_frac")},
            f"{info['duration_s']:.0f} s; outside CPU {info['cpu']['outside_cpu_frac']:.3f}; "
            f"steal {info['cpu'].get('steal_frac', 0):.3f}; "
            f"unfinished: {info['background_unfinished'] or 'none'}")


def command(a) -> int:
    """The subcommand ``a.cmd`` of the parsed arguments ``a``."""
    if a.cmd == "plan":
        return cmd_plan(a)
    if a.cmd == "run":
        return cmd_run(a)
    if a.cmd == "pilot":
        return cmd_pilot(a)
    print("killed PIDs:", teardown_workdir(a.workdir))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.ceph", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_campaign_command(sub, "plan", DEFAULT_OUT)
    r = add_campaign_command(sub, "run", DEFAULT_OUT)
    r.add_argument("--max-minutes", type=float, default=None)
    r.add_argument("--max-runs", type=int, default=None)
    r.add_argument("--force", action="store_true", help="run although the pilot said no-go (marked forced)")
    pp = add_campaign_command(sub, "pilot", DEFAULT_OUT)
    pp.add_argument("--max-minutes", type=float, default=None)
    pp.add_argument("--round", type=int, default=1,
                    help="pilot round (2, 3 … after a redesign: <campaign>-pilot-rN; earlier rounds are kept)")
    pp.add_argument("--scenarios", nargs="+", default=None, help="a later round's scenarios (and their baselines)")
    t = sub.add_parser("teardown")
    t.add_argument("--workdir", type=Path, default=Path("/var/tmp/cephqos-cluster"))
    a = ap.parse_args(argv)
    return exit_status(lambda: command(a), (cp.CampaignError, ClusterError))


if __name__ == "__main__":
    sys.exit(main())

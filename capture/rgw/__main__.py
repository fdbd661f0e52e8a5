"""python -m capture.rgw {plan,pilot,run} — RGW bucket-index sharding campaigns (issue 28).

  plan CAMPAIGN.yaml [--out DIR]                  the run order and which runs are done
  pilot CAMPAIGN.yaml [--out DIR] [--repeats N]   the campaign's arms, N repeats (default 2), as
                                                  <campaign>-pilot; then the verdict (pilot-verdict.json)
  run CAMPAIGN.yaml [--out DIR] [--max-minutes M] bring up, do the runs not yet done, tear down
  cbt CAMPAIGN.yaml [--out DIR]                   CBT's own getput benchmark, one CBT invocation per arm,
                                                  the campaign's repeats as CBT's iterations (capture.rgw.cbt)
  cbt-yaml CAMPAIGN.yaml [--arm NAME]             the YAML CBT is given for an arm (no cluster needed)

Run it alone on the machine: each run measures the CPU used outside the benchmark and redoes a
disturbed run.  Needs root (Ceph daemons, apt).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from statistics import NormalDist, mean, stdev
from typing import Any

from capture.ceph.campaign import file_extension_problem
from capture.ceph.cluster import ClusterError
from capture.common.campaign import freeze_campaign_file
from capture.common.cli import add_campaign_command, exit_status, show_plan
from capture.common.sitting import deadline_after, do_runs, guarded, interrupt_on_sigterm, log_progress, now_stamp

from . import campaign as rc
from .runner import RgwError, RgwRunner

DEFAULT_OUT = Path("data/raw/rgw")


def cmd_plan(a) -> int:
    doc = rc.load(a.campaign)
    return show_plan(a.out / doc["campaign"], rc.plan(doc))


def _summary(info: dict[str, Any]) -> tuple[dict[str, Any], str]:
    if "put" in info:
        p = info["put"]
        rgw = info["daemon_cpu_s"].get("rgw.gw0")
        return ({"put_mib_s": p["mib_s"], "rgw_cpu_s": rgw},
                f"PUT {p['mib_s']:.1f} MiB/s ({p['ops']} ops, {p['errs']} errs), radosgw {rgw} CPU-s, "
                f"index {json.dumps(info.get('index'))}")
    return {}, f"rados bench done ({info['measured_s']} s)"


def sitting(doc: dict[str, Any], root: Path, campaign_file: Path, max_minutes: float | None) -> int:
    """Bring up, do the runs not yet done, tear down; errors and interrupts are raised (after teardown and
    the record)."""
    if os.geteuid() != 0:
        print("capture.rgw needs root (Ceph daemons, apt)", file=sys.stderr)
        return 2
    # the Ceph harness's rule for a changed campaign file (what the RGW harness has always used)
    freeze_campaign_file(campaign_file, root, file_extension_problem, log_progress)
    runs = rc.remaining(root, rc.plan(doc))
    if not runs:
        log_progress("every run is done")
        return 0
    deadline = deadline_after(max_minutes)
    runner = RgwRunner(doc, root, log_progress)
    rec: dict[str, Any] = {"started": now_stamp(), "runs": []}
    interrupt_on_sigterm("")

    def work() -> None:
        runner.set_up()
        do_runs(runs, runner, threshold=float(doc["disturbed_outside_cpu_frac"]), deadline=deadline, log=log_progress,
                errors=(RgwError, ClusterError, OSError), sitting=rec, summary=_summary)
    return guarded(work, close=runner.close, root=root, record=rec, log=log_progress, interrupts=False, errors=False)


def pilot_doc(doc: dict[str, Any], repeats: int) -> dict[str, Any]:
    d = json.loads(json.dumps(doc))
    d["campaign"] = f"{doc['campaign']}-pilot"
    d["min_repeats"] = d["repeats"] = repeats
    return d


def verdict(root: Path, doc: dict[str, Any], alpha: float = 0.05, power: float = 0.8) -> dict[str, Any]:
    """From a pilot's run.json files: per arm PUT MiB/s, radosgw CPU-s per PUT MiB, machine busy share
    and index-pool ops in flight during the runs; whether sharding can matter here (the unsharded arm's
    index ops queue, the machine is not CPU-saturated) and the repeats per arm that detect the pilot's
    difference between the fewest- and most-shard shared arms (two-sided, normal approximation)."""
    per: dict[str, list[tuple[dict[str, Any], Path]]] = {}
    for rj in sorted(root.glob("*/*/rep-*/run.json")):
        info = json.loads(rj.read_text())
        per.setdefault(info["arm"], []).append((info, rj.parent))
    arms: dict[str, Any] = {}
    for name, infos in per.items():
        rows = []
        for i, rundir in infos:
            cpu = i["cpu"]
            busy = cpu["machine_busy_cpu_s"] / cpu["wall_s"] / cpu["ncpu"] if cpu["wall_s"] else None
            rows.append({"put_mib_s": (i.get("put") or {}).get("mib_s"), "busy": busy,
                         "rgw_cpu_s": i["daemon_cpu_s"].get("rgw.gw0"),
                         "index_ops_mean": _index_ops(rundir)})
        vals = [r["put_mib_s"] for r in rows if r["put_mib_s"] is not None]
        arms[name] = {"runs": rows, "put_mib_s_mean": mean(vals) if vals else None,
                      "put_mib_s_sd": stdev(vals) if len(vals) > 1 else None,
                      "busy_mean": mean(r["busy"] for r in rows if r["busy"] is not None)}
    shared = [a for a in doc["arms"] if not a.get("rados") and a.get("ctype", "shared") == "shared"]
    out: dict[str, Any] = {"arms": arms, "alpha": alpha, "power": power}
    if len(shared) >= 2:
        lo, hi = min(shared, key=lambda a: a["shards"]), max(shared, key=lambda a: a["shards"])
        a, b = arms.get(lo["name"]), arms.get(hi["name"])
        if a and b and a["put_mib_s_sd"] is not None and b["put_mib_s_sd"] is not None:
            delta = b["put_mib_s_mean"] - a["put_mib_s_mean"]
            sd = ((a["put_mib_s_sd"] ** 2 + b["put_mib_s_sd"] ** 2) / 2) ** 0.5
            z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
            n = 2 * (z * sd / delta) ** 2 if delta else float("inf")
            out.update({"compared": [lo["name"], hi["name"]], "delta_mib_s": delta, "sd_mib_s": sd,
                        "effect_d": delta / sd if sd else None,
                        "repeats_needed": max(doc["min_repeats"], int(n) + 1) if n != float("inf") else None})
            idx = [r["index_ops_mean"] for r in a["runs"] if r["index_ops_mean"] is not None]
            out["unsharded_index_ops_mean"] = mean(idx) if idx else None
            out["machine_busy_mean"] = mean(x["busy_mean"] for x in arms.values())
            out["can_decide"] = bool(out["unsharded_index_ops_mean"] and out["unsharded_index_ops_mean"] >= 1
                                     and out["machine_busy_mean"] < 0.9)
    return out


def _index_ops(rundir: Path) -> float | None:
    """Mean over the 1 s samples of the ops in flight on the index pool's PGs, summed over OSDs."""
    import gzip
    f = rundir / "sysutil.jsonl.gz"
    if not f.exists():
        return None
    vals = []
    with gzip.open(f, "rt") as g:
        for ln in g:
            osd = json.loads(ln).get("osd") or {}
            got = [o.get("pool_in_flight") for o in osd.values() if o.get("pool_in_flight") is not None]
            if got:
                vals.append(sum(got))
    return mean(vals) if vals else None


def cmd_cbt_yaml(a) -> int:
    """``cbt-yaml``: the YAML CBT is given for an arm, with placeholders for what bring-up decides."""
    import yaml
    from . import cbt
    doc = cbt.load(a.campaign)
    arm = rc.arm(doc, a.arm or doc["arms"][0]["name"])
    print(yaml.safe_dump(cbt.cbt_config(doc, arm, conf_file="<cluster conf>", mon_addr="<mon ip>:6789",
                                        tmp_dir="<out>/_inprogress/cbt-tmp-" + arm["name"], port=7480),
                         sort_keys=True), end="")
    return 0


def cmd_pilot(a) -> int:
    """``pilot``: the campaign's arms, ``--repeats`` each, as ``<campaign>-pilot``; then its verdict
    (``pilot-verdict.json``, printed without the per-arm detail)."""
    import yaml
    doc = pilot_doc(rc.load(a.campaign), a.repeats)
    root = a.out / doc["campaign"]
    tmp = root.parent / f".{doc['campaign']}.yaml"
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(yaml.safe_dump(doc, sort_keys=False))
    rc_ = sitting(doc, root, tmp, a.max_minutes)
    tmp.unlink(missing_ok=True)
    v = verdict(root, doc)
    (root / "pilot-verdict.json").write_text(json.dumps(v, indent=1))
    print(json.dumps({k: v[k] for k in v if k != "arms"}, indent=1))
    return rc_


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.rgw", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "pilot", "run", "cbt", "cbt-yaml"):
        p = add_campaign_command(sub, name, DEFAULT_OUT, campaign_type=Path)
        p.add_argument("--max-minutes", type=float)
        p.add_argument("--repeats", type=int, default=2)
        p.add_argument("--arm", help="cbt-yaml: the arm (default: the first)")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        return cmd_plan(a)
    if a.cmd == "cbt":
        from . import cbt
        return exit_status(lambda: cbt.sitting(a.campaign, a.out, log_progress), (rc.CampaignError,))
    if a.cmd == "cbt-yaml":
        return exit_status(lambda: cmd_cbt_yaml(a), (rc.CampaignError,))
    if a.cmd == "pilot":
        return cmd_pilot(a)
    doc = rc.load(a.campaign)
    return sitting(doc, a.out / doc["campaign"], a.campaign, a.max_minutes)


if __name__ == "__main__":
    sys.exit(main())

"""Campaign YAML → ordered run plan (pure; no Ceph needed).

A campaign file names the cluster, the arms (queue/profile settings), the scenarios (client IO plus
background operations) and the repeats.  The plan is repeat-major — every scenario × arm cell gets
its first repeat before any gets its second, so a campaign cut short is balanced — and the arm order
is shuffled within each (repeat, scenario) with a seed derived from the campaign seed, so the order is
random but the same in every sitting (which resuming relies on).  The planned run, resume state and
staging are the harnesses' shared schema (:mod:`capture.common.campaign`), named here too.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from capture.common.campaign import (DONE, INPROGRESS, CampaignError, Run, discard_run,  # noqa: F401
                                     finish_run, load_checked, read_yaml, remaining, requirer, seeded_rng,
                                     set_aside, status)

BACKGROUND_OPS = ("deep_scrub", "snaptrim", "recovery")

#: keys the runner reads without a default, per section; and per background operation, in ``pools``
REQUIRED = {
    "cluster": ("osds", "osd_size_gib", "osd_memory_target_mib", "mclock_capacity_iops"),
    "client": ("image_mib", "rw", "bs", "iodepth", "runtime_s"),
}
POOL_KEYS = {"snaptrim": ("snap_objects", "snap_object_kib"),
             "recovery": ("recovery_objects", "recovery_object_kib")}


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a campaign file; defaults filled in."""
    return load_checked(path, "campaign, cluster, arms, scenarios", validate)


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    need = requirer(where)
    need(isinstance(doc.get("campaign"), str) and doc["campaign"].strip() != "",
         "'campaign' must be a non-empty name")
    need("/" not in doc["campaign"], "'campaign' must not contain '/'")
    for sect, keys in REQUIRED.items():
        need(isinstance(doc.get(sect), dict), f"'{sect}' must be a mapping")
        for k in keys:
            need(k in doc[sect], f"{sect}.{k} is missing")
    need(doc.setdefault("ceph", "pacific") in ("pacific", "reef"),
         f"'ceph' must be pacific (the host's 16.2) or reef (18.2 in the chroot of make ceph-reef), "
         f"not {doc.get('ceph')!r}")
    min_rep = doc.get("min_repeats", 3)
    need(isinstance(min_rep, int) and min_rep >= 1, "'min_repeats' must be a positive integer")
    arms = doc.get("arms")
    need(isinstance(arms, dict) and arms, "'arms' must map arm names to settings")
    for name, a in arms.items():
        need(isinstance(name, str) and "/" not in name and not name.startswith(("_", ".")),
             f"arms.{name}: an arm name must not contain '/' or start with '_' or '.'")
        need(isinstance(a, dict) and a.get("osd_op_queue") in ("wpq", "mclock_scheduler"),
             f"arms.{name}.osd_op_queue must be wpq or mclock_scheduler")
        if a["osd_op_queue"] == "mclock_scheduler":
            need(a.get("osd_mclock_profile") in ("high_client_ops", "balanced",
                                                 "high_recovery_ops", "custom"),
                 f"arms.{name}.osd_mclock_profile must be a Pacific profile")
    scen = doc.get("scenarios")
    need(isinstance(scen, dict) and scen, "'scenarios' must map scenario names to settings")
    for name, s in scen.items():
        need(isinstance(s, dict), f"scenarios.{name} must be a mapping")
        need("/" not in name and not name.startswith(("_", ".")),
             f"scenarios.{name}: a scenario name must not contain '/' or start with '_' or '.'")
        s_arms = s.get("arms", list(arms))
        need(isinstance(s_arms, list) and s_arms, f"scenarios.{name}.arms must be a non-empty list")
        need(len(set(s_arms)) == len(s_arms), f"scenarios.{name}.arms lists an arm twice")
        for a in s_arms:
            need(a in arms, f"scenarios.{name}.arms names unknown arm {a!r}")
        for op in s.get("background", []):
            need(op in BACKGROUND_OPS, f"scenarios.{name}.background: {op!r} is not one of "
                                       f"{', '.join(BACKGROUND_OPS)}")
            for k in POOL_KEYS.get(op, ()):
                need(k in (doc.get("pools") or {}), f"pools.{k} is needed by scenarios.{name} ({op})")
        r = s.get("repeats", doc.get("repeats", 3))
        need(isinstance(r, int) and r >= min_rep,
             f"scenarios.{name}.repeats must be an integer ≥ min_repeats ({min_rep})")
        for a, n in (s.get("repeats_for") or {}).items():
            need(a in s_arms, f"scenarios.{name}.repeats_for: unknown arm {a!r}")
            need(isinstance(n, int) and n >= min_rep,
                 f"scenarios.{name}.repeats_for.{a} must be an integer ≥ min_repeats ({min_rep})")
    th = doc.get("throttle")
    if th is not None:
        need(isinstance(th, dict), "'throttle' must map read_iops and write_iops to IOPS limits")
        for k in ("read_iops", "write_iops"):
            need(isinstance(th.get(k), int) and not isinstance(th.get(k), bool) and th[k] > 0,
                 f"throttle.{k} must be a positive whole number of IOPS per OSD")
        # mClock's reservations and limits are shares of this capacity: equal to the device limit,
        # they mean what the seeds meant (a share of what the device can do)
        # (unless each OSD benchmarks its own capacity under the limit: ``mclock_capacity: bench``)
        need(doc["cluster"].get("mclock_capacity", "set") == "bench"
             or float(doc["cluster"]["mclock_capacity_iops"]) == float(th["read_iops"]),
             f"cluster.mclock_capacity_iops ({doc['cluster']['mclock_capacity_iops']}) must equal "
             f"throttle.read_iops ({th['read_iops']}): mClock's allocations are shares of it")
    cl = doc["cluster"]
    need(cl.get("mclock_capacity", "set") in ("set", "bench"),
         "cluster.mclock_capacity must be 'set' (mclock_capacity_iops) or 'bench' (each OSD's own benchmark)")
    need(cl.get("device_class") in (None, "ssd"),
         "cluster.device_class must be 'ssd' (flag the OSDs' disk non-rotational) or absent")
    if doc.get("client_config") is not None:
        need(isinstance(doc["client_config"], dict), "'client_config' must map options to values")
    for name, s in scen.items():
        pa = s.get("pilot_arms")
        if pa is not None:
            need(isinstance(pa, list) and len(pa) >= 2 and len(set(pa)) == len(pa),
                 f"scenarios.{name}.pilot_arms must name two or more different arms")
            for a in pa:
                need(a in s.get("arms", list(arms)), f"scenarios.{name}.pilot_arms: {a!r} is not an arm "
                                                     "of this scenario")
    doc.setdefault("seed", 0)
    doc.setdefault("repeats", 3)
    doc.setdefault("min_repeats", 3)
    return doc


#: settings of how the harness runs a campaign, not of its runs: a later sitting may change them
HARNESS_KEYS = ("warmup", "repeats_note")


def _without_repeats(doc: dict[str, Any]) -> dict[str, Any]:
    import copy
    d = copy.deepcopy(doc)
    d.pop("repeats", None)
    for k in HARNESS_KEYS:
        d.pop(k, None)
    for sc in (d.get("scenarios") or {}).values():
        if isinstance(sc, dict):
            sc.pop("repeats", None)
            sc.pop("repeats_for", None)
    return d


def extension_problem(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why ``new`` (a validated campaign) cannot continue the campaign ``old`` was run with, or None when
    it only raises repeats: every setting but ``repeats``/``repeats_for`` equal, and the old plan a prefix
    of the new one (the plan is repeat-major, so more repeats only add blocks after the old ones: every
    run already done keeps its place, and its block its arms)."""
    if _without_repeats(old) != _without_repeats(new):
        return "a setting other than repeats differs"
    po = [(r.scenario, r.arm, r.repeat) for r in plan(old)]
    pn = [(r.scenario, r.arm, r.repeat) for r in plan(new)]
    if pn[:len(po)] != po:
        return "the new plan does not begin with the old one (repeats can only be raised)"
    return None


def file_extension_problem(old: Path, new: Path) -> str | None:
    """:func:`extension_problem` of two campaign files (each read and validated here)."""
    return extension_problem(load(old), load(new))


PILOT_SUFFIX = "-pilot"


def pilot_name(campaign: str, round_: int = 1) -> str:
    """``<campaign>-pilot`` for the first round, ``<campaign>-pilot-r<N>`` after a redesign."""
    return campaign + PILOT_SUFFIX + ("" if round_ == 1 else f"-r{round_}")


def pilot_doc(doc: dict[str, Any], round_: int = 1, scenarios: list[str] | None = None) -> dict[str, Any]:
    """The pilot of a campaign as a campaign of its own (:func:`pilot_name`, so its runs never mix with
    the campaign's): per scenario its two ``pilot_arms`` (default: the first and last arm listed —
    name the two most different), one repeat each, plus a baseline run of every queue/profile those
    arms use (the client-drop check compares each arm with its own no-operation baseline).  A later
    round (after a redesign) pilots only ``scenarios`` and their baselines; earlier rounds stay."""
    import copy
    p = copy.deepcopy(doc)
    if scenarios:
        unknown = [s for s in scenarios if s not in doc["scenarios"]]
        if unknown:
            raise CampaignError(f"{doc['campaign']}: no scenario {', '.join(unknown)} to pilot")
        p["scenarios"] = {k: v for k, v in p["scenarios"].items() if k in scenarios or k == "baseline"}
    p["campaign"] = pilot_name(doc["campaign"], round_)
    p["repeats"], p["min_repeats"] = 1, 1
    base_name = "baseline" if "baseline" in doc["scenarios"] else None
    need_base: list[str] = []
    for name, s in p["scenarios"].items():
        s_arms = s.get("arms", list(doc["arms"]))
        s["arms"] = list(s.get("pilot_arms") or [s_arms[0], s_arms[-1]])
        s.pop("repeats_for", None)
        s.pop("repeats", None)
        if name != base_name:
            need_base += s["arms"]
    if base_name is not None:
        b_arms = doc["scenarios"][base_name].get("arms", list(doc["arms"]))
        def key(a):
            return (doc["arms"][a]["osd_op_queue"], doc["arms"][a].get("osd_mclock_profile"),
                         repr(doc["arms"][a].get("allocations")))
        by_key = {key(a): a for a in reversed(b_arms)}
        want = []
        for a in need_base:
            b = by_key.get(key(a))
            if b is not None and b not in want:
                want.append(b)
        p["scenarios"][base_name]["arms"] = want or p["scenarios"][base_name]["arms"]
    return validate(p, f"{doc['campaign']} (pilot)")


def warmup_run(doc: dict[str, Any], before: Run | None = None) -> Run:
    """The discarded run at the start of a sitting (the first run after bring-up is slower), or with
    ``before`` the one at the start of that run's (repeat, scenario) block: the same scenario and arm
    (the first run of every block was the odd one out in qos-v2 and qos-reef, whichever arm it was)."""
    if before is not None:
        return Run(doc["campaign"], before.scenario, before.arm, 0, -1)
    sname = "baseline" if "baseline" in doc["scenarios"] else next(iter(doc["scenarios"]))
    s = doc["scenarios"][sname]
    return Run(doc["campaign"], sname, s.get("arms", list(doc["arms"]))[0], 0, -1)


def warmup_mode(doc: dict[str, Any]) -> str:
    """``block`` (a discarded run before every (repeat, scenario) block), ``sitting`` (one after bring-up)
    or ``none``, from the campaign's ``warmup`` (``block``, ``true``/``sitting``, ``false``/``none``)."""
    w = doc.get("warmup", False)
    if w in ("block", "sitting", "none"):
        return w
    if isinstance(w, bool):
        return "sitting" if w else "none"
    raise CampaignError(f"{doc.get('campaign')}: warmup must be block, sitting (true) or none (false), not {w!r}")


def repeats_short(doc: dict[str, Any], pilot: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Scenarios whose planned repeats (the smallest over the scenario's arms) fall short of what the
    pilot verdict (pilot.json) recommends: scenario → (planned, recommended)."""
    out = {}
    for name, v in (pilot.get("scenarios") or {}).items():
        s = doc["scenarios"].get(name)
        if s is None or not isinstance(v, dict) or "repeats_recommended" not in v:
            continue
        per = s.get("repeats_for") or {}
        base = s.get("repeats", doc.get("repeats", 3))
        planned = min(per.get(a, base) for a in s.get("arms", list(doc["arms"])))
        if planned < int(v["repeats_recommended"]):
            out[name] = (planned, int(v["repeats_recommended"]))
    return out


def plan(doc: dict[str, Any]) -> list[Run]:
    """Every run of the campaign, in execution order (repeat-major, arms shuffled per repeat)."""
    arms_all = list(doc["arms"])
    cells: dict[str, dict[str, int]] = {}
    for sname, s in doc["scenarios"].items():
        base = s.get("repeats", doc["repeats"])
        per = s.get("repeats_for") or {}
        cells[sname] = {a: per.get(a, base) for a in s.get("arms", arms_all)}
    top = max(n for c in cells.values() for n in c.values())
    runs: list[Run] = []
    for rep in range(1, top + 1):
        for sname, c in cells.items():
            arms = [a for a in c if c[a] >= rep]
            seeded_rng(doc["seed"], rep, sname).shuffle(arms)
            for a in arms:
                runs.append(Run(doc["campaign"], sname, a, rep, len(runs)))
    return runs


SUPERSEDED = "_superseded"  # finished runs of a block split between sittings; analysis.ingest.discovery skips it


def split_blocks(root: Path, runs: list[Run]) -> dict[tuple[int, str], list[Run]]:
    """(repeat, scenario) blocks that are partly done: some runs have their ``done`` marker and some
    do not.  At the start of a sitting such a block was cut by the end of an earlier one (a session
    stopped mid-block), so its done runs come from another bring-up than the rest would.  → the done
    runs of each such block."""
    by: dict[tuple[int, str], list[Run]] = {}
    for r in runs:
        by.setdefault((r.repeat, r.scenario), []).append(r)
    out = {}
    for key, rs in by.items():
        done = [r for r in rs if status(root, r) == "done"]
        if done and len(done) < len(rs):
            out[key] = done
    return out


def supersede_split_blocks(root: Path, runs: list[Run], log) -> list[Path]:
    """Move the done runs of every split block (:func:`split_blocks`) to
    ``<root>/_superseded/<cluster fsid>/<scenario>/<arm>/rep-NN`` with a ``why.json`` beside them, so the
    whole block is run again in one bring-up.  Arms compared in a block must share a bring-up: the client
    level moved 946 → 705 IOPS between two (pilot.json).  The runs are kept (raw data is never deleted)
    but ingest skips the folder.  Returns where they went."""
    import json
    moved: list[Path] = []
    for (rep, scen), done in sorted(split_blocks(root, runs).items()):
        fsids = set()
        for r in done:
            try:
                fsids.add(json.loads((root / r.relpath / "run.json").read_text())["cluster"]["fsid"])
            except (OSError, ValueError, KeyError, TypeError):
                fsids.add("unknown-cluster")
        tag = "+".join(sorted(fsids))
        base = root / SUPERSEDED / tag
        for r in done:
            dest = base / r.relpath
            if dest.exists():
                raise CampaignError(f"{dest} exists already: not moving {root / r.relpath} over it")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(root / r.relpath), str(dest))
            moved.append(dest)
        why = base / "why.json"
        entries = json.loads(why.read_text()) if why.exists() else []
        entries.append({"moved": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "repeat": rep, "scenario": scen,
                        "runs": [r.relpath for r in done],
                        "missing": [r.relpath for r in runs if (r.repeat, r.scenario) == (rep, scen)
                                    and r not in done],
                        "why": "block split between sittings (the earlier one stopped mid-block); the "
                               "whole block is run again in one bring-up so its arms share a cluster"})
        tmp = why.with_name(".why.json.tmp")  # hidden: never in the manifest if left behind
        tmp.write_text(json.dumps(entries, indent=1) + "\n")
        os.replace(tmp, why)
        log(f"block rep {rep} / {scen} was split by an earlier sitting: its {len(done)} done runs moved to "
            f"{base} (kept, not ingested); the whole block runs again")
    return moved


def runs_per_scenario(doc: dict[str, Any], repeats: dict[str, int] | None = None) -> dict[str, int]:
    """Runs per scenario of the campaign's plan, or with each named scenario's repeats raised to
    ``repeats[scenario]`` (never lowered): what a pilot's recommended repeats would cost."""
    import copy
    d = copy.deepcopy(doc)
    for s, n in (repeats or {}).items():
        if s in d["scenarios"]:
            d["scenarios"][s]["repeats"] = max(int(n), d["scenarios"][s].get("repeats", d["repeats"]))
    out: dict[str, int] = {}
    for r in plan(d):
        out[r.scenario] = out.get(r.scenario, 0) + 1
    return out

"""A CBT campaign file → the CBT YAML of each arm, and the arm order (pure; no Ceph needed).

The campaign names the cluster (as :mod:`capture.ceph` campaigns do: osds, per-OSD IO limits, OSD
settings, the client image), the arms (op queue / mClock profile), CBT's ``iterations`` and CBT's own
``cluster`` and ``benchmarks`` sections, which pass through to CBT unchanged except for what the
harness must decide: where the cluster is (CBT's ``use_existing: True``: ``head``/``clients``/``osds``/
``mons`` on ``localhost``, the cluster's ``conf_file``) and librbdfio's volume (the image the harness made
and prefilled at bring-up, ``use_existing_volumes``).
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

from capture.common.campaign import load_checked, requirer

#: CBT's benchmarks this harness has run here and whose archives analysis.ingest reads
SUPPORTED = ("librbdfio", "radosbench")
#: cluster keys the harness sets (a campaign that sets them is refused: they describe this machine)
HARNESS_CLUSTER_KEYS = ("head", "clients", "osds", "mons", "conf_file", "iterations", "use_existing",
                        "tmp_dir", "user", "is_teuthology", "archive_dir")
#: the node name CBT runs its commands on: CBT's common.get_localnode() runs them for ``localhost``
#: through its local shell (``sh -c``) instead of ``pdsh -R ssh`` — the same commands either way
NODE = "localhost"
PILOT_SUFFIX = "-pilot"


def load(path: str | Path) -> dict[str, Any]:
    return load_checked(path, "campaign, cluster, arms, iterations, cbt", validate)


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    need = requirer(where)
    need(isinstance(doc.get("campaign"), str) and doc["campaign"].strip() != "",
         "expected `campaign: <name>`")
    need(doc.get("ceph", "pacific") == "pacific",
         f"`ceph: {doc.get('ceph')}`: CBT runs the host's ceph, rados, rbd and fio (Pacific); expected pacific")
    c = doc.get("cluster")
    need(isinstance(c, dict), "expected a `cluster:` mapping")
    for k in ("osds", "osd_size_gib", "osd_memory_target_mib", "mclock_capacity_iops"):
        need(k in c, f"cluster.{k} is missing")
    cl = doc.get("client")
    need(isinstance(cl, dict) and "image_mib" in cl, "expected `client: {image_mib: …}` (librbdfio's volume)")
    arms = doc.get("arms")
    need(isinstance(arms, dict) and len(arms) >= 2, "expected `arms:` with at least two arms")
    for name, arm in arms.items():
        need(isinstance(arm, dict) and arm.get("osd_op_queue") in ("wpq", "mclock_scheduler"),
             f"arms.{name}: expected osd_op_queue wpq or mclock_scheduler")
    it = doc.get("iterations")
    need(isinstance(it, int) and it >= 1, f"iterations: expected an integer ≥ 1, got {it!r}")
    pilot = doc.setdefault("pilot", {})
    need(isinstance(pilot, dict), "pilot: expected a mapping")
    pilot.setdefault("iterations", 2)
    pilot.setdefault("arms", list(arms))
    need(isinstance(pilot["iterations"], int) and pilot["iterations"] >= 2,
         "pilot.iterations: expected an integer ≥ 2 (a spread needs two)")
    for key in ("arms",):
        unknown = [a for a in pilot[key] if a not in arms]
        need(not unknown, f"pilot.arms: {unknown} not in arms")
    pair = doc.setdefault("campaign_arms", list(arms)[:2])
    need(isinstance(pair, list) and len(pair) == 2 and all(a in arms for a in pair),
         f"campaign_arms: expected two names from arms, got {pair!r}")
    cbt = doc.get("cbt")
    need(isinstance(cbt, dict) and isinstance(cbt.get("benchmarks"), dict) and cbt["benchmarks"],
         "expected `cbt: {benchmarks: {…}}` (CBT's own benchmarks section)")
    for b in cbt["benchmarks"]:
        need(b in SUPPORTED, f"cbt.benchmarks.{b}: only {', '.join(SUPPORTED)} are run and read here")
    set_here = sorted(set(cbt.get("cluster") or {}) & set(HARNESS_CLUSTER_KEYS))
    need(not set_here, f"cbt.cluster sets {set_here}: the harness sets these (they describe this machine)")
    return doc


def arm_order(doc: dict[str, Any], arms: list[str], pilot: bool = False) -> list[str]:
    """The arms in the order they run: shuffled with the campaign's seed (the same in every sitting), so
    neither arm is always first after bring-up."""
    rng = random.Random(f"{doc.get('seed', 0)}/{doc['campaign']}/{'pilot' if pilot else 'campaign'}")
    out = list(arms)
    rng.shuffle(out)
    return out


def cbt_config(doc: dict[str, Any], *, conf_file: str, mon_addr: str, tmp_dir: str, iterations: int,
               image: tuple[str, str]) -> dict[str, Any]:
    """CBT's YAML for one arm: the campaign's ``cbt`` sections plus this machine's cluster.  ``image``:
    (pool, image) of the volume made at bring-up; ``mon_addr``: ``ip:port`` of the monitor."""
    cbt = copy.deepcopy(doc["cbt"])
    cluster = dict(cbt.get("cluster") or {})
    cluster.update({
        "head": NODE, "clients": [NODE], "osds": [NODE], "mons": {NODE: {"a": mon_addr}},
        "osds_per_node": int(doc["cluster"]["osds"]),
        "use_existing": True, "conf_file": conf_file, "tmp_dir": tmp_dir, "iterations": int(iterations),
        # CBT (9d6480f) runs a benchmark only if its results folder exists, and only the first benchmark of
        # each class gets one (from initialize()): every other iteration and permutation is skipped,
        # unless is_teuthology is set (cbt.py's run loop; ceph/cbt PR #283)
        "is_teuthology": True,
    })
    cbt["cluster"] = cluster
    benches = cbt["benchmarks"]
    if "librbdfio" in benches:
        pool, img = image
        # no_sudo: sudo's env_reset drops CEPH_CONF, the only way fio's rbd engine (given no conf by CBT)
        # finds this cluster; the harness runs as root anyway
        benches["librbdfio"] = {**benches["librbdfio"], "use_existing_volumes": True, "poolname": pool,
                                "rbdname": img, "vol_size": int(doc["client"]["image_mib"]), "no_sudo": True}
    return cbt


def expected_outputs(doc: dict[str, Any], iterations: int) -> dict[str, int]:
    """How many tool outputs a complete archive holds, per benchmark: librbdfio one ``output.0.<node>``
    per iteration × permutation; radosbench one per iteration × permutation × phase (write, read) ×
    process."""
    out = {}
    for name, conf in doc["cbt"]["benchmarks"].items():
        perms = 1
        for v in conf.values():
            if isinstance(v, list):
                perms *= len(v)
        if name == "radosbench":
            phases = (0 if conf.get("read_only") else 1) + (0 if conf.get("write_only") else 1) + \
                (1 if conf.get("prefill_time") or conf.get("prefill_objects") else 0)
            perms *= phases * int(conf.get("concurrent_procs", 1))
        else:
            perms *= int(conf.get("volumes_per_client", 1))
        out[name] = perms * iterations
    return out

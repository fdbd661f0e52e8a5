"""RGW campaign YAML → ordered run plan (pure; no Ceph needed).

A campaign names the cluster (OSDs, pools and their PG counts, optional per-OSD IO limits), the load
(processes, object size, PUT and GET seconds) and the arms: an RGW arm sets the bucket-index shards
(``rgw_override_bucket_index_max_shards``; Pacific's zonegroup default of 11 applies at 0, so the
diary's unsharded index is ``shards: 1``) and the container type (``shared``: one bucket; ``byproc``: one
per process); the ``rados`` arm runs ``rados bench`` 4 MiB writes at the same concurrency in the same
sitting, the diary's reference.  The plan is repeat-major, arms shuffled within each repeat with a seed
derived from the campaign seed (the same order in every sitting, which resuming relies on).  Resume
state, staging and the ``done`` marker are the harnesses' shared
schema's (``capture.common.campaign``).

Run directory: ``<scenario>/<arm>/rep-NN``, scenario ``put-<osize>-p<procs>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from capture.common.campaign import (DONE, INPROGRESS, CampaignError, Run, seeded_rng, discard_run,  # noqa: F401
                                     finish_run, load_checked, remaining, requirer, status)

CTYPES = ("shared", "byproc")
_SIZE = re.compile(r"^\d+[kKmM]$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def size_bytes(s: str) -> int:
    return int(s[:-1]) << (10 if s[-1] in "kK" else 20)


def load(path: str | Path) -> dict[str, Any]:
    return load_checked(path, "campaign, cluster, load, arms", validate)


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    need = requirer(where)
    need(isinstance(doc.get("campaign"), str) and bool(_NAME.match(doc["campaign"])),
         "'campaign' must be a name of a-z, 0-9 and '-'")
    cl = doc.get("cluster")
    need(isinstance(cl, dict), "'cluster' must be a mapping")
    need(isinstance(cl.get("osds"), int) and 1 <= cl["osds"] <= 8, "cluster.osds must be an integer 1–8")
    cl.setdefault("osd_size_gib", 16)
    cl.setdefault("osd_memory_target_mib", 1024)
    cl.setdefault("pool_size", 1)
    cl.setdefault("index_pg_num", 8)
    cl.setdefault("data_pg_num", 128)
    cl.setdefault("workdir", "/var/tmp/cephqos-rgw-cluster")
    cl.setdefault("throttle_iops", None)
    for k in ("index_pg_num", "data_pg_num"):
        need(isinstance(cl[k], int) and cl[k] >= 1 and cl[k] & (cl[k] - 1) == 0,
             f"cluster.{k} must be a power of two")
    need(cl["throttle_iops"] is None or (isinstance(cl["throttle_iops"], int) and cl["throttle_iops"] > 0),
         "cluster.throttle_iops must be a positive integer (per-OSD read and write IOPS) or null")
    ld = doc.get("load")
    need(isinstance(ld, dict), "'load' must be a mapping")
    need(isinstance(ld.get("procs"), int) and 1 <= ld["procs"] <= 256, "load.procs must be an integer 1–256")
    need(isinstance(ld.get("osize"), str) and bool(_SIZE.match(ld["osize"])), "load.osize must be like 4m")
    for k in ("put_s", "get_s"):
        need(isinstance(ld.get(k), (int, float)) and ld[k] >= 0, f"load.{k} must be seconds ≥ 0")
    need(ld["put_s"] > 0, "load.put_s must be > 0")
    ld.setdefault("psum", True)
    ld.setdefault("settle_s", 5)
    arms = doc.get("arms")
    need(isinstance(arms, list) and arms, "'arms' must list the arms")
    names = set()
    for a in arms:
        need(isinstance(a, dict) and isinstance(a.get("name"), str) and bool(_NAME.match(a["name"])),
             "each arm needs a 'name' of a-z, 0-9 and '-'")
        need(a["name"] not in names, f"arm {a['name']!r} listed twice")
        names.add(a["name"])
        if a.get("rados"):
            need(set(a) <= {"name", "rados"}, f"arm {a['name']}: a rados arm takes no other keys")
            continue
        need(isinstance(a.get("shards"), int) and 0 <= a["shards"] <= 1999,
             f"arm {a['name']}: 'shards' must be an integer 0–1999")
        a.setdefault("ctype", "shared")
        need(a["ctype"] in CTYPES, f"arm {a['name']}: 'ctype' must be one of {', '.join(CTYPES)}")
    min_rep = doc.setdefault("min_repeats", 3)
    rep = doc.setdefault("repeats", min_rep)
    need(isinstance(rep, int) and rep >= min_rep >= 1, f"'repeats' must be an integer ≥ min_repeats ({min_rep})")
    doc.setdefault("seed", 0)
    doc.setdefault("disturbed_outside_cpu_frac", 0.3)
    return doc


def scenario(doc: dict[str, Any]) -> str:
    ld = doc["load"]
    return f"put-{ld['osize'].lower()}-p{ld['procs']}"


def arm(doc: dict[str, Any], name: str) -> dict[str, Any]:
    for a in doc["arms"]:
        if a["name"] == name:
            return a
    raise CampaignError(f"no arm named {name!r} in campaign {doc['campaign']}")


def plan(doc: dict[str, Any]) -> list[Run]:
    """Every run, in execution order: repeat-major, the arms shuffled within each repeat."""
    sc = scenario(doc)
    runs: list[Run] = []
    for rep in range(1, doc["repeats"] + 1):
        order = [a["name"] for a in doc["arms"]]
        seeded_rng(doc["seed"], rep, "rgw").shuffle(order)
        for name in order:
            runs.append(Run(doc["campaign"], sc, name, rep, len(runs)))
    return runs

"""Block-layer campaign YAML → ordered run plan (pure; no devices needed).

A cell is (target, rw, bs, iodepth) × IO scheduler; ``target`` is ``raw`` (fio on the loop device) or
a file system made on its own loop device (``xfs``, ``ext4``, ``btrfs``).  A campaign with a ``rados``
section instead has cells (bs, iodepth): ``rados bench`` write then seq read of what it wrote, on a
Ceph cluster whose BlueStore OSDs sit on loop devices (data and DB apart), the IO scheduler set on all
of them per run; scenario ``rados-<bs>-qd<iodepth>``.  The plan is repeat-major —
every cell gets its n-th repeat before any gets its (n+1)-th, so a campaign cut short stays balanced —
and within a repeat the order of all cells is shuffled with a seed derived from the campaign seed (the
same order in every sitting, which resuming relies on).  Resume state, staging and the ``done`` marker
are the harnesses' shared
schema's (``capture.common.campaign``).

Run directory: ``<scenario>/<scheduler>/rep-NN`` with scenario ``fio-<target>-<rw>-<bs>-qd<iodepth>``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from capture.common.campaign import (DONE, INPROGRESS, CampaignError, Run, seeded_rng, discard_run,  # noqa: F401
                                     finish_run, load_checked, remaining, requirer, status)

SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
TARGETS = ("raw", "xfs", "ext4", "btrfs")
RWS = ("read", "write", "randread", "randwrite")
_BS = re.compile(r"^\d+[kKmM]$")


def bs_bytes(bs: str) -> int:
    return int(bs[:-1]) << (10 if bs[-1] in "kK" else 20)


def scenario_name(target: str, rw: str, bs: str, iodepth: int) -> str:
    return f"fio-{target}-{rw}-{bs.lower()}-qd{iodepth}"


def rados_scenario_name(bs: str, iodepth: int) -> str:
    return f"rados-{bs.lower()}-qd{iodepth}"


def load(path: str | Path) -> dict[str, Any]:
    return load_checked(path, "campaign, schedulers, device, fio or rados", validate)


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    need = requirer(where)
    need(isinstance(doc.get("campaign"), str) and doc["campaign"].strip() and "/" not in doc["campaign"],
         "'campaign' must be a non-empty name without '/'")
    sch = doc.get("schedulers")
    need(isinstance(sch, list) and sch and all(s in SCHEDULERS for s in sch) and len(set(sch)) == len(sch),
         f"'schedulers' must list distinct names from {', '.join(SCHEDULERS)}")
    dev = doc.get("device")
    need(isinstance(dev, dict) and isinstance(dev.get("size_mib"), int) and dev["size_mib"] >= 64,
         "device.size_mib must be an integer ≥ 64 (MiB of each loop device's backing file)")
    need(("fio" in doc) != ("rados" in doc), "give exactly one of 'fio' (fio on loop devices and file "
         "systems) or 'rados' (rados bench on OSDs on loop devices)")
    if "fio" in doc:
        _validate_fio(doc, need)
    else:
        _validate_rados(doc, need)
    min_rep = doc.setdefault("min_repeats", 6)
    rep = doc.setdefault("repeats", min_rep)
    need(isinstance(rep, int) and rep >= min_rep, f"'repeats' must be an integer ≥ min_repeats ({min_rep})")
    tr = doc.setdefault("trace", {})
    need(isinstance(tr, dict), "'trace' must be a mapping")
    keys = TRACE_KEYS_RADOS if "rados" in doc else TRACE_KEYS_FIO
    names = {c["scenario"] for c in cells(doc)}
    for c in tr.get("cells", []):
        need(isinstance(c, dict) and set(c) == set(keys), f"trace.cells entries need exactly {', '.join(keys)}")
        need(_name(doc, c) in names, f"trace.cells: {c} is not a cell of the campaign")
    need(all(isinstance(r, int) and 1 <= r <= rep for r in tr.get("repeats", [1])),
         "trace.repeats must list repeat numbers of the campaign")
    doc.setdefault("seed", 0)
    return doc


TRACE_KEYS_FIO = ("target", "rw", "bs", "iodepth")
TRACE_KEYS_RADOS = ("bs", "iodepth")


def _sizes_and_depths(sec: dict[str, Any], where: str, need) -> None:
    need(isinstance(sec.get("bs"), list) and sec["bs"] and all(isinstance(b, str) and _BS.match(b) for b in sec["bs"]),
         f"{where}.bs must list sizes like 4k, 128k, 4m")
    need(isinstance(sec.get("iodepth"), list) and sec["iodepth"]
         and all(isinstance(q, int) and 1 <= q <= 4096 for q in sec["iodepth"]),
         f"{where}.iodepth must list integers 1–4096")


def _validate_fio(doc: dict[str, Any], need) -> None:
    fio, dev = doc["fio"], doc["device"]
    need(isinstance(fio, dict), "'fio' must be a mapping")
    for k, allowed in (("targets", TARGETS), ("rw", RWS)):
        v = fio.get(k)
        need(isinstance(v, list) and v and all(x in allowed for x in v),
             f"fio.{k} must list values from {', '.join(allowed)}")
    _sizes_and_depths(fio, "fio", need)
    for k in ("runtime_s", "file_mib"):
        need(isinstance(fio.get(k), (int, float)) and fio[k] > 0, f"fio.{k} must be a positive number")
    need(fio["file_mib"] < dev["size_mib"], "fio.file_mib must be smaller than device.size_mib")
    fio.setdefault("ramp_s", 1)
    fio.setdefault("ioengine", "libaio")


def _validate_rados(doc: dict[str, Any], need) -> None:
    ra, dev = doc["rados"], doc["device"]
    need(isinstance(ra, dict), "'rados' must be a mapping")
    _sizes_and_depths(ra, "rados", need)
    for k in ("write_s", "seq_s"):
        need(isinstance(ra.get(k), (int, float)) and ra[k] > 0, f"rados.{k} must be a positive number (s)")
    need(isinstance(dev.get("db_mib"), int) and dev["db_mib"] >= 64,
         "device.db_mib must be an integer ≥ 64 (MiB of each OSD's BlueStore DB loop device)")
    cl = doc.get("cluster")
    need(isinstance(cl, dict) and isinstance(cl.get("osds"), int) and 1 <= cl["osds"] <= 16,
         "cluster.osds must be an integer 1–16")
    cl.setdefault("pg_num", 64)
    cl.setdefault("pool_size", 1)
    cl.setdefault("osd_memory_target_mib", 1024)
    cl.setdefault("workdir", "/var/tmp/cephqos-block-cluster")
    ra.setdefault("settle_s", 1)


def _name(doc: dict[str, Any], c: dict[str, Any]) -> str:
    if "rados" in doc:
        return rados_scenario_name(c["bs"], c["iodepth"])
    return scenario_name(c["target"], c["rw"], c["bs"], c["iodepth"])


def cells(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if "rados" in doc:
        r = doc["rados"]
        return [{"bs": bs, "iodepth": q, "scenario": rados_scenario_name(bs, q)}
                for bs in r["bs"] for q in r["iodepth"]]
    f = doc["fio"]
    return [{"target": t, "rw": rw, "bs": bs, "iodepth": q, "scenario": scenario_name(t, rw, bs, q)}
            for t in f["targets"] for rw in f["rw"] for bs in f["bs"] for q in f["iodepth"]]


def plan(doc: dict[str, Any]) -> list[Run]:
    """Every run, in execution order: repeat-major, all (cell, scheduler) pairs shuffled per repeat."""
    pairs = [(c["scenario"], s) for c in cells(doc) for s in doc["schedulers"]]
    runs: list[Run] = []
    for rep in range(1, doc["repeats"] + 1):
        order = list(pairs)
        seeded_rng(doc["seed"], rep, "block").shuffle(order)
        for sc, s in order:
            runs.append(Run(doc["campaign"], sc, s, rep, len(runs)))
    return runs


def cell_of(doc: dict[str, Any], scenario: str) -> dict[str, Any]:
    for c in cells(doc):
        if c["scenario"] == scenario:
            return c
    raise CampaignError(f"no cell named {scenario!r} in campaign {doc['campaign']}")


def traced(doc: dict[str, Any], run: Run) -> bool:
    """Whether this run records a kernel block trace (trace.cells × trace.repeats, every scheduler)."""
    tr = doc.get("trace") or {}
    if run.repeat not in tr.get("repeats", [1]):
        return False
    return any(_name(doc, t) == run.scenario for t in tr.get("cells", []))


def fio_argv(doc: dict[str, Any], cell: dict[str, Any], filename: str, name: str = "job") -> list[str]:
    """fio 3.33 command line for one run: direct IO, time-based, json+ with 1 s logs (run in the
    run's directory, so the logs land there)."""
    f = doc["fio"]
    return ["fio", f"--name={name}", f"--filename={filename}", f"--rw={cell['rw']}", f"--bs={cell['bs']}",
            f"--iodepth={cell['iodepth']}", f"--ioengine={f['ioengine']}", "--direct=1",
            f"--size={f['file_mib']}M", "--time_based", f"--runtime={f['runtime_s']}",
            f"--ramp_time={f['ramp_s']}", "--output-format=json+", "--output=fio.json",
            "--log_avg_msec=1000", f"--write_lat_log={name}", f"--write_bw_log={name}",
            f"--write_iops_log={name}", "--randrepeat=0"]

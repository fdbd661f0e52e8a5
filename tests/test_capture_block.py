"""The block campaign's pure parts: validation, the run plan, trace selection, fio's command line."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest

from capture.block import campaign as bc

ROOT = Path(__file__).resolve().parents[1]
DOC = {
    "campaign": "t", "seed": 3, "min_repeats": 2, "repeats": 3,
    "schedulers": ["none", "mq-deadline", "kyber", "bfq"],
    "device": {"size_mib": 512},
    "fio": {"targets": ["raw", "xfs"], "rw": ["write", "read"], "bs": ["4k", "4m"], "iodepth": [16, 256],
            "runtime_s": 2, "file_mib": 256},
    "trace": {"cells": [{"target": "raw", "rw": "write", "bs": "4k", "iodepth": 16}], "repeats": [1, 3]},
}


def doc(**over):
    d = copy.deepcopy(DOC)
    for k, v in over.items():
        d[k] = v
    return bc.validate(d)


def test_plan_is_repeat_major_shuffled_and_stable():
    d = doc()
    runs = bc.plan(d)
    cells = 2 * 2 * 2 * 2
    assert len(runs) == cells * 4 * 3
    assert [r.repeat for r in runs] == sorted(r.repeat for r in runs)  # repeat-major
    per_rep = [[(r.scenario, r.arm) for r in runs if r.repeat == k] for k in (1, 2, 3)]
    assert all(Counter(p) == Counter(per_rep[0]) for p in per_rep)  # every pair once per repeat
    assert per_rep[0] != per_rep[1]  # shuffled anew each repeat
    assert [r.relpath for r in bc.plan(doc())] == [r.relpath for r in runs]  # same order every sitting
    assert [r.order for r in runs] == list(range(len(runs)))
    assert runs[0].relpath.startswith("fio-") and "/rep-01" in runs[0].relpath
    # the schedulers of one cell are not always in the same order
    firsts = {tuple(a for s, a in p if s == "fio-raw-write-4k-qd16") for p in per_rep}
    assert len(firsts) > 1


def test_traced_runs_and_cells():
    d = doc()
    runs = bc.plan(d)
    tr = [r for r in runs if bc.traced(d, r)]
    assert sorted((r.arm, r.repeat) for r in tr) == sorted((s, k) for s in d["schedulers"] for k in (1, 3))
    assert {r.scenario for r in tr} == {"fio-raw-write-4k-qd16"}
    c = bc.cell_of(d, "fio-xfs-read-4m-qd256")
    assert c == {"target": "xfs", "rw": "read", "bs": "4m", "iodepth": 256, "scenario": "fio-xfs-read-4m-qd256"}
    with pytest.raises(bc.CampaignError, match="no cell"):
        bc.cell_of(d, "fio-ext4-read-4m-qd256")


def test_fio_argv():
    d = doc()
    argv = bc.fio_argv(d, bc.cell_of(d, "fio-raw-read-4m-qd256"), "/dev/loop9")
    assert argv[0] == "fio"
    for want in ("--filename=/dev/loop9", "--rw=read", "--bs=4m", "--iodepth=256", "--direct=1",
                 "--time_based", "--runtime=2", "--ramp_time=1", "--ioengine=libaio", "--size=256M",
                 "--output-format=json+", "--output=fio.json", "--log_avg_msec=1000"):
        assert want in argv
    assert bc.bs_bytes("4k") == 4096 and bc.bs_bytes("128K") == 131072 and bc.bs_bytes("4m") == 4 << 20


@pytest.mark.parametrize("over, msg", [
    ({"schedulers": ["cfq"]}, "schedulers"),
    ({"schedulers": ["none", "none"]}, "schedulers"),
    ({"device": {"size_mib": 8}}, "size_mib"),
    ({"repeats": 1}, "min_repeats"),
    ({"campaign": "a/b"}, "campaign"),
    ({"trace": {"cells": [{"target": "ext4", "rw": "write", "bs": "4k", "iodepth": 16}]}}, "not a cell"),
    ({"trace": {"cells": [], "repeats": [9]}}, "trace.repeats"),
])
def test_validation_names_the_key(over, msg):
    with pytest.raises(bc.CampaignError, match=msg):
        doc(**over)


def test_bad_fio_sections():
    d = copy.deepcopy(DOC)
    d["fio"]["bs"] = ["4kb"]
    with pytest.raises(bc.CampaignError, match="fio.bs"):
        bc.validate(d)
    d = copy.deepcopy(DOC)
    d["fio"]["file_mib"] = 1024
    with pytest.raises(bc.CampaignError, match="file_mib"):
        bc.validate(d)


@pytest.mark.parametrize("name", ["block-smoke.yaml", "block-2026.yaml", "rados-block-smoke.yaml",
                                  "rados-block-2026.yaml"])
def test_shipped_campaign_files_validate(name):
    p = ROOT / "capture" / "campaigns" / name
    d = bc.load(p)
    runs = bc.plan(d)
    assert len(runs) == len(bc.cells(d)) * len(d["schedulers"]) * d["repeats"]
    assert any(bc.traced(d, r) for r in runs)
    if name == "block-2026.yaml":
        assert d["repeats"] >= 6 and set(d["schedulers"]) == {"none", "mq-deadline", "kyber", "bfq"}
        assert set(d["fio"]["targets"]) == {"raw", "xfs", "ext4", "btrfs"}
    if name == "rados-block-2026.yaml":  # the Bobtail permutations, ≥ 6 repeats, the DB apart
        assert d["repeats"] >= 6 and set(d["schedulers"]) == {"none", "mq-deadline", "kyber", "bfq"}
        assert {c["scenario"] for c in bc.cells(d)} == {f"rados-{b}-qd{q}" for b in ("4k", "128k", "4m")
                                                         for q in (16, 256)}
        assert d["device"]["db_mib"] >= 64 and len(runs) == 6 * 4 * 6


RADOS = {
    "campaign": "r", "seed": 5, "min_repeats": 2, "repeats": 2, "schedulers": ["none", "bfq"],
    "device": {"size_mib": 1024, "db_mib": 256}, "cluster": {"osds": 2},
    "rados": {"bs": ["4k", "4m"], "iodepth": [16, 256], "write_s": 3, "seq_s": 3},
    "trace": {"cells": [{"bs": "4k", "iodepth": 16}], "repeats": [2]},
}


def rdoc(**over):
    d = copy.deepcopy(RADOS)
    d.update(over)
    return bc.validate(d)


def test_rados_campaign_plan_defaults_and_traces():
    d = rdoc()
    assert d["cluster"] == {"osds": 2, "pg_num": 64, "pool_size": 1, "osd_memory_target_mib": 1024,
                            "workdir": "/var/tmp/cephqos-block-cluster"}
    runs = bc.plan(d)
    assert len(runs) == 4 * 2 * 2
    assert {r.scenario for r in runs} == {"rados-4k-qd16", "rados-4k-qd256", "rados-4m-qd16", "rados-4m-qd256"}
    assert bc.cell_of(d, "rados-4m-qd256") == {"bs": "4m", "iodepth": 256, "scenario": "rados-4m-qd256"}
    tr = [(r.scenario, r.arm, r.repeat) for r in runs if bc.traced(d, r)]
    assert sorted(tr) == [("rados-4k-qd16", "bfq", 2), ("rados-4k-qd16", "none", 2)]


@pytest.mark.parametrize("over, msg", [
    ({"fio": DOC["fio"]}, "exactly one of"),
    ({"device": {"size_mib": 1024}}, "db_mib"),
    ({"cluster": {"osds": 0}}, "cluster.osds"),
    ({"rados": {"bs": ["4k"], "iodepth": [16], "write_s": 0, "seq_s": 3}}, "rados.write_s"),
    ({"trace": {"cells": [{"bs": "128k", "iodepth": 16}]}}, "not a cell"),
    ({"trace": {"cells": [{"target": "raw", "rw": "write", "bs": "4k", "iodepth": 16}]}}, "need exactly bs, iodepth"),
])
def test_rados_validation_names_the_key(over, msg):
    with pytest.raises(bc.CampaignError, match=msg):
        rdoc(**over)


def test_rados_argv():
    from capture.block.rados import rados_argv
    w = rados_argv("/c/ceph.conf", "write", 6, 131072, 256)
    assert w == ["rados", "--conf", "/c/ceph.conf", "-p", "bench", "bench", "6", "write", "-t", "256",
                 "-b", "131072", "--no-cleanup"]
    assert rados_argv("/c/ceph.conf", "seq", 6.5, 4096, 16)[5:] == ["bench", "6.5", "seq", "-t", "16"]


class _FakeRunner:
    """Scripted outcomes per attempt: "ok", "fail" or a float outside-CPU share."""

    def __init__(self, script):
        self.script, self.calls, self.kept, self.dropped = dict(script), [], [], []

    def one(self, run):
        self.calls.append(run.relpath)
        what = self.script[run.relpath].pop(0)
        if what == "fail":
            raise RuntimeError("boom")
        frac = 0.01 if what == "ok" else what
        return {"cpu": {"outside_cpu_frac": frac, "outside_cpu_s": frac * 4, "wall_s": 4.0}}

    def finish(self, run, info):
        self.kept.append((run.relpath, info["attempt"], [e["status"] for e in info["earlier_attempts"]]))
        return Path("/x") / run.relpath

    def discard(self, run):
        self.dropped.append(run.relpath)


def test_do_runs_redoes_failed_and_disturbed_runs():
    from capture.sitting import do_runs
    runs = bc.plan(rdoc())[:3]
    a, b, c = (r.relpath for r in runs)
    fr = _FakeRunner({a: ["fail", 0.5, "ok"], b: ["ok"], c: ["fail", "fail", "fail"]})
    sitting, lines, waits = {"runs": []}, [], []
    do_runs(runs, fr, threshold=0.15, deadline=None, log=lines.append, errors=(RuntimeError,),
            sitting=sitting, summary=lambda info: ({"wall_s": info["cpu"]["wall_s"]}, "fine"),
            after_failure=lambda: waits.append(1))
    assert fr.kept == [(a, 3, ["failed", "disturbed"]), (b, 1, [])]
    assert fr.dropped == [a, a, c, c, c]
    assert len(waits) == 4  # after each failed attempt, not after a disturbed one
    assert [r["status"] for r in sitting["runs"]] == ["failed", "disturbed", "done", "done",
                                                      "failed", "failed", "failed"]
    assert sitting["runs"][2] == {"run": a, "status": "done", "wall_s": 4.0}
    assert any("disturbed: 2.0 CPU s" in line for line in lines)


def test_do_runs_stops_at_the_deadline():
    from capture.sitting import do_runs
    runs = bc.plan(rdoc())[:2]
    fr = _FakeRunner({r.relpath: ["ok"] for r in runs})
    lines: list[str] = []
    do_runs(runs, fr, threshold=0.15, deadline=1.0, log=lines.append, errors=(RuntimeError,),
            sitting={"runs": []}, summary=lambda info: ({}, ""))
    assert fr.calls == [] and "time budget reached" in lines[0]

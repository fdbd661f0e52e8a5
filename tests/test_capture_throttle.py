"""The throttled-device regime of ``capture.ceph`` without root or Ceph: blkio cgroup files (v1 and v2),
the thread check against this process's real /proc, the admin-socket protocol against a fake socket,
the op-queue count on a real ``dump_ops_in_flight``, the v2 campaign's rules, the pilot plan and the
pilot gate in ``run``."""

from __future__ import annotations

import csv
import json
import os
import socket
import struct
import threading
from pathlib import Path

import pytest
import yaml

from capture.ceph import __main__ as cli
from capture.ceph import campaign as cp
from capture.ceph import opqueue
from capture.ceph import runner as rn
from capture.ceph import throttle as th
from capture.ceph.config import arm_settings
from conftest import ROOT
from test_capture import FakeRunner, small_doc

V2 = ROOT / "capture" / "campaigns" / "qos-v2.yaml"
FIX = ROOT / "tests" / "fixtures" / "ceph"


# ----------------------------------------------------------------------------- cgroup files
def test_limit_files_v1_and_v2():
    assert th.limit_files("v1", "254:0", 300, 200) == {
        "blkio.throttle.read_iops_device": "254:0 300", "blkio.throttle.write_iops_device": "254:0 200"}
    assert th.limit_files("v2", "8:0", 300, 200) == {"io.max": "8:0 riops=300 wiops=200"}
    with pytest.raises(th.ThrottleError):
        th.limit_files("v1", "254:0", 0, 300)
    with pytest.raises(th.ThrottleError):
        th.limit_files("v3", "254:0", 1, 1)


def test_read_limits_as_the_kernel_prints_them():
    # v1 lists one line per device with a rule; v2 lists every key, "max" where unset
    v1 = {"blkio.throttle.read_iops_device": "8:0 50\n254:0 300\n",
          "blkio.throttle.write_iops_device": "254:0 250\n"}
    assert th.read_limits("v1", v1, "254:0") == {"read_iops": 300, "write_iops": 250}
    assert th.read_limits("v1", v1, "8:16") == {"read_iops": None, "write_iops": None}
    v2 = {"io.max": "254:0 rbps=max wbps=max riops=300 wiops=max\n"}
    assert th.read_limits("v2", v2, "254:0") == {"read_iops": 300, "write_iops": None}


def test_thread_cgroup_from_proc_cgroup_text():
    v1 = "12:pids:/user.slice\n7:blkio:/cephqos-osd2\n3:cpu,cpuacct:/\n0::/\n"
    assert th.thread_cgroup(v1, "v1") == "/cephqos-osd2"
    assert th.thread_cgroup(v1, "v2") == "/"
    assert th.thread_cgroup("0::/cephqos-osd1\n", "v2") == "/cephqos-osd1"
    assert th.thread_cgroup("5:memory:/x\n", "v1") is None


def test_whole_disk_resolves_a_partition_to_its_disk(tmp_path):
    # sysfs: /sys/dev/block/8:1 → ../../devices/.../sda/sda1, whose parent holds the disk's dev
    disk = tmp_path / "devices" / "sda"
    (disk / "sda1").mkdir(parents=True)
    (disk / "dev").write_text("8:0\n")
    (disk / "sda1" / "dev").write_text("8:1\n")
    (disk / "sda1" / "partition").write_text("1\n")
    blk = tmp_path / "dev" / "block"
    blk.mkdir(parents=True)
    (blk / "8:1").symlink_to(disk / "sda1")
    (blk / "8:0").symlink_to(disk)
    assert th.whole_disk("8:1", blk) == "8:0"
    assert th.whole_disk("8:0", blk) == "8:0"
    with pytest.raises(th.ThrottleError, match="no such block device"):
        th.whole_disk("9:9", blk)


def test_detect_v1_v2_or_a_clear_error(tmp_path):
    v1 = tmp_path / "a"
    (v1 / "blkio").mkdir(parents=True)
    (v1 / "blkio" / "blkio.throttle.read_iops_device").write_text("")
    assert th.detect(v1, mounts="") == ("v1", v1 / "blkio")
    uni = tmp_path / "unified"
    uni.mkdir()
    (uni / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    mounts = f"cgroup2 {uni} cgroup2 rw,nosuid 0 0\n"
    assert th.detect(tmp_path / "none", mounts=mounts) == ("v2", uni)
    (uni / "cgroup.controllers").write_text("hugetlb\n")  # this VM's unified mount: no io controller
    with pytest.raises(th.ThrottleError, match="no blkio controller"):
        th.detect(tmp_path / "none", mounts=mounts)


def test_device_of_refuses_a_filesystem_without_a_block_device():
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.major(os.stat(shm).st_dev) != 0:
        pytest.skip("/dev/shm is not a tmpfs here")
    with pytest.raises(th.ThrottleError, match="without a block device"):
        th.device_of(shm)


def test_throttle_writes_limits_checks_them_and_finds_threads_outside(tmp_path):
    t = th.Throttle(300, 280, "254:0", "v1", tmp_path)
    t.setup(1)
    g = tmp_path / "cephqos-osd1"
    assert (g / "blkio.throttle.read_iops_device").read_text() == "254:0 300\n"
    assert (g / "blkio.throttle.write_iops_device").read_text() == "254:0 280\n"
    assert t.rel(1) == "/cephqos-osd1"
    # this test process is in no cephqos cgroup: every one of its threads is outside
    me = os.getpid()
    assert t.outside(1, me) == th.threads(me) != []
    with pytest.raises(th.ThrottleError, match="outside"):
        t.check_all({"osd.1": me, "mgr.x": 1})
    # a kernel that took another value is caught at set-up
    (tmp_path / "b").mkdir()
    bad = th.Throttle(300, 280, "254:0", "v1", tmp_path / "b")
    real_write = Path.write_text

    def lossy(self, text, *a, **k):
        return real_write(self, text.replace(" 300", " 100"), *a, **k)
    try:
        Path.write_text = lossy
        with pytest.raises(th.ThrottleError, match="reports limits"):
            bad.setup(0)
    finally:
        Path.write_text = real_write


# ----------------------------------------------------------------------------- op queue
def test_queue_counts_on_a_real_pacific_dump():
    """Trimmed from osd.3's ``dump_ops_in_flight`` during the qos-v2 pilot (Ceph 16.2.15; the whole dump
    had 126 ops queued for pg and 2 started): 5 queued and 2 started kept."""
    doc = json.loads((FIX / "dump_ops_in_flight.pacific-16.2.15.json").read_text())
    flags = [op["type_data"]["flag_point"] for op in doc["ops"]]
    assert opqueue.queue_counts(doc) == {"queued": flags.count("queued for pg"), "in_flight": len(flags)}
    assert opqueue.queue_counts(doc) == {"queued": 5, "in_flight": 7}
    assert opqueue.queue_counts({}) == {"queued": 0, "in_flight": 0}
    assert opqueue.queue_counts(None) == {"queued": 0, "in_flight": 0}


def _fake_asok(path: Path, reply: bytes, seen: list[bytes]) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        buf = b""
        while not buf.endswith(b"\0"):
            buf += conn.recv(64)
        seen.append(buf)
        conn.sendall(struct.pack(">I", len(reply)) + reply[:7])
        conn.sendall(reply[7:])  # the reply in two pieces: the reader must loop
        conn.close()
        srv.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def test_asok_command_speaks_the_admin_socket_protocol(tmp_path):
    doc = json.loads((FIX / "dump_ops_in_flight.pacific-16.2.15.json").read_text())
    seen: list[bytes] = []
    t = _fake_asok(tmp_path / "osd.0.asok", json.dumps(doc).encode(), seen)
    assert opqueue.asok_command(tmp_path / "osd.0.asok", "dump_ops_in_flight") == doc
    t.join(5)
    assert json.loads(seen[0][:-1]) == {"prefix": "dump_ops_in_flight", "format": "json"}


def test_probe_reports_missing_samples_as_none_not_zero(tmp_path):
    probe = opqueue.OsdProbe(tmp_path, lambda: {"osd.0": os.getpid(), "mon.a": 1})
    first = probe()
    assert set(first) == {"osd.0"}
    assert first["osd.0"]["queued"] is None and first["osd.0"]["cpu"] is None  # no socket; no previous tick
    assert probe()["osd.0"]["cpu"] is not None  # the second tick has a CPU delta


# ----------------------------------------------------------------------------- the v2 campaign
def _published_allocations() -> dict[str, dict[str, dict[str, str]]]:
    rows = csv.DictReader((ROOT / "data" / "published" / "qos-part1.csv").open(encoding="utf-8"))
    out: dict[str, dict[str, dict[str, str]]] = {}
    for r in rows:
        if r["kind"] == "setting" and r["figure"].endswith("allocations") and r["metric"] in (
                "reservation", "weight", "limit"):
            out.setdefault(r["profile"], {}).setdefault(r["service"], {})[r["metric"]] = r["printed"]
    return out


def test_v2_seed_arms_carry_part1s_published_allocations():
    doc = cp.load(V2)
    pub = _published_allocations()
    assert set(pub) == {"high_client_ops", "balanced", "high_recovery_ops"}
    short = {"reservation": "res", "weight": "wgt", "limit": "lim"}
    for prof, classes in pub.items():
        arm = doc["arms"][f"seed_{prof}"]
        assert arm["osd_mclock_profile"] == "custom"
        for cls, vals in classes.items():
            for metric, printed in vals.items():
                assert str(arm["allocations"][cls][short[metric]]) == printed, (prof, cls, metric)
    # rendered for one shard of the 300-IOPS capacity: part 1's high_client_ops client 50 % → 150
    s = arm_settings(doc["arms"]["seed_high_client_ops"], 300, 1)
    assert s["osd_mclock_scheduler_client_res"] == 150 and s["osd_mclock_scheduler_background_best_effort_lim"] == 90


def test_v2_campaign_is_the_notes_regime():
    doc = cp.load(V2)
    assert doc["throttle"] == {"read_iops": 300, "write_iops": 300}
    assert doc["cluster"]["mclock_capacity_iops"] == 300
    oc = doc["osd_config"]
    assert oc["osd_op_num_shards"] == 1 and oc["osd_op_num_threads_per_shard"] == 2
    assert oc["bluestore_throttle_bytes"] == oc["bluestore_throttle_deferred_bytes"] == 256 * 1024
    assert doc["client"]["rw"] == "randread" and doc["client"]["iodepth"] == 128
    assert doc["client_config"] == {"rbd_cache": "false"}


def test_throttle_rules_are_validated():
    base = small_doc(throttle={"read_iops": 300, "write_iops": 300})
    with pytest.raises(cp.CampaignError, match="mclock_capacity_iops .* must equal"):
        cp.validate(base)
    base["cluster"]["mclock_capacity_iops"] = 300
    cp.validate(base)
    with pytest.raises(cp.CampaignError, match="throttle.write_iops"):
        cp.validate({**base, "throttle": {"read_iops": 300, "write_iops": 0}})
    with pytest.raises(cp.CampaignError, match="pilot_arms"):
        bad = small_doc()
        bad["scenarios"]["scrub"]["pilot_arms"] = ["wpq", "wpq"]
        cp.validate(bad)


def test_pilot_doc_takes_two_arms_and_their_baselines():
    doc = cp.load(V2)
    p = cp.pilot_doc(doc)
    assert p["campaign"] == "qos-v2-pilot" and p["repeats"] == 1
    assert p["scenarios"]["scrub"]["arms"] == ["wpq", "high_recovery_ops"]
    assert sorted(p["scenarios"]["baseline"]["arms"]) == ["high_client_ops", "high_recovery_ops", "wpq"]
    # a later round: only the redesigned scenario and the baselines of its arms
    p2 = cp.pilot_doc(doc, 2, ["scrub"])
    assert p2["campaign"] == "qos-v2-pilot-r2" and set(p2["scenarios"]) == {"baseline", "scrub"}
    assert sorted(p2["scenarios"]["baseline"]["arms"]) == ["high_recovery_ops", "wpq"]
    with pytest.raises(cp.CampaignError, match="no scenario nope"):
        cp.pilot_doc(doc, 2, ["nope"])
    # an arm that is WPQ with another scrub priority takes the WPQ baseline; every queue/profile once
    doc2 = json.loads(json.dumps(doc))
    doc2["scenarios"]["scrub"]["pilot_arms"] = ["wpq_scrubprio120", "high_client_ops"]
    p3 = cp.pilot_doc(cp.validate(doc2), 1, ["scrub"])
    assert sorted(p3["scenarios"]["baseline"]["arms"]) == ["high_client_ops", "wpq"]
    runs = cp.plan(p)
    assert len(runs) == 3 + 2 * 4 and {r.repeat for r in runs} == {1}
    w = cp.warmup_run(doc)
    assert (w.scenario, w.arm, w.repeat) == ("baseline", "wpq", 0)
    # without pilot_arms: the first and last arm listed
    d = cp.validate(small_doc())
    assert cp.pilot_doc(d)["scenarios"]["scrub"]["arms"] == ["wpq", "custom"]


def test_runs_per_scenario_counts_the_plan_and_raises_repeats():
    doc = cp.load(V2)
    assert cp.runs_per_scenario(doc) == {"baseline": 8 * 3, "scrub": 11 * 3, "snaptrim": 7 * 3,
                                         "snaptrim_recovery": 7 * 3, "recovery_scrub": 5 * 3}
    more = cp.runs_per_scenario(doc, {"scrub": 5, "snaptrim": 2, "nope": 9})
    assert more["scrub"] == 11 * 5 and more["snaptrim"] == 7 * 3  # raised, never lowered; unknown ignored
    assert sum(cp.runs_per_scenario(doc).values()) == len(cp.plan(doc))


# ----------------------------------------------------------------------------- the gate in `run`
@pytest.fixture
def throttled(tmp_path, monkeypatch):
    doc = small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}},
                    throttle={"read_iops": 300, "write_iops": 300})
    doc["cluster"]["mclock_capacity_iops"] = 300
    camp = tmp_path / "c.yaml"
    camp.write_text(yaml.safe_dump(doc))
    monkeypatch.setattr(cli, "preflight", lambda w, ip="127.0.0.1": None)
    monkeypatch.setattr(cli, "ensure_packages", lambda log, release="pacific": None)
    monkeypatch.setattr(rn, "Runner", FakeRunner)
    FakeRunner.instances, FakeRunner.script = [], {}
    return camp, tmp_path / "out", tmp_path / "out" / "t"


def test_run_refuses_a_throttled_campaign_without_its_pilots_go(throttled, capsys):
    camp, out, root = throttled
    assert cli.main(["run", str(camp), "--out", str(out)]) == 2
    assert "no pilot verdict" in capsys.readouterr().err and FakeRunner.instances == []
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True},
                                                               "scrub": {"go": False}}}))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 2
    assert "no-go for scrub" in capsys.readouterr().err and FakeRunner.instances == []
    (root / "pilot.json").write_text("{not json")
    assert cli.main(["run", str(camp), "--out", str(out)]) == 2
    assert "not a pilot verdict" in capsys.readouterr().err


def test_run_forced_past_a_no_go_is_marked_forced(throttled):
    camp, out, root = throttled
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": False}}}))
    assert cli.main(["run", str(camp), "--out", str(out), "--force"]) == 0
    fr = FakeRunner.instances[0]
    assert fr.forced is True and len(fr.done) == 5  # the five arms of the baseline
    sitting = json.loads(next(root.glob("sitting-*.json")).read_text())
    assert sitting["forced"] is True


def test_run_after_go_is_not_forced(throttled):
    camp, out, root = throttled
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True}}}))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 0
    assert FakeRunner.instances[0].forced is False


def test_a_throttled_campaign_passes_its_blocks_to_the_sitting(throttled, monkeypatch):
    """Throttled campaigns: the sitting is told the (repeat, scenario) block of each run."""
    camp, out, root = throttled
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True}}}))
    seen = {}
    monkeypatch.setattr(cli, "do_runs", lambda todo, runner, **kw: seen.update(kw, todo=list(todo)))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 0
    r = seen["todo"][0]
    assert seen["block"](r) == (r.repeat, r.scenario)


def test_do_runs_stops_between_blocks():
    import capture.sitting as st
    from types import SimpleNamespace as NS
    runs = [NS(relpath=f"{s}/{a}", order=i, repeat=1, scenario=s) for i, (s, a) in
            enumerate([("x", "a"), ("x", "b"), ("y", "a"), ("y", "b")])]

    class R:
        done: list[str] = []

        def one(self, run):
            return {"cpu": {"outside_cpu_frac": 0.0, "outside_cpu_s": 0.0}}

        def finish(self, run, info):
            self.done.append(run.relpath)
            return run.relpath

        def discard(self, run):
            pass
    r = R()
    st.do_runs(runs, r, threshold=0.15, deadline=1.0, log=lambda m: None, errors=(RuntimeError,),
               sitting={"runs": []}, summary=lambda i: ({}, ""), block=lambda run: (run.repeat, run.scenario))
    # past the deadline before the first run: the first block still runs (its bring-up and warm-up are
    # spent; a sitting of no runs wasted 4 min on 2026-11-25), the next does not
    assert r.done == ["x/a", "x/b"]
    r.done = []
    calls = iter([0.0, 5.0, 5.0, 5.0])  # deadline 1 s: the first run starts in time, the rest after it
    st.time.time, real = (lambda: next(calls, 5.0)), st.time.time
    try:
        st.do_runs(runs, r, threshold=0.15, deadline=1.0, log=lambda m: None, errors=(RuntimeError,),
                   sitting={"runs": []}, summary=lambda i: ({}, ""), block=lambda run: (run.repeat, run.scenario))
    finally:
        st.time.time = real
    assert r.done == ["x/a", "x/b"]  # block x finished, block y not started


def test_sitting_record_is_written_whole_with_its_end_time(tmp_path):
    """capture.sitting.write_record: one sitting-*.json with ``ended`` set, written through a temp file that
    does not stay behind; a write that fails leaves no record and no temp file."""
    import json
    import pytest
    from capture.sitting import write_record
    root = tmp_path / "campaign"  # made if missing (a sitting that failed before any run)
    p = write_record(root, {"started": "2026-11-27T06:04:16+0000", "runs": [{"run": "a", "status": "done"}]})
    assert p.parent == root and p.name.startswith("sitting-") and p.suffix == ".json"
    rec = json.loads(p.read_text())
    assert rec["runs"] == [{"run": "a", "status": "done"}] and rec["ended"][:2] == "20"
    assert sorted(x.name for x in root.iterdir()) == [p.name]
    p.unlink()
    with pytest.raises(TypeError):
        write_record(root, {"bad": object()})  # not JSON: nothing written
    assert list(root.iterdir()) == []


# ----------------------------------------------------------------------------- issue 51: warm-up per block
def test_warmup_block_discards_a_run_before_every_block(throttled):
    """``warmup: block``: a discarded run of the block's first (scenario, arm) before each (repeat,
    scenario) block — the first run of every block was the odd one out in qos-v2 — and the sitting record
    lists them."""
    camp, out, root = throttled
    doc = yaml.safe_load(camp.read_text())
    doc.update(repeats=2, warmup="block")
    camp.write_text(yaml.safe_dump(doc))
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True}}}))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 0
    fr = FakeRunner.instances[0]
    plan = cp.plan(cp.load(camp))
    firsts = [plan[0], next(r for r in plan if r.repeat == 2)]
    # each block: its warm-up (repeat 0, discarded), then its runs
    warm = [a for a in fr.attempts if "/rep-00" in a]
    assert warm == [f"{r.scenario}/{r.arm}/rep-00" for r in firsts]
    assert fr.attempts.index(warm[1]) == len(plan) // 2 + 1  # after block 1's runs, before block 2's
    assert set(fr.discarded) >= set(warm) and len(fr.done) == len(plan)
    sitting = json.loads(next(root.glob("sitting-*.json")).read_text())
    assert [b["block"] for b in sitting["block_warmups"]] == ["baseline/rep-01", "baseline/rep-02"]
    assert "warmup_s" not in sitting  # no extra warm-up per sitting


def test_warmup_mode_reads_the_campaign():
    assert cp.warmup_mode({"warmup": "block"}) == "block"
    assert cp.warmup_mode({"warmup": True}) == "sitting" and cp.warmup_mode({}) == "none"
    with pytest.raises(cp.CampaignError, match="warmup must be"):
        cp.warmup_mode({"campaign": "x", "warmup": "often"})
    # the harness's keys may change between sittings: the runs stay the same campaign
    doc = cp.validate(small_doc())
    assert cp.extension_problem(doc, {**doc, "warmup": "block", "repeats_note": "why"}) is None


def test_run_refuses_fewer_repeats_than_the_pilot_asks_unless_the_campaign_says_why(throttled, capsys):
    camp, out, root = throttled
    root.mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True, "repeats_recommended": 4}}}))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "fewer repeats than its pilot asks for (baseline 1 < 4)" in err and FakeRunner.instances == []
    doc = yaml.safe_load(camp.read_text())
    doc["repeats_note"] = "a smoke run of the harness"
    camp.write_text(yaml.safe_dump(doc))
    assert cli.main(["run", str(camp), "--out", str(out)]) == 0
    assert cp.repeats_short(cp.load(camp), {"scenarios": {"baseline": {"repeats_recommended": 1}}}) == {}


def test_the_pilot_takes_its_spread_from_its_own_regime(tmp_path):
    from analysis.stats import pilot as pl
    v2, q26 = cp.load(V2), cp.load(ROOT / "capture" / "campaigns" / "qos-2026.yaml")
    raw = ROOT / "data" / "raw" / "ceph-qos"
    assert pl.regime_mismatch(raw / "qos-v2", v2) is None
    assert "another regime" in pl.regime_mismatch(raw / "qos-2026", v2)
    assert "another regime" in pl.regime_mismatch(raw / "qos-v2", q26)
    assert "no campaign.yaml" in pl.regime_mismatch(tmp_path, v2)

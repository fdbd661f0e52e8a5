"""``capture.ceph`` without Ceph: config rendering, arm planning, resume, refusal and teardown.

Nothing here starts a process or touches a cluster: subprocess, ``os.kill``, ``os.geteuid`` and the
/proc look-ups are replaced by fakes that record what the harness asked for.
"""

from __future__ import annotations

import configparser
import gzip
import json
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from capture.ceph import __main__ as cli
from capture.ceph import campaign as cp
from capture.ceph import cluster as clmod
from capture.ceph import config as cfg
from capture.ceph import runner as rn
from conftest import ROOT

CAMPAIGNS = ROOT / "capture" / "campaigns"
QOS = CAMPAIGNS / "qos-2026.yaml"
SMOKE = CAMPAIGNS / "smoke.yaml"
ARMS5 = ["wpq", "high_client_ops", "balanced", "high_recovery_ops", "custom"]

#: Ceph 16.2.15's ssd defaults of the hdd/ssd pairs the harness pins (src/common/options.cc, pacific)
PACIFIC_SSD = {"osd_op_num_shards": 8, "osd_op_num_threads_per_shard": 2, "osd_snap_trim_sleep": 0,
               "osd_recovery_sleep": 0, "osd_delete_sleep": 1, "osd_recovery_max_active": 10,
               "osd_mclock_cost_per_io_usec": 50, "osd_mclock_cost_per_byte_usec": 0.011}


def small_doc(**over) -> dict:
    doc = {"campaign": "t", "seed": 7,
           "cluster": {"osds": 4, "osd_size_gib": 8, "osd_memory_target_mib": 1024,
                       "mclock_capacity_iops": 2500},
           "client": {"image_mib": 64, "rw": "randwrite", "bs": "4k", "iodepth": 16, "runtime_s": 5},
           "pools": {"snap_objects": 10, "snap_object_kib": 4, "recovery_objects": 10,
                     "recovery_object_kib": 4},
           "arms": {a: ({"osd_op_queue": "wpq"} if a == "wpq" else
                        {"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": a}) for a in ARMS5},
           "scenarios": {"baseline": {}, "scrub": {"background": ["deep_scrub"],
                                                   "repeats_for": {"wpq": 8, "high_client_ops": 8},
                                                   "osd_config": {"osd_max_scrubs": 5}}}}
    doc.update(over)
    return doc


# ----------------------------------------------------------------------------- config rendering
def parse_conf(text: str) -> configparser.ConfigParser:
    cp_ = configparser.ConfigParser(interpolation=None, strict=True)  # strict: no duplicate keys
    cp_.read_string(text)
    return cp_


def test_ceph_conf_has_the_facts_of_the_notes():
    text = cfg.render_ceph_conf("1234-fsid", "/var/tmp/cq", 8 << 30, 1 << 30)
    c = parse_conf(text)
    g = c["global"]
    assert g["fsid"] == "1234-fsid"
    assert g["mon_host"] == "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]"
    assert g["public_network"] == "127.0.0.0/8"
    assert g["ms_bind_ipv6"] == "false"
    for k in ("auth_cluster_required", "auth_service_required", "auth_client_required"):
        assert g[k] == "none"
    for k in ("run_dir", "admin_socket", "log_file", "mon_cluster_log_file", "pid_file", "crash_dir"):
        assert g[k].startswith("/var/tmp/cq/"), k
    assert g["osd_pool_default_pg_autoscale_mode"] == "off"
    assert g["osd_crush_chooseleaf_type"] == "0"
    assert g["mon_allow_pool_delete"] == "true"
    assert g["mon_max_pg_per_osd"] == "1000"
    assert g["mon_data_avail_warn"] == "5"
    assert g["mon_warn_on_insecure_global_id_reclaim_allowed"] == "false"
    # each client process its own admin socket (a shared name fails with EEXIST)
    assert "$pid" in c["client"]["admin_socket"]
    assert c["client"]["admin_socket"] != g["admin_socket"]
    o = c["osd"]
    assert o["osd_objectstore"] == "bluestore"
    assert o["bluestore_block_create"] == "true"
    assert int(o["bluestore_block_size"]) == 8 << 30
    assert o["bluestore_block_db_create"] == o["bluestore_block_wal_create"] == "false"
    assert o["bluestore_fsck_on_mkfs"] == o["bluestore_fsck_on_mount"] == "false"
    assert int(o["osd_memory_target"]) == 1 << 30


def test_no_scheduler_or_arm_setting_in_ceph_conf():
    """The file wins over ``ceph config set``: nothing an arm or the base changes may be in it."""
    text = cfg.render_ceph_conf("f", "/d", 1 << 30, 1 << 30)
    keys = {k for s in parse_conf(text).sections() for k in parse_conf(text)[s]}
    doc = cp.load(QOS)
    arm_keys = set()
    for arm in doc["arms"].values():
        arm_keys |= set(cfg.arm_settings(arm, 2500, cfg.OSD_SHARDS))
    for sc in doc["scenarios"].values():
        arm_keys |= set(sc.get("osd_config") or {})
    managed = arm_keys | set(cfg.base_settings(2500))
    assert "osd_mclock_scheduler_client_res" in managed and "osd_op_queue" in managed
    assert not keys & managed
    assert "mclock" not in text and "osd_op_queue" not in text and "sleep" not in text


class FakeProc:
    _next = 1000

    def __init__(self, argv, **kw):
        FakeProc._next += 1
        self.pid = FakeProc._next
        self.args = argv
        self.returncode = None
        self.terminated = self.killed = False

    def poll(self):
        return self.returncode

    def terminate(self):
        self.terminated = True
        self.returncode = -15

    def kill(self):
        self.killed = True
        self.returncode = -9

    def wait(self, timeout=None):
        return self.returncode


def fake_subprocess(monkeypatch, osds: int):
    """subprocess.run/Popen of cluster.py recorded in one list, answering like a healthy cluster."""
    calls: list[tuple[str, list[str]]] = []
    ids = iter(range(100))

    def run(argv, **kw):
        calls.append(("run", list(argv)))
        out = ""
        if argv[0] == "ceph":
            args = [a for a in argv[3:] if a not in ("--format", "json")]
            if args[:2] == ["osd", "new"]:
                out = f"{next(ids)}\n"
            elif args[:2] == ["osd", "stat"]:
                out = json.dumps({"num_up_osds": osds})
            elif args[:2] == ["mgr", "stat"]:
                out = json.dumps({"available": True})
            elif args[:2] == ["mon", "stat"]:
                out = "e1: 1 mons"
        return subprocess.CompletedProcess(argv, 0, stdout=out, stderr="")

    def popen(argv, **kw):
        calls.append(("popen", list(argv)))
        return FakeProc(argv)

    monkeypatch.setattr(clmod.subprocess, "run", run)
    monkeypatch.setattr(clmod.subprocess, "Popen", popen)
    monkeypatch.setattr(clmod.time, "sleep", lambda s: None)
    return calls


def test_bring_up_puts_queue_settings_in_the_mon_db_before_any_osd(tmp_path, monkeypatch):
    calls = fake_subprocess(monkeypatch, osds=2)
    cl = clmod.Cluster(tmp_path / "cl", 2, 1 << 30, 1 << 30, log=lambda m: None)
    base = cfg.base_settings(2500)
    cl.up({**base, **cfg.arm_settings({"osd_op_queue": "wpq"}, 2500, cfg.OSD_SHARDS)})
    sets = [i for i, (_, a) in enumerate(calls) if a[0] == "ceph" and a[3:5] == ["config", "set"]]
    setk = {calls[i][1][6]: calls[i][1][7] for i in sets}
    assert setk["osd_op_queue"] == "wpq"
    assert setk["osd_mclock_skip_benchmark"] == "true"
    assert setk["osd_mclock_max_capacity_iops_hdd"] == setk["osd_mclock_max_capacity_iops_ssd"] == "2500"
    assert setk["bluestore_debug_enforce_settings"] == "ssd"
    assert all(calls[i][1][5] == "osd" for i in sets)  # `ceph config set osd KEY VALUE`
    mon_start = next(i for i, (k, a) in enumerate(calls) if k == "popen" and a[0] == "ceph-mon")
    first_osd = min(i for i, (_, a) in enumerate(calls) if a[0] == "ceph-osd")  # mkfs or start
    assert mon_start < min(sets) and max(sets) < first_osd
    osd_starts = [a for k, a in calls if k == "popen" and a[0] == "ceph-osd"]
    assert [a[3] for a in osd_starts] == ["0", "1"]
    conf = (tmp_path / "cl" / "ceph.conf").read_text()
    assert "osd_op_queue" not in conf and "mclock" not in conf
    # every daemon it started is recorded, with its PID, for teardown
    rec = json.loads((tmp_path / "cl" / clmod.PIDS_FILE).read_text())
    assert set(rec) == {"mon.a", "mgr.x", "osd.0", "osd.1"}
    assert rec == cl.pids()


def test_custom_profile_in_pacific_units():
    """Pacific 16.2: res/lim are whole IOPS per op shard (capacity / shards), half rounded up as
    Pacific's std::round does; 2500 IOPS over 8 shards is 312.5 per shard."""
    assert cfg.OSD_SHARDS == 8
    got = cfg.custom_allocations(cfg.SEED_CUSTOM, 2500, 8)
    assert got == {
        "osd_mclock_scheduler_client_res": 1, "osd_mclock_scheduler_client_wgt": 1,
        "osd_mclock_scheduler_client_lim": 250,
        "osd_mclock_scheduler_background_recovery_res": 16,
        "osd_mclock_scheduler_background_recovery_wgt": 1,
        "osd_mclock_scheduler_background_recovery_lim": 313,
        "osd_mclock_scheduler_background_best_effort_res": 281,
        "osd_mclock_scheduler_background_best_effort_wgt": 2,
        "osd_mclock_scheduler_background_best_effort_lim": cfg.MCLOCK_LIM_MAX}
    assert cfg.MCLOCK_LIM_MAX == 999999  # Pacific's default *_lim ("no limit")
    four = cfg.custom_allocations(cfg.SEED_CUSTOM, 4000, 8)
    assert (four["osd_mclock_scheduler_client_lim"], four["osd_mclock_scheduler_background_recovery_res"],
            four["osd_mclock_scheduler_background_best_effort_res"]) == (400, 25, 450)
    assert all(isinstance(v, int) for v in got.values())  # Pacific's options are unsigned integers


def test_custom_allocations_refuse_reef_fractions_and_overbooking():
    frac = {**cfg.SEED_CUSTOM, "client": {"res": 0.5, "wgt": 1, "lim": "80%"}}
    with pytest.raises(ValueError, match="per shard"):
        cfg.custom_allocations(frac, 2500, 8)
    over = {**cfg.SEED_CUSTOM, "client": {"res": "50%", "wgt": 1, "lim": "80%"}}
    with pytest.raises(ValueError, match="reservations add up"):
        cfg.custom_allocations(over, 2500, 8)
    with pytest.raises(ValueError):
        cfg.custom_allocations({**cfg.SEED_CUSTOM, "client": {"res": "lots", "wgt": 1, "lim": 1}}, 2500, 8)


def test_arm_settings():
    assert cfg.arm_settings({"osd_op_queue": "wpq"}, 2500, 8) == {"osd_op_queue": "wpq"}
    hc = cfg.arm_settings({"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "high_client_ops"},
                          2500, 8)
    assert hc == {"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "high_client_ops"}
    cu = cfg.arm_settings({"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "custom"}, 2500, 8)
    assert cu["osd_mclock_profile"] == "custom" and cu["osd_mclock_scheduler_client_lim"] == 250
    ex = cfg.arm_settings({"osd_op_queue": "wpq", "extra": {"osd_requested_scrub_priority": 120}}, 1, 1)
    assert ex["osd_requested_scrub_priority"] == 120
    with pytest.raises(ValueError):
        cfg.arm_settings({"osd_op_queue": "wpq", "osd_mclock_profile": "balanced"}, 2500, 8)
    with pytest.raises(ValueError):
        cfg.arm_settings({"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "fast"}, 2500, 8)


def test_base_settings_pin_hdd_variants_to_ssd_values_and_record_them():
    """Files report rotational: both queues must read the ssd values through the hdd variants."""
    b = cfg.base_settings(2500)
    assert b["bluestore_debug_enforce_settings"] == "ssd"
    for opt, ssd in PACIFIC_SSD.items():
        assert b[f"{opt}_hdd"] == ssd, opt
    assert b["osd_op_num_shards"] == 8 and b["osd_op_num_threads_per_shard"] == 2
    assert b["osd_mclock_skip_benchmark"] == "true"
    assert b["osd_mclock_max_capacity_iops_hdd"] == b["osd_mclock_max_capacity_iops_ssd"] == 2500
    assert not any(k.startswith("osd_op_queue") or k == "osd_mclock_profile" for k in b)
    missing = [k for k in b if k not in cfg.RECORDED_KEYS]
    assert missing == []  # every pinned value is recorded from `ceph config show` for every run
    assert {"osd_max_backfills", "osd_recovery_max_active", "osd_recovery_sleep", "osd_snap_trim_sleep",
            "osd_op_queue", "osd_mclock_profile"} <= set(cfg.RECORDED_KEYS)


def test_check_applied():
    want = {"osd_op_queue": "mclock_scheduler", "osd_max_scrubs": 5, "osd_mclock_skip_benchmark": "true"}
    shown = {"osd_op_queue": "mclock_scheduler", "osd_max_scrubs": "5.000000",
             "osd_mclock_skip_benchmark": "True"}
    assert cfg.check_applied(want, shown) == []
    bad = cfg.check_applied({**want, "osd_op_queue": "wpq", "osd_scrub_sleep": 0}, shown)
    assert bad == ["osd_op_queue: wanted 'wpq', OSD runs 'mclock_scheduler'", "osd_scrub_sleep: not shown"]


# ----------------------------------------------------------------------------- runner: settings
class FakeCluster:
    """What Runner asks of a cluster, recorded; ``show`` is what `ceph config show` answers."""

    def __init__(self, tmp: Path, n: int = 2):
        self.n, self.dir, self.conf = n, tmp / "cl", tmp / "cl" / "ceph.conf"
        self.cmds: list[tuple[str, ...]] = []
        self.db: dict[str, str] = {}
        self.started: list[int] = []
        self.running = {f"osd.{i}": 10 + i for i in range(n)}
        self.override: dict[str, str] = {}

    def ceph(self, *args, fmt_json=False, timeout=0, check=True):
        self.cmds.append(args)
        if args[:3] == ("config", "set", "osd"):
            self.db[args[3]] = args[4]
        elif args[:3] == ("config", "rm", "osd"):
            self.db.pop(args[3], None)
        return ""

    def config_set(self, who, settings):
        for k, v in settings.items():
            self.ceph("config", "set", who, k, str(v))

    def restart_osds(self):
        return 21.5

    def osd_config(self, i, with_defaults=False):
        shown = {k: "0" for k in cfg.RECORDED_KEYS} if with_defaults else {}
        shown.update(self.db)
        shown.update(self.override)
        return shown

    def pids(self):
        return dict(self.running)

    def start_osd(self, i):
        self.started.append(i)


def make_runner(tmp_path, doc=None) -> tuple[rn.Runner, FakeCluster]:
    doc = cp.validate(doc or small_doc())
    r = rn.Runner(doc, QOS, tmp_path / "out", log=lambda m: None)
    fc = FakeCluster(tmp_path)
    r.cl = fc
    return r, fc


def test_apply_switches_arms_and_undoes_what_the_previous_run_set(tmp_path):
    r, fc = make_runner(tmp_path, small_doc(scenarios={
        "scrub": {"background": ["deep_scrub"], "osd_config": {"osd_max_scrubs": 5}},
        "baseline": {}}))
    want, restart = r.apply(cp.Run("t", "scrub", "custom", 1, 0))
    assert restart == 21.5
    assert fc.db["osd_op_queue"] == "mclock_scheduler" and fc.db["osd_mclock_profile"] == "custom"
    assert fc.db["osd_mclock_scheduler_client_lim"] == "250" and fc.db["osd_max_scrubs"] == "5"
    r.apply(cp.Run("t", "baseline", "wpq", 1, 1))
    assert fc.db == {"osd_op_queue": "wpq"}  # custom res/wgt/lim, profile and scrub key removed
    rm = {a[3] for a in fc.cmds if a[:2] == ("config", "rm")}
    assert "osd_mclock_profile" in rm and "osd_max_scrubs" in rm
    # a base key a scenario overrode goes back to the base value, not to Ceph's default
    r2, fc2 = make_runner(tmp_path / "b", small_doc(scenarios={
        "a": {"osd_config": {"osd_recovery_sleep_hdd": 0.1}}, "b": {}}))
    r2.apply(cp.Run("t", "a", "wpq", 1, 0))
    assert fc2.db["osd_recovery_sleep_hdd"] == "0.1"
    r2.apply(cp.Run("t", "b", "wpq", 1, 1))
    assert fc2.db["osd_recovery_sleep_hdd"] == "0"


def test_arm_extra_beats_scenario_config(tmp_path):
    doc = cp.load(QOS)
    r, fc = make_runner(tmp_path, doc)
    s = r.settings_for(cp.Run("qos-2026", "scrub", "wpq_scrubprio120", 1, 0))
    assert s["osd_requested_scrub_priority"] == 120 and s["osd_max_scrubs"] == 5
    assert r.settings_for(cp.Run("qos-2026", "scrub", "wpq", 1, 0))["osd_requested_scrub_priority"] == 5


def test_verify_records_effective_values_and_refuses_a_mismatch(tmp_path):
    r, fc = make_runner(tmp_path)
    fc.db = {"osd_op_queue": "wpq", "osd_snap_trim_sleep_hdd": "0.000000"}
    (tmp_path / "run").mkdir()
    v = r.verify({"osd_op_queue": "wpq"}, tmp_path / "run")
    assert v["effective"]["osd_op_queue"] == "wpq"
    assert v["effective"]["osd_snap_trim_sleep_hdd"] == "0.000000"
    assert set(v["effective"]) == set(cfg.RECORDED_KEYS) and v["differ_between_osds"] == []
    with gzip.open(tmp_path / "run" / "osd_config.json.gz", "rt") as f:
        dump = json.load(f)
    assert set(dump["osds"]) == {"osd.0", "osd.1"}
    fc.override = {"osd_op_queue": "mclock_scheduler"}  # OSDs did not pick the arm up
    with pytest.raises(rn.ClusterError, match="osd_op_queue"):
        r.verify({"osd_op_queue": "wpq"}, tmp_path / "run")


# ----------------------------------------------------------------------------- arm planning
def test_plan_has_every_cell_once_with_its_repeats():
    doc = cp.load(QOS)
    runs = cp.plan(doc)
    keys = Counter((r.scenario, r.arm, r.repeat) for r in runs)
    assert max(keys.values()) == 1
    reps = Counter((r.scenario, r.arm) for r in runs)
    assert reps[("scrub", "wpq")] == 8 and reps[("scrub", "high_client_ops")] == 8
    assert all(n >= 3 for n in reps.values())
    assert {a for s, a in reps if s != "scrub"} == set(ARMS5)
    assert {a for s, a in reps if s == "scrub"} == set(ARMS5) | {"wpq_scrubprio120"} | ISSUE10_ARMS
    assert set(doc["scenarios"]) == {"baseline", "scrub", "snaptrim", "recovery_scrub", "snaptrim_recovery"}
    assert len(runs) == 4 * 5 * 3 + (4 * 3 + 2 * 8) + 5 * 3 == 103
    assert [r.order for r in runs] == list(range(103))
    assert [r.repeat for r in runs] == sorted(r.repeat for r in runs)  # repeat-major
    # every repeat numbered 1..n for its cell, relpaths unique
    for (s, a), n in reps.items():
        assert sorted(r.repeat for r in runs if (r.scenario, r.arm) == (s, a)) == list(range(1, n + 1))
    assert len({r.relpath for r in runs}) == 103
    assert runs[0].relpath.count("/") == 2 and runs[0].relpath.endswith("/rep-01")


ISSUE10_ARMS = {"high_client_ops_maxscrubs10", "high_client_ops_cost20m", "balanced_cost20m",
                "high_recovery_ops_cost20m", "custom_cost20m"}


def test_issue10_scrub_tuning_arms_override_the_scenario(tmp_path):
    """The tuning arms change one setting over the scrub scenario's (max scrubs 5, priority 5)."""
    doc = cp.load(QOS)
    r, _ = make_runner(tmp_path, doc)
    s10 = r.settings_for(cp.Run("qos-2026", "scrub", "high_client_ops_maxscrubs10", 1, 0))
    assert s10["osd_max_scrubs"] == 10 and s10["osd_mclock_profile"] == "high_client_ops"
    assert s10["osd_requested_scrub_priority"] == 5
    for arm in ISSUE10_ARMS - {"high_client_ops_maxscrubs10"}:
        s = r.settings_for(cp.Run("qos-2026", "scrub", arm, 1, 0))
        assert s["osd_scrub_cost"] == 20 * 2**20 and s["osd_max_scrubs"] == 5
        assert s["osd_op_queue"] == "mclock_scheduler"
    assert "osd_scrub_cost" not in r.settings_for(cp.Run("qos-2026", "scrub", "balanced", 1, 0))


def test_arm_order_shuffled_per_repeat_and_deterministic():
    doc = cp.load(QOS)
    a, b = cp.plan(doc), cp.plan(cp.load(QOS))
    assert a == b  # same seed, same order: resuming relies on it

    def orders(runs, scen):
        return [tuple(r.arm for r in runs if r.scenario == scen and r.repeat == k) for k in (1, 2, 3)]

    for scen in ("baseline", "snaptrim", "recovery_scrub"):
        o = orders(a, scen)
        assert all(sorted(x) == sorted(ARMS5) for x in o)
        assert len(set(o)) > 1, f"{scen}: the same arm order in every repeat"
    # the shuffle follows the seed, and is not just the YAML order
    other = cp.plan(cp.validate({**cp.load(QOS), "seed": 1}))
    assert [r.relpath for r in other] != [r.relpath for r in a]
    assert sorted(r.relpath for r in other) == sorted(r.relpath for r in a)
    assert any(x != tuple(ARMS5) for x in orders(a, "baseline"))


def test_min_repeats_is_enforced():
    with pytest.raises(cp.CampaignError, match="min_repeats"):
        cp.validate(small_doc(repeats=2))
    with pytest.raises(cp.CampaignError, match="repeats_for.wpq"):
        cp.validate(small_doc(scenarios={"s": {"repeats_for": {"wpq": 2}}}))
    assert len(cp.plan(cp.validate(small_doc(repeats=1, min_repeats=1)))) == 5 + 2 * 8 + 3
    smoke = cp.load(SMOKE)
    assert smoke["min_repeats"] == 1 and len(cp.plan(smoke)) == 5


@pytest.mark.parametrize("change, msg", [
    (lambda d: d["cluster"].pop("mclock_capacity_iops"), "cluster.mclock_capacity_iops"),
    (lambda d: d.pop("client"), "'client'"),
    (lambda d: d["scenarios"].update(x={"arms": ["nope"]}), "unknown arm 'nope'"),
    (lambda d: d["scenarios"].update(x={"arms": ["wpq", "wpq"]}), "twice"),
    (lambda d: d["scenarios"].update(x={"background": ["snaptrim"]}) or d["pools"].pop("snap_objects"),
     "pools.snap_objects"),
    (lambda d: d["scenarios"].update(x={"background": ["defrag"]}), "not one of"),
    (lambda d: d["arms"].update(_x={"osd_op_queue": "wpq"}), "arm name"),
    (lambda d: d["arms"]["wpq"].update(osd_op_queue="fifo"), "wpq or mclock_scheduler"),
])
def test_validate_names_the_fault(change, msg):
    d = small_doc()
    change(d)
    with pytest.raises(cp.CampaignError, match=msg.replace("(", r"\(")):
        cp.validate(d)


# ----------------------------------------------------------------------------- resume
def test_status_done_partial_todo(tmp_path):
    run = cp.Run("t", "scrub", "wpq", 2, 5)
    assert cp.status(tmp_path, run) == "todo"
    (tmp_path / "_inprogress" / run.relpath).mkdir(parents=True)
    assert cp.status(tmp_path, run) == "partial"
    (tmp_path / run.relpath).mkdir(parents=True)
    (tmp_path / run.relpath / "fio.json").write_text("{}")
    assert cp.status(tmp_path, run) == "partial"
    (tmp_path / run.relpath / "done").write_text("x")
    assert cp.status(tmp_path, run) == "done"
    runs = cp.plan(cp.validate(small_doc()))
    root = tmp_path / "fresh"
    d = runs[3]
    (root / d.relpath).mkdir(parents=True)
    (root / d.relpath / "done").write_text("x")
    left = cp.remaining(root, runs)
    assert d not in left and len(left) == len(runs) - 1 and left == [r for r in runs if r != d]


def test_set_aside_moves_a_half_finished_run_and_never_a_done_one(tmp_path):
    run = cp.Run("t", "baseline", "wpq", 1, 0)
    assert cp.set_aside(tmp_path, run) is None
    d = tmp_path / run.relpath
    d.mkdir(parents=True)
    (d / "fio.json").write_text("stale")
    moved = cp.set_aside(tmp_path, run)
    assert not d.exists() and (moved / "fio.json").read_text() == "stale"
    assert moved.is_relative_to(tmp_path / "_inprogress")  # ingest and the manifest skip it
    d.mkdir(parents=True)
    moved2 = cp.set_aside(tmp_path, run)
    assert moved2 != moved and moved.exists() and moved2.exists()
    d.mkdir(parents=True)
    (d / "done").write_text("x")
    with pytest.raises(cp.CampaignError, match="finished run"):
        cp.set_aside(tmp_path, run)
    assert (d / "done").exists()


def test_finish_replaces_a_half_finished_run_without_mixing(tmp_path):
    r, fc = make_runner(tmp_path)
    run = cp.Run("t", "baseline", "wpq", 1, 0)
    old = r.root / run.relpath
    old.mkdir(parents=True)
    (old / "client_clat.1.log.gz").write_bytes(b"old")
    (old / "fio.json").write_text("{old}")
    stage = r.root / "_inprogress" / run.relpath
    stage.mkdir(parents=True)
    (stage / "fio.json.gz").write_bytes(b"new")
    dest = r.finish(run, {"campaign": "t", "repeat": 1})
    assert dest == old
    assert sorted(p.name for p in dest.iterdir()) == ["done", "fio.json.gz", "run.json"]
    assert json.loads((dest / "run.json").read_text())["repeat"] == 1
    assert not stage.exists()
    stale = list((r.root / "_inprogress" / "_stale").rglob("client_clat.1.log.gz"))
    assert len(stale) == 1 and stale[0].read_bytes() == b"old"


class FakeRunner:
    """Stands in for runner.Runner in cmd_run: no cluster, scripted outcomes per run."""
    instances: list["FakeRunner"] = []
    script: dict[str, list[str]] = {}

    def __init__(self, doc, campaign_file, out_root, log):
        self.root = out_root / doc["campaign"]
        self.done: list[str] = []
        self.attempts: list[str] = []
        self.discarded: list[str] = []
        self.release = doc.get("ceph", "pacific")
        self.cl = type("C", (), {"dir": out_root / "_cluster", "ip": "127.0.0.1", "down": lambda s: None,
                                 "wait_clean": lambda s, timeout=0: None})()
        FakeRunner.instances.append(self)

    def bring_up(self):
        pass

    def teardown(self):
        self.torn_down = True

    def one(self, run):
        self.attempts.append(run.relpath)
        outcome = (self.script.get(run.relpath) or ["ok"]).pop(0)
        if outcome == "fail":
            raise rn.ClusterError("boom")
        frac = 0.5 if outcome == "disturbed" else 0.01
        return {"cpu": {"outside_cpu_frac": frac, "outside_cpu_s": frac * 100}, "duration_s": 1.0,
                "background_unfinished": []}

    def finish(self, run, info):
        d = self.root / run.relpath
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.json").write_text(json.dumps(info))
        (d / "done").write_text("x")
        self.done.append(run.relpath)
        return d

    def discard(self, run):
        self.discarded.append(run.relpath)


def test_cmd_run_skips_done_redoes_partial_and_disturbed(tmp_path, monkeypatch, capsys):
    camp = tmp_path / "c.yaml"
    import yaml
    doc = small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}})
    camp.write_text(yaml.safe_dump(doc))
    runs = cp.plan(cp.validate(small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}})))
    root = tmp_path / "out" / "t"
    done, partial, disturbed, failing = runs[0], runs[1], runs[2], runs[3]
    (root / done.relpath).mkdir(parents=True)
    (root / done.relpath / "done").write_text("x")
    (root / partial.relpath).mkdir(parents=True)
    (root / partial.relpath / "fio.json").write_text("half")
    (root / "_inprogress" / "junk").mkdir(parents=True)
    calls = []
    monkeypatch.setattr(cli, "preflight", lambda w, ip="127.0.0.1": calls.append(("preflight", w)))
    monkeypatch.setattr(cli, "ensure_packages", lambda log, release="pacific": calls.append(("packages",)))
    monkeypatch.setattr(rn, "Runner", FakeRunner)
    FakeRunner.instances = []
    FakeRunner.script = {disturbed.relpath: ["disturbed", "ok"], failing.relpath: ["fail", "fail", "fail"]}
    rc = cli.main(["run", str(camp), "--out", str(tmp_path / "out")])
    assert rc == 0
    fr = FakeRunner.instances[0]
    assert done.relpath not in fr.attempts and partial.relpath in fr.attempts
    assert fr.attempts.count(disturbed.relpath) == 2 and fr.attempts.count(failing.relpath) == 3
    assert sorted(fr.done) == sorted(r.relpath for r in runs if r not in (done, failing))
    assert fr.discarded.count(failing.relpath) == 3 and fr.discarded.count(disturbed.relpath) == 1
    assert not (root / "_inprogress" / "junk").exists()  # half-finished stages of a sitting cleared
    assert (root / "campaign.yaml").read_bytes() == camp.read_bytes()
    sitting = json.loads(next(root.glob("sitting-*.json")).read_text())
    assert Counter(x["status"] for x in sitting["runs"]) == {"done": 3, "failed": 3, "disturbed": 1}
    assert calls[0][0] == "preflight"
    # a second sitting with a changed campaign file is refused, and nothing is started
    FakeRunner.instances = []
    camp.write_text(yaml.safe_dump({**doc, "seed": 8}))
    assert cli.main(["run", str(camp), "--out", str(tmp_path / "out")]) == 2
    assert "differs" in capsys.readouterr().err
    assert FakeRunner.instances == []


def test_a_block_split_by_an_earlier_sitting_is_run_again_whole(tmp_path, monkeypatch, capsys):
    """A session stopped mid-block (qos-v2 scrub rep 2: 8 of 11 arms done in one bring-up): a throttled
    campaign's next sitting moves the block's done runs under _superseded/<fsid>/ and redoes all of it."""
    import yaml
    doc = small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}, "scrub": {"background": ["deep_scrub"]}},
                    throttle={"read_iops": 2500, "write_iops": 2500})
    camp = tmp_path / "c.yaml"
    camp.write_text(yaml.safe_dump(doc))
    runs = cp.plan(cp.load(camp))
    root = tmp_path / "out" / "t"
    (root).mkdir(parents=True)
    (root / "pilot.json").write_text(json.dumps({"scenarios": {"baseline": {"go": True}, "scrub": {"go": True}}}))
    base = [r for r in runs if r.scenario == "baseline"]
    scrub = [r for r in runs if r.scenario == "scrub"]
    for r in base + scrub[:2]:  # baseline whole, scrub cut after two arms
        (root / r.relpath).mkdir(parents=True)
        (root / r.relpath / "run.json").write_text(json.dumps({"cluster": {"fsid": "f-old"}}))
        (root / r.relpath / "done").write_text("x")
    assert cp.split_blocks(root, runs) == {(1, "scrub"): scrub[:2]}
    monkeypatch.setattr(cli, "preflight", lambda w, ip="127.0.0.1": None)
    monkeypatch.setattr(cli, "ensure_packages", lambda log, release="pacific": None)
    monkeypatch.setattr(rn, "Runner", FakeRunner)
    FakeRunner.instances, FakeRunner.script = [], {}
    assert cli.main(["run", str(camp), "--out", str(tmp_path / "out")]) == 0
    fr = FakeRunner.instances[0]
    assert sorted(fr.attempts) == sorted(r.relpath for r in scrub)  # the whole block, baseline untouched
    for r in scrub[:2]:
        assert (root / "_superseded" / "f-old" / r.relpath / "done").exists()
    why = json.loads((root / "_superseded" / "f-old" / "why.json").read_text())
    assert why[0]["runs"] == [r.relpath for r in scrub[:2]]
    assert why[0]["missing"] == [r.relpath for r in scrub[2:]]
    assert "split" in capsys.readouterr().out
    assert cp.split_blocks(root, runs) == {}


def test_a_campaign_file_may_only_raise_repeats_between_sittings(tmp_path, monkeypatch):
    """More repeats for one scenario (what a pilot's power estimate may ask once the planned ones are in):
    the old plan is a prefix of the new one, so the campaign goes on and the earlier file is kept."""
    import hashlib
    import yaml
    doc = small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}, "scrub": {"background": ["deep_scrub"]}})
    more = {**doc, "scenarios": {"baseline": {}, "scrub": {"background": ["deep_scrub"], "repeats": 3}}}
    old, new = cp.validate(yaml.safe_load(yaml.safe_dump(doc))), cp.validate(yaml.safe_load(yaml.safe_dump(more)))
    assert cp.extension_problem(old, new) is None
    assert [r.relpath for r in cp.plan(new)][:len(cp.plan(old))] == [r.relpath for r in cp.plan(old)]
    assert len(cp.plan(new)) == len(cp.plan(old)) + 2 * len(ARMS5)
    assert "other than repeats" in cp.extension_problem(old, {**new, "seed": 8})
    assert "begin with" in cp.extension_problem(new, old)  # lowering repeats is not an extension
    root = tmp_path / "out" / "t"
    camp = tmp_path / "c.yaml"
    camp.write_text(yaml.safe_dump(doc))
    cli.freeze_campaign_file(camp, root)
    first = (root / "campaign.yaml").read_bytes()
    camp.write_text(yaml.safe_dump(more))
    cli.freeze_campaign_file(camp, root)
    assert (root / "campaign.yaml").read_bytes() == camp.read_bytes()
    assert (root / f"campaign-{hashlib.sha256(first).hexdigest()[:12]}.yaml").read_bytes() == first
    camp.write_text(yaml.safe_dump({**more, "seed": 8}))
    with pytest.raises(cp.CampaignError, match="differs"):
        cli.freeze_campaign_file(camp, root)


def test_cmd_run_with_everything_done_needs_no_cluster(tmp_path, monkeypatch, capsys):
    import yaml
    camp = tmp_path / "c.yaml"
    camp.write_text(yaml.safe_dump(small_doc(min_repeats=1, repeats=1, scenarios={"baseline": {}})))
    for r in cp.plan(cp.load(camp)):
        (tmp_path / "out" / "t" / r.relpath).mkdir(parents=True)
        (tmp_path / "out" / "t" / r.relpath / "done").write_text("x")
    monkeypatch.setattr(clmod.os, "geteuid", lambda: 1000)
    assert cli.main(["run", str(camp), "--out", str(tmp_path / "out")]) == 0
    assert "nothing to do" in capsys.readouterr().out


# ----------------------------------------------------------------------------- refusal, teardown
@pytest.fixture
def procs(monkeypatch):
    """A fake /proc: pid → argv; os.kill recorded, never delivered."""
    table: dict[int, list[str]] = {}
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(clmod, "_cmdline", lambda pid: table.get(pid, []))
    monkeypatch.setattr(clmod.os, "kill", lambda pid, sig: killed.append((pid, sig)))
    monkeypatch.setattr(clmod.time, "sleep", lambda s: None)
    monkeypatch.setattr(clmod, "_port_open", lambda port, ip="127.0.0.1": False)
    return table, killed


def leftover(workdir: Path, pids: dict[str, int], recorded: dict[str, int] | None = None) -> None:
    (workdir / "run").mkdir(parents=True)
    (workdir / "ceph.conf").write_text("[global]\n")
    for name, pid in pids.items():
        (workdir / "run" / f"{name}.pid").write_text(f"{pid}\n")
    if recorded:
        (workdir / clmod.PIDS_FILE).write_text(json.dumps(recorded))


def test_refuses_without_root(tmp_path, monkeypatch, capsys, procs):
    monkeypatch.setattr(clmod.os, "geteuid", lambda: 1000)
    with pytest.raises(clmod.ClusterError, match="root.*sudo"):
        clmod.preflight(tmp_path / "w")
    import yaml
    camp = tmp_path / "c.yaml"
    camp.write_text(yaml.safe_dump(small_doc(cluster={**small_doc()["cluster"],
                                                      "workdir": str(tmp_path / "w")})))
    assert cli.main(["run", str(camp), "--out", str(tmp_path / "out")]) == 2
    assert "needs root" in capsys.readouterr().err
    assert not (tmp_path / "out" / "t").exists()  # refused before writing anything


def test_refuses_beside_a_live_cluster_and_clears_a_dead_one(tmp_path, monkeypatch, procs):
    table, killed = procs
    monkeypatch.setattr(clmod.os, "geteuid", lambda: 0)
    w = tmp_path / "w"
    leftover(w, {"osd.0": 4242, "mon.a": 4243})
    table[4242] = ["ceph-osd", "-f", "-i", "0", "--conf", str(w / "ceph.conf")]
    with pytest.raises(clmod.ClusterError, match=r"still there.*osd\.0.*teardown"):
        clmod.preflight(w)
    assert w.exists() and killed == []
    # the same PID now belongs to something else: a dead leftover, removed
    table[4242] = ["/usr/sbin/sshd", "-D"]
    clmod.preflight(w)
    assert not w.exists() and killed == []
    # a port in use refuses too
    monkeypatch.setattr(clmod, "_port_open", lambda port, ip="127.0.0.1": port == 6789)
    with pytest.raises(clmod.ClusterError, match=r"ports in use \[6789\]"):
        clmod.preflight(w)


def test_preflight_never_deletes_a_directory_it_did_not_make(tmp_path, monkeypatch, procs):
    monkeypatch.setattr(clmod.os, "geteuid", lambda: 0)
    w = tmp_path / "precious"
    w.mkdir()
    (w / "thesis.tex").write_text("x")
    with pytest.raises(clmod.ClusterError, match="refusing to delete"):
        clmod.preflight(w)
    assert (w / "thesis.tex").exists()


def test_teardown_kills_only_recorded_pids_that_are_ours(tmp_path, procs):
    table, killed = procs
    w = tmp_path / "w"
    conf = str(w / "ceph.conf")
    leftover(w, {"osd.0": 101, "mon.a": 102, "osd.1": 103, "osd.2": 104, "osd.3": 1, "osd.4": 106},
             recorded={"mgr.x": 105, "osd.0": 101, "osd.4": 107})
    table.update({101: ["ceph-osd", "-f", "-i", "0", "--conf", conf],
                  102: ["ceph-mon", "-f", "-i", "a", "--conf", conf],
                  103: ["bash"],                                             # recycled PID
                  105: ["/usr/bin/ceph-mgr", "-f", "-i", "x", "--conf", conf],
                  1: ["/sbin/init"],
                  106: ["ceph-osd", "-f", "-i", "4", "--conf", conf],  # pid file newer than record
                  107: [],
                  999: ["ceph-osd", "-f", "-i", "0", "--conf", "/other/ceph.conf"]})  # not recorded
    got = clmod.teardown_workdir(w)
    assert sorted(got) == [101, 102, 105, 106]
    assert sorted(killed) == [(p, signal.SIGKILL) for p in (101, 102, 105, 106)]
    assert not w.exists()
    assert cli.main(["teardown", "--workdir", str(tmp_path / "absent")]) == 0


def test_cluster_down_stops_only_its_own_children(tmp_path, monkeypatch):
    monkeypatch.setattr(clmod.os, "kill", lambda *a: pytest.fail("down() must not signal by PID"))
    cl = clmod.Cluster(tmp_path / "c", 2, 1, 1, log=lambda m: None)
    procs = {n: FakeProc([n]) for n in ("mon.a", "mgr.x", "osd.0", "osd.1")}
    procs["osd.1"].returncode = 0  # already gone
    cl.procs = dict(procs)
    cl.down()
    assert [n for n, p in procs.items() if p.terminated] == ["mon.a", "mgr.x", "osd.0"]
    assert not procs["osd.1"].terminated


def test_a_failed_run_stops_its_children_and_undoes_the_scenario(tmp_path):
    r, fc = make_runner(tmp_path, small_doc(scenarios={"rs": {"background": ["recovery", "snaptrim"]}}))
    fc.running.pop("osd.1")  # prepare() had stopped the victim
    fio = FakeProc(["fio"])

    def boom(run, sc, stage, bg):
        r._children.append(fio)
        raise rn.ClusterError("fio exited 1")

    r._one = boom
    with pytest.raises(rn.ClusterError):
        r.one(cp.Run("t", "rs", "wpq", 1, 0))
    assert fio.terminated
    assert fc.started == [1]
    assert ("osd", "in", "1") in fc.cmds
    assert {("osd", "unset", f) for f in ("nobackfill", "norecover", "norebalance")} <= set(fc.cmds)
    deleted = {a[3] for a in fc.cmds if a[:3] == ("osd", "pool", "delete")}
    assert deleted == {"snap", "recovery"}


# ----------------------------------------------------------------------------- records
def test_fio_anchors():
    fj = {"timestamp_ms": 1_700_000_061_500, "jobs": [{"job_runtime": 60_000}]}
    a = rn.fio_anchors(fj)
    assert a["fio_t0_unix"] == 1_700_000_001.5 and a["fio_t0_source"] == "timestamp_ms - job_runtime"
    fj["jobs"][0]["job_start"] = 1_700_000_001_200
    assert rn.fio_anchors(fj)["fio_t0_unix"] == 1_700_000_001.2


def test_compress_stage(tmp_path):
    for name, body in [("client_clat.1.log", "1, 2, 0, 4096, 0\n"), ("timeline.jsonl", "{}\n"),
                       ("fio.json", "{}"), ("cluster-log.txt", "x"), ("fio.stderr", ""),
                       ("timeline.jsonl.stderr", "warn"), ("osd_config.json.gz", "")]:
        (tmp_path / name).write_text(body)
    rn.compress_stage(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "client_clat.1.log.gz", "cluster-log.txt.gz", "fio.json.gz", "osd_config.json.gz",
        "timeline.jsonl.gz", "timeline.jsonl.stderr"]
    with gzip.open(tmp_path / "client_clat.1.log.gz", "rt") as f:
        assert f.read() == "1, 2, 0, 4096, 0\n"


def test_fio_argv_follows_the_issue(tmp_path):
    r, _ = make_runner(tmp_path, cp.load(QOS))
    base = r.fio_argv(r.doc["scenarios"]["scrub"])
    for opt in ("--ioengine=rbd", "--rw=randwrite", "--bs=4k", "--iodepth=16", "--time_based",
                "--runtime=60", "--output-format=json+", "--log_avg_msec=1000", "--log_hist_msec=1000",
                "--write_lat_log=client", "--write_iops_log=client", "--write_bw_log=client",
                "--write_hist_log=client"):
        assert opt in base, opt
    assert "--rw=randrw" in r.fio_argv(r.doc["scenarios"]["snaptrim"])
    assert "--rw=randrw" in r.fio_argv(r.doc["scenarios"]["snaptrim_recovery"])


def test_ceph_stamp_parser_shared_by_harness_and_poller():
    from capture.ceph.pgpoll_stamp import stamp
    assert stamp("2026-11-21T14:25:33.146231+0000") == 1795271133.146231
    assert stamp("2026-11-21T15:25:33.000000+0100") == 1795271133.0
    assert stamp("0.000000") is None and stamp("1970-01-01T00:00:00.000000+0000") is None
    assert stamp("junk") is None and stamp(None) is None
    # pgpoll.py (a /usr/bin/python3 script) must use this one parser, not a copy
    src = (Path(__file__).resolve().parents[1] / "capture" / "ceph" / "pgpoll.py").read_text()
    assert "from pgpoll_stamp import stamp" in src and "def stamp" not in src


def test_kept_under_root_finishes_into_root_and_logs_by_the_runners_own_log(tmp_path):
    """The runners' shared finish/discard (capture.common.sitting.KeptUnderRoot): a runner's own ``log``
    gets the set-aside line; one without uses log_progress (a line on stdout)."""
    from capture.common.sitting import KeptUnderRoot

    said = []

    class Own(KeptUnderRoot):
        def __init__(self, root):
            self.root, self.log = root, said.append

    run = cp.Run("t", "baseline", "wpq", 1, 0)
    r = Own(tmp_path)
    for stage in (tmp_path / run.relpath, tmp_path / "_inprogress" / run.relpath):
        stage.mkdir(parents=True)
    dest = r.finish(run, {"repeat": 1})
    assert dest == tmp_path / run.relpath and (dest / "done").exists()
    assert len(said) == 1 and said[0].startswith(f"  half-finished {run.relpath} from an earlier sitting moved aside")
    (tmp_path / "_inprogress" / run.relpath).mkdir(parents=True)
    r.discard(run)
    assert not (tmp_path / "_inprogress" / run.relpath).exists()
    assert KeptUnderRoot.log.__name__ == "log_progress"

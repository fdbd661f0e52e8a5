"""The validity gate (analysis.stats.validity) on the shipped QoS campaigns, each condition against what the
capture's run.json files record, read here with the json module; and its rules on small hand-made tables.
"""

from __future__ import annotations

import glob
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import validity as v
from conftest import ROOT

RAW = ROOT / "data/raw/ceph-qos"
#: the scenario's main operation, and its key in run.json background_done_seen_unix
MAIN = {"scrub": "deep_scrub", "recovery_scrub": "deep_scrub", "snaptrim": "snaptrim", "snaptrim_recovery": "snaptrim"}


def _records(campaign: str) -> list[dict]:
    """The measured runs' run.json (those with a fio output beside them), json module."""
    out = []
    for p in sorted(glob.glob(str(RAW / campaign / "*" / "*" / "rep-*" / "run.json"))):
        if glob.glob(p.replace("run.json", "fio.json*")):
            out.append(json.load(open(p)))
    return out


@pytest.fixture(scope="module")
def gates(real_proc) -> dict[str, pd.DataFrame]:
    from analysis.published.qos import load_all
    from analysis.store import read_table
    camps = ["qos-v2", "qos-reef"]
    flt = [("campaign", "in", camps)]
    s, se = (read_table(real_proc, n, filters=flt) for n in ("summary", "series"))
    return {c: v.gate(s, se, c, load_all()).set_index("condition") for c in camps}


def test_op_inside_client_counts_the_runs_whose_operation_ended_before_fio(gates):
    """qos-v2's WPQ arm: its operation (deep scrub or snaptrim) was seen done before fio exited in 4 of its
    12 runs with an operation (run.json background_done_seen_unix against anchors.fio_exit_unix, + 2 s: one
    fio log window, and the PG poller's 1 s interval, by which it sees an end late); every other arm in all
    of its runs."""
    per = Counter()
    for d in _records("qos-v2"):
        op = MAIN.get(d["scenario"])
        if op is None:
            continue
        done = (d.get("background_done_seen_unix") or {}).get(op)
        inside = done is not None and done <= d["anchors"]["fio_exit_unix"] + 2.0
        per[(d["arm"], "n")] += 1
        per[(d["arm"], "in")] += inside
    assert (per[("wpq", "in")], per[("wpq", "n")]) == (4, 12)
    short = sorted(a for (a, k), n in per.items() if k == "n" and per[(a, "in")] < 0.95 * n)
    assert short == ["wpq"]
    r = gates["qos-v2"].loc["a_op_inside_client"]
    assert (r["status"], r["measured"]) == ("fail", "the operation ended inside the client run in wpq 4/12 runs")
    assert r["runs"] == sum(n for (a, k), n in per.items() if k == "n")


def test_shared_budget_fails_where_the_operation_writes_against_a_reading_client(gates):
    """qos-v2: cgroup v1 limits of 300 read and 300 write IO/s per OSD and a randread client (run.json
    throttle, fio_argv): snaptrim's writes and recovery's writes have a budget of their own."""
    recs = _records("qos-v2")
    assert {(d["throttle"]["cgroup_version"], d["throttle"]["read_iops"], d["throttle"]["write_iops"]) for d in recs} \
        == {("v1", 300, 300)}
    assert {a for d in recs for a in d["fio_argv"] if a.startswith("--rw=")} == {"--rw=randread"}
    n = Counter(d["scenario"] for d in recs)
    r = gates["qos-v2"].loc["b_shared_budget"]
    assert r["status"] == "fail"
    assert r["measured"] == (
        "per-direction limits 300 read / 300 write IO/s per OSD (v1); the operation's own budget: "
        f"recovery_scrub: recovery write against a randread client ({n['recovery_scrub']} runs); "
        f"snaptrim: snaptrim write against a randread client ({n['snaptrim']} runs); "
        f"snaptrim_recovery: snaptrim write against a randread client ({n['snaptrim_recovery']} runs); "
        f"snaptrim_recovery: recovery write against a randread client ({n['snaptrim_recovery']} runs)")


def test_settings_name_what_the_osds_reported_against_the_seeds(gates):
    """qos-reef: the bluestore throttles of its scrub runs and the recovery limits of its mClock recovery
    runs, as run.json osd_config.effective has them, against part 2's 2 MiB and part 1's 1000."""
    recs = _records("qos-reef")
    eff = [(d["scenario"], d["osd_config"]["effective"]) for d in recs]
    scrub = Counter(e["bluestore_throttle_bytes"] for s, e in eff if s in ("scrub", "recovery_scrub"))
    rec = [e for s, e in eff if "recovery" in s.split("_") and e["osd_op_queue"] == "mclock_scheduler"]
    assert scrub == {"262144": 33}
    assert Counter(e["osd_max_backfills"] for e in rec) == {"1": 26}
    assert Counter((e["osd_recovery_max_active"], e["osd_recovery_max_active_ssd"]) for e in rec) == {("0", "10"): 26}
    r = gates["qos-reef"].loc["e_settings"]
    assert r["status"] == "fail"
    assert r["measured"] == (
        "bluestore_throttle_bytes (scrub tests): 262144 (33) where the seeds have 2 MiB; "
        "bluestore_throttle_deferred_bytes (scrub tests): 262144 (33) where the seeds have 2 MiB; "
        "osd_max_backfills (mClock arms, recovery): 1 (26) where the seeds have 1000; "
        "osd_recovery_max_active in force (mClock arms, recovery): 10 (26) where the seeds have 1000")


def test_capacity_set_to_the_device_cap_with_the_benchmark_skipped_fails(gates):
    recs = [d for d in _records("qos-v2") if d["osd_config"]["effective"]["osd_op_queue"] == "mclock_scheduler"]
    eff = Counter((d["osd_config"]["effective"]["osd_mclock_skip_benchmark"],
                   float(d["osd_config"]["effective"]["osd_mclock_max_capacity_iops_ssd"])) for d in recs)
    assert eff == {("true", 300.0): len(recs)} and len(recs) == 96
    r = gates["qos-v2"].loc["f_capacity"]
    assert (r["status"], r["runs"]) == ("fail", 96)
    assert r["measured"].startswith("benchmark skipped in 96 of 96 mClock runs, capacity set to 300 IOPS (96), "
                                    "equal to the block IO limit of 300 IO/s per direction")


def test_every_arm_with_an_operation_has_its_own_baseline(gates):
    for c in ("qos-v2", "qos-reef"):
        recs = _records(c)
        base = {d["arm"] for d in recs if d["scenario"] == "baseline"}
        arms = {d["arm"] for d in recs if d["scenario"] in MAIN}
        tuned = {"high_client_ops_cost20m": "high_client_ops", "high_client_ops_maxscrubs10": "high_client_ops",
                 "wpq_scrubprio120": "wpq", "balanced_cost20m": "balanced", "custom_cost20m": "custom",
                 "high_recovery_ops_cost20m": "high_recovery_ops"}  # a scrub setting apart: the profile's baseline
        assert not {a for a in arms if a not in base and tuned.get(a) not in base}
        assert gates[c].loc["d_own_baseline", "status"] == "pass"


def _timeline(arm_durations: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"campaign": "c", "kind": "ceph-pg-timeline", "metric": "scrub_duration", "scenario": "scrub",
             "arm": arm, "repeat": str(i + 1), "value": x}
            for arm, xs in arm_durations.items() for i, x in enumerate(xs)]
    return pd.DataFrame(rows)


def test_the_cost_model_responds_only_beyond_the_spread():
    """The ratio of mean scrub durations (geometric) of ``<arm>_cost20m`` against ``<arm>`` with its Welch
    95 % interval (scipy's ttest_ind on the logs): a 30 % change with 2 % spread responds, a 1 % one with 20 %
    spread does not."""
    moved = _timeline({"balanced": [100, 102, 98], "balanced_cost20m": [70, 71, 69]})
    status, measured, n = v.cost_model(moved, pd.DataFrame(), "c")
    ci = stats.ttest_ind(np.log([70, 71, 69]), np.log([100, 102, 98]), equal_var=False).confidence_interval(0.95)
    lo, hi = np.expm1(ci.low) * 100, np.expm1(ci.high) * 100
    eff = (np.exp(np.log([70, 71, 69]).mean() - np.log([100, 102, 98]).mean()) - 1) * 100
    assert (status, n) == ("pass", 6)
    assert measured == f"balanced_cost20m: scrub duration {eff:+.1f} % [{lo:+.1f}, {hi:+.1f}] (3 vs 3 runs)"
    flat = _timeline({"balanced": [100, 80, 120], "balanced_cost20m": [101, 81, 121]})
    assert v.cost_model(flat, pd.DataFrame(), "c")[0] == "fail"
    assert v.cost_model(_timeline({"balanced": [100, 80]}), pd.DataFrame(), "c")[0] == "not measured"


def test_an_arm_without_a_baseline_fails_d_by_name():
    f = pd.DataFrame({"scenario": ["baseline", "scrub", "scrub", "scrub"], "arm": ["wpq", "wpq", "balanced",
                                                                                  "wpq_cost20m"],
                      "rw": ["randread"] * 4})
    assert v.own_baseline(f) == ("fail", "no baseline run of balanced (randread) with the same client (1 arm × "
                                 "client pairs have one); 1 scrub-setting variants take their profile's baseline, "
                                 "matched by the arm's name (no run key names a variant's profile arm): "
                                 "wpq_cost20m → wpq", 1)


def test_a_baseline_counts_only_for_the_same_client_direction():
    """A read client's drop during scrub is judged against the read client alone: a write baseline
    (``baseline``) does not stand in for it; ``baseline_read`` does."""
    f = pd.DataFrame({"scenario": ["baseline", "scrub", "snaptrim"], "arm": ["wpq"] * 3,
                      "rw": ["randwrite", "randread", "randwrite"]})
    assert v.own_baseline(f)[0] == "fail" and "wpq (randread)" in v.own_baseline(f)[1]
    g = pd.concat([f, pd.DataFrame({"scenario": ["baseline_read"], "arm": ["wpq"], "rw": ["randread"]})],
                  ignore_index=True)
    assert v.own_baseline(g) == ("pass", "every one of 2 arm × client pairs has baseline runs (2 runs)", 2)


def test_capacity_from_the_osd_bench_under_the_limit_passes_f():
    m = pd.DataFrame({"op_queue": ["mclock_scheduler"] * 2 + ["wpq"], "mclock_skip_benchmark": ["true"] * 3,
                      "mclock_capacity_iops_ssd": ["287.4", "291.0", "287.4"],
                      "mclock_capacity_source": ["osd bench under the IO limit"] * 3})
    status, measured, n = v.capacity(m)
    assert (status, n) == ("pass", 2) and "287, 291 IOPS" in measured
    set_ = m.assign(mclock_capacity_source="set")
    assert v.capacity(set_)[0] == "fail"


def test_claims_are_comparable_only_where_their_campaign_passes():
    table = pd.DataFrame({"campaign": ["a", "a", "b"], "condition": ["a_op_inside_client", "f_capacity", "f_capacity"],
                          "status": ["fail", "not measured", "pass"]})
    claims = pd.DataFrame({"campaign": ["a", "b", "z"]})
    assert v.comparable(claims, table).tolist() == ["no: a_op_inside_client", "yes", "not gated"]


def test_the_first_screen_says_a_rig_that_fails_the_gate_is_not_the_seeds_experiment():
    """findings.qos_sentences: a campaign row with ``gate_failed`` is introduced as a rig that is not the
    seeds' experiment, naming each failed condition in words, before what it found; without, as before."""
    from analysis import findings
    row = {"campaign": "qos-v2", "release": "pacific", "scenario": "scrub", "operation": "scrub", "arm": "wpq_x",
           "settings": 10, "runs_per_setting": 3, "client_pct": 16.48, "client_lo": -45.08, "client_hi": 147.07,
           "client_q": 0.91, "duration_metric": "scrub_duration", "duration_pct": -0.58, "duration_lo": -37.16,
           "duration_hi": 57.28, "duration_p": 0.98}
    plain = findings.qos_sentences([row], {"33-qos-v2"})[0]
    assert plain.startswith("On Ceph Pacific (qos-v2), during scrub, no op-queue setting changed client IOPS")
    gated = findings.qos_sentences([{**row, "gate_failed": ["a_op_inside_client", "f_capacity"]}], {"33-qos-v2"})[0]
    assert gated.startswith("On Ceph Pacific (qos-v2), a rig that is not the seeds' experiment (operations left "
                            "unfinished in the client run, mClock's capacity set, not benchmarked; <a "
                            "href='#33-qos-v2'>the validity gate</a>), during scrub, no op-queue setting")


def test_the_seeds_settings_are_read_from_the_published_tables():
    """The gate's seed values are data/published's rows (part 1 line 52: 256 KiB; part 2 line 60: 2 MiB; part 1
    lines 109-110: 1000), not constants: a published table that said otherwise would move them."""
    from analysis.published.qos import load_all
    pub = load_all()
    got = v._seed_settings(pub)
    assert got[("part1", "bluestore_throttle_bytes")] == 256 * 1024 and got[("part2", "bluestore_throttle_bytes")] == 2 << 20
    assert got[("part1", "osd_max_backfills")] == 1000 == got[("part1", "osd_recovery_max_active")]
    moved = pub.copy()
    moved.loc[moved["metric"].eq("bluestore_throttle_bytes") & moved["seed"].str.contains("part2"), "value"] = 4.0
    assert v._seed_settings(moved)[("part2", "bluestore_throttle_bytes")] == 4 << 20

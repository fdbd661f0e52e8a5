"""The pilot gate (``analysis.stats.pilot``): each check on hand-worked cases, the power arithmetic against
statsmodels, the spread and calibration by hand, and the gate on the recorded qos-v2 pilot
(``data/raw/ceph-qos/qos-v2-pilot``), cross-checked against its raw files read here directly."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.power import TTestPower

from analysis.stats import pilot as pl
from conftest import ROOT

PILOT = ROOT / "data" / "raw" / "ceph-qos" / "qos-v2-pilot"
VERDICT = ROOT / "data" / "raw" / "ceph-qos" / "qos-v2" / "pilot.json"
COLS = ["campaign", "scenario", "arm", "repeat", "op_queue", "profile", "op", "op_start", "op_duration",
        "ended_in_client", "op_rate", "client_iops", "queue_per_osd", "queue_max_osd", "cpu_busy", "steal"]


def facts() -> pd.DataFrame:
    """Two baselines and a scrub scenario that passes every check (:func:`_apply` changes cells)."""
    rows = [
        ("p", "baseline", "wpq", "1", "wpq", "", None, np.nan, np.nan, False, np.nan, 1000.0, 20.0, 70.0, 0.10, 0.0),
        ("p", "baseline", "hco", "1", "mclock_scheduler", "high_client_ops", None, np.nan, np.nan, False, np.nan,
         900.0, 18.0, 60.0, 0.12, 0.0),
        ("p", "scrub", "wpq120", "1", "wpq", "", "scrub", 20.0, 70.0, True, 170.0, 700.0, 12.0, 40.0, 0.20, 0.0),
        ("p", "scrub", "hco", "1", "mclock_scheduler", "high_client_ops", "scrub", 20.0, np.nan, False, 30.0,
         890.0, 9.0, 30.0, 0.15, 0.0),
    ]
    return pd.DataFrame(rows, columns=COLS)


def test_gate_go_when_every_check_passes():
    g = pl.gate(facts())
    assert g["scrub"]["go"] and g["baseline"]["go"]
    c = g["scrub"]["checks"]
    assert c["fastest_duration_s"]["value"] == 70.0
    assert c["queue_per_osd_min_arm"]["value"] == 9.0
    assert c["cpu_busy_max_arm"]["value"] == 0.2
    # drops against the same queue/profile's baseline: 1 − 700/1000 (WPQ) and 1 − 890/900 (hco)
    assert c["client_drop_max_arm"]["value"] == pytest.approx(0.3)
    assert g["scrub"]["arms"]["hco"]["client_drop"] == pytest.approx(1 - 890 / 900, abs=1e-4)
    assert g["scrub"]["reasons"] == [] and g["scrub"]["notes"] == []
    assert "fastest_duration_s" not in g["baseline"]["checks"]  # no operation there


def test_baseline_checks_are_reported_not_gating_and_high_cpu_is_noted():
    g = pl.gate(_apply({("baseline", "hco"): {"cpu_busy": 0.96, "client_iops": 760.0}}))
    b = g["baseline"]
    assert b["go"] and not b["checks"]["cpu_busy_max_arm"]["ok"] and not b["checks"]["cpu_busy_max_arm"]["gating"]
    assert b["notes"] == ["hco: machine CPU 0.96 busy at 760 client IOPS (lowest arm here: 0.10 at 1000)"]
    # the same CPU in a scenario with an operation gates
    g = pl.gate(_apply({("scrub", "hco"): {"cpu_busy": 0.96}}))
    assert not g["scrub"]["go"] and g["scrub"]["checks"]["cpu_busy_max_arm"]["gating"]


def test_arms_that_do_not_differ_are_no_go():
    pt = pd.DataFrame({"scenario": ["scrub", "scrub"], "metric": ["op_rate", "client_iops"],
                       "n_pairs": [22658.0, 13314.0]})
    g = pl.gate(facts(), power_table=pt)
    assert not g["scrub"]["go"] and g["scrub"]["checks"]["repeats_to_decide_min_metric"]["value"] == 13314.0
    g = pl.gate(facts(), power_table=pt.assign(n_pairs=[22658.0, 10.0]))
    assert g["scrub"]["go"]  # one metric decidable within 10 repeats is enough


@pytest.mark.parametrize("wpq_profile", ["", np.nan])
def test_latest_round_decides_and_baselines_stay_within_their_round(wpq_profile):
    """WPQ has no profile: read from the tables it may be NaN, which must not match another round's WPQ."""
    r1 = facts()
    r1.loc[r1["op_queue"] == "wpq", "profile"] = wpq_profile
    r2 = facts().assign(campaign="p-r2")
    r2.loc[r2["op_queue"] == "wpq", "profile"] = wpq_profile
    # round 2: another bring-up, another level; little drop against ITS baselines
    r2.loc[r2["scenario"] == "scrub", "client_iops"] = [1089.0, 880.0]
    r2.loc[r2["scenario"] == "baseline", "client_iops"] = [1100.0, 900.0]
    g = pl.gate(pd.concat([r1, r2], ignore_index=True), rounds=["p", "p-r2"])
    assert g["scrub"]["round"] == "p-r2"
    assert g["scrub"]["arms"]["wpq120"]["client_drop"] == pytest.approx(0.01)
    assert not g["scrub"]["go"]  # round 1's 30 % drop does not count for round 2
    g = pl.gate(pd.concat([r1, r2], ignore_index=True), rounds=["p-r2", "p"])
    assert g["scrub"]["round"] == "p" and g["scrub"]["go"]


@pytest.mark.parametrize("over, failing", [
    ({("scrub", "wpq120"): {"op_duration": 45.0}}, "fastest_duration_s"),          # too short
    ({("scrub", "wpq120"): {"op_duration": 160.0}}, "fastest_duration_s"),         # too long
    ({("scrub", "wpq120"): {"ended_in_client": False}}, "fastest_duration_s"),     # no arm ended in the run
    ({("scrub", "hco"): {"queue_per_osd": 7.9}}, "queue_per_osd_min_arm"),        # one arm's queue too short
    ({("scrub", "hco"): {"cpu_busy": 0.61}}, "cpu_busy_max_arm"),                  # CPU-bound again
    ({("scrub", "wpq120"): {"client_iops": 960.0}}, "client_drop_max_arm"),       # 4 % and 1 %: no competition
])
def test_each_check_can_say_no_go(over, failing):
    g = pl.gate(_apply(over))
    assert not g["scrub"]["go"]
    assert [k for k, c in g["scrub"]["checks"].items() if not c["ok"]] == [failing]
    assert g["scrub"]["reasons"][0].startswith(failing)


def _apply(over: dict) -> pd.DataFrame:
    """``facts()`` with {(scenario, arm): {column: value}} changed."""
    df = facts()
    for (scen, arm), vals in over.items():
        i = df.index[(df["scenario"] == scen) & (df["arm"] == arm)]
        for k, v in vals.items():
            df.loc[i, k] = v
    return df


def test_fastest_is_the_shortest_arm_that_ended():
    # the slow arm ending at 140 s does not hide a fast arm's 50 s
    df = _apply({("scrub", "hco"): {"op_duration": 140.0, "ended_in_client": True},
                 ("scrub", "wpq120"): {"op_duration": 50.0}})
    c = pl.gate(df)["scrub"]["checks"]["fastest_duration_s"]
    assert c["value"] == 50.0 and not c["ok"]


def test_spread_pools_log_variances_by_hand():
    m = pd.DataFrame({"scenario": "scrub", "metric": "op_rate", "arm": ["a"] * 3 + ["b"] * 3,
                      "repeat": [1, 2, 3] * 2,
                      "value": np.exp([0.0, 0.2, -0.2, math.log(2), math.log(2) + 0.1, math.log(2) - 0.1])})
    s = pl.spread(m)
    # sums of squares 0.08 and 0.02 over 2 + 2 degrees of freedom
    assert s.loc[0, "sd_log"] == pytest.approx(math.sqrt(0.10 / 4))
    assert s.loc[0, "n_runs"] == 6
    # arm + repeat model: residuals 0, ±0.05 in each arm (the repeats move both arms alike but for ±0.05),
    # sum of squares 4 × 0.0025 over (2 − 1)(3 − 1) = 2 degrees of freedom
    assert s.loc[0, "sd_resid"] == pytest.approx(math.sqrt(0.01 / 2))


def test_spread_drops_an_arm_missing_from_a_repeat_not_every_repeat():
    """qos-v2's scrub: WPQ's deep scrub never ends in the client run in some repeats, so it has no rate
    there; the residual SD comes from the arms every repeat has (before: from no repeat at all, NaN, and
    the Reef pilot's scrub could not be powered)."""
    base = {"scenario": "scrub", "metric": "op_rate"}
    rows = [{**base, "arm": a, "repeat": r, "value": math.exp(v)} for a, vals in
            (("a", [0.0, 0.2, -0.2]), ("b", [math.log(2), math.log(2) + 0.1, math.log(2) - 0.1]))
            for r, v in zip((1, 2, 3), vals)]
    rows.append({**base, "arm": "wpq", "repeat": 2, "value": 5.0})  # one repeat only
    s = pl.spread(pd.DataFrame(rows))
    assert s.loc[0, "sd_resid"] == pytest.approx(math.sqrt(0.01 / 2))  # a and b as above
    assert s.loc[0, "n_runs"] == 7


def test_repeats_needed_against_statsmodels():
    f = facts()
    sp = pd.DataFrame({"scenario": ["scrub", "scrub"], "metric": ["op_rate", "client_iops"],
                       "sd_resid": [1.5, 0.08]})
    r = pl.repeats_needed(f, sp, min_repeats=3)
    assert set(r["scenario"]) == {"baseline", "scrub"}  # baseline: its two arms, no spread given
    r = r[r["scenario"] == "scrub"].set_index("metric")
    # paired by repeat block: the differences' SD is √2 × the residual SD
    d_rate = math.log(170 / 30) / (math.sqrt(2) * 1.5)
    d_iops = math.log(890 / 700) / (math.sqrt(2) * 0.08)
    for metric, d in (("op_rate", d_rate), ("client_iops", d_iops)):
        assert r.loc[metric, "effect_size"] == pytest.approx(d)
        n = math.ceil(TTestPower().solve_power(effect_size=d, alpha=0.05, power=0.8))
        assert r.loc[metric, "n_pairs"] == max(n, 2)
        assert r.loc[metric, "repeats"] == max(n, 3)
    assert r.loc["op_rate", "n_pairs"] > 3  # the case is not trivially at the minimum
    # no spread known: the seeds' minimum
    r2 = pl.repeats_needed(f, sp.iloc[:0], min_repeats=3)
    assert (r2["repeats"] == 3).all() and r2["effect_size"].isna().all()


def test_calibration_by_hand():
    f = facts()
    f.loc[f["arm"] == "wpq120", "op_rate"] = 120.0
    c = pl.calibration(f, {"scrub_objects": 12000, "snap_overwrite": 0.8})
    assert c["scrub"]["suggested"] == int(round(120 * 105, -2)) and c["scrub"]["now"] == 12000
    assert c["scrub"]["fastest_arm"] == "scrub/wpq120"
    f.loc[f["scenario"] == "scrub", "op"] = "snaptrim"
    f.loc[f["arm"] == "wpq120", "op_rate"] = 40.0
    c = pl.calibration(f, {"snap_objects": 5000, "snap_overwrite": 0.8})
    assert c["snaptrim"]["suggested"] == int(round(40 * 105 / 0.8, -2)) and c["snaptrim"]["pool_key"] == "snap_objects"


def test_machine_time_counts_runs_and_sittings():
    f = facts().assign(duration_s=[200.0, 200.0, 240.0, 260.0])
    mt = pl.machine_time(f, {"baseline": 10, "scrub": 20}, sitting_overhead_s=300, sitting_s=3600)
    total = 10 * 200 + 20 * 250
    assert mt["sittings"] == math.ceil(total / 3600)
    assert mt["total_s"] == pytest.approx(total + mt["sittings"] * 300)


# ----------------------------------------------------------------------------- the recorded pilot
ROUNDS = sorted(p for p in (ROOT / "data" / "raw" / "ceph-qos").glob("qos-v2-pilot*") if p.is_dir())


@pytest.fixture(scope="module")
def recorded():
    if not ROUNDS or not VERDICT.exists():
        pytest.skip("no recorded qos-v2 pilot in data/raw")
    from analysis.ingest.walk import ingest
    parts = [ingest(d, progress=False, jobs=1) for d in ROUNDS]
    keys = ("campaign", "scenario", "arm", "repeat", "kind", "metric", "job")
    def cat(name):
        return pd.concat([getattr(p, name).astype({c: str for c in keys if c in getattr(p, name)})
                                  for p in parts], ignore_index=True)
    return cat("files"), cat("summary"), cat("series")


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_recorded_pilot_facts_match_the_raw_files(recorded):
    """Queue depth, CPU and client IOPS in each run's window recomputed here from the raw JSONL and fio
    log (not through the tidy tables), on the timeline's clock (t = 0 at the fio_start mark)."""
    facts = pl.run_facts(*recorded)
    assert len(facts) == sum(1 for d in ROUNDS for _ in d.glob("*/*/rep-*/done"))
    for r in facts.itertuples(index=False):
        run = ROOT / "data" / "raw" / "ceph-qos" / r.campaign / r.scenario / r.arm / f"rep-{int(r.repeat):02d}"
        info = json.loads((run / "run.json").read_text())
        t0 = next(x["t"] for x in _jsonl(run / "timeline.jsonl.gz") if x.get("mark") == "fio_start")
        lo, hi = r.win_lo, r.win_hi
        su = [x for x in _jsonl(run / "sysutil.jsonl.gz") if lo <= x["t"] - t0 <= hi and "osd" in x]
        # per sample: ops queued summed over the OSDs that answered, ÷ their number (a failed sample is
        # missing, not zero)
        got = [[o["queued"] for o in x["osd"].values() if o["queued"] is not None] for x in su]
        q = [sum(g) / len(g) for g in got if g]
        assert r.queue_per_osd == pytest.approx(float(np.median(q)), abs=1e-9), run
        cpu = [np.mean(list(x["cpu"].values())) for x in su]
        assert r.cpu_busy == pytest.approx(float(np.mean(cpu)), rel=1e-6), run
        off = info["anchors"]["fio_t0_unix"] - info["anchors"]["fio_spawn_unix"]
        with gzip.open(run / "client_iops.1.log.gz", "rt") as f:
            log = pd.read_csv(f, header=None, usecols=[0, 1], names=["ms", "v"])
        t = (log["ms"] / 1000 + round(off, 3)).round(0)
        per_s = log.groupby(t)["v"].sum()
        inside = per_s[(per_s.index >= lo) & (per_s.index <= hi)]
        assert r.client_iops == pytest.approx(inside.mean(), rel=1e-9), run
        if r.scenario != "baseline":  # before the operation, after the 10 s warm-up
            before = per_s[(per_s.index >= 10) & (per_s.index < r.op_start)]
            assert len(before) >= 8 and r.client_iops_pre == pytest.approx(before.mean(), rel=1e-9), run
        # the run really was throttled, every OSD thread checked, and nothing else ran beside it
        assert info["throttle"]["read_iops"] == 300 and len(info["throttle"]["threads_checked"]) == 4
        assert info["cpu"]["outside_cpu_frac"] < 0.15 and not info["steal_flagged"]


def test_shipped_verdict_is_what_the_recorded_pilot_says(recorded):
    """pilot.json is reproduced from the shipped pilot rounds and the spread it recorded: each scenario's
    verdict, failing checks, round and recommended repeats."""
    shipped = json.loads(VERDICT.read_text())
    spread = pd.DataFrame(shipped["spread_from"])
    from capture.ceph import campaign as cp
    doc = cp.load(ROOT / "capture" / "campaigns" / "qos-v2.yaml")
    again = pl.evaluate(*recorded, doc, spread, lambda rep: cp.runs_per_scenario(doc, rep))
    assert again["pilot_rounds"] == shipped["pilot_rounds"] == [d.name for d in ROUNDS]
    assert set(again["scenarios"]) == set(shipped["scenarios"])
    for s, v in shipped["scenarios"].items():
        w = again["scenarios"][s]
        assert (w["go"], w["round"], w["repeats_recommended"]) == (v["go"], v["round"], v["repeats_recommended"]), s
        assert [k for k, c in w["checks"].items() if not c["ok"]] == [k for k, c in v["checks"].items() if not c["ok"]]
        for k, c in v["checks"].items():
            assert w["checks"][k]["value"] == pytest.approx(c["value"]), (s, k)
    for k in ("machine_time_planned", "machine_time_recommended"):
        assert again[k]["total_s"] == pytest.approx(shipped[k]["total_s"]), k
    for s, v in shipped["scenarios"].items():
        w = again["scenarios"][s]
        for arm, facts_ in v["arms"].items():
            for k, x in facts_.items():
                y = w["arms"][arm][k]
                assert y == x if x is None or isinstance(x, (str, bool)) else y == pytest.approx(x), (s, arm, k)


def test_regime_table_by_hand():
    f = facts()
    t = pl.regime_table(f).set_index("scenario")
    assert list(t.index) == ["scrub"]  # the baseline has no operation
    r = t.loc["scrub"]
    assert (r["runs"], r["arms"]) == (2, 2)
    assert r["cpu_busy"] == pytest.approx((0.20 + 0.15) / 2) and r["queue_per_osd"] == pytest.approx(10.5)
    assert r["op_rate_spread"] == pytest.approx(170 / 30)
    f["queue_per_osd"] = np.nan  # a campaign recorded before the op-queue probe
    assert np.isnan(pl.regime_table(f)["queue_per_osd"].iloc[0])


def test_regime_figure_has_its_id_and_marks_what_was_not_recorded():
    from analysis.figures import qos
    f = pd.concat([facts(), facts().assign(campaign="old", queue_per_osd=np.nan)], ignore_index=True)
    fig = qos.regime(f)
    assert fig.get_label() == qos.REGIME
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert texts == ["not recorded"]
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_arm_summary_medians_count_ended_runs_and_the_drop_within_runs():
    """Hand-made run_facts rows: two runs of one arm, one ended and one not, and a baseline run left out."""
    f = pd.DataFrame({"scenario": ["scrub", "scrub", "baseline"], "arm": ["wpq"] * 3, "op": ["scrub", "scrub", None],
                      "ended_in_client": [True, False, False], "op_duration": [60.0, np.nan, np.nan],
                      "op_rate": [100.0, 20.0, np.nan], "queue_per_osd": [30.0, 34.0, 31.0],
                      "cpu_busy": [0.1, 0.3, 0.1], "client_iops": [600.0, 700.0, 800.0],
                      "client_iops_pre": [800.0, 700.0, np.nan]})
    t = pl.arm_summary(f)
    assert list(t.index) == [("scrub", "wpq")]
    r = t.iloc[0]
    assert r["runs"] == 2 and r["ended"] == 1 and r["op_s"] == 60.0 and r["op_rate"] == pytest.approx(60.0)
    assert r["queued"] == pytest.approx(32.0) and r["cpu"] == pytest.approx(0.2)
    assert r["drop_pct"] == pytest.approx(12.5)  # median of 25 % and 0 %
    assert list(pl.client_drop_pct(f).round(6)[:2]) == [25.0, 0.0]


def test_op_rates_by_hand():
    """Objects/s between the operation's start and the window's end, timeline rows summed per time: scrub
    counts up from 0, snaptrim (job 'snap') and recovery (degraded + misplaced) count down from their
    value at the start (or the first sample); a run without an operation or window gets NaN."""
    keys = lambda c, s, a: {"campaign": c, "scenario": s, "arm": a, "repeat": "1"}  # noqa: E731
    rows = []
    for t, v in [(0, 0), (10, 40), (10, 10), (20, 90), (40, 200)]:  # scrub: two rows at t=10 → 50
        rows.append({**keys("c", "scrub", "x"), "metric": "objects_scrubbed", "job": "pg", "t_s": t, "value": v})
    for t, v in [(5, 300), (15, 240), (25, 100)]:
        rows.append({**keys("c", "snaptrim", "x"), "metric": "objects", "job": "snap", "t_s": t, "value": v})
        rows.append({**keys("c", "snaptrim", "x"), "metric": "objects", "job": "data", "t_s": t, "value": 7})
    for t, deg, mis in [(0, 50, 30), (10, 20, 10), (30, 0, 0)]:
        rows.append({**keys("c", "recovery", "x"), "metric": "objects_degraded", "job": "", "t_s": t, "value": deg})
        rows.append({**keys("c", "recovery", "x"), "metric": "objects_misplaced", "job": "", "t_s": t, "value": mis})
    se = pd.DataFrame(rows).assign(kind="ceph-pg-timeline")
    runs = pd.DataFrame([{**keys("c", "scrub", "x"), "op": "scrub", "op_start": 5.0, "win_hi": 20.0},
                         {**keys("c", "snaptrim", "x"), "op": "snaptrim", "op_start": 15.0, "win_hi": 25.0},
                         {**keys("c", "recovery", "x"), "op": "recovery", "op_start": 2.0, "win_hi": 10.0},
                         {**keys("c", "baseline", "x"), "op": None, "op_start": np.nan, "win_hi": np.nan}])
    got = pl._op_rates(se, runs)
    # scrub: 0 at 5 s, 90 at 20 s → 90/15; snaptrim: 240 → 100 over 10 s; recovery: 80 at 0 s (≤ 2) → 30 at 10 s
    assert got[:3] == pytest.approx([90 / 15, 140 / 10, 50 / 8]) and np.isnan(got[3])
    # a scrub whose first sample comes after its start counts from 0, not from that sample
    runs.loc[0, "op_start"] = -1.0
    assert pl._op_rates(se, runs)[0] == pytest.approx(90 / 21)

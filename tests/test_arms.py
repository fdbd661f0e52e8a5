"""analysis.stats.arms: one row per run and per-arm medians, on a hand-made summary table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats.arms import arm_medians, run_table


def _rows(scenario, arm, repeat, fio, timeline=(), **facts):
    base = {"campaign": "c", "scenario": scenario, "arm": arm, "repeat": str(repeat),
            "op_queue": "wpq", "profile": None, **facts}
    out = []
    for ddir, iops, n, mean_ns, p99_ns in fio:
        for metric, v in (("iops", iops), ("total_ios", n), ("clat_mean", mean_ns), ("clat_p99", p99_ns),
                          ("clat_max", 9e9)):
            out.append({**base, "kind": "fio-json", "job": "client", "ddir": ddir, "metric": metric,
                        "value": v})
    for pool, metric, v in timeline:
        out.append({**base, "kind": "ceph-pg-timeline", "job": pool, "ddir": "", "metric": metric,
                    "value": v})
    return out


def test_run_table_pools_directions_and_joins_durations():
    rows = (_rows("snaptrim", "wpq", 1, [("write", 300.0, 18000, 40e6, 90e6), ("read", 100.0, 6000, 20e6, 50e6)],
                  [("snap", "snaptrim_duration", 12.5), ("snap", "snaptrim_rate", 99.0)])
            + _rows("baseline", "wpq", 2, [("write", 700.0, 42000, 22e6, 95e6)], redone="1"))
    t = run_table(pd.DataFrame(rows)).set_index(["scenario", "repeat"])
    snap = t.loc[("snaptrim", 1)]
    assert snap["iops"] == pytest.approx(400.0)
    # IO-weighted: (18000*40 + 6000*20) / 24000 = 35 ms
    assert snap["clat_mean_ms"] == pytest.approx(35.0)
    assert snap["clat_p99_write_ms"] == pytest.approx(90.0) and snap["clat_p99_read_ms"] == pytest.approx(50.0)
    assert snap["snaptrim_duration"] == pytest.approx(12.5) and np.isnan(snap["scrub_duration"])
    base = t.loc[("baseline", 2)]
    assert base["iops"] == pytest.approx(700.0) and base["clat_mean_ms"] == pytest.approx(22.0)
    assert np.isnan(base["clat_p99_read_ms"]) and base["redone"] == "1"
    assert t.index.get_level_values("repeat").dtype == np.int64


def test_arm_medians_count_runs_and_runs_with_a_duration():
    rows = []
    for rep, (iops, dur) in enumerate([(100.0, 10.0), (300.0, None), (200.0, 30.0)], 1):
        tl = [] if dur is None else [("scrub", "scrub_duration", dur)]
        rows += _rows("scrub", "wpq", rep, [("write", iops, iops * 60, 5e6, 9e6)], tl)
    m = arm_medians(run_table(pd.DataFrame(rows))).loc[("scrub", "wpq")]
    assert m["n"] == 3 and m["iops"] == pytest.approx(200.0)
    assert m["scrub_duration"] == pytest.approx(20.0) and m["n_scrub_duration"] == 2


def test_figures_carry_their_ids_and_one_panel_per_scenario():
    import matplotlib
    matplotlib.use("Agg")
    from analysis.figures import qos

    rows = []
    for rep in (1, 2):
        rows += _rows("baseline", "balanced", rep, [("write", 100.0 * rep, 6000, 5e6, 9e6)])
        rows += _rows("baseline", "wpq", rep, [("write", 150.0, 9000, 4e6, 8e6)])
        rows += _rows("scrub", "wpq", rep, [("write", 90.0, 5400, 6e6, 9e6)], [("scrub", "scrub_duration", 20.0 + rep)])
        rows += _rows("snaptrim", "custom", rep, [("write", 90.0, 5400, 6e6, 9e6)],
                      [("snap", "snaptrim_duration", 8.0)])
    runs = run_table(pd.DataFrame(rows))
    f = qos.by_arm(runs, "iops", "client IOPS", qos.CLIENT_IOPS)
    assert f.get_label() == "qos-client-iops-by-arm"
    shown = [ax for ax in f.axes if ax.get_visible()]
    assert [ax.get_title() for ax in shown] == ["baseline", "scrub", "snaptrim"]
    # WPQ first, then the profiles; bars are the medians
    assert [t.get_text() for t in shown[0].get_xticklabels()] == ["wpq", "balanced"]
    assert [p.get_height() for p in shown[0].patches] == pytest.approx([150.0, 150.0])
    d = qos.background_durations(runs)
    titles = [ax.get_title() for ax in d.axes if ax.get_visible()]
    assert d.get_label() == qos.BACKGROUND_DURATIONS and titles == ["scrub · scrub", "snaptrim · snaptrim"]
    assert [p.get_height() for p in [ax for ax in d.axes if ax.get_visible()][0].patches] == pytest.approx([21.5])


def test_client_during_moves_fio_time_onto_the_timeline_clock():
    from analysis.stats.arms import client_during

    keys = {"campaign": "c", "scenario": "scrub", "arm": "wpq", "repeat": "1"}
    summary = pd.DataFrame([
        {**keys, "kind": "ceph-pg-timeline", "job": "scrub", "ddir": "", "metric": "scrub_start", "value": 10.0},
        {**keys, "kind": "ceph-pg-timeline", "job": "scrub", "ddir": "", "metric": "scrub_duration", "value": 5.0},
        # a second run whose scrub never ended: no duration, so it is left out
        {**keys, "repeat": "2", "kind": "ceph-pg-timeline", "job": "scrub", "ddir": "", "metric": "scrub_start",
         "value": 10.0}])
    # fio's t=0 is 0.5 s after the spawn: fio t 9.6 → 10.1 (inside), 14.6 → 15.1 (outside), 14.4 → 14.9 (in)
    t = np.array([1.0, 9.4, 9.6, 12.0, 14.4, 14.6, 30.0])
    v = np.array([1, 1, 4, 4, 4, 1, 1], dtype=float) * 1e6
    rows = [{**keys, "kind": "fio-log", "job": "client", "ddir": "write", "metric": "clat", "t_s": ti,
             "value": vi, "fio_t0_after_spawn_s": "0.5"} for ti, vi in zip(t, v)]
    rows.append({**keys, "repeat": "2", "kind": "fio-log", "job": "client", "ddir": "write", "metric": "clat",
                 "t_s": 12.0, "value": 9e6, "fio_t0_after_spawn_s": "0.5"})
    d = client_during(pd.DataFrame(rows), summary, "scrub")
    assert len(d) == 1
    r = d.iloc[0]
    assert r["repeat"] == 1 and r["ddir"] == "write" and r["windows"] == 3
    assert r["during"] == pytest.approx(4.0) and r["outside"] == pytest.approx(1.0)


def test_op_windows_censor_unfinished_operations_and_keep_a_pre_operation_reference():
    """Hand-worked: fio's t0 is 0.4 s after the spawn, read and write windows summed per second."""
    from analysis.stats.arms import op_windows

    def keys(scen, rep):
        return {"campaign": "c", "scenario": scen, "arm": "wpq", "repeat": str(rep)}
    def tl(scen, rep, metric, v):
        return {**keys(scen, rep), "kind": "ceph-pg-timeline", "job": "scrub", "ddir": "",
                                       "metric": metric, "value": v}
    summary = pd.DataFrame([tl("scrub", 1, "scrub_start", 20.0), tl("scrub", 1, "scrub_duration", 30.0),
                            tl("scrub", 2, "scrub_start", 20.0),                   # never ended
                            tl("baseline", 1, "pool_objects", 1.0)])               # no operation
    # client: 100 IOPS write + 50 read a second before the operation, 60 + 30 during, 100 + 50 after it
    rows = []
    for scen, rep in (("scrub", 1), ("scrub", 2), ("baseline", 1)):
        for t in np.arange(1.0, 60.0):        # fio's clock; timeline t = t + 0.4 → rounds to t
            during = scen == "scrub" and 20 <= t <= (50 if rep == 1 else 99)
            for ddir, v in (("write", 60.0 if during else 100.0), ("read", 30.0 if during else 50.0)):
                rows.append({**keys(scen, rep), "kind": "fio-log", "job": "client", "ddir": ddir, "metric": "iops",
                             "t_s": t, "value": v, "fio_t0_after_spawn_s": "0.4"})
    w = op_windows(summary, pd.DataFrame(rows)).set_index(["scenario", "repeat"])
    done, cens, base = w.loc[("scrub", "1")], w.loc[("scrub", "2")], w.loc[("baseline", "1")]
    assert done["op"] == "scrub" and done["ended_in_client"] and (done["win_lo"], done["win_hi"]) == (20.0, 50.0)
    assert done["client_iops"] == pytest.approx(90.0) and done["client_iops_pre"] == pytest.approx(150.0)
    assert done["pre_windows"] == 10 and done["client_end"] == 59.0
    # unfinished: censored at the client's end (59 s), still all at the during level
    assert not cens["ended_in_client"] and np.isnan(cens["op_duration"]) and cens["win_hi"] == 59.0
    assert cens["client_iops"] == pytest.approx(90.0) and cens["client_iops_pre"] == pytest.approx(150.0)
    # no operation: the client after the warm-up, no pre-operation reference
    assert base["op"] is None and (base["win_lo"], base["win_hi"]) == (10.0, 59.0)
    assert base["client_iops"] == pytest.approx(150.0) and np.isnan(base["client_iops_pre"])
    assert base["pre_windows"] == 0


def test_during_and_scrub_tuning_tables_group_by_value():
    from analysis.stats.arms import during_table, scrub_tuning_table

    rows = []
    for rep, dur in ((1, 30.0), (2, 50.0)):
        rows += _rows("scrub", "hco", rep, [("write", 700.0 + rep, 42000, 20e6, 60e6)],
                      [("scrub", "scrub_duration", dur)], max_scrubs="5", scrub_cost="52428800",
                      requested_scrub_priority="5")
        rows += _rows("scrub", "hco-tuned", rep, [("write", 600.0, 36000, 25e6, 90e6)],
                      [("scrub", "scrub_duration", 20.0)], max_scrubs="10", scrub_cost="52428800",
                      requested_scrub_priority="5")
    runs = run_table(pd.DataFrame(rows))
    runs["profile"] = "high_client_ops"
    during = pd.DataFrame({"campaign": "c", "scenario": "scrub", "arm": ["hco", "hco", "hco-tuned", "hco-tuned"],
                           "repeat": [1, 2, 1, 2], "ddir": "write", "during": [30.0, 50.0, 25.0, 27.0],
                           "outside": [20.0, 20.0, 25.0, 25.0], "windows": [10, 20, 5, 5], "op": "scrub"})
    d = during_table(during).loc[("scrub", "scrub", "hco")]
    assert d["n"] == 2 and d["during"] == pytest.approx(40.0) and d["ratio"] == pytest.approx(2.0)
    t = scrub_tuning_table(runs, during)
    assert list(t.index) == [("high_client_ops", "max_scrubs=10 cost=50MiB prio=5"),
                             ("high_client_ops", "max_scrubs=5 cost=50MiB prio=5")]
    base = t.loc[("high_client_ops", "max_scrubs=5 cost=50MiB prio=5")]
    assert base["n"] == 2 and base["iops"] == pytest.approx(701.5) and base["scrub_duration"] == pytest.approx(40.0)
    assert base["clat_during_scrub_ms"] == pytest.approx(40.0)
    assert t.loc[("high_client_ops", "max_scrubs=10 cost=50MiB prio=5"), "clat_during_scrub_ms"] == pytest.approx(26.0)


def test_campaign_conclusion_names_best_worst_arms_and_the_regime_against_the_gate():
    from analysis.stats.arms import campaign_conclusion
    med = pd.DataFrame({"scenario": ["scrub", "scrub", "scrub", "baseline"], "arm": ["wpq", "hco", "bal", "wpq"],
                        "n": [8, 8, 3, 3], "iops": [900.0, 1000.0, 800.0, 950.0],
                        "scrub_duration": [35.0, 41.0, 30.0, float("nan")]}).set_index(["scenario", "arm"])
    regime = pd.DataFrame({"campaign": ["c", "c", "pilot"], "scenario": ["scrub", "snaptrim", "scrub"],
                           "cpu_busy": [0.95, 0.91, 0.2], "queue_per_osd": [float("nan"), float("nan"), 31.5],
                           "op_rate_spread": [1.5, 1.3, 4.0]})
    text = campaign_conclusion(med, regime, "c", 0.6, 8)
    assert "22 runs of `c` in 2 scenarios × 3 arms (cells of 3–8 repeats)" in text
    assert "scrub: hco 1000 vs bal 800 (1.25×)." in text and "baseline:" not in text   # one arm: no comparison
    assert "scrub in scrub: bal 30.0 s, hco 41.0 s." in text
    assert "CPU busy while the operations ran 0.91–0.95 (gate ≤ 0.6), ops queued per OSD not recorded" in text
    assert "the OSDs were CPU-bound" in text and "`pilot`: CPU busy 0.20, ops queued per OSD 31.5" in text
    calm = campaign_conclusion(med, regime.assign(cpu_busy=0.3, queue_per_osd=20.0), "c", 0.6, 8)
    assert "within the pilot gate's limits" in calm and "CPU-bound" not in calm
    shallow = campaign_conclusion(med, regime.assign(cpu_busy=0.3, queue_per_osd=2.0), "c", 0.6, 8)
    assert "the OSDs' queues were shallow" in shallow and "CPU-bound" not in shallow

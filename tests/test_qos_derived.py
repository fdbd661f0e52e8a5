"""analysis.stats.qos_derived and analysis.stats.reconcile on real captured runs and hand-made values.

The run checks read the shipped raw files a second way (gzip + json/csv here) and compare."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.ingest.walk import ingest
from analysis.stats import qos_derived as qd
from analysis.stats import reconcile as rc

RUN = Path(__file__).resolve().parents[1] / "data" / "raw" / "ceph-qos" / "qos-2026" / "snaptrim" / "wpq" / "rep-01"


@pytest.fixture(scope="module")
def one_run():
    r = ingest(RUN, progress=False)
    return r, qd.run_metrics(r.summary, r.series)


def test_run_metrics_agree_with_fio_json_read_directly(one_run):
    _, m = one_run
    v = m.set_index("metric")["value"]
    job = json.load(gzip.open(RUN / "fio.json.gz"))["jobs"][0]
    rd, wr = job["read"], job["write"]
    assert v["client_iops"] == pytest.approx(rd["iops"] + wr["iops"], rel=1e-12)
    assert v["client_bw"] == pytest.approx((rd["bw_bytes"] + wr["bw_bytes"]) / 2**20, rel=1e-12)
    clat = (rd["clat_ns"]["mean"] * rd["total_ios"] + wr["clat_ns"]["mean"] * wr["total_ios"]) / (rd["total_ios"] + wr["total_ios"])
    assert v["clat_mean"] == pytest.approx(clat / 1e6, rel=1e-9)
    assert v["clat_p99"] == pytest.approx(wr["clat_ns"]["percentile"]["99.000000"] / 1e6)
    assert v["snaptrim_rate"] * v["snaptrim_duration"] == pytest.approx(v["snaptrim_objects"])
    assert (m["unit"][m["metric"] == "clat_during"] == "ms").all()


def test_clat_during_is_the_iops_weighted_mean_of_the_windows_inside_the_snaptrim(one_run):
    r, m = one_run
    s = r.summary.set_index("metric")["value"]
    start, dur = s["snaptrim_start"], s["snaptrim_duration"]
    anchors = json.load(open(RUN / "run.json"))["anchors"]  # fio's log t=0, seconds after its spawn (timeline t=0)
    t0 = round(anchors["fio_t0_unix"] - anchors["fio_spawn_unix"], 3)

    def log(name):
        d = pd.read_csv(RUN / f"client_{name}.1.log.gz", header=None, usecols=[0, 1, 2], names=["t_ms", "v", "dir"])
        t = d["t_ms"] / 1000 + t0
        return d[(t >= start) & (t <= start + dur)].groupby("dir")["v"].mean()

    lat, iops = log("clat"), log("iops")  # fio ddir codes: 0 read, 1 write
    expected = (lat * iops).sum() / iops.sum() / 1e6
    v = m.set_index("metric")["value"]
    assert v["clat_during"] == pytest.approx(expected, rel=1e-9)
    assert v["client_iops_during"] == pytest.approx(iops.sum(), rel=1e-9)


def test_background_rate_series_integrates_to_the_objects_trimmed(one_run):
    r, m = one_run
    rate = qd.background_rate_series(r.series, "snaptrim", lag=1)
    dt = rate["t_s"].diff().fillna(0)
    trimmed = (rate["value"] * dt).sum()
    v = m.set_index("metric")["value"]
    assert trimmed == pytest.approx(v["snaptrim_objects"], abs=1)  # no negative steps after the fill


def test_our_cell_maps_tests_and_tuned_arms():
    assert rc.our_cell("scrub_cost20m", "wpq", "") == ("scrub", "wpq_scrubprio120", "")
    assert rc.our_cell("scrub_cost20m", "mclock_scheduler", "balanced") == ("scrub", "balanced_cost20m", "")
    assert rc.our_cell("scrub_maxscrubs10", "mclock_scheduler", "high_client_ops")[1] == "high_client_ops_maxscrubs10"
    assert rc.our_cell("scrub_recovery", "mclock_scheduler", "custom")[:2] == ("recovery_scrub", "custom")
    assert rc.our_cell("baseline", "", "")[2] == "no scheduler stated: WPQ assumed"
    assert rc.our_cell("scaled_recovery", "mclock_scheduler", "balanced")[0] is None


def test_compare_runs_paired_by_repeat_and_verdicts():
    ref = pd.Series([100.0, 200.0, 400.0], index=[1, 2, 3])
    own = ref * np.array([1.10, 1.12, 1.08])  # +10 % in every repeat block despite the drift
    ch, p, how = rc.compare_runs(own, ref)
    assert ch == pytest.approx((own.median() / ref.median() - 1) * 100) and how.startswith("paired by repeat")
    logs = np.log([1.10, 1.12, 1.08])  # paired t on log ratios: mean / (sd / √3), 2 d.f.
    from scipy import stats
    assert p == pytest.approx(2 * stats.t.sf(logs.mean() / (logs.std(ddof=1) / np.sqrt(3)), 2))
    assert p < 0.05
    _, p_w, how_w = rc.compare_runs(own.iloc[:2], ref.iloc[2:].set_axis([9]))
    assert how_w.startswith("Welch") is False and np.isnan(p_w)  # 2 vs 1 runs: too few
    # reconcile's verdicts are the rules of analysis.stats.verdicts on BH q over its tests and its CI
    t = pd.DataFrame({"test_used": ["paired", "paired", "paired", ""], "p": [p, p, 0.4, np.nan],
                      "ours": [ch, ch, 3.0, 5.0], "ci_low": [8.0, 8.0, -5.0, np.nan], "ci_high": [12.0, 12.0, 11.0, np.nan],
                      "claim": [10.0, -10.0, 10.0, 5.0], "verdict": ["", "", "", "too few runs for a test"]})
    assert list(rc._verdicts(t, 0.05)) == ["reproduced", "contradicted", "undecided", "too few runs for a test"]


def test_reconcile_absolute_and_relative_claims():
    metrics = pd.DataFrame(
        [("snaptrim", "wpq", r, "client_iops", v) for r, v in zip([1, 2, 3], [100.0, 110.0, 90.0])]
        + [("snaptrim", "high_client_ops", r, "client_iops", v) for r, v in zip([1, 2, 3], [120.0, 130.0, 100.0])],
        columns=["scenario", "arm", "repeat", "metric", "value"])
    pub = pd.DataFrame([
        dict(seed="s", figure="Figure 1", test="snaptrim", scheduler="wpq", profile="", metric="client_iops",
             kind="measured", printed="17520.63", value=17520.63, unit="IOPS", relation="", ref_test="",
             ref_scheduler="", ref_profile="", ref_metric=""),
        dict(seed="s", figure="Figure 1", test="snaptrim", scheduler="mclock_scheduler", profile="high_client_ops",
             metric="client_iops", kind="derived", printed="10%", value=10.0, unit="%", relation="change_pct",
             ref_test="snaptrim", ref_scheduler="wpq", ref_profile="", ref_metric="client_iops"),
        dict(seed="s", figure="Figure 20", test="scaled_recovery", scheduler="mclock_scheduler", profile="balanced",
             metric="client_iops", kind="measured", printed="~60350", value=60350.0, unit="IOPS", relation="",
             ref_test="", ref_scheduler="", ref_profile="", ref_metric="")])
    r = rc.reconcile(pub, metrics)
    assert r.loc[0, "ours"] == 100.0 and r.loc[0, "ratio"] == pytest.approx(100 / 17520.63)
    assert r.loc[1, "ours"] == pytest.approx(20.0) and r.loc[1, "ratio"] == pytest.approx(2.0)
    # +20 % over 3 repeats: the bootstrap CI of three runs a side holds the published +10 % (q ≥ α: undecided)
    assert r.loc[1, "verdict"] in ("reproduced", "undecided") and r.loc[1, "n"] == 3
    assert r.loc[1, "ci_low"] <= 10 <= r.loc[1, "ci_high"]
    assert r.loc[2, "verdict"] == "not reproducible" and "scaled cluster" in r.loc[2, "note"]


def test_seed_figures_published_and_measured_versions():
    import matplotlib
    matplotlib.use("Agg")
    from analysis.published import qos as pq
    from analysis.figures import qos_studies as qf
    pub = pq.load(pq.FILES[pq.PART2_SEED])
    assert len({f.id for f in qf.FIGURES}) == len(qf.FIGURES) == 23 + 1 + 15  # part 1 has Figure 8a
    fig = qf.draw("qos-part2-chart01", "published", published=pub)
    assert fig.get_label() == "qos-part2-chart01-published"
    implied = sorted(p.get_height() for p in fig.axes[0].patches if p.get_hatch() == "..")
    # the text: WPQ −27 % and high_client_ops −24 % against the baseline (stated as "around 15K" and, in
    # its table, 15007.16965 IOPS: the precise statement is used), no absolute values
    assert implied == pytest.approx([15007.16965 * 0.73, 15007.16965 * 0.76])
    assert qf.draw("qos-part2-chart03", "published", published=pub) is None      # a time series: ours only
    assert qf.draw("qos-part1-fig20", "measured", runs=pd.DataFrame()) is None   # the 975-OSD cluster
    metrics = pd.DataFrame([("scrub", a, r, "client_iops", v) for a in ("wpq", "high_client_ops")
                            for r, v in zip([1, 2, 3], [100.0, 120.0, 110.0])],
                           columns=["scenario", "arm", "repeat", "metric", "value"])
    fig = qf.draw("qos-part2-chart08", "measured", runs=metrics)
    bars = [p.get_height() for p in fig.axes[0].patches if p.get_height() > 0]
    assert bars == [110.0]  # WPQ's median; high_client_ops_maxscrubs10 has no run here


def test_plotly_version_shows_the_same_values_as_the_static_one():
    from analysis.published import qos as pq
    from analysis.figures import qos_studies as qf
    pub = pq.load(pq.FILES[pq.PART1_SEED])
    data = qf.bar_data(qf.BY_ID["qos-part1-fig05"], ["snaptrim_rate", "snaptrim_duration"], "published", pub, None,
                       "snaptrim")
    # Figure 5 as the text states it: WPQ 671 objects/s and 121.83 s; high_client_ops 747 / 111.34;
    # balanced ~804 / 100; high_recovery_ops 766 / 108
    assert data.pivot(index="cell", columns="metric", values="value").loc[
        ["wpq", "high_client_ops", "balanced", "high_recovery_ops"]].to_numpy().tolist() == [
        [121.83, 671.0], [111.34, 747.0], [100.0, 804.0], [108.0, 766.0]]
    fig = qf.draw_plotly("qos-part1-fig05", "published", published=pub)
    assert fig.layout.meta["id"] == "qos-part1-fig05-published"
    assert [list(t.y) for t in fig.data] == [[671.0, 747.0, 804.0, 766.0], [121.83, 111.34, 100.0, 108.0]]
    # every axis names its quantity and unit, as the static figure does
    assert (fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text) == ("snaptrim rate (objects/s)",
                                                                          "snaptrim duration (s)")
    assert fig.layout.xaxis.title.text == "scheduler / profile" and fig.layout.width is None
    assert qf.draw_plotly("qos-part1-fig06", "published", published=pub) is None  # time series: ours only


def test_our_cell_takes_the_studys_allocations_where_the_campaign_has_them():
    arms = {"wpq", "high_client_ops", "seed_high_client_ops", "high_client_ops_maxscrubs10", "custom"}
    scen, arm, note = rc.our_cell("scrub", "mclock_scheduler", "high_client_ops", arms)
    assert (scen, arm) == ("scrub", "seed_high_client_ops") and "study's own allocations" in note
    # no seed_ variant of a tuned arm or of custom: the arm itself
    assert rc.our_cell("scrub_maxscrubs10", "mclock_scheduler", "high_client_ops", arms)[1] == \
        "high_client_ops_maxscrubs10"
    assert rc.our_cell("scrub_custom", "mclock_scheduler", "custom", arms)[1] == "custom"
    assert rc.our_cell("scrub", "wpq", "", arms)[1] == "wpq"
    # a profile-less mClock quantity is the default profile, seeded too
    assert rc.our_cell("scrub", "mclock_scheduler", "", arms)[1] == "seed_high_client_ops"


def test_claim_cells_never_pair_a_built_in_profile_with_the_studys_allocations():
    from types import SimpleNamespace as Row
    arms = {"scrub": {"wpq", "high_client_ops", "seed_high_client_ops", "high_client_ops_maxscrubs10"}}
    tuned = Row(test="scrub_maxscrubs10", scheduler="mclock_scheduler", profile="high_client_ops",
                ref_test="scrub", ref_scheduler="mclock_scheduler", ref_profile="high_client_ops")
    own, ref = rc.claim_cells(tuned, arms)
    assert (own[1], ref[1]) == ("high_client_ops_maxscrubs10", "high_client_ops")
    vs_wpq = Row(test="scrub", scheduler="mclock_scheduler", profile="high_client_ops",
                 ref_test="scrub", ref_scheduler="wpq", ref_profile="")
    own, ref = rc.claim_cells(vs_wpq, arms)
    assert (own[1], ref[1]) == ("seed_high_client_ops", "wpq")
    # the custom profile is no built-in: custom against a profile keeps the study's allocations
    vs_custom = Row(test="scrub_custom", scheduler="mclock_scheduler", profile="custom",
                    ref_test="scrub", ref_scheduler="mclock_scheduler", ref_profile="high_client_ops")
    own, ref = rc.claim_cells(vs_custom, {"scrub": arms["scrub"] | {"custom"}})
    assert (own[1], ref[1]) == ("custom", "seed_high_client_ops")
    # without seed arms (the qos-2026 campaign) nothing changes; a row without reference has none
    own, ref = rc.claim_cells(vs_wpq, {"scrub": {"wpq", "high_client_ops"}})
    assert (own[1], ref[1]) == ("high_client_ops", "wpq")
    alone = Row(test="scrub", scheduler="mclock_scheduler", profile="balanced", ref_test=float("nan"))
    assert rc.claim_cells(alone, arms)[1] == (None, None, "")


V2_RUN = Path(__file__).resolve().parents[1] / "data" / "raw" / "ceph-qos" / "qos-v2" / "snaptrim" / "high_client_ops" / "rep-01"


def test_client_iops_during_the_operation_and_before_it_from_the_raw_log():
    """qos-v2 (throttled, randread QD 128, snaptrim requested 20 s in): client_iops_op / client_iops_pre
    recomputed from fio's 1 s IOPS log read with pandas, on the timeline's clock (run.json's anchors)."""
    r = ingest(V2_RUN, progress=False)
    m = qd.run_metrics(r.summary, r.series, windows=True).set_index("metric")["value"]
    assert "client_iops_op" not in qd.run_metrics(r.summary, r.series)["metric"].to_numpy()
    s = r.summary.set_index("metric")["value"]
    start, dur = s["snaptrim_start"], s["snaptrim_duration"]
    anchors = json.load(open(V2_RUN / "run.json"))["anchors"]
    t0 = round(anchors["fio_t0_unix"] - anchors["fio_spawn_unix"], 3)
    d = pd.read_csv(V2_RUN / "client_iops.1.log.gz", header=None, usecols=[0, 1], names=["t_ms", "v"])
    per_s = d.groupby((d["t_ms"] / 1000 + t0).round(0))["v"].sum()
    assert start + dur <= per_s.index.max() + 1  # this run's snaptrim ended inside the client run
    during = per_s[(per_s.index >= start) & (per_s.index <= start + dur)]
    pre = per_s[(per_s.index >= 10) & (per_s.index < start)]
    assert len(pre) >= 5 and len(during) > 30
    assert m["client_iops_op"] == pytest.approx(during.mean(), rel=1e-12)
    assert m["client_iops_pre"] == pytest.approx(pre.mean(), rel=1e-12)

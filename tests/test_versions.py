"""analysis.stats.versions: Pacific vs Reef allocations, contrasts, the release × arm interaction (against
statsmodels on a hand-made case) and the operator's table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.stats import versions as vs


def test_allocations_from_effective_in_shares_of_capacity():
    pac = {"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "custom",
           "osd_mclock_max_capacity_iops_hdd": "300.000000", "osd_mclock_max_capacity_iops_ssd": "300.000000",
           "osd_op_num_shards": "1",
           "osd_mclock_scheduler_client_res": "150", "osd_mclock_scheduler_client_wgt": "2",
           "osd_mclock_scheduler_client_lim": "999999",
           "osd_mclock_scheduler_background_recovery_res": "75", "osd_mclock_scheduler_background_recovery_wgt": "1",
           "osd_mclock_scheduler_background_recovery_lim": "300",
           "osd_mclock_scheduler_background_best_effort_res": "75",
           "osd_mclock_scheduler_background_best_effort_wgt": "1",
           "osd_mclock_scheduler_background_best_effort_lim": "90"}
    a = vs.allocations_from_effective(pac, "pacific").set_index("class")
    assert a.loc["client", "res_share"] == 0.5 and np.isnan(a.loc["client", "lim_share"])
    assert a.loc["background_recovery", "lim_share"] == 1.0
    assert a.loc["background_best_effort", "lim_share"] == pytest.approx(0.3)
    # 8 shards of 2500 IOPS: Pacific's 16 IOPS per shard is 128 of 2500 = 5.12 %
    eight = {**pac, "osd_op_num_shards": "8", "osd_mclock_max_capacity_iops_ssd": "2500",
             "osd_mclock_max_capacity_iops_hdd": "2500", "osd_mclock_scheduler_background_recovery_res": "16"}
    assert vs.allocations_from_effective(eight, "pacific").set_index("class").loc[
        "background_recovery", "res_share"] == pytest.approx(0.0512)
    reef = {"osd_op_queue": "mclock_scheduler", "osd_mclock_scheduler_client_res": "0.600000",
            "osd_mclock_scheduler_client_wgt": "2", "osd_mclock_scheduler_client_lim": "0.000000",
            "osd_mclock_scheduler_background_best_effort_res": "0.000000",
            "osd_mclock_scheduler_background_best_effort_wgt": "1",
            "osd_mclock_scheduler_background_best_effort_lim": "0.700000"}
    r = vs.allocations_from_effective(reef, "reef").set_index("class")
    assert r.loc["client", "res_share"] == 0.6 and np.isnan(r.loc["client", "lim_share"])
    assert r.loc["background_best_effort", "lim_share"] == 0.7
    assert vs.allocations_from_effective({"osd_op_queue": "wpq"}, "reef").empty
    with pytest.raises(ValueError, match="release"):
        vs.allocations_from_effective(reef, "quincy")


def test_read_run_configs_and_allocation_table(tmp_path):
    def put(camp, arm, rep, rel, eff):
        d = tmp_path / camp / "scrub" / arm / f"rep-{rep:02d}"
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"campaign": camp, "scenario": "scrub", "arm": arm, "repeat": rep,
                                                "osd_config": {"effective": eff},
                                                "cluster": {"versions": {"overall": {
                                                    f"ceph version {rel[1]} (abc) {rel[0]} (stable)": 6}}}}))
    pe = {"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "high_client_ops",
          "osd_mclock_max_capacity_iops_ssd": "300", "osd_op_num_shards": "1",
          "osd_mclock_scheduler_client_res": "150", "osd_mclock_scheduler_client_wgt": "2",
          "osd_mclock_scheduler_client_lim": "999999"}
    re_ = {"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "high_client_ops",
           "osd_mclock_scheduler_client_res": "0.6", "osd_mclock_scheduler_client_wgt": "2",
           "osd_mclock_scheduler_client_lim": "0"}
    for rep in (1, 2):
        put("v2", "hco", rep, ("pacific", "16.2.15"), pe)
        put("rf", "hco", rep, ("reef", "18.2.7"), re_)
    put("v2", "wpq", 1, ("pacific", "16.2.15"), {"osd_op_queue": "wpq"})
    put("other", "hco", 1, ("reef", "18.2.7"), re_)
    cfgs = vs.read_run_configs(tmp_path, ["v2", "rf"])
    assert len(cfgs) == 5 and set(cfgs["release"]) == {"pacific", "reef"}
    al = vs.allocations(cfgs)
    cl = al[al["class"] == "client"].set_index("release")
    assert cl.loc["pacific", "res_share"] == 0.5 and cl.loc["reef", "res_share"] == 0.6
    assert (al["runs"] == 2).all() and (al["variants"] == 1).all() and "wpq" not in set(al["arm"])
    t = vs.allocation_table(al)
    assert t.loc[("hco", "client"), "pacific"] == "0.50 / 2 / none"
    assert t.loc[("hco", "client"), "reef"] == "0.60 / 2 / none"


def test_release_contrast_ratio_and_ci():
    v = pd.DataFrame({"release": ["pacific"] * 3 + ["reef"] * 3, "scenario": "scrub", "arm": "wpq",
                      "metric": "op_rate", "value": [100.0, 110.0, 90.0, 200.0, 220.0, 180.0]})
    r = vs.release_contrast(v).iloc[0]
    assert r["ratio"] == pytest.approx(2.0) and r["lo"] < 2.0 < r["hi"] and r["p"] < 0.01
    assert (r["n_pacific"], r["n_reef"], r["median_reef"]) == (3, 3, 200.0)
    one = vs.release_contrast(v.iloc[[0, 3, 4]]).iloc[0]  # one Pacific run: a ratio, no test
    assert one["ratio"] == pytest.approx(np.exp(np.log([200, 220]).mean()) / 100) and np.isnan(one["p"])


def _hand_made() -> pd.DataFrame:
    """2 releases × 3 arms × 3 repeats; on Pacific arm b is 2× wpq, on Reef 1× (an interaction), arm c is
    0.5× on both; each block (release, repeat) has its own level; fixed, asymmetric noise."""
    rng = np.random.default_rng(7)
    rows = []
    eff = {("pacific", "wpq"): 1.0, ("pacific", "b"): 2.0, ("pacific", "c"): 0.5,
           ("reef", "wpq"): 1.0, ("reef", "b"): 1.0, ("reef", "c"): 0.5}
    for rel, lvl in (("pacific", 100.0), ("reef", 130.0)):
        for rep in (1, 2, 3):
            block = lvl * (1 + 0.1 * rep)
            for arm in ("wpq", "b", "c"):
                rows.append({"release": rel, "scenario": "scrub", "arm": arm, "repeat": rep, "metric": "op_rate",
                             "value": block * eff[(rel, arm)] * np.exp(rng.normal(0, 0.05))})
    return pd.DataFrame(rows)


def test_interaction_matches_statsmodels_on_a_hand_made_case():
    sm = pytest.importorskip("statsmodels.api")
    d = _hand_made()
    tests, terms = vs.interaction(d, ref="wpq")
    # statsmodels: the same model written out — block dummies, arm dummies, reef × arm dummies
    d = d.assign(block=d["release"] + "/" + d["repeat"].astype(str))
    X = pd.get_dummies(d["block"], dtype=float)
    for a in ("b", "c"):
        X[f"arm_{a}"] = (d["arm"] == a).astype(float)
    X0 = X.copy()
    for a in ("b", "c"):
        X[f"reef_{a}"] = ((d["arm"] == a) & (d["release"] == "reef")).astype(float)
    y = np.log(d["value"])
    full, restricted = sm.OLS(y, X).fit(), sm.OLS(y, X0).fit()
    F, p, dfn = full.compare_f_test(restricted)
    t = tests.iloc[0]
    assert (t["arms"], t["runs"], t["df_num"], t["df_den"]) == (3, 18, dfn, full.df_resid)
    assert t["F"] == pytest.approx(F, rel=1e-9) and t["p"] == pytest.approx(p, rel=1e-6)
    ci = full.conf_int(0.05)
    for a in ("b", "c"):
        row = terms.set_index("arm").loc[a]
        assert row["ratio"] == pytest.approx(np.exp(full.params[f"reef_{a}"]), rel=1e-9)
        assert row["p"] == pytest.approx(full.pvalues[f"reef_{a}"], rel=1e-6)
        assert (row["lo"], row["hi"]) == pytest.approx(tuple(np.exp(ci.loc[f"reef_{a}"])), rel=1e-9)
    # and it finds what was built in: b's effect halves on Reef, c's does not change
    b, c = terms.set_index("arm").loc["b"], terms.set_index("arm").loc["c"]
    assert b["ratio"] == pytest.approx(0.5, rel=0.15) and b["p"] < 0.001 and b["hi"] < 1
    assert c["lo"] < 1 < c["hi"] and c["p"] > 0.05
    assert b["effect_pacific"] == pytest.approx(2.0, rel=0.15) and b["effect_reef"] == pytest.approx(1.0, rel=0.15)


def test_interaction_needs_the_reference_and_a_shared_arm():
    d = _hand_made()
    assert vs.interaction(d[d["arm"] != "wpq"], ref="wpq")[0].empty
    assert vs.interaction(d[(d["release"] == "pacific") | (d["arm"] == "wpq")], ref="wpq")[0].empty


def test_operator_table_picks_the_fastest_and_the_cheapest_with_effects():
    rows = []
    for rel, arm, rate, drop in (("pacific", "wpq", 50, 36), ("pacific", "hco", 20, 5), ("reef", "wpq", 60, 35),
                                 ("reef", "hco", 25, 8)):
        for k, j in enumerate((-1, 0, 1)):
            rows.append({"release": rel, "arm": arm, "scenario": "scrub", "repeat": k + 1,
                         "op_rate": rate * (1 + 0.05 * j), "drop_pct": drop + j})
    rows.append({"release": "reef", "arm": "lonely", "scenario": "scrub", "repeat": 1, "op_rate": 999.0,
                 "drop_pct": 0.0})  # one run: not a candidate
    t = vs.operator_table(pd.DataFrame(rows)).set_index("criterion")
    f, c = t.loc["fastest"], t.loc["cheapest for the client"]
    assert f["best"] == "reef · wpq" and f["vs"] == "pacific · wpq"
    assert f["effect"] == pytest.approx(1.2, rel=0.01) and f["lo"] < 1.2 < f["hi"]
    assert c["best"] == "pacific · hco" and c["vs"] == "reef · hco" and c["effect"] == pytest.approx(-3.0)
    assert set(f["pareto"].split(", ")) == {"reef · wpq", "pacific · hco", "reef · hco"}


def test_claims_by_release_side_by_side():
    def row(camp, cid, verdict, direction=1.0):
        return {"campaign": camp, "claim_id": cid, "study": "part1", "published": 10.0, "direction": direction,
                "ours": 5.0, "verdict": verdict}
    t = pd.DataFrame([row("v2", "a", "reproduced"), row("rf", "a", "same direction, smaller"),
                      row("v2", "b", "same direction, larger"), row("rf", "b", "contradicted"),
                      row("v2", "c", "contradicted"), row("rf", "c", "reproduced"),
                      row("v2", "d", "contradicted"), row("rf", "d", "contradicted"),
                      row("v2", "e", "reproduced"), row("rf", "e", "undecided"),
                      row("v2", "f", "not measurable here", np.nan), row("rf", "f", "not measurable here", np.nan)])
    out = vs.claims_by_release(t, {"pacific": "v2", "reef": "rf"})
    assert out["holds on"].to_dict() == {"a": "both", "b": "pacific only", "c": "reef only", "d": "neither",
                                         "e": "undecided"}
    assert list(out.columns[:4]) == ["study", "published", "pacific", "ours_pacific"]


def test_release_values_long_table_from_facts_and_metrics():
    facts = pd.DataFrame({"release": ["pacific", "pacific", "reef"], "campaign": ["v2", "v2", "rf"],
                          "scenario": ["baseline", "scrub", "scrub"], "arm": "wpq", "repeat": ["1", "1", "1"],
                          "op_rate": [np.nan, 22.0, 42.0], "client_iops": [850.0, 830.0, np.nan]})
    metrics = pd.DataFrame({"release": "reef", "campaign": "rf", "scenario": "scrub", "arm": "wpq", "repeat": [1, 1],
                            "metric": ["clat_mean", "client_iops"], "value": [4.5, 600.0], "unit": ["ms", "IOPS"]})
    v = vs.release_values(facts, metrics).set_index(["release", "scenario", "metric"])["value"]
    assert v.to_dict() == {("pacific", "scrub", "op_rate"): 22.0, ("reef", "scrub", "op_rate"): 42.0,
                           ("pacific", "baseline", "client_iops"): 850.0, ("pacific", "scrub", "client_iops"): 830.0,
                           ("reef", "scrub", "clat_mean"): 4.5}
    assert (vs.release_values(facts, metrics)["repeat"] == "1").all()  # one key type for the blocks


def test_read_run_configs_names_a_broken_run_json(tmp_path):
    from analysis.ingest.base import IngestError
    d = tmp_path / "rf" / "scrub" / "wpq" / "rep-01"
    d.mkdir(parents=True)
    (d / "run.json").write_text('{"campaign": "rf",\n "arm": }\n')
    with pytest.raises(IngestError, match=r"rep-01/run.json:2: expected a JSON object"):
        vs.read_run_configs(tmp_path, ["rf"])


def test_conclusion_counts_interactions_claims_by_release_and_operator_winners():
    from analysis.stats.versions import conclusion
    tests = pd.DataFrame({"scenario": ["scrub", "snaptrim"], "metric": ["op_rate", "op_rate"], "p": [0.001, 0.4]})
    terms = pd.DataFrame({"scenario": ["scrub"] * 3, "metric": ["op_rate"] * 3, "arm": ["a", "b", "c"],
                          "effect_pacific": [2.0, 1.1, 1.0], "effect_reef": [1.0, 1.0, 1.0],
                          "ratio": [0.5, 0.91, 1.0], "lo": [0.4, 0.85, 0.9], "hi": [0.6, 0.97, 1.1],
                          "p": [0.001, 0.01, 0.9]})
    by = pd.DataFrame({"holds on": ["both", "neither", "both", "undecided"]})
    op = pd.DataFrame({"scenario": ["scrub", "snaptrim"], "criterion": ["fastest", "fastest"],
                       "best": ["reef · wpq", "pacific · a"], "vs": ["pacific · wpq", "reef · a"],
                       "effect": [1.3, 1.01], "unit": ["× op rate", "× op rate"], "p": [0.01, 0.6]})
    text = conclusion(tests, terms, by, op, 0.05)
    assert "rejects in 1 of 2 scenario × metric cells at α = 0.05 (scrub op_rate); 2 of 3 single arm terms differ" in text
    assert "The largest change: a in scrub op_rate, its effect against WPQ 2.00× on Pacific and 1.00× on Reef" in text
    assert "**The seeds' claims by release:** both 2; neither 1; undecided 1." in text
    assert "of 2 (operation, criterion) winners, 1 are told apart" in text and "scrub fastest: reef · wpq over pacific · wpq" in text

"""analysis.stats.claims: the studies' claims with a verdict, on hand-worked cases (expected p-values and powers
computed here with scipy/statsmodels from the known paired log differences), the CSV schema, the CLI, the
report section, and the real qos-2026 tables against analysis.stats.reconcile."""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from analysis.__main__ import main
from analysis.published.qos import COLUMNS as PUB_COLUMNS, PART1_SEED, PART2_SEED
from analysis.stats import claims as cl
from conftest import ROOT

EXPECTED_COLUMNS = ["campaign", "ceph_release", "study", "claim_id", "sentence", "published", "unit", "direction", "ours", "ci_low",
                    "ci_high", "test", "p", "n", "power_at_published", "repeats_needed", "verdict", "diagnosis",
                    "data_gap"]


# --- hand-made claims and runs ---------------------------------------------------------------------

def claim(figure, profile, value, *, test="snaptrim", kind="derived", metric="client_iops", seed=PART1_SEED,
          relation="change_pct", unit="%", ref_scheduler="wpq"):
    row = dict.fromkeys(PUB_COLUMNS, "")
    row.update(seed=seed, seed_line=1, figure=figure, test=test, scheduler="mclock_scheduler", profile=profile,
               metric=metric, printed=f"{value}", value=float(value), unit=unit, kind=kind, approx=0,
               sentence=f"{profile} is {value} {unit} ({figure})", origin="published")
    if kind == "derived":
        row.update(relation=relation, ref_test=test, ref_scheduler=ref_scheduler, ref_metric=metric)
    return row


REF = np.array([100.0, 200.0, 150.0])               # the WPQ runs, repeats 1..3
D_AB = np.array([0.10, 0.12, 0.14])                  # paired log ratios: mean 0.12, sd 0.02
D_CD = np.array([0.10, -0.10, 0.0])                  # mean 0, sd 0.1


def runs(scenario, arm, values):
    return [dict(scenario=scenario, arm=arm, repeat=r, metric="client_iops", value=v)
            for r, v in zip([1, 2, 3], values)]


@pytest.fixture(scope="module")
def hand():
    metrics = pd.DataFrame(runs("snaptrim", "wpq", REF) + runs("snaptrim", "high_client_ops", REF * np.exp(D_AB))
                           + runs("snaptrim", "balanced", REF * np.exp(D_CD)))
    pub = pd.DataFrame([
        claim("Figure 1", "high_client_ops", 10),          # A: +10 %, we see +12.7 %, significant → holds
        claim("Figure 1", "high_client_ops", -10),         # B: −10 %, we see +12.7 %, significant → contradicted
        claim("Figure 2", "balanced", -40),                # C: −40 %, we see 0, powered → contradicted
        claim("Figure 2", "balanced", 5),                  # D: +5 %, we see 0, underpowered → not significant
        claim("Figure 20", "balanced", -32, test="scaled_recovery"),                       # E: 975 OSDs
        claim("Chart 10", "custom", -20, test="scrub_custom", seed=PART2_SEED),           # F: no runs of it
        claim("Figure 1", "high_client_ops", 17520.63, kind="measured", unit="IOPS"),      # G: absolute
    ])
    return pub, metrics, cl.claims_table(pub, metrics, "hand")


def test_client_drop_against_the_same_runs_before_the_operation_when_every_run_has_it():
    """A drop claim against the baseline test: with client_iops_pre in every operation run it is tested
    within each run (paired by run), whatever the baseline runs say (another bring-up); without it, against
    the baseline runs."""
    pre = np.array([800.0, 700.0, 900.0])
    d = np.array([-0.30, -0.25, -0.35])              # log(during / pre): mean −0.30, sd 0.05
    rows = []
    for metric, vals in (("client_iops_pre", pre), ("client_iops_op", pre * np.exp(d)),
                         ("client_iops", pre * 0.9)):
        rows += [dict(scenario="scrub", arm="wpq", repeat=r, metric=metric, value=v) for r, v in zip([1, 2, 3], vals)]
    rows += [dict(scenario="baseline", arm="wpq", repeat=r, metric="client_iops", value=v)
             for r, v in zip([1, 2, 3], [500.0, 1200.0, 700.0])]
    pub = pd.DataFrame([claim("Chart 1", "", -27, test="scrub", seed=PART2_SEED)])
    pub.loc[0, ["scheduler", "ref_test", "ref_scheduler"]] = ["wpq", "baseline", ""]
    metrics = pd.DataFrame(rows)
    assert cl.within_run_reference(metrics)
    r = cl.claims_table(pub, metrics, "hand").iloc[0]
    assert r["test"] == cl.PAIRED and r["n"] == 3
    assert r["ours"] == pytest.approx(100 * np.expm1(-0.30))
    assert r["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
    assert r["verdict"] == "holds" and "before the operation" in r["diagnosis"]
    # one operation run without its pre-operation windows: the baseline runs are the reference for all
    m2 = metrics[~((metrics["metric"] == "client_iops_pre") & (metrics["repeat"] == 3))]
    assert not cl.within_run_reference(m2)
    r2 = cl.claims_table(pub, m2, "hand").iloc[0]
    dl = np.log(pre * 0.9) - np.log([500.0, 1200.0, 700.0])
    assert r2["ours"] == pytest.approx(100 * np.expm1(dl.mean()))
    assert "before the operation" not in r2["diagnosis"]


def test_schema_columns_and_order(hand):
    *_, t = hand
    assert list(t.columns) == EXPECTED_COLUMNS == cl.COLUMNS
    assert len(t) == 7 and (t["campaign"] == "hand").all()
    assert list(t["study"]) == ["part1"] * 5 + ["part2", "part1"]
    assert list(t["claim_id"]) == ["part1-fig01-1", "part1-fig01-2", "part1-fig02-1", "part1-fig02-2",
                                   "part1-fig20-1", "part2-chart10-1", "part1-fig01-3"]
    assert t["sentence"].iloc[0] == "high_client_ops is 10 % (Figure 1)"


def test_holds_when_significant_in_the_published_direction(hand):
    *_, t = hand
    a = t.iloc[0]
    # t = mean / (sd / √n) = 0.12 / (0.02 / √3) = 6√3 on 2 degrees of freedom
    p = 2 * stats.t.sf(6 * math.sqrt(3), 2)
    assert p == pytest.approx(stats.ttest_rel(np.log(REF * np.exp(D_AB)), np.log(REF)).pvalue)
    assert p < 0.05
    assert a["p"] == pytest.approx(p) and a["n"] == 3 and a["direction"] == 1
    assert a["ours"] == pytest.approx(100 * (math.exp(0.12) - 1))
    half = stats.t.ppf(0.975, 2) * 0.02 / math.sqrt(3)
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((100 * math.expm1(0.12 - half), 100 * math.expm1(0.12 + half)))
    # statsmodels' two-sided power is NaN here (its lower tail, scipy's nct.cdf far out); the upper tail at
    # alpha/2 is all of it (the lower one is < 1e-9)
    assert np.isnan(TTestPower().power(math.log(1.10) / 0.02, 3, 0.05))
    upper = TTestPower().power(math.log(1.10) / 0.02, 3, 0.025, alternative="larger")
    assert a["power_at_published"] == pytest.approx(upper, abs=1e-9)
    assert a["test"].startswith("paired t") and a["verdict"] == "holds"
    assert "sd=0.02 over 3 repeats" in a["diagnosis"]


def test_contradicted_when_significant_in_the_opposite_direction(hand):
    *_, t = hand
    b = t.iloc[1]
    assert b["direction"] == -1 and b["p"] == pytest.approx(2 * stats.t.sf(6 * math.sqrt(3), 2))
    assert b["verdict"] == "contradicted" and "opposite" in b["diagnosis"]


def test_contradicted_when_powered_to_see_the_published_effect_and_not_seen(hand):
    *_, t = hand
    c = t.iloc[2]
    assert c["p"] == pytest.approx(1.0)  # mean paired log ratio 0: t = 0
    power = TTestPower().power(effect_size=abs(math.log(0.60)) / 0.1, nobs=3, alpha=0.05)
    assert power >= 0.8
    assert c["power_at_published"] == pytest.approx(power)
    assert c["verdict"] == "contradicted" and "power 0.9" in c["diagnosis"]


def test_not_significant_when_underpowered_with_the_repeats_that_would_decide(hand):
    *_, t = hand
    d = t.iloc[3]
    effect = math.log(1.05) / 0.1
    power = TTestPower().power(effect_size=effect, nobs=3, alpha=0.05)
    assert power < 0.8 and d["p"] >= 0.05
    assert d["power_at_published"] == pytest.approx(power)
    need = math.ceil(TTestPower().solve_power(effect_size=effect, alpha=0.05, power=0.8))
    assert d["repeats_needed"] == need
    assert TTestPower().power(effect, need, 0.05) >= 0.8 > TTestPower().power(effect, need - 1, 0.05)
    assert d["verdict"] == "not significant"
    assert d["diagnosis"] == f"spread of paired log ratios sd=0.1 over 3 repeats; {need} repeats for power 0.8"


def test_not_measurable_here_with_its_cause(hand):
    *_, t = hand
    e, f, g = t.iloc[4], t.iloc[5], t.iloc[6]
    assert (t.iloc[4:]["verdict"] == "not measurable here").all()
    assert e["diagnosis"] == "the 975-OSD scaled cluster is not reproducible on one VM"
    assert f["diagnosis"] == "no runs of scrub/custom in this campaign"
    assert g["diagnosis"] == "absolute value on another machine" and g["ours"] == np.median(REF * np.exp(D_AB))
    # only the missing cell is a gap more runs would fill
    assert list(t.iloc[4:]["data_gap"]) == [False, True, False]
    assert t.iloc[4:][["p", "power_at_published"]].isna().all().all()


def test_a_missing_metric_and_a_missing_reference_are_named(hand):
    pub, metrics, _ = hand
    t = cl.claims_table(pd.DataFrame([claim("Figure 5", "balanced", -8.6, metric="snaptrim_duration"),
                                      claim("Figure 1", "high_recovery_ops", 4.4)]), metrics, "hand")
    assert list(t["verdict"]) == ["not measurable here"] * 2
    assert t["diagnosis"].iloc[0] == "no snaptrim_duration in the runs of snaptrim/balanced"
    assert t["diagnosis"].iloc[1] == "no runs of snaptrim/high_recovery_ops in this campaign"
    assert t["data_gap"].all()


def test_a_share_claim_is_tested_as_a_ratio():
    # "45 % of the reference": published log ratio log(0.45), direction −1; ours 100·exp(mean)
    metrics = pd.DataFrame(runs("snaptrim", "wpq", REF) + runs("snaptrim", "balanced", REF * np.exp(-D_AB)))
    t = cl.claims_table(pd.DataFrame([claim("Figure 9", "balanced", 45, relation="share_pct")]), metrics, "c")
    r = t.iloc[0]
    assert r["direction"] == -1 and r["ours"] == pytest.approx(100 * math.exp(-0.12)) and r["verdict"] == "holds"
    assert r["power_at_published"] == pytest.approx(TTestPower().power(abs(math.log(0.45)) / 0.02, 3, 0.05))


def test_fewer_than_3_common_repeats_use_welch_on_logs():
    own, ref = np.array([110.0, 130.0, 120.0]), np.array([100.0, 105.0])
    metrics = pd.DataFrame(runs("snaptrim", "wpq", ref)[:2] + [dict(r, repeat=r["repeat"] + 10) for r in
                           runs("snaptrim", "high_client_ops", own)])
    r = cl.claims_table(pd.DataFrame([claim("Figure 1", "high_client_ops", 10)]), metrics, "c").iloc[0]
    assert r["test"] == "Welch t (log)" and r["n"] == 2
    assert r["p"] == pytest.approx(stats.ttest_ind(np.log(own), np.log(ref), equal_var=False).pvalue)
    assert r["ours"] == pytest.approx(100 * (np.exp(np.log(own).mean() - np.log(ref).mean()) - 1))


@pytest.mark.parametrize("p, ours_sign, direction, power, verdict", [
    (0.01, 1, 1, 0.1, "holds"), (0.01, -1, 1, 0.1, "contradicted"), (0.01, 1, 1, 0.95, "holds"),
    (0.20, 1, 1, 0.95, "contradicted"), (0.20, -1, 1, 0.95, "contradicted"),
    (0.20, 1, 1, 0.5, "not significant"), (0.20, -1, 1, 0.5, "not significant"),
    (0.05, 1, 1, 0.79, "not significant"), (0.05, 1, 1, 0.8, "contradicted")])
def test_verdict_rules(p, ours_sign, direction, power, verdict):
    assert cl._verdict(p, ours_sign, direction, power, 0.05, 0.8)[0] == verdict


# --- the power helpers against statsmodels ---------------------------------------------------------

def test_paired_power_equals_statsmodels_and_has_no_nan_at_large_effects():
    d = np.linspace(0.05, 6, 40)
    for n in (2, 3, 5, 12):
        want = TTestPower().power(effect_size=d, nobs=n, alpha=0.05)
        ok = np.isfinite(want)
        assert ok.mean() > 0.5
        assert cl.paired_power(d, n, 0.05)[ok] == pytest.approx(want[ok], rel=1e-9)
        upper = TTestPower().power(effect_size=d, nobs=n, alpha=0.025, alternative="larger")
        assert cl.paired_power(d, n, 0.05)[~ok] == pytest.approx(upper[~ok], abs=1e-9)
    big = cl.paired_power([7.5, np.inf, np.nan], 3, 0.05)
    assert 0.999 < big[0] <= 1 and big[1] == 1 and np.isnan(big[2])
    assert np.isnan(TTestPower().power(effect_size=7.5, nobs=3, alpha=0.05))  # why the helper has its own formula


def test_repeats_needed_is_the_rounded_up_root_of_solve_power():
    d = np.array([0.1, 0.3, 0.488, 1.0, 2.5])
    want = [math.ceil(TTestPower().solve_power(effect_size=x, alpha=0.05, power=0.8)) for x in d]
    assert list(cl.repeats_needed(d, 0.05, 0.8)) == want
    assert np.isnan(cl.repeats_needed([0.0, np.nan], 0.05, 0.8)).all()


# --- the CLI and the report ------------------------------------------------------------------------

def test_cli_exits_2_naming_the_missing_table(tmp_path, capsys):
    from analysis import store as tset
    assert main(["claims", "--processed", str(tmp_path), "--out", str(tmp_path / "c.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no processed tables" in err and "make data" in err and len(err.splitlines()) == 1
    pd.DataFrame({"campaign": ["x"]}).to_parquet(tmp_path / "summary.parquet")
    assert main(["claims", "--processed", str(tmp_path), "--out", str(tmp_path / "c.csv")]) == 2
    assert "summary but no tables.json" in capsys.readouterr().err  # not one ingest's set: refused
    tset.commit(tmp_path, ["summary"])
    assert main(["claims", "--processed", str(tmp_path), "--out", str(tmp_path / "c.csv")]) == 2
    assert "series.parquet" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()


def test_report_shows_the_claims_section_first(tmp_path, hand):
    from analysis.report import build_report
    *_, t = hand
    reports = tmp_path / "reports"
    reports.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 10 · Something")])
    nbformat.write(nb, reports / "10-something.ipynb")
    page = build_report(reports, tmp_path).read_text()
    assert "id='claims'" not in page
    t.assign(ceph_release="reef").to_csv(reports / "claims.csv", index=False)
    page = build_report(reports, tmp_path).read_text()
    assert page.index("<section id='claims'>") < page.index("<section id='10-something'>")
    assert page.index("href='#claims'") < page.index("href='#10-something'")
    start = page.index("<section id='claims'>")
    counts = page[start:page.index("Testable claims decided at R repeats", start)]
    ahead = page[page.index("Testable claims decided at R repeats", start):page.index("<details>", start)]
    assert re.findall(r"<th>([^<]*)</th>", ahead)[:4] == ["campaign", "ceph_release", "testable", "decided now"]
    cells = re.findall(r"<td>([^<]*)</td>", counts)
    assert re.findall(r"<th>([^<]*)</th>", counts) == ["campaign", "ceph_release", "claims", *cl.VERDICTS, "decided",
                                                         "open"]
    kinds = np.where(t["direction"].notna(), "testable", "absolute")
    expect = []
    for k in ("absolute", "testable"):
        v = t.loc[kinds == k, "verdict"]
        if len(v):
            n = [int((v == x).sum()) for x in cl.VERDICTS]
            closed = int(((v == "not measurable here") & ~t.loc[kinds == k, "data_gap"]).sum())
            gap = int(((v == "not measurable here") & t.loc[kinds == k, "data_gap"]).sum())
            expect += ["hand", "reef", k, *map(str, n), *(map(str, (n[0] + n[1] + closed, gap)) if k == "testable"
                                                  else ("0", "0"))]
    assert cells == expect
    assert "part2-chart10-1" in page and "no runs of scrub/custom in this campaign" in page


# --- the real tables -------------------------------------------------------------------------------

def test_real_qos_2026_table_matches_reconcile(real_proc, tmp_path, capsys):
    from analysis.published.qos import load_all
    from analysis.stats.qos_derived import run_metrics
    from analysis.stats.reconcile import reconcile
    out = tmp_path / "claims.csv"
    assert main(["claims", "--processed", str(real_proc), "--out", str(out), "--campaign", "qos-2026", "absent-x"]) == 0
    assert "no runs of absent-x" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == ["claims.csv"]  # written atomically: no temp file left
    t = pd.read_csv(out, keep_default_na=False, na_values=[""])
    assert list(t.columns) == EXPECTED_COLUMNS and (t["campaign"] == "qos-2026").all()
    from analysis.store import read_table
    summary, series = (read_table(real_proc, n, filters=[("campaign", "==", "qos-2026")]) for n in ("summary", "series"))
    rc = reconcile(load_all(), run_metrics(summary, series, "qos-2026"))
    assert len(t) == len(rc) and t["claim_id"].is_unique
    assert (t["verdict"] == "holds").sum() == (rc["verdict"] == "holds").sum()
    assert list(t["verdict"] == "holds") == list(rc["verdict"] == "holds")  # the same claims
    tested = rc["verdict"].isin(["holds", "contradicted", "same direction, not significant",
                                 "opposite direction, not significant"]).to_numpy()
    assert t.loc[tested, "p"].to_numpy() == pytest.approx(rc.loc[tested, "p"].to_numpy())
    assert set(t["verdict"]) <= set(cl.VERDICTS)
    absolute = (rc["kind"] == "measured").to_numpy()
    assert (t.loc[absolute, "verdict"] == "not measurable here").all()
    # the other campaigns of the shipped data have no QoS runs: nothing written, a stale table removed
    assert main(["claims", "--processed", str(real_proc), "--out", str(out), "--campaign", "block-2026", "nope"]) == 0
    assert "no QoS runs of block-2026" in capsys.readouterr().out
    assert not out.exists()


def test_verdict_counts_keep_absolute_values_apart_from_testable_claims():
    """Absolute values (no published direction) are never 'decided': counting them would inflate the share
    of testable claims decided."""
    from analysis.stats.claims import verdict_counts
    t = pd.DataFrame({"campaign": "c", "direction": [1.0, -1.0, 1.0, np.nan, np.nan, -1.0],
                      "verdict": ["holds", "contradicted", "not significant", "not measurable here",
                                  "not measurable here", "not measurable here"],
                      "diagnosis": ["", "", "", "absolute value on another machine",
                                    "the 975-OSD scaled cluster is not reproducible on one VM",
                                    "the 975-OSD scaled cluster is not reproducible on one VM"]})
    c = verdict_counts(t)
    assert c.loc[("c", "testable")].to_dict() == {"holds": 1, "contradicted": 1, "not significant": 1,
                                                  "not measurable here": 1, "decided": 3, "open": 0}
    # a claim short of runs is open, not decided: more runs of the campaign would test it
    short = pd.concat([t.assign(data_gap=False), pd.DataFrame(
        {"campaign": ["c"], "direction": [1.0], "verdict": ["not measurable here"], "data_gap": [True],
         "diagnosis": ["too few runs for a test: 1 of scrub/wpq, 1 of baseline/wpq"]})], ignore_index=True)
    c = verdict_counts(short)
    assert c.loc[("c", "testable"), ["not measurable here", "decided", "open"]].tolist() == [2, 3, 1]
    assert c.loc[("c", "absolute")].to_dict() == {"holds": 0, "contradicted": 0, "not significant": 0,
                                                  "not measurable here": 2, "decided": 0, "open": 0}


def test_decided_by_repeats_adds_the_underpowered_claims_whose_repeats_needed_are_reached():
    """At R ≥ repeats_needed the verdict rules decide a claim whatever p comes out; open claims (data_gap),
    claims with no estimate of the repeats needed and absolute values never count."""
    t = pd.DataFrame({"campaign": ["c"] * 8 + ["d"],
                      "direction": [1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, np.nan, 1.0],
                      "verdict": ["holds", "contradicted", "not significant", "not significant", "not significant",
                                  "not measurable here", "not measurable here", "not measurable here",
                                  "not significant"],
                      "repeats_needed": [2, 2, 4, 30, np.nan, np.nan, np.nan, np.nan, 7],
                      "data_gap": [False] * 6 + [True, False, False],
                      "diagnosis": [""] * 9})
    got = cl.decided_by_repeats(t, repeats=(3, 4, 29, 30))
    assert got.loc["c"].to_dict() == {"testable": 7, "decided now": 3, "at 3": 3, "at 4": 4, "at 29": 4, "at 30": 5}
    assert got.loc["d"].to_dict() == {"testable": 1, "decided now": 0, "at 3": 0, "at 4": 0, "at 29": 1, "at 30": 1}

"""analysis.stats.claims: the studies' claims with a verdict, on hand-worked cases (the pre-registered model's
estimate, se and p worked here from the two-way table and checked against statsmodels' OLS; the paired test
from the known paired log differences), the CSV schema, the CLI, the report section, and the real qos-2026
tables against analysis.stats.reconcile."""

from __future__ import annotations

import math
import re

import nbformat
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from analysis.__main__ import main
from analysis.stats import validity
from analysis.published.qos import COLUMNS as PUB_COLUMNS, PART1_SEED, PART2_SEED
from analysis.stats import claims as cl
from conftest import ROOT

EXPECTED_COLUMNS = ["campaign", "ceph_release", "study", "claim_id", "sentence", "published", "unit", "direction",
                    "test_id", "same_test", "cells", "ours", "ci_low", "ci_high", "model", "p", "q", "n", "censored",
                    "verdict", "ours_direction", "size", "power_at_published", "repeats_needed", "ours_paired", "ci_low_paired",
                    "ci_high_paired", "test_paired", "p_paired", "q_paired", "verdict_paired",
                    "repeats_needed_paired", "model_dependent", "outliers", "diagnosis", "data_gap"]


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
D_CD = np.array([0.04, -0.04, 0.0])                  # mean 0, sd 0.04


def runs(scenario, arm, values):
    return [dict(scenario=scenario, arm=arm, repeat=r, metric="client_iops", value=v)
            for r, v in zip([1, 2, 3], values)]


@pytest.fixture(scope="module")
def hand():
    metrics = pd.DataFrame(runs("snaptrim", "wpq", REF) + runs("snaptrim", "high_client_ops", REF * np.exp(D_AB))
                           + runs("snaptrim", "balanced", REF * np.exp(D_CD)))
    pub = pd.DataFrame([
        claim("Figure 1", "high_client_ops", 12),          # A: +12 %, we see +12.7 %: reproduced
        claim("Figure 1", "high_client_ops", -10),         # B: −10 %, we see +12.7 %: contradicted (opposite)
        claim("Figure 2", "balanced", -40),                # C: −40 %, we see 0, CI short of −40 %: contradicted
        claim("Figure 2", "balanced", 5),                  # D: +5 %, we see 0, +5 % inside the CI: undecided
        claim("Figure 20", "balanced", -32, test="scaled_recovery"),                       # E: 975 OSDs
        claim("Chart 10", "custom", -20, test="scrub_custom", seed=PART2_SEED),           # F: no runs of it
        claim("Figure 1", "high_client_ops", 17520.63, kind="measured", unit="IOPS"),      # G: absolute
        claim("Figure 3", "high_client_ops", 40),          # H: +40 %, the same data as A and B, larger than ours
    ])
    return pub, metrics, cl.claims_table(pub, metrics, "hand")


def two_way(metrics: pd.DataFrame) -> tuple[pd.DataFrame, float, int]:
    """The log values as a repeat × arm table, the residual sd of the additive model and its df — the
    pre-registered model without the first-in-block term on a complete table, worked by hand."""
    x = np.log(metrics.pivot(index="repeat", columns="arm", values="value"))
    res = x - x.mean(axis=1).to_numpy()[:, None] - x.mean(axis=0).to_numpy()[None, :] + x.to_numpy().mean()
    df = (x.shape[0] - 1) * (x.shape[1] - 1)
    return x, float(np.sqrt((res.to_numpy() ** 2).sum() / df)), df


def test_the_model_pools_the_variance_across_arms_as_worked_by_hand(hand):
    """A (high_client_ops vs wpq): the contrast of the two arms' means, se = σ·√(2/3) with σ the residual sd
    of log value ~ arm + repeat over all three arms (df 4), and the same from statsmodels' OLS."""
    import statsmodels.formula.api as smf
    _, metrics, t = hand
    x, sigma, df = two_way(metrics)
    est = (x["high_client_ops"] - x["wpq"]).mean()
    assert est == pytest.approx(0.12)
    se = sigma * math.sqrt(2 / 3)
    p = 2 * stats.t.sf(abs(est / se), df)
    a = t.iloc[0]
    assert a["ours"] == pytest.approx(100 * math.expm1(est))
    assert a["p"] == pytest.approx(p)
    half = stats.t.ppf(0.975, df) * se
    assert (a["ci_low"], a["ci_high"]) == pytest.approx((100 * math.expm1(est - half), 100 * math.expm1(est + half)))
    d = metrics.assign(y=np.log(metrics["value"]))
    fit = smf.ols("y ~ C(arm, Treatment('wpq')) + C(repeat)", data=d).fit()
    term = "C(arm, Treatment('wpq'))[T.high_client_ops]"
    assert fit.params[term] == pytest.approx(est) and fit.pvalues[term] == pytest.approx(p)
    assert a["model"].startswith("log value ~ cell + repeat") and "no first-in-block term" in a["model"]
    assert a["n"] == 3


def test_the_simple_paired_test_is_kept_as_the_sensitivity_analysis(hand):
    *_, t = hand
    a = t.iloc[0]
    # t = mean / (sd / √n) = 0.12 / (0.02 / √3) = 6√3 on 2 degrees of freedom
    p = 2 * stats.t.sf(6 * math.sqrt(3), 2)
    assert p == pytest.approx(stats.ttest_rel(np.log(REF * np.exp(D_AB)), np.log(REF)).pvalue)
    assert a["p_paired"] == pytest.approx(p) and a["test_paired"] == cl.PAIRED
    assert a["ours_paired"] == pytest.approx(100 * (math.exp(0.12) - 1))
    half = stats.t.ppf(0.975, 2) * 0.02 / math.sqrt(3)
    assert (a["ci_low_paired"], a["ci_high_paired"]) == pytest.approx(
        (100 * math.expm1(0.12 - half), 100 * math.expm1(0.12 + half)))


def test_claims_of_the_same_data_share_one_test_and_one_q(hand):
    """A, B and H compare the same two cells: one test_id, the same result; q is BH over the two distinct
    tests (A/B/H and C/D), not over five claims."""
    from statsmodels.stats.multitest import multipletests
    *_, t = hand
    a, b, c, d, h = t.iloc[0], t.iloc[1], t.iloc[2], t.iloc[3], t.iloc[7]
    assert a["test_id"] == b["test_id"] == h["test_id"] == "hand:T01"
    assert c["test_id"] == d["test_id"] == "hand:T02"
    assert a["same_test"] == "part1-fig01-1 part1-fig01-2 part1-fig03-1"
    assert (a["p"], a["ours"]) == (b["p"], b["ours"]) == (h["p"], h["ours"])
    q = multipletests([a["p"], c["p"]], method="fdr_bh")[1]
    assert (a["q"], c["q"]) == pytest.approx(tuple(q))
    assert b["q"] == a["q"] and d["q"] == c["q"]
    assert t.iloc[4:7]["test_id"].eq("").all()


def test_verdicts_by_direction_and_size(hand):
    *_, t = hand
    a, b, c, d, h = t.iloc[0], t.iloc[1], t.iloc[2], t.iloc[3], t.iloc[7]
    assert a["q"] < 0.05 and a["ci_low"] < 12 < a["ci_high"]
    assert (a["verdict"], a["ours_direction"], a["size"]) == ("reproduced", "same", "inside")
    assert (b["verdict"], b["ours_direction"], b["size"]) == ("contradicted", "opposite", "opposite side")
    assert h["ci_high"] < 40 and (h["verdict"], h["size"]) == ("same direction, smaller", "ours smaller")
    assert c["q"] >= 0.05 and c["ci_low"] > -40
    assert (c["verdict"], c["ours_direction"], c["size"]) == ("contradicted", "not significant", "ours smaller")
    assert d["ci_low"] < 5 < d["ci_high"] and d["verdict"] == "undecided"
    assert "repeats for power 0.8 under the model" in d["diagnosis"]


def test_model_dependence_is_marked_where_the_paired_test_disagrees(hand):
    """C under the paired test: its own BH q ≥ α and its CI (sd 0.04 over 3 pairs) still short of −40 %, so
    contradicted too; A: both reproduce; model_dependent is exactly verdict ≠ verdict_paired."""
    *_, t = hand
    tested = t[t["test_id"] != ""]
    assert (tested["model_dependent"] == (tested["verdict"] != tested["verdict_paired"])).all()
    assert t.iloc[0]["verdict_paired"] == "reproduced" and not t.iloc[0]["model_dependent"]


def test_repeats_needed_under_the_model_reach_the_power_it_asks(hand):
    """D's repeats_needed: the model's power at the published +5 % reaches 0.8 there and not one repeat
    earlier (se ∝ 1/√n, df + 2 per repeat added over three arms)."""
    from analysis.stats import prereg
    _, metrics, t = hand
    d = t.iloc[3]
    x, sigma, df = two_way(metrics)
    n = int(d["repeats_needed"])
    eff = math.log(1.05)
    def pw(k):
        return prereg.power(eff, sigma * math.sqrt(2 / k), df + (k - 3) * 2)
    assert pw(n) >= 0.8 > pw(n - 1)
    assert d["power_at_published"] == pytest.approx(float(pw(3)))


def test_client_drop_against_the_same_runs_before_the_operation_when_every_run_has_it():
    """A drop claim against the baseline test: with client_iops_pre in every operation run it is tested
    within each run (the per-run log ratio during / before), whatever the baseline runs say (another
    bring-up); without it, against the baseline runs."""
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
    assert r["test_paired"] == cl.PAIRED and r["n"] == 3
    # one arm: the model is the mean of the per-run log ratios, its t test the one-sample one
    assert r["ours"] == pytest.approx(100 * np.expm1(-0.30))
    assert r["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
    assert r["model"].startswith("log(during / before) per run")
    assert r["ci_low"] < -27 < r["ci_high"]
    assert r["verdict"] == "reproduced" and "before the operation" in r["diagnosis"]
    # one operation run without its pre-operation windows: the baseline runs are the reference for all
    m2 = metrics[~((metrics["metric"] == "client_iops_pre") & (metrics["repeat"] == 3))]
    assert not cl.within_run_reference(m2)
    r2 = cl.claims_table(pub, m2, "hand").iloc[0]
    dl = np.log(pre * 0.9) - np.log([500.0, 1200.0, 700.0])
    assert r2["ours_paired"] == pytest.approx(100 * np.expm1(dl.mean()))
    assert "before the operation" not in r2["diagnosis"]


def test_schema_columns_and_order(hand):
    *_, t = hand
    assert list(t.columns) == EXPECTED_COLUMNS == cl.COLUMNS
    assert len(t) == 8 and (t["campaign"] == "hand").all()
    assert list(t["study"]) == ["part1"] * 5 + ["part2", "part1", "part1"]
    assert list(t["claim_id"]) == ["part1-fig01-1", "part1-fig01-2", "part1-fig02-1", "part1-fig02-2",
                                   "part1-fig20-1", "part2-chart10-1", "part1-fig01-3", "part1-fig03-1"]
    assert t["sentence"].iloc[0] == "high_client_ops is 12 % (Figure 1)"


def test_not_measurable_here_with_its_cause(hand):
    *_, t = hand
    e, f, g = t.iloc[4], t.iloc[5], t.iloc[6]
    assert (t.iloc[4:7]["verdict"] == "not measurable here").all()
    assert e["diagnosis"] == "the 975-OSD scaled cluster is not reproducible on one VM"
    assert f["diagnosis"] == "no runs of scrub/custom in this campaign"
    assert g["diagnosis"] == "absolute value on another machine" and g["ours"] == np.median(REF * np.exp(D_AB))
    # only the missing cell is a gap more runs would fill
    assert list(t.iloc[4:7]["data_gap"]) == [False, True, False]
    assert t.iloc[4:7][["p", "q", "power_at_published"]].isna().all().all()


def test_a_missing_metric_and_a_missing_reference_are_named(hand):
    pub, metrics, _ = hand
    t = cl.claims_table(pd.DataFrame([claim("Figure 5", "balanced", -8.6, metric="snaptrim_duration"),
                                      claim("Figure 1", "high_recovery_ops", 4.4)]), metrics, "hand")
    assert list(t["verdict"]) == ["not measurable here"] * 2
    assert t["diagnosis"].iloc[0] == "no snaptrim_duration in the runs of snaptrim/balanced"
    assert t["diagnosis"].iloc[1] == "no runs of snaptrim/high_recovery_ops in this campaign"
    assert t["data_gap"].all()


def test_a_share_claim_is_tested_as_a_ratio():
    # "45 % of the reference": published log ratio log(0.45), direction −1; ours 100·exp(estimate)
    metrics = pd.DataFrame(runs("snaptrim", "wpq", REF) + runs("snaptrim", "balanced", REF * np.exp(-D_AB)))
    t = cl.claims_table(pd.DataFrame([claim("Figure 9", "balanced", 45, relation="share_pct")]), metrics, "c")
    r = t.iloc[0]
    # two arms: the model's contrast is the paired mean, its residual df n − 1
    assert r["direction"] == -1 and r["ours"] == pytest.approx(100 * math.exp(-0.12))
    assert r["p"] == pytest.approx(r["p_paired"])
    assert r["verdict"] == "same direction, smaller" and r["size"] == "ours smaller"


def test_fewer_than_3_common_repeats_use_welch_on_logs():
    own, ref = np.array([110.0, 130.0, 120.0]), np.array([100.0, 105.0])
    metrics = pd.DataFrame(runs("snaptrim", "wpq", ref)[:2] + [dict(r, repeat=r["repeat"] + 10) for r in
                           runs("snaptrim", "high_client_ops", own)])
    r = cl.claims_table(pd.DataFrame([claim("Figure 1", "high_client_ops", 10)]), metrics, "c").iloc[0]
    assert r["test_paired"] == "Welch t (log)" and r["n"] == 2
    assert r["p_paired"] == pytest.approx(stats.ttest_ind(np.log(own), np.log(ref), equal_var=False).pvalue)
    assert r["ours_paired"] == pytest.approx(100 * (np.exp(np.log(own).mean() - np.log(ref).mean()) - 1))
    # no repeat holds both arms: the block term takes every run, the model cannot estimate the contrast
    assert "cannot be fitted" in r["model"] and r["p"] == r["p_paired"]


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
    counts = page[start:page.index("The same under the sensitivity analysis", start)]
    ahead = page[page.index("Distinct tests decided at R repeats", start):page.index("<details>", start)]
    assert re.findall(r"<th>([^<]*)</th>", ahead)[:4] == ["campaign", "ceph_release", "testable", "decided now"]
    assert re.findall(r"<th>([^<]*)</th>", counts) == ["campaign", "ceph_release", "claims", *cl.VERDICTS, "decided",
                                                         "open"]
    # the hand table: testable claims A, B, H (one test: contradicted is its least favourable verdict), C, D
    # (one test: contradicted), E (975 OSDs: not measurable, closed), F (no runs: open); absolute G
    cells = re.findall(r"<td>([^<]*)</td>", counts)
    assert cells == ["hand", "reef", "absolute", "0", "0", "0", "0", "0", "1", "0", "0",
                     "hand", "reef", "testable", "0", "0", "0", "2", "0", "2", "2", "1"]
    assert "part2-chart10-1" in page and "no runs of scrub/custom in this campaign" in page
    assert "† = model-dependent" in page


# --- the real tables -------------------------------------------------------------------------------

def test_real_qos_2026_table_matches_reconcile(real_proc, tmp_path, capsys):
    from analysis.published.qos import load_all
    from analysis.stats.qos_derived import run_metrics
    from analysis.stats.reconcile import reconcile
    out = tmp_path / "claims.csv"
    assert main(["claims", "--processed", str(real_proc), "--out", str(out), "--campaign", "qos-2026", "absent-x"]) == 0
    assert "no runs of absent-x" in capsys.readouterr().out
    # written atomically, no temp file left; findings.json (the report's first screen) beside it
    # and the campaign's validity gate; each claim says whether it is comparable (analysis.stats.validity)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims.csv", "findings.json", "validity.csv"]
    t = pd.read_csv(out, keep_default_na=False, na_values=[""])
    with_gate = EXPECTED_COLUMNS[:EXPECTED_COLUMNS.index("verdict")] + ["comparable"] \
        + EXPECTED_COLUMNS[EXPECTED_COLUMNS.index("verdict"):]
    assert list(t.columns) == with_gate and (t["campaign"] == "qos-2026").all()
    gate = pd.read_csv(tmp_path / "validity.csv")
    # every QoS campaign of the data, pilots too (the folders of data/raw/ceph-qos), the claims' first
    # (a folder with runs: a campaign's folder holds only its pilot's pilot.json until its first sitting)
    qos = sorted(p.name for p in (ROOT / "data/raw/ceph-qos").iterdir() if p.is_dir() and next(p.rglob("run.json"), None))
    assert list(dict.fromkeys(gate["campaign"])) == ["qos-2026"] + [c for c in qos if c != "qos-2026"]
    assert list(gate.loc[gate["campaign"] == "qos-2026", "condition"]) == list(validity.CONDITIONS)
    gate = gate[gate["campaign"] == "qos-2026"]
    failed = sorted(gate.loc[gate["status"] == "fail", "condition"])
    assert set(t["comparable"]) == {"yes" if not failed else "no: " + ", ".join(failed)}
    from analysis.store import read_table
    summary, series = (read_table(real_proc, n, filters=[("campaign", "==", "qos-2026")]) for n in ("summary", "series"))
    rc = reconcile(load_all(), run_metrics(summary, series, "qos-2026"))
    assert len(t) == len(rc) and t["claim_id"].is_unique
    # the simple test is reconcile's (its blocked ANOVA of two cells is the paired t-test): the same p
    tested = rc["test_used"].astype(str).str.startswith("paired").to_numpy()
    assert tested.sum() >= 20
    assert t.loc[tested, "p_paired"].to_numpy() == pytest.approx(rc.loc[tested, "p"].to_numpy())
    assert set(t["verdict"]) <= set(cl.VERDICTS) and set(t["verdict_paired"]) <= set(cl.VERDICTS)
    # every tested claim has its q, and q ≥ p (BH only raises)
    q = t[t["test_id"].notna()]
    assert q["q"].notna().all() and (q["q"] >= q["p"] - 1e-12).all()
    assert (q["model_dependent"] == (q["verdict"] != q["verdict_paired"])).all()
    # the plan order reached the model: qos-2026 records it, so the first-in-block term is in
    assert q["model"].str.contains("first-in-block").any() and not q["model"].str.contains("no plan_order").any()
    absolute = (rc["kind"] == "measured").to_numpy()
    assert (t.loc[absolute, "verdict"] == "not measurable here").all()
    # the other campaigns of the shipped data have no QoS runs: nothing written, a stale table removed
    assert main(["claims", "--processed", str(real_proc), "--out", str(out), "--campaign", "block-2026", "nope"]) == 0
    assert "no QoS runs of block-2026" in capsys.readouterr().out
    assert not out.exists()


def test_verdict_counts_are_per_distinct_test_and_keep_absolute_values_apart():
    """Absolute values (no published direction) are never decided; claims of one test count once, under
    the least favourable verdict its claims have; a claim short of runs is open."""
    from analysis.stats.claims import verdict_counts
    t = pd.DataFrame({"campaign": "c", "claim_id": list("abcdefgh"),
                      "direction": [1.0, -1.0, 1.0, 1.0, np.nan, -1.0, 1.0, 1.0],
                      "test_id": ["c:T01", "c:T01", "c:T02", "c:T03", "", "", "", "c:T04"],
                      "verdict": ["reproduced", "same direction, smaller", "undecided", "contradicted",
                                  "not measurable here", "not measurable here", "not measurable here",
                                  "same direction, larger"],
                      "verdict_paired": ["reproduced", "reproduced", "undecided", "undecided",
                                         "not measurable here", "not measurable here", "not measurable here",
                                         "undecided"],
                      "data_gap": [False, False, False, False, False, False, True, False],
                      "repeats_needed": [np.nan, np.nan, 6, np.nan, np.nan, np.nan, np.nan, np.nan]})
    c = verdict_counts(t)
    assert c.loc[("c", "testable")].to_dict() == {
        "reproduced": 0, "same direction, smaller": 1, "same direction, larger": 1, "contradicted": 1,
        "undecided": 1, "not measurable here": 2, "decided": 3, "open": 1}
    assert c.loc[("c", "absolute")].to_dict() == {
        "reproduced": 0, "same direction, smaller": 0, "same direction, larger": 0, "contradicted": 0,
        "undecided": 0, "not measurable here": 1, "decided": 0, "open": 0}
    p = verdict_counts(t, "verdict_paired").loc[("c", "testable")]
    assert (p["reproduced"], p["undecided"], p["decided"]) == (1, 3, 1)


def test_decided_by_repeats_adds_the_undecided_tests_whose_repeats_needed_are_reached():
    """An undecided test counts as decided at R once R ≥ its repeats_needed (the largest over its claims);
    open claims, tests with no estimate and absolute values never count."""
    t = pd.DataFrame({"campaign": ["c"] * 8 + ["d"], "claim_id": list("abcdefghi"),
                      "direction": [1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, np.nan, 1.0],
                      "test_id": ["c:T1", "c:T2", "c:T3", "c:T3", "c:T4", "", "", "", "d:T1"],
                      "verdict": ["reproduced", "contradicted", "undecided", "undecided", "undecided",
                                  "not measurable here", "not measurable here", "not measurable here", "undecided"],
                      "repeats_needed": [np.nan, np.nan, 4, 30, np.nan, np.nan, np.nan, np.nan, 7],
                      "data_gap": [False] * 6 + [True, False, False]})
    got = cl.decided_by_repeats(t, repeats=(3, 4, 29, 30))
    assert got.loc["c"].to_dict() == {"testable": 6, "decided now": 2, "at 3": 2, "at 4": 2, "at 29": 2, "at 30": 3}
    assert got.loc["d"].to_dict() == {"testable": 1, "decided now": 0, "at 3": 0, "at 4": 0, "at 29": 1, "at 30": 1}



def test_littles_law_tie_holds_only_within_a_tenth_of_a_percent():
    """clat × IOPS constant in every run of both cells (a fixed queue depth) ties a latency test to the IOPS
    test on the same cells; a 1 % departure in one run, or a run missing on one side, breaks the tie."""
    from analysis.stats.prereg import Side
    iops = {("snaptrim", "wpq"): [200.0, 210.0, 190.0], ("snaptrim", "hco"): [150.0, 160.0, 155.0]}
    rows = []
    for (sc, arm), xs in iops.items():
        for rep, x in enumerate(xs, start=1):
            rows += [dict(scenario=sc, arm=arm, repeat=rep, metric="client_iops", value=x),
                     dict(scenario=sc, arm=arm, repeat=rep, metric="clat_mean", value=64_000.0 / x)]
    m = pd.DataFrame(rows)
    lat = (Side("snaptrim", "hco", "clat_mean"), Side("snaptrim", "wpq", "clat_mean"))
    io = (Side("snaptrim", "hco", "client_iops"), Side("snaptrim", "wpq", "client_iops"))
    assert cl.little_tied(m, lat, io)
    off = m.copy()
    off.loc[(off["metric"] == "clat_mean") & (off["arm"] == "wpq") & (off["repeat"] == 2), "value"] *= 1.01
    assert not cl.little_tied(off, lat, io)
    short = m[~((m["metric"] == "clat_mean") & (m["arm"] == "hco") & (m["repeat"] == 3))]
    assert not cl.little_tied(short, lat, io)

"""analysis.stats.consistency on hand-made rounds whose answers are worked out by hand in each test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.stats import consistency as c


def rounds(test: str, series: dict[str, list[float]], dt: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame([(test, r, v, i * dt) for r, xs in series.items() for i, v in enumerate(xs)],
                        columns=["test", "round", "value", "t_s"])


BASE = [float(v) for v in range(1, 11)]  # 1..10: mean 5.5, sum of squared deviations 82.5


def test_mser_cuts_a_one_batch_warmup_and_nothing_from_short_series():
    x = np.array([10.0] * 5 + [0.0] * 15)  # batch means 10, 0, 0, 0 → d = 1 batch zeroes the criterion
    assert c.mser(x, batch=5) == 5
    assert c.mser(np.arange(9.0), batch=5) == 0  # one batch only: nothing to compare


def test_steady_state_window_times_and_flags():
    x = [10.0] * 5 + [0.0, 1.0] * 10  # warm-up of 5 samples, then a stationary alternation
    w = c.steady_state(rounds("t", {"R0": x, "R1": [1.0, 2.0]}, dt=0.25)).set_index("round")
    assert (w.loc["R0", "start"], w.loc["R0", "stop"], w.loc["R0", "n_steady"]) == (5, 25, 20)
    assert w.loc["R0", "t_start_s"] == 1.25 and w.loc["R0", "t_end_s"] == 6.0 and w.loc["R0", "steady"]
    assert not w.loc["R1", "steady"] and "fewer than 3 steady samples" in w.loc["R1", "reason"]
    kept = c.steady_samples(rounds("t", {"R0": x, "R1": [1.0, 2.0]}), w.reset_index())
    assert len(kept) == 20 + 2 and kept["value"].iloc[0] == 0.0


def test_identical_rounds_are_consistent_by_F_H_and_T():
    res = c.hypothesis_results(rounds("same", {f"R{i}": BASE for i in range(3)})).loc["same"]
    assert res["F"] == 0 and res["F_p"] == 1 and res["F_result"] == 1
    assert res["H"] == 0 and res["H_p"] == pytest.approx(1) and res["H_result"] == 1
    assert res["T_pairs"] == 3 and res["T_rejected"] == 0 and res["T_result"] == 1
    assert (res["normal"], res["non_normal"], res["invalid"]) == (3, 0, 0)


def test_shifted_round_rejects_with_the_hand_computed_F():
    # means 5.5, 5.5, 105.5: SSB = 10·(2·(100/3)² + (200/3)²) = 66666.67 on 2 df, SSW = 3·82.5 on 27 df
    res = c.hypothesis_results(rounds("shift", {"R0": BASE, "R1": BASE, "R2": [v + 100 for v in BASE]}))
    r = res.loc["shift"]
    assert r["F"] == pytest.approx((66666.6667 / 2) / (247.5 / 27), rel=1e-6)
    assert r["F_result"] == 0 and r["H_result"] == 0 and r["T_result"] == 0 and r["result"] == 0
    assert r["T_rejected"] == 2  # R0–R2 and R1–R2; R0–R1 are identical


def test_too_few_samples_make_rounds_and_tests_invalid():
    data = pd.concat([rounds("short", {"R0": BASE, "R1": [1.0, 2.0]}),
                      rounds("flat", {"R0": [3.0] * 5, "R1": BASE})])
    res = c.hypothesis_results(data)
    assert res.loc["short", "invalid"] == 1 and res.loc["flat", "invalid"] == 1
    for test in ("short", "flat"):  # one valid round left: nothing to compare
        assert res.loc[test, ["F_result", "H_result", "T_result", "result"]].tolist() == [-1, -1, -1, -1]
        assert "1 valid round(s)" in res.loc[test, "reason"]
    table = c.hypothesis_table(data)
    assert list(table.index[:6]) == ["Normal", "Non-normal", "Invalid", "F-value", "P-value", "Result"]
    assert table.loc["Result", "short"] == -1


def test_normality_statuses_and_dagostino_only_from_20():
    data = rounds("t", {"few": [1.0, 2.0], "flat": [1.0] * 8, "small": BASE, "big": BASE * 2})
    n = c.normality(data).set_index("round")
    assert n.loc["few", "status"] == "invalid" and n.loc["flat", "status"] == "invalid"
    assert n.loc["small", "status"] == "normal" and math.isnan(n.loc["small", "dagostino_p"])
    assert n.loc["big", "n"] == 20 and not math.isnan(n.loc["big", "dagostino_p"])


def test_paired_t_by_hand():
    # differences 1, 2, 3: mean 2, sd 1 → t = 2 / (1/√3) = 3.4641 (sign: round_a − round_b)
    t = c.paired_t(rounds("t", {"A": [0.0, 0.0, 0.0], "B": [1.0, 2.0, 3.0]}))
    assert t["t"].item() == pytest.approx(-2 * math.sqrt(3))
    assert t["p"].item() == pytest.approx(t["p_holm"].item())  # one pair: Holm changes nothing


def test_summary_table_both_ddof():
    means = pd.DataFrame({"a": [1.0, 2.0, 3.0]}, index=["R0", "R1", "R2"])
    s1, s0 = c.summary_table(means, ddof=1)["a"], c.summary_table(means, ddof=0)["a"]
    assert (s1["Mean"], s1["Std"], s1["Std/Mean"]) == (2.0, 1.0, 0.5)
    assert s0["Std"] == pytest.approx(math.sqrt(2 / 3))


def test_range_tolerance_by_hand():
    means = pd.DataFrame({"a": [90.0, 110.0, np.nan], "b": [80.0, 100.0, 120.0]}, index=["R0", "R1", "R2"])
    rt = c.range_tolerance(means, bands=(0.1, 0.2))
    assert rt.diff["b"].tolist() == pytest.approx([-0.2, 0.0, 0.2, 0.2, -0.2])
    assert list(rt.diff.index) == ["R0", "R1", "R2", "Max", "Min"]
    assert rt.diff.loc["Max", "a"] == pytest.approx(0.1)
    assert rt.within.loc["±0.1", "a"] == 1.0           # both ends inclusive; the NaN round is not counted
    assert rt.within.loc["±0.1", "b"] == pytest.approx(1 / 3)
    assert rt.within.loc["±0.2", "b"] == 1.0


def test_within_band_share_against_round_and_test_mean():
    data = rounds("t", {"R0": [9.0, 10.0, 11.0, 14.0], "R1": [20.0, 20.0]})  # R0 mean 11, R1 mean 20
    by_round = c.within_band_share(data, bands=(0.1,))
    assert by_round.loc["±0.1", "t"] == pytest.approx(4 / 6)   # 10, 11, 20, 20 (9 and 14 are >10% off 11)
    by_test = c.within_band_share(data, bands=(0.1,), reference="test")  # mean 14: 13 … 15.4 → only 14
    assert by_test.loc["±0.1", "t"] == pytest.approx(1 / 6)


def test_average_only_codes():
    means = pd.DataFrame({"ok": [99.0, 100.0, 101.0, 100.5], "wide": [50.0, 100.0, 150.0, 110.0],
                          "two": [1.0, 2.0, np.nan, np.nan]})
    a = c.average_only(means, cv_max=0.1)
    assert a.loc["ok", "result"] == 1 and a.loc["ok", "cv_ok"]
    assert a.loc["wide", "result"] == 0 and not a.loc["wide", "cv_ok"]  # CV ≈ 0.39
    assert a.loc["two", "result"] == -1 and a.loc["two", "reason"] == "2 rounds < 3"


def test_posthoc_finds_the_shifted_round():
    data = rounds("s", {"R0": BASE, "R1": BASE, "R2": [v + 100 for v in BASE]})
    for method in ("tukey", "mannwhitney"):
        p = c.posthoc(data, method=method)
        rejected = set(map(tuple, p.loc[p["reject"], ["group1", "group2"]].to_numpy()))
        assert rejected == {("R0", "R2"), ("R1", "R2")}, method
    tk = c.posthoc(data).set_index(["group1", "group2"])
    assert tk.loc[("R0", "R2"), "stat"] == pytest.approx(100)
    assert c.posthoc(rounds("x", {"R0": BASE})).empty


def test_effect_size_estimates_and_too_few():
    a = np.tile([9.0, 10.0, 11.0], 10)
    b = 2 * a  # means 10 and 20; variances 20/29 and 80/29
    rel = c.effect_size(a, b)
    assert rel["estimate"] == pytest.approx(1.0) and rel["ci_low"] <= 1.0 <= rel["ci_high"]
    g = c.effect_size(a, b, kind="hedges_g")
    assert g["estimate"] == pytest.approx(10 / math.sqrt(100 / 58) * (1 - 3 / 231))
    few = c.effect_size([1.0, 2.0], [3.0, 4.0, 5.0])
    assert math.isnan(few["estimate"]) and "need 3" in few["reason"]


def test_repeats_needed_matches_cohens_tables():
    # Cohen (1988): d = 0.5 needs 64 per group, d = 1.0 needs 17, at α = 0.05 two-sided, power 0.8
    r = c.repeats_needed(cv=0.1, rel_diffs=[0.05, 0.1, 2.0, 0.0])
    assert r["n_per_arm"].tolist()[:3] == [64, 17, 2]
    assert math.isnan(r["n_per_arm"].iloc[3])
    assert c.repeats_needed(cv=0.0, rel_diffs=[0.1])["n_per_arm"].isna().all()


def test_as_rounds_joins_test_columns():
    df = pd.DataFrame({"io_scheduler": ["bfq", "bfq"], "metric": ["iops", "iops"], "repeat": [2, 1],
                       "value": [5, 6], "t_s": [0.0, 0.0]})
    out = c.as_rounds(df, ["io_scheduler", "metric"], "repeat")
    assert out["test"].tolist() == ["bfq/iops"] * 2 and out["round"].tolist() == ["1", "2"]


def test_batch_means_drop_the_partial_batch_and_average_time():
    b = c.batch_means(rounds("t", {"R0": BASE, "R1": BASE[:7]}), batch=3)
    r0 = b[b["round"] == "R0"]
    assert r0["value"].tolist() == [2.0, 5.0, 8.0] and r0["t_s"].tolist() == [1.0, 4.0, 7.0]  # 10th sample dropped
    assert b[b["round"] == "R1"]["value"].tolist() == [2.0, 5.0]


def test_autocorrelation_lag1_and_effective_n():
    # alternating ±1: acf lag 1 = sum(x_t x_{t+1}) / sum(x_t²) = -9/10 → n_eff = n (negative r1 keeps n)
    # a ramp 1..10: acf lag 1 = sum((x_t-5.5)(x_{t+1}-5.5)) / 82.5 = 57.75 / 82.5 = 0.7
    a = c.autocorrelation(rounds("t", {"alt": [1.0, -1.0] * 5, "ramp": BASE, "flat": [2.0] * 4})).set_index("round")
    assert a.loc["alt", "r1"] == pytest.approx(-0.9) and a.loc["alt", "n_eff"] == 10
    assert a.loc["ramp", "r1"] == pytest.approx(0.7) and a.loc["ramp", "n_eff"] == pytest.approx(10 * 0.3 / 1.7)
    assert math.isnan(a.loc["flat", "r1"]) and math.isnan(a.loc["flat", "n_eff"])


def test_overview_rows_agree_with_the_single_methods():
    data = pd.concat([rounds("same", {f"R{i}": BASE for i in range(3)}),
                      rounds("shift", {"R0": [v + 99 for v in BASE], "R1": [v + 99 for v in BASE],
                                       "R2": [v + 139 for v in BASE]})])
    o = c.overview(data, bands=(0.1, 0.2), rel_diff=0.1)
    assert o.loc["same", "hyp_result"] == 1 and o.loc["shift", "hyp_result"] == 0
    # shift: round means 104.5, 104.5, 144.5 → mean 117.833, diffs -0.1132, -0.1132, +0.2263
    assert o.loc["shift", "max_abs_diff"] == pytest.approx(144.5 / (353.5 / 3) - 1)
    assert o.loc["shift", "within_±0.2"] == pytest.approx(2 / 3) and o.loc["shift", "within_±0.1"] == 0
    assert o.loc["same", "range_result"] == 1 and o.loc["shift", "range_result"] == 0
    assert o.loc["same", "avg_result"] == -1  # all round means equal: Shapiro cannot run
    assert o.loc["same", "n_median"] == 10 and o.loc["same", "r1_median"] == pytest.approx(0.7)
    assert o.loc["shift", "cv"] == pytest.approx(np.std([104.5, 104.5, 144.5], ddof=1) / (353.5 / 3))
    shares = c.verdict_shares(o)
    assert shares.loc["hypothesis", "consistent"] == 0.5 and shares.loc["average only", "invalid"] == 0.5
    # means only (e.g. fio's own per-run bw): no hypothesis columns
    m = c.overview(means=c.round_means(data))
    assert "hyp_result" not in m and "hypothesis" not in c.verdict_shares(m).index
    with pytest.raises(ValueError):
        c.overview()


def test_round_effect_finds_a_round_low_in_every_test():
    # 4 tests × 3 rounds, R0 lowest everywhere, R1/R2 alternate: ranks per test (1,2,3) or (1,3,2);
    # rank sums 4, 10, 10 → Friedman chi² = 12/(n k (k+1)) Σ R² − 3 n (k+1) = 12/48·216 − 48 = 6
    means = pd.DataFrame({f"t{j}": [1.0, 2.0 + (j % 2), 3.0 - (j % 2)] for j in range(4)}, index=["R0", "R1", "R2"])
    means["extra"] = [1.0, np.nan, 2.0]  # incomplete test: left out
    e = c.round_effect(means)
    assert e.n_tests == 4 and e.chi2 == pytest.approx(6.0) and e.kendall_w == pytest.approx(6 / (4 * 2))
    assert e.p == pytest.approx(math.exp(-3.0))  # chi² with 2 d.f.: p = exp(-x/2)
    assert e.per_round.loc["R0", "lowest_share"] == 1 and e.per_round.loc["R0", "highest_share"] == 0
    two = c.round_effect(means.iloc[:2])
    assert math.isnan(two.chi2) and "need 2 tests and 3 rounds" in two.reason


def test_order_trend_sees_a_drift_across_tests():
    # two tests at different levels, both rising by 10 % per run in execution order
    v = pd.DataFrame({"test": ["a"] * 3 + ["b"] * 3, "value": [100, 110, 120, 1000, 1100, 1200],
                      "order": [0, 2, 4, 1, 3, 5]})
    t = c.order_trend(v)
    # deviations -1/11, 0, +1/11 in both tests (tied ranks 1.5, 3.5, 5.5) against order ranks 1,3,5 / 2,4,6:
    # Pearson on ranks = Σ dx·dy / √(Σdx² Σdy²) = 16 / √(17.5 · 16)
    assert t["n"] == 6 and t["rho"] == pytest.approx(16 / math.sqrt(17.5 * 16))
    flat = c.order_trend(v.assign(value=[100, 100, 100, 1000, 1000, 1000]))
    assert math.isnan(flat["rho"])


def test_blocked_anova_removes_a_common_block_shift():
    # 3 configurations × 3 blocks; block k adds 10·k to every configuration (a drift), configuration
    # effects 0, 1, 2, plus a small residual pattern e that sums to 0 over every row and column
    e = np.array([[0.1, -0.1, 0.0], [-0.1, 0.0, 0.1], [0.0, 0.1, -0.1]])
    y = np.array([[g + 10 * b for b in range(3)] for g in range(3)]) + e
    v = pd.DataFrame([(f"g{g}", b, y[g, b]) for g in range(3) for b in range(3)], columns=["group", "round", "value"])
    t = c.blocked_anova(v)
    grand = y.mean()
    ss_g = 3 * ((y.mean(axis=1) - grand) ** 2).sum()   # 3 · (1 + 0 + 1) = 6
    ss_b = 3 * ((y.mean(axis=0) - grand) ** 2).sum()   # 3 · (100 + 0 + 100) = 600
    ss_e = (e ** 2).sum()                               # residual = e, row/column means of e are 0
    assert t.loc["group", "sum_sq"] == pytest.approx(ss_g) and t.loc["block", "sum_sq"] == pytest.approx(ss_b)
    assert t.loc["residual", "sum_sq"] == pytest.approx(ss_e) and t.loc["residual", "df"] == 4
    assert t.loc["group", "F"] == pytest.approx((ss_g / 2) / (ss_e / 4))
    assert t.loc["group", "p"] < 1e-4
    # one-way: the block shift lands in the residual and the configurations look alike
    assert t.loc["residual (one-way)", "sum_sq"] == pytest.approx(ss_b + ss_e)
    assert t.loc["group (one-way)", "p"] > 0.9
    short = c.blocked_anova(v[v["round"] == 0])
    assert short.index[0].startswith("reason: 3 groups, 1 blocks")


def test_order_drift_figure_one_panel_per_campaign():
    import matplotlib
    matplotlib.use("Agg")
    from analysis.figures import consistency as figs
    v = pd.DataFrame({"test": ["a"] * 3 + ["b"] * 3, "round": [1, 2, 3] * 2, "value": [90, 100, 110, 900, 1000, 1100],
                      "order": [0, 2, 4, 1, 3, 5]})
    fig = figs.order_drift({"one": v, "two": v.assign(order=np.nan)})
    assert fig.get_label() == figs.ORDER_DRIFT
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["one", "two"]
    pts = panels[0].collections[0].get_offsets()
    assert np.allclose(pts[:, 0], range(6)) and np.allclose(pts[:, 1], [-10, -10, 0, 0, 10, 10])  # % of test mean
    assert len(panels[1].collections[0].get_offsets()) == 0  # no order: nothing placed


def test_holm_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 28):
        p = rng.uniform(0, 0.2, m)
        p[: m // 3] = p[0]  # ties
        assert np.allclose(c.holm(p), multipletests(p, 0.05, "holm")[1])


def test_blocked_anova_by_and_campaign_summary():
    e = np.array([[0.1, -0.1, 0.0], [-0.1, 0.0, 0.1], [0.0, 0.1, -0.1]])
    y = np.array([[g + 10 * b for b in range(3)] for g in range(3)]) + e
    one = pd.DataFrame([(f"g{g}", b, y[g, b]) for g in range(3) for b in range(3)], columns=["arm", "round", "value"])
    v = pd.concat([one.assign(scenario="s1"), one.iloc[:3].assign(scenario="s2")])  # s2: one block only
    t = c.blocked_anova_by(v)
    direct = c.blocked_anova(one.rename(columns={"arm": "group"}))
    assert t.loc["s1", "group_F"] == pytest.approx(direct.loc["group", "F"]) and t.loc["s1", "runs"] == 9
    assert t.loc["s1", "block_p"] == pytest.approx(direct.loc["block", "p"]) and math.isnan(t.loc["s2", "group_p"])
    ov = pd.DataFrame({"cv": [0.1, 0.3], "hyp_result": [1, 0], "avg_result": [-1, 1], "range_result": [1, 1]})
    s = c.campaign_summary({"x": ov}).loc["x"]
    assert (s["tests"], s["hypothesis: consistent"], s["average only: invalid"]) == (2, 0.5, 0.5)
    assert s["cv_median"] == pytest.approx(0.2) and s["range tolerance: consistent"] == 1.0


def test_n_per_arm_is_solve_powers_root_rounded_up_for_all_effect_sizes_at_once():
    """The vectorised whole-number search equals statsmodels' root finder, rounded up, one effect size at a
    time; effect sizes where 2 repeats suffice (or the power is NaN, at huge d) sit in the same call."""
    import warnings

    from statsmodels.stats.power import TTestIndPower
    d = np.r_[np.geomspace(0.02, 40.0, 60), 3e4, 0.0, np.nan, -0.5]
    got = c.n_per_arm(d, 0.05, 0.8)
    s = TTestIndPower()
    for e, n in zip(d, got):
        if not np.isfinite(e) or e == 0:
            assert np.isnan(n)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not s.power(effect_size=abs(e), nobs1=2, alpha=0.05) < 0.8:
                assert n == 2
                continue
            assert n == np.ceil(s.solve_power(effect_size=abs(e), alpha=0.05, power=0.8)), e
    assert got[0] > 10_000 and (got[1:60] <= got[:59]).all()     # 0.02: ~40 k per arm; falls as d grows


def test_conclusion_reads_each_table_it_is_given():
    verdicts = pd.DataFrame({"tests": [31, 48], "cv_median": [0.22, 0.13], "cv_p90": [0.7, 0.2],
                             "hypothesis: consistent": [0.0, 0.271], "hypothesis: invalid": [0.0, 0.25],
                             "range tolerance: consistent": [0.097, 0.125], "range tolerance: invalid": [0, 0]},
                            index=pd.Index(["q iops", "r bw"], name="campaign"))
    exchange = pd.DataFrame({"campaign": ["q", "r"], "friedman_p": [1e-9, 0.3], "kendall_w": [0.7, 0.05],
                             "rho": [0.67, -0.01], "rho_p": [1e-14, 0.88]})
    by_scenario = pd.DataFrame({"group_p": [0.08, 0.01], "group_p_oneway": [0.42, 0.2], "block_p": [0.005, 0.3]},
                               index=["baseline", "scrub"])
    curves = pd.DataFrame({"label": ["ours q iops median", "ours q iops median", "ours r bw p90", "chapter x"],
                           "rel_diff": [0.1, 0.2, 0.1, 0.1], "n_per_arm": [78.0, 21.0, 67.0, 4.0]})
    text = c.conclusion(verdicts, exchange, by_scenario, curves, 0.05, 0.10, campaign="q")
    assert "`q iops` (31 tests, median CV 0.22): hypothesis 0 %, range tolerance 10 %" in text
    assert "`q` not exchangeable (Friedman p = 1e-09, Kendall's W 0.70), a drift with the run order" in text
    assert "`r` exchangeable (Friedman p = 0.3, Kendall's W 0.05), no monotone drift" in text
    assert "an arm effect at α = 0.05 in 1 of 2 scenarios with the blocks (0 without); the block factor is " \
           "significant in 1." in text
    assert "(at each campaign's median CV): q iops 78." in text      # medians only, at 10 %

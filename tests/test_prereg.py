"""analysis.stats.prereg: the pre-registered model against statsmodels' OLS on an unbalanced hand-made
campaign with a first-in-block effect, its studentized residuals and outlier flags, the run records'
first-in-block, and the power and repeats it plans with against statsmodels' t-test power."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.outliers_influence import OLSInfluence
from statsmodels.stats.power import TTestPower

from analysis.stats import prereg

ARMS = ["wpq", "hco", "bal", "hro"]


def campaign(seed=7, first_effect=0.5, missing=(("hro", 4),), outlier=None):
    """4 arms × 5 repeats of one scenario, arms shuffled per block (plan order), the first run of each
    block +0.5 on the log scale, one run missing, noise sd 0.05."""
    rng = np.random.default_rng(seed)
    effect = dict(wpq=0.0, hco=0.3, bal=0.1, hro=-0.2)
    rows, recs, order = [], [], 0
    for rep in range(1, 6):
        arms = list(rng.permutation(ARMS))
        for k, arm in enumerate(arms):
            if (arm, rep) in missing:
                continue
            y = 5 + effect[arm] + 0.05 * rep + (first_effect if k == 0 else 0) + rng.normal(0, 0.05)
            if outlier == (arm, rep):
                y -= 1.0
            rows.append(dict(scenario="snaptrim", arm=arm, repeat=rep, metric="snaptrim_duration", value=math.exp(y)))
            recs.append(dict(scenario="snaptrim", arm=arm, repeat=rep, plan_order=order, attempt="1", redone="0"))
            order += 1
    m = pd.DataFrame(rows)
    summary = pd.DataFrame(recs).assign(campaign="c")
    return m, prereg.run_records(summary, "c")


def test_run_records_mark_the_first_run_of_each_block():
    m, rec = campaign()
    assert rec["first_in_block"].sum() == 5
    firsts = rec[rec["first_in_block"]]
    assert list(firsts.groupby("repeat")["plan_order"].min()) == list(rec.groupby("repeat")["plan_order"].min())
    # a block that began with a discarded warm-up run (run.json block_warmup) has no first-in-block run
    s = pd.DataFrame(dict(campaign="c", scenario="s", arm=["a", "b", "a", "b"], repeat=["1", "1", "2", "2"],
                          plan_order=["0", "1", "2", "3"], block_warmup=["", "", "s/b", "s/b"]))
    r = prereg.run_records(s, "c")
    assert list(r["first_in_block"]) == [True, False, False, False]


def test_contrast_equals_statsmodels_ols_with_block_and_first_in_block():
    m, rec = campaign()
    f = prereg.contrast(m, prereg.Side("snaptrim", "hco", "snaptrim_duration"),
                        prereg.Side("snaptrim", "wpq", "snaptrim_duration"), rec)
    d = m.merge(rec[["arm", "repeat", "first_in_block"]], on=["arm", "repeat"])
    d = d.assign(y=np.log(d["value"]), first=d["first_in_block"].astype(float))
    fit = smf.ols("y ~ C(arm, Treatment('wpq')) + C(repeat) + first", data=d).fit()
    term = "C(arm, Treatment('wpq'))[T.hco]"
    assert f["est"] == pytest.approx(fit.params[term], abs=1e-10)
    assert f["se"] == pytest.approx(fit.bse[term], rel=1e-9)
    assert f["p"] == pytest.approx(fit.pvalues[term], rel=1e-9)
    assert f["df"] == fit.df_resid == 19 - 4 - 4 - 1
    lo, hi = fit.conf_int().loc[term]
    assert (f["lo"], f["hi"]) == pytest.approx((lo, hi))
    assert f["est"] == pytest.approx(0.3, abs=0.08)  # the truth, with the first-run effect taken out
    assert "first-in-block" in f["model"] and f["n"] == 5 and f["cells"] == 4 and f["blocks"] == 5
    # without the plan order the term is left out and the model says so
    g = prereg.contrast(m, prereg.Side("snaptrim", "hco", "snaptrim_duration"),
                        prereg.Side("snaptrim", "wpq", "snaptrim_duration"))
    assert "no first-in-block term" in g["model"] and g["df"] == f["df"] + 1


def test_outliers_are_flagged_with_their_records_and_kept():
    m, rec = campaign(outlier=("bal", 3))
    f = prereg.contrast(m, prereg.Side("snaptrim", "bal", "snaptrim_duration"),
                        prereg.Side("snaptrim", "wpq", "snaptrim_duration"), rec)
    d = m.merge(rec[["arm", "repeat", "first_in_block"]], on=["arm", "repeat"])
    d = d.assign(y=np.log(d["value"]), first=d["first_in_block"].astype(float))
    fit = smf.ols("y ~ C(arm) + C(repeat) + first", data=d).fit()
    r = OLSInfluence(fit).resid_studentized_external
    big = d[np.abs(r) > 4]
    assert list(zip(big["arm"], big["repeat"])) == [("bal", 3)]
    assert f["outliers"].startswith("snaptrim/bal/rep-03 r=") and "attempt 1, redone 0" in f["outliers"]
    assert float(f["outliers"].split("r=")[1].split()[0]) == pytest.approx(float(r[np.abs(r) > 4].iloc[0]), abs=0.05)
    assert f["n"] == 5  # kept


def test_a_contrast_the_design_cannot_estimate_is_none():
    m, rec = campaign()
    assert prereg.contrast(m, prereg.Side("snaptrim", "nope", "snaptrim_duration"),
                           prereg.Side("snaptrim", "wpq", "snaptrim_duration"), rec) is None
    two = m[m["arm"].isin(["wpq", "hco"]) & (m["repeat"] <= 1)]
    assert prereg.contrast(two, prereg.Side("snaptrim", "hco", "snaptrim_duration"),
                           prereg.Side("snaptrim", "wpq", "snaptrim_duration")) is None  # no residual df


def test_power_is_the_t_test_power_and_repeats_reach_it():
    # a one-sample t test on n pairs with sd s: se = s/√n, df = n − 1: TTestPower's power
    for d, n in ((0.5, 10), (1.2, 5), (2.0, 3)):
        assert float(prereg.power(d * 0.1, 0.1 / math.sqrt(n), n - 1)) == pytest.approx(
            TTestPower().power(effect_size=d, nobs=n, alpha=0.05), rel=1e-9)
    m, rec = campaign()
    f = prereg.contrast(m, prereg.Side("snaptrim", "bal", "snaptrim_duration"),
                        prereg.Side("snaptrim", "wpq", "snaptrim_duration"), rec)
    eff = 0.05
    n = prereg.repeats_needed(eff, f)
    def pw(k):
        return float(prereg.power(eff, f["se"] * math.sqrt(5 / k), f["df"] + (k - 5) * 3))
    assert pw(n) >= 0.8 > pw(n - 1)
    assert np.isnan(prereg.repeats_needed(0.0, f)) and np.isnan(prereg.repeats_needed(1e-6, f, max_n=20))

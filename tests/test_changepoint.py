"""analysis.stats.changepoint: the E-divisive statistic against its definition summed term by term, Welch's
test against scipy's, and the behaviour a history tool is asked for (a step found at its point with its
size, no change on noise, a spike at the end is no change with the minimum segment, determinism)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from analysis.stats import changepoint as cp


def q_by_definition(x: np.ndarray, lo: int, tau: int, hi: int) -> float:
    a, b = x[lo:tau], x[tau:hi]
    m, n = len(a), len(b)
    cross = sum(abs(i - j) for i in a for j in b)
    within_a = sum(abs(i - k) for i, k in itertools.combinations(a, 2))
    within_b = sum(abs(j - k) for j, k in itertools.combinations(b, 2))
    wa = within_a / (m * (m - 1) / 2) if m > 1 else 0.0
    wb = within_b / (n * (n - 1) / 2) if n > 1 else 0.0
    return m * n / (m + n) * (2 * cross / (m * n) - wa - wb)


def test_best_split_maximises_the_e_divisive_statistic_of_its_definition():
    rng = np.random.default_rng(7)
    x = np.r_[rng.normal(0, 1, 9), rng.normal(1.5, 1, 8), rng.normal(-0.5, 2, 7)]
    p = cp._prefix(x)
    for lo, hi, ms in ((0, len(x), 2), (3, 20, 3), (9, 24, 1)):
        q = {t: q_by_definition(x, lo, t, hi) for t in range(lo + ms, hi - ms + 1)}
        assert cp.best_split(p, lo, hi, ms) == max(q, key=q.get)
    assert cp.best_split(p, 0, 5, 3) is None  # no split leaves 3 points a side


def test_welch_matches_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 12), rng.normal(0.8, 2, 9)
    d, lo, hi, pv = cp._welch(a, b)
    r = stats.ttest_ind(b, a, equal_var=False)
    ci = r.confidence_interval(0.95)
    assert d == pytest.approx(b.mean() - a.mean())
    assert pv == pytest.approx(r.pvalue, rel=1e-10)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert cp._welch(np.ones(4), np.ones(4) * 2) == (1.0, 1.0, 1.0, 0.0)  # no spread: exact


def test_a_step_is_found_at_its_point_with_its_size():
    rng = np.random.default_rng(11)
    truth = np.log(0.92)  # −8 %
    x = np.r_[rng.normal(0, 0.01, 25), rng.normal(truth, 0.01, 15)]
    ch = cp.changes(x)
    assert [c.at for c in ch] == [25]
    c = ch[0]
    assert c.change == pytest.approx(-0.08, abs=0.01) and c.ci_lo < -0.08 + 0.01 and c.p < 1e-6
    assert c.ci_lo <= c.change <= c.ci_hi and (c.lo, c.hi) == (0, 40)
    # below the minimum change it is not reported; above a tiny one it is
    assert cp.changes(x, min_change=0.10) == [] and len(cp.changes(x, min_change=0.01)) == 1


def test_two_steps_are_both_found_and_tested_against_their_neighbours():
    rng = np.random.default_rng(5)
    x = np.r_[rng.normal(0, 0.01, 13), rng.normal(np.log(0.9), 0.01, 14), rng.normal(np.log(0.96), 0.01, 13)]
    ch = cp.changes(x)
    assert [c.at for c in ch] == [13, 27]
    assert [(c.lo, c.hi) for c in ch] == [(0, 27), (13, 40)]
    assert ch[0].change == pytest.approx(-0.10, abs=0.01) and ch[1].change == pytest.approx(0.96 / 0.9 - 1, abs=0.01)


def test_noise_gives_no_change_at_the_default_p():
    rng = np.random.default_rng(0)
    found = sum(bool(cp.changes(rng.normal(0, 0.03, 40), min_change=0.0)) for _ in range(200))
    assert found <= 10  # ≤ 5 % of null series, with no magnitude filter at all


def test_a_spike_at_the_last_point_is_a_change_only_without_the_minimum_segment():
    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(0, 0.002, 30), np.log(0.85)]
    assert [c.at for c in cp.changes(x, min_segment=1)] == [30]
    assert cp.changes(x) == []  # min_segment 3
    mid = np.r_[rng.normal(0, 0.002, 20), np.log(0.85), rng.normal(0, 0.002, 19)]
    assert cp.changes(mid) == []


def test_deterministic_and_short_series():
    rng = np.random.default_rng(9)
    x = np.r_[rng.normal(0, 0.02, 20), rng.normal(0.1, 0.02, 20)]
    assert cp.changes(x) == cp.changes(x.copy())
    assert cp.changes(x[:5]) == [] and cp.candidates(np.array([])) == []

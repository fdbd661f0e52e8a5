"""analysis.stats.verdicts: the verdict rules on hand-worked cases (the issue's asymmetric pair among them)
and the Benjamini–Hochberg step against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from analysis.stats import verdicts as vd

L = math.log1p


def one(q, ours, lo, hi, published):
    """The rule on % changes (converted to log ratios as the claims table does)."""
    v, d, s = vd.rule(q, L(ours / 100), L(lo / 100), L(hi / 100), L(published / 100))
    return str(v), str(d), str(s)


@pytest.mark.parametrize("q, ours, lo, hi, published, want", [
    # q < α, the published direction: where the published value lies against our CI
    (0.01, -20.0, -30.0, -10.0, -25.0, ("reproduced", "same", "inside")),
    (0.01, 151.0, 86.0, 239.0, 11.4, ("same direction, larger", "same", "ours larger")),   # the example
    (0.02, -5.8, -9.4, -2.0, -27.0, ("same direction, smaller", "same", "ours smaller")),  # part2-chart01-1
    # q < α the other way
    (0.01, 20.0, 10.0, 30.0, -25.0, ("contradicted", "opposite", "opposite side")),
    # q ≥ α: a CI short of the published value contradicts it (part1-fig01-2 of the issue) ...
    (0.36, -4.8, -20.5, 13.9, -25.0, ("contradicted", "not significant", "ours smaller")),
    # ... a CI that holds it cannot tell
    (0.30, -10.0, -30.0, 15.0, -25.0, ("undecided", "not significant", "inside")),
    # q ≥ α with a CI wholly past the published value (BH did not keep it): not decided either way
    (0.06, 60.0, 30.0, 95.0, 10.0, ("undecided", "not significant", "ours larger")),
    # no test
    (np.nan, 1.0, 0.0, 2.0, 5.0, ("not measurable here", "", "")),
])
def test_rules_by_direction_and_size(q, ours, lo, hi, published, want):
    assert one(q, ours, lo, hi, published) == want


def test_the_asymmetric_pair_is_judged_alike():
    """Before: part1-fig01-2 (a smaller effect, p ≥ α at power ≥ 0.8) was contradicted while
    part2-chart01-1 (a smaller effect, p < α) held.  Now both say the published size is ruled out: the
    first contradicted (no direction either), the second the same direction but smaller — neither holds."""
    a = one(0.36, -4.8, -20.5, 13.9, -25.0)
    b = one(0.02, -5.8, -9.4, -2.0, -27.0)
    assert a[2] == b[2] == "ours smaller"
    assert "reproduced" not in (a[0], b[0])
    # and the same data after BH with q ≥ α: contradicted, like the first
    assert one(0.08, -5.8, -9.4, -2.0, -27.0)[0] == "contradicted"


def test_a_share_claim_is_judged_on_its_log_ratio():
    # 45 % of the reference (log 0.45) against ours 57.7 % [50.3, 66.3]: a smaller reduction
    v, d, s = vd.rule(0.001, math.log(0.577), math.log(0.503), math.log(0.663), math.log(0.45))
    assert (str(v), str(d), str(s)) == ("same direction, smaller", "same", "ours smaller")


def test_vectorised_over_claims():
    v, _, _ = vd.rule([0.01, 0.5], [0.1, 0.0], [0.05, -0.2], [0.15, 0.2], [0.1, 0.1])
    assert list(v) == ["reproduced", "undecided"]


def test_bh_equals_statsmodels_and_keeps_nan_out_of_the_count():
    rng = np.random.default_rng(51)
    p = rng.uniform(size=36) ** 3
    assert vd.bh(p) == pytest.approx(multipletests(p, method="fdr_bh")[1], rel=1e-12)
    with_nan = np.r_[p[:10], np.nan, p[10:20], np.nan]
    q = vd.bh(with_nan)
    assert np.isnan(q[[10, 21]]).all()
    assert q[~np.isnan(with_nan)] == pytest.approx(multipletests(np.r_[p[:10], p[10:20]], method="fdr_bh")[1])
    assert np.isnan(vd.bh([np.nan])).all() and vd.bh([]).shape == (0,)
    # hand-worked: p = 0.01, 0.04, 0.03 (m = 3): q(0.01) = 0.03, q(0.03) = q(0.04) = 0.04
    assert list(vd.bh([0.01, 0.04, 0.03])) == pytest.approx([0.03, 0.04, 0.04])


def test_a_test_is_counted_under_its_least_favourable_verdict():
    assert vd.conservative(["reproduced", "contradicted"]) == "contradicted"
    assert vd.conservative(["reproduced", "same direction, smaller"]) == "same direction, smaller"
    assert vd.conservative(["undecided", "reproduced"]) == "undecided"
    assert vd.conservative(["not measurable here"]) == "not measurable here"

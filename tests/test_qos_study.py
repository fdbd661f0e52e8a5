"""analysis.qos_study: the two QoS studies as one notebook's parameter, and the conclusion computed from
hand-made tables whose counts are known."""

from __future__ import annotations

import pandas as pd

from analysis import qos_study as qs


def _claim(cid, verdict, ours, p, need, direction=1.0, study="part2", campaign="c", paired=None, test_id=None):
    return dict(campaign=campaign, study=study, claim_id=cid, published=20.0, unit="%", direction=direction,
                test_id=test_id if test_id is not None else (f"{campaign}:{cid}" if p == p else ""),
                ours=ours, ci_low=ours - 5, ci_high=ours + 5, p=p, q=p, n=3, repeats_needed=need, verdict=verdict,
                verdict_paired=paired or verdict, model_dependent=paired is not None and paired != verdict)


def test_conclusions_count_the_verdicts_of_this_study_and_campaign_only():
    st = qs.study("part2")
    claims = pd.DataFrame([
        _claim("part2-a-1", "same direction, smaller", 13.3, 0.022, 3.0),
        _claim("part2-b-1", "contradicted", -6.0, 0.38, 3.0, paired="undecided"),
        _claim("part2-c-1", "undecided", 2.0, 0.5, 7.0),
        _claim("part2-d-1", "undecided", 1.0, 0.7, 30.0),
        _claim("part2-e-1", "not measurable here", float("nan"), float("nan"), float("nan"), direction=float("nan")),
        _claim("part1-x-1", "reproduced", 1.0, 0.01, 3.0, study="part1"),        # the other study
        _claim("part2-a-1", "contradicted", 1.0, 0.01, 3.0, campaign="other")])  # another campaign
    rec = pd.DataFrame({"status": ["ok", "ok", "not stated"]})
    rc = pd.DataFrame({"kind": ["measured", "measured", "measured", "derived"],
                       "metric": ["client_iops", "client_iops", "clat_mean", "client_iops"],
                       "ratio": [0.05, 0.08, 3.0, None], "verdict": ["compared (absolute)"] * 3 + ["holds"],
                       "figure": ["Chart 1"] * 4})
    text = qs.conclusions(st, rec, claims, rc, "c", 0.05)
    lines = text.splitlines()
    assert lines[0] == "## Conclusions"
    assert "Of the 3 relative statements: recomputed within the printed rounding 2; with an input the text does " \
           "not state 1." in text
    assert "**Our runs against the 4 testable claims, 4 distinct tests** (`c`, α = 0.05 on Benjamini–Hochberg q" in text
    assert ("reproduced 0; same direction, smaller 1; same direction, larger 0; contradicted 1; undecided 2; "
            "not measurable here 0. Under the simple paired test: reproduced 0; same direction, smaller 1; same "
            "direction, larger 0; contradicted 0; undecided 3; not measurable here 0.") in text
    assert "Same direction, smaller: `part2-a-1` (published +20 %, ours +13.3 [+8.3, +18.3], q = 0.022)." in text
    assert "Contradicted: `part2-b-1`" in text and "part1-x-1" not in text
    assert "**Model-dependent** (1 claim: the paired test says otherwise): `part2-b-1` contradicted (paired: " \
           "undecided)." in text
    assert "Of the 2 undecided tests, 1 would reach power 0.8 for the published effect with at most 8 repeats " \
           "and 1 with at most 20" in text and "(median 18 repeats)" in text
    assert "clat_mean 3×; client_iops 0.05–0.08×." in text   # metrics in sorted order
    assert "Not reproducible" not in text

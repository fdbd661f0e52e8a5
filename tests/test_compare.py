"""The Bobtail seed's colour rule (analysis.stats.compare) on hand-made cases."""

from __future__ import annotations

import pandas as pd

from analysis.stats.compare import seed_colour_table, seed_colours


def colours(means: dict, stds: dict) -> dict:
    return seed_colours(pd.Series(means, dtype=float), pd.Series(stds, dtype=float)).to_dict()


def test_extremes_overlap_nothing_coloured():
    # highest 100 ± 10 → [90, 110]; lowest 85 ± 6 → [79, 91]: overlap at 90–91
    assert colours({"bfq": 100, "none": 85, "kyber": 95}, {"bfq": 10, "none": 6, "kyber": 1}) == \
        {"bfq": "", "none": "", "kyber": ""}


def test_touching_ranges_count_as_overlap():
    assert colours({"a": 10, "b": 6}, {"a": 2, "b": 2}) == {"a": "", "b": ""}  # [8, 12] and [4, 8]


def test_distinct_extremes_and_the_middle_ones():
    means = {"hi": 100, "lo": 50, "near_hi": 92, "near_lo": 58, "both": 75, "neither": 75.5}
    stds = {"hi": 5, "lo": 5, "near_hi": 4, "near_lo": 4, "both": 20, "neither": 1}
    # hi [95, 105], lo [45, 55]; near_hi [88, 96] overlaps hi only; near_lo [54, 62] lo only;
    # both [55, 95] touches both; neither [74.5, 76.5] touches none
    assert colours(means, stds) == {"hi": "green", "lo": "red", "near_hi": "green", "near_lo": "red",
                                    "both": "", "neither": ""}


def test_three_schedulers_as_in_the_seed():
    assert colours({"cfq": 30, "deadline": 41, "noop": 40}, {"cfq": 2, "deadline": 1.5, "noop": 1.5}) == \
        {"cfq": "red", "deadline": "green", "noop": "green"}


def test_table_over_repeats_uses_sample_std():
    rows = [("w", "write", s, v) for s, vals in (("none", [10, 12, 14]), ("bfq", [20, 22, 24]),
                                                 ("kyber", [11, 13, 21])) for v in vals]
    rows += [("r", "read", s, v) for s, vals in (("none", [1, 2]), ("bfq", [1.5, 1.6])) for v in vals]
    t = seed_colour_table(pd.DataFrame(rows, columns=["scenario", "ddir", "io_scheduler", "value"]))
    w = t.loc[("w", "write")]
    # none 12 ± 2 → [10, 14]; bfq 22 ± 2 → [20, 24]; kyber 15 ± 5.29 → [9.7, 20.3]: overlaps both
    assert w.loc["none", "std"] == 2.0 and w.loc["bfq", "mean"] == 22.0
    assert w["colour"].to_dict() == {"bfq": "green", "kyber": "", "none": "red"}
    # none 1.5 ± 0.707 contains bfq's range: no colour
    assert set(t.loc[("r", "read"), "colour"]) == {""}
    # ddof=0 shrinks the ranges: kyber 15 ± 4.32 → [10.68, 19.32] now overlaps only none's [10.37, 13.63]
    t0 = seed_colour_table(pd.DataFrame(rows, columns=["scenario", "ddir", "io_scheduler", "value"]), ddof=0)
    assert t0.loc[("w", "write", "kyber"), "colour"] == "red"

"""analysis.stats.iosched and analysis.figures.iosched on hand-made runs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.stats import iosched as io


def summary_rows():
    rows = []
    for sched, vals in (("bfq", [100, 110, 120]), ("none", [200, 210, 220])):
        for rep, v in enumerate(vals, start=1):
            for ddir, x in (("write", v * 2**20), ("read", 0.0)):  # fio reports the unused side as 0
                rows.append(("block-x", "fio-json", "bw", ddir, "job", "fio-ext4-write-4k-qd16", sched, str(rep), x))
            rows.append(("rados-x", "rados-bench", "bw", "write", "", "rados-4m-qd256", sched, str(rep), v * 2**20))
            rows.append(("rados-x", "rados-bench", "bw", "read", "", "rados-4m-qd256", sched, str(rep), 2 * v * 2**20))
    return pd.DataFrame(rows, columns=["campaign", "kind", "metric", "ddir", "job", "scenario", "io_scheduler", "repeat",
                                       "value"])


def test_block_values_parse_scenarios_and_convert_to_mib_s():
    s = summary_rows()
    f = io.block_values(s, "block-x")
    assert f[["target", "op", "bs", "qd"]].drop_duplicates().values.tolist() == [["ext4", "write", "4k", 16]]
    assert f.loc[f["io_scheduler"] == "none", "value"].tolist() == [200.0, 210.0, 220.0]  # read side (0) dropped
    r = io.block_values(s, "rados-x")
    assert set(r["op"]) == {"write", "read"} and set(r["target"]) == {"bluestore"} and set(r["qd"]) == {256}
    assert r.loc[(r["op"] == "read") & (r["io_scheduler"] == "bfq"), "value"].tolist() == [200.0, 220.0, 240.0]


def test_workload_verdicts_by_hand():
    v = pd.DataFrame([("c", "t", "write", "4k", 16, s, r, x)
                      for s, xs in (("a", [10, 11, 12]), ("b", [20, 21, 22]), ("c", [10.5, 11.5, 12.5]))
                      for r, x in enumerate(xs, start=1)],
                     columns=io.WORKLOAD + ["io_scheduler", "repeat", "value"])
    w = io.workload_verdicts(v).iloc[0]
    # within-group SS = 3 · 2 = 6 on 6 d.f.; between: means 11, 21, 11.5 around 14.5 → 3·(12.25+42.25+9) = 190.5
    # on 2 d.f. → F = 95.25 / 1 = 95.25
    from scipy import stats
    assert w["anova_p"] == pytest.approx(stats.f.sf(95.25, 2, 6))
    assert w["tukey_pairs"] == "a<b c<b"          # a and c overlap; b is above both
    assert (w["best"], w["worst"], w["repeats"]) == ("b", "a", 3)
    assert w["spread"] == pytest.approx(21 / 11 - 1)
    assert w["cv"] == pytest.approx(math.sqrt(((1 / 11) ** 2 + (1 / 21) ** 2 + (1 / 11.5) ** 2) / 3))
    assert w["repeats_needed"] == 2               # a 91 % spread at 7 % noise: 2 repeats already suffice
    one = io.workload_verdicts(v[v["repeat"] == 1]).iloc[0]
    assert math.isnan(one["anova_p"]) and one["tukey_pairs"] == "" and math.isnan(one["cv"])


def test_figures_label_and_colour_the_seed_way():
    import matplotlib
    matplotlib.use("Agg")
    from analysis.figures import iosched as fi
    from analysis.stats.compare import seed_colour_table
    v = pd.DataFrame([("c", "t", "write", "4k", 16, s, r, x)
                      for s, xs in (("bfq", [10, 11, 12]), ("none", [20, 21, 22]), ("kyber", [10.5, 11.5, 12.5]))
                      for r, x in enumerate(xs, start=1)], columns=io.WORKLOAD + ["io_scheduler", "repeat", "value"])
    fig = fi.scatters(v, "c", "write")
    assert fig.get_label() == "iosched-scatter-c-write"
    assert sorted(np.concatenate([ln.get_ydata() for ln in fig.axes[0].lines if ln.get_marker() == "."])) == sorted(v["value"])
    t = seed_colour_table(v, by=["target", "op", "bs", "qd"])
    fig = fi.summary_table(t, "c", "4k")
    cells = fig.axes[0].tables[0].get_celld()
    # row 1 (after the header), columns in SCHEDULERS order present: bfq, none, kyber → red, green, red
    fills = [matplotlib.colors.to_hex(cells[(1, j)].get_facecolor()) for j in range(3)]
    assert fills == [fi.FILL["red"], fi.FILL["green"], fi.FILL["red"]]
    assert fig.get_label() == "iosched-summary-c-4k"


def test_campaign_summary_counts_rejections():
    v = pd.DataFrame({"campaign": ["a", "a", "a", "b"], "anova_p": [0.01, 0.2, 0.04, 0.5],
                      "kw_p": [0.02, 0.3, 0.06, 0.4], "tukey_pairs": ["x<y", "", "", ""],
                      "spread": [0.1, 0.2, 0.3, 0.05], "cv": [0.1, 0.1, 0.2, 0.1], "repeats_needed": [10, 4, 8, 99]})
    s = io.campaign_summary(v, alpha=0.05)
    assert s.loc["a"].tolist() == [3, 2, 1, 1, pytest.approx(0.15), 0.2, 0.1, 8, 10]
    assert s.loc["b", "anova_sig"] == 0 and s.loc["b", "repeats_needed_max"] == 99


def test_conclusion_counts_colours_rejections_and_names_the_legacy_counterparts():
    from analysis.stats.iosched import conclusion
    idx = pd.MultiIndex.from_tuples(
        [("b", "raw", "read", "4k", 256, s) for s in ("bfq", "mq-deadline", "none", "kyber")]
        + [("b", "raw", "write", "4m", 16, s) for s in ("bfq", "mq-deadline", "none", "kyber")],
        names=["campaign", "target", "op", "bs", "qd", "io_scheduler"])
    colours = pd.DataFrame({"colour": ["", "green", "red", "", "", "", "", ""]}, index=idx)
    verdicts = pd.DataFrame({"campaign": ["b", "b", "r"], "target": ["raw", "raw", "pool"],
                             "op": ["read", "write", "write"], "bs": ["4k", "4m", "4m"], "qd": [256, 16, 16],
                             "anova_p": [0.001, 0.03, 0.5], "kw_p": [0.01, 0.2, 0.6],
                             "best": ["mq-deadline", "kyber", "bfq"], "worst": ["none", "none", "kyber"],
                             "spread": [0.41, 0.08, 0.02], "repeats_needed": [4.0, 30.0, 300.0]})
    text = conclusion(colours, verdicts, 0.05, repeats=6)
    assert "colours 1 of the 2 workloads**: 4k QD 256: 1." in text
    assert "`b` ANOVA 2 of 2 (by chance 0.1), Kruskal–Wallis 1; `r` ANOVA 0 of 1 (by chance 0.1), Kruskal–Wallis 0." in text
    assert "best: mq-deadline (deadline) 1, kyber (no counterpart) 1; worst: none (noop) 2" in text
    assert "The widest spread: b raw read 4k QD 256, mq-deadline over none by 41 %." in text
    assert "median of 30 per scheduler" in text and "(1 of 3 workloads need ≤ 6, 1 need ≤ 20)" in text

"""analysis.published.qos: the two mClock-vs-WPQ studies' numbers, checked against their seeds in place."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.published import qos as pq

HAVE_SEEDS = (pq.SEEDS / pq.PART1_SEED).is_file() and (pq.SEEDS / pq.PART2_SEED).is_file()
needs_seeds = pytest.mark.skipif(not HAVE_SEEDS, reason="../shared/seeds is absent")


def row(**kw) -> dict:
    base = {c: "" for c in pq.COLUMNS}
    base.update(seed=pq.PART1_SEED, seed_line="1", kind="measured", approx="0", origin="published")
    base.update({k: str(v) for k, v in kw.items()})
    return base


def frame(rows, tmp_path: Path) -> pd.DataFrame:
    p = tmp_path / "t.csv"
    pd.DataFrame(rows, columns=pq.COLUMNS).to_csv(p, index=False)
    return pq.load(p)


def test_recompute_derived_ok_approx_contradiction_and_not_stated(tmp_path):
    keys = dict(test="snaptrim", scheduler="mclock_scheduler", metric="client_iops")
    ref = dict(ref_test="snaptrim", ref_scheduler="wpq", ref_profile="", ref_metric="client_iops")
    rows = [row(test="snaptrim", scheduler="wpq", metric="client_iops", printed="17520.63", value="17520.63"),
            row(**keys, profile="balanced", printed="18998.55", value="18998.55"),
            # 18998.55 / 17520.63 − 1 = 8.435 %: printed 8.4 is within half a unit of 0.1
            row(**keys, profile="balanced", kind="derived", relation="change_pct", printed="8.4%", value="8.4", **ref),
            # printed 10 with "nearly": recomputed 8.435, off by 1.6 points → approx, not a contradiction
            row(**keys, profile="balanced", kind="derived", relation="change_pct", printed="10%", value="10",
                approx="1", **ref),
            row(**keys, profile="balanced", kind="derived", relation="change_pct", printed="12%", value="12", **ref),
            row(**keys, profile="high_recovery_ops", kind="derived", relation="change_pct", printed="4.4%",
                value="4.4", **ref),
            row(**keys, profile="balanced", kind="derived", relation="share_pct", printed="108%", value="108", **ref)]
    r = pq.recompute_derived(frame(rows, tmp_path))
    assert r["recomputed"].iloc[0] == pytest.approx((18998.55 / 17520.63 - 1) * 100)
    assert r["status"].tolist() == ["ok", "approx", "contradiction", "not stated", "ok"]
    assert r["recomputed"].iloc[4] == pytest.approx(18998.55 / 17520.63 * 100)
    assert math.isnan(r["recomputed"].iloc[3])


def test_check_provenance_names_row_and_reason(tmp_path):
    rows = [row(metric="client_iops", printed="123.45", value="123.45", sentence="not in the seed", test="snaptrim"),
            row(metric="iops_made_up", printed="1", value="1", sentence="", test="nowhere")]
    problems = pq.check_provenance(frame(rows, tmp_path), seeds=tmp_path, csv="t.csv")
    assert problems == [f"t.csv row 2 (client_iops '123.45'): seed {pq.PART1_SEED} not found in {tmp_path}",
                        f"t.csv row 3 (iops_made_up '1'): seed {pq.PART1_SEED} not found in {tmp_path}"]
    (tmp_path / pq.PART1_SEED).write_text("line one\nWPQ gave 17520.63 IOPS.\n", encoding="utf-8")
    rows = [row(seed_line="2", test="snaptrim", scheduler="wpq", metric="client_iops", printed="17520.63",
                value="17520.63", sentence="WPQ gave 17520.63 IOPS."),
            row(seed_line="2", test="nowhere", metric="iops_made_up", printed="5", value="5",
                sentence="WPQ gave"),
            row(seed_line="2", test="snaptrim", metric="client_iops", kind="derived", printed="17520.63",
                value="1", sentence="WPQ gave 17520.63 IOPS.")]
    problems = pq.check_provenance(frame(rows, tmp_path), seeds=tmp_path, csv="t.csv")
    assert problems == ["t.csv row 3 (iops_made_up '5'): printed '5' is not in its sentence",
                        "t.csv row 3 (iops_made_up '5'): test 'nowhere' not in " + repr(pq.TESTS + ("",)),
                        "t.csv row 3 (iops_made_up '5'): metric 'iops_made_up' is not one of METRICS",
                        "t.csv row 4 (client_iops '17520.63'): derived rows need relation change_pct/share_pct and ref_metric"]


@needs_seeds
@pytest.mark.parametrize("seed", [pq.PART1_SEED, pq.PART2_SEED])
def test_shipped_rows_match_their_seed(seed):
    df = pq.load(pq.FILES[seed])
    assert len(df) > 0 and (df["seed"] == seed).all()
    assert pq.check_provenance(df, csv=pq.FILES[seed].name) == []


def test_stated_values_prefer_the_precise_statement_whatever_the_order(tmp_path):
    k = dict(test="baseline", metric="client_iops")
    rows = [row(**k, printed="23K", value="23000", approx="1"), row(**k, printed="23323.71", value="23323.71"),
            row(**k, printed="23000", value="23000")]
    assert pq.stated_values(frame(rows, tmp_path))["printed"].tolist() == ["23323.71"]


@needs_seeds
def test_part1_contradictions_are_the_ones_read_in_the_seed():
    r = pq.recompute_derived(pq.load(pq.FILES[pq.PART1_SEED]))
    bad = r[r["status"] == "contradiction"].set_index(["seed_line", "metric"])["recomputed"].round(2)
    # line 196: "20%" lower clat vs 5.074/6.2 − 1 = −18.16 %; line 250: −43 % vs 12939.71/23323.71 − 1;
    # line 274: −5.6 % vs 4.677/4.945 − 1; line 324: a "18.7 %" faster snaptrim rate vs 528/431 − 1
    assert bad.to_dict() == {(196, "clat_during"): -18.16, (250, "client_iops"): -44.52,
                             (274, "clat_mean"): -5.42, (324, "snaptrim_rate"): 22.51}
    assert (r["status"] == "ok").sum() >= 30


def test_load_names_file_and_line_of_a_bad_number(tmp_path):
    rows = [row(metric="client_iops", printed="1", value="1"), row(metric="client_iops", printed="x", value="12,5")]
    p = tmp_path / "bad.csv"
    pd.DataFrame(rows, columns=pq.COLUMNS).to_csv(p, index=False)
    with pytest.raises(pq.ProvenanceError, match=r"bad\.csv:3: value '12,5' is not a number"):
        pq.load(p)
    pd.DataFrame([c for c in rows[:1]], columns=pq.COLUMNS).drop(columns="sentence").to_csv(p, index=False)
    with pytest.raises(pq.ProvenanceError, match="missing columns \\['sentence'\\]"):
        pq.load(p)

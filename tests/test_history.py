"""python -m analysis history on the shipped histories (data/raw/history/history-2026, make capture-history):
each change made at capture found within one point with its sign and a CI covering what was done, none on
the null history or its shuffles, a spike is no change, acknowledged changes do not fail, and the same
on the runs' bare fio JSON with one folder per point (data we did not capture: no run.json)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.ingest.anysource import load
from analysis.stats import changepoint as cp
from analysis.stats import history as hs

ROOT = Path(__file__).resolve().parents[1]
HIST = ROOT / "data/raw/history/history-2026"


@pytest.fixture(scope="module")
def summary() -> pd.DataFrame:
    return load(HIST).summary


@pytest.fixture(scope="module")
def found(summary) -> tuple[hs.History, pd.DataFrame]:
    h = hs.build(summary, metrics=["iops"])
    return h, hs.detect(h)


def of(changes: pd.DataFrame, history: str) -> pd.DataFrame:
    return changes[changes["series"].str.contains(f"history={history}", regex=False)].sort_values("index")


def test_the_recorded_changes_are_the_campaigns(summary):
    truth = hs.recorded_changes(summary)
    got = {(r.history, r.point, round(r.truth_pct, 2)) for r in truth.itertuples()}
    assert got == {("regression", 24, -6.0), ("two-changes", 13, -10.0), ("two-changes", 27, 6.67),
                   ("spike", 20, -15.0), ("spike", 21, 17.65)}
    runs = summary.drop_duplicates("run")
    assert len(runs) == 4 * 40 * 3 and set(runs["origin"]) == {"measured"}


def test_each_change_is_found_at_its_point_with_its_sign_and_size(summary, found):
    _, t = found
    truth = hs.recorded_changes(summary)
    cmp = hs.against_truth(t, truth[truth["history"] != "spike"])
    assert len(cmp) == 3 and cmp["found at"].notna().all()
    assert ((cmp["found at"] - cmp["point"]).abs() <= 1).all()
    assert (np.sign(cmp["found %"]) == np.sign(cmp["cap change %"])).all()
    assert cmp["covers"].all(), cmp
    assert len(of(t, "regression")) == 1 and len(of(t, "two-changes")) == 2
    r = of(t, "regression").iloc[0]
    assert r["direction"] == "worse" and r["fails"] and r["p"] < 1e-6
    assert r["median_before"] == pytest.approx(20000, rel=0.01) and r["median_after"] == pytest.approx(18800, rel=0.01)


def test_no_change_on_the_null_history_its_shuffles_or_the_spike(found):
    h, t = found
    assert of(t, "null").empty and of(t, "spike").empty
    series = hs.points(h).query("series.str.contains('history=null')", engine="python")["series"].iloc[0]
    hits, n = hs.shuffled_false_rate(h, series, "iops", n=100, seed=0)
    assert n == 100 and hits <= 5  # statistics alone (no magnitude filter): ≤ 5 % false changes


def test_a_spike_at_the_last_point_needs_the_minimum_segment(found):
    h, _ = found
    p = hs.points(h)
    x = p[p["series"].str.contains("history=spike", regex=False)].sort_values("index")["mlog"].to_numpy()[:21]
    assert cp.changes(x) == []                              # spike last, min segment 3: no change
    assert [c.at for c in cp.changes(x, min_segment=1)] == [20]  # a segment of one point would be one


def test_cli_exit_codes_ack_and_determinism(tmp_path, capsys):
    assert main(["history", str(HIST), "--where", "history=regression", "--metric", "iops"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "-6." in out
    ack = tmp_path / "ack.csv"
    ack.write_text("# changes we made on purpose\npoint,metric,series,note\n24,iops,history=regression,cap lowered\n")
    assert main(["history", str(HIST), "--where", "history=regression", "--metric", "iops", "--ack", str(ack)]) == 0
    assert "worse (acknowledged)" in capsys.readouterr().out
    assert main(["history", str(HIST), "--where", "history=null", "--metric", "iops"]) == 0
    assert "no change points" in capsys.readouterr().out
    # only the last 10 points: the regression at 24 of 40 is outside the window
    assert main(["history", str(HIST), "--where", "history=regression", "--metric", "iops", "--window", "10"]) == 0
    capsys.readouterr()
    runs = []
    for _ in range(2):
        assert main(["history", str(HIST), "--where", "history=two-changes", "--metric", "iops",
                     "--format", "json"]) == 1
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0] == runs[1] and len(runs[0]["changes"]) == 2


def test_bad_input_exits_2_naming_file_and_line(tmp_path, capsys):
    ack = tmp_path / "ack.csv"
    ack.write_text("point,metric\n24,iops\n,iops\n")
    assert main(["history", str(HIST), "--where", "history=null", "--metric", "iops", "--ack", str(ack)]) == 2
    assert f"{ack}:3: expected a point" in capsys.readouterr().err
    ack.write_text("when,metric\n")
    assert main(["history", str(HIST), "--where", "history=null", "--ack", str(ack)]) == 2
    assert f"{ack}:1: expected a CSV header with 'point'" in capsys.readouterr().err
    assert main(["history", str(tmp_path / "nope")]) == 2
    assert main(["history", str(HIST), "--min-change", "five"]) == 2


def test_bare_fio_json_one_folder_per_point(tmp_path, capsys):
    # the regression history as a user's nightly script would leave it: fio JSON only, one folder a night
    nights = []
    for k in range(40):
        night = tmp_path / f"night-{k:02d}"
        for rep in (1, 2, 3):
            src = HIST / "regression" / f"p-{k:03d}" / f"rep-{rep:02d}" / "fio.json.gz"
            (night / f"rep{rep}").mkdir(parents=True)
            (night / f"rep{rep}" / "fio.json").write_bytes(gzip.decompress(src.read_bytes()))
        nights.append(str(night))
    h = hs.build(load(tmp_path).summary, metrics=["iops"])
    assert h.notes == [] and h.runs["point"].nunique() == 40  # times from fio's own timestamp
    t = hs.detect(h)
    assert len(t) == 1 and abs(int(t["point"].str[-2:].iloc[0]) - 24) <= 1 and t["change_pct"].iloc[0] < -5
    # the same folders given one by one: each is a point
    assert main(["history", *nights[::-1], "--metric", "iops"]) == 1  # order comes from the runs' times
    assert "night-2" in capsys.readouterr().out


def test_fio_timestamp_is_a_run_key(summary):
    one = HIST / "null" / "p-000" / "rep-01"
    ts = json.loads(gzip.decompress((one / "fio.json.gz").read_bytes()))["timestamp"]
    row = summary[summary["run"] == "null/p-000/rep-01"]
    assert int(row["fio_timestamp"].astype(int).iloc[0]) == ts


def test_runs_without_a_time_of_their_own_are_ordered_by_file_date_with_a_note(tmp_path, capsys):
    import os
    for k in range(8):  # fio JSON with its timestamp removed: only the file's date orders it
        for rep in (1, 2):
            src = HIST / "regression" / f"p-{k + 20:03d}" / f"rep-{rep:02d}" / "fio.json.gz"
            doc = json.loads(gzip.decompress(src.read_bytes()))
            for key in ("timestamp", "timestamp_ms", "time"):
                doc.pop(key, None)
            f = tmp_path / f"night-{k}" / f"rep{rep}.json"
            f.parent.mkdir(exist_ok=True)
            f.write_text(json.dumps(doc))
            os.utime(f, (1.7e9 + 86400 * k, 1.7e9 + 86400 * k))
    assert main(["history", str(tmp_path), "--metric", "iops"]) == 1  # points 20..27: the cap change at 24
    cap = capsys.readouterr()
    assert "ordered by their files' modification times" in cap.err
    assert "night-4" in cap.out and "REGRESSION" in cap.out

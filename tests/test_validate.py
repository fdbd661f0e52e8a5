"""The value rules (analysis.ingest.validate, issue 26): damage made from real outputs — a negative or
non-numeric IOPS, a CPU fraction of 37, a fio log concatenated with itself, a rados bench output cut before
its summary, a file whose hash no longer matches the manifest — fails naming the file and what was expected,
and none of its rows reach the tables.  The undamaged originals pass (and every shipped file and corpus
sample passes: the other tests ingest them)."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from analysis.ingest import validate as v
from analysis.ingest.manifest import write_manifest
from analysis.ingest.walk import ingest
from conftest import FIXTURES, ROOT

FIO = FIXTURES / "fio" / "randread-4k-windowed"
RB = FIXTURES / "rados_bench" / "ceph-16.2.15_write_4k_t16_8s.txt"
SYSUTIL = ROOT / "data" / "raw" / "ceph-qos" / "qos-v2" / "snaptrim_recovery" / "balanced" / "rep-01" / "sysutil.jsonl.gz"


def _fio_json():
    return (FIO / "randread-4k-windowed.json").read_text()


def _sysutil(cpu0=None):
    lines = gzip.decompress(SYSUTIL.read_bytes()).decode().splitlines()[:20]
    if cpu0 is not None:
        lines[10] = lines[10].replace('"cpu0":', f'"cpu0":{cpu0},"x":', 1)
    return "\n".join(lines) + "\n"


def _rados_cut():
    text = RB.read_text()
    return text[:text.index("Total time run")]


DAMAGE = [
    ("fio.json", lambda: _fio_json().replace('"iops" : 1999.750062', '"iops" : -1999.750062', 1),
     "summary iops (job win, ddir read) = -1999.75 1/s: expected a rate ≥ 0 (1 such rows)"),
    ("fio.json", lambda: _fio_json().replace('"iops" : 1999.750062', '"iops" : "fast"', 1),
     "lacks iops"),
    ("sysutil.jsonl", lambda: _sysutil(cpu0=37.0), "expected a CPU fraction in [0, 1]"),
    ("win_iops.1.log", lambda: (FIO / "win_iops.1.log").read_text() * 2, "time goes back from"),
    ("rados.txt", _rados_cut, "lacks bw, iops: expected them (rados bench's summary"),
]


@pytest.mark.parametrize("name, make, expected", DAMAGE, ids=[d[2][:28] for d in DAMAGE])
def test_damaged_real_outputs_fail_with_what_was_expected_and_leave_no_rows(tmp_path, name, make, expected):
    (tmp_path / name).write_text(make())
    res = ingest(tmp_path, progress=False)
    row = res.files.set_index("path").loc[name]
    assert row["status"] == "failed", row.to_dict()
    assert expected in row["error"] and name in row["error"], row["error"]
    assert [r for r, _ in res.failed] == [name]
    for t in (res.summary, res.series):
        assert not (t["source"].astype(str) == name).any()


@pytest.mark.parametrize("name, make", [
    ("fio.json", _fio_json), ("sysutil.jsonl", _sysutil), ("win_iops.1.log", lambda: (FIO / "win_iops.1.log").read_text()),
    ("rados.txt", RB.read_text)])
def test_the_undamaged_originals_pass(tmp_path, name, make):
    (tmp_path / name).write_text(make())
    res = ingest(tmp_path, progress=False)
    assert res.failed == [] and res.files.set_index("path").loc[name, "status"] == "ok"
    assert (res.summary["source"].astype(str) == name).any()


def test_a_hash_mismatch_keeps_every_row_of_the_file_out(tmp_path):
    (tmp_path / "win_iops.1.log").write_text((FIO / "win_iops.1.log").read_text())
    write_manifest(tmp_path)
    p = tmp_path / "win_iops.1.log"
    p.write_text(p.read_text().replace("500, 2002", "500, 2003", 1))
    res = ingest(tmp_path, progress=False)
    assert "sha256 differs" in res.failed[0][1]
    assert res.series.empty and res.summary.empty


def test_the_rules_on_hand_made_rows():
    s = pd.DataFrame({"job": "j", "ddir": "read",
                      "metric": ["iops", "bw", "scrub_start", "clat_mean"],
                      "value": [10.0, 5.0, -3.0, np.nan], "unit": ["1/s", "B/s", "s", "ns"]})
    out = v.problems("fio-json", s, pd.DataFrame())
    # a negative timeline mark is allowed (exempt), NaN is not
    assert out == ["summary clat_mean (job j, ddir read): nan: expected a finite number (1 such rows)"]
    t = pd.DataFrame({"job": "cpu0", "ddir": "", "metric": "cpu_busy", "value": [0.5, 0.6, 0.7],
                      "unit": "ratio", "t_s": [0.0, 1.0, 0.5]})
    out = v.problems("sysutil", pd.DataFrame(columns=s.columns), t)
    assert out == ["series cpu_busy (job cpu0): time goes back from 1 s to 0.5 s: expected samples in time "
                   "order (1 steps back; a log concatenated with itself?)"]
    # interleaved series are each in order: no complaint
    t2 = pd.DataFrame({"job": ["cpu0", "cpu1", "cpu0", "cpu1"], "ddir": "", "metric": "cpu_busy",
                       "value": 0.1, "unit": "ratio", "t_s": [0.0, 0.0, 1.0, 1.0]})
    assert v.problems("sysutil", pd.DataFrame(columns=s.columns), t2) == []


def test_no_value_is_larger_than_a_tool_prints():
    """|value| ≥ 1e15 (bytes: 1e18) is damage ("1e300" in a file), in summary and series alike; the
    largest measured value shipped (a 33 s clat_max, 3.3e10 ns) passes."""
    s = pd.DataFrame({"job": "j", "ddir": "read", "metric": ["iops", "bw", "clat_max", "io_bytes"],
                      "value": [10.0, 5.0, 3.3e10, 2e17], "unit": ["1/s", "B/s", "ns", "B"]})
    assert v.problems("fio-json", s, pd.DataFrame()) == []
    s.loc[2, "value"] = 1e300
    s.loc[3, "value"] = 1e18
    assert v.problems("fio-json", s, pd.DataFrame()) == [
        "summary clat_max (job j, ddir read) = 1e+300 ns: expected |value| < 1e+15 (2 such rows)"]
    t = pd.DataFrame({"job": "j", "ddir": "", "metric": "bw", "value": [1.0, -2e15], "unit": "B/s",
                      "t_s": [0.0, 1.0]})
    assert v.problems("rados-bench", pd.DataFrame(columns=s.columns), t)[0].startswith(
        "series bw (job j) = -2e+15 B/s: expected |value| < 1e+15")


@pytest.mark.parametrize("metric, value, unit", [
    ("clat_mean", 5e4, "ns"), ("cpu_busy", 1.46, "ratio"), ("cpu_busy", 0.3, "ratio"), ("bw", -1.0, "B/s"),
    ("io_bytes", 2e17, "B"), ("io_bytes", 2e18, "B"), ("iops", 3e15, "1/s"), ("iops", np.inf, "1/s"),
    ("scrub_start", -3.0, "s")])
def test_categorical_frames_get_the_same_verdict_as_plain_ones(metric, value, unit):
    """Readers' frames (categorical labels) take a shortcut when no rule can fail (finite, in [0, 1e15),
    no 'ratio' unit); the verdict must be the full rules' verdict, which object labels always get."""
    s = pd.DataFrame({"job": "j", "ddir": "read", "metric": ["iops", metric], "value": [10.0, value],
                      "unit": ["1/s", unit]})
    t = s.assign(t_s=[0.0, 1.0])
    cats = {c: "category" for c in ("job", "ddir", "metric", "unit")}
    for kind in ("sysutil", "fio-log"):
        assert v.problems(kind, s.astype(cats), t.astype(cats)) == v.problems(kind, s, t)
    assert (v.problems("sysutil", s.astype(cats), t.astype(cats)) == []) == (
        metric in ("clat_mean", "scrub_start", "io_bytes") and value < 1e18 or value == 0.3)

"""``analysis.ingest.radosbench``: real Ceph 16.2.15 fixtures (tests/fixtures/rados_bench, made by
make_fixtures.sh on this project's VM), the third-party corpus in ../shared (skipped when absent),
bad input, and a Hypothesis fuzz over mutated real files.

Expected values are the numbers printed in the files, converted exactly: MB/s × 1048576 → B/s
(obj_bencher's "MB" is MiB), seconds × 10**9 → ns.  ``mibs``/``ns`` below do that conversion with
Decimal, so comparisons are exact (``==``), not approximate.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.ingest import radosbench as rb
from analysis.ingest.base import IngestError, Parsed, SERIES_COLUMNS, SUMMARY_COLUMNS

FIX = Path(__file__).resolve().parent / "fixtures" / "rados_bench"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "rados_bench"
V = "ceph-16.2.15"


def mibs(text: str) -> float:
    """A printed MB/s value in B/s, exactly as the reader converts it."""
    return float(Decimal(text) * 1048576)


def ns(text: str) -> float:
    """A printed latency (s) in ns, exactly."""
    return float(Decimal(text).scaleb(9))


def parse(path: Path) -> Parsed:
    return rb.parse(path, path.read_bytes())


def fixture(name: str) -> Parsed:
    path = FIX / name
    if not path.is_file():
        pytest.fail(f"fixture {name} missing: run tests/fixtures/rados_bench/make_fixtures.sh")
    return parse(path)


def corpus(rel: str) -> Parsed:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/rados_bench is absent")
    return parse(CORPUS / rel)


def row(p: Parsed, sec: float) -> dict[str, float]:
    """All series values of the table row with this ``sec``."""
    s = p.series
    sel = s[s["t_s"] == sec]
    out = {str(m): float(v) for m, v in zip(sel["metric"], sel["value"])}
    assert len(out) == 7, f"row sec={sec}: {len(out)} metrics"
    return out


def assert_row(p: Parsed, sec: float, cur_ops, started, finished, avg_mbs: str, cur_mbs: str,
               last_lat: str | None, avg_lat: str) -> None:
    r = row(p, sec)
    assert r["cur_ops"] == cur_ops
    assert r["started"] == started
    assert r["finished"] == finished
    assert r["avg_bw"] == mibs(avg_mbs)
    assert r["cur_bw"] == mibs(cur_mbs)
    if last_lat is None:
        assert math.isnan(r["last_lat"])
    else:
        assert r["last_lat"] == ns(last_lat)
    assert r["avg_lat"] == ns(avg_lat)


def summary(p: Parsed) -> dict[str, float]:
    return {str(m): float(v) for m, v in zip(p.summary["metric"], p.summary["value"])}


def units(p: Parsed) -> dict[str, str]:
    return {str(m): str(u) for m, u in zip(p.summary["metric"], p.summary["unit"])}


def n_rows(p: Parsed) -> int:
    return int((p.series["metric"] == "started").sum())


def check_frames(p: Parsed, ddir: str) -> None:
    assert list(p.summary.columns) == SUMMARY_COLUMNS
    assert list(p.series.columns) == SERIES_COLUMNS
    assert p.kind == "rados-bench"
    assert set(p.summary["job"]) <= {""} and set(p.series["job"]) <= {""}
    assert set(p.summary["ddir"]) <= {ddir} and set(p.series["ddir"]) <= {ddir}
    assert p.meta["tool"] == "rados bench"
    want = {"bw": "B/s", "bw_stddev": "B/s", "bw_max": "B/s", "bw_min": "B/s", "iops": "1/s",
            "iops_stddev": "1/s", "iops_max": "1/s", "iops_min": "1/s", "lat_mean": "ns",
            "lat_stddev": "ns", "lat_max": "ns", "lat_min": "ns", "total_time": "s",
            "ops_total": "count", "op_size": "B", "object_size": "B"}
    for m, u in units(p).items():
        assert want[m] == u, m
    su = {str(m): str(u) for m, u in zip(p.series["metric"], p.series["unit"])}
    assert su == ({} if not len(p.series) else
                  {"cur_ops": "count", "started": "count", "finished": "count", "avg_bw": "B/s",
                   "cur_bw": "B/s", "last_lat": "ns", "avg_lat": "ns"})


# --------------------------------------------------------------------------- real 16.2.15 fixtures
def test_fixture_readme_names_every_file():
    readme = (FIX / "README.md").read_text()
    assert "ceph version 16.2.15" in readme
    for f in FIX.iterdir():
        if f.suffix in (".txt", ".json"):
            assert f"`{f.name}`" in readme, f.name


def test_write_4k_t16_8s():
    p = fixture(f"{V}_write_4k_t16_8s.txt")
    check_frames(p, "write")
    m = p.meta
    assert (m["mode"], m["format"], m["concurrency"], m["op_size"], m["object_size"]) == \
        ("write", "text", 16, 4096, 4096)
    assert (m["duration_requested"], m["max_objects"], m["hints"]) == (8, 0, 1)
    assert m["object_prefix"] == "benchmark_data_vm_14876"
    assert m["tool_version"] is None and m["show_time"] is False and m["cleanup"] is None
    assert m["header_variant"]["labels"] == "last lat(s)  avg lat(s)"
    assert m["header_variant"]["field_end_columns"] == [5, 13, 23, 33, 43, 53, 65, 77]
    assert not p.partial
    assert n_rows(p) == 8 and len(p.series) == 56
    assert sorted(set(p.series["t_s"])) == [float(i) for i in range(8)]
    assert_row(p, 0, 16, 16, 0, "0", "0", None, "0")
    assert_row(p, 3, 16, 5256, 5240, "6.81533", "6.4375", "0.00686499", "0.00915445")
    assert_row(p, 7, 16, 11770, 11754, "6.5538", "6.14844", "0.02659", "0.00951683")
    assert summary(p) == {
        "total_time": 8.00494, "ops_total": 13535, "op_size": 4096, "object_size": 4096,
        "bw": mibs("6.60481"), "bw_stddev": mibs("0.912231"), "bw_max": mibs("8.00781"),
        "bw_min": mibs("5.29297"), "iops": 1690, "iops_stddev": 233.531, "iops_max": 2050,
        "iops_min": 1355, "lat_mean": ns("0.0094566"), "lat_stddev": ns("0.00548182"),
        "lat_max": ns("0.0693539"), "lat_min": ns("0.00117575")}
    assert p.value("lat_min") == 1175750.0
    c = m["check_ops_total_vs_table"]
    assert (c["ops_total"], c["last_started"], c["last_finished"], c["last_cur_ops"]) == \
        (13535, 11770, 11754, 16)
    assert c["started_after_last_row"] == 1765 and c["ok"] and not c["exact"]


def test_seq_t16_5s():
    p = fixture(f"{V}_seq_t16_5s.txt")
    check_frames(p, "read")
    # 16.2.15 prints the same text for seq and rand: the reader does not guess
    assert p.meta["mode"] == "read" and "does not say" in p.meta["mode_evidence"]
    assert p.meta["concurrency"] is None and p.meta["object_prefix"] is None
    assert n_rows(p) == 5
    assert_row(p, 0, 0, 0, 0, "0", "0", None, "0")
    assert_row(p, 4, 15, 13029, 13014, "12.7029", "11.3477", "0.00361771", "0.00489623")
    assert summary(p) == {
        "total_time": 4.12838, "ops_total": 13535, "op_size": 4096, "object_size": 4096,
        "bw": mibs("12.8067"), "iops": 3278, "iops_stddev": 492.426, "iops_max": 3755,
        "iops_min": 2763, "lat_mean": ns("0.00485976"), "lat_max": ns("0.0372576"),
        "lat_min": ns("0.00031077")}
    c = p.meta["check_ops_total_vs_table"]
    assert c["ok"] and c["started_after_last_row"] == 13535 - 13029


def test_rand_t16_5s():
    p = fixture(f"{V}_rand_t16_5s.txt")
    check_frames(p, "read")
    assert p.meta["mode"] == "read"
    assert n_rows(p) == 5
    # "0.000775721" fills setw(11) exactly
    assert_row(p, 3, 16, 23812, 23796, "30.976", "32.168", "0.000775721", "0.00200515")
    assert row(p, 3)["last_lat"] == 775721.0
    assert_row(p, 4, 16, 33058, 33042, "32.2562", "36.1172", "0.00226468", "0.00192521")
    s = summary(p)
    assert s["ops_total"] == 41244 and s["total_time"] == 5.00081 and s["iops"] == 8247
    assert s["bw"] == mibs("32.2166") and s["lat_min"] == 199783.0
    assert "bw_stddev" not in s and "lat_stddev" not in s  # not printed for reads


def test_write_64k_show_time():
    p = fixture(f"{V}_write_64k_t8_6s_show-time.txt")
    check_frames(p, "write")
    m = p.meta
    assert m["show_time"] is True and m["header_variant"]["timestamp_prefix"] is True
    assert (m["concurrency"], m["op_size"], m["object_size"], m["duration_requested"]) == \
        (8, 65536, 65536, 6)
    assert m["object_prefix"] == "benchmark_data_vm_15000"
    assert n_rows(p) == 7
    assert_row(p, 2, 8, 1845, 1837, "57.3476", "53.25", "0.00488975", "0.00869263")
    assert_row(p, 6, 5, 5441, 5436, "56.598", "61.375", "0.00872254", "0.00882451")
    s = summary(p)
    # the first summary line carries the timestamp, the others not
    assert s["total_time"] == 6.0087 and s["ops_total"] == 5441 and s["bw"] == mibs("56.595")
    assert s["iops"] == 905 and s["lat_min"] == ns("0.00156516")
    c = m["check_ops_total_vs_table"]
    assert c["exact"] and c["ok"]  # the last row (sec 6) already shows all 5441 started


def test_write_22s_periodic_lines_and_cleanup():
    p = fixture(f"{V}_write_4k_t4_22s_cleanup.txt")
    check_frames(p, "write")
    m = p.meta
    assert n_rows(p) == 22 and m["header_lines"] == 2 and m["periodic_lat_lines"] == 1
    assert m["cleanup"] == {"started": True, "removed_objects": 25926, "cleanup_time_s": 26.1881}
    assert_row(p, 19, 4, 23569, 23565, "4.84381", "2.80469", "0.00613463", "0.00322164")
    assert_row(p, 20, 4, 24299, 24295, "4.74418", "2.85156", "0.00908482", "0.00328813")
    assert_row(p, 21, 4, 25063, 25059, "4.66033", "2.98438", "0.00755051", "0.00334833")
    s = summary(p)
    assert s["ops_total"] == 25926 and s["total_time"] == 22.0022
    assert s["bw_min"] == mibs("2.80469") and s["lat_min"] == ns("0.000930157")
    assert m["check_ops_total_vs_table"]["ok"]


def test_json_write():
    p = fixture(f"{V}_write_4k_t16_5s_json.json")
    check_frames(p, "write")
    m = p.meta
    assert (m["format"], m["mode"], m["concurrency"], m["op_size"], m["object_size"]) == \
        ("json", "write", 16, 4096, 4096)
    assert (m["duration_requested"], m["max_objects"], m["hints"]) == (5, 0, 1)
    assert m["object_prefix"] == "benchmark_data_vm_15103"
    assert n_rows(p) == 6
    # sec 0 has no completion: last_lat is NaN like the text's '-' (the JSON prints 0.000000)
    assert_row(p, 0, 16, 16, 0, "0", "0", None, "0")
    assert m["json_no_change_rows"] == 1
    assert_row(p, 1, 15, 1365, 1350, "5.267898", "5.273438", "0.004282", "0.011756")
    assert_row(p, 5, 8, 7356, 7348, "5.737628", "5.542969", "0.014306", "0.010881")
    assert summary(p) == {
        "total_time": 5.013472, "ops_total": 7356, "op_size": 4096, "object_size": 4096,
        "bw": mibs("5.731432"), "bw_stddev": mibs("0.535609"), "bw_max": mibs("6.566406"),
        "bw_min": mibs("5.273438"), "iops": 1467, "iops_max": 1681, "iops_min": 1350,
        "lat_mean": ns("0.010882"), "lat_stddev": ns("0.006033"), "lat_max": ns("0.049651"),
        "lat_min": ns("0.001351")}
    # write_bench dumps stddev_iops with "%d" from a double: "1319543728" is not a measurement
    assert "stddev_iops" in m["dropped"] and "1319543728" in m["dropped"]["stddev_iops"]
    c = m["check_ops_total_vs_table"]
    assert c["exact"] and c["ok"]


def test_json_seq_and_rand():
    p = fixture(f"{V}_seq_t16_5s_json.json")
    check_frames(p, "read")
    assert p.meta["format"] == "json" and p.meta["mode"] == "read"
    assert n_rows(p) == 2
    assert_row(p, 1, 16, 4108, 4092, "15.962577", "15.984375", "0.003759", "0.003889")
    s = summary(p)
    assert s["ops_total"] == 7356 and s["total_time"] == 1.730067 and s["iops"] == 4251
    assert s["iops_stddev"] == 0.0  # seq dumps it with %f: kept
    assert s["bw"] == mibs("16.608824") and s["lat_min"] == 344000.0
    r = fixture(f"{V}_rand_t16_5s_json.json")
    assert n_rows(r) == 5
    assert_row(r, 4, 16, 43001, 42985, "41.962939", "40.179688", "0.005791", "0.001483")
    assert summary(r)["ops_total"] == 52889 and summary(r)["iops_stddev"] == 1421.03633


def test_json_and_text_same_metric_names():
    pairs = [(f"{V}_write_4k_t16_8s.txt", f"{V}_write_4k_t16_5s_json.json"),
             (f"{V}_seq_t16_5s.txt", f"{V}_seq_t16_5s_json.json"),
             (f"{V}_rand_t16_5s.txt", f"{V}_rand_t16_5s_json.json")]
    for text, js in pairs:
        t, j = fixture(text), fixture(js)
        assert set(t.series["metric"]) == set(j.series["metric"])
        # the only difference allowed: write JSON's stddev_iops is an undefined value ("%d" of a
        # double) and is dropped, with the reason in meta["dropped"]
        dropped = {"iops_stddev"} if "stddev_iops" in j.meta.get("dropped", {}) else set()
        assert set(t.summary["metric"]) - dropped == set(j.summary["metric"])
        assert {k: u for k, u in units(t).items() if k not in dropped} == units(j)
        assert t.meta["mode"] == j.meta["mode"]


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.glob("ceph-*")
                                        if not p.name.endswith(".stderr.txt")))
def test_every_fixture_sniffs_and_parses(name):
    data = (FIX / name).read_bytes()
    assert rb.sniff(data[:65536])
    p = rb.parse(FIX / name, data)
    assert isinstance(p, Parsed) and not p.partial
    assert p.meta["check_ops_total_vs_table"]["ok"]


# --------------------------------------------------------------------------------- shared corpus
def test_corpus_fibird_1800s():
    p = corpus("no_license/fibird_2019-11_write_16k_t32_1800s.log")
    check_frames(p, "write")
    m = p.meta
    assert n_rows(p) == 1800 and m["header_lines"] == 90 and m["periodic_lat_lines"] == 89
    assert (m["concurrency"], m["op_size"], m["object_size"], m["duration_requested"]) == \
        (32, 16384, 16384, 1800)
    assert m["object_prefix"] == "benchmark_data_BJ-IDC1-10-10-30-143_2654335"
    assert_row(p, 0, 0, 0, 0, "0", "0", None, "0")
    assert_row(p, 1, 32, 3029, 2997, "46.8257", "46.8281", "0.0103718", "0.0106214")
    assert_row(p, 21, 32, 61163, 61131, "45.48", "42.9219", "0.00547769", "0.010992")
    assert_row(p, 1799, 32, 4992911, 4992879, "43.3604", "49.3438", "0.0120236", "0.0115308")
    s = summary(p)
    assert s["ops_total"] == 4995339 and s["iops"] == 2775 and s["lat_min"] == 894677.0
    assert s["total_time"] == 1800.01 and s["bw"] == mibs("43.3621")
    assert s["iops_stddev"] == 386 and s["lat_max"] == ns("0.328624")
    assert m["cleanup"] == {"started": True, "removed_objects": 4995339, "cleanup_time_s": 1876.71}
    c = m["check_ops_total_vs_table"]
    assert c["ok"] and not c["exact"] and c["started_after_last_row"] == 4995339 - 4992911


def test_corpus_kairen_write_4k_run_together_columns():
    p = corpus("no_license/kairen_2016-06_write_4k_t1_20s.txt")
    check_frames(p, "write")
    assert p.meta["header_variant"]["labels"] == "last lat   avg lat"
    assert p.meta["header_variant"]["field_end_columns"] == [5, 13, 23, 33, 43, 53, 63, 73]
    assert n_rows(p) == 21
    # "    5       1       402       401  0.313248   0.468750.00526002  0.012455"
    assert_row(p, 5, 1, 402, 401, "0.313248", "0.46875", "0.00526002", "0.012455")
    assert row(p, 5)["cur_bw"] == 0.46875 * 1048576 and row(p, 5)["last_lat"] == 5260020.0
    # "   16       1      1601      1600  0.390585   0.406250.008369210.00999658"
    assert_row(p, 16, 1, 1601, 1600, "0.390585", "0.40625", "0.00836921", "0.00999658")
    # "   20       1      2044      2043  0.398983  0.433594 0.01103910.00978368"
    assert_row(p, 20, 1, 2044, 2043, "0.398983", "0.433594", "0.0110391", "0.00978368")
    s = summary(p)
    assert s["ops_total"] == 2045 and s["bw"] == mibs("0.399") and s["iops"] == 102
    assert s["lat_mean"] == ns("0.00978") and s["lat_min"] == ns("0.00428")
    assert "object_size" not in s  # neither the banner nor the summary prints it
    assert p.meta["concurrency"] == 1 and p.meta["max_objects"] is None
    assert p.meta["check_ops_total_vs_table"]["ok"]


def test_corpus_kairen_write_4m():
    p = corpus("no_license/kairen_2016-06_write_4M_t1_20s.txt")
    assert n_rows(p) == 21
    assert_row(p, 0, 1, 1, 0, "0", "0", None, "0")
    assert_row(p, 20, 1, 236, 235, "46.9927", "52", "0.0714831", "0.0849784")
    s = summary(p)
    assert s["ops_total"] == 237 and s["iops"] == 11 and s["iops_stddev"] == 2
    assert s["bw"] == mibs("47.1") and s["bw_max"] == mibs("56") and s["lat_max"] == ns("0.285")


def test_corpus_kairen_seq_average_iops_without_colon():
    p = corpus("no_license/kairen_2016-06_seq_4M_t1.txt")
    check_frames(p, "read")
    assert p.meta["mode"] == "seq"  # 'Average IOPS          20': only seq_read_bench lacked ':'
    assert p.value("iops") == 20
    # header without leading indentation: "sec Cur ops   started ..."
    assert p.meta["header_variant"]["field_end_columns"] == [3, 11, 21, 31, 41, 51, 61, 71]
    assert n_rows(p) == 12
    assert_row(p, 11, 1, 227, 226, "82.1657", "84", "0.044701", "0.0470168")
    s = summary(p)
    assert s["ops_total"] == 228 and s["total_time"] == 11.0842 and s["op_size"] == 4194304
    assert s["iops_min"] == 19 and s["lat_mean"] == ns("0.047")


def test_corpus_kairen_rand():
    p = corpus("no_license/kairen_2016-06_rand_4M_t1.txt")
    assert p.meta["mode"] == "rand" and p.value("iops") == 20
    assert n_rows(p) == 21 and p.meta["periodic_lat_lines"] == 1 and p.meta["header_lines"] == 2
    assert_row(p, 20, 1, 414, 413, "82.5854", "80", "0.0426021", "0.0467618")
    assert p.value("ops_total") == 415 and p.value("total_time") == 20.058582


def test_corpus_leseb_047_oldest_format():
    p = corpus("no_license/leseb_ceph-0.47.2_write_4M_t16_100s.txt")
    check_frames(p, "write")
    m = p.meta
    assert m["banner"]["duration_kind"] == "at least" and m["duration_requested"] == 100
    assert m["object_prefix"] is None and m["max_objects"] is None
    assert n_rows(p) == 102 and m["header_lines"] == 6 and m["periodic_lat_lines"] == 5
    assert_row(p, 1, 16, 31, 15, "59.8134", "60", "0.988616", "0.774045")
    assert_row(p, 101, 2, 1341, 1339, "53.0208", "60", "1.66956", "1.20448")
    # "Bandwidth (MB/sec):    53.049 " (trailing space), a blank line inside the summary
    assert summary(p) == {"total_time": 101.114344, "ops_total": 1341, "op_size": 4194304,
                          "bw": mibs("53.049"), "lat_mean": ns("1.20432"),
                          "lat_max": ns("2.68683"), "lat_min": ns("0.120974")}
    assert m["check_ops_total_vs_table"]["exact"]


def test_corpus_leseb_summary_only_fragments():
    w = corpus("no_license/leseb_2012-08_argonaut_write_summary.txt")
    assert not w.partial and w.meta["table"] is False and "no table" in w.meta["table_note"]
    assert w.meta["mode"] == "write" and len(w.series) == 0
    assert summary(w) == {"total_time": 301.488871, "ops_total": 4200, "op_size": 4194304,
                          "bw": mibs("55.723"), "bw_stddev": mibs("16.1221"),
                          "bw_max": mibs("100"), "bw_min": 0.0, "lat_mean": ns("1.14695"),
                          "lat_stddev": ns("0.510571"), "lat_max": ns("6.16363")}
    r = corpus("no_license/leseb_2012-08_argonaut_seq_summary.txt")
    assert r.meta["mode"] == "read" and not r.partial
    assert summary(r) == {"total_time": 300.966543, "ops_total": 10528, "op_size": 4194304,
                          "bw": mibs("110.551"), "lat_mean": ns("0.578213"),
                          "lat_max": ns("1.42949"), "lat_min": ns("0.085003")}


def test_corpus_openelectronicslab_15_2_9():
    p = corpus("no_license/openelectronicslab_ceph-15.2.9_rook_write_4M_10s.txt")
    assert n_rows(p) == 12
    assert_row(p, 5, 16, 59, 43, "34.3792", "36", "3.82171", "1.46022")
    assert_row(p, 11, 6, 104, 98, "35.6051", "36", "3.62931", "1.59929")
    s = summary(p)
    assert s["ops_total"] == 104 and s["iops"] == 9 and s["iops_stddev"] == 1.81409
    assert s["lat_min"] == ns("0.367808") and s["bw"] == mibs("36.1668")
    assert p.meta["cleanup"] == {"started": True, "removed_objects": 104,
                                 "cleanup_time_s": 0.268528}
    assert p.meta["check_ops_total_vs_table"]["exact"]


def test_corpus_interleaved_debug_lines_are_skipped():
    p = corpus("no_license/sunghohong2_2018-06_write_4M_1s_interleaved-debug.log")
    assert n_rows(p) == 2
    assert_row(p, 0, 0, 0, 0, "0", "0", None, "0")
    assert_row(p, 1, 16, 35, 19, "75.9791", "76", "0.42564", "0.592199")
    assert p.meta["skipped_lines"] > 90 and 1 in p.meta["skipped_line_numbers"]
    s = summary(p)
    assert s["ops_total"] == 36 and s["iops"] == 28 and s["iops_max"] == 19  # as printed
    assert p.meta["concurrency"] == 16 and p.meta["object_prefix"] == "benchmark_data_w2_19915"


def test_corpus_yzhan_head_is_partial_and_tail_overflow():
    h = corpus("lgpl_fork/yzhan298_2019-10_octopus-dev_write_4k_t64_180s.head.txt")
    assert h.partial and n_rows(h) == 21 and h.meta["periodic_lat_lines"] == 1
    assert_row(h, 20, 64, 6239, 6175, "1.20587", "1.15234", "0.274529", "0.206003")
    assert set(summary(h)) == {"op_size", "object_size"} and h.meta["op_size_from"] == "banner"
    t = corpus("lgpl_fork/yzhan298_2019-10_octopus-dev_write_4k_t64_180s.tail.txt")
    assert not t.partial and n_rows(t) == 1
    # "  180      56     46723     46667    1.0071 0.0351562    0.367672    0.246478"
    assert_row(t, 180, 56, 46723, 46667, "1.0071", "0.0351562", "0.367672", "0.246478")
    assert t.meta["mode"] == "write" and t.value("ops_total") == 46723
    assert t.meta["check_ops_total_vs_table"]["exact"]


def test_corpus_every_file_parses_or_names_file_and_line():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/rados_bench is absent")
    files = [f for f in sorted(CORPUS.rglob("*")) if f.is_file() and f.name != "SOURCES.md"]
    assert len(files) >= 11
    for f in files:
        data = f.read_bytes()
        assert rb.sniff(data[:65536]), f
        try:
            p = rb.parse(f, data)
        except IngestError as e:  # allowed, but it must say where
            assert e.path == str(f) and e.line is not None
            continue
        assert isinstance(p, Parsed)
        if "check_ops_total_vs_table" in p.meta:
            assert p.meta["check_ops_total_vs_table"]["ok"], f


# ------------------------------------------------------------------------------------ detection
def test_sniff_rejects_fio_and_other_content():
    assert not rb.sniff(b'{\n  "fio version" : "fio-3.33",\n  "jobs" : []\n}')
    assert not rb.sniff(b"0, 123, 0, 4096\n1, 456, 1, 4096\n")
    assert not rb.sniff(b"")
    assert not rb.sniff(b"hello\x00world")
    assert not rb.sniff(b'{"datas": [1, 2]}')  # JSON without rados bench keys
    for f in (FIX.parent / "fio").glob("**/*") if (FIX.parent / "fio").is_dir() else []:
        if f.is_file():
            assert not rb.sniff(f.read_bytes()[:65536]), f


def test_sniff_content_not_name(tmp_path):
    src = (FIX / f"{V}_write_4k_t16_8s.txt").read_bytes()
    p = tmp_path / "fio_output.json"
    p.write_bytes(src)
    assert rb.sniff(src[:65536])
    assert parse(p).value("ops_total") == 13535


# ------------------------------------------------------------------------------------ bad input
def _lines(name: str) -> list[bytes]:
    return (FIX / name).read_bytes().split(b"\n")


def _err(data: bytes, name: str = "bad.txt") -> IngestError:
    with pytest.raises(IngestError) as ei:
        rb.parse(Path(name), data)
    e = ei.value
    assert e.path == name
    return e


def test_empty_and_binary():
    assert _err(b"").line == 1
    assert _err(b"\n \n\t\n").line == 1
    e = _err(b"hints = 1\nMaintaining \x00 binary")
    assert e.line == 2 and "binary" in e.message


def test_garbage():
    e = _err(b"this is not\nrados bench output\n")
    assert e.line is not None and "table" in e.message
    e = _err(bytes(random.Random(1).randrange(1, 256) for _ in range(5000)))
    assert e.line is not None


def test_truncated_mid_row():
    lines = _lines(f"{V}_write_4k_t16_8s.txt")
    # lines[8] is "    4      16      6930      6914   6.74375 ..." (line 9)
    data = b"\n".join(lines[:8]) + b"\n" + lines[8][:30]
    e = _err(data)
    assert e.line == 9 and "8 columns" in e.message


def test_truncated_at_line_end_is_partial():
    lines = _lines(f"{V}_write_4k_t16_8s.txt")
    p = rb.parse(Path("cut.txt"), b"\n".join(lines[:9]) + b"\n")
    assert p.partial and n_rows(p) == 5 and "summary" in p.meta["partial_reason"]
    assert "ops_total" not in summary(p)


def test_corrupted_numeric_fields():
    lines = _lines(f"{V}_write_4k_t16_8s.txt")
    for i, bad in ((6, lines[6].replace(b"7.00568", b"7.0x568")),      # avg MB/s
                   (7, lines[7].replace(b"5256", b"52.6")),            # started: not a count
                   (10, lines[10].replace(b"0.0124066", b"0.01 4066")),  # space inside a value
                   (11, lines[11] + b"  42")):                         # 9 columns
        data = b"\n".join(lines[:i] + [bad] + lines[i + 1:])
        e = _err(data)
        assert e.line == i + 1, (bad, e)
        assert "table row" in e.message


def test_absurd_exponents():
    w = (FIX / f"{V}_write_4k_t16_8s.txt").read_bytes()
    e = _err(w.replace(b"Bandwidth (MB/sec):     6.60481", b"Bandwidth (MB/sec):     6e99999999"))
    assert e.line == 17
    e = _err(w.replace(b"   8.00781", b" 8e9999999"))
    assert e.line == 6
    p = rb.parse(Path("ok.txt"), w.replace(b"   8.00781", b"   8.0e+00"))  # %g-style exponent
    assert row(p, 1)["cur_bw"] == 8.0 * 1048576


def test_corrupted_summary_value():
    data = (FIX / f"{V}_write_4k_t16_8s.txt").read_bytes().replace(
        b"Total writes made:      13535", b"Total writes made:      13s35")
    e = _err(data)
    assert e.line == 14 and "Total writes made" in e.message


def test_garbled_header_means_rows_without_header():
    data = (FIX / f"{V}_write_4k_t16_8s.txt").read_bytes().replace(b"Cur ops", b"Cur oqs")
    e = _err(data)
    assert e.line == 5 and "header" in e.message


def test_two_runs_in_one_file():
    one = (FIX / f"{V}_write_4k_t16_8s.txt").read_bytes()
    e = _err(one + one)
    assert e.line is not None and ("second" in e.message or "after the summary" in e.message)


def test_json_truncated_and_bad_value():
    js = (FIX / f"{V}_write_4k_t16_5s_json.json").read_bytes()
    e = _err(js[:300], "bad.json")
    assert e.line == 2 and "JSON" in e.message
    e = _err(js.replace(b'"total_time_run":"5.013472"', b'"total_time_run":"5.0x3472"'), "b.json")
    assert e.line == 2 and "total_time_run" in e.message


def test_json_write_with_cleanup_text_inside_the_object():
    """A JSON write without --no-cleanup (real capture): obj_bencher prints the cleanup lines with
    plain cout while the formatter still holds the rest of the object, so the file reads
    ``…"avg_lat":"0.006658"}Cleaning up (deleting benchmark objects)`` / ``Removed 7201 objects`` /
    ``Clean up completed and total clean up time :2.15112`` / ``],"total_time_run":…``."""
    p = fixture(f"{V}_write_4k_t16_3s_json_cleanup.json")
    check_frames(p, "write")
    assert p.meta["cleanup"] == {"started": True, "removed_objects": 7201, "cleanup_time_s": 2.15112}
    assert p.meta["object_prefix"] == "benchmark_data_vm_3308" and p.meta["duration_requested"] == 3
    assert n_rows(p) == 4
    assert_row(p, 0, 0, 0, 0, "0", "0", None, "0")
    assert_row(p, 3, 16, 7201, 7185, "9.354460", "8.878906", "0.002458", "0.006658")
    assert summary(p) == {
        "total_time": 3.003046, "ops_total": 7201, "op_size": 4096, "object_size": 4096,
        "bw": mibs("9.366791"), "bw_stddev": mibs("0.422381"), "bw_max": mibs("9.683594"),
        "bw_min": mibs("8.878906"), "iops": 2397, "iops_max": 2479, "iops_min": 2273,
        "lat_mean": ns("0.006667"), "lat_stddev": ns("0.003416"), "lat_max": ns("0.031522"),
        "lat_min": ns("0.001250")}
    assert "170304432" in p.meta["dropped"]["stddev_iops"]
    assert p.meta["check_ops_total_vs_table"]["exact"]


def test_json_bad_cleanup_time():
    js = (FIX / f"{V}_write_4k_t16_3s_json_cleanup.json").read_bytes()
    e = _err(js.replace(b"time :2.15112", b"time :2.1.5"), "c.json")
    assert e.line == 4 and "clean up" in e.message.lower()
    e = _err(js + b"Clean up completed and total clean up time :abc\n", "d.json")
    assert e.line == 6


def test_json_error_lines_survive_cleanup_text():
    js = (FIX / f"{V}_write_4k_t16_3s_json_cleanup.json").read_bytes()
    e = _err(js.replace(b'"min_latency":"0.001250"', b'"min_latency":"0.00x250"'), "c.json")
    assert e.line == 5 and "min_latency" in e.message  # line 5 of the file, after the text lines


# ---------------------------------------------------------------- wide rows (long runs, overflow)
def _synthetic_long_run(n: int, sec0: int, started0: int) -> tuple[bytes, list[list[str]]]:
    """Rows as 16.x prints them once sec > 99999 or started > 999999999: values wider than setw
    shift the rest of the row (single-space separated)."""
    rnd = random.Random(7)
    hdr = "  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)"
    out = ["hints = 1",
           "Maintaining 32 concurrent writes of 16384 bytes to objects of size 16384 for up to "
           "999999 seconds or 0 objects", "Object prefix: benchmark_data_x_1", hdr]
    toks = []
    started = started0
    for i in range(n):
        sec = sec0 + i
        if i and i % 20 == 0:
            out += ["2019-11-05 15:54:07.011156 min lat: 0.00102666 max lat: 0.105137 avg lat: "
                    "0.0109595", hdr]
        started += rnd.randrange(2000, 3300)
        cur = rnd.choice([31, 32])
        t = [str(sec), str(cur), str(started), str(started - cur),
             f"{rnd.uniform(40, 50):.6g}", f"{rnd.uniform(1, 60):.6g}",
             f"{rnd.uniform(0.0001, 0.3):.6g}", f"{rnd.uniform(0.01, 0.02):.6g}"]
        out.append(f"{t[0]:>5} {t[1]:>7} {t[2]:>9} {t[3]:>9} {t[4]:>9} {t[5]:>9} {t[6]:>11} "
                   f"{t[7]:>11}")
        toks.append(t)
    return ("\n".join(out) + "\n").encode(), toks


def test_overflowing_columns_in_long_runs():
    data, toks = _synthetic_long_run(3000, 98_990, 999_000_000)
    p = rb.parse(Path("long.txt"), data)
    assert p.partial and n_rows(p) == 3000
    assert p.meta["periodic_lat_lines"] == 149 and p.meta["header_lines"] == 150
    s = p.series
    for metric, k, conv in (("started", 2, float), ("finished", 3, float), ("avg_bw", 4, mibs),
                            ("cur_bw", 5, mibs), ("last_lat", 6, ns), ("avg_lat", 7, ns)):
        got = s.loc[s["metric"] == metric, "value"].to_numpy()
        want = np.array([conv(t[k]) for t in toks])
        assert np.array_equal(got, want), metric
    assert np.array_equal(s.loc[s["metric"] == "started", "t_s"].to_numpy(),
                          np.arange(98_990, 98_990 + 3000, dtype=float))


def test_values_are_exact_decimal_conversions():
    """Every row value of the 1800 s corpus run equals Decimal(printed) × unit, exactly."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus/rados_bench is absent")
    path = CORPUS / "no_license/fibird_2019-11_write_16k_t32_1800s.log"
    p = parse(path)
    want = {m: [] for m, _ in rb.SERIES_METRICS}
    for line in path.read_text().splitlines():
        t = line.split()
        if len(t) == 8 and t[0].isdigit() and t[1].isdigit():
            for k, (m, _) in enumerate(rb.SERIES_METRICS, start=1):
                conv = float if k < 4 else (mibs if k < 6 else ns)
                want[m].append(math.nan if t[k] == "-" else conv(t[k]))
    s = p.series
    for m, vals in want.items():
        got = s.loc[s["metric"] == m, "value"].to_numpy()
        assert np.array_equal(got, np.array(vals), equal_nan=True), m


# ------------------------------------------------------------------------------------- fuzzing
def _fuzz_sources() -> list[bytes]:
    out = [f.read_bytes() for f in sorted(FIX.glob("ceph-*")) if not f.name.endswith("stderr.txt")]
    if CORPUS.is_dir():
        out += [f.read_bytes() for f in sorted(CORPUS.rglob("*"))
                if f.is_file() and f.name != "SOURCES.md" and f.stat().st_size < 20000]
    return out


_SOURCES = _fuzz_sources()
_JUNK = [b"garbage", b"    1      16", b"\t\t::_send_message(con)", b"--> 10.0.0.1:6789/0 -- x",
         b"Total time run: abc", b"  sec Cur ops   started", b"min lat: 1 max lat: 2 avg lat: x",
         b"{", b"}", b"\xff\xfe\xfd", b"1 2 3 4 5 6 7 8", b"   12 16 9x 1 1.0 1.0 0.1 0.1", b"",
         b"hints = 1", b"Average IOPS", b'"datas":[', b"  0  0  0  0  0  0  -  0",
         b"2019-10-16T17:30:02.239912-0500 min lat: 0.02 max lat: 0.4 avg lat: 0.2"]

_mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("delete_line"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("insert_junk"), st.integers(0, 1 << 20), st.integers(0, len(_JUNK) - 1)),
    st.tuples(st.just("insert_byte"), st.integers(0, 1 << 20),
              st.sampled_from(list(b" 0123456789.-\n\te+:"))),
)


def _mutate(data: bytes, muts) -> bytes:
    d = bytearray(data)
    for op, pos, arg in muts:
        if op == "flip" and d:
            d[pos % len(d)] = arg
        elif op == "delete_line":
            lines = bytes(d).split(b"\n")
            if len(lines) > 1:
                del lines[pos % len(lines)]
            d = bytearray(b"\n".join(lines))
        elif op == "truncate":
            d = d[:pos % (len(d) + 1)]
        elif op == "insert_junk":
            lines = bytes(d).split(b"\n")
            lines.insert(pos % (len(lines) + 1), _JUNK[arg])
            d = bytearray(b"\n".join(lines))
        elif op == "insert_byte":
            d[pos % (len(d) + 1):pos % (len(d) + 1)] = bytes([arg])
    return bytes(d)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=st.integers(0, len(_SOURCES) - 1), muts=st.lists(_mutation, min_size=1, max_size=5))
def test_fuzz_mutated_real_files(src, muts):
    data = _mutate(_SOURCES[src], muts)
    try:
        p = rb.parse(Path("fuzz.txt"), data)
    except IngestError as e:
        assert e.path == "fuzz.txt" and (e.line is not None or e.offset is not None)
        assert e.line is None or e.line >= 1
        return
    assert isinstance(p, Parsed)
    assert list(p.summary.columns) == SUMMARY_COLUMNS and list(p.series.columns) == SERIES_COLUMNS
    assert p.summary["value"].dtype == np.float64 and p.series["t_s"].dtype == np.float64


# ---- every real row is the exact parser's ---------------------------------------------------------------

def test_the_exact_parser_reads_every_real_row():
    """Since the C row kernel was retired (issue 49: rados bench outputs are small), every table row goes
    through ``_slow_row``: every row printed in the fixtures and the corpus reads, with the Decimal values
    converted once."""
    if not CORPUS.exists():
        pytest.skip("../shared/corpus is absent")
    files = sorted(FIX.glob("*.txt")) + sorted(CORPUS.glob("*/*.txt")) + sorted(CORPUS.glob("*/*.log"))
    rows = [ln for f in files for ln in f.read_text(errors="replace").splitlines()
            if len(ln.split()) == 8 and ln.split()[0].isdigit() and ln.split()[1].isdigit()]
    assert len(rows) >= 1800  # fibird's 1,800 rows alone
    for ln in rows:
        ref, why = rb._slow_row(ln, None)
        assert ref is not None, (ln, why)
        vals = rb._row_values(ref)
        assert float(ln.split()[0]) == vals[0] and float(ln.split()[2]) == vals[2]


# ---- the line scanner (radosbench._lines) against the numpy scanner of git 10cb8f17 ---------------------
# The reference below is radosbench._scan as it was before the line scan moved to C (git 10cb8f17), the
# C line scan (rados_count/rados_fill) having been held equal to it until that C was retired: newlines
# and candidates found with numpy over the whole buffer; every row is left to the exact parser.

def _ref_newlines(buf: np.ndarray) -> np.ndarray:
    """Byte offsets of every '\n' (in cache-sized pieces: faster than one pass here)."""
    step = 1 << 18
    if len(buf) <= step:
        return np.flatnonzero(buf == 10)
    parts = [np.flatnonzero(buf[s:s + step] == 10) + s for s in range(0, len(buf), step)]
    return np.concatenate(parts)


def _ref_scan(data: bytes, buf: np.ndarray, P: int, tmpl: bytes, ml_off: int, e0: int) -> dict[str, Any]:
    """Classify every line and parse the table rows, vectorised.

    Returns rows (8, n) for the row-like lines (``rowline``: their 0-based line numbers), the
    header / ``min lat`` line numbers, and ``other``: (start, end, line, kind) of the lines left to
    Python — rb.K_OTHER (banner, summary, trailers, noise) and rb.K_BADROW (row-like but not parsed here:
    Python parses it exactly or raises; ``rowpos`` maps its line to its column in rows)."""
    n = len(buf)
    nl = _ref_newlines(buf)
    if n and (not len(nl) or nl[-1] != n - 1):
        nl = np.append(nl, n)  # last line without '\n'
    nlines = len(nl)
    starts = np.empty(nlines, np.int64)
    if nlines:
        starts[0] = 0
        starts[1:] = nl[:-1] + 1
    ends = nl.copy()
    if data.find(b"\r") >= 0:  # CRLF line ends
        nz = ends > starts
        cr = np.zeros(nlines, bool)
        cr[nz] = buf[ends[nz] - 1] == 13
        ends -= cr
    last = max(n - 1, 0)
    cs = starts
    if P > 0:
        okp = ((ends - starts) > P) & (buf[np.minimum(starts + P - 1, last)] == 32) \
            & (buf[starts.clip(max=last)] - np.uint8(48) < 10) \
            & (buf[np.minimum(starts + 4, last)] == 45)
        cs = starts + P * okp
    cl = ends - cs
    if e0 > 0:  # the header's sec column ends at e0
        # the first bytes of every line in one gather: column 0, column 4 ('-' of a date: a
        # timestamped non-row line) and the last column of the sec field (a digit in every row)
        k = max(e0, 5)
        if n >= k:
            inside = cs <= n - k  # the last few bytes of the file: left to Python
            head = np.lib.stride_tricks.sliding_window_view(buf, k)[np.minimum(cs, n - k)]
            c_first, c_4, c_last = head[:, 0], head[:, 4], head[:, e0 - 1]
            cand = inside & (cl >= e0) & (c_last - np.uint8(48) < 10) & (c_4 != 45) \
                & ((c_first == 32) | (c_first - np.uint8(48) < 10))
        else:
            cand = np.zeros(nlines, bool)
    else:
        cand = np.zeros(nlines, bool)
    rest = np.flatnonzero(~cand)
    # column headers: the first header's text (after the timestamp prefix)
    T = len(tmpl)
    hdr = np.zeros(0, np.int64)
    if T:
        h = rest[cl[rest] == T]
        if len(h):
            win = np.lib.stride_tricks.sliding_window_view(buf, T)
            same = (win[cs[h]] == np.frombuffer(tmpl, np.uint8)).all(axis=1)
            hdr = h[same]
            if len(hdr):
                keep = np.ones(len(rest), bool)
                keep[np.searchsorted(rest, hdr)] = False
                rest = rest[keep]
    # periodic "min lat:" lines at the offset of the first one
    ml = np.zeros(0, np.int64)
    if ml_off >= 0 and len(rest):
        r2 = rest[(ends[rest] - starts[rest]) >= ml_off + 8]
        if len(r2):
            win8 = np.lib.stride_tricks.sliding_window_view(buf, 8)
            same = (win8[starts[r2] + ml_off] == np.frombuffer(b"min lat:", np.uint8)).all(axis=1)
            ml = r2[same]
            if len(ml):
                keep = np.ones(len(rest), bool)
                keep[np.searchsorted(rest, ml)] = False
                rest = rest[keep]
    # table rows: the C kernel parses every whitespace-separated row exactly; the rest (run-together
    # values, exponents, nan, damage) goes to the exact Python parser, which parses it or raises
    rowline = np.flatnonzero(cand)
    rows = np.full((8, len(rowline)), np.nan)  # every row to the exact parser (no row kernel)
    rows[0], rows[1] = starts[rowline], ends[rowline]
    bad = np.ones(len(rowline), bool)
    pend = np.flatnonzero(bad)
    pend_lines = rowline[pend]
    other_lines = np.union1d(rest, pend_lines) if len(pend_lines) else rest
    kinds = np.full(len(other_lines), rb.K_OTHER, np.int64)
    if len(pend_lines):
        kinds[np.isin(other_lines, pend_lines)] = rb.K_BADROW
    other = np.stack([starts[other_lines], ends[other_lines], other_lines, kinds], axis=1) \
        if len(other_lines) else np.zeros((0, 4), np.int64)
    return {"rows": rows, "rowline": rowline, "hdr": hdr, "ml": ml, "other": other,
            "rowpos": dict(zip(pend_lines.tolist(), pend.tolist())), "lines": nlines}


def _same_scan(new: dict, ref: dict) -> None:
    assert new["lines"] == ref["lines"]
    assert new["rowline"].tolist() == ref["rowline"].tolist()
    assert new["hdr"].tolist() == ref["hdr"].tolist() and new["ml"].tolist() == ref["ml"].tolist()
    assert new["rowpos"] == ref["rowpos"]
    assert new["other"].tolist() == ref["other"].tolist()
    good = np.ones(new["rows"].shape[1], bool)
    good[list(new["rowpos"].values())] = False  # rows left to Python: values filled in later
    np.testing.assert_array_equal(new["rows"][:, good], ref["rows"][:, good])


def _parse_both(monkeypatch, data: bytes) -> list[dict]:
    """Parse ``data`` and check every _scan call against the reference."""
    calls = []
    real = rb._scan

    def spy(*args):
        new = real(*args)
        _same_scan(new, _ref_scan(*args))
        calls.append(new)
        return new
    monkeypatch.setattr(rb, "_scan", spy)
    try:
        rb.parse(Path("x.txt"), data)
    except IngestError:
        pass
    return calls


def test_line_scanner_equals_the_reference_scanner_on_real_files(monkeypatch):
    files = sorted(FIX.glob("*.txt")) + (sorted(CORPUS.glob("*/*.txt")) + sorted(CORPUS.glob("*/*.log"))
                                         if CORPUS.exists() else [])
    texts = [f.read_bytes() for f in files]
    rows = 0
    for data in texts + [t.replace(b"\n", b"\r\n") for t in texts[:3]] + [t.rstrip(b"\n") for t in texts[:3]]:
        for res in _parse_both(monkeypatch, data):
            rows += res["rows"].shape[1]
    assert rows > 1000


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(src=st.integers(0, len(_SOURCES) - 1), muts=st.lists(_mutation, min_size=1, max_size=5))
def test_line_scanner_equals_the_reference_scanner_on_damaged_files(src, muts, monkeypatch):
    _parse_both(monkeypatch, _mutate(_SOURCES[src], muts))


@pytest.mark.parametrize("name, old, new", [
    ("ceph-16.2.15_seq_t16_5s_json.json", rb'"total_reads_made":"(\d+)"', b'"total_reads_made":"5e889"'),
    ("ceph-16.2.15_write_4k_t16_8s.txt", rb"Total writes made:\s+(\d+)", b"Total writes made:      5e889"),
])
def test_a_count_that_overflows_is_an_error_with_its_line(name, old, new):
    import re
    data = (FIX / name).read_bytes()
    m = re.search(old, data)
    assert m is not None
    bad = data[:m.start()] + new + data[m.end():]
    with pytest.raises(IngestError) as ei:
        rb.parse(Path(name), bad)
    assert "expected a finite count" in str(ei.value)
    assert ei.value.line == data[:m.start()].count(b"\n") + 1

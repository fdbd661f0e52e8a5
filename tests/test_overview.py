from __future__ import annotations

import pandas as pd
import pytest

from analysis.overview import file_table


def test_file_table_sums_rates_and_weights_latency():
    files = pd.DataFrame({"path": ["a.json", "b.txt"], "kind": ["fio-json", None],
                          "tool_version": ["fio-3.33", None], "status": ["ok", "unrecognised"]})
    rows = [("a.json", "j0", "read", "iops", 100.0, "1/s"), ("a.json", "j1", "read", "iops", 300.0, "1/s"),
            ("a.json", "j0", "read", "bw", 1048576.0, "B/s"), ("a.json", "j1", "read", "bw", 3 * 1048576.0, "B/s"),
            ("a.json", "j0", "read", "clat_mean", 1000.0, "ns"), ("a.json", "j1", "read", "clat_mean", 3000.0, "ns"),
            ("a.json", "j0", "read", "total_ios", 1.0, "count"), ("a.json", "j1", "read", "total_ios", 3.0, "count"),
            ("a.json", "j0", "read", "clat_p99", 5000.0, "ns"), ("a.json", "j1", "read", "clat_p99", 9000.0, "ns")]
    summary = pd.DataFrame(rows, columns=["source", "job", "ddir", "metric", "value", "unit"])
    t = file_table(files, summary)
    a = t[t["path"] == "a.json"].iloc[0]
    assert a["iops"] == 400 and a["bw_MiB/s"] == 4 and a["jobs"] == 2
    assert a["lat_mean_us"] == pytest.approx((1 * 1.0 + 3 * 3.0) / 4)  # IO-weighted, µs
    assert a["p99_us"] == 9.0
    assert t[t["path"] == "b.txt"]["status"].item() == "unrecognised"


def test_unweighted_window_latency_is_a_check_apart_from_the_exact_ones():
    """An averaged clat log's unweighted window mean can be far from fio's per-IO mean without any parse
    error: it must not set the worst deviation of the exact log checks beside it."""
    import json
    from analysis.overview import crosscheck_rollup, crosscheck_table
    clat = {"crosscheck": {"read": {"compared": True, "rel_diff": 3.714,
                                    "note": "unweighted mean of window means vs fio's per-IO mean: close, not identical"}}}
    iops = {"crosscheck": {"read": {"compared": True, "rel_diff": 0.02,
                                    "note": "window means vs fio's whole-run figure: close, not identical"}}}
    files = pd.DataFrame({"path": ["t/c/r1/client_clat.1.log.gz", "t/c/r1/client_iops.1.log.gz"],
                          "kind": ["fio-log", "fio-log"], "meta_json": [json.dumps(clat), json.dumps(iops)]})
    cc = crosscheck_table(files)
    assert list(cc["check"]) == ["window latency vs fio (unweighted: indicative)", "log vs fio summary"]
    r = crosscheck_rollup(cc).set_index("check")
    assert r.loc["log vs fio summary", "worst"] == pytest.approx(0.02)
    assert r.loc["window latency vs fio (unweighted: indicative)", "worst"] == pytest.approx(3.714)

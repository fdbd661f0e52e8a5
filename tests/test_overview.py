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

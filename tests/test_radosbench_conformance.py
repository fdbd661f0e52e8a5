"""rados bench: real Ceph 16.2.15 fixtures and the third-party corpus (Ceph 0.47 … 15.2.9).

Expected numbers are read off the files themselves (their summary blocks and tables).
"""

from __future__ import annotations

import pytest

from analysis.ingest import read
from conftest import FIXTURES

MIB = 1048576


def test_ceph16_write_text_fixture():
    p = read(FIXTURES / "rados_bench" / "ceph-16.2.15_write_4k_t16_8s.txt")
    assert p.kind == "rados-bench" and p.meta["mode"] == "write"
    assert p.value("ops_total") == 13535 and p.value("iops") == 1690
    assert p.meta["check_ops_total_vs_table"]["ok"]


@pytest.mark.parametrize("name,ops,iops,rows", [
    ("no_license/fibird_2019-11_write_16k_t32_1800s.log", 4995339, 2775, 1800),
    ("no_license/kairen_2016-06_seq_4M_t1.txt", 228, 20, 12),          # "Average IOPS  20", no colon
    ("no_license/openelectronicslab_ceph-15.2.9_rook_write_4M_10s.txt", 104, 9, 12),
    ("no_license/kairen_2016-06_write_4k_t1_20s.txt", 2045, 102, 21),  # columns run together
])
def test_corpus_summaries_and_tables(corpus, name, ops, iops, rows):
    p = read(corpus / "rados_bench" / name)
    assert p.value("ops_total") == ops and p.value("iops") == iops
    assert (p.series["metric"] == "finished").sum() == rows
    assert p.meta["check_ops_total_vs_table"]["ok"]


def test_fibird_latency_units(corpus):
    p = read(corpus / "rados_bench" / "no_license" / "fibird_2019-11_write_16k_t32_1800s.log")
    assert p.value("lat_min") == pytest.approx(0.000894677e9)  # "Min latency(s): 0.000894677"
    assert p.value("bw") == pytest.approx(43.3621 * MIB)       # "Bandwidth (MB/sec): 43.3621"


def test_run_together_columns_are_split(corpus):
    p = read(corpus / "rados_bench" / "no_license" / "kairen_2016-06_write_4k_t1_20s.txt")
    s = p.series[p.series["t_s"] == 5]
    row = dict(zip(s["metric"].astype(str), s["value"]))
    # "    5       1       402       401  0.313248   0.468750.00526002  0.012455"
    assert row["cur_bw"] == pytest.approx(0.46875 * MIB)
    assert row["last_lat"] == pytest.approx(0.00526002e9)

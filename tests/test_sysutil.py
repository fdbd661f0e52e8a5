"""The capture's 1 Hz /proc utilisation log (kind ``sysutil``): rates, idle devices, bad input."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from analysis.ingest import IngestError, detect, read
from conftest import ROOT

L1 = {"t": 100.0, "cpu": {"cpu0": 0.5, "cpu1": 0.25}, "iowait": {"cpu0": 0.1, "cpu1": 0.0},
      "mem": {"MemTotal": 8000, "MemAvailable": 4000, "Cached": 1000},
      "disk": {"vda": {"reads": 10, "read_B": 40960, "writes": 20, "write_B": 81920, "io_ms": 500}},
      "load": 1.5}
L2 = {"t": 102.0, "cpu": {"cpu0": 1.0, "cpu1": 0.75}, "iowait": {"cpu0": 0.0, "cpu1": 0.0},
      "mem": {"MemTotal": 8000, "MemAvailable": 3000, "Cached": 2000}, "disk": {}, "load": 2.5}
L3 = {"t": 103.0, "cpu": {"cpu0": 0.0, "cpu1": 0.0}, "iowait": {"cpu0": 0.0, "cpu1": 0.0},
      "mem": {"MemTotal": 8000, "MemAvailable": 5000, "Cached": 0},
      "disk": {"vda": {"reads": 4, "read_B": 0, "writes": 0, "write_B": 0, "io_ms": 1000}}, "load": 0.5}


def _write(tmp_path, lines, tail="\n", name="sysutil.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(x, separators=(",", ":")) if isinstance(x, dict) else x
                           for x in lines) + tail)
    return p


def test_rates_use_each_lines_interval_and_idle_devices_read_zero(tmp_path):
    p = _write(tmp_path, [L1, L2, L3])
    assert detect(p) == "sysutil"
    r = read(p)
    assert not r.partial and r.meta["interval_s"] == 1.5 and r.meta["devices"] == ["vda"]
    s = r.series
    util = s[(s["metric"] == "disk_util") & (s["job"] == "vda")].sort_values("t_s")
    # intervals: first = median(2, 1) = 1.5 s, then 2 s, 1 s; line 2 has no vda entry → 0
    np.testing.assert_allclose(util["t_s"], [0.0, 2.0, 3.0])
    np.testing.assert_allclose(util["value"], [0.5 / 1.5, 0.0, 1.0])
    rd = s[(s["metric"] == "disk_read_iops")].sort_values("t_s")["value"]
    np.testing.assert_allclose(rd, [10 / 1.5, 0.0, 4.0])
    assert r.value("cpu_busy", job="all") == pytest.approx((0.5 + 0.25 + 1.0 + 0.75) / 6)
    assert r.value("cpu_busy", job="cpu1") == pytest.approx(1.0 / 3)
    assert r.value("mem_available") == pytest.approx(4000.0)
    assert r.value("disk_util_max", job="vda") == pytest.approx(1.0)
    assert r.value("samples") == 3 and r.value("load1") == pytest.approx(1.5)


def test_gzip_and_truncated_last_line_is_partial(tmp_path):
    p = tmp_path / "sysutil.jsonl.gz"
    body = json.dumps(L1) + "\n" + json.dumps(L2) + "\n" + json.dumps(L3)[:40]
    p.write_bytes(gzip.compress(body.encode()))
    r = read(p)
    assert r.partial and r.value("samples") == 2 and r.meta["compression"] == "gzip"


@pytest.mark.parametrize("lines, line, what", [
    ([L1, "{not json", L3], 2, "expected one JSON object per line"),
    ([L1, {"t": "x", "cpu": {}}], 2, "expected one JSON object per line"),
    ([L1, {**L3, "t": 50.0}], 2, "time goes back"),
])
def test_bad_lines_name_the_line(tmp_path, lines, line, what):
    p = _write(tmp_path, lines)
    with pytest.raises(IngestError) as e:
        read(p)
    assert e.value.line == line and what in str(e.value) and str(p) in str(e.value)


def test_every_shipped_capture_sysutil_file_reads(tmp_path):
    files = sorted((ROOT / "data" / "raw" / "ceph-qos").glob("*/*/*/rep-*/sysutil.jsonl.gz"))
    if not files:
        pytest.skip("no ceph-qos campaign data in data/raw")
    for f in files[:10]:
        r = read(f)
        assert not r.partial and r.meta["cpus"] == ["cpu0", "cpu1"]
        assert 0.0 <= r.value("cpu_busy", job="all") <= 1.0
        # the run's client IO (fio rbd, 60 s) keeps the OSDs' disk busy: some write traffic is seen
        assert (r.series["metric"] == "disk_write_bw").any()


def test_rgw_sections_pool_ops_and_process_cpu(tmp_path):
    """capture/rgw's lines: each OSD's ops in flight on the watched pool, radosgw's CPU under ``proc``; a
    lost probe sample (SysMon's ``osd_error`` text, no ``osd``) leaves that line's OSD figures NaN."""
    a = {**L1, "osd": {"osd.0": {"queued": 1, "in_flight": 6, "pool_in_flight": 4, "cpu": 0.3}},
         "proc": {"radosgw": {"cpu": None}}}
    b = {**L2, "osd_error": "ConnectionError: closed", "proc": {"radosgw": {"cpu": 1.2}}}
    c = {**L3, "osd": {"osd.0": {"queued": 0, "in_flight": 2, "pool_in_flight": 1, "cpu": 0.1}},
         "proc": {"radosgw": {"cpu": 0.8}}}
    r = read(_write(tmp_path, [a, b, c]))
    assert r.meta["procs"] == ["radosgw"]
    assert r.value("osd_pool_in_flight", job="osd.0") == pytest.approx(2.5)  # (4 + 1) / 2, line 2 NaN
    assert r.value("proc_cpu", job="radosgw") == pytest.approx(1.0)  # (1.2 + 0.8) / 2, the first null
    s = r.series[r.series["metric"] == "proc_cpu"].sort_values("t_s")["value"].to_numpy()
    np.testing.assert_allclose(s, [np.nan, 1.2, 0.8])

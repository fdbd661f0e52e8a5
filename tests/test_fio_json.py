"""fio JSON/json+: our own fio 3.33 fixtures and the third-party corpus (fio 2.1.4 … 3.34)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from analysis.ingest import IngestError, read
from analysis.ingest.fio_bins import plat_idx_to_val, percentiles_from_bins
from conftest import FIXTURES

FIO = FIXTURES / "fio"


def test_fio333_jsonplus_values_match_the_file():
    p = read(FIO / "randrw-4k-perio" / "randrw-4k-perio.json")
    assert p.kind == "fio-json" and p.meta["format"] == "json+"
    assert p.meta["tool_version"] == "fio-3.33"
    # numbers as printed in the file (read: iops 299.900033, bw_bytes 1228390, total_ios 900)
    assert p.value("iops", "read") == pytest.approx(299.900033)
    assert p.value("bw", "read") == 1228390
    assert p.value("total_ios", "read") == 900
    assert p.value("total_ios", "write") == 600
    assert p.value("clat_mean", "read") == pytest.approx(199379.362222)
    assert p.value("clat_p99", "read") == 569344
    assert p.value("clat_p99", "write") == 888832
    assert p.value("lat_max", "read") == 8457489
    assert p.value("runtime", "read") == pytest.approx(3.001)
    units = dict(zip(p.summary["metric"].astype(str), p.summary["unit"].astype(str)))
    assert units["clat_mean"] == "ns" and units["bw"] == "B/s" and units["iops"] == "1/s"
    assert units["runtime"] == "s" and units["total_ios"] == "count"
    # json+ bins recompute every printed percentile exactly (fio's own rule)
    assert p.meta["percentile_check"]["max_rel_diff"] == 0.0
    # clat read and write (fio prints lat percentiles only with lat_percentiles=1)
    assert [(c["lat"], c["ddir"], c["n"]) for c in p.meta["percentile_check"]["checks"]] == \
        [("clat", "read", 900), ("clat", "write", 600)]
    assert p.meta["identity_check"]["ok"]


def test_two_jobs_without_group_reporting_are_told_apart():
    p = read(FIO / "randwrite-4k-2jobs-offset" / "randwrite-4k-2jobs-offset.json")
    assert p.meta["jobs"] == ["twojobs#0", "twojobs#1"]
    assert set(p.summary["ddir"].astype(str)) == {"write"}  # unused directions are not rows


def test_fio2_microsecond_keys_become_ns(corpus):
    p = read(corpus / "fio_json" / "fioplot_fio-2.18_randread-01.json")
    assert p.meta["tool_version"] == "fio-2.18-59-g618e"
    assert p.meta["latency_keys_unit"] == ["µs"]
    assert p.value("clat_mean", "read") == pytest.approx(13636.394809 * 1000)
    assert p.value("clat_p99", "read") == 22912 * 1000
    assert p.value("bw", "read") == 292 * 1024  # KiB/s
    assert p.value("io_bytes", "read") == 17568 * 1024  # fio 2.x io_bytes is KiB
    assert p.value("runtime", "read") == pytest.approx(60.013)


def test_fio214_duplicate_keys_and_unused_jobs(corpus):
    p = read(corpus / "fio_json" / "pkb_fio-2.1.4_sample-result.json")
    assert p.meta["duplicate_keys"] > 0
    assert p.value("iops", "write", "sequential_write") == 133
    assert p.value("clat_mean", "write", "sequential_write") == pytest.approx(477734.84 * 1000)
    # the "0.00" padding keys are not percentiles
    assert not p.summary["metric"].astype(str).str.contains(r"p0$").any()
    # sequential_read never wrote: no write rows for it
    s = p.summary
    assert s[(s["job"] == "sequential_read") & (s["ddir"] == "write")].empty


def test_client_server_output_with_text_preamble(corpus):
    p = read(corpus / "fio_json" / "pbench_fio-3.7_client-server_fio-result.txt")
    assert p.meta["client_server"] and p.meta["preamble_lines"] > 0
    assert "hostname=perf84" in p.meta["preamble"]
    assert p.value("iops", "read", "All clients") == pytest.approx(93198.150858)
    assert p.value("bw", "read", "All clients") == 381824630
    assert p.value("clat_mean", "read", "All clients") == pytest.approx(3413511.909894)
    assert "perf36/job-/tmp/fio#0" in p.meta["jobs"]


def test_error_and_signal_preambles_are_partial(corpus):
    e = read(corpus / "fio_json" / "fioplot_fio-3.33_write-64-1_with-error-preamble.json")
    assert e.partial and e.meta["job_errors"] == {"1m": 22}
    assert "time_based requires a runtime" in e.meta["preamble"]
    s = read(corpus / "fio_json" / "fioplot_fio-3.34_randread-1-1_with-signal-preamble.json")
    assert s.partial and s.meta["interrupted"]


def test_gtod_reduce_latency_is_not_reported_as_zero(corpus):
    p = read(corpus / "fio_json" / "kubestr_fio-3.20_read_iops_gtod_reduce.json")
    assert "clat" in p.meta["latency_not_measured"]
    assert not p.summary["metric"].astype(str).str.startswith("clat_").any()
    assert p.value("iops", "read", "read_iops") > 0


def test_64_clones_and_mixed_rw(corpus):
    p = read(corpus / "fio_json" / "fioplot_fio-3.6_randwrite-64jobs-no-group-reporting.json")
    assert len(p.meta["jobs"]) == 64 and p.meta["jobs"][63] == "random-io#63"
    rw = read(corpus / "fio_json" / "fioplot_fio-3.16_randrw-64-64.json")
    assert rw.value("iops", "read") == pytest.approx(326.791907)
    assert rw.value("iops", "write") == pytest.approx(326.660421)
    assert rw.value("clat_p99.5", "write") == 13488881664


def _raw(path: Path) -> dict:
    t = path.read_text()
    return json.loads(t[re.search(r"^\{", t, re.M).start():])


def test_every_corpus_json_matches_its_own_numbers(corpus):
    """Independent oracle: the raw JSON keys with fio's documented units."""
    files = sorted((corpus / "fio_json").glob("*.json")) + \
        [corpus / "fio_json" / "pbench_fio-3.7_client-server_fio-result.txt"]
    assert len(files) == 16
    for f in files:
        p = read(f)
        doc = _raw(f)
        entries = doc.get("jobs") or doc.get("client_stats")
        checked = 0
        for name, e in zip(p.meta["jobs"], entries):
            for ddir in ("read", "write"):
                d = e[ddir]
                if not (d.get("total_ios") or d.get("io_bytes") or d.get("iops")):
                    continue
                assert p.value("iops", ddir, name) == pytest.approx(d["iops"]), f
                bw = d["bw_bytes"] if "bw_bytes" in d else d["bw"] * 1024
                assert p.value("bw", ddir, name) == pytest.approx(bw), f
                lat = d.get("clat_ns") or {k: v * 1000 for k, v in d["clat"].items()
                                           if k in ("mean", "max")}
                if lat.get("max"):
                    assert p.value("clat_max", ddir, name) == pytest.approx(lat["max"]), f
                checked += 1
        assert checked or p.partial, f


def test_plat_idx_to_val_matches_fio():
    # values from fio's stat.c rule: exact below 128, then bucket midpoints of width 2**(group-1)
    assert plat_idx_to_val(np.array([0, 5, 127])).tolist() == [0, 5, 127]
    assert plat_idx_to_val(np.array([128, 191, 192, 255, 256])).tolist() == [129, 255, 258, 510, 516]
    # every bin value fio 3.33 printed in json+ is one of the 1856 bucket values
    doc = _raw(FIO / "randrw-4k-perio" / "randrw-4k-perio.json")
    keys = {int(k) for k in doc["jobs"][0]["read"]["clat_ns"]["bins"]}
    assert keys <= set(plat_idx_to_val(np.arange(1856)).tolist())


def test_percentiles_from_bins_rule():
    vals, cnt = np.array([10.0, 20.0, 30.0, 40.0]), np.array([1, 1, 1, 1])
    # first bin whose cumulative count reaches q/100*N
    assert percentiles_from_bins(vals, cnt, np.array([25, 50, 50.1, 100])).tolist() == [10, 20, 30, 40]


@pytest.mark.parametrize("text,line", [
    (b'{\n  "fio version" : "fio-3.33",\n  "jobs" : [ {"jobname": "x",\n', 4),
    (b'garbage\n{\n  "fio version" : "fio-3.33",\n  "jobs" : 5\n}\n', 2),
    (b'{"fio version": "fio-3.1", "jobs": [ }', 1),
])
def test_bad_json_names_file_and_line(tmp_path, text, line):
    f = tmp_path / "bad.json"
    f.write_bytes(text)
    with pytest.raises(IngestError) as ei:
        read(f)
    assert ei.value.path == str(f) and ei.value.line == line
    assert str(f) in str(ei.value)


def test_markdown_quoting_fio_json_is_not_fio_output(corpus):
    from analysis.ingest import detect
    assert detect(corpus / "fio_json" / "SOURCES.md") is None

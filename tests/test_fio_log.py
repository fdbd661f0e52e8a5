"""fio lat/clat/slat/iops/bw logs and histogram logs (fio 2.17 … 3.33)."""

from __future__ import annotations

import gzip
import os
import json
import shutil

import re

import numpy as np
import pandas as pd
import pytest

from analysis.ingest import IngestError, read
from conftest import FIXTURES

FIO = FIXTURES / "fio"


def test_per_io_clat_log_equals_fio_summary():
    p = read(FIO / "randrw-4k-perio" / "perio_clat.1.log")
    assert p.kind == "fio-log" and p.meta["per_io"] and p.meta["latency_unit_assumed"] is False
    assert p.meta["samples"] == 1500 and len(p.series) == 1500
    cc = p.meta["crosscheck"]
    assert cc["read"]["log_samples"] == cc["read"]["json_total_ios"] == 900
    assert cc["write"]["log_samples"] == cc["write"]["json_total_ios"] == 600
    assert cc["read"]["mean_rel_diff"] < 1e-9 and cc["write"]["mean_rel_diff"] < 1e-9
    assert p.value("clat_mean", "read") == pytest.approx(199379.362222, rel=1e-9)
    # first line of the file: "0, 254543, 0, 4096, 0"
    first = p.series.iloc[0]
    assert (first["t_s"], first["value"], first["ddir"], first["metric"]) == (0.0, 254543.0, "read", "clat")
    assert p.series["job"].iloc[0] == "perio"  # job name from the companion JSON


def test_per_io_bw_and_iops_logs_are_checked_by_count():
    iops = read(FIO / "randrw-4k-perio" / "perio_iops.1.log")
    assert iops.meta["crosscheck"]["write"] == {"job": "perio", "compared": True,
                                               "log_samples": 600, "json_total_ios": 600}
    bw = read(FIO / "randrw-4k-perio" / "perio_bw.1.log")
    assert bw.series["unit"].iloc[0] == "B/s"
    assert bw.series["value"].iloc[0] == 16091 * 1024  # KiB/s in the log


def test_windowed_logs():
    p = read(FIO / "randread-4k-windowed" / "win_iops.1.log")
    assert p.meta["windowed"] and not p.meta["per_io"]
    assert p.series["t_s"].tolist()[:3] == [0.5, 1.0, 1.5]
    assert p.meta["crosscheck"]["read"]["rel_diff"] < 0.01  # window means ≈ fio's 1999.75 IOPS
    lat = read(FIO / "randread-4k-windowed" / "win_clat.1.log")
    assert lat.series["value"].iloc[0] == 137063  # "500, 137063, 0, 0, 0"


def test_six_column_logs_with_offset():
    p = read(FIO / "randwrite-4k-2jobs-offset" / "twojobs_clat.2.log")
    assert p.meta["columns"] == "time_ms, value, ddir, bs, offset, prio"
    assert p.series["job"].iloc[0] == "twojobs#1"  # log .2 ↔ second job entry
    assert p.meta["crosscheck"]["write"]["log_samples"] == 300


def test_unix_epoch_time_and_group_reporting():
    p = read(FIO / "write-64k-grouped-epoch" / "grp_iops.1.log")
    assert p.meta["t0_unix_ms"] == 1795267493728  # first line of the file
    assert p.series["t_s"].tolist()[:3] == [0.0, 0.251, 0.5]
    assert p.meta["crosscheck"]["write"]["compared"] is False  # aggregated summary, per-job log


def test_fio333_histogram_log_percentiles():
    p = read(FIO / "randread-4k-windowed" / "win_clat_hist.1.log")
    assert p.kind == "fio-hist-log"
    assert p.meta["bins"] == 1856 and p.meta["bin_unit"] == "ns" and p.meta["intervals"] == 7
    cc = p.meta["crosscheck"]["read"]
    assert cc["percentile_rel_diff"]["p50"] == 0.0  # same bins as fio's own p50
    s = p.series[p.series["metric"] == "clat_samples"]
    assert s["value"].sum() == cc["hist_samples"]
    assert s["t_s"].iloc[0] == 0.501  # "501, 0, 4096, …"


def test_a_negative_histogram_count_names_its_line(tmp_path):
    lines = (FIO / "randread-4k-windowed" / "win_clat_hist.1.log").read_text().splitlines(keepends=True)
    for ln, at in ((5, 10), (3, 200)):  # the first damaged line is named, though the bin-by-bin scan meets 5 first
        f = lines[ln - 1].split(", ")
        f[at] = "-1"
        lines[ln - 1] = ", ".join(f)
    bad = tmp_path / "win_clat_hist.1.log"
    bad.write_text("".join(lines))
    with pytest.raises(IngestError) as e:
        read(bad)
    assert e.value.line == 3 and "bin counts must be non-negative" in e.value.message


def test_fio2_histogram_logs(corpus):
    p = read(corpus / "fio_logs" / "pkb_fio-2.17_clat_hist.1.log")
    assert p.meta["bins"] == 1216 and p.meta["bin_unit"] == "µs"
    assert p.meta["intervals"] == 9
    s = p.series
    assert set(s["metric"].astype(str)) >= {"clat_p50", "clat_p99", "clat_samples"}
    assert s["unit"][s["metric"] == "clat_p50"].iloc[0] == "ns"
    # row 1 of the file: 1001 ms, read, 16384 B; its counts sum to the samples of the interval
    raw = np.array((corpus / "fio_logs" / "pkb_fio-2.17_clat_hist.1.log").read_text()
                   .splitlines()[0].split(","), dtype=np.int64)
    first = s[(s["metric"] == "clat_samples")].iloc[0]
    assert first["t_s"] == 1.001 and first["value"] == raw[3:].sum()


def test_corpus_logs_without_companion_fail_naming_what_decides_the_unit(corpus, monkeypatch):
    """A fio 2.18 clat log with no fio output beside it: fio 2.x logs µs, fio ≥ 3 ns, and its 4 columns are
    written by both, so nothing in the data gives the unit: it fails saying what would decide it, and
    --log-units / --fio-version do (13694 as written in the file's first line: 13,694 µs = 13,694,000 ns)."""
    f = corpus / "fio_logs" / "fioplot_fio-2.18_randread-4k-qd1_clat.1.log"
    monkeypatch.delenv("CEPHQOS_LOG_UNITS", raising=False)
    monkeypatch.delenv("CEPHQOS_FIO_VERSION", raising=False)
    with pytest.raises(IngestError) as ei:
        read(f)
    assert ei.value.line == 1 and "--log-units" in str(ei.value) and "fio 2.x logs µs" in str(ei.value)
    monkeypatch.setenv("CEPHQOS_FIO_VERSION", "2.18")
    p = read(f)
    assert p.meta["latency_unit_assumed"] is False and "--fio-version" in p.meta["latency_unit_source"]
    assert p.meta["windowed"] and len(p.series) == 20
    assert p.series["value"].iloc[0] == 13694 * 1000 and set(p.series["unit"].astype(str)) == {"ns"}
    monkeypatch.delenv("CEPHQOS_FIO_VERSION")
    monkeypatch.setenv("CEPHQOS_LOG_UNITS", "ns")
    assert read(f).series["value"].iloc[0] == 13694


def test_the_unit_from_the_version_text():
    from analysis.ingest.fio_log import _unit_of_version
    assert [_unit_of_version(v) for v in ("fio-2.1.4", "2.18", "fio-3.33", "3.1", "fio-10.2", "x")] == \
        [1000.0, 1000.0, 1.0, 1.0, 1.0, None]


def test_every_corpus_log(corpus, monkeypatch):
    """Each corpus log read with the fio version its SOURCES.md gives (the corpus keeps no fio output
    beside the logs, so a latency log without it fails: tested first)."""
    logs = sorted((corpus / "fio_logs").glob("*.log"))
    assert len(logs) == 18
    monkeypatch.delenv("CEPHQOS_LOG_UNITS", raising=False)
    for f in logs:
        monkeypatch.delenv("CEPHQOS_FIO_VERSION", raising=False)
        latency = re.search(r"_(lat|clat|slat)\.\d+(\.head\d+)?\.log$", f.name)
        if latency:
            with pytest.raises(IngestError, match="latency unit"):
                read(f)
            monkeypatch.setenv("CEPHQOS_FIO_VERSION", re.search(r"_fio-([\d.]+?)_", f.name).group(1))
        if f.name == "pbench_fio-3.7_perf36_fio_clat_hist.1.log":
            # fio 3.7 wrote a wrapped unsigned count (6873726019606937632) into this log
            with pytest.raises(IngestError) as ei:
                read(f)
            assert ei.value.line == 1 and "18 digits" in str(ei.value)
            continue
        p = read(f)
        lines = [ln for ln in f.read_text().splitlines() if ln.strip()]
        if p.kind == "fio-log":
            assert len(p.series) == len(lines), f
            assert p.series["t_s"].iloc[-1] == int(lines[-1].split(",")[0]) / 1000.0, f
        else:
            assert p.meta["intervals"] == len(lines), f


def test_compressed_logs_read_the_same(tmp_path):
    src = FIO / "randrw-4k-perio"
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    gz = tmp_path / "perio_clat.1.log.gz"
    with open(src / "perio_clat.1.log", "rb") as a, gzip.open(gz, "wb") as b:
        b.write(a.read())
    p, q = read(gz), read(src / "perio_clat.1.log")
    assert p.meta["compression"] == "gzip"
    pd.testing.assert_series_equal(p.series["value"], q.series["value"])
    assert p.meta["crosscheck"]["read"]["log_samples"] == 900


@pytest.mark.parametrize("text,line,what", [
    (b"0, 1, 0, 4096, 0\n1, 2, 0, 4096, 0\n2, x3, 0, 4096, 0\n", 3, "expected an integer"),
    (b"0, 1, 0, 4096, 0\n1, 2, 0, 4096\n", 2, "expected 5 comma-separated"),
    (b"0, 1, 0, 4096, 0\n1, 2, 7, 4096, 0\n", 2, "data direction"),
    (b"0, 1, 0, 4096, 0\n1, 2, 0, 4096, 0, 5\n", 2, "expected 5 comma-separated"),
])
def test_bad_log_lines_name_the_line(tmp_path, text, line, what):
    f = tmp_path / "x_clat.1.log"
    f.write_bytes(text)
    with pytest.raises(IngestError) as ei:
        read(f)
    assert ei.value.line == line and what in str(ei.value)


def _count_fio_json_parses(monkeypatch) -> list[str]:
    """Record the name of every file whose fio JSON is decoded (fio.decode: the real work of a parse)."""
    from analysis.ingest import fio
    calls: list[str] = []
    real = fio.decode
    monkeypatch.setattr(fio, "decode", lambda path, data: calls.append(path.name) or real(path, data))
    return calls


def test_a_log_takes_the_fio_json_the_ingest_parsed_beside_it(tmp_path, monkeypatch):
    """Within one folder's turn (one RunFolder) the ingest's parse of a fio JSON is the companion of the
    logs beside it (not parsed a second time); another turn (a new ingest) parses it anew."""
    from analysis.ingest.runfolder import RunFolder
    from analysis.ingest.walk import ingest_file
    run = tmp_path / "run"
    shutil.copytree(FIO / "randrw-4k-perio", run)
    calls = _count_fio_json_parses(monkeypatch)
    folder = RunFolder(run)
    js = ingest_file(run / "randrw-4k-perio.json", tmp_path, {}, None, lenient=True, folder=folder)
    assert js.row["status"] == "ok" and calls == ["randrw-4k-perio.json"]
    log = ingest_file(run / "perio_clat.1.log", tmp_path, {}, None, lenient=True, folder=folder)
    assert log.row["status"] == "ok" and calls == ["randrw-4k-perio.json"]  # not parsed again
    meta = json.loads(log.row["meta_json"])
    assert meta["latency_unit_assumed"] is False and meta["crosscheck"]["read"]["json_total_ios"] == 900
    again = ingest_file(run / "perio_lat.1.log", tmp_path, {}, None, lenient=True, folder=RunFolder(run))
    assert again.row["status"] == "ok" and calls == ["randrw-4k-perio.json"] * 2
    alone = ingest_file(run / "perio_lat.1.log", tmp_path, {}, None, lenient=True)  # no folder: looks itself
    assert alone.row == again.row and calls == ["randrw-4k-perio.json"] * 3


def test_the_fio_json_takes_the_parse_a_log_beside_it_made(tmp_path, monkeypatch):
    """The other order (a capture's ``client_*.log`` sort before ``fio.json``): the log's companion search
    parses the JSON, and the JSON's own turn takes that parse — the same rows as a parse of its own."""
    from analysis.ingest.runfolder import RunFolder
    from analysis.ingest.walk import ingest_file
    run = tmp_path / "run"
    shutil.copytree(FIO / "randrw-4k-perio", run)
    alone = ingest_file(run / "randrw-4k-perio.json", tmp_path, {}, None, lenient=True)
    calls = _count_fio_json_parses(monkeypatch)
    folder = RunFolder(run)
    log = ingest_file(run / "perio_clat.1.log", tmp_path, {}, None, lenient=True, folder=folder)
    assert log.row["status"] == "ok" and calls == ["randrw-4k-perio.json"]
    js = ingest_file(run / "randrw-4k-perio.json", tmp_path, {}, None, lenient=True, folder=folder)
    assert calls == ["randrw-4k-perio.json"] and js.row == alone.row
    from analysis.ingest.base import as_frame
    pd.testing.assert_frame_equal(as_frame(js.summary), as_frame(alone.summary), check_exact=True)
    assert len(as_frame(js.summary)) > 10


def test_a_walk_parses_each_fio_json_once(tmp_path, monkeypatch):
    """A whole ingest of two run folders: each fio JSON decoded once, whatever the order of its logs."""
    from analysis.ingest.walk import ingest
    for name in ("a", "b"):
        shutil.copytree(FIO / "randrw-4k-perio", tmp_path / name)
    calls = _count_fio_json_parses(monkeypatch)
    res = ingest(tmp_path, progress=False, lenient=True)
    assert not res.failed and sorted(calls) == ["randrw-4k-perio.json"] * 2


def test_the_companion_search_skips_files_that_are_context_by_name(tmp_path, monkeypatch):
    """A log's companion is a fio JSON the ingest reads as such: files that are context by their name (the
    capture's osd_config.json.gz, cluster-log.txt.gz, run.json) are not opened (nor decompressed) to look."""
    from analysis.ingest import runfolder
    run = tmp_path / "run"
    shutil.copytree(FIO / "randrw-4k-perio", run)
    (run / "osd_config.json.gz").write_bytes(gzip.compress(b'{"osd_op_queue": "wpq"}'))
    (run / "cluster-log.txt.gz").write_bytes(gzip.compress(b"2026-01-01 cluster log\n"))
    (run / "run.json").write_text('{"campaign": "c"}')
    opened = []
    real = runfolder.read_head
    monkeypatch.setattr(runfolder, "read_head", lambda p, *a: opened.append(os.path.basename(p)) or real(p, *a))
    docs = runfolder.RunFolder(run).companions(run / "perio_clat.1.log")
    assert [os.path.basename(d.path) for d in docs] == ["randrw-4k-perio.json"]
    assert "randrw-4k-perio.json" in opened and "perio_bw.1.log" in opened
    assert not {"osd_config.json.gz", "cluster-log.txt.gz", "run.json"} & set(opened), opened

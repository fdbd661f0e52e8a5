"""Bounded-memory reading of large per-IO fio logs (fio_log.parse_stream) and its use by both ingest paths."""

from __future__ import annotations

import gzip
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.ingest import IngestError, fio_log
from analysis.ingest.walk import ingest, read_tables, write_tables

from conftest import FIXTURES

PERIO = FIXTURES / "fio" / "randrw-4k-perio"


def _big_log(dest: Path, copies: int, name: str = "perio_clat.1.log") -> Path:
    """The real per-IO clat log of the fixture run (fio 3.33), replicated ``copies`` times with the time
    column shifted so it stays monotonic, and ±0-2 ns added to the values (many ties, many distinct)."""
    src = np.loadtxt(PERIO / "perio_clat.1.log", delimiter=",", dtype=np.int64)
    span = src[:, 0].max() + 1
    rows = np.concatenate([src + np.array([i * span, 0, 0, 0, 0]) for i in range(copies)])
    rows[:, 1] += np.random.default_rng(7).integers(0, 3, len(rows))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(PERIO / "randrw-4k-perio.json", dest)
    np.savetxt(dest / name, rows, fmt="%d", delimiter=", ")
    return dest / name


def test_blocks_give_the_whole_file_summary_and_series(tmp_path):
    log = _big_log(tmp_path, 100)                                     # 150,000 lines, 4.3 MB
    whole = fio_log.parse(log)
    part = fio_log.parse_stream(log, chunk_bytes=64 << 10)
    assert part.meta["streamed"]["blocks"] > 60
    a = whole.summary.set_index(["job", "ddir", "metric"])["value"]
    b = part.summary.set_index(["job", "ddir", "metric"])["value"]
    assert a.index.equals(b.index) and len(a) == 2 * 10
    exact = [i for i in a.index if not i[2].endswith(("_mean", "_stddev"))]   # counts, min, max, percentiles
    assert (a[exact] == b[exact]).all()
    np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=1e-12)
    ref = np.loadtxt(log, delimiter=",", dtype=np.int64)
    reads = np.sort(ref[ref[:, 2] == 0, 1])
    assert b[("perio", "read", "clat_p99")] == reads[int(np.ceil(0.99 * len(reads))) - 1]   # inverted CDF, ns
    assert b[("perio", "read", "clat_samples")] == len(reads)
    pd.testing.assert_frame_equal(whole.series, part.series)
    for d in ("read", "write"):                       # the same cross-check against fio's JSON
        w, s = whole.meta["crosscheck"][d], part.meta["crosscheck"][d]
        assert s.keys() == w.keys() and s["log_samples"] == w["log_samples"] == (reads.size if d == "read" else
                                                                               len(ref) - reads.size)
        assert s["json_total_ios"] == w["json_total_ios"] == (900 if d == "read" else 600)
        assert s["log_mean_ns"] == pytest.approx(w["log_mean_ns"], rel=1e-12)



@pytest.mark.parametrize("gz", [False, True])
def test_blocks_are_what_plain_reads_give(tmp_path, gz):
    """iter_fio_log's reused buffer gives the blocks of the plain loop (read a block, prepend the unfinished
    line, cut at the last newline; a line longer than a block: read on; the last line without a newline):
    the same rows in the same blocks, plain and gzip."""
    from analysis.ingest._scan import iter_fio_log, read_fio_log
    lines = [f"{i * 3}, {1000 + i}, {i % 2}, 4096, 0" for i in range(3000)]
    lines[1500] = f"4500, {'1' * 15}, 0, 4096, 0{' ' * 400}"  # trailing spaces: one line longer than a block
    text = ("\n".join(lines)).encode()  # no final newline
    log = tmp_path / ("x_clat.1.log.gz" if gz else "x_clat.1.log")
    log.write_bytes(gzip.compress(text) if gz else text)
    chunk = 257
    want, carry, pos = [], b"", 0
    while True:  # the plain loop
        block = text[pos:pos + chunk]
        pos += len(block)
        buf = carry + block
        if not buf:
            break
        if block:
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                carry = buf
                continue
            buf, carry = buf[:cut], buf[cut:]
        else:
            carry = b""
        want.append(read_fio_log(log, 5, data=buf))
        if not block:
            break
    got = list(iter_fio_log(log, 5, chunk_bytes=chunk))
    assert len(got) == len(want) > 60
    for g, w in zip(got, want):
        assert np.array_equal(g.t, w.t) and np.array_equal(g.value, w.value) and np.array_equal(g.ddir, w.ddir)
    assert sum(len(g.t) for g in got) == 3000 and got[-1].t[-1] == 8997

def test_gzip_log_streams_and_errors_name_the_line_in_the_whole_file(tmp_path):
    log = _big_log(tmp_path, 20)
    gz = tmp_path / "gz_clat.1.log.gz"
    text = log.read_bytes()
    gz.write_bytes(gzip.compress(text))
    p = fio_log.parse_stream(gz, chunk_bytes=32 << 10)
    assert p.meta["compression"] == "gzip" and p.meta["samples"] == 30_000
    lines = text.split(b"\n")
    lines[25_000] = b"12, 34, 0"                                      # line 25,001: three columns
    bad = tmp_path / "bad_clat.1.log"
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(fio_log.IngestError, match=r"bad_clat\.1\.log:25001: expected 5 comma-separated"):
        fio_log.parse_stream(bad, chunk_bytes=32 << 10)


def _peak(log: Path) -> tuple[int, int]:
    rows = []
    tracemalloc.start()
    fio_log.parse_stream(log, sink=lambda f: rows.append(len(f)), chunk_bytes=128 << 10)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, sum(rows)


def test_memory_with_a_sink_does_not_grow_with_the_file(tmp_path):
    small, big = _big_log(tmp_path / "s", 40), _big_log(tmp_path / "b", 400)   # 1.7 MB and 17 MB
    (p1, n1), (p2, n2) = _peak(small), _peak(big)
    assert (n1, n2) == (60_000, 600_000)
    assert p2 < 1.3 * p1 and p2 < 24 << 20, (p1, p2)   # bounded by the block, not the 10× larger file


def test_both_ingest_paths_stream_a_large_log_to_the_same_tables(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from analysis.ingest.scale import canonical, ingest_batches

    root = tmp_path / "raw"
    _big_log(root / "run", 100)
    monkeypatch.setattr(fio_log, "STREAM_MIN_BYTES", 1 << 20)        # the 4.3 MB log is "large" here
    monkeypatch.setattr(fio_log, "CHUNK_BYTES", 256 << 10)
    write_tables(ingest(root, progress=False), tmp_path / "serial")
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0", silence_logs=40) as c, \
            distributed.Client(c) as client:                          # in-process: sees the monkeypatch
        res = ingest_batches(root, tmp_path / "dask", dask=True, client=client, progress=False)
    assert res.rows["series"] == 150_000
    import pyarrow.parquet as pq
    streamed = list((tmp_path / "dask" / "series").glob("campaign=_none/kind=fio-log/part-*-*.parquet"))
    assert len(streamed) == 1 and pq.ParquetFile(streamed[0]).num_row_groups >= 15
    a, b = read_tables(tmp_path / "serial"), read_tables(tmp_path / "dask")
    for n in ("files", "summary", "series"):
        pd.testing.assert_frame_equal(canonical(getattr(a, n)), canonical(getattr(b, n)), check_dtype=False)
    assert '"streamed"' in a.files.loc[a.files["path"] == "run/perio_clat.1.log", "meta_json"].iloc[0]


@pytest.mark.parametrize("gz", [False, True])
def test_an_error_after_blank_lines_names_its_line_in_the_whole_file(tmp_path, gz):
    """Blocks count their lines from what the scanner saw (rows and blank lines, '\\n' and '\\r\\n'), not by a
    second pass over the bytes: an error blocks later names the line the file has it on."""
    from analysis.ingest._scan import iter_fio_log
    lines = []
    for i in range(2000):
        lines.append(f"{i * 3}, {1000 + i}, {i % 2}, 4096, 0")
        if i % 7 == 0:
            lines.append("   " if i % 2 else "")
        if i % 11 == 0:
            lines.append("\r")
    bad = len(lines) - 40
    lines[bad] = "1, 2, x, 4096, 0"
    text = ("\n".join(lines) + "\n").encode()
    log = tmp_path / ("b_clat.1.log.gz" if gz else "b_clat.1.log")
    log.write_bytes(gzip.compress(text) if gz else text)
    with pytest.raises(IngestError) as e:
        for _ in iter_fio_log(log, 5, chunk_bytes=300):
            pass
    assert e.value.line == bad + 1

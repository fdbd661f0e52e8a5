"""analysis.ingest.scale: the Dask path gives the serial path's tables, partitioned by campaign and kind."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.ingest.scale import canonical, ingest_batches, plan_batches, read_dataset
from analysis.store import verify
from analysis.ingest.manifest import write_manifest
from analysis.ingest.walk import ingest, read_tables, write_tables

from conftest import FIXTURES

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two worker processes, one thread each: tasks really cross process boundaries (pickling)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster) as c:
        yield c


def test_batches_are_consecutive_bounded_by_bytes_and_files_and_a_big_file_stands_alone():
    assert plan_batches([10, 10, 10, 10, 10], batch_bytes=25, batch_files=10, taper=False) == [(0, 2), (2, 4), (4, 5)]
    assert plan_batches([1] * 7, batch_bytes=100, batch_files=3, taper=False) == [(0, 3), (3, 6), (6, 7)]
    assert plan_batches([5, 500, 5, 5], batch_bytes=20, batch_files=10, taper=False) == [(0, 1), (1, 2), (2, 4)]
    assert plan_batches([], 10, 10) == []


def test_the_last_eighth_of_the_bytes_goes_in_smaller_batches():
    """A batch that starts in the last 1/8 of the bytes holds at most 1/8 of batch_bytes (and of
    batch_files): the processes run out of work together.  The plan is the sizes' only."""
    sizes = [10] * 160  # 1,600 bytes: the tail starts at 1,400
    got = plan_batches(sizes, batch_bytes=160, batch_files=1000)
    # the 9th full batch starts at 1,280 (< 1,400); from 1,440 on, batches of 20 bytes
    assert [b - a for a, b in got] == [16] * 9 + [2] * 8
    assert got[0] == (0, 16) and got[-1] == (158, 160) and all(b == c for (_, b), (c, _) in zip(got, got[1:]))
    # by files too: 1,000 files of 1 byte, 160 a batch → 1000 // 8 = 125 from byte 875 on
    assert [b - a for a, b in plan_batches([1] * 1000, batch_bytes=10**6, batch_files=160)] == [160] * 6 + [20] * 2
    assert plan_batches(sizes, batch_bytes=160, batch_files=1000, taper=False) == [(a, a + 16) for a in range(0, 160, 16)]


def _same(a, b) -> None:
    for n in ("files", "summary", "series"):
        pd.testing.assert_frame_equal(canonical(getattr(a, n)), canonical(getattr(b, n)), check_dtype=False)
    assert sorted(a.failed) == sorted(b.failed)
    assert a.tables.keys() == b.tables.keys()
    for k in a.tables:
        pd.testing.assert_frame_equal(canonical(a.tables[k]), canonical(b.tables[k]), check_dtype=False)


def test_dask_tables_equal_the_serial_tables_on_every_fixture_format(tmp_path, client):
    serial, dask = tmp_path / "serial", tmp_path / "dask"
    write_tables(ingest(FIXTURES, progress=False, lenient=True), serial)
    res = ingest_batches(FIXTURES, dask, dask=True, batch_files=4, client=client, progress=False, lenient=True)  # many batches
    assert res.batches >= 10 and res.workers == 2 and res.failed == []
    a, b = read_tables(serial), read_tables(dask)
    assert len(b.series) == len(a.series) > 9000 and len(b.tables["blk_requests"]) == len(a.tables["blk_requests"]) > 3000
    _same(a, b)
    parts = sorted(p.relative_to(dask).as_posix() for p in dask.glob("series/*/*"))
    assert "series/campaign=_none/kind=fio-log" in parts and "series/campaign=_none/kind=rados-bench" in parts
    assert not (dask / "series.parquet").exists() and not list(dask.glob(".ingest-*"))
    rec = verify(dask)["tables"]  # the Dask path records its set as the serial one does, rows from the parts
    assert rec["series"] == {"layout": "partitioned", "rows": len(a.series)}
    assert rec["files"]["layout"] == "file" and rec["files"]["rows"] == len(a.files)
    for n in ("summary", "series"):  # read back with the serial tables' types, not only their values
        fa, fb = getattr(a, n), getattr(b, n)
        assert {c: str(fb[c].dtype) for c in fa} == {c: str(fa[c].dtype) for c in fa}


def test_failures_context_errors_and_manifest_gaps_match_the_serial_path(tmp_path, client):
    root = tmp_path / "raw"
    for run in ("good", "bad"):
        d = root / "camp" / run
        d.mkdir(parents=True)
        for f in sorted((FIXTURES / "fio" / "randread-4k-windowed").iterdir()):
            shutil.copy(f, d / f.name)
        (d / "run.json").write_text(json.dumps({"campaign": "c-1", "scenario": run}))
    (root / "camp" / "bad" / "run.json").write_text('{"campaign": "c-1",\n  "scenario": }')   # line 2
    (root / "camp" / "good" / "broken.json").write_text('{"fio version": "fio-3.33", "jobs": [')
    write_manifest(root)
    (root / "camp" / "good" / "gone.txt").write_text("x")
    manifest = (root / "MANIFEST.sha256").read_text()
    (root / "MANIFEST.sha256").write_text(manifest + f"{'0' * 64}  camp/missing.json\n")
    (root / "camp" / "good" / "gone.txt").unlink()
    a = ingest(root, progress=False)
    res = ingest_batches(root, tmp_path / "dask", dask=True, batch_files=2, client=client, progress=False)
    assert sorted(res.failed) == sorted(a.failed)
    msgs = "\n".join(m for _, m in res.failed)
    assert "camp/bad/run.json" in msgs and ":2" in msgs                       # file and line, once
    assert sum("camp/bad/run.json" in m for _, m in res.failed) == 1
    assert "camp/missing.json: listed in MANIFEST.sha256 but missing" in msgs
    assert "broken.json" in msgs
    b = read_tables(tmp_path / "dask")
    write_tables(a, tmp_path / "serial")
    _same(read_tables(tmp_path / "serial"), b)


def test_command_line_dask_flag_and_layouts_replace_each_other(tmp_path):
    from analysis.__main__ import main
    out = tmp_path / "out"
    src = FIXTURES / "rados_bench"
    assert main(["ingest", str(src), "--out", str(out), "--no-progress", "--dask", "--workers", "1"]) == 0
    assert (out / "series").is_dir() and (out / "files.parquet").is_file()
    df = read_dataset(out / "series")
    assert set(df["kind"].astype(str)) == {"rados-bench"} and df["campaign"].isna().all()
    ref = ingest(src, progress=False)
    pd.testing.assert_frame_equal(canonical(df), canonical(ref.series), check_dtype=False)
    write_tables(ref, out)                             # the serial layout replaces the partitioned one
    assert not (out / "series").exists() and (out / "series.parquet").is_file()
    with pytest.raises(FileNotFoundError, match="no such partitioned table"):
        read_dataset(out / "series")


def test_our_local_cluster_workers_run_without_the_sampling_profiler():
    """Its threads hold frames (CPU, and a memory map's buffer stays exported: BufferError on close)."""
    import dask

    from analysis.ingest.executors import dask_tasks
    with dask_tasks(workers=1) as ex:
        assert ex.cluster is not None and ex.workers == 1
        assert list(ex.client.run(lambda: dask.config.get("distributed.worker.profile.enabled")).values()) == [False]
    assert dask.config.get("distributed.worker.profile.enabled") is True      # the caller's config untouched


def test_a_streamed_block_trace_writes_its_request_rows_to_parts_block_by_block(tmp_path, monkeypatch):
    """A block trace read in blocks on the Dask path (``run_batch``) never holds its request rows: they go
    to ``blk_requests/…/part-*.parquet`` a step at a time and equal the serial path's rows."""
    from analysis.ingest import blktrace, scale

    src = FIXTURES / "blktrace" / "ftrace-loop-mq-deadline-4k-write.blktrace.gz"
    run = tmp_path / "raw" / "camp" / "rep-1"
    run.mkdir(parents=True)
    shutil.copy(src, run / src.name)
    serial = ingest(tmp_path / "raw", progress=False)
    monkeypatch.setattr(blktrace, "STREAM_MIN_BYTES", 8)  # stream even this small trace ...
    monkeypatch.setattr(blktrace, "BLOCK_RECORDS", 1000)  # ... in many steps
    monkeypatch.setattr(blktrace, "WINDOW_RECORDS", 2048)
    out = tmp_path / "parts"
    res = scale.run_batch(str(tmp_path / "raw"), [f"camp/rep-1/{src.name}"], str(out), 0, None)
    meta = json.loads(res["files"]["meta_json"].iloc[0])
    n = len(serial.tables["blk_requests"])
    assert n == 1991 and meta["requests_streamed"] == n == res["rows"]["blk_requests"]
    assert meta["stream_bounds"] == {} and res["failed"] == []
    parts = list(out.glob("blk_requests/campaign=_none/kind=blktrace/part-*.parquet"))
    import pyarrow.parquet as pq
    assert len(parts) == 1 and pq.ParquetFile(parts[0]).num_row_groups > 3  # one row group per step
    got = read_dataset(out / "blk_requests")
    pd.testing.assert_frame_equal(canonical(got), canonical(serial.tables["blk_requests"]), check_dtype=False)
    pd.testing.assert_frame_equal(canonical(read_dataset(out / "series")), canonical(serial.series),
                                  check_dtype=False)


def test_the_default_path_holds_one_part_at_a_time_in_the_parent(tmp_path):
    """Bounded memory (issue 26): with batches of the same size, the parent's Arrow allocation peak (a fresh
    process each: ``max_memory`` of Arrow's pool, the merge's buffers) is no larger for a tree four times
    larger (2 vs 8 copies of the fio and trace fixtures, each with a 100k-line per-IO log made of the
    fixture's, time-shifted, so that the series, not the files table, is most of the bytes), while the
    rows written grow four-fold; the workers read in their own processes."""
    import subprocess
    import sys
    from conftest import ROOT

    src = (FIXTURES / "fio" / "randrw-4k-perio" / "perio_clat.1.log").read_text().splitlines()
    rows = [ln.split(", ", 1) for ln in src]
    span = int(rows[-1][0]) + 1
    long = "".join(f"{int(t) + k * span}, {rest}\n" for k in range(-(-100_000 // len(rows))) for t, rest in rows)

    def tree(n: int) -> Path:
        root = tmp_path / f"copies-{n}"
        for i in range(n):
            shutil.copytree(FIXTURES / "fio", root / f"c{i}" / "fio")
            shutil.copytree(FIXTURES / "blktrace", root / f"c{i}" / "blktrace")
            (root / f"c{i}" / "long").mkdir()
            (root / f"c{i}" / "long" / "long_clat.1.log").write_text(long)
        return root

    code = ("import json, sys, pyarrow as pa\n"
            "from analysis.ingest.scale import ingest_batches\n"
            "r = ingest_batches(sys.argv[1], sys.argv[2], jobs=2, lenient=True, batch_files=16, progress=False)\n"
            "print(json.dumps({'peak': pa.default_memory_pool().max_memory(), 'rows': r.rows['series'],\n"
            "                  'failed': len(r.failed)}))\n")
    got = []
    for n in (2, 8):
        out = subprocess.run([sys.executable, "-c", code, str(tree(n)), str(tmp_path / f"out-{n}")], cwd=ROOT,
                             capture_output=True, text=True, check=True,  # the long log has no fio JSON beside it
                             env={**os.environ, "CEPHQOS_LOG_UNITS": "ns"}).stdout
        got.append(json.loads(out.strip().splitlines()[-1]))
    assert got[0]["failed"] == got[1]["failed"] == 0
    assert got[1]["rows"] == 4 * got[0]["rows"] > 400_000
    assert 0 < got[1]["peak"] <= 1.25 * got[0]["peak"], got  # one row group at a time, not the whole table


def test_the_dask_layout_reads_series_with_run_keys_and_key_filters(tmp_path, client):
    """Partitioned series (no run keys in the parts): ``tables.read`` joins them from ``files`` as for the
    single file, and a filter on a joined key selects through ``files``."""
    from analysis import store as tset
    from test_tables import _keyed_tree
    root = _keyed_tree(tmp_path / "raw")
    mem = ingest(root, progress=False, lenient=True)
    ingest_batches(root, tmp_path / "dask", dask=True, batch_files=4, client=client, progress=False, lenient=True)
    part = next((tmp_path / "dask" / "series").glob("campaign=*/kind=*/part-*.parquet"))
    assert "repeat" not in pd.read_parquet(part).columns
    got = tset.read_table(tmp_path / "dask", "series")
    pd.testing.assert_frame_equal(canonical(got), canonical(mem.series), check_dtype=False)
    assert {c: str(got[c].dtype) for c in ("repeat", "iodepth", "max_scrubs")} == \
        {c: str(mem.series[c].dtype) for c in ("repeat", "iodepth", "max_scrubs")}
    two = tset.read_table(tmp_path / "dask", "series", filters=[("repeat", "==", 2), ("kind", "in", ["fio-log"])])
    want = mem.series[(mem.series["repeat"] == 2) & (mem.series["kind"] == "fio-log")]
    assert len(two) == len(want) > 0 and set(two["note"].astype(str)) == {"second"}


def test_request_keys_as_repeated_arrow_strings_equal_assign():
    """walk.with_labels gives what DataFrame.assign gives for text labels: values and pandas' str dtype."""
    import numpy as np
    from analysis.ingest.walk import with_labels
    for n in (0, 1, 1000):
        df = pd.DataFrame({"c_ns": np.arange(n, dtype=np.int64), "ddir": pd.Categorical(["read"] * n)})
        labels = {"kind": "blktrace", "source": "camp/rep-1/trace.blktrace", "repeat": "2", "note": "",
                  "arm": "µClock ✓"}
        got, want = with_labels(df, labels), df.assign(**labels)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert [str(t) for t in got.dtypes] == [str(t) for t in want.dtypes]
    assert with_labels(df, {"run": "x"})["run"].tolist() == ["x"] * 1000


@pytest.mark.parametrize("campaign", [None, "qos-v2"])
def test_a_streamed_block_goes_to_its_part_as_the_pandas_path_writes_it(campaign):
    """scale.series_block (Arrow arrays) = what the stored series rows are through pandas (walk._assemble
    without run keys, then pyarrow.Table.from_pandas and the part's dictionary<int32, string> cast): a
    missing direction label, a NaN value (null, as from_pandas makes it), a campaign or none."""
    import numpy as np
    import pyarrow as pa
    from analysis.ingest import base
    from analysis.ingest.scale import series_block
    from analysis.ingest.walk import _assemble
    n = 7
    ddir = base.cat(np.array([0, 1, -1, 0, 1, 1, 0], np.int8), ["read", "write"])
    value = np.array([1.0, 2.5, np.nan, 4.0, 5.0, 6.0, 7.0])
    frame = base.series_frame("/abs/x_clat.1.log", "x", ddir, "clat", "ns", np.arange(n) / 10, value)
    keys = {"kind": "fio-log", "source": "camp/x_clat.1.log", "campaign": campaign}
    df = _assemble([frame], [0], [keys], base.SERIES_COLUMNS, keys=False)
    want = pa.Table.from_pandas(df, preserve_index=False)
    text = pa.dictionary(pa.int32(), pa.string())
    want = want.cast(pa.schema([pa.field(f.name, text) if not pa.types.is_floating(f.type) else f
                                for f in want.schema]), safe=False).replace_schema_metadata(None)
    got = series_block(frame, keys)
    assert got.equals(want), (got.schema, want.schema)
    assert got.column("value").null_count == 1 and got.column("ddir").null_count == 1
    assert got.column("source").to_pylist() == ["camp/x_clat.1.log"] * n
    assert got.column("campaign").to_pylist() == [campaign] * n
    assert series_block(frame, keys, split=True).column_names == ["source", "job", "ddir", "metric", "value",
                                                                  "unit", "t_s"]


def test_a_merge_error_stops_the_ingest_and_leaves_the_previous_tables(tmp_path, monkeypatch):
    """The default path merges in the parent while the workers read: a write error there (here: the disk
    full on the first merge) ends the ingest with that error, no staging folder left (no worker still
    writing into it) and the previous table set as it was.  (That the batches not yet started are cancelled
    is not asserted here — workers may be forkserver children; measured: 225 batches, 3.98 s read, 0.18 s
    to the error.)"""
    import errno
    import os
    from analysis import store as tset
    from analysis.ingest.scale import ingest_batches
    root = tmp_path / "tree"
    for i in range(6):
        shutil.copytree(FIXTURES / "fio", root / f"c{i}")
    out = tmp_path / "out"
    ingest_batches(root, out, jobs=2, lenient=True, batch_files=8, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def full(self, parts):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.dest))
    monkeypatch.setattr(tset.PartMerger, "add", full)
    with pytest.raises(OSError) as e:
        ingest_batches(root, out, jobs=2, lenient=True, batch_files=8, progress=False)
    assert e.value.errno == errno.ENOSPC
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".ingest-")]

"""One ingest's tables are one set (issue 26): ``tables.json`` is written last and readers refuse a set that
disagrees with it — a kill between two renames, a table copied in from another ingest, a set without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from analysis import store as tset
from analysis.ingest.walk import ingest, read_tables, write_tables
from analysis.stats.runs import load_summary
from conftest import FIXTURES, ROOT


@pytest.fixture(scope="module")
def fio_result():
    return ingest(FIXTURES / "fio", progress=False, lenient=True)


@pytest.fixture(scope="module")
def rados_result():
    return ingest(FIXTURES / "rados_bench", progress=False, lenient=True)


def test_the_record_states_what_each_table_holds(tmp_path, fio_result):
    write_tables(fio_result, tmp_path, root=FIXTURES / "fio")
    rec = json.loads((tmp_path / "tables.json").read_text())
    for name, df in (("files", fio_result.files), ("summary", fio_result.summary), ("series", fio_result.series)):
        assert rec["tables"][name] == {"layout": "file", "rows": len(df),
                                       "bytes": (tmp_path / f"{name}.parquet").stat().st_size}
    assert len(fio_result.series) > 1000 and rec["manifest_sha256"] is None  # the fixture tree has no manifest
    assert len(rec["code"]) == 12 and rec["source"] == str((FIXTURES / "fio").resolve())
    assert len(read_tables(tmp_path).summary) == len(fio_result.summary)


def test_a_kill_between_two_renames_leaves_a_set_every_reader_refuses(tmp_path, fio_result, rados_result,
                                                                      monkeypatch):
    """files.parquet of the new ingest beside summary.parquet of the old: refused, never read as one set."""
    write_tables(fio_result, tmp_path)
    real, calls = os.replace, []

    def dies_on_the_second(a, b):
        calls.append(b)
        if len(calls) == 2:
            raise KeyboardInterrupt  # what SIGINT does between the renames
        return real(a, b)

    monkeypatch.setattr("analysis.ingest.walk.os.replace", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        write_tables(rados_result, tmp_path)
    monkeypatch.undo()
    assert pd.read_parquet(tmp_path / "files.parquet").shape[0] == len(rados_result.files)    # new
    assert pd.read_parquet(tmp_path / "summary.parquet").shape[0] == len(fio_result.summary)  # old
    assert not (tmp_path / "tables.json").exists() and not list(tmp_path.glob(".*.tmp-*"))
    with pytest.raises(tset.TableSetError, match=r"files, summary, series but no tables\.json.*make data"):
        read_tables(tmp_path)
    with pytest.raises(tset.TableSetError, match=r"no tables\.json.*\(DATA=raw\)"):
        load_summary("raw", tmp_path)  # the notebooks' loader: an error, not a silent re-read of raw data
    write_tables(rados_result, tmp_path)  # the next complete ingest makes it a set again
    assert len(read_tables(tmp_path).summary) == len(rados_result.summary)


def test_a_table_copied_in_from_another_ingest_is_named(tmp_path, fio_result, rados_result):
    a, b = tmp_path / "a", tmp_path / "b"
    write_tables(fio_result, a)
    write_tables(rados_result, b)
    shutil.copy(b / "summary.parquet", a / "summary.parquet")
    with pytest.raises(tset.TableSetError, match=rf"table 'summary' has rows {len(rados_result.summary)}, "
                                                 rf"tables\.json says {len(fio_result.summary)}"):
        read_tables(a)
    (a / "summary.parquet").unlink()
    with pytest.raises(tset.TableSetError, match="lists table 'summary' but it is missing"):
        tset.verify(a)
    with pytest.raises(tset.TableSetError, match="no processed tables"):
        tset.verify(tmp_path / "empty")


def test_compare_on_an_incomplete_set_is_bad_input(tmp_path, fio_result):
    """`analysis compare` on a folder of tables without its record: exit 2 and the reason, no traceback."""
    write_tables(fio_result, tmp_path / "t")
    (tmp_path / "t" / "tables.json").unlink()
    r = subprocess.run([sys.executable, "-m", "analysis", "compare", str(tmp_path / "t"), "--by", "job"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "no tables.json" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_merged_parts_read_back_as_the_in_memory_tables(tmp_path):
    """Parts with different columns and categories → one file: rows in part order, a column a part lacks null
    there, categories unioned (more than an int8 dictionary holds), nullable integers kept, a key that is
    text in one part and a number in another becomes a category of its text, int beside float → float."""
    import numpy as np
    a = pd.DataFrame({"k": pd.Categorical(["x", "y"]), "v": [1.0, 2.0], "repeat": pd.array([1, None], dtype="Int64"),
                      "n": np.array([1, 2], dtype=np.int64)})
    b = pd.DataFrame({"k": pd.Categorical(["z", "x"]), "v": [3.0, 4.0], "extra": pd.Categorical(["e", None]),
                      "repeat": pd.array([2, 3], dtype="Int64"), "n": [0.5, 1.5]})
    c = pd.DataFrame({"k": pd.Categorical([f"c{i:03d}" for i in range(300)]), "v": np.arange(300.0),
                      "repeat": pd.Categorical(["r1"] * 300), "n": np.zeros(300, dtype=np.int64)})
    parts = []
    for i, df in enumerate((a, b, c)):
        parts.append(tmp_path / f"part-{i}.parquet")
        df.to_parquet(parts[-1], index=False)
    assert tset.merge_parts(parts[:2], tmp_path / "ab.parquet") == 4
    ab = pd.read_parquet(tmp_path / "ab.parquet")
    assert ab["k"].tolist() == ["x", "y", "z", "x"] and str(ab["k"].dtype) == "category"
    assert str(ab["repeat"].dtype) == "Int64" and ab["repeat"].isna().tolist() == [False, True, False, False]
    assert ab["extra"].isna().tolist() == [True, True, False, True] and ab["n"].tolist() == [1.0, 2.0, 0.5, 1.5]
    assert tset.merge_parts(parts, tmp_path / "abc.parquet") == 304
    abc = pd.read_parquet(tmp_path / "abc.parquet")
    assert abc["k"].nunique() == 303 and abc["k"].iloc[-1] == "c299"
    assert str(abc["repeat"].dtype) == "category" and abc["repeat"].isna().tolist()[:4] == [False, True, False, False]
    assert abc["repeat"].iloc[[0, 2, 3, -1]].tolist() == ["1", "2", "3", "r1"]



def test_part_merger_streaming_or_not_writes_the_file_merge_parts_writes(tmp_path):
    """Parts fed to PartMerger as they arrive give the bytes merge_parts gives on all of them: parts that
    keep the first part's schema are written as they come (no merge left at close); a part that changes
    it (a new column, a column all-null so far) restarts the file in the wider schema, or, past the
    restarts allowed, leaves the merge to close."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.ipc as ipc

    def part(name, df):
        path = tmp_path / name
        t = pa.Table.from_pandas(df, preserve_index=False)
        with pa.OSFile(str(path), "wb") as sink, ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        return path

    same = [part(f"s{i}.arrows", pd.DataFrame({"k": pd.Categorical([f"k{i}", "x"]), "v": [i, i + 0.5]}))
            for i in range(3)]
    m = tset.PartMerger(tmp_path / "s.parquet")
    for p in same:
        m.add([p])
    assert m.streaming and m.close() == 6
    assert tset.merge_parts(same, tmp_path / "s-ref.parquet") == 6
    assert (tmp_path / "s.parquet").read_bytes() == (tmp_path / "s-ref.parquet").read_bytes()
    assert pd.read_parquet(tmp_path / "s.parquet")["k"].tolist() == ["k0", "x", "k1", "x", "k2", "x"]

    # a streamed log's part carries no pandas metadata (scale._PartWriter): the parts after it, which do,
    # keep the file's schema (pandas' metadata does not depend on which part told it)
    bare = tmp_path / "bare.arrows"
    t = pa.Table.from_pandas(pd.DataFrame({"k": pd.Categorical(["b"]), "v": [9.0]}),
                             preserve_index=False).replace_schema_metadata(None)
    with pa.OSFile(str(bare), "wb") as sink, ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    m = tset.PartMerger(tmp_path / "b.parquet")
    for p in [bare, *same]:
        m.add([p])
    assert m.streaming and m.restarts == 0 and m.close() == 7
    assert tset.merge_parts([bare, *same], tmp_path / "b-ref.parquet") == 7
    assert (tmp_path / "b.parquet").read_bytes() == (tmp_path / "b-ref.parquet").read_bytes()
    assert str(pd.read_parquet(tmp_path / "b.parquet")["k"].dtype) == "category"

    changing = [part("c0.arrows", pd.DataFrame({"k": pd.Categorical(["a"]), "c": [None], "v": [1.0]})),
                part("c1.arrows", pd.DataFrame({"k": pd.Categorical(["b"]), "c": pd.Categorical(["camp"]),
                                                "v": [2.0], "n": np.array([7], dtype=np.int64)}))]
    m = tset.PartMerger(tmp_path / "c.parquet")
    m.add(changing[:1])
    assert m.restarts == 0
    m.add(changing[1:])
    assert m.streaming and m.restarts == 1 and m.close() == 2
    assert tset.merge_parts(changing, tmp_path / "c-ref.parquet") == 2
    assert (tmp_path / "c.parquet").read_bytes() == (tmp_path / "c-ref.parquet").read_bytes()
    m = tset.PartMerger(tmp_path / "c2.parquet")  # no restart allowed: merged once at close
    m.RESTARTS = 0
    m.add(changing)
    assert not m.streaming and m.close() == 2
    assert (tmp_path / "c2.parquet").read_bytes() == (tmp_path / "c-ref.parquet").read_bytes()
    got = pd.read_parquet(tmp_path / "c.parquet")
    assert got["c"].isna().tolist() == [True, False] and str(got["c"].dtype) == "category"
    assert got["n"].isna().tolist() == [True, False]

def _keyed_tree(root):
    """Two runs of the fio fixtures with run.json keys: numbers, text, a key only one run has."""
    for rep, extra in ((1, {"max_scrubs": 3}), (2, {"note": "second"})):
        d = root / "camp" / f"rep-{rep}"
        shutil.copytree(FIXTURES / "fio" / "randrw-4k-perio", d)
        shutil.copytree(FIXTURES / "fio" / "randread-4k-windowed", d / "windowed")
        (d / "run.json").write_text(json.dumps({"campaign": "c1", "scenario": "s", "scheduler": "bfq",
                                                "repeat": rep, "bs": "4k", "iodepth": 4 * rep, **extra}))
    d = root / "camp" / "notes-only"  # a key only a run without rows has: in files, not a series column
    d.mkdir()
    (d / "COMMAND").write_text("fio --name=x\n")
    (d / "run.json").write_text(json.dumps({"campaign": "c1", "only_here": "x"}))
    return root


def test_series_is_stored_without_run_keys_and_read_back_with_them(tmp_path):
    """``series.parquet`` holds campaign as its only run key (the others once per file, in ``files``);
    ``tables.read`` joins them back: the in-memory table, column for column, dtype for dtype and category
    for category, from either ingest path; a filter or a column list on a joined key works; DuckDB's
    source gives the same keys."""
    import pyarrow.parquet as pq
    from analysis.ingest.scale import ingest_batches
    from analysis.stats.aggregate import source
    import duckdb
    root = _keyed_tree(tmp_path / "raw")
    mem = ingest(root, progress=False, lenient=True)
    assert {"repeat", "iodepth", "max_scrubs", "note", "io_scheduler"} <= set(mem.series.columns)
    assert "only_here" in mem.files and "only_here" not in mem.series
    for out, write in ((tmp_path / "serial", lambda o: write_tables(mem, o, root)),
                       (tmp_path / "pool", lambda o: ingest_batches(root, o, jobs=2, lenient=True, progress=False))):
        write(out)
        assert pq.read_schema(out / "series.parquet").names == ["kind", "source", "job", "ddir", "metric", "value",
                                                                 "unit", "t_s", "campaign"]
        got = tset.read_table(out, "series")
        pd.testing.assert_frame_equal(got, mem.series)
        two = tset.read_table(out, "series", filters=[("repeat", "==", 2), ("metric", "==", "clat")],
                        columns=["source", "metric", "value", "repeat", "iodepth"])
        want = mem.series[(mem.series["repeat"] == 2) & (mem.series["metric"] == "clat")]
        assert list(two.columns) == ["source", "metric", "value", "repeat", "iodepth"]
        assert len(two) == len(want) > 0 and set(two["iodepth"]) == {8} and two["value"].sum() == want["value"].sum()
        assert str(two["repeat"].dtype) == "Int64"
        none = tset.read_table(out, "series", filters=[("scenario", "==", "absent")], columns=["value", "scenario"])
        assert none.shape == (0, 2)  # no file has the key asked for: no rows, not an error
        n = duckdb.sql(f"SELECT repeat, max_scrubs, note, count(*) AS n FROM {source(out, 'series')} "
                       "GROUP BY ALL ORDER BY repeat").df()
        assert n["repeat"].tolist() == [1, 2] and n["max_scrubs"].tolist()[0] == 3 and n["note"].tolist()[1] == "second"
        assert n["n"].tolist() == mem.series["repeat"].value_counts().sort_index().tolist()


def test_a_set_written_with_run_keys_on_every_series_row_still_reads(tmp_path):
    """A set from before keys were stored once per file (wide series) reads as it did: keys kept, none doubled."""
    root = _keyed_tree(tmp_path / "raw")
    mem = ingest(root, progress=False, lenient=True)
    write_tables(mem, tmp_path / "out", root)
    mem.series.to_parquet(tmp_path / "out" / "series.parquet", index=False)
    tset.commit(tmp_path / "out", ["files", "summary", "series"], root)
    pd.testing.assert_frame_equal(tset.read_table(tmp_path / "out", "series"), mem.series)


def test_merged_files_keep_min_max_where_readers_filter(tmp_path):
    """The default ingest's merged files keep row-group min/max on the filter columns (tables.STATS_COLUMNS)
    and not elsewhere; series.parquet none on job and ddir (tables.SERIES_NO_STATS: its row groups mix them)."""
    import pyarrow.parquet as pq
    from analysis.ingest.scale import ingest_batches
    root = _keyed_tree(tmp_path / "raw")
    out = tmp_path / "pool"
    ingest_batches(root, out, jobs=1, lenient=True, progress=False)

    def with_stats(name):
        f = pq.ParquetFile(out / f"{name}.parquet")
        names = f.schema_arrow.names
        rg = f.metadata.row_group(0)
        return {n for i, n in enumerate(names) if rg.column(i).statistics is not None
                and rg.column(i).statistics.has_min_max}

    series = with_stats("series")
    assert {"campaign", "kind", "source", "metric"} <= series and not {"job", "ddir", "value", "t_s"} & series
    summary = with_stats("summary")
    assert {"campaign", "kind", "source", "metric", "job", "ddir"} <= summary and "value" not in summary


def test_the_notebooks_loaders_read_only_the_campaigns_and_columns_asked(real_proc):
    """load_series / load_summary(campaigns=, columns=) as the notebooks call them: the same rows and values
    as the whole table's read then selected (two of the shipped campaigns, a few columns: the whole series
    is 4.7 M rows here); read_tables(columns=) keeps every row (notebook 00 counts them)."""
    from analysis.stats.runs import load_series
    camps = ["rgw-2026", "rgw-2026-pilot"]
    cols = ["campaign", "kind", "metric", "t_s", "value", "scenario"]
    got = load_series("raw", real_proc, camps, cols)
    whole = tset.read_table(real_proc, "series", columns=cols)
    want = whole[whole["campaign"].astype(str).isin(camps)]
    assert len(got) > 0 and set(got["campaign"].astype(str)) == set(camps)
    key = ["campaign", "kind", "metric", "scenario", "t_s", "value"]
    a = got[key].astype({c: str for c in ["campaign", "kind", "metric", "scenario"]}).sort_values(key, ignore_index=True)
    b = want[key].astype({c: str for c in ["campaign", "kind", "metric", "scenario"]}).sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(a, b)
    s = load_summary("raw", real_proc, ["rgw-2026"])
    full = tset.read_table(real_proc, "summary")
    assert len(s) == int((full["campaign"].astype(str) == "rgw-2026").sum()) > 0
    counted = read_tables(real_proc, {"series": ["metric"]})
    assert len(counted.series) == len(whole) and list(counted.series.columns) == ["metric"]

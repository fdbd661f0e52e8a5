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

from analysis.ingest import tables as tset
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

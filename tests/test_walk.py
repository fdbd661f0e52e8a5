"""`python -m analysis ingest`: any layout, CBT archives, run.json, manifest, bad files, atomic output."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd

from analysis.ingest.walk import ingest, write_manifest
from conftest import FIXTURES, ROOT

CBT_YAML = """cluster:
  benchmark: librbdfio
  iteration: 2
  op_size: 4096
  iodepth: 16
  mode: randwrite
  ceph_conf:
    osd:
      osd_op_queue: mclock_scheduler
      osd_mclock_profile: high_client_ops
"""


def _tree(tmp_path):
    run = tmp_path / "results" / "00000002" / "id-1a2b3c4d"
    run.mkdir(parents=True)
    for f in (FIXTURES / "fio" / "randrw-4k-perio").iterdir():
        shutil.copy(f, run / f.name)
    (run / "benchmark_config.yaml").write_text(CBT_YAML)
    own = tmp_path / "ceph-qos" / "c1" / "baseline" / "wpq" / "rep-01"
    own.mkdir(parents=True)
    shutil.copy(FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json", own)
    (own / "run.json").write_text('{"campaign": "c1", "scenario": "baseline", "scheduler": "wpq",'
                                  ' "profile": null, "repeat": 1}')
    return tmp_path


def test_cbt_and_run_json_context(tmp_path):
    res = ingest(_tree(tmp_path), progress=False)
    assert res.failed == []
    f = res.files.set_index("path")
    assert f.loc["results/00000002/id-1a2b3c4d/randrw-4k-perio.json", "kind"] == "fio-json"
    assert f.loc["results/00000002/id-1a2b3c4d/perio_slat.1.log", "status"] == "empty"
    assert f.loc["results/00000002/id-1a2b3c4d/benchmark_config.yaml", "status"] == "context"
    s = res.summary
    cbt = s[s["source"] == "results/00000002/id-1a2b3c4d/randrw-4k-perio.json"]
    assert set(cbt["scheduler"].astype(str)) == {"mclock_scheduler"}
    assert set(cbt["profile"].astype(str)) == {"high_client_ops"}
    assert set(cbt["repeat"].astype(str)) == {"2"} and set(cbt["op_size"].astype(str)) == {"4096"}
    assert set(cbt["run"].astype(str)) == {"results/00000002/id-1a2b3c4d"}
    own = s[s["campaign"] == "c1"]
    assert set(own["scheduler"].astype(str)) == {"wpq"} and set(own["scenario"].astype(str)) == {"baseline"}
    # series rows carry the same keys
    ser = res.series
    assert set(ser["scheduler"].dropna().astype(str)) == {"mclock_scheduler"}


def test_run_json_tuned_keys_come_from_the_effective_osd_config(tmp_path):
    """Issue 10: arms are selected by the values the OSDs ran, not by directory name."""
    import json
    own = tmp_path / "c1" / "scrub" / "some-arm-name" / "rep-02"
    own.mkdir(parents=True)
    shutil.copy(FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json", own)
    doc = {"campaign": "c1", "scenario": "scrub", "arm": "some-arm-name", "repeat": 2,
           "scheduler": "mclock_scheduler", "profile": "high_client_ops",
           "background_unfinished": ["deep_scrub"],
           "earlier_attempts": [{"attempt": 1, "status": "disturbed"}],
           "osd_config": {"requested": {"osd_max_scrubs": 10},
                          "effective": {"osd_max_scrubs": "10", "osd_scrub_cost": "20971520",
                                        "osd_requested_scrub_priority": "5.000000",
                                        "osd_op_queue": "mclock_scheduler"}}}
    (own / "run.json").write_text(json.dumps(doc))
    (own / "done").write_text("2026-11-22T14:00:00+0000\n")
    (tmp_path / "c1" / "sitting-20261122T140000.json").write_text("{}\n")
    (tmp_path / "c1" / "sitting-notes.txt").write_text("not the harness's\n")
    res = ingest(tmp_path, progress=False)
    f = res.files.set_index("path")
    assert f.loc["c1/scrub/some-arm-name/rep-02/done", "status"] == "context"
    assert f.loc["c1/sitting-20261122T140000.json", "kind"] == "capture-aux"
    assert f.loc["c1/sitting-notes.txt", "status"] == "unrecognised"
    s = res.summary
    row = s.iloc[0]
    assert (row["max_scrubs"], row["scrub_cost"], row["requested_scrub_priority"]) == ("10", "20971520", "5")
    assert row["background_unfinished"] == "deep_scrub" and row["redone"] == "1"
    assert row["arm"] == "some-arm-name" and row["repeat"] == "2"
    assert "osd_op_queue" not in s.columns  # only the tuned keys are lifted out of the nested config


def test_cli_lists_bad_files_and_exits_1(tmp_path):
    root = _tree(tmp_path)
    (root / "broken.json").write_text('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n')
    (root / "notes.txt").write_text("just notes\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "analysis", "ingest", str(root), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert "broken.json:4: malformed or truncated fio JSON" in r.stderr
    files = pd.read_parquet(out / "files.parquet").set_index("path")
    assert files.loc["broken.json", "status"] == "failed" and files.loc["broken.json", "error_line"] == 4
    assert files.loc["notes.txt", "status"] == "unrecognised"
    assert len(files.loc["broken.json", "sha256"]) == 64
    # nothing half-written: only the three tables, no temp files
    assert sorted(p.name for p in out.iterdir()) == ["files.parquet", "series.parquet", "summary.parquet"]
    summary = pd.read_parquet(out / "summary.parquet")
    assert (summary["metric"] == "clat_mean").any()


def test_manifest_verification(tmp_path):
    root = _tree(tmp_path)
    write_manifest(root)
    assert ingest(root, progress=False).failed == []
    target = root / "results" / "00000002" / "id-1a2b3c4d" / "perio_iops.1.log"
    target.write_text(target.read_text().replace("0, 1, 0, 4096", "0, 1, 1, 4096", 1))
    res = ingest(root, progress=False)
    assert [rel for rel, _ in res.failed] == ["results/00000002/id-1a2b3c4d/perio_iops.1.log"]
    assert "MANIFEST" in res.failed[0][1]


def test_superseded_runs_are_in_the_manifest_but_not_ingested(tmp_path):
    """A block split between sittings: its earlier runs move under _superseded/ (capture.ceph.campaign);
    they stay checksummed, and ingest neither reads them nor calls them missing."""
    root = _tree(tmp_path)
    old = root / "ceph-qos" / "c1" / "_superseded" / "fsid-1" / "baseline" / "wpq" / "rep-01"
    shutil.copytree(root / "ceph-qos" / "c1" / "baseline" / "wpq" / "rep-01", old)
    m = write_manifest(root).read_text()
    assert "ceph-qos/c1/_superseded/fsid-1/baseline/wpq/rep-01/run.json" in m
    res = ingest(root, progress=False)
    assert res.failed == []
    assert not res.files["path"].str.contains("_superseded").any()
    assert (res.files["path"] == "ceph-qos/c1/baseline/wpq/rep-01/run.json").any()


def _assert_identical(a, b) -> None:
    """Row for row, dtype for dtype, category order for category order."""
    for n in ("files", "summary", "series"):
        x, y = getattr(a, n), getattr(b, n)
        pd.testing.assert_frame_equal(x, y, check_exact=True)
        assert list(x.columns) == list(y.columns)
        for c in x.columns:
            if isinstance(x[c].dtype, pd.CategoricalDtype):
                assert x[c].cat.categories.tolist() == y[c].cat.categories.tolist(), (n, c)
    assert a.tables.keys() == b.tables.keys()
    for k in a.tables:
        pd.testing.assert_frame_equal(a.tables[k], b.tables[k], check_exact=True)
    assert a.failed == b.failed


def test_jobs_give_the_serial_tables_exactly(tmp_path):
    """``ingest(jobs=N)`` reads runs of 16 files in N processes and merges their stacks: keys that only
    later chunks have, categories first seen in later chunks, block requests, failures, a bad run.json
    and the manifest's gaps come out as in one process."""
    root = tmp_path / "raw"
    shutil.copytree(FIXTURES, root / "fx")
    (root / "fx" / "blktrace" / "run.json").write_text('{"campaign": "c-b", "repeat": 2, "only_b": "x"}')
    (root / "fx" / "rados_bench" / "run.json").write_text('{"campaign": "c-r", "only_r": 7}')
    (root / "fx" / "fio" / "randrw-4k-perio" / "run.json").write_text('{"campaign": "c-f",\n "repeat": }')
    (root / "fx" / "fio" / "broken.json").write_text('{"fio version": "fio-3.33", "jobs": [')
    write_manifest(root)
    (root / "MANIFEST.sha256").write_text((root / "MANIFEST.sha256").read_text() + f"{'0' * 64}  gone.json\n")
    one = ingest(root, progress=False)
    assert len(one.files) > 48 and len(one.tables["blk_requests"]) > 3000
    assert {"only_b", "only_r"} <= set(one.series.columns)
    assert any("randrw-4k-perio/run.json" in m and ":2" in m for _, m in one.failed)
    assert any("gone.json: listed in MANIFEST.sha256 but missing" in m for _, m in one.failed)
    for jobs in (2, 3):
        _assert_identical(one, ingest(root, progress=False, jobs=jobs))


def test_cli_jobs_writes_the_same_tables(tmp_path):
    from analysis.__main__ import main
    assert main(["ingest", str(FIXTURES), "--out", str(tmp_path / "a"), "--no-progress", "--jobs", "1"]) == 0
    assert main(["ingest", str(FIXTURES), "--out", str(tmp_path / "b"), "--no-progress", "--jobs", "2"]) == 0
    for n in ("files", "summary", "series", "blk_requests"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / f"{n}.parquet"),
                                      pd.read_parquet(tmp_path / "b" / f"{n}.parquet"), check_exact=True)


def test_jobs_start_clean_workers_when_other_threads_run(tmp_path, monkeypatch):
    """With another thread alive (a Dask client, a kernel) the pool must not fork this process."""
    import multiprocessing
    import threading
    asked = []
    real = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context", lambda m=None: asked.append(m) or real(m))
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        _assert_identical(ingest(FIXTURES, progress=False), ingest(FIXTURES, progress=False, jobs=2))
    finally:
        stop.set()
        t.join()
    assert asked == ["forkserver"]
    from analysis.ingest import walk
    monkeypatch.setattr(threading, "active_count", lambda: 1)    # alone (a full test run may have others)
    assert walk._start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert walk._start_method() == "forkserver"

"""`python -m analysis ingest`: any layout, CBT archives, run.json, manifest, bad files, atomic output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd

from analysis.ingest.manifest import write_manifest
from analysis.ingest.walk import ingest
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
        if f.name != "COMMAND":  # the fixture's note of how it was made, not part of a CBT archive
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
    assert set(cbt["op_queue"].astype(str)) == {"mclock_scheduler"}
    assert set(cbt["profile"].astype(str)) == {"high_client_ops"}
    assert set(cbt["repeat"].astype(str)) == {"2"} and set(cbt["op_size"].astype(str)) == {"4096"}
    assert set(cbt["run"].astype(str)) == {"results/00000002/id-1a2b3c4d"}
    own = s[s["campaign"] == "c1"]
    assert set(own["op_queue"].astype(str)) == {"wpq"} and set(own["scenario"].astype(str)) == {"baseline"}
    # series rows carry the same keys
    ser = res.series
    assert set(ser["op_queue"].dropna().astype(str)) == {"mclock_scheduler"}


def test_run_keys_that_are_numbers_are_typed_and_scheduler_is_taken_apart(tmp_path):
    root = _tree(tmp_path)
    blk = root / "block" / "b1" / "fio-xfs" / "bfq" / "rep-03"
    blk.mkdir(parents=True)
    shutil.copy(FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json", blk)
    (blk / "run.json").write_text(json.dumps({"campaign": "b1", "scheduler": "bfq", "repeat": 3, "iodepth": 256,
                                              "bs": "128k", "bs_B": 131072, "duration_s": 4.25}))
    res = ingest(root, progress=False)
    assert res.failed == []
    for t in (res.summary, res.series, res.files):
        assert str(t["repeat"].dtype) == "Int64" and str(t["iodepth"].dtype) == "Int64"
    s = res.summary.drop_duplicates("source").set_index("source")
    b = s.loc["block/b1/fio-xfs/bfq/rep-03/randread-4k-windowed.json"]
    assert (b["repeat"], b["iodepth"], b["bs_B"], b["duration_s"], b["bs"]) == (3, 256, 131072, 4.25, "128k")
    assert str(s["duration_s"].dtype) == "float64" and str(s["op_size"].dtype) == "Int64"
    assert s.loc["results/00000002/id-1a2b3c4d/randrw-4k-perio.json", "op_size"] == 4096
    # a run.json without iodepth: the fixture's fio JSON records none either (psync), so fio's default 1 —
    # and where run.json names one (256, 128k) it stays, the file row saying fio ran otherwise
    assert s.loc["ceph-qos/c1/baseline/wpq/rep-01/randread-4k-windowed.json", "iodepth"] == 1
    f = res.files.set_index("path").loc["block/b1/fio-xfs/bfq/rep-03/randread-4k-windowed.json"]
    assert f["workload_conflict"] == "bs_B: run.json 131072, fio 4096; iodepth: run.json 256, fio 1"
    # one meaning per column: the OSD's op queue and the block layer's IO scheduler; run.json's scheduler
    # (either) is put in the one it means, and no table keeps it
    for t in (res.summary, res.series, res.files):
        assert "scheduler" not in t and {"op_queue", "io_scheduler"} <= set(t.columns)
    got = s[["op_queue", "io_scheduler"]].astype(object).where(s[["op_queue", "io_scheduler"]].notna(), None)
    assert got.loc["block/b1/fio-xfs/bfq/rep-03/randread-4k-windowed.json"].tolist() == [None, "bfq"]
    assert got.loc["ceph-qos/c1/baseline/wpq/rep-01/randread-4k-windowed.json"].tolist() == ["wpq", None]
    assert got.loc["results/00000002/id-1a2b3c4d/randrw-4k-perio.json"].tolist() == ["mclock_scheduler", None]
    # a run.json whose repeat is not a number fails, naming the key; the column stays numbers, nothing guessed
    (blk / "run.json").write_text(json.dumps({"campaign": "b1", "scheduler": "bfq", "repeat": "r3"}))
    res2 = ingest(root, progress=False)
    assert dict(res2.failed)["block/b1/fio-xfs/bfq/rep-03/run.json"].endswith(
        "run.json:1: repeat: expected a finite number, got 'r3'")
    assert str(res2.summary["repeat"].dtype) == "Int64"
    assert set(res2.summary["repeat"].dropna().astype(str)) == {"1", "2"}




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
    res = ingest(tmp_path, progress=False, lenient=True)
    f = res.files.set_index("path")
    assert f.loc["c1/scrub/some-arm-name/rep-02/done", "status"] == "context"
    assert f.loc["c1/sitting-20261122T140000.json", "kind"] == "capture-aux"
    assert f.loc["c1/sitting-notes.txt", "status"] == "unrecognised"
    s = res.summary
    row = s.iloc[0]
    # numbers, typed (Ceph printed "5.000000" for the priority)
    assert (row["max_scrubs"], row["scrub_cost"], row["requested_scrub_priority"]) == (10, 20971520, 5)
    assert str(s["scrub_cost"].dtype) == "Int64"
    assert row["background_unfinished"] == "deep_scrub" and row["redone"] == "1"
    assert row["arm"] == "some-arm-name" and row["repeat"] == 2
    assert "osd_op_queue" not in s.columns  # only the tuned keys are lifted out of the nested config


def test_cli_lists_bad_files_and_exits_1(tmp_path):
    root = _tree(tmp_path / "data")  # --out inside the ingested folder is refused (exit 2)
    (root / "broken.json").write_text('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n')
    (root / "notes.txt").write_text("just notes\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "analysis", "ingest", str(root), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert "broken.json:4: malformed or truncated fio JSON" in r.stderr
    files = pd.read_parquet(out / "files.parquet").set_index("path")
    assert files.loc["broken.json", "status"] == "failed" and files.loc["broken.json", "error_line"] == 4
    assert files.loc["notes.txt", "status"] == "failed"  # strict: content no reader claims is a failure
    assert "notes.txt: unrecognised content: no reader claims it" in r.stderr
    assert len(files.loc["broken.json", "sha256"]) == 64
    # nothing half-written: only the three tables and their record, no temp files
    assert sorted(p.name for p in out.iterdir()) == ["files.parquet", "series.parquet", "summary.parquet",
                                                     "tables.json"]
    summary = pd.read_parquet(out / "summary.parquet")
    assert (summary["metric"] == "clat_mean").any()


def test_strict_by_default_lenient_lists_and_goes_on(tmp_path):
    """Empty (other than fio's own empty logs), unrecognised, unlisted and changed files fail, their rows
    kept out; ``lenient`` lists them (empty, unrecognised; manifest missing / MISMATCH) and goes on."""
    root = _tree(tmp_path)
    run = root / "results" / "00000002" / "id-1a2b3c4d"
    (run / "historic_ops.out.localhost").write_bytes(b"")    # CBT's side files: context, empty or not
    (run / "objecter.0.log.localhost").write_bytes(b"")
    write_manifest(root)
    (run / "notes.txt").write_text("just notes\n")            # after the manifest: unlisted, unrecognised
    (run / "zero.json").write_bytes(b"")                      # unlisted, empty, not a fio log name
    log = run / "perio_iops.1.log"
    log.write_text(log.read_text().replace("0, 1, 0, 4096", "0, 1, 1, 4096", 1))  # changed since the manifest
    strict = ingest(root, progress=False)
    f = strict.files.set_index("path")
    rel = "results/00000002/id-1a2b3c4d/"
    assert f.loc[rel + "historic_ops.out.localhost", ["status", "kind"]].tolist() == ["context", "cbt-aux"]
    assert f.loc[rel + "objecter.0.log.localhost", "kind"] == "cbt-aux"
    assert f.loc[rel + "perio_slat.1.log", "status"] == "empty"  # fio leaves it empty (sync engine): listed
    failed = dict(strict.failed)
    assert sorted(failed) == [rel + "notes.txt", rel + "perio_iops.1.log", rel + "zero.json"]
    assert "not listed in MANIFEST.sha256" in failed[rel + "notes.txt"]  # unlisted is refused before reading
    assert "sha256 differs from MANIFEST.sha256" in failed[rel + "perio_iops.1.log"]
    assert not (strict.series["source"] == rel + "perio_iops.1.log").any()
    lenient = ingest(root, progress=False, lenient=True)
    g = lenient.files.set_index("path")
    assert lenient.failed == []
    assert g.loc[rel + "notes.txt", ["status", "manifest"]].tolist() == ["unrecognised", "missing"]
    assert g.loc[rel + "zero.json", ["status", "manifest"]].tolist() == ["empty", "missing"]
    assert g.loc[rel + "perio_iops.1.log", ["status", "manifest"]].tolist() == ["ok", "MISMATCH"]
    assert (lenient.series["source"] == rel + "perio_iops.1.log").any()
    # strict, with the changed log put back and the extra files listed: unrecognised and empty still fail
    log.write_text(log.read_text().replace("0, 1, 1, 4096", "0, 1, 0, 4096", 1))
    write_manifest(root)
    failed = dict(ingest(root, progress=False).failed)
    assert sorted(failed) == [rel + "notes.txt", rel + "zero.json"]
    assert "unrecognised content" in failed[rel + "notes.txt"] and "empty file (0 bytes)" in failed[rel + "zero.json"]


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
    assert main(["ingest", str(FIXTURES), "--out", str(tmp_path / "a"), "--no-progress", "--jobs", "1", "--lenient"]) == 0
    assert main(["ingest", str(FIXTURES), "--out", str(tmp_path / "b"), "--no-progress", "--jobs", "2", "--lenient"]) == 0
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
        _assert_identical(ingest(FIXTURES, progress=False, lenient=True), ingest(FIXTURES, progress=False, jobs=2, lenient=True))
    finally:
        stop.set()
        t.join()
    assert asked == ["forkserver"]
    from analysis.ingest import executors
    monkeypatch.setattr(threading, "active_count", lambda: 1)    # alone (a full test run may have others)
    assert executors.start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert executors.start_method() == "forkserver"


def test_a_campaign_key_that_is_a_path_fails_its_run_json_and_writes_nothing_outside(tmp_path):
    """run.json's keys name folders of the partitioned tables: '../../..' must fail with the file named,
    and its rows never reach the tables."""
    import pytest
    from analysis.ingest.base import IngestError
    from analysis.ingest.context import check_keys
    root = _tree(tmp_path / "data")
    rj = root / "ceph-qos" / "c1" / "baseline" / "wpq" / "rep-01" / "run.json"
    rj.write_text('{"campaign": "../../..", "scenario": "baseline", "repeat": 1}')
    res = ingest(root, progress=False)
    bad = dict(res.failed)
    assert "ceph-qos/c1/baseline/wpq/rep-01/run.json" in bad
    assert "campaign: expected a name usable as one folder name" in bad["ceph-qos/c1/baseline/wpq/rep-01/run.json"]
    assert "'../../..'" in bad["ceph-qos/c1/baseline/wpq/rep-01/run.json"]
    assert "../../.." not in set(res.summary["campaign"].dropna().astype(str))
    for v in ("a/b", "a\\b", "..", ".", "x\0y"):
        with pytest.raises(IngestError, match="expected a name usable as one folder name"):
            check_keys({"scenario": v}, rj)
    assert check_keys({"campaign": "qos-v2", "profile": "", "repeat": 3}, rj)["campaign"] == "qos-v2"


def test_special_files_and_symlinks_out_of_the_tree_fail_without_being_read(tmp_path):
    """A FIFO or a symlink to /dev/zero would hang the ingest (and the manifest) forever: each is a failed
    file that names what it is; a symlink to a file inside the tree is read."""
    import os
    import pytest
    from analysis.ingest.base import IngestError
    root = _tree(tmp_path / "data")
    os.mkfifo(root / "pipe")
    (root / "zero").symlink_to("/dev/zero")
    (tmp_path / "elsewhere.json").write_text("{}")
    (root / "outside.json").symlink_to(tmp_path / "elsewhere.json")
    inside = root / "results" / "00000002" / "id-1a2b3c4d" / "randrw-4k-perio.json"
    (root / "again.json").symlink_to(inside)
    res = ingest(root, progress=False)
    bad = dict(res.failed)
    assert set(bad) == {"pipe", "zero", "outside.json"}
    assert "a FIFO, not a regular file" in bad["pipe"]
    assert "outside the tree" in bad["zero"] and "/dev/zero" in bad["zero"]
    f = res.files.set_index("path")
    assert f.loc["again.json", "status"] == "ok" and f.loc["again.json", "kind"] == "fio-json"
    assert (f.loc[["pipe", "zero", "outside.json"], "status"] == "failed").all()
    with pytest.raises(IngestError, match="outside the tree|not a regular file"):
        write_manifest(root)


def test_no_manifest_is_recorded_per_file_and_warned(tmp_path):
    root = _tree(tmp_path / "data")
    res = ingest(root, progress=False)
    assert set(res.files["manifest"]) == {"absent"}
    r = subprocess.run([sys.executable, "-m", "analysis", "ingest", str(root), "--out", str(tmp_path / "p"),
                        "--jobs", "1", "--no-progress"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "warning: no MANIFEST.sha256 in the tree" in r.stderr
    write_manifest(root)
    res = ingest(root, progress=False)
    assert "absent" not in set(res.files["manifest"].dropna())


def _ingest_cli(src, out):
    return subprocess.run([sys.executable, "-m", "analysis", "ingest", str(src), "--out", str(out), "--jobs", "1",
                           "--no-progress"], capture_output=True, text=True, cwd=ROOT)


def test_an_unwritable_out_fails_before_the_ingest_with_its_own_exit_code(tmp_path):
    root = _tree(tmp_path / "data")
    (tmp_path / "taken").write_text("a file where the tables folder should be\n")
    r = _ingest_cli(root, tmp_path / "taken")
    assert r.returncode == 3
    assert r.stderr.startswith(f"error: cannot write tables to {tmp_path / 'taken'}:")
    assert "Traceback" not in r.stderr and r.stdout == ""  # nothing was read


def test_temp_files_of_a_killed_ingest_are_removed_by_the_next(tmp_path):
    root = _tree(tmp_path / "data")
    out = tmp_path / "p"
    out.mkdir()
    dead = out / ".series.parquet.tmp-4194305"  # above Linux's largest pid_max: no such process
    mine = out / f".summary.parquet.tmp-{__import__('os').getpid()}"  # a live writer's: kept
    dead.write_bytes(b"half")
    mine.write_bytes(b"writing")
    staged = out / ".ingest-4194305"  # a killed ingest's staging folder, parts half-written
    (staged / "series").mkdir(parents=True)
    (staged / "series" / "part-000000.parquet").write_bytes(b"half")
    assert _ingest_cli(root, out).returncode == 0
    assert not dead.exists() and mine.exists() and not staged.exists()


def test_a_full_out_keeps_the_previous_tables(tmp_path):
    """ENOSPC while writing (a 160 KiB tmpfs: the small set is 74 KB, the big one 200 KB): exit 3 with one line, the earlier table set byte for byte,
    no temp file left.  Needs root to mount the tmpfs."""
    import hashlib
    import os
    import pytest
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    small = _tree(tmp_path / "small")
    big = tmp_path / "big"
    shutil.copytree(FIXTURES / "fio", big / "fio")
    shutil.copytree(FIXTURES / "blktrace", big / "blktrace")
    out = tmp_path / "tmpfs"
    out.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(out)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        assert _ingest_cli(small, out).returncode == 0
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.glob("*.parquet")}
        r = _ingest_cli(big, out)
        assert r.returncode == 3, (r.returncode, r.stderr[-500:])
        assert "No space left on device" in r.stderr and "previous tables are unchanged" in r.stderr
        assert "Traceback" not in r.stderr
        after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.glob("*.parquet")}
        assert after == before
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    finally:
        subprocess.run(["umount", str(out)])


def test_read_with_the_detected_kind_is_read_that_sniffs():
    """detect.read(kind=...) (the walk passes what detect said: no second sniff) reads every fixture of every
    reader as read() does on its own: same kind, same rows."""
    import importlib
    dt = importlib.import_module("analysis.ingest.detect")  # the module (the package exports its function)
    from analysis.ingest.base import IngestError, as_frame
    from conftest import FIXTURES
    seen = set()
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file() or p.stat().st_size > 4 << 20:
            continue
        try:
            kind = dt.detect(p)
            if kind is None:
                continue
            want = dt.read(p)
        except IngestError:
            continue
        got = dt.read(p, kind=kind)
        assert got.kind == want.kind == kind, p
        pd.testing.assert_frame_equal(as_frame(got.tidy_summary), as_frame(want.tidy_summary), check_exact=True)
        seen.add(kind)
    assert {"fio-json", "fio-log", "fio-hist-log", "blktrace", "btt", "ceph-pg-timeline", "rados-bench"} <= seen, seen

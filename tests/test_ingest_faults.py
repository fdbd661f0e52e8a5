"""Faults around the parallel ingest (issue 26): a worker that dies ends the ingest at once with the files it
left unread, never a hang; killing the ingest ends its workers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from analysis.ingest import discovery, executors, walk
from conftest import FIXTURES, ROOT


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "raw"
    shutil.copytree(FIXTURES, root / "fx")
    (root / "zz").mkdir()
    (root / "zz" / "zz-kill-me").write_text("the worker that reads this file is killed\n")
    return root


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its parent)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_worker_killed_by_a_signal_ends_the_ingest_at_once_naming_the_files_not_read(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    real = walk.ingest_file

    def deadly(p, *a, **kw):
        if p.name == "zz-kill-me":
            os.kill(os.getpid(), signal.SIGKILL)   # what the OOM killer does
        return real(p, *a, **kw)
    monkeypatch.setattr(walk, "ingest_file", deadly)
    monkeypatch.setattr(executors, "start_method", lambda: "fork")   # the workers inherit the patched reader
    t = time.monotonic()
    with pytest.raises(executors.WorkerDied) as e:
        walk.ingest(root, progress=False, jobs=2)
    assert time.monotonic() - t < 60
    msg = str(e.value)
    n = len(list(discovery.iter_files(root)))
    assert "an ingest worker process died" in msg and f"of {n} files not read" in msg
    assert "no table written" in msg
    left = int(msg.split("); ")[1].split(" of ")[0])
    assert 1 <= left <= n


def test_the_cli_exits_4_on_a_dead_worker_and_keeps_the_previous_tables(tmp_path):
    root = _tree(tmp_path)
    out = tmp_path / "p"
    assert subprocess.run([sys.executable, "-m", "analysis", "ingest", str(FIXTURES), "--out", str(out), "--jobs", "1",
                           "--no-progress", "--lenient"], cwd=ROOT, capture_output=True).returncode == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")}
    code = textwrap.dedent(f"""
        import os, signal, sys
        from analysis.ingest import walk
        real = walk.ingest_file
        def deadly(p, *a, **kw):
            if p.name == "zz-kill-me":
                os.kill(os.getpid(), signal.SIGKILL)
            return real(p, *a, **kw)
        walk.ingest_file = deadly
        from analysis.ingest import executors
        executors.start_method = lambda: "fork"
        from analysis.__main__ import main
        sys.exit(main(["ingest", {str(root)!r}, "--out", {str(out)!r}, "--jobs", "2", "--no-progress"]))
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 4, r.stderr[-600:]
    assert r.stderr.startswith("error: ") and "worker process died" in r.stderr and "Traceback" not in r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.parquet")} == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")
def test_killing_the_ingest_ends_its_workers(tmp_path):
    """fork workers (which inherit the slowed reader; forkserver ones would import a fresh one) are SIGKILLed
    by the kernel when the ingest dies (prctl PR_SET_PDEATHSIG in the worker initializer)."""
    root = _tree(tmp_path)
    method = "fork"
    code = textwrap.dedent(f"""
        import sys, time
        from analysis.ingest import walk
        real = walk.ingest_file
        def slow(p, *a, **kw):
            time.sleep(30)
            return real(p, *a, **kw)
        walk.ingest_file = slow
        from analysis.ingest import executors
        executors.start_method = lambda: {method!r}
        print("ready", flush=True)
        walk.ingest({str(root)!r}, progress=False, jobs=2)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while time.monotonic() < deadline:   # the workers (or the forkserver and its workers) are up
            kids = _children(p.pid)
            workers = kids + [g for k in kids for g in _children(k)]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, workers
        time.sleep(1.0)  # into the slow reads
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        alive = [w for w in workers if _alive(w)]
        assert alive == [], f"workers still running after the ingest was killed: {alive}"
    finally:
        if p.poll() is None:
            p.kill()


def test_one_file_is_ingested_with_its_folders_run_json_and_manifest_entry(tmp_path):
    from analysis.ingest.manifest import write_manifest
    from analysis.ingest.walk import ingest
    run = tmp_path / "rep-01"
    run.mkdir()
    src = FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json"
    shutil.copy(src, run / "a.json")
    shutil.copy(src, run / "b.json")
    (run / "run.json").write_text('{"campaign": "c1", "scheduler": "wpq", "repeat": 1}')
    write_manifest(tmp_path)
    whole = ingest(tmp_path, progress=False)
    one = ingest(run / "a.json", progress=False)
    assert one.failed == [] and list(one.files["path"]) == ["a.json"]
    assert one.files["manifest"].tolist() == ["ok"]   # checked against the manifest above it (rep-01/a.json)
    s = one.summary
    assert set(s["campaign"].astype(str)) == {"c1"} and set(s["source"].astype(str)) == {"a.json"}
    w = whole.summary[whole.summary["source"].astype(str) == "rep-01/a.json"]
    assert sorted(s["value"].tolist()) == sorted(w["value"].tolist()) and len(s) > 10
    (run / "MANIFEST.sha256").write_text((tmp_path / "MANIFEST.sha256").read_text().replace("rep-01/", ""))
    again = ingest(run / "a.json", progress=False)
    assert again.failed == [] and again.files["manifest"].tolist() == ["ok"]   # b.json is not asked for


def _init_then_report(q) -> None:
    import signal
    executors.init_worker(None, ())  # every pool's worker initialiser (the in-memory and the batched ingest)
    q.put(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)


def test_a_worker_dies_on_sigterm_even_when_its_parent_catches_it():
    """A CI run hung here: an earlier test left a capture harness's SIGTERM handler in pytest, the forked
    workers inherited it, and a broken pool's SIGTERM could not end the worker still writing its result."""
    import multiprocessing as mp
    import signal
    old = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_init_then_report, args=(q,))
        p.start()
        assert q.get(timeout=30) is True
        p.join(30)
    finally:
        signal.signal(signal.SIGTERM, old)

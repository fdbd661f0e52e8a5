"""Attacks on the state between the raw data, the processed tables and the report ("Nothing silent"): each
gave a wrong result without a word before; each now ends with the exit code and the one line asserted here.

* outputs follow mtimes, not content: a raw file replaced keeping its mtime (``cp -p``) was not re-ingested;
* processed tables trusted blindly: a flipped bit in ``summary.parquet`` changed values silently;
* good tables lost or input blamed: an empty DATA replaced the tables; one unreadable file ended the ingest
  as "cannot write tables"; a folder that cannot be listed was skipped without a word;
* half-written and concurrent: a failed or interrupted notebook left its temp file; two ``make report``
  raced; SIGTERM ended a command without a word.

Every tree is a few real files copied into ``tmp_path`` (two runs of one shipped campaign of ``data/raw``);
commands run as subprocesses with a timeout.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis import store
from conftest import ROOT

RAW = ROOT / "data" / "raw"
RUNS = "fio-iosched-smoke/randread-4k-qd8/bfq"
FIO_JSON = f"{RUNS}/rep-01/fio.json"
#: the read IOPS fio printed in that file ("iops" : 22590.352412, line 34), and the same digits with one changed
IOPS, IOPS_EDITED = 22590.352412, 22591.352412
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
NOBODY = 65534


def _run(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "analysis", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, **kw)


def _make(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, **kw)


def _raw(dest: Path, manifest: bool = True) -> Path:
    """Two runs of the shipped ``fio-iosched-smoke`` campaign (16 files) with their MANIFEST.sha256 lines."""
    for rep in ("rep-01", "rep-02"):
        shutil.copytree(RAW / RUNS / rep, dest / RUNS / rep)
    if manifest:
        lines = [ln for ln in (RAW / "MANIFEST.sha256").read_text().splitlines() if f"  {RUNS}/" in ln]
        assert len(lines) == 16
        (dest / "MANIFEST.sha256").write_text("\n".join(lines) + "\n")
    return dest


def _iops(proc: Path, source: str = FIO_JSON) -> float:
    s = pd.read_parquet(proc / "summary.parquet")
    rows = s[(s["source"].astype(str) == source) & (s["metric"].astype(str) == "iops")
             & (s["ddir"].astype(str) == "read")]
    assert len(rows) == 1, rows
    return float(rows["value"].iloc[0])


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> tuple[Path, Path]:
    """(raw, proc): the two runs ingested by the command line, as `make data` does."""
    base = tmp_path_factory.mktemp("ingested")
    raw, proc = _raw(base / "raw"), base / "proc"
    r = _run("ingest", raw, "--out", proc, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "17 files: 3 context, 14 ok" in r.stdout  # 16 files + the manifest; it and run.json ×2 are context
    return raw, proc


def _copy(ingested, tmp_path) -> tuple[Path, Path]:
    raw, proc = tmp_path / "raw", tmp_path / "proc"
    shutil.copytree(ingested[0], raw, symlinks=True)
    shutil.copytree(ingested[1], proc)
    # the copy moved every file's inode and ctime: record it as the ingest of this copy would have
    rec = json.loads((proc / "tables.json").read_text())
    files = store.unpack_inputs(rec["inputs"]["packed"])
    for e in files:
        e[1] = store.stat_signature(raw / e[0])
    rec["inputs"].update(data=str(raw.resolve()), began_ns=time.time_ns(), packed=store._pack(files))
    (proc / "tables.json").write_text(json.dumps(rec))
    return raw, proc


def _replace_keeping_mtime(path: Path, text: str) -> None:
    """What ``cp -p edited path`` does: the new bytes under the old mtime (cp itself, as a user runs it, from a
    copy edited outside the tree and given the old file's mtime)."""
    edited = Path(tempfile.mkdtemp(prefix="cephqos-edit-")) / path.name
    edited.write_text(text)
    subprocess.run(["touch", "-r", str(path), str(edited)], check=True, timeout=10)
    subprocess.run(["cp", "-p", str(edited), str(path)], check=True, timeout=10)
    shutil.rmtree(edited.parent)


# --- outputs follow content, not mtimes ----------------------------------------------------------------

def test_cp_p_with_the_old_mtime_and_the_same_size_is_stale_and_make_data_reingests(ingested, tmp_path):
    """Outputs follow mtimes, not content: a fio JSON replaced by ``cp -p`` (old mtime, same size, the
    manifest refreshed the same way) was not re-ingested — `make data` exited 0 with the old IOPS."""
    raw, proc = _copy(ingested, tmp_path)
    r = _run("stale", raw, "--processed", proc)
    assert (r.returncode, r.stdout) == (0, "fresh: 17 files as the ingest read them, 17 re-hashed\n")  # racy: new
    assert _iops(proc) == IOPS
    old_mtime = (raw / FIO_JSON).stat().st_mtime_ns
    text = (raw / FIO_JSON).read_text()
    assert text.count('"iops" : 22590.352412,') == 1
    _replace_keeping_mtime(raw / FIO_JSON, text.replace('"iops" : 22590.352412,', '"iops" : 22591.352412,'))
    new_sha = hashlib.sha256((raw / FIO_JSON).read_bytes()).hexdigest()
    manifest = (raw / "MANIFEST.sha256").read_text().splitlines()
    manifest = [f"{new_sha}  {FIO_JSON}" if ln.endswith(f"  {FIO_JSON}") else ln for ln in manifest]
    _replace_keeping_mtime(raw / "MANIFEST.sha256", "\n".join(manifest) + "\n")
    assert (raw / FIO_JSON).stat().st_mtime_ns == old_mtime and (raw / FIO_JSON).stat().st_size == len(text)
    assert not [p for p in [raw, *raw.rglob("*")] if p.stat().st_mtime_ns > (proc / "tables.json").stat().st_mtime_ns]
    # ^ what the Makefile's `find DATA -newer tables.json` saw: nothing newer, so it did not re-ingest
    r = _run("stale", raw, "--processed", proc)
    assert r.returncode == 1
    assert re.fullmatch(r"stale: MANIFEST\.sha256: content changed since the ingest read it \(sha256 [0-9a-f]{12}…, "
                        r"was [0-9a-f]{12}…\)\n", r.stdout), r.stdout  # the first changed file in walk order
    m = _make("data", f"DATA={raw}", f"PROC={proc}")
    assert m.returncode == 0, m.stdout + m.stderr
    assert f"ingest {raw} → {proc} (MANIFEST.sha256: content changed since the ingest read it (sha256 " in m.stdout
    assert "17 files: 3 context, 14 ok" in m.stdout
    assert _iops(proc) == IOPS_EDITED
    m = _make("data", f"DATA={raw}", f"PROC={proc}")  # nothing changed since: not re-ingested
    assert m.returncode == 0 and "tables current" in m.stdout and f"ingest {raw}" not in m.stdout, m.stdout


def test_a_file_replaced_under_its_old_mtime_is_named_by_stale(ingested, tmp_path):
    """Outputs follow mtimes, not content: the same size and mtime, no manifest refresh — ``stale`` names the
    file and both hashes; the ingest it triggers then fails that file against the manifest (exit 1)."""
    raw, proc = _copy(ingested, tmp_path)
    text = (raw / FIO_JSON).read_text()
    _replace_keeping_mtime(raw / FIO_JSON, text.replace('"iops" : 22590.352412,', '"iops" : 22591.352412,'))
    r = _run("stale", raw, "--processed", proc)
    assert r.returncode == 1
    assert r.stdout.startswith(f"stale: {FIO_JSON}: content changed since the ingest read it (sha256 ")
    m = _make("data", f"DATA={raw}", f"PROC={proc}")
    assert m.returncode == 0, m.stderr  # exit 1 of the ingest (a file failed) is the report's to end with
    assert f"{FIO_JSON}: sha256 differs from MANIFEST.sha256" in m.stderr


def test_a_touched_file_with_the_same_content_is_fresh_and_a_new_file_is_not(ingested, tmp_path):
    """Outputs follow content: a newer mtime with the same bytes re-ingests nothing (it is re-hashed); a file
    added or removed is stale whatever its mtime."""
    raw, proc = _copy(ingested, tmp_path)
    future = time.time_ns() + 3600 * 10**9
    os.utime(raw / FIO_JSON, ns=(future, future))
    r = _run("stale", raw, "--processed", proc)
    assert (r.returncode, r.stdout) == (0, "fresh: 17 files as the ingest read them, 17 re-hashed\n")
    extra = raw / RUNS / "rep-01" / "notes.txt"
    extra.write_text("x\n")
    os.utime(extra, ns=(0, 0))  # an mtime of 1970: older than everything
    r = _run("stale", raw, "--processed", proc)
    assert (r.returncode, r.stdout) == (1, f"stale: 1 file(s) below {raw} added since the ingest ({RUNS}/rep-01/notes.txt)\n")
    extra.unlink()
    (raw / RUNS / "rep-02" / "rr_bw.1.log.gz").unlink()
    r = _run("stale", raw, "--processed", proc)
    assert (r.returncode, r.stdout) == (1, f"stale: 1 file(s) below {raw} removed since the ingest "
                                           f"({RUNS}/rep-02/rr_bw.1.log.gz)\n")


def test_stale_checks_the_ingested_folder_and_the_tables_themselves(ingested, tmp_path):
    """Outputs follow content: tables of another folder, or a table whose bytes changed, are stale."""
    raw, proc = _copy(ingested, tmp_path)
    r = _run("stale", ingested[0], "--processed", proc)
    assert (r.returncode, r.stdout) == (1, f"stale: {proc} holds the tables of {raw.resolve()}, not of "
                                           f"{ingested[0].resolve()}\n")
    with open(proc / "files.parquet", "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 1]))
    r = _run("stale", raw, "--processed", proc)
    assert r.returncode == 1
    assert r.stdout.startswith(f"stale: {proc}/files.parquet: content changed since the ingest wrote it (sha256 ")


# --- processed tables verified by content ----------------------------------------------------------------

def test_a_flipped_bit_in_summary_is_refused_by_every_reader(ingested, tmp_path):
    """Processed tables trusted blindly: one bit flipped in summary.parquet at any of 64 offsets across the
    file is refused naming the table — at several of them pandas reads the file without an error and gets
    other values (what the readers returned before)."""
    from analysis.ingest import anysource
    from analysis.ingest.base import IngestError
    from analysis.stats.runs import load_summary
    src = ingested[1]
    good = pd.read_parquet(src / "summary.parquet")
    size = (src / "summary.parquet").stat().st_size
    silent = 0
    for i in range(64):
        off = 8 + i * (size - 16) // 64
        proc = tmp_path / f"p{i}"
        shutil.copytree(src, proc)
        st = (proc / "summary.parquet").stat()
        with open(proc / "summary.parquet", "r+b") as f:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0x10]))
        os.utime(proc / "summary.parquet", ns=(st.st_atime_ns, st.st_mtime_ns))  # the old mtime back
        try:
            bad = pd.read_parquet(proc / "summary.parquet")
            silent += not bad.equals(good)
        except Exception:  # noqa: BLE001 - a corrupt page pandas does notice
            pass
        with pytest.raises(store.TableContentError, match=rf"^{re.escape(str(proc))}/summary\.parquet: content "
                           r"changed since the ingest wrote it \(sha256 [0-9a-f]{12}…, tables\.json says [0-9a-f]{12}…\): "
                           r"re-run make data"):
            store.read_table(proc, "summary")
        if i % 16 == 0:  # the notebooks' loader, anysource (compare, history), the whole set
            with pytest.raises(store.TableSetError, match="summary.parquet: content changed"):
                load_summary("raw", proc)  # re-raised naming DATA
            with pytest.raises(IngestError, match="summary.parquet: content changed"):
                anysource.load(proc)
            with pytest.raises(store.TableContentError, match="summary.parquet: content changed"):
                store.read_table(proc, "summary", check=False)  # a caller that verified the set itself
        shutil.rmtree(proc)
    assert silent >= 3, silent


def test_failures_and_report_refuse_a_damaged_files_table(ingested, tmp_path):
    """Processed tables trusted blindly, by the two commands that read files.parquet themselves (pyarrow,
    not read_table): ``failures`` and ``report``.  One bit flipped in it: both exit 2 naming the table and
    write nothing; the intact set gives ``failures`` 0 (no file failed)."""
    proc = tmp_path / "proc"
    shutil.copytree(ingested[1], proc)
    assert _run("failures", "--processed", proc).returncode == 0
    with open(proc / "files.parquet", "r+b") as f:
        f.seek(200)
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 0x10]))
    r = _run("failures", "--processed", proc)
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {proc}/files.parquet: content changed since the ingest wrote it (sha256 ")
    reports = tmp_path / "reports"
    reports.mkdir()
    r = _run("report", reports, "--figures", tmp_path / "figures", "--processed", proc)
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {proc}/files.parquet: content changed since the ingest wrote it (sha256 ")
    assert r.stderr.rstrip().endswith(f"{reports}/report.html not written")
    assert not (reports / "report.html").exists()


def test_a_table_changed_after_this_process_hashed_it_is_hashed_again(ingested, tmp_path):
    """Processed tables trusted blindly: the per-process hash cache is keyed by the file's ctime, so a table
    read once, then rewritten in place with its mtime set back, is refused on the next read."""
    proc = tmp_path / "proc"
    shutil.copytree(ingested[1], proc)
    assert len(store.read_table(proc, "summary")) == len(pd.read_parquet(ingested[1] / "summary.parquet"))
    p = proc / "summary.parquet"
    st = p.stat()
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    with open(p, "r+b") as f:  # in place: same inode and size
        f.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    with pytest.raises(store.TableContentError, match="summary.parquet: content changed since the ingest wrote it"):
        store.read_table(proc, "summary")
    r = _run("compare", proc, proc)
    assert r.returncode == 2 and "summary.parquet: content changed since the ingest wrote it" in r.stderr


def test_a_set_without_content_hashes_is_refused(ingested, tmp_path):
    """Processed tables trusted blindly: a tables.json of an ingest before tables were hashed is refused."""
    proc = tmp_path / "proc"
    shutil.copytree(ingested[1], proc)
    rec = json.loads((proc / "tables.json").read_text())
    del rec["sha256"]
    (proc / "tables.json").write_text(json.dumps(rec))
    with pytest.raises(store.TableSetError, match=r"tables\.json records no SHA-256 of its tables .*re-run make data"):
        store.verify(proc)


# --- good tables never lost, the input named ---------------------------------------------------------

@pytest.mark.parametrize("executor", [[], ["--dask", "", "--workers", "1"]], ids=["processes", "dask"])
def test_nothing_readable_leaves_the_previous_tables_untouched(ingested, tmp_path, executor):
    """Good tables lost: an ingest of an empty folder (an unmounted DATA) or of one with nothing readable
    replaced the good tables with an empty set (``--dask`` too, with exit 0); now exit 2 and the previous set
    is byte for byte as it was."""
    proc = tmp_path / "proc"
    shutil.copytree(ingested[1], proc)
    before = {p.name: p.read_bytes() for p in proc.iterdir()}
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("nothing a reader claims\n")
    for data, status in ((tmp_path / "empty", "0 files: \n"), (tmp_path / "notes", "1 files: 1 failed\n")):
        r = _run("ingest", data, "--out", proc, "--no-progress", *executor)
        assert r.returncode == 2, r.stderr
        assert r.stdout == f"{status}0 summary rows, 0 series rows: nothing written to {proc}\n"
        assert r.stderr.splitlines()[-1] == (
            f"error: {data}: nothing readable: no fio, rados bench, blktrace/blkparse/btt, sysutil or "
            f"cephqos-pg-timeline output below it; the previous tables in {proc} are unchanged")
        assert {p.name: p.read_bytes() for p in proc.iterdir()} == before
    # without a previous set the empty one is written, as before: its files table says what was found
    r = _run("ingest", tmp_path / "notes", "--out", tmp_path / "new", "--no-progress", *executor)
    assert r.returncode == 2 and r.stderr.endswith("sysutil or cephqos-pg-timeline output below it\n")
    tables = store.verify(tmp_path / "new")["tables"]
    assert tables["files"]["rows"] == 1 and tables.get("summary", {"rows": 0})["rows"] == 0  # dask: no part


@pytest.mark.parametrize("what", ["dangling symlink", "symlink loop", "FIFO"])
def test_one_unreadable_entry_fails_alone(tmp_path, what):
    """Input blamed: a dangling symlink or a symlink loop (which fail for root too) ended the whole ingest as
    "cannot write tables to OUT" (exit 3) — now that entry fails with why, and the rest is read (exit 1)."""
    raw = _raw(tmp_path / "raw")
    (raw / "extra").mkdir()  # not beside fio logs: their companion search lists the folder (left alone here)
    bad = raw / "extra" / "zz-bad.json"
    if what == "dangling symlink":
        bad.symlink_to("nowhere.json")
        why = "cannot stat: No such file or directory"
    elif what == "symlink loop":
        bad.symlink_to(bad.name)
        why = "cannot read: a symlink loop (expected a regular file in the tree)"
    else:
        os.mkfifo(bad)
        why = "a FIFO, not a regular file: expected a benchmark output file"
    r = _run("ingest", raw, "--out", tmp_path / "proc", "--no-progress", timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("18 files: 3 context, 1 failed, 14 ok\n")
    assert r.stderr.splitlines()[-2:] == ["1 file(s) failed:", f"  extra/zz-bad.json: {why}"]
    assert _iops(tmp_path / "proc") == IOPS


def _as_nobody() -> list[str]:
    """The command prefix that runs a command as nobody (root reads anything, so a permission can only fail
    for another user); skips where nobody cannot run this checkout's interpreter with the package and
    pandas (a checkout below a folder only root may enter, e.g. ``mktemp -d``'s mode 0700)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv: a permission cannot be made to fail")
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    probe = subprocess.run([*prefix, PY, "-c", "import analysis.ingest.walk, pandas"], cwd="/", capture_output=True,
                           text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                       "PYTHONDONTWRITEBYTECODE": "1"})
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot run this checkout ({ROOT}: a parent folder is private): "
                    f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")
    return prefix


@pytest.fixture
def open_tmp():
    """A folder every user can enter (tmp_path is root's alone): the ingest runs as nobody below it."""
    d = Path(tempfile.mkdtemp(prefix="cephqos-attack-"))
    d.chmod(0o755)
    yield d
    for p in d.rglob("*"):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(d)


@pytest.mark.parametrize("manifest", [True, False])
def test_a_file_and_a_folder_without_read_permission_are_failures(open_tmp, manifest):
    """Input blamed: a file that can be stat'ed but not opened (chmod 000; as nobody: root reads anything)
    ended the ingest as "cannot write tables to OUT: Permission denied" (exit 3); a folder that cannot be
    listed was skipped without a word when the tree had no manifest (exit 0).  Now each is one failure line."""
    raw = _raw(open_tmp / "raw", manifest=manifest)
    shutil.copytree(raw / RUNS / "rep-01", raw / RUNS / "rep-03")  # a folder the manifest does not list
    (open_tmp / "proc").mkdir()
    (open_tmp / "proc").chmod(0o777)
    for p in raw.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (raw / RUNS / "rep-01" / "fio.json").chmod(0)
    (raw / RUNS / "rep-03").chmod(0)
    r = subprocess.run([*_as_nobody(), PY, "-m", "analysis", "ingest", str(raw), "--out", str(open_tmp / "proc"),
                        "--no-progress"], cwd="/", capture_output=True, text=True, timeout=60,
                       env={**os.environ, "CEPHQOS_NATIVE": "0", "PYTHONPATH": str(ROOT),
                            "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert f"  {RUNS}/rep-01/fio.json: cannot read: Permission denied" in lines
    assert f"  {RUNS}/rep-03: a folder that cannot be listed: Permission denied: not read" in lines
    assert "cannot write tables" not in r.stderr
    files = pd.read_parquet(open_tmp / "proc" / "files.parquet")
    ok = files.loc[files["status"].isin(["ok", "context"]), "path"].astype(str).tolist()
    assert sorted(ok) == sorted([*(["MANIFEST.sha256"] if manifest else []), f"{RUNS}/rep-01/run.json",
                                 *[f"{RUNS}/rep-02/{n}" for n in ("fio.json", "run.json", *[
                                     f"rr_{k}.1.log.gz" for k in ("bw", "clat", "clat_hist", "iops", "lat", "slat")])]])
    assert _iops(open_tmp / "proc", f"{RUNS}/rep-02/fio.json") == 22393.151712  # its "iops" line


# --- half-written and concurrent -------------------------------------------------------------------------

def _slow_ingest(raw: Path, out: Path, where: str) -> subprocess.Popen:
    """``python -m analysis ingest`` (main(), one process) whose ``where`` (``read``: each file; ``commit``:
    the record, after the tables were renamed) sleeps, and says so on stdout first."""
    code = textwrap.dedent(f"""
        import sys, time
        from analysis import store
        from analysis.ingest import walk
        def slow(real):
            def f(*a, **kw):
                print("slow", flush=True)
                time.sleep(60)
                return real(*a, **kw)
            return f
        if {where!r} == "read":
            walk.ingest_file = slow(walk.ingest_file)
        else:
            store.commit = slow(store.commit)
        from analysis.__main__ import main
        sys.exit(main(["ingest", {str(raw)!r}, "--out", {str(out)!r}, "--no-progress", "--jobs", "1"]))
    """)
    return subprocess.Popen([PY, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("where", ["read", "commit"])
def test_sigterm_ends_an_ingest_with_one_line_and_exit_143(ingested, tmp_path, where):
    """Half-written: SIGTERM to `python -m analysis ingest` ended it with exit 143 and no word; now one line
    says what is left: while reading, the previous tables unchanged; between the renames and the record, no
    complete set (readers refuse it).  No staging folder is left either way."""
    proc = tmp_path / "proc"
    shutil.copytree(ingested[1], proc)
    record = (proc / "tables.json").read_bytes()
    p = _slow_ingest(ingested[0], proc, where)
    try:
        assert p.stdout.readline() == "slow\n"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143, err
    if where == "read":
        assert err.splitlines()[-1] == "ingest: terminated (SIGTERM); the previous tables are unchanged"
        assert (proc / "tables.json").read_bytes() == record
    else:
        assert err.splitlines()[-1] == (f"ingest: terminated (SIGTERM); no complete table set is left in {proc}: "
                                        "readers refuse it until an ingest succeeds")
        with pytest.raises(store.TableSetError, match="but no tables.json"):
            store.verify(proc)
    assert not list(proc.glob(".ingest-*")) and not list(proc.glob(".*.tmp-*"))


def _runner(tmp_path: Path, behaviour: str) -> Path:
    """A stand-in for ``$(PY)`` whose ``-m analysis run-notebook`` writes half its output notebook (the temp
    file make names) and then fails as a full disk does (``fail``) or waits to be interrupted (``wait``);
    anything else goes to the real interpreter."""
    py = tmp_path / "py"
    py.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        if [ "$2" = analysis ] && [ "$3" = run-notebook ]; then
          for a in "$@"; do case "$a" in *.tmp.ipynb) out="$a";; esac; done
          printf '{{"cells": [' > "$out"; echo started > {tmp_path}/started
          if [ {behaviour} = fail ]; then echo "OSError: [Errno 28] No space left on device" >&2; exit 1; fi
          sleep 60; exit 0
        fi
        exec {PY} "$@"
    """))
    py.chmod(0o755)
    return py


@pytest.mark.parametrize("how", ["fail", "SIGINT", "SIGTERM"])
def test_no_half_written_notebook_is_left(ingested, tmp_path, how):
    """Half-written: a notebook run that failed (a full disk) or was interrupted (Ctrl-C, SIGTERM) left
    ``REPORTS/NN.ipynb.tmp.ipynb`` behind; the rule's trap now removes it however it ends."""
    proc, reports = tmp_path / "proc", tmp_path / "reports"
    shutil.copytree(ingested[1], proc)
    (proc / "notebooks.mk").write_text("")
    later = time.time() + 3600
    os.utime(proc / "notebooks.mk", (later, later))  # current: no deps step (its own test is elsewhere)
    py = _runner(tmp_path, "fail" if how == "fail" else "wait")
    goal = reports / "00-ingest.ipynb"
    cmd = ["make", "--no-print-directory", f"PY={py}", f"DATA={ingested[0]}", f"PROC={proc}", f"REPORTS={reports}",
           "TABLES_CHECKED=yes", str(goal)]
    m = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)  # its own process group: the terminal's Ctrl-C goes to all
    try:
        if how != "fail":
            deadline = time.monotonic() + 60
            while not (tmp_path / "started").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (goal.parent / f"{goal.name}.tmp.ipynb").exists()  # the half-written temp, while it runs
            os.killpg(m.pid, signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
        out, err = m.communicate(timeout=60)
    finally:
        if m.poll() is None:
            os.killpg(m.pid, signal.SIGKILL)
    assert m.returncode != 0
    assert (tmp_path / "started").exists(), err
    if how == "fail":
        assert "No space left on device" in err and m.returncode == 2
    assert sorted(p.name for p in reports.iterdir()) == [".logs", "dataset.txt"]  # no temp, no notebook


def test_a_second_make_report_says_another_is_running_and_exits_2(tmp_path):
    """Concurrent: two `make report` on one REPORTS raced on the same temp notebooks; the second now exits 2
    at once, saying so, and does nothing (no ingest); the lock goes with the first."""
    reports, proc = tmp_path / "reports", tmp_path / "proc"
    reports.mkdir()
    (tmp_path / "empty").mkdir()
    args = ["report", f"DATA={tmp_path / 'empty'}", f"PROC={proc}", f"REPORTS={reports}", "FORK_KERNELS=no"]
    with open(reports / ".lock", "a") as held:  # what a running make report holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        t0 = time.monotonic()
        m = _make(*args, timeout=60)
        assert m.returncode == 2 and time.monotonic() - t0 < 20
        assert f"another make report is running on {reports} ({reports}/.lock is locked): nothing done, exit 2" \
            in m.stderr
        assert not proc.exists()
    m = _make(*args, timeout=120)  # released: this one runs (and stops at the empty folder's ingest)
    assert m.returncode == 2 and "another make report" not in m.stderr
    assert "nothing readable" in m.stderr


def test_exit_143_is_documented(tmp_path):
    """Half-written: the exit code of a terminated command is in --help's table and docs/your-data.md's."""
    r = _run("ingest", "--help")
    assert "143 terminated (SIGTERM)" in r.stdout
    doc = (ROOT / "docs" / "your-data.md").read_text()
    assert "| 143 | terminated (SIGTERM)" in doc

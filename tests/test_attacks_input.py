"""Attacks on the ingest's input: hostile names, unbounded depth and size, options and manifests, encodings.

Each attack is made in tmp_path from a real file of the repository (a fio 3.33 fixture) changed by hand; each
asserts the exit code and the one-line message, or the right tables.  Every subprocess has a timeout and
every test an alarm: none can hang.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import FIXTURES, ROOT

JSON = FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json"
DOC = json.loads(JSON.read_text())
IOPS = DOC["jobs"][0]["read"]["iops"]  # 1999.750062: what fio printed, read here without the package


@pytest.fixture(autouse=True)
def _bounded():
    """No test of this file runs longer than 60 s, in-process calls included."""
    def late(signum, frame):
        raise TimeoutError("test ran over 60 s")
    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def cli(*args, cwd=ROOT, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, errors="surrogateescape")


def run_main(capsys, *args) -> tuple[int, str, str]:
    """``python -m analysis ARGS`` in this process (the same code path, no interpreter start)."""
    from analysis.__main__ import main
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def iops_of(summary: pd.DataFrame, source: str) -> float:
    s = summary[(summary["source"].astype(str) == source) & (summary["metric"].astype(str) == "iops")]
    return float(s["value"].iloc[0])


# --- names of any bytes ---------------------------------------------------------------------------------

HOSTILE = (b"run-\xff.json", b"new\nline.json", b"esc\x1b[31m.json", b"back\\slash.json")
#: how the tables write each (docs/your-data.md: a backslash doubled, a byte that is not UTF-8 as \xNN,
#: control characters escaped)
AS_TABLED = {b"run-\xff.json": "run-\\xff.json", b"new\nline.json": "new\\nline.json",
             b"esc\x1b[31m.json": "esc\\x1b[31m.json", b"back\\slash.json": "back\\\\slash.json"}


def _hostile_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    for name in HOSTILE:
        shutil.copy(JSON, os.path.join(os.fsencode(root), name))
    return root


def test_names_of_any_bytes_are_listed_read_and_round_trip(tmp_path):
    """Attack class: hostile names.  A name that is not UTF-8, or holds a newline, an escape sequence or a
    backslash: ``manifest`` wrote no manifest and ``ingest`` exited 70 (UnicodeEncodeError); now both
    succeed, ``sha256sum -c`` accepts the manifest, and every file is read with its own unique path."""
    from analysis.ingest.discovery import fs_path
    root = _hostile_tree(tmp_path / "data")
    r = cli("manifest", root)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{root / 'MANIFEST.sha256'}: 4 files\n", "")
    check = subprocess.run(["sha256sum", "-c", "--strict", "MANIFEST.sha256"], cwd=root, capture_output=True,
                           timeout=60)
    assert check.returncode == 0 and check.stdout.count(b": OK\n") == 4, check
    r = cli("ingest", root, "--out", tmp_path / "p", "--jobs", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("5 files: 1 context, 4 ok\n")
    files = pd.read_parquet(tmp_path / "p" / "files.parquet")
    assert sorted(files["path"]) == sorted([*AS_TABLED.values(), "MANIFEST.sha256"])
    assert set(files.loc[files["path"] != "MANIFEST.sha256", "manifest"]) == {"ok"}
    summary = pd.read_parquet(tmp_path / "p" / "summary.parquet")
    for raw, tabled in AS_TABLED.items():
        assert os.fsencode(fs_path(tabled)) == raw  # reversible: the table's path names the file
        assert iops_of(summary, tabled) == IOPS
        assert (files.loc[files["path"] == tabled, "sha256"].item()
                == hashlib.sha256(JSON.read_bytes()).hexdigest())


def test_a_hostile_name_in_a_message_is_shown_escaped(tmp_path):
    """Attack class: hostile names.  A file that fails and a folder whose run.json fails, both named with a
    byte that is not UTF-8, a newline and a terminal escape sequence: every message names them escaped, on
    one line, and nothing raw reaches the terminal."""
    root = tmp_path / "data"
    root.mkdir()
    cut = JSON.read_bytes()[:300]
    d = os.path.join(os.fsencode(root), b"d\xfe\x1b[2J")
    os.mkdir(d)
    with open(os.path.join(d, b"run.json"), "w") as f:
        f.write('{"campaign": "../x"}')
    shutil.copy(JSON, os.path.join(d, b"a.json"))
    with open(os.path.join(os.fsencode(root), b"cut-\xff\n\x1b[31m.json"), "wb") as f:
        f.write(cut)
    r = cli("ingest", root, "--out", tmp_path / "p", "--jobs", "1", "--no-progress")
    assert r.returncode == 1
    assert "\x1b" not in r.stderr + r.stdout
    err = r.stderr.splitlines()
    line = cut.count(b"\n") + 1  # the decoder stops at the end of what is left
    assert f"  {root}/cut-\\xff\\n\\x1b[31m.json:{line}: malformed or truncated fio JSON: " \
           "Expecting property name enclosed in double quotes" in err
    assert f"  {root}/d\\xfe\\x1b[2J/run.json:1: campaign: expected a name usable as one folder name (no '/', " \
           "'\\', NUL, not '.' or '..'), got '../x'" in err
    files = pd.read_parquet(tmp_path / "p" / "files.parquet").set_index("path")
    assert files.loc["d\\xfe\\x1b[2J/a.json", "status"] == "ok"
    assert files.loc["cut-\\xff\\n\\x1b[31m.json", "status"] == "failed"


EVIL = "/dev/evil\x1b[2J\x1b]0;title\x07\nline2"  # a clear-screen, a window title, a line break


def _evil_side(top: Path, names: list[str], scale: float) -> None:
    """Three repeats of the fixture's run per target name in ``names`` (fio's ``filename``, the cell's
    ``target``), IOPS × ``scale`` × 1.00/1.01/1.02 (total_ios rounded, iops = total_ios / runtime as fio
    has it, so the identity check holds)."""
    for k, name in enumerate(names):
        for r in range(3):
            doc = json.loads(JSON.read_text())
            doc["jobs"][0]["job options"]["filename"] = name
            rd = doc["jobs"][0]["read"]
            rd["total_ios"] = round(rd["total_ios"] * scale * (1 + r / 100))
            rd["iops"] = rd["total_ios"] * 1000 / rd["runtime"]
            d = top / f"t{k}" / f"run-{r}"
            d.mkdir(parents=True)
            (d / "x.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "json"])
def test_what_compare_and_history_print_from_the_data_is_escaped(tmp_path, capsys, fmt):
    """Attack class: hostile names, in the data this time: a fio ``filename`` (the cell's target) holding a
    clear-screen, a window-title sequence and a line break, on one side of two targets.  ``compare`` (B at
    half the IOPS: a regression, exit 1) and ``history`` print it escaped in every format: no ESC or BEL
    byte reaches the terminal, and the value stays on one line."""
    _evil_side(tmp_path / "A", [EVIL, "/dev/plain"], 1.0)
    _evil_side(tmp_path / "B", [EVIL, "/dev/plain"], 0.5)
    rc, out, err = run_main(capsys, "compare", tmp_path / "A", tmp_path / "B", "--metric", "iops", "--format", fmt)
    assert rc == 1
    assert not {"\x1b", "\x07"} & set(out + err)
    escaped = "/dev/evil\\x1b[2J\\x1b]0;title\\x07\\nline2"
    if fmt == "json":  # JSON escapes control characters itself: the value is the file's, exactly
        rows = json.loads(out)["rows"]
        assert sorted(r["target"] for r in rows) == sorted([EVIL, "/dev/plain"])
    else:
        assert sum(escaped in line for line in out.splitlines()) == 1
        assert not any(line.startswith("line2") for line in out.splitlines())
    rc, out, err = run_main(capsys, "history", tmp_path / "A" / "t0", "--metric", "iops", "--format", fmt)
    assert rc in (0, 1)
    assert not {"\x1b", "\x07"} & set(out + err)


LONG_LINE_FILES = [  # (a real file of each text reader, its kind, the format's name in the message)
    ("fixtures/fio_groups/sweep.fio", "fio-jobfile", "fio job file"),
    ("fixtures/getput/getput-8df6328_psum_ldist_ppp.txt", "getput", "getput output"),
    ("fixtures/blktrace/ftrace-loop-bfq-4k-write.btt.txt", "btt", "btt output"),
    ("corpus/fio_text/fio-howto_normal_output_run_status_group.txt", "fio-text", "fio text output"),
    ("corpus/fio_text/jtulak_fio-2.1.2_terse-v3.out", "fio-terse", "fio text output"),
    ("corpus/blkparse/blktrace-doc_blkparse_live_sda_with_summary.txt", "blkparse", "blkparse output"),
]


@pytest.mark.parametrize("rel, kind, what", LONG_LINE_FILES, ids=[k for _, k, _ in LONG_LINE_FILES])
def test_a_line_over_64_kib_in_a_text_output_fails_at_its_line(tmp_path, rel, kind, what):
    """Attack class: size, in the text readers.  A job file with a 200 MB section name took 1.7 GB to parse
    and 9 GB to ingest.  A real file of each text reader with a line of 70,000 bytes added after its last
    line: the file fails at that line (its number counted by hand), saying the bound; as it was, it is read
    as its kind."""
    if rel.startswith("corpus/"):
        from conftest import CORPUS
        if not CORPUS.is_dir():
            pytest.skip("../shared/corpus is absent")
        src = CORPUS / rel.split("/", 1)[1]
    else:
        src = FIXTURES / rel.split("/", 1)[1]
    if not src.is_file():
        pytest.skip(f"{src.name} is absent")
    data = src.read_bytes()
    assert data.endswith(b"\n")
    line = data.count(b"\n") + 1
    root = tmp_path / "data"
    root.mkdir()
    (root / src.name).write_bytes(data + b"x" * 70_000 + b"\n")
    r = cli("ingest", root, "--out", tmp_path / "p", "--jobs", "1", "--no-progress")
    assert f"  {root}/{src.name}:{line}: a line of 70,000 bytes: expected {what} lines of at most 64 KiB" \
        in r.stderr.splitlines(), r.stderr
    from analysis.ingest.detect import read
    assert read(src).kind == kind


# --- manifests ------------------------------------------------------------------------------------------

def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_manifests_that_sha256sum_accepts_are_accepted(tmp_path):
    """Attack class: manifests.  ``sha256sum -c`` accepts upper-case digests, its own escaped names
    (``\\<digest>  a\\\\b``), ``--tag`` lines, CRLF line ends and ``./`` names; the ingest refused the first
    two (``expected '<sha256>  <relative path>'``, then every file 'not listed').  Each is checked by the
    real sha256sum first, then read with every file's digest."""
    from analysis.ingest.manifest import load_manifest
    from analysis.ingest.walk import ingest
    root = _hostile_tree(tmp_path / "data")
    names = sorted(HOSTILE)
    want = {os.fsdecode(n): _sha(Path(os.fsdecode(os.path.join(os.fsencode(root), n)))) for n in names}
    plain = subprocess.run(["sha256sum", "--", *names], cwd=root, capture_output=True, timeout=60, check=True).stdout
    assert plain.count(b"\n\\") + plain.startswith(b"\\") == 2  # sha256sum escaped the newline and backslash
    tagged = subprocess.run(["sha256sum", "--tag", "--", *names], cwd=root, capture_output=True, timeout=60,
                            check=True).stdout
    lines = plain.splitlines(keepends=True)
    upper = b"".join(ln[:1] + ln[1:65].upper() + ln[65:] if ln.startswith(b"\\") else ln[:64].upper() + ln[64:]
                     for ln in lines)
    crlf = plain.replace(b"\n", b"\r\n")
    dotted = b"".join(ln if ln.startswith(b"\\") else ln[:66] + b"./" + ln[66:] for ln in lines)
    for variant in (plain, upper, tagged, crlf, dotted):
        (root / "MANIFEST.sha256").write_bytes(variant)
        ok = subprocess.run(["sha256sum", "-c", "--strict", "MANIFEST.sha256"], cwd=root, capture_output=True,
                            timeout=60)
        assert ok.returncode == 0, (variant, ok.stderr)
        assert load_manifest(root) == want, variant
        res = ingest(root, progress=False)
        assert res.failed == [], variant
        assert set(res.files.loc[res.files["path"] != "MANIFEST.sha256", "manifest"]) == {"ok"}


def test_the_manifest_written_is_what_sha256sum_writes(tmp_path):
    """Attack class: manifests.  ``python -m analysis manifest`` wrote names with a backslash or newline
    unescaped (and failed on a name that is not UTF-8): now its file is byte for byte sha256sum's output."""
    from analysis.ingest.manifest import write_manifest
    root = _hostile_tree(tmp_path / "data")
    ours = write_manifest(root).read_bytes()
    order = [ln for ln in ours.split(b"\n") if ln]
    names = [os.fsencode(p) for p in sorted(os.fsdecode(n) for n in HOSTILE)]  # the walk's order
    (root / "MANIFEST.sha256").unlink()
    theirs = subprocess.run(["sha256sum", "--", *names], cwd=root, capture_output=True, timeout=60,
                            check=True).stdout
    assert ours == theirs and len(order) == 4


def test_a_folder_named_like_the_manifest_is_refused(tmp_path):
    """Attack class: manifests.  A directory named MANIFEST.sha256 was taken for 'no manifest' (every file
    read unchecked); now ``ingest`` and ``manifest`` exit 2 saying what it is.  A line with an escape
    sha256sum does not write fails at its line."""
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(JSON, root / "a.json")
    (root / "MANIFEST.sha256").mkdir()
    r = cli("ingest", root, "--out", tmp_path / "p", "--jobs", "1", "--no-progress")
    assert (r.returncode, r.stderr) == (2, f"error: {root}/MANIFEST.sha256: a directory, not a regular file: "
                                           "expected the tree's checksum list (sha256sum format)\n")
    assert not (tmp_path / "p" / "tables.json").exists()
    r = cli("manifest", root)
    assert (r.returncode, r.stderr) == (2, f"error: {root}/MANIFEST.sha256: a directory, not a regular file: "
                                           "expected a manifest written there (remove it first)\n")
    (root / "MANIFEST.sha256").rmdir()
    (root / "MANIFEST.sha256").write_text(f"{_sha(JSON)}  a.json\n\\{_sha(JSON)}  a\\qb.json\n")
    from analysis.ingest.base import IngestError
    from analysis.ingest.manifest import load_manifest
    with pytest.raises(IngestError) as e:
        load_manifest(root)
    assert str(e.value) == f"{root}/MANIFEST.sha256:2: expected '<sha256>  <relative path>' (sha256sum format)"


# --- depth and size bounds ------------------------------------------------------------------------------

def _remove_deep(top: Path) -> None:
    """Remove a tree of any depth (shutil.rmtree recurses, and pytest's clean-up would hit RecursionError)."""
    stack = [(os.open(top, os.O_RDONLY | os.O_DIRECTORY), None, None)]
    while stack:
        fd, parent, name = stack[-1]
        sub = None
        for e in os.scandir(fd):
            if e.is_dir(follow_symlinks=False):
                sub = e.name
                break
            os.unlink(e.name, dir_fd=fd)
        if sub is not None:
            stack.append((os.open(sub, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd, sub))
            continue
        stack.pop()
        os.close(fd)
        if parent is not None:
            os.rmdir(name, dir_fd=parent)
    os.rmdir(top)


def test_a_folder_tree_2100_deep_is_one_failed_entry(tmp_path):
    """Attack class: depth.  2,100 nested folders (deeper than PATH_MAX) gave a RecursionError traceback
    (exit 70); now the walk stops at 128 levels: the folder below is one failed entry naming why, the rest
    of the tree is read, and ``manifest`` refuses the tree with the same reason."""
    from analysis.ingest.base import IngestError
    from analysis.ingest.manifest import write_manifest
    from analysis.ingest.walk import ingest
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(JSON, root / "top.json")
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(2100):
            os.mkdir("a", dir_fd=fd)
            nfd = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open("deep.json", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "wb") as f:
            f.write(JSON.read_bytes())
        os.close(fd)
        fd = None
        res = ingest(root, progress=False)
        deep = "/".join(["a"] * 129)
        assert res.failed == [(deep, f"{deep}: a folder 129 levels below the tree: not read (expected at most "
                                     "128 levels of folders)")]
        assert iops_of(res.summary, "top.json") == IOPS
        with pytest.raises(IngestError) as e:
            write_manifest(root)
        assert str(e.value) == (f"{root}/{deep}: a folder 129 levels below the tree: not read (expected at "
                                "most 128 levels of folders)")
    finally:
        if fd is not None:
            os.close(fd)
        _remove_deep(root)


def _run_json_tree(root: Path, text: str) -> Path:
    run = root / "c1" / "rep-01"
    run.mkdir(parents=True)
    shutil.copy(JSON, run / "a.json")
    (run / "run.json").write_text(text)
    return run


@pytest.mark.parametrize("text,message", [
    ('{"campaign": "c1", "repeat": 1e400}', "repeat: expected a finite number, got inf"),
    ('{"campaign": "c1", "repeat": NaN}', "repeat: expected a finite number, got nan"),
    ('{"campaign": "c1", "repeat": true}', "repeat: expected a finite number, got true"),
    ('{"campaign": "c1", "repeat": "abc"}', "repeat: expected a finite number, got 'abc'"),
    ('{"campaign": "c1", "iodepth": 1.5}', "iodepth: expected an integer (of at most 63 bits), got 1.5"),
    ('{"campaign": ["a", "b"], "repeat": 1}', "campaign: expected a string or a number, got a list"),
    ('{"campaign": "c1", "scheduler": {"name": "wpq"}}', "scheduler: expected a string or a number, got a JSON "
                                                         "object"),
    ('{"campaign": "c1", "repeat": 1, "device": "' + "x" * 70000 + '"}',
     "device: expected at most 64 KiB of text, got 70000 bytes"),
    ('{"campaign": "' + "c" * 300 + '", "repeat": 1}',
     "campaign: expected at most 255 bytes as the folder name 'campaign=<value>' (ingest --dask's tables), got "
     "309 bytes"),
    ('{"a":' * 100000 + "1" + "}" * 100000, "expected a JSON object (run.json): nested too deeply to read"),
])
def test_a_run_json_key_that_no_table_can_hold_fails_its_run_json(tmp_path, text, message):
    """Attack class: run keys.  ``repeat`` 1e400 was stored as -9223372036854775808, NaN/true/"abc" turned
    the column into text, a list-valued campaign was dropped silently, 100,000 levels of nesting were a
    RecursionError (exit 70): each now fails run.json at its line, naming the key; the fio JSON below is read
    without its keys, and ``repeat`` stays a column of integers."""
    from analysis.ingest.walk import ingest
    run = _run_json_tree(tmp_path / "data", text)
    res = ingest(tmp_path / "data", progress=False)
    assert res.failed == [("c1/rep-01/run.json", f"{run}/run.json:1: {message}")]
    assert iops_of(res.summary, "c1/rep-01/a.json") == IOPS
    assert str(res.summary["repeat"].dtype) == "Int64" and res.summary["repeat"].isna().all()


def test_a_real_run_json_passes_the_key_checks(tmp_path):
    """Attack class: run keys (the other side).  A shipped run.json, with its true/false flags, lists and
    objects of metadata, keeps every key it had."""
    from analysis.ingest.walk import ingest
    src = ROOT / "data" / "raw" / "history" / "history-2026" / "two-changes" / "p-018" / "rep-01" / "run.json"
    doc = json.loads(src.read_text())
    run = _run_json_tree(tmp_path / "data", src.read_text())
    res = ingest(tmp_path / "data", progress=False)
    assert res.failed == []
    row = res.files.set_index("path").loc["c1/rep-01/a.json"]
    assert (row["campaign"], row["repeat"], row["point"], row["device_size_mib"]) == \
        (doc["campaign"], doc["repeat"], str(doc["point"]), doc["device_size_mib"])
    assert run.is_dir()


def test_a_200mb_job_name_is_refused_with_bounded_memory(tmp_path):
    """Attack class: size.  A 200 MB job name in an 874 KB .gz fio JSON took 10 GB and 93 s; a field over
    64 KiB is now refused as it is decoded.  Here 32 MB (1.6 GB before): the ingest's peak RSS stays under
    600 MB and the file fails at the line of the name."""
    doc = json.loads(JSON.read_text())
    doc["jobs"][0]["jobname"] = "x" * (32 << 20)
    root = tmp_path / "data"
    root.mkdir()
    text = json.dumps(doc, indent=1).encode()
    (root / "big.json.gz").write_bytes(gzip.compress(text, 1))
    line = text[:text.index(b'"jobname"')].count(b"\n") + 1
    probe = ("import resource, subprocess, sys; r = subprocess.run([sys.executable, '-m', 'analysis', 'ingest', "
             f"{str(root)!r}, '--out', {str(tmp_path / 'p')!r}, '--jobs', '1', '--no-progress'], capture_output=True, "
             "text=True, timeout=120); print(r.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN)"
             ".ru_maxrss); print(r.stderr)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=150)
    rc, rss_kib, err = r.stdout.split("\n", 2)
    assert rc == "2"  # the one file failed: nothing readable
    assert f"  {root}/big.json.gz:{line}: a JSON string over 64 KiB (at key 'jobname'): expected a fio job name " \
           "or option value far shorter" in err.splitlines()
    assert int(rss_kib) < 600 << 10, f"peak RSS {int(rss_kib) >> 10} MiB"


def test_a_decompression_bomb_is_refused_at_the_whole_read_bound(tmp_path, monkeypatch):
    """Attack class: size.  A reader that reads a file whole decompressed it without bound (a few MB of gzip
    can hold GBs); now at most WHOLE_MAX_BYTES (1 GiB; the largest shipped file is 15 MB decompressed).  The
    bound is lowered to 1 MiB here so that the bomb stays small: the fixture with 2 MiB of trailing spaces."""
    from analysis.ingest import compress
    from analysis.ingest.walk import ingest
    assert compress.WHOLE_MAX_BYTES == 1 << 30
    monkeypatch.setattr(compress, "WHOLE_MAX_BYTES", 1 << 20)
    root = tmp_path / "data"
    root.mkdir()
    (root / "bomb.json.gz").write_bytes(gzip.compress(JSON.read_bytes() + b" " * (2 << 20)))
    (root / "fine.json.gz").write_bytes(gzip.compress(JSON.read_bytes()))
    res = ingest(root, progress=False)
    assert res.failed == [("bomb.json.gz", f"{root}/bomb.json.gz: gzip content of more than 1 MiB: expected at "
                                           "most that for a file read whole (a decompression bomb?)")]
    assert iops_of(res.summary, "fine.json.gz") == IOPS


# --- options --------------------------------------------------------------------------------------------

GRID = ROOT / "data" / "raw" / "fio-grid"


@pytest.mark.parametrize("args,message", [
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--threshold", "nan"),
     "--threshold nan: expected a finite percentage ≥ 0, such as 5 or 5%"),
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--threshold", "inf%"),
     "--threshold inf%: expected a finite percentage ≥ 0, such as 5 or 5%"),
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--threshold=-5"),
     "--threshold -5: expected a finite percentage ≥ 0, such as 5 or 5%"),
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--alpha", "0"),
     "--alpha 0: expected a probability between 0 and 1 (exclusive)"),
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--alpha", "1.5"),
     "--alpha 1.5: expected a probability between 0 and 1 (exclusive)"),
    (("compare", GRID / "loop-disk", GRID / "loop-shm", "--alpha", "nan"),
     "--alpha nan: expected a probability between 0 and 1 (exclusive)"),
    (("history", GRID, "--min-change", "nan"), "--min-change nan: expected a finite percentage ≥ 0, such as 5 or 5%"),
    (("history", GRID, "--min-change=-1%"), "--min-change -1%: expected a finite percentage ≥ 0, such as 5 or 5%"),
    (("history", GRID, "--max-p", "0"), "--max-p 0: expected a probability between 0 and 1 (0 < p ≤ 1)"),
    (("history", GRID, "--max-p", "2"), "--max-p 2: expected a probability between 0 and 1 (0 < p ≤ 1)"),
])
def test_an_option_that_turns_the_gate_off_is_refused(capsys, args, message):
    """Attack class: options.  ``--threshold nan`` (inf, negative) was accepted and no change was ever a
    regression; ``--alpha`` and ``--max-p`` outside (0, 1) likewise: each is exit 2 and one line, before any
    data is read."""
    rc, out, err = run_main(capsys, *args)
    assert (rc, out, err) == (2, "", f"error: {message}\n")


def test_a_fifo_socket_or_device_is_not_data(tmp_path, capsys):
    """Attack class: options (paths).  ``compare``/``history`` on a FIFO gave shutil's SpecialFileError
    (exit 70), and on /dev/zero would read forever: each is exit 2 and one line, never opened."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        tail = "not a regular file or folder: expected a folder of benchmark outputs, an archive, one output " \
               "file, or ingested tables"
        for cmd, path, what in (("compare", fifo, "a FIFO"), ("history", fifo, "a FIFO"), ("compare", sock_path,
                                "a socket"), ("compare", Path("/dev/zero"), "a character device")):
            args = (cmd, path, GRID / "loop-shm") if cmd == "compare" else (cmd, path)
            assert run_main(capsys, *args) == (2, "", f"error: {path}: {what}, {tail}\n")
    finally:
        sock.close()


def test_out_inside_the_data_folder_is_refused(tmp_path, capsys):
    """Attack class: options.  ``ingest DATA --out DATA/processed`` was accepted, and the next ingest of DATA
    read the tables as data: exit 2 and one line, nothing created."""
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(JSON, root / "a.json")
    for out in (root / "processed", root):
        rc, _, err = run_main(capsys, "ingest", root, "--out", out, "--no-progress", "--jobs", "1")
        assert (rc, err) == (2, f"error: --out {out} is inside the folder being ingested, {root}: the next ingest "
                                "would read the tables as data (expected an output folder outside it)\n")
    assert sorted(p.name for p in root.iterdir()) == ["a.json"]


@pytest.mark.parametrize("option,value,key", [("bsrange", "4k-1m", "bsrange"),
                                              ("blocksize_range", "4k-16k,64k-1m", "bsrange"),
                                              ("bssplit", "4k/50:64k/50", "bssplit")])
def test_a_job_of_many_block_sizes_has_no_one_block_size(tmp_path, option, value, key):
    """Attack class: options (fio's).  A job with ``bsrange=4k-1m`` was keyed ``bs_B`` 4096 (its ``bs``, or
    fio's default): its run shared a cell with 4 KiB runs.  Now it has the range as a key, ``bs`` as
    written, no ``bs_B``, and the option in ``fio_options`` (what cells match on)."""
    from analysis.ingest.walk import ingest
    doc = json.loads(JSON.read_text())
    doc["jobs"][0]["job options"][option] = value
    root = tmp_path / "data"
    root.mkdir()
    (root / "ranged.json").write_text(json.dumps(doc))
    shutil.copy(JSON, root / "plain.json")
    res = ingest(root, progress=False)
    assert res.failed == []
    f = res.files.set_index("path")
    assert f.loc["ranged.json", key] == value and f.loc["ranged.json", "bs"] == "4k"
    assert pd.isna(f.loc["ranged.json", "bs_B"]) and f.loc["plain.json", "bs_B"] == 4096
    assert f"{option}={value}" in f.loc["ranged.json", "fio_options"].split(" ")


def test_a_300_character_campaign_under_dask_is_a_clear_error(tmp_path):
    """Attack class: options (names the tables make).  ``ingest --dask`` named a folder ``campaign=<300
    characters>``: ENAMETOOLONG traceback, exit 70.  The run.json now fails (a folder name is at most 255
    bytes), its files are written under ``campaign=_none``, exit 1."""
    run = _run_json_tree(tmp_path / "data", json.dumps({"campaign": "c" * 300, "repeat": 1}))
    r = cli("ingest", tmp_path / "data", "--out", tmp_path / "p", "--dask", "--workers", "1", "--no-progress",
            timeout=180)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines()[-1] == (f"  {run}/run.json:1: campaign: expected at most 255 bytes as the folder "
                                         "name 'campaign=<value>' (ingest --dask's tables), got 309 bytes")
    assert [p.name for p in (tmp_path / "p" / "summary").iterdir()] == ["campaign=_none"]


# --- encodings ------------------------------------------------------------------------------------------

def test_a_fio_json_with_a_utf8_bom_is_read(tmp_path):
    """Attack class: encodings.  A BOM'd UTF-8 fio JSON (Windows tools write one) is read with the values of
    the file without it, the BOM not taken for text before the JSON."""
    from analysis.ingest.walk import ingest
    root = tmp_path / "data"
    root.mkdir()
    (root / "bom.json").write_bytes(b"\xef\xbb\xbf" + JSON.read_bytes())
    res = ingest(root, progress=False)
    assert res.failed == []
    assert iops_of(res.summary, "bom.json") == IOPS
    meta = json.loads(res.files.set_index("path").loc["bom.json", "meta_json"])
    assert (meta["bom"], meta["preamble"]) == ("utf-8", None)


@pytest.mark.parametrize("codec,name", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-32", "UTF-32"),
                                        ("utf-32-be", "UTF-32BE")])
def test_a_fio_json_in_utf16_or_utf32_says_how_to_convert_it(tmp_path, codec, name):
    """Attack class: encodings.  A fio JSON saved as UTF-16 or UTF-32 was 'unrecognised content' without a
    hint; now it fails saying what it is and the iconv command, and that command makes it readable."""
    from analysis.ingest.walk import ingest
    root = tmp_path / "data"
    root.mkdir()
    (root / "wide.json").write_bytes(JSON.read_text().encode(codec))
    res = ingest(root, progress=False)
    assert res.failed == [("wide.json", f"{root}/wide.json:1: expected UTF-8 text (this file is {name}: convert "
                                        f"it with iconv -f {name} -t UTF-8)")]
    if shutil.which("iconv") is None:
        pytest.skip("iconv is not installed")
    with open(root / "wide.json", "rb") as src, open(tmp_path / "utf8.json", "wb") as dst:
        subprocess.run(["iconv", "-f", name, "-t", "UTF-8"], stdin=src, stdout=dst, check=True, timeout=60)
    os.replace(tmp_path / "utf8.json", root / "wide.json")
    res = ingest(root, progress=False)
    assert res.failed == [] and iops_of(res.summary, "wide.json") == IOPS

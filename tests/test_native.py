"""No compiler, still correct (issue 49): with the C compiler hidden and no prebuilt library, the ingest of a
tree holding every shipped format gives the same tables as with the C part, after exactly one warning that
names the cause; ``CEPHQOS_NATIVE=0`` gives them without the warning."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT

RAW = ROOT / "data" / "raw"
#: one run folder of each shipped kind: fio JSON and logs (per-IO, averaged, histogram), PG timeline,
#: sysutil, cluster log, blktrace binaries, rados bench text, getput, a CBT archive, a bench_fio grid cell
FOLDERS = [
    "ceph-qos/qos-v2/scrub/balanced/rep-01",
    "block/block-2026/fio-btrfs-write-4k-qd16/bfq/rep-01",
    "block/rados-block-2026/rados-128k-qd16/bfq/rep-01",
    "rgw/rgw-2026/put-4m-p8/bucket-per-proc/rep-01",
    "cbt/cbt-2026/high_client_ops",
    "fio-grid-pilot/loop-shm/4k/run-3",
]
TABLES = ("files", "summary", "series", "blk_requests")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats") / "raw"
    for f in FOLDERS:
        if not (RAW / f).is_dir():
            pytest.skip(f"{RAW / f} is absent")
        shutil.copytree(RAW / f, root / f)
    return root


def _ingest(tree: Path, out: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", "ingest", str(tree), "--out", str(out), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _no_compiler_env(tmp: Path) -> dict:
    """PATH without any compiler, no CC, and an empty build folder: what a machine without ``cc`` sees."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CEPHQOS_NATIVE")}
    env.update(PATH=str(bin_dir), CEPHQOS_NATIVE_DIR=str(tmp / "build"), PYTHONWARNINGS="default")
    return env


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    return {t: pd.read_parquet(out / f"{t}.parquet") for t in TABLES if (out / f"{t}.parquet").exists()}


def test_no_compiler_reads_every_shipped_format_the_same(tree, tmp_path):
    with_c = _ingest(tree, tmp_path / "c", {**os.environ, "CEPHQOS_NATIVE": "1"})
    assert with_c.returncode == 0, with_c.stderr
    assert "NativeFallbackWarning" not in with_c.stderr
    env = _no_compiler_env(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "from analysis.ingest import _native; _native.compiler()"],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "apt-get install gcc" in probe.stderr  # the compiler is hidden indeed
    plain = _ingest(tree, tmp_path / "plain", env)
    assert plain.returncode == 0, plain.stderr
    warnings = [ln for ln in plain.stderr.splitlines() if "NativeFallbackWarning" in ln]
    assert len(warnings) == 1, plain.stderr  # one warning, naming the cause
    assert "C compiler" in warnings[0] and "plain path" in warnings[0]
    assert "unexpected content" not in plain.stderr
    assert not any((tmp_path / "build").glob("*.so"))
    a, b = _tables(tmp_path / "c"), _tables(tmp_path / "plain")
    assert set(a) == set(b) == set(TABLES)
    kinds = set(a["files"]["kind"].astype(str))
    assert {"fio-json", "fio-log", "fio-hist-log", "ceph-pg-timeline", "blktrace", "rados-bench", "getput",
            "sysutil"} <= kinds, kinds
    assert (a["files"]["status"].astype(str) != "failed").all()
    for t in TABLES:
        pd.testing.assert_frame_equal(a[t], b[t], obj=t)
        assert (tmp_path / "c" / f"{t}.parquet").read_bytes() == (tmp_path / "plain" / f"{t}.parquet").read_bytes(), t


def test_switched_off_says_nothing(tree, tmp_path):
    env = {**os.environ, "CEPHQOS_NATIVE": "0", "PYTHONWARNINGS": "default"}
    r = _ingest(tree / "ceph-qos", tmp_path / "off", env)
    assert r.returncode == 0, r.stderr
    assert "NativeFallbackWarning" not in r.stderr


def test_the_switch_selects_the_path(monkeypatch):
    from analysis.ingest import _native, _scan, blktrace
    monkeypatch.setenv("CEPHQOS_NATIVE", "0")
    assert not _native.enabled() and _native.library("_cscan") is None
    assert not _scan.native() and blktrace._clib() is None
    monkeypatch.setenv("CEPHQOS_NATIVE", "1")
    if _native.library("_cscan") is None:
        pytest.skip("no C compiler here")
    assert _scan.native() and blktrace._clib() is not None


def test_make_test_runs_the_reader_tests_again_without_c():
    """`make test`'s second pass (CEPHQOS_NATIVE=0) names files that exist, covering every reader's test:
    a typo there had made the pass fail with 'file not found' instead of running.  The definition is
    evaluated by make alone (not the whole Makefile, whose included rules could start an ingest)."""
    text = (ROOT / "Makefile").read_text()
    start = text.index("READER_TESTS :=")
    end = start
    while text[end:text.index("\n", end)].endswith("\\"):
        end = text.index("\n", end) + 1
    definition = text[start:text.index("\n", end)]
    out = subprocess.run(["make", "-s", "-f", "-", "show"], input=definition + "\nshow:\n\t@echo $(READER_TESTS)\n",
                         capture_output=True, text=True, check=True).stdout
    files = out.split()
    assert len(files) >= 20 and [f for f in files if not (ROOT / f).is_file()] == []
    assert {"tests/test_fio_log.py", "tests/test_blktrace.py", "tests/test_ceph_timeline.py",
            "tests/test_radosbench.py", "tests/test_fio_bins.py", "tests/test_native.py"} <= set(files)
    recipe = text.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert "CEPHQOS_NATIVE=0" in recipe and "$(READER_TESTS)" in recipe

"""cephqos-lab as a package: ``pip install -e .`` into a new virtual environment gives a working ``cephqos``
command.  The environment is made from the base interpreter, the project installed with its compatible
ranges held to the lock (environment.yml's pins, as ``make`` writes them to .venv/requirements.txt) by uv
when the project's venv has it (its cache makes this seconds), else pip."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

JSON = FIXTURES / "fio" / "randread-4k-windowed" / "randread-4k-windowed.json"
LOCK = ROOT / ".venv" / "requirements.txt"


def _side(top: Path, scale: float) -> None:
    """Three repeats of the fixture's run, IOPS × ``scale`` × 1.00/1.01/1.02 (total_ios rounded and iops =
    total_ios / runtime, as fio computes it)."""
    for r in range(3):
        doc = json.loads(JSON.read_text())
        rd = doc["jobs"][0]["read"]
        rd["total_ios"] = round(rd["total_ios"] * scale * (1 + r / 100))
        rd["iops"] = rd["total_ios"] * 1000 / rd["runtime"]
        (top / f"run-{r}").mkdir(parents=True)
        (top / f"run-{r}" / "x.json").write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    if not LOCK.is_file():
        pytest.skip("no .venv/requirements.txt (the lock `make` writes): run through `make test`")
    d = tmp_path_factory.mktemp("pkg") / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(d)], check=True,
                   timeout=120)
    uv = ROOT / ".venv" / "bin" / "uv"
    if uv.is_file():
        cmd = [str(uv), "pip", "install", "--quiet", "--python", str(d / "bin" / "python"), "-c", str(LOCK),
               "-e", str(ROOT)]
    else:
        cmd = [str(d / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", "-c", str(LOCK),
               "-e", str(ROOT)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return d


def test_the_console_command_compares_two_folders(venv, tmp_path):
    """``cephqos compare A B`` from the new environment (cwd elsewhere, so the checkout is found only as the
    installed package): B at half A's IOPS is a regression, exit 1, with its header."""
    exe = venv / "bin" / "cephqos"
    assert exe.is_file()
    _side(tmp_path / "A", 1.0)
    _side(tmp_path / "B", 0.5)
    r = subprocess.run([str(exe), "compare", str(tmp_path / "A"), str(tmp_path / "B"), "--metric", "iops",
                        "--format", "json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert (out["old"], out["new"]) == (str(tmp_path / "A"), str(tmp_path / "B"))
    (row,) = [x for x in out["rows"] if x["metric"] == "iops"]
    assert row["verdict"] == "worse" and row["regression"] is True
    assert row["n_old"] == row["n_new"] == 3


def test_the_console_command_names_itself_in_its_help(venv, tmp_path):
    r = subprocess.run([str(venv / "bin" / "cephqos"), "--help"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.startswith("usage: cephqos ")
    for cmd in ("ingest", "compare", "history", "report"):
        assert cmd in r.stdout
    import importlib.util
    spec = subprocess.run([str(venv / "bin" / "python"), "-c", "import analysis, sys; print(analysis.__file__)"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert Path(spec.stdout.strip()).resolve().parent == (ROOT / "analysis").resolve()  # editable: this checkout
    assert importlib.util.find_spec("analysis") is not None
    assert shutil.which("cephqos", path=str(venv / "bin"))

"""The report's front door on data we did not capture: an empty folder or nothing readable stops before any
notebook with a message and exit 2; a folder of bare fio outputs (no run.json, so no campaign column) gets
its make rules and stubs instead of a pyarrow error."""

from __future__ import annotations

import shutil
import subprocess
import sys

from analysis.report import missing_campaigns, nothing_readable, notebook_deps
from conftest import FIXTURES, ROOT


def _run(*args):
    return subprocess.run([sys.executable, "-m", "analysis", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)


def test_an_empty_folder_is_nothing_readable_before_any_notebook(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no benchmark here\n")
    r = _run("ingest", tmp_path / "empty", "--out", tmp_path / "p", "--no-progress")
    assert r.returncode == 2
    assert "nothing readable" in r.stderr and str(tmp_path / "empty") in r.stderr
    why = nothing_readable(tmp_path / "p")
    assert "nothing readable (1 failed)" in why  # notes.txt: no reader claims it
    r = _run("deps", ROOT / "notebooks" / "33-qos-v2.ipynb", "--processed", tmp_path / "p", "--out", tmp_path / "d.mk")
    assert r.returncode == 2 and "no notebook is run" in r.stderr
    assert not (tmp_path / "d.mk").exists()


def test_bare_fio_outputs_without_a_campaign_column_get_rules_and_stubs(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(FIXTURES / "fio" / "randread-4k-windowed", raw)
    r = _run("ingest", raw, "--out", tmp_path / "p", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert nothing_readable(tmp_path / "p") == ""
    nb = ROOT / "notebooks" / "33-qos-v2.ipynb"
    assert missing_campaigns(nb, tmp_path / "p") == ["qos-v2"]
    rules = notebook_deps([nb], tmp_path / "p", reports=str(tmp_path / "reports"))
    assert f"{tmp_path / 'reports'}/33-qos-v2.ipynb: {tmp_path / 'p'}/campaigns/qos-v2.sha256" in rules
    assert (tmp_path / "p" / "campaigns" / "qos-v2.sha256").read_text() == "absent\n"
    # one notebook executed once per study: each output named, each tied to what the notebook reads
    study = ROOT / "notebooks" / "30-qos-study.ipynb"
    rules = notebook_deps([f"30-qos-snaptrim-recovery={study}", f"31-qos-scrub={study}"], tmp_path / "p",
                          reports="r")
    assert rules.splitlines() == [f"r/{n}.ipynb: {tmp_path / 'p'}/campaigns/qos-2026.sha256 "
                                  "data/published/qos-part1.csv data/published/qos-part2.csv" for n in
                                  ("30-qos-snaptrim-recovery", "31-qos-scrub")]

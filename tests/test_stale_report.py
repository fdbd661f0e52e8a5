"""A report never shows another data set's notebooks (the issue: ``make report DATA=x PROC=y`` then ``make
report`` gave a report.html of x's notebooks, since they were newer than the shipped data's stamps).

``make`` re-runs every notebook of REPORTS when DATA, PROC or PROC's tables.json change (REPORTS/dataset.txt);
each executed notebook records its data set (metadata ``cephqos``); ``analysis report`` refuses a mix and its
header names the data it shows."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time

import nbformat
import pytest

from analysis.report import MixedDataError, build_report
from conftest import ROOT

A = ROOT / "data" / "raw" / "fio-grid"               # two small shipped data sets
B = ROOT / "data" / "raw" / "fio-iosched-smoke"
REPORT_NB = re.search(r"^REPORT_NB := (.+)$", (ROOT / "Makefile").read_text(), flags=re.M).group(1).split()
HEADER = re.compile(r"<p class='dataset-line'>Data: <code>([^<]*)</code> → <code>([^<]*)</code> "
                    r"\(tables.json sha256 ([0-9a-f]{12})")


def _make_report(data, proc, reports, figures) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "report", f"DATA={data}", f"PROC={proc}",
                           f"REPORTS={reports}", f"FIGURES={figures}"], capture_output=True, text=True, env=env)


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_report_of(r: subprocess.CompletedProcess, reports, data, proc) -> int:
    """Every executed notebook and the report's header are of ``data`` ingested into ``proc``; returns how
    many notebooks this make ran."""
    # exit 0: both data sets are read whole (`analysis failures` finds none) and hold no QoS campaign (claims
    # are skipped with a message, not an error)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    digest = _sha256(proc / "tables.json")
    books = sorted(reports.glob("[0-9][0-9]-*.ipynb"))
    assert sorted(b.stem for b in books) == sorted(REPORT_NB)
    for b in books:
        rec = nbformat.read(b, as_version=4).metadata.get("cephqos")
        assert rec and rec["data"] == os.path.abspath(data) and rec["processed"] == os.path.abspath(proc), (b, rec)
        assert rec["tables_sha256"] == digest, b
    assert (reports / "dataset.txt").read_text() == \
        f"data={os.path.abspath(data)}\nprocessed={os.path.abspath(proc)}\ntables_sha256={digest}\n"
    m = HEADER.search((reports / "report.html").read_text())
    assert m and m.groups() == (os.path.abspath(data), os.path.abspath(proc), digest[:12])
    # run-notebook's one line per notebook it ran: "  NAME   12.3 s  (ran …, section …)"
    return len(re.findall(r"^  (\S+) +\d+\.\d s  \(ran ", r.stdout, flags=re.M))


def test_switching_data_and_back_reruns_every_notebook_in_a_shared_reports_folder(tmp_path):
    """The issue's sequence with make itself: A, then B, then A again into one REPORTS and FIGURES folder.
    Before the fix the third make ran no notebook and left B's report (2.5 s, exit 0)."""
    pa, pb, r, f = (tmp_path / n for n in ("pA", "pB", "r", "f"))
    took = []
    for data, proc in ((A, pa), (B, pb), (A, pa)):
        t0 = time.monotonic()
        run = _make_report(data, proc, r, f)
        took.append(time.monotonic() - t0)
        assert _assert_report_of(run, r, data, proc) == len(REPORT_NB), run.stdout[-3000:]
        if len(took) < 3:  # A and B are ingested once each: make says so, with the seconds
            assert re.search(r"^  ingest +\d+\.\d s$", run.stdout, flags=re.M), run.stdout[-3000:]
    # the third run read pA's tables as they were: no re-ingest, only the notebooks re-ran
    assert not re.search(r"^  ingest +\d", run.stdout, flags=re.M) and "ingest " + str(A) not in run.stdout
    # and nothing changed: nothing re-runs (dataset.txt is rewritten only when its content changes)
    run = _make_report(A, pa, r, f)
    assert _assert_report_of(run, r, A, pa) == 0, run.stdout[-3000:]
    print("make report A, B, A, A:", ", ".join(f"{t:.1f} s" for t in took))


def _executed(reports, name: str, record: dict | None) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {name}\n\nprose")])
    nb.metadata["papermill"] = {"parameters": {}, "default_parameters": {}, "start_time": "", "duration": 1.0}
    if record is not None:
        nb.metadata["cephqos"] = record
    nbformat.write(nb, reports / f"{name}.ipynb")


def _record(data: str, proc: str, sha: str = "a" * 64) -> dict:
    return {"data": data, "processed": proc, "tables_sha256": sha, "tables_written": "2026-11-28T20:00:00+00:00"}


def test_the_report_refuses_notebooks_of_two_data_sets_naming_both(tmp_path, capsys):
    from analysis.__main__ import main
    reports = tmp_path / "r"
    reports.mkdir()
    _executed(reports, "10-consistency", _record("/data/A", "/proc/A"))
    _executed(reports, "20-io-schedulers", _record("/data/B", "/proc/B", "b" * 64))
    (reports / "report.html").write_text("the previous report")
    with pytest.raises(MixedDataError) as e:
        build_report(reports, tmp_path)
    msg = str(e.value)
    assert "10-consistency.ipynb from /data/A → /proc/A (tables.json sha256 aaaaaaaaaaaa)" in msg
    assert "20-io-schedulers.ipynb from /data/B → /proc/B (tables.json sha256 bbbbbbbbbbbb)" in msg
    assert main(["report", str(reports), "--figures", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the executed notebooks come from different data sets") and "/data/B" in err
    assert (reports / "report.html").read_text() == "the previous report"   # left untouched
    assert not [p for p in reports.iterdir() if ".tmp" in p.name]

    # the same data folder re-ingested (another tables.json) is another data set too
    _executed(reports, "20-io-schedulers", _record("/data/A", "/proc/A", "c" * 64))
    with pytest.raises(MixedDataError, match="cccccccccccc"):
        build_report(reports, tmp_path)
    # a notebook that recorded nothing (run by hand, or before the record existed) is not taken on trust
    _executed(reports, "20-io-schedulers", None)
    with pytest.raises(MixedDataError, match=r"20-io-schedulers.ipynb from \(not recorded\)"):
        build_report(reports, tmp_path)


def test_the_report_names_its_data_and_refuses_other_processed_tables(tmp_path):
    reports, proc = tmp_path / "r", tmp_path / "p"
    reports.mkdir(), proc.mkdir()
    (proc / "tables.json").write_text('{"written": "2026-11-28T20:00:00+00:00"}\n')
    sha = _sha256(proc / "tables.json")
    for name in ("10-consistency", "20-io-schedulers"):
        _executed(reports, name, _record("/data/A", str(proc), sha))
    page = build_report(reports, tmp_path, processed=proc).read_text()
    assert (f"Data: <code>/data/A</code> → <code>{proc}</code> (tables.json sha256 {sha[:12]}, "
            f"written 2026-11-28T20:00:00+00:00)") in page
    assert page.index("dataset-line") < page.index("<ol>")            # at the top, before the contents
    (proc / "tables.json").write_text('{"written": "2026-11-28T21:00:00+00:00"}\n')   # re-ingested since
    with pytest.raises(MixedDataError) as e:
        build_report(reports, tmp_path, processed=proc)
    assert f"--processed {proc} holds tables.json sha256 {_sha256(proc / 'tables.json')[:12]}" in str(e.value)
    assert f"ran on /data/A → {proc} (tables.json sha256 {sha[:12]})" in str(e.value)
    # notebooks that all recorded nothing (hand-made, the committed ones): made, and the header says so
    for name in ("10-consistency", "20-io-schedulers"):
        _executed(reports, name, None)
    assert "Data: not recorded" in build_report(reports, tmp_path, processed=proc).read_text()

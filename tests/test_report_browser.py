"""The assembled report in a real browser: headless Chromium (Debian's ``chromium``; `make tools` installs it
when missing and root) opens it, the page logs no JavaScript error, every notebook's section is rendered,
and a screenshot is saved to ``reports/report-screenshot.png``.  Skipped when chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from analysis.report import build_report

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make tools installs it as root)")


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=120)


def test_report_renders_in_chromium_without_javascript_errors(tmp_path):
    # the committed executed notebooks (their checked outputs; figures are re-drawn by make report)
    reports = tmp_path / "reports"
    reports.mkdir()
    books = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    for b in books:
        shutil.copy(b, reports / b.name)
    # a page with a deliberate error proves the check would see one
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>undefined_function_xyz();</script></body></html>")
    r = chromium("--dump-dom", bad.as_uri())
    assert "undefined_function_xyz" in r.stderr and "Uncaught" in r.stderr

    # and a notebook with two interactive plotly outputs: both must come alive in the page
    import plotly.graph_objects as go
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · plotly"), nbformat.v4.new_code_cell("")])
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.plotly.v1+json": go.Figure(go.Bar(x=["a", "b"], y=[1, k])).to_plotly_json()}) for k in (2, 3)]
    nbformat.write(nb, reports / "99-plotly.ipynb")
    books.append(reports / "99-plotly.ipynb")

    page = build_report(reports, ROOT / "figures")
    r = chromium("--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    console_errors = [l for l in r.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
    assert console_errors == []
    dom = r.stdout
    assert sorted(re.findall(r"<section id=\"([^\"]+)\"", dom)) == [b.stem for b in books]
    # rendered plotly figures: the two of the hand-made notebook (the committed notebooks carry none)
    assert len(re.findall(r'class="[^"]*js-plotly-plot', dom)) == 2
    shot = ROOT / "reports" / "report-screenshot.png"
    r = chromium("--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert r.returncode == 0 and shot.stat().st_size > 10_000

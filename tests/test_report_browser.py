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
    console_errors = [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln and ("Uncaught" in ln or "Error" in ln)]
    assert console_errors == []
    dom = r.stdout
    assert sorted(re.findall(r"<section id=\"([^\"]+)\"", dom)) == [b.stem for b in books]
    # rendered plotly figures: the two of the hand-made notebook (the committed notebooks carry none)
    assert len(re.findall(r'class="[^"]*js-plotly-plot', dom)) == 2
    shot = ROOT / "reports" / "report-screenshot.png"
    r = chromium("--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert r.returncode == 0 and shot.stat().st_size > 10_000


def test_report_offline_in_chromium_no_request_no_error_nothing_clipped(tmp_path):
    """Through the DevTools protocol with the network switched off: a page that asks for a URL or throws is
    seen (so the check can fail), and the report of the committed notebooks plus two plotly figures makes
    no request, logs no error, renders both figures (plotly.js unpacked in the page) and clips no image."""
    pytest.importorskip("websocket")
    from analysis.pagecheck import inspect_page
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><img src='http://192.0.2.1/x.png'><script>nope();</script></body></html>")
    r = inspect_page(bad)
    assert r["requests"] == ["http://192.0.2.1/x.png"] and any("nope" in (e or "") for e in r["console_errors"])

    reports = tmp_path / "reports"
    reports.mkdir()
    for b in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        shutil.copy(b, reports / b.name)
    import plotly.graph_objects as go
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · plotly"), nbformat.v4.new_code_cell("")])
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.plotly.v1+json": go.Figure(go.Bar(x=["a", "b"], y=[1, k])).to_plotly_json()}) for k in (2, 3)]
    nbformat.write(nb, reports / "99-plotly.ipynb")
    page = build_report(reports, ROOT / "figures")
    r = inspect_page(page)
    assert r["requests"] == [] and r["failed_requests"] == [] and r["console_errors"] == []
    assert r["plotly"] == r["plotly_divs"] == 2
    assert r["clipped_images"] == [] and all(i["loaded"] for i in r["images"]) and r["broken_links"] == []
    assert r["title"] == "cephqos-lab report" and r["sections_wider_than_page"] == 0
    import re as re_
    assert not re_.search(r"<(?:script|link|img|iframe)[^>]+(?:src|href)=[\"']?(?:https?:)?//", page.read_text())


#: issue 27's targets for the shipped data's report (1400 px wide; a "screen" as the issue counted them:
#: 84,000 px ≈ 42 screens, i.e. 2,000 px)
REPORT_MAX_BYTES, REPORT_MAX_PX = 6_000_000, 25 * 2_000


def test_the_rendered_report_meets_its_size_and_height_targets():
    """On ``reports/report.html`` as ``make report`` wrote it (so: ``make report`` then ``make test``)."""
    pytest.importorskip("websocket")
    from analysis.pagecheck import inspect_page
    page = ROOT / "reports" / "report.html"
    if not page.is_file():
        pytest.skip("no reports/report.html: run `make report` first")
    r = inspect_page(page)
    # what we found, then the claims, then the data; its heading and first sentences on the first screen
    assert r["sections"][:3] == ["what-we-found", "claims", "data-set"] and r["broken_links"] == []
    assert r["section_tops"]["what-we-found"] < r["viewport"] - 200, r["section_tops"]
    assert r["requests"] == [] and r["console_errors"] == [] and r["clipped_images"] == []
    assert r["plotly"] == r["plotly_divs"]
    wide = [i for i in r["images"] if i["natural"] > i["container"]]
    assert wide == [], f"{len(wide)} images wider than their box"     # sized to the page, not only scaled down
    assert r["bytes"] <= REPORT_MAX_BYTES, f"{r['bytes']:,} bytes"
    assert r["height"] <= REPORT_MAX_PX, f"{r['height']:,} px"


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="pdftoppm is not installed (make tools: poppler-utils)")
def test_report_prints_to_pdf_with_a_readable_first_page(tmp_path):
    """make report-pdf's step on a report of the committed notebooks: an A4 PDF whose text holds every
    section's title, and whose first page, rendered by pdftoppm, is a page with content (not blank)."""
    pytest.importorskip("websocket")
    import numpy as np
    from PIL import Image

    from analysis.pagecheck import print_pdf
    reports = tmp_path / "reports"
    reports.mkdir()
    books = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    for b in books:
        shutil.copy(b, reports / b.name)
    pdf = print_pdf(build_report(reports, ROOT / "figures"), tmp_path / "report.pdf")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "595.92 x 841.92 pts (A4)" in info and int(re.search(r"Pages:\s+(\d+)", info).group(1)) >= len(books)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "cephqos-lab report" in text and "00 · Ingest" in text and "40 · Block-workload" in text
    subprocess.run(["pdftoppm", "-png", "-r", "50", "-f", "1", "-l", "1", str(pdf), str(tmp_path / "p")], check=True)
    page1 = np.asarray(Image.open(next(tmp_path.glob("p*.png"))).convert("L"))
    assert page1.shape[0] > page1.shape[1] and (page1 < 128).mean() > 0.002   # portrait, with dark (text) pixels

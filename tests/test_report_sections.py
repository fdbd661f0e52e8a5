"""The report's sections rendered once per executed notebook (``analysis.report_sections``): what
``run-notebook --section`` caches is what the report would render itself, the report uses the cache only
while the notebook and the rendering code are the ones it was made from, and run-notebook prints its line."""

from __future__ import annotations

import base64
import json
import re
import shutil

import nbformat
import pandas as pd

from analysis import report_sections as rs
from analysis.report import build_report
from test_report import _png, executed


def _notebook(path, text: str = "table-40") -> None:
    nb = executed("40 · Block workload", {"data_dir": "d"}, text)
    png = base64.b64encode(_png(300, 200, 3)).decode()
    nb.cells[1].outputs.append(nbformat.v4.new_output(
        "display_data", data={"image/png": png, "text/plain": "<Figure>"}, metadata={"figure_id": "workload-x"}))
    nb.cells[1].outputs.append(nbformat.v4.new_output(
        "display_data", data={"application/vnd.plotly.v1+json": {"data": [{"y": [1, 2]}], "layout": {}}}))
    nbformat.write(nb, path)


def _section(page: str, name: str) -> str:
    return re.search(rf"<section id='{name}'>.*?</section>", page, re.S).group(0)


def test_the_cached_section_is_the_one_the_report_renders_and_is_used_only_while_it_matches(tmp_path):
    reports, figures = tmp_path / "reports", tmp_path / "figures"
    reports.mkdir(), figures.mkdir()
    nb = reports / "40-block-workload.ipynb"
    _notebook(nb)
    cache = reports / rs.CACHE_DIR / "40-block-workload.json"
    plain = build_report(reports, figures).read_text()  # no cache yet: rendered by the report, then cached
    got = json.loads(cache.read_text())
    assert got["key"] == rs.key(nb.read_bytes(), "40-block-workload")
    assert got["n_plotly"] == 1 and got["anchors"] == ["workload-x"]
    assert "data:image/webp;base64," in got["body"] and "data:image/png" not in got["body"]
    assert 'id="fig-workload-x"' in got["body"] and "40-block-workload-plotly-0" in got["body"]
    assert "table-40" in _section(plain, "40-block-workload")
    # a cache made beside the notebook run (as run-notebook --section does) gives the same page
    cache.unlink()
    rs.section(nb, "40-block-workload")
    assert build_report(reports, figures).read_text() == plain
    # the report takes the cached body while the key matches ...
    cache.write_text(json.dumps({**got, "body": "<p>from the cache</p>"}))
    assert "from the cache" in build_report(reports, figures).read_text()
    # ... and renders anew when the notebook changed (another run), or the code did (another key)
    _notebook(nb, "table-40 again")
    page = build_report(reports, figures).read_text()
    assert "from the cache" not in page and "table-40 again" in page
    cache.write_text(json.dumps({**json.loads(cache.read_text()), "key": "0" * 64, "body": "<p>stale</p>"}))
    assert "stale" not in build_report(reports, figures).read_text()
    # a damaged cache file is rendered over, not an error
    cache.write_text("{not json")
    assert "table-40 again" in build_report(reports, figures).read_text()
    assert json.loads(cache.read_text())["key"] == rs.key(nb.read_bytes(), "40-block-workload")


def test_run_notebook_renders_its_section_and_prints_one_line(tmp_path, monkeypatch, capsys):
    from papermill.cli import papermill as papermill_cli

    from analysis.__main__ import main
    proc = tmp_path / "p"
    proc.mkdir()
    pd.DataFrame({"campaign": ["block-2026"]}).to_parquet(proc / "summary.parquet")
    src, out = tmp_path / "40-block-workload.ipynb", tmp_path / "reports" / "40-block-workload.ipynb.tmp.ipynb"
    _notebook(src)
    out.parent.mkdir()
    monkeypatch.setattr(papermill_cli, "main", lambda args, standalone_mode: shutil.copy(args[0], args[1]))
    assert main(["run-notebook", "--data", "d", "--processed", str(proc), "--section", "40-block-workload",
                 str(src), str(out)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"40-block-workload +\d+\.\d s  \(ran \d+\.\d s, section \d+\.\d s\)", line.strip()), line
    cached = json.loads((out.parent / rs.CACHE_DIR / "40-block-workload.json").read_text())
    assert cached["key"] == rs.key(out.read_bytes(), "40-block-workload")  # the bytes make moves to NN-*.ipynb
    # a failed run renders nothing and says so on its line
    monkeypatch.setattr(papermill_cli, "main", lambda args, standalone_mode: (_ for _ in ()).throw(ValueError("x")))
    (out.parent / rs.CACHE_DIR / "40-block-workload.json").unlink()
    assert main(["run-notebook", "--data", "d", "--processed", str(proc), "--section", "40-block-workload",
                 str(src), str(out)]) == 1
    assert capsys.readouterr().out.rstrip().endswith("FAILED")
    assert not (out.parent / rs.CACHE_DIR / "40-block-workload.json").exists()

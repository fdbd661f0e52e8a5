"""analysis.report: the one-page report assembled from executed notebooks, on hand-made notebooks."""

from __future__ import annotations

import nbformat
import pytest

from analysis.report import build_report, figure_source


def executed(title: str, params: dict, text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {title}\n\nprose"),
        nbformat.v4.new_code_cell("print('x')", outputs=[nbformat.v4.new_output("stream", name="stdout", text=text)])])
    nb.metadata["papermill"] = {"parameters": params, "default_parameters": {"alpha": 0.05},
                                "start_time": "2026-11-22T22:00:00", "duration": 1.5}
    return nb


def test_report_has_toc_parameters_manifest_and_figure_index(tmp_path):
    reports, figures, data = tmp_path / "reports", tmp_path / "figures", tmp_path / "raw"
    reports.mkdir(), figures.mkdir(), data.mkdir()
    (data / "MANIFEST.sha256").write_text("a  x\nb  y\n")
    nbformat.write(executed("20 · IO schedulers", {"data_dir": str(data)}, "table-20"), reports / "20-io-schedulers.ipynb")
    nbformat.write(executed("10 · Consistency", {"data_dir": str(data), "alpha": 0.01}, "table-10"),
                   reports / "10-consistency.ipynb")
    for f in ("iosched-scatter-c-write", "consistency-repeats-needed", "something-else"):
        (figures / f"{f}.png").write_bytes(b"png")
    page = build_report(reports, figures).read_text()
    assert page.index("#10-consistency") < page.index("#20-io-schedulers")          # TOC in notebook order
    assert "10 · Consistency</a> (1 figures)" in page and "IO schedulers</a> (1 figures)" in page
    assert "table-10" in page and "table-20" in page and "print(&#x27;x&#x27;)" not in page  # code hidden
    s10 = page[page.index("<section id='10-consistency'>"):page.index("<section id='20-io-schedulers'>")]
    assert "<code>alpha</code></td><td>0.01" in s10                                 # run value over default
    import hashlib
    assert hashlib.sha256(b"a  x\nb  y\n").hexdigest()[:16] in s10 and "(2 files)" in s10
    assert "analysis.figures.consistency.repeats_needed_curve" in s10
    assert "href='../figures/consistency-repeats-needed.svg'" in s10
    assert "something-else" not in page                                          # no known source: not indexed
    with pytest.raises(FileNotFoundError, match="no executed notebooks"):
        build_report(tmp_path / "figures", figures)


def test_figure_sources_cover_every_figure_id_prefix_in_use():
    from analysis.figures import consistency, iosched, qos, qos_studies, workload
    ids = [consistency.ROUND_DISTRIBUTIONS, consistency.DIFF_RATIO_HEATMAP, consistency.ORDER_DRIFT,
           consistency.REPEATS_NEEDED, iosched.SCATTER, iosched.SUMMARY, qos.CLIENT_IOPS, qos.CLIENT_CLAT,
           qos.BACKGROUND_DURATIONS, workload.IDLE_TIME, workload.SEQUENTIALITY, workload.STACK_DISTANCE,
           workload.BOTTLENECK, workload.BUSY_CHECK, workload.pattern_id("io-pattern", "s", "write", "bfq"),
           workload.pattern_id("throughput-iops", "s", "write", "bfq")] + [f.id for f in qos_studies.FIGURES]
    assert [i for i in ids if figure_source(i)[0] == "unknown"] == []
    assert figure_source("qos-part2-chart04-measured") == ("analysis.figures.qos_studies.draw", "31-qos-scrub")


def test_a_section_without_its_data_becomes_a_stub_not_a_failure(tmp_path):
    import pandas as pd

    from analysis.__main__ import main
    from analysis.report import missing_campaigns, required_campaigns

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · A study"),
        nbformat.v4.new_code_cell('data_dir = "x"\ncampaign = "qos-2026"\nrados_campaign = "r-1"\n'
                                  'campaigns = ["b-1", "qos-2026"]\nalpha = 0.05')])
    nb.cells[1].metadata["tags"] = ["parameters"]
    path = tmp_path / "99-study.ipynb"
    nbformat.write(nb, path)
    assert required_campaigns(path) == ["qos-2026", "r-1", "b-1"]
    proc = tmp_path / "proc"
    proc.mkdir()
    pd.DataFrame({"campaign": ["qos-2026", "other"]}).to_parquet(proc / "summary.parquet")
    assert missing_campaigns(path, proc) == ["r-1", "b-1"]
    out = tmp_path / "out.ipynb"
    assert main(["run-notebook", "--data", "/my/data", "--processed", str(proc), str(path), str(out)]) == 0
    stub = nbformat.read(out, as_version=4)
    assert stub.cells[0].source.startswith("# 99 · A study\n\n**Nothing to show for this section:** `/my/data` "
                                           "has no runs of `r-1`, `b-1`")
    assert stub.metadata["papermill"]["stub"] is True

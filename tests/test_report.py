"""analysis.report: the one-page report assembled from executed notebooks, on hand-made notebooks."""

from __future__ import annotations

import nbformat
import pytest

from analysis.report import build_report, figure_source
from conftest import ROOT


def executed(title: str, params: dict, text: str, drew: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    """A hand-made executed notebook; ``drew``: figure ids its outputs carry, as analysis.figures.show tags them."""
    shown = [nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>"}, metadata={"figure_id": f})
             for f in drew]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {title}\n\nprose"),
        nbformat.v4.new_code_cell("print('x')", outputs=[nbformat.v4.new_output("stream", name="stdout", text=text), *shown])])
    nb.metadata["papermill"] = {"parameters": params, "default_parameters": {"alpha": 0.05},
                                "start_time": "2026-11-22T22:00:00", "duration": 1.5}
    return nb


def test_report_has_toc_parameters_manifest_and_figure_index(tmp_path):
    reports, figures, data = tmp_path / "reports", tmp_path / "figures", tmp_path / "raw"
    reports.mkdir(), figures.mkdir(), data.mkdir()
    (data / "MANIFEST.sha256").write_text("a  x\nb  y\n")
    nbformat.write(executed("20 · IO schedulers", {"data_dir": str(data)}, "table-20", ("iosched-scatter-c-write",)),
                   reports / "20-io-schedulers.ipynb")
    nbformat.write(executed("10 · Consistency", {"data_dir": str(data), "alpha": 0.01}, "table-10",
                            ("consistency-repeats-needed", "something-else")), reports / "10-consistency.ipynb")
    # consistency-order-drift: a file of this notebook's, left by a run on other data; this run did not draw it
    for f in ("iosched-scatter-c-write", "consistency-repeats-needed", "something-else", "consistency-order-drift"):
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
    assert "consistency-order-drift" not in page                                 # not drawn by this run
    assert page.count("<title>") == 1 and "<title>cephqos-lab report</title>" in page   # not "Notebook"
    import re
    assert "cdnjs" not in page and not re.search(r"<script[^>]*src=[\"']https?:", page)  # nothing from a CDN
    assert "x-mathjax-config" not in page
    with pytest.raises(FileNotFoundError, match="no executed notebooks"):
        build_report(tmp_path / "figures", figures)


def test_figure_sources_cover_every_figure_id_prefix_in_use():
    from analysis.figures import compare, consistency, iosched, qos, qos_studies, workload
    ids = [compare.FOREST, consistency.ROUND_DISTRIBUTIONS, consistency.DIFF_RATIO_HEATMAP, consistency.ORDER_DRIFT,
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
    assert stub.metadata["cephqos"]["data"] == "/my/data" and stub.metadata["cephqos"]["processed"] == str(proc)


def _study(path, params: str, prose: str = "") -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# A study\n\n{prose}"),
                                         nbformat.v4.new_code_cell(params)])
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)


def test_make_rules_tie_each_notebook_to_the_stamps_of_the_campaigns_it_reads(tmp_path):
    import pandas as pd

    from analysis.report import campaign_stamp, notebook_deps

    proc = tmp_path / "proc"
    proc.mkdir()
    files = pd.DataFrame({"path": ["q/b/fio.json", "q/a/fio.json", "r/x.log", "MANIFEST.sha256"],
                          "sha256": ["bb", "aa", "cc", "dd"], "campaign": ["qos-2026", "qos-2026", "rb-1", None]})
    files.to_parquet(proc / "files.parquet")
    _study(tmp_path / "30-q.ipynb", 'campaign = "qos-2026"', "reads `data/published/qos-part1.csv` and "
                                                            "data/published/qos-part1.csv again")
    _study(tmp_path / "20-b.ipynb", 'fio_campaign = "gone-1"\nrados_campaign = "rb-1"')
    _study(tmp_path / "00-all.ipynb", 'data_dir = "x"')
    nbs = [tmp_path / n for n in ("30-q.ipynb", "20-b.ipynb", "00-all.ipynb")]
    rules = notebook_deps(nbs, proc, reports="out", published="pub")
    assert rules.splitlines() == [
        f"out/30-q.ipynb: {proc}/campaigns/qos-2026.sha256 pub/qos-part1.csv",
        f"out/20-b.ipynb: {proc}/campaigns/gone-1.sha256 {proc}/campaigns/rb-1.sha256",
        f"out/00-all.ipynb: {proc}/files.parquet"]
    stamp = proc / "campaigns" / "qos-2026.sha256"
    assert stamp.read_text() == "aa  q/a/fio.json\nbb  q/b/fio.json\n"        # sorted by path
    assert (proc / "campaigns" / "gone-1.sha256").read_text() == "absent\n"   # its arrival will re-run 20-b
    assert campaign_stamp(files, "rb-1") == "cc  r/x.log\n"
    import os
    os.utime(stamp, (1_000_000, 1_000_000))
    notebook_deps(nbs, proc)                                                  # same data: stamp untouched
    assert stamp.stat().st_mtime == 1_000_000
    files.loc[0, "sha256"] = "b2"                                             # one raw file changed
    files.to_parquet(proc / "files.parquet")
    notebook_deps(nbs, proc)
    assert stamp.stat().st_mtime > 1_000_000 and "b2  q/b/fio.json" in stamp.read_text()
    assert (proc / "campaigns" / "rb-1.sha256").read_text() == "cc  r/x.log\n"


def test_report_names_each_campaign_read_with_its_digest_and_the_published_files(tmp_path):
    import hashlib

    import pandas as pd

    reports, figures, proc, pub = (tmp_path / d for d in ("reports", "figures", "proc", "pub"))
    for d in (reports, figures, proc, pub):
        d.mkdir()
    pd.DataFrame({"path": ["q/a", "q/b"], "sha256": ["aa", "bb"], "campaign": ["qos-2026"] * 2}
                 ).to_parquet(proc / "files.parquet")
    (pub / "qos-part1.csv").write_text("seed,value\n")
    nb = executed("30 · QoS", {"data_dir": str(tmp_path / "raw"), "processed_dir": str(proc),
                                "rados_campaign": "none-1"}, "out")
    nb.cells[0].source += "\n\nfrom data/published/qos-part1.csv"
    nb.cells.insert(1, nbformat.v4.new_code_cell('campaign = "qos-2026"   # default, not injected\n'
                                                 'bands = (0.1, 0.2)\nrados_campaign = "r"\nn = 2 * 3'))
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, reports / "30-qos-snaptrim-recovery.ipynb")
    stub = executed("31 · Scrub", {"data_dir": "x"}, "")
    stub.metadata["papermill"]["stub"] = True
    nbformat.write(stub, reports / "31-qos-scrub.ipynb")
    (figures / "qos-part2-chart01-published.png").write_bytes(b"old")       # from an earlier run
    page = build_report(reports, figures, published=pub).read_text()
    digest = hashlib.sha256(b"aa  q/a\nbb  q/b\n").hexdigest()[:16]
    assert f"campaign <code>qos-2026</code>: 2 files, digest {digest}" in page
    assert "campaign <code>none-1</code>: absent" in page
    csv_sha = hashlib.sha256(b"seed,value\n").hexdigest()[:16]
    assert f"data/published/qos-part1.csv</code> {csv_sha}" in page
    assert "qos-part2-chart01" not in page                                  # a stub indexes no figures
    assert "<code>bands</code></td><td>[0.1, 0.2]" in page and "<code>n</code></td><td>&quot;2 * 3&quot;" in page
    assert "<code>rados_campaign</code></td><td>&quot;none-1&quot;" in page  # injected over the default


def test_report_digests_come_from_checked_stamps_and_fall_back_to_files_parquet(tmp_path):
    """The report reads a campaign's stamp when ``notebook_deps`` compared it with files.parquet after the
    last ingest (no pandas, no table scan), and recomputes it from files.parquet otherwise."""
    import os

    import pandas as pd

    from analysis.report import CHECKED, _stamp_text, notebook_deps
    proc = tmp_path / "proc"
    proc.mkdir()
    pd.DataFrame({"path": ["q/b", "q/a"], "sha256": ["bb", "aa"], "campaign": ["qos-2026"] * 2}
                 ).to_parquet(proc / "files.parquet")
    want = "aa  q/a\nbb  q/b\n"
    assert _stamp_text(proc, "qos-2026") == want                     # no stamps yet: computed
    nb = executed("30 · QoS", {"campaign": "qos-2026"}, "out")
    nb.cells.insert(1, nbformat.v4.new_code_cell('campaign = "qos-2026"'))
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, tmp_path / "30-q.ipynb")
    notebook_deps([tmp_path / "30-q.ipynb"], proc)
    stamps = proc / "campaigns"
    assert (stamps / CHECKED).read_text() == "qos-2026\n"
    (stamps / "qos-2026.sha256").write_text("marker  read from the stamp\n")   # prove which one is read
    assert _stamp_text(proc, "qos-2026") == "marker  read from the stamp\n"
    assert _stamp_text(proc, "other") == "absent\n"                   # not checked: computed
    t = (stamps / CHECKED).stat().st_mtime_ns
    os.utime(proc / "files.parquet", ns=(t + 10**9, t + 10**9))       # ingested again since the check
    assert _stamp_text(proc, "qos-2026") == want


def test_long_text_outputs_fold_behind_details_with_their_line_count():
    from analysis.report_html import LONG_OUTPUT_LINES, collapse_long_text
    short = "<pre>" + "\n".join(f"row {i}" for i in range(LONG_OUTPUT_LINES)) + "</pre>"  # at the limit: stays
    long_ = "<pre>path  kind  iops\n" + "\n".join(f"f{i}  fio  {i}" for i in range(230)) + "\n</pre>"
    out = collapse_long_text(f"<div>{short}</div><div>{long_}</div>")
    assert out.count("<details") == 1 and short in out and long_ in out          # nothing lost
    assert "<summary>231 lines: <code>path kind iops</code></summary>" in out


def _png(w: int, h: int, seed: int) -> bytes:
    import io

    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    a = np.full((h, w, 4), 255, np.uint8)
    a[:, :, :3] = rng.integers(0, 4, (h, w, 3)) * 60   # a chart-like image: few colours, some alpha
    a[: h // 3, :, 3] = 128
    buf = io.BytesIO()
    Image.fromarray(a, "RGBA").save(buf, "PNG")
    return buf.getvalue()


def test_inline_pngs_become_256_colour_lossless_webp_on_white():
    import base64
    import io
    import re

    import numpy as np
    from PIL import Image

    from analysis.report_html import lighter_images
    raw = _png(300, 200, 1)
    page = f"<img src='data:image/png;base64,{base64.b64encode(raw).decode()}'/><p>text</p>"
    out = lighter_images(page)
    m = re.search(r"data:image/webp;base64,([A-Za-z0-9+/=]+)", out)
    assert m and "data:image/png" not in out and out.endswith("<p>text</p>")
    webp = base64.b64decode(m.group(1))
    assert len(webp) < len(raw)
    got = np.asarray(Image.open(io.BytesIO(webp)).convert("RGB"))
    src = Image.open(io.BytesIO(raw)).convert("RGBA")
    on_white = Image.new("RGB", src.size, "white")
    on_white.paste(src, mask=src.getchannel("A"))
    assert np.array_equal(got, np.asarray(on_white))  # ≤ 256 colours on white: every pixel kept
    # more than 256 colours (a smooth ramp, as antialiased edges are): each pixel within a few levels
    ramp = np.tile(np.linspace(0, 255, 600).astype(np.uint8)[None, :, None], (50, 1, 3))
    ramp[:, :, 1] = ramp[:, ::-1, 0]
    buf = io.BytesIO()
    Image.fromarray(ramp, "RGB").save(buf, "PNG")
    out2 = lighter_images(f"<img src='data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}'/>")
    got2 = np.asarray(Image.open(io.BytesIO(base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", out2).group(1)))))
    diff = np.abs(got2.astype(int) - ramp.astype(int))
    assert len(np.unique(got2.reshape(-1, 3), axis=0)) <= 256 and diff.max() <= 8 and diff.mean() < 2
    # a figure wider than the page is resampled to the page's width, its aspect kept
    wide = lighter_images(f"<img src='data:image/png;base64,{base64.b64encode(_png(2216, 900, 2)).decode()}'/>")
    im = Image.open(io.BytesIO(base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)", wide).group(1))))
    assert im.format == "WEBP" and im.size == (1360, 552)


def test_a_cell_with_many_figures_keeps_one_in_view_and_folds_the_rest():
    from analysis.report_html import fold_figure_runs

    def cell(n_figs: int) -> str:
        areas = "".join(f"<div class=\"output_area\"><div class=\"output_png\"><img src=\"data:x{i}\"/></div></div>"
                        for i in range(n_figs))
        return f"<div class=\"cell code_cell\"><div class=\"output\">{areas}</div></div>"
    body = cell(3) + cell(30)
    out = fold_figure_runs(body)
    assert out.count("<img") == 33                                           # every figure stays in the page
    assert out.count("<details") == 1 and "29 more figures of this cell (30 in all)" in out
    folded = out[out.index("<details"):out.index("</details>")]
    assert folded.count("<img") == 29 and 'data:x0"' not in folded and 'data:x1"' in folded
    assert fold_figure_runs(cell(3)) == cell(3)                                # three or fewer: untouched


def test_findings_table_one_row_per_testable_claim_one_column_per_campaign():
    import re

    import pandas as pd

    from analysis.report import findings_table
    rows = []
    for camp, rel, ours, verdict in (("qos-a", "pacific", -4.8, "undecided"), ("qos-b", "reef", 21.5, "reproduced")):
        rows += [dict(campaign=camp, ceph_release=rel, study="part1", claim_id="part1-fig01-2", sentence="比基线低近 25%",
                      published=-25.0, unit="%", direction=-1.0, ours=ours, ci_low=-20.5, ci_high=13.9, p=0.3,
                      repeats_needed=3.0, verdict=verdict, diagnosis=None, model_dependent=camp == "qos-b"),
                 dict(campaign=camp, ceph_release=rel, study="part2", claim_id="part2-chart01-1", sentence="s2",
                      published=-27.0, unit="%", direction=-1.0, ours=ours / 2, ci_low=None, ci_high=None, p=None,
                      repeats_needed=None, verdict="undecided", diagnosis=None),
                 dict(campaign=camp, ceph_release=rel, study="part1", claim_id="part1-table-1", sentence="23323 IOPS",
                      published=23323.7, unit="IOPS", direction=None, ours=912.0, ci_low=None, ci_high=None, p=None,
                      repeats_needed=None, verdict="not measurable here", diagnosis="absolute value on another machine")]
    html_ = findings_table(pd.DataFrame(rows), {"30-qos-snaptrim-recovery"})
    body = re.findall(r"<tr title='([^']*)'>(.*?)</tr>", html_)
    assert [t for t, _ in body] == ["比基线低近 25%", "s2"]                 # absolute values are not findings
    assert re.findall(r"<th>([^<]*)</th>", html_) == ["study", "claim", "published", "qos-a (pacific)", "qos-b (reef)"]
    first = body[0][1]
    assert "<a href='#30-qos-snaptrim-recovery'>part1-fig01-2</a>" in first and "-25 %" in first
    # R (repeats needed) beside an undecided claim only; † marks a model-dependent verdict
    assert "~</b> -4.8 [-20.5, +13.9] · R 3</td>" in first and "✓</b> +21.5 [-20.5, +13.9] †</td>" in first
    assert "<a " not in body[1][1] and "~</b> -2.4</td>" in body[1][1]      # no section 31 in this page: no link
    assert findings_table(pd.DataFrame(rows[2:3])) == ""
    # with the figure anchored in the page, the claim links to it (ours first, else the published one)
    linked = findings_table(pd.DataFrame(rows), {"30-qos-snaptrim-recovery"},
                            {"qos-part1-fig01-published", "qos-part1-fig01-measured", "qos-part2-chart01-published"})
    assert "<a href='#fig-qos-part1-fig01-measured'>part1-fig01-2</a>" in linked
    assert "<a href='#fig-qos-part2-chart01-published'>part2-chart01-1</a>" in linked


def test_a_notebook_run_per_study_takes_its_title_from_its_computed_heading():
    """Sections 30 and 31 are one notebook run twice: each takes the title the notebook printed for its
    study, not the notebook's generic first heading."""
    from analysis import qos_study as qs
    from analysis.report import _title
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 30 · The Quincy QoS studies"),
                                         nbformat.v4.new_code_cell("display(Markdown(...))")])
    assert _title(nb) == "30 · The Quincy QoS studies"
    for key, title in (("part1", "30 · mClock vs WPQ with snaptrim and recovery (study part 1)"),
                       ("part2", "31 · mClock vs WPQ with deep scrub (study part 2)")):
        nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
            "text/markdown": qs.heading(qs.study(key), "qos-2026"), "text/plain": "<Markdown>"})]
        assert _title(nb) == title
    with pytest.raises(ValueError, match="study 'part3': expected one of part1, part2"):
        qs.study("part3")


def test_the_data_set_in_three_lines_from_the_files_table(tmp_path):
    import pandas as pd

    from analysis import store as tables
    from analysis.report import dataset_section
    proc = tmp_path / "p"
    proc.mkdir()
    empty = dataset_section(proc)
    assert "no processed tables" in empty and "python -m analysis ingest DATA --out" in empty   # says what to run
    pd.DataFrame({"path": ["a/run.json", "a/fio.json", "b/fio.json", "c/x.log"],
                  "status": ["context", "ok", "ok", "failed"],
                  "campaign": ["qos-x", "qos-x", "block-y", None], "run": ["r1", "r1", "r2", None],
                  "ceph_version": ["16.2.15", "16.2.15", None, None], "nproc": [2.0, 2.0, 2.0, None],
                  "kernel": ["6.18.44", "6.18.44", "6.18.44", None]}).to_parquet(proc / "files.parquet")
    tables.commit(proc, ["files"])
    text = dataset_section(proc)
    lines = text[text.index("<p>") + 3:text.index("</p>")].split("<br>")
    assert lines[0] == f"4 files in the ingest of <code>{proc}</code>: 2 ok, 1 context, 1 failed."
    assert lines[1] == "Campaigns: <code>block-y</code> 1 run; <code>qos-x</code> 1 run (Ceph 16.2.15)."
    assert lines[2] == "Machine, where the runs recorded it: CPUs 2; kernel 6.18.44."


def test_figure_outputs_named_by_show_get_an_anchor_the_findings_can_link_to(tmp_path, monkeypatch):
    import base64

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    from analysis.figures import show
    from analysis.report_html import anchor_figures
    fig, ax = plt.subplots(figsize=(2, 1))
    fig.set_label("qos-part1-fig01-measured")
    shell = InteractiveShell.instance()
    seen = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **k: seen.append((data, metadata or {})))
    show(tmp_path, fig)
    (data, meta), = seen
    assert meta.get("figure_id") == "qos-part1-fig01-measured" and "image/png" in data
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": data["image/png"] if isinstance(data["image/png"], str)
                                                     else base64.b64encode(data["image/png"]).decode(),
                                                     "text/plain": "<Image>"}, metadata=meta)])])
    assert anchor_figures(nb) == {"qos-part1-fig01-measured"}
    html_ = nb.cells[0].outputs[0]["data"]["text/html"]
    assert html_.startswith("<a id='fig-qos-part1-fig01-measured' class='fig-anchor'></a><img src='data:image/png;base64,")
    assert "image/png" not in nb.cells[0].outputs[0]["data"]


def test_run_notebook_starts_a_kernel_again_when_it_lost_a_port_race(tmp_path, monkeypatch, capsys):
    """make -j2 starts two kernels at once; one can die before kernel_info (ZMQ: address already in use).
    run-notebook starts it once more; any other failure, or a second death, is exit 1."""
    import os
    import shutil

    import pandas as pd
    from papermill.cli import papermill as papermill_cli

    from analysis.__main__ import main
    proc = tmp_path / "p"
    proc.mkdir()
    pd.DataFrame({"campaign": ["qos-2026"]}).to_parquet(proc / "summary.parquet")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · x")])
    path = tmp_path / "99-x.ipynb"
    nbformat.write(nb, path)
    calls = []

    def flaky(errors):
        def run(args, standalone_mode):
            calls.append(args)
            if errors:
                raise errors.pop(0)
            shutil.copy(args[0], args[1])  # papermill writes its output notebook
        return run
    args = ["run-notebook", "--data", "d", "--processed", str(proc), str(path), str(tmp_path / "o.ipynb")]
    monkeypatch.setattr(papermill_cli, "main", flaky([RuntimeError("Kernel died before replying to kernel_info")]))
    assert main(args) == 0 and len(calls) == 2
    assert "starting it once more" in capsys.readouterr().err
    rec = nbformat.read(tmp_path / "o.ipynb", as_version=4).metadata["cephqos"]  # the data set it ran on
    assert rec == {"data": os.path.abspath("d"), "processed": str(proc), "tables_sha256": "(missing)",
                   "tables_written": None}
    calls.clear()
    monkeypatch.setattr(papermill_cli, "main", flaky([RuntimeError("Kernel died before replying to kernel_info")] * 2))
    assert main(args) == 1 and len(calls) == 2
    calls.clear()
    monkeypatch.setattr(papermill_cli, "main", flaky([ValueError("a cell failed")]))
    assert main(args) == 1 and len(calls) == 1 and "ValueError: a cell failed" in capsys.readouterr().err


def test_tables_come_out_as_html_tables_in_a_scroll_box_never_as_text(tmp_path):
    """A notebook executed for real (a kernel) that shows a short and a long DataFrame and a Series with
    analysis.tables_html.show_table, and prints a line of prose: in the report each table is a <table> in a
    ``report-table`` box (the style sheet lets it scroll, as wide as the page at most), the long one is folded
    behind <details> with its row count and columns, no table's text is in a <pre>, the prose still is."""
    import pandas as pd
    from bs4 import BeautifulSoup
    from nbclient import NotebookClient

    from analysis.report import REPORT_CSS
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 50 · Tables"),
        nbformat.v4.new_code_cell(
            "import pandas as pd\nfrom analysis.tables_html import show_table\n"
            "short = pd.DataFrame({'arm': ['wpq', 'mclock'], 'lat_p99_ms': [12.25, 9.5]})\n"
            "long_ = pd.DataFrame({'path': [f'run-{i:03d}/fio.json' for i in range(45)], 'iops_mean': range(45)})\n"
            "print('prose line before the tables')\n"
            "show_table(short, index=False)\nshow_table(long_, index=False)\n"
            "show_table(long_.set_index('path')['iops_mean'].head(3))")])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outs = nb.cells[1].outputs
    assert [o.output_type for o in outs] == ["stream", "display_data", "display_data", "display_data"]
    short = pd.DataFrame({"arm": ["wpq", "mclock"], "lat_p99_ms": [12.25, 9.5]})
    assert outs[1].data["text/plain"] == short.to_string(index=False)       # terminals and nbval: the old text
    reports = tmp_path / "reports"
    reports.mkdir()
    nbformat.write(nb, reports / "50-tables.ipynb")
    page = build_report(reports, tmp_path).read_text()
    soup = BeautifulSoup(page, "html.parser")
    tables = [t for t in soup.find("section", id="50-tables").find_all("table") if "meta" not in t.get("class", [])]
    assert len(tables) == 3
    assert all("report-table" in t.parent.get("class", []) for t in tables)     # each in its own box
    assert [len(t.select("tbody tr")) for t in tables] == [2, 45, 3]
    assert tables[0].find("td").get_text() == "wpq" and tables[0].find_parent("details") is None
    fold = tables[1].find_parent("details")
    assert fold is not None and "long-output" in fold["class"]
    assert fold.summary.get_text() == "45 rows: path · iops_mean"
    assert tables[2].find_parent("details") is None
    pres = [p.get_text() for p in soup.find("section", id="50-tables").find_all("pre")]
    assert pres == ["prose line before the tables\n"]                             # no DataFrame as text
    assert not any(w in p for p in pres for w in ("lat_p99_ms", "run-007", "iops_mean"))
    assert ".report-table{overflow:auto;max-width:100%" in REPORT_CSS



def test_no_notebook_prints_a_table_as_text():
    """The notebooks show tables with show_table (HTML in the report), never ``print(df.to_string())``."""
    bad = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        bad += [f"{path.name} cell {i}" for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and ".to_string(" in c.source]
    assert bad == []

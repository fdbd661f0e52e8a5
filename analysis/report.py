"""``reports/report.html``: every executed notebook of ``make report`` in one self-contained page.

Each notebook becomes a section (code hidden, images embedded by nbconvert) headed by the parameters
papermill ran it with and the data it read (the SHA-256 of ``data/raw/MANIFEST.sha256``, which hashes
every raw file), followed by an index of the figures it wrote to ``figures/``: each figure's stable id,
the function that drew it (:data:`FIGURE_SOURCES`) and links to its PNG and SVG copies.  Interactive
plotly outputs become live figures, with plotly.js embedded once in the page (offline).  A table of
contents links the sections.  The page is written to a temp file and renamed into place.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from pathlib import Path

#: figure-id prefix → (function that draws it, notebook that calls it); first match wins
FIGURE_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("consistency-round-distributions", "analysis.figures.consistency.round_distributions", "10-consistency"),
    ("consistency-diff-ratio-heatmap", "analysis.figures.consistency.diff_ratio_heatmap", "10-consistency"),
    ("consistency-order-drift", "analysis.figures.consistency.order_drift", "10-consistency"),
    ("consistency-repeats-needed", "analysis.figures.consistency.repeats_needed_curve", "10-consistency"),
    ("iosched-scatter", "analysis.figures.iosched.scatters", "20-io-schedulers"),
    ("iosched-summary", "analysis.figures.iosched.summary_table", "20-io-schedulers"),
    ("qos-part1", "analysis.figures.qos_studies.draw", "30-qos-snaptrim-recovery"),
    ("qos-part2", "analysis.figures.qos_studies.draw", "31-qos-scrub"),
    ("qos-client-iops-by-arm", "analysis.figures.qos.by_arm", "32-qos-campaign"),
    ("qos-client-clat-by-arm", "analysis.figures.qos.by_arm", "32-qos-campaign"),
    ("qos-background-durations-by-arm", "analysis.figures.qos.background_durations", "32-qos-campaign"),
    ("workload-io-pattern", "analysis.figures.workload.io_pattern", "40-block-workload"),
    ("workload-throughput-iops", "analysis.figures.workload.throughput_iops", "40-block-workload"),
    ("workload-sequentiality", "analysis.figures.workload.sequentiality", "40-block-workload"),
    ("workload-write-stack-distance", "analysis.figures.workload.stack_distance", "40-block-workload"),
    ("workload-idle-time", "analysis.figures.workload.idle_time", "40-block-workload"),
    ("workload-bottleneck", "analysis.figures.workload.bottleneck", "40-block-workload"),
    ("workload-busy-vs-diskstats", "analysis.figures.workload.busy_check", "40-block-workload"),
)


def figure_source(fig_id: str) -> tuple[str, str]:
    """(function, notebook) that made a figure id; ("unknown", "") when no prefix matches."""
    for prefix, fn, nb in FIGURE_SOURCES:
        if fig_id.startswith(prefix):
            return fn, nb
    return "unknown", ""


def _title(nb) -> str:
    for c in nb.cells:
        if c.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", c.source, flags=re.M)
            if m:
                return m.group(1).strip()
    return "untitled"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "(no manifest)"


def _table(rows: list[tuple[str, str]], head: tuple[str, str]) -> str:
    body = "".join(f"<tr><td><code>{html.escape(a)}</code></td><td>{b}</td></tr>" for a, b in rows)
    return f"<table class='meta'><tr><th>{head[0]}</th><th>{head[1]}</th></tr>{body}</table>"


PLOTLY = "application/vnd.plotly.v1+json"


def _plotly_to_html(nb, prefix: str) -> int:
    """Replace each plotly output of ``nb`` by a div and a ``Plotly.newPlot`` call (plotly.js itself is
    embedded once in the page head); returns how many were replaced."""
    n = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if PLOTLY in data:
                fig = data.pop(PLOTLY)
                div = f"{prefix}-plotly-{n}"
                spec = json.dumps({"data": fig.get("data", []), "layout": fig.get("layout", {})})
                data["text/html"] = (f"<div id='{div}' class='report-plotly'></div><script>(function(){{"
                                     f"var f={spec};Plotly.newPlot('{div}',f.data,f.layout,{{responsive:true}});}})();"
                                     f"</script>")
                n += 1
    return n


def build_report(reports_dir: str | Path = "reports", figures_dir: str | Path = "figures",
                 out: str | Path | None = None) -> Path:
    """Assemble ``<reports_dir>/report.html`` from ``<reports_dir>/NN-*.ipynb`` (the papermill outputs).

    Raises FileNotFoundError when no executed notebook is there (run ``make report``)."""
    import nbformat
    from nbconvert import HTMLExporter

    reports, figures = Path(reports_dir), Path(figures_dir)
    books = sorted(reports.glob("[0-9][0-9]-*.ipynb"))
    if not books:
        raise FileNotFoundError(f"{reports}: no executed notebooks (NN-*.ipynb); run `make report` first")
    out = Path(out) if out else reports / "report.html"
    full = HTMLExporter(template_name="lab", exclude_input=True)
    body_only = HTMLExporter(template_name="basic", exclude_input=True)
    figs = sorted(p.stem for p in figures.glob("*.png"))
    rel_fig = os.path.relpath(figures, out.parent)
    head = ""
    toc, sections = [], []
    n_plotly = 0
    for path in books:
        nb = nbformat.read(path, as_version=4)
        if not head:
            page, _ = full.from_notebook_node(nb)
            head = re.search(r"<head>.*?</head>", page, flags=re.S).group(0)
        name = path.stem
        title = _title(nb)
        pm = nb.metadata.get("papermill", {})
        params = {**pm.get("default_parameters", {}), **pm.get("parameters", {})}
        data_dir = Path(str(params.get("data_dir", "data/raw")))
        manifest = data_dir / "MANIFEST.sha256"
        n_files = sum(1 for _ in manifest.open()) if manifest.is_file() else 0
        meta = [(k, html.escape(json.dumps(v))) for k, v in sorted(params.items())]
        meta += [("data read", f"{html.escape(str(data_dir))}: MANIFEST.sha256 {_sha256(manifest)[:16]}… "
                  f"({n_files} files)"),
                 ("ran", f"{html.escape(str(pm.get('start_time', '')))}, {pm.get('duration', 0):.1f} s")]
        own = [f for f in figs if figure_source(f)[1] == name]
        frows = [(f, f"<code>{figure_source(f)[0]}</code> · <a href='{rel_fig}/{f}.png'>PNG</a> · "
                     f"<a href='{rel_fig}/{f}.svg'>SVG</a>") for f in own]
        n_plotly += _plotly_to_html(nb, name)
        body, _ = body_only.from_notebook_node(nb)
        toc.append(f"<li><a href='#{name}'>{html.escape(title)}</a> ({len(own)} figures)</li>")
        details = (f"<details><summary>parameters and data</summary>{_table(meta, ('parameter', 'value'))}</details>"
                   + (f"<details><summary>figures written by this notebook ({len(own)})</summary>"
                      f"{_table(frows, ('figure id', 'drawn by'))}</details>" if own else ""))
        # under the notebook's own title (its first heading), else at the top of the section
        body = re.sub(r"(</h1>)", lambda m: m.group(1) + details, body, count=1) if "</h1>" in body else details + body
        sections.append(f"<section id='{name}'>{body}</section>")
    style = ("<style>section{border-top:3px solid #888;margin-top:2em}table.meta{font-size:85%;"
             "border-collapse:collapse}table.meta td,table.meta th{border:1px solid #ccc;padding:2px 6px}"
             "nav{background:#f6f6f6;padding:.5em 1em}</style>")
    if n_plotly:  # plotly.js once, inline: the page works offline
        from plotly.offline import get_plotlyjs
        style += f"<script type='text/javascript'>{get_plotlyjs()}</script>"
    page = (f"<!DOCTYPE html><html>{head.replace('</head>', style + '</head>')}<body class='jp-Notebook'>"
            f"<nav><h1>cephqos-lab report</h1><ol>{''.join(toc)}</ol></nav>{''.join(sections)}</body></html>")
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out


def required_campaigns(notebook: str | Path) -> list[str]:
    """The campaigns a notebook reads, from its parameters cell: every ``campaign``, ``campaigns`` and
    ``*_campaign`` default (string or list of strings)."""
    import ast

    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    out: list[str] = []
    for node in ast.parse(cell.source).body if cell else []:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("campaign", "campaigns") or name.endswith("_campaign"):
                v = ast.literal_eval(node.value)
                out += [v] if isinstance(v, str) else list(v)
    return list(dict.fromkeys(out))


def missing_campaigns(notebook: str | Path, processed: str | Path) -> list[str]:
    """Campaigns the notebook needs that ``processed/summary.parquet`` has no row of."""
    import pandas as pd

    need = required_campaigns(notebook)
    if not need:
        return []
    p = Path(processed) / "summary.parquet"
    have = set(pd.read_parquet(p, columns=["campaign"])["campaign"].dropna().astype(str)) if p.is_file() else set()
    return [c for c in need if c not in have]


def write_stub(notebook: str | Path, missing: list[str], data_dir: str, out: str | Path) -> Path:
    """An executed-notebook stand-in for a section whose data is absent: the notebook's title and a
    sentence saying which campaigns ``data_dir`` lacks (``make report DATA=...`` renders it instead of
    failing)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    title = _title(nb)
    stub = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"# {title}\n\n**Nothing to show for this section:** `{data_dir}` has no runs of "
        + ", ".join(f"`{c}`" for c in missing)
        + f", which this notebook reads (its parameters cell names them). Run it on data that has them, or"
          f" pass other campaign names with papermill `-p`.")])
    stub.metadata["papermill"] = {"parameters": {"data_dir": data_dir}, "default_parameters": {},
                                  "duration": 0.0, "start_time": "", "stub": True}
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    nbformat.write(stub, tmp)
    os.replace(tmp, out)
    return out

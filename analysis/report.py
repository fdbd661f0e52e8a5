"""``reports/report.html``: every executed notebook of ``make report`` in one self-contained page.

Each notebook becomes a section (code hidden, images embedded by nbconvert) headed by the parameters
papermill ran it with and the data it read (per campaign it names: the number of raw files and a digest
over their SHA-256s, :func:`campaign_stamp`; the published tables it cites; for a notebook naming no
campaign, the SHA-256 of ``MANIFEST.sha256``, which hashes every raw file), followed by an index of the figures it wrote to ``figures/``: each figure's stable id,
the function that drew it (:data:`FIGURE_SOURCES`) and links to its PNG and SVG copies.  Interactive
plotly outputs become live figures, with plotly.js embedded once in the page, gzip-packed
(:func:`plotly_loader`; nothing is loaded from the network).  Long text outputs and runs of many figures
fold behind ``<details>`` (:func:`collapse_long_text`, :func:`collapse_long_tables`,
:func:`fold_figure_runs`); tables shown with :func:`analysis.tables_html.show_table` are HTML tables that
scroll inside their own box; inline PNGs become
lossless WebP (:func:`lighter_images`); the page has its own small style sheet (:data:`REPORT_CSS`).  A table of
contents links the sections.  When ``reports/claims.csv`` exists (``python -m analysis claims``), a section
of the studies' claims with their verdicts comes first (:func:`claims_section`).  The page is written to a
temp file and renamed into place.  Its header names the data set the notebooks ran on (each records it in
its ``cephqos`` metadata, :func:`dataset_record`); notebooks of different data sets are refused
(:func:`one_dataset`), so a stale section of another ``DATA`` or ``PROC`` never ends up in the page.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
from pathlib import Path

from .report_html import plotly_loader, lighter_images

#: figure-id prefix → (function that draws it, notebook that calls it); first match wins
FIGURE_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("compare-forest", "analysis.figures.compare.forest", "15-compare"),
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
    ("qos-regime-cpu-queue", "analysis.figures.qos.regime", "32-qos-campaign"),
    ("qos-op-rate-by-arm", "analysis.figures.qos.op_rate", "33-qos-v2"),
    ("qos-client-drop-by-arm", "analysis.figures.qos.client_drop", "33-qos-v2"),
    ("versions-release-ratio", "analysis.figures.versions.release_forest", "35-versions"),
    ("versions-arm-effects", "analysis.figures.versions.arm_effects", "35-versions"),
    ("workload-io-pattern", "analysis.figures.workload.io_pattern", "40-block-workload"),
    ("workload-throughput-iops", "analysis.figures.workload.throughput_iops", "40-block-workload"),
    ("workload-sequentiality", "analysis.figures.workload.sequentiality", "40-block-workload"),
    ("workload-write-stack-distance", "analysis.figures.workload.stack_distance", "40-block-workload"),
    ("workload-idle-time", "analysis.figures.workload.idle_time", "40-block-workload"),
    ("workload-bottleneck", "analysis.figures.workload.bottleneck", "40-block-workload"),
    ("workload-busy-vs-diskstats", "analysis.figures.workload.busy_check", "40-block-workload"),
    ("rgw-put-by-arm", "analysis.figures.rgw.put_by_arm", "50-rgw"),
    ("rgw-share-of-rados", "analysis.figures.rgw.share_of_rados", "50-rgw"),
    ("history-series", "analysis.figures.history.series_panels", "60-history"),
)


def figure_source(fig_id: str) -> tuple[str, str]:
    """(function, notebook) that made a figure id; ("unknown", "") when no prefix matches."""
    for prefix, fn, nb in FIGURE_SOURCES:
        if fig_id.startswith(prefix):
            return fn, nb
    return "unknown", ""


def _title(nb) -> str:
    """The section's title: the first level-1 heading a cell printed as Markdown (a notebook run per study
    computes its own), else the first in a Markdown cell."""
    for c in nb.cells:
        for o in c.get("outputs", []):
            m = re.search(r"^#\s+(.+)$", o.get("data", {}).get("text/markdown", ""), flags=re.M)
            if m:
                return m.group(1).strip()
    for c in nb.cells:
        if c.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", c.source, flags=re.M)
            if m:
                return m.group(1).strip()
    return "untitled"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "(missing)"


def _table(rows: list[tuple[str, str]], head: tuple[str, str]) -> str:
    body = "".join(f"<tr><td><code>{html.escape(a)}</code></td><td>{b}</td></tr>" for a, b in rows)
    return f"<table class='meta'><tr><th>{head[0]}</th><th>{head[1]}</th></tr>{body}</table>"


def _files_table(path: Path):
    return _files_table_at(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _files_table_at(path: Path, mtime_ns: int):  # one read per report, re-read when the file changes
    import pandas as pd
    return pd.read_parquet(path, columns=["path", "sha256", "campaign"])


#: in ``<processed>/campaigns``: the campaigns whose stamps :func:`notebook_deps` last compared with
#: ``files.parquet``, one per line; its mtime says when
CHECKED = ".checked"


def _stamp_text(proc: Path, campaign: str) -> str:
    """:func:`campaign_stamp` of one campaign: the stamp file :func:`notebook_deps` wrote when it is known to
    be current (its check is newer than ``files.parquet``), else computed from ``files.parquet``."""
    stamps, files = proc / "campaigns", proc / "files.parquet"
    try:
        checked = stamps / CHECKED
        if (checked.stat().st_mtime_ns >= files.stat().st_mtime_ns
                and campaign in checked.read_text(encoding="utf-8").splitlines()):
            return (stamps / f"{campaign}.sha256").read_text(encoding="utf-8")
    except OSError:
        pass
    return campaign_stamp(_files_table(files), campaign)


def _data_read(params: dict, nb, published: Path) -> str:
    """What a notebook read: its campaigns (files, digest of their SHA-256s) from ``processed_dir`` and
    the published CSVs it cites, else the raw manifest's SHA-256."""
    data_dir = Path(str(params.get("data_dir", "data/raw")))
    proc = Path(str(params.get("processed_dir", data_dir.parent / "processed")))
    need = campaigns_of(params)
    parts = []
    if need and (proc / "files.parquet").is_file():
        for c in need:
            stamp = _stamp_text(proc, c)
            n = 0 if stamp == "absent\n" else stamp.count("\n")
            parts.append(f"campaign <code>{html.escape(c)}</code>: {n} files, digest "
                         f"{_digest(stamp)[:16]}…" if n else
                         f"campaign <code>{html.escape(c)}</code>: absent")
    else:
        manifest = data_dir / "MANIFEST.sha256"
        n_files = sum(1 for _ in manifest.open()) if manifest.is_file() else 0
        parts.append(f"{html.escape(str(data_dir))}: MANIFEST.sha256 {_sha256(manifest)[:16]}… ({n_files} files)")
    for f in cited_published(nb):
        parts.append(f"<code>data/published/{html.escape(f)}</code> {_sha256(published / f)[:16]}…")
    return "<br>".join(parts)


CLAIMS_CSV = "claims.csv"


#: study of ``claims.csv`` → the notebook section that reproduces it (from :data:`FIGURE_SOURCES`)
STUDY_SECTIONS = {"part1": "30-qos-snaptrim-recovery", "part2": "31-qos-scrub"}
_VERDICT_MARK = {"reproduced": ("✓", "#1a7f37"), "same direction, smaller": ("↘", "#4d7c0f"),
                 "same direction, larger": ("↗", "#4d7c0f"), "contradicted": ("✗", "#c62828"),
                 "undecided": ("~", "#8a6d00"), "not measurable here": ("–", "#777")}


def findings_table(table, sections: set[str] | frozenset = frozenset(),
                   figures: set[str] | frozenset = frozenset()) -> str:
    """One row per testable claim (a published direction: relative and share statements), one column per
    campaign: ours with its 95 % CI, the verdict, and the repeats that would decide it (``R``); the claim
    links to its figure in the notebook cell that drew it (``figures``: anchored ids; ours, else the
    published one), else to the section of its study where that section is in the page; its sentence is
    the row's tooltip.  Computed from ``claims.csv`` (never typed): the report's first screen of findings."""
    import pandas as pd

    from .findings import claim_label
    t = table[pd.to_numeric(table["direction"], errors="coerce").notna()]
    if t.empty:
        return ""
    camps = list(dict.fromkeys(t["campaign"]))
    rel = t.groupby("campaign")["ceph_release"].first().to_dict() if "ceph_release" in t else {}

    def fmt(x) -> str:
        return "" if pd.isna(x) else f"{x:+.3g}" if abs(x) < 1e4 else f"{x:+.3e}"

    def cell(r) -> str:
        if r is None:
            return "<td></td>"
        mark, color = _VERDICT_MARK.get(r["verdict"], ("?", "#000"))
        ci = f" [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]" if pd.notna(r.get("ci_low")) else ""
        need = f" · R {int(r['repeats_needed'])}" if pd.notna(r.get("repeats_needed")) and \
            r["verdict"] == "undecided" else ""
        dep = " †" if str(r.get("model_dependent", "")).lower() == "true" else ""
        return (f"<td title='{html.escape(str(r['verdict']))}{': ' + html.escape(str(r['diagnosis'])) if pd.notna(r.get('diagnosis')) and r.get('diagnosis') else ''}'>"
                f"<b style='color:{color}'>{mark}</b> {fmt(r['ours'])}{ci}{need}{dep}</td>")
    by = {(r["campaign"], r["claim_id"]): r for _, r in t.iterrows()}  # one row per claim and campaign: small
    rows = []
    for (study, cid), g in t.groupby(["study", "claim_id"], sort=False):
        r0 = g.iloc[0]
        sec = STUDY_SECTIONS.get(study)
        fig = f"qos-{cid.rsplit('-', 1)[0]}"  # claim ids are <study>-<figure slug>-<rank>
        target = next((f"fig-{fig}-{src}" for src in ("measured", "published") if f"{fig}-{src}" in figures),
                      sec if sec in sections else None)
        label = html.escape(claim_label(r0["cells"])) if pd.notna(r0.get("cells")) else ""
        ident = f"<a href='#{target}'>{html.escape(cid)}</a>" if target else html.escape(cid)
        name = f"{label} <small class='claim-id'>{ident}</small>" if label else ident
        pub = f"{r0['published']:+.4g} {html.escape(str(r0['unit']))}" if pd.notna(r0["published"]) else ""
        rows.append(f"<tr title='{html.escape(str(r0['sentence']))}'><td>{html.escape(str(study))}</td>"
                    f"<td style='text-align:left'>{name}</td><td>{pub}</td>"
                    + "".join(cell(by.get((c, cid))) for c in camps) + "</tr>")
    head = "".join(f"<th>{html.escape(c)}{' (' + html.escape(str(rel[c])) + ')' if rel.get(c) else ''}</th>" for c in camps)
    key = " ".join(f"<b style='color:{c}'>{m}</b> {v}" for v, (m, c) in _VERDICT_MARK.items())
    return (f"<h2 id='findings'>Findings: each testable claim on each campaign</h2>"
            f"<p>Ours is the same quantity as the published one (a relative change in %, or a share), with its "
            f"95 % CI under the pre-registered model (docs/analysis-plan.md); {key}; R = repeats at which the "
            f"model would have power 0.8 for the published effect; † = model-dependent (the simple paired test "
            f"gives another verdict). "
            f"Each claim is named by what it compares (from its cells), then its id; the seed's sentence is "
            f"its row's tooltip; the id links to its figure (ours, else the published "
            f"one) in the notebook cell that drew it, else to the study's section.</p>"
            f"<table class='meta findings'><tr><th>study</th><th>claim</th><th>published</th>{head}</tr>"
            f"{''.join(rows)}</table>")


def claims_section(path: Path, sections: set[str] | frozenset = frozenset(),
                   figures: set[str] | frozenset = frozenset()) -> str:
    """The ``claims`` section from ``reports/claims.csv`` (``python -m analysis claims``): the rows per verdict
    per campaign, the findings per claim (:func:`findings_table`), then the whole table; empty when the
    file is absent.  ``sections``: the ids of the page's sections (claims link to them)."""
    if not path.is_file():
        return ""
    import pandas as pd
    from .stats.claims import decided_by_repeats, verdict_counts
    table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    counts = verdict_counts(table).reset_index()
    paired = verdict_counts(table, "verdict_paired").reset_index() if "verdict_paired" in table else None
    ahead = decided_by_repeats(table).reset_index()
    if "ceph_release" in table:  # which Ceph release each campaign ran, beside its counts
        rel = table.groupby("campaign")["ceph_release"].first().fillna("")
        for t in (counts, ahead, paired):
            if t is not None:
                t.insert(1, "ceph_release", t["campaign"].map(rel))

    def num(fmt):
        return lambda x: "" if pd.isna(x) else format(x, fmt)

    fmt = {**{c: num(".4g") for c in ("published", "ours", "ci_low", "ci_high", "ours_paired", "ci_low_paired",
                                       "ci_high_paired")},
           **{c: num(".3g") for c in ("p", "q", "p_paired", "q_paired", "power_at_published")},
           **{c: num(".0f") for c in ("direction", "repeats_needed", "repeats_needed_paired")}}
    paired_html = "" if paired is None else (
        f"<p>The same under the sensitivity analysis, the simple paired test of the two cells alone "
        f"(<code>verdict_paired</code>, its own BH q):</p>{paired.to_html(index=False, classes='meta', border=0)}")
    return (f"<section id='claims'><h1>The studies' claims on our campaigns</h1>"
            f"<p>Every claim of the two mClock-vs-WPQ studies with a verdict (<code>analysis.stats.claims</code>, "
            f"<code>{html.escape(str(path.name))}</code>; the rules in docs/verdicts.md, the model in "
            f"docs/analysis-plan.md). Each claim is tested under the pre-registered model (log value ~ cell + "
            f"repeat + first-in-block, the variance pooled across arms); verdicts use the Benjamini–Hochberg q "
            f"over each campaign's distinct tests: <em>reproduced</em> (q &lt; α, the published direction, the "
            f"published value inside our 95 % CI), <em>same direction, smaller / larger</em> (the published value "
            f"outside our CI), <em>contradicted</em> (q &lt; α in the opposite direction, or q ≥ α with our CI "
            f"short of the published value), <em>undecided</em> (q ≥ α, the published value inside the CI), "
            f"<em>not measurable here</em> (with the cause; never counted as decided). Claims that test the same "
            f"data count once (<code>test_id</code>). Distinct tests per verdict:</p>"
            f"{counts.to_html(index=False, classes='meta', border=0)}{paired_html}"
            f"<p>Distinct tests decided at R repeats if each test's residual spread stays as measured "
            f"(<code>decided_by_repeats</code>: an undecided test reaches power 0.8 for the published effect "
            f"once R reaches its <code>repeats_needed</code>; a projection from few repeats, not a measurement):</p>"
            f"{ahead.to_html(index=False, classes='meta', border=0)}"
            f"{findings_table(table, sections, figures)}"
            f"<details><summary>the table ({len(table)} claims)</summary>"
            f"{table.to_html(index=False, classes='meta', border=0, na_rep='', formatters=fmt)}</details></section>")


def what_we_found(reports: Path, sections: set[str], processed: str | Path | None,
                  figures: set[str] | frozenset = frozenset()) -> str:
    """The first section (:mod:`analysis.findings`): the QoS protection per release (``findings.json``)
    and the published QoS claims per campaign (``claims.csv``), then from ``processed`` the block studies
    (IO schedulers, the traced OSD's workload), RGW and the history's changes; empty when there is
    nothing to say.  ``figures``: the anchored figure ids of the page (sentences link to them)."""
    from . import findings
    out = findings.qos_sentences(findings.load_rows(reports / findings.FINDINGS_JSON), sections)
    if (reports / CLAIMS_CSV).is_file():
        import pandas as pd
        out += findings.claims_sentence(pd.read_csv(reports / CLAIMS_CSV, keep_default_na=False, na_values=[""]),
                                        sections)
    if processed is not None:
        out += findings.iosched_sentences(findings.iosched_values(processed), sections, figures)
        out += findings.workload_sentences(*findings.workload_tables(processed), sections, figures)
        out += findings.rgw_sentences(*findings.rgw_tables(processed), sections, figures)
    if processed is not None and "60-history" in sections:
        out += findings.history_sentences(findings.history_changes(processed), sections)
    return findings.section(out)


def dataset_section(processed: str | Path) -> str:
    """The data set in three lines, from ``files.parquet`` of the processed tables (read through
    :mod:`analysis.store`): files read and their status; per campaign its runs and Ceph version;
    the machines as the runs recorded them (CPUs, kernel).  A missing or inconsistent table set says so."""
    from . import store
    try:
        files = store.read_table(processed, "files")  # one row per file: small
    except (FileNotFoundError, store.TableSetError) as e:
        return f"<section id='data-set'><h2>The data set</h2><p>{html.escape(str(e))}</p></section>"
    st = files["status"].value_counts()
    line1 = (f"{len(files):,} files in the ingest of <code>{html.escape(str(processed))}</code>: "
             + ", ".join(f"{int(n):,} {html.escape(str(k))}" for k, n in st.items()) + ".")
    per = []
    if "campaign" in files:
        runs = files.dropna(subset=["campaign"])
        for camp, g in runs.groupby("campaign", observed=True, sort=True):
            n = g["run"].nunique() if "run" in g else 0
            ver = sorted(set(g["ceph_version"].dropna().astype(str))) if "ceph_version" in g else []
            per.append(f"<code>{html.escape(str(camp))}</code> {n:,} run{'s' if n != 1 else ''}"
                       + (f" (Ceph {html.escape(', '.join(ver))})" if ver else ""))
    line2 = ("Campaigns: " + "; ".join(per) + ".") if per else "No campaign named in the data."
    mach = []
    for col, label in (("nproc", "CPUs"), ("kernel", "kernel")):
        if col in files:
            vals = sorted(set(files[col].dropna().astype(str).str.replace(r"\.0$", "", regex=True)))
            if vals:
                mach.append(f"{label} {html.escape(', '.join(vals))}")
    line3 = ("Machine, where the runs recorded it: " + "; ".join(mach) + ".") if mach else \
        "No run recorded its machine."
    return (f"<section id='data-set'><h2>The data set</h2><p>{line1}<br>{line2}<br>{line3}</p></section>")


#: the key of an executed notebook's metadata recording the data set it ran on (``python -m analysis
#: run-notebook``): ``data``, ``processed`` (absolute paths), ``tables_sha256`` (of ``<processed>/tables.json``
#: when it ran, ``"(missing)"`` without one) and ``tables_written`` (that file's ``written`` field)
DATASET_KEY = "cephqos"
#: what identifies a data set: two notebooks that differ in any of these come from different data
DATASET_FIELDS = ("data", "processed", "tables_sha256")


class MixedDataError(ValueError):
    """The executed notebooks of one report folder were run on different data sets (or on another data set
    than ``--processed`` holds): a report made of them would show the wrong data."""


def dataset_record(data: str | Path, processed: str | Path) -> dict:
    """The ``cephqos`` metadata of a notebook run on ``data`` ingested into ``processed`` (read now)."""
    tables = Path(processed) / "tables.json"
    written = None
    try:
        written = json.loads(tables.read_text(encoding="utf-8")).get("written")
    except (OSError, ValueError, AttributeError):
        pass
    return {"data": os.path.abspath(data), "processed": os.path.abspath(processed),
            "tables_sha256": _sha256(tables), "tables_written": written}


def record_dataset(notebook: str | Path, record: dict) -> Path:
    """Add ``record`` (:func:`dataset_record`) to an executed notebook's metadata under :data:`DATASET_KEY`;
    written to a temp file and renamed over it (never half-written)."""
    import nbformat

    path = Path(notebook)
    nb = nbformat.read(path, as_version=4)
    nb.metadata[DATASET_KEY] = dict(record)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        nbformat.write(nb, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _dataset_key(record: dict | None) -> tuple | None:
    return tuple(record.get(k) for k in DATASET_FIELDS) if record else None


def describe_dataset(record: dict | None) -> str:
    """One data set in words: ``<data> → <processed> (tables.json sha256 <12 hex>)``, or "(not recorded)"."""
    if not record:
        return "(not recorded)"
    return (f"{record.get('data')} → {record.get('processed')} "
            f"(tables.json sha256 {str(record.get('tables_sha256'))[:12]})")


def one_dataset(records: list[tuple[str, dict | None]], processed: str | Path | None = None) -> dict | None:
    """The data set every executed notebook (``(name, its cephqos metadata or None)``) was run on; None when
    none recorded one.  Raises :class:`MixedDataError` naming two notebooks and their data sets when they
    differ (a notebook without the record counts as "(not recorded)": mixed with recorded ones is refused),
    or when ``processed``'s ``tables.json`` is not the one the notebooks read."""
    first_name, first = records[0]
    for name, rec in records[1:]:
        if _dataset_key(rec) != _dataset_key(first):
            raise MixedDataError(
                f"the executed notebooks come from different data sets: {first_name} from "
                f"{describe_dataset(first)}, {name} from {describe_dataset(rec)}; run `make report` again "
                f"(DATA=... PROC=...) so that every notebook re-runs on one data set")
    if first and processed is not None:
        sha = _sha256(Path(processed) / "tables.json")
        if sha != first.get("tables_sha256"):
            raise MixedDataError(
                f"--processed {processed} holds tables.json sha256 {sha[:12]}, but the executed notebooks "
                f"(e.g. {first_name}) ran on {describe_dataset(first)}; run `make report` again")
    return first


def dataset_line(record: dict | None) -> str:
    """The report's header line naming the data it shows (HTML)."""
    if not record:
        return ("<p class='dataset-line'>Data: not recorded (the notebooks were executed without "
                "<code>python -m analysis run-notebook</code>)</p>")
    written = f", written {html.escape(str(record['tables_written']))}" if record.get("tables_written") else ""
    return (f"<p class='dataset-line'>Data: <code>{html.escape(str(record.get('data')))}</code> → "
            f"<code>{html.escape(str(record.get('processed')))}</code> (tables.json sha256 "
            f"{html.escape(str(record.get('tables_sha256'))[:12])}{written})</p>")


def build_report(reports_dir: str | Path = "reports", figures_dir: str | Path = "figures",
                 out: str | Path | None = None, published: str | Path | None = None,
                 processed: str | Path | None = None) -> Path:
    """Assemble ``<reports_dir>/report.html`` from ``<reports_dir>/NN-*.ipynb`` (the papermill outputs).

    Raises FileNotFoundError when no executed notebook is there (run ``make report``), and
    :class:`MixedDataError` (nothing written) when the notebooks' recorded data sets differ, or differ from
    ``processed``'s tables (:func:`one_dataset`); the header names the data set the page shows."""
    import nbformat

    from . import report_sections

    reports, figures = Path(reports_dir), Path(figures_dir)
    published = Path(published) if published else Path(__file__).resolve().parents[1] / "data" / "published"
    books = sorted(reports.glob("[0-9][0-9]-*.ipynb"))
    if not books:
        raise FileNotFoundError(f"{reports}: no executed notebooks (NN-*.ipynb); run `make report` first")
    out = Path(out) if out else reports / "report.html"
    figs = sorted(p.stem for p in figures.glob("*.png"))
    rel_fig = os.path.relpath(figures, out.parent)
    toc, sections = [], []
    n_plotly = 0
    anchors: set[str] = set()
    nbs = [nbformat.read(path, as_version=4) for path in books]
    dataset = one_dataset([(str(path), nb.metadata.get(DATASET_KEY)) for path, nb in zip(books, nbs)], processed)
    for path, nb in zip(books, nbs):
        name = path.stem
        title = _title(nb)
        pm = nb.metadata.get("papermill", {})
        params = {**notebook_parameters(nb), **pm.get("default_parameters", {}), **pm.get("parameters", {})}
        meta = [(k, html.escape(json.dumps(v))) for k, v in sorted(params.items())]
        meta += [("data read", _data_read(params, nb, published)),
                 ("ran", f"{html.escape(str(pm.get('start_time', '')))}, {pm.get('duration', 0):.1f} s")]
        # the figures this execution drew (show() tags each output with its id), not every file in figures/
        # whose id names this notebook: another data set's figures stay on disk until overwritten
        drawn = {o.get("metadata", {}).get("figure_id") for c in nb.cells for o in c.get("outputs", [])}
        own = [] if pm.get("stub") else [f for f in figs if f in drawn and figure_source(f)[1] == name]
        frows = [(f, f"<code>{figure_source(f)[0]}</code> · <a href='{rel_fig}/{f}.png'>PNG</a> · "
                     f"<a href='{rel_fig}/{f}.svg'>SVG</a>") for f in own]
        rendered = report_sections.section(path, name, nb)  # cached by run-notebook --section, else made here
        n_plotly += rendered["n_plotly"]
        anchors |= set(rendered["anchors"])
        body = rendered["body"]
        toc.append(f"<li><a href='#{name}'>{html.escape(title)}</a> ({len(own)} figures)</li>")
        details = (f"<details><summary>parameters and data</summary>{_table(meta, ('parameter', 'value'))}</details>"
                   + (f"<details><summary>figures written by this notebook ({len(own)})</summary>"
                      f"{_table(frows, ('figure id', 'drawn by'))}</details>" if own else ""))
        # under the notebook's own title (its first heading), else at the top of the section
        body = re.sub(r"(</h1>)", lambda m: m.group(1) + details, body, count=1) if "</h1>" in body else details + body
        sections.append(f"<section id='{name}'>{body}</section>")
    style = f"<style>{REPORT_CSS}</style>"
    if n_plotly:  # plotly.js once, inline: the page works offline
        style += plotly_loader()
    claims = claims_section(reports / CLAIMS_CSV, {p.stem for p in books}, anchors)
    if processed is not None:  # the data set in three lines, before the notebooks
        toc.insert(0, "<li><a href='#data-set'>The data set</a></li>")
        sections.insert(0, dataset_section(processed))
    if claims:  # first: the findings
        toc.insert(0, "<li><a href='#claims'>The studies' claims on our campaigns</a></li>")
        sections.insert(0, claims)
    found = what_we_found(reports, {p.stem for p in books}, processed, anchors)
    if found:  # before everything: what a person wants from the first screen
        toc.insert(0, "<li><a href='#what-we-found'>What we found</a></li>")
        sections.insert(0, found)
    # the page's own head: nbconvert's lab head (its 0.26 MB of JupyterLab CSS styles the lab template's
    # classes, which the basic template's sections do not use; its CDN scripts fail offline) is not needed;
    # a figure is scaled to fit the width and one screen's height (its PNG and SVG files keep full size)
    head = "<head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>" \
           "<title>cephqos-lab report</title></head>"
    page = (f"<!DOCTYPE html><html>{head.replace('</head>', style + '</head>')}<body class='jp-Notebook'>"
            f"<nav><h1>cephqos-lab report</h1>{dataset_line(dataset)}<ol>{''.join(toc)}</ol></nav>{''.join(sections)}</body></html>")
    page = lighter_images(page)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out


#: the page's whole style sheet: nbconvert's basic template classes, the report's own blocks; every table,
#: text output, image and figure fits the 1400 px page or scrolls inside its own box
REPORT_CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;font-size:14px;"
    "line-height:1.35;color:#1b1b1b;max-width:1400px;margin:0 auto;padding:0 1em;box-sizing:border-box}"
    "h1{font-size:1.9em;margin:.6em 0 .4em}h2{font-size:1.45em;margin:1em 0 .4em}h3{font-size:1.15em}"
    "code,pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12.5px}"
    "pre{max-width:100%;overflow-x:auto;margin:.3em 0;line-height:1.2}"
    ".prompt,.anchor-link{display:none}.output_area{margin:.2em 0}"
    "img{max-width:100%;max-height:66vh;width:auto;height:auto}table{display:block;max-width:100%;overflow-x:auto;border-collapse:collapse}"
    ".rendered_html table,table.dataframe{font-size:12.5px}"
    ".rendered_html td,.rendered_html th,table.dataframe td,table.dataframe th{border:1px solid #ddd;"
    "padding:2px 6px;text-align:right}.rendered_html th{background:#f4f4f4}"
    "section{border-top:3px solid #888;margin-top:2em}table.meta{font-size:85%}"
    "table.meta td,table.meta th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
    "nav{background:#f6f6f6;padding:.5em 1em}nav h1{display:inline-block;margin-right:.8em}.dataset-line{display:inline-block;margin:0}details{margin:.3em 0}summary{cursor:pointer}"
    "details.long-output pre{max-height:40em;overflow:auto}.report-plotly{max-width:100%}"
    # tables of analysis.tables_html.show_table: a box as wide as the page that scrolls, the table inside at
    # its own width, one text line per row (as the text tables were), the header kept in view when it scrolls
    # (rows as tall as a line of text: no horizontal borders, every other row shaded)
    ".report-table{overflow:auto;max-width:100%;margin:.3em 0}.report-table table{display:table;font-size:12.5px}"
    ".report-table table.dataframe td,.report-table table.dataframe th{border:0;border-left:1px solid #ddd;"
    "padding:0 6px;line-height:1.2;white-space:nowrap;text-align:right}"
    ".report-table tbody tr:nth-child(odd){background:#f7f7f7}"
    ".report-table thead th{background:#e9e9e9;position:sticky;top:0}"
    "details.long-output .report-table{max-height:40em}"
    # printed (make report-pdf): no figure, plot, table row or text line cut across pages; headings
    # stay with what follows; wide tables and text wrap instead of scrolling
    "@media print{body{max-width:none;font-size:11px}img,.report-plotly,.output_png,tr,summary{break-inside:avoid}"
    "h1,h2,h3{break-after:avoid}section{break-before:page}img{max-height:24cm}"
    "pre{white-space:pre-wrap;max-height:none;overflow:visible}table{overflow:visible}"
    ".report-table{overflow:visible;max-height:none!important}.report-table td,.report-table th{white-space:normal}}")


PUBLISHED_REF = re.compile(r"data/published/([\w.-]+\.csv)")


def cited_published(notebook: str | Path) -> list[str]:
    """The ``data/published/*.csv`` files a notebook (path or node) names in its cells (file names, sorted)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4) if isinstance(notebook, (str, Path)) else notebook
    return sorted({m for c in nb.cells for m in PUBLISHED_REF.findall(c.source)})


def campaign_stamp(files, campaign: str) -> str:
    """The stamp of one campaign's raw data: ``"<sha256>  <path>"`` per file of ``files.parquet`` with that
    campaign, sorted by path; ``"absent\n"`` when it has none.  Unchanged data, unchanged stamp."""
    sel = files[files["campaign"] == campaign].sort_values("path")
    if not len(sel):
        return "absent\n"
    return "".join(f"{h}  {p}\n" for h, p in zip(sel["sha256"].fillna("-"), sel["path"]))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` (temp file, then rename) unless it already holds exactly that: the mtime of
    an unchanged stamp stays, so make does not re-run what depends on it.  True when written."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def notebook_deps(notebooks: list[str | Path], processed: str | Path, reports: str = "reports",
                  published: str = "data/published") -> str:
    """make rules on the data each notebook reads: writes ``<processed>/campaigns/<campaign>.sha256``
    (:func:`campaign_stamp`, rewritten only when it changes) for every campaign a notebook's parameters
    name, and returns the rules ``<reports>/<nb>.ipynb: <those stamps> <cited published CSVs>``.  A
    notebook naming no campaign reads everything: it depends on ``files.parquet``.  An entry
    ``name=path`` is the notebook at ``path`` executed as ``<reports>/<name>.ipynb`` (one notebook run
    once per study)."""

    proc = Path(processed)
    files = _files_with_campaign(proc / "files.parquet")
    lines, checked = [], []
    for entry in map(str, notebooks):
        name, _, path = entry.rpartition("=") if "=" in entry else ("", "", entry)
        nb = Path(path)
        need = required_campaigns(nb)
        deps = []
        for c in need:
            stamp = proc / "campaigns" / f"{c}.sha256"
            write_if_changed(stamp, campaign_stamp(files, c))
            deps.append(str(stamp))
            checked.append(c)
        if not need:
            deps.append(str(proc / "files.parquet"))
        deps += [f"{published}/{f}" for f in cited_published(nb)]
        lines.append(f"{reports}/{name or nb.stem}.ipynb: {' '.join(deps)}")
    (proc / "campaigns").mkdir(parents=True, exist_ok=True)
    tmp = proc / "campaigns" / f"{CHECKED}.tmp-{os.getpid()}"
    tmp.write_text("".join(f"{c}\n" for c in dict.fromkeys(checked)), encoding="utf-8")
    os.replace(tmp, proc / "campaigns" / CHECKED)  # a fresh mtime even when the list is the same
    return "\n".join(lines) + "\n"


def _files_with_campaign(path: Path):
    """``files.parquet``'s path, sha256 and campaign (a data set whose runs name no campaign, e.g. a bare
    folder of fio outputs, has no campaign column: every campaign is then absent)."""
    import pandas as pd
    import pyarrow.parquet as pq
    have = set(pq.ParquetFile(path).schema_arrow.names)
    files = pd.read_parquet(path, columns=[c for c in ("path", "sha256", "campaign") if c in have])
    for c in ("path", "sha256", "campaign"):
        if c not in files:
            files[c] = None
    return files


def nothing_readable(processed: str | Path) -> str:
    """Why a report cannot be made from ``processed`` (its ``summary.parquet`` has no row: the data folder
    was empty or held nothing a reader claims; the files per status are named), or ``""``."""
    import pyarrow.parquet as pq
    proc = Path(processed)
    p = proc / "summary.parquet"
    if not p.is_file() or pq.ParquetFile(p).metadata.num_rows:
        return ""
    data = (proc / "data-dir.txt").read_text().strip() if (proc / "data-dir.txt").is_file() else str(proc)
    f = proc / "files.parquet"
    status = ""
    if f.is_file():
        col = pq.ParquetFile(f).read(columns=["status"]).column("status").to_pylist() \
            if "status" in pq.ParquetFile(f).schema_arrow.names else []
        counts = {k: col.count(k) for k in dict.fromkeys(col)}
        status = " (" + ", ".join(f"{v} {k}" for k, v in counts.items()) + ")" if counts else " (no files)"
    return (f"{data}: nothing readable{status}: expected fio, rados bench, blktrace/blkparse/btt, sysutil or "
            "cephqos-pg-timeline output")


def notebook_parameters(notebook) -> dict:
    """The defaults of a notebook's (path or node) ``parameters`` cell: each top-level ``name = literal``;
    a value that is not a literal is kept as its source text.  Papermill records only what it injects."""
    import ast

    import nbformat

    nb = nbformat.read(notebook, as_version=4) if isinstance(notebook, (str, Path)) else notebook
    cell = next((c for c in nb.cells if "parameters" in c.metadata.get("tags", [])), None)
    out: dict = {}
    for node in ast.parse(cell.source).body if cell else []:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = ast.get_source_segment(cell.source, node.value)
    return out


def campaigns_of(params: dict) -> list[str]:
    """Every ``campaign``, ``campaigns`` and ``*_campaign`` value (string or list of strings), in order."""
    out: list[str] = []
    for name, v in params.items():
        if (name in ("campaign", "campaigns") or name.endswith("_campaign")) and v:
            out += [v] if isinstance(v, str) else list(v)
    return list(dict.fromkeys(out))


def required_campaigns(notebook: str | Path) -> list[str]:
    """The campaigns a notebook reads, from its parameters cell (:func:`campaigns_of` its defaults)."""
    return campaigns_of(notebook_parameters(notebook))


def missing_campaigns(notebook: str | Path, processed: str | Path) -> list[str]:
    """Campaigns the notebook needs that ``processed/summary.parquet`` has no row of (pyarrow alone: the
    launcher of every notebook asks, and importing pandas for it cost 0.35 s)."""
    need = required_campaigns(notebook)
    if not need:
        return []
    p = Path(processed) / "summary.parquet"
    have: set[str] = set()
    if p.is_file():
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        # ParquetFile, not read_table: that goes through pyarrow.dataset, which imports pandas
        pf = pq.ParquetFile(p)
        if "campaign" in pf.schema_arrow.names:  # runs that name no campaign: every campaign is missing
            col = pf.read(columns=["campaign"]).column("campaign").cast("string")
            have = {v for v in pc.unique(col).to_pylist() if v is not None}
    return [c for c in need if c not in have]


def write_stub(notebook: str | Path, missing: list[str], data_dir: str, out: str | Path,
               dataset: dict | None = None) -> Path:
    """An executed-notebook stand-in for a section whose data is absent: the notebook's title and a
    sentence saying which campaigns ``data_dir`` lacks (``make report DATA=...`` renders it instead of
    failing); ``dataset`` (:func:`dataset_record`) is recorded in its metadata as for an executed one."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    title = _title(nb)
    stub = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        f"# {title}\n\n**Nothing to show for this section:** `{data_dir}` has no runs of "
        + ", ".join(f"`{c}`" for c in missing)
        + ", which this notebook reads (its parameters cell names them). Run it on data that has them, or"
          " pass other campaign names with papermill `-p`.")])
    stub.metadata["papermill"] = {"parameters": {"data_dir": data_dir}, "default_parameters": {},
                                  "duration": 0.0, "start_time": "", "stub": True}
    if dataset is not None:
        stub.metadata[DATASET_KEY] = dict(dataset)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    nbformat.write(stub, tmp)
    os.replace(tmp, out)
    return out

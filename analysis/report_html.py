"""The report's HTML of one executed notebook: plotly figures as divs, figure anchors, the folds of long
text, tables and figure runs, and inline PNGs as lossless WebP; and plotly.js for the page.  Used by
:mod:`analysis.report_sections` (which renders and caches each section) and :mod:`analysis.report` (which
assembles the page); it imports neither."""

from __future__ import annotations

import html
import json
import re

PLOTLY = "application/vnd.plotly.v1+json"


def plotly_to_html(nb, prefix: str) -> int:
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
                                     f"var f={spec};window.plotlyReady.then(function(){{Plotly.newPlot('{div}',"
                                     f"f.data,f.layout,{{responsive:true}});}});}})();</script>")
                n += 1
    return n


def anchor_figures(nb) -> set[str]:
    """Each figure output that names its id (``metadata['figure_id']``, :func:`analysis.figures.show`)
    becomes an HTML output with an anchor ``fig-<id>`` before the image, so that the findings can link to
    the figure in its notebook cell; returns the anchored ids."""
    ids = set()
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            fid = o.get("metadata", {}).get("figure_id")
            data = o.get("data", {})
            if not fid or "image/png" not in data:
                continue
            b64 = "".join(data.pop("image/png").split())
            data["text/html"] = (f"<a id='fig-{html.escape(fid)}' class='fig-anchor'></a>"
                                 f"<img src='data:image/png;base64,{b64}' alt='{html.escape(fid)}'/>")
            ids.add(fid)
    return ids


def plotly_loader() -> str:
    """plotly.js for the page, offline and light: the bundle gzip-compressed and base64-encoded (4.8 → 1.9 MB
    for plotly.js 4.1), unpacked by the browser's ``DecompressionStream`` and run once; ``window.plotlyReady``
    is the promise each figure's script waits on."""
    import base64
    import gzip

    from plotly.offline import get_plotlyjs
    packed = base64.b64encode(gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)).decode()
    return ("<script>window.plotlyReady=(async function(){var b=Uint8Array.from(atob('" + packed + "'),"
            "function(c){return c.charCodeAt(0);});var t=await new Response(new Blob([b]).stream()"
            ".pipeThrough(new DecompressionStream('gzip'))).text();var s=document.createElement('script');"
            "s.text=t;document.head.appendChild(s);})();"
            # a figure drawn inside closed <details> had no width: fit it to the page when opened
            "document.addEventListener('toggle',function(e){if(e.target.open&&window.Plotly){"
            "e.target.querySelectorAll('.js-plotly-plot').forEach(function(d){Plotly.Plots.resize(d);});}},true);"
            "</script>")


_PNG_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=\s]+)")


#: the page's content width in CSS px (1400 px body less its padding): an inline figure is never wider
PAGE_IMAGE_PX = 1360


#: libwebp's lossless effort (0–6)
METHOD = 2


def lighter_images(page: str, max_width: int = PAGE_IMAGE_PX) -> str:
    """Each inline PNG reduced to at most 256 colours on white and stored as lossless WebP where that is
    smaller (matplotlib's PNGs shrink to about a third here); one wider than ``max_width`` is first resampled
    (Lanczos) to that width, so that no figure is wider than its box on the page.  Figures keep their
    full-size PNG and SVG in ``figures/``."""
    import base64
    import io

    from PIL import Image

    def webp(m: re.Match) -> str:
        raw = base64.b64decode(m.group(1))
        im = Image.open(io.BytesIO(raw))
        if im.mode not in ("RGB", "RGBA"):
            im = im.convert("RGBA")
        wide = im.width > max_width
        if wide:  # resampled (Lanczos): antialiasing adds shades, which the 256 colours below take back out
            im = im.resize((max_width, max(1, round(im.height * max_width / im.width))), Image.Resampling.LANCZOS)
        if im.mode == "RGBA":
            flat = Image.new("RGB", im.size, "white")
            flat.paste(im, mask=im.getchannel("A"))
            im = flat
        # at most 256 colours (median cut, no dithering), then lossless: a matplotlib figure is a few flat
        # colours plus antialiased edges, and only edge shades move (by a few levels); the shipped report's 94
        # figures: 2.98 → 2.68 MB, the page 6.11 → 5.80 MB.  Lossless alone at libwebp's highest effort
        # (method 6) gave 6.02 MB in 116 s, method 2: 6.10 MB in 9 s (measured here, 2026-11-27)
        im = im.quantize(256, dither=Image.Dither.NONE).convert("RGB")
        out = io.BytesIO()
        im.save(out, "WEBP", lossless=True, quality=100, method=METHOD)
        if out.tell() >= len(raw) and not wide:
            return m.group(0)
        return "data:image/webp;base64," + base64.b64encode(out.getvalue()).decode()
    return _PNG_URI.sub(webp, page)


#: text outputs longer than this many lines are collapsed behind ``<details>`` (their line count shown)
LONG_OUTPUT_LINES = 12
_PRE = re.compile(r"<pre>(.*?)</pre>", re.S)


def collapse_long_text(body: str, max_lines: int = LONG_OUTPUT_LINES) -> str:
    """Each ``<pre>`` output of more than ``max_lines`` lines behind ``<details>``: the summary says how many
    lines and shows the first (a table's header), the text scrolls in its own box."""
    def fold(m: re.Match) -> str:
        text = m.group(1)
        lines = text.strip("\n").split("\n")
        if len(lines) <= max_lines:
            return m.group(0)
        first = re.sub(r"<[^>]+>", "", lines[0]).strip()
        first = " ".join(first.split())
        first = first if len(first) <= 100 else first[:99] + "…"
        return (f"<details class='long-output'><summary>{len(lines):,} lines: <code>{first}</code>"
                f"</summary>{m.group(0)}</details>")
    return _PRE.sub(fold, body)


_TABLE_BOX = re.compile(r'<div class="report-table" data-rows="(\d+)">(.*?</table>)</div>', re.S)
_TH = re.compile(r"<th[^>]*>(.*?)</th>", re.S)


def collapse_long_tables(body: str, max_rows: int = LONG_OUTPUT_LINES) -> str:
    """Each table of :func:`analysis.tables_html.show_table` (``<div class="report-table" data-rows="N">``)
    with more than ``max_rows`` rows (its header rows included) behind ``<details>``: the summary gives the row count and the column
    names, the table scrolls in its own box, as :func:`collapse_long_text` does for text."""
    def fold(m: re.Match) -> str:
        n = int(m.group(1))
        thead = m.group(2).split("</thead>", 1)[0] if "</thead>" in m.group(2) else ""
        if n + thead.count("<tr") <= max_rows:  # its header rows count, as a text table's header lines did
            return m.group(0)
        last_row = thead.rsplit("<tr", 1)[-1]
        cols = [" ".join(re.sub(r"<[^>]+>", "", html.unescape(c)).split()) for c in _TH.findall(last_row)]
        names = " · ".join(c for c in cols if c)
        names = names if len(names) <= 100 else names[:99] + "…"
        return (f"<details class='long-output'><summary>{n:,} rows: <code>{html.escape(names)}</code>"
                f"</summary>{m.group(0)}</details>")
    return _TABLE_BOX.sub(fold, body)


#: a cell with more than FOLD_OVER figures (images, plotly) shows the first FOLD_KEEP; the rest behind <details>
#: (3, 1 since the history section and the findings joined the page: 4, 2 left it at 52,700 px of 50,000)
FOLD_OVER, FOLD_KEEP = 3, 1


def fold_figure_runs(body: str, over: int = FOLD_OVER, keep: int = FOLD_KEEP) -> str:
    """In nbconvert's HTML of one notebook: a cell that drew more than ``over`` figures keeps its first
    ``keep`` in view and the others behind ``<details>`` (the summary counts them), so that a gallery of
    thirty charts costs a screen, not thirty; every figure stays in the page."""
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(body, "html.parser")
    folded = 0
    for out in soup.select("div.output"):
        areas = out.find_all("div", class_="output_area", recursive=False)
        figs = [a for a in areas if a.find("img") or a.find(class_="report-plotly")]
        if len(figs) <= over:
            continue
        rest = areas[areas.index(figs[keep]):]
        details = soup.new_tag("details", attrs={"class": "more-figures"})
        summary = soup.new_tag("summary")
        summary.string = f"{len(figs) - keep} more figures of this cell ({len(figs)} in all)"
        details.append(summary)
        rest[0].insert_before(details)
        for a in rest:
            details.append(a.extract())
        folded += 1
    return str(soup) if folded else body

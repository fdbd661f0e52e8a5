"""One executed notebook's section of the report, rendered once and cached beside it.

Rendering a section (nbconvert's HTML of the outputs, plotly divs, figure anchors, the folds of long text,
tables and figure runs, and each inline PNG as 256-colour lossless WebP) is most of the report's time:
12.6 of 15.7 s for the shipped report's 12 notebooks on this 2-vCPU VM, the WebP encoding alone 7.5 s.
``python -m analysis run-notebook --section NAME`` renders it right after the notebook ran, in the
same process and in parallel with the other notebooks (``make report -j``); ``analysis report`` then
reads ``<reports>/.sections/NAME.json`` and only assembles the page.  The cache is keyed by the executed
notebook's bytes, its section name and the digest of the code that renders it: an edited notebook, a
new nbconvert or a change to this code renders anew, and a notebook made by hand (no cache) is rendered
by the report itself, with the same result.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

#: the cache folder inside the reports folder
CACHE_DIR = ".sections"


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over the source of the modules that render a section and nbconvert's and Pillow's versions."""
    import nbconvert
    import PIL

    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in ("report_html.py", "report_sections.py", "tables_html.py"):
        h.update((here / name).read_bytes())
    h.update(f"nbconvert {nbconvert.__version__} Pillow {PIL.__version__}".encode())
    return h.hexdigest()


def key(raw: bytes, name: str) -> str:
    """The cache key of a section: the notebook's bytes, its name (the section's id) and :func:`code_digest`."""
    return hashlib.sha256(raw + b"\0" + name.encode() + b"\0" + code_digest().encode()).hexdigest()


def render(nb, name: str) -> dict:
    """The section body of executed notebook ``nb`` (an nbformat node; its outputs are changed in place:
    plotly → div, figure → anchored image): ``body`` (HTML), ``n_plotly`` (plotly figures, which need
    plotly.js on the page) and ``anchors`` (the figure ids anchored as ``fig-<id>``)."""
    from nbconvert import HTMLExporter

    from .report_html import (anchor_figures, plotly_to_html, collapse_long_tables, collapse_long_text,
                              fold_figure_runs, lighter_images)
    n_plotly = plotly_to_html(nb, name)
    anchors = anchor_figures(nb)
    body, _ = HTMLExporter(template_name="basic", exclude_input=True).from_notebook_node(nb)
    body = lighter_images(fold_figure_runs(collapse_long_tables(collapse_long_text(body))))
    return {"body": body, "n_plotly": n_plotly, "anchors": sorted(anchors)}


def cache_path(notebook: Path, name: str) -> Path:
    """Where the section of ``notebook`` (named ``name``) is cached: ``<its folder>/.sections/<name>.json``."""
    return notebook.parent / CACHE_DIR / f"{name}.json"


def section(notebook: str | Path, name: str | None = None, nb=None) -> dict:
    """The section of the executed ``notebook`` (:func:`render`), from the cache when its key matches,
    else rendered and cached (temp file, then rename).  ``name`` defaults to the file's stem; ``nb``: the
    notebook already read (its outputs are changed in place when it is rendered)."""
    import nbformat

    notebook = Path(notebook)
    name = name or notebook.stem
    raw = notebook.read_bytes()
    k = key(raw, name)
    path = cache_path(notebook, name)
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        if got.get("key") == k:
            return got
    except (OSError, ValueError):
        pass
    if nb is None:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    out = {"key": k, **render(nb, name)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(out), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return out

"""Tables in notebooks as HTML tables, not text: :func:`show_table` displays a DataFrame (or Series) as one
output with two forms, ``text/html`` (pandas' ``to_html`` in a ``<div class="report-table">`` that the
report's style sheet lets scroll inside its own box, :mod:`analysis.report`) and ``text/plain`` (exactly
what ``print(df.to_string())`` printed, for terminals, papermill logs and nbval).  The report folds a table
of more than :data:`analysis.report_html.LONG_OUTPUT_LINES` rows behind ``<details>`` with its row count
(``data-rows``), as it folds long text outputs.
"""

from __future__ import annotations

import re

#: the class of the box around each table (the report: ``overflow-x:auto; max-width:100%``)
TABLE_CLASS = "report-table"

_BETWEEN_TAGS = re.compile(r">\s+<")


def _frame(obj):
    import pandas as pd
    if isinstance(obj, pd.Series):
        return obj.to_frame(name=obj.name if obj.name is not None else "value")
    if not isinstance(obj, pd.DataFrame):
        raise TypeError(f"show_table: expected a DataFrame or Series, got {type(obj).__name__}")
    return obj


def table_text(obj, index: bool = True, float_format=None) -> str:
    """The plain-text form: ``obj.to_string(...)`` as the notebooks printed it (a Series as a Series)."""
    return obj.to_string(index=index, float_format=float_format)


def table_html(obj, index: bool = True, float_format=None) -> str:
    """The HTML form: ``to_html`` (escaped, no border attribute, whitespace between tags removed: a third
    lighter) inside ``<div class="report-table" data-rows="N">``; N is the number of body rows."""
    df = _frame(obj)
    body = df.to_html(index=index, float_format=float_format, border=0)
    body = _BETWEEN_TAGS.sub("><", body.strip())
    return f'<div class="{TABLE_CLASS}" data-rows="{len(df)}">{body}</div>'


def table_bundle(obj, index: bool = True, float_format=None) -> dict[str, str]:
    """The MIME bundle :func:`show_table` displays: ``{"text/html": ..., "text/plain": ...}``."""
    return {"text/html": table_html(obj, index, float_format), "text/plain": table_text(obj, index, float_format)}


def show_table(obj, index: bool = True, float_format=None, title: str | None = None) -> None:
    """Display a DataFrame or Series as a table: HTML in a notebook (and the report), its ``to_string`` in a
    terminal.  ``index`` and ``float_format`` as for ``to_string``/``to_html``; ``title``, when given, is a
    line of plain text printed before it."""
    if title is not None:
        print(title)
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython: a terminal
        get_ipython = lambda: None  # noqa: E731
    if get_ipython() is None:
        print(table_text(obj, index, float_format))
        return
    from IPython.display import display
    display(table_bundle(obj, index, float_format), raw=True)

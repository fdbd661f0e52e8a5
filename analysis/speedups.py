"""Start-up costs avoided on request (an explicit call, never at import)."""

from __future__ import annotations

import sys


def skip_iri_grammar() -> None:
    """Keep jsonschema from importing ``rfc3987_syntax`` (a transitive dependency of jupyterlab), which builds
    a lark grammar at import: ~1.0 s, measured here, in every process that imports nbformat's validator
    (papermill, nbconvert, plotly's ``fig.show()`` in a kernel).  Its "iri" formats are never used by
    notebook validation; without the module jsonschema skips them.  Call before nbformat/jsonschema is
    imported; a no-op if ``rfc3987_syntax`` is already imported."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

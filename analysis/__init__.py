"""cephqos-lab analysis package: ingest, metrics, statistics and figures for Ceph QoS studies."""

import sys

__version__ = "0.1.0"

# jsonschema (under nbformat: papermill, nbconvert, and plotly's fig.show() in a kernel) imports
# rfc3987_syntax when installed (a transitive dependency of jupyterlab), which builds a grammar at import:
# 1.0 s of every notebook run and of every kernel that shows a plotly figure, measured here.  Its "iri"
# formats are never used by notebook validation; without it jsonschema skips them.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

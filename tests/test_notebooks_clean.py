"""The executed notebooks shipped for nbval print no warnings and nothing on stderr: a warning in the
report (a deprecation, a divide-by-zero) is either a bug or noise a reader must not have to judge."""

from __future__ import annotations

import nbformat
import pytest

from conftest import ROOT

# the shipped notebooks, and the ones `make report` executed into reports/ when it has run
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")) + sorted((ROOT / "reports").glob("[0-9][0-9]-*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.stem}" for p in NOTEBOOKS])
def test_no_stderr_or_warning_in_outputs(path):
    nb = nbformat.read(path, as_version=4)
    bad = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                bad.append(f"cell {i}: stderr: {text[:200]!r}")
            elif "Warning:" in text:
                bad.append(f"cell {i}: {text[:200]!r}")
            elif out.get("output_type") == "error":
                bad.append(f"cell {i}: {out.get('ename')}: {out.get('evalue', '')[:200]}")
    assert bad == [], f"{path.name}: " + "; ".join(bad)

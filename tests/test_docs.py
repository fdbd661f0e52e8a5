"""README.md and docs/: the README stays short, every relative link resolves, and every `make TARGET` the
documents name is a target of the Makefile."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")
MAKE = re.compile(r"`make ([a-z][\w-]*)")


def test_the_readme_fits_a_few_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc):
    text = doc.read_text()
    broken = [t for t in LINK.findall(text) if not (doc.parent / t.split("#")[0]).exists()]
    assert broken == [], f"{doc.name}: links to nothing: {broken}"


def test_every_make_target_named_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][\w-]*)\s*:", makefile, re.M))
    named = {t for d in DOCS for t in MAKE.findall(d.read_text())}
    assert named and named - targets == set()

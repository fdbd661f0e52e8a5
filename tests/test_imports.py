"""The ingest package has no import cycle (issue 26), counting imports inside functions too: each module can
be read, and tested, without the ones that use it."""

from __future__ import annotations

import ast

from conftest import ROOT

PKG = ROOT / "analysis" / "ingest"


def _graph() -> dict[str, set[str]]:
    mods = {p.stem for p in PKG.glob("*.py")}
    g: dict[str, set[str]] = {m: set() for m in mods}
    for m in mods:
        for node in ast.walk(ast.parse((PKG / f"{m}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else [a.name for a in node.names]
                g[m] |= {t.split(".")[0] for t in targets if t and t.split(".")[0] in mods}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("analysis.ingest."):
                g[m].add(node.module.split(".")[2])
    return g


def _cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_the_ingest_package_has_no_import_cycle():
    g = _graph()
    assert {"walk", "tables", "scale", "keys"} <= set(g) and "tables" in g["walk"] and "walk" in g["scale"]
    assert _cycle(g) is None, " → ".join(_cycle(g))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]

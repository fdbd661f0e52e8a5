"""No import cycle, in the ingest package or in the whole of ``analysis/``, counting imports inside functions
too: each module can be read, and tested, without the ones that use it; and the store takes its schema from
``analysis.schema``, not from the ingest."""

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
    assert {"walk", "runfolder", "scale", "base"} <= set(g) and "runfolder" in g["walk"] and "walk" in g["scale"]
    assert _cycle(g) is None, " → ".join(_cycle(g))


def test_the_store_takes_nothing_from_the_ingest():
    """analysis/store.py (the processed tables: stats, report and overview read it) takes the schema from
    analysis.schema, as the ingest does, and nothing from the ingest: reading tables never imports a reader."""
    used = set()
    for node in ast.walk(ast.parse((ROOT / "analysis" / "store.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            used.add(("." * node.level) + node.module)
    assert not {u for u in used if "ingest" in u}, used
    assert ".schema" in used


def _package_graph() -> dict[str, set[str]]:
    """Every module of ``analysis/`` (dotted, e.g. ``stats.validity``) → the modules of it that it imports
    (relative or absolute, at the top or inside functions; a package's ``__init__`` counts as the package)."""
    top = ROOT / "analysis"
    mods = {".".join(p.relative_to(top).with_suffix("").parts).removesuffix(".__init__").removesuffix("__init__")
            for p in top.rglob("*.py")}
    mods.discard("")
    g: dict[str, set[str]] = {m: set() for m in mods}
    for p in top.rglob("*.py"):
        m = ".".join(p.relative_to(top).with_suffix("").parts).removesuffix(".__init__").removesuffix("__init__")
        if not m:
            continue
        pkg = m.split(".")[:-1] if p.name != "__init__.py" else m.split(".")
        for node in ast.walk(ast.parse(p.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
                names = [stem] + [f"{stem}.{a.name}" if stem else a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("analysis."):
                stem = node.module.removeprefix("analysis.")
                names = [stem] + [f"{stem}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.removeprefix("analysis.") for a in node.names if a.name.startswith("analysis.")]
            # a module's own packages are imported with it whatever it imports: not an edge of its own
            ancestors = {".".join(m.split(".")[:k]) for k in range(1, len(m.split(".")))}
            g[m] |= {n for n in names if n in mods and n != m and n not in ancestors}
    return g


def test_analysis_has_no_import_cycle():
    """The whole package: report.py and report_sections.py once imported each other (the HTML helpers now
    live in report_html.py, below both)."""
    g = _package_graph()
    assert {"report", "report_sections", "report_html", "schema", "store", "ingest.walk"} <= set(g)
    assert "report_html" in g["report_sections"] and "report" not in g["report_sections"]
    assert _cycle(g) is None, " → ".join(_cycle(g))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def _private_imports() -> list[str]:
    """``from <project module> import _name`` where ``_name`` is not itself a module (issue 50)."""
    found = []
    for top in ("analysis", "capture", "bench"):
        for p in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(p.read_text())):
                if not isinstance(node, ast.ImportFrom):
                    continue
                mod = node.module or ""
                if node.level == 0 and mod.split(".")[0] not in ("analysis", "capture", "bench"):
                    continue
                base = p.parent
                for _ in range(max(node.level - 1, 0)):
                    base = base.parent
                where = (base if node.level else ROOT) / mod.replace(".", "/")
                found += [f"{p.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")
                          and not (where / f"{a.name}.py").is_file()]
    return found


def test_no_private_name_is_imported_from_another_module():
    assert _private_imports() == []


def test_the_private_import_check_sees_one(tmp_path, monkeypatch):
    import sys
    mod = sys.modules[__name__]
    fake = tmp_path / "analysis"
    (fake / "stats").mkdir(parents=True)
    (fake / "stats" / "x.py").write_text("from .consistency import _hidden\nfrom . import _native_module\n")
    (fake / "stats" / "_native_module.py").write_text("")
    for top in ("capture", "bench"):
        (tmp_path / top).mkdir()
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    assert _private_imports() == ["analysis/stats/x.py:1 _hidden"]


def _private_attributes() -> list[str]:
    """``<project module>._name`` read in another module (``from analysis.ingest import walk``; ``walk._x``)."""
    found = []
    for top in ("analysis", "capture", "bench"):
        for p in (ROOT / top).rglob("*.py"):
            tree = ast.parse(p.read_text())
            mods = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods |= {a.asname or a.name.split(".")[0] for a in node.names
                             if a.name.split(".")[0] in ("analysis", "capture", "bench")}
                elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0]
                                                           in ("analysis", "capture", "bench")):
                    mods |= {a.asname or a.name for a in node.names}
            found += [f"{p.relative_to(ROOT)}:{n.lineno} {n.value.id}.{n.attr}" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in mods
                      and n.attr.startswith("_") and not n.attr.startswith("__")]
    return found


def test_no_private_name_of_another_module_is_read():
    """Issue 50: what another module needs is public (bench's swap of the as-of join: blktrace.asof_join)."""
    assert _private_attributes() == []


def test_the_readers_are_listed_once_and_every_kind_is_documented():
    """detect._READERS is the one list of readers; the kinds come from the modules themselves, and
    docs/formats.md has a row for every one of them (the backtick-quoted first column)."""
    import re

    from analysis.ingest import kinds
    got = kinds()
    assert len(got) == len(set(got)) == 13
    assert {"fio-json", "fio-log", "fio-hist-log", "fio-text", "fio-terse", "fio-jobfile", "blktrace"} <= set(got)
    documented = set(re.findall(r"^\| `([a-z-]+)`", (ROOT / "docs" / "formats.md").read_text(), re.M))
    assert set(got) <= documented, set(got) - documented

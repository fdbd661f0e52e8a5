"""Hypothesis on every reader's own ``parse``: mutated and truncated real files give a ``Parsed`` (whose
values the validation layer can judge) or an ``IngestError`` naming the file — nothing else.

The parsers are called directly, not through ``detect.read``, which turns any exception into an
IngestError and would hide a reader bug (``test_a_reader_bug_is_caught`` shows this test fails then)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from analysis.ingest import IngestError, Parsed
from analysis.ingest.detect import HEAD_BYTES, _modules
from analysis.ingest.validate import problems
import damage_corpus as dc
from conftest import CORPUS, FIXTURES

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1000"))
#: the damage corpus's real files, one per format (tests/damage_corpus.py), the large ones cut to their head so
#: 1000 examples stay fast
SEEDS: dict[str, tuple[Path, int | None]] = {
    k: (p, {"blktrace": 48 << 10, "sysutil": 16 << 10}.get(k, keep)) for k, (p, keep) in dc.SOURCES.items()}
if (CORPUS / "fio_json").is_dir():
    SEEDS["fio-json-2x"] = (CORPUS / "fio_json" / "pkb_fio-2.1.4_sample-result.json", None)
#: getput output built from its format strings (tests/fixtures/getput/make_fixture.py): --psum, --ldist, PutsPerProc
SEEDS["getput"] = (FIXTURES / "getput" / "getput-8df6328_psum_ldist_ppp.txt", None)


def _bytes(path: Path, keep: int | None) -> bytes:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data[:keep] if keep else data


def _reader(kind: str):
    """The module whose ``sniff`` claims the seed's kind (``fio-json-2x`` is fio-json)."""
    kind = kind.removesuffix("-2x")
    for mod in _modules():
        if kind == mod.KIND or kind in getattr(mod, "KINDS", ()):
            return mod
    raise LookupError(kind)


def parse_directly(mod, path: Path, blob: bytes) -> None:
    """Write ``blob`` to ``path`` and call the reader itself: an IngestError names the file and a line ≥ 1 (or
    none); a result is a Parsed with the tidy columns whose values ``validate.problems`` can judge.  Any
    other exception propagates: a reader bug."""
    path.write_bytes(blob)
    try:
        r = mod.parse(path, None) if getattr(mod, "STREAMING", False) else mod.parse(path, blob)
    except IngestError as e:
        assert e.path == str(path)
        assert e.line is None or e.line >= 1
        return
    assert isinstance(r, Parsed)
    assert list(r.summary.columns) == ["source", "job", "ddir", "metric", "value", "unit"]
    assert all(isinstance(p, str) for p in problems(r.kind, r.summary, r.series))


@st.composite
def mutated(draw, data: bytes):
    b = bytearray(data)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "delete_line", "insert", "dup_line"]))
        if not b:
            break
        i = draw(st.integers(0, len(b) - 1))
        if op == "flip":
            b[i] = draw(st.integers(0, 255))
        elif op == "truncate":
            del b[i:]
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=12) | st.sampled_from(
                [b"\n", b", ", b"-", b"{", b'"fio version"', b"99999999999999999999", b"nan", b"\x00"]))
        else:
            start = b.rfind(b"\n", 0, i) + 1
            end = b.find(b"\n", i)
            end = len(b) if end < 0 else end + 1
            line = bytes(b[start:end])
            if op == "delete_line":
                del b[start:end]
            else:
                b[start:start] = line
    return bytes(b)


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_mutations_never_escape_the_reader(kind, tmp_path_factory):
    seed, keep = SEEDS[kind]
    if not seed.is_file():
        pytest.skip(f"{seed} absent")
    data, mod = _bytes(seed, keep), _reader(kind)
    assert mod.sniff(data[:HEAD_BYTES]), f"{kind}: the seed is not claimed by {mod.__name__}"
    target = tmp_path_factory.mktemp(kind) / seed.name.removesuffix(".gz")  # the name a reader may look at

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated(data))
    def check(blob: bytes):
        parse_directly(mod, target, blob)

    check()


def test_a_reader_bug_is_caught(tmp_path, monkeypatch):
    """What made the old test blind: through ``read()`` a parser replaced by ``1 // 0`` passed.  Called
    directly, the ZeroDivisionError escapes and the check fails."""
    mod = _reader("rados-bench")
    monkeypatch.setattr(mod, "parse", lambda path, data: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        parse_directly(mod, tmp_path / "x.txt", _bytes(*SEEDS["rados-bench"]))

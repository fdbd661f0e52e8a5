"""The C integer-table scanner (analysis/ingest/_cscan.c via _scan.py) against a plain-Python reference.

The chunk threshold is lowered so that small inputs are split over several threads, which exercises
the bound-based row placement and the compaction of later chunks' rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from analysis.ingest import IngestError, _native, _scan


def reference(text: bytes, ncol: int) -> np.ndarray:
    """Plain-Python reading of the grammar: blank lines skipped, fields stripped, ints."""
    rows = []
    for raw in text.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.strip(b" "):
            continue
        fields = [int(f.strip(b" ")) for f in line.split(b",")]
        assert len(fields) == ncol
        rows.append(fields)
    return np.array(rows, dtype=np.int64).reshape(-1, ncol)


@st.composite
def tables(draw):
    ncol = draw(st.integers(4, 6))
    nrows = draw(st.integers(0, 60))
    lines = []
    for _ in range(nrows):
        vals = [draw(st.integers(0, 4_000_000_000_000)),
                draw(st.integers(-(10**12), 10**12)),
                draw(st.integers(0, 3))] + [draw(st.integers(0, 2**40)) for _ in range(ncol - 3)]
        sep = draw(st.sampled_from([b",", b", ", b" , ", b",  "]))
        end = draw(st.sampled_from([b"\n", b"\r\n", b" \n"]))
        lines.append(sep.join(str(v).encode() for v in vals) + end)
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from([b"\n", b"   \n", b"\r\n"])))
    text = b"".join(lines)
    if text and draw(st.booleans()):
        text = text.rstrip(b"\r\n ")  # last line without its newline
    return ncol, text


@pytest.fixture
def chunked(monkeypatch):
    monkeypatch.setattr(_scan, "CHUNK_MIN_BYTES", 0)


@settings(max_examples=300, deadline=None)
@given(tables(), st.integers(1, 4))
def test_matches_reference_on_any_chunking(tmp_path_factory, tab, threads):
    ncol, text = tab
    old = _scan.CHUNK_MIN_BYTES
    _scan.CHUNK_MIN_BYTES = 0
    try:
        path = tmp_path_factory.mktemp("scan") / "x_clat.1.log"
        path.write_bytes(text)
        want = reference(text, ncol)
        got = _scan.read_int_table(path, ncol, threads=threads)
        assert got.shape == want.shape and np.array_equal(got, want)
        cols = _scan.read_fio_log(path, ncol, threads=threads)
        assert np.array_equal(cols.t, want[:, 0].astype(float))
        assert np.array_equal(cols.value, want[:, 1].astype(float))
        assert np.array_equal(cols.ddir, want[:, 2].astype(np.int8))
        assert np.array_equal(cols.ddir_counts, np.bincount(want[:, 2], minlength=4))
        if len(want):
            assert (cols.bs_min, cols.bs_max) == (want[:, 3].min(), want[:, 3].max())
            assert cols.col5_max == (want[:, 4].max() if ncol >= 5 else None)
        # the same bytes given in memory (decompressed content) read the same
        assert np.array_equal(_scan.read_int_table(path, ncol, threads=threads, data=text), want)
    finally:
        _scan.CHUNK_MIN_BYTES = old


def _lines(n: int) -> list[bytes]:
    return [f"{i}, {1000 + i}, {i % 2}, 4096, 0\n".encode() for i in range(n)]


@pytest.mark.parametrize("bad, expect", [
    (b"7, 8x, 0, 4096, 0\n", "expected an integer"),
    (b"7, 8, 0, 4096\n", "expected 5 comma-separated"),
    (b"7, 8, 0, 4096, 0, 9\n", "expected 5 comma-separated"),
    (b"7, 1234567890123456789, 0, 4096, 0\n", "longer than 18 digits"),
    (b"7,, 0, 4096, 0\n", "expected an integer"),
    (b"7, 8, 0, 4096, 0\r7\n", "expected an integer"),
])
def test_error_names_the_line_in_a_later_chunk(tmp_path, chunked, bad, expect):
    lines = _lines(400)
    lines[321] = bad
    p = tmp_path / "x_lat.1.log"
    p.write_bytes(b"".join(lines))
    with pytest.raises(IngestError) as e:
        _scan.read_int_table(p, 5, threads=3)
    assert e.value.line == 322 and expect in e.value.message and e.value.path == str(p)


def test_earliest_error_wins_across_chunks(tmp_path, chunked):
    lines = _lines(400)
    lines[350] = b"oops\n"
    lines[20] = b"1, 2, 3\n"
    p = tmp_path / "x_lat.1.log"
    p.write_bytes(b"".join(lines))
    with pytest.raises(IngestError) as e:
        _scan.read_fio_log(p, 5, threads=4)
    assert e.value.line == 21 and "expected 5 comma-separated" in e.value.message


def test_direction_outside_0_to_3_is_an_error(tmp_path, chunked):
    lines = _lines(300)
    lines[250] = b"250, 9, 7, 4096, 0\n"
    p = tmp_path / "x_lat.1.log"
    p.write_bytes(b"".join(lines))
    with pytest.raises(IngestError) as e:
        _scan.read_fio_log(p, 5, threads=2)
    assert e.value.line == 251 and "data direction must be 0-3" in e.value.message
    # the generic table reader does not judge directions
    assert _scan.read_int_table(p, 5, threads=2)[250, 2] == 7


def test_empty_and_blank_files(tmp_path):
    for content in (b"", b"\n\n  \n", b"\r\n"):
        p = tmp_path / "e.log"
        p.write_bytes(content)
        assert _scan.read_int_table(p, 4).shape == (0, 4)
        c = _scan.read_fio_log(p, 4)
        assert len(c.t) == 0 and c.bs_min is None


def test_compiler_missing_says_what_to_install(monkeypatch):
    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setattr(_native.shutil, "which", lambda _name: None)
    with pytest.raises(_native.NativeBuildError, match="apt-get install gcc"):
        _native.compiler()


def test_build_is_named_by_source_hash_and_rebuilt_when_source_changes(tmp_path, monkeypatch):
    src = tmp_path / "_probe.c"
    src.write_text("int answer(void) { return 41; }\n")
    monkeypatch.setattr(_native, "HERE", tmp_path)
    monkeypatch.setattr(_native, "_build_dirs", lambda: [tmp_path / "_build"])
    _native.load.cache_clear()
    try:
        assert _native.load("_probe").answer() == 41
        src.write_text("int answer(void) { return 42; }\n")
        _native.load.cache_clear()
        assert _native.load("_probe").answer() == 42
        assert len(list((tmp_path / "_build").glob("_probe-*.so"))) == 2
        assert not list((tmp_path / "_build").glob(".*"))  # no temp file left behind
    finally:
        _native.load.cache_clear()


@pytest.mark.parametrize("head, want", [
    (b"1000, 512, 0, 4096\n2000, 480, 1, 4096\n", (b"1000", b"512", b"0", b"4096")),
    (b"\n\n  1,2 ,\t3,4  \r\n", (b"1", b"2", b"3", b"4")),
    (b"1000, 5 12, 0, 4096\n", None),          # a blank inside a number
    (b"1000, 512, 0, 4096x\n", None),
    (b'{"fio version": "fio-3.33"}\n', None),
    (b"\n" * 9 + b"1,2,3,4\n", None),           # only the first 8 lines are looked at
])
def test_first_line_fields_and_its_one_entry_cache(head, want):
    from analysis.ingest._scan import first_line_fields
    assert first_line_fields(head) == want
    assert first_line_fields(bytes(bytearray(head))) == want  # an equal head: the kept answer
    assert first_line_fields(b"7,8,9,10\n") == (b"7", b"8", b"9", b"10")  # a different head: not the kept one
    assert first_line_fields(head) == want


def test_first_line_fields_of_a_histogram_log_line():
    from analysis.ingest._scan import first_line_fields
    line = b"1000, 0, 4096, " + b", ".join(str(i % 7).encode() for i in range(1856)) + b"\n"
    got = first_line_fields(line)
    assert len(got) == 1859 and got[:4] == (b"1000", b"0", b"4096", b"0") and got[-1] == str(1855 % 7).encode()

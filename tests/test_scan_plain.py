"""The plain path of the integer-table scanner (``analysis/ingest/_plain.py``: pyarrow + numpy) against the
C scanner (``_cscan.c``): the same tables and the same errors on hand-made cases, on every fio log and
histogram log shipped in ``data/raw`` and the corpus, and on randomly damaged real logs."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from analysis.ingest import IngestError, _scan
from conftest import CORPUS, ROOT, assert_same_outcome, c_only, parse_outcome

pytestmark = c_only  # the C scanner is the reference here


def _both(monkeypatch, fn, *args, **kw) -> tuple:
    out = []
    for mode in ("1", "0"):
        monkeypatch.setenv("CEPHQOS_NATIVE", mode)
        try:
            r = fn(*args, **kw)
            out.append(("ok", r) if isinstance(r, np.ndarray) else
                       ("ok", r.t, r.value, r.ddir, r.bs_min, r.bs_max, r.col5_max, r.ddir_counts, r.blank_lines))
        except IngestError as e:
            out.append(("error", str(e), e.line))
    return tuple(out)


def _same(a: tuple, b: tuple) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a == b
        return
    for x, y in zip(a[1:], b[1:]):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y, (a, b)


CASES = [
    b"0, 1, 0, 4096\n\n  \n1,2,1,4096\r\n",          # blank lines of spaces, CRLF
    b"0, 1, 0, 4096\n1,2,5,4096\n",                   # direction 5
    b"0,1,0,4096\n1,2,1\n",                           # a short row
    b"0,1,0,4096\r",                                  # '\r' without '\n' at the end
    b"0,1,0,4096\r1,2,0,4096\n",                      # a lone '\r' inside
    b"0,1,0,4096\n1,2,1,40x6\n",                      # a letter
    b"007,1,0,4096\n",                                # leading zeros: read, as C reads them
    b"-05,1,0,4096\n",
    b"1,2,3,4,5\n",                                   # a long row
    b"1,12345678901234567890,0,4\n",                  # 20 digits
    b"1,0000000000000000001,0,4\n",                   # 19 digits, a small value
    b"1,999999999999999999,0,4\n",                    # 18 digits: the largest that reads
    b"1,-999999999999999999,0,4\n",
    b"1,-,0,4\n",
    b"1,- 5,0,4\n",
    b" -5 , 2 ,0 , 4 \n",
    b"1,,0,4\n",                                      # an empty field
    b'1,"2",0,4\n',                                   # quoted
    b"1,+2,0,4\n",
    b"1\t,2,0,4\n",                                   # a tab: not a blank here
    b"  \n",
    b"",
    b"\n\n",
    b"1,2,0,4",                                       # no '\n' at the end
    b"1,2,0,4\n   ",                                  # a last line of spaces without '\n'
    b"1,2,-1,4\n1,2,0,x\n",                           # a direction error before a syntax error
    b"1,2,0,4\n1,2,0,x\n1,2,9,3\n",                   # and after one
    b"0001,2,0,4\n1,2,7,x\n",                         # a direction error in the bad line itself
    b"1,2,-0,4\n",
    b"1,2,0,4\n\x00\n",
    "1,2,0,4\n1,2,0,é\n".encode(),
]


@pytest.mark.parametrize("data", CASES, ids=range(len(CASES)))
@pytest.mark.parametrize("ncol", [4, 5])
def test_plain_equals_c_on_hand_made_cases(data, ncol, tmp_path, monkeypatch):
    p = tmp_path / "x.log"
    p.write_bytes(data)
    _same(*_both(monkeypatch, _scan.read_fio_log, p, ncol))
    _same(*_both(monkeypatch, _scan.read_int_table, p, ncol))


def _real_logs() -> list[Path]:
    roots = [ROOT / "data" / "raw"] + ([CORPUS] if CORPUS.exists() else [])
    out = []
    for r in roots:
        out += sorted(p for p in r.rglob("*.log*") if p.suffix in (".log", ".gz") and "_" in p.name)
    return out


def _sample(paths: list[Path], k: int) -> list[Path]:
    """Every histogram log and per-kind, per-folder spread of the others, at most ``k`` (the 8,830 shipped
    fio logs are alike; the test holds the large and the odd ones)."""
    hist = [p for p in paths if "hist" in p.name]
    rest = sorted((p for p in paths if "hist" not in p.name), key=lambda p: -p.stat().st_size)
    return hist[:k // 2] + rest[:k // 4] + rest[k // 4::max(1, len(rest) // (k // 4))][:k // 4]


def test_plain_equals_c_on_shipped_fio_logs(monkeypatch):
    """The reader's whole outcome (summary, series, meta or error) on shipped per-IO, averaged and histogram
    logs, C and plain."""
    from analysis.ingest import fio_log
    logs = _sample(_real_logs(), 160)
    assert len(logs) >= 100
    for p in logs:
        data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        monkeypatch.setenv("CEPHQOS_NATIVE", "1")
        c = parse_outcome(fio_log.parse, p.with_suffix("") if p.suffix == ".gz" else p, data)
        monkeypatch.setenv("CEPHQOS_NATIVE", "0")
        plain = parse_outcome(fio_log.parse, p.with_suffix("") if p.suffix == ".gz" else p, data)
        assert_same_outcome(c, plain)


_SOURCES = [b"".join(gzip.open(p).readlines()[:300]) for p in
            [next((ROOT / "data" / "raw" / "fio-grid").rglob("*_clat.1.log.gz"), None),
             next((ROOT / "data" / "raw" / "ceph-qos").rglob("client_clat_hist.1.log.gz"), None)] if p]
_mutation = st.tuples(st.sampled_from(["insert", "delete", "replace", "cut"]), st.floats(0, 1),
                      st.sampled_from([b"\n", b"\r", b" ", b",", b"-", b"0", b"9", b"x", b"\r\n", b"00", b""]))


def _mutate(data: bytes, muts) -> bytes:
    d = bytearray(data)
    for op, where, what in muts:
        i = int(where * len(d))
        if op == "insert":
            d[i:i] = what
        elif op == "delete":
            del d[i:i + 3]
        elif op == "replace":
            d[i:i + 1] = what
        else:
            del d[i:]
    return bytes(d)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(src=st.integers(0, max(len(_SOURCES) - 1, 0)), muts=st.lists(_mutation, min_size=1, max_size=4))
def test_plain_equals_c_on_damaged_real_logs(src, muts, tmp_path, monkeypatch):
    if not _SOURCES:
        pytest.skip("no shipped fio logs")
    data = _mutate(_SOURCES[src], muts)
    p = tmp_path / "fuzz.log"
    p.write_bytes(data)
    first = _scan.first_line_fields(data[:4096])
    ncol = len(first) if first else 5
    if 4 <= ncol <= 6:
        _same(*_both(monkeypatch, _scan.read_fio_log, p, ncol))
    _same(*_both(monkeypatch, _scan.read_int_table, p, ncol))


def test_blocks_of_a_stream_count_lines_the_same(tmp_path, monkeypatch):
    """``iter_fio_log`` over small blocks: errors name the line in the whole file on both paths."""
    data = b"".join(b"%d, %d, 0, 4096\n\n" % (i, i * 7) for i in range(5000)) + b"1, 2, 9, 4096\n"
    p = tmp_path / "s.log"
    p.write_bytes(data)
    outs = []
    for mode in ("1", "0"):
        monkeypatch.setenv("CEPHQOS_NATIVE", mode)
        with pytest.raises(IngestError) as ei:
            for _ in _scan.iter_fio_log(p, 4, chunk_bytes=4096):
                pass
        outs.append((str(ei.value), ei.value.line))
    assert outs[0] == outs[1]
    assert outs[0][1] == 10001

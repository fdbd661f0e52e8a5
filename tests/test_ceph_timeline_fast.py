"""The timeline reader's fast path (the C scanner ``pg_rows`` over the sample lines' row bytes) against
its plain one.

The plain reader (``json.loads`` per line, object columns) is the reference.  These tests switch the
fast path off (no deferred lines, no C scanner) and require the same result — tables, meta, partial flag — or
the same error (message and line) on real timelines captured here and on sample lines damaged in every
way the fast path has to notice and hand back.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from analysis.ingest import ceph_timeline as ct
from conftest import assert_same_outcome, c_only, parse_outcome

#: the C fast path against the plain reader: nothing to compare where the C part is off
pytestmark = c_only

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data" / "raw"
FIX = ROOT / "tests" / "fixtures" / "ceph_timeline" / "scrub-snaptrim-recovery.jsonl"
NEVER = re.compile(rb"(?!)")


def _result(path: Path, data: bytes, plain: bool, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        if plain:
            m.setattr(ct, "_FAST_SAMPLE", NEVER)
            m.setattr(ct, "_classify", ct.lines_by_regex)
            m.setattr(ct, "_columns_fast", lambda *a, **k: None)
        return parse_outcome(ct.parse, path, data)


def _same(path: Path, data: bytes, monkeypatch) -> tuple:
    return assert_same_outcome(_result(path, data, False, monkeypatch), _result(path, data, True, monkeypatch))


def _real() -> list[Path]:
    """One timeline per (campaign, scenario) of the shipped captures, plus the fixture."""
    seen, out = set(), [FIX]
    for p in sorted(RAW.glob("**/timeline.jsonl.gz")):
        key = p.parts[-5:-3]
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


@pytest.mark.parametrize("path", _real(), ids=lambda p: "/".join(p.parts[-6:-1]) or p.name)
def test_real_timelines_read_the_same_and_take_the_fast_path(path, monkeypatch):
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    doc = ct._load(path, data)
    deferred = sum(isinstance(s[2], tuple) for s in doc["samples"])
    fields = doc["header"]["pg_fields"]
    assert deferred == len(doc["samples"]) > 0          # every sample line of the poller is deferred
    assert ct._columns_fast(fields, doc["samples"]) is not None  # and the C scanner accepts them all
    r = _same(path, data, monkeypatch)
    assert r[0] == "ok" and len(r[4]) > 0


def test_there_are_real_timelines_to_compare():
    assert len(_real()) >= 8  # qos-2026, qos-v2, qos-reef, pilots × scenarios


HDR = json.dumps({"format": "cephqos-pg-timeline", "version": 1, "ceph_version": "ceph version 16.2.15",
                  "pools": {"2": "scrub", "3": "snap"}, "started_unix": 1763740000.0, "interval_s": 1.0,
                  "pg_fields": ["pgid", "state", "num_objects", "num_bytes", "degraded", "misplaced",
                                "unfound", "snaptrimq_len", "last_scrub_stamp", "last_deep_scrub_stamp",
                                "note"]}, separators=(",", ":"))
ROW = '["2.0","active+clean",10,4096,0,0,0,0,1763739000.5,1763739000.5,"x"]'
ROW2 = '["3.1","active+clean+snaptrim",7,8192,0,0,0,2,1763739000.5,1763739000.5,"y"]'


def _file(*samples: str) -> bytes:
    lines = [HDR] + [f'{{"t":{1763740001 + k}.0,"pgs":[{s}]}}' for k, s in enumerate(samples)]
    lines.append('{"t":1763740099.0,"end":true,"samples":%d}' % len(samples))
    return ("\n".join(lines) + "\n").encode()


GOOD = f"{ROW},{ROW2}"
DAMAGES = {
    "good": GOOD,
    "json.dumps separators": None,                      # built below with ", " and ": "
    "quoted number": GOOD.replace(",10,", ',"10",', 1),
    "boolean": GOOD.replace(",10,", ",true,", 1),
    "NaN": GOOD.replace(",10,", ",NaN,", 1),
    "Infinity": GOOD.replace(",10,", ",Infinity,", 1),
    "huge exponent": GOOD.replace(",4096,", ",1e999,", 1),
    "negative": GOOD.replace(",4096,", ",-4096,", 1),
    "bytes out of range": GOOD.replace(",4096,", ",1e19,", 1),
    "stamp out of range": GOOD.replace("1763739000.5,", "17637390000.5,", 1),
    "null value": GOOD.replace(",10,", ",null,", 1),
    "null pgid": GOOD.replace('"2.0"', "null", 1),
    "numeric state": GOOD.replace('"active+clean"', "5", 1),
    "pgid without a dot": GOOD.replace('"2.0"', '"20"', 1),
    "escape in state": GOOD.replace('active+clean"', 'active+clean\\u0041"', 1),
    "quote in a string": GOOD.replace('"x"', '"a\\"b"', 1),
    "control char in state": GOOD.replace("active+clean", "active\x01clean", 1),
    "colon in a string": GOOD.replace('"x"', '"10:00"', 1),
    "comma in a string": GOOD.replace('"x"', '"a,b"', 1),
    "short row": GOOD.replace(',"x"]', "]", 1),
    "long row": GOOD.replace(',"x"]', ',"x",1]', 1),
    "empty row": f"{ROW},[],{ROW2}",
    "nested value": GOOD.replace('"x"', "[1,2]", 1),
    "object value": GOOD.replace('"x"', '{"a":1}', 1),
    "plus sign": GOOD.replace(",10,", ",+10,", 1),
    "leading zero": GOOD.replace(",10,", ",010,", 1),
    "hex": GOOD.replace(",10,", ",0x10,", 1),
    "trailing comma": GOOD + ",",
    "missing bracket": GOOD[:-1],
    "non-utf8": GOOD.replace("active+clean", "active+clXean", 1),  # X → byte 0xff below
    "non-ascii text": GOOD.replace('"x"', '"\u00e9"', 1).replace("\\u00e9", "é"),
    "minus zero": GOOD.replace(",0,0,0,0,", ",-0,0,-0.0,0,", 1),
    "spaces everywhere": GOOD.replace(",", " ,\t").replace("[", "[ ").replace("]", " ]"),
    "long number": GOOD.replace(",4096,", "," + "1" * 70 + ",", 1),
    "long decimals": GOOD.replace(",4096,", ",4096." + "0" * 70 + ",", 1),
    "exponent": GOOD.replace(",4096,", ",4.096E3,", 1),
    "digits after e missing": GOOD.replace(",4096,", ",4e,", 1),
    "dot without digits": GOOD.replace(",4096,", ",4.,", 1),
    "bare minus": GOOD.replace(",4096,", ",-,", 1),
    "unknown literal": GOOD.replace('"x"', "nul", 1),
    "true in a free field": GOOD.replace('"x"', "true", 1),
    "null in a free field": GOOD.replace('"x"', "null", 1),
    "unterminated string": GOOD.replace('"x"]', '"x]', 1),
}


#: damages the fast path reads itself rather than handing back
FAST = ("good", "json.dumps separators", "null value", "comma in a string", "minus zero", "spaces everywhere",
        "exponent", "true in a free field", "null in a free field")


@pytest.mark.parametrize("name", list(DAMAGES))
def test_damaged_sample_lines_read_as_the_plain_reader_reads_them(name, monkeypatch, tmp_path):
    if name == "json.dumps separators":
        rows = [json.loads(ROW), json.loads(ROW2)]
        body = "\n".join([HDR] + [json.dumps({"t": 1763740001.0 + k, "pgs": rows}) for k in range(3)]
                         + ['{"t": 1763740099.0, "end": true, "samples": 3}']) + "\n"
        data = body.encode()
    else:
        data = _file(GOOD, DAMAGES[name], GOOD).replace(b"clXean", b"cl\xffean")
    r = _same(tmp_path / "t.jsonl", data, monkeypatch)
    if name in FAST:  # the C scanner read these itself (and matched json above)
        doc = ct._load(tmp_path / "t.jsonl", data)
        assert ct._columns_fast(doc["header"]["pg_fields"], doc["samples"]) is not None
    if name in ("good", "json.dumps separators", "null value", "colon in a string", "escape in state",
                "quote in a string", "non-ascii text", "minus zero", "spaces everywhere", "long decimals",
                "exponent", "true in a free field", "null in a free field"):
        assert r[0] == "ok" and not r[1]
    if name in ("quoted number", "boolean", "negative", "bytes out of range", "stamp out of range",
                "null pgid", "numeric state", "pgid without a dot", "short row", "long row", "empty row",
                "trailing comma", "missing bracket", "control char in state", "non-utf8", "hex",
                "huge exponent", "Infinity", "digits after e missing", "dot without digits", "bare minus",
                "unknown literal", "unterminated string"):
        assert r[0] == "error" and r[1] == 3, r[:3]


def test_a_broken_deferred_line_is_reported_before_a_later_error(monkeypatch, tmp_path):
    # line 3 is a sample line the fast path defers (not decoded in _load); line 5 goes back in time
    broken = '{"t":1763740002.0,"pgs":[["2.0","active+clean",1,2,0,0,0,0,null,null,"x"],,]}'
    back = '{"t":1763739990.0,"pgs":[%s]}' % ROW
    lines = [HDR, f'{{"t":1763740001.0,"pgs":[{ROW}]}}', broken, f'{{"t":1763740003.0,"pgs":[{ROW}]}}', back]
    data = ("\n".join(lines) + "\n").encode()
    r = _same(tmp_path / "t.jsonl", data, monkeypatch)
    assert r[0] == "error" and r[1] == 3 and "JSON" in r[2]


def test_truncated_last_sample_line_stays_partial(monkeypatch, tmp_path):
    # a last line without newline that happens to end in "]]}" but is not JSON: truncation, not an error
    data = _file(GOOD, GOOD)[:-len(b'{"t":1763740099.0,"end":true,"samples":2}\n')]
    data += b'{"t":1763740003.0,"pgs":[["2.0","act]]}'
    r = _same(tmp_path / "t.jsonl", data, monkeypatch)
    assert r[0] == "ok" and r[1] and r[2]["truncated_last_line"]


def test_thousands_of_pgids_take_the_fast_path(monkeypatch, tmp_path):
    """More distinct pgids than the scanner's first hash table holds (2,048): it grows, and the result
    is the plain reader's."""
    rows = ",".join(f'["2.{k:x}","active+clean",{k},4096,0,0,0,0,1763739000.5,1763739000.5,"x"]'
                    for k in range(5000))
    data = _file(rows, rows)
    doc = ct._load(tmp_path / "t.jsonl", data)
    fast = ct._columns_fast(doc["header"]["pg_fields"], doc["samples"])
    assert fast is not None and len(fast.pgids) == 5000 and fast.pgids[4999] == "2.1387"
    assert fast.n_per.tolist() == [5000, 5000] and fast.numbers["num_objects"][4999] == 4999.0
    r = _same(tmp_path / "t.jsonl", data, monkeypatch)
    assert r[0] == "ok" and len(r[4]) > 0


def test_minus_zero_reads_as_json_reads_it(tmp_path):
    """'-0' is an integer to Python's json (0 → +0.0); '-0.0' is the float -0.0."""
    doc = ct._load(tmp_path / "t.jsonl", _file(DAMAGES["minus zero"]))
    fast = ct._columns_fast(doc["header"]["pg_fields"], doc["samples"])
    assert str(fast.numbers["degraded"][0]) == "0.0" and str(fast.numbers["unfound"][0]) == "-0.0"


def test_mutated_sample_lines_read_as_the_plain_reader_reads_them(monkeypatch, tmp_path):
    """Bytes of the sample lines replaced at random (JSON's structural characters, digits, signs, letters,
    whitespace, high bytes): the fast path's result, or the error, is always the plain one's."""
    base = _file(GOOD, GOOD.replace("10,", "12.5e1,", 1), f"{ROW2},{ROW}")
    first = base.index(b"\n") + 1  # not the header
    last = base.rindex(b'{"t":1763740099.0')
    alphabet = b'[]{},:"\\ \t-+.eE0123456789nultrfas\xff\x01'
    edit = st.tuples(st.integers(first, last - 1), st.sampled_from(list(alphabet)))

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(edit, min_size=1, max_size=4))
    def check(edits):
        buf = bytearray(base)
        for at, b in edits:
            buf[at] = b
        _same(tmp_path / "t.jsonl", bytes(buf), monkeypatch)
    check()


def test_a_line_that_goes_back_and_is_not_json_is_reported_as_not_json(monkeypatch, tmp_path):
    """Found by the mutation test: the fast path checked a deferred line's time before its JSON."""
    broken = '{"t":1763739000.0,"pgs":[[%s,[[]]}' % ROW[1:]  # goes back 1000 s, and the list is not closed
    lines = [HDR, f'{{"t":1763740001.0,"pgs":[{ROW}]}}', broken]
    r = _same(tmp_path / "t.jsonl", ("\n".join(lines) + "\n").encode(), monkeypatch)
    assert r[0] == "error" and r[1] == 3 and r[2].startswith("expected one JSON object per line"), r


def test_the_scanners_numbers_are_pythons_bit_for_bit():
    """pg_rows converts a number exactly (Clinger's fast path, else strtod): the same double as
    ``float(json.loads(text))``, sign of zero included, over integers, decimals and exponents of all sizes."""
    import random
    import struct

    from analysis.ingest._scan import PG_PGID, PG_STATE, pg_rows
    rnd = random.Random(5)
    texts = ["0", "-0", "0.0", "-0.0", "1", "9007199254740992", "9007199254740993", "18446744073709551615",
             "1795622857.22534", "0.1", "0.30000000000000004", "1e22", "1e23", "4.35e-22", "123456789012345678e-40",
             "2.2250738585072014e-308", "1.7976931348623157e308", "5e-324", "12345678901234567890123"]
    for _ in range(3000):
        ip = str(rnd.randrange(10 ** rnd.randrange(1, 21)))
        fp = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(0, 12)))
        t = ("-" if rnd.random() < 0.3 else "") + ip + ("." + fp if fp else "")
        if rnd.random() < 0.4:
            t += rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.randrange(0, 40))
        texts.append(t)
    texts = [t for t in texts if len(t) < 60]
    body = ",".join(f'["1.{k:x}","s",{t}]' for k, t in enumerate(texts))[1:-1]  # rows of one line
    got = pg_rows(body.encode(), 1, [PG_PGID, PG_STATE, 0], 1)
    assert got is not None and got.n_per.tolist() == [len(texts)]
    bits = [struct.pack("<d", x) for x in got.numbers[0]]
    want = [struct.pack("<d", float(json.loads(t))) for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, bits, want) if g != w]
    assert not bad, bad[:5]


def _classes(lines) -> list[tuple]:
    return [(int(k), *(p.tolist() if k == 1 else [])) for k, p in zip(lines.kind, lines.pos)]


def test_the_c_line_classifier_is_the_regular_expression(monkeypatch, tmp_path):
    """``_scan.pg_lines`` (C) gives every line the kind, time span and rows span that
    ``ceph_timeline._FAST_SAMPLE`` gives it: real timelines, then lines mutated at random."""
    from analysis.ingest._scan import pg_lines
    for path in _real():
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        got, want = pg_lines(data), ct.lines_by_regex(data)
        assert got.start.tolist() == want.start.tolist() and _classes(got) == _classes(want), path
        assert (got.kind == 1).sum() > 0
    lines = [b'{"t":1795622876.023,"pgs":[["16.d","active+clean",36,null]]}', b'{"t":1,"pgs":[[]]}',
             b' \t{ "t" : -0.5e+3 , "pgs" : [[ "a" ]] ] } \r', b'{"t":01,"pgs":[[1]]}', b'{"t":1.,"pgs":[[1]]}',
             b'{"t":1e,"pgs":[[1]]}', b'{"t":1,"pgs":[["a:b"]]}', b'{"t":1,"pgs":[[]}', b'{"t":1,"pgs":[[]]]}',
             b'{"mark":"x","t":2}', b"", b"  \r", b"\x0b\x0c", b'{"t":1,"pgs":[[1]]} x', b'{"t":1,"pgs":[[1]]}\r\r',
             b'{"t":1,"pgs":[[1]] \t}', b'{"t":1,"pgs":[[1]]}}', b'{"t":1E+5,"pgs":[[1]]}']
    alphabet = list(b' \t\r\x0b]}[{:"e.-09,')

    @settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(lines), max_size=5),
           st.lists(st.tuples(st.integers(0, 400), st.sampled_from(alphabet + [-1])), max_size=4),
           st.sampled_from([b"", b"\n", b"\n\n"]))
    def check(picked, edits, end):
        buf = bytearray(b"\n".join(picked) + end)
        for at, b in edits:
            if buf and b >= 0:
                buf[at % len(buf)] = b
            elif buf:
                del buf[at % len(buf)]
        data = bytes(buf)
        got, want = pg_lines(data), ct.lines_by_regex(data)
        assert got.start.tolist() == want.start.tolist() and _classes(got) == _classes(want), data
    check()

"""sysutil's fast path (Arrow's JSON reader, files of ARROW_MIN_BYTES or more) against the line-by-line
reader: the same tables, meta and partial flag, or the same error (message and line), on real logs
captured here and on logs damaged in each way the fast path has to notice and hand back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from analysis.ingest import sysutil as su
from conftest import assert_same_outcome, parse_outcome

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data" / "raw"


def _result(data: bytes, fast: bool, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(su, "ARROW_MIN_BYTES", 0 if fast else 1 << 62)
        return parse_outcome(su.parse, Path("sysutil.jsonl"), data)


def _same(data: bytes, monkeypatch) -> tuple:
    return assert_same_outcome(_result(data, True, monkeypatch), _result(data, False, monkeypatch))


def _real() -> list[Path]:
    """A few shipped logs of each campaign family (qos with OSD figures, block with loop devices)."""
    out = []
    for pat in ("ceph-qos/qos-v2/**/sysutil.jsonl.gz", "ceph-qos/qos-reef/**/sysutil.jsonl.gz",
                "block/**/sysutil.jsonl.gz", "rgw/**/sysutil.jsonl.gz"):
        out += sorted(RAW.glob(pat))[:3]
    return out


@pytest.mark.parametrize("path", _real(), ids=lambda p: "/".join(p.parts[-6:-1]))
def test_real_logs_read_the_same(path, monkeypatch):
    data = gzip.decompress(path.read_bytes())
    r = _same(data, monkeypatch)
    assert r[0] == "ok" and len(r[4]) > 0
    if len(data) >= su.ARROW_MIN_BYTES:
        assert su._columns_arrow(data) is not None


LINE = {"t": 1000.0, "cpu": {"cpu0": 0.5, "cpu1": 0.25}, "iowait": {"cpu0": 0.1, "cpu1": 0.0},
        "steal": {"cpu0": 0.0, "cpu1": 0.0}, "mem": {"MemTotal": 8000, "MemAvailable": 4000, "Cached": 1000},
        "disk": {"vda": {"reads": 10, "read_B": 40960, "writes": 20, "write_B": 81920, "io_ms": 500}},
        "load": 1.5, "osd": {"osd.0": {"queued": 3, "in_flight": 2, "cpu": 0.31},
                             "osd.1": {"queued": 0, "in_flight": 0, "cpu": None}}}


def _log(change=None, at: int = 30, n: int = 60, tail: str = "\n") -> bytes:
    lines = []
    for k in range(n):
        x = json.loads(json.dumps(LINE))
        x["t"] = 1000.0 + k
        x["cpu"]["cpu0"] = round(0.01 * k, 4)
        if change is not None and k == at:
            x = change(x)
        lines.append(x if isinstance(x, str) else json.dumps(x, separators=(",", ":")))
    return ("\n".join(lines) + tail).encode()


def _set(path: str, value):
    def f(x):
        d = x
        keys = path.split("/")
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
        return x
    return f


def _drop(path: str):
    def f(x):
        d = x
        keys = path.split("/")
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]
        return x
    return f


DAMAGES = {
    "good": None,
    "idle disk left out": _drop("disk/vda"),
    "no disk object": _drop("disk"),
    "null disk object": _set("disk", None),
    "a device that appears later": _set("disk/vdb", {"reads": 1, "read_B": 512, "writes": 0, "write_B": 0, "io_ms": 3}),
    "null osd cpu": _set("osd/osd.0/cpu", None),
    "int where a float was": _set("load", 2),
    "text value": _set("load", "2.5"),
    "boolean value": _set("cpu/cpu1", True),
    "list value": _set("mem/Cached", [1, 2]),
    "huge value": _set("mem/Cached", 1e16),
    "no cpu": _drop("cpu"),
    "null cpu": _set("cpu", None),
    "cpu not an object": _set("cpu", 0.5),
    "null time": _set("t", None),
    "text time": _set("t", "1030"),
    "time goes back": _set("t", 900.0),
    "osd_error note": _set("osd_error", "probe timed out"),
    "not an object": lambda x: "[1, 2, 3]",
    "not JSON": lambda x: '{"t": 1030.0, "cpu": {"cpu0": 0.5,,}}',
    "duplicate key": lambda x: json.dumps(x, separators=(",", ":"))[:-1] + ',"load":3.5}',
    "blank line": lambda x: "",
}


@pytest.mark.parametrize("name", list(DAMAGES))
def test_damaged_logs_read_as_the_line_reader_reads_them(name, monkeypatch):
    data = _log(DAMAGES[name])
    assert len(data) >= su.ARROW_MIN_BYTES
    r = _same(data, monkeypatch)
    fast = su._columns_arrow(data) is not None
    if name in ("good", "idle disk left out", "no disk object", "null disk object", "a device that appears later",
                "null osd cpu", "int where a float was", "blank line"):
        assert r[0] == "ok" and fast, name
    if name in ("text value", "boolean value", "list value", "huge value", "no cpu", "null cpu",
                "cpu not an object", "null time", "text time", "time goes back", "not an object", "not JSON"):
        assert r[0] == "error" and r[1] == 31 and not fast, (name, r[:4])


def test_a_truncated_last_line_stays_partial_and_a_non_utf8_byte_names_its_offset(monkeypatch):
    data = _log()[:-40]
    r = _same(data, monkeypatch)
    assert r[0] == "ok" and r[1]
    bad = _log().replace(b'"load":1.5', b'"load":1.5\xff', 1)
    r = _same(bad, monkeypatch)
    assert r[0] == "error" and r[3] is not None
    # in a key, Arrow's reader raised UnicodeDecodeError, not its own error (found by tests/test_fuzz.py)
    bad = _log().replace(b'"iowait":{"cpu0"', b'"iowait":{"\x80pu0"', 1)
    r = _same(bad, monkeypatch)
    assert r[0] == "error" and r[3] is not None

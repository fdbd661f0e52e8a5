"""A damage corpus made from real files (issue 26): truncations, flipped bytes, wrong types, out-of-range
values, concatenations of every format we read, each read as ``make data`` reads a file
(``walk.ingest_file``: detection, the reader, the validation layer).

A damaged file must end ``failed`` or ``partial`` (with the file and, where the format has lines, the
line), or ``ok`` with exactly the original's values (the damage hit bytes no reader uses, e.g. a digit of
the tool's version string): never ``ok`` with changed values, and never ``unrecognised`` or ``empty``
(statuses only ``--lenient`` gives; the corpus is read strictly).  ``tests/test_damage.py`` asserts that
per case; run as a script it writes the corpus and prints the counts::

    .venv/bin/python tests/damage_corpus.py [OUT]      # OUT: where the damaged files go (default: a temp dir)
"""

from __future__ import annotations

import gzip
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"
BLK = FIXTURES / "blktrace" / "ftrace-loop-mq-deadline-4k-write"
#: real files, one per format: (file, bytes kept from its head — None: all; a large file is cut to keep the
#: corpus small, which makes that seed itself partial or not: the comparison is against the seed as cut)
SOURCES: dict[str, tuple[Path, int | None]] = {
    "fio-json": (FIXTURES / "fio" / "randrw-4k-perio" / "randrw-4k-perio.json", None),
    "fio-log": (FIXTURES / "fio" / "randwrite-4k-2jobs-offset" / "twojobs_clat.1.log", None),
    "fio-hist-log": (FIXTURES / "fio" / "randread-4k-windowed" / "win_clat_hist.1.log", None),
    "rados-bench": (FIXTURES / "rados_bench" / "ceph-16.2.15_write_4k_t4_22s_cleanup.txt", None),
    "ceph-pg-timeline": (FIXTURES / "ceph_timeline" / "scrub-snaptrim-recovery.jsonl", None),
    "blktrace": (BLK.with_name(BLK.name + ".blktrace.gz"), None),
    # blkparse's per-event text (the fixture beside the trace is its summary only): the blktrace docs' sample
    "blkparse": (ROOT.parent / "shared" / "corpus" / "blkparse" / "blktrace-doc_blkparse_live_sda_with_summary.txt",
                 None),
    "btt": (BLK.with_name(BLK.name + ".btt.txt"), None),
    "sysutil": (ROOT / "data" / "raw" / "ceph-qos" / "qos-v2" / "snaptrim_recovery" / "balanced" / "rep-01"
                / "sysutil.jsonl.gz", None),
}
BINARY = {"blktrace"}


def available() -> list[str]:
    """The kinds whose source file is here (the blkparse sample is in ../shared, absent in some clones)."""
    return [k for k, (p, _) in SOURCES.items() if p.is_file()]

_NUMBER = re.compile(rb"(?<![\w.+-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")


def seed_bytes(kind: str) -> bytes:
    path, keep = SOURCES[kind]
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data[:keep] if keep else data


def seed_name(kind: str) -> str:
    return SOURCES[kind][0].name.removesuffix(".gz")


# --- damages: bytes → damaged bytes, or None where the damage does not apply -----------------------------

def _mid_line(data: bytes, at: int) -> int:
    """``at`` moved to the middle of the line it falls in (a cut that ends on a newline would be a shorter
    file, not a damaged one)."""
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end
    return start + max(1, (end - start) // 2) if end - start > 1 else at


def truncate(frac: float) -> Callable[[bytes, bool], bytes | None]:
    def f(data: bytes, binary: bool) -> bytes | None:
        at = int(len(data) * frac)
        if not binary:
            at = _mid_line(data, at)
        else:
            at -= at % 48 == 0  # never on a record boundary of the 48-byte blk_io_trace header
        return data[:at] if 0 < at < len(data) else None
    f.__name__ = f"truncate-{int(frac * 100)}"
    return f


def concatenated(data: bytes, binary: bool) -> bytes:
    """The file twice (a log appended to itself: time goes back, every count doubles)."""
    return data + (b"" if binary or data.endswith(b"\n") else b"\n") + data


def _numbers(data: bytes) -> list[re.Match]:
    return list(_NUMBER.finditer(data))


def _at_numbers(repl: Callable[[bytes], bytes], name: str, fracs=(0.25, 0.5, 0.75)):
    """A damage of the numbers found at ``fracs`` of the file's numeric tokens (three per file)."""
    def f(data: bytes, binary: bool) -> bytes | None:
        if binary:
            return None
        ms = _numbers(data)
        if len(ms) < 4:
            return None
        out, last = [], 0
        for m in sorted({ms[int(len(ms) * q)].start(): ms[int(len(ms) * q)] for q in fracs}.values(),
                        key=lambda m: m.start()):
            out += [data[last:m.start()], repl(m.group())]
            last = m.end()
        return b"".join(out) + data[last:]
    f.__name__ = name
    return f


def nul_byte(data: bytes, binary: bool) -> bytes | None:
    """One NUL byte in the middle of a text file (a disk block gone bad)."""
    if binary:
        return None
    at = _mid_line(data, len(data) // 2)
    return data[:at] + b"\x00" + data[at:]


def flipped_bytes(data: bytes, binary: bool) -> bytes | None:
    """Six bytes of a binary trace inverted at seeded positions."""
    if not binary:
        return None
    b = bytearray(data)
    for i in np.random.default_rng(26).integers(0, len(b), 6):
        b[int(i)] ^= 0xFF
    return bytes(b)


DAMAGES: list[Callable[[bytes, bool], bytes | None]] = [
    truncate(0.3), truncate(0.6), truncate(0.95), concatenated,
    _at_numbers(lambda n: b'"fast"', "number-as-word"),          # wrong type
    _at_numbers(lambda n: n + b"ms", "number-with-unit"),         # wrong type: "12.5ms"
    _at_numbers(lambda n: n[1:] if n.startswith(b"-") else b"-" + n, "sign-flipped"),  # out of range
    _at_numbers(lambda n: b"1e300", "number-huge"),               # out of range
    nul_byte, flipped_bytes,
]


# --- reading a case as `make data` does ------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str
    damage: str
    status: str               # ok, partial, failed, empty, unrecognised
    error: str | None
    error_line: int | None
    same_values: bool | None  # ok only: the summary and series equal the undamaged seed's


def read_one(path: Path):
    from analysis.ingest.walk import ingest_file
    return ingest_file(path, path.parent, {}, None)


def _values(o) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = ["job", "ddir", "metric", "value", "unit"]
    from analysis.ingest.base import as_frame
    s = as_frame(o.summary)[cols].astype({c: str for c in cols if c != "value"})
    s = s.sort_values(cols).reset_index(drop=True)
    se = as_frame(o.series)
    se = se[[c for c in ("job", "ddir", "metric", "t_s", "value") if c in se]].astype(
        {c: str for c in ("job", "ddir", "metric") if c in se})
    return s, se.sort_values(list(se.columns)).reset_index(drop=True)


def _same(a, b) -> bool:
    (sa, ea), (sb, eb) = _values(a), _values(b)
    return sa.equals(sb) and len(ea) == len(eb) and all(
        np.array_equal(ea[c].to_numpy(), eb[c].to_numpy(), equal_nan=ea[c].dtype.kind == "f") for c in ea)


def run(out: Path) -> list[Outcome]:
    """Write every applicable damage of every source under ``out/<kind>/<damage>/`` and read it."""
    results = []
    for kind in available():
        data, binary = seed_bytes(kind), kind in BINARY
        ref_dir = out / kind / "seed"
        ref_dir.mkdir(parents=True, exist_ok=True)
        (ref_dir / seed_name(kind)).write_bytes(data)
        ref = read_one(ref_dir / seed_name(kind))
        assert ref.row["status"] in ("ok", "partial"), (kind, ref.row)
        for damage in DAMAGES:
            blob = damage(data, binary)
            if blob is None or blob == data:
                continue
            d = out / kind / damage.__name__
            d.mkdir(parents=True, exist_ok=True)
            p = d / seed_name(kind)
            p.write_bytes(blob)
            o = read_one(p)
            st = o.row["status"]
            results.append(Outcome(kind, damage.__name__, st, o.row.get("error"), o.row.get("error_line"),
                                   _same(o, ref) if st == "ok" else None))
    return results


def table(results: list[Outcome]) -> pd.DataFrame:
    return pd.DataFrame([r.__dict__ for r in results])


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="cephqos-damage-"))
    t = table(run(out))
    t["verdict"] = np.select(
        [t["status"].isin(["failed", "partial"]), t["status"].isin(["unrecognised", "empty"]),
         t["same_values"].fillna(False).astype(bool)],
        [t["status"], "NOT READ, NOT FAILED", "ok, values unchanged"], "OK WITH CHANGED VALUES")
    print(f"{len(t)} damaged files from {t['kind'].nunique()} real files under {out}")
    print(t.pivot_table(index="kind", columns="verdict", values="damage", aggfunc="count", fill_value=0)
          .to_string())
    bad = t[t["verdict"].isin(["OK WITH CHANGED VALUES", "NOT READ, NOT FAILED"])]
    for r in bad.itertuples():
        print(f"  {r.verdict.lower()}: {r.kind} / {r.damage}")
    sys.exit(1 if len(bad) else 0)

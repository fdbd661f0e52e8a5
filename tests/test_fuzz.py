"""Hypothesis: mutated and truncated real files give a Parsed or an IngestError, nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from analysis.ingest import IngestError, Parsed, read
from conftest import CORPUS, FIXTURES

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "1000"))
SEEDS = {
    "fio-json": FIXTURES / "fio" / "randrw-4k-perio" / "randrw-4k-perio.json",
    "fio-log": FIXTURES / "fio" / "randwrite-4k-2jobs-offset" / "twojobs_clat.1.log",
    "fio-hist-log": FIXTURES / "fio" / "randread-4k-windowed" / "win_clat_hist.1.log",
}
if (CORPUS / "fio_json").is_dir():
    SEEDS["fio-json-2x"] = CORPUS / "fio_json" / "pkb_fio-2.1.4_sample-result.json"
SEEDS["rados-bench"] = FIXTURES / "rados_bench" / "ceph-16.2.15_write_4k_t4_22s_cleanup.txt"
SEEDS["ceph-pg-timeline"] = FIXTURES / "ceph_timeline" / "scrub-snaptrim-recovery.jsonl"


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
                [b"\n", b", ", b"-", b"{", b'"fio version"', b"99999999999999999999", b"nan"]))
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


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_mutations_never_escape(name, tmp_path_factory):
    data = SEEDS[name].read_bytes()
    d = tmp_path_factory.mktemp(name)
    target = d / SEEDS[name].name  # same name, same folder layout (companion lookup included)

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated(data))
    def check(blob: bytes):
        target.write_bytes(blob)
        try:
            r = read(target)
        except IngestError as e:
            assert e.path == str(target)
            assert e.line is None or e.line >= 1
            return
        assert isinstance(r, Parsed)
        assert list(r.summary.columns) == ["source", "job", "ddir", "metric", "value", "unit"]

    check()

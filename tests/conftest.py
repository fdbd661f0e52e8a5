"""Shared test helpers: fixture folders and the third-party corpus in ../shared (skipped if absent)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    return CORPUS


PROC = ROOT / "data" / "processed"


@pytest.fixture(scope="session")
def real_proc(tmp_path_factory) -> Path:
    """The processed tables of the shipped data: data/processed when `make data` has built a complete set,
    else the shipped data/raw ingested once for the whole test run (pytest run by hand on a clean clone)."""
    from analysis.store import TableSetError, verify
    try:
        verify(PROC)
        return PROC
    except TableSetError:
        pass
    from analysis.ingest.walk import ingest, write_tables
    out = tmp_path_factory.mktemp("processed")
    write_tables(ingest(ROOT / "data" / "raw", progress=False, jobs=2), out)
    return out


@pytest.fixture(autouse=True)
def _restore_signal_handlers():
    """Tests that call a capture harness's main() install its SIGTERM/SIGINT handlers in this process; put the
    previous ones back so that later tests (and the pools they fork) do not inherit them."""
    import signal
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, h in saved.items():
        if signal.getsignal(s) is not h and h is not None:
            signal.signal(s, h)


def parse_outcome(parse, *args) -> tuple:
    """What a reader's ``parse(*args)`` gives, comparable between a fast path and its reference:
    ``("ok", partial, meta, summary, series)`` or ``("error", line, message, byte offset)``."""
    from analysis.ingest import IngestError
    try:
        r = parse(*args)
    except IngestError as e:
        return ("error", e.line, e.message, e.offset)
    return ("ok", r.partial, r.meta, r.summary, r.series)


def assert_same_outcome(fast: tuple, plain: tuple) -> tuple:
    """The fast path's outcome equals the reference's: the same error, or the same partial flag, meta
    and tables (dtypes and categories included).  Returns the outcome."""
    import pandas as pd
    assert fast[0] == plain[0], (fast[:4], plain[:4])
    if fast[0] == "error":
        assert fast == plain
    else:
        assert fast[1:3] == plain[1:3]
        pd.testing.assert_frame_equal(fast[3], plain[3])
        pd.testing.assert_frame_equal(fast[4], plain[4])
    return fast


def _c_on() -> bool:
    from analysis.ingest import _scan
    return _scan.native()


#: a test of the C part itself (against its plain reference): skipped when ``CEPHQOS_NATIVE=0`` switches it
#: off — ``make test`` runs the reader tests a second time so — or no compiler can build it
c_only = pytest.mark.skipif("not __import__('conftest')._c_on()",
                            reason="the C part is off (CEPHQOS_NATIVE=0) or not built")

"""The data dictionary (analysis.dictionary, docs/tables.md's section) covers every metric the readers emit: on the
test fixtures, the third-party corpus and the shipped processed tables."""

from __future__ import annotations


import pandas as pd
import pytest

from analysis import dictionary as dic
from analysis.ingest.walk import ingest
from conftest import FIXTURES, ROOT

SHARED = ROOT.parent / "shared" / "corpus"


def _undescribed(t: pd.DataFrame, table: str) -> list[tuple[str, str, str]]:
    seen = t[["kind", "metric", "unit"]].astype(str).drop_duplicates()
    return sorted(tuple(r) for r in seen.itertuples(index=False) if dic.lookup(*r, table=table) is None)


def test_the_readme_section_is_the_generated_one():
    assert dic.readme_section((ROOT / "docs" / "tables.md").read_text()) == dic.markdown(), \
        "docs/tables.md's dictionary section is stale: python -m analysis dictionary"
    text = "# x\n\nintro\n"
    once = dic.readme_with_section(text)
    assert once.startswith(text) and dic.readme_section(once) == dic.markdown()
    assert dic.readme_with_section(once) == once  # replaced in place, not appended twice


def test_lookup_matches_names_and_units():
    assert dic.lookup("fio-json", "clat_p99.9", "ns").meaning.startswith("latency percentile")
    assert dic.lookup("fio-json", "clat_p99.9", "B/s") is None        # a unit the reader never gives
    assert dic.lookup("fio-json", "clat_pct", "ns") is None
    assert dic.lookup("ceph-pg-timeline", "scrub_duration", "s") is not None
    assert dic.lookup("ceph-pg-timeline", "scrub_duration", "s", table="series") is None


def test_every_metric_of_the_fixtures_is_described():
    res = ingest(FIXTURES, progress=False, lenient=True)
    assert _undescribed(res.summary, "summary") == []
    assert _undescribed(res.series, "series") == []


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/corpus absent")
def test_every_metric_of_the_corpus_is_described():
    res = ingest(SHARED, progress=False)
    assert _undescribed(res.summary, "summary") == []
    assert _undescribed(res.series, "series") == []


def test_every_metric_of_the_shipped_tables_is_described():
    proc = ROOT / "data" / "processed"
    if not (proc / "summary.parquet").is_file():
        pytest.skip("data/processed not built (make data)")
    cols = ["kind", "metric", "unit"]
    assert _undescribed(pd.read_parquet(proc / "summary.parquet", columns=cols), "summary") == []
    assert _undescribed(pd.read_parquet(proc / "series.parquet", columns=cols), "series") == []

"""data/published/rgw-getput-diary.csv: every number of the CBT RGW getput diary, checked against the seed in
place (``../shared/seeds``; skipped when absent), and its relative statements recomputed."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis.published import rgw as pr

HAVE_SEED = (pr.SEEDS / pr.SEED).is_file()
needs_seed = pytest.mark.skipif(not HAVE_SEED, reason="../shared/seeds is absent")


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return pr.load()


@pytest.fixture(scope="module")
def lines() -> list[str]:
    if not HAVE_SEED:
        pytest.skip("../shared/seeds is absent")
    return (pr.SEEDS / pr.SEED).read_text(encoding="utf-8").splitlines()


def test_schema(df):
    assert list(pd.read_csv(pr.CSV, dtype=str, nrows=0).columns) == pr.COLUMNS
    assert len(df) == 100 and set(df["origin"]) == {"published"} and set(df["seed"]) == {pr.SEED}
    assert set(df["kind"]) == set(pr.KINDS)


@needs_seed
def test_every_sentence_is_at_its_seed_line(df, lines):
    for r in df.itertuples(index=False):
        assert r.sentence in lines[r.seed_line - 1], (r.seed_line, r.printed)
        assert r.printed in r.sentence
    assert pr.check_provenance(df) == []


@needs_seed
def test_every_number_of_the_seed_has_a_row(df, lines):
    """Each number printed on a seed line (model numbers and the attachment's name aside) is printed by a row of
    that line."""
    for i, line in enumerate(lines, start=1):
        text = re.sub(r"E5-2650v3|P3700|ES\.2|runtests\.xfs\.16\.rgw\.yaml", "", line)
        printed = set()
        for p in df.loc[df["seed_line"] == i, "printed"]:
            printed |= set(re.findall(r"\d+(?:\.\d+)?", p))
        assert [n for n in re.findall(r"\d+(?:\.\d+)?", text) if n not in printed] == [], f"line {i}"


def _value(df, **kw) -> list[float]:
    sel = pd.Series(True, index=df.index)
    for k, v in kw.items():
        sel &= df[k] == v
    return df.loc[sel, "value"].tolist()


@needs_seed
def test_values_against_the_seed_text(df, lines):
    # line 32: "Three high concurrency 4MB Object RGW PUT tests showed results of 602MB/s, 557MB/s and 563MB/s."
    assert "602MB/s, 557MB/s and 563MB/s" in lines[31]
    assert _value(df, seed_line=32, tool="getput", metric="write_bw", kind="measured") == [400, 602, 557, 563]
    assert _value(df, seed_line=32, arm="1bucket_8shards", metric="write_bw") == [400]
    assert _value(df, seed_line=32, tool="rados_bench", metric="write_bw", kind="measured") == [580, 580, 564]
    # line 30: "rados bench was able to achieve 550-600MB/s" → two rows, low and high
    assert "550-600MB/s" in lines[29]
    rb = df[(df["seed_line"] == 30) & (df["tool"] == "rados_bench")]
    assert rb["bound"].tolist() == ["low", "high"] and rb["value"].tolist() == [550, 600]
    # line 53: 4 clients, 11620MB/s; line 58: 9306 and 9445 MB/s aggregate over 4 gateways
    assert "11620MB/s" in lines[52] and _value(df, metric="write_bw", setup="nvme", tool="rados_bench",
                                                   clients="4") == [11620]
    assert "9306MB/s" in lines[57] and "9445MB/s" in lines[57]
    assert _value(df, seed_line=58, metric="write_bw", kind="measured") == [9306, 9445]
    # line 43: "approximately 1.3M objects"
    assert _value(df, metric="objects_at_split") == [1_300_000]
    assert df.loc[df["metric"] == "objects_at_split", "approx"].tolist() == [1]
    # line 34: 32MB vs 128MB thread cache, 500-600 % vs 300-400 % CPU
    cpu = df[(df["metric"] == "rgw_cpu") & (df["setup"] == "hdd")]
    assert dict(zip(zip(cpu["arm"], cpu["bound"]), cpu["value"])) == {
        ("threadcache_32MB", "low"): 500, ("threadcache_32MB", "high"): 600,
        ("threadcache_128MB", "low"): 300, ("threadcache_128MB", "high"): 400}


def test_recomputed_relative_statements(df):
    r = pr.recompute_derived(df).set_index(["seed_line", "metric", "tool"])
    # "around 56MB/s per drive": 1350 / 24 = 56.25
    per_drive = r.loc[(48, "per_drive_bw", "rados_bench")]
    assert per_drive["rec_lo"] == pytest.approx(56.25) and per_drive["status"] == "ok"
    # "roughly double": 1350 / 600 = 2.25 … 1350 / 550 = 2.4545: more than double, hedged → approx (flagged)
    double = r.loc[(48, "write_bw", "rados_bench")]
    assert (double["rec_lo"], double["rec_hi"]) == (pytest.approx(2.25), pytest.approx(1350 / 550))
    assert double["status"] == "approx"
    assert "understates" in df.loc[(df["seed_line"] == 48) & (df["printed"] == "double"), "note"].iloc[0]
    # "roughly 2361MB/s per gateway" = 9445 / 4; "81% of the rados bench throughput" = 9445 / 11620
    assert r.loc[(58, "per_gateway_bw", "getput"), "rec_lo"] == pytest.approx(2361.25)
    share = r.loc[(58, "write_bw", "getput")]
    assert share["rec_lo"] == pytest.approx(9445 / 11620 * 100) and share["status"] == "ok"
    # the 20 % (both tools), the ~5 % multi-client drop and the order of magnitude have no stated inputs
    assert sorted(r.loc[r["status"] == "not stated", "printed"]) == ["20%", "20%", "an order of magnitude", "~5%"]


def test_recompute_flags_a_contradiction(df):
    wrong = df.copy()
    i = wrong.index[(wrong["seed_line"] == 58) & (wrong["printed"] == "81%")][0]
    wrong.loc[i, "value"] = 90.0  # 9445 / 11620 is 81.3 %, not 90 %
    r = pr.recompute_derived(wrong)
    assert r.loc[(r["seed_line"] == 58) & (r["relation"] == "share_pct"), "status"].tolist() == ["contradiction"]


def test_check_provenance_names_the_row(tmp_path, df):
    bad = df.head(3).copy()
    bad.loc[bad.index[1], "sentence"] = "not in the seed"
    bad.loc[bad.index[2], "tool"] = "cosbench"
    seeds = pr.SEEDS if HAVE_SEED else tmp_path
    problems = pr.check_provenance(bad, seeds=seeds, csv="t.csv")
    if not HAVE_SEED:
        assert all("not found" in p for p in problems)
        return
    assert problems == [
        f"t.csv row 3 ({bad['metric'].iloc[1]} '{bad['printed'].iloc[1]}'): sentence is not a sentence of {pr.SEED} "
        f"line {bad['seed_line'].iloc[1]}",
        f"t.csv row 3 ({bad['metric'].iloc[1]} '{bad['printed'].iloc[1]}'): printed '{bad['printed'].iloc[1]}' is not "
        "in its sentence",
        f"t.csv row 4 ({bad['metric'].iloc[2]} '{bad['printed'].iloc[2]}'): tool 'cosbench' not in "
        f"{pr.TOOLS}"]

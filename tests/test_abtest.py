"""analysis.stats.abtest and ``python -m analysis compare``: per-run values, the median CI, Welch on logs
against scipy on hand-made runs, verdicts and regressions, one-sided cells, the CLI's exit codes and formats,
and the real block campaign against fio's own JSON read here with the json module."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from io import StringIO

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.store import commit
from analysis.stats import abtest as ab
from conftest import ROOT


def rows(side_runs: dict[str, list[float]], metric: str, unit: str, scenario: str = "s1", kind: str = "fio-json",
         jobs: int = 1) -> list[dict]:
    """Summary rows: one per run (and job): the run's value split evenly over ``jobs`` jobs for a
    throughput, the same value in each job otherwise."""
    out = []
    for run, v in side_runs.items():
        for j in range(jobs):
            val = v / jobs if unit in ab.HIGHER_BETTER else v
            out.append(dict(source=f"{run}/fio.json", job=f"job{j}", ddir="read", metric=metric, value=val,
                            unit=unit, kind=kind, scenario=scenario, run=run))
    return out


OLD_IOPS = [100.0, 110.0, 105.0]
NEW_IOPS = [120.0, 125.0, 130.0]
OLD_LAT = [1000.0, 1100.0, 1050.0, 990.0]
NEW_LAT = [1300.0, 1250.0, 1400.0, 1320.0]


@pytest.fixture()
def sides():
    old = pd.DataFrame(rows({f"o{i}": v for i, v in enumerate(OLD_IOPS)}, "iops", "1/s", jobs=2)
                       + rows({f"o{i}": v for i, v in enumerate(OLD_LAT)}, "clat_mean", "ns", jobs=2)
                       + rows({"o0": 5.0}, "scrub_duration", "s", kind="ceph-pg-timeline")
                       + rows({"o0": 7.0}, "iops", "1/s", scenario="only-old"))
    new = pd.DataFrame(rows({f"n{i}": v for i, v in enumerate(NEW_IOPS)}, "iops", "1/s", jobs=2)
                       + rows({f"n{i}": v for i, v in enumerate(NEW_LAT)}, "clat_mean", "ns", jobs=2)
                       + rows({"n0": 6.0, "n1": 6.5}, "scrub_duration", "s", kind="ceph-pg-timeline")
                       + rows({"n0": 9.0, "n1": 9.5}, "iops", "1/s", scenario="only-new"))
    return old, new


def test_run_values_sum_throughput_and_average_latency_over_a_runs_jobs(sides):
    old, _ = sides
    v = ab.run_values(old, ["scenario"])
    iops = v[(v["metric"] == "iops") & (v["scenario"] == "s1")].set_index("run")["value"]
    assert iops.to_dict() == {"o0": 100.0, "o1": 110.0, "o2": 105.0}  # two jobs of 50, 55, 52.5 each
    lat = v[v["metric"] == "clat_mean"].set_index("run")["value"]
    assert lat.to_dict() == {"o0": 1000.0, "o1": 1100.0, "o2": 1050.0, "o3": 990.0}
    # fio --client's "All clients" repeats its clients' sum; without a run key the file is the run
    extra = pd.DataFrame(rows({"x": 40.0}, "iops", "1/s", jobs=2)).assign(run=None)
    extra = pd.concat([extra, extra.iloc[:1].assign(job="All clients", value=40.0)])
    assert ab.run_values(extra, [])["value"].tolist() == [40.0]
    # fio's log restates its JSON: read only for a run without the JSON
    logs = pd.DataFrame(rows({"o0": 9999.0, "z": 7.0}, "clat_mean", "ns", kind="fio-log"))
    v = ab.run_values(pd.concat([old, logs]), ["scenario"])
    assert v.loc[v["kind"] == "fio-log", "run"].tolist() == ["z"]


@pytest.mark.parametrize("n, k", [(5, None), (6, 1), (8, 1), (9, 2), (10, 2), (20, 6)])
def test_median_ci_is_the_binomial_order_statistic_interval(n, k):
    """Hand-worked: n = 10 → (x₂, x₉), coverage 1 − 2·11/1024 = 0.979; n = 5 cannot reach 95 %
    (1 − 2/32 = 0.9375)."""
    x = np.arange(1.0, n + 1)[::-1]  # unsorted on purpose
    lo, hi = ab.median_ci(x)
    if k is None:
        assert np.isnan(lo) and np.isnan(hi)
    else:
        assert (lo, hi) == (float(k), float(n + 1 - k))
        assert 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= 0.95 > 1 - 2 * stats.binom.cdf(k, n, 0.5)


def test_welch_on_logs_against_scipy_and_the_verdicts(sides):
    old, new = sides
    t = ab.compare(old, new, keys=["scenario"], threshold_pct=10).reset_index().set_index(["scenario", "metric"])
    r = t.loc[("s1", "iops")]
    la, lb = np.log(OLD_IOPS), np.log(NEW_IOPS)
    res = stats.ttest_ind(lb, la, equal_var=False)
    assert r["test"] == "Welch t (log)" and r["p"] == pytest.approx(res.pvalue, rel=1e-12)
    assert r["effect_pct"] == pytest.approx(100 * (np.exp(lb.mean() - la.mean()) - 1))
    ci = res.confidence_interval(0.95)
    assert (r["effect_lo"], r["effect_hi"]) == pytest.approx((100 * np.expm1(ci.low), 100 * np.expm1(ci.high)))
    assert r["delta_pct"] == pytest.approx(100 * (125 / 105 - 1))
    assert (r["n_old"], r["n_new"], r["median_old"], r["median_new"]) == (3, 3, 105.0, 125.0)
    assert np.isnan(r["median_old_lo"])  # three runs cannot bound a median at 95 %
    assert r["p"] < 0.05 and r["verdict"] == "better" and not r["regression"]
    # higher latency is worse: +25 % beyond the 10 % threshold is a regression
    lat = t.loc[("s1", "clat_mean")]
    assert lat["verdict"] == "worse" and lat["regression"] and lat["effect_pct"] > 10
    # one run on a side: listed, not tested; cells on one side only: listed
    assert t.loc[("s1", "scrub_duration"), "verdict"] == "cannot test: n = 1 vs 2 runs (a side needs ≥ 2)"
    assert t.loc[("only-old", "iops"), "verdict"] == "only old"
    assert t.loc[("only-new", "iops"), "verdict"] == "only new"
    assert t.loc[("only-new", "iops"), "n_new"] == 2
    # Holm over the two tested rows
    p = np.sort(t["p"].dropna().to_numpy())
    assert np.sort(t["p_holm"].dropna().to_numpy()) == pytest.approx(np.minimum([2 * p[0], max(2 * p[0], p[1])], 1))
    # repeats needed: two-sample t power 0.8 for the observed change at the observed spread
    from statsmodels.stats.power import TTestIndPower
    d = abs(lb.mean() - la.mean()) / np.sqrt((la.var(ddof=1) + lb.var(ddof=1)) / 2)
    n = TTestIndPower().solve_power(effect_size=d, alpha=0.05, power=0.8)
    assert r["repeats_needed"] == max(2, np.ceil(n))


def test_a_threshold_decides_what_is_a_regression_and_not_significant_is_tilde():
    old = pd.DataFrame(rows({"a": 100.0, "b": 120.0, "c": 90.0}, "iops", "1/s"))
    new = pd.DataFrame(rows({"d": 101.0, "e": 95.0, "f": 118.0}, "iops", "1/s"))
    r = ab.compare(old, new, keys=[]).iloc[0]
    assert r["verdict"] == "~" and not r["regression"] and r["p"] > 0.5
    flat = pd.DataFrame(rows({"a": 100.0, "b": 100.0}, "iops", "1/s"))
    assert ab.compare(flat, flat, keys=[]).iloc[0]["verdict"] == "cannot test: no spread on either side"


def test_split_by_a_key_names_its_values():
    s = pd.DataFrame(rows({"a": 1.0, "b": 2.0}, "iops", "1/s")).assign(op_queue=["wpq", "mclock_scheduler"])
    old, new, vo, vn = ab.split(s, "op_queue")
    assert (vo, vn) == ("mclock_scheduler", "wpq") and len(old) == len(new) == 1
    with pytest.raises(ab.CompareError, match="no column 'profile'"):
        ab.split(s, "profile")
    with pytest.raises(ab.CompareError, match="has no value 'bfq'"):
        ab.split(s, "op_queue", "bfq", "wpq")
    three = pd.concat([s, s.iloc[:1].assign(op_queue="x")])
    with pytest.raises(ab.CompareError, match="has 3 values"):
        ab.split(three, "op_queue")
    with pytest.raises(ab.CompareError, match="op_queue, the OSD's; io_scheduler, the block layer's"):
        ab.split(s, "scheduler")  # the old one-column name points at the two


def _tables(path, summary):
    path.mkdir()
    summary.to_parquet(path / "summary.parquet")
    pd.DataFrame({"path": ["x"], "status": ["ok"]}).to_parquet(path / "files.parquet")
    summary.assign(t_s=0.0).to_parquet(path / "series.parquet")
    commit(path, ["files", "summary", "series"])  # as an ingest records its set
    return path


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "analysis", "compare", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


def test_cli_exit_codes_and_formats(tmp_path, sides):
    old, new = sides
    a, b = _tables(tmp_path / "a", old), _tables(tmp_path / "b", new)
    r = _cli(a, b)
    assert r.returncode == 1, r.stderr  # latency +25 %: a regression beyond the default 5 %
    assert "worse (regression)" in r.stdout and "better" in r.stdout and "only new" in r.stdout
    assert "regression(s) beyond 5 %" in r.stdout
    r = _cli(a, b, "--metric", "iops", "--format", "csv")
    assert r.returncode == 0, r.stderr
    got = pd.read_csv(StringIO(r.stdout))
    assert set(got["level"]) == {"cell", "across workloads"}
    got = got[got["level"] == "cell"]
    assert set(got["verdict"]) == {"better", "only old", "only new"}
    assert got.loc[got["scenario"] == "s1", "median_new"].item() == 125.0
    r = _cli(a, b, "--format", "json", "--threshold", "30%")
    assert r.returncode == 0 and json.loads(r.stdout)["threshold_pct"] == 30.0
    r = _cli(a, b, "--format", "markdown", "--metric", "iops")
    assert "\n|---|---|" in r.stdout and "| s1 fio-json read | iops |" in r.stdout
    assert _cli(a).returncode == 2 and "give two data paths" in _cli(a).stderr
    r = _cli(a, tmp_path / "nope")
    assert r.returncode == 2 and "nope: no such file or folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = _cli(a, tmp_path / "empty")
    assert r.returncode == 2 and "nothing readable" in r.stderr
    r = _cli(a, b, "--threshold", "lots")
    assert r.returncode == 2 and "error: --threshold lots: expected a finite percentage ≥ 0, such as 5 or 5%" in r.stderr


def _fio_bw(run_dir) -> float:
    """fio 3.33's own read bandwidth (bw_bytes, B/s) of the run, read with the json module."""
    with gzip.open(run_dir / "fio.json.gz", "rt") as f:
        text = f.read()
    doc = json.loads(text[text.index("{"):])
    return float(sum(j["read"]["bw_bytes"] for j in doc["jobs"]))


def test_real_block_campaign_by_scheduler_matches_fios_own_numbers(tmp_path):
    """The shipped block campaign, one workload, split by scheduler: n per side is the runs on disk, the
    medians are the medians of fio's own bw_bytes, and p is scipy's Welch on their logs."""
    scen = ROOT / "data" / "raw" / "block" / "block-2026" / "fio-btrfs-read-128k-qd16"
    if not scen.is_dir():
        pytest.skip("shipped block campaign absent")
    r = _cli(scen, "--by", "io_scheduler", "--old-value", "mq-deadline", "--new-value", "none", "--metric", "bw",
             "--format", "csv")
    assert r.returncode in (0, 1), r.stderr
    got = pd.read_csv(StringIO(r.stdout))
    got = got[(got["ddir"] == "read") & (got["kind"] == "fio-json")].iloc[0]
    a = np.array([_fio_bw(d) for d in sorted((scen / "mq-deadline").glob("rep-*"))])
    b = np.array([_fio_bw(d) for d in sorted((scen / "none").glob("rep-*"))])
    assert (got["n_old"], got["n_new"]) == (len(a), len(b)) and len(a) >= 3
    assert got["median_old"] == pytest.approx(np.median(a)) and got["median_new"] == pytest.approx(np.median(b))
    assert got["p"] == pytest.approx(stats.ttest_ind(np.log(b), np.log(a), equal_var=False).pvalue, rel=1e-9)


def test_forest_draws_each_tested_cell_with_its_interval(sides):
    import matplotlib
    matplotlib.use("Agg")
    from analysis.figures import compare as figs
    old, new = sides
    t = ab.compare(old, new, keys=["scenario"])
    fig = figs.forest(t, ("A", "B"))
    ax = fig.axes[0]
    assert fig.get_label() == figs.FOREST == "compare-forest"
    labels = [x.get_text() for x in ax.get_yticklabels()]
    assert sorted(labels) == ["s1 clat_mean read", "s1 iops read"]  # the two tested rows
    assert "change of B against A" in ax.get_xlabel()
    # the points sit at the table's effects
    xs = sorted(float(c.lines[0].get_xdata()[0]) for c in ax.containers)
    assert xs == pytest.approx(sorted(t["effect_pct"].dropna()))


def test_sources_archives_files_and_unsafe_members(tmp_path):
    """load(): an archive is unpacked and read like its folder, one output file is read alone, and an
    archive member that would land outside the unpack folder is refused by name."""
    import tarfile
    import zipfile
    from analysis.ingest.anysource import load
    from analysis.ingest.base import IngestError
    from conftest import FIXTURES
    src = FIXTURES / "fio" / "randread-4k-windowed"
    arc = tmp_path / "run.tar.gz"
    with tarfile.open(arc, "w:gz") as t:
        t.add(src, arcname="randread-4k-windowed")
    folder, packed = load(src), load(arc)
    assert packed.source == "archive" and folder.source == "raw"
    key = ["kind", "job", "ddir", "metric", "value"]
    assert packed.summary[key].astype(str).sort_values(key).values.tolist() == \
        folder.summary[key].astype(str).sort_values(key).values.tolist()
    one = load(src / "randread-4k-windowed.json")
    assert one.source == "file" and set(one.summary["kind"].astype(str)) == {"fio-json"}
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("../outside.json", "{}")
    with pytest.raises(IngestError, match="'../outside.json' would unpack outside"):
        load(bad)
    with pytest.raises(IngestError, match="expected a readable tar or zip archive"):
        (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
        load(tmp_path / "broken.tar.gz")


def test_conclusion_lists_the_cells_told_apart_with_their_change(sides):
    old, new = sides
    t = ab.compare(old, new, keys=["scenario"], threshold_pct=10)
    text = ab.conclusion(t, ("arm=a", "arm=b"))
    r = t.reset_index().set_index(["scenario", "metric"]).loc[("s1", "iops")]
    assert text.startswith("## Conclusion\n\n- **arm=b against arm=a:** " + ab.summary_line(t) + ".")
    assert (f"- **better** (1): s1 fio-json {r['ddir']} iops {r['effect_pct']:+.1f} % "
            f"[{r['effect_lo']:+.1f}, {r['effect_hi']:+.1f}]." in text)
    assert "- **worse** (1): s1 fio-json" in text and "clat_mean" in text

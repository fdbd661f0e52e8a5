"""A grid of workloads compared A against B (issue 48): the shipped bench_fio grid (data/raw/fio-grid,
captured here by ``make capture-fio-grid``) target against target, checked against the harness's own record
of what fio printed; one-run cells get no p-value; the across-workload summary on hand-made grids whose
answer is known; the same answer from plain folders whose names say nothing; the grid figures."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import abtest as ab
from conftest import ROOT

GRID = ROOT / "data" / "raw" / "fio-grid"


@pytest.fixture(scope="module")
def grid_table():
    s = ab.sides(GRID / "loop-disk", GRID / "loop-shm")
    t = ab.compare(s.old, s.new, keys=ab.workload_keys(s.old, s.new))
    return s, t


def _harness_iops() -> pd.DataFrame:
    """What the capture harness read from each fio JSON with the json module as it ran (sitting-*.json)."""
    runs = json.loads(next(GRID.glob("sitting-*.json")).read_text())["runs"]
    return pd.DataFrame(runs)


def test_the_grid_compares_cell_by_cell_with_each_cells_own_runs(grid_table):
    s, t = grid_table
    assert ab.contrast(s.old, s.new) == {"target": (["loop-disk"], ["loop-shm"])}
    assert "target" not in t.attrs["keys"] and {"rw", "iodepth", "numjobs", "bs_B"} <= set(t.attrs["keys"])
    iops = t.xs("iops", level="metric").reset_index()
    assert len(iops) == 2 * 7 * 3  # rw × iodepth × numjobs: never pooled into one cell
    h = _harness_iops()
    for _, r in iops.iterrows():
        for side, target in (("old", "loop-disk"), ("new", "loop-shm")):
            qd, nj = int(r["iodepth"]), int(r["numjobs"])  # cell keys are text in the compare table
            runs = h[(h["target"] == target) & (h["mode"] == r["rw"]) & (h["iodepth"] == qd)
                     & (h["numjobs"] == nj)]["iops"]
            assert r[f"n_{side}"] == len(runs) == (2 if nj == 1 else 1)
            assert r[f"median_{side}"] == pytest.approx(float(np.median(runs)), rel=1e-9)


def test_one_run_a_side_gets_its_ratio_and_no_p_value(grid_table):
    _, t = grid_table
    one = t[(t["n_old"] == 1) & (t["n_new"] == 1)]
    assert len(one) == 2 * 7 * 2 * 7  # numjobs 2 and 4: 7 metrics each
    assert (one["verdict"] == "one run a side: no test").all()
    assert one["p"].isna().all() and one["q"].isna().all() and one["effect_pct"].isna().all()
    assert np.allclose(one["delta_pct"], 100 * (one["median_new"] / one["median_old"] - 1))
    two = t[(t["n_old"] == 2) & (t["n_new"] == 2)]
    assert two["p"].notna().all() and set(two["verdict"]) <= {"better", "worse", "~"}


def test_the_across_workload_summary_of_the_grid(grid_table):
    _, t = grid_table
    a = ab.across_workloads(t)
    iops = a.xs("iops", level="metric")
    assert set(iops["cells"]) == {21} and set(iops["basis"]) == {"across 21 workloads, not repeats"}
    for ddir in ("read", "write"):
        r = iops.xs(ddir, level="ddir").iloc[0]
        cells = t.xs(("iops", ddir), level=("metric", "ddir"))
        x = np.log(cells["median_new"] / cells["median_old"])
        assert r["gmean_ratio"] == pytest.approx(np.exp(x.mean()))
        assert r["p_signed_rank"] == pytest.approx(stats.wilcoxon(x).pvalue)
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))  # the t interval, by hand
        assert (r["ratio_lo"], r["ratio_hi"]) == pytest.approx((np.exp(x.mean() - half), np.exp(x.mean() + half)))
        assert r["better"] + r["worse"] + r["within"] == 21


def _grid_rows(ratios: dict[tuple[int, int], float], runs: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = {"old": [], "new": []}
    for (qd, nj), ratio in ratios.items():
        for k in range(runs):
            base = 1000.0 * qd * (1 + 0.01 * k)
            for side, v in (("old", base), ("new", base * ratio)):
                rows[side].append(dict(source=f"{side}/{qd}-{nj}-{k}.json", job="j", ddir="read", metric="iops",
                                       value=v, unit="1/s", kind="fio-json", rw="randread", iodepth=qd,
                                       numjobs=nj, run=f"{side}/{qd}-{nj}-{k}"))
    return pd.DataFrame(rows["old"]), pd.DataFrame(rows["new"])


def test_across_workloads_on_hand_made_grids_with_known_answers():
    up = {(qd, nj): 1.5 for qd in (1, 4, 16, 64) for nj in (1, 2)}  # B 1.5× everywhere: 8 cells
    old, new = _grid_rows(up)
    a = ab.across_workloads(ab.compare(old, new)).iloc[0]
    assert a["gmean_ratio"] == pytest.approx(1.5) and (a["better"], a["worse"], a["within"]) == (8, 0, 0)
    assert a["verdict"] == "no spread: no test"  # every ratio the same: no t interval, no rank test
    mixed = {k: (2.0 if k[0] < 16 else 0.5) for k in up}  # half ×2, half ×½: no change across the grid
    mixed[(1, 1)] = 2.2
    old, new = _grid_rows(mixed)
    a = ab.across_workloads(ab.compare(old, new)).iloc[0]
    assert (a["better"], a["worse"]) == (4, 4) and a["verdict"] == "~"
    assert a["ratio_lo"] < 1 < a["ratio_hi"]
    graded = {k: 1.2 + 0.05 * i for i, k in enumerate(up)}  # all better, by different amounts
    old, new = _grid_rows(graded)
    a = ab.across_workloads(ab.compare(old, new)).iloc[0]
    assert a["p_signed_rank"] == pytest.approx(2 / 2 ** 8)  # exact: all 8 signs positive
    assert a["verdict"] == "better" and a["ratio_lo"] > 1


def test_verdicts_control_the_false_discovery_rate():
    """Three cells of 4 runs a side (seeded): two with raw p < 0.05 that Benjamini–Hochberg over the three
    does not keep (q 0.067): their verdict is ``~``, not ``better`` as raw p would say."""
    rng = np.random.default_rng(6)
    rows_old, rows_new = [], []
    for qd, shift in ((1, 0.04), (2, 0.0), (4, 0.0)):
        a = 1000 * np.exp(rng.normal(0, 0.02, 4))
        b = 1000 * np.exp(rng.normal(shift, 0.02, 4))
        for side, vals, rows in (("old", a, rows_old), ("new", b, rows_new)):
            for k, v in enumerate(vals):
                rows.append(dict(source=f"{side}{qd}{k}", job="j", ddir="read", metric="iops", value=v, unit="1/s",
                                 kind="fio-json", iodepth=qd, numjobs=1, run=f"{side}{qd}{k}"))
    t = ab.compare(pd.DataFrame(rows_old), pd.DataFrame(rows_new))
    from statsmodels.stats.multitest import multipletests
    assert np.allclose(t["q"], multipletests(t["p"], method="fdr_bh")[1])
    assert ((t["p"] < 0.05) & (t["verdict"] == "~")).sum() == 2
    assert ((t["q"] < 0.05) == (t["verdict"] != "~")).all()


def test_plain_folders_whose_names_say_nothing_give_the_same_cells(tmp_path, grid_table):
    """The grid's JSONs copied flat into two folders as 000.json, 001.json, …: the cells come from what
    fio recorded, so the table is the bench_fio one (runs identified by file, not by run-N)."""
    _, t = grid_table
    for target, side in (("loop-disk", "a"), ("loop-shm", "b")):
        d = tmp_path / side
        d.mkdir()
        for i, p in enumerate(sorted((GRID / target).rglob("*.json.gz"))):
            (d / f"{i:03d}.json").write_bytes(gzip.decompress(p.read_bytes()))
    s = ab.sides(tmp_path / "a", tmp_path / "b")
    flat = ab.compare(s.old, s.new, keys=ab.workload_keys(s.old, s.new))
    assert ab.contrast(s.old, s.new)["target"] == (["/run/cephqos-fio-grid/loop-disk"],
                                                  ["/run/cephqos-fio-grid/loop-shm"])
    want = t.xs("fio-json", level="kind").droplevel([k for k in t.index.names if k not in flat.index.names
                                                      and k != "kind"])
    got = flat.xs("fio-json", level="kind").reorder_levels(want.index.names).sort_index()
    pd.testing.assert_frame_equal(got[["n_old", "n_new", "median_old", "median_new", "p", "verdict"]],
                                  want.sort_index()[["n_old", "n_new", "median_old", "median_new", "p", "verdict"]],
                                  check_exact=False)


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "markdown"])
def test_the_command_line_prints_cells_and_the_across_workload_summary(fmt):
    r = subprocess.run([sys.executable, "-m", "analysis", "compare", str(GRID / "loop-disk"), str(GRID / "loop-shm"),
                        "--format", fmt], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert doc["differ"] == {"target": [["loop-disk"], ["loop-shm"]]}
        one = [x for x in doc["rows"] if x["n_old"] == 1 and x["n_new"] == 1]
        assert one and all(x["p"] is None and x["verdict"] == "one run a side: no test" for x in one)
        assert {x["basis"] for x in doc["across_workloads"]} == {"across 21 workloads, not repeats"}
    elif fmt == "csv":
        from io import StringIO
        t = pd.read_csv(StringIO(r.stdout))
        assert set(t["level"]) == {"cell", "across workloads"} and (t["level"] == "cell").sum() == 294
    else:
        assert "one run a side: no test" in r.stdout and "across 21 workloads, not repeats" in r.stdout
        assert "also differ (not cell keys): target loop-disk vs loop-shm" in r.stdout


def test_grid_figures_draw_each_cell_from_the_table(grid_table):
    from analysis.figures import grid as g
    s, t = grid_table
    assert g.is_grid(t)
    f = g.grid_frame(t, "iops")
    assert len(f) == 42 and set(f["numjobs"]) == {1, 2, 4} and set(f["iodepth"]) == {1, 2, 4, 8, 16, 32, 64}
    fig = g.lines(t, s.names, "iops")
    ax = fig.axes[0]  # randread, old side: one line per numjobs, x = iodepth, y = the cell medians
    assert len(ax.lines) == 3
    x, y = ax.lines[0].get_data()
    want = f[(f["rw"] == "randread") & (f["numjobs"] == 1)]
    assert list(x) == want["iodepth"].tolist() and np.allclose(y, want["median_old"])
    h = g.heatmap(t, s.names, "iops")
    img = h.axes[0].images[0].get_array()
    r = f[f["rw"] == "randread"].pivot_table(index="iodepth", columns="numjobs", values="ratio")
    assert np.allclose(np.asarray(img), np.log(r.to_numpy()))
    import matplotlib.pyplot as plt
    plt.close("all")

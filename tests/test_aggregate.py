"""analysis.stats.aggregate: DuckDB aggregations over the single-file and the partitioned layout,
checked against hand-computed numbers and against pandas/numpy on the real processed tables."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from analysis import store as tset
from analysis.stats import aggregate as ag

PCOLS = ["p50", "p90", "p99", "p99.9"]


# --- hand-made tables ------------------------------------------------------------------------------

def _series() -> pd.DataFrame:
    rows = []

    def add(campaign, kind, source, ddir, metric, ts, values, job="job"):
        rows.extend(dict(campaign=campaign, kind=kind, source=source, job=job, ddir=ddir, metric=metric,
                         unit="ns", t_s=t, value=v) for t, v in zip(ts, values))

    add("c1", "fio-log", "s1", "read", "clat", [0.1, 0.2, 0.3, 0.9], [40, 10, 30, 20])       # second 0
    add("c1", "fio-log", "s1", "read", "clat", [1 + i / 10 for i in range(10)],
        [7, 3, 10, 1, 5, 9, 2, 8, 4, 6])                                                        # second 1: 1..10
    add("c1", "fio-log", "s1", "read", "clat", [-0.5], [3])                                     # second -1
    add("c1", "fio-log", "s1", "read", "clat", [0.5], [np.nan])                                 # ignored
    add("c1", "fio-log", "s1", "read", "lat", [0.5], [1000])                                    # other metric
    add("c1", "fio-log", "s1", "write", "clat", [0.4], [7])
    add(None, "fio-log", "s2", "read", "clat", [2.0, 2.99], [2, 1])                             # no campaign
    add("c2", "other", "s3", "read", "clat", [0.0], [5])                                        # other kind
    return pd.DataFrame(rows)


# source, job, ddir, second, count, mean, p50, p90, p99, p99.9 (by hand: rank ceil(n·q/100))
SERIES_EXPECTED = [
    ("s1", "job", "read", -1, 1, 3.0, 3, 3, 3, 3),
    ("s1", "job", "read", 0, 4, 25.0, 20, 40, 40, 40),      # n=4, q=50 → 2nd smallest (not 25)
    ("s1", "job", "read", 1, 10, 5.5, 5, 9, 10, 10),
    ("s1", "job", "write", 0, 1, 7.0, 7, 7, 7, 7),
    ("s2", "job", "read", 2, 2, 1.5, 1, 2, 2, 2),
]


def _summary() -> pd.DataFrame:
    rows = []

    def add(campaign, kind, scenario, scheduler, metric, values, ddir="read", job="job", src=None):
        for i, v in enumerate(values):
            rows.append(dict(campaign=campaign, kind=kind, source=src or f"{campaign}/{scenario}/{scheduler}/{i}",
                             job=job, ddir=ddir, metric=metric, unit="B/s", value=v,
                             scenario=scenario, op_queue=None, io_scheduler=scheduler, repeat=str(i + 1)))

    add("c1", "fio-json", "A", "bfq", "bw", [1, 2, 3, 10])
    add("c1", "fio-json", "A", "kyber", "bw", [5])
    add("c1", "fio-json", "B", "bfq", "bw", [2, 4, 6, np.nan])
    add("c1", "fio-json", "B", "bfq", "iops", [99, 99])                  # other metric
    add("c1", "fio-log", "B", "bfq", "bw", [1e9])                         # other kind
    add("c1", "fio-json", "C", "none", "bw", [-1, 1])                     # mean 0
    add(None, "fio-json", "A", "bfq", "bw", [100])                        # no campaign
    add("c1", "blktrace", "A", "bfq", "bw", [7], job="all", src="t1")
    add("c1", "blktrace", "A", "bfq", "bw", [3], job="7,0", src="t1")     # two jobs of one source/ddir
    return pd.DataFrame(rows)


SUMMARY_EXPECTED = pd.DataFrame(  # the default cell: campaign, scenario, op_queue (none here), io_scheduler
    [("c1", "A", "bfq", 4, 4.0, 2.5, math.sqrt(50 / 3), math.sqrt(50 / 3) / 4, 1.0, 10.0),
     ("c1", "A", "kyber", 1, 5.0, 5.0, np.nan, np.nan, 5.0, 5.0),
     ("c1", "B", "bfq", 3, 4.0, 4.0, 2.0, 0.5, 2.0, 6.0),
     ("c1", "C", "none", 2, 0.0, 0.0, math.sqrt(2), np.nan, -1.0, 1.0),
     (np.nan, "A", "bfq", 1, 100.0, 100.0, np.nan, np.nan, 100.0, 100.0)],
    columns=["campaign", "scenario", "io_scheduler", "n", "mean", "median", "std", "cv", "min", "max"])
SUMMARY_EXPECTED.insert(2, "op_queue", np.nan)


def _categorical(df: pd.DataFrame) -> pd.DataFrame:
    """As the ingest stores it: string columns categorical (dictionary-encoded in Parquet)."""
    return df.assign(**{c: df[c].astype("category") for c in df.columns if df[c].dtype in (object, "str")})


def _commit(proc: Path) -> None:
    """The set's record, as an ingest writes it last (``aggregate`` reads only a complete set)."""
    tset.commit(proc, [n for n in ("files", "summary", "series", "blk_requests") if tset.layout(proc, n)])


def _write_single(proc: Path, table: str, df: pd.DataFrame) -> None:
    proc.mkdir(parents=True, exist_ok=True)
    _categorical(df).to_parquet(proc / f"{table}.parquet", index=False)
    _commit(proc)


def _write_partitioned(proc: Path, table: str, df: pd.DataFrame) -> None:
    """Hive layout written by pyarrow (campaign/kind only in the path; no campaign → ``_none``)."""
    t = pa.Table.from_pandas(_categorical(df.assign(campaign=df["campaign"].fillna("_none"))),
                             preserve_index=False)
    ds.write_dataset(t, proc / table, format="parquet", partitioning=["campaign", "kind"],
                     partitioning_flavor="hive", basename_template="part-{i}.parquet")
    _commit(proc)


def _write_parts_by_hand(proc: Path, table: str, df: pd.DataFrame) -> None:
    """As analysis.ingest.scale writes it: one part per batch and (campaign, kind); the batches have
    different key columns (the second adds ``profile``, the first lacks ``unit``)."""
    df = df.assign(campaign=df["campaign"].fillna("_none"))
    half = len(df) // 2
    for batch, part in enumerate([df.iloc[:half].drop(columns="unit"), df.iloc[half:].assign(profile="p")]):
        for (c, k), g in part.groupby(["campaign", "kind"]):
            d = proc / table / f"campaign={c}" / f"kind={k}"
            d.mkdir(parents=True, exist_ok=True)
            _categorical(g.drop(columns=["campaign", "kind"])).to_parquet(d / f"part-{batch:06d}.parquet",
                                                                          index=False)
    _commit(proc)


WRITERS = {"single": _write_single, "pyarrow": _write_partitioned, "by-hand": _write_parts_by_hand}


@pytest.fixture(params=list(WRITERS))
def proc(request, tmp_path: Path) -> Path:
    WRITERS[request.param](tmp_path, "series", _series())
    WRITERS[request.param](tmp_path, "summary", _summary())
    return tmp_path


def test_per_second_percentiles_by_hand(proc: Path):
    got = ag.per_second_percentiles(proc, where={"kind": "fio-log"})
    exp = pd.DataFrame(SERIES_EXPECTED, columns=["source", "job", "ddir", "second", "count", "mean", *PCOLS])
    exp = exp.astype({c: "float64" for c in PCOLS}).astype({c: "str" for c in ("source", "job", "ddir")})
    pd.testing.assert_frame_equal(got, exp)
    assert list(got.dtypes.astype(str)) == ["str"] * 3 + ["int64"] * 2 + ["float64"] * 5


def test_per_second_percentiles_where(proc: Path):
    assert ag.per_second_percentiles(proc, where={"campaign": None})["source"].tolist() == ["s2"]
    c2 = ag.per_second_percentiles(proc, where={"campaign": "c2", "kind": "other"})
    assert c2[["source", "second", "count", "p50"]].values.tolist() == [["s3", 0, 1, 5.0]]
    lat = ag.per_second_percentiles(proc, metric="lat", qs=(50,))
    assert list(lat.columns) == ["source", "job", "ddir", "second", "count", "mean", "p50"]
    assert lat[["second", "p50"]].values.tolist() == [[0, 1000.0]]
    # values are bound as parameters, not spliced into the SQL
    assert ag.per_second_percentiles(proc, where={"source": "x' OR '1'='1"}).empty
    assert ag.per_second_percentiles(proc, where={"source": ["s2", "s3"]})["source"].tolist() == ["s2", "s3"]


def test_percentile_boundaries_vs_duckdb_and_numpy(tmp_path: Path):
    """Cases where the definitions part: n=1000, q=99.9 and n=9, q=100/3."""
    rng = np.random.default_rng(1)
    v1000, v9 = rng.permutation(np.arange(1.0, 1001.0)), rng.permutation(np.arange(1.0, 10.0))
    df = pd.DataFrame({"campaign": "c", "kind": "fio-log", "source": "s", "job": "j", "ddir": "read",
                       "metric": "clat", "unit": "ns", "t_s": np.r_[np.full(1000, 0.5), np.full(9, 1.5)],
                       "value": np.r_[v1000, v9]})
    _write_single(tmp_path, "series", df)
    qs = (0, 50, 100 / 3, 99.9, 100)
    got = ag.per_second_percentiles(tmp_path, qs=qs)
    # by hand: ranks ceil(n·q/100) with q/100 in doubles; 99.9/100 = 0.9990000000000001 > 0.999, so
    # n=1000 needs the 1000th value; 100/3/100 = 0.33333333333333337 > 1/3, so n=9 needs the 4th
    assert got[["p0", "p50", "p33.333333333333336", "p99.9", "p100"]].values.tolist() == \
        [[1, 500, 334, 1000, 1000], [1, 5, 4, 9, 9]]
    for row, v in zip(got.itertuples(index=False), (v1000, v9)):
        np.testing.assert_array_equal([row[6 + i] for i in range(len(qs))],
                                      np.percentile(v, qs, method="inverted_cdf"))
    # DuckDB's quantile_disc rounds differently at these boundaries (hence not used)
    con = duckdb.connect()
    con.register("v", pd.DataFrame({"n": [1000] * 1000 + [9] * 9, "x": np.r_[v1000, v9]}))
    disc = dict(con.execute("SELECT n, quantile_disc(x, 0.999) FROM v GROUP BY n").fetchall())
    assert disc[1000] == 999
    assert con.execute("SELECT quantile_disc(x, ?) FROM v WHERE n = 9", [100 / 3 / 100]).fetchone()[0] == 3


def test_cell_stats_by_hand(proc: Path):
    got = ag.cell_stats(proc, "bw", kind="fio-json")
    exp = SUMMARY_EXPECTED.astype({c: "str" for c in ("campaign", "scenario", "op_queue", "io_scheduler")})
    pd.testing.assert_frame_equal(got, exp, rtol=1e-12)
    one = ag.cell_stats(proc, "bw", by=("io_scheduler",), kind="fio-json", where={"campaign": "c1", "scenario": "A"})
    assert one[["io_scheduler", "n", "median"]].values.tolist() == [["bfq", 4, 2.5], ["kyber", 1, 5.0]]


def test_cell_stats_several_jobs(proc: Path):
    with pytest.raises(ValueError, match="several jobs"):
        ag.cell_stats(proc, "bw", kind="blktrace")
    got = ag.cell_stats(proc, "bw", kind="blktrace", where={"job": "all"})
    assert got[["scenario", "n", "mean"]].values.tolist() == [["A", 1, 7.0]]


def test_source_layouts(tmp_path: Path):
    with pytest.raises(tset.TableSetError, match="no processed tables"):
        ag.per_second_percentiles(tmp_path)
    _write_single(tmp_path, "series", _series())
    with pytest.raises(FileNotFoundError, match="blk_requests"):
        ag.source(tmp_path, "blk_requests")
    (tmp_path / "tables.json").unlink()  # what an ingest stopped midway leaves: refused
    with pytest.raises(tset.TableSetError, match="series but no tables.json"):
        ag.source(tmp_path, "series")
    _commit(tmp_path)
    assert "series.parquet" in ag.source(tmp_path, "series")
    _write_partitioned(tmp_path, "series", _series().assign(value=1.0))      # the folder wins
    assert ag.per_second_percentiles(tmp_path, where={"kind": "fio-log"})["p50"].eq(1.0).all()


# --- the real processed tables ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_series(real_proc: Path) -> pa.Table:
    return pq.read_table(real_proc / "series.parquet", filters=[("metric", "in", ["clat", "lat", "bw"])])


def _numpy_per_second(rows: pd.DataFrame) -> pd.DataFrame:
    keys = ["source", "job", "ddir", "second"]
    rows = rows.assign(second=np.floor(rows["t_s"]).astype("int64"),
                       **{k: rows[k].astype(str) for k in keys[:3]})
    g = rows.groupby(keys, sort=True)["value"]
    pct = g.apply(lambda v: pd.Series(np.percentile(v.to_numpy(), [50, 90, 99, 99.9], method="inverted_cdf"),
                                      index=PCOLS)).unstack()
    return pd.concat([g.size().rename("count"), g.mean().rename("mean"), pct], axis=1).reset_index()


def test_real_per_second_percentiles(real_series: pa.Table, real_proc: Path, tmp_path: Path):
    df = real_series.to_pandas()
    clat = df[(df["kind"] == "fio-log") & (df["metric"] == "clat")]
    per_sec = clat.groupby(["source", "ddir", np.floor(clat["t_s"])], observed=True).size()
    sources = [per_sec.idxmax()[0], clat["source"].value_counts().idxmax()]   # most samples in a second / in all
    assert per_sec.max() >= 4
    rows = clat[clat["source"].isin(sources)]
    exp = _numpy_per_second(rows)
    assert len(exp) > 100 and exp["count"].max() >= 4
    where = {"kind": "fio-log", "source": sources}
    single = ag.per_second_percentiles(real_proc, where=where)
    pd.testing.assert_frame_equal(single, exp, check_exact=False, rtol=1e-12)
    assert (single[PCOLS] == exp[PCOLS]).all().all()          # order statistics: exactly numpy's
    ds.write_dataset(real_series, tmp_path / "series", format="parquet", partitioning=["campaign", "kind"],
                     partitioning_flavor="hive", basename_template="part-{i}.parquet")
    assert len(list((tmp_path / "series").glob("campaign=*/kind=*/*.parquet"))) > 2
    _commit(tmp_path)
    pd.testing.assert_frame_equal(ag.per_second_percentiles(tmp_path, where=where), single)


def test_real_cell_stats(real_proc: Path):
    s = pd.read_parquet(real_proc / "summary.parquet", columns=["campaign", "kind", "metric", "scenario", "io_scheduler",
                                                            "source", "ddir", "value"],
                        filters=[("campaign", "==", "block-2026"), ("kind", "==", "fio-json"),
                                 ("metric", "==", "bw")])
    assert len(s) > 100 and not s.duplicated(["source", "ddir"]).any()
    g = s.assign(scenario=s["scenario"].astype(str), io_scheduler=s["io_scheduler"].astype(str)) \
        .groupby(["scenario", "io_scheduler"], sort=True)["value"]
    exp = pd.DataFrame({"n": g.size(), "mean": g.mean(), "median": g.median(), "std": g.std(ddof=1)})
    exp["cv"] = exp["std"] / exp["mean"]
    exp = exp.assign(min=g.min(), max=g.max()).reset_index()
    assert exp["n"].min() >= 3
    got = ag.cell_stats(real_proc, "bw", by=("scenario", "io_scheduler"), kind="fio-json",
                        where={"campaign": "block-2026"})
    pd.testing.assert_frame_equal(got, exp, check_exact=False, rtol=1e-9)


def test_connect_bounded(proc: Path, tmp_path: Path):
    with ag.connect("64MB", threads=1, temp_dir=tmp_path / "spill") as con:
        limit, threads, tmp = con.execute("SELECT current_setting('memory_limit'), current_setting('threads'), "
                                          "current_setting('temp_directory')").fetchone()
        assert limit.startswith("61") and threads == 1 and tmp == str(tmp_path / "spill")
        got = ag.per_second_percentiles(proc, where={"kind": "fio-log"}, con=con)
        assert got[["second", "p50"]].values.tolist() == [[r[3], r[6]] for r in SERIES_EXPECTED]

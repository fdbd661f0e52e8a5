"""Out-of-core aggregations over the processed Parquet tables with DuckDB (nothing is loaded whole
into pandas; only the small aggregated frames are).

A table is read from ``<proc>/<table>/`` — the partitioned dataset of the Dask ingest
(``campaign=<c>/kind=<k>/part-<n>.parquet``; ``campaign`` and ``kind`` come from the hive path,
``campaign=_none`` is NULL, the parts' columns are unioned by name) — or else from the single file
``<proc>/<table>.parquet``.  Units are the stored ones: ``t_s`` seconds, latencies ns, bandwidth B/s,
IOPS 1/s.

Percentiles are exact order statistics with the definition of
:func:`analysis.ingest.fio_log.exact_percentiles`: for ``q`` (percent) the ``ceil(n·q/100)``-th
smallest of the ``n`` samples, i.e. ``numpy.percentile(method="inverted_cdf")``, with the same
double-precision arithmetic (``q/100`` then ``·n``), so results equal numpy's bit for bit.  DuckDB's
``quantile_disc`` is not used: it computes the rank as ``n − floor(n − n·q)``, which rounds
differently where ``n·q`` lands a rounding error above an integer (``n=9, q=100/3``: 3rd value, numpy
the 4th; ``n=1000, q=0.999`` as a double: 999th).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import duckdb
import pandas as pd

NO_CAMPAIGN = "_none"   # hive value of rows without a campaign (see analysis.ingest.scale)

PCT_QS: tuple[float, ...] = (50, 90, 99, 99.9)


def connect(memory_limit: str = "1GB", threads: int | None = None,
            temp_dir: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection limited to ``memory_limit`` (e.g. ``"1GB"``) that spills
    sorts, windows and aggregations to ``temp_dir`` (DuckDB's default ``.tmp`` if None)."""
    config: dict[str, Any] = {"memory_limit": memory_limit, "preserve_insertion_order": False}
    if threads is not None:
        config["threads"] = int(threads)
    if temp_dir is not None:
        config["temp_directory"] = str(temp_dir)
    return duckdb.connect(":memory:", config=config)


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def source(proc: str | Path, table: str) -> str:
    """DuckDB FROM-expression for ``table`` under ``proc``: the partitioned dataset ``proc/table/``
    if it holds Parquet files (it wins over a single file), else ``proc/table.parquet``.

    The folder must hold one complete ingest's set (``analysis.store.verify``: TableSetError
    naming ``make data`` otherwise); FileNotFoundError naming both paths if the set lacks ``table``."""
    from analysis.store import verify
    proc = Path(proc)
    verify(proc)  # a half-replaced or hand-mixed folder is refused, never aggregated
    expr = _table_source(proc, table)
    return _with_run_keys(proc, expr) if table == "series" else expr


def _with_run_keys(proc: Path, expr: str) -> str:
    """The stored series ``expr`` with the run keys ``files`` holds once per file joined on ``source`` =
    ``path`` (``analysis.store.SERIES_STORED_KEYS``): the columns :func:`analysis.store.read_table`
    gives.  A filter on a joined key is pushed to ``files`` by DuckDB's optimiser."""
    import pyarrow.parquet as pq
    from analysis.schema import FILE_COLUMNS
    from analysis.store import stored_names, layout
    kind = layout(proc, "series")
    if kind is None or layout(proc, "files") != "file":
        return expr
    have = set(stored_names(proc, "series", kind))
    keys = [c for c in pq.read_schema(proc / "files.parquet").names if c not in FILE_COLUMNS and c not in have]
    if not keys:
        return expr
    sel = ", ".join(_ident(k) for k in keys)
    return (f"(SELECT _s.*, {', '.join('_f.' + _ident(k) for k in keys)} FROM {expr} AS _s LEFT JOIN "
            f"(SELECT path, {sel} FROM read_parquet({_lit(str(proc / 'files.parquet'))})) AS _f "
            f"ON _s.source::VARCHAR = _f.path)")


def _table_source(proc: Path, table: str) -> str:
    d, f = proc / table, proc / f"{table}.parquet"
    if d.is_dir() and next(d.rglob("*.parquet"), None) is not None:
        if any(ch in str(d) for ch in "*?[{"):   # glob metacharacters in the folder: list the files
            files = "[" + ", ".join(_lit(str(p)) for p in sorted(d.rglob("*.parquet"))) + "]"
        else:
            files = _lit(str(d / "**" / "*.parquet"))
        return (f"(SELECT * REPLACE (nullif(campaign, {_lit(NO_CAMPAIGN)}) AS campaign) "
                f"FROM read_parquet({files}, hive_partitioning = true, union_by_name = true, "
                f"hive_types_autocast = false))")
    if f.is_file():
        return f"read_parquet({_lit(str(f))})"
    raise FileNotFoundError(f"no table {table!r}: neither {d}/ (partitioned) nor {f} exists")


def _where(filters: Mapping[str, Any] | None) -> tuple[list[str], dict[str, Any]]:
    """SQL conditions and their named parameters (``$w0``, ``$w1`` …) for column equality; a None
    value is IS NULL, a list/tuple/set is IN."""
    conds: list[str] = []
    params: dict[str, Any] = {}

    def bind(v: Any) -> str:
        name = f"w{len(params)}"
        params[name] = v
        return "$" + name

    for col, val in (filters or {}).items():
        if val is None:
            conds.append(f"{_ident(col)} IS NULL")
        elif isinstance(val, (list, tuple, set, frozenset)):
            vals = ", ".join(bind(v) for v in val)
            conds.append(f"{_ident(col)} IN ({vals})" if vals else "false")
        else:
            conds.append(f"{_ident(col)} = {bind(val)}")
    return conds, params


def _run(con: duckdb.DuckDBPyConnection | None, sql: str, params: dict[str, Any]) -> pd.DataFrame:
    if con is not None:
        return con.execute(sql, params).df()
    with connect() as c:
        return c.execute(sql, params).df()


def _plain(df: pd.DataFrame, keys: Sequence[str], ints: Sequence[str]) -> pd.DataFrame:
    """Group keys as ``str`` (missing stays missing), counts as int64, the rest float64."""
    for c in df.columns:
        if c in ints:
            df[c] = df[c].astype("int64")
        elif c in keys:
            df[c] = df[c].astype("str")
        else:
            df[c] = df[c].astype("float64")
    return df.reset_index(drop=True)


def _pct_name(q: float) -> str:
    """Column of percentile ``q``: ``p50``, ``p99.9``, ``p33.333333333333336`` (shortest repr)."""
    r = repr(float(q))
    return "p" + (r[:-2] if r.endswith(".0") else r)


def per_second_percentiles(proc: str | Path, metric: str = "clat",
                           qs: Sequence[float] = PCT_QS, where: Mapping[str, Any] | None = None,
                           con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """Per ``source, job, ddir`` and whole second ``second = floor(t_s)`` (s, int) of the series rows of
    ``metric``: ``count`` samples, their ``mean`` and one column per percentile ``q`` (percent) named
    ``p50``, ``p90``, ``p99``, ``p99.9`` … in the unit of ``metric`` (ns for ``clat``).

    ``where`` restricts rows by column equality (``{"campaign": "block-2026", "kind": "fio-log"}``;
    values are bound as parameters).  NULL and NaN values are ignored.  Sorted by the keys."""
    if not qs:
        raise ValueError("qs is empty")
    if any(not 0 <= float(q) <= 100 for q in qs):
        raise ValueError(f"percentiles must be in [0, 100]: {list(qs)}")
    names = [_pct_name(q) for q in qs]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate percentiles: {list(qs)}")
    conds, wparams = _where(where)
    keys = ["source", "job", "ddir", "second"]
    part = "source, job, ddir, second"
    # rank of q: ceil(n·(q/100)) clipped to [1, n], in doubles exactly as numpy's inverted_cdf
    pcts = ", ".join(f"max(value) FILTER (WHERE rn = greatest(1, least(n, ceil(n::DOUBLE * $q{i}::DOUBLE))))"
                     f" AS {_ident(nm)}" for i, nm in enumerate(names))
    sql = f"""
        WITH s AS (
            SELECT source::VARCHAR AS source, job::VARCHAR AS job, ddir::VARCHAR AS ddir,
                   floor(t_s)::BIGINT AS second, value::DOUBLE AS value
            FROM {source(proc, "series")}
            WHERE {" AND ".join(["metric = $metric", "value IS NOT NULL", "NOT isnan(value)", *conds])}
        ), r AS (
            SELECT *, row_number() OVER (PARTITION BY {part} ORDER BY value) AS rn,
                      count(*) OVER (PARTITION BY {part}) AS n
            FROM s
        )
        SELECT {part}, count(*) AS count, avg(value) AS mean, {pcts}
        FROM r GROUP BY {part}
        ORDER BY source NULLS LAST, job NULLS LAST, ddir NULLS LAST, second"""
    params = {"metric": metric, **wparams, **{f"q{i}": float(q) / 100 for i, q in enumerate(qs)}}
    return _plain(_run(con, sql, params), keys=keys[:3], ints=["second", "count"])


def cell_stats(proc: str | Path, metric: str, by: Sequence[str] = ("campaign", "scenario", "op_queue", "io_scheduler"),
               kind: str | None = None, where: Mapping[str, Any] | None = None,
               con: duckdb.DuckDBPyConnection | None = None) -> pd.DataFrame:
    """Per cell ``by`` over the summary rows of ``metric`` (one value per run: a source and ddir):
    ``n``, ``mean``, ``median`` (of an even count the mean of the two middle values), ``std`` (ddof
    1; NaN for n = 1), ``cv`` = std/mean (NaN if mean is 0), ``min``, ``max`` — in the stored unit
    (bw B/s, iops 1/s, latencies ns).

    ``kind`` and ``where`` (column equality, values bound as parameters) restrict the rows.  Read and
    write values share a cell unless ``ddir`` is in ``by`` or ``where``.  Raises ValueError if a cell
    has several rows of one source and ddir (several jobs, e.g. blktrace devices and ``all``): filter
    ``job`` in ``where``.  NULL and NaN values are ignored.  Sorted by ``by``."""
    by = list(by)
    filters = dict(where or {})
    if kind is not None:
        filters["kind"] = kind
    conds, wparams = _where(filters)
    keys = ", ".join(f"{_ident(b)}::VARCHAR AS {_ident(b)}" for b in by)
    group = ", ".join(_ident(b) for b in by)
    sql = f"""
        WITH v AS (
            SELECT {keys + "," if by else ""} source::VARCHAR AS _src, ddir::VARCHAR AS _ddir,
                   value::DOUBLE AS value
            FROM {source(proc, "summary")}
            WHERE {" AND ".join(["metric = $metric", "value IS NOT NULL", "NOT isnan(value)", *conds])}
        )
        SELECT {group + "," if by else ""} count(*) AS n, avg(value) AS mean, median(value) AS median,
               stddev_samp(value) AS std,
               CASE WHEN avg(value) <> 0 THEN stddev_samp(value) / avg(value) END AS cv,
               min(value) AS min, max(value) AS max,
               count(DISTINCT [_src, coalesce(_ddir, '')]) AS runs
        FROM v {"GROUP BY " + group if by else ""}
        {"ORDER BY " + ", ".join(f"{_ident(b)} NULLS LAST" for b in by) if by else ""}"""
    out = _run(con, sql, {"metric": metric, **wparams})
    if by == [] and len(out) and out["n"].iloc[0] == 0:
        out = out.iloc[0:0]
    dup = out[out["n"] != out["runs"]]
    if len(dup):
        cell = dup.iloc[0][by].to_dict() if by else {}
        raise ValueError(f"cell {cell}: {int(dup['n'].iloc[0])} {metric!r} rows for "
                         f"{int(dup['runs'].iloc[0])} source/ddir pairs (several jobs?); filter job in where=")
    return _plain(out.drop(columns="runs"), keys=by, ints=["n"])

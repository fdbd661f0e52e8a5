"""Ingest on Dask: the per-file work of :mod:`analysis.ingest.walk` as tasks, written as Parquet
datasets partitioned by campaign and kind (``python -m analysis ingest DIR --dask [ADDRESS]``).

Layout written under ``out``::

    files.parquet                                            one row per file (as the serial path)
    summary/campaign=<c>/kind=<k>/part-<batch>.parquet      tidy rows, columns as summary.parquet
    series/campaign=<c>/kind=<k>/part-<batch>.parquet       minus campaign and kind (in the path)
    blk_requests/campaign=<c>/kind=<k>/part-<batch>.parquet

A file without a campaign goes under ``campaign=_none``.  Files are grouped into batches of
consecutive files in walk order (at most ``batch_bytes`` of input or ``batch_files`` files, by
default 128 MiB or 1,000: each batch costs ~0.3 s of assembling and writing whatever its size; a
larger file is a batch of its own); each batch is one task (one scanner thread per worker), which reads its files with
:func:`~analysis.ingest.walk.ingest_file` and writes its own parts, so only the files table travels back
to the client.  Everything is written below ``out/.ingest-<pid>/`` and moved into place when every
task has finished: an interrupted run leaves the previous tables as they were.  With an ADDRESS the
workers must import this package and see ``root`` and ``out`` at the same paths (a shared filesystem).

:func:`analysis.ingest.tables.read_dataset` reads a table back into pandas; :func:`canonical` puts a table in a canonical
form (rows sorted, categoricals as strings) so the serial and the Dask tables can be compared.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import tables as tset
from .tables import NO_CAMPAIGN, _stringish, read_dataset  # noqa: F401 (read_dataset: re-exported)
from .base import IngestError
from .walk import (IngestResult, NOT_INGESTED, OPTIONAL_TABLES, _Contexts, assemble, ingest_file, iter_files,
                   load_manifest)

TABLES = ("summary", "series", *OPTIONAL_TABLES)


@dataclass
class ScaleResult:
    files: pd.DataFrame
    failed: list[tuple[str, str]]
    rows: dict[str, int]          # rows written per table
    batches: int
    workers: int
    seconds: float


def plan_batches(sizes: list[int], batch_bytes: int = 128 << 20, batch_files: int = 1000) -> list[tuple[int, int]]:
    """Consecutive index ranges [start, end) over files of ``sizes`` (bytes, walk order): each at most
    ``batch_files`` files and, unless it is a single file, at most ``batch_bytes``."""
    out, start, acc = [], 0, 0
    for i, s in enumerate(sizes):
        if i > start and (acc + s > batch_bytes or i - start >= batch_files):
            out.append((start, i))
            start, acc = i, 0
        acc += s
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


def _write_parts(df: pd.DataFrame, table_dir: Path, batch: int) -> int:
    """Write ``df`` split by (campaign, kind) as ``table_dir/campaign=…/kind=…/part-<batch>.parquet``."""
    if df is None or not len(df):
        return 0
    camp = df["campaign"].astype("string").fillna(NO_CAMPAIGN) if "campaign" in df else \
        pd.Series(NO_CAMPAIGN, index=df.index, dtype="string")
    kind = df["kind"].astype("string")
    body = df.drop(columns=[c for c in ("campaign", "kind") if c in df])
    for (c, k), idx in body.groupby([camp, kind], sort=True, observed=True).indices.items():
        d = table_dir / f"campaign={c}" / f"kind={k}"
        d.mkdir(parents=True, exist_ok=True)
        part = body.iloc[idx].reset_index(drop=True)
        for col in part.columns:  # categories of this slice only (a batch's dictionary, not the union)
            if isinstance(part[col].dtype, pd.CategoricalDtype):
                part[col] = part[col].cat.remove_unused_categories()
        part.to_parquet(d / f"part-{batch:06d}.parquet", index=False, compression="zstd")
    return len(df)


class _PartWriter:
    """Row groups appended to one Parquet part (string-like columns stored as plain strings, the schema
    of the first block), removed again if the file that wrote it fails midway."""

    def __init__(self, path: Path):
        self.path, self.writer, self.schema, self.rows = path, None, None, 0

    def write(self, df: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        t = pa.Table.from_pandas(df, preserve_index=False)
        if self.writer is None:
            self.schema = pa.schema([pa.field(f.name, pa.string()) if _stringish(f.type) else f
                                     for f in t.schema])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        self.writer.write_table(t.cast(self.schema, safe=False).replace_schema_metadata(None))
        self.rows += len(df)

    def close(self, ok: bool = True) -> None:
        if self.writer is not None:
            self.writer.close()
            if not ok:  # a file that failed midway leaves no rows behind
                self.path.unlink()
                self.rows = 0


class _PartSink:
    """The tables of one large file read in blocks (bounded memory) written straight to their own parts,
    ``<table>/campaign=…/kind=…/part-<batch>-<n>.parquet``, one row group per block: its series
    (``sink(frame)``) and, for a block trace, its request rows (``sink.requests(frame)``)."""

    def __init__(self, out: Path, batch: int, n: int, keys: dict[str, Any]):
        self.keys = keys
        camp = keys.get("campaign")
        sub = Path(f"campaign={NO_CAMPAIGN if camp is None else camp}") / f"kind={keys['kind']}"
        name = f"part-{batch:06d}-{n:04d}.parquet"
        self.series = _PartWriter(out / "series" / sub / name)
        self.blk = _PartWriter(out / "blk_requests" / sub / name)

    @property
    def rows(self) -> int:
        return self.series.rows

    def __call__(self, frame: pd.DataFrame) -> None:
        from .base import SERIES_COLUMNS
        from .walk import _assemble

        self.series.write(_assemble([frame], [0], [self.keys], SERIES_COLUMNS).drop(columns=["campaign", "kind"]))

    def requests(self, frame: pd.DataFrame) -> None:
        """Request rows of a streamed block trace, with the file's keys as the serial path attaches them
        (``walk.ingest_file``): ``kind``, ``source`` and the run keys."""
        keys = {"kind": str(self.keys["kind"]), "source": str(self.keys["source"]),
                **{k: str(v) for k, v in self.keys.items() if k not in ("kind", "source") and v is not None}}
        self.blk.write(frame.assign(**keys).drop(columns=[c for c in ("campaign", "kind") if c in keys]))

    def close(self, ok: bool = True) -> None:
        self.series.close(ok)
        self.blk.close(ok)


def run_batch(root: str, rels: list[str], tmp_out: str, batch: int,
              manifest: dict[str, str] | None, lenient: bool = False) -> dict[str, Any]:
    """One task: read ``rels`` (paths below ``root``), write their tables' parts below ``tmp_out``;
    returns the files rows, failures, run-context errors and rows written per table.  A large per-IO
    log goes to its own part block by block (:class:`_PartSink`), never whole in memory."""
    from . import _scan
    threads, _scan.THREADS = _scan.THREADS, 1  # one core per worker: the cluster, not the scanner, parallelises
    try:
        return _run_batch(Path(root), rels, Path(tmp_out), batch, manifest, lenient)
    finally:
        _scan.THREADS = threads  # an in-process worker shares the module with its client


def _run_batch(rootp: Path, rels: list[str], out: Path, batch: int,
               manifest: dict[str, str] | None, lenient: bool = False) -> dict[str, Any]:
    contexts = _Contexts(rootp)
    sinks: list[_PartSink] = []

    def sink_for(keys: dict[str, Any]) -> _PartSink:
        sinks.append(_PartSink(out, batch, len(sinks), keys))
        return sinks[-1]

    outcomes = [ingest_file(rootp / r, rootp, contexts.get((rootp / r).parent), manifest, sink_for, lenient)
                for r in rels]
    errors = [(p.relative_to(rootp).as_posix(), e) for p, e in contexts.errors]
    res = assemble(outcomes, errors, None)
    rows = {"summary": _write_parts(res.summary, out / "summary", batch),
            "series": _write_parts(res.series, out / "series", batch) + sum(k.series.rows for k in sinks)}
    for name, t in res.tables.items():
        rows[name] = _write_parts(t, out / name, batch)
    streamed = sum(k.blk.rows for k in sinks)
    if streamed:
        rows["blk_requests"] = rows.get("blk_requests", 0) + streamed
    return {"files": res.files, "failed": res.failed, "rows": rows,
            "context_errors": [r for r, _ in errors]}


def _client(address: str | None, workers: int | None):
    from distributed import Client, LocalCluster
    if address:
        return Client(address), None
    # the workers' statistical profiler samples every thread's frames every 10 ms: CPU we would rather
    # parse with, and a held frame keeps a memory map's buffer exported (BufferError on close)
    import dask
    with dask.config.set({"distributed.worker.profile.enabled": False}):  # the nannies pass it to the workers
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=40)  # any free port: no clash
    return Client(cluster), cluster


def _swap_in(tmp: Path, out: Path, names: tuple[str, ...]) -> None:
    """Move ``tmp/<name>`` to ``out/<name>`` for each name (replacing a previous dataset and removing a
    single-file ``<name>.parquet`` of the serial path, which would otherwise shadow or contradict it)."""
    for name in names:
        old = out / f".{name}.old-{os.getpid()}"
        if (out / name).exists():
            os.replace(out / name, old)
        if (tmp / name).exists():
            os.replace(tmp / name, out / name)
        if old.exists():
            shutil.rmtree(old)
        (out / f"{name}.parquet").unlink(missing_ok=True)


def ingest_dask(root: str | Path, out: str | Path, address: str | None = None, workers: int | None = None,
                batch_bytes: int = 128 << 20, batch_files: int = 1000, progress: bool | None = None,
                client=None, lenient: bool = False) -> ScaleResult:
    """Read every file below ``root`` as Dask tasks and write the partitioned tables under ``out``.

    ``client``: an existing ``distributed.Client``; else one on ``address``, else a ``LocalCluster`` of
    ``workers`` processes (default: one per core), one thread each, closed at the end."""
    t0 = time.perf_counter()
    root, out = Path(root).resolve(), Path(out).resolve()
    if not root.is_dir():
        raise IngestError(root, "expected a directory to ingest")
    manifest = load_manifest(root)
    paths = list(iter_files(root))
    rels = [p.relative_to(root).as_posix() for p in paths]
    batches = plan_batches([p.stat().st_size for p in paths], batch_bytes, batch_files)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".ingest-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    own = client is None
    cluster = None
    try:
        if own:
            client, cluster = _client(address, workers)
        n_workers = len(client.scheduler_info().get("workers", {}))
        futures = [client.submit(run_batch, str(root), rels[a:b], str(tmp), i,
                                 None if manifest is None else {r: manifest[r] for r in rels[a:b] if r in manifest},
                                 lenient, key=f"ingest-batch-{i}-{os.getpid()}", pure=False)
                   for i, (a, b) in enumerate(batches)]
        if progress is None:
            progress = sys.stderr.isatty()
        if progress:
            from distributed import as_completed
            from tqdm import tqdm
            for _ in tqdm(as_completed(futures), total=len(futures), desc="ingest (dask)", unit="batch"):
                pass
        results = client.gather(futures)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()
    files = pd.concat([r["files"] for r in results], ignore_index=True) if results else pd.DataFrame()
    failed: list[tuple[str, str]] = []
    seen_ctx: set[str] = set()
    for r in results:
        for f in r["failed"]:
            if f[0] in r["context_errors"]:  # a bad run.json is met by every batch of its folder
                if f[0] in seen_ctx:
                    continue
                seen_ctx.add(f[0])
            failed.append(f)
    if manifest is not None:
        seen = set(rels)
        missing = sorted(r for r in set(manifest) - seen if NOT_INGESTED.isdisjoint(r.split("/")[:-1]))
        for rel in missing:
            msg = f"{rel}: listed in MANIFEST.sha256 but missing"
            failed.append((rel, msg))
        if missing:
            files = pd.concat([files, pd.DataFrame({"path": missing, "status": "failed",
                                                    "error": [f"{r}: listed in MANIFEST.sha256 but missing"
                                                              for r in missing]})], ignore_index=True)
    rows = {t: sum(r["rows"].get(t, 0) for r in results) for t in TABLES}
    files.to_parquet(tmp / "files.parquet", index=False, compression="zstd")
    tset.begin(out)  # no complete set in out until commit (analysis.ingest.tables)
    _swap_in(tmp, out, TABLES)
    os.replace(tmp / "files.parquet", out / "files.parquet")
    shutil.rmtree(tmp, ignore_errors=True)
    tset.commit(out, ["files", *[t for t in TABLES if (out / t).is_dir()]], root)
    return ScaleResult(files=files, failed=failed, rows=rows, batches=len(batches), workers=n_workers,
                       seconds=time.perf_counter() - t0)


# --- reading back ----------------------------------------------------------------------------------

def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with columns sorted by name, categorical/string/object columns as pandas ``string``,
    all-missing columns dropped, and rows sorted by every column: two tables holding the same
    rows compare equal with ``pandas.testing.assert_frame_equal``."""
    d = df.copy()
    for c in d.columns:
        if isinstance(d[c].dtype, (pd.CategoricalDtype, pd.StringDtype)) or d[c].dtype == object:
            d[c] = d[c].astype("string")
    d = d[[c for c in sorted(d.columns) if d[c].notna().any()]]
    return d.sort_values(list(d.columns), kind="stable", na_position="first").reset_index(drop=True)


def read_result(out: str | Path) -> IngestResult:
    """The tables under ``out`` as an :class:`~analysis.ingest.walk.IngestResult`, whichever layout
    wrote them (``<name>.parquet`` from the serial path, ``<name>/`` from :func:`ingest_dask`)."""
    from .walk import read_tables
    return read_tables(out)

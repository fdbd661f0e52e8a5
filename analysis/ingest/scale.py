"""Batched ingest with bounded memory: the per-file work of :mod:`analysis.ingest.walk` in batches, each
written to parts by the process that read it; the parent holds only the files table.

:func:`ingest_batches` is the one batch ingest, with one choice of executor (:mod:`.executors`):

* processes — the command line's default (``python -m analysis ingest DIR``): batches on a pool
  of ``jobs`` forked processes (or in this process for ``jobs=1``), their parts (Arrow IPC streams,
  :data:`TEMP_SUFFIX`) merged by this process into the single-file layout ``<table>.parquet`` as the
  batches come back, in walk order, while the workers read the next ones (:class:`analysis.store.PartMerger`,
  one row group in memory at a time);
* Dask — ``--dask [ADDRESS]``: batches as Dask tasks, written as Parquet datasets
  partitioned by campaign and kind.

Layout written under ``out``::

    files.parquet                                            one row per file (as the serial path)
    summary/campaign=<c>/kind=<k>/part-<batch>.parquet      tidy rows, columns as summary.parquet
    series/campaign=<c>/kind=<k>/part-<batch>.parquet       minus campaign and kind (in the path)
    blk_requests/campaign=<c>/kind=<k>/part-<batch>.parquet

``series`` is stored without run keys in either layout (a file's keys are in ``files``; campaign is kept
in the single file, in the folder name here): :func:`analysis.store.read_table` joins them back.

A file without a campaign goes under ``campaign=_none``.  Files are grouped into batches of
consecutive files in walk order (at most ``batch_bytes`` of input or ``batch_files`` files, by
default 128 MiB or 1,000: each batch costs ~0.3 s of assembling and writing whatever its size; a
larger file is a batch of its own); each batch is one task (one scanner thread per worker), which reads its files with
:func:`~analysis.ingest.walk.ingest_file` and writes its own parts, so only the files table travels back
to the client.  Everything is written below ``out/.ingest-<pid>/`` and moved into place when every
task has finished: an interrupted run leaves the previous tables as they were.  With an ADDRESS the
workers must import this package and see ``root`` and ``out`` at the same paths (a shared filesystem).

:func:`analysis.store.read_dataset` reads a table back into pandas; :func:`canonical` puts a table in a canonical
form (rows sorted, categoricals as strings) so the serial and the Dask tables can be compared.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import store as tset
from ..store import NO_CAMPAIGN, read_dataset, stringish  # noqa: F401 (read_dataset: re-exported)
from .base import IngestError, category_names
from .context import Contexts
from .discovery import NOT_INGESTED, iter_files, table_path
from .manifest import load_manifest
from ..store import OPTIONAL as OPTIONAL_TABLES
from .executors import Processes, dask_tasks
from .walk import assemble, ingest_files, remove_stale_temps

TABLES = ("summary", "series", *OPTIONAL_TABLES)
#: a part that only lives until the merge is an Arrow IPC stream (``.arrows``), lz4-compressed: on a
#: 40 M-row part, 0.73 s of CPU to write and 0.33 s to read back with zstd, against 2.38 and 1.15 s as
#: Parquet (lz4), and 40 MB instead of 213; lz4 instead of zstd, 11.6 M series rows: 0.20 + 0.10 s
#: against 0.30 + 0.14 s, 49 MiB against 29 (stream, not file format: a streamed log's blocks may carry
#: other dictionaries)
TEMP_SUFFIX = ".arrows"


@dataclass
class ScaleResult:
    files: pd.DataFrame
    failed: list[tuple[str, str]]
    rows: dict[str, int]          # rows written per table
    batches: int
    workers: int
    seconds: float
    #: wall seconds per stage (``read`` — the batches, each batch's parts merged into its
    #: table's file as it arrives; ``merge`` — what is left after the last batch: finishing the files)
    stages: dict[str, float] = field(default_factory=dict)
    #: whether the set was switched in (False: ``keep_previous`` and no row; the previous set is untouched)
    installed: bool = True


#: the last this fraction of the bytes goes in batches a :data:`TAPER_DIVISOR` th the size
TAPER_FRACTION, TAPER_DIVISOR = 1 / 8, 8


def plan_batches(sizes: list[int], batch_bytes: int = 128 << 20, batch_files: int = 1000,
                 taper: bool = True) -> list[tuple[int, int]]:
    """Consecutive index ranges [start, end) over files of ``sizes`` (bytes, walk order): each at most
    ``batch_files`` files and, unless it is a single file, at most ``batch_bytes``.  ``taper``: a batch
    that starts in the last :data:`TAPER_FRACTION` of the bytes holds at most a :data:`TAPER_DIVISOR` th
    of that, so that the processes run out of work together (a 128 MiB batch is ~2 s of one core; a run
    of a 6.9 GiB tree ended with one core idle for that long).  The plan depends on the sizes only, never
    on the number of processes: every ``--jobs`` writes the same tables."""
    total = sum(sizes)
    tail_from = total - total * TAPER_FRACTION if taper else float("inf")
    out, start, acc, done = [], 0, 0, 0
    limit_b, limit_f = batch_bytes, batch_files
    for i, s in enumerate(sizes):
        if i > start and (acc + s > limit_b or i - start >= limit_f):
            out.append((start, i))
            start, acc = i, 0
            if done >= tail_from:
                limit_b, limit_f = max(1, batch_bytes // TAPER_DIVISOR), max(1, batch_files // TAPER_DIVISOR)
        acc += s
        done += s
    if start < len(sizes):
        out.append((start, len(sizes)))
    return out


def _write_parts(df: pd.DataFrame, table_dir: Path, batch: int, split: bool = True) -> int:
    """Write ``df`` split by (campaign, kind) as ``table_dir/campaign=…/kind=…/part-<batch>.parquet``, or
    whole as ``table_dir/part-<batch>.arrows`` (``split=False``: a temporary part, merged into one file)."""
    if df is None or not len(df):
        return 0
    if not split:  # a temporary part (TEMP_SUFFIX), merged into the file later
        import pyarrow as pa
        table_dir.mkdir(parents=True, exist_ok=True)
        w = _PartWriter(table_dir / f"part-{batch:06d}{TEMP_SUFFIX}", temporary=True)
        w.write_arrow(pa.Table.from_pandas(df, preserve_index=False))
        w.close()
        return len(df)
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
        tset.write_parquet(part, d / f"part-{batch:06d}.parquet")
    return len(df)


class _PartWriter:
    """Row groups appended to one part (string-like columns stored as dictionary<int32, string>, a
    dictionary per row group; the schema of the first block), removed again if the file that wrote it
    fails midway: Parquet (zstd) for the partitioned layout, an Arrow IPC stream (:data:`TEMP_SUFFIX`)
    for a ``temporary`` part that the merge reads back."""

    def __init__(self, path: Path, temporary: bool = False):
        self.path, self.writer, self.schema, self.rows, self.temporary = path, None, None, 0, temporary
        self.sink = None

    def write(self, df: pd.DataFrame) -> None:
        import pyarrow as pa
        t = pa.Table.from_pandas(df, preserve_index=False)
        if self.writer is None:
            self.schema = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string())) if stringish(f.type)
                                     else f for f in t.schema])
        self.write_arrow(t.cast(self.schema, safe=False).replace_schema_metadata(None))

    def write_arrow(self, t) -> None:
        """Append an Arrow table (the first one sets the schema, pandas' metadata included)."""
        import pyarrow as pa
        import pyarrow.ipc as ipc
        import pyarrow.parquet as pq
        if self.writer is None:
            self.schema = self.schema or t.schema
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.temporary:
                self.sink = pa.OSFile(str(self.path), "wb")
                self.writer = ipc.new_stream(self.sink, t.schema, options=ipc.IpcWriteOptions(
                    compression="lz4", use_threads=False))
            else:
                self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd",
                                               **tset.parquet_options(self.schema))
        self.writer.write_table(t)
        self.rows += t.num_rows

    def close(self, ok: bool = True) -> None:
        if self.writer is not None:
            self.writer.close()
            if self.sink is not None:
                self.sink.close()
            if not ok:  # a file that failed midway leaves no rows behind
                self.path.unlink()
                self.rows = 0


def series_block(frame, keys: dict[str, Any], split: bool = False):
    """The stored series rows of one file's ``frame`` (DataFrame or :class:`~.base.Tidy`) as an Arrow table
    (labels dictionary<int32, string>, floats with NaN as null, as ``pyarrow.Table.from_pandas`` gives
    them): ``kind``, ``source`` (``keys["source"]``), job, ddir, metric, value, unit, t_s, ``campaign``;
    ``split``: without ``kind`` and ``campaign`` (in the partition path)."""
    import numpy as np
    import pyarrow as pa
    from .base import column

    n = len(frame)
    text = pa.dictionary(pa.int32(), pa.string())

    def const(v) -> pa.Array:
        if v is None:
            return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32), mask=np.ones(n, bool)),
                                                  pa.array([], pa.string()))
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([str(v)], pa.string()))

    def labels(name: str) -> pa.Array:
        c = column(frame, name)
        if not isinstance(c, pd.Categorical):
            c = pd.Categorical(c)
        codes = np.asarray(c.codes, dtype=np.int32)
        miss = codes < 0
        return pa.DictionaryArray.from_arrays(pa.array(codes, mask=miss if miss.any() else None),
                                              pa.array(category_names(c), pa.string()))

    def floats(name: str) -> pa.Array:
        return pa.array(np.asarray(column(frame, name), dtype=np.float64), from_pandas=True)

    cols = {"kind": const(keys["kind"]), "source": const(keys["source"]), "job": labels("job"),
            "ddir": labels("ddir"), "metric": labels("metric"), "value": floats("value"), "unit": labels("unit"),
            "t_s": floats("t_s"), "campaign": const(keys.get("campaign"))}
    if split:
        del cols["kind"], cols["campaign"]
    return pa.table(list(cols.values()), schema=pa.schema([pa.field(k, text if k not in ("value", "t_s")
                                                                    else pa.float64()) for k in cols]))


class _PartSink:
    """The tables of one large file read in blocks (bounded memory) written straight to their own parts,
    ``<table>/campaign=…/kind=…/part-<batch>-<n>.parquet`` (``split=False``: ``<table>/part-<batch>-<n>.arrows``),
    one row group (batch) per block: its series
    (``sink(frame)``) and, for a block trace, its request rows (``sink.requests(frame)``)."""

    def __init__(self, out: Path, batch: int, n: int, keys: dict[str, Any], split: bool = True):
        self.keys, self.split, self._where = keys, split, (out, batch, n)
        self._writers: dict[str, _PartWriter] = {}  # made when the file streams (most files do not)

    def _writer(self, table: str) -> _PartWriter:
        w = self._writers.get(table)
        if w is None:
            out, batch, n = self._where
            camp = self.keys.get("campaign")
            sub = Path(f"campaign={NO_CAMPAIGN if camp is None else camp}") / f"kind={self.keys['kind']}" \
                if self.split else Path()
            name = f"part-{batch:06d}-{n:04d}" + (".parquet" if self.split else TEMP_SUFFIX)
            w = self._writers[table] = _PartWriter(out / table / sub / name, temporary=not self.split)
        return w

    @property
    def series(self) -> _PartWriter:
        return self._writer("series")

    @property
    def blk(self) -> _PartWriter:
        return self._writer("blk_requests")

    @property
    def rows(self) -> int:
        """Series rows written."""
        w = self._writers.get("series")
        return 0 if w is None else w.rows

    @property
    def blk_rows(self) -> int:
        w = self._writers.get("blk_requests")
        return 0 if w is None else w.rows

    def __call__(self, frame) -> None:
        """One block's series (a DataFrame or :class:`~.base.Tidy` of the base columns) as the rows the
        in-memory path stores (``walk._assemble`` with ``keys=False``: ``kind``, the base columns with
        ``source`` = the file's path under the root, ``campaign``), built as Arrow arrays: a per-IO log
        sends ~10^6 rows a block, and its labels are one value each."""
        self.series.write_arrow(series_block(frame, self.keys, self.split))

    def requests(self, frame: pd.DataFrame) -> None:
        """Request rows of a streamed block trace, with the file's keys as the serial path attaches them
        (``walk.ingest_file``): ``kind``, ``source`` and the run keys."""
        keys = {"kind": str(self.keys["kind"]), "source": str(self.keys["source"]),
                **{k: str(v) for k, v in self.keys.items() if k not in ("kind", "source") and v is not None}}
        from .walk import with_labels
        df = with_labels(frame, keys)
        self.blk.write(df.drop(columns=[c for c in ("campaign", "kind") if c in keys]) if self.split else df)

    def close(self, ok: bool = True) -> None:
        for w in self._writers.values():
            w.close(ok)


def run_batch(root: str, rels: list[str], tmp_out: str, batch: int,
              manifest: dict[str, str] | None, lenient: bool = False, split: bool = True) -> dict[str, Any]:
    """One task: read ``rels`` (paths below ``root``), write their tables' parts below ``tmp_out``;
    returns the files rows, failures, run-context errors and rows written per table.  A large per-IO
    log goes to its own part block by block (:class:`_PartSink`), never whole in memory."""
    from . import _scan
    threads, _scan.THREADS = _scan.THREADS, 1  # one core per worker: the cluster, not the scanner, parallelises
    try:
        return _run_batch(Path(root), rels, Path(tmp_out), batch, manifest, lenient, split)
    finally:
        _scan.THREADS = threads  # an in-process worker shares the module with its client


def _run_batch(rootp: Path, rels: list[str], out: Path, batch: int,
               manifest: dict[str, str] | None, lenient: bool = False, split: bool = True) -> dict[str, Any]:
    contexts = Contexts(rootp)
    sinks: list[_PartSink] = []

    def sink_for(keys: dict[str, Any]) -> _PartSink:
        sinks.append(_PartSink(out, batch, len(sinks), keys, split))
        return sinks[-1]

    work = [(rootp / r, contexts.for_file(rootp / r)) for r in rels]
    outcomes = list(ingest_files(work, rootp, manifest, sink_for=sink_for, lenient=lenient))
    errors = [(table_path(p.relative_to(rootp).as_posix()), e) for p, e in contexts.errors]
    res = assemble(outcomes, errors, None, series_keys=False)  # series as stored: run keys once per file, in files
    rows = {"summary": _write_parts(res.summary, out / "summary", batch, split),
            "series": _write_parts(res.series, out / "series", batch, split) + sum(k.rows for k in sinks)}
    for name, t in res.tables.items():
        rows[name] = _write_parts(t, out / name, batch, split)
    streamed = sum(k.blk_rows for k in sinks)
    if streamed:
        rows["blk_requests"] = rows.get("blk_requests", 0) + streamed
    return {"files": res.files if split else [o.row for o in outcomes], "failed": res.failed, "rows": rows,
            "context_errors": [r for r, _ in errors]}


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


def _collect(results: list[dict[str, Any]], rels: list[str],
             manifest: dict[str, str] | None) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """The files table and the failures of all batches (walk order), as the in-memory path has them: a bad
    run.json, met by every batch of its folder, listed once; a manifest entry no file matched, failed."""
    from ..schema import typed_keys
    failed: list[tuple[str, str]] = []
    seen_ctx: set[str] = set()
    for r in results:
        for f in r["failed"]:
            if f[0] in r["context_errors"]:
                if f[0] in seen_ctx:
                    continue
                seen_ctx.add(f[0])
            failed.append(f)
    frames = [r["files"] for r in results if isinstance(r["files"], pd.DataFrame)]
    rows = [row for r in results if not isinstance(r["files"], pd.DataFrame) for row in r["files"]]
    missing: list[str] = []
    if manifest is not None:
        present = set(rels)
        missing = sorted(table_path(r) for r in set(manifest) - present  # as the tables name files
                         if NOT_INGESTED.isdisjoint(r.split("/")[:-1]))
        for rel in missing:
            failed.append((rel, f"{rel}: listed in MANIFEST.sha256 but missing"))
    gone = pd.DataFrame({"path": missing, "status": "failed",
                         "error": [f"{r}: listed in MANIFEST.sha256 but missing" for r in missing]})
    if frames:  # the Dask path: each batch's files table
        files = pd.concat([*frames, gone] if missing else frames, ignore_index=True)
    else:
        files = typed_keys(pd.DataFrame(rows + gone.to_dict("records")))
    return files, failed


def _plan(root: str | Path, batch_bytes: int, batch_files: int, spread: bool = False):
    """(root, paths, rels, batches, manifest) of a batched ingest of ``root``; ``spread``: at least eight
    batches where the files allow (16 files or more each), so that a small tree spreads over processes —
    the same plan for any number of them, so that the tables are the same row for row and category for
    category."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise IngestError(root, "expected a directory to ingest")
    manifest = load_manifest(root)
    paths = list(iter_files(root))
    rels = [p.relative_to(root).as_posix() for p in paths]
    if spread:
        batch_files = min(batch_files, max(16, -(-len(paths) // 8)))
    return root, paths, rels, plan_batches([_size(p) for p in paths], batch_bytes, batch_files), manifest


def _size(p: Path) -> int:
    """``p``'s size for the batch plan; 0 for what cannot be stat'ed (the walk's refusal names why)."""
    try:
        return p.stat().st_size
    except OSError:
        return 0


def ingest_batches(root: str | Path, out: str | Path, jobs: int = 1, lenient: bool = False,
                   batch_bytes: int = 128 << 20, batch_files: int = 1000, progress: bool | None = None,
                   dask: bool = False, address: str | None = None, workers: int | None = None,
                   client=None, keep_previous: bool = False) -> ScaleResult:
    """Read every file below ``root`` in batches and write its tables under ``out`` with bounded memory;
    the one batch ingest, with one choice of executor (:mod:`.executors`):

    * processes (default): ``jobs`` worker processes (``jobs=1``: this process) each read a batch and write
      its tables as parts; this process merges each batch's parts into ``<table>.parquet`` as soon as the
      batches before it are back (walk order), while the workers read on (:class:`analysis.store.PartMerger`);
    * ``dask``: each batch a Dask task on ``client``, else on ``address``, else on a ``LocalCluster`` of
      ``workers`` processes; its parts stay where the task wrote them: ``<table>/campaign=…/kind=…/``.

    Everything is staged in ``out/.ingest-<pid>/`` and the set switched in with ``tables.json`` last.  A
    worker that dies (any signal) raises :class:`.executors.WorkerDied` naming the files not read; nothing
    is written then.  ``keep_previous``: a tree that gave no summary and no series row (an empty or unmounted
    folder, nothing readable) does not replace the set ``out`` holds (``installed`` False); without one, its
    empty set is written (its files table says what was found).
    The set records each file's stat signature from before it was read and the SHA-256 of what was read
    (``tables.json``'s ``inputs``: :func:`analysis.ingest.freshness.stale` compares a tree with it by content)."""
    t0 = time.perf_counter()
    began_ns = time.time_ns()  # before the listing: a file changed after it is re-hashed by ingest.freshness.stale
    root, paths, rels, batches, manifest = _plan(root, batch_bytes, batch_files, spread=not dask)
    signatures = [tset.stat_signature(p) for p in paths]  # before any file is read
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    tmp = out / f".ingest-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    work = [(str(root), rels[a:b], str(tmp), i,
             None if manifest is None else {r: manifest[r] for r in rels[a:b] if r in manifest}, lenient, dask)
            for i, (a, b) in enumerate(batches)]
    stage = _Staged(tmp, merge=not dask)
    bar = _bar(progress, len(paths), "ingest (dask)" if dask else "ingest")
    try:
        with _executor(dask, jobs, len(batches), client, address, workers) as ex:
            fn = run_batch if dask or ex.workers > 1 else _run_batch_here
            results = []
            for w, r in zip(work, ex.ordered(fn, work, lambda w: w[1], root, len(paths))):
                results.append(r)
                stage.batch_done(w[3])
                if bar is not None:
                    bar.update(len(w[1]))
            n_workers = ex.workers
        t_read = time.perf_counter()
        files, failed = _collect(results, rels, manifest)
        shas = files["sha256"].iloc[:len(rels)].tolist() if "sha256" in files else []  # walk order, as rels
        rows = stage.install(out, files, results, root, tset.inputs_record(root, began_ns, rels, signatures, shas,
                                                                          manifest), keep_previous)
    finally:
        stage.abort()
        if bar is not None:
            bar.close()
        shutil.rmtree(tmp, ignore_errors=True)
    t1 = time.perf_counter()
    return ScaleResult(files=files, failed=failed, rows=rows, batches=len(batches), workers=n_workers,
                       seconds=t1 - t0, stages={"read": t_read - t0, "merge": t1 - t_read},
                       installed=stage.installed)


def _run_batch_here(*args) -> dict[str, Any]:
    """:func:`run_batch` in this process (``jobs=1``): the scanner keeps its threads."""
    root, rels, tmp_out, batch, manifest, lenient, split = args
    return _run_batch(Path(root), rels, Path(tmp_out), batch, manifest, lenient, split)


@contextmanager
def _executor(dask: bool, jobs: int, batches: int, client, address: str | None, workers: int | None):
    if dask:
        with dask_tasks(client, address, workers) as ex:
            yield ex
    else:
        yield Processes(max(1, min(jobs, batches)))


def _bar(progress: bool | None, total: int, desc: str):
    if not (sys.stderr.isatty() if progress is None else progress):
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="file")


class _Staged:
    """The tables of a batch ingest in the staging folder ``tmp``: with ``merge``, each batch's parts merged
    into ``<table>.parquet`` as the batch arrives (the merge's CPU overlaps the reading instead of following
    it); without, the parts stay as the partitioned layout."""

    def __init__(self, tmp: Path, merge: bool):
        self.tmp, self.merge, self.installed = tmp, merge, False
        self.mergers = {name: tset.PartMerger(tmp / f"{name}.parquet") for name in TABLES} if merge else {}

    def batch_done(self, i: int) -> None:
        for name, m in self.mergers.items():
            if (self.tmp / name).is_dir():
                m.add(sorted((self.tmp / name).glob(f"part-{i:06d}*{TEMP_SUFFIX}")))

    def install(self, out: Path, files: pd.DataFrame, results: list[dict[str, Any]], root: Path,
                inputs: dict[str, Any] | None = None, keep_previous: bool = False) -> dict[str, int]:
        """Switch the set into ``out`` (``tables.json`` last, ``inputs``: the files read, see
        :func:`analysis.store.commit`); the rows written per table.  ``keep_previous``: without a summary or
        series row, a complete set already in ``out`` is not replaced (``installed`` stays False)."""
        tmp = self.tmp
        tset.write_parquet(files, tmp / "files.parquet")
        if not self.merge:
            rows = {t: sum(r["rows"].get(t, 0) for r in results) for t in TABLES}
            if keep_previous and not rows.get("summary") and not rows.get("series") and (out / tset.RECORD).is_file():
                return rows  # nothing readable: the previous set stays as it was
            tset.begin(out)  # no complete set in out until commit
            _swap_in(tmp, out, TABLES)
            os.replace(tmp / "files.parquet", out / "files.parquet")
            tset.commit(out, ["files", *[t for t in TABLES if (out / t).is_dir()]], root, inputs)
            self.installed = True
            return rows
        rows: dict[str, int] = {}
        for name, m in self.mergers.items():
            if m.parts:
                rows[name] = m.close()
                shutil.rmtree(tmp / name)
            elif name in ("summary", "series"):  # an empty tree still has both tables
                df = getattr(assemble([], [], None), name)
                tset.write_parquet(tset.stored_series(df) if name == "series" else df, tmp / f"{name}.parquet")
                rows[name] = 0
        if keep_previous and not rows.get("summary") and not rows.get("series") and (out / tset.RECORD).is_file():
            return rows  # nothing readable: the previous set stays as it was
        tset.install(out, {n: tmp / f"{n}.parquet" for n in ("files", *TABLES) if (tmp / f"{n}.parquet").is_file()},
                     root, inputs)
        self.installed = True
        return rows

    def abort(self) -> None:
        """Close the writers an error left open (a no-op after :meth:`install`)."""
        for m in self.mergers.values():
            if m.writer is not None:
                m.abort()


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

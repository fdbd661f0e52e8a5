"""Walk a data tree, read every benchmark output in it, and write tidy Parquet tables atomically.

This module holds the per-file work (:func:`ingest_file`: manifest check, role by name, reader, value
rules) and the in-memory path (:func:`ingest`, serial or a fork pool); around it: which files and what
each is by name (:mod:`.discovery`), run keys (:mod:`.context`), the checksum manifest (:mod:`.manifest`),
the value rules (:mod:`.validate`), the table set on disk (:mod:`analysis.store`), the bounded-memory default
of ``python -m analysis ingest`` (:mod:`.scale`).

Any layout works.  Run context is attached from the nearest enclosing

* ``run.json`` (written by ``capture/``): its keys, e.g. ``campaign, scenario, scheduler, profile,
  repeat``, become columns (``scheduler``, which our captures use for either, becomes ``op_queue`` when it
  names an OSD op queue, else ``io_scheduler``: :func:`scheduler_keys`);
* ``benchmark_config.yaml`` (CBT archives ``results/<iteration>/id-<hash>/``): the benchmark's
  parameters (``op_size``, ``iodepth``, ``mode``, ``concurrent_ops``, …) become columns, ``iteration``
  becomes ``repeat``, and ``osd_op_queue``/``osd_mclock_profile`` (wherever they appear in the
  file) become ``op_queue``/``profile`` (``ceph_settings.out``, what the OSD ran, overrides them).

Outputs: ``files.parquet`` (one row per file: path, sha256, kind, tool version, status, error),
``summary.parquet`` and ``series.parquet`` (tidy rows with the run keys), and when block traces are
present ``blk_requests.parquet`` (one row per block request, ``analysis.ingest.blktrace.io_tables``).  Status is ``ok``,
``partial`` (the reader marked the result incomplete), ``failed`` (``IngestError``), ``empty``
(0 bytes: a fio log fio left empty, e.g. the slat log of a sync engine), ``unrecognised`` (``--lenient``
only, below) or ``context`` (run.json, benchmark_config.yaml, the manifest, the capture harness's own
files: ``done`` markers, ``osd_config.json.gz``, ``cluster-log.txt.gz``, ``campaign.yaml``,
``sitting-*.json``, a campaign's ``pilot.json`` verdict, the benchmarks' stderr; and what CBT writes
beside its outputs that no reader here reads: ``historic_ops.out.<host>``, ``objecter.N.log.<host>``,
``recovery.log``, ``collectl/``; notes by name: ``README*``, ``COMMAND``, ``*.md``, ``*.rst``, ``*.sh``,
``*.py``).

Strict by default: a file that is empty (other than a fio log), that no reader claims, that is not
listed in the tree's ``MANIFEST.sha256`` or whose hash differs from it is ``failed``, its rows kept out of
the tables, and listed.  ``lenient=True`` (``--lenient``) lists them and goes on: ``empty`` /
``unrecognised`` files are not read; unlisted or changed files are read, ``manifest`` = ``missing`` /
``MISMATCH`` saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd

from .executors import Processes, WorkerDied  # noqa: F401 (WorkerDied: what ingest raises)
from .base import SERIES_COLUMNS, SUMMARY_COLUMNS, IngestError, Label, Tidy, column, union_str_categoricals
from .context import Contexts, workload_context
from .fio_workload import argv_time_based
from .compress import compression
from .detect import HEAD_BYTES, detect, read
from .discovery import (MANIFEST, NOT_INGESTED, context_kind, iter_files, plain_name, refusal_stat, shown,
                        table_path)
from .manifest import load_manifest, sha256_file
from .completeness import CHECKED_KINDS, mark_partial, shortfall
from .runfolder import RunFolder, folder_for
from ..schema import KEY_COLUMNS, typed_keys
from .validate import problems



@dataclass
class IngestResult:
    files: pd.DataFrame
    summary: pd.DataFrame
    series: pd.DataFrame
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: per-event tables some readers give (``blk_requests``: one row per block request from the
    #: blktrace/blkparse readers, with the file's run keys); written as ``<name>.parquet``
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def _per_file(values: list[Any], fid: np.ndarray) -> pd.Categorical:
    """A per-file label (None = missing) broadcast to rows: categorical over files, codes taken by
    each row's file index."""
    cat = pd.Categorical([None if v is None else str(v) for v in values])
    cats = pd.Index([str(c) for c in cat.categories], dtype="str")
    return pd.Categorical.from_codes(cat.codes[fid] if len(fid) else np.zeros(0, np.int8), categories=cats)


@dataclass
class _Stacked:
    """Per-file tidy frames stacked: the base columns other than ``source`` (``value``/``t_s`` float64,
    the rest categoricals, :func:`union_str_categoricals`) and each row's file index ``fid``."""
    cols: dict[str, Any]
    fid: np.ndarray


def _stack(frames: list[pd.DataFrame], fids: list[int], base_cols: list[str]) -> _Stacked:
    keep = [(f, i) for f, i in zip(frames, fids) if len(f)]
    fid = (np.repeat(np.array([i for _, i in keep], dtype=np.int64), [len(f) for f, _ in keep])
           if keep else np.zeros(0, dtype=np.int64))
    cols: dict[str, Any] = {}
    for c in base_cols:
        if c in ("value", "t_s"):
            cols[c] = (np.concatenate([np.asarray(column(f, c), dtype=np.float64) for f, _ in keep]) if keep
                       else np.zeros(0, dtype=np.float64))
        elif c != "source":
            cols[c] = union_str_categoricals([column(f, c) for f, _ in keep])
    return _Stacked(cols, fid)


def _restack(parts: list[_Stacked], offsets: list[int]) -> _Stacked:
    """Stacks of consecutive file ranges (file indices shifted by ``offsets``) as one: the same columns,
    categories in the same order of first appearance, as :func:`_stack` over all the frames."""
    cols = {c: (np.concatenate([p.cols[c] for p in parts]) if c in ("value", "t_s")
                else union_str_categoricals([p.cols[c] for p in parts])) for c in parts[0].cols}
    return _Stacked(cols, np.concatenate([p.fid + off for p, off in zip(parts, offsets)]))


def _attach(st: _Stacked, contexts: list[dict[str, Any]], base_cols: list[str], keys: bool = True) -> pd.DataFrame:
    """The stacked rows with every file's run keys, vectorised.

    ``contexts[i]`` holds file i's ``kind``, ``source`` (its path under the root) and run keys.  Columns:
    ``kind``, ``base_cols`` (``source`` = the path), ``KEY_COLUMNS`` (always), then the other keys in
    order of first appearance among files with rows; keys are categoricals with ``str`` categories,
    typed ``string`` when no file has them.  ``keys=False``: of the run keys only those the stored
    series keeps (:data:`analysis.store.SERIES_STORED_KEYS`; the rest are joined from ``files`` on read)."""
    from ..store import SERIES_STORED_KEYS
    extra: list[str] = []
    seen = set(KEY_COLUMNS) | {"kind", "source", "context_source"}
    for i in np.unique(st.fid).tolist() if keys else []:
        for k in contexts[i]:
            if k not in seen:
                seen.add(k)
                extra.append(k)
    cols = ["kind"] + base_cols + (KEY_COLUMNS + extra if keys else list(SERIES_STORED_KEYS))
    out = {c: st.cols[c] if c in st.cols else _per_file([ctx.get(c) for ctx in contexts], st.fid)
           for c in cols}
    df = pd.DataFrame(out, columns=cols, copy=False)
    for c in cols[len(base_cols) + 1:]:  # a key no file had: typed as strings, not float NaN
        if len(df[c].cat.categories) == 0:  # made null, not cast (casting 1 M null labels costs 50 ms)
            df[c] = _null_strings(len(df))
    return typed_keys(df)


def with_labels(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """``df.assign(**labels)`` for text labels, the same frame (columns of pandas' ``str`` dtype) without
    a Python object per row: each column is one Arrow string repeated (a block trace's request rows carry
    its file's run keys, ~10 columns of 10^5–10^6 rows), its buffers made directly (the bytes repeated
    and evenly spaced offsets: 500,000 rows 2.4 ms, ``pyarrow.repeat`` 20 ms)."""
    dtype = pd.StringDtype("pyarrow", na_value=np.nan)
    n = len(df)
    return df.assign(**{k: pd.array(_repeated(str(v), n), dtype=dtype) for k, v in labels.items()})


def _repeated(text: str, n: int):
    """``text`` ``n`` times as an Arrow ``large_string`` chunked array."""
    import pyarrow as pa
    b = text.encode()
    offsets = np.arange(0, (n + 1) * len(b), len(b), dtype=np.int64) if b else np.zeros(n + 1, np.int64)
    return pa.chunked_array([pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(b * n))])


def _null_strings(n: int):
    """``n`` missing values as a ``string`` array (Arrow nulls: no per-row work)."""
    import pyarrow as pa
    return pd.array(pa.nulls(n, pa.large_string()), dtype="string")


def _assemble(frames: list[pd.DataFrame], fids: list[int], contexts: list[dict[str, Any]],
              base_cols: list[str], keys: bool = True) -> pd.DataFrame:
    """Concatenate per-file tidy frames (``frames[j]`` came from file ``fids[j]``) and attach every
    file's run keys (:func:`_attach`; ``keys=False``: only those the stored series keeps)."""
    return _attach(_stack(frames, fids, base_cols), contexts, base_cols, keys)


@dataclass
class FileOutcome:
    """What reading one file gave: its ``files`` row, and when parsed its run keys (``ctx``, with
    ``kind`` and ``source``), tidy summary and series as the reader gave them (DataFrames or
    :class:`~.base.Tidy` columns: ``base.as_frame`` makes a frame) and its block requests (keys attached)."""
    row: dict[str, Any]
    failed: list[tuple[str, str]] = field(default_factory=list)
    ctx: dict[str, Any] | None = None
    summary: "pd.DataFrame | Tidy | None" = None
    series: "pd.DataFrame | Tidy | None" = None
    requests: pd.DataFrame | None = None
    #: run keys per fio job, where a file's jobs ran different workloads (kubestr's read + write job)
    job_keys: dict[str, dict[str, Any]] | None = None


def _fio_log_name(name: str) -> bool:
    from .fio_log import LOG_NAME
    return LOG_NAME.match(name) is not None


#: files up to this size are read into memory once per ingest (hash, detection and reader share the bytes);
#: larger ones are hashed in blocks and read by their reader (memory-mapped or in blocks)
ONE_READ_BYTES = 16 << 20


def _read_once(p: Path, size: int) -> bytes | None:
    if size > ONE_READ_BYTES:
        return None
    try:
        with open(p, "rb") as f:
            return f.read()
    except OSError:
        return None  # the hash and the reader report it, as for any other file


def ingest_file(p: Path, root: Path, ctx: dict[str, Any], manifest: dict[str, str] | None,
                sink_for=None, lenient: bool = False, folder: RunFolder | None = None) -> FileOutcome:
    """Read one file below ``root`` with its directory's run context; never raises ``IngestError`` (the
    error goes in the row and ``failed``).  The unit of work of the serial, pool and Dask paths.

    ``sink_for(keys)`` (keys: the run context with ``kind`` and ``source``) gives a callable that takes
    the series of a file read in blocks (``detect.streams``) block by block, and has a ``close()``; then
    the outcome's series is empty.  Its ``requests(frame)`` method, if any, takes a streamed block trace's
    request rows (then the outcome has none).  Without it those blocks are concatenated in memory.
    ``lenient``: the module docstring's strict rules relaxed.  ``folder``: the :class:`RunFolder` of
    ``p``'s directory while the caller reads that folder (:func:`ingest_files`), so that a fio JSON and
    the logs beside it share one parse of it."""
    fs_rel = p.relative_to(root).as_posix()  # the file system's name (os.fsdecode); the tables' is table_path's
    rel = table_path(fs_rel)
    keys = {k: (str(v) if v is not None else None) for k, v in ctx.items() if k != "context_source"}
    try:
        why, st = refusal_stat(p, root)
    except RuntimeError:  # Path.resolve() on a symlink loop: Python 3.11 raises RuntimeError, not OSError
        why, st = "cannot read: a symlink loop (expected a regular file in the tree)", None
    if why:
        row0 = {"path": rel, "status": "failed", "error": f"{rel}: {shown(why)}", "kind": None, **keys}
        return FileOutcome(row0, failed=[(rel, row0["error"])])
    raw = _read_once(p, st.st_size)  # a file up to ONE_READ_BYTES is read once: hashed, sniffed and parsed from memory
    plain = raw if raw is not None and compression(raw[:8]) is None else None
    try:
        sha = hashlib.sha256(raw).hexdigest() if raw is not None else sha256_file(p)
    except OSError as e:  # stat'ed but not readable (no read permission, an I/O error): this file fails, not the ingest
        row0 = {"path": rel, "size_bytes": st.st_size, "status": "failed", "kind": None,
                "error": f"{rel}: cannot read: {e.strerror or e}", **keys}
        return FileOutcome(row0, failed=[(rel, row0["error"])])
    row: dict[str, Any] = {"path": rel, "size_bytes": st.st_size, "sha256": sha,
                           "kind": None, "tool_version": None, "status": "ok", "error": None,
                           "error_line": None, "partial": False, "meta_json": None}
    row.update(keys)
    out = FileOutcome(row)
    refuse = _manifest_check(row, p.name, manifest, fs_rel)
    if refuse and not lenient:
        row.update(status="failed", error=refuse)
        out.failed.append((rel, refuse))
        return out
    role = context_kind(p, rel)
    if role is not None:
        row.update(status="context", kind=role)
    elif row["size_bytes"] == 0 and (lenient or _fio_log_name(plain_name(p.name))):
        row["status"] = "empty"  # fio leaves a log empty when it has no samples of that kind
    elif row["size_bytes"] == 0:
        _fail(out, (f"{rel}: empty file (0 bytes): expected benchmark output (a fio log may be empty, other "
                    "files not; --lenient lists it and goes on)"))
    else:
        kind = _detect(out, p, plain, lenient)
        if kind is not None:
            _read_into(out, p, root, ctx, kind, plain, sink_for, folder)
    return out


def _manifest_check(row: dict[str, Any], name: str, manifest: dict[str, str] | None,
                    fs_rel: str | None = None) -> str | None:
    """Sets ``row["manifest"]`` (absent / missing / ok / MISMATCH); why the file must not be read, or None.
    ``fs_rel``: the file's path below the root as the manifest names it (os.fsdecode; default its row's)."""
    rel = row["path"]
    if manifest is None:
        row["manifest"] = "absent"  # no MANIFEST.sha256 in the tree: nothing to check against
    elif name != MANIFEST:
        want = manifest.get(rel if fs_rel is None else fs_rel)
        row["manifest"] = "missing" if want is None else ("ok" if want == row["sha256"] else "MISMATCH")
    if row.get("manifest") == "MISMATCH":  # not read at all: none of its rows may reach the tables
        return f"{rel}: sha256 differs from {MANIFEST} (raw data must not change; --lenient reads it)"
    if row.get("manifest") == "missing":
        return (f"{rel}: not listed in {MANIFEST} (raw data is listed when it is added: `python -m "
                "analysis manifest DIR`; --lenient reads it unchecked)")
    return None


def _fail(out: FileOutcome, msg: str, line: int | None = None, **more: Any) -> None:
    msg = shown(msg)  # a reader's message names the file's full path: its name may hold any bytes
    out.row.update(status="failed", error=msg, error_line=line, **more)
    out.failed.append((out.row["path"], msg))


def _detect(out: FileOutcome, p: Path, plain: bytes | None, lenient: bool) -> str | None:
    """The file's kind by content, or None (the row says why: failed, or unrecognised with ``lenient``)."""
    try:
        kind = detect(p, head=None if plain is None else plain[:HEAD_BYTES])
    except IngestError as e:
        _fail(out, str(e), e.line)
        return None
    if kind is None and lenient:
        out.row["status"] = "unrecognised"
    elif kind is None:
        _fail(out, (f"{out.row['path']}: unrecognised content: no reader claims it (expected fio JSON or logs, "
                    "rados bench output, blktrace/blkparse/btt, sysutil or a cephqos-pg-timeline; --lenient lists "
                    "it and goes on)"), 1)
    return kind


def _read_into(out: FileOutcome, p: Path, root: Path, ctx: dict[str, Any], kind: str, plain: bytes | None,
               sink_for, folder: RunFolder | None) -> None:
    """Read ``p`` (of ``kind``) into ``out``: its row, run keys (with the workload fio recorded), summary,
    series and request rows; a reader's error, or values no tool prints, fail the file."""
    row, rel = out.row, out.row["path"]
    base = {k: v for k, v in ctx.items() if k != "context_source"}
    sink = None
    try:
        if sink_for is not None:
            sink = sink_for({**base, "kind": kind, "source": rel})
        parsed = read(p, sink, data=plain, kind=kind, folder=folder)
        bad = problems(parsed.kind, parsed.tidy_summary, parsed.tidy_series)
        if bad:  # values no tool prints: failed, its rows kept out of the tables
            raise IngestError(p, "; ".join(bad[:3]) + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""))
        ident = parsed.meta.get("identity_check") or {}
        if ident.get("ok") is False and ident.get("failed"):  # fio's iops is its total_ios / runtime: not these
            c = ident["failed"]
            implied = c["total_ios"] * 1000.0 / c["runtime_ms"]
            raise IngestError(p, f"expected job {c['job']!r} {c['ddir']} iops = total_ios / runtime, as fio "
                                 f"computes it: {c['total_ios']:.0f} IOs in {c['runtime_ms']:.0f} ms are "
                                 f"{implied:.6g} IOPS, the file says {c['iops']:.6g} (an edited number?)",
                              line=c.get("line"))
        if parsed.kind in CHECKED_KINDS:  # what the run's record says was written: a cut at a record boundary
            why = shortfall(parsed, p, folder_for(p, folder).record(), plain)
            if why:
                mark_partial(parsed, why)
        row.update(kind=parsed.kind, tool_version=parsed.meta.get("tool_version"),
                   partial=parsed.partial, status="partial" if parsed.partial else "ok",
                   meta_json=json.dumps(parsed.meta, default=str, ensure_ascii=False))
        wl = parsed.meta.get("workload") or {}
        if parsed.kind in TEXT_KINDS and folder is not None:  # text records no options: its job file does
            wl = _jobfile_workload(parsed, wl, folder, root)
            if wl.get("from") == "jobfile":
                row["meta_json"] = json.dumps(parsed.meta, default=str, ensure_ascii=False)
        if parsed.kind in FIO_KINDS and "time_based" not in (wl.get("keys") or {}):  # fio < 3.39: the command line
            tb = argv_time_based((folder_for(p, folder).record() or {}).get("fio_argv"))
            if tb is not None:
                wl = {**wl, "keys": {**(wl.get("keys") or {}), "time_based": tb}}
                parsed.meta["time_based_from"] = "run.json fio_argv"
                row["meta_json"] = json.dumps(parsed.meta, default=str, ensure_ascii=False)
        added, conflicts = workload_context(ctx, wl.get("keys") or {})
        if ctx.get("run") is None:  # no run.json / CBT run: a fio invocation is one (its JSON and its logs)
            inv = str(p) if parsed.kind in ("fio-json", *TEXT_KINDS) else wl.get("companion_path")
            if inv and Path(inv).is_relative_to(root):
                added["run"] = table_path(Path(inv).relative_to(root).as_posix())
        run = added.get("run", ctx.get("run"))
        if added.get("fio_group") is not None:  # a log of one job of a file whose groups ran one after another
            added["run"] = _group_run(run or rel, added["fio_group"])
        ts = parsed.meta.get("timestamp") if parsed.kind == "fio-json" else None
        if isinstance(ts, (int, float)) and not isinstance(ts, bool) and ts > 0:
            added["fio_timestamp"] = int(ts)  # when fio wrote its report (unix s): a run's time without run.json
        row.update({k: str(v) for k, v in added.items()})
        if conflicts:
            row["workload_conflict"] = "; ".join(conflicts)
        out.ctx = {**base, **added, "kind": parsed.kind, "source": rel}
        if wl.get("by_job"):  # jobs of one file that ran different workloads or groups: keys per job's rows
            out.job_keys = {j: workload_context(ctx, {k: v for k, v in keys.items() if v is not None})[0]
                            for j, keys in wl["by_job"].items()}
            for keys in out.job_keys.values():  # a reporting group is a run of its own
                if keys.get("fio_group") is not None:
                    keys["run"] = _group_run(run or rel, keys["fio_group"])
        out.summary, out.series = parsed.tidy_summary, parsed.tidy_series
        req = parsed.tables.get("requests")
        if req is not None and len(req):
            keys = {k: str(v) for k, v in base.items() if v is not None}
            out.requests = with_labels(req, {"kind": parsed.kind, "source": rel, **keys})
    except IngestError as e:
        _fail(out, str(e), e.line, kind=kind)
    finally:
        if sink is not None:
            sink.close(ok=row["status"] != "failed")


#: fio's text outputs (normal, terse): they record no job options
TEXT_KINDS = ("fio-text", "fio-terse")
#: fio's outputs whose workload keys a run's recorded command line completes (:func:`argv_time_based`)
FIO_KINDS = ("fio-json", "fio-log", "fio-hist-log")


def _jobfile_workload(parsed: Any, wl: dict[str, Any], folder: RunFolder, root: Path) -> dict[str, Any]:
    """The workload of a fio text output from the one job file beside it whose jobs are the output's
    (:meth:`RunFolder.jobfile_for`): each job's keys from its section (``name#k`` clones from ``name``), its
    reporting group from the output; the job file named in ``meta["jobfile"]`` and the key ``fio_jobfile``.
    ``wl`` unchanged when there is no such file (nothing is assumed)."""
    from .fio_workload import for_job
    jobs = [j for j in parsed.meta.get("jobs", []) if j]
    jf = folder.jobfile_for(jobs)
    if jf is None:
        return wl
    jwl = jf.meta.get("workload") or {}
    groups = (wl.get("by_job") or {})
    version = parsed.meta.get("tool_version")
    by_job = {j: {**for_job(jwl, j.split("#")[0]), **({"fio_version": version} if version else {}),
                  **{k: v for k, v in groups.get(j, {}).items() if k == "fio_group"}} for j in jobs}
    rel = table_path(Path(jf.path).relative_to(root).as_posix() if Path(jf.path).is_relative_to(root) else jf.path)
    parsed.meta["jobfile"] = rel
    out = {"keys": {"fio_jobfile": rel}, "by_job": by_job, "defaults": jwl.get("defaults", []), "from": "jobfile"}
    parsed.meta["workload"] = out
    return out


def _group_run(run: str, group: Any) -> str:
    """The run of one reporting group of a fio invocation ``run`` (its JSON's path or run.json folder):
    jobs of different groups (``stonewall``, ``new_group``, ``wait_for``) ran one after another."""
    return f"{run}#group{group}"


def ingest_files(work: "Iterable[tuple[Path, dict[str, Any]]]", root: Path, manifest: dict[str, str] | None,
                 sink_for=None, lenient: bool = False) -> "Iterator[FileOutcome]":
    """:func:`ingest_file` of each ``(path, run context)`` of ``work`` in turn, with one :class:`RunFolder`
    per stretch of files of one directory (the walk lists a folder's files together): a fio JSON is
    parsed once for itself and the logs beside it."""
    folder: RunFolder | None = None
    for p, ctx in work:
        if folder is None or not folder.holds(p):
            folder = RunFolder(p.parent)
        yield _text_safe(ingest_file(p, root, _safe_keys(ctx), manifest, sink_for=sink_for, lenient=lenient,
                                     folder=folder))


def _safe_keys(ctx: dict[str, Any]) -> dict[str, Any]:
    """``ctx`` with each text value that a folder's name gave with bytes that are not UTF-8, or with control
    characters (CBT's ``archive``, bench_fio's ``target``), as :func:`~.discovery.shown` writes it: a table
    holds UTF-8 text only."""
    if not any(isinstance(v, str) and shown(v) != v for v in ctx.values()):
        return ctx
    return {k: shown(v) if isinstance(v, str) else v for k, v in ctx.items()}


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_safe(out: FileOutcome) -> FileOutcome:
    """``out`` with no lone surrogate (a name's non-UTF-8 byte, as ``os.fsdecode`` gives it) left in its row: in
    ``meta_json`` (a reader's meta holding a path) each is written ``\\xNN`` inside its JSON string."""
    meta = out.row.get("meta_json")
    if isinstance(meta, str) and _SURROGATE.search(meta):
        out.row["meta_json"] = _SURROGATE.sub(lambda m: shown(m.group()).replace("\\", "\\\\"), meta)
    for k, v in out.row.items():
        if k != "meta_json" and isinstance(v, str) and _SURROGATE.search(v):
            out.row[k] = shown(v)
    return out


@dataclass
class _Chunk:
    """What a run of consecutive files gave, in the parent-ready form :func:`assemble` merges: rows and
    failures, the parsed files' run keys, their stacked summary and series, their block requests."""
    rows: list[dict[str, Any]]
    failed: list[tuple[str, str]]
    ctxs: list[dict[str, Any]]
    summary: _Stacked
    series: _Stacked
    requests: pd.DataFrame | None


def _take(table: "pd.DataFrame | Tidy", mask: np.ndarray) -> "pd.DataFrame | Tidy":
    """The rows of ``table`` where ``mask`` holds, in the same form."""
    if not isinstance(table, Tidy):
        return table[mask]
    return Tidy({c: Label(v.label, int(mask.sum())) if isinstance(v, Label) else v[mask]
                 for c, v in table.cols.items()}, table.columns)


def _by_job(o: FileOutcome) -> list[FileOutcome]:
    """A file whose jobs ran different workloads as one part per workload: its summary rows by job, each
    part with its jobs' keys (rows of jobs without keys, fio's ``All clients``, keep the file's)."""
    jobs = np.asarray(column(o.summary, "job"), dtype=object).astype(str)
    groups: dict[tuple, list[str]] = {}
    for j in dict.fromkeys(jobs.tolist()):
        groups.setdefault(tuple(sorted((o.job_keys or {}).get(j, {}).items())), []).append(j)
    return [FileOutcome(o.row, ctx={**o.ctx, **dict(key)}, summary=_take(o.summary, np.isin(jobs, js)),
                        series=o.series if i == 0 else _take(o.series, np.zeros(len(o.series), bool)))
            for i, (key, js) in enumerate(groups.items())]


def _chunk(outcomes: list[FileOutcome]) -> _Chunk:
    parsed = [p for o in outcomes if o.ctx is not None for p in (_by_job(o) if o.job_keys else [o])]
    fids = list(range(len(parsed)))
    reqs = [o.requests for o in parsed if o.requests is not None]
    return _Chunk([o.row for o in outcomes], [f for o in outcomes for f in o.failed], [o.ctx for o in parsed],
                  _stack([o.summary for o in parsed], fids, SUMMARY_COLUMNS),
                  _stack([o.series for o in parsed], fids, SERIES_COLUMNS),
                  pd.concat(reqs, ignore_index=True) if reqs else None)


def _merge(chunks: list[_Chunk], context_errors: list[tuple[str, IngestError]],
           manifest: dict[str, str] | None, series_keys: bool = True) -> IngestResult:
    """The tables of consecutive chunks (in walk order) plus the run-context errors (path relative to
    the root, error) and the manifest's entries that no file matched.  ``series_keys=False``: the series
    as stored (:func:`analysis.store.stored_series`: run keys once per file, in ``files``)."""
    file_rows = [r for c in chunks for r in c.rows]
    failed = [f for c in chunks for f in c.failed]
    for rel, e in context_errors:
        failed.append((rel, shown(str(e))))
        for row in file_rows:
            if row["path"] == rel:
                row.update(status="failed", error=shown(str(e)), error_line=e.line)
    if manifest is not None:
        seen = {r["path"] for r in file_rows}
        for rel in sorted(table_path(r) for r in manifest if NOT_INGESTED.isdisjoint(r.split("/")[:-1])):
            if rel in seen:
                continue
            msg = f"{rel}: listed in {MANIFEST} but missing"
            failed.append((rel, msg))
            file_rows.append({"path": rel, "status": "failed", "error": msg})
    files = typed_keys(pd.DataFrame(file_rows))
    tables = {}
    reqs = [c.requests for c in chunks if c.requests is not None]
    if reqs:
        t = pd.concat(reqs, ignore_index=True) if len(reqs) > 1 else reqs[0]
        for c in ("kind", "source", "rwbs", "ddir", *[k for k in KEY_COLUMNS if k in t.columns]):
            t[c] = t[c].astype("category")
        tables["blk_requests"] = typed_keys(t)
    ctxs = [x for c in chunks for x in c.ctxs]
    offsets = np.cumsum([0] + [len(c.ctxs) for c in chunks[:-1]]).tolist()
    stacks = {}
    for name in ("summary", "series"):
        parts = [getattr(c, name) for c in chunks]
        stacks[name] = parts[0] if len(parts) == 1 else _restack(parts, offsets)
    return IngestResult(files=files, summary=_attach(stacks["summary"], ctxs, SUMMARY_COLUMNS),
                        series=_attach(stacks["series"], ctxs, SERIES_COLUMNS, series_keys), failed=failed,
                        tables=tables)


def assemble(outcomes: list[FileOutcome], context_errors: list[tuple[str, IngestError]],
             manifest: dict[str, str] | None, series_keys: bool = True) -> IngestResult:
    """The tables of a list of :class:`FileOutcome` (in walk order) plus the run-context errors
    (path relative to the root, error) and the manifest's entries that no file matched
    (``series_keys=False``: the series as stored, see :func:`_merge`)."""
    return _merge([_chunk(outcomes)], context_errors, manifest, series_keys)


_WORKER: dict[str, Any] = {}


def _worker_init(root: Path, manifest: dict[str, str] | None, lenient: bool = False) -> None:
    _WORKER.update(root=root, manifest=manifest, lenient=lenient)


def _ingest_chunk(work: list[tuple[Path, dict[str, Any]]]) -> _Chunk:
    """A pool worker's unit: read consecutive files and hand back their stacked tables (one pickled
    object per chunk; pickling the per-file frames cost more than reading them)."""
    return _chunk(list(ingest_files(work, _WORKER["root"], _WORKER["manifest"], lenient=_WORKER["lenient"])))


def _chunks(work: list, jobs: int) -> list[list]:
    """Consecutive runs of files (a folder's files stay together: fio's logs share its JSON), at least 16
    and about 48 runs per worker, so a slow tail (block traces, timelines) is small."""
    size = max(16, -(-len(work) // (48 * jobs)))
    return [work[i:i + size] for i in range(0, len(work), size)]


def ingest(root: str | Path, progress: bool | None = None, jobs: int = 1, lenient: bool = False) -> IngestResult:
    """Read every file below ``root`` (or the one file ``root`` is); never stops at a bad file (see
    ``IngestResult.failed``).

    ``jobs`` > 1 reads consecutive runs of files in that many forked processes and merges their tables
    here: the same tables as ``jobs=1``, row for row and category for category.  All tables are held in
    memory in this process: for a notebook's or a test's tree.  The command line writes with bounded
    memory instead (``analysis.ingest.scale.ingest_batches``: the same tables, batch by batch, via parts).
    ``lenient``: empty, unrecognised, unlisted and changed files listed, not failed (module docstring)."""
    root = Path(root).resolve()
    single = root.is_file()
    if single:  # one file: read as if its folder held only it (its run.json and manifest still apply)
        root, paths = root.parent, [root]
    elif not root.is_dir():
        raise IngestError(root, "expected a folder to ingest, or one file")
    manifest = load_manifest(root)
    if single and manifest is not None:  # the file's own entry; the folder's other files are not asked for
        rel = paths[0].relative_to(root).as_posix()
        manifest = {rel: manifest[rel]} if rel in manifest else {}
    contexts = Contexts(root)
    if not single:
        paths = list(iter_files(root))
    if progress is None:
        progress = sys.stderr.isatty()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(paths), desc="ingest", unit="file")
    work = [(p, contexts.for_file(p)) for p in paths]
    errors = [(table_path(p.relative_to(root).as_posix()), e) for p, e in contexts.errors]
    jobs = max(1, min(jobs, len(paths) // 16))
    try:
        if jobs == 1:
            outcomes = []
            for o in ingest_files(work, root, manifest, lenient=lenient):
                outcomes.append(o)
                if bar is not None:
                    bar.update()
            chunks = [_chunk(outcomes)]
        else:
            runs = [(run,) for run in _chunks(work, jobs)]
            pool = Processes(jobs, _worker_init, (root, manifest, lenient))
            chunks = []
            for (run,), ch in zip(runs, pool.ordered(_ingest_chunk, runs, lambda w: [
                    p.relative_to(root).as_posix() for p, _ in w[0]], root, len(paths))):
                chunks.append(ch)
                if bar is not None:
                    bar.update(len(run))
    finally:
        if bar is not None:
            bar.close()
    return _merge(chunks, errors, manifest)


def read_tables(processed: str | Path, columns: dict[str, list[str]] | None = None) -> IngestResult:
    """The tables :func:`write_tables` (``make data``) or ``scale.ingest_batches`` wrote, as an
    :class:`IngestResult` (``failed`` is rebuilt from the files table's ``failed`` rows).
    ``tables.TableSetError`` when they are not one ingest's complete set (:func:`analysis.store.verify`).
    ``columns``: table name → the only columns to read of it (every row; e.g. ``{"series": ["metric"]}``
    to count series rows without its 1.3 GB in memory here)."""
    from ..store import OPTIONAL, read_table, verify
    p = Path(processed)
    rec = verify(p)
    cols = columns or {}
    t = {n: read_table(p, n, check=False, columns=cols.get(n)) for n in ("files", "summary", "series")}
    extra = {n: read_table(p, n, check=False, columns=cols.get(n)) for n in OPTIONAL if n in rec["tables"]}
    f = t["files"]
    failed = list(zip(f.loc[f["status"] == "failed", "path"], f.loc[f["status"] == "failed", "error"])) \
        if "error" in f else []
    return IngestResult(t["files"], t["summary"], t["series"], failed, extra)


def check_writable(out: str | Path) -> None:
    """OSError unless a file can be created in ``out`` (made if absent): a read-only or full folder is
    found before an ingest of minutes, not after it."""
    import tempfile
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=out, prefix=".writable-"):
        pass


_TMP_NAME = re.compile(r"^\.[\w.-]+\.tmp-(\d+)(?:\.\w+)?$")
_TMP_DIR = re.compile(r"^\.ingest-(\d+)$")


def remove_stale_temps(out: Path) -> list[Path]:
    """Remove what an ingest that was killed or failed left in ``out``: temp files (``.<name>.tmp-<pid>``)
    and staging folders (``.ingest-<pid>``) whose process is gone.  Returns what was removed."""
    gone = []
    for p in out.iterdir() if out.is_dir() else []:
        m = _TMP_NAME.match(p.name) if p.is_file() else _TMP_DIR.match(p.name) if p.is_dir() else None
        if not m:
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)
            continue  # alive: another ingest is writing
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, someone else's
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        gone.append(p)
    return gone


def write_tables(result: IngestResult, out: str | Path, root: str | Path | None = None,
                 inputs: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write files/summary/series Parquet as one set: all to temp files first, then ``tables.json`` withdrawn,
    each table renamed into place, and ``tables.json`` written last (:mod:`analysis.store`; ``root``: the ingested
    tree, whose manifest digest it records; ``inputs``: the files read, :func:`analysis.store.inputs_record`).
    Temp files of killed earlier runs are removed first."""
    from .. import store as tset
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    tables = {"files": result.files, "summary": result.summary, "series": tset.stored_series(result.series),
              **result.tables}
    tmps: dict[str, Path] = {}
    try:
        for name, df in tables.items():
            tmp = tmps[name] = out / f".{name}.parquet.tmp-{os.getpid()}"  # removed below even if half-written
            tset.write_parquet(df, tmp)
        return tset.install(out, tmps, root, inputs)
    finally:
        for tmp in tmps.values():
            if tmp.exists():
                tmp.unlink()

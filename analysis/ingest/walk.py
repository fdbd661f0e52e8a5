"""Walk a data tree, read every benchmark output in it, and write tidy Parquet tables atomically.

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
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from .base import SERIES_COLUMNS, SUMMARY_COLUMNS, IngestError, cbt_derived, column, union_str_categoricals
from .detect import detect, read
from .keys import FLOAT_KEYS, INT_KEYS, OSD_OP_QUEUES, scheduler_keys, typed_keys  # noqa: F401 (re-exported)
from .tables import OPTIONAL as OPTIONAL_TABLES
from .validate import problems

KEY_COLUMNS = ["campaign", "scenario", "arm", "op_queue", "io_scheduler", "profile", "repeat", "run"]
CONTEXT_FILES = ("run.json", "benchmark_config.yaml")
#: what ``capture/`` writes beside the benchmark outputs: run metadata, listed as ``context`` (the
#: timeline already carries the cluster log's scrub events; the OSD config is summarised in run.json)
CAPTURE_AUX = ("done", "osd_config.json.gz", "cluster-log.txt.gz", "campaign.yaml", "fio.stderr",
               "write.stderr", "seq.stderr", "pilot.json",
               "cbt.yaml.gz", "cbt.log.gz")  # capture.cbt's record: what CBT was given, CBT's own log
#: CBT's own side files, not benchmark output (``cluster/ceph.py`` dump_historic_ops, ``radosbench.py``'s
#: objecter dumps, the recovery test's log, collectl's folder): context, whatever their host suffix
CBT_AUX = re.compile(r"^(?:historic_ops\.out|objecter\.\d+\.log|recovery\.log)(?:\..+)?$")
#: notes kept beside the data (how it was made): context by name, never read as data (a ``.txt`` is not
#: among them: rados bench output is often saved as one)
NOTES = re.compile(r"^(?:README(?:\..*)?|COMMAND|.*\.(?:md|rst|sh|py))$", re.IGNORECASE)
CAPTURE_AUX_PREFIX = "sitting-"  # one per capture sitting: what ran, was redone or failed
#: the capture's own files stored decompressed (``gunzip -r`` on an archive: ``cbt.log.gz`` → ``cbt.log``)
_CAPTURE_AUX_PLAIN = {n.removesuffix(".gz") for n in CAPTURE_AUX}
MANIFEST = "MANIFEST.sha256"
CBT_PARAMS = ("benchmark", "op_size", "iodepth", "mode", "readmode", "concurrent_ops",
              "concurrent_procs", "numjobs", "time", "pool_profile", "rbdname", "vol_size",
              "osd_ra", "iteration")
_SKIP_DIRS = {"_inprogress", ".git", "__pycache__", ".ipynb_checkpoints", ".venv"}
#: raw data kept and checksummed (in the manifest) but not ingested: ``_superseded`` holds the finished runs
#: of a capture block that a sitting's end split, run again whole (``capture.ceph.campaign.SUPERSEDED``)
NOT_INGESTED = {"_superseded"}


@dataclass
class IngestResult:
    files: pd.DataFrame
    summary: pd.DataFrame
    series: pd.DataFrame
    failed: list[tuple[str, str]] = field(default_factory=list)
    #: per-event tables some readers give (``blk_requests``: one row per block request from the
    #: blktrace/blkparse readers, with the file's run keys); written as ``<name>.parquet``
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


#: suffixes of a file compressed by name (``gzip -r`` on an archive): its context role is its plain name's
COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2")


def plain_name(name: str) -> str:
    """``benchmark_config.yaml.gz`` → ``benchmark_config.yaml``: the name a compressed file had."""
    for suf in COMPRESSED_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


def _text(path: Path) -> str:
    """A context file's text, decompressed when it is compressed (by content, as every reader here)."""
    from .compress import read_all
    return read_all(path).decode()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _find_key(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        if key in obj and not isinstance(obj[key], (dict, list)):
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None


def cbt_context(path: Path, root: Path) -> dict[str, Any]:
    """Run keys from a CBT ``benchmark_config.yaml`` (CBT dumps ``{cluster: <benchmark config>}``)."""
    import yaml
    try:
        doc = yaml.safe_load(_text(path))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        mark = getattr(e, "problem_mark", None)
        raise IngestError(path, f"expected CBT benchmark_config.yaml: {e}",
                          line=mark.line + 1 if mark else None) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a YAML mapping (CBT benchmark_config.yaml)", line=1)
    bench: dict[str, Any] = {}
    for k in ("cluster", "benchmark"):  # CBT ≥ 2017 nests under 'cluster'; older under 'benchmark'
        if isinstance(doc.get(k), dict):
            bench.update(doc[k])
    if not bench:
        bench = doc
    ctx: dict[str, Any] = {k: bench[k] for k in CBT_PARAMS if k in bench and
                           not isinstance(bench[k], (dict, list))}
    if "iteration" in ctx:
        ctx["repeat"] = ctx.pop("iteration")
    q = _find_key(doc, "osd_op_queue")
    if q is not None:
        ctx["op_queue"] = q
    prof = _find_key(doc, "osd_mclock_profile")
    if prof is not None:
        ctx["profile"] = prof
    rel = path.parent.relative_to(root)
    ctx["run"] = str(rel) if path.parent != root else "."
    # id-<hash> hashes the benchmark config: the same in every archive of one YAML, so the archive's own
    # folder (the one holding results/, as a path below the ingested folder: two campaigns' `wpq/` archives
    # ingested together stay apart) tells archives apart
    parts = rel.parts
    ctx["archive"] = "/".join(parts[:parts.index("results")]) if "results" in parts[1:] else \
        (root.name if not parts or parts[0] == "results" else parts[0])
    ctx["context_source"] = "cbt"
    return check_keys(ctx, path)


#: run keys taken from ``run.json``'s ``osd_config.effective`` (what ``ceph config show osd.0`` said
#: the OSD ran), so notebooks select tuned arms by value, never by directory name (issue 10).
#: Units as Ceph prints them: ``scrub_cost`` in bytes, priorities and counts unitless.
TUNED_KEYS = {"osd_max_scrubs": "max_scrubs", "osd_scrub_cost": "scrub_cost",
              "osd_requested_scrub_priority": "requested_scrub_priority"}


def _config_value(v: Any) -> str | None:
    """Ceph prints ``5`` or ``5.000000`` for the same value: integral numbers become ``'5'``."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else repr(f)


#: run keys that name folders of the partitioned tables (``scale``: ``campaign=<c>/kind=<k>/``)
PATH_KEYS = ("campaign", "scenario", "arm", "op_queue", "io_scheduler", "profile", "repeat")


def check_keys(ctx: dict[str, Any], path: Path) -> dict[str, Any]:
    """``ctx`` unchanged when every key of :data:`PATH_KEYS` it has is safe as one folder name (no ``/``,
    ``\\``, NUL, not ``.`` or ``..``); else IngestError naming the file, the key and its value (a
    ``campaign`` of ``../../..`` must not write outside ``--out``)."""
    for k in PATH_KEYS:
        if k not in ctx or ctx[k] is None:
            continue
        v = str(ctx[k])
        if v in (".", "..") or any(c in v for c in "/\\\0"):
            raise IngestError(path, f"{k}: expected a name usable as one folder name (no '/', '\\', NUL, "
                                    f"not '.' or '..'), got {v!r}")
    return ctx


_CEPH_VERSION = re.compile(r"ceph version (\d+\.\d+\.\d+)\S*\s+\([0-9a-f]+\)\s+(\w+)")


def ceph_release_of(doc: dict[str, Any]) -> tuple[str, str] | None:
    """(release, version), e.g. ``("reef", "18.2.7")``, of a capture run.json: from the versions every
    daemon reported at bring-up (``cluster.versions.overall``; runs before issue 24 have only that), else
    its ``ceph_release`` key.  None when neither is there or the daemons ran more than one version."""
    vers = ((doc.get("cluster") or {}).get("versions") or {}).get("overall") \
        if isinstance(doc.get("cluster"), dict) else None
    if isinstance(vers, dict) and len(vers) == 1:
        m = _CEPH_VERSION.search(next(iter(vers)))
        if m:
            return m.group(2), m.group(1)
    if isinstance(doc.get("ceph_release"), str):
        return doc["ceph_release"], str((doc.get("cluster") or {}).get("ceph_version") or "")
    return None


def run_json_context(path: Path, root: Path) -> dict[str, Any]:
    """Run keys from a ``capture/`` run.json: its top-level scalars, the tuned OSD options
    (``TUNED_KEYS``), ``background_unfinished`` (comma-joined; empty when every background
    operation ended), ``redone`` (attempts thrown away as disturbed or failed before this one) and
    ``fio_t0_after_spawn_s`` (s from the timeline's t=0, fio's spawn, to fio's log t=0)."""
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"expected a JSON object (run.json): {e}",
                          line=getattr(e, "lineno", None)) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a JSON object (run.json)", line=1)
    ctx = {k: v for k, v in doc.items() if not isinstance(v, (dict, list)) and v is not None}
    eff = (doc.get("osd_config") or {}).get("effective") if isinstance(doc.get("osd_config"), dict) else None
    if isinstance(eff, dict):
        for opt, key in TUNED_KEYS.items():
            if eff.get(opt) is not None:
                ctx[key] = _config_value(eff[opt])
    rel = ceph_release_of(doc)
    if rel is not None:
        ctx["ceph_release"], ctx["ceph_version"] = rel
    if isinstance(doc.get("background_unfinished"), list):
        ctx["background_unfinished"] = ",".join(map(str, doc["background_unfinished"]))
    if isinstance(doc.get("earlier_attempts"), list):
        ctx["redone"] = len(doc["earlier_attempts"])
    anc = doc.get("anchors")
    if isinstance(anc, dict) and all(isinstance(anc.get(k), (int, float))
                                     for k in ("fio_t0_unix", "fio_spawn_unix")):
        # the timeline's t=0 is fio's spawn; fio's own log t=0 is its job start, this much later
        ctx["fio_t0_after_spawn_s"] = round(anc["fio_t0_unix"] - anc["fio_spawn_unix"], 3)
    ctx.setdefault("run", str(path.parent.relative_to(root)) if path.parent != root else ".")
    ctx["context_source"] = "run.json"
    return check_keys(scheduler_keys(ctx), path)


CBT_SETTINGS = "ceph_settings.out"


def cbt_settings_context(path: Path) -> dict[str, Any]:
    """``op_queue`` (``osd_op_queue``) and ``profile`` (``osd_mclock_profile`` under mClock, else None) from CBT's
    ``ceph_settings.out[.<host>]``: the JSON of ``ceph daemon osd.0 config show`` (cbt/cluster/ceph.py), what
    the OSD ran, so it overrides what ``benchmark_config.yaml`` asked for."""
    try:
        doc = json.loads(_text(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"expected the JSON of `ceph daemon osd.N config show` (CBT ceph_settings.out): "
                                f"{e}", line=getattr(e, "lineno", None)) from None
    if not isinstance(doc, dict):
        raise IngestError(path, "expected a JSON object of OSD options (CBT ceph_settings.out)", line=1)
    ctx: dict[str, Any] = {}
    if isinstance(doc.get("osd_op_queue"), str):
        ctx["op_queue"] = doc["osd_op_queue"]
        # a profile means nothing under another queue (Pacific lists osd_mclock_profile under wpq too)
        ctx["profile"] = doc.get("osd_mclock_profile") if doc["osd_op_queue"] == "mclock_scheduler" and \
            isinstance(doc.get("osd_mclock_profile"), str) else None
    return ctx


class _Contexts:
    """Per-directory run context, inherited by sub-directories (nearest file wins per key)."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[Path, dict[str, Any]] = {}
        self.errors: list[tuple[Path, IngestError]] = []

    def get(self, d: Path) -> dict[str, Any]:
        if d in self.cache:
            return self.cache[d]
        parent = {} if d == self.root or self.root not in d.parents else self.get(d.parent)
        ctx = dict(parent)
        for name, fn in (("benchmark_config.yaml", cbt_context), ("run.json", run_json_context)):
            p = next((q for q in [d / name] + [d / (name + suf) for suf in COMPRESSED_SUFFIXES
                                                if name != "run.json"] if q.is_file()), None)
            if p is not None:
                try:
                    ctx.update(fn(p, self.root))
                except IngestError as e:
                    self.errors.append((p, e))
        if "cbt" == ctx.get("context_source"):  # the OSD's own settings, beside CBT's config or below it
            for p in sorted(d.glob(CBT_SETTINGS + "*")):
                try:
                    ctx.update(check_keys(cbt_settings_context(p), p))
                except IngestError as e:
                    self.errors.append((p, e))
                break  # one OSD's view: every OSD runs the same op queue in a CBT cluster
        self.cache[d] = ctx
        return ctx


def iter_files(root: Path, ingested: bool = True) -> Iterator[Path]:
    """Every file below ``root`` in walk order, less staging and hidden folders, and with ``ingested``
    less :data:`NOT_INGESTED` (the manifest lists those too)."""
    skip = _SKIP_DIRS | NOT_INGESTED if ingested else _SKIP_DIRS
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for fn in sorted(filenames):
            if not fn.startswith("."):
                yield Path(dirpath) / fn


_FILE_TYPES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def refusal(p: Path, root: Path) -> str | None:
    """Why ``p`` is not read (reading a FIFO or ``/dev/zero`` never ends), or None for a regular file in the
    tree: a symlink is followed only to a regular file below ``root`` (resolved)."""
    try:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            target = p.resolve()
            if root.resolve() not in target.parents:
                return f"a symlink to {target}, outside the tree {root}: expected a regular file in the tree"
            st = os.stat(p)
    except OSError as e:
        return f"cannot stat: {e.strerror}"
    for test, what in _FILE_TYPES:
        if test(st.st_mode):
            return f"{what}, not a regular file: expected a benchmark output file"
    return None


def load_manifest(root: Path) -> dict[str, str] | None:
    m = root / MANIFEST
    if not m.is_file():
        return None
    out = {}
    for i, line in enumerate(m.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise IngestError(m, "expected '<sha256>  <relative path>' (sha256sum format)", line=i)
        out[parts[1].lstrip("*").strip()] = parts[0]
    return out


def write_manifest(root: Path) -> Path:
    """(Re)write ``root/MANIFEST.sha256`` over every file below root (sha256sum -c compatible)."""
    root = Path(root)
    paths = [p for p in iter_files(root, ingested=False) if p.name != MANIFEST]
    for p in paths:
        why = refusal(p, root)
        if why:
            raise IngestError(p, why)
    lines = [f"{sha256_file(p)}  {p.relative_to(root).as_posix()}" for p in paths]
    return atomic_write_text(root / MANIFEST, "\n".join(lines) + "\n")


def atomic_write_text(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


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


def _attach(st: _Stacked, contexts: list[dict[str, Any]], base_cols: list[str]) -> pd.DataFrame:
    """The stacked rows with every file's run keys, vectorised.

    ``contexts[i]`` holds file i's ``kind``, ``source`` (its path under the root) and run keys.  Columns:
    ``kind``, ``base_cols`` (``source`` = the path), ``KEY_COLUMNS`` (always), then the other keys in
    order of first appearance among files with rows; keys are categoricals with ``str`` categories,
    typed ``string`` when no file has them."""
    extra: list[str] = []
    seen = set(KEY_COLUMNS) | {"kind", "source", "context_source"}
    for i in np.unique(st.fid).tolist():
        for k in contexts[i]:
            if k not in seen:
                seen.add(k)
                extra.append(k)
    cols = ["kind"] + base_cols + KEY_COLUMNS + extra
    out = {c: st.cols[c] if c in st.cols else _per_file([ctx.get(c) for ctx in contexts], st.fid)
           for c in cols}
    df = pd.DataFrame(out, columns=cols, copy=False)
    for c in KEY_COLUMNS + extra:  # a key no file had: typed as strings, not float NaN
        if len(df[c].cat.categories) == 0:
            df[c] = df[c].astype("string")
    return typed_keys(df)


def _assemble(frames: list[pd.DataFrame], fids: list[int], contexts: list[dict[str, Any]],
              base_cols: list[str]) -> pd.DataFrame:
    """Concatenate per-file tidy frames (``frames[j]`` came from file ``fids[j]``) and attach every
    file's run keys (:func:`_attach`)."""
    return _attach(_stack(frames, fids, base_cols), contexts, base_cols)


@dataclass
class FileOutcome:
    """What reading one file gave: its ``files`` row, and when parsed its run keys (``ctx``, with
    ``kind`` and ``source``), tidy summary and series frames and its block requests (keys attached)."""
    row: dict[str, Any]
    failed: list[tuple[str, str]] = field(default_factory=list)
    ctx: dict[str, Any] | None = None
    summary: pd.DataFrame | None = None
    series: pd.DataFrame | None = None
    requests: pd.DataFrame | None = None


def _fio_log_name(name: str) -> bool:
    from .fio_log import _NAME
    return _NAME.match(name) is not None


def ingest_file(p: Path, root: Path, ctx: dict[str, Any], manifest: dict[str, str] | None,
                sink_for=None, lenient: bool = False) -> FileOutcome:
    """Read one file below ``root`` with its directory's run context; never raises ``IngestError`` (the
    error goes in the row and ``failed``).  The unit of work of the serial, pool and Dask paths.

    ``sink_for(keys)`` (keys: the run context with ``kind`` and ``source``) gives a callable that takes
    the series of a file read in blocks (``detect.streams``) block by block, and has a ``close()``; then
    the outcome's series is empty.  Its ``requests(frame)`` method, if any, takes a streamed block trace's
    request rows (then the outcome has none).  Without it those blocks are concatenated in memory.
    ``lenient``: the module docstring's strict rules relaxed."""
    rel = p.relative_to(root).as_posix()
    why = refusal(p, root)
    if why:
        row0 = {"path": rel, "status": "failed", "error": f"{rel}: {why}", "kind": None,
                **{k: (str(v) if v is not None else None) for k, v in ctx.items() if k != "context_source"}}
        return FileOutcome(row0, failed=[(rel, row0["error"])])
    row: dict[str, Any] = {"path": rel, "size_bytes": p.stat().st_size, "sha256": sha256_file(p),
                           "kind": None, "tool_version": None, "status": "ok", "error": None,
                           "error_line": None, "partial": False, "meta_json": None}
    row.update({k: (str(v) if v is not None else None) for k, v in ctx.items() if k != "context_source"})
    out = FileOutcome(row)
    if manifest is None:
        row["manifest"] = "absent"  # no MANIFEST.sha256 in the tree: nothing to check against
    elif p.name != MANIFEST:
        want = manifest.get(rel)
        row["manifest"] = "missing" if want is None else ("ok" if want == row["sha256"] else "MISMATCH")
    refuse = None
    if row.get("manifest") == "MISMATCH":  # not read at all: none of its rows may reach the tables
        refuse = f"{rel}: sha256 differs from {MANIFEST} (raw data must not change; --lenient reads it)"
    elif row.get("manifest") == "missing":
        refuse = (f"{rel}: not listed in {MANIFEST} (raw data is listed when it is added: `python -m "
                  "analysis manifest DIR`; --lenient reads it unchecked)")
    if refuse and not lenient:
        row.update(status="failed", error=refuse)
        out.failed.append((rel, refuse))
        return out
    name = plain_name(p.name)
    if p.name in CONTEXT_FILES or p.name == MANIFEST or (name == "benchmark_config.yaml"):
        row["status"] = "context"
        row["kind"] = name
    elif cbt_derived(p):
        row["status"] = "context"
        row["kind"] = "cbt-derived"  # CBT's extract of output.N.<host> beside it: read, the run counts twice
    elif p.name.startswith(CBT_SETTINGS) or name == "cbt_config.yaml":
        row["status"] = "context"
        row["kind"] = "cbt-settings" if p.name.startswith(CBT_SETTINGS) else "cbt-config"
    elif p.name in CAPTURE_AUX or name in _CAPTURE_AUX_PLAIN or (p.name.startswith(CAPTURE_AUX_PREFIX) and p.suffix == ".json") \
            or (p.name.startswith("campaign-") and p.suffix == ".yaml"):  # a campaign file before its repeats were raised
        row["status"] = "context"
        row["kind"] = "capture-aux"
    elif CBT_AUX.match(p.name) or "collectl" in Path(rel).parts[:-1]:
        row["status"] = "context"
        row["kind"] = "cbt-aux"
    elif NOTES.match(p.name):
        row["status"] = "context"
        row["kind"] = "notes"
    elif row["size_bytes"] == 0 and (lenient or _fio_log_name(name)):
        row["status"] = "empty"  # fio leaves a log empty when it has no samples of that kind
    elif row["size_bytes"] == 0:
        msg = (f"{rel}: empty file (0 bytes): expected benchmark output (a fio log may be empty, other "
               "files not; --lenient lists it and goes on)")
        row.update(status="failed", error=msg)
        out.failed.append((rel, msg))
    else:
        try:
            kind = detect(p)
        except IngestError as e:
            kind = None
            row.update(status="failed", error=str(e), error_line=e.line)
            out.failed.append((rel, str(e)))
        if kind is None and row["status"] != "failed" and lenient:
            row["status"] = "unrecognised"
        elif kind is None and row["status"] != "failed":
            msg = (f"{rel}: unrecognised content: no reader claims it (expected fio JSON or logs, rados bench "
                   "output, blktrace/blkparse/btt, sysutil or a cephqos-pg-timeline; --lenient lists it and "
                   "goes on)")
            row.update(status="failed", error=msg, error_line=1)
            out.failed.append((rel, msg))
        elif kind is not None:
            sink = None
            try:
                if sink_for is not None:
                    sink = sink_for({**{k: v for k, v in ctx.items() if k != "context_source"},
                                     "kind": kind, "source": rel})
                parsed = read(p, sink)
                bad = problems(parsed.kind, parsed.summary, parsed.series)
                if bad:  # values no tool prints: failed, its rows kept out of the tables
                    raise IngestError(p, "; ".join(bad[:3]) + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""))
                row.update(kind=parsed.kind, tool_version=parsed.meta.get("tool_version"),
                           partial=parsed.partial, status="partial" if parsed.partial else "ok",
                           meta_json=json.dumps(parsed.meta, default=str, ensure_ascii=False))
                out.ctx = {**{k: v for k, v in ctx.items() if k != "context_source"},
                           "kind": parsed.kind, "source": rel}
                out.summary, out.series = parsed.summary, parsed.series
                req = parsed.tables.get("requests")
                if req is not None and len(req):
                    keys = {k: str(v) for k, v in ctx.items() if k != "context_source" and v is not None}
                    out.requests = req.assign(kind=parsed.kind, source=rel, **keys)
            except IngestError as e:
                row.update(kind=kind, status="failed", error=str(e), error_line=e.line)
                out.failed.append((rel, str(e)))
            finally:
                if sink is not None:
                    sink.close(ok=row["status"] != "failed")
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


def _chunk(outcomes: list[FileOutcome]) -> _Chunk:
    parsed = [o for o in outcomes if o.ctx is not None]
    fids = list(range(len(parsed)))
    reqs = [o.requests for o in parsed if o.requests is not None]
    return _Chunk([o.row for o in outcomes], [f for o in outcomes for f in o.failed], [o.ctx for o in parsed],
                  _stack([o.summary for o in parsed], fids, SUMMARY_COLUMNS),
                  _stack([o.series for o in parsed], fids, SERIES_COLUMNS),
                  pd.concat(reqs, ignore_index=True) if reqs else None)


def _merge(chunks: list[_Chunk], context_errors: list[tuple[str, IngestError]],
           manifest: dict[str, str] | None) -> IngestResult:
    """The tables of consecutive chunks (in walk order) plus the run-context errors (path relative to
    the root, error) and the manifest's entries that no file matched."""
    file_rows = [r for c in chunks for r in c.rows]
    failed = [f for c in chunks for f in c.failed]
    for rel, e in context_errors:
        failed.append((rel, str(e)))
        for row in file_rows:
            if row["path"] == rel:
                row.update(status="failed", error=str(e), error_line=e.line)
    if manifest is not None:
        seen = {r["path"] for r in file_rows}
        for rel in sorted(r for r in set(manifest) - seen if NOT_INGESTED.isdisjoint(r.split("/")[:-1])):
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
                        series=_attach(stacks["series"], ctxs, SERIES_COLUMNS), failed=failed, tables=tables)


def assemble(outcomes: list[FileOutcome], context_errors: list[tuple[str, IngestError]],
             manifest: dict[str, str] | None) -> IngestResult:
    """The tables of a list of :class:`FileOutcome` (in walk order) plus the run-context errors
    (path relative to the root, error) and the manifest's entries that no file matched."""
    return _merge([_chunk(outcomes)], context_errors, manifest)


_WORKER: dict[str, Any] = {}


class WorkerDied(RuntimeError):
    """A worker process of :func:`ingest` died (killed by a signal, the OOM killer, a crash in C code): the
    ingest stops at once, naming the files not read; no table is written."""


def _die_with_parent() -> None:
    """Linux: have the kernel SIGKILL this worker when the process that started it dies
    (``prctl(PR_SET_PDEATHSIG)``), so killing an ingest never leaves its workers running; elsewhere a no-op."""
    import ctypes
    import signal
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect: already orphaned
        os._exit(1)


def _worker_init(root: Path, manifest: dict[str, str] | None, lenient: bool = False) -> None:
    _die_with_parent()
    _WORKER.update(root=root, manifest=manifest, lenient=lenient)


def _ingest_chunk(work: list[tuple[Path, dict[str, Any]]]) -> _Chunk:
    """A pool worker's unit: read consecutive files and hand back their stacked tables (one pickled
    object per chunk; pickling the per-file frames cost more than reading them)."""
    return _chunk([ingest_file(p, _WORKER["root"], ctx, _WORKER["manifest"], lenient=_WORKER["lenient"])
                   for p, ctx in work])


def _chunks(work: list, jobs: int) -> list[list]:
    """Consecutive runs of files (a folder's files stay together: fio's logs share its JSON), at least 16
    and about 48 runs per worker, so a slow tail (block traces, timelines) is small."""
    size = max(16, -(-len(work) // (48 * jobs)))
    return [work[i:i + size] for i in range(0, len(work), size)]


def _start_method() -> str | None:
    """fork is fastest (nothing to re-import), but forking a process with other threads running (a Dask
    client, a kernel) can copy a held lock into the child: start clean workers (forkserver) then."""
    import multiprocessing as mp
    import threading
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else None


def ingest(root: str | Path, progress: bool | None = None, jobs: int = 1, lenient: bool = False) -> IngestResult:
    """Read every file below ``root`` (or the one file ``root`` is); never stops at a bad file (see
    ``IngestResult.failed``).

    ``jobs`` > 1 reads consecutive runs of files in that many forked processes and merges their tables
    here: the same tables as ``jobs=1``, row for row and category for category.  All tables are held in
    memory in this process: for a notebook's or a test's tree.  The command line writes with bounded
    memory instead (``analysis.ingest.scale.ingest_pool``: the same tables, batch by batch, via parts).
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
    contexts = _Contexts(root)
    if not single:
        paths = list(iter_files(root))
    if progress is None:
        progress = sys.stderr.isatty()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(paths), desc="ingest", unit="file")
    work = [(p, contexts.get(p.parent)) for p in paths]
    errors = [(p.relative_to(root).as_posix(), e) for p, e in contexts.errors]
    jobs = max(1, min(jobs, len(paths) // 16))
    if jobs == 1:
        outcomes = []
        for p, ctx in work:
            outcomes.append(ingest_file(p, root, ctx, manifest, lenient=lenient))
            if bar is not None:
                bar.update()
        chunks = [_chunk(outcomes)]
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        method = _start_method()
        runs = _chunks(work, jobs)
        chunks = []
        from concurrent.futures.process import BrokenProcessPool
        with ProcessPoolExecutor(jobs, mp_context=mp.get_context(method), initializer=_worker_init,
                                 initargs=(root, manifest, lenient)) as pool:
            try:
                for run, ch in zip(runs, pool.map(_ingest_chunk, runs)):
                    chunks.append(ch)
                    if bar is not None:
                        bar.update(len(run))
            except BrokenProcessPool as e:
                # a worker died (SIGKILL, OOM killer, …): the pool cannot finish; say so now, never hang
                left = [p.relative_to(root).as_posix() for run in runs[len(chunks):] for p, _ in run]
                if bar is not None:
                    bar.close()
                raise WorkerDied(f"{root}: an ingest worker process died ({e}); {len(left)} of {len(paths)} files "
                                 f"not read, first {', '.join(left[:3])}{' …' if len(left) > 3 else ''}; "
                                 "no table written (rerun, with --jobs 1 to find a file that kills its reader)"
                                 ) from None
    if bar is not None:
        bar.close()
    return _merge(chunks, errors, manifest)


def read_tables(processed: str | Path) -> IngestResult:
    """The tables :func:`write_tables` (``make data``) or ``scale.ingest_dask`` wrote, as an
    :class:`IngestResult` (``failed`` is rebuilt from the files table's ``failed`` rows).
    ``tables.TableSetError`` when they are not one ingest's complete set (:func:`.tables.verify`)."""
    from .tables import OPTIONAL, read, verify
    p = Path(processed)
    rec = verify(p)
    t = {n: read(p, n, check=False) for n in ("files", "summary", "series")}
    extra = {n: read(p, n, check=False) for n in OPTIONAL if n in rec["tables"]}
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


def write_tables(result: IngestResult, out: str | Path, root: str | Path | None = None) -> dict[str, Path]:
    """Write files/summary/series Parquet as one set: all to temp files first, then ``tables.json`` withdrawn,
    each table renamed into place, and ``tables.json`` written last (:mod:`.tables`; ``root``: the ingested
    tree, whose manifest digest it records).  Temp files of killed earlier runs are removed first."""
    from . import tables as tset
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    tables = {"files": result.files, "summary": result.summary, "series": result.series, **result.tables}
    tmps: dict[str, Path] = {}
    try:
        for name, df in tables.items():
            tmp = tmps[name] = out / f".{name}.parquet.tmp-{os.getpid()}"  # removed below even if half-written
            df.to_parquet(tmp, index=False, compression="zstd")
        return tset.install(out, tmps, root)
    finally:
        for tmp in tmps.values():
            if tmp.exists():
                tmp.unlink()

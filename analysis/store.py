"""The store of processed tables (``data/processed``): reading, writing and verifying one ingest's set.

One ingest's tables are one set: ``tables.json`` says which tables it wrote and what each holds.

An ingest (``python -m analysis ingest``, serial or ``--dask``) removes ``tables.json`` before it replaces
any table and writes it, atomically, only after every table is in place: the commit record of the set.
It holds, per table, the layout (``file``: ``<name>.parquet``; ``partitioned``: ``<name>/campaign=…/
kind=…/part-*.parquet``), the row count and, for a single file, its size in bytes; plus the SHA-256 of
the ingested tree's ``MANIFEST.sha256`` (null without one), a digest of the ingest code and the time.

:func:`verify` is what every reader of processed tables calls first: it refuses, naming the table and
what differs, a folder whose tables disagree with its ``tables.json`` (an ingest killed between two
renames leaves new ``files`` beside old ``summary``: no ``tables.json`` then) and a folder of tables
without one (written by an interrupted ingest, or by a version before this record).  Counts come from the
Parquet footers, not the data: a check costs milliseconds.

Content: ``tables.json`` also holds the SHA-256 of each table as written (``sha256``: name → hex; a
partitioned table's digest is over its parts' paths and hashes), and :func:`verify` and :func:`read_table`
hash the tables they are about to trust and refuse one whose bytes differ (one flipped bit in
``summary.parquet`` changed values and metric names silently: Parquet pages carry no checksum by default).
A file is hashed once per process: the digest is kept keyed by the file's (path, device, inode, size,
mtime_ns, ctime_ns), so a notebook that reads a table ten times hashes it once, and a file changed in
place (which moves its ctime, whatever its mtime is set back to) is hashed again.

Inputs: ``tables.json``'s ``inputs`` lists each file the ingest read with the (size, mtime_ns, ctime_ns,
inode) it had before it was read and the SHA-256 of what was read (zlib-compressed JSON in base64: the
shipped tree's 19,272 files are 2.9 MB as JSON, which every :func:`verify` would parse; 0.5 MB so);
:func:`stale` (``python -m analysis stale DATA --processed PROC``, the data step of the Makefile) compares
a tree against it by content (see there).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .schema import FILE_COLUMNS, KEY_COLUMNS, SERIES_COLUMNS, typed_keys

RECORD = "tables.json"
#: the tables every ingest writes (``blk_requests`` only when block traces are present)
REQUIRED = ("files", "summary", "series")
OPTIONAL = ("blk_requests",)
#: the ``campaign=`` folder of rows without a campaign in the partitioned layout
NO_CAMPAIGN = "_none"


#: the run keys a stored ``series`` row keeps (a campaign filter needs no join, and the Dask layout splits by
#: it); every other run key is stored once per file, in ``files``, and joined on ``source`` = ``path`` by
#: :func:`read_table`.  Measured on a 4.3 M-row slice of the shipped series (zstd, 2-vCPU VM): its 78 run-key
#: columns took 1.28 s of the 1.59 s a Parquet write took, and 0.8 of its 7.2 MB.
SERIES_STORED_KEYS = ("campaign",)


class TableSetError(Exception):
    """A folder of processed tables that is not one complete ingest's set; the message names the folder, the
    table and what differs, and how to rebuild it."""


class TableContentError(TableSetError):
    """A table whose bytes are not those the ingest wrote (its SHA-256 differs from ``tables.json``'s)."""


#: the sources that decide what an ingest writes: the readers and walk, and this store
CODE = (Path(__file__).parent / "ingest", Path(__file__), Path(__file__).parent / "schema.py")


def code_digest() -> str:
    """SHA-256 (12 hex) over the ingest package's sources (subpackages too), this module's and the schema's:
    which reader code wrote a set."""
    h = hashlib.sha256()
    pkg, *modules = CODE
    for p in sorted(pkg.rglob("*.py")) + modules:
        h.update(p.relative_to(pkg.parent).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def libraries() -> dict[str, str]:
    """The versions of what writes the tables besides the ingest code: a venv upgraded is another ingest."""
    import sys
    import pyarrow
    return {"python": sys.version.split()[0], "numpy": np.__version__, "pandas": pd.__version__,
            "pyarrow": pyarrow.__version__}


def _manifest_digest(root: str | Path | None) -> str | None:
    if root is None:
        return None
    p = Path(root) / "MANIFEST.sha256"
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None


def layout(out: Path, name: str) -> str | None:
    """``file``, ``partitioned`` or None (absent) for table ``name`` in ``out``."""
    if (out / f"{name}.parquet").is_file():
        return "file"
    return "partitioned" if (out / name).is_dir() else None


def _parts(out: Path, name: str) -> list[Path]:
    return sorted((out / name).glob("campaign=*/kind=*/part-*.parquet"))


def measure(out: str | Path, name: str) -> dict[str, Any]:
    """What table ``name`` in ``out`` holds, from the Parquet footers: ``layout``, ``rows`` and, for a
    single file, ``bytes``.  FileNotFoundError when absent."""
    import pyarrow.parquet as pq
    out = Path(out)
    kind = layout(out, name)
    if kind is None:
        raise FileNotFoundError(out / f"{name}.parquet")
    if kind == "file":
        p = out / f"{name}.parquet"
        return {"layout": kind, "rows": pq.read_metadata(p).num_rows, "bytes": p.stat().st_size}
    return {"layout": kind, "rows": sum(pq.read_metadata(p).num_rows for p in _parts(out, name))}


#: SHA-256 of files hashed in this process, keyed by (path, device, inode, size, mtime_ns, ctime_ns): a table
#: read again is not hashed again; one written or changed since (a new ctime) is
_HASHED: dict[tuple, str] = {}


def file_sha256(p: str | Path) -> str:
    """SHA-256 (hex) of file ``p``, hashed at most once per process for one (path, inode, size, mtime,
    ctime): ``cp -p``, ``touch -r`` or an in-place write cannot keep the ctime, so a changed file is hashed
    again."""
    p = Path(p)
    st = os.stat(p)
    key = (os.path.abspath(p), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    got = _HASHED.get(key)
    if got is None:
        with open(p, "rb") as f:
            got = hashlib.file_digest(f, "sha256").hexdigest()
        _HASHED[key] = got
    return got


def table_sha256(out: str | Path, name: str) -> str:
    """The SHA-256 of table ``name`` in ``out``: of its file, or for the partitioned layout of its parts'
    relative paths and SHA-256s, in order.  FileNotFoundError when absent."""
    out = Path(out)
    kind = layout(out, name)
    if kind is None:
        raise FileNotFoundError(out / f"{name}.parquet")
    if kind == "file":
        return file_sha256(out / f"{name}.parquet")
    h = hashlib.sha256()
    for part in _parts(out, name):
        h.update(f"{part.relative_to(out).as_posix()}\0{file_sha256(part)}\n".encode())
    return h.hexdigest()


def _table_file(out: Path, name: str) -> str:
    return f"{name}.parquet" if layout(out, name) == "file" else f"{name}/"


def check_content(out: str | Path, rec: dict[str, Any], names: "list[str] | tuple[str, ...] | None" = None) -> None:
    """TableContentError unless each table of ``names`` (default: every table ``rec`` lists) has the SHA-256
    that ``rec`` (``out``'s ``tables.json``) recorded when it was written; TableSetError when ``rec``
    records none (a set written before tables were verified by content)."""
    out = Path(out)
    want = rec.get("sha256")
    if not isinstance(want, dict):
        raise TableSetError(f"{out}: {RECORD} records no SHA-256 of its tables (written by an ingest before "
                            f"they were verified by content): re-run make data (`make data PROC={out}` or "
                            f"`python -m analysis ingest DATA --out {out}`)")
    for name in rec.get("tables", {}) if names is None else names:
        if name not in rec.get("tables", {}):
            continue
        got = table_sha256(out, name)
        if want.get(name) != got:
            raise TableContentError(
                f"{out / _table_file(out, name)}: content changed since the ingest wrote it (sha256 {got[:12]}…, "
                f"{RECORD} says {str(want.get(name))[:12]}…): re-run make data (`make data PROC={out}` or "
                f"`python -m analysis ingest DATA --out {out}`)")


def begin(out: str | Path) -> None:
    """Before an ingest replaces any table in ``out``: withdraw the record, so a set left half-replaced is
    never taken for a complete one."""
    (Path(out) / RECORD).unlink(missing_ok=True)


def commit(out: str | Path, names: list[str] | tuple[str, ...], root: str | Path | None = None,
           inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """After every table of the set is in place: write ``out/tables.json`` (temp file, then rename) from what
    the tables on disk hold (rows, bytes, SHA-256), and return it.  ``inputs`` (:func:`inputs_record`): the
    files the ingest read, recorded as ``inputs`` (the per-file list packed: :func:`_pack`)."""
    out = Path(out)
    tables = {n: measure(out, n) for n in names}
    rec = {"written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "code": code_digest(), "libraries": libraries(), "manifest_sha256": _manifest_digest(root),
           "source": None if root is None else str(Path(root).resolve()),
           "tables": tables, "sha256": {n: table_sha256(out, n) for n in names},
           "inputs": None if inputs is None else {**{k: v for k, v in inputs.items() if k != "files"},
                                                   "files": len(inputs["files"]), "packed": _pack(inputs["files"])}}
    tmp = out / f".{RECORD}.tmp-{os.getpid()}"
    try:
        tmp.write_text(json.dumps(rec, indent=1) + "\n")
        os.replace(tmp, out / RECORD)
    finally:
        tmp.unlink(missing_ok=True)
    return rec


def install(out: str | Path, staged: dict[str, Path], root: str | Path | None = None,
            inputs: dict[str, Any] | None = None) -> dict[str, Path]:
    """Switch in one ingest's set of single-file tables (``staged``: name → finished temp file in ``out``'s
    file system): record withdrawn (:func:`begin`), each renamed to ``<name>.parquet`` (a partitioned copy
    of it removed), a table the set lacks removed, record written (:func:`commit`).  Returns the paths."""
    import shutil
    out = Path(out)
    begin(out)  # from here until commit the folder holds no complete set, and says so
    final = {}
    for name, src in staged.items():
        final[name] = out / f"{name}.parquet"
        os.replace(src, final[name])
        if (out / name).is_dir():  # the Dask path's partitioned copy is now stale
            shutil.rmtree(out / name)
    for name in OPTIONAL:  # a table this data no longer has must not linger from an earlier build
        if name not in staged:
            (out / f"{name}.parquet").unlink(missing_ok=True)
            if (out / name).is_dir():
                shutil.rmtree(out / name)
    commit(out, list(staged), root, inputs)
    return final


def verify(out: str | Path, content: "list[str] | tuple[str, ...] | None" = None) -> dict[str, Any]:
    """``out``'s record when every table it lists is there with its recorded layout, rows (and bytes) and no
    other table of an ingest lies beside them, and the tables of ``content`` (default: all it lists; ``()``:
    none) have the SHA-256 it recorded (:func:`check_content`); else TableSetError saying what differs."""
    out = Path(out)
    rebuild = f"rebuild it: `make data PROC={out}` or `python -m analysis ingest DATA --out {out}`"
    rp = out / RECORD
    if not rp.is_file():
        have = [n for n in (*REQUIRED, *OPTIONAL) if layout(out, n)]
        if not have:
            raise TableSetError(f"{out}: no processed tables ({rebuild})")
        raise TableSetError(f"{out}: {', '.join(have)} but no {RECORD}: not one complete ingest's set (an ingest "
                            f"stopped while replacing them, or tables written before {RECORD} existed); {rebuild}")
    try:
        rec = json.loads(rp.read_text())
        listed = rec["tables"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise TableSetError(f"{rp}: expected the JSON record of an ingest ({e}); {rebuild}") from None
    for name, want in listed.items():
        if layout(out, name) is None:
            raise TableSetError(f"{out}: {RECORD} lists table {name!r} but it is missing; {rebuild}")
        hashed = content is None or name in content
        try:
            got = measure(out, name)
        except Exception:  # noqa: BLE001 - a footer that does not parse: say what changed, if it did
            if hashed:
                check_content(out, rec, (name,))
            raise
        for k in ("layout", "rows", "bytes"):
            if k in want and got.get(k) != want[k]:
                raise TableSetError(f"{out}: table {name!r} has {k} {got.get(k)}, {RECORD} says {want[k]} "
                                    f"(replaced after the ingest that wrote the set); {rebuild}")
        if hashed:  # the same rows and bytes are not the same content (one flipped bit)
            check_content(out, rec, (name,))
    extra = [n for n in (*REQUIRED, *OPTIONAL) if n not in listed and layout(out, n)]
    if extra:
        raise TableSetError(f"{out}: {', '.join(extra)} beside a set that does not list it; {rebuild}")
    return rec


# --- inputs: what an ingest read, and whether a tree still holds it (by content) ------------------------

#: a file whose recorded ctime is this close to the moment its ingest began listing the tree (or later) may
#: have changed again within one tick of the file system's clock (coarse: a few ms) after it was stat'ed:
#: :func:`stale` re-hashes it every time (as git treats a "racily clean" index entry)
RACY_NS = 1_000_000_000
#: a tree's own checksum manifest (``analysis.ingest.discovery.MANIFEST``): an input like the others
MANIFEST_NAME = "MANIFEST.sha256"


def _pack(files: list) -> str:
    """The per-file list of :func:`inputs_record` as text for ``tables.json``: JSON, zlib, base64."""
    import base64
    import zlib
    return base64.b64encode(zlib.compress(json.dumps(files, separators=(",", ":")).encode(), 6)).decode()


def unpack_inputs(text: str) -> list:
    import base64
    import zlib
    return json.loads(zlib.decompress(base64.b64decode(text)))


def stat_signature(p: str | Path) -> list[int] | None:
    """``[size, mtime_ns, ctime_ns, inode]`` of ``p`` (a symlink's target), None when it cannot be stat'ed."""
    try:
        st = os.stat(p)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def manifest_digest(entries: dict[str, str] | None) -> str | None:
    """SHA-256 of the manifest entries an ingest checked files against (``load_manifest``'s dict, which may
    come from a folder above the tree), None without a manifest."""
    if entries is None:
        return None
    return hashlib.sha256("".join(f"{v}  {k}\n" for k, v in sorted(entries.items()))  # names: any bytes
                          .encode("utf-8", "surrogateescape")).hexdigest()


def inputs_record(data: str | Path, began_ns: int, rels: list[str], signatures: list[list[int] | None],
                  sha256s: list[Any], manifest: dict[str, str] | None) -> dict[str, Any]:
    """What :func:`commit` records as ``inputs``: the ingested path (``data``: a folder, or one file),
    when its listing began (``time.time_ns()``), the digest of the manifest entries that applied
    (:func:`manifest_digest`), and per file (``rels``: below the folder, or the file's name) the
    :func:`stat_signature` taken before it was read and the SHA-256 of what was read (None: not read)."""
    shas = [v if isinstance(v, str) else None for v in sha256s] + [None] * max(0, len(rels) - len(sha256s))
    return {"data": str(Path(data).resolve()), "began_ns": int(began_ns), "manifest": manifest_digest(manifest),
            "files": [[r, sig, sha] for r, sig, sha in zip(rels, signatures, shas)]}


def stored_series(df: pd.DataFrame) -> pd.DataFrame:
    """``series`` as an ingest stores it: its own columns and :data:`SERIES_STORED_KEYS`, without the other
    run keys (``files`` holds them once per file; :func:`read_table` joins them back)."""
    drop = [c for c in df.columns if c not in ("kind", *SERIES_COLUMNS, *SERIES_STORED_KEYS)]
    return df.drop(columns=drop) if drop else df


def _per_row(values: pd.Series, codes: np.ndarray, parsed: np.ndarray) -> pd.Categorical:
    """Per-file values (index: a row's file code) broadcast to rows by ``codes`` (-1: no file): a
    categorical with ``str`` categories, as the ingest attaches run keys: the categories are the values of
    the files read (``parsed``: ok or partial), whether or not they gave rows."""
    per_file = pd.Categorical(values.where(parsed))  # files not read give no rows: not categories; text below
    labels = [str(c) for c in per_file.categories]
    order = np.argsort(np.array(labels, dtype=object)) if labels else np.zeros(0, np.intp)  # sorted as text
    remap = np.append(np.argsort(order), -1).astype(per_file.codes.dtype)  # old code → new; code -1 stays -1
    file_codes = np.append(remap[per_file.codes], np.array([-1], per_file.codes.dtype))  # row without a file → -1
    cats = pd.Index([labels[i] for i in order], dtype="str")
    return pd.Categorical.from_codes(file_codes[codes], categories=cats, validate=False)


def join_run_keys(series: pd.DataFrame, files: pd.DataFrame, want: list[str] | None = None) -> pd.DataFrame:
    """``series`` as stored (:func:`stored_series`) with its run keys from ``files`` (``path`` = the row's
    ``source``): :data:`KEY_COLUMNS` always, then the other keys some file of these rows has, in ``files``'
    order (``want``: only those), as the ingest attaches them (categoricals; numbers typed by
    :func:`typed_keys`).  Keys ``series`` already has are kept as they are (a set written before keys were
    stored once per file)."""
    have = set(series.columns)
    keys = [c for c in files.columns if c not in FILE_COLUMNS and c not in have]
    keys = [c for c in KEY_COLUMNS if c not in have] + [c for c in keys if c not in KEY_COLUMNS]
    if want is not None:
        keys = [c for c in keys if c in want]
    if not keys or "source" not in series:
        return series
    files = files.assign(**{k: pd.Series(None, index=files.index, dtype=object) for k in keys if k not in files})
    src = series["source"]
    src = src if isinstance(src.dtype, pd.CategoricalDtype) else src.astype("category")
    pos = pd.Index(files["path"].astype(str)).get_indexer(src.cat.categories.astype(str))
    used = pos[np.unique(src.cat.codes[src.cat.codes >= 0])] if len(src) else pos[:0]
    codes = src.cat.codes.to_numpy()
    row_file = np.where(codes >= 0, pos[np.maximum(codes, 0)] if len(pos) else -1, -1)  # files row or -1
    parsed = files["status"].isin(["ok", "partial"]).to_numpy() if "status" in files else np.ones(len(files), bool)
    add = {}
    for k in keys:
        col = files[k]
        if k not in KEY_COLUMNS and not col.iloc[used[used >= 0]].notna().any():
            continue  # a key none of these rows' files has: not a column (as the ingest attaches them)
        add[k] = _per_row(col, row_file, parsed) if len(col) else pd.Categorical.from_codes(
            np.full(len(series), -1, np.int8), categories=pd.Index([], dtype="str"))
    out = pd.concat([series, pd.DataFrame(add, index=series.index)], axis=1)
    for k, v in add.items():  # a key no row has: typed as strings, not float NaN (as the ingest types it)
        if len(v.categories) == 0:
            out[k] = pd.array(np.full(len(out), None, dtype=object), dtype="string")
    return typed_keys(out)


def read_table(out: str | Path, name: str, columns: list[str] | None = None, check: bool = True,
         filters: list[tuple[str, str, Any]] | None = None):
    """Table ``name`` of the set in ``out`` as a DataFrame, either layout (``columns``: only those;
    ``filters``: rows passing every ``(column, op, value)``, pyarrow's form), after :func:`verify`
    (``check``).  ``series`` comes with its run keys joined from ``files`` (:func:`join_run_keys`), so
    it reads as the ingest made it; a filter on a key is applied to ``files`` first.  TableSetError when
    the set is incomplete, FileNotFoundError naming ``make data`` when the set lacks it.  Whether or not
    ``check``, a table that ``tables.json`` lists is read only when its bytes have the recorded SHA-256
    (:func:`check_content`; hashed once per process), else TableContentError."""
    out = Path(out)
    if check:
        verify(out, content=(name, "files") if name == "series" else (name,))
    elif (out / RECORD).is_file():  # the caller checked the set; the bytes of what is read are checked here
        try:
            rec = json.loads((out / RECORD).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise TableSetError(f"{out / RECORD}: expected the JSON record of an ingest ({e}); re-run make data") \
                from None
        if name in rec.get("tables", {}):
            check_content(out, rec, (name,))
    kind = layout(out, name)
    if kind is None:
        raise FileNotFoundError(f"{out}: no table {name!r} in this set (`make data` writes it when the data "
                                f"has its source{': block traces' if name == 'blk_requests' else ''})")
    stored = stored_names(out, name, kind)
    joined = name == "series" and layout(out, "files") is not None
    keys = [c for c in stored_names(out, "files", layout(out, "files")) if c not in FILE_COLUMNS and c not in stored] \
        if joined else []
    files = None
    flt = list(filters or [])
    if joined:
        on_keys = [f for f in flt if f[0] not in stored]
        if on_keys or columns is None or any(c in keys or c in KEY_COLUMNS for c in columns if c not in stored):
            files = read_table(out, "files", check=False, filters=on_keys or None,
                         columns=["path", "status", *[k for k in keys if columns is None or k in columns]])
        if on_keys:
            flt = [f for f in flt if f[0] in stored] + [("source", "in", files["path"].astype(str).tolist())]
    cols = columns if columns is None or not joined else \
        [c for c in dict.fromkeys([*columns, "source"]) if c in stored]
    if kind == "file":
        df = pd.read_parquet(out / f"{name}.parquet", columns=cols, filters=_expression(flt))
    else:
        df = read_dataset(out / name)
        if flt:  # the same filter as the single file's, by Arrow (pandas' dtypes come back from its metadata)
            import pyarrow as pa
            df = pa.Table.from_pandas(df, preserve_index=False).filter(_expression(flt)).to_pandas()
        if cols is not None:
            df = df[[c for c in cols if c in df]]
    if files is not None:
        df = join_run_keys(df, files, None if columns is None else list(columns))
    if columns is not None:
        df = df[[c for c in columns if c in df]]
    return df


def _expression(filters: list[tuple[str, str, Any]]):
    """``filters`` (pyarrow's list form) as an Arrow expression, None for none; an ``in`` list is typed by
    its values (an empty one, e.g. no file with the key asked for, is an empty set of text, not an error)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    if not filters:
        return None
    expr = None
    for col, op, val in filters:
        if op in ("in", "not in") and not list(val):
            e = pc.field(col).isin(pa.array([], pa.string()))
            e = ~e if op == "not in" else e
        else:
            e = pq.filters_to_expression([(col, op, val)])
        expr = e if expr is None else expr & e
    return expr


def stored_names(out: Path, name: str, kind: str) -> list[str]:
    """Column names of table ``name`` as stored (a partitioned table: the union over its parts, with
    ``campaign`` and ``kind`` from the folders), from the Parquet footers."""
    import pyarrow.parquet as pq
    if kind == "file":
        return pq.read_schema(out / f"{name}.parquet").names
    names = {"campaign": None, "kind": None}
    for p in _parts(out, name):
        names.update(dict.fromkeys(pq.read_schema(p).names))
    return list(names)


def stringish(t) -> bool:
    import pyarrow as pa
    return pa.types.is_dictionary(t) or pa.types.is_large_string(t) or pa.types.is_string(t)


def read_dataset(path: str | Path) -> pd.DataFrame:
    """A partitioned table (``<table>/campaign=…/kind=…/part-*.parquet``) as one DataFrame: the parts'
    columns unioned (a key no part of a batch had is null there) and typed as :func:`merge_parts` types
    them, ``campaign`` (null for ``_none``) and ``kind`` from the path, text columns as categoricals.
    Labels stay dictionary-encoded from the files to the categoricals (no per-row strings)."""
    import pyarrow as pa

    path = Path(path)
    parts = sorted(path.glob("campaign=*/kind=*/part-*.parquet"))
    if not parts:
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no such partitioned table")
        return pd.DataFrame()
    text = pa.dictionary(pa.int32(), pa.string())
    schema = _unified_schema(parts, {"campaign": text, "kind": text})
    tables = []
    for f in parts:
        camp, kind = f.parent.parent.name.split("=", 1)[1], f.parent.name.split("=", 1)[1]
        for t in _row_groups([f]):
            n = t.num_rows
            label = {"campaign": None if camp == NO_CAMPAIGN else camp, "kind": kind}
            t = t.append_column("campaign", pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(n, np.int32), mask=np.full(n, label["campaign"] is None)),
                pa.array([label["campaign"] or ""], pa.string())))
            t = t.append_column("kind", pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                                                       pa.array([kind], pa.string())))
            tables.append(_conform(t, schema))
    df = pa.concat_tables(tables).to_pandas()
    for c in df.columns:  # a label column no row has: null strings, as the serial path types a key no file had
        if not pd.api.types.is_numeric_dtype(df[c].dtype) and not df[c].notna().any():
            df[c] = pd.array(pa.nulls(len(df), pa.large_string()), dtype="string")
    return typed_keys(df)  # parts without a key promote it to null: Int64 again, as the serial path has it


# --- one file from parts (the default ingest's bounded-memory write) ----------------------------------

def _unify(cur, new):
    """The Arrow type a column takes over parts of type ``cur`` (None: only nulls so far) and ``new``:
    a category in any part → dictionary<int32, string> (a category); else text in any part → string;
    int beside float → float64."""
    import pyarrow as pa
    text = pa.dictionary(pa.int32(), pa.string())
    if pa.types.is_null(new):
        return cur
    if pa.types.is_dictionary(new) or cur == text:
        return text
    if stringish(new) or (cur is not None and stringish(cur)):
        return pa.string()
    if cur is None or cur == new:
        return new
    if (pa.types.is_integer(cur) or pa.types.is_floating(cur) or pa.types.is_boolean(cur)) and \
            (pa.types.is_integer(new) or pa.types.is_floating(new) or pa.types.is_boolean(new)):
        both_int = pa.types.is_integer(cur) and pa.types.is_integer(new)
        return pa.int64() if both_int else pa.float64()
    return pa.string()  # anything else that disagrees (a time beside a number): as text, never dropped


def _pandas_column(name: str, t, seen: dict | None) -> dict:
    """pandas' metadata entry for column ``name`` of the merged file (Int64 and categories come back)."""
    import pyarrow as pa
    m = dict(seen) if seen else {"name": name, "field_name": name, "pandas_type": None, "numpy_type": None,
                                 "metadata": None}  # pyarrow's key order: the same bytes whichever part told
    if pa.types.is_dictionary(t):
        m.update(pandas_type="categorical", numpy_type="int32", metadata={"num_categories": None, "ordered": False})
    elif pa.types.is_null(t):
        m.update(pandas_type="empty", numpy_type="object", metadata=None)
    elif pa.types.is_floating(t) and m.get("pandas_type") != "float64":
        m.update(pandas_type="float64", numpy_type="float64", metadata=None)
    elif pa.types.is_string(t) and m.get("pandas_type") not in ("unicode", "string"):
        m.update(pandas_type="unicode", numpy_type="object", metadata=None)
    elif not seen:
        m.update(pandas_type=str(t), numpy_type=str(t.to_pandas_dtype().__name__) if hasattr(t, "to_pandas_dtype")
                 else "object")
    return m


#: columns whose row-group min/max the merged file keeps (what notebooks and DuckDB filter on)
STATS_COLUMNS = ("campaign", "kind", "source", "metric", "scenario", "arm", "op_queue", "io_scheduler",
                 "profile", "repeat", "run", "job", "ddir")


def _row_groups(parts: list[Path]):
    """The parts' rows as Arrow tables, a row group (Parquet) or a batch (an Arrow IPC stream,
    ``*.arrows``: the default ingest's temporary parts) at a time."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq
    for p in parts:
        if p.suffix == ".arrows":
            with pa.OSFile(str(p), "rb") as src:
                reader = ipc.open_stream(src)
                for b in reader:
                    yield pa.Table.from_batches([b], reader.schema)
            continue
        f = pq.ParquetFile(p)
        for i in range(f.num_row_groups):
            yield f.read_row_group(i)


def _part_schema(p: Path):
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq
    if p.suffix == ".arrows":
        with pa.OSFile(str(p), "rb") as src:
            return ipc.open_stream(src).schema
    return pq.read_schema(p)


class _SchemaUnion:
    """The Arrow schema (with pandas' metadata) of parts taken together, part by part: columns in
    first-seen order, each typed by :func:`_unify`; pandas' description of a column is the first part's
    that is not all-null (``empty``); the rest of pandas' metadata is what this pandas and pyarrow write
    for a frame without an index (whichever parts carry metadata: a streamed log's part has none)."""

    def __init__(self) -> None:
        self.types: dict[str, Any] = {}
        self.seen: dict[str, dict] = {}

    def add(self, sch) -> None:
        meta = json.loads(sch.metadata[b"pandas"]) if sch.metadata and b"pandas" in sch.metadata else None
        cols = {c["field_name"]: c for c in meta["columns"]} if meta else {}
        for f in sch:
            self.types[f.name] = _unify(self.types.get(f.name), f.type)
            c = cols.get(f.name)
            if c is not None and (f.name not in self.seen or self.seen[f.name].get("pandas_type") == "empty"):
                self.seen[f.name] = c

    def schema(self, extra: dict[str, Any] | None = None):
        """The union so far (``extra``: name → type, appended)."""
        import pyarrow as pa
        types = dict(self.types)
        for name, t in (extra or {}).items():
            types[name] = _unify(types.get(name), t)
        fields = [pa.field(n, pa.null() if t is None else t) for n, t in types.items()]
        meta = _pandas_template()
        meta["columns"] = [_pandas_column(f.name, f.type, self.seen.get(f.name)) for f in fields]
        return pa.schema(fields, metadata={b"pandas": json.dumps(meta).encode()})


def _pandas_template() -> dict:
    """pandas' metadata for a frame without an index, as ``pyarrow.Table.from_pandas`` writes it (keys in
    its order; ``columns`` to be filled)."""
    import pyarrow as pa
    return json.loads(pa.Schema.from_pandas(pd.DataFrame(), preserve_index=False).metadata[b"pandas"])


def _unified_schema(parts: list[Path], extra: dict[str, Any] | None = None):
    """The Arrow schema (with pandas' metadata) of ``parts`` taken together (:class:`_SchemaUnion`)."""
    u = _SchemaUnion()
    for p in parts:
        u.add(_part_schema(p))
    return u.schema(extra)


def _conform(t, schema):
    """Arrow table ``t`` with ``schema``'s columns in its order: cast where the type differs, nulls where
    ``t`` lacks a column."""
    import pyarrow as pa
    cols = []
    for f in schema:
        if f.name not in t.column_names:
            cols.append(pa.nulls(t.num_rows, f.type))
            continue
        c = t.column(f.name)
        if c.type != f.type:
            if stringish(f.type) and not stringish(c.type) and not pa.types.is_null(c.type):
                c = c.cast(pa.string())  # a number beside text: its text (arrow casts no number to a dictionary)
            c = c.cast(f.type)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=schema)


def parquet_options(table) -> dict[str, Any]:
    """How Parquet should encode the columns of ``table`` (a DataFrame or an Arrow schema): a
    dictionary for all but the floating-point columns, which are nearly all distinct (measured values,
    times) and go BYTE_STREAM_SPLIT instead.  Writing the shipped series (4.3 M rows, zstd) took 0.64 s
    with Arrow's defaults, 0.44 s without the float dictionaries; a 40 M-row per-IO log's series 4.3 s,
    then 3.6 s with byte-stream-split floats (144 → 142 MB; the shipped series grows 6.0 → 7.5 MB)."""
    if isinstance(table, pd.DataFrame):
        floats = {str(c) for c in table.columns if pd.api.types.is_float_dtype(table[c].dtype)}
        names = [str(c) for c in table.columns]
    else:
        import pyarrow as pa
        floats = {f.name for f in table if pa.types.is_floating(f.type)}
        names = [f.name for f in table]
    return {"use_dictionary": [n for n in names if n not in floats],
            "column_encoding": {n: "BYTE_STREAM_SPLIT" for n in names if n in floats} or None}


def write_parquet(df: pd.DataFrame, path: str | Path, **options: Any) -> None:
    """``df.to_parquet`` without the index, zstd unless ``options`` say otherwise, columns encoded as
    :func:`parquet_options` says."""
    df.to_parquet(path, index=False, **{"compression": "zstd", **parquet_options(df), **options})


#: of :data:`STATS_COLUMNS`, those the series file keeps no min/max of: nearly every row group of it holds
#: several jobs and both directions (one corpus copy: 1 of 14 row groups with a single ddir, 0 with a single
#: job), so they prune nothing, and on 101 M rows they cost 1.1 s of the merge (~11 ns a row)
SERIES_NO_STATS = ("job", "ddir")


def _merged_writer(dest: Path, schema):
    """The Parquet writer of a merged table: zstd, :func:`parquet_options`, min/max statistics only on
    :data:`STATS_COLUMNS` (where readers filter; elsewhere half the write time), in ``series.parquet`` not
    on :data:`SERIES_NO_STATS`."""
    import pyarrow.parquet as pq
    skip = SERIES_NO_STATS if Path(dest).stem == "series" else ()
    stats = [n for n in STATS_COLUMNS if n in schema.names and n not in skip]
    return pq.ParquetWriter(dest, schema, compression="zstd", write_statistics=stats, **parquet_options(schema))


def merge_parts(parts: list[Path], dest: Path) -> int:
    """Parquet parts written by pandas → one Parquet file ``dest``, their rows in the order given, one part
    in memory at a time (the default ingest's bounded write).  Columns are the union of the parts' in
    first-seen order (a column a part lacks is null there), typed by :func:`_unify`; pandas' metadata is
    merged so ``pandas.read_parquet`` gives the categories and nullable integers the in-memory tables
    have.  A part is read a row group at a time (a streamed log's part holds one per 32 MiB block).
    Returns the rows written."""
    schema = _unified_schema(parts)
    rows = 0
    with _merged_writer(dest, schema) as w:
        for t in _prefetched(_conform(t, schema) for t in _row_groups(parts)):
            w.write_table(t)  # encoding (this thread) overlaps reading the next row group (the other)
            rows += t.num_rows
            del t
    return rows


class PartMerger:
    """:func:`merge_parts` fed as the parts arrive (walk order), so that the merge runs while the next
    batches are read instead of after them.  Each part is written at once while the union of the schemas
    so far (:class:`_SchemaUnion`) is the schema the file was opened with — a table's parts usually share
    their columns and types.  A part that changes it (a run key first seen, a column all-null before)
    starts the file again with the wider schema, the parts so far rewritten; after :data:`RESTARTS`
    restarts the rest is merged once at :meth:`close`.  Either way the file is the one :func:`merge_parts`
    writes from all the parts.  The parts are kept until :meth:`close`."""

    RESTARTS = 8

    def __init__(self, dest: Path) -> None:
        self.dest, self.parts, self.union = Path(dest), [], _SchemaUnion()
        self.writer, self.schema, self.rows, self.streaming, self.restarts = None, None, 0, True, 0

    def add(self, parts: list[Path]) -> None:
        for p in parts:
            self.parts.append(p)
            self.union.add(_part_schema(p))
            if not self.streaming:
                continue
            want = self.union.schema()
            if self.writer is not None and not want.equals(self.schema, check_metadata=True):
                self.abort()
                self.restarts += 1
                if self.restarts > self.RESTARTS:  # a schema that keeps changing: merged once, at close
                    self.streaming = False
                    continue
            if self.writer is None:
                self._open(want)
                self._write(self.parts)  # after a restart: the parts so far, in the wider schema
            else:
                self._write([p])

    def _open(self, schema) -> None:
        self.schema, self.rows = schema, 0
        self.writer = _merged_writer(self.dest, schema)

    def _write(self, parts: list[Path]) -> None:
        for t in _row_groups(parts):
            self.writer.write_table(_conform(t, self.schema))
            self.rows += t.num_rows
            del t

    def close(self) -> int:
        """Finish ``dest``; the rows written."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if not self.streaming:
            self.rows = merge_parts(self.parts, self.dest)
        return self.rows

    def abort(self) -> None:
        """Close and remove ``dest`` (an error, or a restart)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.dest.unlink(missing_ok=True)


def _prefetched(it):
    """The items of iterator ``it``, the next one computed on a second thread while the caller handles the
    current one (Arrow's reading and Parquet's encoding release the GIL: two cores for a merge).  One item
    ahead: memory for two row groups."""
    from concurrent.futures import ThreadPoolExecutor
    done = object()
    with ThreadPoolExecutor(1) as ex:
        fut = ex.submit(next, it, done)
        while True:
            item = fut.result()
            if item is done:
                return
            fut = ex.submit(next, it, done)
            yield item

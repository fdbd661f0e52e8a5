"""The ``summary`` table of whatever a user points at: a folder of raw outputs, an archive of one
(``.tar``, ``.tar.gz``/``.tgz``, ``.tar.xz``, ``.tar.bz2``, ``.zip``), one output file, or a folder of
already-ingested tables (``summary.parquet`` or the partitioned ``summary/`` of ``ingest --dask``).

Raw input is read with :func:`analysis.ingest.walk.ingest` in this process (nothing written); an archive
is unpacked into a temporary folder first, refusing members that would land outside it.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .base import IngestError

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".zip")


@dataclass
class Loaded:
    """A source's summary rows, what it was (``raw``, ``archive``, ``file``, ``tables``), the files
    that failed (path, error) or were not read (path, status: ``empty``, ``unrecognised``), the files read
    ``partial`` (path, why: the reader's ``partial_reason``/``incomplete``) and the ``files`` table (one row
    per file: ``path`` = the summary's ``source``, ``sha256``, ``status``, …; empty when unknown)."""
    summary: pd.DataFrame
    source: str
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: pd.DataFrame = field(default_factory=pd.DataFrame)
    partial: list[tuple[str, str]] = field(default_factory=list)


def _partial(f: pd.DataFrame) -> list[tuple[str, str]]:
    """(path, why) of the files of ``f`` (a ``files`` table) read ``partial``."""
    if not len(f) or "status" not in f:
        return []
    from ..overview import partial_reasons
    part = f[f["status"] == "partial"]
    metas = part["meta_json"] if "meta_json" in part else [None] * len(part)
    return [(str(p), "; ".join(partial_reasons(m))) for p, m in zip(part["path"], metas)]


def _is_archive(p: Path) -> bool:
    return p.is_file() and p.name.lower().endswith(ARCHIVE_SUFFIXES)


def _unpack(archive: Path, dest: Path) -> None:
    """Unpack ``archive`` into ``dest``; IngestError for a member outside it (``../``, absolute, links)."""
    root = dest.resolve()
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as z:
                for name in z.namelist():
                    if root not in (root / name).resolve().parents and (root / name).resolve() != root:
                        raise IngestError(archive, f"member {name!r} would unpack outside the folder")
                z.extractall(dest)
            return
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                target = (root / m.name).resolve()
                if (root not in target.parents and target != root) or m.issym() or m.islnk() or m.isdev():
                    raise IngestError(archive, f"member {m.name!r}: expected a regular file or folder inside "
                                               "the archive (no links, devices or paths outside it)")
            if hasattr(tarfile, "data_filter"):  # Python ≥ 3.11.4: the safe filter, and no warning on 3.12+
                t.extractall(dest, filter="data")
            else:
                t.extractall(dest)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
        raise IngestError(archive, f"expected a readable tar or zip archive: {e}") from None


def _tables(p: Path) -> bool:
    return (p / "summary.parquet").is_file() or (p / "summary").is_dir()


def load(path: str | Path, jobs: int = 1, lenient: bool = False) -> Loaded:
    """The summary rows of ``path`` (module docstring).  IngestError when the path does not exist."""
    p = Path(path)
    if not p.exists():
        raise IngestError(p, "no such file or folder: expected a folder of benchmark outputs, an archive, "
                             "one output file, or ingested tables")
    if p.is_dir() and _tables(p):  # the summary alone: the series table is ~100× larger and not needed
        from ..store import TableSetError, read_table
        try:
            summary = read_table(p, "summary")
            f = read_table(p, "files", check=False)
        except TableSetError as e:
            raise IngestError(p, str(e)) from None
        bad = f[f["status"] == "failed"] if "error" in f and "status" in f else None
        return Loaded(summary, "tables", [] if bad is None else list(zip(bad["path"], bad["error"])), files=f,
                      partial=_partial(f))
    if p.is_dir():
        return _ingest(p, "raw", jobs, lenient)
    with tempfile.TemporaryDirectory(prefix="cephqos-src-") as tmp:
        if _is_archive(p):
            _unpack(p, Path(tmp))
            return _ingest(Path(tmp), "archive", jobs, lenient)
        shutil.copy2(p, Path(tmp) / p.name)
        return _ingest(Path(tmp), "file", jobs, lenient)


def _ingest(root: Path, source: str, jobs: int, lenient: bool = False) -> Loaded:
    from .walk import ingest
    res = ingest(root, progress=False, jobs=jobs, lenient=lenient)
    f = res.files
    skipped = list(zip(f.loc[f["status"].isin(["empty", "unrecognised"]), "path"],
                       f.loc[f["status"].isin(["empty", "unrecognised"]), "status"])) if len(f) else []
    return Loaded(res.summary, source, res.failed, skipped, files=f, partial=_partial(f))

"""Content-based format detection and the ``read(path)`` entry point.

Each reader module exposes ``KIND``/``KINDS``, ``sniff(head: bytes)`` and ``parse(path, data)``.
Detection looks only at the first 64 KiB of content, never at the file name; readers are tried in a
fixed order, most specific first.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from .base import IngestError, Parsed
from .compress import read_all, read_head

if TYPE_CHECKING:
    from .runfolder import RunFolder

HEAD_BYTES = 64 * 1024
#: reader modules, most specific sniff first
_READERS = ("blktrace", "blkparse", "btt", "ceph_timeline", "sysutil", "fio", "radosbench", "getput", "fio_log",
            "fio_text", "fio_jobfile")  # fio's text and job files last: every other reader keeps what it claims
KINDS = ("blktrace", "blkparse", "btt", "ceph-pg-timeline", "sysutil", "fio-json", "rados-bench", "getput",
         "fio-hist-log", "fio-log", "fio-text", "fio-terse", "fio-jobfile")


def _modules():
    return [importlib.import_module(f"{__package__}.{name}") for name in _READERS]


def detect(path: str | Path, head: bytes | None = None) -> str | None:
    """The kind of ``path`` from its content, or None when no reader recognises it."""
    path = Path(path)
    if head is None:
        head, _ = read_head(path, HEAD_BYTES)
    for mod in _modules():
        kind = mod.sniff(head)
        if kind:
            return kind if isinstance(kind, str) else mod.KIND
    return None


def streams(mod, path: Path, comp: str | None) -> bool:
    """Whether ``mod`` reads ``path`` in blocks: it can (``parse_stream``) and the file is at least
    ``mod.STREAM_MIN_BYTES`` on disk (an eighth of that when compressed)."""
    if not hasattr(mod, "parse_stream"):
        return False
    size = path.stat().st_size
    return size >= (mod.STREAM_MIN_BYTES // 8 if comp else mod.STREAM_MIN_BYTES)


def _module_of(kind: str):
    """The reader module whose ``sniff`` returns ``kind`` (each kind has one)."""
    for mod in _modules():
        if kind == getattr(mod, "KIND", None) or kind in getattr(mod, "KINDS", ()):
            return mod
    raise ValueError(f"no reader for kind {kind!r}")


def read(path: str | Path, sink=None, data: bytes | None = None, kind: str | None = None,
         folder: "RunFolder | None" = None) -> Parsed:
    """Read one benchmark output; raises ``IngestError`` for unknown or bad input.

    A large file of a reader with bounded-memory reading (:func:`streams`: per-IO fio logs, binary block
    traces) is read in blocks; ``sink(frame)`` then receives its series (block by block for fio logs)
    instead of ``Parsed.series``.  ``data``: the file's content (uncompressed) when the caller has read
    it already (the walk hashes it), so that it is not read again.  ``kind``: what :func:`detect` said of
    this file (the walk detects first), so that the readers do not sniff it again.  ``folder``: the
    :class:`~analysis.ingest.runfolder.RunFolder` of ``path``'s directory that the walk keeps while it reads
    that folder (fio's JSON and logs share one parse of the JSON); readers that take it say
    ``RUN_FOLDER = True``."""
    path = Path(path)
    try:
        head, comp = (data[:HEAD_BYTES], None) if data is not None else read_head(path, HEAD_BYTES)
    except OSError as e:
        raise IngestError(path, f"cannot read file: {e.strerror}") from None
    if not head.strip():
        raise IngestError(path, "empty file: expected fio JSON, a fio log, rados bench output or a "
                                "cephqos-pg-timeline", line=1)
    for mod in ([_module_of(kind)] if kind is not None else _modules()):
        kind = kind or mod.sniff(head)
        if kind:
            extra = {"folder": folder} if folder is not None and getattr(mod, "RUN_FOLDER", False) else {}
            try:
                if streams(mod, path, comp):
                    parsed = mod.parse_stream(path, sink, **extra)
                elif data is not None:
                    parsed = mod.parse(path, data, **extra)
                elif getattr(mod, "STREAMING", False) and (comp is None
                                                           or getattr(mod, "STREAMING_COMPRESSED", False)):
                    parsed = mod.parse(path, None, **extra)  # the reader reads (memory-maps) the file itself
                else:
                    parsed = mod.parse(path, read_all(path), **extra)
                if comp:
                    parsed.meta["compression"] = comp
                return parsed
            except IngestError:
                raise
            except (MemoryError, KeyboardInterrupt):
                raise
            except Exception as e:  # a reader bug must still name the file
                raise IngestError(path, f"unexpected content for {kind} "
                                        f"({type(e).__name__}: {e})") from e
    raise IngestError(path, "unrecognised content: expected fio JSON/json+ output, a fio "
                            "lat/clat/slat/iops/bw or histogram log, rados bench output, a "
                            "cephqos-pg-timeline, binary blk_io_trace records, blkparse or btt output, getput "
                            "output", line=1)

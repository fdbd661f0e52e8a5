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


def _modules():
    return [importlib.import_module(f"{__package__}.{name}") for name in _READERS]


def kinds() -> tuple[str, ...]:
    """Every kind the readers give, in :data:`_READERS` order (each module's ``KIND``, then its other
    ``KINDS``): the readers are listed once, there."""
    out: list[str] = []
    for mod in _modules():
        for k in (getattr(mod, "KIND", None), *getattr(mod, "KINDS", ())):
            if k and k not in out:
                out.append(k)
    return tuple(out)


def detect(path: str | Path, head: bytes | None = None) -> str | None:
    """The kind of ``path`` from its content, or None when no reader recognises it.  IngestError (line 1) for
    a file no reader claims that one would in UTF-8 (:func:`encoding_problem`: UTF-16 or UTF-32 text, or a
    byte-order mark before a format that has none)."""
    path = Path(path)
    if head is None:
        head, _ = read_head(path, HEAD_BYTES)
    kind = _sniff(head)
    if kind is None:
        why = encoding_problem(head)
        if why:
            raise IngestError(path, why, line=1)
    return kind


def _sniff(head: bytes) -> str | None:
    for mod in _modules():
        kind = mod.sniff(head)
        if kind:
            return kind if isinstance(kind, str) else mod.KIND
    return None


#: byte-order marks of the Unicode encodings other than UTF-8 (iconv's name, Python's codec), longest first
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32", "utf-32"), (b"\x00\x00\xfe\xff", "UTF-32", "utf-32"),
         (b"\xff\xfe", "UTF-16", "utf-16"), (b"\xfe\xff", "UTF-16", "utf-16"))
_BOM_UTF8 = b"\xef\xbb\xbf"


def text_encoding(head: bytes) -> tuple[str, str] | None:
    """(iconv's name, Python's codec) of text in UTF-16 or UTF-32, by its byte-order mark or, without one,
    by where the NUL bytes of its ASCII characters fall (``x\\0x\\0`` is UTF-16LE); None otherwise."""
    for bom, name, codec in _BOMS:
        if head.startswith(bom):
            return name, codec
    sample = head[:4096]
    n = len(sample) // 4 * 4
    if n < 16 or b"\0" not in sample:
        return None
    nul = [sum(1 for i in range(r, n, 4) if sample[i] == 0) / (n // 4) for r in range(4)]
    for pattern, name in (((0, 1, 1, 1), "UTF-32LE"), ((1, 1, 1, 0), "UTF-32BE"), ((0, 1, 0, 1), "UTF-16LE"),
                          ((1, 0, 1, 0), "UTF-16BE")):
        if all((f > 0.9) if z else (f < 0.1) for f, z in zip(nul, pattern)):
            return name, name.lower().replace("utf-", "utf_")
    return None


def encoding_problem(head: bytes) -> str | None:
    """Why a file no reader claims is not read when one would read it as UTF-8: ``expected UTF-8 text (this
    file is UTF-16: convert it with iconv -f UTF-16 -t UTF-8)``, or the UTF-8 byte-order mark before a
    format without one; None when that does not explain it."""
    enc = text_encoding(head)
    if enc is not None:
        name, codec = enc
        utf8 = head.decode(codec, "ignore").encode("utf-8", "replace")
        if _sniff(utf8) is not None:
            return f"expected UTF-8 text (this file is {name}: convert it with iconv -f {name} -t UTF-8)"
        return None
    if head.startswith(_BOM_UTF8) and _sniff(head[len(_BOM_UTF8):]) is not None:
        return ("expected text without a byte-order mark (this file starts with UTF-8's: remove it with "
                "sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)")
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
    why = encoding_problem(head)
    if why:
        raise IngestError(path, why, line=1)
    raise IngestError(path, "unrecognised content: expected fio JSON/json+ output, a fio "
                            "lat/clat/slat/iops/bw or histogram log, rados bench output, a "
                            "cephqos-pg-timeline, binary blk_io_trace records, blkparse or btt output, getput "
                            "output", line=1)

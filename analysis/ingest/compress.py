"""Transparent reading of compressed raw files, recognised by magic bytes (gzip, xz, bzip2)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
from pathlib import Path

from .base import IngestError

_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2"}
#: the most (decompressed) content a reader reads whole (fio JSON, rados bench, btt, a CBT YAML …; per-IO
#: logs and block traces stream): the largest shipped file is 15 MB decompressed (a block trace), so a
#: file over this is a decompression bomb or not one run's output, refused before it fills the memory
WHOLE_MAX_BYTES = 1 << 30
_OPEN = {"gzip": gzip.open, "xz": lzma.open, "bzip2": bz2.open}


def compression(head: bytes) -> str | None:
    for magic, name in _MAGIC.items():
        if head.startswith(magic):
            return name
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    return None


def read_head(path: str | Path, n: int = 64 * 1024) -> tuple[bytes, str | None]:
    """The first ``n`` bytes of the (decompressed) content, and the compression found."""
    fd = os.open(path, os.O_RDONLY)  # no buffered file object: 3x cheaper per small file
    try:
        parts, left = [], n
        while left > 0 and (b := os.read(fd, left)):
            parts.append(b)
            left -= len(b)
    finally:
        os.close(fd)
    raw = b"".join(parts)
    comp = compression(raw)
    if comp is None:
        return raw, None
    if comp == "zstd":
        raise IngestError(path, "zstd-compressed input is not supported: use gzip or xz", offset=0)
    return _decompress(path, comp, n), comp


def read_all(path: str | Path, max_bytes: int | None = None) -> bytes:
    """Whole (decompressed) content; IngestError beyond ``max_bytes`` (default :data:`WHOLE_MAX_BYTES`)."""
    path = Path(path)
    limit = WHOLE_MAX_BYTES if max_bytes is None else max_bytes
    with open(path, "rb") as f:
        magic = f.read(8)
        comp = compression(magic)
        if comp is None:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise IngestError(path, f"{size} bytes: expected at most {_size(limit)} for a file read whole "
                                        "(not one benchmark run's output?)")
            f.seek(0)
            return f.read()
    if comp == "zstd":
        raise IngestError(path, "zstd-compressed input is not supported: use gzip or xz", offset=0)
    data = _decompress(path, comp, limit + 1)
    if len(data) > limit:
        raise IngestError(path, f"{comp} content of more than {_size(limit)}: expected at most that for a file "
                                "read whole (a decompression bomb?)")
    return data


def _size(n: int) -> str:
    for shift, unit in ((30, "GiB"), (20, "MiB")):
        if n >= 1 << shift and not n % (1 << shift):
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _decompress(path: str | Path, comp: str, limit: int | None = None) -> bytes:
    """The decompressed content (its first ``limit`` bytes), read in 1 MiB pieces so that a corrupt or
    truncated stream is reported where it broke: IngestError at the compressed byte offset the decoder had
    read up to (exact to within its read buffer) and with the decompressed bytes that came out before."""
    chunks: list[bytes] = []
    got = 0
    with open(path, "rb") as raw:
        try:
            with _OPEN[comp](raw, "rb") as f:
                while limit is None or got < limit:
                    b = f.read(1 << 20 if limit is None else min(1 << 20, limit - got))
                    if not b:
                        break
                    chunks.append(b)
                    got += len(b)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise IngestError(path, f"corrupt or truncated {comp} stream after {got} decompressed bytes "
                                    f"(compressed byte offset as read so far): {e}", offset=raw.tell()) from None
    return b"".join(chunks)


def open_stream(path: str | Path):
    """A binary file object over the (decompressed) content, read sequentially: memory stays bounded by
    what the caller reads at a time, whatever the file size."""
    path = Path(path)
    with open(path, "rb") as f:
        magic = f.read(8)
    comp = compression(magic)
    if comp == "zstd":
        raise IngestError(path, "zstd-compressed input is not supported: use gzip or xz", offset=0)
    return open(path, "rb") if comp is None else _Stream(path, comp)


class _Stream(io.RawIOBase):
    """A decompressing reader whose corrupt or truncated input raises ``IngestError`` at the compressed
    byte offset read so far (as :func:`_decompress` does), not the codec's own exception."""

    def __init__(self, path: str | Path, comp: str):
        self._path, self._comp, self._got = path, comp, 0
        self._raw = open(path, "rb")
        try:
            self._f = _OPEN[comp](self._raw, "rb")
        except BaseException:
            self._raw.close()
            raise

    def readable(self) -> bool:
        return True

    def _call(self, fn, arg):
        try:
            out = fn(arg)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise IngestError(self._path, f"corrupt or truncated {self._comp} stream after {self._got} "
                                          f"decompressed bytes (compressed byte offset as read so far): {e}",
                              offset=self._raw.tell()) from None
        self._got += out if isinstance(out, int) else len(out)
        return out

    def readinto(self, b) -> int:
        return self._call(self._f.readinto, b)

    def read(self, size: int = -1) -> bytes:
        return self._call(self._f.read, size)

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            self._raw.close()
            super().close()

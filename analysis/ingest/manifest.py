"""The tree's checksum manifest (``MANIFEST.sha256``, ``sha256sum -c`` format): hashing, reading,
writing (atomically).

Read as coreutils' ``sha256sum -c`` reads it (md5sum.c ``split_3``): ``<digest>  <name>`` (or ``<digest>
*<name>``, or the first line's ``<digest> <name>`` for every line), the digest 64 hex digits in either
case, ``SHA256 (<name>) = <digest>`` (``--tag``), a line that starts with ``\\`` holding an escaped name
(``\\\\``, ``\\n``, ``\\r``), ``#`` comments, a CR before the line end; names are bytes (any, as the
file system's), relative to the manifest's folder, a leading ``./`` dropped.  Written in ``sha256sum``'s
own output format, escapes included, so that ``sha256sum -c`` and this reader accept the same file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from .base import IngestError
from .discovery import MANIFEST, iter_files, refusal, shown


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of a file, read in blocks into one buffer (``hashlib.file_digest``)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def load_manifest(root: Path) -> dict[str, str] | None:
    """``{path below root: sha256}`` from ``root/MANIFEST.sha256``, or from the nearest folder above that
    has one and lists files below ``root`` (``data/raw/fio-grid`` is checked against ``data/raw``'s
    manifest, its entries under that folder); None when neither exists.  Paths as ``os.fsdecode`` gives
    them (the walk's), digests in lower case.  IngestError for a manifest that is not a regular file (a
    folder named ``MANIFEST.sha256``) or has a line ``sha256sum -c`` would not read."""
    root = Path(root)
    for d in (root, *root.parents):
        m = d / MANIFEST
        try:
            st = os.stat(m)
        except FileNotFoundError:
            if os.path.islink(m):
                raise IngestError(shown(str(m)), "a symlink to nothing: expected the tree's checksum list "
                                                 "(sha256sum format)") from None
            continue
        except OSError as e:
            raise IngestError(shown(str(m)), f"cannot stat: {e.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise IngestError(shown(str(m)), f"{_file_type(st)}, not a regular file: expected the tree's checksum "
                                             "list (sha256sum format)")
        entries = _read_manifest(m)
        if d == root:
            return entries
        prefix = root.relative_to(d).as_posix() + "/"
        below = {k[len(prefix):]: v for k, v in entries.items() if k.startswith(prefix)}
        if below:
            return below
    return None


def _file_type(st: os.stat_result) -> str:
    from .discovery import FILE_TYPES
    return next((what for test, what in FILE_TYPES if test(st.st_mode)),
                "a symlink" if stat.S_ISLNK(st.st_mode) else "not a file")


_HEX = re.compile(rb"[0-9A-Fa-f]{64}")
_UNESCAPES = {b"\\\\": b"\\", b"\\n": b"\n", b"\\r": b"\r"}
_ESCAPE = re.compile(rb"\\(.?)", re.S)


def _unescape(name: bytes) -> bytes | None:
    """A name as ``sha256sum`` escaped it (``\\\\``, ``\\n``, ``\\r``), or None for another escape."""
    bad = []

    def one(m: "re.Match[bytes]") -> bytes:
        out = _UNESCAPES.get(m.group())
        if out is None:
            bad.append(m.group())
            return b""
        return out
    out = _ESCAPE.sub(one, name)
    return None if bad else out


def parse_line(line: bytes, state: list[int]) -> tuple[bytes, str] | None:
    """(name, lower-case digest) of one line of a SHA-256 manifest as ``sha256sum -c`` reads it (coreutils
    md5sum.c ``split_3``/``bsd_split_3``), None when it would call the line improperly formatted.  ``state``:
    ``[-1]`` before the first line, then whether the lines name their files after one space (coreutils'
    ``bsd_reversed``: the first such line decides for the rest)."""
    i = 0
    while i < len(line) and line[i] in b" \t":
        i += 1
    escaped = line[i:i + 1] == b"\\"
    i += escaped
    if line.startswith(b"SHA256", i):  # --tag: SHA256 (name) = digest
        j = i + 6 + (line[i + 6:i + 7] == b" ")
        if line[j:j + 1] != b"(":
            return None
        k = line.rfind(b")")
        if k <= j:
            return None
        name, tail = line[j + 1:k], line[k + 1:].lstrip(b" \t")
        digest = tail[1:].lstrip(b" \t") if tail[:1] == b"=" else b""
        if not _HEX.fullmatch(digest):
            return None
    else:
        digest = line[i:i + 64]
        if len(line) - i < 66 or not _HEX.fullmatch(digest) or line[i + 64] not in b" \t":
            return None
        i += 65
        if len(line) - i == 1 or line[i] not in b" *":  # "<digest> <name>": every line must be so
            if state[0] == 0:
                return None
            state[0] = 1
        elif state[0] != 1:
            state[0] = 0
            i += 1
        name = line[i:]
    if escaped:
        name = _unescape(name)
        if name is None:
            return None
    return (name, digest.decode().lower()) if name and b"\0" not in name else None


def _read_manifest(m: Path) -> dict[str, str]:
    from .compress import read_all
    try:
        data = read_all(m)
    except OSError as e:
        raise IngestError(shown(str(m)), f"cannot read: {e.strerror}") from None
    out: dict[str, str] = {}
    state = [-1]
    for i, line in enumerate(data.split(b"\n"), 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip() or line.startswith(b"#"):
            continue
        got = parse_line(line, state)
        if got is None:
            raise IngestError(shown(str(m)), "expected '<sha256>  <relative path>' (sha256sum format)", line=i)
        name, digest = got
        while name.startswith(b"./"):
            name = name[2:]
        rel = os.fsdecode(name)
        if out.get(rel, digest) != digest:
            raise IngestError(shown(str(m)), f"{shown(rel)} listed again with another sha256: expected each "
                                             "file once", line=i)
        out[rel] = digest
    return out


def manifest_line(digest: str, rel: str) -> bytes:
    """One line of ``sha256sum``'s output for the file ``rel`` (``os.fsdecode`` form): a name holding a
    backslash, a newline or a CR is escaped and the line starts with a backslash, as coreutils writes it."""
    name = os.fsencode(rel)
    if any(c in name for c in b"\\\n\r"):
        name = name.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
        return b"\\" + digest.encode() + b"  " + name + b"\n"
    return digest.encode() + b"  " + name + b"\n"


def write_manifest(root: Path) -> Path:
    """(Re)write ``root/MANIFEST.sha256`` over every file below root, in sha256sum's own format (its escapes
    and any bytes a name holds): ``sha256sum -c`` accepts it, and so does :func:`load_manifest`.
    IngestError for a file that cannot be listed (special files, symlinks out of the tree, folders too
    deep) or a ``MANIFEST.sha256`` that is not a regular file."""
    root = Path(root)
    m = root / MANIFEST
    try:
        st = os.lstat(m)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise IngestError(shown(str(m)), f"{_file_type(st)}, not a regular file: expected a manifest written "
                                         "there (remove it first)")
    paths = [p for p in iter_files(root, ingested=False) if p.name != MANIFEST]
    for p in paths:
        why = refusal(p, root)
        if why:
            raise IngestError(shown(str(p)), shown(why))
    return atomic_write_bytes(m, b"".join(manifest_line(sha256_file(p), p.relative_to(root).as_posix())
                                          for p in paths))


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path

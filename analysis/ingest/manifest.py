"""The tree's checksum manifest (``MANIFEST.sha256``, ``sha256sum -c`` format): hashing, reading,
writing (atomically)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .base import IngestError
from .discovery import MANIFEST, iter_files, refusal


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of a file, read in blocks into one buffer (``hashlib.file_digest``)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def load_manifest(root: Path) -> dict[str, str] | None:
    """``{path below root: sha256}`` from ``root/MANIFEST.sha256``, or from the nearest folder above that
    has one and lists files below ``root`` (``data/raw/fio-grid`` is checked against ``data/raw``'s
    manifest, its entries under that folder); None when neither exists."""
    root = Path(root)
    for d in (root, *root.parents):
        if (d / MANIFEST).is_file():
            entries = _read_manifest(d / MANIFEST)
            if d == root:
                return entries
            prefix = root.relative_to(d).as_posix() + "/"
            below = {k[len(prefix):]: v for k, v in entries.items() if k.startswith(prefix)}
            if below:
                return below
    return None


def _read_manifest(m: Path) -> dict[str, str]:
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

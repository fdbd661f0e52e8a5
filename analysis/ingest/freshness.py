"""Are the processed tables what an ingest of the data would write now?  By content, never by mtime
(``python -m analysis stale DATA --processed PROC``; the Makefile's data step asks it)."""

from __future__ import annotations

import os
from pathlib import Path

from ..store import (MANIFEST_NAME, RACY_NS, RECORD, TableSetError, code_digest, libraries, manifest_digest,
                     stat_signature, unpack_inputs, verify)
from .base import IngestError
from .discovery import iter_files
from .manifest import load_manifest, sha256_file


def stale(data: str | Path, processed: str | Path, hash_all: bool = False) -> tuple[str | None, dict[str, int]]:
    """Why the tables in ``processed`` are not what an ingest of ``data`` would write now (one line), or None
    when they are; and counts (``files`` compared, ``hashed``).

    By content, never by mtime: the set must verify (:func:`verify`, tables hashed), be written by this
    ingest code (its digest) from ``data`` with the same manifest entries, and ``data`` must hold the same
    files (the walk's own list) with the content the ingest read.  A file is re-hashed when its
    (size, mtime_ns, ctime_ns, inode) differs from what the ingest recorded before reading it, or its
    recorded ctime is within :data:`RACY_NS` of the ingest's start (``hash_all``: every file).  ``cp -p``,
    ``rsync -t`` and ``touch -r`` set the mtime back but cannot set the ctime, which the kernel sets to the
    current time on every write, rename or utime; so a file whose signature is unchanged has not been
    written since it was stat'ed.  A changed signature with the same SHA-256 (a ``touch``) is fresh."""
    out, counts = Path(processed), {"files": 0, "hashed": 0}
    if not (out / RECORD).is_file():
        return f"{out}: no {RECORD} (no complete ingest's set there)", counts
    try:
        rec = verify(out)
    except TableSetError as e:
        return str(e), counts
    code = code_digest()
    if rec.get("code") != code:
        return f"the ingest code changed since the tables were written (code {rec.get('code')} → {code})", counts
    libs = libraries()
    if rec.get("libraries") != libs:
        return f"the libraries changed since the tables were written ({rec.get('libraries')} → {libs})", counts
    record = rec.get("inputs")
    if not isinstance(record, dict):
        return f"{out / RECORD} records no inputs (written by an ingest that does not record them)", counts
    import binascii
    import zlib
    try:
        was = {e[0]: e for e in unpack_inputs(record["packed"])}
    except (ValueError, KeyError, TypeError, IndexError, zlib.error, binascii.Error) as e:
        return f"{out / RECORD}: expected the record of the ingest's inputs ({e})", counts
    root = Path(data).resolve()
    if record.get("data") != str(root):
        return f"{out} holds the tables of {record.get('data')}, not of {root}", counts
    if root.is_dir():
        cut = len(str(root)) + 1  # paths below root as text: pathlib's relative_to costs 12 µs a file here
        base, rels = root, [str(p)[cut:] for p in iter_files(root)]
    elif root.is_file():
        base, rels = root.parent, [root.name]
    else:
        return f"{data}: no such file or folder", counts
    now = set(rels)
    added = [r for r in rels if r not in was]
    if added:
        return f"{len(added)} file(s) below {data} added since the ingest ({added[0]}{', …' if len(added) > 1 else ''})", \
            counts
    gone = [r for r in was if r not in now]
    if gone:
        return f"{len(gone)} file(s) below {data} removed since the ingest ({gone[0]}{', …' if len(gone) > 1 else ''})", \
            counts
    racy_from = int(record.get("began_ns", 0)) - RACY_NS
    prefix = f"{base}{os.sep}"
    for r in rels:
        _, sig0, sha0 = was[r]
        sig = stat_signature(prefix + r)
        counts["files"] += 1
        if sig == sig0 and not hash_all and not (sig0 is not None and sig0[2] >= racy_from):
            continue
        if sig is None or sig0 is None or sha0 is None:  # not read by the ingest, or not readable now
            if sig != sig0:
                return f"{r}: changed since the ingest ({'now' if sig is None else 'was'} not readable)", counts
            continue
        if sig[0] != sig0[0]:
            return f"{r}: content changed since the ingest read it ({sig0[0]} → {sig[0]} bytes)", counts
        try:
            sha = sha256_file(base / r)
        except OSError as e:
            return f"{r}: cannot read: {e.strerror or e} (read by the ingest)", counts
        counts["hashed"] += 1
        if sha != sha0:
            return f"{r}: content changed since the ingest read it (sha256 {sha[:12]}…, was {sha0[:12]}…)", counts
    if root.is_dir() and MANIFEST_NAME in was and was[MANIFEST_NAME][2] is not None:
        return None, counts  # the tree's own manifest, the one that applies (load_manifest), is unchanged: above
    try:  # one file, or a manifest in a folder above the tree: its entries as the ingest took them
        manifest = load_manifest(base)
    except (IngestError, OSError, UnicodeDecodeError) as e:
        return f"the manifest that applies to {data} cannot be read ({e})", counts
    if root.is_file() and manifest is not None:  # the file's own entry, as the ingest of one file checks it
        manifest = {root.name: manifest[root.name]} if root.name in manifest else {}
    if manifest_digest(manifest) != record.get("manifest"):
        return f"the MANIFEST.sha256 entries that apply to {data} changed since the ingest", counts
    return None, counts

"""A run folder: one directory's fio JSON outputs, parsed once and handed to the logs beside them.

fio writes its logs (``write_{lat,bw,iops,hist}_log``) next to its JSON output; a log's latency unit,
job name and workload come from that JSON (its *companion*, :mod:`.fio_log`).  The ingest keeps one
:class:`RunFolder` while it reads a folder's files: a fio JSON is parsed at its own turn or at the first
log that looks for its companion, whichever comes first, and the other takes that parse.  Nothing is
kept beyond the folder's turn (no process-wide cache): a reader called on one file gets a fresh one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import fio
from .base import CBT_DERIVED_PREFIX, IngestError, Parsed, cbt_derived
from .compress import read_all, read_head
from .discovery import context_kind

#: files larger than this are not opened to look for a fio JSON (fio's JSON output is KiB to a few MiB)
MAX_JSON_BYTES = 64 << 20
#: a capture's run.json is a few KiB (the largest in data/raw: 8,290 B); a larger one is not read as a record
MAX_RECORD_BYTES = 16 << 20


class RunFolder:
    """The fio JSON outputs of ``folder``, each parsed at most once while this object lives."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._docs: dict[str, tuple[int, Parsed]] = {}  # path → (length of the content parsed, parse)
        self._listed: list[Parsed] | None = None
        self._unlisted = False
        self._jobfiles: list[Parsed] | None = None
        self._record: dict | None | bool = False  # False: not read yet

    def record(self) -> dict | None:
        """The folder's capture ``run.json`` as a dict (read once, ≤ :data:`MAX_RECORD_BYTES`), or None
        when there is none or it cannot be read as a JSON object: run.json is read as context in its own
        turn, which reports what is wrong with it."""
        if self._record is False:
            self._record = None
            p = self.folder / "run.json"
            try:
                if p.is_file() and p.stat().st_size <= MAX_RECORD_BYTES:
                    doc = json.loads(p.read_bytes())
                    self._record = doc if isinstance(doc, dict) else None
            except (OSError, ValueError, RecursionError):
                pass
        return self._record

    def holds(self, path: str | Path) -> bool:
        """Whether ``path`` is a file of this folder."""
        return Path(path).parent == self.folder

    def fio_json(self, path: str | Path, data: bytes) -> Parsed:
        """``path`` (a file of this folder, content ``data``, decompressed) parsed as fio JSON, once: a
        second call with content of the same length gets the first parse (its own ``meta`` dict)."""
        key = str(path)
        hit = self._docs.get(key)
        if hit is None or hit[0] != len(data):
            hit = (len(data), fio.decode(Path(path), data))
            self._docs[key] = hit
        return hit[1].with_meta(dict(hit[1].meta))

    def companions(self, log: str | Path) -> list[Parsed] | None:
        """Every fio JSON output of the folder but ``log`` itself, parsed; None when the folder cannot
        be listed.  Files that are context by their name (run.json, the capture's osd_config.json.gz)
        and CBT's derived copies are not opened."""
        if self._listed is None and not self._unlisted:
            self._listed = self._scan()
            self._unlisted = self._listed is None
        if self._listed is None:
            return None
        return [d for d in self._listed if d.path != str(log)]

    def _scan(self) -> list[Parsed] | None:
        try:
            entries = sorted(os.scandir(self.folder), key=lambda e: e.name)
            listing = [(e.name, e.stat().st_size) for e in entries if e.is_file()]
        except OSError:
            return None
        parsed: list[Parsed] = []
        for name, size in listing:
            path = self.folder / name
            if size > MAX_JSON_BYTES or (name.startswith(CBT_DERIVED_PREFIX) and cbt_derived(path)):
                continue  # CBT's copy of the output beside it
            if context_kind(path, name) is not None:
                continue  # context by its name: never read as fio JSON
            try:
                head, _ = read_head(str(path))
                if fio.sniff(head):
                    parsed.append(self.fio_json(path, read_all(path)))  # kept for the walk's own turn
            except IngestError:
                continue
        return parsed


    def jobfiles(self) -> list[Parsed]:
        """The fio job files of the folder (:mod:`.fio_jobfile`, by content; ≤ 1 MiB), parsed once; ``[]``
        when the folder cannot be listed."""
        if self._jobfiles is None:
            from . import fio_jobfile
            self._jobfiles = []
            try:
                entries = sorted((e.name, e.stat().st_size) for e in os.scandir(self.folder) if e.is_file())
            except OSError:
                return self._jobfiles
            for name, size in entries:
                path = self.folder / name
                if size > JOBFILE_BYTES or context_kind(path, name) is not None:
                    continue
                try:
                    head, _ = read_head(str(path))
                    if fio_jobfile.sniff(head):
                        self._jobfiles.append(fio_jobfile.parse(path, read_all(path)))
                except IngestError:
                    continue
        return self._jobfiles

    def jobfile_for(self, jobs: list[str]) -> Parsed | None:
        """The one job file of the folder whose jobs include every one of ``jobs`` (an output's job names;
        ``name#k`` clones of ``numjobs`` match ``name``), else None (none, or more than one: not guessed)."""
        want = {j.split("#")[0] for j in jobs if j}
        hits = [jf for jf in self.jobfiles() if want and want <= {j.split("#")[0] for j in jf.meta.get("jobs", [])}]
        return hits[0] if len(hits) == 1 else None


#: job files larger than this are not opened to be matched with an output (fio job files are a few KiB)
JOBFILE_BYTES = 1 << 20


def folder_for(path: str | Path, folder: RunFolder | None) -> RunFolder:
    """``folder`` when it holds ``path``, else a fresh :class:`RunFolder` of ``path``'s directory."""
    return folder if folder is not None and folder.holds(path) else RunFolder(Path(path).parent)

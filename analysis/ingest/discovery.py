"""Which files a tree holds and what each is by its name: the walk (sorted, staging and hidden folders
skipped), the refusal of special files and of symlinks out of the tree, and the names that mark a file
as context rather than benchmark output (:func:`context_kind`)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Iterator

from .base import cbt_derived

CONTEXT_FILES = ("run.json", "benchmark_config.yaml")
#: what ``capture/`` writes beside the benchmark outputs: run metadata, listed as ``context`` (the
#: timeline already carries the cluster log's scrub events; the OSD config is summarised in run.json)
CAPTURE_AUX = ("done", "osd_config.json.gz", "cluster-log.txt.gz", "campaign.yaml", "fio.stderr",
               "write.stderr", "seq.stderr", "pilot.json",
               "cbt.yaml.gz", "cbt.log.gz",  # capture.cbt's record: what CBT was given, CBT's own log
               "loadgen.json.gz", "loadgen.stderr", "pilot-verdict.json")  # capture.rgw's: every op's latency
#: CBT's own side files, not benchmark output (``cluster/ceph.py`` dump_historic_ops, ``radosbench.py``'s
#: objecter dumps, the recovery test's log, collectl's folder): context, whatever their host suffix
CBT_AUX = re.compile(r"^(?:historic_ops\.out|objecter\.\d+\.log|recovery\.log)(?:\..+)?$")
#: notes kept beside the data (how it was made): context by name, never read as data (a ``.txt`` is not
#: among them: rados bench output is often saved as one)
NOTES = re.compile(r"^(?:README(?:\..*)?|COMMAND|.*\.(?:md|rst|sh|py))$", re.IGNORECASE)
MANIFEST = "MANIFEST.sha256"
CAPTURE_AUX_PREFIX = "sitting-"  # one per capture sitting: what ran, was redone or failed
#: the capture's own files stored decompressed (``gunzip -r`` on an archive: ``cbt.log.gz`` → ``cbt.log``)
_CAPTURE_AUX_PLAIN = {n.removesuffix(".gz") for n in CAPTURE_AUX}
SKIP_DIRS = {"_inprogress", ".git", "__pycache__", ".ipynb_checkpoints", ".venv"}
#: raw data kept and checksummed (in the manifest) but not ingested: ``_superseded`` holds the finished runs
#: of a capture block that a sitting's end split, run again whole (``capture.ceph.campaign.SUPERSEDED``)
NOT_INGESTED = {"_superseded"}


#: suffixes of a file compressed by name (``gzip -r`` on an archive): its context role is its plain name's
COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2")


def plain_name(name: str) -> str:
    """``benchmark_config.yaml.gz`` → ``benchmark_config.yaml``: the name a compressed file had."""
    for suf in COMPRESSED_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


CBT_SETTINGS = "ceph_settings.out"


def context_kind(p: Path, rel: str) -> str | None:
    """The ``kind`` of a file (``rel``: its path below the tree's root) that is context by its name (run metadata, the manifest, the capture's and
    CBT's side files, notes), else None: a file to read as benchmark output."""
    name = plain_name(p.name)
    if p.name in CONTEXT_FILES or p.name == MANIFEST or name == "benchmark_config.yaml":
        return name
    if cbt_derived(p):
        return "cbt-derived"  # CBT's extract of output.N.<host> beside it: read, the run counts twice
    if p.name.startswith(CBT_SETTINGS) or name == "cbt_config.yaml":
        return "cbt-settings" if p.name.startswith(CBT_SETTINGS) else "cbt-config"
    if p.name in CAPTURE_AUX or name in _CAPTURE_AUX_PLAIN \
            or (p.name.startswith(CAPTURE_AUX_PREFIX) and p.suffix == ".json") \
            or (p.name.startswith("campaign-") and p.suffix == ".yaml"):  # a campaign file before its repeats were raised
        return "capture-aux"
    if CBT_AUX.match(p.name) or "collectl" in Path(rel).parts[:-1]:
        return "cbt-aux"
    if NOTES.match(p.name):
        return "notes"
    return None


def iter_files(root: Path, ingested: bool = True) -> Iterator[Path]:
    """Every file below ``root`` in walk order, less staging and hidden folders, and with ``ingested``
    less :data:`NOT_INGESTED` (the manifest lists those too)."""
    skip = SKIP_DIRS | NOT_INGESTED if ingested else SKIP_DIRS
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
    return refusal_stat(p, root)[0]


def refusal_stat(p: Path, root: Path) -> tuple[str | None, os.stat_result | None]:
    """:func:`refusal` and, for a file that is read, its stat (a symlink's target's)."""
    try:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            target = p.resolve()
            if root.resolve() not in target.parents:
                return f"a symlink to {target}, outside the tree {root}: expected a regular file in the tree", None
            st = os.stat(p)
    except OSError as e:
        return f"cannot stat: {e.strerror}", None
    if not stat.S_ISREG(st.st_mode):
        for test, what in _FILE_TYPES:
            if test(st.st_mode):
                return f"{what}, not a regular file: expected a benchmark output file", None
    return None, st

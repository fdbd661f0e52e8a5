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


#: folders below the tree's root the walk descends (the deepest shipped capture is 11; CBT's getput layout
#: the deepest there is): a folder below this many is not listed but yielded itself, a failed entry
#: (:func:`refusal_stat`), as is a folder that cannot be listed — never a RecursionError, never skipped silently
MAX_DEPTH = 128


def iter_files(root: Path, ingested: bool = True) -> Iterator[Path]:
    """Every file below ``root`` in walk order (os.walk's, top-down, names sorted), less staging and hidden
    folders, and with ``ingested`` less :data:`NOT_INGESTED` (the manifest lists those too).  Iterative, to
    :data:`MAX_DEPTH` folders: a folder deeper than that, or one that cannot be listed, is yielded itself
    (the walk's refusal names why).  A symlink to a folder is not followed (as os.walk)."""
    skip = SKIP_DIRS | NOT_INGESTED if ingested else SKIP_DIRS
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        d, depth = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            if depth:  # the root itself is the caller's to check
                yield d
            continue
        dirs, files = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()  # as os.walk: a symlink to a folder is listed as one, not descended
            except OSError:
                is_dir = False
            if is_dir:
                if e.name not in skip and not e.name.startswith("."):
                    dirs.append(e)
            elif not e.name.startswith("."):
                files.append(e.name)
        for fn in sorted(files):
            yield d / fn
        for e in sorted(dirs, key=lambda e: e.name, reverse=True):
            if e.is_symlink():
                continue
            sub = d / e.name
            if depth + 1 > MAX_DEPTH or _too_long(sub):
                yield sub
            else:
                stack.append((sub, depth + 1))


FILE_TYPES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
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
    if stat.S_ISDIR(st.st_mode):  # the walk yields a folder only when it could not or would not list it
        return _folder_refusal(p, root), None
    if not stat.S_ISREG(st.st_mode):
        for test, what in FILE_TYPES:
            if test(st.st_mode):
                return f"{what}, not a regular file: expected a benchmark output file", None
    return None, st


#: the longest path the system opens, and the longest name in a folder (Linux: 4096, 255 bytes)
PATH_MAX, NAME_MAX = 4096, 255


def _too_long(d: Path) -> bool:
    """Whether a file in folder ``d`` could have a path longer than :data:`PATH_MAX` (not descended)."""
    return len(os.fsencode(d)) + 1 + NAME_MAX >= PATH_MAX


def _folder_refusal(p: Path, root: Path) -> str:
    """Why the walk yielded the folder ``p`` instead of its files: deeper than :data:`MAX_DEPTH`, or it cannot
    be listed."""
    try:
        depth = len(p.relative_to(root).parts)
    except ValueError:
        depth = 0
    if depth > MAX_DEPTH:
        return (f"a folder {depth} levels below the tree: not read (expected at most {MAX_DEPTH} levels of "
                "folders)")
    if _too_long(p):
        return (f"a folder whose files' paths could exceed {PATH_MAX} bytes: not read (expected paths the "
                "system can open)")
    try:
        with os.scandir(p):
            pass
    except OSError as e:
        return f"a folder that cannot be listed: {e.strerror}: not read"
    return "a directory, not a regular file: expected a benchmark output file"


# --- names: how a path below the tree becomes text in the tables and in messages ---------------------

#: characters shown escaped in messages and table paths: C0/C1 controls and DEL (a newline or a terminal
#: escape sequence in a file name), and the bidirectional overrides that reorder what a terminal shows
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: "re.Match[str]") -> str:
    c = m.group()
    o = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if o < 0x80:
        return f"\\x{o:02x}"
    if 0xDC80 <= o <= 0xDCFF:  # a byte that is not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    return f"\\u{o:04x}"


def shown(text: str) -> str:
    """``text`` safe to print on one line: control characters as ``\\n``, ``\\x1b`` …, bytes of a name that
    are not UTF-8 as ``\\xff``, bidirectional overrides as ``\\u202e``; everything else as it is (printable
    text is unchanged)."""
    return _UNSAFE.sub(_escape_char, text) if _UNSAFE.search(text) else text


def table_path(rel: str) -> str:
    """The text of a path below the tree (``rel``, as ``os.fsdecode`` gives it) in the tables' ``path`` and
    ``source`` columns: the name itself, except that a backslash is written ``\\\\`` and what
    :func:`shown` escapes is escaped — unique per file and valid UTF-8 whatever bytes the name holds, safe
    to print, and reversible (:func:`fs_path`).  An ordinary name is unchanged."""
    if "\\" not in rel and not _UNSAFE.search(rel):
        return rel
    return shown(rel.replace("\\", "\\\\"))


_UNESCAPE = re.compile(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|(.))", re.S)


def fs_path(name: str) -> str:
    """The path below the tree (``os.fsdecode`` form: ``os.fsencode`` gives its bytes) that
    :func:`table_path` wrote as ``name``."""
    if "\\" not in name:
        return name

    def one(m: "re.Match[str]") -> str:
        if m.group(1):
            o = int(m.group(1), 16)
            return chr(o) if o < 0x80 else chr(0xDC00 + o)
        if m.group(2):
            return chr(int(m.group(2), 16))
        return {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(3), m.group(3))
    return _UNESCAPE.sub(one, name)

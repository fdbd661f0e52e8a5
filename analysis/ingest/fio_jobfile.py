"""fio job files (``.fio``, ini): ``[section]`` headers, ``key=value`` or bare ``key`` lines, ``;``/``#`` comments.

fio's own rules (init.c ``__parse_jobs_ini``, parse.c ``strip_blank_end``, HOWTO "Job file format"; unchanged
from fio 2.x to 3.x): a line's text from its first ``;`` or ``#`` on is a comment; a section whose name
starts with ``global`` sets defaults for the jobs *after* it, and a later ``[global]`` adds to (and
overrides) them for the jobs after that one; any other section is a job; an option outside a section is an
error; ``include <file>`` reads another file's options into the section.  A job starts a new reporting group
(``groupid``) when it has ``stonewall`` (``wait_for_previous``) or ``new_group`` and the current group has a
job already (init.c ``add_job``).

No summary rows: the file describes runs, it measures none.  ``meta``: ``sections`` (in file order),
``global_options`` (every ``[global]`` section merged in order), ``job_options`` (each job's own lines),
``effective_options`` (what each job runs with: the globals above it, then its own), ``jobs`` (repeated
names become ``name#0``, ``name#1`` … as in :mod:`.fio`), ``groups`` and ``workload``
(:func:`.fio_workload.workload` of the effective options).  Values are kept as written: fio expands
``$ncpus``, ``$pagesize``, ``$mb_memory``, ``${VAR}`` and ``$(…)`` arithmetic on the machine that runs the
job, so a workload key whose option needs them is left out (not replaced by fio's default) and listed in
``meta["unresolved"]``; ``include`` files are listed, not read; options given on fio's command line are not
in the file.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from .base import IngestError, Parsed, check_line_lengths, summary_frame
from .fio import unique_names
from .fio_workload import workload

KIND = "fio-jobfile"
#: option names only fio job files use (fio HOWTO): two of them, or one of :data:`_CORE`, make a job file
_FIO_OPTIONS = frozenset("""
rw readwrite ioengine bs blocksize bsrange blocksize_range bssplit iodepth iodepth_batch numjobs rwmixread
rwmixwrite time_based runtime ramp_time filename directory filesize nrfiles io_size size direct buffered
group_reporting stonewall new_group wait_for_previous fsync fdatasync end_fsync randrepeat norandommap
rate rate_iops thinktime verify do_verify zero_buffers refill_buffers invalidate fadvise_hint
write_bw_log write_lat_log write_iops_log write_hist_log log_avg_msec lockmem iodepth_low startdelay
cpus_allowed unified_rw_reporting percentile_list clat_percentiles lat_percentiles exec_prerun exec_postrun
create_on_open overwrite file_service_type random_distribution offset offset_increment loops
""".split())
_CORE = frozenset("rw readwrite ioengine bs blocksize iodepth numjobs rwmixread".split())
_SECTION = re.compile(r"^\[(?P<name>[^\]\n]+)\]$")
_OPTION = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(?P<value>.*))?$")
_INCLUDE = re.compile(r"^include\s+(?P<file>\S.*)$")
#: a value fio expands when it runs the job (HOWTO "Environment variables", "Reserved keywords")
_EXPANDS = re.compile(r"\$(?:ncpus|pagesize|mb_memory|\{|\(|[A-Za-z_])")
#: workload keys (fio_workload) and the options they come from
_KEY_OPTIONS = {"rw": ("rw", "readwrite"), "rwmixread": ("rwmixread", "rwmixwrite"), "bs": ("bs", "blocksize"),
                "bs_B": ("bs", "blocksize"), "bs_read_B": ("bs", "blocksize"), "bs_write_B": ("bs", "blocksize"),
                "iodepth": ("iodepth",), "numjobs": ("numjobs",), "ioengine": ("ioengine",),
                "direct": ("direct", "buffered"), "size_B": ("size",), "runtime_s": ("runtime", "timeout"),
                "time_based": ("time_based",), "ramp_time_s": ("ramp_time",), "target": ("filename", "directory")}


def _clean(line: str) -> str:
    """A line as fio reads it: the text before its first ``;`` or ``#``, without surrounding blanks."""
    cut = min((i for i in (line.find(";"), line.find("#")) if i >= 0), default=len(line))
    return line[:cut].strip()


def sniff(head: bytes) -> bool:
    """A fio job file: every line a comment, ``[section]``, ``key[=value]`` (fio's names have no blanks) or
    ``include``; a section first; and fio's own option names (one of rw/readwrite/ioengine/bs/blocksize/
    iodepth/numjobs/rwmixread, or two others of fio's).  A ``ceph.conf`` (``[global]`` too) has keys with
    blanks or none of fio's."""
    if b"[" not in head or b"=" not in head or b"\x00" in head:
        return False
    text = head.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if len(head) >= 64 * 1024:
        lines = lines[:-1]  # the head may end inside a line
    seen_section, keys = False, set()
    for raw in lines:
        line = _clean(raw)
        if not line:
            continue
        if _SECTION.match(line):
            seen_section = True
            continue
        if not seen_section:
            return False
        m = _OPTION.match(line)
        if m is None:
            if _INCLUDE.match(line):
                continue
            return False
        keys.add(m["key"])
    fio = keys & _FIO_OPTIONS
    return seen_section and (bool(fio & _CORE) or len(fio) >= 2)


def _flag(v: str | None) -> bool:
    return v is None or v.strip() not in ("0", "false")


def parse(path: str | Path, data: bytes) -> Parsed:
    """A fio job file: its sections and options in ``meta`` (module docstring); no rows."""
    path = Path(path)
    if b"\x00" in data:
        raise IngestError(path, "expected a fio job file (text), found a NUL byte",
                          line=data.count(b"\n", 0, data.index(b"\x00")) + 1)
    check_line_lengths(path, data, "fio job file")
    sections: list[dict[str, Any]] = []
    includes: list[str] = []
    duplicates: list[str] = []
    for ln, raw in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        line = _clean(raw)
        if not line:
            continue
        if line.startswith("["):
            m = _SECTION.match(line)
            if m is None:
                raise IngestError(path, f"expected a section header '[name]', found {line[:60]!r}", line=ln)
            name = m["name"].strip()
            sections.append({"name": name, "global": name.startswith("global"), "line": ln, "options": {}})
            continue
        if not sections:
            raise IngestError(path, f"expected a '[section]' before options (fio: option outside of [] job "
                                    f"section), found {line[:60]!r}", line=ln)
        if (inc := _INCLUDE.match(line)) is not None and "=" not in line:
            includes.append(inc["file"].strip())
            continue
        m = _OPTION.match(line)
        if m is None:
            raise IngestError(path, f"expected 'option=value', a bare 'option', a '[section]' or a comment, "
                                    f"found {line[:60]!r}", line=ln)
        opts = sections[-1]["options"]
        key, value = m["key"], ("" if m["value"] is None else m["value"].strip())
        if key in opts:
            duplicates.append(f"{ln}: {key}")
        opts[key] = value
    return _result(path, sections, includes, duplicates)


_TAKES_GROUPS = "groups" in inspect.signature(workload).parameters


def _result(path: Path, sections: list[dict[str, Any]], includes: list[str], duplicates: list[str]) -> Parsed:
    global_now: dict[str, str] = {}
    jobs, own, effective, groups = [], [], [], []
    groupid, in_group = 0, 0
    for s in sections:
        if s["global"]:
            global_now = {**global_now, **s["options"]}
            continue
        eff = {**global_now, **s["options"]}
        if (_flag(eff.get("stonewall")) if "stonewall" in eff else False) or \
                (_flag(eff.get("wait_for_previous")) if "wait_for_previous" in eff else False) or \
                (_flag(eff.get("new_group")) if "new_group" in eff else False):
            if in_group:
                groupid, in_group = groupid + 1, 0
        in_group += 1
        jobs.append(s["name"])
        own.append(dict(s["options"]))
        effective.append(eff)
        groups.append(groupid)
    names = unique_names(jobs)
    eff_by = dict(zip(names, effective))
    group_by = dict(zip(names, groups))
    unresolved = {n: {k: v for k, v in o.items() if _EXPANDS.search(v)} for n, o in eff_by.items()}
    unresolved = {n: u for n, u in unresolved.items() if u}
    wl = (workload({}, eff_by, names, None, groups=group_by) if _TAKES_GROUPS
          else workload({}, eff_by, names, None)) if names else {}
    meta: dict[str, Any] = {
        "tool": "fio", "tool_version": None, "format": "jobfile",
        "sections": [{k: v for k, v in s.items()} for s in sections],
        "global_options": global_now,
        "job_options": dict(zip(names, own)),
        "effective_options": eff_by,
        "jobs": names,
        "groups": group_by,
        "workload": _drop_unresolved(wl, unresolved),
        "unresolved": unresolved,
        "includes": includes,
        "duplicate_options": duplicates,
    }
    if not names:
        meta["note"] = "no job section: fio would run nothing from this file alone"
    return Parsed(path=str(path), kind=KIND, meta=meta, summary=summary_frame(str(path), []))


def _drop_unresolved(wl: dict[str, Any], unresolved: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The workload without the keys whose options fio expands at run time (``numjobs=$ncpus*2``): neither
    the value written nor fio's default is what ran."""
    if not wl or not unresolved:
        return wl
    gone = {n: {k for k, opts in _KEY_OPTIONS.items() if any(o in u for o in opts)} for n, u in unresolved.items()}
    every = set.union(*gone.values())
    out = {**wl, "keys": {k: v for k, v in (wl.get("keys") or {}).items() if k not in every}}
    out["defaults"] = [k for k in wl.get("defaults", []) if k not in every]
    if wl.get("by_job"):
        out["by_job"] = {j: {k: v for k, v in keys.items() if k not in gone.get(j, set())}
                         for j, keys in wl["by_job"].items()}
    out["unresolved_keys"] = sorted(every)
    return out

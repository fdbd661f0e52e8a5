"""The workload a fio JSON output records: its ``global options`` and each job's ``job options`` (fio ≥ 2.2;
fio 2.1 records none) as typed run keys.

Keys (units in the name): ``rw``, ``rwmixread`` (% reads, mixed modes only), ``bs`` (as written, e.g.
``4k`` or ``4k,64k``), ``bs_B`` (one block size for every direction, bytes), ``bs_read_B``/``bs_write_B``
(when fio was given per-direction sizes), ``bsrange``/``bssplit`` (as written; ``blocksize_range`` is
``bsrange``; a job given either ran many sizes, so it has no ``bs_B``, neither its ``bs`` nor fio's default
4096, and the option stays in ``fio_options``, which cells are matched on), ``iodepth``, ``numjobs``,
``ioengine``, ``direct`` (0/1; ``buffered=0`` is ``direct=1``), ``size_B`` (bytes; absent for ``size=50%``),
``runtime_s``, ``time_based`` (0/1; absent where fio < 3.39 cannot record it: :data:`BARE_FLAGS_FROM`),
``target`` (``filename``, else ``directory``, else the rbd engine's
``pool/rbdname``) and ``fio_version``.  A job's options override the global ones.  Where fio recorded options,
an option left out is fio's documented default (``rw=read``, ``bs=4096``, ``iodepth=1``, ``numjobs=1``, ``direct=0``,
``time_based=0`` where the JSON could have recorded it, ``rwmixread=50`` for mixed modes): what the job ran,
listed in ``defaults``.  Sizes as fio
reads them: ``k``/``m``/``g``/``t`` are powers of 1024 unless ``kb_base=1000`` (then ``ki``/``mi`` … are).

Every other option that changes what runs (``ramp_time``, ``rate``, ``thinktime``, ``fsync``, ``verify``,
``nrfiles`` …) is kept in one key, ``fio_options`` (``name=value`` pairs in name order), so two runs share a
cell only when fio ran the same workload; options that name or report a run but do not change its IO
(:data:`NOT_WORKLOAD`: the job name, log and reporting options, group boundaries) are left out of it.
``ramp_time_s`` is typed too.  ``fio_group``: a job's reporting group (``groupid``) when the file holds
more than one — jobs of different groups ran one after another (``stonewall``, ``new_group``) and are
different runs; a job with ``wait_for`` ran after another job of its group and gets a group of its own
(``<groupid>.<job>``).
"""

from __future__ import annotations

import re
from typing import Any

#: fio's defaults (fio HOWTO, 3.x; unchanged since 2.x) for options a job file may leave out
DEFAULTS = {"rw": "read", "bs_B": 4096, "iodepth": 1, "numjobs": 1, "direct": 0, "time_based": 0}
MIXED = ("rw", "readwrite", "randrw", "trimwrite", "randtrimwrite")
#: the keys this module can give, in the order the tables show them
KEYS = ("rw", "rwmixread", "bs", "bsrange", "bssplit", "bs_B", "bs_read_B", "bs_write_B", "iodepth", "numjobs",
        "ioengine", "direct", "size_B", "runtime_s", "time_based", "ramp_time_s", "fio_options", "target",
        "fio_version", "fio_group")
#: options that name, place, log or report a job, or mark its group, without changing the IO it does: not
#: part of ``fio_options`` (fio HOWTO: job description, log and output options, reporting groups)
NOT_WORKLOAD = frozenset("""
name description filename directory filename_format unique_filename opendir pool rbdname clientname clustername conf
write_bw_log write_lat_log write_iops_log write_hist_log log_avg_msec log_hist_msec log_hist_coarseness
log_max_value log_offset log_compression log_compression_cpus log_store_compressed log_unix_epoch
log_alternate_epoch log_alternate_epoch_clock_id log_prio log_issue_time per_job_logs bwavgtime iopsavgtime
group_reporting stonewall wait_for_previous new_group wait_for stats percentile_list clat_percentiles
lat_percentiles slat_percentiles significant_figures unified_rw_reporting kb_base unit_base disable_lat
disable_clat disable_slat disable_bw_measurement gtod_reduce gtod_cpu clocksource output output-format eta
eta-newline eta-interval status-interval minimal terse-version exitall exitall_on_error exit_what startdelay
thread write_iolog read_iolog_chunked replay_no_stall
""".split())
#: options given typed keys of their own (not repeated in ``fio_options``)
_TYPED = frozenset("rw readwrite rwmixread rwmixwrite bs blocksize iodepth numjobs ioengine direct buffered size "
                   "runtime timeout time_based ramp_time".split())
#: the options that give a job many block sizes (fio HOWTO: bsrange/blocksize_range, bssplit), and their keys
RANGE_OPTIONS = {"bsrange": "bsrange", "blocksize_range": "bsrange", "bssplit": "bssplit"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)b?\s*$", re.I)
_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|usec|ms|msec|s|sec|m|min|h|d)?\s*$", re.I)
_TIME_UNIT = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0,
              "h": 3600.0, "d": 86400.0}


def size_bytes(text: Any, kb_base: int = 1024) -> int | None:
    """fio's size grammar (``4k``, ``1M``, ``50000Mi``, ``4096``) in bytes; None for what is not a size
    (``50%``, a range)."""
    m = _SIZE.match(str(text))
    if not m:
        return None
    num, unit, i = float(m.group(1)), m.group(2).lower(), m.group(3)
    base = 1024 if (kb_base != 1000 or i) else 1000
    return int(round(num * base ** " kmgtp".index(unit or " ")))


def seconds(text: Any) -> float | None:
    """fio's time grammar (``60``, ``60s``, ``2m``, ``500ms``; plain numbers are seconds) in s."""
    m = _TIME.match(str(text))
    if not m:
        return None
    return float(m.group(1)) * _TIME_UNIT[(m.group(2) or "s").lower()]


def _flag(v: Any) -> int:
    """A fio bool option as recorded: ``""`` (given bare), ``"1"``, ``"0"``."""
    return 0 if str(v).strip() in ("0", "false") else 1


#: fio before 3.39 leaves an option given without a value (``time_based``, ``norandommap`` …, fio's
#: FIO_OPT_STR_SET) out of its JSON ``job options`` (its JSON writer refused empty strings until fio commit
#: 4a1f2a5b, "json: allow empty string values", first in fio-3.39).  Measured here: fio 3.33 run with
#: ``--time_based`` (or ``time_based`` in a job file) ran 2,001 ms of ``runtime=2`` on a 1 MiB file, and its
#: JSON has no ``time_based``; with ``--time_based=1`` it has ``"time_based": "1"``; fio 3.39 writes ``""``.
BARE_FLAGS_FROM = (3, 39)
_VERSION = re.compile(r"fio-(\d+)\.(\d+)")


def records_bare_flags(version: Any) -> bool:
    """Whether a fio JSON of ``version`` (``fio-3.33``) lists options given without a value (False for a
    version string that is not fio's); True for None (a job file, which holds them as written)."""
    if version is None:
        return True
    m = _VERSION.match(str(version))
    return m is not None and (int(m[1]), int(m[2])) >= BARE_FLAGS_FROM


def time_based_from_io(keys: dict[str, Any], ran: dict[str, Any] | None) -> str:
    """What a job's IO says of a ``time_based`` its JSON cannot record (:data:`BARE_FLAGS_FROM`), from
    ``ran`` (``io_bytes`` over its directions, ``runtime_s`` the longest, ``error``): time-based when it
    moved more bytes than ``size`` × ``numjobs`` × ``loops`` (only a time-based job wraps around), not when it
    ended, without an error, before 90 % of its ``runtime`` (a time-based job runs all of it); else nothing.
    Said, not keyed: repeats of one workload would get different keys as their IO crosses ``size``."""
    ran = ran or {}
    io, rt = ran.get("io_bytes"), ran.get("runtime_s")
    size, runtime = keys.get("size_B"), keys.get("runtime_s")
    reps = (keys.get("numjobs") or 1) * max(1, keys.get("_loops") or 1)
    if io and size and io > size * reps:
        return f"its IO says time-based: it moved {io:.0f} B, more than size {size} B × {reps}"
    if rt and runtime and not ran.get("error") and rt < 0.9 * runtime:
        return f"its IO says not time-based: it ended at {rt:g} s of runtime {runtime:g} s without an error"
    return "its IO cannot tell: it ran its runtime within its size, as a time-based job and one limited by it both do"


def argv_time_based(argv: Any) -> int | None:
    """``time_based`` (0/1) of a fio command line (``["fio", "--name=x", "--time_based", …]``, as the
    capture's run.json ``fio_argv`` records it): 1 for ``--time_based`` (bare or ``=1``), 0 for ``=0``; 0
    when the line names no job file and does not give it (fio's default); None when a job file may hold it
    or ``argv`` is not a list of strings."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    for a in argv[1:]:
        if a == "--time_based" or a.startswith("--time_based="):
            return _flag(a.partition("=")[2]) if "=" in a else 1
    return None if any(not a.startswith("-") for a in argv[1:]) else 0


def job_workload(opts: dict[str, Any], version: Any = None,
                 ran: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """One job's keys from its merged options (global, then the job's own); also the keys that took fio's
    default.  Where the JSON cannot record a bare ``time_based`` it has no such key, and ``time_based_from``
    says so with what the job's IO (``ran``: :func:`time_based_from_io`) says of it."""
    kb = 1000 if str(opts.get("kb_base", "")).strip() == "1000" else 1024
    out: dict[str, Any] = {}
    defaults: list[str] = []
    rw = opts.get("rw", opts.get("readwrite"))
    out["rw"] = str(rw).split(":")[0] if rw is not None else None
    if "rwmixread" in opts or "rwmixwrite" in opts:
        v = opts.get("rwmixread")
        out["rwmixread"] = int(v) if v is not None and str(v).isdigit() else \
            100 - int(opts["rwmixwrite"]) if str(opts.get("rwmixwrite", "")).isdigit() else None
    ranged = {RANGE_OPTIONS[k]: str(v) for k, v in opts.items() if k in RANGE_OPTIONS and v is not None}
    out.update(ranged)  # many sizes: no one block size, whatever bs says (fio uses the range or split)
    bs = opts.get("bs", opts.get("blocksize"))
    if bs is not None:
        out["bs"] = str(bs)
        parts = [size_bytes(p, kb) if p.strip() else 4096 for p in str(bs).split(",")]
        if not ranged and (len(parts) == 1 or len(set(parts[:2])) == 1):
            out["bs_B"] = parts[0]
        elif not ranged:
            out["bs_read_B"], out["bs_write_B"] = parts[0], parts[1]
    for k in ("iodepth", "numjobs"):
        v = opts.get(k)
        out[k] = int(v) if v is not None and str(v).strip().isdigit() else None
    out["ioengine"] = opts.get("ioengine")
    if "direct" in opts:
        out["direct"] = _flag(opts["direct"])
    elif "buffered" in opts:
        out["direct"] = 1 - _flag(opts["buffered"])
    if opts.get("size") is not None:
        out["size_B"] = size_bytes(opts["size"], kb)
    runtime = opts.get("runtime", opts.get("timeout"))
    if runtime is not None:
        out["runtime_s"] = seconds(runtime)
    if opts.get("ramp_time") is not None:
        out["ramp_time_s"] = seconds(opts["ramp_time"])
    rest = sorted((str(k), "" if v is None else str(v)) for k, v in opts.items()
                  if k not in NOT_WORKLOAD and k not in _TYPED)
    if rest:
        out["fio_options"] = " ".join(f"{k}={v}" if v != "" else k for k, v in rest)
    out["time_based"] = _flag(opts["time_based"]) if "time_based" in opts else None
    unrecorded = "time_based" not in opts and not records_bare_flags(version)
    if unrecorded:
        loops = opts.get("loops")
        out["_loops"] = int(loops) if loops is not None and str(loops).strip().isdigit() else 1
        out["time_based_from"] = f"not recorded ({version} leaves a bare time_based out of its JSON); " \
                                 + time_based_from_io(out, ran)
        del out["_loops"]
    tgt = opts.get("filename") or opts.get("directory")
    if tgt is None and opts.get("rbdname"):
        tgt = f"{opts.get('pool', '')}/{opts['rbdname']}"
    out["target"] = tgt
    if version:
        out["fio_version"] = str(version)
    for k, v in DEFAULTS.items():
        if k == "time_based" and unrecorded:
            continue  # not recorded: not known (never fio's default assumed); what the IO says is said
        if out.get(k) is None and not (k == "bs_B" and ("bs_read_B" in out or ranged)):
            out[k] = v
            defaults.append(k)
    if out["rw"] in MIXED and out.get("rwmixread") is None:
        out["rwmixread"] = 50
        defaults.append("rwmixread")
    return {k: v for k, v in out.items() if v is not None}, defaults


def workload(global_options: dict[str, Any] | None, job_options: dict[str, dict[str, Any]], jobs: list[str],
             version: Any = None, groups: dict[str, int] | None = None,
             ran: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The file's workload: ``{"keys": …, "by_job": …, "defaults": …}``.  ``keys`` holds what every job
    agrees on; ``by_job`` maps each job to the keys its jobs disagree on (absent when they agree: one job,
    or ``numjobs`` copies).  ``{}`` when fio recorded no options (fio 2.1): nothing is known, nothing is
    assumed.  fio ``--client``'s ``All clients`` entry repeats its hosts and is left out.  ``groups``: each
    job's ``groupid`` (fio JSON); with more than one, or a job that waited for another (``wait_for``), each
    job's ``fio_group`` (module docstring) — known even where fio recorded no options.  ``ran``: each job's
    IO (:func:`job_workload`); ``time_based_from`` (per job) says that fio did not record ``time_based``
    (then there is no such key) and what the job's IO says of it."""
    jobs = [j for j in jobs if j != "All clients" and not j.startswith("All clients@")]
    group = job_groups(jobs, groups or {}, job_options, global_options)
    if not global_options and not any(job_options.get(j) for j in jobs):
        return {"keys": {}, "defaults": [], "by_job": {j: {"fio_group": g} for j, g in group.items()}} if group else {}
    per: dict[str, dict[str, Any]] = {}
    defaults: set[str] = set()
    how: dict[str, str] = {}
    for j in jobs or [""]:
        keys, d = job_workload({**(global_options or {}), **(job_options.get(j) or {})}, version,
                               (ran or {}).get(j))
        if "time_based_from" in keys:
            how[j] = keys.pop("time_based_from")
        if j in group:
            keys["fio_group"] = group[j]
        per[j] = keys
        defaults.update(d)
    names = [k for k in KEYS if any(k in v for v in per.values())]
    common = {k: next(iter(per.values())).get(k) for k in names
              if len({repr(v.get(k)) for v in per.values()}) == 1}
    out: dict[str, Any] = {"keys": {k: v for k, v in common.items() if v is not None}, "defaults": sorted(defaults)}
    differ = [k for k in names if k not in common]
    if differ:
        out["by_job"] = {j: {k: per[j].get(k) for k in differ} for j in per}
    if how:
        out["time_based_from"] = how
        out["unrecorded"] = (f"{version} lists no option given without a value (time_based, norandommap …): "
                             "time_based is not a key, and fio_options holds the options given with a value")
    return out


def job_groups(jobs: list[str], groups: dict[str, int], job_options: dict[str, dict[str, Any]],
               global_options: dict[str, Any] | None = None) -> dict[str, str]:
    """Each job's ``fio_group`` (text: ``"3"``, or ``"0.<job>"`` for a job that ``wait_for``-ed another of
    its group) when the jobs did not all run together; ``{}`` when they did (one group, no ``wait_for``)."""
    waits = {j for j in jobs if "wait_for" in {**(global_options or {}), **(job_options.get(j) or {})}}
    known = {j: groups[j] for j in jobs if j in groups}
    if len(set(known.values())) <= 1 and not waits:
        return {}
    return {j: f"{known.get(j, '')}.{j}" if j in waits else str(known[j]) for j in jobs if j in known or j in waits}


def for_job(wl: dict[str, Any], job: str | None) -> dict[str, Any]:
    """The keys of one job of a file's workload (a log belongs to one job): the common keys plus that
    job's own; the common keys alone when the job is not known."""
    keys = dict(wl.get("keys") or {})
    by_job = wl.get("by_job") or {}
    if job in by_job:
        keys.update({k: v for k, v in by_job[job].items() if v is not None})
    return keys

"""The workload a fio JSON output records: its ``global options`` and each job's ``job options`` (fio ≥ 2.2;
fio 2.1 records none) as typed run keys.

Keys (units in the name): ``rw``, ``rwmixread`` (% reads, mixed modes only), ``bs`` (as written, e.g.
``4k`` or ``4k,64k``), ``bs_B`` (one block size for every direction, bytes), ``bs_read_B``/``bs_write_B``
(when fio was given per-direction sizes), ``bsrange``/``bssplit`` (as written; ``blocksize_range`` is
``bsrange``; a job given either ran many sizes, so it has no ``bs_B``, neither its ``bs`` nor fio's default
4096, and the option stays in ``fio_options``, which cells are matched on), ``iodepth``, ``numjobs``,
``ioengine``, ``direct`` (0/1; ``buffered=0`` is ``direct=1``), ``size_B`` (bytes; absent for ``size=50%``),
``runtime_s``, ``time_based`` (0/1), ``target`` (``filename``, else ``directory``, else the rbd engine's
``pool/rbdname``) and ``fio_version``.  A job's options override the global ones.  Where fio recorded options,
an option left out is fio's documented default (``rw=read``, ``bs=4096``, ``iodepth=1``, ``numjobs=1``, ``direct=0``,
``time_based=0``, ``rwmixread=50`` for mixed modes): what the job ran, listed in ``defaults``.  Sizes as fio
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


def job_workload(opts: dict[str, Any], version: Any = None) -> tuple[dict[str, Any], list[str]]:
    """One job's keys from its merged options (global, then the job's own); also the keys that took fio's
    default."""
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
    tgt = opts.get("filename") or opts.get("directory")
    if tgt is None and opts.get("rbdname"):
        tgt = f"{opts.get('pool', '')}/{opts['rbdname']}"
    out["target"] = tgt
    if version:
        out["fio_version"] = str(version)
    for k, v in DEFAULTS.items():
        if out.get(k) is None and not (k == "bs_B" and ("bs_read_B" in out or ranged)):
            out[k] = v
            defaults.append(k)
    if out["rw"] in MIXED and out.get("rwmixread") is None:
        out["rwmixread"] = 50
        defaults.append("rwmixread")
    return {k: v for k, v in out.items() if v is not None}, defaults


def workload(global_options: dict[str, Any] | None, job_options: dict[str, dict[str, Any]], jobs: list[str],
             version: Any = None, groups: dict[str, int] | None = None) -> dict[str, Any]:
    """The file's workload: ``{"keys": …, "by_job": …, "defaults": …}``.  ``keys`` holds what every job
    agrees on; ``by_job`` maps each job to the keys its jobs disagree on (absent when they agree: one job,
    or ``numjobs`` copies).  ``{}`` when fio recorded no options (fio 2.1): nothing is known, nothing is
    assumed.  fio ``--client``'s ``All clients`` entry repeats its hosts and is left out.  ``groups``: each
    job's ``groupid`` (fio JSON); with more than one, or a job that waited for another (``wait_for``), each
    job's ``fio_group`` (module docstring) — known even where fio recorded no options."""
    jobs = [j for j in jobs if j != "All clients" and not j.startswith("All clients@")]
    group = job_groups(jobs, groups or {}, job_options, global_options)
    if not global_options and not any(job_options.get(j) for j in jobs):
        return {"keys": {}, "defaults": [], "by_job": {j: {"fio_group": g} for j, g in group.items()}} if group else {}
    per: dict[str, dict[str, Any]] = {}
    defaults: set[str] = set()
    for j in jobs or [""]:
        keys, d = job_workload({**(global_options or {}), **(job_options.get(j) or {})}, version)
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

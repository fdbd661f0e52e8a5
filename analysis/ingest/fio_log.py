"""fio per-IO and windowed logs (``write_{lat,bw,iops}_log``) and histogram logs (``write_hist_log``).

Log lines (fio HOWTO "Log File Formats"): ``time_ms, value, ddir, bs[, offset][, prio]``:
4 columns before fio 3.x added the priority column, 5 with it (or with ``log_offset`` on old fio),
6 with ``log_offset`` on current fio.  ``ddir`` 0/1/2 = read/write/trim.  ``bs`` is 0 when samples are
averaged over ``log_avg_msec`` windows, the IO size for per-IO logs.  Values: latencies in ns
(fio ≥ 3.0) or µs (fio 2.x), bandwidth in KiB/s, IOPS in 1/s.  With ``log_unix_epoch`` the time is
Unix epoch ms.

Histogram logs: ``time_ms, ddir, bs, bin_0 … bin_N-1`` with N = 1856 (fio 3.x, ns) or 1216
(fio 2.x, µs), divided by ``2**log_hist_coarseness``; each row holds the counts of that interval.

What a log *is* (lat, clat, slat, bw, iops) is not in its content: it comes from fio's own file naming
``<prefix>_<type>[.<job>].log`` and is recorded in ``meta["log_type_from"]``.  The latency unit comes
from a fio JSON in the same folder whose job options name this log's prefix (else any fio JSON there),
and ``meta["latency_unit_source"]`` says which; else ``ingest --fio-version``/``--log-units``, or a 6-column
log (only fio ≥ 3 writes one).  Where nothing says, the log fails with what would decide it: fio 2.x
writes µs and fio ≥ 3 ns, and the unit is never guessed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .fio_workload import for_job
from ._scan import first_line_fields, read_fio_log, read_int_table
from .compress import read_all, read_head
from .runfolder import RunFolder, folder_for
from .base import (IngestError, Parsed, cat, concat_tidy, series_frame,
                   series_metrics_frame, summary_frame, SERIES_COLUMNS)
from .fio_bins import coarse_bin_values, interval_percentiles, layout_for

KIND = "fio-log"
KINDS = ("fio-log", "fio-hist-log")
STREAMING = True  # parse() reads the file itself (memory-mapped)
RUN_FOLDER = True  # parse() and parse_stream() take the ingest's RunFolder (``folder=``): the companion JSON
#: logs at least this large on disk (compressed: an eighth of it) are read in blocks (parse_stream)
STREAM_MIN_BYTES = 256 << 20

DDIR_NAMES = np.array(["read", "write", "trim", "sync"], dtype=object)
LOG_NAME = re.compile(r"^(?P<prefix>.*?)_(?P<type>clat_hist|lat_hist|slat|clat|lat|bw|iops)"
                   r"(?:\.(?P<job>\d+))?(?:\.[A-Za-z0-9_-]+)*?(?:\.log)?(?:\.gz|\.xz|\.bz2)?$")
LOG_QS = np.array([50.0, 90.0, 95.0, 99.0, 99.9])
EPOCH_MS_MIN = 10**11  # a log time above this is Unix epoch ms (log_unix_epoch), not ms since start


def sniff(head: bytes) -> str | None:
    fields = first_line_fields(head)
    if fields is None:
        return None
    n = len(fields)
    if 4 <= n <= 6:
        return "fio-log"
    if n > 6 and layout_for(n - 3) is not None:
        return "fio-hist-log"
    return None


def _log_name(path: Path) -> dict[str, Any]:
    m = LOG_NAME.match(path.name)
    if not m:
        return {"prefix": None, "type": None, "job_index": None}
    return {"prefix": m["prefix"], "type": m["type"],
            "job_index": int(m["job"]) if m["job"] else None}


def _companion(path: Path, prefix: str | None, folder: RunFolder | None) -> tuple[Parsed | None, str]:
    """A fio JSON output in the same folder: the one whose job options name ``prefix``, else the only one.
    ``folder``: the ingest's :class:`RunFolder` of this log's directory (its JSONs parsed once), or None."""
    docs = folder_for(path, folder).companions(path)
    if docs is None:
        return None, "no folder listing"
    matches: list[Parsed] = []
    parsed = docs
    for doc in docs:
        opts = [doc.meta.get("global_options") or {}] + list(doc.meta.get("job_options", {}).values())
        logs = [str(o.get(k)) for o in opts for k in
                ("write_lat_log", "write_bw_log", "write_iops_log", "write_hist_log") if o.get(k)]
        # the option as given (``fio``) or a path to the log's folder (fio-plot's bench_fio: ``out/4k/randread-…``)
        names = set(logs) | {x.rsplit("/", 1)[-1] for x in logs}
        if prefix is not None and prefix in names:
            matches.append(doc)
    if len(matches) == 1:
        return matches[0], f"{Path(matches[0].path).name} (job options name log prefix {prefix!r})"
    if len(parsed) == 1:
        return parsed[0], f"{Path(parsed[0].path).name} (only fio JSON in the folder)"
    return None, f"{len(parsed)} fio JSON files in the folder, none matched prefix {prefix!r}"


def _job_workload(companion: Parsed | None, job: str) -> dict[str, Any]:
    """The run keys of the workload the companion fio JSON recorded for this log's job (a log is one job's);
    ``{}`` without a companion: nothing is guessed from the log's name."""
    wl = companion.meta.get("workload") if companion is not None else None
    out: dict[str, Any] = {"keys": for_job(wl, job)} if wl else {}
    if companion is not None:
        out["companion_path"] = companion.path  # the run this log belongs to: the fio invocation that wrote it
    return out


def _job_key(name: dict[str, Any], companion: Parsed | None) -> str:
    """The fio job name from the companion JSON when the log's job number maps to one entry,
    else ``<prefix>.<N>`` from the file name."""
    jobs = list(companion.meta.get("jobs", [])) if companion is not None else []
    idx = name["job_index"]
    if len(jobs) == 1:
        return jobs[0]
    if idx is not None and 1 <= idx <= len(jobs):
        return jobs[idx - 1]
    base = name["prefix"] or ""
    return f"{base}.{idx}" if idx is not None else base


#: what decides a latency log's unit where nothing in the data does: ``us`` or ``ns`` (``ingest --log-units``),
#: or the fio version that wrote the logs (``ingest --fio-version``); set in the environment so that every
#: reading process (the ingest's workers, Dask's) sees the same
LOG_UNITS_ENV, FIO_VERSION_ENV = "CEPHQOS_LOG_UNITS", "CEPHQOS_FIO_VERSION"


def _unit_of_version(v: str) -> float | None:
    """ns per logged latency unit for fio version text (``fio-2.18``, ``3.33``): fio 2.x logs µs, ≥ 3 ns."""
    m = re.match(r"^(?:fio-)?(\d+)\.", v.strip())
    if not m:
        return None
    return 1000.0 if int(m.group(1)) <= 2 else 1.0


def _latency_scale(companion: Parsed | None, how: str, ncol: int = 4) -> tuple[float | None, str, bool]:
    """ns per logged latency unit and the evidence: ``--log-units``; the fio version of the companion
    output (its JSON beside the log) or of ``--fio-version``; a 6-column log (offset and priority: fio ≥ 3
    only).  (None, why, True) when nothing says: fio 2.x logs µs and fio ≥ 3 ns, 1000× apart, so it is
    never guessed."""
    forced = os.environ.get(LOG_UNITS_ENV, "").strip().lower()
    if forced in ("us", "µs", "usec"):
        return 1000.0, "µs: --log-units us", False
    if forced in ("ns", "nsec"):
        return 1.0, "ns: --log-units ns", False
    v = str(companion.meta.get("tool_version") or "") if companion is not None else ""
    if v and _unit_of_version(v) is not None:
        scale = _unit_of_version(v)
        return scale, f"{'µs' if scale == 1000.0 else 'ns'}: {v} per {how}", False
    given = os.environ.get(FIO_VERSION_ENV, "").strip()
    if given and _unit_of_version(given) is not None:
        scale = _unit_of_version(given)
        return scale, f"{'µs' if scale == 1000.0 else 'ns'}: fio {given} per --fio-version", False
    if ncol == 6:
        return 1.0, "ns: a 6-column log (offset, priority), which only fio ≥ 3 writes", False
    return None, (f"unknown: {how}; fio 2.x logs µs, fio ≥ 3 ns, and a {ncol}-column log is written by both"), True


def _time_base(t_ms: np.ndarray, meta: dict[str, Any], inplace: bool = False) -> np.ndarray:
    """Log times (ms) → seconds since the start; ``inplace`` reuses ``t_ms`` (a float64 array)."""
    out = t_ms if inplace else np.asarray(t_ms, dtype=np.float64).copy()
    if len(t_ms) and t_ms.min() > EPOCH_MS_MIN:
        t0 = int(t_ms.min())
        meta["time_base"] = "unix epoch ms (log_unix_epoch); t_s counts from the first sample"
        meta["t0_unix_ms"] = t0
        out -= t0
    else:
        meta["time_base"] = "ms since job start"
    out /= 1000.0
    return out


def _ddir_labels(path: Path, codes: np.ndarray,
                 counts: np.ndarray | None = None) -> tuple[pd.Categorical, np.ndarray]:
    """Data directions as a categorical built from the codes (no per-row strings), and the codes present.

    Codes 0-3 are fio's read/write/trim/sync; anything else is an error naming the first bad line.
    ``counts`` (rows per code, from the scanner, which has checked the range) saves a pass.
    """
    if counts is None:
        bad = (codes < 0) | (codes > 3)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise IngestError(path, f"data direction must be 0-3 (read/write/trim/sync), got {codes[row]}",
                              line=row + 1)
        counts = np.bincount(codes, minlength=4)
    present = np.flatnonzero(counts)
    cats = DDIR_NAMES[present].tolist()
    if np.array_equal(present, np.arange(len(present))):  # codes are already 0..k-1: no remap pass
        return cat(codes, cats), present
    remap = np.full(4, -1, dtype=np.int8)
    remap[present] = np.arange(len(present), dtype=np.int8)
    return cat(remap[codes], cats), present


def _by_ddir(codes: np.ndarray, present: np.ndarray, arr: np.ndarray):
    """Yield (code, rows of ``arr`` with that code, whether that is a copy we own)."""
    if len(present) == 1:
        yield int(present[0]), arr, False
        return
    for code in present:
        yield int(code), arr[codes == code], True


def exact_percentiles(v: np.ndarray, qs: np.ndarray, owned: bool = False) -> np.ndarray:
    """Exact order statistics: for each q (percent) the smallest sample with at least q% of the samples
    at or below it (``numpy.percentile(method="inverted_cdf")``); ``owned`` lets ``v`` be reordered."""
    n = len(v)
    k = np.clip(np.ceil(np.asarray(qs, dtype=np.float64) / 100.0 * n).astype(np.int64) - 1, 0, n - 1)
    w = v if owned else v.copy()
    w.partition(np.unique(k))
    return w[k]


def _log_setup(path: Path, ncol: int, meta: dict[str, Any], n: int, bs_min: int | None, bs_max: int | None,
               col5_max: int | None, folder: RunFolder | None) -> tuple[Parsed | None, str, str, str, float]:
    """What a 4-6 column log holds, from its name, its companion fio JSON and its block-size column:
    fills ``meta`` (per_io, windowed, samples, column5, units) and returns (companion, job, metric,
    unit, scale: canonical unit per logged unit)."""
    name = meta["log_name"]
    ltype = name["type"] or "value"
    companion, how = _companion(path, name["prefix"], folder)
    meta["companion_json"] = how if companion is not None else None
    job = _job_key(name, companion)
    meta["workload"] = _job_workload(companion, job)
    meta["per_io"] = bool(n and bs_min > 0)
    meta["windowed"] = bool(n and bs_max == 0)
    meta["samples"] = int(n)
    if ncol >= 5:
        opts = {}
        if companion is not None:
            opts = next(iter(companion.meta.get("job_options", {}).values()), {}) or {}
            opts = {**(companion.meta.get("global_options") or {}), **opts}
        is_offset = ncol == 6 or str(opts.get("log_offset", "0")) == "1" or \
            (n and col5_max > 0xFFFF)
        meta["column5"] = "offset (B)" if (ncol == 5 and is_offset) else "priority"
        if ncol == 6:
            meta["columns"] = "time_ms, value, ddir, bs, offset, prio"
    if ltype in ("lat", "clat", "slat"):
        scale, desc, assumed = _latency_scale(companion, how, ncol)
        meta["latency_unit_source"] = desc
        meta["latency_unit_assumed"] = assumed
        if scale is None:
            raise IngestError(path, f"expected evidence of the latency unit ({desc}): give `ingest --log-units "
                                    "us|ns`, or `--fio-version` of the fio that wrote it, or keep its fio JSON "
                                    "beside it", line=1)
        unit, metric = "ns", ltype
    elif ltype == "bw":
        scale, unit, metric = 1024.0, "B/s", "bw"
    elif ltype == "iops":
        scale, unit, metric = 1.0, "1/s", "iops"
    else:
        scale, unit, metric = 1.0, "", "value"
        meta["log_type_from"] = "unknown: file name does not follow <prefix>_<type>.<N>.log"
    return companion, job, metric, unit, scale


def _moment_rows(job: str, d: str, metric: str, unit: str, mean: float, lo: float, hi: float, std: float,
                 n: int) -> list[tuple[str, str, str, float, str]]:
    """The summary rows ``<metric>_mean/_min/_max/_stddev`` (in ``unit``) and ``_samples`` of one direction."""
    return [(job, d, f"{metric}_mean", mean, unit), (job, d, f"{metric}_min", lo, unit),
            (job, d, f"{metric}_max", hi, unit), (job, d, f"{metric}_stddev", std, unit),
            (job, d, f"{metric}_samples", float(n), "count")]


def _segments(t_ms: np.ndarray, name: dict[str, Any], job: str) -> tuple[np.ndarray, list[str]] | None:
    """A ``per_job_logs=0`` log (fio ≥ 3.7: every job's samples in one ``<prefix>_<type>.log``, no job number,
    each job's block after the other's, its time restarting): each row's segment and the segments' job
    labels (``<job>#seg1`` …: fio does not record which job wrote which block).  None for a log of one job."""
    if name["job_index"] is not None or len(t_ms) < 2:
        return None
    back = np.flatnonzero(np.diff(t_ms) < 0) + 1
    if not len(back):
        return None
    seg = np.zeros(len(t_ms), dtype=np.int32)
    seg[back] = 1
    return np.cumsum(seg, dtype=np.int32), [f"{job}#seg{k + 1}" for k in range(len(back) + 1)]


def _parse_log(path: Path, ncol: int, meta: dict[str, Any], data: bytes | None,
               folder: RunFolder | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = read_fio_log(path, ncol, data=data)
    source = str(path)
    name = meta["log_name"]
    n = len(cols.t)
    companion, job, metric, unit, scale = _log_setup(path, ncol, meta, n, cols.bs_min, cols.bs_max, cols.col5_max,
                                                     folder)
    segs = _segments(cols.t, name, job)
    t_s = _time_base(cols.t, meta, inplace=True)
    codes = cols.ddir
    ddir, present = _ddir_labels(path, codes, cols.ddir_counts)
    value = cols.value
    if scale != 1.0:
        value *= scale
    series = series_frame(source, job if segs is None else cat(*segs), ddir, metric, unit, t_s, value)
    if segs is not None:
        meta["per_job_logs"] = {"segments": len(segs[1]), "why": (
            "time restarts where one job's block ends: fio per_job_logs=0 wrote several jobs into this one file, "
            "kept apart as segments; which job wrote which segment fio does not record")}
    parts = [(job, codes, present, value)] if segs is None else [
        (label, codes[segs[0] == k], np.flatnonzero(np.bincount(codes[segs[0] == k], minlength=4)),
         value[segs[0] == k]) for k, label in enumerate(segs[1])]

    rows = []
    checks: dict[str, Any] = {}
    for label, pcodes, ppresent, pvalue in parts:
        for code, v, owned in _by_ddir(pcodes, ppresent, pvalue):
            d = str(DDIR_NAMES[code])
            rows += _moment_rows(label, d, metric, unit, float(v.mean()), float(v.min()), float(v.max()),
                                 float(v.std(ddof=1)) if len(v) > 1 else np.nan, len(v))
            if companion is not None and segs is None:
                checks[d] = _crosscheck(companion, meta, d, metric, v, name["job_index"])
            if meta["per_io"] and metric in ("lat", "clat", "slat"):
                pv = exact_percentiles(v, LOG_QS, owned=owned or segs is not None)
                rows += [(label, d, f"{metric}_p{q:g}", float(x), unit) for q, x in zip(LOG_QS, pv)]
    if checks:
        meta["crosscheck"] = checks
        if meta["windowed"]:
            _cut_check(companion, meta, checks, t_s, codes, value, metric)
        elif meta["per_io"]:
            _per_io_cut(companion, meta, checks)
    return summary_frame(source, rows), series


#: a windowed log (``log_avg_msec``) ends where its job's IO ended: fio writes a bw/iops window when it is full
#: and drops the last partial one, and flushes a latency window at the job's exit, so a whole log ends within
#: one window of the runtime fio's JSON states (the 8,900 real windowed logs of data/raw, tests and the corpus
#: with their JSON: at most 1.004 windows short, a 3 s job's last 1 s window a third of it) — unless its IO
#: stalled: fio writes no window in which no IO completed (two qos-2026 bw/iops logs end 17 s before an 82 s
#: run whose last IOs hung on recovery).  A log that ends more than ``CUT_WINDOWS`` windows and
#: ``CUT_FRACTION`` of the runtime short (a late window, time spent closing) holds a shorter run than the
#: JSON's: a file cut at a line boundary, ``partial`` with why.  A bw/iops log is so only when its windows
#: (value × window) also miss more than that share of the JSON's bytes or IOs: a stalled one holds them all.
CUT_WINDOWS, CUT_FRACTION = 2, 0.10


def _opts(companion: Parsed, job: str) -> dict[str, Any]:
    """The companion fio JSON's options for ``job`` (its own over the global ones)."""
    own = (companion.meta.get("job_options") or {}).get(job)
    if own is None:
        own = next(iter((companion.meta.get("job_options") or {}).values()), {})
    return {**(companion.meta.get("global_options") or {}), **(own or {})}


def _cut_check(companion: Parsed, meta: dict[str, Any], checks: dict[str, Any], t_s: np.ndarray,
               codes: np.ndarray, value: np.ndarray, metric: str, window_option: str = "log_avg_msec") -> None:
    """Whether each direction of a windowed log covers its job's runtime in the companion JSON (the rule
    at :data:`CUT_WINDOWS`): ``meta["cut"]`` and ``meta["partial_reason"]`` for one that ends short.  Checked
    where the log is one job's (the crosscheck found it), or the JSON's one job is a time-based group
    (``group_reporting``: every job of it ran the runtime); not otherwise (a size-based job of a group may end
    before the group's runtime).  A bw/iops log also by what its windows hold (``holds``: value × window over
    the JSON's bytes or IOs); a histogram log (``window_option`` ``log_hist_msec``, ``metric`` ``hist``: its
    ``value`` the samples of each interval) by the share of the JSON's IOs its intervals count.  Logs read in
    blocks (:func:`parse_stream`, 256 MiB and more) are per-IO logs: :func:`_per_io_cut` checks them."""
    jobs = list(companion.meta.get("jobs", []))
    cut = {}
    for d, c in checks.items():
        job = c.get("job") if c.get("compared") else (jobs[0] if len(jobs) == 1 else None)
        if job is None:
            continue
        opts = _opts(companion, job)
        if not c.get("compared") and str(opts.get("time_based", "0")).strip().lower() in ("0", "false", "no"):
            continue
        runtime = companion.values_of(job, d).get("runtime")
        code = int(np.flatnonzero(DDIR_NAMES == d)[0])
        t = t_s[codes == code]
        try:
            window = float(str(opts.get(window_option, ""))) / 1000.0
        except ValueError:
            window = float(np.median(np.diff(np.sort(t)))) if len(t) > 1 else 0.0
        if not runtime or not len(t) or not window > 0:
            continue
        epoch = str(meta.get("time_base", "")).startswith("unix")
        covered = float(t.max() - t.min() + window) if epoch else float(t.max())
        allowed = CUT_WINDOWS * window + CUT_FRACTION * runtime
        if runtime - covered <= allowed:
            continue
        x = {"job": job, "ends_s": covered, "runtime_s": runtime, "window_s": window}
        total = companion.values_of(job, d).get({"iops": "total_ios", "bw": "io_bytes",
                                                 "hist": "total_ios"}.get(metric, ""))
        if total:  # IOs (bytes) its windows hold: all of them when the job's IO stalled, not when the file was cut
            held = float(value[codes == code].sum())
            x["holds"] = (held if metric == "hist" else held * window) / total
            if 1 - x["holds"] <= allowed / runtime:
                continue
        cut[d] = x
    if cut:
        meta["cut"] = cut
        name = Path(companion.path).name
        unit = "intervals" if metric == "hist" else "windows"  # a histogram log's log_hist_msec intervals
        meta["partial_reason"] = "; ".join(
            f"the {d} {unit} end at {x['ends_s']:.4g} s, job {x['job']!r} ran {x['runtime_s']:.4g} s ({name}; "
            f"{unit} of {x['window_s']:g} s, a whole log ends within one of the runtime"
            + (f"; they hold {100 * x['holds']:.0f} % of its {'bytes' if metric == 'bw' else 'IOs'}"
               if "holds" in x else "") + "): the log was cut"
            for d, x in cut.items())


#: a per-IO log (``log_avg_msec=0``) holds one line per completed IO.  fio 3.33 here (libaio and io_uring,
#: QD 4-64, randread, randrw with numjobs=2, a size-based randwrite): as many lines as ``total_ios`` in each
#: direction, or up to QD − 1 more with ``ramp_time`` (the IOs in flight when the ramp ended are logged, not
#: counted); never fewer.  A log with fewer lines than its job's ``total_ios`` by more than
#: ``PER_IO_SLACK`` IOs and ``PER_IO_FRACTION`` of them was cut.
PER_IO_SLACK, PER_IO_FRACTION = 8, 0.001


def _per_io_cut(companion: Parsed, meta: dict[str, Any], checks: dict[str, Any]) -> None:
    """``meta["cut"]`` and ``meta["partial_reason"]`` for a per-IO log whose lines of a direction fall
    short of the IOs its job completed in the companion JSON (the rule at :data:`PER_IO_SLACK`); only
    where :func:`_crosscheck` matched the log to one job (``log_samples``, ``json_total_ios``)."""
    cut = {}
    for d, c in checks.items():
        n, total = c.get("log_samples"), c.get("json_total_ios")
        if not c.get("compared") or n is None or not total or total < 0:
            continue
        if total - n > max(PER_IO_SLACK, PER_IO_FRACTION * total):
            cut[d] = {"job": c["job"], "log_samples": int(n), "json_total_ios": int(total)}
    if cut:
        meta["cut"] = cut
        name = Path(companion.path).name
        meta["partial_reason"] = "; ".join(
            f"the {d} lines are {x['log_samples']:,} IOs, job {x['job']!r} completed {x['json_total_ios']:,} "
            f"({name}; a per-IO log has one line per IO): the log was cut" for d, x in cut.items())


def _crosscheck(companion: Parsed, meta: dict[str, Any], ddir: str, metric: str, v: np.ndarray,
                job_index: int | None) -> dict[str, Any]:
    """Compare the log with fio's own summary for the same job and direction."""
    jobs = list(companion.meta.get("jobs", []))
    opts = {**(companion.meta.get("global_options") or {}),
            **(next(iter(companion.meta.get("job_options", {}).values()), {}) or {})}
    try:
        numjobs = int(str(opts.get("numjobs", "1")))
    except ValueError:
        numjobs = 1
    if numjobs > 1 and len(jobs) < numjobs:  # fio does not echo group_reporting in job options
        return {"compared": False,
                "why": f"group_reporting: fio's summary aggregates {numjobs} jobs; each log is one job"}
    if len(jobs) == 1:
        job = jobs[0]
    elif job_index is not None and 1 <= job_index <= len(jobs):
        job = jobs[job_index - 1]
    else:
        return {"compared": False, "why": "cannot tell which fio job wrote this log"}
    ref = companion.values_of(job, ddir)
    out: dict[str, Any] = {"job": job, "compared": True}
    if meta["per_io"] and "total_ios" in ref:
        out["log_samples"] = int(len(v))
        out["json_total_ios"] = int(ref["total_ios"])
    if meta["per_io"] and metric in ("lat", "clat", "slat"):
        if "total_ios" in ref:
            out["log_samples"] = int(len(v))
            out["json_total_ios"] = int(ref["total_ios"])
        key = f"{metric}_mean"
        if key in ref and ref[key]:
            out["log_mean_ns"] = float(v.mean())
            out["json_mean_ns"] = float(ref[key])
            out["mean_rel_diff"] = abs(float(v.mean()) - ref[key]) / ref[key]
    elif not meta["per_io"] and f"{metric}_mean" in ref and ref[f"{metric}_mean"]:
        out["log_window_mean_ns"] = float(v.mean())
        out["json_mean_ns"] = float(ref[f"{metric}_mean"])
        out["rel_diff"] = abs(float(v.mean()) - ref[f"{metric}_mean"]) / ref[f"{metric}_mean"]
        out["note"] = "unweighted mean of window means vs fio's per-IO mean: close, not identical"
    elif not meta["per_io"] and metric in ("iops", "bw") and metric in ref and ref[metric]:
        out["log_mean"] = float(v.mean())
        out["json_value"] = float(ref[metric])
        out["rel_diff"] = abs(float(v.mean()) - ref[metric]) / ref[metric]
        out["note"] = "window means vs fio's whole-run figure: close, not identical"
    return out


def _parse_hist(path: Path, ncol: int, meta: dict[str, Any], data: bytes | None,
                folder: RunFolder | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    full, coarse, unit_native = layout_for(ncol - 3)
    tab = read_int_table(path, ncol, data=data)
    source = str(path)
    name = meta["log_name"]
    ltype = (name["type"] or "clat_hist").replace("_hist", "")
    companion, how = _companion(path, name["prefix"], folder)
    job = _job_key(name, companion)
    meta["workload"] = _job_workload(companion, job)
    scale = 1000.0 if unit_native == "µs" else 1.0
    meta.update({"bins": ncol - 3, "bins_full": full, "hist_coarseness": coarse,
                 "bin_unit": unit_native, "tool_version": "fio-3.x" if full == 1856 else "fio-2.x",
                 "tool_version_from": "bin count", "intervals": int(len(tab))})
    values = coarse_bin_values(full, coarse) * scale
    t_s = _time_base(tab[:, 0], meta)
    codes = tab[:, 1]
    ddir, present = _ddir_labels(path, codes)
    counts = tab[:, 3:]
    neg = (counts < 0).any(axis=1)
    if neg.any():
        raise IngestError(path, "histogram bin counts must be non-negative", line=int(np.flatnonzero(neg)[0]) + 1)
    pct = interval_percentiles(counts, values, LOG_QS)
    n = counts.sum(axis=1).astype(np.float64)
    series = series_metrics_frame(source, job, ddir, t_s,
                                  [(f"{ltype}_p{q:g}", "ns", pct[:, j]) for j, q in enumerate(LOG_QS)]
                                  + [(f"{ltype}_samples", "count", n)])
    rows = []
    checks = {}
    for code, sub, _owned in _by_ddir(codes, present, counts):
        d = str(DDIR_NAMES[code])
        tot = sub.sum(axis=0)
        if tot.sum() == 0:
            continue
        cum = interval_percentiles(tot[None, :], values, LOG_QS)[0]
        rows += [(job, d, f"{ltype}_p{q:g}", float(x), "ns") for q, x in zip(LOG_QS, cum)]
        rows.append((job, d, f"{ltype}_samples", float(tot.sum()), "count"))
        if companion is not None:
            jobs = companion.meta.get("jobs", [])
            jn = jobs[0] if len(jobs) == 1 else None
            if jn is not None:
                refd = companion.values_of(jn, d)
                diffs = {f"p{q:g}": abs(x - refd[f"{ltype}_p{q:g}"]) / refd[f"{ltype}_p{q:g}"]
                         for q, x in zip(LOG_QS, cum) if refd.get(f"{ltype}_p{q:g}")}
                checks[d] = {"job": jn, "hist_samples": int(tot.sum()),
                             "json_total_ios": int(refd.get("total_ios", -1)),
                             "percentile_rel_diff": diffs,
                             "note": "the last partial interval may be missing from the log"}
    if checks:
        meta["crosscheck"] = checks
        own = str(_opts(companion, next(iter(checks.values()))["job"]).get("numjobs", "1")).strip() == "1"
        _cut_check(companion, meta, {d: {**c, "compared": own} for d, c in checks.items()}, t_s, codes, n,
                   "hist", "log_hist_msec")  # the JSON's one job: the log's own when not cloned (numjobs)
    meta["companion_json"] = how if companion is not None else None
    return summary_frame(source, rows), series


def parse(path: Path, data: bytes | None = None, folder: RunFolder | None = None) -> Parsed:
    """Read a log; ``data`` is its (decompressed) content, or None to memory-map the file; ``folder``: the
    ingest's :class:`RunFolder` of the log's directory, where its companion fio JSON is looked up."""
    path = Path(path)
    if data is None:
        with open(path, "rb") as f:
            head = f.read(64 * 1024)
    else:
        head = data[:64 * 1024]
    kind = sniff(head)
    fields = first_line_fields(head)
    if kind is None or fields is None:
        raise IngestError(path, "expected a fio log: lines of 4-6 comma-separated integers "
                                "(or 3 + 1856/1216 for a histogram log)", line=1)
    meta: dict[str, Any] = {"tool": "fio", "log_name": _log_name(path),
                            "log_type_from": "fio file naming <prefix>_<type>.<N>.log"}
    meta["log_type"] = meta["log_name"]["type"]
    if kind == "fio-hist-log":
        summary, series = _parse_hist(path, len(fields), meta, data, folder)
    else:
        meta["columns"] = meta.get("columns") or {4: "time_ms, value, ddir, bs",
                                                  5: "time_ms, value, ddir, bs, prio|offset",
                                                  6: "time_ms, value, ddir, bs, offset, prio"}[len(fields)]
        summary, series = _parse_log(path, len(fields), meta, data, folder)
    return Parsed(path=str(path), kind=kind, meta=meta, summary=summary, series=series, partial=bool(meta.get("cut")))


# --- bounded memory: logs too large to hold ---------------------------------------------------------

#: bytes of log text per block (≈ 1 M lines of a per-IO log)
CHUNK_BYTES = 32 << 20
_SUB = 4096  # coarse bins: 64 per power of two of the logged integer


class _Moments:
    """Count, mean, M2 (Chan et al.'s parallel merge), min and max of one direction's values."""

    def __init__(self) -> None:
        self.n, self.mean_, self.m2, self.lo, self.hi = 0, 0.0, 0.0, np.inf, -np.inf

    def add(self, v: np.ndarray) -> None:
        if not len(v):
            return
        n, m = len(v), float(v.mean())
        m2 = float(((v - m) ** 2).sum())
        d, tot = m - self.mean_, self.n + n
        self.mean_ += d * n / tot
        self.m2 += m2 + d * d * self.n * n / tot
        self.n = tot
        self.lo, self.hi = min(self.lo, float(v.min())), max(self.hi, float(v.max()))

    def __len__(self) -> int:
        return self.n

    def mean(self) -> float:  # what _crosscheck asks of an array
        return self.mean_


def _log_bin(v: np.ndarray) -> np.ndarray:
    """Coarse bin of non-negative logged integers: 64 bins per power of two (4096 bins up to 2**64)."""
    return np.minimum((np.log2(np.maximum(v, 0) + 1.0) * 64).astype(np.int64), _SUB - 1)


def parse_stream(path: Path, sink=None, chunk_bytes: int | None = None, folder: RunFolder | None = None) -> Parsed:
    """A 4-6 column log read in blocks of ``chunk_bytes`` with bounded memory; same summary as
    :func:`parse` (means and standard deviations merged per block: equal to a few ulps; exact
    percentiles in two passes: the first finds the coarse bin (64 per power of two) holding each order
    statistic, the second keeps the distinct values of those bins with their counts — a bin spans 1.1 %
    of its value, so at most that many distinct integers per percentile).

    ``sink(frame)`` receives the series block by block (then ``Parsed.series`` is empty); without one
    the blocks are concatenated.  ``meta["series_rows"]`` counts the rows either way.
    Histogram logs are read whole."""
    path = Path(path)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    head, comp = read_head(path)
    kind, fields = sniff(head), first_line_fields(head)
    if kind is None or fields is None:
        raise IngestError(path, "expected a fio log: lines of 4-6 comma-separated integers "
                                "(or 3 + 1856/1216 for a histogram log)", line=1)
    if kind == "fio-hist-log":
        return parse(path, read_all(path) if comp else None, folder)
    ncol = len(fields)
    meta: dict[str, Any] = {"tool": "fio", "log_name": _log_name(path),
                            "log_type_from": "fio file naming <prefix>_<type>.<N>.log"}
    meta["log_type"] = meta["log_name"]["type"]
    meta["columns"] = {4: "time_ms, value, ddir, bs", 5: "time_ms, value, ddir, bs, prio|offset",
                       6: "time_ms, value, ddir, bs, offset, prio"}[ncol]
    first = _first_pass(path, ncol, chunk_bytes)
    companion, job, metric, unit, scale = _log_setup(path, ncol, meta, first.n, first.bs_min, first.bs_max,
                                                     first.c5, folder)
    t0 = 0.0
    if first.n and first.t_min > EPOCH_MS_MIN:
        t0 = first.t_min
        meta["time_base"] = "unix epoch ms (log_unix_epoch); t_s counts from the first sample"
        meta["t0_unix_ms"] = int(first.t_min)
    else:
        meta["time_base"] = "ms since job start"
    want_pct = meta["per_io"] and metric in ("lat", "clat", "slat")
    targets = _rank_targets(first) if want_pct else {}
    frames, rows_out, kept = _second_pass(path, ncol, chunk_bytes, first, targets, sink,
                                          (str(path), job, metric, unit, scale, t0))
    meta["streamed"] = {"chunk_bytes": chunk_bytes, "blocks": first.blocks, "passes": 2,
                        "percentiles": "exact: a histogram pass, then the distinct values of each rank's bin"}
    meta["samples"] = int(first.n)
    rows = _stream_rows(first, companion, meta, (job, metric, unit, scale), targets, kept)
    meta["series_rows"] = int(rows_out)
    series = concat_tidy([] if sink is not None else frames, SERIES_COLUMNS)
    if comp:
        meta["compression"] = comp
    return Parsed(path=str(path), kind=KIND, meta=meta, summary=summary_frame(str(path), rows), series=series,
                  partial=bool(meta.get("cut")))


@dataclass
class _FirstPass:
    """Pass 1 of :func:`parse_stream` over the raw logged integers: sizes, time origin, and per direction
    (0-3) the count, moments and a coarse histogram (:func:`_log_bin`)."""
    n: int = 0
    t_min: float = np.inf
    bs_min: int | None = None
    bs_max: int | None = None
    c5: int | None = None
    blocks: int = 0
    counts: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))
    mom: list[_Moments] = field(default_factory=lambda: [_Moments() for _ in range(4)])
    hist: np.ndarray = field(default_factory=lambda: np.zeros((4, _SUB), dtype=np.int64))


def _first_pass(path: Path, ncol: int, chunk_bytes: int) -> _FirstPass:
    from ._scan import iter_fio_log
    f = _FirstPass()
    for cols in iter_fio_log(path, ncol, chunk_bytes):
        f.blocks += 1
        if not len(cols.t):
            continue
        f.n += len(cols.t)
        f.t_min = min(f.t_min, float(cols.t.min()))
        f.bs_min = cols.bs_min if f.bs_min is None else min(f.bs_min, cols.bs_min)
        f.bs_max = cols.bs_max if f.bs_max is None else max(f.bs_max, cols.bs_max)
        if cols.col5_max is not None:
            f.c5 = cols.col5_max if f.c5 is None else max(f.c5, cols.col5_max)
        f.counts += cols.ddir_counts
        for code in np.flatnonzero(cols.ddir_counts):
            v = cols.value[cols.ddir == code]
            f.mom[code].add(v)
            f.hist[code] += np.bincount(_log_bin(v), minlength=_SUB)
    return f


def _rank_targets(first: _FirstPass) -> dict[tuple[int, int], tuple[int, int]]:
    """(direction, percentile index) → (the coarse bin holding that percentile's rank, its rank in the bin)."""
    targets: dict[tuple[int, int], tuple[int, int]] = {}
    for code in np.flatnonzero(first.counts):
        n = first.counts[code]
        k = np.clip(np.ceil(LOG_QS / 100.0 * n).astype(np.int64) - 1, 0, n - 1)
        cum = np.cumsum(first.hist[code])
        for j, kk in enumerate(k):
            b = int(np.searchsorted(cum, kk, side="right"))
            targets[(int(code), j)] = (b, int(kk) - (int(cum[b - 1]) if b else 0))
    return targets


def _second_pass(path: Path, ncol: int, chunk_bytes: int, first: _FirstPass,
                 targets: dict[tuple[int, int], tuple[int, int]], sink, how: tuple):
    """Pass 2: the series block by block (to ``sink``, else kept), and the distinct values (with counts)
    of each target bin.  ``how`` = (source, job, metric, unit, scale, t0 in ms).  Returns (frames,
    rows, kept: (direction, percentile index) → (values, counts))."""
    from ._scan import iter_fio_log
    source, job, metric, unit, scale, t0 = how
    present = np.flatnonzero(first.counts)
    cats = DDIR_NAMES[present].tolist()
    remap = np.full(4, -1, dtype=np.int8)
    remap[present] = np.arange(len(present), dtype=np.int8)
    frames: list[pd.DataFrame] = []
    rows_out = 0
    kept: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    for cols in iter_fio_log(path, ncol, chunk_bytes):
        if not len(cols.t):
            continue
        t_s = (cols.t - t0) / 1000.0
        value = cols.value * scale if scale != 1.0 else cols.value
        fr = series_frame(source, job, cat(remap[cols.ddir], cats), metric, unit, t_s, value)
        rows_out += len(fr)
        if sink is None:
            frames.append(fr)
        else:
            sink(fr)
        for code in {c for c, _ in targets}:
            v = cols.value[cols.ddir == code]
            bins = _log_bin(v)
            for (c, j), (b, _) in targets.items():
                if c != code:
                    continue
                u, cnt = np.unique(v[bins == b], return_counts=True)
                if (c, j) in kept:  # merge: the distinct values of a bin stay few (≤ 1.1 % of the value)
                    u0, c0 = kept[(c, j)]
                    u, inv = np.unique(np.concatenate([u0, u]), return_inverse=True)
                    cnt = np.bincount(inv, weights=np.concatenate([c0, cnt])).astype(np.int64)
                kept[(c, j)] = (u, cnt)
    return frames, rows_out, kept


def _stream_rows(first: _FirstPass, companion: Parsed | None, meta: dict[str, Any], how: tuple,
                 targets: dict[tuple[int, int], tuple[int, int]],
                 kept: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]) -> list[tuple]:
    """The summary rows per direction (moments; exact percentiles where ``targets``), and the companion
    cross-check into ``meta``; ``how`` = (job, metric, unit, scale)."""
    job, metric, unit, scale = how
    rows: list[tuple] = []
    checks: dict[str, Any] = {}
    for code in np.flatnonzero(first.counts):
        d, m = str(DDIR_NAMES[code]), first.mom[code]
        mean, lo, hi = m.mean_ * scale, m.lo * scale, m.hi * scale
        std = float(np.sqrt(m.m2 / (m.n - 1))) * scale if m.n > 1 else np.nan
        rows += _moment_rows(job, d, metric, unit, float(mean), float(lo), float(hi), std, m.n)
        if companion is not None:
            scaled = _Moments()
            scaled.n, scaled.mean_ = m.n, mean
            checks[d] = _crosscheck(companion, meta, d, metric, scaled, meta["log_name"]["job_index"])
        if targets:
            pv = []
            for j in range(len(LOG_QS)):
                u, cnt = kept[(int(code), j)]
                rank = targets[(int(code), j)][1]
                pv.append(float(u[np.searchsorted(np.cumsum(cnt), rank, side="right")]) * scale)
            rows += [(job, d, f"{metric}_p{q:g}", x, unit) for q, x in zip(LOG_QS, pv)]
    if checks:
        meta["crosscheck"] = checks
        if meta["per_io"]:
            _per_io_cut(companion, meta, checks)
    return rows


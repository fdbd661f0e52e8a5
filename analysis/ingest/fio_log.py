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
and ``meta["latency_unit_source"]`` says which, or that ns was assumed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import fio as fio_json
from ._scan import first_line_fields, read_fio_log, read_int_table
from .compress import read_all, read_head
from .base import (IngestError, Parsed, concat_tidy, series_frame, summary_frame, SERIES_COLUMNS)
from .fio_bins import coarse_bin_values, interval_percentiles, layout_for

KIND = "fio-log"
KINDS = ("fio-log", "fio-hist-log")
STREAMING = True  # parse() reads the file itself (memory-mapped)

DDIR_NAMES = np.array(["read", "write", "trim", "sync"], dtype=object)
_NAME = re.compile(r"^(?P<prefix>.*?)_(?P<type>clat_hist|lat_hist|slat|clat|lat|bw|iops)"
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
    m = _NAME.match(path.name)
    if not m:
        return {"prefix": None, "type": None, "job_index": None}
    return {"prefix": m["prefix"], "type": m["type"],
            "job_index": int(m["job"]) if m["job"] else None}


_FOLDER_JSON: dict[tuple, list[Parsed]] = {}  # folder listing (names, sizes, mtimes) → its fio JSONs, parsed


def _folder_fio_json(path: Path) -> list[Parsed] | None:
    """Every fio JSON output beside ``path`` (not ``path`` itself), parsed.  Cached per folder listing,
    so the logs of one run directory parse their JSON once; a changed file changes the key."""
    try:
        entries = sorted(os.scandir(path.parent), key=lambda e: e.name)
        listing = tuple((e.name, st.st_size, st.st_mtime_ns) for e in entries if e.is_file()
                        for st in (e.stat(),))
    except OSError:
        return None
    key = (str(path.parent), listing)
    if key in _FOLDER_JSON:
        return [d for d in _FOLDER_JSON[key] if d.path != str(path)]
    found: list[Path] = []
    for name, size, _ in listing:
        if size > 64 << 20:
            continue
        fp = path.parent / name
        try:
            head, _ = read_head(fp)
        except IngestError:
            continue
        if fio_json.sniff(head):
            found.append(fp)
    parsed: list[Parsed] = []
    for fp in found:
        try:
            parsed.append(fio_json.parse(fp, read_all(fp)))
        except IngestError:
            continue
    if len(_FOLDER_JSON) >= 64:
        _FOLDER_JSON.pop(next(iter(_FOLDER_JSON)))
    _FOLDER_JSON[key] = parsed
    return [d for d in parsed if d.path != str(path)]


def _companion(path: Path, prefix: str | None) -> tuple[Parsed | None, str]:
    """A fio JSON output in the same folder: the one whose job options name ``prefix``, else the only one."""
    docs = _folder_fio_json(path)
    if docs is None:
        return None, "no folder listing"
    matches: list[Parsed] = []
    parsed = docs
    for doc in docs:
        opts = [doc.meta.get("global_options") or {}] + list(doc.meta.get("job_options", {}).values())
        names = {str(o.get(k)) for o in opts for k in
                 ("write_lat_log", "write_bw_log", "write_iops_log", "write_hist_log") if o.get(k)}
        if prefix is not None and prefix in names:
            matches.append(doc)
    if len(matches) == 1:
        return matches[0], f"{Path(matches[0].path).name} (job options name log prefix {prefix!r})"
    if len(parsed) == 1:
        return parsed[0], f"{Path(parsed[0].path).name} (only fio JSON in the folder)"
    return None, f"{len(parsed)} fio JSON files in the folder, none matched prefix {prefix!r}"


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


def _latency_scale(companion: Parsed | None, how: str) -> tuple[float, str, bool]:
    """ns per logged latency unit, a description, and whether it was assumed."""
    if companion is not None:
        v = str(companion.meta.get("tool_version") or "")
        if v.startswith("fio-2"):
            return 1000.0, f"µs: fio 2.x per {how}", False
        if v.startswith("fio-3") or v.startswith("fio-4"):
            return 1.0, f"ns: {v} per {how}", False
    return 1.0, f"ns assumed (fio ≥ 3.0 convention); {how}", True


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
    cats = pd.Index(DDIR_NAMES[present].tolist(), dtype="str")
    if np.array_equal(present, np.arange(len(present))):  # codes are already 0..k-1: no remap pass
        return pd.Categorical.from_codes(codes, categories=cats, validate=False), present
    remap = np.full(4, -1, dtype=np.int8)
    remap[present] = np.arange(len(present), dtype=np.int8)
    return pd.Categorical.from_codes(remap[codes], categories=cats, validate=False), present


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


def _parse_log(path: Path, ncol: int, meta: dict[str, Any],
               data: bytes | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    cols = read_fio_log(path, ncol, data=data)
    source = str(path)
    name = meta["log_name"]
    ltype = name["type"] or "value"
    companion, how = _companion(path, name["prefix"])
    meta["companion_json"] = how if companion is not None else None
    job = _job_key(name, companion)
    t_s = _time_base(cols.t, meta, inplace=True)
    codes = cols.ddir
    ddir, present = _ddir_labels(path, codes, cols.ddir_counts)
    n = len(t_s)
    meta["per_io"] = bool(n and cols.bs_min > 0)
    meta["windowed"] = bool(n and cols.bs_max == 0)
    meta["samples"] = int(n)
    if ncol >= 5:
        opts = {}
        if companion is not None:
            opts = next(iter(companion.meta.get("job_options", {}).values()), {}) or {}
            opts = {**(companion.meta.get("global_options") or {}), **opts}
        is_offset = ncol == 6 or str(opts.get("log_offset", "0")) == "1" or \
            (n and cols.col5_max > 0xFFFF)
        meta["column5"] = "offset (B)" if (ncol == 5 and is_offset) else "priority"
        if ncol == 6:
            meta["columns"] = "time_ms, value, ddir, bs, offset, prio"
    value = cols.value
    if ltype in ("lat", "clat", "slat"):
        scale, desc, assumed = _latency_scale(companion, how)
        meta["latency_unit_source"] = desc
        meta["latency_unit_assumed"] = assumed
        unit, metric = "ns", ltype
    elif ltype == "bw":
        scale, unit, metric = 1024.0, "B/s", "bw"
    elif ltype == "iops":
        scale, unit, metric = 1.0, "1/s", "iops"
    else:
        scale, unit, metric = 1.0, "", "value"
        meta["log_type_from"] = "unknown: file name does not follow <prefix>_<type>.<N>.log"
    if scale != 1.0:
        value *= scale
    series = series_frame(source, job, ddir, metric, unit, t_s, value)

    rows = []
    checks: dict[str, Any] = {}
    for code, v, owned in _by_ddir(codes, present, value):
        d = str(DDIR_NAMES[code])
        rows += [(job, d, f"{metric}_mean", float(v.mean()), unit),
                 (job, d, f"{metric}_min", float(v.min()), unit),
                 (job, d, f"{metric}_max", float(v.max()), unit),
                 (job, d, f"{metric}_stddev", float(v.std(ddof=1)) if len(v) > 1 else np.nan, unit),
                 (job, d, f"{metric}_samples", float(len(v)), "count")]
        if companion is not None:
            checks[d] = _crosscheck(companion, meta, d, metric, v, name["job_index"])
        if meta["per_io"] and metric in ("lat", "clat", "slat"):
            pv = exact_percentiles(v, LOG_QS, owned=owned)
            rows += [(job, d, f"{metric}_p{q:g}", float(x), unit) for q, x in zip(LOG_QS, pv)]
    if checks:
        meta["crosscheck"] = checks
    return summary_frame(source, rows), series


def _crosscheck(companion: Parsed, meta: dict[str, Any], ddir: str, metric: str, v: np.ndarray,
                job_index: int | None) -> dict[str, Any]:
    """Compare the log with fio's own summary for the same job and direction."""
    s = companion.summary
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
    sel = s[(s["job"] == job) & (s["ddir"] == ddir)]
    ref = dict(zip(sel["metric"].astype(str), sel["value"]))
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


def _parse_hist(path: Path, ncol: int, meta: dict[str, Any],
                data: bytes | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    full, coarse, unit_native = layout_for(ncol - 3)
    tab = read_int_table(path, ncol, data=data)
    source = str(path)
    name = meta["log_name"]
    ltype = (name["type"] or "clat_hist").replace("_hist", "")
    companion, how = _companion(path, name["prefix"])
    job = _job_key(name, companion)
    scale = 1000.0 if unit_native == "µs" else 1.0
    meta.update({"bins": ncol - 3, "bins_full": full, "hist_coarseness": coarse,
                 "bin_unit": unit_native, "tool_version": "fio-3.x" if full == 1856 else "fio-2.x",
                 "tool_version_from": "bin count", "intervals": int(len(tab))})
    values = coarse_bin_values(full, coarse) * scale
    t_s = _time_base(tab[:, 0], meta)
    codes = tab[:, 1]
    ddir, present = _ddir_labels(path, codes)
    counts = tab[:, 3:]
    if (counts < 0).any():
        row = int(np.flatnonzero((counts < 0).any(axis=1))[0])
        raise IngestError(path, "histogram bin counts must be non-negative", line=row + 1)
    pct = interval_percentiles(counts, values, LOG_QS)
    n = counts.sum(axis=1).astype(np.float64)
    frames = [series_frame(source, job, ddir, f"{ltype}_p{q:g}", "ns", t_s, pct[:, j])
              for j, q in enumerate(LOG_QS)]
    frames.append(series_frame(source, job, ddir, f"{ltype}_samples", "count", t_s, n))
    series = concat_tidy(frames, SERIES_COLUMNS)
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
            ref = companion.summary
            jobs = companion.meta.get("jobs", [])
            jn = jobs[0] if len(jobs) == 1 else None
            if jn is not None:
                sel = ref[(ref["job"] == jn) & (ref["ddir"] == d)]
                refd = dict(zip(sel["metric"].astype(str), sel["value"]))
                diffs = {f"p{q:g}": abs(x - refd[f"{ltype}_p{q:g}"]) / refd[f"{ltype}_p{q:g}"]
                         for q, x in zip(LOG_QS, cum) if refd.get(f"{ltype}_p{q:g}")}
                checks[d] = {"job": jn, "hist_samples": int(tot.sum()),
                             "json_total_ios": int(refd.get("total_ios", -1)),
                             "percentile_rel_diff": diffs,
                             "note": "the last partial interval may be missing from the log"}
    if checks:
        meta["crosscheck"] = checks
    meta["companion_json"] = how if companion is not None else None
    return summary_frame(source, rows), series


def parse(path: Path, data: bytes | None = None) -> Parsed:
    """Read a log; ``data`` is its (decompressed) content, or None to memory-map the file."""
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
        summary, series = _parse_hist(path, len(fields), meta, data)
    else:
        meta["columns"] = meta.get("columns") or {4: "time_ms, value, ddir, bs",
                                                  5: "time_ms, value, ddir, bs, prio|offset",
                                                  6: "time_ms, value, ddir, bs, offset, prio"}[len(fields)]
        summary, series = _parse_log(path, len(fields), meta, data)
    return Parsed(path=str(path), kind=kind, meta=meta, summary=summary, series=series)

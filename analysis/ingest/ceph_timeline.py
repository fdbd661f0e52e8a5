"""Reader for the background-operation timeline (``cephqos-pg-timeline`` JSONL, version 1).

Written by ``capture/ceph/pgpoll.py``: a header line (``format``, ``version``, ``ceph_version``,
``pools`` id → name, ``pg_fields``, ``interval_s``, ``started_unix``); one sample line per poll
(``{"t", "pgs": [[...pg_fields...], ...]}`` or ``{"t", "error"}`` for a failed poll); mark lines from the
harness (``{"t", "mark", "pool"?}``); event lines from the cluster log (``{"t", "event", "pgid", "osd"}``,
``t`` = the log line's own stamp); a trailer ``{"t", "end": true, "samples"}``.  All times unix s.

Time base: ``t_s`` = seconds since the ``fio_start`` mark, else since the header's ``started_unix``
(``meta["t0_unix"]``, ``meta["t0_from"]``); marks are in ``meta["marks"]`` as ``t_s``.

Series (``job`` = pool name, ``ddir`` ""), one row per sample × pool × metric: ``pgs``,
``pgs_active_clean`` (flags exactly {active, clean}), ``pgs_scrubbing`` (flag ``scrubbing``, deep
included), ``pgs_deep_scrubbing`` (``scrubbing`` and ``deep``), ``pgs_snaptrim`` (``snaptrim`` or
``snaptrim_wait``), ``pgs_recovering`` (``recovering``/``recovery_wait``/``backfilling``/
``backfill_wait``) (count); ``objects`` (count) and ``bytes`` (B): sums of ``num_objects``/``num_bytes``,
which are *logical* (one replica, clones included); ``objects_degraded``/``_misplaced``/``_unfound``,
``snaptrim_queue`` (count, sum of ``snaptrimq_len``); for the pool named by ``deep_scrub_requested``:
``objects_scrubbed`` (count) / ``bytes_scrubbed`` (B), the pool's PGs whose ``last_deep_scrub_stamp`` ≥
the request (cumulative).

Summary (durations have the poll interval as resolution: ``meta["resolution_s"]`` = median spacing):

* Scrub (job = scrubbed pool; the studies' "Scrub Duration (s)" and "Average scrub throughput"):
  ``scrub_duration`` (s) = ``deep_scrub_requested`` mark → the last PG's deep-scrub completion, a PG's
  completion being its first ``deep-scrub ok`` (or ``deep-scrub N errors``) event at/after the mark,
  else (no event for it) the first ``last_deep_scrub_stamp`` ≥ the mark seen in a sample (Ceph 16.2
  stamps it at the "deep-scrub ok"); ``meta["scrub_duration_from"]`` says ``events``, ``stamps`` or
  ``events+stamps``.  Emitted only when every PG of the pool (the last sample's PG set) completed.
  ``scrub_pgs`` / ``scrub_pgs_done`` (count) always; ``scrub_objects`` (count) / ``scrub_bytes`` (B) =
  pool totals at the last sample at/before the mark (else the first after); ``scrub_rate`` (B/s) =
  scrub_bytes / duration; ``scrub_rate_objects`` (1/s) = scrub_objects / duration.  Logical bytes:
  each replica reads them, so the cluster reads ``size`` × this.
* Snaptrim (job = pool of ``snap_removed``; "trimming N clone objects", objects/s):
  ``snaptrim_duration`` (s) = mark → first sample after the mark with ``snaptrim_queue`` == 0 and
  ``pgs_snaptrim`` == 0 that follows a sample after the mark showing trimming (queue > 0 or a snaptrim
  flag): Ceph needs 1–3 s to queue trimming after rmsnap, so an idle sample right after the mark does
  not end it.  ``snaptrim_objects`` (count) = pool ``objects`` at the last sample at/before the mark −
  at the end sample (clones removed); ``snaptrim_rate`` (1/s) = objects / duration.
* Recovery (job "" = cluster; "misplaced objects recovered per second"): ``recovery_duration`` (s) =
  ``recovery_enabled`` mark → first sample after it with cluster-wide degraded, misplaced and unfound
  == 0 and every PG active+clean; ``recovery_objects`` (count) = degraded + misplaced at the last
  sample at/before the mark (if 0 there: the max over samples in the 5 s after it);
  ``recovery_rate`` (1/s) = objects / duration.

``scrub_start``, ``snaptrim_start``, ``recovery_start`` (s): the operation's mark in ``t_s`` (so an
operation's window is [start, start + duration] on the timeline's clock).

A background operation that started but did not finish within the timeline, a missing trailer
(interrupted capture) or a truncated last line make the result ``partial``; reasons are listed in
``meta["incomplete"]``.  Ordering: sample/trailer lines (the poller's clock) and mark lines (the
harness's clock) must each not go back by more than 1 s; event lines carry the cluster log's stamps,
which reach the log file 1–3 s late (OSD → mon → Paxos), so they are exempt.

Two readers of the PG rows, one result: the plain one (``json.loads`` per line, :func:`_columns_plain`)
is the reference; the fast one (:func:`_columns_fast`) reads the rows of all sample lines in one C
call (``pg_rows`` in ``_cscan.c``: JSON's grammar for scalars, pgid/state interned as they are read),
and hands any file it cannot read exactly as the plain one would back to it
(``tests/test_ceph_timeline_fast.py`` holds the two to the same tables or the same error on real and
damaged timelines).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._scan import PG_ANY, PG_PGID, PG_STATE, PgLines, native, pg_lines, pg_rows
from .base import SERIES_COLUMNS, IngestError, Parsed, cat, empty_frame, summary_frame, Label, Tidy

KIND = "ceph-pg-timeline"
FORMAT = "cephqos-pg-timeline"
VERSIONS = (1,)
#: allowed step back in time within one clock's lines (s)
BACKWARDS_TOLERANCE_S = 1.0
#: window after ``recovery_enabled`` searched for the object count when it was 0 at the mark (s)
RECOVERY_COUNT_WINDOW_S = 5.0

_SNIFF = re.compile(rb'\A(?:\xef\xbb\xbf)?[ \t\r\n]*\{[ \t]*"format"[ \t]*:[ \t]*"cephqos-pg-timeline"')
_VERSION = re.compile(r"ceph version (\d+(?:\.\d+)+)")
#: a sample line as the poller writes it: ``t`` (a JSON number) and the rows' bytes between ``[[`` and ``]]``
_FAST_SAMPLE = re.compile(rb'[ \t]*\{[ \t]*"t"[ \t]*:[ \t]*(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)'
                          rb'[ \t]*,[ \t]*"pgs"[ \t]*:[ \t]*\[\[(.*)\]\][ \t]*\}[ \t\r]*')
_DEEP_DONE = re.compile(r"^deep-scrub (?:ok|\d+ errors)")
_HEADER_HINT = ('expected header {"format": "cephqos-pg-timeline", "version": 1, "pools": {...}, '
                '"pg_fields": [...], ...}')

#: pg_fields column → (series metric, unit), summed per pool and sample
_SUMS = {"num_objects": ("objects", "count"), "num_bytes": ("bytes", "B"),
         "degraded": ("objects_degraded", "count"), "misplaced": ("objects_misplaced", "count"),
         "unfound": ("objects_unfound", "count"), "snaptrimq_len": ("snaptrim_queue", "count")}
_STAMPS = ("last_scrub_stamp", "last_deep_scrub_stamp")
#: a scrub stamp is unix s (0 = never): anything past 2286-11-20 is damage
_STAMP_MAX = 1e10
#: state-flag counts: metric → predicate on the set of '+'-separated flags
_FLAGS = {
    "pgs_active_clean": lambda f: f == {"active", "clean"},
    "pgs_scrubbing": lambda f: "scrubbing" in f,
    "pgs_deep_scrubbing": lambda f: "scrubbing" in f and "deep" in f,
    "pgs_snaptrim": lambda f: "snaptrim" in f or "snaptrim_wait" in f,
    "pgs_recovering": lambda f: bool(f & {"recovering", "recovery_wait", "backfilling", "backfill_wait"}),
}
_SERIES = ([("pgs", "count")] + [(m, "count") for m in _FLAGS] + list(_SUMS.values())
           + [("objects_scrubbed", "count"), ("bytes_scrubbed", "B")])


def sniff(head: bytes) -> bool:
    """A first line that is a JSON object whose first key is ``"format": "cephqos-pg-timeline"``."""
    return _SNIFF.match(head) is not None


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        f = float(x)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _header(path: Path, obj: Any, ln: int) -> dict[str, Any]:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise IngestError(path, _HEADER_HINT, line=ln)
    v = obj.get("version")
    if isinstance(v, bool) or v not in VERSIONS:
        raise IngestError(path, f"unsupported timeline version {v!r:.40}: this reader knows version 1",
                          line=ln)
    pools = obj.get("pools")
    if not isinstance(pools, dict) or not all(isinstance(n, str) for n in pools.values()):
        raise IngestError(path, 'expected "pools" in the header: an object pool id → pool name', line=ln)
    fields = obj.get("pg_fields")
    if (not isinstance(fields, list) or not all(isinstance(f, str) for f in fields)
            or len(set(fields)) != len(fields) or "pgid" not in fields or "state" not in fields):
        raise IngestError(path, 'expected "pg_fields" in the header: a list of distinct column names '
                                'including "pgid" and "state"', line=ln)
    return obj


def _float_col(col: pd.Series) -> np.ndarray:
    """JSON numbers → float64, null → NaN; anything else (text — even ``"10"`` —, booleans, lists,
    objects) → NaN, which the caller flags as not a number when the value is not null."""
    if pd.api.types.infer_dtype(col, skipna=True) in ("integer", "floating", "mixed-integer-float", "empty"):
        try:
            return np.array(col.to_numpy(dtype=object), dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            pass
    return np.array([np.nan if (f := _number(x)) is None else f for x in col], dtype=np.float64)


def _load(path: Path, data: bytes) -> dict[str, Any]:
    """Split and decode the lines; validate header, times and line kinds.

    A sample line of the poller's shape (``{"t": <number>, "pgs": [[...], ...]}``, no ``:`` inside the
    rows; the regular expression :data:`_FAST_SAMPLE` states the shape, one C pass over the file
    (``_scan.pg_lines``, tested against it) finds such lines) is not decoded here: its time is read from
    the line and its rows stay bytes (``(line, rows)``, views into ``data``) for :func:`_pg_columns`,
    which decodes them with ``json`` when the fast path declines.  Everything else, and the last line
    when the file ends without a newline, goes through ``json.loads``."""
    data = bytes(data)
    lines = _classify(data)
    kinds, starts, pos = lines.kind.tolist(), lines.start.tolist(), lines.pos.tolist()
    nonblank = np.flatnonzero(lines.kind).tolist()
    last_nb = nonblank[-1] if nonblank else -1
    truncated_tail = last_nb >= 0 and last_nb == len(kinds) - 1  # no newline after the last line
    view = memoryview(data)
    hdr: dict[str, Any] | None = None
    out: dict[str, Any] = {"samples": [], "marks": [], "events": [], "poll_errors": [],
                           "trailer": None, "truncated": False, "unknown_lines": 0}
    latest = {"poll": -math.inf, "mark": -math.inf}
    try:
        for i in nonblank:
            ln = i + 1
            if (kinds[i] == 1 and hdr is not None and out["trailer"] is None
                    and not (truncated_tail and i == last_nb)):
                t0, t1, r0, r1 = pos[i]
                # deferred only when in time order: a line that goes back is decoded first, so that a
                # line that is not JSON either is reported as such, as the plain reader does
                if math.isfinite(t := float(data[t0:t1])) and t >= latest["poll"] - BACKWARDS_TOLERANCE_S:
                    _advance(path, latest, "poll", t, ln)
                    out["samples"].append((t, ln, (view[starts[i]:starts[i + 1] - 1], view[r0:r1])))
                    continue
            raw = data[starts[i]:starts[i + 1] - 1]
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, huge ints
                if hdr is not None and i == last_nb and truncated_tail and out["trailer"] is None:
                    out["truncated"] = True
                    break
                if hdr is None:
                    raise IngestError(path, f"{_HEADER_HINT}; not JSON ({e})", line=ln) from None
                raise IngestError(path, f"expected one JSON object per line ({e})", line=ln) from None
            if hdr is None:
                hdr = _header(path, obj, ln)
                continue
            _line(path, obj, ln, len(hdr["pg_fields"]), latest, out)
    except IngestError as e:
        # a deferred sample line before this one may be broken: that one is the first error
        _decode_samples(path, [s for s in out["samples"] if e.line is None or s[1] < e.line],
                        len(hdr["pg_fields"]) if hdr else 0)
        raise
    if hdr is None:
        raise IngestError(path, _HEADER_HINT + "; the file has no lines", line=1)
    out["header"] = hdr
    return out


def lines_by_regex(data: bytes) -> PgLines:
    """What ``_scan.pg_lines`` computes in C, line by line with :data:`_FAST_SAMPLE` (the reference the
    tests hold it to, and the switch that turns the deferral off when ``_FAST_SAMPLE`` matches nothing)."""
    raws = data.split(b"\n")
    start = np.zeros(len(raws) + 1, np.int64)
    start[1:] = np.cumsum([len(r) + 1 for r in raws])
    kind = np.zeros(len(raws), np.int8)
    pos = np.zeros((len(raws), 4), np.int64)
    for i, raw in enumerate(raws):
        if not raw.strip():
            continue
        m = _FAST_SAMPLE.fullmatch(raw)
        kind[i] = 1 if m is not None and b":" not in m.group(2) else 2
        if kind[i] == 1:
            pos[i] = [start[i] + m.start(1), start[i] + m.end(1), start[i] + m.start(2), start[i] + m.end(2)]
    return PgLines(start, kind, pos)


def _classify(data: bytes) -> PgLines:
    """The line classifier :func:`_load` uses: the C pass, or :func:`lines_by_regex` where the C part is
    off or not built (tests switch to it too)."""
    return pg_lines(data) if native() else lines_by_regex(data)


def _advance(path: Path, latest: dict[str, float], stream: str, t: float, ln: int) -> None:
    """One clock's lines must not go back by more than :data:`BACKWARDS_TOLERANCE_S`."""
    if t < latest[stream] - BACKWARDS_TOLERANCE_S:
        raise IngestError(path, f"time goes backwards: t={t:.3f} is "
                                f"{latest[stream] - t:.3f} s before an earlier "
                                f"{'mark' if stream == 'mark' else 'sample'} line", line=ln)
    latest[stream] = max(latest[stream], t)


def _line(path: Path, obj: Any, ln: int, nf: int, latest: dict[str, float], out: dict[str, Any]) -> None:
    """One decoded line after the header → ``out`` (sample, mark, event, poll error or trailer)."""
    if not isinstance(obj, dict):
        raise IngestError(path, "expected a JSON object", line=ln)
    if out["trailer"] is not None:
        raise IngestError(path, "expected nothing after the trailer {\"end\": true}", line=ln)
    t = _number(obj.get("t"))
    if t is None:
        raise IngestError(path, f'expected "t" as a number (unix s), got {obj.get("t")!r:.40}', line=ln)
    stream = ("mark" if "mark" in obj else None if "event" in obj
              else "poll" if ("pgs" in obj or "error" in obj or obj.get("end") is True) else None)
    if stream is not None:
        _advance(path, latest, stream, t, ln)
    if "mark" in obj:
        pool = obj.get("pool")
        out["marks"].append((str(obj["mark"]), t, None if pool is None else str(pool)))
    elif "event" in obj:
        out["events"].append((t, str(obj["event"]), str(obj.get("pgid", "")), str(obj.get("osd", ""))))
    elif obj.get("end") is True:
        out["trailer"] = obj
    elif "pgs" in obj:
        out["samples"].append((t, ln, _rows(path, obj["pgs"], nf, ln)))
    elif "error" in obj:
        out["poll_errors"].append(str(obj["error"])[:300])
    else:
        out["unknown_lines"] += 1


def _rows(path: Path, pgs: Any, nf: int, ln: int) -> list:
    if not isinstance(pgs, list) or not all(isinstance(r, list) and len(r) == nf for r in pgs):
        raise IngestError(path, f'expected "pgs" as a list of rows of {nf} values (pg_fields)', line=ln)
    return pgs


def _decode_samples(path: Path, samples: list[tuple], nf: int) -> list[tuple[float, int, list]]:
    """Samples with their rows as lists: deferred lines (``(line, rows)`` bytes) decoded with ``json``,
    exactly as a line of any other shape is."""
    out = []
    for t, ln, rows in samples:
        if isinstance(rows, tuple):
            try:
                obj = json.loads(bytes(rows[0]))
            except (ValueError, RecursionError) as e:
                raise IngestError(path, f"expected one JSON object per line ({e})", line=ln) from None
            rows = _rows(path, obj.get("pgs"), nf, ln)
        out.append((t, ln, rows))
    return out


@dataclass
class _Columns:
    """The PG rows of all samples, column-wise: ``pgid``/``state`` as codes into their distinct values,
    the numeric pg_fields (:data:`_SUMS`, :data:`_STAMPS`) as float64 (NaN = null), rows per sample."""
    pgid_codes: np.ndarray
    pgids: list[str]
    state_codes: np.ndarray
    states: list[str]
    numbers: dict[str, np.ndarray]
    n_per: np.ndarray


def _hi(field: str) -> float:
    """Upper bound (exclusive) of a numeric pg field: stamps unix s, bytes, counts."""
    return _STAMP_MAX if field in _STAMPS else 1e18 if _SUMS[field][1] == "B" else 1e15


def _columns_plain(path: Path, fields: list[str], samples: list[tuple]) -> _Columns:
    """The reference reader: ``json`` rows → object columns → checked types and ranges (errors name the
    line)."""
    samples = _decode_samples(path, samples, len(fields))
    n_per = np.array([len(s[2]) for s in samples], dtype=np.int64)
    flat = [row for s in samples for row in s[2]]
    raw = pd.DataFrame(flat, columns=fields, dtype=object) if flat else \
        pd.DataFrame({f: pd.Series(dtype=object) for f in fields})
    line_of = np.repeat(np.array([s[1] for s in samples], dtype=np.int64), n_per)
    for f in ("pgid", "state"):
        ok = (np.ones(len(raw), dtype=bool) if pd.api.types.infer_dtype(raw[f], skipna=False) == "string"
              else raw[f].map(lambda x: isinstance(x, str)).to_numpy(bool))
        if f == "pgid" and ok.all():
            ok = raw[f].str.contains(".", regex=False).to_numpy(bool)
        if not ok.all():
            raise IngestError(path, f'expected "{f}" as text'
                              + (' "<pool>.<hex>"' if f == "pgid" else ""),
                              line=int(line_of[np.argmin(ok)]))
    pgid_codes, pgids = pd.factorize(raw["pgid"].to_numpy(dtype=object))
    state_codes, states = pd.factorize(raw["state"].to_numpy(dtype=object))
    numbers = {}
    for f in [f for f in fields if f in _SUMS or f in _STAMPS]:
        v = _float_col(raw[f])
        hi = _hi(f)
        bad = raw[f].notna().to_numpy(bool) & ~((v >= 0) & (v < hi))
        if bad.any():
            i = int(np.argmax(bad))
            raise IngestError(path, f'expected "{f}" as a number in [0, {hi:g}) or null'
                              + (" (unix s)" if f in _STAMPS else "") + f", got {raw[f].iloc[i]!r:.40}",
                              line=int(line_of[i]))
        numbers[f] = v
    return _Columns(pgid_codes, list(pgids), state_codes, list(states), numbers, n_per)


def _columns_fast(fields: list[str], samples: list[tuple]) -> _Columns | None:
    """The same columns from the deferred row bytes, read by the C scanner (:func:`._scan.pg_rows`, one
    call for the file); ``None`` — the caller then runs :func:`_columns_plain` — unless every sample is
    deferred and every value is what the plain reader accepts: ``pgid``/``state`` plain double-quoted
    ASCII text (no escapes), numeric fields numbers in range or null, other fields JSON scalars, each
    row exactly ``len(fields)`` values."""
    if not samples or not all(isinstance(s[2], tuple) for s in samples):
        return None
    numeric = [f for f in fields if f in _SUMS or f in _STAMPS]
    ftypes = [PG_PGID if f == "pgid" else PG_STATE if f == "state" else
              numeric.index(f) if f in numeric else PG_ANY for f in fields]
    got = pg_rows(b"\n".join(s[2][1] for s in samples), len(samples), ftypes, len(numeric))
    if got is None:
        return None
    pgids, states = got.names
    if not all("." in g for g in pgids):
        return None
    numbers = {}
    for k, f in enumerate(numeric):
        v = got.numbers[k]
        if not (np.isnan(v) | ((v >= 0) & (v < _hi(f)))).all():
            return None
        numbers[f] = v
    return _Columns(got.codes[0].astype(np.int64), pgids, got.codes[1].astype(np.int64), states, numbers,
                    got.n_per)


def _pg_columns(path: Path, fields: list[str], samples: list[tuple], fast: bool = True) -> _Columns:
    """:func:`_columns_fast` when it accepts the file, else the reference :func:`_columns_plain`."""
    return (fast and _columns_fast(fields, samples)) or _columns_plain(path, fields, samples)


@dataclass
class _Pgs:
    """All PG rows of all samples, column-wise: ``sample`` (index into the time-sorted sample times),
    ``pool`` (codes into ``pools``, sorted by name), ``pgid`` (codes into ``pgids``) and ``cols``: ``pgs``
    (1), flag counts (0/1) and the numeric pg_fields (float64, NaN = null)."""
    sample: np.ndarray
    pool: np.ndarray
    pools: list[str]
    pgid: np.ndarray
    pgids: list[str]
    cols: dict[str, np.ndarray]

    def rows_of(self, pool: str) -> np.ndarray:
        """Mask of the rows of ``pool`` (all False when no PG of it was sampled)."""
        code = self.pools.index(pool) if pool in self.pools else -1
        return self.pool == code


def _pg_table(path: Path, fields: list[str], pools: dict[str, str],
              samples: list[tuple], fast: bool = True) -> tuple[_Pgs, np.ndarray]:
    """All PG rows of all samples (:class:`_Pgs`) and the sample times, sorted."""
    ts = np.array([s[0] for s in samples], dtype=np.float64)
    order = np.argsort(ts, kind="stable")
    rank = np.empty(len(ts), dtype=np.int64)
    rank[order] = np.arange(len(ts))
    c = _pg_columns(path, fields, samples, fast)
    # pools as codes over the distinct names (a few per file, not a string per row)
    pool_names, pool_of_pgid = np.unique(np.array([pools.get(p, p) for p in (g.partition(".")[0] for g in c.pgids)],
                                                  dtype=object).astype(str), return_inverse=True)
    n = len(c.pgid_codes)
    cols: dict[str, np.ndarray] = {"pgs": np.ones(n, dtype=np.int64)}
    flagsets = [frozenset(s.split("+")) for s in c.states]
    for metric, pred in _FLAGS.items():
        cols[metric] = np.array([pred(f) for f in flagsets] or [False], dtype=np.int64)[c.state_codes]
    cols.update(c.numbers)
    return _Pgs(rank[np.repeat(np.arange(len(ts)), c.n_per)],
                pool_of_pgid[c.pgid_codes] if len(c.pgids) else np.asarray(c.pgid_codes, np.int64),
                pool_names.tolist(), c.pgid_codes, c.pgids, cols), ts[order]


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if len(idx) else None


def _at_or_before(tt: np.ndarray, t: float, fallback_after: bool = False) -> int | None:
    """Index of the last time ≤ t (else, with ``fallback_after``, the first one after)."""
    idx = np.flatnonzero(tt <= t)
    if len(idx):
        return int(idx[-1])
    return _first(tt > t) if fallback_after else None


def _first_marks(doc_marks: list[tuple]) -> tuple[dict[str, float], dict[str, str], int]:
    """Marks by name (unix s) and the pool each names, the first line of each name counting; and the
    number of later duplicates ignored."""
    marks: dict[str, float] = {}
    mark_pools: dict[str, str] = {}
    dup_marks = 0
    for name, t, pool in doc_marks:
        if name in marks:
            dup_marks += 1
            continue
        marks[name] = t
        if pool is not None:
            mark_pools[name] = pool
    return marks, mark_pools, dup_marks


def _time_zero(doc: dict[str, Any], marks: dict[str, float], started: float | None) -> tuple[float, str]:
    """The timeline's time base (unix s) and where it came from: the ``fio_start`` mark, else the
    header's ``started_unix``, else the earliest sample or mark line."""
    if "fio_start" in marks:
        return marks["fio_start"], "fio_start"
    if started is not None:
        return started, "started_unix"
    first = [s[0] for s in doc["samples"]] + [m[1] for m in doc["marks"]]
    return (min(first), "first_line") if first else (0.0, "none")


def _add_scrub_progress(tab: _Pgs, scrub_pool: str | None, t_req: float | None) -> None:
    """Per PG row, ``objects_scrubbed``/``bytes_scrubbed`` of the pool named by ``deep_scrub_requested``:
    the row's num_objects/num_bytes once its ``last_deep_scrub_stamp`` ≥ the request (unix s), else 0."""
    if t_req is not None and scrub_pool is not None and "last_deep_scrub_stamp" in tab.cols:
        done = tab.rows_of(scrub_pool) & (tab.cols["last_deep_scrub_stamp"] >= t_req)
        for field, metric in (("num_objects", "objects_scrubbed"), ("num_bytes", "bytes_scrubbed")):
            if field in tab.cols:
                v = tab.cols[field]
                tab.cols[metric] = np.where(done & ~np.isnan(v), v, 0.0)


def _operations(tab: _Pgs, per_pool: _PerPool, ts: np.ndarray, ev: _Events, marks: dict[str, float],
                mark_pools: dict[str, str], t0: float, meta: dict[str, Any],
                incomplete: list[str]) -> list[tuple[str, str, str, float, str]]:
    """Summary rows of the background operations the marks announce (scrub, snaptrim, recovery) and
    their start marks in ``t_s`` (s since ``t0``, unix s); unmeasurable ones noted in ``incomplete``."""
    rows: list[tuple[str, str, str, float, str]] = []
    scrub_pool = mark_pools.get("deep_scrub_requested")
    t_req = marks.get("deep_scrub_requested")
    if t_req is not None:
        if scrub_pool is None:
            incomplete.append("deep_scrub_requested names no pool: scrub not measured")
        else:
            rows += _scrub(tab, per_pool, ts, ev, scrub_pool, t_req, meta, incomplete)
    if "snap_removed" in marks:
        snap_pool = mark_pools.get("snap_removed")
        if snap_pool is None:
            incomplete.append("snap_removed names no pool: snaptrim not measured")
        else:
            rows += _snaptrim(per_pool, ts, snap_pool, marks["snap_removed"], incomplete)
    if "recovery_enabled" in marks:
        rows += _recovery(tab, ts, marks["recovery_enabled"], incomplete)
    for mark, metric, job in (("deep_scrub_requested", "scrub_start", scrub_pool),
                              ("snap_removed", "snaptrim_start", mark_pools.get("snap_removed")),
                              ("recovery_enabled", "recovery_start", "")):
        if mark in marks:
            rows.append((job or "", "", metric, marks[mark] - t0, "s"))
    return rows


def parse(path: Path, data: bytes) -> Parsed:
    source = str(path)
    doc = _load(path, data)
    hdr = doc["header"]
    fields: list[str] = hdr["pg_fields"]
    pools: dict[str, str] = {str(k): v for k, v in hdr["pools"].items()}
    ceph_version = str(hdr.get("ceph_version") or "")
    mv = _VERSION.search(ceph_version)
    incomplete: list[str] = []

    marks, mark_pools, dup_marks = _first_marks(doc["marks"])
    started = _number(hdr.get("started_unix"))
    t0, t0_from = _time_zero(doc, marks, started)

    tab, ts = _pg_table(path, fields, pools, doc["samples"])
    meta: dict[str, Any] = {
        "tool": "ceph", "tool_version": mv.group(1) if mv else None, "ceph_version": ceph_version,
        "format_version": hdr["version"], "pools": pools, "pg_fields": fields,
        "interval_s": _number(hdr.get("interval_s")), "started_unix": started,
        "t0_unix": t0, "t0_from": t0_from,
        "marks": {k: v - t0 for k, v in marks.items()}, "mark_pools": mark_pools,
        "samples": len(ts), "poll_errors": len(doc["poll_errors"]),
        "poll_error_examples": doc["poll_errors"][:3], "events": len(doc["events"]),
        "resolution_s": float(np.median(np.diff(ts))) if len(ts) > 1 else None,
        "trailer": doc["trailer"] is not None, "truncated_last_line": doc["truncated"],
    }
    if dup_marks:
        meta["duplicate_marks"] = dup_marks  # the first of each name is used
    if doc["unknown_lines"]:
        meta["unknown_lines"] = doc["unknown_lines"]
    if doc["trailer"] is None:
        incomplete.append("no trailer: the capture was interrupted"
                          + (" (last line truncated)" if doc["truncated"] else ""))
    else:
        meta["trailer_samples"] = doc["trailer"].get("samples")

    evl = doc["events"]
    ev = _Events(np.array([e[0] for e in evl], dtype=np.float64), [e[1] for e in evl], [e[2] for e in evl],
                 [pools.get(e[2].partition(".")[0], e[2].partition(".")[0]) for e in evl])
    meta["event_counts"] = dict(Counter(ev.event).most_common())

    scrub_pool = mark_pools.get("deep_scrub_requested")
    _add_scrub_progress(tab, scrub_pool, marks.get("deep_scrub_requested"))
    per_pool = _per_pool(tab, [c for c in tab.cols if c not in _STAMPS], len(ts))
    series = _series(source, per_pool, ts - t0, scrub_pool)
    rows = _operations(tab, per_pool, ts, ev, marks, mark_pools, t0, meta, incomplete)
    meta["incomplete"] = incomplete
    return Parsed(path=source, kind=KIND, meta=meta, summary=summary_frame(source, rows),
                  series=series, partial=bool(incomplete))


@dataclass
class _Events:
    """Cluster-log events: time (unix s), text, pgid and the pgid's pool name, per event."""
    t: np.ndarray
    event: list[str]
    pgid: list[str]
    pool: list[str]


@dataclass
class _PerPool:
    """Sums per (pool, sample) that has PG rows, pools in name order then samples: ``pool`` codes into
    ``pools``, ``sample``, ``sums`` by series metric (pg_fields renamed)."""
    pool: np.ndarray
    sample: np.ndarray
    pools: list[str]
    sums: dict[str, np.ndarray]

    def rows_of(self, pool: str) -> np.ndarray | None:
        """Indices of ``pool``'s rows (ascending samples), or None when it has none."""
        if pool not in self.pools:
            return None
        idx = np.flatnonzero(self.pool == self.pools.index(pool))
        return idx if len(idx) else None


def _series(source: str, per_pool: _PerPool, t_s: np.ndarray, scrub_pool: str | None) -> pd.DataFrame:
    """The (pool, sample) × metric table → tidy rows ordered by pool, metric, time (one build)."""
    metrics = [(m, u) for m, u in _SERIES if m in per_pool.sums]
    if not len(per_pool.pool) or not metrics:
        return empty_frame(SERIES_COLUMNS)
    vals = np.column_stack([per_pool.sums[m] for m, _ in metrics])
    present = np.unique(per_pool.pool)  # pools with rows (all, as every PG row adds to one), by name
    pool_codes = np.searchsorted(present, per_pool.pool)
    pool_names = np.asarray(per_pool.pools, dtype=object)[present]
    sample = per_pool.sample
    keep = np.ones(vals.shape, dtype=bool)
    for j, (m, _) in enumerate(metrics):
        if m in ("objects_scrubbed", "bytes_scrubbed"):
            keep[:, j] = pool_names[pool_codes] == scrub_pool
    ri, mj = np.nonzero(keep)
    order = np.lexsort((sample[ri], mj, pool_codes[ri]))
    ri, mj = ri[order], mj[order]
    units = sorted({u for _, u in metrics})
    unit_of = np.array([units.index(u) for _, u in metrics], dtype=np.int8)
    n = len(ri)
    zeros = np.zeros(n, dtype=np.int8)
    return Tidy({
        "source": Label(source, len(zeros)),
        "job": cat(pool_codes[ri], pool_names.tolist()),
        "ddir": cat(zeros, [""]),
        "metric": cat(mj, [m for m, _ in metrics]),
        "value": vals[ri, mj],
        "unit": cat(unit_of[mj], units),
        "t_s": t_s[sample[ri]].astype(np.float64),
    }, SERIES_COLUMNS)


def _group_sums(key: np.ndarray, cols: dict[str, np.ndarray], names: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Sums of the columns ``names`` over the rows of each distinct ``key`` (ascending), null (NaN)
    counting 0, as ``DataFrame.groupby(key).sum()`` gives them (whole numbers: exact below 2**53).
    Keys that are small non-negative numbers (pool × sample) are counted into bins directly, no sort;
    either way each sum adds its rows in row order."""
    top = int(key.max()) + 1 if len(key) else 0
    dense = len(key) and key.min() >= 0 and top <= 4 * len(key) + 1024
    if dense:
        uniq, inv = np.flatnonzero(np.bincount(key, minlength=top)), key
    else:
        uniq, inv = np.unique(key, return_inverse=True)
    sums = {}
    for c in names:
        v = cols[c].astype(np.float64, copy=False)
        s = np.bincount(inv, weights=np.where(np.isnan(v), 0.0, v), minlength=top if dense else len(uniq))
        sums[c] = s[uniq] if dense else s
    return uniq, sums


def _per_pool(tab: _Pgs, names: list[str], n_samples: int) -> _PerPool:
    """(pool, sample) → sums of the columns ``names`` (pg_fields renamed to their series metrics)."""
    m = max(n_samples, 1)
    key, sums = _group_sums(tab.pool.astype(np.int64) * m + tab.sample, tab.cols, names)
    return _PerPool(key // m, key % m, tab.pools, {_SUMS[c][0] if c in _SUMS else c: v for c, v in sums.items()})


def _scrub(tab: _Pgs, per_pool: _PerPool, ts: np.ndarray, ev: _Events, pool: str,
           t_req: float, meta: dict[str, Any], incomplete: list[str]) -> list[tuple]:
    g = per_pool.rows_of(pool)
    if g is None:
        incomplete.append(f"no PGs of scrubbed pool {pool!r} in the samples")
        return []
    rows: list[tuple] = []
    tt = ts[per_pool.sample[g]]
    i = _at_or_before(tt, t_req, fallback_after=True)
    objects = float(per_pool.sums["objects"][g][i]) if "objects" in per_pool.sums else None
    nbytes = float(per_pool.sums["bytes"][g][i]) if "bytes" in per_pool.sums else None
    mine = tab.rows_of(pool)
    pg_set = np.unique(tab.pgid[mine & (tab.sample == tab.sample[mine].max())])  # the last sample's PGs
    # per PG: first completion at/after the request, from the cluster log, else from the stamps
    code_of = {name: k for k, name in enumerate(tab.pgids)}
    by_event = np.full(len(tab.pgids), np.nan)
    for t, text, pgid, p in zip(ev.t, ev.event, ev.pgid, ev.pool):
        k = code_of.get(pgid)  # None: a PG no sample shows, not in pg_set
        if k is not None and p == pool and t >= t_req and _DEEP_DONE.match(text) and not by_event[k] <= t:
            by_event[k] = t
    by_stamp = np.full(len(tab.pgids), np.nan)
    if "last_deep_scrub_stamp" in tab.cols:
        stamp = tab.cols["last_deep_scrub_stamp"]
        st = mine & (stamp >= t_req)
        np.fmin.at(by_stamp, tab.pgid[st], stamp[st])
    from_event = ~np.isnan(by_event[pg_set])
    end = np.where(from_event, by_event[pg_set], by_stamp[pg_set])
    n_done = int((~np.isnan(end)).sum())
    rows += [(pool, "", "scrub_pgs", float(len(pg_set)), "count"),
             (pool, "", "scrub_pgs_done", float(n_done), "count")]
    if objects is not None:
        rows.append((pool, "", "scrub_objects", objects, "count"))
    if nbytes is not None:
        rows.append((pool, "", "scrub_bytes", nbytes, "B"))
    if n_done < len(pg_set):
        incomplete.append(f"deep scrub of pool {pool!r} unfinished: {n_done} of {len(pg_set)} PGs done")
        return rows
    meta["scrub_duration_from"] = ("events" if from_event.all() else
                                   "stamps" if not from_event.any() else "events+stamps")
    dur = float(np.nanmax(end)) - t_req
    rows.append((pool, "", "scrub_duration", dur, "s"))
    if dur > 0:
        if nbytes is not None:
            rows.append((pool, "", "scrub_rate", nbytes / dur, "B/s"))
        if objects is not None:
            rows.append((pool, "", "scrub_rate_objects", objects / dur, "1/s"))
    return rows


def _snaptrim(per_pool: _PerPool, ts: np.ndarray, pool: str, t_rm: float,
              incomplete: list[str]) -> list[tuple]:
    g = per_pool.rows_of(pool)
    if g is None:
        incomplete.append(f"no PGs of snap pool {pool!r} in the samples")
        return []
    tt = ts[per_pool.sample[g]]
    sums = {k: v[g] for k, v in per_pool.sums.items()}
    queue = sums["snaptrim_queue"] if "snaptrim_queue" in sums else np.zeros(len(g))
    active = (queue > 0) | (sums["pgs_snaptrim"] > 0)
    after = tt > t_rm
    seen = _first(after & active)
    if seen is None:
        incomplete.append(f"snaptrim of pool {pool!r} never seen after snap_removed")
        return []
    end = _first(after & ~active & (np.arange(len(tt)) > seen))
    if end is None:
        incomplete.append(f"snaptrim of pool {pool!r} unfinished at the end of the timeline")
        return []
    dur = float(tt[end] - t_rm)
    rows: list[tuple] = [(pool, "", "snaptrim_duration", dur, "s")]
    before = _at_or_before(tt, t_rm)
    if "objects" in sums and before is not None:
        n = float(sums["objects"][before] - sums["objects"][end])
        rows += [(pool, "", "snaptrim_objects", n, "count"), (pool, "", "snaptrim_rate", n / dur, "1/s")]
    return rows


def _recovery(tab: _Pgs, ts: np.ndarray, t_rec: float, incomplete: list[str]) -> list[tuple]:
    cols = [c for c in ("degraded", "misplaced", "unfound") if c in tab.cols]
    sample, c = _group_sums(tab.sample, tab.cols, ["pgs", "pgs_active_clean"] + cols)
    tt = ts[sample]
    dirty = sum((c[x] for x in cols), np.zeros(len(sample)))
    pgs = c["pgs"]
    clean = (pgs > 0) & (c["pgs_active_clean"] == pgs) & (dirty == 0)
    end = _first((tt > t_rec) & clean)
    todo = sum((c[x] for x in ("degraded", "misplaced") if x in c), np.zeros(len(sample)))
    before = _at_or_before(tt, t_rec)
    n = float(todo[before]) if before is not None else 0.0
    if n == 0:
        window = (tt > t_rec) & (tt <= t_rec + RECOVERY_COUNT_WINDOW_S)
        n = float(todo[window].max()) if window.any() else 0.0
    rows: list[tuple] = [("", "", "recovery_objects", n, "count")]
    if end is None:
        incomplete.append("recovery unfinished at the end of the timeline")
        return rows
    dur = float(tt[end] - t_rec)
    rows += [("", "", "recovery_duration", dur, "s"), ("", "", "recovery_rate", n / dur, "1/s")]
    return rows

"""Value rules per format: a parsed file whose numbers cannot be right fails, saying what was expected.

The readers check syntax; these rules check the tidy rows they produced for one file (units as in
:mod:`analysis.dictionary`), so that a damaged file never passes as ``ok`` with changed values:

* **finite**: every summary ``value`` and every ``t_s`` is a finite number (a ``"12.5ms"`` or ``"fast"`` a
  reader let through as NaN fails here); a series value may be missing (NaN: rados bench prints ``-``
  before its first completion), never infinite;
* **ranges** (:data:`RANGES`): no negative throughput, latency, duration, size or count; CPU fractions
  (getput's client CPU too) and btt's shares of Q2C within [0, 1]; no magnitude a tool prints for one
  run (:data:`MAGNITUDE`: |value| < 10¹⁵, bytes < 10¹⁸; the largest in ``data/raw`` is 3.3·10¹⁰, a 33 s
  fio clat_max in ns);
* **time order**: within one series (job, direction, metric) ``t_s`` never goes backwards (a log
  concatenated with itself does);
* **required metrics** (:data:`REQUIRED`): a fio job direction with any metric has its IOPS and bandwidth;
  a rados bench run has its bandwidth and IOPS (a truncated output loses them).

Only what a tool can never print is refused: Ceph timeline marks (``*_start``, seconds on the timeline's
clock) and btt's seek distances may be negative, an OSD's CPU may exceed one CPU, a disk's %util may
round above 100.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .base import Tidy, as_frame, category_names, column, has_column


@dataclass(frozen=True)
class Range:
    """Values of ``metric`` (a regular expression over the tidy ``metric``) of these ``kinds`` (None: every
    kind) and ``unit`` (None: any) must lie in [lo, hi]; ``exempt``: metrics of those kinds left alone."""
    kinds: tuple[str, ...] | None
    unit: str | None
    lo: float
    hi: float
    what: str
    metric: str = r".*"
    exempt: str = r"(?!)"


RANGES: tuple[Range, ...] = (
    Range(None, "1/s", 0, np.inf, "a rate ≥ 0"),
    Range(None, "B/s", 0, np.inf, "a bandwidth ≥ 0"),
    Range(None, "ns", 0, np.inf, "a latency ≥ 0 ns"),
    Range(None, "B", 0, np.inf, "a size ≥ 0 B"),
    Range(None, "count", 0, np.inf, "a count ≥ 0", exempt=r"(?:q2q|d2d)_seek_(?:mean|median)"),
    Range(None, "s", 0, np.inf, "a duration ≥ 0 s", exempt=r".*_start"),
    Range(("sysutil",), "ratio", 0, 1, "a CPU fraction in [0, 1]", metric=r"cpu_(?:busy|iowait|steal)"),
    Range(("btt",), "ratio", 0, 1, "a share of Q2C in [0, 1]", metric=r".*_share"),
    Range(("getput",), "ratio", 0, 1, "a CPU fraction in [0, 1]", metric=r"client_cpu"),
)

#: unit → largest |value| accepted (others: ``MAGNITUDE[None]``); a "1e300" in a file is damage, not data
MAGNITUDE: dict[str | None, float] = {None: 1e15, "B": 1e18}

#: kind → (group keys, metrics each group with any row must have, why)
REQUIRED: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "fio-json": (("job", "ddir"), ("iops", "bw"), "fio prints iops and bw for every job direction"),
    "fio-text": (("job", "ddir"), ("iops", "bw"), "fio prints IOPS and BW for every job direction"),
    "fio-terse": (("job", "ddir"), ("iops", "bw"), "fio's terse line has iops and bw for every direction"),
    "rados-bench": ((), ("bw", "iops"), "rados bench's summary states bandwidth and IOPS"),
}

#: kinds whose series are time-ordered per (job, ddir, metric)
TIMED = ("fio-log", "fio-hist-log", "rados-bench", "sysutil", "ceph-pg-timeline", "blktrace", "blkparse")


def _label(frame: "pd.DataFrame | Tidy", i: int) -> str:
    frame = as_frame(frame)  # an error message: the frame is worth building
    r = frame.iloc[i]
    parts = [f"{c} {r[c]}" for c in ("job", "ddir") if c in frame and pd.notna(r[c]) and str(r[c])]
    return f"{r['metric']}" + (f" ({', '.join(parts)})" if parts else "")


#: every rule holds for a finite value in [0, this) whose unit is none of :data:`_BOUNDED_UNITS` (the
#: units of the rules with tighter bounds; None: a rule for any unit has them, so no shortcut)
_PLAIN_HI = min(MAGNITUDE.values())
_TIGHT = [r for r in RANGES if r.lo > 0 or r.hi < _PLAIN_HI]
_BOUNDED_UNITS = None if any(r.unit is None for r in _TIGHT) else frozenset(r.unit for r in _TIGHT)


def _floats(frame: "pd.DataFrame | Tidy", name: str) -> np.ndarray:
    a = column(frame, name)
    return a.astype(np.float64, copy=False) if isinstance(a, np.ndarray) else a.to_numpy(dtype=float, na_value=np.nan)


def _range_problems(kind: str, frame: "pd.DataFrame | Tidy", table: str) -> list[str]:
    out: list[str] = []
    if not len(frame):
        return out
    v = _floats(frame, "value")
    t = _floats(frame, "t_s") if has_column(frame, "t_s") else None
    ucol = column(frame, "unit")
    if (np.isfinite(v).all() and (t is None or np.isfinite(t).all()) and (v >= 0).all()
            and (v < _PLAIN_HI).all() and isinstance(ucol, pd.Categorical) and _BOUNDED_UNITS is not None
            and _BOUNDED_UNITS.isdisjoint(category_names(ucol))):
        return out  # what nearly every file is: no rule can fail, no need for the label codes
    # a series sample may be missing (rados bench prints '-' before its first completion): NaN, never inf
    bad = np.isinf(v) if table == "series" else ~np.isfinite(v)
    if t is not None:
        bad |= ~np.isfinite(t)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        out.append(f"{table} {_label(frame, i)}: {float(v[i])!r}"
                   + (f" at t {float(t[i])!r} s" if t is not None else "")
                   + f": expected a finite number ({int(bad.sum())} such rows)")
    mcodes, names = _codes(column(frame, "metric"))
    ucodes, units = _codes(ucol)
    caps, rules = _rule_masks(kind, tuple(names), tuple(units))
    cap = caps[ucodes]
    huge = np.isfinite(v) & (np.abs(v) >= cap)
    if huge.any():
        i = int(np.flatnonzero(huge)[0])
        out.append(f"{table} {_label(frame, i)} = {v[i]:g} {units[ucodes[i]] if ucodes[i] >= 0 else ''}: "
                   f"expected |value| < {cap[i]:g} ({int(huge.sum())} such rows)")
    for ri, lut, ulut in rules:
        r = RANGES[ri]
        sel = lut[mcodes]
        if ulut is not None:
            sel &= ulut[ucodes]
        wrong = sel & np.isfinite(v) & ((v < r.lo) | (v > r.hi))
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            out.append(f"{table} {_label(frame, i)} = {v[i]:g} {units[ucodes[i]]}: expected {r.what} "
                       f"({int(wrong.sum())} such rows)")
    return out


@functools.lru_cache(maxsize=4096)
def _rule_masks(kind: str, names: tuple[str, ...], units: tuple[str, ...]) -> tuple[np.ndarray, tuple]:
    """For one file's metric and unit names: the magnitude cap per unit code, and per range rule that can
    apply, (rule index, mask over metric codes, mask over unit codes or None); code -1 (no label) is the
    last entry of each.  Cached: the same few label sets recur in every file of a kind (read-only arrays)."""
    caps = np.array([MAGNITUDE.get(u, MAGNITUDE[None]) for u in units] + [MAGNITUDE[None]])
    rules = []
    for ri, r in enumerate(RANGES):
        if r.kinds is not None and kind not in r.kinds:
            continue
        lut = np.array([_applies(ri, m) for m in names] + [False])
        if not lut.any():
            continue
        ulut = np.array([u == r.unit for u in units] + [False]) if r.unit else None
        rules.append((ri, lut, ulut))
    for a in [caps] + [x for rule in rules for x in rule[1:] if x is not None]:
        a.flags.writeable = False
    return caps, tuple(rules)


@functools.lru_cache(maxsize=4096)
def _applies(rule: int, metric: str) -> bool:
    """Whether ``RANGES[rule]`` covers ``metric`` (its pattern, not its exemption); cached: a few dozen
    metric names recur in every file."""
    r = RANGES[rule]
    return re.fullmatch(r.metric, metric) is not None and re.fullmatch(r.exempt, metric) is None


def _codes(arr) -> tuple[np.ndarray, list[str]]:
    """(codes, names) of a label column's array, categorical or not (a missing label: code -1)."""
    if isinstance(arr, pd.Categorical):  # codes as stored, names without a Series per call (≈ 5× faster)
        return arr.codes, category_names(arr)
    codes, uniques = pd.factorize(arr)
    return codes, [str(c) for c in uniques]


def _time_problems(frame: "pd.DataFrame | Tidy") -> list[str]:
    if not len(frame) or not has_column(frame, "t_s"):
        return []
    t = _floats(frame, "t_s")
    if not (np.diff(t) < 0).any():
        return []  # never back in the whole table, so never back within one series
    codes = np.zeros(len(frame), dtype=np.int64)
    for c in ("job", "ddir", "metric"):  # one integer per (job, ddir, metric): mixed-radix label codes
        if has_column(frame, c):
            k, names = _codes(column(frame, c))
            codes = codes * (len(names) + 1) + (k.astype(np.int64) + 1)
    order = np.argsort(codes, kind="stable")  # already grouped (as readers write): one linear pass
    c, t = codes[order], t[order]
    back = (np.diff(t) < 0) & (c[1:] == c[:-1])
    if not back.any():
        return []
    j = int(np.flatnonzero(back)[0])
    i = int(order[j + 1])
    return [f"series {_label(frame, i)}: time goes back from {t[j]:g} s to {t[j + 1]:g} s: expected "
            f"samples in time order ({int(back.sum())} steps back; a log concatenated with itself?)"]


def _required_problems(kind: str, summary: "pd.DataFrame | Tidy") -> list[str]:
    rule = REQUIRED.get(kind)
    if rule is None or not len(summary):
        return []
    keys, need, why = rule
    # one integer per group (mixed-radix label codes), then per needed metric the groups that have it
    group = np.zeros(len(summary), dtype=np.int64)
    labels = []
    for k in keys:
        codes, names = _codes(column(summary, k))
        group = group * (len(names) + 1) + (codes.astype(np.int64) + 1)
        labels.append(names)
    mcodes, metrics = _codes(column(summary, "metric"))
    present = np.unique(group)
    lacking: dict[int, list[str]] = {}
    for x in need:
        has = np.zeros(0, dtype=np.int64) if x not in metrics else np.unique(group[mcodes == metrics.index(x)])
        for g in np.setdiff1d(present, has):
            lacking.setdefault(int(g), []).append(x)
    out = []
    for g, missing in sorted(lacking.items(), key=lambda kv: _group_labels(kv[0], labels)):
        where = ", ".join(f"{k} {v}" for k, v in zip(keys, _group_labels(g, labels)))
        out.append(f"summary{' (' + where + ')' if where else ''} lacks {', '.join(missing)}: expected them "
                   f"({why}; a truncated or damaged output?)")
    return out


def _group_labels(g: int, labels: list[list[str]]) -> tuple[str, ...]:
    """The key values of a mixed-radix group number (a missing label: "nan", as groupby printed it)."""
    out = []
    for names in reversed(labels):
        g, c = divmod(g, len(names) + 1)
        out.append(names[c - 1] if c else "nan")
    return tuple(reversed(out))


def problems(kind: str, summary: "pd.DataFrame | Tidy", series: "pd.DataFrame | Tidy") -> list[str]:
    """What is wrong with one parsed file's rows (module docstring), most telling first; [] when nothing.
    The tables as a reader gives them: DataFrames or :class:`~.base.Tidy` columns."""
    out = _required_problems(kind, summary)
    out += _range_problems(kind, summary, "summary")
    out += _range_problems(kind, series, "series")
    if kind in TIMED:
        out += _time_problems(series)
    return out

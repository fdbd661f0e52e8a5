"""A performance history: runs ordered in time, one series per cell and metric, change points named.

* **Runs** come from any data :mod:`analysis.ingest` reads, one value per run and metric as ``compare``
  takes them (:func:`analysis.stats.abtest.run_values`: throughputs summed over a run's jobs, latencies
  averaged).
* **A run's time** (unix s): its run.json's ``started`` (our captures), else fio's own ``timestamp``
  (``fio_timestamp``, when fio wrote its JSON), else — only when the caller passes them — the files'
  modification times, with a note saying so.
* **A point** (a build, a night): the run key ``point`` where the data has one (``capture.history``),
  else the given ``point_key``, else the top folder the run lies in under the history's root (a nightly
  folder: ``2026-11-01/…``, whatever layout is below it); runs of one point are its **repeats**.  Points are
  ordered by their earliest run's time (then by label).
* **A series**: the points of one cell (:data:`analysis.stats.abtest.CELL` and the workload keys the data
  has, plus ``history`` where our captures name one) and metric.
* **Changes**: :func:`analysis.stats.changepoint.changes` on each series' point values (log geometric
  means); each change with the medians of the runs on either side, the change (%) with its 95 % CI, p,
  and whether it is for the worse (throughput lower, latency or duration higher) and acknowledged.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from . import changepoint as cp
from .abtest import CELL, DEFAULT_METRICS, HIGHER_BETTER, WORKLOAD_KEYS, run_values

#: run keys that tell histories apart beside the workload (our capture's ``history``)
SERIES_EXTRA = ("history",)
#: the change table's columns, in order
COLUMNS = ["series", "metric", "unit", "point", "time", "index", "points", "median_before", "median_after",
           "change_pct", "ci_lo_pct", "ci_hi_pct", "p", "n_points_before", "n_points_after", "n_runs_before",
           "n_runs_after", "direction", "acknowledged", "in_window", "fails"]


class HistoryError(ValueError):
    """Input that cannot make a history (no runs with a time, an acknowledged-changes file that cannot be
    read: the message names the file and line)."""


@dataclass
class History:
    """The runs of a history (``runs``: series keys, metric, unit, run, point, time, value), the keys a
    series is made of, and notes on what was assumed (times from file dates, runs without a time)."""
    runs: pd.DataFrame
    keys: list[str]
    notes: list[str] = field(default_factory=list)


def load_paths(paths: Sequence[str | Path], where: dict[str, str] | None = None,
               jobs: int = 1, allow_duplicates: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """The summary rows of ``paths`` (:func:`analysis.ingest.anysource.load`: folders, archives, tables)
    with ``where`` applied, ``_ft`` (each file's modification time, unix s, for runs with no time of their
    own; NaN for archives and tables) and, for several paths, ``_dir`` (each path's name: a point) and
    runs prefixed with the path's index; → (rows, notes on files that failed or were partial, and on
    copies).  Runs that hold the same bytes (every file's SHA-256) and ran one workload are one run: the
    first (in path order, then by name) is kept and the others dropped, with a note, unless
    ``allow_duplicates`` (:func:`analysis.stats.abtest.copies`).  HistoryError for a path with nothing to put
    in a history; IngestError for one that cannot be read."""
    from ..ingest.anysource import load
    from .abtest import copies, copies_notes, drop_copies, run_contents, run_of, select_where
    tables, notes = [], []
    for i, path in enumerate(paths):
        src = load(path, jobs=jobs)
        notes += [f"{path}: {err}" for _, err in src.failed]
        notes += [f"{path}: {r}: partial: {why}" for r, why in src.partial[:5]]
        if len(src.partial) > 5:
            notes.append(f"{path}: +{len(src.partial) - 5} more partial file(s)")
        t = select_where(src.summary, where, path, HistoryError)
        if t.empty:
            raise HistoryError(f"{path}: no benchmark output with a summary to put in a history")
        ft = np.nan
        if src.source == "raw":  # one stat per file, not per row
            files = pd.Series(t["source"].astype(str).unique())
            mt = {f: (Path(path) / f).stat().st_mtime for f in files if (Path(path) / f).is_file()}
            ft = t["source"].astype(str).map(mt).astype(float)
        f = src.files
        sha = dict(zip(f["path"].astype(str), f["sha256"].astype("string").fillna(""))) \
            if len(f) and "sha256" in f and "path" in f else {}
        t = t.assign(_ft=ft, _content=run_contents(t, sha), _path=i)
        if len(paths) > 1:  # several folders: each is one point (a night), unless the runs name theirs
            run = t["run"].astype("string").fillna(t["source"].astype("string")) if "run" in t else t["source"]
            t = t.assign(run=f"{i}:" + run.astype(str), _dir=Path(path).name)
        tables.append(t)
    s = pd.concat(tables, ignore_index=True)
    run = run_of(s)
    order = pd.DataFrame({"run": run, "i": s["_path"]}).drop_duplicates("run").sort_values(["i", "run"])["run"]
    found = copies(s, s["_content"], extra=SERIES_EXTRA, order=list(order))
    if len(paths) > 1:  # the notes name a run by its folder, not by the index its name carries here
        named = lambda r: f"{Path(paths[int(r.split(':', 1)[0])]).name}/{r.split(':', 1)[1]}"  # noqa: E731
        shown = {"same": [{**g, "kept": named(g["kept"]), "copies": [named(c) for c in g["copies"]]}
                          for g in found["same"]],
                 "elsewhere": [{**g, "runs": [named(r) for r in g["runs"]]} for g in found["elsewhere"]]}
    else:
        shown = found
    notes += copies_notes("the history", shown, int(run.nunique()), allow_duplicates)
    if not allow_duplicates:
        s = drop_copies(s, found)
    return s.drop(columns=["_content", "_path"]), notes


def run_times(summary: pd.DataFrame) -> pd.Series:
    """Unix seconds per row: ``started`` (run.json, ISO 8601), else ``fio_timestamp``; NaN when neither."""
    t = pd.Series(np.nan, index=summary.index, dtype=float)
    if "started" in summary:
        s = pd.to_datetime(summary["started"].astype("string"), errors="coerce", utc=True, format="ISO8601")
        t = pd.Series((s - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(), index=summary.index)
    if "fio_timestamp" in summary:
        t = t.fillna(pd.to_numeric(summary["fio_timestamp"], errors="coerce").astype(float))
    return t


def _point_of(summary: pd.DataFrame, run: pd.Series, point_key: str | None) -> pd.Series:
    if point_key is not None:
        if point_key not in summary:
            raise HistoryError(f"the data has no run key {point_key!r} to take the points from")
        return summary[point_key].astype("string")
    if "point" in summary and summary["point"].notna().any():
        return summary["point"].astype("string")
    # the top folder under the history's root (a night's folder of runs, whatever lies below it), else the run
    parts = run.astype(str).str.split("/")
    return pd.Series(np.where(parts.str.len() >= 2, parts.str[0], run.astype(str)), index=summary.index,
                     dtype="string")


def build(summary: pd.DataFrame, metrics: Sequence[str] | None = DEFAULT_METRICS, keys: Sequence[str] | None = None,
          point_key: str | None = None, file_times: pd.Series | None = None) -> History:
    """The runs of ``summary`` as a history (module docstring).  ``file_times``: unix s per row (the files'
    modification times) for rows with no time of their own, used with a note; rows still without a time
    are left out, with a note.  HistoryError when no run has a time."""
    notes: list[str] = []
    s = summary.copy()
    run = (s["run"].astype("string") if "run" in s else pd.Series(pd.NA, index=s.index, dtype="string"))
    run = run.fillna(s["source"].astype("string"))
    s["run"] = run
    t = run_times(s)
    if file_times is not None and t.isna().any():
        miss = t.isna()
        t = t.fillna(file_times.reindex(s.index).astype(float))
        n = run[miss & t.notna()].nunique()
        if n:
            notes.append(f"{n} run(s) have no time of their own (no run.json started, no fio timestamp): "
                         "ordered by their files' modification times")
    s["_time"] = t.groupby(run).transform("min")
    s["_point"] = _point_of(s, run, point_key)
    no_time = s["_time"].isna()
    if no_time.all():
        raise HistoryError("no run has a time (run.json started, fio's timestamp or a file date): "
                           "a history needs the order of its runs")
    if no_time.any():
        notes.append(f"{run[no_time].nunique()} run(s) without a time left out: " +
                     ", ".join(sorted(run[no_time].unique())[:5]))
        s = s[~no_time]
    if keys is None:
        keys = [k for k in (*WORKLOAD_KEYS, *SERIES_EXTRA) if k in s and s[k].notna().any()]
    keys = [k for k in keys if k not in ("point", point_key)]
    v = run_values(s, [*keys, "_point", "_time"], metrics)
    v = v.rename(columns={"_point": "point", "_time": "time"})
    v["time"] = v["time"].astype(float)
    v = v[np.isfinite(v["value"])].reset_index(drop=True)
    return History(v, list(keys), notes)


def series_label(frame: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """``key=value`` pairs of the keys with a value, ``/``-joined: one label per row."""
    parts = [np.where(frame[k].astype(str) != "", k + "=" + frame[k].astype(str), "") for k in keys if k in frame]
    if not parts:
        return pd.Series("", index=frame.index)
    lab = pd.Series(parts[0], index=frame.index)
    for p in parts[1:]:
        lab = lab.str.cat(pd.Series(p, index=frame.index), sep=" ")
    return lab.str.split().str.join(" ")


def points(h: History) -> pd.DataFrame:
    """One row per series and point, in time order: ``series`` (label), ``metric``, ``unit``, ``kind``,
    ``ddir``, ``point``, ``time`` (its earliest run, unix s), ``index`` (0-based, per series), ``n`` runs,
    ``median``, ``gmean`` (geometric mean; NaN where a value ≤ 0), ``lo``/``hi`` (min, max of the runs)."""
    r = h.runs.copy()
    r["series"] = series_label(r, h.keys)
    r["logv"] = np.log(r["value"].where(r["value"] > 0))
    g = r.groupby(["series", *CELL, "point"], sort=False, observed=True)
    p = g.agg(time=("time", "min"), n=("value", "size"), median=("value", "median"), lo=("value", "min"),
              hi=("value", "max"), mlog=("logv", "mean")).reset_index()
    p["gmean"] = np.exp(p["mlog"])
    p = p.sort_values(["series", *CELL, "time", "point"], kind="stable").reset_index(drop=True)
    p["index"] = p.groupby(["series", *CELL], sort=False, observed=True).cumcount()
    return p


def _better_sign(unit: str) -> int:
    return 1 if unit in HIGHER_BETTER else -1


def detect(h: History, min_change: float = cp.MIN_CHANGE, max_p: float = cp.MAX_P,
           min_segment: int = cp.MIN_SEGMENT, window: int | None = None,
           ack: pd.DataFrame | None = None) -> pd.DataFrame:
    """The change table (:data:`COLUMNS`): one row per change of each series.  ``change_pct`` and its CI
    in % (after against before, on the geometric means of the points); ``direction`` ``better`` /
    ``worse`` by the unit (B/s, 1/s higher is better; ns, s lower); ``in_window``: the change lies in the
    last ``window`` points (None: anywhere); ``acknowledged``: it matches a row of ``ack``
    (:func:`read_ack`); ``fails``: worse, not acknowledged, |change| ≥ ``min_change`` and in the window."""
    p = points(h)
    runs = h.runs.assign(series=series_label(h.runs, h.keys))
    by_series = dict(tuple(runs.groupby(["series", *CELL], sort=False, observed=True)))
    rows = []
    for (series, kind, ddir, metric, unit), d in p.groupby(["series", *CELL], sort=True, observed=True):
        x = d["mlog"].to_numpy(float)
        if not np.isfinite(x).all() or len(x) < 2 * max(min_segment, 1):
            continue
        mine = by_series[(series, kind, ddir, metric, unit)]
        for c in cp.changes(x, min_change, max_p, min_segment):
            before, after = d.iloc[c.lo:c.at], d.iloc[c.at:c.hi]
            rows.append(dict(series=series, kind=kind, ddir=ddir, metric=metric, unit=unit,
                             point=str(d["point"].iloc[c.at]), time=float(d["time"].iloc[c.at]), index=c.at,
                             points=len(d), median_before=float(mine.loc[mine["point"].isin(before["point"]), "value"].median()),
                             median_after=float(mine.loc[mine["point"].isin(after["point"]), "value"].median()),
                             change_pct=100 * c.change, ci_lo_pct=100 * c.ci_lo, ci_hi_pct=100 * c.ci_hi, p=c.p,
                             n_points_before=len(before), n_points_after=len(after),
                             n_runs_before=int(before["n"].sum()), n_runs_after=int(after["n"].sum()),
                             direction="better" if c.change * _better_sign(unit) > 0 else "worse"))
    t = pd.DataFrame(rows, columns=[*COLUMNS[:3], "kind", "ddir", *COLUMNS[3:-3]])
    t["acknowledged"] = [_acked(r, ack) for r in t.itertuples()] if len(t) else pd.Series(dtype=bool)
    t["in_window"] = (t["index"] >= t["points"] - window) if window else True
    t["fails"] = ((t["direction"] == "worse") & ~t["acknowledged"].astype(bool)
                  & (t["change_pct"].abs() >= 100 * min_change) & t["in_window"].astype(bool))
    return t.astype({"acknowledged": bool, "in_window": bool, "fails": bool})


#: an acknowledged-changes file's columns: ``point`` (the first point after the change, as reported) is
#: required; ``metric`` and ``series`` (a substring of the series label) narrow it; ``note`` is free text
ACK_COLUMNS = ("point", "metric", "series", "note")


def read_ack(path: str | Path) -> pd.DataFrame:
    """An acknowledged-changes file: CSV with a header naming :data:`ACK_COLUMNS` (``point`` required;
    lines starting with ``#`` are comments).  HistoryError naming the file and line otherwise."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HistoryError(f"{p}: cannot read the acknowledged-changes file ({e})") from None
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return pd.DataFrame(columns=list(ACK_COLUMNS))
    head_no, head = lines[0]
    cols = [c.strip() for c in next(csv.reader([head]))]
    bad = [c for c in cols if c not in ACK_COLUMNS]
    if "point" not in cols or bad:
        raise HistoryError(f"{p}:{head_no}: expected a CSV header with 'point' and any of "
                           f"{', '.join(ACK_COLUMNS[1:])}; got {head!r}")
    out = []
    for no, ln in lines[1:]:
        vals = next(csv.reader(io.StringIO(ln)))
        if len(vals) > len(cols):
            raise HistoryError(f"{p}:{no}: {len(vals)} fields, expected at most {len(cols)} ({', '.join(cols)})")
        rec = dict(zip(cols, [v.strip() for v in vals]))
        if not rec.get("point"):
            raise HistoryError(f"{p}:{no}: expected a point (the first point after the change, as reported)")
        out.append(rec)
    return pd.DataFrame(out, columns=list(ACK_COLUMNS)).fillna("")


def _acked(r, ack: pd.DataFrame | None) -> bool:
    if ack is None or ack.empty:
        return False
    m = ack["point"].astype(str) == str(r.point)
    m &= (ack["metric"].fillna("") == "") | (ack["metric"] == r.metric)
    m &= np.array([(not s) or (s in r.series) for s in ack["series"].fillna("")], dtype=bool)
    return bool(m.any())


def common_label(t: pd.DataFrame) -> str:
    """The ``key=value`` pairs every series label of ``t`` shares (said once, above a table)."""
    labels = [set(x.split()) for x in t["series"].astype(str)] if len(t) else []
    if not labels:
        return ""
    first = t["series"].astype(str).iloc[0].split()
    return " ".join(kv for kv in first if all(kv in lab for lab in labels))


def short_label(series: pd.Series, drop: str) -> list[str]:
    """Each series label less the ``key=value`` pairs of ``drop`` (``(all)`` when nothing is left)."""
    gone = set(drop.split())
    return [" ".join(kv for kv in str(x).split() if kv not in gone) or "(all)" for x in series]


def display(t: pd.DataFrame, drop: str = "") -> pd.DataFrame:
    """The change table for people: when (point, date), the series (less the pairs in ``drop``, e.g.
    :func:`common_label`), medians, change % [CI], p, verdict."""
    if t.empty:
        return pd.DataFrame(columns=["point", "date", "series", "metric", "before", "after", "change", "p", "verdict"])
    date = pd.to_datetime(t["time"], unit="s", utc=True).dt.strftime("%Y-%m-%d %H:%M")
    verdict = np.where(t["fails"], "REGRESSION", np.where(t["acknowledged"], t["direction"] + " (acknowledged)",
                                                          t["direction"]))
    return pd.DataFrame({
        "point": t["point"], "date": date,
        "series": short_label(t["series"], drop),
        "metric": t["metric"] + " (" + t["unit"] + ")",
        "before": t["median_before"].map("{:.4g}".format), "after": t["median_after"].map("{:.4g}".format),
        "change": [f"{c:+.2f} % [{lo:+.2f}, {hi:+.2f}]" for c, lo, hi in
                   zip(t["change_pct"], t["ci_lo_pct"], t["ci_hi_pct"])],
        "p": t["p"].map("{:.2g}".format), "verdict": verdict})


def select(summary: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows that form a history, and a sentence saying which: the runs that name their ``point``
    (``capture.history``) when the data has any, else every row (a folder that is one history)."""
    if "point" in summary and summary["point"].notna().any():
        s = summary[summary["point"].notna()]
        return s, f"the {s['run'].nunique() if 'run' in s else len(s)} runs that name their point"
    return summary, "every run"


def recorded_changes(summary: pd.DataFrame) -> pd.DataFrame:
    """The changes a capture made and recorded (run.json ``change`` non-empty, ``capture.history``): per
    history, ``point`` (the first point with the new setting), ``change`` (what was done), ``cap_before``,
    ``cap_after`` (read IOPS) and ``truth_pct`` (cap_after / cap_before − 1, in %).  Empty when the data
    records none."""
    need = {"history", "point", "change", "cap_read_iops"}
    if not need <= set(summary.columns):
        return pd.DataFrame(columns=["history", "point", "change", "cap_before", "cap_after", "truth_pct"])
    r = summary[["history", "point", "change", "cap_read_iops"]].dropna(subset=["history", "point"]).astype(
        {"history": str, "change": "string"}).drop_duplicates(["history", "point"])
    r = r.assign(point=pd.to_numeric(r["point"]).astype(int), cap=pd.to_numeric(r["cap_read_iops"]).astype(float))
    r = r.sort_values(["history", "point"]).reset_index(drop=True)
    r["cap_before"] = r.groupby("history")["cap"].shift()
    c = r[r["change"].fillna("").str.len() > 0].copy()
    out = pd.DataFrame({"history": c["history"], "point": c["point"], "change": c["change"].astype(str),
                        "cap_before": c["cap_before"], "cap_after": c["cap"],
                        "truth_pct": 100 * (c["cap"] / c["cap_before"] - 1)})
    return out.reset_index(drop=True)


def shuffled_false_rate(h: History, series: str, metric: str, n: int = 100, seed: int = 0,
                        min_change: float = 0.0, max_p: float = cp.MAX_P,
                        min_segment: int = cp.MIN_SEGMENT) -> tuple[int, int]:
    """(shuffles with a change, shuffles) over ``n`` random orders of one series' points (a null history:
    any change found is false).  ``min_change`` 0 by default: the statistics alone are judged, not the
    magnitude filter."""
    p = points(h)
    x = p[(p["series"] == series) & (p["metric"] == metric)]["mlog"].to_numpy(float)
    rng = np.random.default_rng(seed)
    hits = sum(bool(cp.changes(rng.permutation(x), min_change, max_p, min_segment)) for _ in range(n))
    return hits, n


def against_truth(changes: pd.DataFrame, truth: pd.DataFrame, metric: str = "iops", within: int = 1,
                  min_segment: int = cp.MIN_SEGMENT) -> pd.DataFrame:
    """Each recorded change (:func:`recorded_changes`) beside the change of ``metric`` found in its history
    within ``within`` points of it: ``expected`` (``a change``, or ``none`` where the setting lasted fewer
    than ``min_segment`` points before the next recorded change: a spike), ``found at``, ``found %`` with
    its CI, ``covers`` (the CI holds the recorded ``truth_pct``); NaN / None where nothing was found."""
    nxt = truth.groupby("history")["point"].shift(-1)
    spike = (nxt - truth["point"]) < min_segment
    prev_spike = spike.groupby(truth["history"]).shift(1, fill_value=False).astype(bool)
    truth = truth.assign(expected=np.where(spike | prev_spike, "none (a spike)", "a change"))
    f = changes[changes["metric"] == metric]
    f = f.assign(history=f["series"].str.extract(r"history=(\S+)")[0], at=pd.to_numeric(f["point"], errors="coerce"))
    rows = []
    for t in truth.itertuples():
        m = f[(f["history"] == t.history) & ((f["at"] - t.point).abs() <= within)]
        g = m.iloc[0] if len(m) else None
        rows.append({"history": t.history, "point": t.point, "what was done": t.change,
                     "cap change %": round(t.truth_pct, 2), "expected": t.expected,
                     "found at": None if g is None else int(g["at"]),
                     "found %": np.nan if g is None else round(g["change_pct"], 2),
                     "95 % CI": "" if g is None else f"[{g['ci_lo_pct']:+.2f}, {g['ci_hi_pct']:+.2f}]",
                     "covers": None if g is None else bool(g["ci_lo_pct"] <= t.truth_pct <= g["ci_hi_pct"])})
    return pd.DataFrame(rows, columns=["history", "point", "what was done", "cap change %", "expected", "found at",
                                       "found %",
                                       "95 % CI", "covers"])

"""The pilot gate of a QoS campaign: can the effect under study appear here, and how many repeats does it
need?  Input: the tidy tables of a pilot campaign (``capture.ceph pilot``: per scenario its two most
different arms once, plus a no-operation baseline run of each queue/profile they use), read from the
capture's ``run.json``, fio 3.33 json+ and 1 s logs, the ``ceph-pg-timeline`` and the 1 Hz ``sysutil``
log with the per-OSD op-queue probe (``capture/ceph/opqueue.py``).

Clock: the timeline's (t = 0 at fio's spawn).  fio's log rows are moved onto it by the run's
``fio_t0_after_spawn_s``, the sysutil samples by the difference of the two files' ``t0_unix``.

Per run (:func:`run_facts`), for the scenario's main operation (:data:`MAIN_OP`):

- ``op_start`` (s), ``op_duration`` (s, NaN when it had not ended when the timeline stopped),
  ``client_end`` (s, fio's last log window), ``ended_in_client`` (start + duration ≤ client_end);
  the run's *window* is [start, start + duration] if it ended within the client run, else
  [start, client_end];
- ``op_rate`` (objects/s over the window, from the timeline series: scrub = objects of the scrubbed
  pool whose deep scrub completed; snaptrim = clone objects removed from the ``snap`` pool; recovery =
  degraded + misplaced objects recovered, all pools) — defined for unfinished operations too, so slow
  arms are measured by their progress in the fixed client window;
- ``client_iops`` (mean of fio's 1 s IOPS windows inside the window, directions summed) and
  ``client_iops_pre`` (the same run's windows from ``warmup_s`` to the operation's start: a reference
  within the run, which a campaign split over several bring-ups can use where the baseline run is in
  another sitting);
- ``queue_per_osd`` (median over the window's samples of the ops ``queued for pg`` summed over OSDs
  ÷ the number of OSDs) and ``queue_max_osd`` (median of the largest OSD's count: with per-OSD
  limits the primary of the most PGs holds most of the queue and sets the pace);
- ``cpu_busy`` (machine busy fraction, mean over the window and both CPUs), ``steal`` likewise;
- a baseline run (no operation): the same over its client run after ``warmup_s``.

Gate per scenario (:func:`gate`; thresholds in :data:`THRESHOLDS`, the issue's): the operation lasts
≥ 60 s (and ≤ 150 s) under the fastest arm and ends within the client run; the queue holds ≥ 8 ops
per OSD in every arm; the machine's CPU is ≤ 60 % busy in every arm; client IOPS during the operation
fall by ≥ 5 % against the same queue/profile's no-operation baseline in at least one arm (client and
background work compete for one budget); and the two pilot arms differ enough to be told apart within
``max_repeats`` repeats in at least one metric (else the effect cannot appear with these arms: choose
others).  The baseline scenario has no operation: its queue and CPU figures are reported, not gating,
and an arm above the CPU threshold is listed in ``notes``.

Repeats (:func:`repeats_needed`): the campaign compares arms within a repeat block (arms shuffled per
block), so the test is paired by block and its noise is the residual of log(value) ~ arm + repeat, not
the raw spread of repeats (the shipped qos-2026 drifts between blocks: its repeat 1 is the lowest in 29
of 31 cells).  :func:`spread` gives that residual SD (``sd_resid``) per scenario and metric of a finished
campaign; the paired differences then have SD √2·sd_resid, and the repeats are those of a two-sided
paired t-test at α 0.05 reaching power 0.8 for the pilot's log difference
(:func:`analysis.stats.claims.repeats_needed`), at least ``min_repeats``.  Pilot rounds: a scenario
redesigned after a no-go is piloted again in a new round (``<campaign>-pilot-r2`` …) with its own
baselines; :func:`evaluate` takes every round and decides each scenario on its latest one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from ..labels import str_eq, str_isin

from .arms import MAIN_OP, op_windows  # noqa: F401  (MAIN_OP: the scenario → operation map, re-exported)

RUN_KEYS = ["campaign", "scenario", "arm", "repeat"]
#: campaign YAML background op name → timeline prefix
OP_OF_BACKGROUND = {"deep_scrub": "scrub", "snaptrim": "snaptrim", "recovery": "recovery"}
THRESHOLDS = {"min_duration_s": 60.0, "max_duration_s": 150.0, "min_queue_per_osd": 8.0,
              "max_cpu_busy": 0.60, "min_client_drop": 0.05, "max_repeats": 10}
#: the pool key of the campaign YAML that sets each operation's amount of work, and objects per unit
POOL_KEY = {"scrub": "scrub_objects", "snaptrim": "snap_objects", "recovery": "recovery_objects"}
TARGET_S = 105.0  # the middle of 60–150 s


def main_op(scenario: str, background: Iterable[str] = ()) -> str | None:
    """The operation a scenario is about (its window defines 'during')."""
    if scenario in MAIN_OP:
        return MAIN_OP[scenario]
    bg = [OP_OF_BACKGROUND.get(b, b) for b in background]
    return bg[0] if bg else None


def _t0(files: pd.DataFrame, kind: str) -> pd.DataFrame:
    f = files[str_eq(files["kind"], kind)]
    t0 = [json.loads(m).get("t0_unix") if isinstance(m, str) else np.nan for m in f["meta_json"]]
    out = f[RUN_KEYS].astype(str).assign(t0=pd.to_numeric(pd.Series(t0, index=f.index), errors="coerce"))
    return out


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(**{k: df[k].astype(str) for k in RUN_KEYS})


def run_facts(files: pd.DataFrame, summary: pd.DataFrame, series: pd.DataFrame,
              warmup_s: float = 10.0) -> pd.DataFrame:
    """One row per run: the facts the gate reads (module docstring), plus ``op_queue``/``profile``."""
    s = _keyed(summary.dropna(subset=RUN_KEYS))
    # only the rows read below (machine CPU and OSD queue, the operation's object counts): keying every row
    # of a campaign's series as text cost more than the rest of this function
    used = ((str_eq(series["kind"], "sysutil") & str_isin(series["metric"], ["cpu_busy", "cpu_steal", "osd_queued"]))
            | (str_eq(series["kind"], "ceph-pg-timeline") & str_isin(series["metric"], OP_COUNTS)))
    se = _keyed(series[used].dropna(subset=RUN_KEYS))
    runs = s[RUN_KEYS + [c for c in ("op_queue", "profile", "rw") if c in s]].astype(str).drop_duplicates(RUN_KEYS)
    runs = runs.fillna("").replace({"nan": "", "<NA>": "", "None": ""})
    # clocks: sysutil offset onto the timeline's t = 0
    tl0 = _t0(files, "ceph-pg-timeline").rename(columns={"t0": "tl_t0"})
    su0 = _t0(files, "sysutil").rename(columns={"t0": "su_t0"})
    off = tl0.merge(su0, on=RUN_KEYS, how="outer")
    off["su_offset"] = off["su_t0"] - off["tl_t0"]
    runs = runs.merge(off[RUN_KEYS + ["su_offset"]], on=RUN_KEYS, how="left")
    # the operation's window and the client IOPS in it and before it (arms.op_windows: one definition
    # for the gate and the campaign's claims)
    w = op_windows(summary, series, warmup_s).drop(columns="pre_windows")
    runs = runs.merge(w, on=RUN_KEYS, how="left")
    win = runs[RUN_KEYS + ["win_lo", "win_hi", "su_offset", "op"]]

    def inside(df: pd.DataFrame, t: pd.Series) -> pd.DataFrame:
        m = df.assign(_t=t.to_numpy()).merge(win, on=RUN_KEYS, how="inner")
        return m[(m["_t"] >= m["win_lo"]) & (m["_t"] <= m["win_hi"])]

    # sysutil: machine CPU, steal, per-OSD queue
    su = se[str_eq(se["kind"], "sysutil")]
    su = su[su["metric"].isin(["cpu_busy", "cpu_steal", "osd_queued"])]
    su = pd.DataFrame({**{k: su[k] for k in RUN_KEYS}, "metric": su["metric"].astype(str),
                       "job": su["job"].astype(str), "t_s": su["t_s"], "v": su["value"]})
    su = su.merge(win[RUN_KEYS + ["su_offset"]], on=RUN_KEYS, how="inner")
    su = inside(su.drop(columns="su_offset"), su["t_s"] + su["su_offset"].fillna(0.0))
    g = su.groupby(RUN_KEYS + ["metric", "_t"], observed=True)["v"]
    per_t = pd.DataFrame({"mean": g.mean(), "sum": g.sum(min_count=1), "max": g.max(),
                          "n": g.count()}).reset_index()
    cpu = per_t[per_t["metric"] == "cpu_busy"].groupby(RUN_KEYS)["mean"].mean().rename("cpu_busy")
    steal = per_t[per_t["metric"] == "cpu_steal"].groupby(RUN_KEYS)["mean"].mean().rename("steal")
    q = per_t[per_t["metric"] == "osd_queued"]
    q = q.assign(per_osd=q["sum"] / q["n"])
    qq = q.groupby(RUN_KEYS).agg(queue_per_osd=("per_osd", "median"), queue_max_osd=("max", "median"))
    for part in (cpu, steal, qq):
        runs = runs.merge(part.reset_index(), on=RUN_KEYS, how="left")
    runs["op_rate"] = _op_rates(se, runs)
    return runs


#: the timeline's object counts :func:`_op_rates` reads
OP_COUNTS = ["objects_scrubbed", "objects", "objects_degraded", "objects_misplaced"]


def _op_rates(se: pd.DataFrame, runs: pd.DataFrame) -> np.ndarray:
    """Objects per second the operation got through in the run's window (module docstring): the
    timeline's count (summed over its rows at one time) at the window's end less that at the operation's
    start (scrub: 0 before its first sample; the others: their first sample), objects/s, never negative."""
    out = np.full(len(runs), np.nan)
    r = runs[RUN_KEYS + ["op", "op_start", "win_hi"]].reset_index(drop=True)
    ok = r["op"].notna() & np.isfinite(r["op_start"].astype(float)) & np.isfinite(r["win_hi"].astype(float))
    r = r[ok].assign(_run=np.flatnonzero(ok.to_numpy()))
    tl = se[str_eq(se["kind"], "ceph-pg-timeline")]
    if r.empty or tl.empty:
        return out
    tl = pd.DataFrame({**{k: tl[k] for k in RUN_KEYS}, "metric": tl["metric"].astype(str),
                       "job": tl["job"].astype(str), "t_s": tl["t_s"], "value": tl["value"]})
    m = tl.merge(r, on=RUN_KEYS, how="inner")
    op = m["op"].astype(str)
    keep = np.where(op == "scrub", m["metric"] == "objects_scrubbed",
                    np.where(op == "snaptrim", (m["metric"] == "objects") & (m["job"] == "snap"),
                             m["metric"].isin(["objects_degraded", "objects_misplaced"])))
    v = (m[keep].groupby(["_run", "t_s"])["value"].sum().reset_index()
         .merge(r[["_run", "op", "op_start", "win_hi"]], on="_run").sort_values(["_run", "t_s"]))
    first = v.groupby("_run")["value"].first()
    before = v[v["t_s"] <= v["op_start"]].groupby("_run")["value"].last()
    after = v[v["t_s"] <= v["win_hi"]].groupby("_run")["value"].last()
    w = r.set_index("_run").loc[after.index]
    scrub = (w["op"].astype(str) == "scrub").to_numpy()
    v0 = before.reindex(after.index).fillna(pd.Series(np.where(scrub, 0.0, first.reindex(after.index)),
                                                      index=after.index))
    sign = np.where(scrub, 1.0, -1.0)
    elapsed = (w["win_hi"] - w["op_start"]).astype(float).to_numpy()
    rate = np.maximum(0.0, sign * (after.to_numpy() - v0.to_numpy())) / np.where(elapsed > 0, elapsed, np.nan)
    out[after.index.to_numpy()] = rate
    return out


def is_baseline(scenario: pd.Series, baseline: str = "baseline") -> np.ndarray:
    """Which scenarios are a no-operation baseline: ``baseline`` and its per-client variants
    (``baseline_read``: the read client alone, qos-v3), as a plain bool mask."""
    return scenario.astype(str).str.startswith(baseline).to_numpy(dtype=bool)


def _baseline_for(facts: pd.DataFrame, baseline: str = "baseline") -> pd.Series:
    """Each run's no-operation client IOPS: a baseline scenario's run (:func:`is_baseline`) with the same
    queue/profile and the same client ``rw`` (where recorded) in the same campaign (pilot round)."""
    b = facts[is_baseline(facts["scenario"], baseline)]
    # a missing profile (WPQ) must be a key of its own, never NaN: NaN keys would all match the first
    def key(d):
        rw = d["rw"].fillna("").astype(str) if "rw" in d else ""
        return (d["campaign"].astype(str) + "|" + d["op_queue"].fillna("").astype(str) + "|"
                + d["profile"].fillna("").astype(str) + "|" + rw)
    ref = pd.Series(b["client_iops"].to_numpy(), index=key(b))
    ref = ref[~ref.index.duplicated()]
    return key(facts).map(ref)


def latest_round(facts: pd.DataFrame, rounds: list[str] | None = None) -> pd.DataFrame:
    """Each scenario's rows from the last campaign (pilot round) in ``rounds`` order that has it."""
    order = rounds or list(dict.fromkeys(facts["campaign"].astype(str)))
    rank = facts["campaign"].astype(str).map({c: i for i, c in enumerate(order)})
    last = rank.groupby(facts["scenario"]).transform("max")
    return facts[rank == last]


def gate(facts: pd.DataFrame, thresholds: dict[str, float] | None = None, baseline: str = "baseline",
         power_table: pd.DataFrame | None = None, rounds: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Go / no-go per scenario (its latest round) with each check's value, threshold and verdict, the
    reasons, and per arm the facts; ``power_table`` (:func:`repeats_needed`) adds the arms-differ check."""
    th = {**THRESHOLDS, **(thresholds or {})}
    f = facts.copy()
    f["baseline_iops"] = _baseline_for(f, baseline)
    f["client_drop"] = 1.0 - f["client_iops"] / f["baseline_iops"]
    f["client_drop_pre"] = (1.0 - f["client_iops"] / f["client_iops_pre"]) if "client_iops_pre" in f else np.nan
    f = latest_round(f, rounds)
    out: dict[str, dict[str, Any]] = {}
    for scen, d in f.groupby("scenario", sort=True):
        checks: dict[str, dict[str, Any]] = {}
        notes: list[str] = []

        def check(name: str, value: float, ok: bool, threshold: str, gating: bool = True) -> None:
            checks[name] = {"value": None if not np.isfinite(value) else round(float(value), 4),
                            "threshold": threshold, "ok": bool(ok), "gating": gating}

        qmin, cmax = d["queue_per_osd"].min(), d["cpu_busy"].max()
        is_op = not str(scen).startswith(baseline)
        check("queue_per_osd_min_arm", qmin, np.isfinite(qmin) and qmin >= th["min_queue_per_osd"],
              f">= {th['min_queue_per_osd']:g} ops queued per OSD (median over the window) in every arm", is_op)
        check("cpu_busy_max_arm", cmax, np.isfinite(cmax) and cmax <= th["max_cpu_busy"],
              f"<= {th['max_cpu_busy']:g} machine CPU busy in every arm", is_op)
        for r in d[d["cpu_busy"] > th["max_cpu_busy"]].itertuples(index=False):
            notes.append(f"{r.arm}: machine CPU {r.cpu_busy:.2f} busy at {r.client_iops:.0f} client IOPS "
                         f"(lowest arm here: {d['cpu_busy'].min():.2f} at "
                         f"{d.loc[d['cpu_busy'].idxmin(), 'client_iops']:.0f})")
        if is_op:
            done = d[d["ended_in_client"] & d["op_duration"].notna()]
            fastest = done["op_duration"].min() if not done.empty else np.nan
            check("fastest_duration_s", fastest,
                  np.isfinite(fastest) and th["min_duration_s"] <= fastest <= th["max_duration_s"],
                  f"{th['min_duration_s']:g}–{th['max_duration_s']:g} s under the fastest arm, ended within "
                  "the client run")
            drop = d["client_drop"].max()
            check("client_drop_max_arm", drop, np.isfinite(drop) and drop >= th["min_client_drop"],
                  f">= {th['min_client_drop']:.0%} client IOPS drop vs the same queue/profile's baseline "
                  "in at least one arm")
            if power_table is not None:
                pt = power_table[power_table["scenario"] == scen]
                best = pt["n_pairs"].min() if len(pt) else np.nan
                check("repeats_to_decide_min_metric", best, np.isfinite(best) and best <= th["max_repeats"],
                      f"<= {th['max_repeats']:g} repeats decide at least one metric between the pilot arms")
        arms = {a: {k: (None if not (isinstance(v, (int, float, np.floating)) and np.isfinite(v)) else
                        round(float(v), 4)) if not isinstance(v, (bool, np.bool_, str)) else
                    (bool(v) if isinstance(v, (bool, np.bool_)) else v)
                    for k, v in r.items()}
                for a, r in d.set_index("arm")[["op", "op_start", "op_duration", "ended_in_client", "op_rate",
                                                "client_iops", "baseline_iops", "client_drop", "client_drop_pre",
                                                "queue_per_osd",
                                                "queue_max_osd", "cpu_busy", "steal"]].iterrows()}
        go = all(c["ok"] for c in checks.values() if c["gating"])
        out[str(scen)] = {"go": go, "round": str(d["campaign"].iloc[0]), "checks": checks, "arms": arms,
                          "reasons": [f"{k}: {c['value']} (needs {c['threshold']})"
                                      for k, c in checks.items() if not c["ok"] and c["gating"]],
                          "notes": notes}
    return out


def spread(metrics: pd.DataFrame) -> pd.DataFrame:
    """Spread of repeats on log scale per (scenario, metric) of a finished campaign: ``sd_log`` = the
    within-arm SD pooled over arms (ddof 1), and ``sd_resid`` = the residual SD of the additive model
    log(value) ~ arm + repeat over the complete arm × repeat table (the arms every repeat has, or when
    fewer than two are, the repeats every arm has; df = (arms − 1)(repeats − 1)), the noise of a comparison
    within repeat blocks; ``n_runs``.
    ``metrics``: ``scenario, arm, repeat, metric, value`` (e.g. :func:`shipped_metrics`)."""
    m = metrics[np.isfinite(metrics["value"]) & (metrics["value"] > 0)]
    m = m.assign(lv=np.log(m["value"]))
    rows = []
    for (scen, metric), d in m.groupby(["scenario", "metric"], observed=True, sort=True):
        g = d.groupby("arm")["lv"].agg(["var", "count"])
        g = g[g["count"] >= 2]
        sd_log = math.sqrt((g["var"] * (g["count"] - 1)).sum() / (g["count"] - 1).sum()) if len(g) else np.nan
        t = d.pivot_table(index="repeat", columns="arm", values="lv", aggfunc="mean")
        # the complete table: drop the arms missing from a repeat (e.g. WPQ's scrub, which never ends in the
        # client run, has no rate in some repeats) rather than every repeat some arm misses
        full = t.loc[:, t.notna().all()]
        t = full if full.shape[1] >= 2 and full.shape[0] >= 2 else t.dropna()
        a, r = t.shape[1], t.shape[0]
        sd_resid = np.nan
        if a >= 2 and r >= 2:
            x = t.to_numpy()
            res = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
            sd_resid = math.sqrt((res ** 2).sum() / ((a - 1) * (r - 1)))
        rows.append({"scenario": scen, "metric": metric, "sd_log": sd_log, "sd_resid": sd_resid,
                     "n_runs": len(d)})
    return pd.DataFrame(rows, columns=["scenario", "metric", "sd_log", "sd_resid", "n_runs"])


def regime_mismatch(spread_from: Path, doc: dict[str, Any]) -> str | None:
    """Why the finished campaign in ``spread_from`` (its frozen ``campaign.yaml``) cannot set the repeats of
    campaign ``doc``, or None: its spread must come from the same regime — the same per-OSD IO limits
    (``throttle``; qos-2026's unthrottled spread, client IOPS sd 0.53, is not qos-v2's, 0.07)."""
    import yaml
    f = Path(spread_from) / "campaign.yaml"
    if not f.is_file():
        return f"no campaign.yaml in {spread_from} to tell its regime"
    try:
        other = yaml.safe_load(f.read_text()) or {}
    except yaml.YAMLError as e:
        return f"{f}: not YAML ({e})"
    mine, theirs = doc.get("throttle") or None, (other.get("throttle") or None) if isinstance(other, dict) else None
    if mine != theirs:
        return (f"another regime: {f} has throttle {theirs}, the campaign {mine} (a spread from another regime "
                "sets the wrong repeats)")
    return None


def shipped_metrics(summary: pd.DataFrame, series: pd.DataFrame, campaign: str) -> pd.DataFrame:
    """A finished campaign's per-run ``op_rate`` (objects/s of the scenario's main operation, from the
    timeline summary) and ``client_iops`` (during the operation; the whole run for baseline), in the
    long layout :func:`spread` reads."""
    from .qos_derived import run_metrics
    m = run_metrics(summary, series, campaign)
    rate = {"scrub": "scrub_rate_objects", "snaptrim": "snaptrim_rate", "recovery": "recovery_rate"}
    s = summary[str_eq(summary["campaign"], campaign) & str_eq(summary["kind"], "ceph-pg-timeline")]
    rows = []
    for scen, op in MAIN_OP.items():
        r = s[str_eq(s["scenario"], scen) & str_eq(s["metric"], rate[op])]
        rows.append(pd.DataFrame({"scenario": scen, "arm": r["arm"].astype(str), "repeat": r["repeat"].astype(str),
                                  "metric": "op_rate", "value": r["value"].to_numpy(float)}))
    base = is_baseline(m["scenario"])
    ci = m[((m["metric"] == "client_iops_during") & ~base) | ((m["metric"] == "client_iops") & base)]
    rows.append(pd.DataFrame({"scenario": ci["scenario"].astype(str), "arm": ci["arm"].astype(str),
                              "repeat": ci["repeat"].astype(str), "metric": "client_iops",
                              "value": ci["value"].to_numpy(float)}))
    return pd.concat(rows, ignore_index=True)


def repeats_needed(facts: pd.DataFrame, spread_table: pd.DataFrame, min_repeats: int = 3,
                   alpha: float = 0.05, power: float = 0.8, rounds: list[str] | None = None) -> pd.DataFrame:
    """Per (scenario, metric) of each scenario's latest round: the pilot's two arms' values, ``log_diff``
    = |log a − log b|, the shipped residual spread ``sd_resid`` (:func:`spread`), ``effect_size`` =
    log_diff / (√2·sd_resid) (the paired differences' SD), ``n_pairs`` (repeat blocks for a two-sided
    paired t-test at ``alpha`` to reach ``power``; NaN where the spread is unknown) and ``repeats`` =
    max(min_repeats, n_pairs) (``min_repeats`` where unknown)."""
    from .claims import repeats_needed as paired_n
    rows = []
    sd = spread_table.set_index(["scenario", "metric"])["sd_resid"] if len(spread_table) else pd.Series(dtype=float)
    for scen, d in latest_round(facts, rounds).groupby("scenario", sort=True):
        for metric in ("op_rate", "client_iops"):
            v = d[["arm", metric]].dropna()
            v = v[v[metric] > 0]
            if len(v) != 2:
                continue
            (a1, x1), (a2, x2) = v.itertuples(index=False, name=None)
            s = float(sd.get((scen, metric), np.nan))
            diff = abs(math.log(x1) - math.log(x2))
            rows.append({"scenario": scen, "metric": metric, "arm_a": a1, "value_a": x1, "arm_b": a2,
                         "value_b": x2, "log_diff": diff, "sd_resid": s,
                         "effect_size": diff / (math.sqrt(2) * s) if np.isfinite(s) and s > 0 else np.nan})
    out = pd.DataFrame(rows, columns=["scenario", "metric", "arm_a", "value_a", "arm_b", "value_b",
                                      "log_diff", "sd_resid", "effect_size"])
    n = paired_n(out["effect_size"].to_numpy(float), alpha, power) if len(out) else np.array([])
    out["n_pairs"] = n
    out["repeats"] = np.where(np.isfinite(n), np.maximum(n, min_repeats), min_repeats).astype(int)
    return out


def calibration(facts: pd.DataFrame, pools: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per operation: the fastest arm's rate (objects/s, over all scenarios where the operation is the
    main one) and the pool size that would make it last :data:`TARGET_S` s (snapshot pools: the clones
    are ``snap_overwrite`` of the objects)."""
    out: dict[str, dict[str, Any]] = {}
    for op, d in facts[facts["op"].notna()].groupby("op"):
        rate = d["op_rate"].max()
        if not np.isfinite(rate) or rate <= 0:
            continue
        objects = rate * TARGET_S
        key = POOL_KEY[op]
        if op == "snaptrim":
            objects /= float(pools.get("snap_overwrite", 0.8))
        now = pools.get(key)
        out[op] = {"fastest_rate_objects_s": round(float(rate), 2), "pool_key": key, "now": now,
                   "for_target_s": TARGET_S, "suggested": int(round(objects, -2)) or 100,
                   "fastest_arm": str(d.loc[d["op_rate"].idxmax(), "scenario"]) + "/" +
                   str(d.loc[d["op_rate"].idxmax(), "arm"])}
    return out


def machine_time(facts: pd.DataFrame, runs_per_scenario: dict[str, int], sitting_overhead_s: float = 300.0,
                 sitting_s: float = 110 * 60) -> dict[str, Any]:
    """The campaign's machine time from the pilot's measured run durations (``duration_s``, s, from
    run.json: OSD restart, preparation, client run, waiting): per scenario the mean pilot run × the
    campaign's runs of it, plus per sitting of at most ``sitting_s`` a bring-up and warm-up run."""
    per = pd.to_numeric(facts["duration_s"], errors="coerce").groupby(facts["scenario"]).mean()
    total, parts = 0.0, {}
    for scen, n in runs_per_scenario.items():
        d = float(per.get(scen, per.mean()))
        parts[scen] = {"runs": int(n), "mean_run_s": round(d, 1), "s": round(d * n, 1)}
        total += d * n
    sittings = max(1, math.ceil(total / sitting_s))
    total += sittings * sitting_overhead_s
    return {"total_s": round(total, 1), "total_h": round(total / 3600, 2), "sittings": sittings,
            "per_scenario": parts, "note": f"{sitting_overhead_s:g} s of bring-up and warm-up per sitting "
                                           f"of ≤ {sitting_s / 60:g} min"}


def evaluate(files: pd.DataFrame, summary: pd.DataFrame, series: pd.DataFrame, campaign_doc: dict[str, Any],
             spread_table: pd.DataFrame,
             runs_per_scenario: Callable[[dict[str, int] | None], dict[str, int]]) -> dict[str, Any]:
    """The whole pilot verdict (what ``python -m analysis pilot`` writes as pilot.json).
    ``runs_per_scenario(repeats)``: the campaign's runs per scenario as planned (``None``) or with each
    scenario's repeats raised to ``repeats`` (the campaign's plan lives in ``capture.ceph.campaign``)."""
    facts = run_facts(files, summary, series)
    if "duration_s" in summary:
        d = _keyed(summary.dropna(subset=RUN_KEYS))[RUN_KEYS + ["duration_s"]].astype(str).drop_duplicates(RUN_KEYS)
        facts = facts.merge(d, on=RUN_KEYS, how="left")
    rounds = list(dict.fromkeys(facts["campaign"].astype(str)))
    min_rep = int(campaign_doc.get("min_repeats", 3))
    reps = repeats_needed(facts, spread_table, min_rep, rounds=rounds)
    verdict = gate(facts, power_table=reps, rounds=rounds)
    for scen, v in verdict.items():
        r = reps[reps["scenario"] == scen]
        v["power"] = json.loads(r.drop(columns="scenario").to_json(orient="records"))
        ok = r[r["n_pairs"] <= THRESHOLDS["max_repeats"]]
        v["repeats_recommended"] = int(ok["repeats"].max()) if len(ok) else min_rep
        v["repeats_planned"] = int((campaign_doc["scenarios"][scen].get("repeats")
                                    or campaign_doc.get("repeats", 3)) if scen in campaign_doc["scenarios"] else 0)
    recommended = {s: v["repeats_recommended"] for s, v in verdict.items()}
    return {"campaign": campaign_doc["campaign"], "pilot_rounds": rounds,
            "go": all(v["go"] for v in verdict.values()) and bool(verdict),
            "thresholds": THRESHOLDS, "scenarios": verdict,
            "calibration": calibration(facts, campaign_doc.get("pools") or {}),
            "machine_time_planned": machine_time(facts, runs_per_scenario(None)),
            "machine_time_recommended": machine_time(facts, runs_per_scenario(recommended)),
            "method": __doc__.split("\n\n")[0].replace("\n", " ")}


def regime_table(facts: pd.DataFrame) -> pd.DataFrame:
    """Does the op queue decide here?  Per campaign and scenario with a background operation (from
    :func:`run_facts` of any campaigns): ``runs``, ``arms``, the medians over runs of the machine's CPU
    busy fraction and of the ops queued per OSD while the operation ran (NaN: not recorded — campaigns
    before the op-queue probe), and ``op_rate_spread`` = the fastest arm's median operation rate over the
    slowest's (1.0: every arm alike)."""
    f = facts[facts["op"].notna()]
    rows = []
    for (camp, scen), d in f.groupby(["campaign", "scenario"], sort=True):
        med = d.groupby("arm")["op_rate"].median()
        med = med[med > 0]
        rows.append({"campaign": camp, "scenario": scen, "runs": len(d), "arms": d["arm"].nunique(),
                     "cpu_busy": d["cpu_busy"].median(), "queue_per_osd": d["queue_per_osd"].median(),
                     "op_rate_spread": med.max() / med.min() if len(med) >= 2 else np.nan})
    return pd.DataFrame(rows, columns=["campaign", "scenario", "runs", "arms", "cpu_busy", "queue_per_osd",
                                       "op_rate_spread"])


def client_drop_pct(facts: pd.DataFrame) -> pd.Series:
    """Per run of :func:`run_facts`, the client's IOPS drop while the operation ran against the same run
    before it, % (100 · (1 − client_iops / client_iops_pre)); NaN without a pre-operation reference."""
    return 100 * (1 - facts["client_iops"] / facts["client_iops_pre"])


def arm_summary(facts: pd.DataFrame) -> pd.DataFrame:
    """Per (scenario, arm) of the runs with an operation (:func:`run_facts`): ``runs``, ``ended`` (runs whose
    operation ended in the client run) and the medians over runs of ``op_s`` (duration, s; runs where it
    ended, in the client run or after it), ``op_rate`` (objects/s in the window, right-censored where it did not end), ``queued`` (ops per
    OSD), ``cpu`` (machine busy fraction), ``iops_during`` / ``iops_before`` (client IOPS in the window and
    before the operation) and ``drop_pct`` (:func:`client_drop_pct`)."""
    f = facts[facts["op"].notna()].assign(drop_pct=lambda d: client_drop_pct(d),
                                          ended=lambda d: d["ended_in_client"].fillna(False).astype(bool))
    g = f.groupby(["scenario", "arm"], sort=True, observed=True)
    return pd.DataFrame({"runs": g.size(), "ended": g["ended"].sum(), "op_s": g["op_duration"].median(),
                         "op_rate": g["op_rate"].median(), "queued": g["queue_per_osd"].median(),
                         "cpu": g["cpu_busy"].median(), "iops_during": g["client_iops"].median(),
                         "iops_before": g["client_iops_pre"].median(), "drop_pct": g["drop_pct"].median()})

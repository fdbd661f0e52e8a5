"""The validity gate: whether a QoS campaign ran the seeds' experiment, condition by condition, from its
own records (the processed tables' run keys, timelines and fio logs), before any of its verdicts is read.

The mClock-vs-WPQ seeds (``../shared/seeds/mclock-vs-wpq-*``) judge a scheduler by what a background
operation costs a client that competes with it.  That reading needs, in every arm of a campaign:

``a_op_inside_client``  the operation ends inside the client's fio run (seeds: "the scrub/snaptrim duration
    is a subset of the client run"): at least :data:`INSIDE_MIN` of the runs with an operation, per arm
    (:func:`analysis.stats.arms.op_windows`, ``ended_in_client``);
``b_shared_budget``  client and operation draw on one device budget (the seeds' NVMe: reads and writes
    share it): with per-direction block IO limits (run keys ``throttle_read_iops``/``throttle_write_iops``,
    cgroup v1), every direction the operation does (:data:`OP_DIRECTIONS`) is one the client does (``rw``);
``c_cost_model``  mClock's cost model responds: the seed's cost knob (``osd_scrub_cost`` 50 → 20 MiB, part 2
    line 140) moves the scrub's duration beyond its spread (Welch 95 % CI of the ratio of means excludes 1),
    between an arm and its ``_cost20m`` twin; not measured without such a pair;
``d_own_baseline``  each arm that ran an operation also ran a ``baseline*`` scenario with the same client
    ``rw`` (its client without background work), as the seeds judge a drop against their baseline;
``e_settings``  the settings the seeds state are those the OSDs reported (run.json ``osd_config.effective``):
    bluestore throttles (part 1 line 52: 256 KiB for the snaptrim/recovery tests; part 2 line 60: 2 MiB for
    the scrub tests), ``osd_max_backfills`` and ``osd_recovery_max_active`` 1000 in mClock arms of tests with
    recovery (part 1 lines 109-110), ``osd_max_scrubs`` 5 in scrub tests (part 2 line 82; 10 in a
    ``_maxscrubs10`` arm, its line 144);
``f_capacity``  the capacity mClock is given is the OSD's own (the seeds: "determined by the automated
    procedure", part 2 line 72): passed where the OSD benchmarked it at start-up or the harness ran the same
    benchmark under the block IO limit (run key ``mclock_capacity_source`` ``osd bench …``); failed where a
    capacity was set, measured as what it was set to against the block IO limit.

Each is ``pass``, ``fail`` or ``not measured`` with what was measured; a failed condition is shown, never
dropped.  Seed values are read from ``data/published`` (:func:`analysis.published.qos.load_all`) where it
holds them, with their seed line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..labels import str_eq
from .arms import op_windows

CONDITIONS = ("a_op_inside_client", "b_shared_budget", "c_cost_model", "d_own_baseline", "e_settings",
              "f_capacity")
COLUMNS = ["campaign", "release", "condition", "status", "measured", "seeds", "runs"]
#: each condition's failure in words (the report's first screen)
FAILED_AS = {"a_op_inside_client": "operations left unfinished in the client run",
             "b_shared_budget": "client and operation on separate IO budgets",
             "c_cost_model": "mClock's cost model inert", "d_own_baseline": "arms without their own baseline",
             "e_settings": "settings other than the seeds'", "f_capacity": "mClock's capacity set, not benchmarked"}
#: the share of an arm's runs whose operation must end inside the client run
INSIDE_MIN = 0.95
#: the directions of block IO each background operation does (scrub reads every replica; snaptrim
#: removes clones: writes; recovery reads a source and writes the target)
OP_DIRECTIONS = {"scrub": {"read"}, "snaptrim": {"write"}, "recovery": {"read", "write"}}
#: fio ``rw`` → the directions the client does
CLIENT_DIRECTIONS = {"read": {"read"}, "randread": {"read"}, "write": {"write"}, "randwrite": {"write"},
                     "rw": {"read", "write"}, "readwrite": {"read", "write"}, "randrw": {"read", "write"}}
#: the scenarios of each seed (part 1: snaptrim, recovery; part 2: scrub)
PART1 = ("snaptrim", "snaptrim_recovery", "recovery")
PART2 = ("scrub", "recovery_scrub")
#: the run keys the gate reads (analysis.ingest.context TUNED_KEYS, THROTTLE_KEYS; fio's rw)
KEYS = ("campaign", "scenario", "arm", "repeat", "op_queue", "profile", "rw", "ceph_release", "max_scrubs",
        "scrub_cost", "max_backfills", "recovery_max_active", "recovery_max_active_hdd",
        "recovery_max_active_ssd", "bluestore_throttle_bytes", "bluestore_throttle_deferred_bytes",
        "mclock_capacity_iops_hdd", "mclock_capacity_iops_ssd", "mclock_skip_benchmark",
        "throttle_read_iops", "throttle_write_iops", "throttle_cgroup", "osd_rotational", "mclock_capacity_source")


#: suffixes of an arm that differs from its profile's only in a scrub setting (the seed's own variants:
#: ``osd_scrub_cost`` 20 MiB, ``osd_max_scrubs`` 10, ``osd_requested_scrub_priority`` 120): without
#: background work it is its profile, so its baseline is the profile's
TUNED_SUFFIXES = ("_cost20m", "_maxscrubs10", "_scrubprio120")


def untuned(arm: str) -> str:
    """``high_client_ops_cost20m`` → ``high_client_ops``; any other arm as it is."""
    for suffix in TUNED_SUFFIXES:
        if arm.endswith(suffix):
            return arm[:-len(suffix)]
    return arm


def ops_of(scenario: str) -> list[str]:
    """The background operations a scenario runs (``snaptrim_recovery`` → snaptrim, recovery)."""
    return [op for op in OP_DIRECTIONS if op in str(scenario).split("_")]


def _with_op(facts: pd.DataFrame, op: str | None = None) -> np.ndarray:
    """Which runs have a background operation (``op``: that one), as a plain bool mask."""
    return np.array([bool(ops_of(s)) if op is None else op in ops_of(s) for s in facts["scenario"].astype(str)],
                    dtype=bool)


def _mclock(facts: pd.DataFrame) -> np.ndarray:
    """Which runs ran mClock (run key ``op_queue``), as a plain bool mask."""
    q = facts["op_queue"].astype(str) if "op_queue" in facts else pd.Series("", index=facts.index)
    return (q == "mclock_scheduler").to_numpy(dtype=bool)


def run_facts(summary: pd.DataFrame, campaign: str) -> pd.DataFrame:
    """One row per run of ``campaign`` (scenario, arm, repeat) with the run keys of :data:`KEYS` it has,
    as text (the fio JSON's rows carry them; a run without a fio JSON has none)."""
    s = summary[str_eq(summary["campaign"], campaign) & str_eq(summary["kind"], "fio-json")]
    cols = [k for k in KEYS if k in s.columns]
    r = s[cols].astype("string").drop_duplicates(["scenario", "arm", "repeat"]).reset_index(drop=True)
    return r


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.nan


def _row(campaign: str, release: str, condition: str, status: str, measured: str, seeds: str, runs: int) -> dict:
    return dict(zip(COLUMNS, (campaign, release, condition, status, measured, seeds, int(runs))))


def op_inside_client(summary: pd.DataFrame, series: pd.DataFrame, campaign: str) -> tuple[str, str, int]:
    """(status, measured, runs) of condition a."""
    s = summary[str_eq(summary["campaign"], campaign)]
    w = op_windows(s, series[str_eq(series["campaign"], campaign)])
    w = w[w["op"].notna() & w["op_start"].notna()]
    if w.empty:
        return "not measured", "no run with a background operation and its timeline", 0
    per = w.groupby("arm")["ended_in_client"].agg(["sum", "size"])
    per["share"] = per["sum"] / per["size"]
    per = per.sort_values(["share", "size"])
    short = per[per["share"] < INSIDE_MIN]
    text = ", ".join(f"{a} {int(r['sum'])}/{int(r['size'])}" for a, r in (short if len(short) else per.head(3)).iterrows())
    if len(short):
        return "fail", f"the operation ended inside the client run in {text} runs", len(w)
    return "pass", f"the operation ended inside the client run in every arm (fewest: {text})", len(w)


def shared_budget(facts: pd.DataFrame) -> tuple[str, str, int]:
    """(status, measured, runs) of condition b."""
    f = facts[_with_op(facts)]
    if f.empty or "rw" not in f:
        return "not measured", "no run with a background operation and a recorded client rw", 0
    limited = "throttle_read_iops" in f and "throttle_write_iops" in f and \
        f["throttle_read_iops"].notna().all() and f["throttle_write_iops"].notna().all()
    if not limited:
        return "pass", ("no per-direction block IO limit recorded: client and operation share one device "
                        "(not measured from the device's counters)"), len(f)
    apart = []
    for (scen, rw), g in f.groupby(["scenario", "rw"]):
        client = CLIENT_DIRECTIONS.get(str(rw), set())
        for op in ops_of(scen):
            alone = OP_DIRECTIONS[op] - client
            if alone:
                apart.append(f"{scen}: {op} {'+'.join(sorted(alone))} against a {rw} client ({len(g)} runs)")
    lim = (f"per-direction limits {f['throttle_read_iops'].iloc[0]} read / {f['throttle_write_iops'].iloc[0]} "
           f"write IO/s per OSD ({f['throttle_cgroup'].iloc[0] if 'throttle_cgroup' in f else 'cgroup'})")
    if apart:
        return "fail", f"{lim}; the operation's own budget: " + "; ".join(apart), len(f)
    return "pass", f"{lim}; every operation's directions are the client's", len(f)


def cost_model(summary: pd.DataFrame, facts: pd.DataFrame, campaign: str) -> tuple[str, str, int]:
    """(status, measured, runs) of condition c: scrub duration of each ``<arm>_cost20m`` against ``<arm>``."""
    s = summary[str_eq(summary["campaign"], campaign) & str_eq(summary["kind"], "ceph-pg-timeline")
                & str_eq(summary["metric"], "scrub_duration") & str_eq(summary["scenario"], "scrub")]
    d = s.groupby(["arm", "repeat"], observed=True)["value"].max().reset_index()
    d["arm"] = d["arm"].astype(str)
    twins = sorted(a for a in set(d["arm"]) if a.endswith("_cost20m") and a[:-len("_cost20m")] in set(d["arm"]))
    if not twins:
        return "not measured", "no arm with the seed's 20 MiB scrub cost beside its 50 MiB twin", 0
    parts, moved, n = [], [], 0
    for t in twins:
        a = d.loc[d["arm"] == t[:-len("_cost20m")], "value"].to_numpy(float)
        b = d.loc[d["arm"] == t, "value"].to_numpy(float)
        n += len(a) + len(b)
        if len(a) < 2 or len(b) < 2:
            parts.append(f"{t}: {len(b)} vs {len(a)} finished scrubs, too few")
            continue
        la, lb = np.log(a), np.log(b)
        diff = lb.mean() - la.mean()
        ci = stats.ttest_ind(lb, la, equal_var=False).confidence_interval(0.95)  # Welch, on the logs
        low, high = (ci.low, ci.high) if np.isfinite(ci.low) else (diff, diff)  # no spread at all: the point
        lo, hi = np.expm1(low) * 100, np.expm1(high) * 100
        parts.append(f"{t}: scrub duration {np.expm1(diff) * 100:+.1f} % [{lo:+.1f}, {hi:+.1f}] "
                     f"({len(b)} vs {len(a)} runs)")
        moved.append(lo > 0 or hi < 0)
    if not moved:
        return "not measured", "; ".join(parts), n
    return ("pass" if all(moved) else "fail"), "; ".join(parts), n


def own_baseline(facts: pd.DataFrame) -> tuple[str, str, int]:
    """(status, measured, runs) of condition d: a run of a ``baseline*`` scenario (``baseline``,
    ``baseline_read`` …) of the same arm with the same client ``rw`` (a read client's drop is judged
    against the read client alone)."""
    bg = facts[_with_op(facts)]
    if bg.empty:
        return "not measured", "no run with a background operation", 0
    is_base = facts["scenario"].astype(str).str.startswith("baseline").to_numpy(dtype=bool)
    rw = facts["rw"].astype(str) if "rw" in facts else pd.Series("", index=facts.index)
    base = set(zip(facts.loc[is_base, "arm"].astype(str), rw[is_base]))
    need = sorted(set(zip(bg["arm"].astype(str), rw[bg.index])))
    missing = [f"{a} ({w})" for a, w in need if (a, w) not in base and (untuned(a), w) not in base]
    by_name = sorted({f"{a} → {untuned(a)}" for a, w in need if (a, w) not in base and (untuned(a), w) in base})
    said = (f"; {len(by_name)} scrub-setting variants take their profile's baseline, matched by the arm's name "
            f"(no run key names a variant's profile arm): {', '.join(by_name)}") if by_name else ""
    n = int(is_base.sum())
    if missing:
        return "fail", (f"no baseline run of {', '.join(missing)} with the same client ({len(base)} arm × client "
                        f"pairs have one){said}"), n
    return "pass", f"every one of {len(need)} arm × client pairs has baseline runs ({n} runs){said}", n


def _values(g: pd.DataFrame, key: str) -> str:
    v = g[key].astype("string").fillna("not recorded") if key in g else pd.Series(["not recorded"] * len(g))
    c = v.value_counts()
    return ", ".join(f"{k} ({n})" for k, n in c.items())


def settings(facts: pd.DataFrame, published: pd.DataFrame | None = None) -> tuple[str, str, int]:
    """(status, measured, runs) of condition e (module docstring); seed values from ``published`` where
    it has them, else the module's."""
    seed = _seed_settings(published)
    bad: list[str] = []
    checked: set = set()

    def need(rows: pd.DataFrame, key: str, want: float, what: str) -> None:
        if rows.empty:
            return
        checked.update(rows.index)
        got = rows[key].map(_num) if key in rows else pd.Series(np.nan, index=rows.index)
        off = rows[~np.isclose(got.astype(float), want)]
        if len(off):
            shown = f"{want / 2**20:g} MiB" if want >= 2**20 else f"{want / 1024:g} KiB" if "bytes" in key else f"{want:g}"
            bad.append(f"{what}: {_values(off, key)} where the seeds have {shown}")

    p1 = facts[facts["scenario"].isin(PART1)]
    p2 = facts[facts["scenario"].isin(PART2)]
    for key in ("bluestore_throttle_bytes", "bluestore_throttle_deferred_bytes"):
        need(p1, key, seed[("part1", key)], f"{key} (snaptrim/recovery tests)")
        need(p2, key, seed[("part2", key)], f"{key} (scrub tests)")
    rec = facts[_with_op(facts, "recovery") & _mclock(facts)]
    if not rec.empty:
        rec = rec.assign(recovery_max_active_in_force=[_recovery_active(r) for _, r in rec.iterrows()])
        rec["recovery_max_active_in_force"] = rec["recovery_max_active_in_force"].map(lambda x: f"{x:g}")
        need(rec, "max_backfills", seed[("part1", "osd_max_backfills")], "osd_max_backfills (mClock arms, recovery)")
        need(rec, "recovery_max_active_in_force", seed[("part1", "osd_recovery_max_active")],
             "osd_recovery_max_active in force (mClock arms, recovery)")
    scrub = facts[facts["scenario"] == "scrub"]
    if not scrub.empty:
        ten = scrub["arm"].astype(str).str.contains("maxscrubs10")
        need(scrub[~ten], "max_scrubs", 5.0, "osd_max_scrubs (scrub tests)")
        need(scrub[ten], "max_scrubs", 10.0, "osd_max_scrubs (the maxscrubs10 arm)")
    if not checked:
        return "not measured", "no run of a seed's test with its settings recorded", 0
    if bad:
        return "fail", "; ".join(bad), len(checked)
    return "pass", "every setting the seeds state is the one the OSDs reported", len(checked)


def _recovery_active(r: pd.Series) -> float:
    """``osd_recovery_max_active`` in force: the option itself, or where it is 0 the device-class one
    (``_ssd``, else ``_hdd``; Ceph's rule)."""
    v = _num(r.get("recovery_max_active"))
    if v and v > 0:
        return v
    for k in ("recovery_max_active_ssd", "recovery_max_active_hdd"):
        x = _num(r.get(k))
        if np.isfinite(x):
            return x
    return np.nan


def capacity(facts: pd.DataFrame) -> tuple[str, str, int]:
    """(status, measured, runs) of condition f."""
    m = facts[_mclock(facts)]
    if m.empty or "mclock_skip_benchmark" not in m:
        return "not measured", "no mClock run with its capacity settings recorded", 0
    skipped = m["mclock_skip_benchmark"].astype(str).str.lower().isin(["true", "1"])
    cap = pd.concat([m.get(k, pd.Series(dtype=str)).map(_num) for k in ("mclock_capacity_iops_ssd",
                                                                         "mclock_capacity_iops_hdd")], axis=1).max(axis=1)
    if not skipped.any():
        return "pass", f"the OSDs benchmarked their capacity ({len(m)} mClock runs)", len(m)
    src = m.get("mclock_capacity_source", pd.Series("", index=m.index)).astype("string").fillna("")
    bench = src.str.startswith("osd bench").to_numpy(dtype=bool)
    if bench.all():
        caps = sorted(set(cap.dropna().round(0)))
        return "pass", (f"the OSD's own benchmark (ceph tell osd.N bench, Ceph's start-up arguments) under the "
                        f"block IO limit set the capacity in all {len(m)} mClock runs: "
                        f"{', '.join(f'{c:g}' for c in caps)} IOPS (osd.0 shown per run)"), len(m)
    lim = m.get("throttle_write_iops", pd.Series(dtype=str)).map(_num)
    caps = ", ".join(f"{c:g} IOPS ({n})" for c, n in cap[skipped].value_counts().items())
    against = (f", equal to the block IO limit of {lim[skipped].iloc[0]:g} IO/s per direction"
               if lim[skipped].notna().any() and np.allclose(cap[skipped].dropna(), lim[skipped].dropna().iloc[0])
               else "")
    return "fail", (f"benchmark skipped in {int(skipped.sum())} of {len(m)} mClock runs, capacity set to {caps}"
                    f"{against}; the seeds let the OSD benchmark it (usually higher than the raw capacity)"), len(m)


def _seed_settings(published: pd.DataFrame | None) -> dict[tuple[str, str], float]:
    """The seeds' stated settings (bytes, counts) from data/published where it holds them."""
    out = {("part1", "bluestore_throttle_bytes"): 256 * 1024.0, ("part1", "bluestore_throttle_deferred_bytes"): 256 * 1024.0,
           ("part2", "bluestore_throttle_bytes"): 2 * 2**20.0, ("part2", "bluestore_throttle_deferred_bytes"): 2 * 2**20.0,
           ("part1", "osd_max_backfills"): 1000.0, ("part1", "osd_recovery_max_active"): 1000.0}
    if published is None or published.empty:
        return out
    scale = {"KiB": 1024.0, "MiB": 2.0**20, "count": 1.0}
    for part, seed in (("part1", "snaptrim-recovery-part1"), ("part2", "scrub-part2")):
        p = published[published["seed"].astype(str).str.contains(seed) & (published["kind"] == "setting")
                      & published["test"].fillna("").astype(str).eq("")]  # a setting of every test
        for key in ("bluestore_throttle_bytes", "bluestore_throttle_deferred_bytes", "osd_max_backfills",
                    "osd_recovery_max_active"):
            r = p[p["metric"].astype(str) == key]
            if len(r) and str(r["unit"].iloc[0]) in scale:
                out[(part, key)] = float(r["value"].iloc[0]) * scale[str(r["unit"].iloc[0])]
    return out


SEEDS = {"a_op_inside_client": "every operation completes inside the client run (part 1 lines 144, 248; part 2 line 102)",
         "b_shared_budget": "4 KiB random writes on NVMe: client and operation share one device budget (part 1 line 52; part 2 lines 45, 60)",
         "c_cost_model": "osd_scrub_cost 50 → 20 MiB changes the scrub under mClock (part 2 lines 140, 158)",
         "d_own_baseline": "degradation judged against a baseline client run (part 1 line 52; part 2 line 60)",
         "e_settings": "bluestore throttles 256 KiB (part 1 line 52) / 2 MiB (part 2 line 60); backfills and recovery max active 1000 under mClock (part 1 lines 109-110); osd_max_scrubs 5 (part 2 line 82)",
         "f_capacity": "OSD capacity by the automated benchmark (part 2 line 72)"}


def gate(summary: pd.DataFrame, series: pd.DataFrame, campaign: str,
         published: pd.DataFrame | None = None) -> pd.DataFrame:
    """The six conditions of ``campaign`` (:data:`COLUMNS`), from its rows of the processed tables."""
    facts = run_facts(summary, campaign)
    rel = ",".join(sorted(set(facts["ceph_release"].dropna().astype(str)))) if "ceph_release" in facts else ""
    got = {"a_op_inside_client": op_inside_client(summary, series, campaign),
           "b_shared_budget": shared_budget(facts),
           "c_cost_model": cost_model(summary, facts, campaign),
           "d_own_baseline": own_baseline(facts),
           "e_settings": settings(facts, published),
           "f_capacity": capacity(facts)}
    return pd.DataFrame([_row(campaign, rel, c, *got[c][:2], SEEDS[c], got[c][2]) for c in CONDITIONS],
                        columns=COLUMNS)


def failed(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per campaign the conditions that failed (``not measured`` is not failed: it is said as such)."""
    f = table[table["status"] == "fail"]
    return {c: sorted(g["condition"]) for c, g in f.groupby("campaign")}


def comparable(claims: pd.DataFrame, table: pd.DataFrame) -> pd.Series:
    """Per claim row (``campaign``): ``yes`` when its campaign passed every condition the gate could
    measure, else ``no: <failed conditions>``; ``not gated`` for a campaign the gate has no row of."""
    bad = failed(table)
    gated = set(table["campaign"])
    return claims["campaign"].map(lambda c: "not gated" if c not in gated else
                                  "yes" if not bad.get(c) else "no: " + ", ".join(bad[c]))

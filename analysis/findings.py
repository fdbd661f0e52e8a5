"""What we found: the report's first screen, sentences computed from the tables (never typed).

``python -m analysis claims`` writes ``findings.json`` beside ``claims.csv``: per QoS campaign and
background operation, the op-queue setting that kept the most client IOPS while the operation ran against
WPQ, and what that cost in the operation's duration — both under the pre-registered model
(:func:`analysis.stats.prereg.contrast`, docs/analysis-plan.md) with their 95 % CI.  The report turns
it, ``claims.csv`` and the history of the processed tables into a handful of sentences, each with its
number, CI and a link to the section or figure that shows it (:func:`sentences`).  The block and RGW
studies' sentences are computed when the report is made, from small tables the loaders read out of the
processed tables (campaigns and columns pruned): :func:`iosched_sentences` (notebook 20),
:func:`workload_sentences` (notebook 40) and :func:`rgw_sentences` (notebook 50), each through the
notebook's own functions; a study whose campaign the data lacks says nothing.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .stats import prereg
from .stats.consistency import ALPHA
from .stats.validity import FAILED_AS
from .stats.iosched import WORKLOAD, workload_verdicts
from .stats.verdicts import bh

FINDINGS_JSON = "findings.json"
#: background operation (scenario) → its duration metric and a name for people
OPERATIONS = {"scrub": ("scrub_duration", "scrub"), "snaptrim_recovery": ("recovery_duration", "snaptrim + recovery")}
#: the duration metric's name in a sentence
DURATION_NAME = {"scrub_duration": "scrub", "recovery_duration": "recovery"}
CLIENT = "client_iops_during"
REFERENCE = "wpq"


def protection(metrics: pd.DataFrame, records: pd.DataFrame, campaign: str, release: str | None) -> list[dict]:
    """Per :data:`OPERATIONS` scenario of one campaign's run metrics: each setting's client IOPS while the
    operation ran against WPQ (pre-registered model; BH q over the settings), the setting with the largest
    estimate, and its change in the operation's duration against WPQ.  CIs are unadjusted for picking the
    best (said in the sentence)."""
    out = []
    for scen, (dur, name) in OPERATIONS.items():
        d = metrics[metrics["scenario"] == scen]
        arms = sorted(set(d["arm"].astype(str)) - {REFERENCE})
        if REFERENCE not in set(d["arm"].astype(str)) or not arms:
            continue
        fits = {a: prereg.contrast(metrics, prereg.Side(scen, a, CLIENT), prereg.Side(scen, REFERENCE, CLIENT), records)
                for a in arms}
        fits = {a: f for a, f in fits.items() if f is not None}
        if not fits:
            continue
        q = dict(zip(fits, bh([f["p"] for f in fits.values()])))
        best = max(fits, key=lambda a: fits[a]["est"])
        f = fits[best]
        c = prereg.contrast(metrics, prereg.Side(scen, best, dur), prereg.Side(scen, REFERENCE, dur), records)
        pct = lambda x: round(100 * math.expm1(x), 2)  # noqa: E731
        out.append({"campaign": campaign, "release": release or "", "scenario": scen, "operation": name,
                    "arm": best, "settings": len(fits), "runs_per_setting": int(f["n"]),
                    "client_pct": pct(f["est"]), "client_lo": pct(f["lo"]), "client_hi": pct(f["hi"]),
                    "client_q": float(q[best]), "duration_metric": dur,
                    "duration_pct": None if c is None else pct(c["est"]),
                    "duration_lo": None if c is None else pct(c["lo"]),
                    "duration_hi": None if c is None else pct(c["hi"]),
                    "duration_p": None if c is None else float(c["p"])})
    return out


def write(rows: list[dict], path: Path) -> Path:
    """``rows`` as JSON at ``path`` (temp file, then rename)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps({"qos_protection": rows}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _ci(x, lo, hi, digits: int = 1) -> str:
    return f"{x:+.{digits}f} % [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def _link(text: str, target: str | None) -> str:
    return f"<a href='#{target}'>{text}</a>" if target else text


def qos_sentences(rows: list[dict], sections: set[str]) -> list[str]:
    """One sentence per campaign of ``findings.json``'s ``qos_protection``, a clause per operation: who
    protected the client (WPQ, the best other setting, or none measurably: BH q < 0.05 over the settings),
    by how much, and at what cost in the operation's duration; the CIs' caveat once, in the first.  A
    campaign that fails the validity gate (``gate_failed``: :mod:`analysis.stats.validity`) is said to be a
    rig that is not the seeds' experiment, with the conditions it fails, before what it found."""
    out = []
    by_campaign: dict[str, list[dict]] = {}
    for r in rows:
        by_campaign.setdefault(r["campaign"], []).append(r)
    for camp, rs in by_campaign.items():
        r0 = rs[0]
        where = "33-qos-v2" if camp == "qos-v2" else "35-versions" if r0["release"] == "reef" else "32-qos-campaign"
        rel = f"Ceph {r0['release'].capitalize()}" if r0["release"] else "Ceph"
        clauses = []
        for r in rs:
            arm = f"<code>{html.escape(r['arm'])}</code>"
            if r["client_q"] >= 0.05:
                lead = "no op-queue setting changed client IOPS measurably against WPQ"
            elif r["client_pct"] < 0:
                lead = "WPQ protected the client best"
            else:
                lead = f"{arm} protected the client better than WPQ"
            cost = ""
            if r["duration_pct"] is not None:
                moved = r["duration_lo"] > 0 or r["duration_hi"] < 0
                cost = (f", its {DURATION_NAME.get(r['duration_metric'], r['operation'])} time "
                        f"{_ci(r['duration_pct'], r['duration_lo'], r['duration_hi'])}"
                        + ("" if moved else " (not distinguishable from WPQ's)"))
            clauses.append(f"during {r['operation']}, {lead}: the best of {r['settings']} other settings for the "
                           f"client, {arm}, had {_ci(r['client_pct'], r['client_lo'], r['client_hi'])} client IOPS "
                           f"against WPQ (q {r['client_q']:.2g}){cost}")
        runs = sorted({int(r["runs_per_setting"]) for r in rs})
        caveat = "; 95 % CIs under the pre-registered model, not adjusted for picking the best" if not out else ""
        gate = r0.get("gate_failed") or []
        rig = (f", a rig that is not the seeds' experiment ({', '.join(FAILED_AS.get(g, g) for g in gate)}; "
               f"{_link('the validity gate', where if where in sections else None)}), " if gate else ", ")
        out.append(f"On {rel} ({html.escape(camp)}){rig}{'; '.join(clauses)} ({'–'.join(map(str, runs))} runs a "
                   f"setting{caveat}; {_link('figures', where if where in sections else None)}).")
    return out


def claims_sentence(table: pd.DataFrame, sections: set[str]) -> list[str]:
    """One sentence over the campaigns: how many distinct tests the plan decides on each, and how
    (``claims.csv``)."""
    from .stats.claims import verdict_counts
    parts = []
    counts = verdict_counts(table)
    for (camp, kind), row in counts.iterrows():
        if kind != "testable":
            continue
        tested = int(row.drop(["decided", "open"], errors="ignore").sum())
        how = [f"{int(row[v])} {v}" for v in ("reproduced", "same direction, smaller", "same direction, larger",
                                               "contradicted", "undecided", "not measurable here") if row.get(v, 0)]
        comp = table.loc[(table["campaign"] == camp) & table["direction"].notna(), "comparable"] \
            if "comparable" in table else pd.Series(dtype=str)
        with_seeds = int(comp.astype(str).eq("yes").sum())
        parts.append(f"{html.escape(str(camp))} {int(row['decided'])} of {tested} ({', '.join(how)}; "
                     f"{with_seeds} comparable with the seeds)" if len(comp) else
                     f"{html.escape(str(camp))} {int(row['decided'])} of {tested} ({', '.join(how)})")
    if not parts:
        return []
    return [f"The published mClock-vs-WPQ claims, distinct tests decided on each campaign (BH q over its "
            f"tests): {'; '.join(parts)} ({_link('the claims', 'claims')})."]


def history_sentences(changes: pd.DataFrame, sections: set[str], metric: str = "iops") -> list[str]:
    """The changes of ``metric`` in the data's history (:func:`analysis.stats.history.detect`)."""
    if changes is None:
        return []
    c = changes[changes["metric"] == metric]
    link = _link("the history", "60-history" if "60-history" in sections else None)
    if c.empty:
        return [f"The history holds no change of {metric} of at least 5 % ({link})."]
    each = "; ".join(f"{html.escape(r.series.split()[-1])} at point {html.escape(str(r.point))}: "
                     f"{_ci(r.change_pct, r.ci_lo_pct, r.ci_hi_pct, 2)}" for r in c.itertuples())
    return [f"The history's {metric} changed {len(c)} time(s) — {each} ({int(c['fails'].sum())} "
            f"regression(s); {link})."]


def history_changes(processed: str | Path) -> pd.DataFrame | None:
    """The changes in the processed tables' history (the runs that name their point), or None when the
    data holds none (:mod:`analysis.stats.history`, the defaults of ``python -m analysis history``)."""
    import pyarrow.parquet as pq

    from .stats import history as hs
    from .store import read_table
    p = Path(processed) / "summary.parquet"
    if not p.is_file() or "point" not in pq.ParquetFile(p).schema_arrow.names:
        return None
    s = read_table(processed, "summary", check=False, filters=[("point", "!=", "")])
    s = s[s["point"].notna()]
    if s.empty:
        return None
    return hs.detect(hs.build(s, metrics=["iops"]))


#: run metric → its name for people (claims' ``cells``)
METRIC_NAMES = {"client_iops": "client IOPS", "client_iops_during": "client IOPS during the operation",
                "client_bw": "client bandwidth", "clat_mean": "mean client latency",
                "clat_during": "client latency during the operation", "clat_outside": "client latency outside it",
                "snaptrim_duration": "snaptrim time", "scrub_duration": "scrub time",
                "recovery_duration": "recovery time", "snaptrim_rate": "snaptrim rate", "scrub_rate": "scrub rate",
                "recovery_rate": "recovery rate", "op_rate": "background-operation rate",
                "client_iops_op": "client IOPS while the operation ran", "client_iops_pre": "client IOPS before it"}
#: scenario → its name for people
SCENARIO_NAMES = {"snaptrim_recovery": "snaptrim + recovery", "recovery_scrub": "recovery + scrub"}


def _arm(a: str) -> str:
    return "WPQ" if a == "wpq" else a


def claim_label(cells: str) -> str:
    """A claim's comparison in words, from ``claims.csv``'s ``cells`` (``scen/arm metric vs scen/arm
    metric``), e.g. ``client IOPS in snaptrim: high_client_ops vs WPQ``; the text itself when it has
    another form."""
    try:
        (sa, ma), (sb, mb) = (side.strip().split(" ", 1) for side in str(cells).split(" vs "))
        (scen_a, arm_a), (scen_b, arm_b) = sa.split("/", 1), sb.split("/", 1)
    except ValueError:
        return str(cells)
    name = lambda m: METRIC_NAMES.get(m, m)  # noqa: E731
    scen_a, scen_b = SCENARIO_NAMES.get(scen_a, scen_a), SCENARIO_NAMES.get(scen_b, scen_b)
    if ma == mb and scen_a == scen_b:
        return f"{name(ma)} in {scen_a}: {_arm(arm_a)} vs {_arm(arm_b)}"
    if ma == mb and arm_a == arm_b:
        return f"{_arm(arm_a)} {name(ma)}: {scen_a} vs {scen_b}"
    if (scen_a, arm_a) == (scen_b, arm_b):
        return f"{_arm(arm_a)} in {scen_a}: {name(ma)} vs {name(mb)}"
    return f"{name(ma)} in {scen_a} ({_arm(arm_a)}) vs {name(mb)} in {scen_b} ({_arm(arm_b)})"


# --- the block and RGW studies (notebooks 20, 40, 50) ---------------------------------------------------

#: the notebooks' default campaigns: 20's ``campaigns``, 40's ``rados_campaign``, 50's ``campaign`` and
#: ``cbt_prefix`` (CBT's getput archive names no campaign: its rows are found by their source path)
IOSCHED_CAMPAIGNS = ("block-2026", "rados-block-2026")
WORKLOAD_CAMPAIGN = "rados-block-2026"
RGW_CAMPAIGN = "rgw-2026"
CBT_PREFIX = "rgw/rgw-cbt-2026/"

#: notebook 40's block for rewrites and stack distances (``block_sectors`` 8: 4 KiB)
BLOCK_KIB = 4

#: the ``blk_requests`` columns :func:`analysis.stats.blockio.characterize` and the sentence use (the other
#: run keys come out empty from ``prepare``): 14 of its 22 columns, 0.36 → 0.17 s to read
TRACE_COLUMNS = ["dev", "sector", "nbytes", "rwbs", "ddir", "d_ns", "c_ns", "source", "campaign", "scenario",
                 "io_scheduler", "rw", "trace_dev_data", "trace_dev_db"]


def _target(figures, fig_id: str | None, sections, section_id: str) -> str | None:
    """The anchor of figure ``fig_id`` when the page shows it, else the section when the page has it."""
    if fig_id and fig_id in figures:
        return f"fig-{fig_id}"
    return section_id if section_id in sections else None


def _see(text: str, target: str | None) -> str:
    """`` (<link>)`` to close a sentence, or nothing when the page has no such target."""
    return f" ({_link(text, target)})" if target else ""


def _span(n: pd.Series) -> str:
    return f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())}–{int(n.max())}"


def iosched_sentences(values: pd.DataFrame | None, sections: set[str], figures: set[str] | frozenset = frozenset(),
                      alpha: float = ALPHA) -> list[str]:
    """Per campaign of ``values`` (:func:`analysis.stats.iosched.block_values`: one row per run, MiB/s),
    notebook 20's conclusion in one sentence: in how many workloads the one-way ANOVA rejects equal
    throughput of the schedulers at ``alpha`` against the number expected by chance, the scheduler fastest
    most often there, and the widest best-over-worst spread among them with its 95 % CI (BCa bootstrap of
    the ratio of means, :func:`analysis.stats.consistency.effect_size`; not adjusted for picking the widest)
    and the pair's Tukey HSD p (``scipy.stats.tukey_hsd``); where nothing rejects, the median spread and
    noise.  Links to the scatter of every run of that campaign and direction."""
    if values is None or values.empty:
        return []
    from scipy import stats

    from .stats.consistency import effect_size
    verdicts = workload_verdicts(values, alpha, by=WORKLOAD, detail=False)  # notebook 20's table, its ANOVA
    out = []
    for camp, v in verdicts.groupby("campaign", sort=False):  # one per campaign: a few
        runs = values[values["campaign"] == camp]
        tool = "rados bench" if str(camp).startswith("rados") else "fio"  # iosched.block_values' rule
        intro = (f"Across the blk-mq IO schedulers ({html.escape(str(camp))}: {tool} on "
                 f"{html.escape(', '.join(map(str, dict.fromkeys(runs['target']))))}; {_span(v['repeats'])} runs "
                 f"a scheduler), the one-way ANOVA rejects equal throughput in ")
        rej = v[v["anova_p"] < alpha]
        chance = f"{alpha * len(v):.1f} expected by chance"
        if rej.empty:
            link = _see("section", _target(figures, None, sections, "20-io-schedulers"))
            out.append(f"{intro}none of {len(v)} workloads at α {alpha:g} ({chance}): no scheduler differed "
                       f"measurably; the median best-over-worst spread was {100 * v['spread'].median():+.1f} % at a "
                       f"median CV of {100 * v['cv'].median():.1f} %{link}.")
            continue
        wins = rej["best"].value_counts()
        top = min(wins.index, key=lambda k: (-wins[k], k))
        wide = rej.loc[rej["spread"].idxmax()]
        cell = runs[(runs[WORKLOAD] == wide[WORKLOAD]).all(axis=1)]
        by_s = {k: g["value"].to_numpy(float) for k, g in cell.groupby("io_scheduler", sort=True)}
        e = effect_size(by_s[wide["worst"]], by_s[wide["best"]], "rel_diff")
        names = list(by_s)
        tukey = stats.tukey_hsd(*by_s.values()).pvalue[names.index(wide["best"]), names.index(wide["worst"])]
        if np.isfinite(e["ci_low"]):  # the estimate is the spread itself: mean(best) / mean(worst) − 1
            ci, how = _ci(100 * wide["spread"], 100 * e["ci_low"], 100 * e["ci_high"]), \
                "; BCa bootstrap 95 % CI, not adjusted for picking the widest"
        else:
            ci, how = f"{100 * wide['spread']:+.1f} % (no CI: {html.escape(str(e['reason']))})", ""
        link = _see("figure", _target(figures, f"iosched-scatter-{camp}-{wide['op']}", sections, "20-io-schedulers"))
        where = html.escape(f"{wide['target']} {wide['op']} {wide['bs']} QD {wide['qd']}")
        out.append(f"{intro}{len(rej)} of {len(v)} workloads at α {alpha:g} ({chance}), "
                   f"<code>{html.escape(str(top))}</code> fastest in {int(wins[top])} of them; the widest spread "
                   f"there, {where}: <code>{html.escape(str(wide['best']))}</code> over "
                   f"<code>{html.escape(str(wide['worst']))}</code> {ci} throughput (Tukey p {tukey:.2g}{how}){link}.")
    return out


def workload_sentences(prof: pd.DataFrame | None, dist: pd.DataFrame | None, win: pd.DataFrame | None,
                       sections: set[str], figures: set[str] | frozenset = frozenset()) -> list[str]:
    """Notebook 40's metadata-vs-data table in one sentence, from :func:`analysis.stats.blockio.characterize`
    by ``phase, role`` (``prof``), its stack distances (``dist``, blocks) and the trace windows (``win``)
    of one rados campaign: during the write phase, the DB device's near and strict sequential ratios, the
    share of its writes that rewrite a block of the same trace and how many of those rewrites a 2-block LRU
    write cache would hit (stack distance ≤ 1), and the data device's strict ratio and rewrites.  Single
    traces, not repeats: no CI or p, and the sentence says so."""
    from .stats.blockio import STREAM
    if prof is None or not {("write", "db"), ("write", "data")} <= set(prof.index) \
            or not prof.loc[("write", "db"), "requests"]:
        return []
    db, data = prof.loc[("write", "db")], prof.loc[("write", "data")]
    w = win[(win["phase"] == "write") & (win["role"] == "db")]
    per = int(w.groupby(["scenario", "io_scheduler"]).size().max())
    reps = "one per workload and scheduler, no repeats: no CI or p" if per == 1 else \
        f"up to {per} per workload and scheduler, pooled: no CI"
    d = dist.merge(w[STREAM], on=STREAM)["distance"]
    rewrites = "none a rewrite" if not data["updates"] else f"{100 * data['update_ratio_req']:.1f} % rewrites"
    link = _see("figure", _target(figures, "workload-sequentiality", sections, "40-block-workload"))
    span_s = (w["t_end_ns"] - w["t_start_ns"]).mean() / 1e9
    return [f"On the traced OSD under rados bench writes ({html.escape(str(w['campaign'].iloc[0]))}: {len(w)} traces "
            f"of {span_s:.1f} s, {reps}), its DB device wrote near-sequentially "
            f"({db['near_ratio']:.3f} of writes) but hardly ever strictly ({db['strict_ratio']:.3f}), and "
            f"{100 * db['update_ratio_req']:.1f} % of its writes rewrote a {BLOCK_KIB} KiB block of the same trace, "
            f"{int((d <= 1).sum()):,} of the {len(d):,} rewrites within a 2-block ({2 * BLOCK_KIB} KiB) LRU cache; "
            f"its data device's writes were {data['strict_ratio']:.3f} strictly sequential, {rewrites}{link}."]


def rgw_sentences(runs: pd.DataFrame | None, cbt: pd.DataFrame | None, sections: set[str],
                  figures: set[str] | frozenset = frozenset(), campaign: str = RGW_CAMPAIGN,
                  alpha: float = ALPHA) -> list[str]:
    """Notebook 50's headline from its per-run table (``runs``, :func:`analysis.stats.rgw.run_table`; PUT
    MiB/s) and CBT's own getput runs (``cbt``, :func:`analysis.stats.rgw.cbt_runs`): the getput diary's
    first claim our runs can test (:func:`analysis.stats.rgw.claims`: 64 index shards against one unsharded
    bucket) with our ratio of geometric means − 1 (%, Welch's t on logs, 95 % CI, p, BH q over the diary's
    claims), its verdict and the diary's number; then CBT's getput against our harness's ``bucket-per-proc``
    arm (:func:`analysis.stats.rgw.cbt_vs_harness`)."""
    if runs is None or runs.empty or "put_mib_s" not in runs or runs["arm"].nunique() < 2:
        return []  # (rgw.contrasts needs an arm besides the reference)
    from .stats import rgw
    claims = rgw.claims(runs, alpha)
    ok = claims[np.isfinite(claims["ratio"].astype(float)) & claims["p"].notna()]
    if ok.empty:
        return []
    r = ok.iloc[0]
    pct = lambda x: 100 * (x - 1)  # noqa: E731 — ratio → change, %
    n = runs.dropna(subset=["put_mib_s"]).groupby("arm").size()
    inside = "inside" if r["lo"] <= r["diary ratio"] <= r["hi"] else "outside"
    tail = ""
    if cbt is not None and len(cbt) and "bucket-per-proc" in set(runs["arm"]):
        c = rgw.cbt_vs_harness(cbt, runs, ref="bucket-per-proc").iloc[0]
        if np.isfinite(c["lo"]):
            tail = (f"; CBT's own getput ({int(c['n_a'])} iterations) against our harness's <code>bucket-per-proc"
                    f"</code>: {_ci(pct(c['ratio']), pct(c['lo']), pct(c['hi']))} (p {c['p']:.2g})")
    link = _see("figure", _target(figures, "rgw-put-by-arm", sections, "50-rgw"))
    m = int(claims["p"].notna().sum())
    return [f"On RGW ({html.escape(campaign)}, {_span(n)} runs an arm), the getput diary's "
            f"“{html.escape(str(r['claim']))}” is {html.escape(str(r['verdict']))}: "
            f"<code>{html.escape(str(r['arm']))}</code> over <code>{html.escape(str(r['vs']))}</code> "
            f"{_ci(pct(r['ratio']), pct(r['lo']), pct(r['hi']))} PUT throughput "
            f"(p {r['p']:.2g}, BH q {r['q']:.2g} over {m} tested claim{'s' if m != 1 else ''}; Welch on logs), the "
            f"diary's {pct(r['diary ratio']):+.0f} % {inside} our CI{tail}{link}."]


def _read(processed: str | Path, name: str, columns: list[str], filters: list[tuple]) -> pd.DataFrame:
    """Table ``name`` of the processed set, only ``columns`` and the rows passing every filter
    (:func:`analysis.store.read_table`); empty when the set lacks the table or one of those columns."""
    from . import store
    p = Path(processed)
    kind = store.layout(p, name)
    if kind is None or not set(columns) <= set(store.stored_names(p, name, kind)):
        return pd.DataFrame(columns=columns)
    return store.read_table(p, name, columns=columns, check=False, filters=filters)


def iosched_values(processed: str | Path, campaigns=IOSCHED_CAMPAIGNS) -> pd.DataFrame:
    """Notebook 20's per-run throughput (:func:`analysis.stats.iosched.block_values`, MiB/s) of those of
    ``campaigns`` the processed tables hold: the summary's ``bw`` rows of fio and rados bench only."""
    from .stats.iosched import block_values
    cols = ["campaign", "kind", "metric", "scenario", "io_scheduler", "ddir", "repeat", "value"]
    s = _read(processed, "summary", cols, [("campaign", "in", list(campaigns)),
                                           ("kind", "in", ["fio-json", "rados-bench"]), ("metric", "in", ["bw"])])
    have = set(s["campaign"].dropna().astype(str))
    parts = [block_values(s, c) for c in campaigns if c in have]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def workload_tables(processed: str | Path, campaign: str = WORKLOAD_CAMPAIGN
                    ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """(profile by ``phase, role``, stack distances, trace windows) of the write-phase traces of
    ``campaign`` (the sentence's phase; a trace file holds one phase), as notebook 40 computes them
    (:func:`analysis.stats.blockio.characterize` at its default parameters); (None, None, None) when the
    tables hold no trace of it."""
    from .stats import blockio as bio
    r = _read(processed, "blk_requests", TRACE_COLUMNS, [("campaign", "in", [campaign])])
    if r.empty:
        return None, None, None
    req = bio.prepare(r, [campaign])
    req = req[req["phase"] == "write"].reset_index(drop=True)
    if req.empty:
        return None, None, None
    win = bio.windows(req)
    prof, _, dist, _ = bio.characterize(req, win, ["phase", "role"])
    return prof, dist, win


def rgw_tables(processed: str | Path, campaign: str = RGW_CAMPAIGN, cbt_prefix: str = CBT_PREFIX
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-run table, CBT's getput runs) of notebook 50 (:func:`analysis.stats.rgw.run_table` and
    :func:`analysis.stats.rgw.cbt_runs`) from the summary alone: the getput and rados bench rows of
    ``campaign`` and every getput PUT total (CBT's archive names no campaign); the series' CPU and
    bucket-index columns are not read (no sentence uses them)."""
    from .stats import rgw
    cols = ["campaign", "kind", "job", "metric", "arm", "repeat", "value", "source"]
    s = _read(processed, "summary", cols, [("campaign", "in", [campaign]), ("kind", "in", ["getput", "rados-bench"])])
    no_series = pd.DataFrame(columns=["campaign", "kind", "job", "metric", "arm", "repeat", "t_s", "value"])
    runs = rgw.run_table(s, no_series, campaign) if len(s) else pd.DataFrame()
    c = _read(processed, "summary", cols, [("kind", "in", ["getput"]), ("job", "in", ["put"])])
    return runs, (rgw.cbt_runs(c, cbt_prefix) if len(c) else pd.DataFrame())


def section(sentences: list[str]) -> str:
    """The report's first section: the sentences as a list under “What we found”; empty without any."""
    if not sentences:
        return ""
    items = "".join(f"<li>{s}</li>" for s in sentences)
    return (f"<section id='what-we-found'><h1>What we found</h1><p>Computed from the tables of this "
            f"data set when the report was made (<code>analysis.findings</code>); each links to what shows it.</p>"
            f"<ol>{items}</ol></section>")


def load_rows(path: Path) -> list[dict]:
    """``findings.json``'s QoS rows; [] when the file is absent."""
    if not path.is_file():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("qos_protection", [])


__all__ = ["FINDINGS_JSON", "claims_sentence", "history_sentences", "iosched_sentences", "iosched_values",
           "load_rows", "protection", "qos_sentences", "rgw_sentences", "rgw_tables", "section",
           "workload_sentences", "workload_tables", "write"]

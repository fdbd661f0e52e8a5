"""What we found: the report's first screen, sentences computed from the tables (never typed).

``python -m analysis claims`` writes ``findings.json`` beside ``claims.csv``: per QoS campaign and
background operation, the op-queue setting that kept the most client IOPS while the operation ran against
WPQ, and what that cost in the operation's duration — both under the pre-registered model
(:func:`analysis.stats.prereg.contrast`, docs/analysis-plan.md) with their 95 % CI.  The report turns
it, ``claims.csv`` and the history of the processed tables into a handful of sentences, each with its
number, CI and a link to the section or figure that shows it (:func:`sentences`).
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path

import pandas as pd

from .stats import prereg
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
    """One sentence per campaign and operation of ``findings.json``'s ``qos_protection``: who protected the
    client (WPQ, the best other setting, or none measurably: BH q < 0.05 over the settings), by how much,
    and at what cost in the operation's duration."""
    out = []
    for r in rows:
        where = "33-qos-v2" if r["campaign"] == "qos-v2" else "35-versions" if r["release"] == "reef" else \
            "32-qos-campaign"
        rel = f"Ceph {r['release'].capitalize()}" if r["release"] else "Ceph"
        arm = f"<code>{html.escape(r['arm'])}</code>"
        if r["client_q"] >= 0.05:
            lead = f"no op-queue setting changed client IOPS measurably against WPQ"
        elif r["client_pct"] < 0:
            lead = "WPQ protected the client best"
        else:
            lead = f"{arm} protected the client better than WPQ"
        cost = ""
        if r["duration_pct"] is not None:
            moved = r["duration_lo"] > 0 or r["duration_hi"] < 0
            cost = (f"; its {DURATION_NAME.get(r['duration_metric'], r['operation'])} time {_ci(r['duration_pct'], r['duration_lo'], r['duration_hi'])}"
                    + ("" if moved else " (not distinguishable from WPQ's)"))
        out.append(f"On {rel} ({html.escape(r['campaign'])}), during {r['operation']}, {lead}: the best of "
                   f"{r['settings']} other settings for the client, {arm}, had "
                   f"{_ci(r['client_pct'], r['client_lo'], r['client_hi'])} client IOPS against WPQ "
                   f"(q {r['client_q']:.2g}){cost} — {r['runs_per_setting']} runs a setting, 95 % CIs under the "
                   f"pre-registered model, not adjusted for picking the best "
                   f"({_link('figures', where if where in sections else None)}).")
    return out


def claims_sentence(table: pd.DataFrame, sections: set[str]) -> list[str]:
    """Per campaign: how many distinct tests the plan decides, and how (``claims.csv``)."""
    from .stats.claims import verdict_counts
    out = []
    counts = verdict_counts(table)
    for (camp, kind), row in counts.iterrows():
        if kind != "testable":
            continue
        tested = int(row.drop(["decided", "open"], errors="ignore").sum())
        parts = [f"{int(row[v])} {v}" for v in ("reproduced", "same direction, smaller", "same direction, larger",
                                                 "contradicted", "undecided", "not measurable here") if row.get(v, 0)]
        out.append(f"The published mClock-vs-WPQ claims on {html.escape(str(camp))}: {int(row['decided'])} of "
                   f"{tested} distinct tests decided — {', '.join(parts)} "
                   f"({_link('the claims', 'claims')}; BH q over the campaign's tests).")
    return out


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


__all__ = ["FINDINGS_JSON", "claims_sentence", "history_sentences", "load_rows", "protection", "qos_sentences",
           "section", "write"]

"""Each published claim of the mClock-vs-WPQ studies next to the same quantity measured on our runs.

Input: the published rows (:func:`analysis.published.qos.load_all`) and our per-run metrics
(:func:`analysis.stats.qos_derived.run_metrics`).  A published quantity (``test, scheduler, profile``)
is mapped to one of our (``scenario``, ``arm``) cells by :func:`our_cell`; the study's machine is not
ours, so absolute values are compared as a ratio only, and relative claims by direction and size, with a
significance test over the repeats.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .consistency import ALPHA, blocked_anova, effect_size
from .verdicts import bh, rule

#: published test → our scenario (None: not reproducible on this machine)
SCENARIO = {"baseline": "baseline", "snaptrim": "snaptrim", "snaptrim_recovery": "snaptrim_recovery",
            "scrub": "scrub", "scrub_maxscrubs10": "scrub", "scrub_cost20m": "scrub", "scrub_custom": "scrub",
            "scrub_recovery": "recovery_scrub", "scaled_recovery": None}
#: our client workload per scenario (capture/campaigns/qos-2026.yaml: 4 KiB, QD16, 60 s)
WORKLOAD = {"snaptrim": "randrw", "snaptrim_recovery": "randrw"}


#: prefix of an arm that runs a study's own mClock allocations under its profile name through Pacific's
#: ``custom`` profile (capture/campaigns/qos-v2.yaml: ``seed_high_client_ops`` …)
SEED_PREFIX = "seed_"
SEED_NOTE = "the study's own allocations of {p} (custom profile), not Pacific's built-in {p}"


def our_cell(test: str, scheduler: str, profile: str, arms: Collection[str] = ()) -> tuple[str | None, str | None, str]:
    """(scenario, arm, note) of our campaign for a published quantity; (None, None, why) when we have
    no such cell.  WPQ and a missing scheduler map to ``wpq``; mClock without a profile to its default
    ``high_client_ops``; the scrub-tuning tests to their tuned arms (``high_client_ops_maxscrubs10``,
    ``<profile>_cost20m``, and WPQ at requested-scrub priority 120 = ``wpq_scrubprio120`` for the
    cost experiment, as the study compared them).  When ``arms`` (the campaign's arms in that scenario)
    holds ``seed_<arm>``, that arm is taken: it runs the study's allocations, which Pacific's built-in
    profile of the same name does not have."""
    scen = SCENARIO.get(test)
    if scen is None:
        return None, None, ("the 975-OSD scaled cluster is not reproducible on one VM" if test == "scaled_recovery"
                            else f"unknown test {test!r}")
    note = ""
    if scheduler in ("wpq", ""):
        arm = "wpq_scrubprio120" if test == "scrub_cost20m" else "wpq"
        if scheduler == "":
            note = "no scheduler stated: WPQ assumed"
    else:
        arm = profile or "high_client_ops"
        if not profile:
            note = "mClock without a profile: its default high_client_ops"
        if test == "scrub_maxscrubs10":
            arm = f"{arm}_maxscrubs10"
        elif test == "scrub_cost20m":
            arm = f"{arm}_cost20m"
        if SEED_PREFIX + arm in arms:
            arm = SEED_PREFIX + arm
            note = "; ".join(n for n in (note, SEED_NOTE.format(p=profile or "high_client_ops")) if n)
    return scen, arm, note


def claim_cells(r: Any, arms: Mapping[str, Collection[str]]) -> tuple[tuple, tuple]:
    """Our (scenario, arm, note) for a claim row's quantity and for its reference (``ref_test`` …;
    ``(None, None, "")`` when the row has none).  ``arms``: scenario → the campaign's arms there.  A
    study's allocations (``seed_*`` arms) are used only where both mClock sides have them: a tuned arm
    run with Pacific's built-in profile is compared with that built-in profile, never with the study's
    allocations (the change would mix the tuning with the profile)."""
    def cell(test: str, scheduler: str, profile: str, seed: bool) -> tuple:
        scen = SCENARIO.get(test)
        return our_cell(test, scheduler, profile, arms.get(scen, ()) if seed and scen else ())

    own = cell(r.test, r.scheduler, r.profile, True)
    ref_test = getattr(r, "ref_test", "")
    if not isinstance(ref_test, str) or not ref_test:
        return own, (None, None, "")
    ref = cell(ref_test, r.ref_scheduler, r.ref_profile, True)
    # the custom profile is the same on both sides of any comparison: only built-in profiles are swapped
    def mclock(s, p):
        return isinstance(s, str) and s not in ("wpq", "") and p != "custom"
    seeded = [c[1] is not None and c[1].startswith(SEED_PREFIX) for c in (own, ref)]
    if mclock(r.scheduler, r.profile) and mclock(r.ref_scheduler, r.ref_profile) and seeded[0] != seeded[1]:
        own = cell(r.test, r.scheduler, r.profile, False)
        ref = cell(ref_test, r.ref_scheduler, r.ref_profile, False)
    return own, ref


def campaign_arms(metrics: pd.DataFrame) -> dict[str, set[str]]:
    """scenario → the arms with runs in ``metrics`` (one campaign's :func:`run_metrics` rows)."""
    if metrics.empty:
        return {}
    g = metrics[["scenario", "arm"]].astype(str).drop_duplicates()
    return {s: set(a) for s, a in g.groupby("scenario")["arm"]}


def our_metric(test: str, scheduler: str, metric: str) -> tuple[str, str]:
    """Our metric for a published one: part 1 states each test's client-alone clat as an unnamed
    "baseline value" inside the test (transcribed with no scheduler); ours is the same runs' clat outside
    the operation's window (``clat_outside``).  Everything else maps to itself."""
    if metric == "clat_mean" and scheduler == "" and test not in ("baseline", "scaled_recovery"):
        return "clat_outside", "the test's client-alone clat: ours is the same runs' clat outside the operation"
    return metric, ""


def arm_values(metrics: pd.DataFrame, scen: str | None, arm: str | None, metric: str) -> pd.Series:
    if scen is None:
        return pd.Series(dtype=float)
    m = metrics[(metrics["scenario"] == scen) & (metrics["arm"] == arm) & (metrics["metric"] == metric)]
    return m.set_index("repeat")["value"].astype(float).sort_index()


def compare_runs(own: pd.Series, ref: pd.Series) -> tuple[float, float, str]:
    """Relative change of ``own`` against ``ref`` (per-run values indexed by repeat) and its p-value:
    change = (median own / median ref − 1) × 100; the test is on log values — with at least 3 common
    repeats, :func:`analysis.stats.consistency.blocked_anova` with the repeat as block (a repeat is a time
    block of the campaign, see notebook 10; for two cells this is the paired t-test), else Welch's t.  Fewer than 2 runs a side: p NaN.  Returns (change_pct, p, test name)."""
    if own.empty or ref.empty:
        return np.nan, np.nan, ""
    change = (own.median() / ref.median() - 1) * 100
    common = own.index.intersection(ref.index)
    if len(common) >= 3:
        # two cells × repeat blocks, no interaction, on log values (consistency.blocked_anova): for two
        # cells this is the paired t-test by repeat, F = t²
        v = pd.DataFrame({"group": ["own"] * len(common) + ["ref"] * len(common),
                          "round": list(common) * 2,
                          "value": np.log(np.r_[own[common].to_numpy(float), ref[common].to_numpy(float)])})
        a = blocked_anova(v)
        return change, float(a.loc["group", "p"]), f"paired by repeat (log), {len(common)} repeats"
    if min(len(own), len(ref)) >= 2:
        res = stats.ttest_ind(np.log(own), np.log(ref), equal_var=False)
        return change, float(res.pvalue), f"Welch t (log), {len(own)} vs {len(ref)} runs"
    return change, np.nan, "too few runs"


def _verdicts(out: pd.DataFrame, alpha: float) -> pd.Series:
    """The verdicts of the tested ``change_pct`` rows by :mod:`analysis.stats.verdicts` (q: BH over those
    rows; the size from the bootstrap CI), the others' verdict kept."""
    tested = out["test_used"].astype(str).ne("") & np.isfinite(out["p"].astype(float))
    if not tested.any():
        return out["verdict"]
    t = out[tested]
    def log(x):
        return np.log1p(np.asarray(x, float) / 100)
    with np.errstate(invalid="ignore"):
        v, _, _ = rule(bh(t["p"].to_numpy(float)), log(t["ours"]), log(t["ci_low"]), log(t["ci_high"]),
                       log(t["claim"]), alpha)
    return out["verdict"].where(~tested, pd.Series(v, index=t.index))


#: what makes two published rows the same claim
CLAIM_KEY = ["test", "scheduler", "profile", "metric", "kind", "printed", "ref_test", "ref_scheduler", "ref_profile",
             "ref_metric"]


def claim_rows(published: pd.DataFrame, dedupe: bool = True) -> pd.DataFrame:
    """The published measured and derived rows, with ``stated`` (how often the text states the same claim,
    :data:`CLAIM_KEY`); with ``dedupe`` only each claim's first statement."""
    claims = published[published["kind"].isin(["measured", "derived"])].copy()
    claims["stated"] = claims.groupby(CLAIM_KEY)["printed"].transform("size")
    return claims.drop_duplicates(CLAIM_KEY) if dedupe else claims


def reconcile(published: pd.DataFrame, metrics: pd.DataFrame, alpha: float = ALPHA, dedupe: bool = True) -> pd.DataFrame:
    """One row per published measured or derived claim: its keys, ``printed``, ``claim`` (the published
    value, in its unit), ``ours`` (our median over repeats, or our relative change for a derived claim),
    ``ratio`` = ours / claim (absolute claims: how far our machine is from theirs), ``n`` (our runs),
    ``p`` and ``verdict`` (derived ``change_pct`` claims: the rules of :mod:`analysis.stats.verdicts` on
    BH q over the table's tests and the CI below), ``ci_low``/``ci_high`` (derived claims: 95 % BCa bootstrap interval of the change in mean,
    %, :func:`analysis.stats.consistency.effect_size`; three runs a side make it rough), ``note`` (mapping
    and workload caveats), ``stated`` (how often the text states the same
    claim: with ``dedupe`` one row per distinct claim, its first statement's figure)."""
    rows = []
    arms = campaign_arms(metrics)
    for r in claim_rows(published, dedupe).itertuples(index=False):
        (scen, arm, note), (rs, ra, rnote) = claim_cells(r, arms)
        metric, mnote = our_metric(r.test, r.scheduler, r.metric)
        note = "; ".join(n for n in (note, mnote) if n)
        own = arm_values(metrics, scen, arm, metric)
        out = {"seed": r.seed, "figure": r.figure, "test": r.test, "scheduler": r.scheduler, "profile": r.profile,
               "metric": r.metric, "kind": r.kind, "printed": r.printed, "claim": r.value, "unit": r.unit,
               "scenario": scen, "arm": arm, "ours": np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "ratio": np.nan, "n": len(own), "p": np.nan,
               "test_used": "", "stated": r.stated,
               "verdict": "not measured" if scen is not None else "not reproducible"}
        notes = [note] if note else []
        if scen is None:
            notes.append(note)
        elif r.kind == "measured":
            if not own.empty:
                out.update(ours=own.median(), ratio=own.median() / r.value if r.value else np.nan,
                           verdict="compared (absolute)")
        else:
            ref_metric, rmnote = our_metric(r.ref_test, r.ref_scheduler, r.ref_metric)
            rnote = "; ".join(n for n in (rnote, rmnote) if n)
            ref = arm_values(metrics, rs, ra, ref_metric)
            if rnote:
                notes.append(f"reference: {rnote}")
            if rs is not None and scen is not None and WORKLOAD.get(scen, "randwrite") != WORKLOAD.get(rs, "randwrite"):
                notes.append(f"our {scen} runs {WORKLOAD.get(scen, 'randwrite')}, our {rs} "
                             f"{WORKLOAD.get(rs, 'randwrite')}: the change mixes workload and background op")
            out["ref"] = f"{rs}/{ra}/{ref_metric}"
            if r.relation == "change_pct":
                ch, p, how = compare_runs(own, ref)
                ci = effect_size(ref.to_numpy(float), own.to_numpy(float), "rel_diff", n_resamples=1000)
                out.update(ours=ch, p=p, test_used=how, n=min(len(own), len(ref)),
                           ci_low=100 * ci["ci_low"], ci_high=100 * ci["ci_high"],
                           ratio=ch / r.value if r.value else np.nan,
                           verdict="not measured" if not np.isfinite(ch) else "too few runs for a test")
            elif not own.empty and not ref.empty:
                share = own.median() / ref.median() * 100
                out.update(ours=share, ratio=share / r.value if r.value else np.nan, verdict="compared (share)")
        out["note"] = "; ".join(n for n in notes if n)
        rows.append(out)
    table = pd.DataFrame(rows)
    if len(table):
        table["verdict"] = _verdicts(table, alpha)
    return table

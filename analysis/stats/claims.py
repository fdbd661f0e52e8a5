"""The claims table: every claim of the two mClock-vs-WPQ studies with a verdict on our campaign.

:func:`claims_table` gives one row per distinct measured or derived claim of both seeds (the rows
:func:`analysis.stats.reconcile.reconcile` has, :func:`analysis.stats.reconcile.claim_rows`), mapped to our
(scenario, arm) cells by :func:`~analysis.stats.reconcile.claim_cells` and
:func:`~analysis.stats.reconcile.our_metric`.  Columns (:data:`COLUMNS`, in this order):

``campaign``            the campaign our values come from
``ceph_release``        the Ceph release that campaign ran (``pacific``, ``reef``; from its run.json files:
                        the versions every daemon reported), empty when unknown
``study``               ``part1`` (snaptrim/recovery seed) or ``part2`` (scrub seed)
``claim_id``            ``<study>-<figure>-<n>``: the figure slug (``fig05``, ``fig08a``, ``chart07``,
                        ``table-snaptrim-clat-vs-wpq``, ``text`` for prose) and the claim's 1-based rank
                        within that figure in the published CSV; it depends on the published CSV only
``sentence``            the seed's sentence (published CSV)
``published``, ``unit`` the published value and its unit (relative claims: % change, or % of the reference
                        for a ``share_pct`` claim)
``direction``           +1/−1: the sign of the published change (a share: of share − 100); NaN for an
                        absolute value
``ours``                our value in the same unit: for a relative claim the change of the geometric mean
                        of our paired ratios, 100·(exp(mean log ratio) − 1) (a share: 100·exp(…)), the
                        quantity the test is about; for an absolute claim our median over repeats
``ci_low``, ``ci_high`` 95 % t interval of ``ours`` (the paired t interval on the log ratios, back-transformed:
                        it excludes 0 % change exactly when p < 0.05)
``test``                the test: ``paired t (log), by repeat`` when at least 3 repeats are common to the
                        two cells (what ``reconcile.compare_runs`` does: for two cells its blocked ANOVA is
                        this paired t-test, same p); ``Welch t (log)`` when fewer are common and each side
                        has ≥ 2 runs
``p``                   its two-sided p-value
``n``                   repeats paired (Welch: the smaller side's runs)
``power_at_published``  power of that test at ``alpha`` to detect the PUBLISHED effect with our spread:
                        d = |log(1 + published/100)| / sd of the paired log differences (a share:
                        |log(published/100)|), ``statsmodels`` ``TTestPower`` with nobs = n pairs
                        (:func:`paired_power`, its formula without its NaN at large d)
                        (Welch: ``TTestIndPower`` with the pooled sd of the log values and the two run counts)
``repeats_needed``      the smallest whole number of repeats (pairs; Welch: runs per arm) reaching power
                        ``power`` (0.8) for the published effect with our spread; NaN where the spread is
                        unknown or zero
``verdict``, ``diagnosis``  see below
``data_gap``            True when the claim is not measurable only for want of runs in this campaign

A claim of a client drop against the baseline test (``client_iops`` of a scenario against the baseline's)
is tested within each run where the campaign allows it (:func:`within_run_reference`): the client IOPS
while the operation ran (``client_iops_op``) against the same run's before it (``client_iops_pre``),
paired by run, and the diagnosis says so; otherwise against the baseline runs, paired by repeat.

Verdicts (exactly these rules; ``power`` = 0.8):

- ``holds``: p < alpha and our change has the published direction.
- ``contradicted``: p < alpha and the opposite direction; or p ≥ alpha while ``power_at_published`` ≥ 0.8
  (we could have seen the published effect and did not).
- ``not significant``: p ≥ alpha and ``power_at_published`` < 0.8 (underpowered: ``repeats_needed`` says
  how many repeats would decide it).
- ``not measurable here``: the claim maps to no cell we can run (the 975-OSD scaled cluster), our data lack
  the cell or the metric, or too few runs for a test; ``diagnosis`` names the cause, and ``data_gap`` is
  True when more runs of this campaign would make it testable (a missing cell or metric, too few runs):
  such a claim is open, not decided.

Absolute claims (kind ``measured``: IOPS, latencies, durations of the study's hardware) are kept as rows,
with verdict ``not measurable here`` and diagnosis ``absolute value on another machine`` (``ours`` still
shows our median): the table then has exactly one row per claim ``reconcile`` lists.  Otherwise
``diagnosis`` is computed text: the spread of the paired log ratios and the repeats, the power, and the
mapping caveats of ``reconcile`` (an assumed scheduler, a workload that differs between the two cells).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestIndPower

from ..published.qos import PART1_SEED, PART2_SEED
from .consistency import ALPHA, n_per_arm
from .reconcile import WORKLOAD, arm_values, campaign_arms, claim_cells, claim_rows, our_metric

COLUMNS = ["campaign", "ceph_release", "study", "claim_id", "sentence", "published", "unit", "direction", "ours", "ci_low",
           "ci_high", "test", "p", "n", "power_at_published", "repeats_needed", "verdict", "diagnosis",
           "data_gap"]
VERDICTS = ("holds", "contradicted", "not significant", "not measurable here")
ABSOLUTE = "absolute value on another machine"
PAIRED, WELCH = "paired t (log), by repeat", "Welch t (log)"
STUDY = {PART1_SEED: "part1", PART2_SEED: "part2"}


def study_of(seed: str) -> str:
    """``part1`` / ``part2`` for a seed file name."""
    if seed in STUDY:
        return STUDY[seed]
    m = re.search(r"part(\d+)", seed)
    return f"part{m.group(1)}" if m else seed


def figure_slug(figure: str) -> str:
    """``Figure 5`` → ``fig05``, ``Figure 8a`` → ``fig08a``, ``Chart 7`` → ``chart07``, ``Table: x y`` →
    ``table-x-y``, empty → ``text``."""
    m = re.fullmatch(r"(Figure|Chart)\s*(\d+)([a-z]?)", figure.strip())
    if m:
        return f"{'fig' if m.group(1) == 'Figure' else 'chart'}{int(m.group(2)):02d}{m.group(3)}"
    slug = re.sub(r"[^a-z0-9]+", "-", figure.lower()).strip("-")
    return slug or "text"


def paired_power(d, nobs, alpha: float = ALPHA) -> np.ndarray:
    """Two-sided power of the paired (one-sample) t-test, vectorised over effect sizes ``d`` (mean / sd of
    the differences) and ``nobs`` pairs: P(T > c) + P(T < −c), T noncentral t (df n − 1, nc d·√n), c the
    t quantile at 1 − alpha/2 — ``TTestPower().power``'s formula, with the lower tail taken as
    P(T' > c), T' of nc −d·√n (scipy's ``nct.cdf`` returns NaN there for large nc, and with it
    ``TTestPower`` does, e.g. at d = 7.5, n = 3).  1 where d is infinite (no spread, a non-zero effect),
    NaN where d is NaN or fewer than 2 pairs."""
    d, n = np.broadcast_arrays(np.abs(np.asarray(d, float)), np.asarray(nobs, float))
    out = np.full(d.shape, np.nan)
    ok = np.isfinite(d) & (n >= 2)
    if ok.any():
        df, nc = n[ok] - 1, d[ok] * np.sqrt(n[ok])
        c = stats.t.ppf(1 - alpha / 2, df)
        out[ok] = stats.nct.sf(c, df, nc) + stats.nct.sf(c, df, -nc)
    out[np.isinf(d) & (n >= 2)] = 1.0
    return out


def repeats_needed(d, alpha: float = ALPHA, power: float = 0.8, max_n: int = 100_000) -> np.ndarray:
    """The smallest whole number of pairs n ≥ 2 at which :func:`paired_power` reaches ``power``, per effect
    size (vectorised bisection over whole n); NaN where d is 0, NaN or infinite, or above ``max_n``."""
    d = np.abs(np.asarray(d, float))
    out = np.full(d.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(d) & (d > 0))
    if not len(ok):
        return out
    lo, hi = np.ones(len(ok)), np.full(len(ok), float(max_n))  # n = lo falls short (df 0), n = hi may suffice
    fine = paired_power(d[ok], hi, alpha) >= power
    while True:
        todo = np.flatnonzero(fine & (hi - lo > 1))
        if not len(todo):
            break
        mid = np.floor((lo[todo] + hi[todo]) / 2)
        r = paired_power(d[ok[todo]], mid, alpha) >= power
        hi[todo[r]], lo[todo[~r]] = mid[r], mid[~r]
    out[ok[fine]] = hi[fine]
    return out


def _log_published(value: float, relation: str) -> float:
    """The published effect as a log ratio."""
    return float(np.log(value / 100) if relation == "share_pct" else np.log1p(value / 100))


def _to_unit(logr, relation: str):
    """A log ratio in the claim's unit (% change, or % of the reference)."""
    return 100 * np.exp(logr) if relation == "share_pct" else 100 * np.expm1(logr)


BASELINE = "baseline"
WITHIN_NOTE = ("the same runs' client IOPS before the operation (10 s to its start), not the baseline runs "
               "(another block, another bring-up); ours: the client IOPS from the operation's start to its "
               "end, or to the client's end where it did not end")


def within_run_reference(metrics: pd.DataFrame) -> bool:
    """Does every run with an operation have its own pre-operation client IOPS (``client_iops_pre``,
    :func:`analysis.stats.qos_derived.run_metrics`: ≥ 5 one-second windows before the operation)?  Then a
    claim of a client drop against the baseline test is tested within each run (IOPS during the operation
    against before it, paired by run): the client level moves between bring-ups of the cluster (946 vs
    705 IOPS for the same arm in the qos-v2 pilot), and a blocked campaign runs its baseline block in
    another bring-up than the operation's block.  Campaigns where some run starts its operation sooner
    (qos-2026's scrub at 10 s) keep the baseline runs as the reference for every claim."""
    if "metric" not in metrics or metrics.empty:
        return False
    k = ["scenario", "arm", "repeat"]
    op = metrics.loc[metrics["metric"] == "client_iops_op", k].astype(str).drop_duplicates()
    pre = metrics.loc[metrics["metric"] == "client_iops_pre", k].astype(str).drop_duplicates()
    return not op.empty and len(op.merge(pre, on=k)) == len(op)


def _missing(metrics: pd.DataFrame, scen: str, arm: str, metric: str) -> str:
    cell = metrics[(metrics["scenario"] == scen) & (metrics["arm"] == arm)] if len(metrics) else metrics
    return f"no runs of {scen}/{arm} in this campaign" if cell.empty else f"no {metric} in the runs of {scen}/{arm}"


def _test(own: pd.Series, ref: pd.Series, relation: str, alpha: float) -> dict:
    """The test of one relative claim on log values: paired by repeat (≥ 3 common), else Welch."""
    common = own.index.intersection(ref.index)
    lo, lr = np.log(own.to_numpy(float)), np.log(ref.to_numpy(float))
    if len(common) >= 3:
        dl = np.log(own[common].to_numpy(float)) - np.log(ref[common].to_numpy(float))
        n, mean, sd = len(dl), dl.mean(), dl.std(ddof=1)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = float(stats.ttest_rel(np.log(own[common].to_numpy(float)), np.log(ref[common].to_numpy(float))).pvalue)
        half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
        return dict(test=PAIRED, n=n, mean=mean, sd=sd, p=p, lo=mean - half, hi=mean + half, d_sd=sd,
                    spread=f"spread of paired log ratios sd={sd:.2g} over {n} repeats")
    if min(len(lo), len(lr)) >= 2:
        res = stats.ttest_ind(lo, lr, equal_var=False)
        mean = lo.mean() - lr.mean()
        va, vb = lo.var(ddof=1) / len(lo), lr.var(ddof=1) / len(lr)
        se = np.sqrt(va + vb)
        df = (va + vb) ** 2 / (va ** 2 / (len(lo) - 1) + vb ** 2 / (len(lr) - 1)) if se > 0 else np.nan
        half = stats.t.ppf(0.975, df) * se
        pooled = np.sqrt(((len(lo) - 1) * lo.var(ddof=1) + (len(lr) - 1) * lr.var(ddof=1)) / (len(lo) + len(lr) - 2))
        return dict(test=WELCH, n=min(len(lo), len(lr)), n_own=len(lo), n_ref=len(lr), mean=mean, sd=pooled,
                    p=float(res.pvalue), lo=mean - half, hi=mean + half, d_sd=pooled,
                    spread=f"pooled sd of log values {pooled:.2g}, {len(lo)} vs {len(lr)} runs (unpaired)")
    return {}


def _claim_row(r, campaign: str, release: str | None, study: str, claim_id: str, relation: str) -> dict:
    """The row of claim ``r`` before any test: the published side filled in, ours empty, verdict ``not
    measurable here``."""
    direction = (np.sign(r.value - 100) if relation == "share_pct" else np.sign(r.value)) \
        if r.kind == "derived" else np.nan
    return dict(campaign=campaign, ceph_release=release or "", study=study, claim_id=claim_id,
                sentence=getattr(r, "sentence", ""), published=r.value, unit=r.unit, direction=direction,
                ours=np.nan, ci_low=np.nan, ci_high=np.nan, test="", p=np.nan, n=0,
                power_at_published=np.nan, repeats_needed=np.nan, verdict="not measurable here", diagnosis="",
                data_gap=False)


def _measure_claim(r, out: dict, relation: str, metrics: pd.DataFrame, arms, within: bool,
                   alpha: float) -> tuple[dict, float, list[str]] | None:
    """Our side of claim ``r`` into its row ``out``: the cells, our value and the test.  (the test, the
    published effect as an absolute log ratio, the diagnosis notes) when the test gave a finite p (power
    and verdict come after, :func:`_power_and_verdicts`); None when not (``out`` says why)."""
    (scen, arm, note), (rs, ra, rnote) = claim_cells(r, arms)
    metric, mnote = our_metric(r.test, r.scheduler, r.metric)
    if scen is None:
        out["diagnosis"] = note
        return None
    own = arm_values(metrics, scen, arm, metric)
    if r.kind == "measured":
        out.update(ours=own.median() if len(own) else np.nan, n=len(own), diagnosis=ABSOLUTE)
        return None
    if relation not in ("change_pct", "share_pct"):
        out["diagnosis"] = f"relation {relation!r} is not a relative change"
        return None
    ref_metric, rmnote = our_metric(r.ref_test, r.ref_scheduler, r.ref_metric)
    if rs is None:
        out["diagnosis"] = f"reference: {rnote}"
        return None
    if within and rs == BASELINE and scen != BASELINE and metric == ref_metric == "client_iops":
        # the client drop an operation causes: during it against the same run before it
        metric, ref_metric, rs, ra, rnote = "client_iops_op", "client_iops_pre", scen, arm, WITHIN_NOTE
        own = arm_values(metrics, scen, arm, metric)
    ref = arm_values(metrics, rs, ra, ref_metric)
    if own.empty or ref.empty:
        out["data_gap"] = True
        out["diagnosis"] = _missing(metrics, scen, arm, metric) if own.empty else \
            f"reference: {_missing(metrics, rs, ra, ref_metric)}"
        return None
    t = _test(own, ref, relation, alpha)
    if not t or not np.isfinite(t["p"]):
        out.update(n=min(len(own), len(ref)), data_gap=not t, diagnosis=f"too few runs for a test: {len(own)} of {scen}/{arm}, "
                   f"{len(ref)} of {rs}/{ra}" if not t else "no spread and no change between the cells")
        return None
    notes = [n for n in (note, mnote) if n]
    notes += [f"reference: {n}" for n in (rnote, rmnote) if n]
    if WORKLOAD.get(scen, "randwrite") != WORKLOAD.get(rs, "randwrite"):
        notes.append(f"our {scen} runs {WORKLOAD.get(scen, 'randwrite')}, our {rs} "
                     f"{WORKLOAD.get(rs, 'randwrite')}")
    out.update(ours=_to_unit(t["mean"], relation), ci_low=_to_unit(t["lo"], relation),
               ci_high=_to_unit(t["hi"], relation), test=t["test"], p=t["p"], n=t["n"])
    return t, abs(_log_published(r.value, relation)), notes


def _welch_power(d: np.ndarray, tests: list[dict], alpha: float) -> np.ndarray:
    """Power of each Welch test (``TTestIndPower``, its runs per side) at effect sizes ``d``; 1 where d is
    infinite, the upper tail alone where ``TTestIndPower`` gives NaN at a large finite d."""
    pw = np.full(len(d), np.nan)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for i, t in enumerate(tests):
            kw = dict(effect_size=d[i], nobs1=t["n_own"], ratio=t["n_ref"] / t["n_own"])
            pw[i] = 1.0 if np.isinf(d[i]) else TTestIndPower().power(alpha=alpha, **kw)
            if np.isnan(pw[i]) and np.isfinite(d[i]):  # its lower tail's NaN at large d: the upper tail
                pw[i] = TTestIndPower().power(alpha=alpha / 2, alternative="larger", **kw)
    return pw


def _diagnosis_text(why: str, t: dict, out: dict, w: float, k: float, power: float) -> str:
    """The diagnosis of a tested claim for verdict rule ``why`` (power ``w``, ``k`` repeats needed)."""
    return {"holds": f"{t['spread']}",
            "significant opposite": f"opposite to the published direction; {t['spread']}",
            "powered": f"power {w:.2f} to see the published {out['published']:g} {out['unit']} "
                       f"({t['spread']}), not seen",
            "underpowered": f"{t['spread']}"
                            + (f"; {k:.0f} repeats for power {power:g}" if np.isfinite(k) else "")}[why]


def _power_and_verdicts(pending: list[tuple], alpha: float, power: float) -> None:
    """Power at the published effect, repeats needed, verdict and diagnosis into each tested row of
    ``pending`` ((row, test, |published log ratio|, notes)): one vectorised call per test kind."""
    for kind in (PAIRED, WELCH):
        todo = [x for x in pending if x[1]["test"] == kind]
        if not todo:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.array([eff / t["d_sd"] for _, t, eff, _ in todo])
        if kind == PAIRED:
            pw = paired_power(d, [t["n"] for _, t, _, _ in todo], alpha)
            need = repeats_needed(d, alpha, power)
        else:
            pw = _welch_power(d, [t for _, t, _, _ in todo], alpha)
            need = n_per_arm(d, alpha, power)
        for (out, t, _, notes), w, k in zip(todo, pw, need):
            out.update(power_at_published=w, repeats_needed=k)
            out["verdict"], why = _verdict(out["p"], np.sign(t["mean"]), out["direction"], w, alpha, power)
            out["diagnosis"] = "; ".join([_diagnosis_text(why, t, out, w, k, power), *notes])


def claims_table(published: pd.DataFrame, metrics: pd.DataFrame, campaign: str, alpha: float = ALPHA,
                 power: float = 0.8, release: str | None = None) -> pd.DataFrame:
    """One row per distinct claim of ``published`` (both studies' rows, :func:`analysis.published.qos.load_all`)
    against ``metrics`` (:func:`analysis.stats.qos_derived.run_metrics` of ``campaign``; other campaigns'
    rows are dropped when it has a ``campaign`` column).  Columns :data:`COLUMNS`; verdicts in the module
    docstring."""
    if "campaign" in metrics:
        metrics = metrics[metrics["campaign"].astype(str) == campaign]
    claims = claim_rows(published).reset_index(drop=True)
    arms = campaign_arms(metrics)
    within = within_run_reference(metrics)
    rows, pending = [], []  # pending: rows whose power and verdict come after one vectorised power call
    rank: dict[tuple[str, str], int] = {}
    for r in claims.itertuples(index=False):
        study, slug = study_of(r.seed), figure_slug(r.figure)
        rank[study, slug] = rank.get((study, slug), 0) + 1
        relation = getattr(r, "relation", "") or ""
        out = _claim_row(r, campaign, release, study, f"{study}-{slug}-{rank[study, slug]}", relation)
        rows.append(out)
        tested = _measure_claim(r, out, relation, metrics, arms, within, alpha)
        if tested is not None:
            pending.append((out, *tested))
    _power_and_verdicts(pending, alpha, power)
    return pd.DataFrame(rows, columns=COLUMNS)


def _verdict(p: float, ours_sign: float, direction: float, pw: float, alpha: float, power: float) -> tuple[str, str]:
    """(verdict, which rule) for a tested relative claim."""
    if p < alpha:
        return ("holds", "holds") if ours_sign == direction else ("contradicted", "significant opposite")
    if pw >= power:
        return "contradicted", "powered"
    return "not significant", "underpowered"


def verdict_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Rows per verdict (columns, in :data:`VERDICTS` order) per campaign and ``claims``: ``testable`` (it
    has a published direction: a relative or share claim) or ``absolute`` (a value of the study's own
    machine or of its 975-OSD cluster, always ``not measurable here``) — so the share of testable claims decided is
    not inflated by absolute values; and ``decided`` = the testable ones that hold, are contradicted or
    are not measurable here for a cause more runs would not remove (``data_gap`` False: e.g. the 975-OSD
    cluster), and ``open`` = the testable ones short of runs (``data_gap``)."""
    kind = np.where(pd.to_numeric(table["direction"], errors="coerce").notna(), "testable", "absolute")
    c = pd.crosstab([table["campaign"], pd.Series(kind, index=table.index, name="claims")],
                    pd.Categorical(table["verdict"], categories=VERDICTS), dropna=False)
    c.columns.name = None
    c = c.reindex(columns=list(VERDICTS), fill_value=0)
    c = c[c.sum(axis=1) > 0]
    gap = table["data_gap"].fillna(False).astype(bool) if "data_gap" in table else \
        pd.Series(False, index=table.index)
    closed = (table["verdict"] == "not measurable here") & ~gap & (kind == "testable")
    dec = c["holds"] + c["contradicted"] + closed.groupby(table["campaign"]).sum().reindex(
        c.index.get_level_values("campaign")).to_numpy()
    c["decided"] = np.where(c.index.get_level_values("claims") == "testable", dec, 0)
    opened = (table["verdict"] == "not measurable here") & gap & (kind == "testable")
    c["open"] = np.where(c.index.get_level_values("claims") == "testable", opened.groupby(
        table["campaign"]).sum().reindex(c.index.get_level_values("campaign")).to_numpy(), 0)
    return c


def decided_by_repeats(table: pd.DataFrame, repeats=(3, 5, 10, 20, 50, 100)) -> pd.DataFrame:
    """How many testable claims each campaign would decide at ``repeats`` repeats if its spread stays as
    measured: the ones decided now (:func:`verdict_counts`) plus the ``not significant`` ones whose
    ``repeats_needed`` ≤ R.  At R ≥ ``repeats_needed`` the test has power ≥ 0.8 for the published effect, so
    the verdict rules decide the claim whatever p comes out (p < α: holds or contradicted; p ≥ α:
    contradicted).  A projection, not a measurement: the spread of 2–3 repeats is itself uncertain.
    Columns: ``testable``, ``decided now``, then one per R (claims decided), in ``repeats`` order; one row per
    campaign."""
    counts = verdict_counts(table)
    testable = counts.xs("testable", level="claims") if "testable" in counts.index.get_level_values("claims") \
        else counts.iloc[:0].droplevel("claims")
    kind = pd.to_numeric(table["direction"], errors="coerce").notna()
    pending = table[kind & (table["verdict"] == "not significant")]
    need = pd.to_numeric(pending["repeats_needed"], errors="coerce")
    out = pd.DataFrame({"testable": testable.drop(columns=["decided", "open"]).sum(axis=1),
                        "decided now": testable["decided"]})
    for r in repeats:
        more = (need <= r).groupby(pending["campaign"]).sum()
        out[f"at {r}"] = out["decided now"] + more.reindex(out.index, fill_value=0)
    out.index.name = "campaign"
    return out.astype(int)


def _claim_text(r) -> str:
    ci = f" [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]" if pd.notna(r.get("ci_low")) else ""
    return (f"`{r['claim_id']}` (published {r['published']:+.3g} {r['unit']}, ours {r['ours']:+.3g}{ci}, "
            f"p = {r['p']:.2g})")


def conclusion_lines(table: pd.DataFrame, campaign: str, alpha: float = ALPHA, study: str | None = None) -> list[str]:
    """Markdown bullets on one campaign's rows of :func:`claims_table` (``study``: only that study's): the
    testable claims by verdict, the ones that hold and the ones contradicted with ours against theirs, and
    how many of those not significant more repeats would decide (``repeats_needed``) — the closing lines of
    the notebooks that test the claims, the same numbers as the report's findings table."""
    t = table[table["campaign"].astype(str) == campaign]
    if study is not None:
        t = t[t["study"] == study]
    testable = t[pd.to_numeric(t["direction"], errors="coerce").notna()]
    v = testable["verdict"].value_counts()
    n_rep = int(testable["n"].max()) if testable["n"].notna().any() else 0
    lines = [f"- **Our runs against the {len(testable)} testable claims** (`{campaign}`, up to {n_rep} repeats per "
             f"arm, α = {alpha}; contradicted = the opposite direction at p < α, or p ≥ α with power ≥ 0.8 for the "
             "published effect): " + "; ".join(f"{k} {int(v.get(k, 0))}" for k in VERDICTS) + "."]
    for verdict, label in (("holds", "Holding"), ("contradicted", "Contradicted")):
        rows = testable[testable["verdict"] == verdict]
        if len(rows):
            lines.append(f"  {label}: " + "; ".join(_claim_text(r) for _, r in rows.iterrows()) + ".")
    ns = testable[(testable["verdict"] == "not significant") & testable["repeats_needed"].notna()]
    if len(ns):
        r = ns["repeats_needed"].astype(int)
        lines.append(f"- **More repeats.** Of the {len(ns)} claims not significant, {int((r <= 10).sum())} would be "
                     f"decided with at most 10 repeats per arm and {int((r <= 20).sum())} with at most 20, if their "
                     f"spread stays as measured (median {int(np.median(r))} repeats).")
    return lines

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
``test_id``             the distinct test: claims that test the same data (the same runs' log ratios, up to
                        sign: a duration claim and its rate mirror) share it and one result; ``same_test``
                        lists their ids.  Counts and the false-discovery step are per distinct test
``cells``               our two sides: ``scenario/arm metric vs scenario/arm metric``
``ours``, ``ci_low``, ``ci_high``  under the pre-registered model (:mod:`analysis.stats.prereg`,
                        docs/analysis-plan.md): the contrast back-transformed to the claim's unit, and its
                        95 % t interval (unadjusted)
``model``               the model fitted (or the paired test where the model cannot be fitted)
``p``, ``q``            its two-sided p and the Benjamini–Hochberg q over the campaign's distinct tests
``n``                   runs of the claim's cell in the fit
``censored``            runs of the claim's two cells whose operation did not end before the client's end plus
                        the harness's wait (run.json ``background_unfinished``): a duration or rate side has no
                        value for them, so they are out of the test; counted here (plan v2 §2)
``verdict``             :mod:`analysis.stats.verdicts` on q, the CI and the published value;
``ours_direction``      ``same`` / ``opposite`` (q < α) or ``not significant``;
``size``                the published value against our CI: ``inside``, ``ours smaller``, ``ours larger``,
                        ``opposite side``
``power_at_published``  the model's power at α for the published effect with our residual sd
``repeats_needed``      repeats at which the model's test reaches power 0.8 for the published effect
                        (:func:`analysis.stats.prereg.repeats_needed`)
``ours_paired`` … ``verdict_paired``  the sensitivity analysis: the simple test of the two cells alone —
                        ``paired t (log), by repeat`` when ≥ 3 repeats are common, else ``Welch t (log)`` —
                        its estimate, CI, p, its own BH q and the same verdict rules
``repeats_needed_paired``  pairs for power 0.8 under the paired test (:func:`repeats_needed`)
``model_dependent``     True when ``verdict`` and ``verdict_paired`` differ
``outliers``            runs of the fit with |studentized residual| > 4, with their own records (kept)
``diagnosis``           computed text: the spread, the mapping caveats of ``reconcile``
``data_gap``            True when the claim is not measurable only for want of runs in this campaign

A claim of a client drop against the baseline test (``client_iops`` of a scenario against the baseline's)
is tested within each run where the campaign allows it (:func:`within_run_reference`): the client IOPS
while the operation ran (``client_iops_op``) against the same run's before it (``client_iops_pre``),
and the diagnosis says so; otherwise against the baseline runs.

Verdicts: :mod:`analysis.stats.verdicts` (``reproduced``, ``same direction, smaller`` / ``larger``,
``contradicted``, ``undecided``, ``not measurable here``).  ``not measurable here``: the claim maps to
no cell we can run (the 975-OSD scaled cluster), our data lack the cell or the metric, or too few runs for
a test; ``diagnosis`` names the cause, and ``data_gap`` is True when more runs of this campaign would
make it testable.  Absolute claims (kind ``measured``: IOPS, latencies, durations of the study's
hardware) are kept as rows, ``not measurable here`` with diagnosis ``absolute value on another machine``
(``ours`` still shows our median): the table has exactly one row per claim ``reconcile`` lists.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestIndPower

from ..published.qos import PART1_SEED, PART2_SEED
from . import prereg
from .consistency import ALPHA, n_per_arm
from .reconcile import WORKLOAD, arm_values, campaign_arms, claim_cells, claim_rows, our_metric
from .verdicts import DECIDED, NOT_MEASURABLE, UNDECIDED, VERDICTS, bh, conservative, rule

COLUMNS = ["campaign", "ceph_release", "study", "claim_id", "sentence", "published", "unit", "direction", "test_id",
           "same_test", "cells", "ours", "ci_low", "ci_high", "model", "p", "q", "n", "censored", "verdict", "ours_direction", "size",
           "power_at_published", "repeats_needed", "ours_paired", "ci_low_paired", "ci_high_paired", "test_paired",
           "p_paired", "q_paired", "verdict_paired", "repeats_needed_paired", "model_dependent", "outliers",
           "diagnosis", "data_gap"]
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
    ok = np.isfinite(d) & (n >= 2)
    with np.errstate(divide="ignore", invalid="ignore"):  # the one-sample t: se 1/√n in units of sd, df n − 1
        out = np.where(ok, prereg.power(np.where(ok, d, np.nan), 1 / np.sqrt(n), n - 1, alpha), np.nan)
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


def censored_runs(metrics: pd.DataFrame, side: prereg.Side) -> int:
    """Runs of ``side``'s cell that have a client value (``client_iops``) but no ``side.metric``: for an
    operation's duration or rate, the runs whose operation did not finish; 0 for a client metric."""
    if side.metric.startswith(("client_", "clat")) or metrics.empty:
        return 0
    cell = metrics[(metrics["scenario"] == side.scenario) & (metrics["arm"] == side.arm)]
    runs = set(cell.loc[cell["metric"] == "client_iops", "repeat"])
    return len(runs - set(cell.loc[cell["metric"] == side.metric, "repeat"]))


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
                    spread=f"spread of paired log ratios sd={sd:.2g} over {n} repeats", data=dl)
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
                    spread=f"pooled sd of log values {pooled:.2g}, {len(lo)} vs {len(lr)} runs (unpaired)",
                    data=np.r_[mean, len(lo), len(lr)])
    return {}


def _claim_row(r, campaign: str, release: str | None, study: str, claim_id: str, relation: str) -> dict:
    """The row of claim ``r`` before any test: the published side filled in, ours empty, verdict ``not
    measurable here``."""
    direction = (np.sign(r.value - 100) if relation == "share_pct" else np.sign(r.value)) \
        if r.kind == "derived" else np.nan
    return dict(campaign=campaign, ceph_release=release or "", study=study, claim_id=claim_id,
                sentence=getattr(r, "sentence", ""), published=r.value, unit=r.unit, direction=direction,
                test_id="", same_test="", cells="", ours=np.nan, ci_low=np.nan, ci_high=np.nan, model="", p=np.nan,
                q=np.nan, n=0, censored=0, verdict=NOT_MEASURABLE, ours_direction="", size="", power_at_published=np.nan,
                repeats_needed=np.nan, ours_paired=np.nan, ci_low_paired=np.nan, ci_high_paired=np.nan,
                test_paired="", p_paired=np.nan, q_paired=np.nan, verdict_paired=NOT_MEASURABLE,
                repeats_needed_paired=np.nan, model_dependent=False, outliers="", diagnosis="", data_gap=False)


def _measure_claim(r, out: dict, relation: str, metrics: pd.DataFrame, arms, within: bool,
                   alpha: float) -> tuple[dict, float, list[str]] | None:
    """Our side of claim ``r`` into its row ``out``: the cells and the simple (paired or Welch) test.  (the
    test with the claim's two :class:`~analysis.stats.prereg.Side`, the published effect as an absolute
    log ratio, the diagnosis notes) when the test gave a finite p (the model, q and the verdicts come
    after, :func:`_decide`); None when not (``out`` says why)."""
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
    out.update(ours_paired=_to_unit(t["mean"], relation), ci_low_paired=_to_unit(t["lo"], relation),
               ci_high_paired=_to_unit(t["hi"], relation), test_paired=t["test"], p_paired=t["p"], n=t["n"])
    t.update(relation=relation, own=prereg.Side(scen, arm, metric), ref=prereg.Side(rs, ra, ref_metric))
    out["censored"] = censored_runs(metrics, t["own"]) + censored_runs(metrics, t["ref"])
    out["cells"] = f"{scen}/{arm} {metric} vs {rs}/{ra} {ref_metric}"
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


def _paired_repeats(pending: list[tuple], alpha: float, power: float) -> None:
    """``repeats_needed_paired`` into each tested row: pairs (Welch: runs per arm) for ``power`` at the
    published effect with the simple test's spread; one vectorised call per test kind."""
    for kind in (PAIRED, WELCH):
        todo = [x for x in pending if x[1]["test"] == kind]
        if not todo:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.array([eff / t["d_sd"] for _, t, eff, _ in todo])
        need = repeats_needed(d, alpha, power) if kind == PAIRED else n_per_arm(d, alpha, power)
        for (out, _, _, _), k in zip(todo, need):
            out["repeats_needed_paired"] = k


def _fingerprint(t: dict) -> tuple[tuple, int]:
    """(key, orientation): claims whose simple tests see the same data up to sign (a duration and its
    rate, a comparison and its mirror) get one key; orientation −1 for the mirrored one."""
    x = np.round(np.asarray(t["data"], float), 9)
    nz = x[np.flatnonzero(x)[:1]] if t["test"] == PAIRED else x[:1]
    sign = -1 if len(nz) and nz[0] < 0 else 1
    if t["test"] == WELCH:
        return (WELCH, abs(x[0]), *x[1:], round(t["p"], 9)), sign
    return (PAIRED, *(sign * x)), sign


#: latency metric → the IOPS metric of the same runs and window it is tied to by Little's law at a fixed
#: queue depth (mean completion latency × IOPS = iodepth × numjobs): their log ratios are mirrors
LITTLE = {"clat_mean": ("client_iops",), "clat_during": ("client_iops_during", "client_iops_op")}
#: the largest relative spread of clat × IOPS over a pair's runs for the tie to hold (plan v2: 0.1 %)
LITTLE_TOL = 1e-3


def little_tied(metrics: pd.DataFrame, lat: tuple, iops: tuple) -> bool:
    """Do the runs of the latency test ``lat`` (own, ref :class:`~analysis.stats.prereg.Side`) and the IOPS
    test ``iops`` on the same cells obey clat × IOPS = constant within :data:`LITTLE_TOL` in every run?
    Then the two claims test the same data (docs/analysis-plan-v2.md §2)."""
    prods = []
    for ls, is_ in zip(lat, iops):
        a = arm_values(metrics, ls.scenario, ls.arm, ls.metric)
        b = arm_values(metrics, is_.scenario, is_.arm, is_.metric)
        common = a.index.intersection(b.index)
        if len(common) < 2 or len(common) != len(a) or len(common) != len(b):
            return False
        prods.append(a[common].to_numpy(float) * b[common].to_numpy(float))
    x = np.concatenate(prods)
    return bool(np.all(np.isfinite(x)) and x.min() > 0 and x.max() / x.min() - 1 <= LITTLE_TOL)


def _little_partner(t: dict, firsts: dict[tuple, dict], metrics: pd.DataFrame) -> tuple | None:
    """The group key of the IOPS test a latency test ``t`` mirrors by Little's law, if any."""
    o, r = t["own"], t["ref"]
    for om in LITTLE.get(o.metric, ()):
        for rm in LITTLE.get(r.metric, ()):
            for key, u in firsts.items():
                uo, ur = u["own"], u["ref"]
                if (uo.scenario, uo.arm, uo.metric, ur.scenario, ur.arm, ur.metric) == \
                        (o.scenario, o.arm, om, r.scenario, r.arm, rm) and little_tied(metrics, (o, r), (uo, ur)):
                    return key
    return None


def _model_fits(pending: list[tuple], metrics: pd.DataFrame, records, alpha: float) -> list[dict | None]:
    """The pre-registered model's fit per distinct test (the first claim's orientation), mirrored for the
    other claims of the test; ``test_id`` and ``same_test`` into the rows.  Claims that test the same
    data up to sign (:func:`_fingerprint`) are one test, and so is a latency claim tied to an IOPS claim
    on the same cells by Little's law (:func:`little_tied`): the IOPS claim is the test, the latency claim
    takes its estimate mirrored and says so in ``diagnosis``."""
    groups: dict[tuple, list[int]] = {}
    keys, signs = [], []
    for i, (_, t, _, _) in enumerate(pending):
        key, sign = _fingerprint(t)
        groups.setdefault(key, []).append(i)
        keys.append(key)
        signs.append(sign)
    # +1 where a claim's own-vs-ref orientation is its test's first claim's, −1 where mirrored
    orient = [signs[i] * signs[groups[keys[i]][0]] for i in range(len(pending))]
    firsts = {k: pending[idx[0]][1] for k, idx in groups.items()
              if pending[idx[0]][1]["own"].metric not in LITTLE}
    for k in [k for k, idx in groups.items() if pending[idx[0]][1]["own"].metric in LITTLE]:
        partner = _little_partner(pending[groups[k][0]][1], firsts, metrics)
        if partner is None:
            continue
        head = pending[groups[partner][0]][0]["claim_id"]
        for i in groups.pop(k):
            orient[i] = -orient[i]
            pending[i][3].append(f"the mirror of {head} by Little's law (clat × IOPS constant within "
                                 f"{LITTLE_TOL:.1%} in every run): one test, its estimate mirrored")
            groups[partner].append(i)
    fits: list[dict | None] = [None] * len(pending)
    for k, idx in enumerate(groups.values(), start=1):
        first = pending[idx[0]][1]
        f = prereg.contrast(metrics, first["own"], first["ref"], records, alpha)
        ids = " ".join(pending[i][0]["claim_id"] for i in idx)
        for i in idx:
            out = pending[i][0]
            out.update(test_id=f"{out['campaign']}:T{k:02d}", same_test=ids if len(idx) > 1 else "")
            if f is not None and orient[i] < 0:
                fits[i] = {**f, "est": -f["est"], "lo": -f["hi"], "hi": -f["lo"]}
            else:
                fits[i] = f
    return fits


def _plan_fields(out: dict, t: dict, f: dict | None, eff: float, alpha: float, power: float) -> None:
    """The model's estimate, CI, p, power and repeats needed into ``out`` (the paired test where the
    model cannot be fitted, said in ``model``)."""
    rel = t["relation"]
    if f is None:
        out.update(ours=out["ours_paired"], ci_low=out["ci_low_paired"], ci_high=out["ci_high_paired"],
                   p=out["p_paired"], model=f"{t['test']} (the model cannot be fitted to these cells)")
        out["_log"] = (t["mean"], t["lo"], t["hi"])
        return
    pw = float(prereg.power(eff, f["se"], f["df"], alpha))
    out.update(ours=_to_unit(f["est"], rel), ci_low=_to_unit(f["lo"], rel), ci_high=_to_unit(f["hi"], rel),
               p=f["p"], model=f["model"], n=f["n"], power_at_published=pw,
               repeats_needed=prereg.repeats_needed(eff, f, alpha, power), outliers=f["outliers"])
    out["_log"] = (f["est"], f["lo"], f["hi"])


def _decide(pending: list[tuple], metrics: pd.DataFrame, records, alpha: float, power: float) -> None:
    """Model fits, BH q over the distinct tests (model and paired separately), verdicts under both, and
    the diagnosis, into each tested row of ``pending`` ((row, test, |published log ratio|, notes))."""
    if not pending:
        return
    _paired_repeats(pending, alpha, power)
    fits = _model_fits(pending, metrics, records, alpha)
    for (out, t, eff, _), f in zip(pending, fits):
        _plan_fields(out, t, f, eff, alpha, power)
    rows = [x[0] for x in pending]
    first = pd.Series([r["test_id"] for r in rows]).duplicated().to_numpy()
    for col, qcol in (("p", "q"), ("p_paired", "q_paired")):
        p = np.array([np.nan if dup else r[col] for r, dup in zip(rows, first)])
        q = pd.Series(bh(p), index=[r["test_id"] for r in rows])
        q = q[~first]
        for r in rows:
            r[qcol] = float(q[r["test_id"]])
    pub = np.array([_log_published(r["published"], x[1]["relation"]) for r, x in zip(rows, pending)])
    est, lo, hi = (np.array([r["_log"][i] for r in rows]) for i in range(3))
    v, d, size = rule([r["q"] for r in rows], est, lo, hi, pub, alpha)
    vp, _, _ = rule([r["q_paired"] for r in rows], [x[1]["mean"] for x in pending], [x[1]["lo"] for x in pending],
                    [x[1]["hi"] for x in pending], pub, alpha)
    for (out, t, _, notes), vi, di, si, vpi in zip(pending, v, d, size, vp):
        del out["_log"]
        out.update(verdict=str(vi), ours_direction=str(di), size=str(si), verdict_paired=str(vpi),
                   model_dependent=bool(vi != vpi))
        k = out["repeats_needed"]
        need = f"; {k:.0f} repeats for power {power:g} under the model" if str(vi) == UNDECIDED and np.isfinite(k) else ""
        out["diagnosis"] = "; ".join([t["spread"] + need, *notes])


def claims_table(published: pd.DataFrame, metrics: pd.DataFrame, campaign: str, alpha: float = ALPHA,
                 power: float = 0.8, release: str | None = None, records: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per distinct claim of ``published`` (both studies' rows, :func:`analysis.published.qos.load_all`)
    against ``metrics`` (:func:`analysis.stats.qos_derived.run_metrics` of ``campaign``; other campaigns'
    rows are dropped when it has a ``campaign`` column) and ``records`` (:func:`analysis.stats.prereg.run_records`:
    the runs' plan order for the model's first-in-block term; without it the term is left out).  Columns
    :data:`COLUMNS`; verdicts in the module docstring."""
    if "campaign" in metrics:
        metrics = metrics[metrics["campaign"].astype(str) == campaign]
    claims = claim_rows(published).reset_index(drop=True)
    arms = campaign_arms(metrics)
    within = within_run_reference(metrics)
    rows, pending = [], []  # pending: rows whose model, q and verdicts come after every simple test
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
    _decide(pending, metrics, records, alpha, power)
    return pd.DataFrame(rows, columns=COLUMNS)


def campaign_claims(published: pd.DataFrame, summary: pd.DataFrame, series: pd.DataFrame, campaign: str,
                    alpha: float = ALPHA, release: str | None = None) -> pd.DataFrame:
    """:func:`claims_table` of one campaign straight from the ingested ``summary`` and ``series``: its
    metrics (with the within-run windows) and its run records (the plan order)."""
    from .qos_derived import run_metrics
    return claims_table(published, run_metrics(summary, series, campaign, windows=True), campaign, alpha=alpha,
                        release=release, records=prereg.run_records(summary, campaign))


def _per_test(table: pd.DataFrame, verdict: str = "verdict") -> pd.DataFrame:
    """One row per distinct test (claims without a test: one each) of the testable claims: ``campaign``,
    ``verdict`` (:func:`~analysis.stats.verdicts.conservative` over its claims), ``data_gap``, and
    ``repeats_needed`` (the largest over its claims)."""
    t = table[pd.to_numeric(table["direction"], errors="coerce").notna()]
    tid = t["test_id"].fillna("").astype(str) if "test_id" in t else pd.Series("", index=t.index)
    key = tid.where(tid != "", "claim:" + t["campaign"].astype(str) + ":" + t["claim_id"].astype(str))
    gap = t["data_gap"].fillna(False).astype(bool) if "data_gap" in t else pd.Series(False, index=t.index)
    need = pd.to_numeric(t.get("repeats_needed", pd.Series(np.nan, index=t.index)), errors="coerce")
    g = pd.DataFrame({"campaign": t["campaign"].astype(str), "key": key, "verdict": t[verdict].astype(str),
                      "data_gap": gap, "need": need}).groupby(["campaign", "key"], sort=False)
    return pd.DataFrame({"verdict": g["verdict"].agg(conservative), "data_gap": g["data_gap"].all(),
                         "repeats_needed": g["need"].max()}).reset_index()


def verdict_counts(table: pd.DataFrame, verdict: str = "verdict") -> pd.DataFrame:
    """Distinct tests per verdict (columns, in :data:`VERDICTS` order) per campaign and ``claims``:
    ``testable`` (a published direction: relative and share claims; claims that test the same data count
    once, :func:`_per_test`) or ``absolute`` (a value of the study's own machine or of its 975-OSD
    cluster, always ``not measurable here``, one per claim).  ``decided``: the testable ones
    reproduced, the same direction smaller or larger, or contradicted (never ``not measurable here``);
    ``open``: the testable ones short of runs (``data_gap``).  ``verdict``: the column counted
    (``verdict_paired`` for the sensitivity analysis)."""
    tests = _per_test(table, verdict)
    absolute = table[pd.to_numeric(table["direction"], errors="coerce").isna()]
    both = pd.concat([tests.assign(claims="testable"),
                      pd.DataFrame({"campaign": absolute["campaign"].astype(str), "claims": "absolute",
                                    "verdict": absolute[verdict].astype(str),
                                    "data_gap": absolute.get("data_gap", False)})], ignore_index=True)
    c = pd.crosstab([both["campaign"], both["claims"]], pd.Categorical(both["verdict"], categories=VERDICTS),
                    dropna=False)
    c.columns.name = None
    c = c.reindex(columns=list(VERDICTS), fill_value=0)
    c = c[c.sum(axis=1) > 0]
    testable = c.index.get_level_values("claims") == "testable"
    c["decided"] = np.where(testable, c[list(DECIDED)].sum(axis=1), 0)
    gap = both[(both["claims"] == "testable") & (both["verdict"] == NOT_MEASURABLE)
               & both["data_gap"].fillna(False).astype(bool)].groupby("campaign").size()
    c["open"] = np.where(testable, gap.reindex(c.index.get_level_values("campaign"), fill_value=0).to_numpy(), 0)
    return c


def decided_by_repeats(table: pd.DataFrame, repeats=(3, 5, 8, 10, 20, 50)) -> pd.DataFrame:
    """How many distinct tests of testable claims each campaign would decide at ``repeats`` repeats if its
    residual spread stays as measured: the ones decided now (:func:`verdict_counts`) plus the
    ``undecided`` ones whose ``repeats_needed`` (under the pre-registered model) ≤ R.  At R ≥
    ``repeats_needed`` the model has power ≥ 0.8 for the published effect, so the CI at R repeats will
    most likely either exclude zero or exclude the published value.  A projection, not a measurement: the
    spread of 3 repeats is itself uncertain.  Columns: ``testable`` (distinct tests), ``decided now``, then
    one per R, in ``repeats`` order; one row per campaign."""
    tests = _per_test(table)
    out = pd.DataFrame({"testable": tests.groupby("campaign").size(),
                        "decided now": tests["verdict"].isin(DECIDED).groupby(tests["campaign"]).sum()})
    pending = tests[tests["verdict"] == UNDECIDED]
    for r in repeats:
        more = (pending["repeats_needed"] <= r).groupby(pending["campaign"]).sum()
        out[f"at {r}"] = out["decided now"] + more.reindex(out.index, fill_value=0)
    out.index.name = "campaign"
    return out.astype(int)


def _claim_text(r) -> str:
    ci = f" [{r['ci_low']:+.1f}, {r['ci_high']:+.1f}]" if pd.notna(r.get("ci_low")) else ""
    return (f"`{r['claim_id']}` (published {r['published']:+.3g} {r['unit']}, ours {r['ours']:+.3g}{ci}, "
            f"q = {r['q']:.2g})")


def conclusion_lines(table: pd.DataFrame, campaign: str, alpha: float = ALPHA, study: str | None = None) -> list[str]:
    """Markdown bullets on one campaign's rows of :func:`claims_table` (``study``: only that study's): the
    distinct tests by verdict under the pre-registered model and under the paired test, the claims by
    verdict with ours against theirs, the model-dependent ones, and how many undecided ones at most 8 and
    20 repeats would decide — the closing lines of the notebooks that test the claims, the same numbers as
    the report's findings table."""
    t = table[table["campaign"].astype(str) == campaign]
    if study is not None:
        t = t[t["study"] == study]
    testable = t[pd.to_numeric(t["direction"], errors="coerce").notna()]
    per, paired = _per_test(testable), _per_test(testable, "verdict_paired")
    v, vp = per["verdict"].value_counts(), paired["verdict"].value_counts()
    lines = [f"- **Our runs against the {len(testable)} testable claims, {len(per)} distinct tests** (`{campaign}`, "
             f"α = {alpha} on Benjamini–Hochberg q; the rules: docs/verdicts.md): "
             + "; ".join(f"{k} {int(v.get(k, 0))}" for k in VERDICTS) + ". Under the simple paired test: "
             + "; ".join(f"{k} {int(vp.get(k, 0))}" for k in VERDICTS) + "."]
    for verdict in DECIDED:
        rows = testable[testable["verdict"] == verdict]
        if len(rows):
            lines.append(f"  {verdict.capitalize()}: " + "; ".join(_claim_text(r) for _, r in rows.iterrows()) + ".")
    dep = testable[testable["model_dependent"].fillna(False).astype(bool)]
    if len(dep):
        lines.append(f"- **Model-dependent** ({len(dep)} claim{'s' if len(dep) != 1 else ''}: the paired test says "
                     "otherwise): "
                     + "; ".join(f"`{r['claim_id']}` {r['verdict']} (paired: {r['verdict_paired']})"
                                 for _, r in dep.iterrows()) + ".")
    und = per[(per["verdict"] == UNDECIDED) & per["repeats_needed"].notna()]
    if len(und):
        r = und["repeats_needed"].astype(int)
        lines.append(f"- **More repeats.** Of the {int((per['verdict'] == UNDECIDED).sum())} undecided tests, "
                     f"{int((r <= 8).sum())} would reach power 0.8 for the published effect with at most 8 repeats "
                     f"and {int((r <= 20).sum())} with at most 20, if the model's residual spread stays as measured "
                     f"(median {int(np.median(r))} repeats).")
    return lines


def extension(table: pd.DataFrame, campaigns, max_repeats: int = 8) -> pd.DataFrame:
    """The runs the pre-registered plan asks for (docs/analysis-plan.md): for each undecided distinct test
    of ``campaigns`` that one of its claims says ≤ ``max_repeats`` repeats would decide (``repeats_needed``
    under the model), both cells of its ``cells`` raised to that many repeats (the largest any such test
    asks of the cell).  One row per (campaign, scenario, arm): ``repeats`` (the target), ``tests`` (their
    ids)."""
    t = table[table["campaign"].astype(str).isin(list(campaigns)) & (table["verdict"] == UNDECIDED)]
    need = pd.to_numeric(t["repeats_needed"], errors="coerce")
    t = t[need <= max_repeats].assign(need=need[need <= max_repeats])
    rows = []
    for r in t.itertuples(index=False):
        for side in str(r.cells).split(" vs "):
            scen, arm = side.split(" ")[0].split("/", 1)
            rows.append({"campaign": r.campaign, "scenario": scen, "arm": arm, "repeats": int(r.need),
                         "tests": r.test_id})
    cols = ["campaign", "scenario", "arm", "repeats", "tests"]
    if not rows:
        return pd.DataFrame(columns=cols)
    e = pd.DataFrame(rows)
    return (e.groupby(["campaign", "scenario", "arm"], sort=True)
            .agg(repeats=("repeats", "max"), tests=("tests", lambda s: " ".join(sorted(set(s)))))
            .reset_index()[cols])

"""Do repeated benchmark rounds agree?  The chapter's three methods plus post-hoc, effect size and power.

The methods of "Performance Consistency Verification" (workload-characterization chapter):

1. hypothesis: each round's steady state is a sample; F (one-way ANOVA, equal means, assumes
   normality), H (Kruskal-Wallis, equal medians) and paired T tests; result code 1 consistent /
   0 not / -1 invalid (:func:`hypothesis_table`);
2. average only: the rounds' averages should look normal with an acceptable spread (:func:`average_only`);
3. range tolerance: each round's deviation from the mean of all rounds, and the share within ±band
   (:func:`range_tolerance`, :func:`within_band_share`).

Input is tidy: one row per sample with columns ``test`` (what must agree across rounds, e.g. a
scheduler cell), ``round`` (a repeat), ``value`` (any unit; results keep it) and optionally ``t_s``
(seconds).  :func:`as_rounds` renames an ingest table into that shape.  Round-level tables
(:func:`round_means`) are round × test, the chapter's layout.

Too few samples never raise: the affected rows carry NaN and a ``reason``, and result codes are -1.
All tests are scipy/statsmodels calls; only MSER-5 (a truncation rule, not a test) is written here.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multicomp import MultiComparison, pairwise_tukeyhsd
from statsmodels.stats.power import TTestIndPower

KEYS = ["test", "round"]
ALPHA = 0.05
MIN_N = 3            # Shapiro-Wilk's minimum; fewer samples make a round invalid
DAGOSTINO_MIN_N = 20  # D'Agostino-Pearson's kurtosis test is only valid from n = 20


def as_rounds(df: pd.DataFrame, test: str | Sequence[str], round: str, value: str = "value",
              time: str | None = "t_s") -> pd.DataFrame:
    """Rename a tidy table to ``test, round, value[, t_s]``; several ``test`` columns are joined by '/'."""
    cols = [test] if isinstance(test, str) else list(test)
    out = pd.DataFrame({"test": df[cols].astype(str).agg("/".join, axis=1),
                        "round": df[round].astype(str), "value": df[value].astype(float)})
    if time and time in df:
        out["t_s"] = df[time].astype(float)
    return out.sort_values(KEYS + (["t_s"] if "t_s" in out else []), kind="stable").reset_index(drop=True)


def _groups(data: pd.DataFrame, keys: list[str] = KEYS):
    return data.groupby(keys, sort=False, observed=True)


def _quiet(fn: Callable, *args, **kw):
    """Call a scipy/statsmodels function; warnings and ValueError become NaN results with a reason."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kw), ""
        except (ValueError, ZeroDivisionError, np.linalg.LinAlgError) as e:
            return None, f"{getattr(fn, '__name__', 'test')}: {e}"


# --- steady state ---------------------------------------------------------------------------------

def _mser_dmax(nb: int, max_frac: float) -> int:
    return min(int(max_frac * nb), nb - 2)


def mser(x: np.ndarray, batch: int = 5, max_frac: float = 0.5) -> int:
    """MSER-``batch`` truncation point (samples to drop from the start) of one series.

    Batch means ``y`` of ``batch`` samples; drop the ``d`` batches minimising
    ``sum((y[d:] - mean(y[d:]))**2) / (nb - d)**2``, with ``d <= max_frac * nb`` and at least two
    batches kept (White 1997; Franklin & White 2008).  Fewer than two batches: 0 (nothing dropped).
    """
    nb = len(x) // batch
    d_max = _mser_dmax(nb, max_frac)
    if d_max < 1:
        return 0
    y = np.asarray(x[: nb * batch], dtype=float).reshape(nb, batch).mean(axis=1)
    s = np.cumsum(y[::-1])[::-1]        # sum of y[d:]
    s2 = np.cumsum((y * y)[::-1])[::-1]
    m = nb - np.arange(nb)
    crit = (s2 - s * s / m) / (m * m)
    return int(np.argmin(crit[: d_max + 1])) * batch


def steady_state(data: pd.DataFrame, batch: int = 5, max_frac: float = 0.5, tail_frac: float = 0.2,
                 min_n: int = MIN_N) -> pd.DataFrame:
    """Steady-state window of every round by MSER-5: the warm-up (at most ``max_frac`` of the batches),
    then the tail by MSER on the reversed remainder (at most ``tail_frac``; 0 keeps the tail).

    Returns one row per round: ``n``, ``start``/``stop`` (positional, stop exclusive), ``n_steady``,
    ``t_start_s``/``t_end_s`` (from ``t_s`` if present, else NaN), ``steady`` (False when the warm-up cut
    hit its ``max_frac`` limit — the warm-up may not have ended — or fewer than ``min_n`` remain) and
    ``reason``.  Rounds shorter than ``2 * batch`` keep all samples (reason says so).
    """
    rows = []
    for (test, rnd), g in _groups(data):
        x = g["value"].to_numpy(float)
        n = len(x)
        start = mser(x, batch, max_frac)
        stop = n - mser(x[start:][::-1], batch, tail_frac)
        d_max = _mser_dmax(n // batch, max_frac)
        at_limit = d_max >= 1 and start == d_max * batch
        reason = "; ".join(w for w, hit in (
            ("fewer than 2 batches: window = all samples", n < 2 * batch),
            ("warm-up cut at its limit: steady state may not be reached", at_limit),
            (f"fewer than {min_n} steady samples", stop - start < min_n)) if hit)
        t = g["t_s"].to_numpy(float) if "t_s" in g else np.full(n, np.nan)
        rows.append({"test": test, "round": rnd, "n": n, "start": start, "stop": stop,
                     "n_steady": stop - start, "t_start_s": t[start] if stop > start else np.nan,
                     "t_end_s": t[stop - 1] if stop > start else np.nan,
                     "steady": not at_limit and stop - start >= min_n,
                     "reason": reason})
    return pd.DataFrame(rows)


def steady_samples(data: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """The samples of ``data`` inside each round's ``[start, stop)`` window from :func:`steady_state`."""
    pos = _groups(data).cumcount()
    w = data[KEYS].merge(windows[KEYS + ["start", "stop"]], on=KEYS, how="left")
    keep = (pos.to_numpy() >= w["start"].to_numpy()) & (pos.to_numpy() < w["stop"].to_numpy())
    return data[keep].reset_index(drop=True)


def batch_means(data: pd.DataFrame, batch: int = 5) -> pd.DataFrame:
    """Non-overlapping means of ``batch`` consecutive samples per round (a trailing partial batch is
    dropped); ``t_s`` becomes the batch's mean time.  The batch-means method: per-second samples of one
    run are autocorrelated, their batch means much less so, so tests on them are closer to honest."""
    pos = _groups(data).cumcount()
    n = _groups(data)["value"].transform("size")
    keep = pos < (n // batch) * batch
    d = data[keep.to_numpy()].assign(batch=(pos[keep] // batch).to_numpy())
    agg = {"value": ("value", "mean")} | ({"t_s": ("t_s", "mean")} if "t_s" in d else {})
    return (d.groupby(KEYS + ["batch"], sort=False, observed=True).agg(**agg)
            .reset_index().drop(columns="batch"))


def autocorrelation(data: pd.DataFrame) -> pd.DataFrame:
    """Lag-1 autocorrelation per round (``statsmodels.tsa.stattools.acf``) and the effective sample size
    ``n_eff = n (1 - r1) / (1 + r1)`` (AR(1) approximation, clipped to [1, n]; n when r1 <= 0).
    Columns ``test, round, n, r1, n_eff``; rounds with fewer than 3 samples or constant values get NaN."""
    from statsmodels.tsa.stattools import acf  # 0.24 s to import: only where it is used
    rows = []
    for (test, rnd), g in _groups(data):
        x = g["value"].to_numpy(float)
        r1 = np.nan
        if len(x) >= 3 and np.ptp(x) > 0:
            r1 = float(acf(x, nlags=1, fft=False)[1])
        n_eff = np.nan if np.isnan(r1) else (len(x) if r1 <= 0 else float(np.clip(len(x) * (1 - r1) / (1 + r1), 1, len(x))))
        rows.append({"test": test, "round": rnd, "n": len(x), "r1": r1, "n_eff": n_eff})
    return pd.DataFrame(rows, columns=["test", "round", "n", "r1", "n_eff"])


# --- normality ------------------------------------------------------------------------------------

def normality(data: pd.DataFrame, alpha: float = ALPHA, min_n: int = MIN_N) -> pd.DataFrame:
    """Shapiro-Wilk per round, D'Agostino-Pearson as a second opinion where n >= 20.

    One row per round: ``n``, ``shapiro_W``, ``shapiro_p``, ``dagostino_K2``, ``dagostino_p`` (NaN when
    n < 20), ``status`` = ``normal`` (Shapiro p >= alpha) / ``non-normal`` / ``invalid`` (n < ``min_n``
    or all values equal), ``agree`` (both tests give the same verdict; NA without D'Agostino), ``reason``.
    """
    rows = []
    for (test, rnd), g in _groups(data):
        x = g["value"].to_numpy(float)
        x = x[np.isfinite(x)]
        r = {"test": test, "round": rnd, "n": len(x), "shapiro_W": np.nan, "shapiro_p": np.nan,
             "dagostino_K2": np.nan, "dagostino_p": np.nan, "status": "invalid", "agree": pd.NA, "reason": ""}
        if len(x) < min_n:
            r["reason"] = f"n = {len(x)} < {min_n}"
        elif np.ptp(x) == 0:
            r["reason"] = "all values equal"
        else:
            sw, r["reason"] = _quiet(stats.shapiro, x)
            if sw is not None:
                r.update(shapiro_W=sw.statistic, shapiro_p=sw.pvalue,
                         status="normal" if sw.pvalue >= alpha else "non-normal")
            if len(x) >= DAGOSTINO_MIN_N:
                dp, _ = _quiet(stats.normaltest, x)
                if dp is not None:
                    r.update(dagostino_K2=dp.statistic, dagostino_p=dp.pvalue,
                             agree=(dp.pvalue >= alpha) == (r["status"] == "normal"))
        rows.append(r)
    return pd.DataFrame(rows)


# --- hypothesis approach --------------------------------------------------------------------------

def result_code(p: float | np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """1 if p >= alpha (no evidence the rounds differ), 0 if p < alpha, -1 if p is NaN (invalid)."""
    p = np.asarray(p, dtype=float)
    return np.where(np.isnan(p), -1, (p >= alpha).astype(int))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, identical to ``statsmodels.stats.multitest.multipletests(p,
    method="holm")[1]`` (tested against it) — which runs ``gc.collect()`` on every call, 66 ms each
    here, i.e. most of the time of a campaign's :func:`paired_t`."""
    p = np.asarray(p, float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    out = np.empty(m)
    out[order] = adj
    return out


def paired_t(data: pd.DataFrame, alpha: float = ALPHA, min_n: int = MIN_N) -> pd.DataFrame:
    """Paired t-test (``scipy.stats.ttest_rel``) for every pair of rounds of every test, Holm-adjusted per test.

    Rounds are paired sample by sample, truncated to the shorter one.  A pair with fewer than
    ``min_n`` pairs gets NaN; a pair whose differences are all zero gets t = 0, p = 1.
    Columns: ``test, round_a, round_b, n_pairs, t, p, p_holm, reject``.
    """
    rows = []
    for test, g in data.groupby("test", sort=False, observed=True):
        series = {r: s["value"].to_numpy(float) for r, s in g.groupby("round", sort=False, observed=True)}
        for a, b in itertools.combinations(series, 2):
            n = min(len(series[a]), len(series[b]))
            x, y = series[a][:n], series[b][:n]
            t, p = np.nan, np.nan
            if n >= min_n and np.all(x == y):
                t, p = 0.0, 1.0
            elif n >= min_n:
                res, _ = _quiet(stats.ttest_rel, x, y)
                if res is not None:
                    t, p = res.statistic, res.pvalue
            rows.append({"test": test, "round_a": a, "round_b": b, "n_pairs": n, "t": t, "p": p})
    out = pd.DataFrame(rows, columns=["test", "round_a", "round_b", "n_pairs", "t", "p"])
    out["p_holm"] = np.nan
    for _, idx in out.groupby("test", sort=False).groups.items():
        ok = out.loc[idx, "p"].notna()
        if ok.any():
            out.loc[ok[ok].index, "p_holm"] = holm(out.loc[ok[ok].index, "p"].to_numpy(float))
    out["reject"] = out["p_holm"] < alpha
    return out


def hypothesis_results(data: pd.DataFrame, alpha: float = ALPHA, min_n: int = MIN_N) -> pd.DataFrame:
    """F, H and paired-T verdicts per test over its valid rounds (one row per test).

    ``data`` should already be the steady-state samples (:func:`steady_samples`).  Rounds that
    :func:`normality` calls invalid are left out of all three tests.  Columns: ``normal, non_normal,
    invalid`` (round counts), ``F, F_p, F_result`` (``scipy.stats.f_oneway``), ``H, H_p, H_result``
    (``scipy.stats.kruskal``), ``T_pairs, T_rejected, T_min_p_holm, T_result`` (:func:`paired_t`; 0 if
    any Holm-adjusted pair rejects), ``recommended`` (F when every valid round is normal, else H),
    ``result`` (that test's code) and ``reason``.  Fewer than two valid rounds: NaN and code -1.
    """
    norm = normality(data, alpha, min_n)
    counts = (pd.crosstab(norm["test"], norm["status"])
              .reindex(columns=["normal", "non-normal", "invalid"], fill_value=0)
              .rename(columns={"non-normal": "non_normal"}))
    valid = norm.loc[norm["status"] != "invalid", KEYS]
    vdata = data.merge(valid, on=KEYS)
    tt = paired_t(vdata, alpha, min_n)
    rows = []
    for test in norm["test"].unique():
        groups = [g["value"].to_numpy(float) for _, g in vdata[vdata["test"] == test]
                  .groupby("round", sort=False, observed=True)]
        r = {"test": test, "F": np.nan, "F_p": np.nan, "H": np.nan, "H_p": np.nan, "reason": ""}
        if len(groups) < 2:
            r["reason"] = f"{len(groups)} valid round(s); need 2"
        else:
            f, why_f = _quiet(stats.f_oneway, *groups)
            h, why_h = _quiet(stats.kruskal, *groups)
            if f is not None:
                r.update(F=f.statistic, F_p=f.pvalue)
            if h is not None:
                r.update(H=h.statistic, H_p=h.pvalue)
            r["reason"] = "; ".join(w for w in (why_f, why_h) if w)
        t = tt[tt["test"] == test]
        r.update(T_pairs=int(t["p"].notna().sum()), T_rejected=int(t["reject"].sum()),
                 T_min_p_holm=t["p_holm"].min() if t["p_holm"].notna().any() else np.nan)
        rows.append(r)
    out = pd.DataFrame(rows).set_index("test").join(counts)
    out["F_result"] = result_code(out["F_p"], alpha)
    out["H_result"] = result_code(out["H_p"], alpha)
    out["T_result"] = np.where(out["T_pairs"] == 0, -1, (out["T_rejected"] == 0).astype(int))
    out["recommended"] = np.where(out["non_normal"] == 0, "F", "H")
    out["result"] = np.where(out["recommended"] == "F", out["F_result"], out["H_result"])
    cols = ["normal", "non_normal", "invalid", "F", "F_p", "F_result", "H", "H_p", "H_result",
            "T_pairs", "T_rejected", "T_min_p_holm", "T_result", "recommended", "result", "reason"]
    return out[cols]


HYPOTHESIS_ROWS = {"normal": "Normal", "non_normal": "Non-normal", "invalid": "Invalid",
                   "F": "F-value", "F_p": "P-value", "F_result": "Result",
                   "H": "H-value", "H_p": "H P-value", "H_result": "H Result",
                   "T_pairs": "T pairs", "T_rejected": "T rejected (Holm)",
                   "T_min_p_holm": "T min P-value (Holm)", "T_result": "T Result",
                   "recommended": "Recommended test", "result": "Recommended result"}


def hypothesis_table(data: pd.DataFrame, alpha: float = ALPHA, min_n: int = MIN_N,
                     decimals: int = 3) -> pd.DataFrame:
    """The chapter's "Example of the Hypothesis Approach" layout: rows Normal … Result, one column per test.

    The chapter's rows come first (its ``Result`` is the F-test's code), then the H and T rows and the
    recommended test (F if all valid rounds are normal, else H).  Values rounded to ``decimals``;
    see :func:`hypothesis_results` for definitions and the too-few-samples behaviour.
    """
    res = hypothesis_results(data, alpha, min_n)
    num = res.select_dtypes("number").round(decimals)
    return (pd.concat([num, res[["recommended"]]], axis=1)[list(HYPOTHESIS_ROWS)]
            .rename(columns=HYPOTHESIS_ROWS).T.astype(object).rename_axis(index="Value", columns=None))


# --- round-level methods --------------------------------------------------------------------------

def round_means(data: pd.DataFrame) -> pd.DataFrame:
    """Mean of each round, round × test (the chapter's summary layout), in the unit of ``value``."""
    return (data.pivot_table(index="round", columns="test", values="value", aggfunc="mean",
                             observed=True, sort=False)
            .rename_axis(index=None, columns=None))


def summary_table(means: pd.DataFrame, ddof: int = 1) -> pd.DataFrame:
    """The round means followed by ``Mean``, ``Std`` (with ``ddof``) and ``Std/Mean`` rows.

    ``ddof=1`` is the sample standard deviation; the chapter's bandwidth summary used ``ddof=0``.
    A test with fewer than ``ddof + 1`` rounds gets NaN Std.
    """
    m = means.mean()
    s = means.std(ddof=ddof)
    return pd.concat([means, pd.DataFrame([m, s, s / m], index=["Mean", "Std", "Std/Mean"])])


@dataclass
class RangeTolerance:
    diff: pd.DataFrame    # (round mean - mean of rounds) / mean of rounds, with Max and Min rows
    within: pd.DataFrame  # rows "±band": share of rounds whose |diff| <= band


def _band_label(b: float) -> str:
    return f"±{b:g}"


BAND_SLACK = 1e-12  # bands are inclusive; the slack keeps 110/100 - 1 = 0.10000000000000009 inside ±0.1


def range_tolerance(means: pd.DataFrame, bands: Sequence[float] = (0.1, 0.2)) -> RangeTolerance:
    """Range tolerance on round means (round × test): the diff-ratio table and the share within ±band.

    Diff ratio = round mean / mean of all rounds - 1 (dimensionless).  Max/Min rows are over rounds.
    A test whose rounds are all NaN gets NaN throughout.
    """
    diff = means / means.mean() - 1
    table = pd.concat([diff, pd.DataFrame([diff.max(), diff.min()], index=["Max", "Min"])])
    within = pd.DataFrame({_band_label(b): (diff.abs() <= b + BAND_SLACK).where(diff.notna()).mean() for b in bands}).T
    return RangeTolerance(table, within)


def within_band_share(data: pd.DataFrame, bands: Sequence[float] = (0.1, 0.2),
                      reference: str = "round") -> pd.DataFrame:
    """Share of samples within ±band of a reference mean, per test (rows ``±band``, columns tests).

    ``reference="round"``: each sample against its own round's mean (the chapter's "each run's value
    within a range of this run's mean"); ``"test"``: against the mean of all the test's samples.
    """
    keys = KEYS if reference == "round" else ["test"]
    ref = data.groupby(keys, sort=False, observed=True)["value"].transform("mean")
    dev = (data["value"] / ref - 1).abs()
    return pd.DataFrame({_band_label(b): (dev <= b + BAND_SLACK).groupby(data["test"], sort=False, observed=True).mean()
                         for b in bands}).T.rename_axis(columns=None)


def average_only(means: pd.DataFrame, alpha: float = ALPHA, cv_max: float = 0.1, ddof: int = 1) -> pd.DataFrame:
    """The "average only" method: the round means of each test should be normal with CV <= ``cv_max``.

    Per test: ``n_rounds``, ``mean``, ``std`` (``ddof``), ``cv`` = std/mean, Shapiro-Wilk ``shapiro_W`` /
    ``shapiro_p`` on the round means, ``normal``, ``cv_ok`` and ``result`` (1 both hold, 0 not, -1 when
    fewer than 3 rounds or all means equal, with ``reason``).
    """
    rows = []
    for test in means.columns:
        x = means[test].dropna().to_numpy(float)
        r = {"test": test, "n_rounds": len(x), "mean": x.mean() if len(x) else np.nan,
             "std": x.std(ddof=ddof) if len(x) > ddof else np.nan, "shapiro_W": np.nan, "shapiro_p": np.nan,
             "reason": ""}
        if len(x) < 3:
            r["reason"] = f"{len(x)} rounds < 3"
        elif np.ptp(x) == 0:
            r["reason"] = "all round means equal"
        else:
            sw, r["reason"] = _quiet(stats.shapiro, x)
            if sw is not None:
                r.update(shapiro_W=sw.statistic, shapiro_p=sw.pvalue)
        rows.append(r)
    out = pd.DataFrame(rows).set_index("test")
    out["cv"] = out["std"] / out["mean"]
    out["normal"] = out["shapiro_p"] >= alpha
    out["cv_ok"] = out["cv"] <= cv_max
    out["result"] = np.where(out["shapiro_p"].isna(), -1, (out["normal"] & out["cv_ok"]).astype(int))
    return out[["n_rounds", "mean", "std", "cv", "shapiro_W", "shapiro_p", "normal", "cv_ok", "result", "reason"]]


# --- beyond the chapter: post-hoc, effect size, power ---------------------------------------------

def posthoc(data: pd.DataFrame, group: str = "round", alpha: float = ALPHA,
            method: str = "tukey", min_n: int = 2) -> pd.DataFrame:
    """Which pairs differ, per test: Tukey HSD (``pairwise_tukeyhsd``) or pairwise Mann-Whitney U with
    Holm correction (``method="mannwhitney"``, the rank-based counterpart of Kruskal-Wallis; Dunn's
    test is in neither scipy nor statsmodels).

    ``group`` is the column whose levels are compared (``round`` within each test, or ``test`` across
    tests when ``data`` has a single ``round`` level).  Groups with fewer than ``min_n`` samples are
    dropped.  Columns: ``test, group1, group2, stat, p_adj, reject``; ``stat`` is the mean difference
    (group2 - group1, unit of ``value``) for Tukey and U for Mann-Whitney.  No rows for a test with
    fewer than two usable groups.
    """
    by = "test" if group != "test" else None
    parts = []
    for test, g in (data.groupby(by, sort=False, observed=True) if by else [("all", data)]):
        sizes = g[group].value_counts()
        g = g[g[group].isin(sizes[sizes >= min_n].index)]
        if g[group].nunique() < 2:
            continue
        labels = g[group].astype(str).to_numpy()
        if method == "tukey":
            res, _ = _quiet(pairwise_tukeyhsd, g["value"].to_numpy(float), labels, alpha)
            if res is None:
                continue
            t = pd.DataFrame(res.summary().data[1:], columns=res.summary().data[0])
            t = t.rename(columns={"meandiff": "stat", "p-adj": "p_adj"})
        else:
            res, _ = _quiet(MultiComparison(g["value"].to_numpy(float), labels).allpairtest,
                            stats.mannwhitneyu, alpha, "holm")
            if res is None:
                continue
            t = pd.DataFrame(res[0].data[1:], columns=res[0].data[0]).rename(columns={"pval_corr": "p_adj"})
        parts.append(t[["group1", "group2", "stat", "p_adj", "reject"]].assign(test=test))
    cols = ["test", "group1", "group2", "stat", "p_adj", "reject"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def _hedges_g(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    na, nb = a.shape[axis], b.shape[axis]
    sp = np.sqrt(((na - 1) * a.var(axis=axis, ddof=1) + (nb - 1) * b.var(axis=axis, ddof=1)) / (na + nb - 2))
    return (b.mean(axis=axis) - a.mean(axis=axis)) / sp * (1 - 3 / (4 * (na + nb) - 9))


def _rel_diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return b.mean(axis=axis) / a.mean(axis=axis) - 1


EFFECTS = {"hedges_g": _hedges_g, "rel_diff": _rel_diff}


def effect_size(a: Sequence[float], b: Sequence[float], kind: str = "rel_diff", confidence: float = 0.95,
                n_resamples: int = 2000, seed: int = 0) -> pd.Series:
    """Effect of ``b`` against ``a`` with a bootstrap CI (``scipy.stats.bootstrap``, BCa, independent samples).

    ``kind="rel_diff"``: mean(b)/mean(a) - 1 (dimensionless, e.g. -0.05 = 5 % lower);
    ``"hedges_g"``: standardized mean difference with small-sample correction.  Samples are resampled
    as independent observations, so autocorrelated per-second samples give a CI that is too narrow.
    Fewer than 3 samples on either side (or a degenerate bootstrap): NaN CI with a reason.
    Returns ``estimate, ci_low, ci_high, n_a, n_b, reason``.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    fn = EFFECTS[kind]
    out = {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_a": len(a), "n_b": len(b), "reason": ""}
    if min(len(a), len(b)) < 3:
        out["reason"] = f"n = ({len(a)}, {len(b)}); need 3 each"
        return pd.Series(out)
    with np.errstate(all="ignore"):
        out["estimate"] = float(fn(a, b))
    res, out["reason"] = _quiet(stats.bootstrap, (a, b), fn, vectorized=True, paired=False,
                                confidence_level=confidence, n_resamples=n_resamples, method="BCa",
                                rng=np.random.default_rng(seed))
    if res is not None:
        out["ci_low"], out["ci_high"] = res.confidence_interval
        if not np.isfinite([out["ci_low"], out["ci_high"]]).all():
            out["reason"] = "degenerate bootstrap distribution"
    return pd.Series(out)


def n_per_arm(d: np.ndarray, alpha: float, power: float) -> np.ndarray:
    """Per effect size: the smallest whole n ≥ 2 per arm at which ``TTestIndPower.power`` (two-sided,
    equal arms) reaches ``power``; NaN where d is 0 or not finite.  Doubling, then bisection on whole
    numbers, each step one vectorised power call over every unfinished effect size.  This equals rounding
    up ``solve_power``'s root (checked on 9,579 effect sizes) and is ~50× faster than a root per value."""
    solver = TTestIndPower()
    d = np.abs(np.asarray(d, float))
    out = np.full(d.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(d) & (d > 0))

    def reached(i: np.ndarray, n: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            p = solver.power(effect_size=d[i], nobs1=n, alpha=alpha, ratio=1.0)
        return ~(p < power)  # NaN only at huge d, where the power tends to 1

    lo, hi = np.ones(len(ok)), np.full(len(ok), 2.0)  # invariant: n = lo falls short, n = hi suffices
    todo = np.flatnonzero(~reached(ok, hi))
    while len(todo):
        lo[todo] = hi[todo]
        hi[todo] *= 2
        todo = todo[~reached(ok[todo], hi[todo])]
    todo = np.flatnonzero(hi - lo > 1)
    while len(todo):  # only n ≥ 2 is ever evaluated: one n = 1 (df 0) in a call makes all of it NaN
        mid = np.floor((lo[todo] + hi[todo]) / 2)
        r = reached(ok[todo], mid)
        hi[todo[r]], lo[todo[~r]] = mid[r], mid[~r]
        todo = todo[hi[todo] - lo[todo] > 1]
    out[ok] = hi
    return out


def repeats_needed(cv: float, rel_diffs: Sequence[float], alpha: float = ALPHA, power: float = 0.8) -> pd.DataFrame:
    """Repeats per arm for a two-sided two-sample t-test to detect each relative difference.

    ``cv`` is the round-to-round coefficient of variation (std of round means / their mean);
    effect size d = rel_diff / cv; n: the smallest whole n ≥ 2 whose power
    (``statsmodels.stats.power.TTestIndPower``) reaches ``power`` (:func:`n_per_arm`).  NaN where cv is
    not positive/finite.  Columns: ``rel_diff, effect_size, n_per_arm``.
    """
    rel = np.asarray(rel_diffs, float)
    d = rel / cv if np.isfinite(cv) and cv > 0 else np.full_like(rel, np.nan)
    return pd.DataFrame({"rel_diff": rel, "effect_size": d, "n_per_arm": n_per_arm(d, alpha, power)})


# --- many tests at once ---------------------------------------------------------------------------

def overview(data: pd.DataFrame | None = None, means: pd.DataFrame | None = None, alpha: float = ALPHA,
             bands: Sequence[float] = (0.1, 0.2), cv_max: float = 0.1, rel_diff: float = 0.1,
             power: float = 0.8, min_n: int = MIN_N) -> pd.DataFrame:
    """All three methods, one row per test, for campaigns with many tests.

    ``data``: steady-state samples (``test, round, value``); ``means``: round × test means (default
    :func:`round_means` of ``data``; pass the tool's own per-run summary, e.g. fio's bw, when the
    windowed series is too short).  Columns: ``rounds``; with ``data``: ``n_median`` (samples per round),
    ``r1_median`` (lag-1 autocorrelation, :func:`autocorrelation`), ``F_result, H_result, T_result,
    hyp_result`` (:func:`hypothesis_results`; ``hyp_result`` is the recommended test's code); then
    ``cv`` (ddof 1), ``avg_result`` (:func:`average_only`), ``within_±b`` (share of rounds within each
    band, :func:`range_tolerance`), ``max_abs_diff``, ``range_result`` (1 if every round lies within the
    tightest band, -1 with fewer than 2 rounds) and ``n_for_<rel_diff>`` (:func:`repeats_needed`).
    """
    if means is None:
        if data is None:
            raise ValueError("overview needs data (samples) or means (round x test)")
        means = round_means(data)
    out = pd.DataFrame(index=pd.Index(means.columns, name="test"))
    out["rounds"] = means.notna().sum()
    if data is not None:
        ac = autocorrelation(data)
        out["n_median"] = ac.groupby("test", sort=False)["n"].median()
        out["r1_median"] = ac.groupby("test", sort=False)["r1"].median()
        h = hypothesis_results(data, alpha, min_n)
        out = out.join(h[["F_result", "H_result", "T_result", "result"]].rename(columns={"result": "hyp_result"}))
    ao = average_only(means, alpha, cv_max)
    out["cv"] = ao["cv"]
    out["avg_result"] = ao["result"]
    rt = range_tolerance(means, bands)
    for b in bands:
        out[f"within_{_band_label(b)}"] = rt.within.loc[_band_label(b)]
    diff = means / means.mean() - 1
    out["max_abs_diff"] = diff.abs().max()
    tight = _band_label(min(bands))
    out["range_result"] = np.where(out["rounds"] < 2, -1, (rt.within.loc[tight] >= 1).astype(int))
    cv = out["cv"].to_numpy(float)
    with np.errstate(all="ignore"):
        d = np.where(np.isfinite(cv) & (cv > 0), rel_diff / cv, np.nan)
    out[f"n_for_{rel_diff:g}"] = n_per_arm(d, alpha, power)
    return out


RESULT_COLUMNS = {"hyp_result": "hypothesis", "avg_result": "average only", "range_result": "range tolerance"}


def verdict_shares(table: pd.DataFrame) -> pd.DataFrame:
    """Share of tests coded 1 (consistent), 0 (not) and -1 (invalid) by each method of an
    :func:`overview` table; rows are the methods present, columns ``consistent, not, invalid, tests``."""
    rows = {}
    for col, name in RESULT_COLUMNS.items():
        if col in table:
            c = table[col].value_counts(normalize=True)
            rows[name] = {"consistent": c.get(1, 0.0), "not": c.get(0, 0.0), "invalid": c.get(-1, 0.0),
                          "tests": len(table)}
    return pd.DataFrame.from_dict(rows, orient="index")


# --- rounds as a factor: is one repeat systematically off? ----------------------------------------

@dataclass
class RoundEffect:
    per_round: pd.DataFrame  # per round: median / mean diff ratio over tests, share of tests where it is lowest / highest
    chi2: float              # Friedman chi-square (blocks = tests with every round, treatments = rounds)
    p: float
    kendall_w: float         # chi2 / (n_tests (k - 1)): 0 no common ordering of rounds, 1 the same in every test
    n_tests: int
    reason: str


def round_effect(means: pd.DataFrame) -> RoundEffect:
    """Are the rounds exchangeable?  Across many tests (round × test means), the Friedman test
    (``scipy.stats.friedmanchisquare``) asks whether some round is consistently higher or lower than the
    others, e.g. when all repeat-1 runs came first in the campaign and the system drifted.  Only tests
    with a value in every round are used, after dropping rounds that fewer than half of the tests have
    (extra repeats of a few tests); fewer than 2 such tests or 3 rounds: NaN, with a reason.
    ``per_round`` reports diff ratios (round mean / test mean − 1) over those tests."""
    common = means[means.notna().sum(axis=1) >= means.shape[1] / 2]
    complete = common.dropna(axis=1, how="any")
    k, n = complete.shape
    diff = complete / complete.mean() - 1
    ranks = complete.rank(axis=0)
    per = pd.DataFrame({"diff_median": diff.median(axis=1), "diff_mean": diff.mean(axis=1),
                        "lowest_share": (ranks == 1).mean(axis=1), "highest_share": (ranks == k).mean(axis=1)})
    chi2 = p = w = np.nan
    reason = ""
    if k < 3 or n < 2:
        reason = f"{n} complete test(s) over {k} round(s); need 2 tests and 3 rounds"
    else:
        res, reason = _quiet(stats.friedmanchisquare, *complete.to_numpy(float))
        if res is not None:
            chi2, p = float(res.statistic), float(res.pvalue)
            w = chi2 / (n * (k - 1))
    return RoundEffect(per.rename_axis("round"), chi2, p, w, n, reason)


def order_trend(values: pd.DataFrame, order: str = "order") -> pd.Series:
    """Spearman rank correlation between execution order and each run's deviation from its test's mean
    (``values``: one row per run with ``test``, ``value`` and ``order``, e.g. the capture's plan order or
    start time).  A drift of the whole system over a campaign shows as rho far from 0.
    Returns ``rho, p, n``; fewer than 3 runs: NaN."""
    v = values.dropna(subset=["value", order])
    dev = v["value"] / v.groupby("test", observed=True)["value"].transform("mean") - 1
    rho = p = np.nan
    if len(v) >= 3:
        res, _ = _quiet(stats.spearmanr, v[order].to_numpy(float), dev.to_numpy(float))
        if res is not None:
            rho, p = float(res.statistic), float(res.pvalue)
    return pd.Series({"rho": rho, "p": p, "n": len(v)})


def blocked_anova(values: pd.DataFrame, group: str = "group", block: str = "round") -> pd.DataFrame:
    """Do configurations differ once each repeat block's shift is taken out?  Two-way ANOVA without
    interaction, ``value ~ C(group) + C(block)`` (statsmodels OLS, type-II sums of squares), next to the
    one-way ANOVA on ``group`` alone.  Use it when rounds are not exchangeable (:func:`round_effect`):
    a drift common to all configurations inflates the one-way residual and hides real differences.

    ``values``: one row per run with ``group``, ``block`` and ``value`` (e.g. arm, repeat, mean IOPS).
    Returns rows ``group``, ``block``, ``residual`` (two-way) and ``group (one-way)``, ``residual
    (one-way)`` with ``df, sum_sq, F, p``.  Fewer than 2 groups or 2 blocks, or no residual degrees of
    freedom: a single row ``reason``.
    """
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    d = pd.DataFrame({"g": values[group].astype(str), "b": values[block].astype(str),
                      "y": values["value"].astype(float)}).dropna()
    ng, nb = d["g"].nunique(), d["b"].nunique()
    if ng < 2 or nb < 2 or len(d) - ng - nb + 1 < 1:
        return pd.DataFrame({"df": [np.nan], "sum_sq": [np.nan], "F": [np.nan], "p": [np.nan]},
                            index=[f"reason: {ng} groups, {nb} blocks, {len(d)} runs; need 2, 2 and a residual"])
    two = anova_lm(ols("y ~ C(g) + C(b)", d).fit(), typ=2)
    one = anova_lm(ols("y ~ C(g)", d).fit(), typ=2)
    out = pd.concat([two.set_axis(["group", "block", "residual"]),
                     one.set_axis(["group (one-way)", "residual (one-way)"])])
    return out.rename(columns={"PR(>F)": "p"})[["df", "sum_sq", "F", "p"]]


def blocked_anova_by(values: pd.DataFrame, by: str = "scenario", group: str = "arm",
                     block: str = "round") -> pd.DataFrame:
    """:func:`blocked_anova` for each level of ``by`` (e.g. every scenario of a campaign): one row each with
    ``groups``, ``runs``, the group effect with blocks (``group_F``, ``group_p``) and without
    (``group_p_oneway``), and the block effect (``block_F``, ``block_p``).  Levels without a residual
    get NaN."""
    rows = []
    for key, g in values.groupby(by, sort=False, observed=True):
        a = blocked_anova(g, group=group, block=block)
        def get(r, c):
            return a.loc[r, c] if r in a.index else np.nan
        rows.append({by: key, "groups": g[group].nunique(), "runs": len(g),
                     "group_F": get("group", "F"), "group_p": get("group", "p"),
                     "group_p_oneway": get("group (one-way)", "p"),
                     "block_F": get("block", "F"), "block_p": get("block", "p")})
    return pd.DataFrame(rows).set_index(by)


def campaign_summary(overviews: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per campaign (name → :func:`overview` table): ``tests``, ``cv_median``, ``cv_p90`` and, for each method
    present, the share of tests coded consistent and invalid (:func:`verdict_shares`)."""
    rows = []
    for name, ov in overviews.items():
        sh = verdict_shares(ov)
        row = {"campaign": name, "tests": len(ov), "cv_median": ov["cv"].median(), "cv_p90": ov["cv"].quantile(0.9)}
        for meth in sh.index:
            row[f"{meth}: consistent"] = sh.loc[meth, "consistent"]
            row[f"{meth}: invalid"] = sh.loc[meth, "invalid"]
        rows.append(row)
    return pd.DataFrame(rows).set_index("campaign")


def conclusion(verdicts: pd.DataFrame, exchange: pd.DataFrame, by_scenario: pd.DataFrame, curves: pd.DataFrame,
               alpha: float = 0.05, rel_diff: float = 0.10, campaign: str = "") -> str:
    """The closing section of the consistency study (Markdown), computed: per campaign the share of tests
    each method codes consistent and the median CV (``verdicts``: :func:`campaign_summary`); whether the
    rounds are exchangeable (``exchange``: one row per campaign with ``friedman_p``, ``kendall_w``,
    ``rho``, ``rho_p``, from :func:`round_effect` and :func:`order_trend`); the arm effect with and without
    the repeat blocks (``by_scenario``: :func:`blocked_anova_by` of ``campaign``); and the repeats per
    configuration a ``rel_diff`` difference needs at each campaign's median CV (``curves``:
    :func:`repeats_needed` rows labelled ``ours <campaign> median``)."""
    lines = ["## Conclusions", ""]
    meth = [c.removesuffix(": consistent") for c in verdicts.columns if c.endswith(": consistent")]
    parts = []
    for name, r in verdicts.iterrows():
        shares = ", ".join(f"{m} {100 * r[f'{m}: consistent']:.0f} %" for m in meth if pd.notna(r[f"{m}: consistent"]))
        parts.append(f"`{name}` ({int(r['tests'])} tests, median CV {r['cv_median']:.2f}): {shares}")
    lines.append("- **Tests coded consistent, by method** — " + "; ".join(parts) + ".")
    ex = []
    for r in exchange.itertuples(index=False):
        state = "not exchangeable" if r.friedman_p < alpha else "exchangeable"
        trend = (f", a drift with the run order (Spearman ρ {r.rho:+.2f}, p = {r.rho_p:.2g})" if r.rho_p < alpha
                 else f", no monotone drift (ρ {r.rho:+.2f}, p = {r.rho_p:.2g})")
        ex.append(f"`{r.campaign}` {state} (Friedman p = {r.friedman_p:.2g}, Kendall's W {r.kendall_w:.2f}){trend}")
    lines.append("- **Are the rounds repeated draws of the same thing?** " + "; ".join(ex) + ".")
    if len(by_scenario):
        g, b = by_scenario["group_p"], by_scenario["block_p"]
        lines.append(f"- **Arms within repeat blocks** (`{campaign}`): an arm effect at α = {alpha} in "
                     f"{int((g < alpha).sum())} of {len(by_scenario)} scenarios with the blocks "
                     f"({int((by_scenario['group_p_oneway'] < alpha).sum())} without); the block factor is "
                     f"significant in {int((b < alpha).sum())}.")
    med = curves[curves["label"].str.startswith("ours ") & curves["label"].str.endswith(" median")
                 & np.isclose(curves["rel_diff"], rel_diff)]
    if len(med):
        lines.append(f"- **Repeats per configuration to detect a {100 * rel_diff:.0f} % difference** (at each "
                     "campaign's median CV): " + "; ".join(
                         f"{r.label.removeprefix('ours ').removesuffix(' median')} {r.n_per_arm:.0f}"
                         for r in med.itertuples()) + ".")
    return "\n".join(lines)

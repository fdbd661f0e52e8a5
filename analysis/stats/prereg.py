"""The pre-registered model for a claim's contrast (docs/analysis-plan.md, fixed before the runs it judges).

One claim compares two of our cells (scenario/arm) on one metric.  The model is fitted to every run of
the campaign in the scenario(s) of the two cells, not only to the two cells, so the variance is pooled
across arms:

    log value ~ cell + repeat + first_in_block        (ordinary least squares)

``cell`` the (scenario, arm) of the run; ``repeat`` the repeat block (the campaign runs each scenario's
arms of one repeat back to back, in shuffled order); ``first_in_block`` 1 for the first run of its
(scenario, repeat) block by the capture's ``plan_order`` — that run differs (qos-v2: clat during snaptrim
+60 %), whichever arm it is.  The claim's estimate is the contrast cell − reference cell, its test a t
test on the residual degrees of freedom, its 95 % CI the t interval.

A claim of an operation's effect within each run (two metrics of the same cell: the client IOPS while the
operation ran against the same run's before it) is fitted on the per-run log ratio of the two metrics,
``log ratio ~ arm + first_in_block`` over every arm of the scenario (the repeat block cancels within a
run); the estimate is the claim's arm.

Outliers: externally studentized residuals |r| > :data:`OUTLIER_R` are flagged with the run's own
records (attempt, redone, background unfinished, steal flagged) and kept.  Without ``records`` (no
``plan_order``) the first-in-block term is left out and the result says so.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.outliers_influence import OLSInfluence
from statsmodels.tools.sm_exceptions import SingularMatrixWarning

from ..labels import str_eq

#: |externally studentized residual| above which a run is flagged (never dropped)
OUTLIER_R = 4.0
#: the run facts an outlier flag quotes (run.json / done files, as ingested into the summary)
RECORD_FACTS = ("attempt", "redone", "background_unfinished", "steal_flagged")
MODEL = "log value ~ cell + repeat + first-in-block (OLS, variance pooled across arms)"
MODEL_NO_ORDER = "log value ~ cell + repeat (OLS, variance pooled across arms; no plan_order: no first-in-block term)"
WITHIN = "log(during / before) per run ~ arm + first-in-block (OLS, pooled across arms)"


@dataclass(frozen=True)
class Side:
    """One side of a claim: our scenario, arm and metric."""
    scenario: str
    arm: str
    metric: str


def run_records(summary: pd.DataFrame, campaign: str) -> pd.DataFrame:
    """One row per run of ``campaign`` in an ingested ``summary``: ``scenario, arm, repeat`` (int),
    ``plan_order`` (the capture's place of the run in its plan; NaN where not recorded), ``first_in_block``
    (True for the first run by plan order of its (scenario, repeat) block, unless the block began with a
    discarded warm-up run: run.json ``block_warmup``, ``warmup: block`` campaigns) and the
    :data:`RECORD_FACTS` the summary carries."""
    s = summary[str_eq(summary["campaign"], campaign)]
    cols = ["scenario", "arm", "repeat"] + [c for c in ("plan_order", "block_warmup", *RECORD_FACTS) if c in s]
    r = s[cols].astype("string").drop_duplicates(["scenario", "arm", "repeat"]).reset_index(drop=True)
    r["repeat"] = pd.to_numeric(r["repeat"], errors="coerce").astype("Int64")
    r = r.dropna(subset=["repeat"]).astype({"repeat": "int64", "scenario": str, "arm": str})
    r["plan_order"] = pd.to_numeric(r["plan_order"], errors="coerce") if "plan_order" in r else np.nan
    first = r.groupby(["scenario", "repeat"])["plan_order"].transform("min")
    warmed = r["block_warmup"].fillna("").astype(str).str.len().gt(0) if "block_warmup" in r else \
        pd.Series(False, index=r.index)
    r["first_in_block"] = (r["plan_order"].notna() & (r["plan_order"] == first) & ~warmed).astype(bool)
    return r


def _runs(metrics: pd.DataFrame, scenarios, metric: str) -> pd.DataFrame:
    m = metrics[metrics["scenario"].isin(list(scenarios)) & (metrics["metric"] == metric)]
    m = m[np.isfinite(m["value"].astype(float)) & (m["value"].astype(float) > 0)]
    return pd.DataFrame({"scenario": m["scenario"].astype(str).to_numpy(), "arm": m["arm"].astype(str).to_numpy(),
                         "repeat": m["repeat"].astype("int64").to_numpy(),
                         "y": np.log(m["value"].astype(float).to_numpy())})


def _with_first(d: pd.DataFrame, records: pd.DataFrame | None) -> tuple[pd.DataFrame, bool]:
    if records is None or records.empty or records["plan_order"].isna().all():
        return d.assign(first=0.0), False
    k = ["scenario", "arm", "repeat"]
    d = d.merge(records[k + ["first_in_block"]], on=k, how="left")
    return d.assign(first=d.pop("first_in_block").fillna(False).astype(float)), True


def _design(d: pd.DataFrame, cells: list[str], blocks: bool, first: bool) -> np.ndarray:
    cols = [(d["cell"].to_numpy() == c).astype(float) for c in cells]
    if blocks:
        reps = sorted(d["repeat"].unique())
        cols += [(d["repeat"].to_numpy() == r).astype(float) for r in reps[1:]]
    if first and 0 < d["first"].sum() < len(d):
        cols.append(d["first"].to_numpy(float))
    return np.column_stack(cols)


def _fit(X: np.ndarray, y: np.ndarray, c: np.ndarray) -> dict | None:
    """``statsmodels`` OLS of y on X (pseudo-inverse: the cell and block dummies are collinear by design),
    the contrast c·β (``t_test``) with its se and residual df, and the externally studentized residuals
    (``OLSInfluence``'s internal ones, turned external in closed form); None when the contrast is not estimable (c not in the row space of X) or no
    residual df is left."""
    with warnings.catch_warnings():  # a rank-deficient X is handled below: the contrast must be estimable
        warnings.simplefilter("ignore", SingularMatrixWarning)
        res = OLS(y, X).fit()
    df = int(round(res.df_resid))
    if df < 1 or not np.allclose(c @ res.model.pinv_wexog @ X, c, atol=1e-8):
        return None
    t = res.t_test(c[None, :])
    if df > 1:  # external from internal studentized residuals (no leave-one-out refits): r·√((df−1)/(df−r²))
        with np.errstate(divide="ignore", invalid="ignore"):
            ri = np.asarray(OLSInfluence(res).resid_studentized, float)
            r = ri * np.sqrt((df - 1) / (df - ri ** 2))
    else:
        r = np.full(len(y), np.nan)
    return dict(est=float(np.squeeze(t.effect)), se=float(np.squeeze(t.sd)), df=df,
                sigma=float(np.sqrt(res.scale)), r=r)


def contrast(metrics: pd.DataFrame, own: Side, ref: Side, records: pd.DataFrame | None = None,
             alpha: float = 0.05) -> dict | None:
    """The claim own-vs-ref under the model (module docstring), from ``metrics`` (one campaign's
    :func:`analysis.stats.qos_derived.run_metrics` rows) and ``records`` (:func:`run_records`).

    → ``est, lo, hi`` (log scale; 95 % t CI), ``se``, ``df``, ``p`` (two-sided t), ``sigma`` (residual sd),
    ``n`` (repeats of the claim's cell), ``cells`` (cells in the fit), ``design`` (``cells`` or ``within``),
    ``model`` (its text), ``outliers`` (text, empty when none); None when the model cannot be fitted
    (a cell missing, no residual df, two metrics of two different cells)."""
    if own.metric == ref.metric:
        d = _runs(metrics, {own.scenario, ref.scenario}, own.metric)
        d["cell"] = d["scenario"] + "/" + d["arm"]
        a, b = f"{own.scenario}/{own.arm}", f"{ref.scenario}/{ref.arm}"
        design, blocks = "cells", True
    elif (own.scenario, own.arm) == (ref.scenario, ref.arm):
        x, y = _runs(metrics, {own.scenario}, own.metric), _runs(metrics, {own.scenario}, ref.metric)
        d = x.merge(y, on=["scenario", "arm", "repeat"], suffixes=("", "_ref"))
        d = d.assign(y=d["y"] - d.pop("y_ref"), cell=d["arm"])
        a, b = own.arm, None
        design, blocks = "within", False
    else:
        return None
    cells = sorted(d["cell"].unique())
    if a not in cells or (b is not None and b not in cells):
        return None
    d, first = _with_first(d, records)
    X = _design(d, cells, blocks, first)
    c = np.zeros(X.shape[1])
    c[cells.index(a)] += 1
    if b is not None:
        c[cells.index(b)] -= 1
    f = _fit(X, d["y"].to_numpy(), c)
    if f is None:
        return None
    t = f["est"] / f["se"] if f["se"] > 0 else np.copysign(np.inf, f["est"])
    half = stats.t.ppf(1 - alpha / 2, f["df"]) * f["se"]
    flagged = d.assign(r=f["r"])[np.abs(f["r"]) > OUTLIER_R]
    return dict(est=f["est"], lo=f["est"] - half, hi=f["est"] + half, se=f["se"], df=f["df"],
                p=float(2 * stats.t.sf(abs(t), f["df"])), sigma=f["sigma"], design=design,
                n=int((d["cell"] == a).sum()), cells=len(cells), blocks=int(d["repeat"].nunique()),
                model=(WITHIN if design == "within" else MODEL if first else MODEL_NO_ORDER),
                outliers=outlier_text(flagged, records))


def outlier_text(flagged: pd.DataFrame, records: pd.DataFrame | None) -> str:
    """``scenario/arm/rep-NN r=…`` per flagged run, with what its own records say (kept, never dropped)."""
    out = []
    for r in flagged.itertuples(index=False):
        facts = ""
        if records is not None and not records.empty:
            rec = records[(records["scenario"] == r.scenario) & (records["arm"] == r.arm)
                          & (records["repeat"] == r.repeat)]
            if len(rec):
                got = {k: rec.iloc[0][k] for k in RECORD_FACTS if k in rec and pd.notna(rec.iloc[0][k])}
                facts = " (" + ", ".join(f"{k} {v if str(v) else 'none'}" for k, v in got.items()) + ")"
        out.append(f"{r.scenario}/{r.arm}/rep-{int(r.repeat):02d} r={r.r:+.1f}{facts}")
    return "; ".join(out)


def power(effect, se, df, alpha: float = 0.05) -> np.ndarray:
    """Two-sided power of a t test with standard error ``se`` on ``df`` degrees of freedom to detect
    ``effect`` (log scale), vectorised: P(T > c) + P(T < −c), T noncentral t (df, effect/se), c the t
    quantile at 1 − α/2; the lower tail taken as P(T' > c), T' of noncentrality −effect/se (scipy's
    ``nct.cdf`` returns NaN there for large noncentrality).  NaN where an argument is NaN, se ≤ 0 or
    df < 1.  The one formula for every power this package states (:func:`analysis.stats.claims.paired_power`
    is this with se = 1/√n, df = n − 1)."""
    effect, se, df = np.broadcast_arrays(np.abs(np.asarray(effect, float)), np.asarray(se, float),
                                         np.asarray(df, float))
    out = np.full(effect.shape, np.nan)
    ok = np.isfinite(effect) & np.isfinite(se) & (se > 0) & (df >= 1)
    if ok.any():
        nc, c = effect[ok] / se[ok], stats.t.ppf(1 - alpha / 2, df[ok])
        out[ok] = stats.nct.sf(c, df[ok], nc) + stats.nct.sf(c, df[ok], -nc)
    return out


def repeats_needed(effect: float, fit: dict, alpha: float = 0.05, target: float = 0.8,
                   max_n: int = 100) -> float:
    """The smallest number of repeats (blocks) at which the model's test of ``fit`` (:func:`contrast`)
    reaches power ``target`` for ``effect`` (log scale), if the residual sd stays as measured: the se
    scales as √(n_now / n) (a balanced design), and each added repeat adds one run per cell and one block
    parameter to the residual df.  NaN above ``max_n`` or where the effect is 0."""
    if not np.isfinite(effect) or effect == 0 or fit is None:
        return np.nan
    n_now = max(fit["blocks"], 1)
    n = np.arange(2, max_n + 1, dtype=float)
    se = fit["se"] * np.sqrt(n_now / n)
    per = fit["cells"] - (1 if fit["design"] == "cells" else 0)
    df = fit["df"] + (n - n_now) * per
    pw = power(effect, se, np.maximum(df, 1), alpha)
    hit = np.flatnonzero(pw >= target)
    return float(n[hit[0]]) if len(hit) else np.nan

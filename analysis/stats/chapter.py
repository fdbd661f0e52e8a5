"""Reproduce the workload-characterization chapter's consistency tables from its own printed inputs.

Everything recomputable from the printed rounds R0–R6 (bandwidth summary) and the printed per-node idle
times is recomputed with :mod:`analysis.stats.consistency` / pandas and compared with the printed cell
at the printed precision: a value matches when it is within half a unit of the last printed digit.
The standard deviation's degrees of freedom are inferred from the numbers (:func:`std_convention`),
and the hypothesis example is checked for internal consistency (:func:`hypothesis_checks`,
:func:`f_test_dof`).  Statuses: ``match``, ``contradiction`` (the printed inputs give another value at
the printed precision), ``not recomputable`` (the inputs are not printed), ``check`` rows are
consistency checks with ``match`` meaning passed.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats

from analysis.published.chapter import NODES, chapter_matrix, decimals_of, load_chapter_tables

from . import consistency as c

ROUNDS = [f"R{i}" for i in range(7)]
COMPARE_COLUMNS = ["table", "row", "column", "printed", "recomputed", "abs_diff", "status", "how"]


def _half_unit(printed: pd.DataFrame | np.ndarray) -> np.ndarray:
    return 0.5 * 10.0 ** -decimals_of(np.asarray(printed, dtype=str))


def _rounding_slack(fn: Callable[[pd.DataFrame], pd.DataFrame], inputs: pd.DataFrame,
                    printed_inputs: pd.DataFrame) -> pd.DataFrame:
    """First-order bound on how far ``fn(inputs)`` can move when every input is off by up to half a
    printed unit: the sum over input cells of the larger change from nudging that cell by ±h."""
    base = fn(inputs)
    h = _half_unit(printed_inputs)
    slack = base * 0.0
    for i, j in np.ndindex(inputs.shape):
        moved = []
        for sign in (1, -1):
            x = inputs.copy()
            x.iat[i, j] += sign * h[i, j]
            moved.append((fn(x) - base).abs())
        slack += np.maximum(*moved)
    return slack


def _compare(tables: pd.DataFrame, table: str, recomputed: pd.DataFrame, how: dict[str, str] | str,
             slack: pd.DataFrame | float = 0.0) -> pd.DataFrame:
    """Long comparison of ``recomputed`` (row × column) with the printed cells of ``table``.

    ``match``: within half a printed unit; ``match within input rounding``: within that plus ``slack``
    (what the rounding of the printed inputs can move the result); else ``contradiction``.
    """
    printed = chapter_matrix(tables, table, "printed").loc[recomputed.index, recomputed.columns]
    value = chapter_matrix(tables, table).loc[recomputed.index, recomputed.columns].astype(float)
    diff = (recomputed - value).abs()
    tol = _half_unit(printed) + 1e-9
    status = pd.DataFrame(np.select([diff <= tol, diff <= tol + slack],
                                    ["match", "match within input rounding"], "contradiction"),
                          index=diff.index, columns=diff.columns)
    long = pd.DataFrame({"printed": printed.stack(), "recomputed": recomputed.stack(), "abs_diff": diff.stack(),
                         "status": status.stack()})
    long.index.names = ["row", "column"]
    long = long.reset_index().assign(table=table)
    long["how"] = long["row"].map(how) if isinstance(how, dict) else how
    return long[COMPARE_COLUMNS]


def bandwidth_rounds(tables: pd.DataFrame) -> pd.DataFrame:
    """The printed round means R0–R6 (round × test, MB/s)."""
    return chapter_matrix(tables, "bandwidth_summary").loc[ROUNDS].astype(float)


def std_convention(tables: pd.DataFrame) -> pd.DataFrame:
    """Printed ``Std`` cells matched by ddof 0 and ddof 1, per table (bandwidth summary, idle time)."""
    rows = []
    for table, inputs, std_col in (("bandwidth_summary", bandwidth_rounds(tables), None),
                                   ("idle_time_240s", _idle_nodes(tables), "std")):
        m = chapter_matrix(tables, table, "printed")
        printed = m.loc["Std"] if std_col is None else m[std_col]
        for ddof in (0, 1):
            sd = inputs.std(ddof=ddof) if std_col is None else inputs.std(axis=1, ddof=ddof)
            ok = (sd - printed.astype(float)).abs() <= _half_unit(printed) + 1e-9
            rows.append({"table": table, "ddof": ddof, "cells": len(ok), "matched": int(ok.sum())})
    return pd.DataFrame(rows)


def bandwidth_comparison(tables: pd.DataFrame, bands: tuple[float, ...] = (0.2, 0.1)) -> pd.DataFrame:
    """Printed vs recomputed: Mean/Std/Std-Mean (ddof 0), the diff ratios with Max/Min, the ±band shares."""
    means = bandwidth_rounds(tables)
    printed_means = chapter_matrix(tables, "bandwidth_summary", "printed").loc[ROUNDS]

    def summary(m: pd.DataFrame) -> pd.DataFrame:
        return c.summary_table(m, ddof=0).loc[["Mean", "Std", "Std/Mean"]]

    def diff(m: pd.DataFrame) -> pd.DataFrame:
        return c.range_tolerance(m, bands).diff

    rt = c.range_tolerance(means, bands)
    parts = [_compare(tables, "bandwidth_summary", summary(means),
                      {"Mean": "mean of R0–R6", "Std": "population std (ddof=0) of R0–R6",
                       "Std/Mean": "Std/Mean from R0–R6 unrounded"},
                      _rounding_slack(summary, means, printed_means)),
             _compare(tables, "diff_ratio", rt.diff, "R/mean(R0–R6) − 1; Max/Min over R0–R6",
                      _rounding_slack(diff, means, printed_means))]
    share = _compare(tables, "range_ratio", rt.within, "share of the 7 round means within ±band")
    n_k7 = _multiples_of_sevenths(share["printed"])
    share["status"] = "not recomputable"
    share["how"] += (f" — but {int((~n_k7).sum())} of {len(share)} printed shares are not k/7, so they are"
                     " shares of the per-second samples, which are not printed")
    return pd.concat(parts + [share], ignore_index=True)


def _multiples_of_sevenths(printed: pd.Series) -> np.ndarray:
    v = printed.str.replace("\u2013", "-").astype(float).to_numpy()
    k7 = np.arange(8) / 7
    return (np.abs(v[:, None] - k7[None, :]) <= _half_unit(printed)[:, None] + 1e-9).any(axis=1)


def _idle_nodes(tables: pd.DataFrame) -> pd.DataFrame:
    return chapter_matrix(tables, "idle_time_240s")[NODES].astype(float)


def idle_time_comparison(tables: pd.DataFrame) -> pd.DataFrame:
    """Idle-time table: mean, std (ddof=1), the unlabelled columns read as Std/Mean and Max/Min.

    The Max/Min column is judged by interval arithmetic: the printed node values are rounded, so the
    true ratio lies in [(max−h)/(min+h), (max+h)/(min−h)] (h = half a printed unit; min−h ≤ 0 → ∞).
    """
    x = _idle_nodes(tables)
    printed_nodes = chapter_matrix(tables, "idle_time_240s", "printed")[NODES]

    def derived(v: pd.DataFrame) -> pd.DataFrame:
        sd = v.std(axis=1, ddof=1)
        return pd.DataFrame({"mean": v.mean(axis=1), "std": sd, "unlabelled_13": sd / v.mean(axis=1),
                             "unlabelled_14": v.max(axis=1) / v.min(axis=1)})

    with np.errstate(divide="ignore", invalid="ignore"):
        out = _compare(tables, "idle_time_240s", derived(x), "", _rounding_slack(derived, x, printed_nodes))
    out["how"] = out["column"].map({"mean": "mean of the 9 nodes", "std": "sample std (ddof=1) of the 9 nodes",
                                    "unlabelled_13": "read as Std/Mean (ddof=1)",
                                    "unlabelled_14": "read as Max/Min of the unrounded node values"})
    v, h = x.to_numpy(), _half_unit(printed_nodes)
    i, jmax, jmin = np.arange(len(v)), v.argmax(axis=1), v.argmin(axis=1)
    lo = (v[i, jmax] - h[i, jmax]) / (v[i, jmin] + h[i, jmin])
    with np.errstate(divide="ignore"):
        hi = np.where(v[i, jmin] > h[i, jmin], (v[i, jmax] + h[i, jmax]) / (v[i, jmin] - h[i, jmin]), np.inf)
    ratio = out["column"] == "unlabelled_14"
    printed_ratio = out.loc[ratio, "printed"].astype(float).to_numpy()
    hp = _half_unit(out.loc[ratio, "printed"])
    inside = (printed_ratio + hp >= lo - 1e-9) & (printed_ratio - hp <= hi + 1e-9)  # intervals overlap
    out.loc[ratio, "status"] = np.select([out.loc[ratio, "status"] == "match", inside],
                                         ["match", "match within input rounding"], "contradiction")
    out.loc[ratio, "how"] += " (interval from the rounded inputs)"
    return out


def f_test_dof(f: float, p: float, decimals: int = 3, df1: range = range(1, 7),
               df2_max: int = 5000) -> pd.DataFrame:
    """Which F(df1, df2) give ``sf(f)`` equal to the printed ``p`` at ``decimals``: df1 with the df2 range."""
    d2 = np.arange(1, df2_max + 1)
    d1 = np.asarray(df1)
    ok = np.abs(stats.f.sf(f, d1[:, None], d2[None, :]) - p) <= 0.5 * 10.0 ** -decimals + 1e-12
    return pd.DataFrame({"df1": d1, "n_df2": ok.sum(axis=1),
                         "df2_min": [d2[r].min() if r.any() else np.nan for r in ok],
                         "df2_max": [d2[r].max() if r.any() else np.nan for r in ok]})


def hypothesis_checks(tables: pd.DataFrame, alpha: float = 0.05, n_rounds: int = 7) -> pd.DataFrame:
    """Internal checks of the printed hypothesis example (its per-second inputs are not printed).

    Per test: the three counts sum to ``n_rounds``; the Result code follows P at ``alpha``; an F value
    is printed only with a valid P; and the printed (F, P) pair is possible for a one-way ANOVA over
    ``n_rounds`` rounds (df1 = n_rounds − 1) for some df2 ≤ 5000.
    """
    h = chapter_matrix(tables, "hypothesis_example")
    rows = []
    for test in h.columns:
        col = h[test].astype(float)
        counts = col[["Normal", "Non-normal", "Invalid"]].sum()
        code = -1 if col["P-value"] < 0 else int(col["P-value"] >= alpha)
        dof = f_test_dof(col["F-value"], col["P-value"]) if col["P-value"] >= 0 else None
        anova_ok = dof is not None and dof.set_index("df1").loc[n_rounds - 1, "n_df2"] > 0
        fits = "" if dof is None else ", ".join(f"F({r.df1}, {r.df2_min:.0f}–{r.df2_max:.0f})"
                                                 for r in dof[dof["n_df2"] > 0].itertuples())
        for check, ok, detail in (
                ("counts sum to rounds", counts == n_rounds, f"{counts:.0f} vs {n_rounds}"),
                ("Result follows P at alpha", code == col["Result"], f"P {col['P-value']:g} → {code}"),
                ("F printed only with a valid P", col["P-value"] >= 0 or np.isnan(col["F-value"]),
                 f"F {col['F-value']:g}, P {col['P-value']:g}, Invalid {col['Invalid']:.0f}"),
                (f"(F, P) possible with df1 = {n_rounds - 1}", dof is None or anova_ok or col["P-value"] == 0,
                 f"fits {fits}" if fits else "P not printed")):
            rows.append({"table": "hypothesis_example", "row": check, "column": test,
                         "status": "match" if ok else "contradiction", "how": detail})
    out = pd.DataFrame(rows)
    dup = h.loc["F-value"].astype(float).duplicated(keep=False)
    out.loc[(out["row"] == "F printed only with a valid P") & out["column"].map(dup), "how"] += \
        " (same F as another test)"
    return out


def chapter_comparison(tables: pd.DataFrame | None = None) -> pd.DataFrame:
    """All printed-vs-recomputed rows and the hypothesis checks (columns :data:`COMPARE_COLUMNS`)."""
    tables = load_chapter_tables() if tables is None else tables
    return pd.concat([bandwidth_comparison(tables), idle_time_comparison(tables), hypothesis_checks(tables)],
                     ignore_index=True).reindex(columns=COMPARE_COLUMNS)


def contradictions(comparison: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`chapter_comparison` whose printed value the printed inputs contradict."""
    return comparison[comparison["status"] == "contradiction"].reset_index(drop=True)


STATUS_MARK = {"match": "", "match within input rounding": " ~", "contradiction": " !", "not recomputable": " ?"}


def side_by_side(comparison: pd.DataFrame, table: str) -> pd.DataFrame:
    """One table as printed order row × column of ``"printed | recomputed"`` strings, the recomputed
    value shown to two more decimals than printed and marked per :data:`STATUS_MARK`."""
    t = comparison[comparison["table"] == table]
    dec = decimals_of(t["printed"].to_numpy(str)) + 2
    cell = [f"{p} | {r:.{d}f}{STATUS_MARK[s]}" for p, r, d, s in zip(t["printed"], t["recomputed"], dec, t["status"])]
    out = t.assign(cell=cell).pivot(index="row", columns="column", values="cell")
    return out.loc[t["row"].unique(), t["column"].unique()].rename_axis(index=None, columns=None)

"""A history's series with their repeats and change points (``analysis.stats.history``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout
from analysis.stats import history as hs

SERIES = "history-series"
UNIT_SCALE = {"1/s": (1.0, "IOPS"), "B/s": (1 / 2 ** 20, "MiB/s"), "ns": (1e-3, "µs"), "s": (1.0, "s")}


def series_panels(points: pd.DataFrame, runs: pd.DataFrame, changes: pd.DataFrame, max_panels: int = 12,
                  fig_id: str = SERIES) -> plt.Figure:
    """One panel per series and metric (the first ``max_panels``, series with a change first): every run as
    a dot at its point (the repeats), the point's geometric mean as a line, each change as a dashed line
    at its first point with the segment medians either side and its size (red: a regression, i.e.
    ``fails``; grey: acknowledged or better).  x is the point's index in time order."""
    groups = list(points.groupby(["series", "metric", "unit"], sort=True, observed=True))
    has = set(zip(changes["series"], changes["metric"])) if len(changes) else set()
    groups.sort(key=lambda g: ((g[0][0], g[0][1]) not in has, g[0]))
    groups = groups[:max_panels]
    n = max(len(groups), 1)
    cols = 1 if n == 1 else 2
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(7.5 if cols == 1 else 11, 2.1 * rows + 0.6), squeeze=False)
    fig.set_label(fig_id)
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    if not groups:
        axes[0, 0].text(0.5, 0.5, "no series with enough points", ha="center", va="center")
        return fig
    lab = runs["series"] if "series" in runs else pd.Series("", index=runs.index)
    common = hs.common_label(points)  # said once, in the suptitle
    for ax, ((series, metric, unit), d) in zip(axes.flat, groups):
        k, uname = UNIT_SCALE.get(unit, (1.0, unit))
        idx = dict(zip(d["point"], d["index"]))
        r = runs[(lab == series) & (runs["metric"] == metric) & (runs["unit"] == unit)]
        ax.plot(r["point"].map(idx), r["value"] * k, ".", ms=3, color="#4d4d4d", alpha=0.6, label="runs")
        ax.plot(d["index"], d["gmean"] * k, "-", lw=1, color="#2166ac", label="point (geometric mean)")
        c = changes[(changes["series"] == series) & (changes["metric"] == metric)] if len(changes) else changes
        for ch in c.itertuples():
            colour = "#b2182b" if ch.fails else "#777777"
            ax.axvline(ch.index - 0.5, ls="--", lw=1, color=colour)
            ax.text(ch.index - 0.5, 1.0, f" {ch.change_pct:+.1f} %", transform=ax.get_xaxis_transform(),
                    va="top", ha="left", fontsize=7, color=colour)
            lo, hi = ch.index - ch.n_points_before, ch.index + ch.n_points_after
            ax.hlines([ch.median_before * k, ch.median_after * k], [lo - 0.5, ch.index - 0.5],
                      [ch.index - 0.5, hi - 0.5], colors=colour, lw=2, alpha=0.7)
        ax.set_title(f"{hs.short_label(pd.Series([series]), common)[0]} · {metric}", fontsize=8)
        ax.set_ylabel(uname, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("point (time order)", fontsize=8)
    if common:
        fig.suptitle(common, fontsize=8)
    tight_layout(fig)
    return fig

"""Run-consistency figures.  Each returns a matplotlib Figure whose label is its stable id."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from analysis.figures import seeded_jitter, tight_layout

ROUND_DISTRIBUTIONS = "consistency-round-distributions"
DIFF_RATIO_HEATMAP = "consistency-diff-ratio-heatmap"
REPEATS_NEEDED = "consistency-repeats-needed"
ORDER_DRIFT = "consistency-order-drift"


def round_distributions(data: pd.DataFrame, value_label: str, scale: float = 1.0,
                        fig_id: str = ROUND_DISTRIBUTIONS) -> plt.Figure:
    """Per-round distributions (box + points) of ``test, round, value`` samples, one panel per test.

    ``scale`` divides the values for display only (e.g. 1e3 for ns → µs); ``value_label`` names the axis.
    """
    tests = list(dict.fromkeys(data["test"]))
    fig, axes = plt.subplots(1, len(tests), figsize=(2.2 * len(tests) + 1, 3.2), sharey=True, squeeze=False)
    d = data.assign(shown=data["value"] / scale)
    for ax, test in zip(axes[0], tests):
        g = d[d["test"] == test]
        sns.boxplot(g, x="round", y="shown", ax=ax, color="0.85", fliersize=0)
        with seeded_jitter():
            sns.stripplot(g, x="round", y="shown", ax=ax, size=3, color="C0")
        ax.set(title=test, xlabel="round", ylabel=value_label)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def diff_ratio_heatmap(diff: pd.DataFrame, band: float = 0.1, fig_id: str = DIFF_RATIO_HEATMAP) -> plt.Figure:
    """Heat map of a diff-ratio table (rounds × tests, Max/Min rows included if present), colour
    scale symmetric and saturating at ±2·``band``; cells outside ±``band`` are outlined."""
    fig, ax = plt.subplots(figsize=(1.1 * diff.shape[1] + 2, 0.45 * diff.shape[0] + 1.2))
    lim = 2 * band
    sns.heatmap(diff.astype(float), ax=ax, cmap="RdBu_r", vmin=-lim, vmax=lim, annot=True, fmt=".3f",
                cbar_kws={"label": "round mean / mean of rounds − 1 (ratio)"})
    for (i, j), v in np.ndenumerate(diff.to_numpy(float)):
        if abs(v) > band:
            ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, edgecolor="k", lw=1.5))
    ax.set(title=f"diff ratio (outlined: outside ±{band:g})")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def repeats_needed_curve(curves: pd.DataFrame, power: float, alpha: float,
                         fig_id: str = REPEATS_NEEDED) -> plt.Figure:
    """Repeats per arm vs the relative difference to detect; ``curves`` has ``label, rel_diff, n_per_arm``
    and optionally ``group`` (each group gets its own line style, e.g. published vs measured)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    groups = list(dict.fromkeys(curves["group"])) if "group" in curves else [None]
    for label, g in curves.groupby("label", sort=False):
        style = ["-", "--", ":", "-."][groups.index(g["group"].iloc[0]) % 4] if "group" in g else "-"
        ax.plot(100 * g["rel_diff"], g["n_per_arm"], marker=".", ls=style, label=label)
    ax.set(xlabel="difference to detect (% of mean)", ylabel="repeats per arm (runs)", yscale="log",
           title=f"repeats needed (two-sided t-test, α = {alpha:g}, power = {power:g})")
    ax.legend(fontsize="small", ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def order_drift(values: dict[str, pd.DataFrame], fig_id: str = ORDER_DRIFT) -> plt.Figure:
    """Each run's deviation from its test's mean (run value / test mean − 1) against its place in the
    campaign, one panel per campaign; ``values`` maps a panel title to :func:`analysis.stats.runs.run_values`
    output (``test, round, value, order``).  Points are coloured by round (repeat); the line is the
    rolling median over 25 runs."""
    fig, axes = plt.subplots(1, len(values), figsize=(4.6 * len(values), 3.6), squeeze=False)
    for ax, (title, v) in zip(axes[0], values.items()):
        v = v.dropna(subset=["order"]).sort_values("order")
        dev = v["value"] / v.groupby("test")["value"].transform("mean") - 1
        pos = np.arange(len(v))
        sc = ax.scatter(pos, 100 * dev, c=v["round"], cmap="viridis", s=6, alpha=0.7)
        ax.plot(pos, 100 * dev.rolling(25, center=True, min_periods=5).median(), color="k", lw=1.2)
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set(title=title, xlabel="run, in execution order", ylabel="deviation from test mean (%)")
        fig.colorbar(sc, ax=ax, label="round (repeat)")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig

"""Pacific vs Reef figures (issue 24): per scenario and arm the Reef/Pacific ratio with its 95 % CI
(:func:`analysis.stats.versions.release_contrast`), and each arm's effect against WPQ on both releases
(:func:`analysis.stats.versions.interaction`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout

RELEASE_FOREST = "versions-release-ratio"
ARM_EFFECTS = "versions-arm-effects"
COLOURS = {"pacific": "#2166ac", "reef": "#b2182b"}


def release_forest(contrast: pd.DataFrame, metric: str, label: str, fig_id: str | None = None) -> plt.Figure:
    """One row per (scenario, arm) of ``contrast`` for ``metric``: Reef / Pacific (ratio of geometric means)
    with its 95 % CI on a log axis, a line at 1; rows with one run a side show the ratio without a CI."""
    t = contrast[contrast["metric"] == metric].sort_values(["scenario", "arm"])
    fig, ax = plt.subplots(figsize=(7.0, 0.26 * max(len(t), 1) + 1.3))
    fig.set_label(fig_id or f"{RELEASE_FOREST}-{metric.replace('_', '-')}")
    y = np.arange(len(t))[::-1]
    if len(t):
        ci = t["lo"].notna().to_numpy()
        sig = (t["p"] < 0.05).to_numpy()
        for m, colour, name in ((ci & sig, "#b2182b", "p < 0.05"), (ci & ~sig, "#555555", "p ≥ 0.05")):
            if m.any():
                e = t.loc[m]
                ax.errorbar(e["ratio"], y[m], xerr=[e["ratio"] - e["lo"], e["hi"] - e["ratio"]], fmt="o", ms=4,
                            color=colour, capsize=2, label=name)
        if (~ci).any():
            ax.plot(t.loc[~ci, "ratio"], y[~ci], "o", mfc="none", color="#555555", ms=4, label="< 2 runs a side")
        ax.set_xscale("log")
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no (scenario, arm) ran on both releases", ha="center", va="center", transform=ax.transAxes)
    ax.axvline(1, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{s} · {a}" for s, a in zip(t["scenario"], t["arm"])], fontsize=7)
    ax.set_xlabel(f"{label}: Reef 18.2.7 / Pacific 16.2.15 (ratio, 95 % CI)")
    tight_layout(fig)
    return fig


def arm_effects(terms: pd.DataFrame, metric: str, label: str, fig_id: str | None = None) -> plt.Figure:
    """Per scenario (panels) and arm (rows) of ``terms`` for ``metric``: the arm's effect against the
    reference arm on Pacific and on Reef (ratio of geometric means, log axis); an arm whose release × arm
    term has p < 0.05 is starred."""
    t = terms[terms["metric"] == metric]
    scen = sorted(t["scenario"].unique()) or [""]
    fig, axes = plt.subplots(1, len(scen), figsize=(3.4 * len(scen), 0.3 * max(t.groupby("scenario").size().max()
                                                                              if len(t) else 1, 1) + 1.6),
                             squeeze=False)
    fig.set_label(fig_id or f"{ARM_EFFECTS}-{metric.replace('_', '-')}")
    for ax, s in zip(axes[0], scen):
        d = t[t["scenario"] == s].sort_values("arm")
        y = np.arange(len(d))[::-1]
        for rel, dy in (("pacific", 0.12), ("reef", -0.12)):
            ax.plot(d[f"effect_{rel}"], y + dy, "o", color=COLOURS[rel], ms=4, label=rel)
        ax.axvline(1, color="black", lw=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels([a + (" *" if p < 0.05 else "") for a, p in zip(d["arm"], d["p"])], fontsize=7)
        if len(d):
            ax.set_xscale("log")
            ax.set_title(f"{s} (vs {d['ref'].iloc[0]})", fontsize=9)
        else:
            ax.text(0.5, 0.5, "nothing to compare yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(label, fontsize=8)
    axes[0][0].legend(fontsize=7, loc="best")
    tight_layout(fig)
    return fig

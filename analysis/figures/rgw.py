"""RGW campaign figures (issue 28): PUT throughput per arm with rados bench beside it
(:func:`analysis.stats.rgw.run_table`), and each arm's share of rados bench here and in the getput diary
(:func:`analysis.stats.rgw.published_vs_measured`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout

PUT_BY_ARM = "rgw-put-by-arm"
SHARE_OF_RADOS = "rgw-share-of-rados"
ORDER = ("shards-1", "shards-8", "shards-64", "bucket-per-proc", "rados")


def put_by_arm(runs: pd.DataFrame, fig_id: str | None = None) -> plt.Figure:
    """Every run's 4 MiB write throughput (getput's PUT total, or rados bench write for ``rados``) per
    arm, the median as a bar; the arms in :data:`ORDER`."""
    arms = [a for a in ORDER if a in set(runs["arm"])] + sorted(set(runs["arm"]) - set(ORDER))
    fig, ax = plt.subplots(figsize=(7.0, 3.0))
    fig.set_label(fig_id or PUT_BY_ARM)
    for i, arm in enumerate(arms):
        v = runs.loc[runs["arm"] == arm, "put_mib_s"].dropna().to_numpy()
        colour = "#777777" if arm == "rados" else "#2166ac"
        if len(v):
            ax.barh(i, np.median(v), color=colour, alpha=0.35, height=0.6)
            ax.plot(v, np.full(len(v), i) + np.linspace(-0.12, 0.12, len(v)), "o", color=colour, ms=4)
    ax.set_yticks(range(len(arms)))
    ax.set_yticklabels([a + (" (rados bench)" if a == "rados" else "") for a in arms], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("4 MiB write throughput (MiB/s): runs, bar = median")
    tight_layout(fig)
    return fig


def share_of_rados(table: pd.DataFrame, fig_id: str | None = None) -> plt.Figure:
    """Per diary arm: its write throughput over rados bench on the same cluster, the diary's (published)
    beside ours (measured)."""
    fig, ax = plt.subplots(figsize=(7.0, 2.6))
    fig.set_label(fig_id or SHARE_OF_RADOS)
    y = np.arange(len(table))
    ax.barh(y - 0.18, table["diary / rados"], height=0.34, color="#b2182b", label="diary (published, 24 HDD OSDs)")
    ax.barh(y + 0.18, table["ours / rados"], height=0.34, color="#2166ac", label="ours (measured, this VM)")
    ax.axvline(1, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{d} · {o}" for d, o in zip(table["diary arm"], table["our arm"])], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("RGW write throughput / rados bench on the same cluster (ratio)")
    ax.legend(fontsize=7, loc="lower right")
    tight_layout(fig)
    return fig

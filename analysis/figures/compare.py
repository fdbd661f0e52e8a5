"""A-vs-B figure: the change of every tested cell with its 95 % CI (``analysis.stats.abtest.compare``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout
from analysis.stats.abtest import varying_keys

FOREST = "compare-forest"
COLOURS = {"better": "#1b7837", "worse": "#b2182b", "~": "#777777", "differs": "#2166ac"}


def forest(table: pd.DataFrame, names: tuple[str, str] = ("old", "new"), fig_id: str = FOREST) -> plt.Figure:
    """One row per tested cell and metric: the change of new against old (% of old; the ratio of geometric
    means for ``Welch t (log)``) as a point with its 95 % CI, coloured by verdict, a line at 0.  Cells
    that could not be tested are left out (the table lists them)."""
    t = table.reset_index()
    t = t[t["test"].astype(str) != ""]
    keys = [k for k in varying_keys(table) if k in t]  # keys with one value everywhere name no cell
    labels = [" ".join(x for x in row if x) for row in
              t[[*keys, "metric", "ddir"]].astype(str).itertuples(index=False, name=None)]
    fig, ax = plt.subplots(figsize=(7.5, 0.28 * len(t) + 1.4))
    fig.set_label(fig_id)
    y = np.arange(len(t))[::-1]
    for verdict, colour in COLOURS.items():
        m = (t["verdict"] == verdict).to_numpy()
        if m.any():
            e = t.loc[m]
            ax.errorbar(e["effect_pct"], y[m], xerr=[e["effect_pct"] - e["effect_lo"], e["effect_hi"] - e["effect_pct"]],
                        fmt="o", ms=4, color=colour, capsize=2, label=verdict)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel(f"change of {names[1]} against {names[0]} (%), 95 % CI")
    if len(t):
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no cell could be tested", ha="center", va="center", transform=ax.transAxes)
    tight_layout(fig)
    return fig

"""The Bobtail IO-scheduler study's figures on our block campaigns: scatters per size × concurrency × op,
and the summary table coloured by the seed's rule.  Each Figure's label is its stable id."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout
from analysis.stats.iosched import BS_ORDER, SCHEDULERS

SCATTER = "iosched-scatter"          # + -<campaign>-<op>: the seed's per-permutation scatters
SUMMARY = "iosched-summary"          # + -<campaign>-<bs>: the seed's "Results Summary" tables
FILL = {"green": "#b7e4b0", "red": "#f4b6b0", "": "white"}


def scatters(values: pd.DataFrame, campaign: str, op: str, fig_id: str | None = None) -> plt.Figure:
    """One panel per size (rows) × concurrency (columns) for one ``op``: each run's throughput (MiB/s)
    by target (x; one group per file system or device) and scheduler (colour), with the scheduler's
    mean ± 1 sample std as a bar — the seed's scatter of every permutation.  ``values``:
    :func:`analysis.stats.iosched.block_values`."""
    v = values[(values["campaign"] == campaign) & (values["op"] == op)]
    sizes = sorted(v["bs"].unique(), key=BS_ORDER.get)
    qds = sorted(v["qd"].unique())
    targets = list(dict.fromkeys(v["target"]))
    scheds = [s for s in SCHEDULERS if s in set(v["io_scheduler"])]
    fig, axes = plt.subplots(len(sizes), len(qds), figsize=(3.2 * len(qds) + 1.5 * len(targets), 2.8 * len(sizes)),
                             squeeze=False)
    w = 0.8 / max(len(scheds), 1)
    for (i, bs), (j, qd) in ((a, b) for a in enumerate(sizes) for b in enumerate(qds)):
        ax = axes[i][j]
        d = v[(v["bs"] == bs) & (v["qd"] == qd)]
        for k, s in enumerate(scheds):
            for t_i, t in enumerate(targets):
                x = d.loc[(d["io_scheduler"] == s) & (d["target"] == t), "value"].to_numpy()
                if not len(x):
                    continue
                xpos = t_i + (k - (len(scheds) - 1) / 2) * w
                ax.plot(np.full(len(x), xpos), x, ".", color=f"C{k}", ms=4, label=s if t_i == 0 else None)
                sd = x.std(ddof=1) if len(x) > 1 else 0.0
                ax.errorbar([xpos], [x.mean()], yerr=[sd], color=f"C{k}", capsize=2, lw=1)
        ax.set_xticks(range(len(targets)), targets)
        ax.set(title=f"{op} {bs} · {qd} concurrent", ylabel="throughput (MiB/s)")
        ax.set_ylim(bottom=0)
    axes[0][-1].legend(fontsize="small", loc="lower right")
    fig.suptitle(f"{campaign}: {op} throughput per run (dots), scheduler mean ± 1σ (bars)", fontsize=10)
    fig.set_label(fig_id or f"{SCATTER}-{campaign}-{op}")
    tight_layout(fig)
    return fig


def summary_table(colours: pd.DataFrame, campaign: str, bs: str, fig_id: str | None = None) -> plt.Figure:
    """The seed's summary table for one IO size: rows target × op × concurrency, columns schedulers, cells
    the mean MiB/s coloured by :func:`analysis.stats.compare.seed_colours` (green: highest, distinct from
    the lowest; red: lowest; middle schedulers by which one's ±1σ range they share).  ``colours``:
    :func:`analysis.stats.compare.seed_colour_table` indexed by (target, op, bs, qd, io_scheduler)."""
    t = colours.xs(bs, level="bs").reset_index()
    scheds = [s for s in SCHEDULERS if s in set(t["io_scheduler"])]
    rows = t[["target", "op", "qd"]].drop_duplicates().values.tolist()
    text, fill = [], []
    for target, op, qd in rows:
        r = t[(t["target"] == target) & (t["op"] == op) & (t["qd"] == qd)].set_index("io_scheduler")
        text.append([f"{r.loc[s, 'mean']:.1f}" if s in r.index else "" for s in scheds])
        fill.append([FILL[r.loc[s, "colour"]] if s in r.index else "white" for s in scheds])
    fig, ax = plt.subplots(figsize=(1.3 * len(scheds) + 2.5, 0.28 * len(rows) + 1.0))
    ax.axis("off")
    tab = ax.table(cellText=text, cellColours=fill, colLabels=scheds,
                   rowLabels=[f"{a} {b} qd{c}" for a, b, c in rows], loc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    ax.set_title(f"{campaign} · {bs}: mean MiB/s (green/red by the seed's ±1σ rule)", fontsize=9)
    fig.set_label(fig_id or f"{SUMMARY}-{campaign}-{bs}")
    tight_layout(fig)
    return fig

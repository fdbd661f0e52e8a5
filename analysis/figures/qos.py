"""WPQ-vs-mClock campaign figures.  Each returns a matplotlib Figure whose label is its stable id."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from analysis.figures import seeded_jitter, tight_layout

CLIENT_IOPS = "qos-client-iops-by-arm"
CLIENT_CLAT = "qos-client-clat-by-arm"
BACKGROUND_DURATIONS = "qos-background-durations-by-arm"
REGIME = "qos-regime-cpu-queue"
OP_RATE = "qos-op-rate-by-arm"
CLIENT_DROP = "qos-client-drop-by-arm"

#: display order: WPQ first, then Pacific's profiles, then the tuned arms in their campaign-file order
ARM_ORDER = ["wpq", "wpq_scrubprio120", "high_client_ops", "balanced", "high_recovery_ops", "custom"]


def arm_order(arms: pd.Series | list[str]) -> list[str]:
    present = list(dict.fromkeys(map(str, arms)))
    return [a for a in ARM_ORDER if a in present] + sorted(a for a in present if a not in ARM_ORDER)


def by_arm(runs: pd.DataFrame, value: str, label: str, fig_id: str, scenarios: list[str] | None = None,
           col_wrap: int = 3, sharey: bool = True, hue: str | None = None) -> plt.Figure:
    """One panel per scenario: each run's ``value`` (a column of ``analysis.stats.arms.run_table``)
    as a point per arm, with the arm's median as a bar.  Arms without that value are left out.  ``hue``:
    a column whose values colour the points (one legend, on the first panel)."""
    d = runs.dropna(subset=[value])
    scen = [s for s in (scenarios or list(dict.fromkeys(d["scenario"]))) if s in set(d["scenario"])]
    n = max(len(scen), 1)
    ncol = min(col_wrap, n)
    nrow = -(-n // ncol)
    widths = [len(set(d.loc[d["scenario"] == s, "arm"])) for s in scen] or [1]
    fig, axes = plt.subplots(nrow, ncol, figsize=(max(widths) * 0.55 * ncol + 2, 3.4 * nrow),
                             squeeze=False, sharey=sharey)
    hues = sorted(map(str, d[hue].dropna().unique())) if hue is not None else []
    for ax, s in zip(axes.flat, scen):
        g = d[d["scenario"] == s]
        order = arm_order(g["arm"])
        med = g.groupby("arm", observed=True)[value].median().reindex(order)
        ax.bar(range(len(order)), med.to_numpy(), color="0.85", edgecolor="0.5")
        kw = dict(color="C0") if hue is None else dict(
            hue=hue, hue_order=hues, palette=dict(zip(hues, ("C0", "C3", "C2", "C1"))),
            legend="auto" if ax is axes.flat[0] else False)
        with seeded_jitter():
            sns.stripplot(g, x="arm", y=value, order=order, ax=ax, size=4, jitter=0.15, **kw)
        if hue is not None and ax.get_legend() is not None:
            ax.get_legend().set_title(None)
        ax.set(title=s, xlabel="", ylabel=label)
        ax.tick_params(axis="x", rotation=60)
        for t in ax.get_xticklabels():
            t.set_ha("right")
    for ax in list(axes.flat)[len(scen):]:
        ax.set_visible(False)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def background_durations(runs: pd.DataFrame, fig_id: str = BACKGROUND_DURATIONS) -> plt.Figure:
    """Scrub / snaptrim / recovery duration (s) per arm, one panel per (scenario, operation)
    that has any; points are runs, bars medians."""
    ops = [c for c in ("scrub_duration", "snaptrim_duration", "recovery_duration") if c in runs]
    long = runs.melt(id_vars=["scenario", "arm", "repeat"], value_vars=ops, var_name="op",
                     value_name="duration_s").dropna(subset=["duration_s"])
    long["scenario"] = long["scenario"].astype(str) + " · " + long["op"].str.replace("_duration", "")
    fig = by_arm(long, "duration_s", "duration (s)", fig_id, col_wrap=3, sharey=False)
    for ax in fig.axes:
        ax.set_ylim(bottom=0)
    return fig


def regime(facts: pd.DataFrame, fig_id: str = REGIME) -> plt.Figure:
    """Why a campaign can or cannot decide: per run (points; bars are medians) the machine's CPU busy
    fraction and the ops queued per OSD while its background operation ran, one bar group per campaign
    (``analysis.stats.pilot.run_facts``).  A campaign without the op-queue probe has no queue points."""
    d = facts[facts["op"].notna()].copy()
    d["campaign"] = d["campaign"].astype(str)
    order = list(dict.fromkeys(d["campaign"]))
    fig, axes = plt.subplots(1, 2, figsize=(2.2 * len(order) + 4, 3.6))
    for ax, (col, label) in zip(axes, (("cpu_busy", "machine CPU busy (fraction)"),
                                       ("queue_per_osd", "ops queued per OSD, median (ops)"))):
        med = d.groupby("campaign")[col].median().reindex(order)
        ax.bar(range(len(order)), med.fillna(0).to_numpy(), color="0.85", edgecolor="0.5")
        g = d.dropna(subset=[col])
        if len(g):
            with seeded_jitter():
                sns.stripplot(g, x="campaign", y=col, order=order, ax=ax, size=4, color="C0", jitter=0.2)
        for i, c in enumerate(order):
            if med.isna().iloc[i]:
                ax.text(i, 0, "not recorded", ha="center", va="bottom", rotation=90, fontsize=8)
        ax.set(xlabel="", ylabel=label, xticks=range(len(order)), xticklabels=order)
        ax.set_ylim(bottom=0)
    axes[0].axhline(0.6, color="C3", lw=0.8, ls="--")
    axes[1].axhline(8, color="C3", lw=0.8, ls="--")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def op_rate(facts: pd.DataFrame, fig_id: str = OP_RATE) -> plt.Figure:
    """Objects per second the scenario's main operation got through, per arm, one panel per scenario
    (``analysis.stats.pilot.run_facts``: from the operation's start to its end; where it did not end
    within the client run, to the client's end, coloured apart: a right-censored run's rate is what it
    did in the time it had, not a finished operation's)."""
    import numpy as np
    d = facts[facts["op"].notna()].copy()
    d["operation"] = np.where(d["ended_in_client"].fillna(False).astype(bool), "ended in the client run",
                              "not ended: rate to the client's end")
    d["scenario"] = d["scenario"].astype(str) + " · " + d["op"].astype(str)
    fig = by_arm(d, "op_rate", "operation rate (objects/s)", fig_id, sharey=False, hue="operation")
    for ax in fig.axes:
        ax.set_ylim(bottom=0)
    return fig


def client_drop(facts: pd.DataFrame, fig_id: str = CLIENT_DROP) -> plt.Figure:
    """The client's IOPS drop while the operation ran against the same run before it, % (``run_facts``:
    ``client_iops`` over the operation's window, ``client_iops_pre`` from 10 s to its start), per arm, one
    panel per scenario; positive = fewer IOPS during the operation."""
    from analysis.stats.pilot import client_drop_pct
    d = facts[facts["op"].notna()].copy()
    d["drop_pct"] = client_drop_pct(d)
    fig = by_arm(d, "drop_pct", "client IOPS drop (%)", fig_id)
    for ax in fig.axes:
        ax.axhline(0, color="0.3", lw=0.8)
    return fig

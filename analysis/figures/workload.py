"""Block-workload figures (the chapter's OSD characterization).  Each returns a matplotlib Figure whose
label is its stable id; inputs are the tables of :mod:`analysis.stats.blockio`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout

IDLE_TIME = "workload-idle-time"
SEQUENTIALITY = "workload-sequentiality"
STACK_DISTANCE = "workload-write-stack-distance"
BOTTLENECK = "workload-bottleneck"
BUSY_CHECK = "workload-busy-vs-diskstats"
DDIR_COLOR = {"read": "C0", "write": "C3"}
GIB = float(1 << 30)


def pattern_id(kind: str, scenario: str, phase: str, scheduler: str) -> str:
    """``workload-<kind>-<scenario>-<phase>-<scheduler>`` (kind ``io-pattern`` or ``throughput-iops``)."""
    return f"workload-{kind}-{scenario}-{phase}-{scheduler}"


def _row_label(s: pd.Series) -> str:
    return f"{s['devno']} ({s['role']})"


def io_pattern(annotated: pd.DataFrame, streams: pd.DataFrame, title: str, fig_id: str) -> plt.Figure:
    """The chapter's "LBA and size distribution" figure for one trace: a row per stream (device) of
    ``streams`` (rows of ``blockio.windows``); left, each data request's start LBA (GiB) against its
    dispatch time (ms; requests dispatched before the trace at 0); right, the share of requests per size
    (KiB), reads and writes side by side."""
    n = len(streams)
    fig, axes = plt.subplots(n, 2, figsize=(11, 2.6 * n + 0.6), squeeze=False,
                             gridspec_kw={"width_ratios": [2.2, 1]})
    for (ax, axs), (_, st) in zip(axes, streams.iterrows()):
        d = annotated[(annotated["source"] == st["source"]) & (annotated["dev"] == st["dev"])]
        for dd, g in d.groupby("ddir", sort=True):
            ax.scatter(g["issue_ns"].clip(lower=0) / 1e6, g["sector"] * 512 / GIB, s=2, lw=0,
                       color=DDIR_COLOR.get(dd, "0.5"), label=f"{dd} ({len(g)})")
        ax.set(xlim=(0, st["t_end_ns"] / 1e6), xlabel="dispatch time (ms)", ylabel="LBA (GiB)",
               title=_row_label(st) + ("" if len(d) else ": no data request in the trace"))
        if len(d):
            ax.legend(fontsize="small", markerscale=4, loc="upper right")
        sizes = d.assign(kib=d["nbytes"] / 1024).groupby(["kib", "ddir"]).size().unstack(fill_value=0)
        if len(sizes):
            share = sizes / sizes.to_numpy().sum()
            x = np.arange(len(share))
            wbar = 0.8 / share.shape[1]
            for k, dd in enumerate(share.columns):
                axs.bar(x + k * wbar, share[dd].to_numpy(), wbar, color=DDIR_COLOR.get(dd, "0.5"), label=dd)
            axs.set_xticks(x + 0.4 - wbar / 2, [f"{v:g}" for v in share.index], rotation=60, fontsize="small")
        axs.set(xlabel="request size (KiB)", ylabel="share of requests (fraction)", ylim=(0, 1))
    fig.suptitle(title)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def throughput_iops(rates: pd.DataFrame, streams: pd.DataFrame, title: str, fig_id: str) -> plt.Figure:
    """The chapter's "Throughput and IOPS" figure for one trace: a row per stream, IOPS (1/s) and
    throughput (MiB/s) per bin of completion time, reads and writes (``blockio.rates``)."""
    n = len(streams)
    fig, axes = plt.subplots(n, 2, figsize=(11, 2.4 * n + 0.6), squeeze=False, sharex=True)
    for (ax_i, ax_b), (_, st) in zip(axes, streams.iterrows()):
        r = rates[(rates["source"] == st["source"]) & (rates["dev"] == st["dev"])]
        for dd, g in r.groupby("ddir", sort=True):
            if (g["iops"] > 0).any():
                ax_i.step(g["t_s"] * 1e3, g["iops"], where="post", color=DDIR_COLOR.get(dd), label=dd)
                ax_b.step(g["t_s"] * 1e3, g["mib_s"], where="post", color=DDIR_COLOR.get(dd), label=dd)
        ax_i.set(ylabel="IOPS (1/s)", title=_row_label(st))
        ax_b.set(ylabel="throughput (MiB/s)", title=_row_label(st))
        for ax in (ax_i, ax_b):
            ax.set_ylim(bottom=0)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize="small")
    for ax in axes[-1]:
        ax.set_xlabel("completion time (ms)")
    fig.suptitle(title)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def sequentiality(prof: pd.DataFrame, fig_id: str = SEQUENTIALITY) -> plt.Figure:
    """Strict and near sequential ratios per group (the index of ``blockio.profile``'s output, joined
    with ' · '), horizontal bars."""
    p = prof.dropna(subset=["strict_ratio"])
    labels = [" · ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in p.index]
    y = np.arange(len(p))
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(p) + 1.4))
    ax.barh(y + 0.2, p["near_ratio"], 0.4, color="C1", label="near sequential")
    ax.barh(y - 0.2, p["strict_ratio"], 0.4, color="C0", label="strict sequential")
    ax.set_yticks(y, labels, fontsize="small")
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of requests with a predecessor (fraction)")
    ax.set_title("sequentiality", loc="left")
    ax.legend(fontsize="small", loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, frameon=False)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def stack_distance(curves: pd.DataFrame, group: str, block_kib: float, fig_id: str = STACK_DISTANCE) -> plt.Figure:
    """Share of block updates an LRU write cache would hit against its size (``blockio.hit_curve``,
    one line per ``group`` value); x in KiB of cache (blocks × ``block_kib``), log scale."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, g in curves.groupby(group, sort=True):
        ax.step(g["cache_blocks"] * block_kib, g["hit_share"], where="post", label=str(key))
    ax.set(xscale="log", ylim=(0, 1.02), xlabel="write cache size (KiB, LRU)",
           ylabel="share of updates hit (fraction)", title="write stack distance")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def idle_time(published_share: pd.DataFrame, measured_share: pd.DataFrame, fig_id: str = IDLE_TIME) -> plt.Figure:
    """Idle share per row, one point per node (published, left) or per run (measured, right), with the
    row mean as a bar: ``published_share`` is the chapter's row × node table as a share of 240 s,
    ``measured_share`` our row × scheduler table as a share of each trace's window."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.3 * max(len(published_share), len(measured_share)) + 2.2),
                             gridspec_kw={"width_ratios": [1, 1.4]})
    for ax, t, title, who in ((axes[0], published_share, "chapter: per node, first 240 s", "node"),
                              (axes[1], measured_share, "ours: per run, 0.5 s trace", "scheduler")):
        y = np.arange(len(t))
        v = t.to_numpy(np.float64)
        ax.barh(y, np.nanmean(v, axis=1), color="0.85", edgecolor="0.6", label="row mean")
        jitter = np.linspace(-0.25, 0.25, v.shape[1])
        for k, col in enumerate(t.columns):
            ax.scatter(v[:, k], y + jitter[k], s=12, label=str(col) if who == "scheduler" else None,
                       color=f"C{k}" if who == "scheduler" else "C0")
        ax.set_yticks(y, [" · ".join(map(str, i)) if isinstance(i, tuple) else str(i) for i in t.index],
                      fontsize="small")
        ax.invert_yaxis()
        ax.set(xlim=(0, 1), xlabel="idle share of the window (fraction)", title=title)
        if who == "scheduler":
            ax.legend(fontsize="x-small", loc="lower right")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def bottleneck(res: pd.DataFrame, label: str, saturated: float, headroom: float,
               fig_id: str = BOTTLENECK) -> plt.Figure:
    """Utilisation of CPU, memory and the busiest disk per row of ``res`` (``label`` column names the
    row), with the saturation and headroom thresholds; network is not measured (marked n/m)."""
    y = np.arange(len(res))
    fig, ax = plt.subplots(figsize=(9, 0.34 * len(res) + 2.2))
    for k, (col, name) in enumerate((("cpu", "CPU busy"), ("memory", "memory used"), ("disk", "busiest disk %util"))):
        ax.barh(y + (k - 1) * 0.27, res[col].to_numpy(np.float64), 0.27, color=f"C{k}", label=name)
    ax.axvline(saturated, color="k", lw=1, ls="--", label=f"saturated ≥ {saturated:g}")
    ax.axvline(headroom, color="0.5", lw=1, ls=":", label=f"headroom < {headroom:g}")
    for yy in y:
        ax.text(1.02, yy, "network: n/m", va="center", fontsize="x-small", color="0.4")
    ax.set_yticks(y, res[label].astype(str), fontsize="small")
    ax.invert_yaxis()
    ax.set(xlim=(0, 1.25), xlabel="utilisation (ratio) during the trace", title="bottleneck identification")
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.1 - 1.2 / (len(res) + 4)), ncol=3)
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig


def busy_check(d: pd.DataFrame, x: str, y: str, hue: str, fig_id: str = BUSY_CHECK) -> plt.Figure:
    """Busy share from the trace (``x``) against /proc/diskstats %util of the same device over the
    same window (``y``), coloured by ``hue``; the diagonal is agreement."""
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    for k, (key, g) in enumerate(d.groupby(hue, sort=True)):
        ax.scatter(g[x], g[y], s=18, color=f"C{k}", label=str(key))
    ax.plot([0, 1], [0, 1], color="0.5", lw=1)
    ax.set(xlim=(0, 1.05), ylim=(0, 1.05), xlabel="busy share from the trace, D → C (fraction)",
           ylabel="%util / 100 from /proc/diskstats (fraction)", title="trace vs diskstats, same device and window")
    ax.legend(fontsize="x-small")
    fig.set_label(fig_id)
    tight_layout(fig)
    return fig

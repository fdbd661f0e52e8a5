"""fio-plot's views of a workload grid (rw × iodepth × numjobs), A and B, from the table of
:func:`analysis.stats.abtest.compare` (one value per cell: the median of its runs).

* :func:`lines` — per rw and direction, a metric against iodepth, one line per numjobs, A and B side by side
  on one y scale (fio-plot's ``-g`` graph);
* :func:`heatmap` — per rw and direction, new / old of a metric over iodepth × numjobs.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout

LINES = "grid-lines"
HEATMAP = "grid-heatmap"
#: display unit per canonical unit: (divide by, label)
_UNITS = {"ns": (1e3, "µs"), "B/s": (2 ** 20, "MiB/s"), "1/s": (1.0, "IOPS"), "s": (1.0, "s")}


def is_grid(table: pd.DataFrame) -> bool:
    """Does the table hold a grid: cell keys ``iodepth`` and ``numjobs``, with more than one iodepth?"""
    names = table.index.names
    if "iodepth" not in names or "numjobs" not in names:
        return False
    depths = {str(v) for v in table.index.get_level_values("iodepth")} - {"", "nan", "<NA>"}
    return len(depths) > 1


def grid_frame(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Columns ``rw, ddir, iodepth, numjobs, unit, median_old, median_new, ratio`` for one metric (fio JSON
    rows; ``rw`` empty when the data has none), sorted."""
    t = table.reset_index()
    t = t[(t["metric"].astype(str) == metric) & (t["kind"].astype(str) == "fio-json")]
    rw = t["rw"].astype(str) if "rw" in t else pd.Series("", index=t.index)
    out = pd.DataFrame({"rw": rw, "ddir": t["ddir"].astype(str),
                        "iodepth": pd.to_numeric(t["iodepth"], errors="coerce"),
                        "numjobs": pd.to_numeric(t["numjobs"], errors="coerce"), "unit": t["unit"].astype(str),
                        "median_old": t["median_old"].astype(float), "median_new": t["median_new"].astype(float)})
    out["ratio"] = out["median_new"] / out["median_old"]
    return out.dropna(subset=["iodepth", "numjobs"]).sort_values(["rw", "ddir", "numjobs", "iodepth"])


def _panels(g: pd.DataFrame) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(g["rw"], g["ddir"])))


def lines(table: pd.DataFrame, names: tuple[str, str] = ("old", "new"), metric: str = "iops",
          fig_id: str | None = None) -> plt.Figure:
    """``metric`` against iodepth (log 2 axis), one line per numjobs; a row per rw and direction, the old
    side left and the new right, one y scale per row so the two can be read against each other."""
    g = grid_frame(table, metric)
    panels = _panels(g)
    div, label = _UNITS.get(g["unit"].iloc[0], (1.0, g["unit"].iloc[0])) if len(g) else (1.0, "")
    fig, axes = plt.subplots(max(1, len(panels)), 2, figsize=(9, 2.6 * max(1, len(panels))), squeeze=False,
                             sharey="row")
    fig.set_label(fig_id or f"{LINES}-{metric}")
    jobs = sorted(g["numjobs"].unique())
    colours = dict(zip(jobs, plt.get_cmap("viridis")(np.linspace(0, 0.85, max(1, len(jobs))))))
    for row, (rw, ddir) in enumerate(panels):
        p = g[(g["rw"] == rw) & (g["ddir"] == ddir)]
        for col, (side, name) in enumerate(zip(("median_old", "median_new"), names)):
            ax = axes[row, col]
            for nj, q in p.groupby("numjobs"):
                ax.plot(q["iodepth"], q[side] / div, marker="o", ms=3, color=colours[nj], label=f"numjobs {nj:g}")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{name}: {rw} {ddir}".strip(), fontsize=8)
            ax.set_xlabel("iodepth", fontsize=8)
            if col == 0:
                ax.set_ylabel(f"{metric} ({label})", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        axes[row, 1].legend(fontsize=6, loc="best")
    if not panels:
        axes[0, 0].text(0.5, 0.5, f"no fio grid cells of {metric}", ha="center", va="center",
                        transform=axes[0, 0].transAxes)
    tight_layout(fig)
    return fig


def heatmap(table: pd.DataFrame, names: tuple[str, str] = ("old", "new"), metric: str = "iops",
            fig_id: str | None = None) -> plt.Figure:
    """new / old of ``metric`` over iodepth (rows) × numjobs (columns), one panel per rw and direction; a
    diverging colour scale on log(ratio) centred on 1, each cell annotated with its ratio."""
    g = grid_frame(table, metric)
    panels = _panels(g)
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(4.2 * max(1, len(panels)) + 1, 4.0), squeeze=False,
                             layout="constrained")
    fig.set_label(fig_id or f"{HEATMAP}-{metric}")
    finite = np.log(g["ratio"][np.isfinite(g["ratio"]) & (g["ratio"] > 0)])
    lim = float(np.abs(finite).max()) if len(finite) else 1.0
    for i, (rw, ddir) in enumerate(panels):
        ax = axes[0, i]
        m = g[(g["rw"] == rw) & (g["ddir"] == ddir)].pivot_table(index="iodepth", columns="numjobs", values="ratio")
        im = ax.imshow(np.log(m.to_numpy(float)), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
        for (y, x), v in np.ndenumerate(m.to_numpy(float)):
            if np.isfinite(v):
                dark = v > 0 and abs(np.log(v)) > 0.6 * lim
                ax.text(x, y, f"{v:.2g}", ha="center", va="center", fontsize=6, color="white" if dark else "black")
        ax.set_xticks(range(m.shape[1]), [f"{c:g}" for c in m.columns], fontsize=7)
        ax.set_yticks(range(m.shape[0]), [f"{r:g}" for r in m.index], fontsize=7)
        ax.set_xlabel("numjobs", fontsize=8)
        ax.set_ylabel("iodepth", fontsize=8)
        ax.set_title(f"{rw} {ddir}\n{names[1]} / {names[0]}".strip(), fontsize=8)
    if panels:
        fig.colorbar(im, ax=axes[0, :].tolist(), shrink=0.8, label=f"log({metric} ratio)")
    else:
        axes[0, 0].text(0.5, 0.5, f"no fio grid cells of {metric}", ha="center", va="center",
                        transform=axes[0, 0].transAxes)
    return fig

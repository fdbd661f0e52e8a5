"""CBT's curve: latency against IOPS over ``total_iodepth``, A and B on one plot, from the table of
:func:`analysis.stats.abtest.compare` on CBT ``workloads:`` archives (one value per test: the median of its
runs; a run is one test, its volumes totalled).

Each point is one ``total_iodepth`` (labelled), a line per side and workload: the knee where latency climbs
while IOPS stops growing is what CBT users read off it.  Latency is fio's mean completion latency (``clat``;
``lat`` where clat was not measured), in ms.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout

CURVE = "cbt-latency-vs-iops"
_SIDES = (("old", "#2166ac", "o"), ("new", "#b2182b", "s"))


def is_curve(table: pd.DataFrame) -> bool:
    """Does the table hold tests at more than one ``total_iodepth``?"""
    if "total_iodepth" not in table.index.names:
        return False
    depths = {str(v) for v in table.index.get_level_values("total_iodepth")} - {"", "nan", "<NA>"}
    return len(depths) > 1


def curve_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Columns ``workload, ddir, total_iodepth, side, iops, latency_ms`` (medians of each side's runs), one
    row per test, direction and side that has both metrics; sorted by total_iodepth."""
    t = table.reset_index()
    t = t[t["kind"].astype(str) == "fio-json"]
    wl = next((k for k in ("workload", "mode", "rw") if k in t and (t[k].astype(str) != "").any()), None)
    t = t.assign(workload=t[wl].astype(str) if wl else "", total_iodepth=pd.to_numeric(t["total_iodepth"],
                                                                                        errors="coerce"))
    lat_metric = "clat_mean" if (t["metric"].astype(str) == "clat_mean").any() else "lat_mean"
    rows = []
    for side, _, _ in _SIDES:
        v = t[["workload", "ddir", "total_iodepth", "metric", f"median_{side}"]].rename(
            columns={f"median_{side}": "value"})
        wide = v.pivot_table(index=["workload", "ddir", "total_iodepth"], columns="metric", values="value",
                             aggfunc="first", observed=True)
        if "iops" not in wide or lat_metric not in wide:
            continue
        w = wide[["iops", lat_metric]].dropna().reset_index()
        rows.append(pd.DataFrame({"workload": w["workload"], "ddir": w["ddir"].astype(str),
                                  "total_iodepth": w["total_iodepth"], "side": side, "iops": w["iops"],
                                  "latency_ms": w[lat_metric] / 1e6}))
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["workload", "ddir", "total_iodepth", "side", "iops", "latency_ms"])
    out.attrs["latency"] = lat_metric
    return out.sort_values(["workload", "ddir", "side", "total_iodepth"], ignore_index=True)


def latency_vs_iops(table: pd.DataFrame, names: tuple[str, str] = ("old", "new"), fig_id: str = CURVE
                    ) -> plt.Figure:
    """One panel per workload and direction: each side's tests as a line of (IOPS, latency) points in
    ``total_iodepth`` order, each point labelled with its total_iodepth."""
    f = curve_frame(table)
    panels = list(f[["workload", "ddir"]].drop_duplicates().itertuples(index=False, name=None)) or [("", "")]
    ncol = min(3, len(panels))
    nrow = int(np.ceil(len(panels) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.6 * nrow), squeeze=False)
    fig.set_label(fig_id)
    for ax, (wl, ddir) in zip(axes.ravel(), panels):
        g = f[(f["workload"] == wl) & (f["ddir"] == ddir)]
        for (side, colour, marker), name in zip(_SIDES, names):
            s = g[g["side"] == side]
            if s.empty:
                continue
            ax.plot(s["iops"], s["latency_ms"], marker=marker, color=colour, label=name, lw=1.2, ms=5)
            for x, y, d in zip(s["iops"], s["latency_ms"], s["total_iodepth"]):
                ax.annotate(f"{d:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8, color=colour)
        ax.set_title(f"{wl} {ddir}".strip() or "tests", fontsize=10)
        ax.set_xlabel("IOPS (sum over the test's volumes)")
        ax.set_ylabel(f"mean {f.attrs.get('latency', 'clat_mean').split('_')[0]} (ms)")
        ax.grid(alpha=0.3)
        if g.empty:
            ax.text(0.5, 0.5, "no test with both IOPS and latency", ha="center", va="center", transform=ax.transAxes)
        else:
            ax.legend(fontsize=8, title="total_iodepth at each point", title_fontsize=7)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    tight_layout(fig)
    return fig

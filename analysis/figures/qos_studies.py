"""The figures of the two mClock-vs-WPQ studies, each drawn from the published values and from our runs.

:data:`FIGURES` lists every figure the seeds describe (part 1's Figures 1–23, part 2's Charts 1–15) with
a stable id naming the seed figure (``qos-part1-fig05``, ``qos-part2-chart04``).  :func:`draw` makes one
version: ``source="published"`` uses only the numbers the text states (from
:func:`analysis.published.qos.load_all`), drawn hatched and titled PUBLISHED; a bar the text gives only as
a change against another stated number ("27% lower than the 15K baseline") is drawn open and dashed,
labelled "implied" with that claim; bars it does not state at all are marked "not stated"; ``source="measured"`` draws the same layout from our runs
(:func:`analysis.stats.qos_derived.run_metrics`: bars are medians over the repeats, dots the runs).
Time-series figures exist only as measured (the seeds' curves are lost), labelled as such.  Figure labels
(``Figure.get_label()``) are ``<id>-published`` / ``<id>-measured``.  :func:`draw_plotly` gives the
interactive version of the bar figures for JupyterLab, from the same :func:`bar_data`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures import tight_layout
from analysis.published.qos import PART1_SEED, PART2_SEED, stated_values
from analysis.stats.reconcile import our_cell

BASE = [("wpq", ""), ("mclock_scheduler", "high_client_ops"), ("mclock_scheduler", "balanced"),
        ("mclock_scheduler", "high_recovery_ops")]
CLAT = ["clat_mean", "clat_p95", "clat_p99", "clat_p99.5", "clat_during"]
LABEL = {"clat_mean": "avg clat", "clat_p95": "p95", "clat_p99": "p99", "clat_p99.5": "p99.5",
         "clat_during": "clat (during op)"}


@dataclass(frozen=True)
class Spec:
    id: str                 # stable id, names the seed figure
    seed: str
    label: str              # "Figure 5" / "Chart 4" as in the published CSV
    kind: str               # iops | clat | rate_duration | clat_time | rate_time | overlay
    test: str               # published test
    title: str
    op: str = ""            # background operation for rate/duration/time figures
    cells: tuple = field(default_factory=lambda: tuple(BASE))   # (scheduler, profile) shown


def _p1(n: str, kind: str, test: str, title: str, op: str = "", cells=tuple(BASE)) -> Spec:
    return Spec(f"qos-part1-fig{n}", PART1_SEED, f"Figure {n.lstrip('0')}", kind, test, title, op, cells)


def _p2(n: int, kind: str, test: str, title: str, op: str = "", cells=tuple(BASE)) -> Spec:
    return Spec(f"qos-part2-chart{n:02d}", PART2_SEED, f"Chart {n}", kind, test, title, op, cells)


HCO, WPQ = ("mclock_scheduler", "high_client_ops"), ("wpq", "")
FULL = tuple(BASE) + (("mclock_scheduler", "custom"),)
TUNED = (WPQ, ("mclock_scheduler", "high_client_ops"), ("mclock_scheduler", "balanced"),
         ("mclock_scheduler", "high_recovery_ops"), ("mclock_scheduler", "custom"))

FIGURES: tuple[Spec, ...] = (
    _p1("01", "iops", "snaptrim", "average client throughput with snaptrim"),
    _p1("02", "clat", "snaptrim", "average client latency and percentiles with snaptrim"),
    _p1("03", "clat_time", "snaptrim", "client latency during snaptrim (runs over time)", "snaptrim"),
    _p1("04", "clat_time", "snaptrim", "client latency during snaptrim (runs over time)", "snaptrim"),
    _p1("05", "rate_duration", "snaptrim", "average snaptrim rate and duration", "snaptrim"),
    _p1("06", "rate_time", "snaptrim", "snaptrim rate over time", "snaptrim"),
    _p1("07", "rate_time", "snaptrim", "snaptrim rate over time", "snaptrim"),
    _p1("08", "overlay", "snaptrim", "WPQ: client latency and snaptrim rate", "snaptrim", (WPQ,)),
    _p1("08a", "overlay", "snaptrim", "high_client_ops: client latency and snaptrim rate", "snaptrim", (HCO,)),
    _p1("09", "iops", "snaptrim_recovery", "average client throughput with snaptrim + recovery"),
    _p1("10", "clat", "snaptrim_recovery", "average client latency and percentiles with snaptrim + recovery"),
    _p1("11", "clat_time", "snaptrim_recovery", "client latency during snaptrim + recovery", "snaptrim"),
    _p1("12", "rate_duration", "snaptrim_recovery", "snaptrim rate and duration with recovery", "snaptrim"),
    _p1("13", "rate_time", "snaptrim_recovery", "snaptrim rate over time with recovery", "snaptrim"),
    _p1("14", "rate_duration", "snaptrim_recovery", "recovery rate and time with snaptrim", "recovery"),
    _p1("15", "rate_time", "snaptrim_recovery", "recovery rate over time with snaptrim", "recovery"),
    _p1("16", "overlay", "snaptrim_recovery", "WPQ: client latency, snaptrim and recovery rate", "snaptrim+recovery", (WPQ,)),
    _p1("17", "overlay", "snaptrim_recovery", "high_client_ops: client latency, snaptrim and recovery rate",
        "snaptrim+recovery", (HCO,)),
    _p1("18", "overlay", "snaptrim_recovery", "balanced: client latency, snaptrim and recovery rate",
        "snaptrim+recovery", (("mclock_scheduler", "balanced"),)),
    _p1("19", "overlay", "snaptrim_recovery", "high_recovery_ops: client latency, snaptrim and recovery rate",
        "snaptrim+recovery", (("mclock_scheduler", "high_recovery_ops"),)),
    _p1("20", "iops", "scaled_recovery", "scaled cluster: average client throughput", cells=tuple(BASE[1:])),
    _p1("21", "clat", "scaled_recovery", "scaled cluster: average client and percentile latency", cells=tuple(BASE[1:])),
    _p1("22", "rate_duration", "scaled_recovery", "scaled cluster: average object recovery rate", "recovery",
        tuple(BASE[1:])),
    _p1("23", "rate_time", "scaled_recovery", "scaled cluster: recovery rate over time", "recovery", tuple(BASE[1:])),
    _p2(1, "iops", "scrub", "client throughput with deep scrub", cells=FULL),
    _p2(2, "clat", "scrub", "client latency and percentiles with deep scrub", cells=FULL),
    _p2(3, "clat_time", "scrub", "client latency during deep scrub", "scrub", FULL),
    _p2(4, "rate_duration", "scrub", "deep-scrub duration and average scrub rate", "scrub", FULL),
    _p2(5, "rate_time", "scrub", "scrub rate over time", "scrub", FULL),
    _p2(6, "rate_time", "scrub_custom", "custom profile: scrub rate over time", "scrub", FULL),
    _p2(7, "rate_duration", "scrub_maxscrubs10", "osd_max_scrubs 10: scrub duration", "scrub", (WPQ, HCO)),
    _p2(8, "iops", "scrub_maxscrubs10", "osd_max_scrubs 10: client throughput", cells=(WPQ, HCO)),
    _p2(9, "clat_time", "scrub_maxscrubs10", "osd_max_scrubs 10: client latency over time", "scrub", (WPQ, HCO)),
    _p2(10, "rate_duration", "scrub_cost20m", "osd_scrub_cost 20 MiB: scrub duration", "scrub", TUNED),
    _p2(11, "overlay", "scrub_cost20m", "osd_scrub_cost 20 MiB: client latency and scrub rate", "scrub", TUNED),
    _p2(12, "iops", "scrub_cost20m", "osd_scrub_cost 20 MiB: client throughput", cells=TUNED),
    _p2(13, "iops", "scrub_recovery", "client throughput with scrub + recovery", cells=FULL),
    _p2(14, "clat_time", "scrub_recovery", "client latency with scrub + recovery", "scrub", FULL),
    _p2(15, "rate_time", "scrub_recovery", "scrub and recovery rate over time", "scrub+recovery", FULL),
)
BY_ID = {f.id: f for f in FIGURES}
TIME_KINDS = ("clat_time", "rate_time", "overlay")


def _name(cell: tuple[str, str]) -> str:
    return cell[1] or "wpq"


def _stated(pub: pd.DataFrame, seed: str) -> dict[tuple[str, str, str, str], tuple[float, str]]:
    """(value, printed) of each quantity (``test, scheduler, profile, metric``) the seed states as
    measured (:func:`stated_values`: the most precise statement), indexed once per figure instead of
    filtering the table per bar."""
    s = stated_values(pub[(pub["seed"] == seed) & (pub["kind"] == "measured")])
    return {k[:4]: (float(k[4]), k[5]) for k in zip(s["test"], s["scheduler"], s["profile"], s["metric"],
                                                    s["value"], s["printed"])}


def _published(pub: pd.DataFrame, spec: Spec, test: str, cell: tuple[str, str], metric: str,
               stated: dict | None = None) -> float:
    hit = (stated if stated is not None else _stated(pub, spec.seed)).get((test, cell[0], cell[1], metric))
    return hit[0] if hit else np.nan


def _changes(pub: pd.DataFrame, seed: str) -> dict[tuple[str, str, str, str], list[tuple[float, tuple]]]:
    """The seed's stated changes (``derived`` rows, ``change_pct``) per quantity, in row order: (the change
    in %, the reference quantity)."""
    d = pub[(pub["seed"] == seed) & (pub["kind"] == "derived") & (pub["relation"] == "change_pct")
            ].dropna(subset=["value"])
    out: dict[tuple[str, str, str, str], list[tuple[float, tuple]]] = {}
    for r in d.itertuples(index=False):
        out.setdefault((r.test, r.scheduler, r.profile, r.metric), []).append(
            (r.value, (r.ref_test, r.ref_scheduler, r.ref_profile, r.ref_metric)))
    return out


def _implied(pub: pd.DataFrame, spec: Spec, test: str, cell: tuple[str, str], metric: str,
             stated: dict | None = None, changes: dict | None = None) -> tuple[float, str]:
    """A value the text does not state but implies: a stated change ("27% lower than the baseline")
    applied to its stated reference.  (NaN, "") when either is not stated."""
    stated = stated if stated is not None else _stated(pub, spec.seed)
    changes = changes if changes is not None else _changes(pub, spec.seed)
    for value, ref_key in changes.get((test, cell[0], cell[1], metric), []):
        ref = stated.get(ref_key)
        if ref:
            return ref[0] * (1 + value / 100), f"{value:+g}% of {ref[1]}"
    return np.nan, ""


def _measured(metrics: pd.DataFrame, test: str, cell: tuple[str, str], metric: str) -> pd.Series:
    scen, arm, _ = our_cell(test, *cell)
    m = metrics[(metrics["scenario"] == scen) & (metrics["arm"] == arm) & (metrics["metric"] == metric)]
    return m["value"].astype(float)


def bar_data(spec: Spec, metrics_shown: list[str], source: str, pub: pd.DataFrame | None,
             runs: pd.DataFrame | None, test: str) -> pd.DataFrame:
    """The values a bar figure shows, one row per bar or run: ``cell`` (wpq / profile), ``metric``,
    ``value``, ``how``: ``stated`` / ``implied: <claim>`` / ``not stated`` (published), ``median`` / ``run``
    / ``no run`` (measured).  Both renderers (matplotlib, plotly) draw from this table."""
    rows = []
    stated, changes = (_stated(pub, spec.seed), _changes(pub, spec.seed)) if source == "published" else (None, None)
    for metric in metrics_shown:
        for cell in spec.cells:
            name = _name(cell)
            if source == "published":
                v = _published(pub, spec, test, cell, metric, stated)
                iv, how = _implied(pub, spec, test, cell, metric, stated, changes) if not np.isfinite(v) else (np.nan, "")
                if np.isfinite(v):
                    rows.append((name, metric, v, "stated"))
                elif np.isfinite(iv):
                    rows.append((name, metric, iv, f"implied: {how}"))
                else:
                    rows.append((name, metric, np.nan, "not stated"))
            else:
                vals = _measured(runs, test, cell, metric)
                if len(vals):
                    rows.append((name, metric, float(vals.median()), "median"))
                    rows += [(name, metric, float(x), "run") for x in vals]
                else:
                    rows.append((name, metric, np.nan, "no run"))
    return pd.DataFrame(rows, columns=["cell", "metric", "value", "how"])


def _bar_panel(ax, spec: Spec, metrics_shown: list[str], source: str, pub: pd.DataFrame | None,
               runs: pd.DataFrame | None, test: str, ylabel: str) -> None:
    cells = [_name(c) for c in spec.cells]
    data = bar_data(spec, metrics_shown, source, pub, runs, test)
    width = 0.8 / len(metrics_shown)
    for j, metric in enumerate(metrics_shown):
        d = data[data["metric"] == metric]
        for i, cell in enumerate(cells):
            x = i + (j - (len(metrics_shown) - 1) / 2) * width
            for r in d[d["cell"] == cell].itertuples(index=False):
                if r.how == "stated":
                    ax.bar(x, r.value, width, color=f"C{j}", alpha=0.45, hatch="//", edgecolor=f"C{j}")
                    ax.annotate(f"{r.value:g}", (x, r.value), ha="center", va="bottom", fontsize=7)
                elif r.how.startswith("implied"):  # a stated change applied to its stated reference
                    ax.bar(x, r.value, width, fill=False, hatch="..", edgecolor=f"C{j}", ls="--")
                    ax.annotate("implied\n" + r.how.split(": ", 1)[1], (x, r.value), ha="center", va="bottom",
                                fontsize=6)
                elif r.how == "median":
                    ax.bar(x, r.value, width, color=f"C{j}", alpha=0.8)
                elif r.how == "run":
                    ax.plot([x], [r.value], "k.", ms=3)
                else:
                    ax.annotate(r.how.replace(" ", "\n"), (x, 0), ha="center", va="bottom", fontsize=6, color="0.5")
        ax.bar([np.nan], [np.nan], color=f"C{j}", label=LABEL.get(metric, metric.replace("_", " ")))
    ax.set_xticks(range(len(cells)), cells, rotation=30, ha="right")
    ax.set(ylabel=ylabel)
    if len(metrics_shown) > 1:
        ax.legend(fontsize="small")


def draw(spec: Spec | str, source: str, published: pd.DataFrame | None = None, runs: pd.DataFrame | None = None,
         rate_series: dict[str, pd.DataFrame] | None = None, clat_series: pd.DataFrame | None = None,
         campaign: str = "qos-2026") -> plt.Figure | None:
    """One version of a seed figure.  ``source`` ``published`` needs ``published`` (rows of the two
    seeds); ``measured`` needs ``runs`` (:func:`run_metrics`) and, for time-series kinds, ``clat_series``
    (:func:`client_series`, ms) and ``rate_series`` ({op: :func:`background_rate_series`}).  Returns
    None when that version cannot exist (a time series from published values; a measured version of the
    scaled cluster, which this machine cannot reproduce)."""
    spec = BY_ID[spec] if isinstance(spec, str) else spec
    if source == "published" and spec.kind in TIME_KINDS:
        return None
    if source == "measured" and our_cell(spec.test, "wpq", "")[0] is None:
        return None
    tag = ("PUBLISHED (values stated in the text)" if source == "published"
           else f"MEASURED ({campaign}, this VM)")
    if spec.kind in ("iops", "clat"):
        fig, ax = plt.subplots(figsize=(1.2 * len(spec.cells) + 3, 3.6))
        if spec.kind == "iops":
            _bar_panel(ax, spec, ["client_iops"], source, published, runs, spec.test, axis_labels(spec)[0])
            if source == "published":
                base = _published(published, spec, "baseline", ("", ""), "client_iops")
                if not np.isfinite(base):
                    b = published[(published["seed"] == spec.seed) & (published["test"] == "baseline")
                                  & (published["metric"] == "client_iops") & (published["kind"] == "measured")]
                    base = float(b["value"].dropna().iloc[0]) if len(b.dropna(subset=["value"])) else np.nan
            else:
                base = _measured(runs, "baseline", ("wpq", ""), "client_iops").median()
            if np.isfinite(base):
                ax.axhline(base, color="k", ls="--", lw=1, label=f"baseline {base:.0f}")
                ax.legend(fontsize="small")
        else:
            _bar_panel(ax, spec, CLAT, source, published, runs, spec.test, axis_labels(spec)[0])
    elif spec.kind == "rate_duration":
        fig, axes = plt.subplots(1, 2, figsize=(2.2 * len(spec.cells) + 3, 3.6))
        rate_label, duration_label = axis_labels(spec)
        _bar_panel(axes[0], spec, [f"{spec.op}_rate"], source, published, runs, spec.test, rate_label)
        _bar_panel(axes[1], spec, [f"{spec.op}_duration"], source, published, runs, spec.test, duration_label)
    else:
        scen_cells = [(c, *our_cell(spec.test, *c)[:2]) for c in spec.cells]
        ops = spec.op.split("+")
        if spec.kind == "clat_time":
            fig, ax = plt.subplots(figsize=(7, 3.6))
            for c, scen, arm in scen_cells:
                d = clat_series[(clat_series["scenario"] == scen) & (clat_series["arm"] == arm)]
                med = d.groupby("t_s")["value"].median()
                ax.plot(med.index, med.to_numpy(), label=_name(c))
            ax.set(xlabel="time since fio start (s)", ylabel="clat, median over repeats (ms)")
            ax.legend(fontsize="small")
        elif spec.kind == "rate_time":
            fig, axes = plt.subplots(1, len(ops), figsize=(7 * len(ops), 3.6), squeeze=False)
            for ax, op in zip(axes[0], ops):
                for c, scen, arm in scen_cells:
                    d = rate_series[op]
                    d = d[(d["scenario"] == scen) & (d["arm"] == arm)]
                    med = d.assign(t=d["t_s"].round(0)).groupby("t")["value"].median()
                    ax.plot(med.index, med.to_numpy(), label=_name(c))
                ax.set(xlabel="time since fio start (s)", ylabel=f"{op} rate, median over repeats (objects/s)", title=op)
                ax.legend(fontsize="small")
        else:  # overlay: one cell (or several) — clat on the left axis, rates on the right
            fig, axes = plt.subplots(1, len(scen_cells), figsize=(6.5 * len(scen_cells), 3.6), squeeze=False)
            for ax, (c, scen, arm) in zip(axes[0], scen_cells):
                d = clat_series[(clat_series["scenario"] == scen) & (clat_series["arm"] == arm)]
                med = d.groupby("t_s")["value"].median()
                ax.plot(med.index, med.to_numpy(), color="C0", label="clat")
                ax.set(xlabel="time since fio start (s)", ylabel="clat (ms)", title=_name(c))
                ax2 = ax.twinx()
                for k, op in enumerate(ops):
                    r = rate_series[op]
                    r = r[(r["scenario"] == scen) & (r["arm"] == arm)]
                    rm = r.assign(t=r["t_s"].round(0)).groupby("t")["value"].median()
                    ax2.plot(rm.index, rm.to_numpy(), color=f"C{k + 1}", ls="--", label=f"{op} rate")
                ax2.set_ylabel("background rate (objects/s)")
                ax2.legend(fontsize="small", loc="upper right")
    fig.suptitle(f"{spec.id} · {spec.label}: {spec.title}\n{tag}", fontsize=9)
    fig.set_label(f"{spec.id}-{source}")
    tight_layout(fig)
    return fig


def draw_plotly(spec: Spec | str, source: str, published: pd.DataFrame | None = None,
                runs: pd.DataFrame | None = None):
    """Interactive (plotly) version of a bar figure, from the same :func:`bar_data` as :func:`draw`
    (hover shows how each value was obtained).  Time-series kinds and impossible versions: None."""
    from ..speedups import skip_iri_grammar
    skip_iri_grammar()  # the caller's fig.show() imports nbformat's validator
    import plotly.graph_objects as go

    spec = BY_ID[spec] if isinstance(spec, str) else spec
    if spec.kind in TIME_KINDS or (source == "measured" and our_cell(spec.test, "wpq", "")[0] is None):
        return None
    shown = {"iops": ["client_iops"], "clat": CLAT}.get(spec.kind, [f"{spec.op}_rate", f"{spec.op}_duration"])
    from plotly.subplots import make_subplots

    data = bar_data(spec, shown, source, published, runs, spec.test)
    panels = spec.kind == "rate_duration"  # rate and duration have different units: one panel each
    fig = make_subplots(rows=1, cols=2, subplot_titles=shown) if panels else go.Figure()
    for k, metric in enumerate(shown):
        where = dict(row=1, col=k + 1) if panels else {}
        d = data[(data["metric"] == metric) & ~data["how"].isin(["run"])]
        fig.add_trace(go.Bar(x=d["cell"], y=d["value"], name=LABEL.get(metric, metric), hovertext=d["how"],
                             marker_pattern_shape="/" if source == "published" else "",
                             opacity=0.6 if source == "published" else 0.9), **where)
        r = data[(data["metric"] == metric) & (data["how"] == "run")]
        if len(r):
            fig.add_trace(go.Scatter(x=r["cell"], y=r["value"], mode="markers", name=f"{LABEL.get(metric, metric)}: runs",
                                     marker=dict(color="black", size=5)), **where)
    tag = "PUBLISHED (values stated in the text)" if source == "published" else "MEASURED (this VM)"
    for k, label in enumerate(axis_labels(spec)):  # the static figure's y labels, units included
        fig.update_yaxes(title_text=label, **(dict(row=1, col=k + 1) if panels else {}))
    fig.update_xaxes(title_text="scheduler / profile")
    # the title wraps at the figure's width (a long one was cut); the figure follows its container's width
    fig.update_layout(barmode="group", title=dict(text=f"{spec.id} · {spec.label}:<br>{spec.title}<br><sub>{tag}</sub>",
                                                  font=dict(size=14)),
                      height=440, autosize=True, margin=dict(t=100), meta={"id": f"{spec.id}-{source}"})
    return fig


def axis_labels(spec: Spec) -> list[str]:
    """The y-axis label of each panel of a bar figure, with its unit (as :func:`draw` labels them)."""
    if spec.kind == "iops":
        return ["average client IOPS (1/s)"]
    if spec.kind == "clat":
        return ["clat (ms)"]
    unit = "MiB/s" if spec.op == "scrub" else "objects/s"
    return [f"{spec.op} rate ({unit})", f"{spec.op} duration (s)"]

"""Every quantity axis of the static figures names its unit in parentheses (issue 27: "units on every
axis").  Each figure function of ``analysis.figures`` is drawn on small hand-made frames (and the seed
figures on the shipped published values); every visible numeric axis must carry a label with a unit, or
share its axis with a sibling that does.  Categorical axes (text tick labels) and axes without ticks (a
colour bar's short side, a table figure) are skipped."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.category import StrCategoryFormatter  # noqa: E402
from matplotlib.ticker import FixedFormatter, NullLocator  # noqa: E402

#: what may stand in a label's parentheses (its first word, or one of its comma-separated parts)
UNITS = {"%", "ms", "µs", "s", "ns", "1/s", "MiB/s", "B/s", "GiB", "MiB", "KiB", "B", "objects/s", "ratio",
         "fraction", "runs", "ops"}
#: axes that give a position, not a quantity (an index has no unit)
ORDINAL = {"run, in execution order", "round (repeat)", "round"}


def has_unit(label: str) -> bool:
    for group in re.findall(r"\(([^()]*)\)", label):
        for part in group.split(","):
            words = part.split()
            if words and words[0] in UNITS:
                return True
    return False


_NUMBER = re.compile(r"[−+-]?[\d.,]+(?:e[−+-]?\d+)?%?")


def _categorical(axis) -> bool:
    """Text tick labels (names of arms, tests, rows): not a quantity.  Numbers and mathtext (log axes) are."""
    if isinstance(axis.get_major_formatter(), (FixedFormatter, StrCategoryFormatter)):
        return True
    texts = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    return any(not (x.startswith("$") or _NUMBER.fullmatch(x)) for x in texts)


def _no_ticks(axis) -> bool:
    return isinstance(axis.get_major_locator(), NullLocator) or not any(
        t.get_visible() and t.label1.get_visible() or t.label2.get_visible() for t in axis.get_major_ticks())


def unit_problems(fig) -> list[str]:
    """Each visible numeric axis of ``fig`` whose label lacks a unit (or that has no label while no axis
    it is shared with has one): ``"<figure id> <x|y>: <label>"``."""
    out = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for name, axis, shared in (("x", ax.xaxis, ax.get_shared_x_axes()), ("y", ax.yaxis, ax.get_shared_y_axes())):
            if _categorical(axis) or _no_ticks(axis):
                continue
            label = axis.get_label_text()
            if not label:
                sib = [s for s in shared.get_siblings(ax) if s is not ax]
                if any(has_unit((s.xaxis if name == "x" else s.yaxis).get_label_text()) for s in sib):
                    continue
                out.append(f"{fig.get_label()} {name}: (no label)")
            elif label not in ORDINAL and not has_unit(label):
                out.append(f"{fig.get_label()} {name}: {label}")
    return out


def test_the_checker_sees_a_missing_unit_and_skips_categorical_axes():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2], [3, 4])
    a.set(xlabel="time (s)", ylabel="latency")
    b.bar(["wpq", "mclock"], [1, 2])
    b.set(ylabel="throughput (MiB/s)", xlabel="arm")
    fig.set_label("t")
    fig.canvas.draw()
    assert unit_problems(fig) == ["t y: latency"]
    assert has_unit("change of B against A (%), 95 % CI") and has_unit("write cache size (KiB, LRU)")
    assert not has_unit("ops queued per OSD (median)") and not has_unit("MiB/s")
    plt.close(fig)


def _figures():
    """(name, figure) for every figure function, drawn on small frames."""
    from analysis.figures import compare, consistency, iosched, qos, versions, workload
    rng = np.random.default_rng(0)
    yield "compare.forest", compare.forest(pd.DataFrame({
        "test": ["Welch t", "Welch t"], "metric": ["iops", "clat_mean"], "ddir": ["read", "read"],
        "verdict": ["better", "~"], "effect_pct": [5.0, -1.0], "effect_lo": [1.0, -4.0], "effect_hi": [9.0, 2.0]}))
    rounds = pd.DataFrame({"test": ["a"] * 12, "round": np.repeat([1, 2, 3], 4), "value": rng.normal(100, 5, 12)})
    yield "consistency.round_distributions", consistency.round_distributions(rounds, "write IOPS (1/s)")
    yield "consistency.diff_ratio_heatmap", consistency.diff_ratio_heatmap(
        pd.DataFrame({"t1": [0.01, -0.2], "t2": [0.05, 0.0]}, index=["R1", "R2"]))
    yield "consistency.repeats_needed_curve", consistency.repeats_needed_curve(pd.DataFrame({
        "label": ["x"] * 3, "rel_diff": [0.05, 0.1, 0.2], "n_per_arm": [40.0, 11.0, 4.0], "group": ["ours"] * 3}),
        0.8, 0.05)
    drift = pd.DataFrame({"test": ["a"] * 3 + ["b"] * 3, "round": [1, 2, 3] * 2,
                          "value": [90, 100, 110, 900, 1000, 1100], "order": [0, 2, 4, 1, 3, 5]})
    yield "consistency.order_drift", consistency.order_drift({"one": drift})
    io_runs = pd.DataFrame([("c", "t", "write", "4k", 16, s, r, x) for s, xs in (("bfq", [10, 11, 12]),
                                                                                ("none", [20, 21, 22]))
                            for r, x in enumerate(xs, start=1)],
                           columns=["campaign", "target", "op", "bs", "qd", "io_scheduler", "repeat", "value"])
    yield "iosched.scatters", iosched.scatters(io_runs, "c", "write")
    runs = pd.DataFrame({"scenario": ["baseline"] * 4 + ["scrub"] * 4, "arm": ["wpq", "wpq", "balanced", "balanced"] * 2,
                         "repeat": [1, 2] * 4, "iops": [900.0, 910, 800, 812, 700, 720, 650, 640],
                         "scrub_duration": [np.nan] * 4 + [20.0, 22, 30, 28]})
    yield "qos.by_arm", qos.by_arm(runs, "iops", "client IOPS (1/s)", qos.CLIENT_IOPS)
    yield "qos.background_durations", qos.background_durations(runs)
    facts = pd.DataFrame({"campaign": ["qos-1", "qos-1", "pilot"], "scenario": ["scrub"] * 3, "arm": ["wpq", "balanced", "wpq"],
                          "repeat": [1, 1, 1], "op": ["scrub"] * 3, "cpu_busy": [0.9, 0.95, 0.3],
                          "queue_per_osd": [np.nan, np.nan, 30.0], "ended_in_client": [True, False, True],
                          "op_rate": [50.0, 40.0, 60.0], "client_iops": [800.0, 700, 900],
                          "client_iops_pre": [1000.0, 1000, 1000]})
    yield "qos.regime", qos.regime(facts)
    yield "qos.op_rate", qos.op_rate(facts)
    yield "qos.client_drop", qos.client_drop(facts)
    contrast = pd.DataFrame({"metric": ["op_rate"] * 2, "scenario": ["scrub"] * 2, "arm": ["wpq", "balanced"],
                             "ratio": [1.2, 0.9], "lo": [1.0, np.nan], "hi": [1.4, np.nan], "p": [0.01, np.nan]})
    yield "versions.release_forest", versions.release_forest(contrast, "op_rate", "background operation rate")
    terms = pd.DataFrame({"metric": ["op_rate"] * 2, "scenario": ["scrub"] * 2, "arm": ["balanced", "custom"],
                          "ref": ["wpq"] * 2, "effect_pacific": [1.1, 0.8], "effect_reef": [1.3, 0.9], "p": [0.01, 0.4]})
    yield "versions.arm_effects", versions.arm_effects(terms, "op_rate", "op rate vs WPQ (ratio)")
    streams = pd.DataFrame({"source": ["tr"], "dev": ["8,0"], "devno": ["8,0"], "role": ["data"], "t_end_ns": [5e8]})
    ann = pd.DataFrame({"source": "tr", "dev": "8,0", "ddir": ["read", "write", "write"], "issue_ns": [1e6, 2e6, 3e6],
                        "sector": [8, 16, 4096], "nbytes": [4096, 8192, 4096]})
    yield "workload.io_pattern", workload.io_pattern(ann, streams, "t", "workload-io-pattern-x")
    rates = pd.DataFrame({"source": "tr", "dev": "8,0", "ddir": ["write"] * 3, "t_s": [0.0, 0.1, 0.2],
                          "iops": [10.0, 0, 5], "mib_s": [1.0, 0, 0.5]})
    yield "workload.throughput_iops", workload.throughput_iops(rates, streams, "t", "workload-throughput-iops-x")
    prof = pd.DataFrame({"strict_ratio": [0.2, 0.5], "near_ratio": [0.4, 0.6]}, index=["a", "b"])
    yield "workload.sequentiality", workload.sequentiality(prof)
    yield "workload.stack_distance", workload.stack_distance(pd.DataFrame({
        "stream": ["s"] * 3, "cache_blocks": [1, 10, 100], "hit_share": [0.1, 0.5, 0.9]}), "stream", 4.0)
    yield "workload.idle_time", workload.idle_time(pd.DataFrame({"n1": [0.5], "n2": [0.6]}, index=["r"]),
                                                   pd.DataFrame({"bfq": [0.3], "none": [0.4]}, index=["r"]))
    yield "workload.bottleneck", workload.bottleneck(pd.DataFrame({"label": ["run 1"], "cpu": [0.5], "memory": [0.2],
                                                                   "disk": [0.95]}), "label", 0.9, 0.5)
    yield "workload.busy_check", workload.busy_check(pd.DataFrame({"busy": [0.2, 0.8], "util": [0.25, 0.7],
                                                                   "scenario": ["a", "b"]}), "busy", "util", "scenario")
    from analysis.figures import rgw
    rgw_runs = pd.DataFrame({"arm": ["shards-1", "shards-1", "shards-64", "rados"], "repeat": [1, 2, 1, 1],
                             "put_mib_s": [6.5, 7.0, 8.7, 9.8]})
    yield "rgw.put_by_arm", rgw.put_by_arm(rgw_runs)
    yield "rgw.share_of_rados", rgw.share_of_rados(pd.DataFrame({
        "diary arm": ["1bucket_0shards"], "our arm": ["shards-1"], "diary / rados": [0.38], "ours / rados": [0.72]}))


def _seed_figures():
    """Every seed figure (notebook 30) in the versions it has: published from the shipped values; measured
    from a frame with three runs of every metric in every cell, and median time series for the time kinds."""
    from analysis.published import qos as pq
    from analysis.figures import qos_studies as qf
    from analysis.stats.reconcile import our_cell
    pub = pd.concat([pq.load(pq.FILES[s]) for s in (pq.PART1_SEED, pq.PART2_SEED)], ignore_index=True)
    metrics = ["client_iops", *qf.CLAT, "snaptrim_rate", "snaptrim_duration", "recovery_rate", "recovery_duration",
               "scrub_rate", "scrub_duration"]
    cells = {our_cell(f.test, *c)[:2] for f in qf.FIGURES for c in f.cells} | {our_cell("baseline", "wpq", "")[:2]}
    cells = {c for c in cells if c[0] is not None}
    runs = pd.DataFrame([(s, a, r, m, 10.0 + r) for s, a in cells for r in (1, 2, 3) for m in metrics],
                        columns=["scenario", "arm", "repeat", "metric", "value"])
    series = pd.DataFrame([(s, a, t, 1.0 + t) for s, a in cells for t in (0.0, 1.0, 2.0)],
                          columns=["scenario", "arm", "t_s", "value"])
    rate = {op: series for op in ("snaptrim", "recovery", "scrub")}
    for spec in qf.FIGURES:
        for source in ("published", "measured"):
            fig = qf.draw(spec, source, published=pub, runs=runs, rate_series=rate, clat_series=series)
            if fig is not None:
                yield f"qos_studies.draw {spec.id} {source}", fig


def test_every_quantity_axis_names_its_unit():
    problems, drawn = [], 0
    from itertools import chain
    for name, fig in chain(_figures(), _seed_figures()):  # one figure open at a time
        fig.canvas.draw()  # tick labels and formatters as saved
        problems += [f"{name}: {p}" for p in unit_problems(fig)]
        drawn += 1
        plt.close(fig)
    assert drawn >= 20 + 39  # every function above, and the seed figures' versions
    assert problems == []


@pytest.mark.parametrize("path, label", [("notebooks/10-consistency.ipynb", "write IOPS (1/s)"),
                                         ("notebooks/32-qos-campaign.ipynb", "client IOPS (1/s)")])
def test_labels_the_notebooks_pass_carry_units(path, label):
    """Two figure functions take their axis label from the notebook: those labels carry units too."""
    import nbformat

    from conftest import ROOT
    src = "\n".join(c.source for c in nbformat.read(ROOT / path, as_version=4).cells)
    assert f'"{label}"' in src and has_unit(label)

"""``analysis.stats.history`` at scale (issue 52): 1,000 points × 100 cells, 3 runs a point, analysed in
≤ 10 s.  The input is **synthetic, made from real runs**: each cell is a copy of one of the shipped
histories (``data/raw/history/history-2026``, read once) stretched to ``--points`` points by drawing, for
each new point, a real point of the same history at the same relative position (so each copy keeps the
real changes at the same fraction of its length) and that point's real repeats; a cell's copy is scaled by
a per-cell factor (so the cells differ).  Prints a Markdown table (and writes it to ``--out``): the
build (runs → points), the detection (E-divisive + t test + filter), the changes found, each the median of
``--repeat`` runs in-process (``time.perf_counter``).

There is no reference tool to race in the same run: apache-otava and MongoDB's signal-processing-algorithms
cannot be installed beside numpy 2 (docs/history.md); the figure is against the issue's target.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.ingest.anysource import load  # noqa: E402
from analysis.ingest.manifest import atomic_write_text  # noqa: E402
from analysis.stats import history as hs  # noqa: E402


def synthetic(real: pd.DataFrame, points: int, cells: int, seed: int = 0) -> pd.DataFrame:
    """Summary-like rows (run, point, started, value …) of ``cells`` copies of the real histories."""
    rng = np.random.default_rng(seed)
    real = real[real["metric"] == "iops"]
    names = sorted(real["history"].unique())
    out = []
    for c in range(cells):
        r = real[real["history"] == names[c % len(names)]]
        real_pts = np.sort(r["point"].astype(int).unique())
        pick = real_pts[np.floor(np.arange(points) / points * len(real_pts)).astype(int)]
        by_point = {p: g["value"].to_numpy(float) for p, g in r.groupby(r["point"].astype(int))}
        vals = np.concatenate([by_point[p] for p in pick]) * rng.uniform(0.5, 2.0)
        reps = np.concatenate([np.arange(len(by_point[p])) for p in pick])
        pts = np.repeat(np.arange(points), [len(by_point[p]) for p in pick])
        out.append(pd.DataFrame({
            "kind": "fio-json", "ddir": "read", "metric": "iops", "unit": "1/s", "value": vals,
            "history": f"copy-{c:03d}-of-{names[c % len(names)]}", "point": pts.astype(str),
            "run": [f"copy-{c:03d}/p-{p:04d}/rep-{k}" for p, k in zip(pts, reps)],
            "started": pd.to_datetime(1.7e9 + pts * 86400.0 + reps, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%S%z"),
            "source": "synthetic", "origin": "synthetic (copies of measured runs)"}))
    return pd.concat(out, ignore_index=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--cells", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    real = load(ROOT / "data/raw/history/history-2026").summary
    s = synthetic(real, a.points, a.cells)
    tb, td, t_all = [], [], []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        h = hs.build(s, metrics=["iops"])
        t1 = time.perf_counter()
        ch = hs.detect(h)
        t2 = time.perf_counter()
        tb.append(t1 - t0)
        td.append(t2 - t1)
        t_all.append(t2 - t0)
    total = statistics.median(t_all)
    lines = [
        f"## history: {a.points:,} points × {a.cells} cells ({len(s):,} runs, synthetic copies of the measured "
        f"history-2026 runs) — {time.strftime('%Y-%m-%d')}, {platform.node()}, {platform.machine()}",
        "",
        "| step | median of %d (s) |" % a.repeat, "|---|---|",
        f"| build (runs → points) | {statistics.median(tb):.2f} |",
        f"| detect (E-divisive + t test + filter) | {statistics.median(td):.2f} |",
        f"| total | {total:.2f} ({'meets' if total <= 10 else 'MISSES'} the ≤ 10 s target) |",
        "", f"changes found: {len(ch)} in {ch['series'].nunique() if len(ch) else 0} cells", ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        atomic_write_text(a.out, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

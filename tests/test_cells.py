"""analysis.stats.cells on hand-worked numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.stats.cells import cell_spread, cell_values, scheduler_effect


def _summary() -> pd.DataFrame:
    rows = []
    for sched, vals in (("none", [1.0, 2.0, 3.0]), ("bfq", [4.0, 5.0, 6.0])):
        for rep, v in enumerate(vals, start=1):
            rows.append(("c", "fio-raw-write-4k-qd16", sched, str(rep), "fio-json", "job", "write", "bw", v))
            rows.append(("c", "fio-raw-write-4k-qd16", sched, str(rep), "fio-json", "job", "write", "iops", 9.0))
            rows.append(("other", "fio-raw-write-4k-qd16", sched, str(rep), "fio-json", "job", "write", "bw", 99.0))
    # a second job in one run is summed into that run's value
    rows.append(("c", "fio-raw-write-4k-qd16", "bfq", "3", "fio-json", "job2", "write", "bw", 0.5))
    return pd.DataFrame(rows, columns=["campaign", "scenario", "io_scheduler", "repeat", "kind", "job", "ddir",
                                       "metric", "value"])


def test_cell_values_and_spread():
    v = cell_values(_summary(), "c", "fio-json", "bw", ddir="write")
    assert len(v) == 6 and set(v["campaign"]) == {"c"}
    assert v.loc[(v["io_scheduler"] == "bfq") & (v["repeat"] == 3), "value"].item() == 6.5
    sp = cell_spread(v[v["io_scheduler"] == "none"])
    row = sp.loc[("fio-raw-write-4k-qd16", "write", "none")]
    # 1, 2, 3: median 2, mean 2, sample std 1 → CV 0.5, (3 − 1) / 2 = 1
    assert (row["n"], row["median"], row["mean"], row["std"], row["cv"], row["range_rel"]) == (3, 2, 2, 1, 0.5, 1.0)


def test_scheduler_effect_kruskal_by_hand():
    v = cell_values(_summary(), "c", "fio-json", "bw")
    v.loc[(v["io_scheduler"] == "bfq") & (v["repeat"] == 3), "value"] = 6.0
    eff = scheduler_effect(v).iloc[0]
    # ranks 1..6, rank sums 6 and 15: H = 12/(6·7)·(6²/3 + 15²/3) − 3·7 = 27/7; p = P(χ²₁ > 27/7)
    assert eff["kw_h"] == pytest.approx(27 / 7)
    assert eff["kw_p"] == pytest.approx(0.04953, abs=2e-5)
    assert (eff["best"], eff["worst"], eff["best_over_worst"], eff["min_n"]) == ("bfq", "none", 2.5, 3)


def test_scheduler_effect_needs_enough_repeats_and_spread():
    v = cell_values(_summary(), "c", "fio-json", "iops")  # all equal: no test
    assert np.isnan(scheduler_effect(v).iloc[0]["kw_p"])
    v = cell_values(_summary(), "c", "fio-json", "bw")
    assert np.isnan(scheduler_effect(v[v["repeat"] < 3]).iloc[0]["kw_h"])  # 2 per group < min_n 3

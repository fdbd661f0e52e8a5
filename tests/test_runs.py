"""analysis.stats.runs.run_values: per-run values and execution order from a hand-made summary table."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.stats.runs import means_table, run_values


def summary(rows):
    cols = ["campaign", "kind", "metric", "ddir", "job", "scenario", "io_scheduler", "repeat", "value", "started", "plan_order"]
    return pd.DataFrame(rows, columns=cols).astype({"repeat": str, "plan_order": object})


def test_run_values_sum_jobs_drop_unused_directions_and_take_start_time_as_order():
    s = summary([
        ("c", "fio-json", "bw", "read", "j1", "w", "none", 1, 100.0, "2026-11-22T17:00:00+0000", None),
        ("c", "fio-json", "bw", "read", "j2", "w", "none", 1, 50.0, "2026-11-22T17:00:00+0000", None),
        ("c", "fio-json", "bw", "write", "j1", "w", "none", 1, 0.0, "2026-11-22T17:00:00+0000", None),
        ("c", "fio-json", "bw", "read", "j1", "w", "none", 2, 120.0, "2026-11-22T17:01:40+0000", None),
        ("c", "fio-json", "bw", "write", "j1", "w", "none", 2, 0.0, "2026-11-22T17:01:40+0000", None),
        ("c", "fio-json", "iops", "read", "j1", "w", "none", 2, 7.0, "2026-11-22T17:01:40+0000", None),
        ("other", "fio-json", "bw", "read", "j1", "w", "none", 1, 9.0, "2026-11-22T17:00:00+0000", None),
    ])
    v = run_values(s, "c", "fio-json", "bw", ["scenario", "io_scheduler"])
    assert v["test"].tolist() == ["w/none", "w/none"] and v["round"].tolist() == [1, 2]
    assert v["value"].tolist() == [150.0, 120.0]
    t0 = pd.Timestamp("2026-11-22T17:00:00Z").timestamp()
    assert v["order"].tolist() == [t0, t0 + 100]
    assert means_table(v).loc[2, "w/none"] == 120.0


def test_run_values_fall_back_to_plan_order_and_refuse_mixed_directions():
    s = summary([
        ("c", "rados-bench", "bw", "write", "", "r", "wpq", 1, 10.0, None, "5"),
        ("c", "rados-bench", "bw", "read", "", "r", "wpq", 1, 30.0, None, "5"),
        ("c", "rados-bench", "bw", "write", "", "r", "wpq", 2, 11.0, None, "17"),
        ("c", "rados-bench", "bw", "read", "", "r", "wpq", 2, 33.0, None, "17"),
    ])
    with pytest.raises(ValueError, match="several directions"):
        run_values(s, "c", "rados-bench", "bw", ["scenario", "io_scheduler"])
    v = run_values(s, "c", "rados-bench", "bw", ["scenario", "ddir", "io_scheduler"])
    assert v.set_index(["test", "round"])["order"].to_dict() == {
        ("r/read/wpq", 1): 5.0, ("r/read/wpq", 2): 17.0, ("r/write/wpq", 1): 5.0, ("r/write/wpq", 2): 17.0}
    w = run_values(s, "c", "rados-bench", "bw", ["scenario", "io_scheduler"], ddir="write")
    assert w["value"].tolist() == [10.0, 11.0]

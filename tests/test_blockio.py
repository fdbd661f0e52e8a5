"""analysis.stats.blockio on small hand-made traces whose answers are worked out by hand below."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.stats import blockio as bio

KIB4 = 4096


def _req(rows: list[tuple], source: str = "t", dev: int = 1) -> pd.DataFrame:
    """rows: (sector, nbytes, ddir, d_ns, c_ns); rwbs from the direction, F… for zero bytes."""
    d = pd.DataFrame(rows, columns=["sector", "nbytes", "ddir", "d_ns", "c_ns"])
    d["rwbs"] = np.where(d["nbytes"] == 0, "FN", np.where(d["ddir"] == "write", "WS", "R"))
    d["q_ns"] = d["d_ns"]
    return d.assign(source=source, dev=dev)[["source", "dev", "sector", "nbytes", "rwbs", "ddir", "q_ns",
                                             "d_ns", "c_ns"]]


# --- sequentiality and issue order -----------------------------------------------------------------

def _seq_trace() -> pd.DataFrame:
    # writes of 8 sectors (4 KiB); "pre" has no D: dispatched before the trace, so it comes first.
    rows = [
        (28, KIB4, "write", 50.0, 55.0),      # r4
        (0, KIB4, "write", 10.0, 12.0),       # r0
        (100, KIB4, "write", np.nan, 5.0),    # pre
        (1000, KIB4, "write", 40.0, 45.0),    # r3
        (8, KIB4, "write", 20.0, 60.0),       # r1 (completes late: order is by dispatch)
        (20, KIB4, "write", 30.0, 35.0),      # r2
        (16, KIB4, "read", 25.0, 26.0),       # the only read: no predecessor in its direction
        (0, 0, "read", 26.0, 27.0),           # a flush: not a data request
    ]
    return _req(rows)


def test_issue_order_dispatch_time_with_pre_trace_requests_first():
    o = bio.issue_order(_seq_trace()[lambda d: d["nbytes"] > 0])
    w = o[o["ddir"] == "write"]
    assert w["sector"].tolist() == [100, 0, 8, 20, 1000, 28]
    assert w["issue_ns"].iloc[0] == -1


def test_strict_and_near_sequential_by_hand():
    a = bio.annotate(_seq_trace(), near_sectors=8, near_window=8)
    assert len(a) == 7  # the flush is left out
    w = a[a["ddir"] == "write"].set_index("sector")
    # gaps to the previous write's end: r0 0 − 108 = −108; r1 8 − 8 = 0; r2 20 − 16 = 4; r3 1000 − 28 = 972;
    # r4 28 − 1008 = −980
    assert w.loc[[0, 8, 20, 1000, 28], "gap"].tolist() == [-108, 0, 4, 972, -980]
    assert w.loc[[0, 8, 20, 1000, 28], "strict"].tolist() == [False, True, False, False, False]
    # near (±8 sectors of any of the last 8 ends): r1 (0), r2 (4), r4 (0 against r2's end 28); r0's nearest
    # end is pre's 108 (−108), r3's is r2's 28 (972)
    assert w.loc[[0, 8, 20, 1000, 28], "near"].tolist() == [False, True, True, False, True]
    assert w.loc[28, "near_gap"] == 0
    assert not w.loc[100, "has_prev"] and pd.isna(w.loc[100, "gap"])
    r = a[a["ddir"] == "read"]
    assert not r["has_prev"].any()
    # only the immediate predecessor (window 1): r4 is no longer near
    a1 = bio.annotate(_seq_trace(), near_sectors=8, near_window=1).set_index("sector")
    assert a1.loc[28, "near"] == False  # noqa: E712
    # a tighter tolerance (±2 sectors) drops r2 (gap 4)
    a2 = bio.annotate(_seq_trace(), near_sectors=2, near_window=8).set_index("sector")
    assert a2.loc[20, "near"] == False  # noqa: E712


def test_profile_ratios_by_hand():
    req = _seq_trace()
    win = pd.DataFrame({"source": ["t"], "dev": [1], "t_start_ns": [0.0], "t_end_ns": [100.0]})
    prof, *_ = bio.characterize(req, win, ["source", "dev"], near_sectors=8, near_window=8, min_idle_ns=0)
    p = prof.iloc[0]
    # 7 data requests (6 writes, 1 read), 1 flush; with a predecessor: the 5 writes after "pre";
    # strict: r1 → 1/5; near: r1, r2, r4 → 3/5
    assert (p["requests"], p["flushes"]) == (7, 1)
    assert p["read_share"] == pytest.approx(1 / 7)
    assert p["strict_ratio"] == pytest.approx(0.2) and p["near_ratio"] == pytest.approx(0.6)
    # every request is 4 KiB: mode 4 KiB, share 1; 7 requests over 100 ns = 7e7 /s; 28 KiB / 1e-7 s
    assert (p["size_mode_kib"], p["size_mode_kib_share"]) == (4.0, 1.0)
    assert p["iops"] == pytest.approx(7e7)
    assert p["mib_s"] == pytest.approx(28 * 1024 / 2**20 / 1e-7)
    # gaps of the 5 writes with a predecessor: −108, 0, 4, 972, −980 — all once: the mode is the smallest
    assert (p["gap_mode"], p["gap_mode_share"]) == (-980, 0.2)


# --- write update and stack distance ---------------------------------------------------------------

def _write_trace() -> pd.DataFrame:
    # blocks of 8 sectors; issue order w0..w4
    rows = [
        (0, 2 * KIB4, "write", 10.0, 11.0),    # w0: blocks 0, 1
        (8, 2 * KIB4, "write", 20.0, 21.0),    # w1: blocks 1, 2 — block 1 again: a partial update
        (800, KIB4, "write", 30.0, 31.0),      # w2: block 100
        (0, KIB4, "write", 40.0, 41.0),        # w3: block 0 — a full update
        (8, KIB4, "write", 50.0, 51.0),        # w4: block 1 — a full update
        (0, KIB4, "read", 55.0, 56.0),         # a read of block 0: not a write
    ]
    other = _req([(0, KIB4, "write", 5.0, 6.0)], dev=2)  # another device: its block 0 is a different block
    return pd.concat([_req(rows), other], ignore_index=True)


def test_write_update_ratio_by_hand():
    a = bio.annotate(_write_trace())
    w = a[(a["dev"] == 1) & (a["ddir"] == "write")]
    assert w["blocks"].tolist() == [2, 2, 1, 1, 1]
    assert w["updated_blocks"].tolist() == [0, 1, 0, 1, 1]
    assert w["updated"].tolist() == [False, True, False, True, True]
    assert w["full_update"].tolist() == [False, False, False, True, True]
    assert not a.loc[a["dev"] == 2, "updated"].any()
    win = pd.DataFrame({"source": "t", "dev": [1, 2], "t_start_ns": 0.0, "t_end_ns": 100.0})
    prof, *_ = bio.characterize(_write_trace(), win, ["source", "dev"])
    p = prof.loc[("t", 1)]
    # 3 of 5 writes updated; 2 of those 3 fully; 3 of 7 written blocks; 3 blocks over 3 requests = 4 KiB
    assert p["update_ratio_req"] == pytest.approx(0.6)
    assert p["full_update_share"] == pytest.approx(2 / 3)
    assert p["update_ratio_blocks"] == pytest.approx(3 / 7)
    assert p["overlap_kib_mean"] == pytest.approx(4.0)
    assert prof.loc[("t", 2), "update_ratio_req"] == 0


def test_write_update_in_sectors():
    # with 1-sector blocks, w1 (sectors 8–23) rewrites sectors 8–15 of w0 (0–15): 8 of its 16 sectors
    a = bio.annotate(_write_trace(), block_sectors=1)
    w = a[(a["dev"] == 1) & (a["ddir"] == "write")]
    assert w["updated_blocks"].tolist() == [0, 8, 0, 8, 8]


def test_stack_distance_by_hand():
    # block accesses: w0 → 0, 1; w1 → 1, 2; w2 → 100; w3 → 0; w4 → 1 (positions 0–6)
    # w1's block 1 (pos 2; previous write pos 1): nothing in between → 0
    # w3's block 0 (pos 5; previous pos 0): blocks 1, 1, 2, 100 between → 3 distinct
    # w4's block 1 (pos 6; previous pos 2): blocks 2, 100, 0 between → 3
    d = bio.stack_distances(bio.annotate(_write_trace()))
    assert d.sort_values("block", kind="stable")[["block", "distance"]].values.tolist() == [[0, 3], [1, 0], [1, 3]]
    assert set(d["dev"]) == {1}


def test_reuse_distances_small_sequence():
    # a b c b a: b at 3 (prev 1) has {c} between → 1; a at 4 (prev 0) has {b, c} (b twice) → 2
    j, dist = bio.reuse_distances(np.array([0, 1, 2, 1, 0]))
    assert j.tolist() == [3, 4] and dist.tolist() == [1, 2]
    # a a a: each repeat directly after the previous → 0, 0
    j, dist = bio.reuse_distances(np.array([5, 5, 5]))
    assert j.tolist() == [1, 2] and dist.tolist() == [0, 0]


def test_reuse_distances_against_a_plain_loop():
    rng = np.random.default_rng(7)
    for n, k in ((1, 1), (2, 1), (37, 5), (300, 40), (513, 3)):
        key = rng.integers(0, k, n)
        expect_j, expect_d = [], []
        last: dict[int, int] = {}
        for j, x in enumerate(key.tolist()):  # reference: distinct keys strictly between, by brute force
            if x in last:
                expect_j.append(j)
                expect_d.append(len(set(key[last[x] + 1:j].tolist())))
            last[x] = j
        j, d = bio.reuse_distances(key)
        assert j.tolist() == expect_j and d.tolist() == expect_d


def test_hit_curve_by_hand():
    d = pd.DataFrame({"g": "x", "distance": [0, 3, 3, 10]})
    c = bio.hit_curve(d, ["g"], np.array([1, 4, 11]))
    # a cache of 1 block hits distance 0 (1 of 4); 4 blocks hit 0, 3, 3; 11 blocks hit all
    assert c["hit_share"].tolist() == [0.25, 0.75, 1.0]


# --- idle time and rates -------------------------------------------------------------------------

def test_idle_time_by_hand():
    rows = [
        (0, KIB4, "write", np.nan, 10.0),   # in flight from the window start: [0, 10]
        (8, KIB4, "write", 30.0, 50.0),     # [30, 50]
        (16, KIB4, "write", 40.0, 60.0),    # [40, 60], overlaps the one before
        (24, 0, "read", 62.0, 70.0),        # a flush is in flight too: [62, 70]
        (32, KIB4, "write", 90.0, 120.0),   # completes after the window end (100): clipped to [90, 100]
    ]
    req = pd.concat([_req(rows), _req([], dev=2)], ignore_index=True)
    win = pd.DataFrame({"source": "t", "dev": [1, 2], "t_start_ns": 0.0, "t_end_ns": 100.0})
    # gaps with nothing in flight: 10→30 (20), 60→62 (2), 70→90 (20); busy 10 + 30 + 8 + 10 = 58
    i = bio.idle_time(req, win, min_idle_ns=5).set_index("dev")
    assert (i.loc[1, "busy_ns"], i.loc[1, "idle_ns"], i.loc[1, "idle_periods"], i.loc[1, "longest_idle_ns"]) \
        == (58.0, 40.0, 2, 20.0)
    assert i.loc[1, "idle_share"] == pytest.approx(0.4)
    i0 = bio.idle_time(req, win, min_idle_ns=0).set_index("dev")
    assert (i0.loc[1, "idle_ns"], i0.loc[1, "idle_periods"]) == (42.0, 3)
    # a traced device with no request: idle for the whole window, one period
    assert (i.loc[2, "idle_ns"], i.loc[2, "idle_periods"], i.loc[2, "idle_share"]) == (100.0, 1, 1.0)


def test_idle_time_trailing_gap():
    req = _req([(0, KIB4, "write", 10.0, 20.0)])
    win = pd.DataFrame({"source": ["t"], "dev": [1], "t_start_ns": [0.0], "t_end_ns": [50.0]})
    # leading gap 0→10 and trailing 20→50
    i = bio.idle_time(req, win, min_idle_ns=0).iloc[0]
    assert (i["idle_ns"], i["idle_periods"], i["busy_ns"]) == (40.0, 2, 10.0)


def test_rates_by_hand():
    mib = 1 << 20
    rows = [(0, mib, "write", 0.0, 0.1e6), (8, mib, "write", 0.0, 0.5e6), (16, mib, "write", 1.0e6, 1.5e6),
            (24, KIB4, "read", 0.0, 2.2e6), (32, 0, "read", 0.0, 0.2e6)]
    win = pd.DataFrame({"source": ["t"], "dev": [1], "t_start_ns": [0.0], "t_end_ns": [2.5e6]})
    r = bio.rates(_req(rows), win, bin_ns=1e6)
    w = r[r["ddir"] == "write"]
    # 1 ms bins, the last cut to 0.5 ms by the window's end: writes complete 2, 1, 0 per bin → 2000, 1000,
    # 0 /s and 2000, 1000, 0 MiB/s; the flush is not counted; the read completes in the 0.5 ms last bin
    # → 1 / 0.5 ms = 2000 /s
    assert w["t_s"].tolist() == [0.0, 0.001, 0.002]
    assert w["iops"].tolist() == [2000.0, 1000.0, 0.0]
    assert w["mib_s"].tolist() == [2000.0, 1000.0, 0.0]
    assert r.loc[r["ddir"] == "read", "iops"].tolist() == [0.0, 0.0, 2000.0]


def test_size_distribution_by_hand():
    rows = [(0, KIB4, "write", 1.0, 2.0), (8, KIB4, "write", 2.0, 3.0), (16, 2 * KIB4, "write", 3.0, 4.0),
            (40, 0, "read", 4.0, 5.0)]
    s = bio.size_distribution(_req(rows))
    assert s[["size_kib", "count"]].values.tolist() == [[4.0, 2], [8.0, 1]]
    assert s["share"].tolist() == pytest.approx([2 / 3, 1 / 3])


# --- preparing the table -----------------------------------------------------------------------------

def test_prepare_and_windows_roles_phases():
    dev_data, dev_db = 7 << 20 | 0, 7 << 20 | 1
    base = {"rwbs": "WS", "ddir": "write", "n_bios": 1, "q_ns": 1.0, "d_ns": 2.0, "q2c_ns": 1.0, "d2c_ns": 1.0,
            "campaign": "rb", "scenario": "s", "io_scheduler": "none", "repeat": "1", "run": "r", "target": np.nan,
            "rw": np.nan, "bs": "4k", "trace_dev_data": "7,0", "trace_dev_db": "7,1"}
    raw = pd.DataFrame([
        {**base, "source": "r/trace-write.blktrace.gz", "dev": dev_data, "sector": 0, "nbytes": KIB4, "c_ns": 9.0},
        {**base, "source": "r/trace-write.blktrace.gz", "dev": dev_db, "sector": 8, "nbytes": KIB4, "c_ns": 12.0},
        {**base, "source": "r/trace-seq.blktrace.gz", "dev": dev_data, "sector": 0, "nbytes": KIB4, "c_ns": 30.0},
        {**base, "source": "f/trace.blktrace.gz", "dev": 7 << 20 | 3, "sector": 0, "nbytes": KIB4, "c_ns": 5.0,
         "campaign": "fio", "rw": "read", "trace_dev_data": np.nan, "trace_dev_db": np.nan},
    ])
    req = bio.prepare(raw, ["rb", "fio"])
    assert req["devno"].tolist() == ["7,0", "7,1", "7,0", "7,3"]
    assert req["phase"].tolist() == ["write", "write", "seq", "read"]
    assert req["role"].tolist() == ["data", "db", "data", "device"]
    assert bio.dev_of("7,1") == dev_db
    w = bio.windows(req).set_index(["source", "devno"])
    # the seq trace has no DB request, but run.json says the DB was traced: a stream with the trace's window
    assert w.loc[("r/trace-seq.blktrace.gz", "7,1"), "role"] == "db"
    assert w.loc[("r/trace-seq.blktrace.gz", "7,1"), "t_end_ns"] == 30.0
    # the window ends at the trace's last completion on any device
    assert w.loc[("r/trace-write.blktrace.gz", "7,0"), "t_end_ns"] == 12.0
    assert len(w) == 5


# --- the idle table's statistics ----------------------------------------------------------------------

def test_spread_stats_by_hand_and_on_the_chapter_row():
    m = pd.DataFrame({"a": [1.0, 0.0], "b": [2.0, 2.0], "c": [3.0, 4.0]}, index=["x", "y"])
    t = bio.spread_stats(m)
    # x: mean 2, sample std 1, 0.5, 3/1; y: mean 2, std 2, 1, min 0 → inf
    assert t.loc["x", ["mean", "std", "std/mean", "max/min"]].tolist() == [2.0, 1.0, 0.5, 3.0]
    assert t.loc["y", ["mean", "std", "std/mean"]].tolist() == [2.0, 2.0, 1.0] and np.isinf(t.loc["y", "max/min"])
    # the chapter's row 3–8 (nine nodes) prints mean 40.43 and std 34.17
    row = pd.DataFrame([[52.48, 17.77, 55.34, 44.65, 114.21, 9.1, 48.49, 21.13, 0.7]])
    c = bio.spread_stats(row).iloc[0]
    assert c["mean"] == pytest.approx(40.43, abs=0.005) and c["std"] == pytest.approx(34.17, abs=0.005)


# --- utilisation and the verdict ----------------------------------------------------------------------

def _samples() -> tuple[pd.DataFrame, pd.DataFrame]:
    t0 = 1000.0
    rows = []
    for k, (cpu0, cpu1, util, avail) in enumerate([(0.2, 0.2, 0.1, 800.0), (0.4, 0.4, 0.5, 600.0),
                                                  (0.8, 0.8, 1.5, 400.0)]):
        for job, metric, v in (("cpu0", "cpu_busy", cpu0), ("cpu1", "cpu_busy", cpu1), ("cpu0", "cpu_iowait", 0.0),
                               ("cpu1", "cpu_iowait", 0.0), ("", "mem_available", avail), ("loop0", "disk_util", util)):
            rows.append({"kind": "sysutil", "run": "r", "t_s": float(k), "job": job, "metric": metric, "value": v})
    series = pd.DataFrame(rows)
    meta = json.dumps({"t0_unix": t0, "interval_s": 1.0})
    files = pd.DataFrame({"kind": ["sysutil"], "run": ["r"], "meta_json": [meta]})
    return series, files


def test_sysutil_samples_and_window_weights_by_hand():
    series, files = _samples()
    s = bio.sysutil_samples(series, files, ["r"])
    # samples end at 1000, 1001, 1002 and cover the second before; the 1.5 %util is clipped to 1
    assert s["end_unix"].tolist() == [1000.0, 1001.0, 1002.0] and s["dt"].tolist() == [1.0, 1.0, 1.0]
    assert s["disk_util:loop0"].tolist() == [0.1, 0.5, 1.0] and s["clipped"].tolist() == [0, 0, 1]
    win = pd.DataFrame({"run": ["r", "r"], "a": [1000.5, np.nan], "b": [1001.5, np.nan]})
    u = bio.window_utilisation(s, win, "a", "b")
    # [1000.5, 1001.5] overlaps the 2nd and 3rd samples by 0.5 s each: CPU (0.4 + 0.8) / 2 = 0.6
    assert u.loc[0, "cpu_busy"] == pytest.approx(0.6) and u.loc[0, "covered_s"] == pytest.approx(1.0)
    assert u.loc[0, "disk_util:loop0"] == pytest.approx(0.75)
    # no window: the whole log, each sample weighted by its 1 s
    assert u.loc[1, "cpu_busy"] == pytest.approx((0.2 + 0.4 + 0.8) / 3)
    res = bio.resource_table(u.assign(mem_total_B=1000.0, dev_data="", dev_db="", dev_device="loop0"))
    # memory used 1 − (600 + 400) / 2 / 1000 = 0.5; the busiest disk is loop0, also the traced device
    assert res.loc[0, "memory"] == pytest.approx(0.5)
    assert res.loc[0, "disk_device"] == "loop0" and res.loc[0, "util_device"] == pytest.approx(0.75)
    assert np.isnan(res.loc[0, "util_db"]) and np.isnan(res.loc[0, "network"])


def test_bottleneck_rule_by_hand():
    res = pd.DataFrame({"cpu": [0.9, 0.9, 0.6, 0.3], "memory": [0.1, 0.1, 0.1, 0.1],
                        "disk": [0.3, 0.85, 0.95, 0.4], "network": np.nan})
    v = bio.bottleneck(res, saturated=0.8, headroom=0.5)
    # 1: CPU alone saturated, the rest < 0.5 → clear; 2: both; 3: disk, but CPU 0.6 is not < 0.5;
    # 4: nothing saturated, the busiest is the disk at 0.40
    assert v["verdict"].tolist() == ["cpu", "cpu+disk", "disk", "none (disk 0.40)"]
    assert v["clear"].tolist() == [True, True, False, False]
    assert set(v["not_measured"]) == {"network"}
    s = bio.verdict_summary(v.assign(g=["a", "a", "a", "b"], iowait=0.0, disk_device="vda"), ["g"])
    assert s.loc["a", "verdicts"] == "cpu ×1, cpu+disk ×1, disk ×1" and s.loc["b", "verdicts"] == "none ×1"
    assert s.loc["a", "cpu"] == pytest.approx(0.8)


def test_busy_vs_util_joins_the_same_device_and_window():
    idle = pd.DataFrame({"source": "t", "dev": [1, 2], "span_ns": 100.0, "busy_ns": [30.0, 80.0]})
    win = pd.DataFrame({"source": "t", "dev": [1, 2], "run": "r", "phase": "write", "role": ["data", "db"],
                        "campaign": "c", "scenario": "s", "io_scheduler": "none"})
    res = pd.DataFrame({"run": ["r"], "phase": ["write"], "util_data": [0.4], "util_db": [0.7],
                        "util_device": [np.nan]})
    b = bio.busy_vs_util(idle, win, res).set_index("role")
    # data: busy 30/100 = 0.3 against %util 0.4 → +0.1; db: 0.8 against 0.7 → −0.1
    assert b.loc["data", "busy"] == pytest.approx(0.3) and b.loc["data", "diff"] == pytest.approx(0.1)
    assert b.loc["db", "busy"] == pytest.approx(0.8) and b.loc["db", "diff"] == pytest.approx(-0.1)


def test_prev_smaller_against_a_plain_loop_with_ties():
    rng = np.random.default_rng(3)
    for n, k in ((0, 1), (1, 1), (2, 2), (50, 3), (777, 100), (1000, 1 << 20)):
        v = rng.integers(0, k, n)
        want = [int((v[:i] < v[i]).sum()) for i in range(n)]
        assert bio._prev_smaller(v).tolist() == want


def test_bottleneck_conclusion_counts_verdicts_and_tests_the_chapters_claim():
    from analysis.stats.blockio import bottleneck, bottleneck_conclusion
    res = pd.DataFrame({"campaign": ["f"] * 3 + ["r"] * 2, "scenario": ["a", "a", "b", "c", "c"],
                        "phase": ["w"] * 5, "cpu": [0.6, 0.4, 0.45, 0.9, 0.95], "memory": [0.1] * 5,
                        "disk": [0.9, 0.95, 0.5, 0.3, 0.85], "network": [np.nan] * 5})
    v = bottleneck(res, 0.8, 0.5)
    text = bottleneck_conclusion(v, None, 0.8, 0.5)
    assert "- **`f`** (3 runs): disk ×2, none ×1; clear in 1; workload means CPU 0.45–0.50, disk 0.50–0.93." in text
    assert "(the drives are the bottleneck) holds here (disk in 2 of 3 verdicts)" in text
    assert "- **`r`** (2 runs): cpu ×1, cpu+disk ×1; clear in 2;" in text   # two saturated, the rest low: clear and "does not hold here (disk in 1 of 2" in text


# --- the notebook's tables (issue 50: built here, not in notebook 40's cells) ------------------------

def test_over_time_pools_bins_per_row_and_drops_directions_that_never_occur():
    mib = 1 << 20
    rows = [(0, mib, "write", 0.0, 0.1e6), (8, mib, "write", 0.0, 0.5e6), (16, mib, "write", 1.0e6, 1.5e6)]
    win = pd.DataFrame({"source": ["t"], "dev": [1], "t_start_ns": [0.0], "t_end_ns": [2.5e6], "scenario": ["s"]})
    r = bio.rates(_req(rows), win, bin_ns=1e6)
    t = bio.over_time(r, win, ["scenario"])
    # as test_rates_by_hand: write bins 2000, 1000, 0 /s (MiB/s alike); no read ever: no read row
    assert t.index.tolist() == [("s", "write")]
    w = t.loc[("s", "write")]
    assert w["iops_mean"] == pytest.approx(1000.0) and w["empty_bins"] == pytest.approx(1 / 3)
    assert w["iops_p5"] == pytest.approx(100.0) and w["iops_p95"] == pytest.approx(1900.0)
    assert w["mib_s_mean"] == pytest.approx(1000.0)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")  # one run: its spread (std) is undefined
def test_idle_sensitivity_and_spread_by_hand():
    rows = [(0, KIB4, "write", np.nan, 10.0), (8, KIB4, "write", 30.0, 50.0), (16, KIB4, "write", 40.0, 60.0),
            (24, 0, "read", 62.0, 70.0), (32, KIB4, "write", 90.0, 120.0)]
    req = _req(rows)
    win = pd.DataFrame({"source": ["t"], "dev": [1], "t_start_ns": [0.0], "t_end_ns": [100.0], "scenario": ["s"],
                        "io_scheduler": ["none"]})
    # test_idle_time_by_hand's trace: gaps 20, 2, 20 ns → ≥ 0: 42 % in 3 periods; ≥ 5 ns (0.005 µs): 40 % in 2
    s = bio.idle_sensitivity(req, win, ["scenario"], [0, 0.005])
    assert s.loc["s"].tolist() == pytest.approx([42.0, 3.0, 40.0, 2.0])
    assert s.columns.tolist() == ["≥0 µs", "periods ≥0 µs", "≥0.005 µs", "periods ≥0.005 µs"]
    sp = bio.idle_spread(bio.idle_time(req, win, 5), win, ["scenario"])
    assert sp.loc["s", "none"] == pytest.approx(40.0)


def test_busy_check_table_and_inventory_by_hand():
    check = pd.DataFrame({"campaign": "c", "phase": "write", "role": ["data", "data", "db"],
                          "busy": [0.3, 0.5, 0.8], "util": [0.4, 0.4, 0.7], "diff": [0.1, -0.1, -0.1]})
    t = bio.busy_check_table(check)
    assert t.loc[("c", "write", "data"), "streams"] == 2
    assert t.loc[("c", "write", "data"), "busy_trace"] == pytest.approx(0.4)
    assert t.loc[("c", "write", "data"), "diff_abs_max"] == pytest.approx(0.1)
    assert t.loc[("c", "write", "db"), "diff_median"] == pytest.approx(-0.1)
    win = pd.DataFrame({"source": ["a", "a", "b"], "dev": [1, 2, 1], "campaign": "c", "phase": "write",
                        "role": ["data", "db", "data"], "t_start_ns": 0.0, "t_end_ns": [5e8, 5e8, 2.5e8]})
    prof = pd.DataFrame({"campaign": "c", "phase": "write", "role": ["data", "db"], "requests": [10, 4],
                         "flushes": [1, 0]})
    inv = bio.inventory(win, prof)
    assert inv.loc[("c", "write", "data")].tolist() == [2, 2, 250.0, 500.0, 10, 1]
    assert inv.loc[("c", "write", "db")].tolist() == [1, 1, 500.0, 500.0, 4, 0]


def test_bottleneck_verdicts_joins_runs_and_counts_clear_ones():
    at = pd.DataFrame({"run": ["r1", "r2"], "phase": "write", "cpu": [0.9, 0.6], "memory": 0.1,
                       "disk": [0.3, 0.95], "network": np.nan, "iowait": 0.0, "disk_device": "vda"})
    win = pd.DataFrame({"run": ["r1", "r1", "r2"], "phase": "write", "campaign": "c", "scenario": "s",
                        "io_scheduler": ["none", "none", "bfq"]})
    summary, v_trace, v_phase = bio.bottleneck_verdicts(at, at, win, ["scenario"])
    # r1: CPU saturated, the rest < 0.5 → clear; r2: disk, but CPU 0.6 is not < 0.5 → not clear
    assert v_trace["verdict"].tolist() == ["cpu", "disk"] and len(v_phase) == 2
    assert summary.loc["s", "clear"] == "1/2" and summary.loc["s", "verdicts (whole phase)"] == "cpu ×1, disk ×1"

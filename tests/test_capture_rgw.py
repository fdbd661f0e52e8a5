"""The RGW harness's pure parts: getput's line format as the load generator writes it (checked against
getput's printf formats worked by hand, and read back by the project's getput reader), the campaign
plan, the total-line summary and the pilot verdict on made-up run records."""

from __future__ import annotations

import copy
import gzip
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from capture.ceph.campaign import CampaignError
from capture.rgw import campaign as rc
from capture.rgw import getput_format as gf
from capture.rgw.__main__ import verdict
from capture.rgw.runner import total_line

DOC = {"campaign": "t", "seed": 5, "min_repeats": 2, "repeats": 3,
       "cluster": {"osds": 4}, "load": {"procs": 4, "osize": "4m", "put_s": 30, "get_s": 10},
       "arms": [{"name": "shards-1", "shards": 1}, {"name": "shards-64", "shards": 64},
                {"name": "per-proc", "shards": 1, "ctype": "byproc"}, {"name": "rados", "rados": True}]}


def doc(**over):
    d = copy.deepcopy(DOC)
    d.update(over)
    return rc.validate(d)


def test_size_kmg_and_upper_median_as_getput():
    assert [gf.size_kmg(n) for n in (4 << 20, 128 << 10, 1 << 30, 1000, 1536 << 10)] == ["4m", "128k", "1g", "1000", "1536k"]
    assert gf.upper_median([3.0, 1.0, 2.0, 4.0]) == 3.0  # sorted [1,2,3,4][4 // 2]
    assert gf.upper_median([]) == 0.0


def test_cpu_busy_percent_leaves_out_idle_and_iowait():
    a = "cpu  100 0 50 1000 20 0 5 0 0 0"
    b = "cpu  160 0 70 1100 40 0 5 0 0 0"  # +60 user +20 system +100 idle +20 iowait
    assert gf.cpu_busy_percent(a, b) == pytest.approx(100 * 80 / 200)


def test_lines_match_getputs_printf_formats():
    t0 = time.mktime((2026, 11, 27, 10, 0, 0, 0, 0, -1))
    r0 = gf.ProcResult(ops=10, errs=0, latencies=[0.1] * 9 + [0.5], t0=t0, tf=t0 + 5, xfer=4 << 20)
    r1 = gf.ProcResult(ops=5, errs=1, latencies=[0.2] * 5, t0=t0 + 1, tf=t0 + 6, xfer=4 << 20, retries=2)
    lines = gf.test_lines("p", [r0, r1], cpu=42.5, psum=True)
    assert gf.header() == ("Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median"
                           "    LatRange   %CPU Ret")
    # proc 0: 10 ops × 4 MiB / 5 s = 8.00 MiB/s, 2.00 ops/s, mean 1.4 / 10 = 0.140 s, upper median 0.1
    assert lines[0] == ("put      1    0     4m  10:00:00  10:00:05     8.00    10      2.00    0   0.140   0.100"
                        "  0.10-00.50  42.50   0")
    # total: 8 + 4 MiB/s, 2 + 1 ops/s, mean 2.4 / 15 = 0.160, sorted latencies 9 × 0.1, 5 × 0.2, 0.5: the one
    # at 15 // 2 = 7 is 0.1; Ret = the last process's
    assert lines[2] == ("put      1    2     4m  10:00:00  10:00:06    12.00    15      3.00    1   0.160   0.100"
                        "  0.10-00.50  42.50   2")
    assert len(lines) == 3


def test_the_project_reader_reads_the_generators_lines(tmp_path):
    from analysis.ingest import read
    t0 = time.time()
    rs = [gf.ProcResult(ops=30, errs=0, latencies=[0.05 + i / 1000 for i in range(30)], t0=t0, tf=t0 + 10,
                        xfer=4 << 20) for _ in range(3)]
    text = "\n".join([gf.header()] + gf.test_lines("p", rs, 80.0, psum=True) + gf.test_lines("g", rs, 70.0)) + "\n"
    p = tmp_path / "output.gw0"
    p.write_text(text)
    parsed = read(p)
    s = parsed.summary.set_index(["job", "metric"])["value"]
    assert parsed.kind == "getput" and not parsed.partial
    assert s[("put", "bw")] == pytest.approx(3 * 30 * (4 << 20) / 10, rel=1e-3)  # 36.00 MiB/s printed
    assert s[("put", "ops_total")] == 90 and s[("get", "ops_total")] == 90
    assert total_line(text, "put") == {"procs": 3, "mib_s": 36.0, "ops": 90, "ops_s": 9.0, "errs": 0,
                                       "lat_s": 0.065}  # mean 0.0645 printed %7.3f


def test_plan_is_repeat_major_shuffled_and_stable():
    d = doc()
    runs = rc.plan(d)
    assert len(runs) == 4 * 3 and {r.scenario for r in runs} == {"put-4m-p4"}
    assert [r.repeat for r in runs] == sorted(r.repeat for r in runs)
    per_rep = [[r.arm for r in runs if r.repeat == k] for k in (1, 2, 3)]
    assert all(Counter(p) == Counter(per_rep[0]) for p in per_rep) and len(set(map(tuple, per_rep))) > 1
    assert [r.relpath for r in rc.plan(doc())] == [r.relpath for r in runs]


@pytest.mark.parametrize("over, msg", [
    ({"campaign": "A/b"}, "'campaign'"),
    ({"arms": [{"name": "x", "shards": 1}, {"name": "x", "shards": 8}]}, "listed twice"),
    ({"arms": [{"name": "x", "shards": -1}]}, "'shards'"),
    ({"arms": [{"name": "x", "shards": 1, "ctype": "bynode"}]}, "'ctype'"),
    ({"arms": [{"name": "r", "rados": True, "shards": 3}]}, "no other keys"),
    ({"cluster": {"osds": 4, "index_pg_num": 12}}, "power of two"),
    ({"load": {"procs": 4, "osize": "4 MB", "put_s": 30, "get_s": 0}}, "load.osize"),
    ({"repeats": 1}, "min_repeats"),
])
def test_validation_names_the_key(over, msg):
    with pytest.raises(CampaignError, match=msg):
        doc(**over)


def _run(root: Path, arm: str, rep: int, mib_s: float | None, busy: float, index_ops: list[int]) -> None:
    d = root / "put-4m-p4" / arm / f"rep-{rep:02d}"
    d.mkdir(parents=True)
    info = {"arm": arm, "repeat": rep, "daemon_cpu_s": {"rgw.gw0": 10.0},
            "cpu": {"machine_busy_cpu_s": busy * 2 * 40, "wall_s": 40, "ncpu": 2}}
    if mib_s is not None:
        info["put"] = {"mib_s": mib_s}
    (d / "run.json").write_text(json.dumps(info))
    with gzip.open(d / "sysutil.jsonl.gz", "wt") as g:
        for n in index_ops:
            g.write(json.dumps({"t": 1.0, "cpu": {"cpu0": 0.5}, "osd": {"osd.0": {"pool_in_flight": n},
                                                                      "osd.1": {"pool_in_flight": 0}}}) + "\n")


def test_pilot_verdict_sizes_the_repeats_from_the_pilots_spread(tmp_path):
    d = doc()
    for rep, (a, b) in enumerate([(50.0, 90.0), (54.0, 86.0)], start=1):
        _run(tmp_path, "shards-1", rep, a, 0.6, [3, 5])
        _run(tmp_path, "shards-64", rep, b, 0.7, [0, 1])
    _run(tmp_path, "rados", 1, None, 0.5, [])
    v = verdict(tmp_path, d)
    # means 52 and 88: delta 36; sds 2.83 each (pooled 2.83); n = 2 (1.96 + 0.8416)^2 (2.83 / 36)^2 ≈ 0.097
    assert v["compared"] == ["shards-1", "shards-64"] and v["delta_mib_s"] == pytest.approx(36.0)
    assert v["sd_mib_s"] == pytest.approx(8 ** 0.5)
    assert v["repeats_needed"] == 2  # the campaign's min_repeats floors it
    assert v["unsharded_index_ops_mean"] == pytest.approx(4.0)
    assert v["can_decide"] is True


def test_pilot_verdict_says_no_when_the_machine_is_saturated(tmp_path):
    d = doc()
    for rep in (1, 2):
        _run(tmp_path, "shards-1", rep, 60.0 + rep, 0.97, [0, 0])
        _run(tmp_path, "shards-64", rep, 61.0 + rep, 0.98, [0, 0])
    v = verdict(tmp_path, d)
    # delta 1 MiB/s, sd 0.707: n = 2 (1.96 + 0.8416)^2 0.5 = 7.85 → 8 per arm, but no index queue and 97 % busy
    assert v["can_decide"] is False and v["repeats_needed"] == 8

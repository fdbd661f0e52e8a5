"""analysis.stats.rgw on hand-made tidy tables and the shipped diary CSV; values worked out by hand or
with scipy's own Welch test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import rgw

MIB = 1 << 20


def _summary() -> pd.DataFrame:
    rows = []
    for arm, rep, put, get in (("shards-1", 1, 6.0, 12.0), ("shards-1", 2, 7.0, 12.5), ("shards-64", 1, 8.5, 12.0),
                               ("shards-64", 2, 9.0, 13.0)):
        src = f"rgw-t/put-4m-p8/{arm}/rep-{rep:02d}/output.gw0.gz"
        for job, metric, v in (("put", "bw", put * MIB), ("get", "bw", get * MIB), ("put", "lat_mean", 4e9),
                               ("put", "errors", 0.0), ("put/proc0", "bw", 1.0)):
            rows.append(("getput", src, job, metric, v, arm, rep))
    for rep, w, r in ((1, 10.0, 11.0), (2, 9.0, 12.0)):
        for ph, v in (("write", w), ("seq", r)):
            rows.append(("rados-bench", f"rgw-t/put-4m-p8/rados/rep-{rep:02d}/{ph}.txt.gz", "", "bw", v * MIB, "rados", rep))
    rows.append(("getput", "other/output.gw0", "put", "bw", 99 * MIB, "shards-1", 1))  # another campaign
    s = pd.DataFrame(rows, columns=["kind", "source", "job", "metric", "value", "arm", "repeat"])
    s["campaign"] = ["rgw-t"] * (len(s) - 1) + ["other"]
    return s


def _series() -> pd.DataFrame:
    rows = []
    for arm, rep, cores, idx in (("shards-1", 1, 0.05, 6), ("shards-1", 2, 0.06, 4), ("shards-64", 1, 0.07, 2),
                                 ("shards-64", 2, 0.09, 2)):
        for t in (1.0, 10.0, 20.0, 70.0):  # 1 s and 70 s fall outside the PUT window (5–60 s)
            outside = t < 5 or t > 60
            rows.append(("sysutil", "radosgw", "proc_cpu", t, 9.0 if outside else cores, arm, rep))
            rows.append(("sysutil", "osd.0", "osd_pool_in_flight", t, 50.0 if outside else idx, arm, rep))
            rows.append(("sysutil", "osd.1", "osd_pool_in_flight", t, 50.0 if outside else 1.0, arm, rep))
    se = pd.DataFrame(rows, columns=["kind", "job", "metric", "t_s", "value", "arm", "repeat"])
    se["campaign"] = "rgw-t"
    return se


def test_run_table_reads_getput_totals_rados_phases_and_the_put_window():
    runs = rgw.run_table(_summary(), _series(), "rgw-t").set_index(["arm", "repeat"])
    assert runs.loc[("shards-1", 1), "put_mib_s"] == pytest.approx(6.0)  # the total line, not proc0's
    assert runs.loc[("shards-64", 2), "get_mib_s"] == pytest.approx(13.0)
    assert runs.loc[("shards-1", 1), "put_lat_ms"] == pytest.approx(4000.0)
    assert runs.loc[("rados", 2), "put_mib_s"] == pytest.approx(9.0) and runs.loc[("rados", 2), "get_mib_s"] == pytest.approx(12.0)
    assert runs.loc[("shards-64", 2), "rgw_cores"] == pytest.approx(0.09)  # the 9.0 outside the window left out
    assert runs.loc[("shards-1", 1), "index_in_flight"] == pytest.approx(7.0)  # 6 + 1 summed over OSDs
    assert runs.loc[("shards-64", 1), "rgw_cores_per_100mib_s"] == pytest.approx(0.07 / 8.5 * 100)
    assert len(runs) == 6


def test_log_ratio_is_welch_on_logs():
    a, b = np.array([8.5, 9.0, 8.8]), np.array([6.0, 7.0, 6.4])
    r = rgw.log_ratio(a, b)
    t, p = stats.ttest_ind(np.log(a), np.log(b), equal_var=False)
    assert r["ratio"] == pytest.approx(np.exp(np.log(a).mean() - np.log(b).mean()))
    assert r["p"] == pytest.approx(p)
    assert r["lo"] < r["ratio"] < r["hi"]
    sd = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert r["d"] == pytest.approx((a.mean() - b.mean()) / sd)
    # the CI by Welch's formula written out here (df by Welch–Satterthwaite), not by scipy's object
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / 3, lb.var(ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    assert (r["lo"], r["hi"]) == pytest.approx((np.exp(la.mean() - lb.mean() - half), np.exp(la.mean() - lb.mean() + half)))
    from statsmodels.stats.power import TTestIndPower
    def pw(n, d):
        return TTestIndPower().power(effect_size=abs(d), nobs1=n, alpha=0.05, ratio=1.0)
    n = r["repeats_needed"]  # the smallest n ≥ 2 reaching power 0.8 (here 2: d is large)
    assert n >= 2 and pw(n, r["d"]) >= 0.8 and (n == 2 or pw(n - 1, r["d"]) < 0.8)
    small = rgw.log_ratio(np.array([8.0, 9.0, 10.0, 8.5]), np.array([8.2, 9.4, 9.6, 8.0]))  # a small effect
    m = small["repeats_needed"]
    assert m > 20 and pw(m, small["d"]) >= 0.8 > pw(m - 1, small["d"])
    assert np.isnan(rgw.log_ratio(a[:1], b)["p"])
    same = rgw.log_ratio(np.array([8.0, 8.0]), np.array([4.0, 4.0]))  # no spread: the ratio is exact
    assert (same["ratio"], same["lo"], same["hi"], same["p"], same["repeats_needed"]) == pytest.approx((2.0, 2.0, 2.0, 0.0, 2.0))


def test_claims_verdicts():
    runs = pd.DataFrame({"arm": ["shards-1"] * 3 + ["shards-64"] * 3 + ["shards-8"] * 3 + ["rados"] * 3,
                         "repeat": [1, 2, 3] * 4,
                         "put_mib_s": [6.0, 6.2, 6.1, 9.0, 9.1, 8.9, 6.0, 6.3, 5.9, 9.0, 9.05, 8.95]})
    t = rgw.claims(runs).set_index(["arm", "vs"])
    # 64 shards: ×1.48 here, significant after BH, the diary's ×2.61 far above the CI
    big = t.loc[("shards-64", "shards-1")]
    assert big["diary ratio"] == pytest.approx(574 / 220, abs=1e-3) and big["hi"] < big["diary ratio"]
    assert big["q"] < 0.05 and big["verdict"] == "same direction, smaller"
    # 8 shards: ×1.0, its CI short of the diary's ×1.82 → contradicted (q ≥ α)
    e8 = t.loc[("shards-8", "shards-1")]
    assert e8["q"] >= 0.05 and e8["hi"] < 400 / 220 and e8["verdict"] == "contradicted"
    assert t.loc[("bucket-per-proc", "shards-1"), "verdict"] == "not measurable here"
    eq = t.loc[("shards-64", "rados")]
    assert eq["verdict"] == "reproduced" and 0.9 <= eq["lo"] and eq["hi"] <= 1.1  # 64 shards ≈ rados bench here
    # q: BH over the three tested claims
    from statsmodels.stats.multitest import multipletests
    tested = t["p"].notna()
    assert t.loc[tested, "q"].to_numpy() == pytest.approx(multipletests(t.loc[tested, "p"], method="fdr_bh")[1])


def test_published_beside_measured_uses_the_diarys_hdd_rows():
    from analysis.published.rgw import load
    runs = pd.DataFrame({"arm": ["shards-1", "shards-8", "shards-64", "rados"], "repeat": [1] * 4,
                         "put_mib_s": [5.0, 6.0, 9.0, 10.0]})
    side = rgw.published_vs_measured(load(), runs).set_index("our arm")
    assert side.loc["shards-1", "diary MB/s"] == 220.0
    assert side.loc["shards-64", "diary MB/s"] == pytest.approx((602 + 557 + 563) / 3)
    assert side.loc["shards-1", "diary / rados"] == pytest.approx(220 / ((580 + 580 + 564) / 3))
    assert side.loc["shards-64", "ours / rados"] == pytest.approx(0.9)


def test_cbt_runs_take_arm_and_iteration_from_cbts_archive_path():
    pre = "rgw/rgw-cbt-t/"
    rows = []
    for it, bw in ((0, 8.0), (1, 9.0), (2, 10.0)):
        src = f"{pre}cbt-bpp/results/{it:08d}/id-abc/osd_ra-00000000/op_size-04194304/procs-00000008/p/byproc/output.gw0.localhost.gz"
        rows += [("getput", src, "put", "bw", bw * MIB, it), ("getput", src, "put", "lat_mean", 4.5e9, it),
                 ("getput", src, "put", "errors", 0.0, it)]
    rows.append(("getput", "rgw/rgw-2026/x/output.gw0.gz", "put", "bw", 99 * MIB, 0))  # not below the prefix
    rows.append(("sysutil", f"{pre}harness/cbt-bpp/sysutil.jsonl.gz", "", "cpu_busy", 0.5, 0))
    s = pd.DataFrame(rows, columns=["kind", "source", "job", "metric", "value", "repeat"])
    cbt = rgw.cbt_runs(s, pre)
    assert cbt["arm"].tolist() == ["cbt-bpp"] * 3 and cbt["repeat"].tolist() == [0, 1, 2]
    assert cbt["put_mib_s"].tolist() == [8.0, 9.0, 10.0] and cbt["put_lat_ms"].tolist() == [4500.0] * 3
    runs = pd.DataFrame({"arm": ["bucket-per-proc"] * 3 + ["shards-1"], "put_mib_s": [8.0, 9.0, 10.0, 1.0]})
    r = rgw.cbt_vs_harness(cbt, runs, "bucket-per-proc").loc["CBT cbt-bpp"]
    assert r["vs"] == "bucket-per-proc" and r["ratio"] == pytest.approx(1.0) and r["p"] == pytest.approx(1.0)
    assert rgw.cbt_runs(s, "rgw/none/").empty


def test_the_shipped_cbt_getput_archive_reads_as_three_iterations(tmp_path):
    """The genuine CBT 9d6480f getput archive of data/raw/rgw/rgw-cbt-2026 (CBT → getput-shim → radosgw,
    2026-11-27), ingested strictly: three iterations of 8 processes' 4 MiB PUTs.  The values are those getput's
    total lines print (MB/Sec column = MiB/s), read with zcat in this test, not by the reader under test."""
    import gzip
    import re
    from pathlib import Path
    from analysis.ingest.walk import ingest
    root = Path(__file__).resolve().parents[1] / "data" / "raw" / "rgw" / "rgw-cbt-2026"
    res = ingest(root, progress=False)
    assert res.failed == [] and set(res.files["status"]) <= {"ok", "context"}
    s = res.summary.assign(source="rgw/rgw-cbt-2026/" + res.summary["source"].astype(str))
    cbt = rgw.cbt_runs(s, "rgw/rgw-cbt-2026/")
    assert cbt["arm"].tolist() == ["cbt-bucket-per-proc"] * 3 and cbt["repeat"].tolist() == [0, 1, 2]
    printed = []
    for f in sorted(root.glob("cbt-bucket-per-proc/results/*/id-*/*/*/*/p/byproc/output.gw0.localhost.gz")):
        lines = gzip.decompress(f.read_bytes()).decode().splitlines()
        head = next(ln.split() for ln in lines if "MB/Sec" in ln)
        tot = [ln.split() for ln in lines if re.match(r"^\s*\d+\s+put\s", ln)][-1]
        printed.append(float(tot[head.index("MB/Sec")]))
    assert len(printed) == 3 and cbt["put_mib_s"].round(2).tolist() == printed
    assert all(7.5 < v < 9.5 for v in printed)

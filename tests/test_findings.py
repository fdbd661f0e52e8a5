"""analysis.findings, the report's first screen: the QoS protection rows are the pre-registered model's
contrasts of the best setting (checked against prereg on the shipped qos-v2 runs), and the sentences say
who protected the client with the numbers and CIs of the rows, linking to sections that exist.  The block and
RGW studies' sentences: on hand-made tables whose numbers are worked out by hand, and on the shipped processed
tables against notebooks 20, 40 and 50's own functions."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis import findings
from analysis.stats import prereg
from analysis.stats.qos_derived import run_metrics
from analysis.store import read_table


@pytest.fixture(scope="module")
def v2(real_proc):
    flt = [("campaign", "in", ["qos-v2"])]
    s = read_table(real_proc, "summary", check=False, filters=flt)
    se = read_table(real_proc, "series", check=False, filters=flt)
    return run_metrics(s, se, "qos-v2", windows=True), prereg.run_records(s, "qos-v2")


def test_protection_is_the_best_settings_contrast_under_the_model(v2):
    m, rec = v2
    rows = {r["scenario"]: r for r in findings.protection(m, rec, "qos-v2", "pacific")}
    assert set(rows) == {"scrub", "snaptrim_recovery"}
    r = rows["scrub"]
    arms = sorted(set(m.loc[m["scenario"] == "scrub", "arm"]) - {"wpq"})
    est = {a: prereg.contrast(m, prereg.Side("scrub", a, "client_iops_during"),
                              prereg.Side("scrub", "wpq", "client_iops_during"), rec)["est"] for a in arms}
    assert r["arm"] == max(est, key=est.get) and r["settings"] == len(arms) == 10
    assert r["client_pct"] == pytest.approx(100 * math.expm1(est[r["arm"]]), abs=0.01)
    d = prereg.contrast(m, prereg.Side("scrub", r["arm"], "scrub_duration"), prereg.Side("scrub", "wpq", "scrub_duration"), rec)
    assert (r["duration_lo"], r["duration_hi"]) == pytest.approx((100 * math.expm1(d["lo"]), 100 * math.expm1(d["hi"])), abs=0.01)
    # on the throttled Pacific campaign every other setting left the client fewer IOPS than WPQ during scrub
    assert r["client_hi"] < 0 and r["client_q"] < 0.05


def test_sentences_say_who_protected_the_client_with_the_rows_numbers():
    base = dict(campaign="qos-v2", release="pacific", scenario="scrub", operation="scrub", settings=10,
                runs_per_setting=3, duration_metric="scrub_duration", duration_p=0.001)
    rows = [dict(base, arm="a1", client_pct=-33.92, client_lo=-44.83, client_hi=-20.86, client_q=0.0002,
                 duration_pct=-55.78, duration_lo=-63.86, duration_hi=-45.9),
            dict(base, arm="a2", client_pct=12.0, client_lo=5.0, client_hi=19.5, client_q=0.01,
                 duration_pct=3.0, duration_lo=-1.0, duration_hi=7.0),
            dict(base, arm="a3", client_pct=2.0, client_lo=-5.0, client_hi=9.0, client_q=0.4,
                 duration_pct=None, duration_lo=None, duration_hi=None, release="reef", campaign="qos-reef")]
    s = findings.qos_sentences(rows, {"33-qos-v2"})
    assert len(s) == 2  # one sentence a campaign, a clause per row
    first, second = s[0].split("; during ")
    assert "WPQ protected the client best" in first and "-33.9 % [-44.8, -20.9]" in first
    assert "scrub time -55.8 % [-63.9, -45.9]" in first and "<a href='#33-qos-v2'>" in second
    assert "<code>a2</code> protected the client better than WPQ" in second and "(not distinguishable" in second
    assert "(3 runs a setting; 95 % CIs under the pre-registered model" in second  # the caveat once
    assert s[1].startswith("On Ceph Reef (qos-reef), during scrub, no op-queue setting changed")
    assert "<a href" not in s[1] and "pre-registered" not in s[1]  # 35-versions is not in the page: no dead link
    assert findings.section([]) == "" and "<h1>What we found</h1>" in findings.section(s)


def test_claims_sentence_counts_each_campaigns_decided_tests(monkeypatch):
    """One sentence for all campaigns from claims' own counts (:func:`analysis.stats.claims.verdict_counts`,
    tested in tests/test_claims.py): tested = the verdict columns' sum, decided as counted there."""
    from analysis.stats import claims
    idx = pd.MultiIndex.from_tuples([("c1", "absolute"), ("c1", "testable"), ("c2", "testable")],
                                    names=["campaign", "claims"])
    counts = pd.DataFrame({"reproduced": [0, 1, 0], "same direction, smaller": [0, 0, 0],
                           "same direction, larger": [0, 0, 0], "contradicted": [0, 2, 0], "undecided": [0, 1, 1],
                           "not measurable here": [70, 0, 1], "decided": [0, 3, 0], "open": [0, 0, 0]}, index=idx)
    monkeypatch.setattr(claims, "verdict_counts", lambda table: counts)
    (s,) = findings.claims_sentence(pd.DataFrame(), set())
    assert "c1 3 of 4 (1 reproduced, 2 contradicted, 1 undecided); c2 0 of 2 (1 undecided, 1 not measurable here)" in s
    assert "70" not in s and s.endswith("(<a href='#claims'>the claims</a>).")  # absolute claims are not tests
    monkeypatch.setattr(claims, "verdict_counts", lambda table: counts.iloc[:1])
    assert findings.claims_sentence(pd.DataFrame(), set()) == []


def test_history_sentence_lists_each_change():
    t = pd.DataFrame({"series": ["rw=randread history=regression"], "metric": ["iops"], "point": ["24"],
                      "change_pct": [-6.0], "ci_lo_pct": [-6.02], "ci_hi_pct": [-5.98], "fails": [True]})
    (s,) = findings.history_sentences(t, {"60-history"})
    assert "history=regression at point 24: -6.00 % [-6.02, -5.98]" in s and "1 regression(s)" in s
    assert findings.history_sentences(None, set()) == []


def test_claim_labels_say_what_is_compared():
    lab = findings.claim_label
    assert lab("snaptrim/high_client_ops client_iops vs snaptrim/wpq client_iops") == \
        "client IOPS in snaptrim: high_client_ops vs WPQ"
    assert lab("snaptrim_recovery/wpq client_iops vs baseline/wpq client_iops") == \
        "WPQ client IOPS: snaptrim + recovery vs baseline"
    assert lab("snaptrim/wpq clat_during vs snaptrim/wpq clat_outside") == \
        "WPQ in snaptrim: client latency during the operation vs client latency outside it"
    assert lab("scrub/high_client_ops client_iops vs baseline/wpq client_iops") == \
        "client IOPS in scrub (high_client_ops) vs client IOPS in baseline (WPQ)"
    assert lab("975 OSDs") == "975 OSDs"


# --- the block and RGW studies: hand-made tables, numbers worked out by hand ---------------------------

def _values(campaign: str, cells: dict) -> pd.DataFrame:
    """block_values' layout: one row per run; ``cells``: (target, op, bs, qd) → {scheduler: [MiB/s, ...]}."""
    rows = [dict(campaign=campaign, target=t, op=op, bs=bs, qd=qd, io_scheduler=s, repeat=i + 1, value=float(x))
            for (t, op, bs, qd), per in cells.items() for s, xs in per.items() for i, x in enumerate(xs)]
    return pd.DataFrame(rows)


HAND = {("raw", "read", "4k", 16): {"a": [1, 2, 3], "b": [4, 5, 6]},       # F = 13.5 on (1, 4): p 0.0213
        ("raw", "write", "4k", 16): {"a": [10, 11, 12], "b": [20, 21, 22]},  # F = 150
        ("ext4", "read", "4k", 16): {"a": [10, 12, 14], "b": [11, 13, 9]},   # F = 0.375
        ("ext4", "write", "4k", 16): {"a": [5, 6, 7], "b": [6, 5, 7]}}       # F = 0


def test_the_short_workload_verdicts_are_the_one_way_anova_with_spread_and_noise():
    """iosched.workload_verdicts(detail=False), which the findings use: the ANOVA, best/worst, spread and
    noise by hand, no post-hoc or power columns."""
    from scipy import stats

    from analysis.stats.iosched import workload_verdicts
    v = workload_verdicts(_values("blk-x", HAND), detail=False).set_index(["target", "op"])
    r = v.loc[("raw", "read")]
    # means 2 and 5 around 3.5: SSB = 2·3·1.5² = 13.5 on 1 df, SSW = 2 + 2 on 4 df, F = 13.5 ≡ t² of 3.674 on 4 df
    assert r["anova_p"] == pytest.approx(2 * stats.t.sf(math.sqrt(13.5), 4), rel=1e-9)
    assert r["anova_p"] == pytest.approx(0.021312, abs=1e-6)
    assert (r["best"], r["worst"], r["repeats"]) == ("b", "a", 3)
    assert r["spread"] == pytest.approx(5 / 2 - 1)
    assert r["cv"] == pytest.approx(math.sqrt(((1 / 2) ** 2 + (1 / 5) ** 2) / 2))   # sd 1 over means 2 and 5
    assert v.loc[("raw", "write"), "anova_p"] == pytest.approx(stats.f.sf(150.0, 1, 4), rel=1e-9)
    assert v.loc[("ext4", "write"), "anova_p"] == pytest.approx(1.0) and v.loc[("ext4", "write"), "spread"] == 0
    assert v["tukey_pairs"].eq("").all() and v["kw_p"].isna().all() and v["repeats_needed"].isna().all()
    one = workload_verdicts(_values("blk-x", {("raw", "read", "4k", 16): {"a": [1, 2], "b": [3]}}), detail=False)
    assert math.isnan(one["anova_p"].iloc[0]) and one["repeats"].iloc[0] == 1   # one run: no test


def test_iosched_sentences_count_rejections_and_give_the_widest_spread_with_its_ci():
    from scipy import stats
    vals = pd.concat([_values("blk-x", HAND),
                      _values("rados-y", {("bluestore", "write", "4k", 16): {"a": [10, 12, 14], "b": [11, 13, 9]}})])
    s = findings.iosched_sentences(vals, {"20-io-schedulers"}, {"iosched-scatter-blk-x-read"})
    assert len(s) == 2
    # 2 of 4 workloads reject (p 0.021 and 0.00026; 0.57 and 1 do not), 0.05 × 4 = 0.2 by chance, b best in both
    assert "(blk-x: fio on raw, ext4; 3 runs a scheduler)" in s[0]
    assert "rejects equal throughput in 2 of 4 workloads at α 0.05 (0.2 expected by chance)" in s[0]
    assert "<code>b</code> fastest in 2 of them" in s[0]
    # the widest of the two: raw read, 5 / 2 − 1 = +150 %; with two schedulers Tukey's p is the pooled t-test's
    assert "raw read 4k QD 16: <code>b</code> over <code>a</code> +150.0 % [" in s[0]
    assert f"(Tukey p {2 * stats.t.sf(3 / math.sqrt(2 / 3), 4):.2g};" in s[0] and "Tukey p 0.021;" in s[0]
    lo, hi = (float(x) for x in s[0].split("+150.0 % [")[1].split("]")[0].split(", "))
    assert lo < 150 < hi
    assert "<a href='#fig-iosched-scatter-blk-x-read'>figure</a>" in s[0]
    # nothing rejects: the median spread 12 / 11 − 1 = 9.1 %, CV √((2/12)² + (2/11)²)/2) = 17.4 %
    assert s[1].startswith("Across the blk-mq IO schedulers (rados-y: rados bench on bluestore; 3 runs")
    assert "in none of 1 workloads at α 0.05 (0.1 expected by chance)" in s[1]
    assert "median best-over-worst spread was +9.1 % at a median CV of 17.4 %" in s[1]
    assert "<a href='#20-io-schedulers'>section</a>" in s[1]
    # two runs a scheduler: a test, but no bootstrap CI (three a side needed); no section in the page: no link
    # (means 1.5 and 10.5, pooled variance ½: t = 9 / √½ on 2 df, p 0.0061 = F 162 on (1, 2); 10.5 / 1.5 − 1
    # = +600 %)
    two = findings.iosched_sentences(_values("blk-x", {("raw", "read", "4k", 16): {"a": [1, 2], "b": [10, 11]}}), set())
    assert "rejects equal throughput in 1 of 1 workloads" in two[0]
    assert "+600.0 % (no CI: n = (2, 2); need 3 each) throughput (Tukey p 0.0061)." in two[0]
    assert "<a href" not in two[0] and "(figure)" not in two[0]
    assert findings.iosched_sentences(pd.DataFrame(), {"20-io-schedulers"}) == []


def _trace(tmp_path, same_scheduler: bool = False):
    """A processed set with only blk_requests: two traces (schedulers none, bfq) of one rados write phase.
    DB device 7,1 writes 4 KiB at sectors 0, 1000, 8, 8, 16, 0 in dispatch order; data device 7,0 writes
    64 KiB at 0, 128, 256, the last completing at 0.5 s."""
    db, data = 7 << 20 | 1, 7 << 20 | 0
    rows = []
    for src, sched in (("rb/r1/trace-write.blktrace", "none"), ("rb/r2/trace-write.blktrace", "bfq")):
        sched = "none" if same_scheduler else sched
        for i, sector in enumerate([0, 1000, 8, 8, 16, 0], start=1):
            rows.append(dict(dev=db, sector=sector, nbytes=4096, d_ns=1e6 * i, c_ns=1e6 * i + 2e5, source=src,
                             io_scheduler=sched))
        for sector, d in zip([0, 128, 256], [1.5e6, 2.5e6, 4.9e8]):
            rows.append(dict(dev=data, sector=sector, nbytes=65536, d_ns=d, c_ns=d + 1e7, source=src,
                             io_scheduler=sched))
    t = pd.DataFrame(rows).assign(rwbs="W", ddir="write", campaign="rb", scenario="rados-4k-qd16", rw="write",
                                  trace_dev_data="7,0", trace_dev_db="7,1")
    t.to_parquet(tmp_path / "blk_requests.parquet", index=False)
    return tmp_path


def test_workload_sentence_from_a_hand_made_trace(tmp_path):
    proc = _trace(tmp_path)
    s = findings.workload_sentences(*findings.workload_tables(proc, "rb"), {"40-block-workload"})
    assert len(s) == 1
    s = s[0]
    assert "(rb: 2 traces of 0.5 s, one per workload and scheduler, no repeats: no CI or p)" in s
    # per trace, of the 5 DB writes with a predecessor: strict only sector 16 (after 8 + 8 sectors); near all but
    # 1000 (992 sectors from the end at 8); rewrites: the second 8 (block 1) and the last 0 (block 0) of 6 writes
    assert "near-sequentially (0.800 of writes) but hardly ever strictly (0.200)" in s
    assert "33.3 % of its writes rewrote a 4 KiB block" in s
    # block 1 again right after itself: distance 0; block 0 after blocks 125, 1, 2: distance 3 (beyond 2 blocks)
    assert "2 of the 4 rewrites within a 2-block (8 KiB) LRU cache" in s
    assert "data device's writes were 1.000 strictly sequential, none a rewrite" in s
    assert "<a href='#40-block-workload'>figure</a>" in s
    pooled = findings.workload_sentences(*findings.workload_tables(_trace(tmp_path, True), "rb"), set())[0]
    assert "up to 2 per workload and scheduler, pooled: no CI" in pooled and pooled.endswith("none a rewrite.")
    assert findings.workload_tables(proc, "other-campaign") == (None, None, None)
    assert findings.workload_sentences(None, None, None, set()) == []


def test_rgw_sentence_from_hand_made_runs():
    from scipy import stats
    runs = pd.DataFrame({"arm": ["shards-1"] * 3 + ["shards-64"] * 3 + ["bucket-per-proc"] * 3,
                         "repeat": [1, 2, 3] * 3, "put_mib_s": [1.0, 2, 4, 2, 4, 8, 2, 4, 8]})
    cbt = pd.DataFrame({"arm": ["cbt-bucket-per-proc"] * 3, "repeat": [0, 1, 2], "put_mib_s": [2.0, 4, 8]})
    (s,) = findings.rgw_sentences(runs, cbt, {"50-rgw"}, {"rgw-put-by-arm"})
    # logs of 64 shards = logs of 1 shard + ln 2, each with variance ln²2: ratio 2, se √(2 ln²2 / 3), Welch df 4
    se, tq = math.sqrt(2 * math.log(2) ** 2 / 3), stats.t.ppf(0.975, 4)
    lo, hi = 100 * math.expm1(math.log(2) - tq * se), 100 * math.expm1(math.log(2) + tq * se)
    assert (round(lo, 1), round(hi, 1)) == (-58.4, 862.6)
    p = 2 * stats.t.sf(math.log(2) / se, 4)
    assert "On RGW (rgw-2026, 3 runs an arm), the getput diary's “more shards (64) write faster than one " \
           "unsharded bucket” is undecided" in s
    assert f"<code>shards-64</code> over <code>shards-1</code> +100.0 % [{lo:+.1f}, {hi:+.1f}] PUT throughput" in s
    # the bucket-per-proc claim has the same p: BH keeps q = p over the 2 claims tested (8 shards, rados: absent)
    assert f"(p {p:.2g}, BH q {p:.2g} over 2 tested claims;" in s and "p 0.29," in s
    assert "the diary's +161 % inside our CI" in s        # 574 / 220 = 2.609
    cl, ch = 100 * math.expm1(-tq * se), 100 * math.expm1(tq * se)
    assert f"CBT's own getput (3 iterations) against our harness's <code>bucket-per-proc</code>: " \
           f"+0.0 % [{cl:+.1f}, {ch:+.1f}] (p 1)" in s
    assert "<a href='#fig-rgw-put-by-arm'>figure</a>" in s
    assert "CBT" not in findings.rgw_sentences(runs, None, set())[0]
    assert findings.rgw_sentences(runs[runs["arm"] == "shards-1"], None, set()) == []   # nothing to test
    assert findings.rgw_sentences(pd.DataFrame(), None, set()) == []


def test_loaders_say_nothing_for_data_without_those_campaigns(tmp_path):
    from analysis.report import what_we_found
    # runs that name no campaign (a bare folder of fio outputs): the summary has no campaign column
    pd.DataFrame({"kind": ["fio-json"], "metric": ["bw"], "value": [1.0], "source": ["x.json"]}).to_parquet(
        tmp_path / "summary.parquet", index=False)
    assert findings.iosched_values(tmp_path).empty
    runs, cbt = findings.rgw_tables(tmp_path)
    assert runs.empty and cbt.empty
    assert findings.workload_tables(tmp_path) == (None, None, None)     # no blk_requests table at all
    (tmp_path / "reports").mkdir()
    assert what_we_found(tmp_path / "reports", {"20-io-schedulers", "50-rgw"}, tmp_path) == ""


# --- the same sentences on the shipped data agree with the notebooks' own functions --------------------

@pytest.fixture(scope="module")
def shipped_summary(real_proc):
    return read_table(real_proc, "summary", check=False)


def test_iosched_sentences_on_the_shipped_runs_agree_with_notebook_20(real_proc, shipped_summary):
    from analysis.stats import iosched
    from analysis.stats.consistency import effect_size
    values = pd.concat([iosched.block_values(shipped_summary, c) for c in ("block-2026", "rados-block-2026")],
                       ignore_index=True)   # as notebook 20 builds them, from the whole summary
    mine = findings.iosched_values(real_proc)
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), values, check_dtype=False)
    verdicts = iosched.workload_verdicts(values)                           # the notebook's table
    ours = iosched.workload_verdicts(values, detail=False).merge(verdicts, on=findings.WORKLOAD, suffixes=("", "_nb"))
    assert len(ours) == len(verdicts) == 60
    assert ours["anova_p"].to_numpy() == pytest.approx(ours["anova_p_nb"].to_numpy(), rel=1e-9)
    assert (ours["best"] == ours["best_nb"]).all() and (ours["worst"] == ours["worst_nb"]).all()
    assert ours["spread"].to_numpy() == pytest.approx(ours["spread_nb"].to_numpy())
    assert ours["cv"].to_numpy() == pytest.approx(ours["cv_nb"].to_numpy())
    s = findings.iosched_sentences(values, {"20-io-schedulers"})
    summ = iosched.campaign_summary(verdicts)
    # the notebook's conclusion: block-2026 ANOVA 9 of 48 (2.4 by chance), best mq-deadline 5, widest spread
    # raw read 4k QD 256, kyber over none by 44 %; rados-block-2026 0 of 12 (0.6)
    b, r = summ.loc["block-2026"], summ.loc["rados-block-2026"]
    assert (b["anova_sig"], b["workloads"], r["anova_sig"], r["workloads"]) == (9, 48, 0, 12)
    assert "in 9 of 48 workloads at α 0.05 (2.4 expected by chance), <code>mq-deadline</code> fastest in 5" in s[0]
    rej = verdicts[(verdicts["campaign"] == "block-2026") & (verdicts["anova_p"] < 0.05)]
    top = rej.loc[rej["spread"].idxmax()]
    assert (top["target"], top["op"], top["bs"], top["qd"], top["best"], top["worst"]) == \
        ("raw", "read", "4k", 256, "kyber", "none")
    assert "none<kyber" in top["tukey_pairs"].split()                      # the notebook's Tukey HSD separates them
    cell = values[(values[findings.WORKLOAD] == top[findings.WORKLOAD]).all(axis=1)]
    side = lambda s: cell.loc[cell["io_scheduler"] == s, "value"]  # noqa: E731
    e = effect_size(side("none"), side("kyber"))
    assert e["estimate"] == pytest.approx(top["spread"]) and round(100 * top["spread"]) == 44
    assert f"raw read 4k QD 256: <code>kyber</code> over <code>none</code> " \
           f"{findings._ci(100 * top['spread'], 100 * e['ci_low'], 100 * e['ci_high'])} throughput" in s[0]
    tukey = float(s[0].split("Tukey p ")[1].split(";")[0])
    assert tukey < 0.001                                                    # statsmodels prints p-adj 0.0000
    assert "in none of 12 workloads at α 0.05 (0.6 expected by chance)" in s[1]
    assert f"spread was {100 * r['spread_median']:+.1f} % at a median CV of {100 * r['cv_median']:.1f} %" in s[1]
    assert "+10.7 %" in s[1] and "11.8 %" in s[1]


def test_workload_sentence_on_the_shipped_traces_agrees_with_notebook_40(real_proc):
    from analysis.stats import blockio as bio
    # notebook 40's path: every campaign's requests prepared, then osd.0's two devices by phase and device
    req = bio.prepare(read_table(real_proc, "blk_requests", check=False), ["block-2026", "rados-block-2026"])
    win = bio.windows(req)
    rados = req[req["campaign"] == "rados-block-2026"]
    rwin = win[win["campaign"] == "rados-block-2026"].assign(
        device=lambda d: d["role"].map({"db": "metadata (DB)", "data": "data"}))
    md, _, dist, _ = bio.characterize(rados, rwin, ["phase", "device"])
    db, data = md.loc[("write", "metadata (DB)")], md.loc[("write", "data")]
    # the notebook's prose: strict 0.001, near 0.993, 49 % of DB writes rewrite a block, distance 1 for 1,178 of
    # 1,179; the data device 0.968 strictly sequential, no update
    assert (round(db["strict_ratio"], 3), round(db["near_ratio"], 3), round(db["update_ratio_req"], 2)) == \
        (0.001, 0.993, 0.49)
    d = dist.merge(rwin[["source", "dev", "phase", "role"]], on=["source", "dev"])
    d = d[(d["phase"] == "write") & (d["role"] == "db")]["distance"]
    assert (int((d <= 1).sum()), len(d)) == (1178, 1179) and db["updates"] == 1179
    (s,) = findings.workload_sentences(*findings.workload_tables(real_proc), {"40-block-workload"},
                                       {"workload-sequentiality"})
    assert f"near-sequentially ({db['near_ratio']:.3f} of writes) but hardly ever strictly " \
           f"({db['strict_ratio']:.3f})" in s
    assert f"{100 * db['update_ratio_req']:.1f} % of its writes rewrote" in s and "49.3 %" in s
    assert "1,178 of the 1,179 rewrites" in s
    assert f"writes were {data['strict_ratio']:.3f} strictly sequential, none a rewrite" in s and "0.968" in s
    assert "(rados-block-2026: 12 traces of 0.5 s, one per workload and scheduler, no repeats: no CI or p)" in s
    assert "<a href='#fig-workload-sequentiality'>figure</a>" in s


def test_rgw_sentence_on_the_shipped_runs_agrees_with_notebook_50(real_proc, shipped_summary):
    from analysis.stats import rgw
    series = read_table(real_proc, "series", check=False, filters=[("campaign", "in", ["rgw-2026"])])
    runs = rgw.run_table(shipped_summary, series, "rgw-2026")              # as the notebook builds it
    claims = rgw.claims(runs)
    c = claims.iloc[0]
    # the notebook: 64 shards over one unsharded bucket 1.29× (95 % CI 1.04–1.59, p 0.0372, BH q 0.0846), the
    # diary 2.61×: contradicted; CBT's getput over our bucket-per-proc 0.9983 (0.925–1.0775, p 0.948)
    assert (c["arm"], c["vs"], c["verdict"]) == ("shards-64", "shards-1", "contradicted")
    assert (round(c["ratio"], 2), round(c["lo"], 2), round(c["hi"], 2), round(c["p"], 4), round(c["q"], 4)) == \
        (1.29, 1.04, 1.59, 0.0372, 0.0846)
    cbt = rgw.cbt_vs_harness(rgw.cbt_runs(shipped_summary, "rgw/rgw-cbt-2026/"), runs, ref="bucket-per-proc").iloc[0]
    assert (round(cbt["ratio"], 4), round(cbt["p"], 3)) == (0.9983, 0.948)
    mine, mine_cbt = findings.rgw_tables(real_proc)
    pd.testing.assert_series_equal(mine["put_mib_s"], runs["put_mib_s"])   # the summary alone gives the same PUTs
    (s,) = findings.rgw_sentences(mine, mine_cbt, {"50-rgw"})
    pct = lambda x: 100 * (x - 1)  # noqa: E731
    assert "is contradicted: <code>shards-64</code> over <code>shards-1</code> " \
           f"{findings._ci(pct(c['ratio']), pct(c['lo']), pct(c['hi']))} PUT throughput" in s
    assert f"(p {c['p']:.2g}, BH q {c['q']:.2g} over 4 tested claims;" in s
    assert "the diary's +161 % outside our CI" in s
    assert f"{findings._ci(pct(cbt['ratio']), pct(cbt['lo']), pct(cbt['hi']))} (p {cbt['p']:.2g})" in s
    assert "<a href='#50-rgw'>figure</a>" in s


def test_what_we_found_says_what_the_block_and_rgw_studies_found(real_proc, tmp_path):
    from analysis.report import what_we_found
    reports = tmp_path / "reports"
    reports.mkdir()
    page = what_we_found(reports, {"20-io-schedulers", "50-rgw"}, real_proc, {"rgw-put-by-arm"})
    items = page.split("<li>")[1:]
    assert [i.split(" ", 3)[:3] for i in items][:4] == [["Across", "the", "blk-mq"]] * 2 + \
        [["On", "the", "traced"], ["On", "RGW", "(rgw-2026,"]]
    # links only to what the page has: 20's section (its figure is not anchored), no 40 section, 50's figure
    assert "<a href='#20-io-schedulers'>figure</a>" in items[0] and "<a href" not in items[2]
    assert "<a href='#fig-rgw-put-by-arm'>figure</a>" in items[3]

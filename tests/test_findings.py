"""analysis.findings, the report's first screen: the QoS protection rows are the pre-registered model's
contrasts of the best setting (checked against prereg on the shipped qos-v2 runs), and the sentences say
who protected the client with the numbers and CIs of the rows, linking to sections that exist."""

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
    assert "WPQ protected the client best" in s[0] and "-33.9 % [-44.8, -20.9]" in s[0]
    assert "scrub time -55.8 % [-63.9, -45.9]" in s[0] and "<a href='#33-qos-v2'>" in s[0]
    assert "<code>a2</code> protected the client better than WPQ" in s[1] and "(not distinguishable" in s[1]
    assert s[2].startswith("On Ceph Reef (qos-reef)") and "no op-queue setting changed" in s[2]
    assert "<a href" not in s[2]  # 35-versions is not in the page: no dead link
    assert findings.section([]) == "" and "<h1>What we found</h1>" in findings.section(s)


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

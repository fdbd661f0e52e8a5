from __future__ import annotations

import pandas as pd
import pytest

from analysis.overview import file_table


def test_file_table_sums_rates_and_weights_latency():
    files = pd.DataFrame({"path": ["a.json", "b.txt"], "kind": ["fio-json", None],
                          "tool_version": ["fio-3.33", None], "status": ["ok", "unrecognised"]})
    rows = [("a.json", "j0", "read", "iops", 100.0, "1/s"), ("a.json", "j1", "read", "iops", 300.0, "1/s"),
            ("a.json", "j0", "read", "bw", 1048576.0, "B/s"), ("a.json", "j1", "read", "bw", 3 * 1048576.0, "B/s"),
            ("a.json", "j0", "read", "clat_mean", 1000.0, "ns"), ("a.json", "j1", "read", "clat_mean", 3000.0, "ns"),
            ("a.json", "j0", "read", "total_ios", 1.0, "count"), ("a.json", "j1", "read", "total_ios", 3.0, "count"),
            ("a.json", "j0", "read", "clat_p99", 5000.0, "ns"), ("a.json", "j1", "read", "clat_p99", 9000.0, "ns")]
    summary = pd.DataFrame(rows, columns=["source", "job", "ddir", "metric", "value", "unit"])
    t = file_table(files, summary)
    a = t[t["path"] == "a.json"].iloc[0]
    assert a["iops"] == 400 and a["bw_MiB/s"] == 4 and a["jobs"] == 2
    assert a["lat_mean_us"] == pytest.approx((1 * 1.0 + 3 * 3.0) / 4)  # IO-weighted, µs
    assert a["p99_us"] == 9.0
    assert t[t["path"] == "b.txt"]["status"].item() == "unrecognised"


def test_unweighted_window_latency_is_a_check_apart_from_the_exact_ones():
    """An averaged clat log's unweighted window mean can be far from fio's per-IO mean without any parse
    error: it must not set the worst deviation of the exact log checks beside it."""
    import json
    from analysis.overview import crosscheck_rollup, crosscheck_table
    clat = {"crosscheck": {"read": {"compared": True, "rel_diff": 3.714,
                                    "note": "unweighted mean of window means vs fio's per-IO mean: close, not identical"}}}
    iops = {"crosscheck": {"read": {"compared": True, "rel_diff": 0.02,
                                    "note": "window means vs fio's whole-run figure: close, not identical"}}}
    files = pd.DataFrame({"path": ["t/c/r1/client_clat.1.log.gz", "t/c/r1/client_iops.1.log.gz"],
                          "kind": ["fio-log", "fio-log"], "meta_json": [json.dumps(clat), json.dumps(iops)]})
    cc = crosscheck_table(files)
    assert list(cc["check"]) == ["window latency vs fio (unweighted: indicative)", "log vs fio summary"]
    r = crosscheck_rollup(cc).set_index("check")
    assert r.loc["log vs fio summary", "worst"] == pytest.approx(0.02)
    assert r.loc["window latency vs fio (unweighted: indicative)", "worst"] == pytest.approx(3.714)


def _files(**extra) -> pd.DataFrame:
    import json
    rows = [  # path, kind, status, campaign, run, manifest, error, error_line, meta
        ("MANIFEST.sha256", "MANIFEST.sha256", "context", None, None, None, None, None, None),
        ("q/a/run.json", "run.json", "context", "qos-1", "q/a", "ok", None, None, None),
        ("q/a/fio.json", "fio-json", "ok", "qos-1", "q/a", "ok", None, None, None),
        ("q/b/fio.json", "fio-json", "partial", "qos-1", "q/b", "ok", None, None,
         json.dumps({"interrupted": True})),
        ("q/b/tl.jsonl", "ceph-pg-timeline", "partial", "qos-1", "q/b", "ok", None, None,
         json.dumps({"incomplete": ["deep scrub of pool 'scrub' unfinished: 31 of 32 PGs done",
                                    "recovery unfinished at the end of the timeline"]})),
        ("q/c/tl.jsonl", "ceph-pg-timeline", "partial", "qos-1", "q/c", "ok", None, None,
         json.dumps({"incomplete": ["deep scrub of pool 'scrub' unfinished: 29 of 32 PGs done"]})),
        ("b/x/fio.json", "fio-json", "ok", "blk-1", "b/x", "ok", None, None, None),
        ("b/y/rados.txt", "rados-bench", "failed", "blk-1", "b/y", "MISMATCH",
         "sha256 differs from MANIFEST.sha256", None, None),
        ("b/z/btt.txt", "btt", "failed", "blk-1", "b/z", "ok", "device row does not parse", 17, None),
        ("notes.md", "note", "context", None, None, "missing", None, None, None),
    ]
    f = pd.DataFrame(rows, columns=["path", "kind", "status", "campaign", "run", "manifest", "error", "error_line",
                                    "meta_json"])
    return f.assign(**extra)


def test_ingest_conclusion_counts_statuses_campaigns_reasons_failures_and_the_manifest():
    from analysis.overview import ingest_conclusion
    lines = ingest_conclusion(_files()).split("\n")
    assert lines[:2] == ["## Conclusions", ""]
    assert lines[2] == ("- **Files.** 10 in the tree: 2 ok, 3 partial, 2 failed, 3 context; "
                        "5 read into the tables (ok or partial).")
    assert lines[3] == "- **Campaigns.** 2 with 6 runs: `blk-1` 3, `qos-1` 3; 2 files in no campaign."
    assert lines[4] == ("- **Partial: 3 files** (ceph-pg-timeline 2; fio-json 1), values kept as the file holds "
                        "them; why: fio terminated on a signal in 1; deep scrub of pool 'scrub' unfinished in 2 "
                        "(e.g. 31 of 32 PGs done); recovery unfinished at the end of the timeline in 1.")
    assert lines[5] == ("- **Failed: 2 files** (btt 1; rados-bench 1), none of their rows in the tables: "
                        "`b/y/rados.txt`: sha256 differs from MANIFEST.sha256; `b/z/btt.txt:17`: device row "
                        "does not parse.")
    assert lines[6] == ("- **Manifest.** 7 of 9 files match `MANIFEST.sha256`: 1 MISMATCH, 1 missing "
                        "(failed, or read under `--lenient`).")
    assert len(lines) == 7
    # more failures than examples: the rest are counted; no manifest in the tree: nothing verified
    f = _files()
    f = f[f["kind"] != "MANIFEST.sha256"].assign(status="failed", error="bad", manifest=None)
    text = ingest_conclusion(f, examples=2)
    assert "- **Failed: 9 files**" in text and "(and 7 more, listed above)." in text
    assert "- **Partial:** none." in text
    assert text.endswith("- **Manifest.** The tree has no `MANIFEST.sha256`: no file's SHA-256 was checked.")

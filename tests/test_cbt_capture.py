"""capture.cbt (CBT run for real against the project's cluster) without Ceph: the campaign file, the YAML CBT
is given, the archive check and compression, the ingest of a gzipped archive, and the pilot gate."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.ingest.walk import ingest
from analysis.stats import cbt_pilot as cpl
from capture.cbt import campaign as cc
from capture.cbt.__main__ import gzip_tree, pilot_iterations
from capture.ceph.campaign import CampaignError
from conftest import FIXTURES, ROOT

CAMPAIGN = ROOT / "capture" / "campaigns" / "cbt-2026.yaml"


def test_the_shipped_campaign_gives_cbt_an_existing_cluster_on_localhost_and_the_prefilled_volume():
    doc = cc.load(CAMPAIGN)
    cfg = cc.cbt_config(doc, conf_file="/var/tmp/cephqos-cbt/ceph.conf", mon_addr="127.0.0.1:6789",
                        tmp_dir="/abs/tmp", iterations=4, image=("cbt-librbdfio", "cbt-librbdfio-img"))
    c = cfg["cluster"]
    assert c["use_existing"] is True and c["iterations"] == 4 and c["is_teuthology"] is True
    assert (c["head"], c["clients"], c["osds"]) == ("localhost", ["localhost"], ["localhost"])
    assert c["mons"] == {"localhost": {"a": "127.0.0.1:6789"}} and c["osds_per_node"] == 4
    assert c["pool_profiles"]["radosbench"]["pg_size"] == 32   # the campaign's own CBT section passes through
    lib = cfg["benchmarks"]["librbdfio"]
    assert (lib["use_existing_volumes"], lib["poolname"], lib["rbdname"], lib["vol_size"], lib["no_sudo"]) == \
        (True, "cbt-librbdfio", "cbt-librbdfio-img", 1024, True)
    assert lib["mode"] == ["randwrite", "randread"]
    assert "user" not in c  # a user makes CBT address root@localhost, which it sends through pdsh/ssh
    assert "use_existing_volumes" not in doc["cbt"]["benchmarks"]["librbdfio"]  # the doc is not modified
    # librbdfio: one fio output per mode and iteration; radosbench: write + seq per iteration
    assert cc.expected_outputs(doc, 3) == {"librbdfio": 6, "radosbench": 6}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(ceph="reef"), "expected pacific"),
    (lambda d: d["cbt"].setdefault("cluster", {}).update(head="node1"), "the harness sets these"),
    (lambda d: d["cbt"]["benchmarks"].update(hsbench={}), "cbt.benchmarks.hsbench"),
    (lambda d: d.update(campaign_arms=["wpq", "nope"]), "campaign_arms"),
    (lambda d: d.update(iterations=0), "iterations"),
    (lambda d: d["pilot"].update(iterations=1), "pilot.iterations"),
    (lambda d: d["arms"]["wpq"].update(osd_op_queue="fifo"), "arms.wpq"),
])
def test_a_campaign_the_harness_cannot_run_is_refused_naming_the_key(change, message):
    doc = yaml.safe_load(CAMPAIGN.read_text())
    change(doc)
    with pytest.raises(CampaignError, match=message):
        cc.validate(doc, "x.yaml")


def test_arm_order_is_seeded_and_differs_between_pilot_and_campaign():
    doc = cc.load(CAMPAIGN)
    arms = ["wpq", "high_client_ops", "high_recovery_ops"]
    a = cc.arm_order(doc, arms)
    assert a == cc.arm_order(doc, arms) and sorted(a) == sorted(arms)
    orders = {tuple(cc.arm_order({**doc, "seed": s}, arms)) for s in range(20)}
    assert len(orders) > 1  # the seed moves it


def test_gzip_tree_compresses_every_nonempty_file_reproducibly(tmp_path):
    for d in ("a", "b"):
        t = tmp_path / d / "results" / "00000000" / "id-1"
        t.mkdir(parents=True)
        (t / "output.0.localhost").write_text("fio-3.33\n" * 100)
        (t / "historic_ops.out").write_text("")
    assert gzip_tree(tmp_path / "a") == 1
    out = tmp_path / "a" / "results" / "00000000" / "id-1"
    assert sorted(p.name for p in out.iterdir()) == ["historic_ops.out", "output.0.localhost.gz"]
    assert gzip.decompress((out / "output.0.localhost.gz").read_bytes()) == b"fio-3.33\n" * 100
    gzip_tree(tmp_path / "b")
    assert (tmp_path / "b" / "results" / "00000000" / "id-1" / "output.0.localhost.gz").read_bytes() == \
        (out / "output.0.localhost.gz").read_bytes()  # no name or time in the header


def _archive(root, arch, queue, iters=2, scale=1.0):
    """A CBT archive after CBT's layout (cbt/benchmark/librbdfio.py): fio's stdout in output.0.<host>,
    its JSON extract beside it, the OSD's settings, the benchmark's config.  Hand-made for the pilot gate
    only, which needs a change of known size (``scale``) that the real archive (tests/test_cbt_archive.py)
    cannot give."""
    fio = json.loads((FIXTURES / "fio" / "randrw-4k-perio" / "randrw-4k-perio.json").read_text())
    for it in range(iters):
        run = root / arch / "results" / f"{it:08d}" / "id-5f2a9c"
        run.mkdir(parents=True)
        (run / "benchmark_config.yaml").write_text(yaml.safe_dump(
            {"cluster": {"benchmark": "librbdfio", "iteration": it, "op_size": 4096, "iodepth": 16,
                         "mode": "randwrite"}}))
        doc = json.loads(json.dumps(fio))
        for job in doc["jobs"]:
            for dd in ("read", "write"):
                f = scale * (1 + 0.01 * it)
                job[dd]["iops"] = job[dd]["iops"] * f
                job[dd]["runtime"] = job[dd]["runtime"] / f  # the same IOs in less time: fio's identity holds
        src = json.dumps(doc)
        (run / "output.0.localhost").write_text("fio-3.33\nStarting 1 process\n" + src)
        (run / "json_output.0.localhost").write_text(src)
        (run / "ceph_settings.out.localhost").write_text(json.dumps(
            {"name": "osd.0", "osd_op_queue": queue, "osd_mclock_profile": "high_client_ops"}))
    return root / arch


def _sysutil_series(arm, queued, inflight, cpu):
    n = len(queued)
    rows = []
    for t in range(n):
        for osd in range(2):
            rows += [(arm, "sysutil", f"osd.{osd}", "osd_queued", queued[t] if osd == 0 else 0, t),
                     (arm, "sysutil", f"osd.{osd}", "osd_in_flight", inflight[t], t)]
        rows += [(arm, "sysutil", "cpu0", "cpu_busy", cpu[t], t), (arm, "sysutil", "cpu1", "cpu_busy", cpu[t], t)]
    return pd.DataFrame(rows, columns=["arm", "kind", "job", "metric", "value", "t_s"])


def test_arm_regime_takes_queue_and_cpu_over_the_busy_samples_only():
    # 3 idle samples (CBT's idle monitoring) then 4 busy ones
    s = _sysutil_series("wpq", [0, 0, 0, 10, 12, 14, 20], [0, 0, 0, 5, 5, 5, 5], [0.0, 0.0, 0.0, .3, .3, .5, .5])
    r = cpl.arm_regime(s).set_index("arm").loc["wpq"]
    assert r["busy_s"] == 4 and r["queue_max_osd"] == 13.0   # median of 10, 12, 14, 20
    assert r["queue_per_osd"] == 6.5 and r["cpu_busy"] == pytest.approx(0.4)


def test_iterations_are_the_largest_need_among_cells_the_budget_can_detect():
    t = pd.DataFrame({"repeats_needed": [2.0, 4.2, 55.0, np.nan, 8.0], "delta_pct": [-30.0, 9.0, 2.0, 1.0, 0.02]})
    assert cpl.iterations_for(t) == (5, 2)   # the 0.02 % change "needing" 8 runs is below min_effect_pct
    assert cpl.iterations_for(pd.DataFrame({"repeats_needed": [2.0], "delta_pct": [12.0]})) == (3, 1)   # at least 3
    assert cpl.iterations_for(pd.DataFrame({"repeats_needed": [40.0, np.nan], "delta_pct": [6.0, 9.0]})) == (None, 0)


def test_the_gate_says_go_for_a_clear_throughput_change_in_a_queued_device_bound_regime(tmp_path):
    _archive(tmp_path, "wpq", "wpq")
    _archive(tmp_path, "high_client_ops", "mclock_scheduler", scale=0.7)   # 30 % fewer IOPS, 1 % spread
    res = ingest(tmp_path, progress=False)
    busy = _sysutil_series("wpq", [9] * 5, [4] * 5, [.2] * 5)
    cool = _sysutil_series("high_client_ops", [9] * 5, [4] * 5, [.2] * 5)
    hot = _sysutil_series("high_client_ops", [9] * 5, [4] * 5, [.9] * 5)
    out = cpl.verdict(res.summary, pd.concat([busy, cool]), ("wpq", "high_client_ops"), ["wpq", "high_client_ops"])
    assert out["go"] and out["iterations"] == 3, out["why"]
    p = out["pairs"]["high_client_ops|wpq"]
    iops = [r for r in p["table"] if r["metric"] == "iops"]
    assert iops and all(r["n_old"] == 2 and r["n_new"] == 2 for r in iops)
    # old = high_client_ops (sorted), new = wpq: wpq has 1/0.7 the IOPS, +43 %
    assert all(abs(r["delta_pct"] - 100 * (1 / 0.7 - 1)) < 3 for r in iops)
    # the same data with a CPU-bound mClock arm: no-go, and why
    out = cpl.verdict(res.summary, pd.concat([busy, hot]), ("wpq", "high_client_ops"), ["wpq", "high_client_ops"])
    assert not out["go"] and "high_client_ops: machine 90 % busy" in out["why"]


def test_pilot_iterations_reads_the_verdict_and_refuses_a_no_go(tmp_path):
    assert pilot_iterations(tmp_path)[0] is None
    (tmp_path / "pilot.json").write_text(json.dumps({"go": True, "iterations": 5, "arms": ["wpq", "b"]}))
    assert pilot_iterations(tmp_path)[:2] == (5, ["wpq", "b"])
    (tmp_path / "pilot.json").write_text(json.dumps({"go": False, "why": "queue empty"}))
    it, _, why = pilot_iterations(tmp_path)
    assert it is None and "no-go (queue empty)" in why


CBT = ROOT.parent / "shared" / "tools" / "cbt"


def _cbt_python_ok() -> bool:
    import subprocess
    try:
        return subprocess.run(["/usr/bin/python3", "-c", "import yaml, lxml"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not (CBT / "cbt.py").is_file() or not _cbt_python_ok(),
                    reason="needs ../shared/tools/cbt and Debian's python3-yaml + python3-lxml (make tools)")
def test_cbt_runs_a_benchmark_only_if_its_results_folder_exists_unless_is_teuthology(tmp_path):
    """Why the harness sets is_teuthology: CBT 9d6480f's run loop (cbt.py) skips every benchmark whose results
    folder does not exist yet, and only initialize() of the first benchmark of a class makes one.  CBT itself,
    run here on the harness's YAML for librbdfio with /bin/true for fio, rbd and ceph: 2 iterations × 2 modes
    run once without is_teuthology, 4 times with it."""
    import subprocess
    conf = tmp_path / "ceph.conf"
    conf.write_text("[global]\n")
    doc = {"cbt": {"benchmarks": {"librbdfio": {"mode": ["randwrite", "randread"], "op_size": 4096,
                                                "cmd_path": "/bin/true", "no_sudo": True, "idle_monitor_sleep": 0,
                                                "wait_pgautoscaler_timeout": 0, "time": 1}},
                   "cluster": {"rbd_cmd": "/bin/true", "ceph_cmd": "/bin/true", "rados_cmd": "/bin/true"}},
           "cluster": {"osds": 1}, "client": {"image_mib": 1}}
    ran = {}
    for teuth in (False, True):
        cfg = cc.cbt_config(doc, conf_file=str(conf), mon_addr="127.0.0.1:6789",
                            tmp_dir=str(tmp_path / f"tmp-{teuth}"), iterations=2, image=("p", "i"))
        cfg["cluster"]["is_teuthology"] = teuth
        y = tmp_path / f"cbt-{teuth}.yaml"
        y.write_text(yaml.safe_dump(cfg))
        arch = tmp_path / f"archive-{teuth}"
        p = subprocess.run(["/usr/bin/python3", str(CBT / "cbt.py"), "-a", str(arch), str(y)], cwd=CBT,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-800:]
        ran[teuth] = sorted(str(c.parent.relative_to(arch)) for c in arch.glob("results/*/id-*/output.0.localhost"))
    assert len(ran[False]) == 1 and ran[False][0].startswith("results/00000000/")
    assert len(ran[True]) == 4 and {r.split("/")[1] for r in ran[True]} == {"00000000", "00000001"}

"""Rig v3 (capture/ceph/devclass.py, qos-v3.yaml) without root or Ceph: the disk's rotational flag in a
fake /sys tree, the OSD bench's rate, the OSDs' reported flag, and the campaign rules that go with them."""

from __future__ import annotations

import json

import pytest

from capture.ceph import campaign as cp
from capture.ceph import devclass as dc
from conftest import ROOT
from test_capture import small_doc

V3 = ROOT / "capture" / "campaigns" / "qos-v3.yaml"


def _sys(tmp_path, value: str):
    q = tmp_path / "254:0" / "queue"
    q.mkdir(parents=True)
    (q / "rotational").write_text(value)
    return tmp_path


def test_the_flag_is_set_and_put_back(tmp_path):
    root = _sys(tmp_path, "1\n")
    r = dc.Rotational("254:0", 0, root)
    assert r.apply() == {"device": "254:0", "rotational_before": 1, "rotational_set": 0}
    assert (root / "254:0/queue/rotational").read_text() == "0\n"
    r.restore()
    assert (root / "254:0/queue/rotational").read_text() == "1\n"
    r.restore()  # idempotent: nothing to put back twice
    assert (root / "254:0/queue/rotational").read_text() == "1\n"
    with pytest.raises(OSError, match="no rotational flag for block device 8:0"):
        dc.Rotational("8:0", 0, root)


def test_bench_rate_from_its_json():
    # hand-made values under the keys the bench's JSON has (bytes_written, blocksize, elapsed_sec,
    # bytes_per_sec, iops); the pilot's real figures are in its run.json cluster.mclock_capacity
    doc = {"bytes_written": 12288000, "blocksize": 4096, "elapsed_sec": 10.25, "bytes_per_sec": 1198829.3,
           "iops": 292.68}
    assert dc.bench_iops(doc) == 292.68
    assert dc.bench_iops({"bytes_written": 12288000, "elapsed_sec": 10.0}) == pytest.approx(300.0)
    with pytest.raises(ValueError, match="no rate"):
        dc.bench_iops({"bytes_written": 0, "elapsed_sec": 0})


def test_rotational_reported_per_osd():
    meta = [{"id": 0, "bluestore_bdev_rotational": "0"}, {"id": 1, "bluestore_bdev_rotational": "1"}]
    assert dc.rotational_of(meta) == {"osd.0": "0", "osd.1": "1"}


def test_v3_is_the_seeds_client_and_one_budget():
    doc = cp.load(V3)
    assert doc["cluster"]["device_class"] == "ssd" and doc["cluster"]["mclock_capacity"] == "bench"
    c = doc["client"]
    assert (c["rw"], c["bs"], c["iodepth"], c["runtime_s"]) == ("randwrite", "4k", 64, 300)
    sc = doc["scenarios"]
    assert sc["scrub"]["client"]["rw"] == "randread" and "snaptrim" not in json.dumps(sc["scrub"])
    assert sc["scrub"]["osd_config"]["bluestore_throttle_bytes"] == 2 * 2**20
    assert doc["osd_config"]["bluestore_throttle_bytes"] == 256 * 1024
    assert not any("recovery" in s.get("background", []) for s in sc.values())
    p = cp.pilot_doc(doc)
    assert p["scenarios"]["scrub"]["arms"] == ["wpq", "high_client_ops", "high_client_ops_cost20m"]
    assert sorted(p["scenarios"]["baseline_read"]["arms"]) == ["high_client_ops", "wpq"]
    assert len(cp.plan(p)) == 9


def test_capacity_and_device_class_rules():
    base = small_doc(throttle={"read_iops": 300, "write_iops": 300})
    base["cluster"]["mclock_capacity"] = "bench"  # capacity need not equal the limit: each OSD measures it
    cp.validate(base)
    with pytest.raises(cp.CampaignError, match="must equal throttle.read_iops"):  # a set capacity must
        cp.validate({**base, "cluster": {**base["cluster"], "mclock_capacity": "set"}})
    plain = small_doc()
    with pytest.raises(cp.CampaignError, match="mclock_capacity must be"):
        cp.validate({**plain, "cluster": {**plain["cluster"], "mclock_capacity": "guess"}})
    with pytest.raises(cp.CampaignError, match="device_class must be"):
        cp.validate({**plain, "cluster": {**plain["cluster"], "device_class": "hdd"}})
    three = small_doc()
    three["scenarios"]["scrub"]["pilot_arms"] = ["wpq", "custom", "wpq"]
    with pytest.raises(cp.CampaignError, match="pilot_arms must name two or more different arms"):
        cp.validate(three)

"""Ceph 18.2 (Reef) in the harness (issue 24): the chroot's pure parts, Reef's option units, the release
setting, and one real bring-up (root and the chroot of ``make ceph-reef`` only; skipped otherwise)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from capture.ceph import campaign as cp
from capture.ceph import chroot as ch
from capture.ceph import cluster as clmod
from capture.ceph import config as cfg
from capture.ceph import runner as rn

REEF_V = "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)"
PACIFIC_V = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"


def test_mirror_from_sources_reads_deb822_and_one_line_files_and_skips_security():
    deb822 = ("Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
              "URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n")
    assert ch.mirror_from_sources(deb822) == "http://deb.debian.org/debian"
    sec_first = "URIs: http://deb.debian.org/debian-security\n\nURIs: http://ftp.fr.debian.org/debian\n"
    assert ch.mirror_from_sources(sec_first) == "http://ftp.fr.debian.org/debian"
    line = "# comment\ndeb [arch=amd64] http://mirror.example/debian bookworm main\n"
    assert ch.mirror_from_sources(line) == "http://mirror.example/debian"
    assert ch.mirror_from_sources("deb-src http://x/debian bookworm main\n") is None


def test_parse_ceph_version_both_releases_and_junk():
    r = ch.parse_ceph_version(REEF_V)
    assert (r["version"], r["major"], r["minor"], r["patch"], r["release"]) == ("18.2.7", 18, 2, 7, "reef")
    assert r["sha1"].startswith("6b0e9880")
    p = ch.parse_ceph_version(PACIFIC_V + "\n")
    assert (p["version"], p["release"]) == ("16.2.15", "pacific")
    with pytest.raises(ValueError, match="not a ceph version"):
        ch.parse_ceph_version("ceph: command not found")


def test_chroot_argv_execs_in_place_and_sets_the_directory_before_assignments():
    assert ch.chroot_argv(None, ["ceph", "-s"]) == ["ceph", "-s"]
    a = ch.chroot_argv(Path("/r"), ["fio", "--x"], cwd="/var/tmp/s")
    assert a[:3] == ["chroot", "/r", "/usr/bin/env"]
    # env's options come before its NAME=VALUE words (the first smoke failed on `env LC_ALL=C -C …`)
    assert a[3:5] == ["-C", "/var/tmp/s"] and a.index("-C") < a.index("LC_ALL=C")
    assert a[-2:] == ["fio", "--x"]


def test_missing_packages_reads_dpkg_status():
    status = ("Package: ceph-osd\nStatus: install ok installed\n\n"
              "Package: fio\nStatus: deinstall ok config-files\n\n"
              "Package: ceph-mon\nStatus: install ok installed\n")
    assert ch.missing_packages(status, ["ceph-osd", "ceph-mon", "fio", "procps"]) == ["fio", "procps"]


def test_bcrypt_stub_is_python_and_refuses_hashing():
    ast.parse(ch.BCRYPT_STUB)
    ns: dict = {}
    exec(ch.BCRYPT_STUB, ns)
    assert ns["__version__"] == "0-stub"
    for f in ("gensalt", "hashpw", "checkpw", "kdf"):
        with pytest.raises(NotImplementedError, match="PyO3"):
            ns[f](b"x")
    assert ch.BCRYPT_STUB_PATH == "usr/share/ceph/mgr/bcrypt.py"  # first on the mgr's module path


def test_ceph_conf_for_a_second_cluster_takes_its_own_address_and_ports():
    conf = cfg.render_ceph_conf("f", "/var/tmp/c", 1 << 30, 1 << 30, ip="127.0.0.2", ports=(7400, 7600))
    assert "mon_host = [v2:127.0.0.2:3300,v1:127.0.0.2:6789]" in conf
    assert "public_addr = 127.0.0.2" in conf and "cluster_addr = 127.0.0.2" in conf
    assert "ms_bind_port_min = 7400" in conf and "ms_bind_port_max = 7600" in conf
    host = cfg.render_ceph_conf("f", "/var/tmp/c", 1 << 30, 1 << 30)
    assert "127.0.0.1:3300" in host and "ms_bind_port_min" not in host


def test_reef_custom_allocations_are_fractions_of_capacity():
    """Reef 18.2.7 (``ceph config help``): res and lim are 0–1.0 of the OSD's capacity, lim 0 = none."""
    hco = {"client": {"res": "50%", "wgt": 2, "lim": "MAX"},
           "background_recovery": {"res": "25%", "wgt": 1, "lim": "100%"},
           "background_best_effort": {"res": "25%", "wgt": 1, "lim": "30%"}}
    got = cfg.custom_allocations(hco, 300, 1, release="reef")
    assert got == {"osd_mclock_scheduler_client_res": 0.5, "osd_mclock_scheduler_client_wgt": 2,
                   "osd_mclock_scheduler_client_lim": 0.0,
                   "osd_mclock_scheduler_background_recovery_res": 0.25,
                   "osd_mclock_scheduler_background_recovery_wgt": 1,
                   "osd_mclock_scheduler_background_recovery_lim": 1.0,
                   "osd_mclock_scheduler_background_best_effort_res": 0.25,
                   "osd_mclock_scheduler_background_best_effort_wgt": 1,
                   "osd_mclock_scheduler_background_best_effort_lim": 0.3}
    # a limit above the capacity limits nothing: Reef's 0; the seed's client res 1 is 1 IOPS of 300
    bal = cfg.custom_allocations({**hco, "background_recovery": {"res": "25%", "wgt": 1, "lim": "150%"}},
                                 300, 1, release="reef")
    assert bal["osd_mclock_scheduler_background_recovery_lim"] == 0.0
    seed = cfg.custom_allocations(cfg.SEED_CUSTOM, 300, 1, release="reef")
    assert seed["osd_mclock_scheduler_client_res"] == pytest.approx(1 / 300, abs=1e-6)
    assert seed["osd_mclock_scheduler_client_lim"] == 0.8
    # the same seed allocation on Pacific: whole IOPS per shard
    assert cfg.custom_allocations(cfg.SEED_CUSTOM, 300, 1)["osd_mclock_scheduler_client_lim"] == 240
    with pytest.raises(ValueError, match="reservations add up"):
        cfg.custom_allocations({**hco, "client": {"res": "60%", "wgt": 1, "lim": 0}}, 300, 1, release="reef")
    with pytest.raises(ValueError, match="release"):
        cfg.custom_allocations(hco, 300, 1, release="quincy")


def test_base_settings_per_release_only_options_the_release_has():
    p, r = cfg.base_settings(300), cfg.base_settings(300, release="reef")
    assert "osd_mclock_cost_per_io_usec_hdd" in p and "osd_mclock_cost_per_io_usec_hdd" not in r
    assert not (set(r) & cfg.PACIFIC_ONLY) and not (set(p) & cfg.REEF_ONLY)
    assert r["osd_mclock_max_sequential_bandwidth_hdd"] == 1258291200  # Reef's ssd default, pinned
    assert r["osd_mclock_max_capacity_iops_hdd"] == r["osd_mclock_max_capacity_iops_ssd"] == 300
    assert r["osd_mclock_skip_benchmark"] == "true"  # else Reef measures and falls back to 315 (the note)
    a = cfg.arm_settings({"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "custom",
                          "extra": {"osd_mclock_cost_per_io_usec_hdd": 9}}, 300, 1, release="reef")
    assert "osd_mclock_cost_per_io_usec_hdd" not in a and a["osd_mclock_scheduler_client_lim"] == 0.8
    assert set(cfg.REEF_ONLY) - {"osd_mclock_iops_capacity_threshold_ssd",
                                 "osd_mclock_force_run_benchmark_on_init"} <= set(cfg.RECORDED_KEYS)


def test_campaign_release_setting():
    doc = {"campaign": "t", "seed": 1, "cluster": {"osds": 4, "osd_size_gib": 8, "osd_memory_target_mib": 1024,
                                                   "mclock_capacity_iops": 300},
           "client": {"image_mib": 64, "rw": "randread", "bs": "4k", "iodepth": 8, "runtime_s": 10},
           "arms": {"wpq": {"osd_op_queue": "wpq"}}, "scenarios": {"baseline": {"arms": ["wpq"]}}}
    assert cp.validate(json.loads(json.dumps(doc)))["ceph"] == "pacific"
    assert cp.validate({**json.loads(json.dumps(doc)), "ceph": "reef"})["ceph"] == "reef"
    with pytest.raises(cp.CampaignError, match="'ceph' must be pacific.*or reef.*quincy"):
        cp.validate({**json.loads(json.dumps(doc)), "ceph": "quincy"})


def test_reef_cluster_paths_and_commands_are_seen_from_inside_the_chroot():
    cl = clmod.Cluster(Path("/var/tmp/cq"), 1, 1 << 30, 1 << 30, log=lambda m: None, release="reef")
    assert cl.dir == ch.DEFAULT_ROOT / "var/tmp/cq" and cl.ip == "127.0.0.2"
    assert cl.conf_arg == "/var/tmp/cq/ceph.conf" and cl.inside(cl.dir / "run") == "/var/tmp/cq/run"
    a = cl.argv(["fio", "x"], cwd=cl.dir / "stage")
    assert a[:2] == ["chroot", str(ch.DEFAULT_ROOT)] and a[a.index("-C") + 1] == "/var/tmp/cq/stage"
    h = cl.helper_argv("pgpoll.py")
    assert h[h.index("/usr/bin/python3") + 1] == "/var/tmp/cq/helpers/pgpoll.py"
    host = clmod.Cluster(Path("/var/tmp/cq"), 1, 1 << 30, 1 << 30, log=lambda m: None)
    assert host.argv(["ceph"], cwd=Path("/x")) == ["ceph"] and host.conf_arg == "/var/tmp/cq/ceph.conf"
    with pytest.raises(clmod.ClusterError, match="release 'quincy'"):
        clmod.Cluster(Path("/x"), 1, 1, 1, release="quincy")


def test_a_chroot_daemon_is_ours_only_with_our_conf_and_our_root(tmp_path, monkeypatch):
    wd = tmp_path / "root" / "var/tmp/cq"
    argv = ["ceph-osd", "-f", "-i", "0", "--conf", "/var/tmp/cq/ceph.conf"]
    monkeypatch.setattr(clmod, "_cmdline", lambda pid: argv)
    monkeypatch.setattr(clmod.os, "readlink", lambda p: str(tmp_path / "root"))
    assert clmod._is_ours(42, wd)
    monkeypatch.setattr(clmod.os, "readlink", lambda p: "/")  # a host daemon with the same inside path
    assert not clmod._is_ours(42, wd)
    monkeypatch.setattr(clmod.os, "readlink", lambda p: str(tmp_path / "other"))
    assert not clmod._is_ours(42, wd)


def test_runner_checks_the_release_the_daemons_run():
    me = SimpleNamespace(release="reef")
    assert rn.Runner.ceph_version(me, {"overall": {REEF_V: 6}}) == "18.2.7"
    with pytest.raises(clmod.ClusterError, match="asks for ceph reef.*16.2.15"):
        rn.Runner.ceph_version(me, {"overall": {PACIFIC_V: 6}})
    with pytest.raises(clmod.ClusterError, match="2 versions"):
        rn.Runner.ceph_version(me, {"overall": {REEF_V: 5, PACIFIC_V: 1}})


# ----------------------------------------------------------------------------- a real Reef cluster
def _reef_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (Ceph daemons in a chroot)"
    if not (ch.DEFAULT_ROOT / "usr/bin/ceph-osd").exists():
        return f"no Reef chroot at {ch.DEFAULT_ROOT} (sudo make ceph-reef builds it)"
    if clmod._port_open(3300, "127.0.0.2"):
        return "a cluster already listens on 127.0.0.2:3300"
    return None


@pytest.mark.skipif(_reef_skip_reason() is not None, reason=str(_reef_skip_reason()))
def test_one_osd_reef_cluster_runs_fio_for_10_s(tmp_path):
    ch.mount(ch.DEFAULT_ROOT)
    wd = Path("/var/tmp/cephqos-reef-itest")
    cl = clmod.Cluster(wd, 1, 4 << 30, 1 << 30, log=lambda m: None, release="reef")
    clmod.preflight(cl.dir, cl.ip)
    t0 = time.time()
    try:
        cl.up({**cfg.base_settings(300, release="reef"),
               **cfg.arm_settings({"osd_op_queue": "mclock_scheduler", "osd_mclock_profile": "high_client_ops"},
                                  300, 1, release="reef")})
        up_s = time.time() - t0
        v = ch.parse_ceph_version(next(iter(cl.ceph("versions", fmt_json=True)["overall"])))
        assert (v["major"], v["release"]) == (18, "reef")
        cl.ceph("config", "set", "global", "mon_allow_pool_size_one", "true")
        cl.ceph("osd", "pool", "create", "t", "8", "8")
        cl.ceph("osd", "pool", "set", "t", "size", "1", "--yes-i-really-mean-it")
        subprocess.run(cl.argv(["rbd", "--conf", cl.conf_arg, "create", "t/img", "--size", "256M"]), check=True)
        shown = cl.osd_config(0, with_defaults=True)
        assert shown["osd_op_queue"] == "mclock_scheduler" and shown["osd_mclock_profile"] == "high_client_ops"
        # Reef's high_client_ops as the OSD reports it (the chroot note's table): client res 0.6 wgt 2
        assert float(shown["osd_mclock_scheduler_client_res"]) == pytest.approx(0.6)
        assert int(float(shown["osd_mclock_scheduler_client_wgt"])) == 2
        assert float(shown["osd_mclock_max_capacity_iops_hdd"]) == 300
        work = cl.dir / "stage"
        work.mkdir()
        p = subprocess.run(cl.argv(["fio", "--name=t", "--ioengine=rbd", "--clientname=admin", "--pool=t",
                                    "--rbdname=img", "--rw=randwrite", "--bs=4k", "--iodepth=8",
                                    "--time_based", "--runtime=10", "--output-format=json",
                                    "--output=fio.json"], cwd=work),
                           env=dict(os.environ, CEPH_CONF=cl.conf_arg), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        fj = json.loads((work / "fio.json").read_text())
        assert fj["fio version"].startswith("fio-3.")
        job = fj["jobs"][0]
        assert 9000 <= job["job_runtime"] <= 12000 and job["write"]["iops"] > 10
        print(f"Reef 1-OSD bring-up {up_s:.1f} s; fio 10 s: {job['write']['iops']:.0f} IOPS")
    finally:
        cl.down()
        clmod.teardown_workdir(cl.dir)

"""Run a campaign on a real cluster: per run, set the arm, restart OSDs, verify, prepare the
scenario, run fio beside the background operations, record everything, mark it done.

Run directory (``data/raw/ceph-qos/<campaign>/<scenario>/<arm>/rep-NN/``): ``run.json`` (keys,
anchors, effective config, machine facts, disturbance figures), ``fio.json.gz`` (json+), fio 1 s logs
and clat histogram logs (gz), ``timeline.jsonl.gz`` (pgpoll.py), ``sysutil.jsonl.gz`` (1 Hz /proc),
``osd_config.json.gz`` (``ceph config show`` of every OSD), ``cluster-log.txt.gz`` (the cluster log
lines of the run's window), ``done`` (written last).  A run is written under ``_inprogress/`` and
moved into place only when complete, so ingest never sees half a run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from capture.common.sitting import KeptUnderRoot

from . import campaign as cp
from .chroot import info as chroot_info, parse_ceph_version
from .cluster import Cluster, ClusterError
from .devclass import BENCH_ARGS, Rotational, bench_iops, rotational_of
from .config import OSD_SHARDS, RECORDED_KEYS, arm_settings, base_settings, check_applied
from .monitor import CpuAccount, SysMon
from .opqueue import OsdProbe
from .throttle import Throttle, ThrottleError, device_of

HERE = Path(__file__).parent


def machine_facts() -> dict[str, Any]:
    mem = next(int(ln.split()[1]) * 1024 for ln in Path("/proc/meminfo").read_text().splitlines()
               if ln.startswith("MemTotal"))
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "")
    return {"nproc": os.cpu_count(), "mem_total_B": mem, "cpu_model": cpu,
            "kernel": platform.release(), "hostname": platform.node()}


def _gz(path: Path) -> None:
    with open(path, "rb") as f, gzip.open(str(path) + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    path.unlink()


def compress_stage(stage: Path) -> None:
    """gzip the logs, JSONL, the cluster-log excerpt and fio's json+ (ingest reads .gz by content);
    drop empty stderr files."""
    for f in sorted(stage.iterdir()):
        if f.is_file() and (f.suffix in (".log", ".jsonl") or f.name in ("cluster-log.txt", "fio.json")):
            _gz(f)
    for f in stage.glob("*.stderr"):
        if f.stat().st_size == 0:
            f.unlink()


def fio_anchors(fj: dict[str, Any]) -> dict[str, Any]:
    """Where fio's log t=0 is in unix seconds, from its JSON: ``job_start`` (ms, fio ≥ 3.35) when
    present, else ``timestamp_ms`` (when the report was written) minus the job's runtime."""
    job = fj["jobs"][0]
    out = {"fio_timestamp_ms": fj.get("timestamp_ms"), "fio_job_runtime_ms": job.get("job_runtime"),
           "fio_job_start_ms": job.get("job_start")}
    if job.get("job_start"):
        out["fio_t0_unix"] = job["job_start"] / 1000.0
        out["fio_t0_source"] = "job_start"
    else:
        out["fio_t0_unix"] = (fj["timestamp_ms"] - job["job_runtime"]) / 1000.0
        out["fio_t0_source"] = "timestamp_ms - job_runtime"
    return out


def client_target(doc: dict[str, Any]) -> tuple[str, str]:
    """(pool, RBD image) of the campaign's client: ``client.pool`` / ``client.image``, default client/img."""
    c = doc.get("client") or {}
    return str(c.get("pool", "client")), str(c.get("image", "img"))


class Poller:
    """pgpoll.py as a child: marks go to its stdin, so they land in order in one file."""

    def __init__(self, cl: Cluster, out: Path) -> None:
        self.p = subprocess.Popen(
            cl.helper_argv("pgpoll.py") + ["--out", cl.inside(out),
                                           "--cluster-log", cl.inside(cl.dir / "log" / "cluster.log")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(str(out) + ".stderr", "w"),
            text=True)

    def mark(self, name: str, **kw: Any) -> float:
        t = time.time()
        self.p.stdin.write(json.dumps({"t": round(t, 3), "mark": name, **kw}) + "\n")
        self.p.stdin.flush()
        return t

    def do(self, op: str, **kw: Any) -> float:
        """Have the poller start a background operation; returns its mark time (unix s)."""
        self.p.stdin.write(json.dumps({"do": op, **kw}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise ClusterError(f"pgpoll exited while starting {op}")
        return float(json.loads(line)["t"])

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(30)


class Runner(KeptUnderRoot):
    def __init__(self, doc: dict[str, Any], campaign_file: Path, out_root: Path,
                 log: Callable[[str], None] = print) -> None:
        self.doc, self.file, self.log = doc, campaign_file, log
        self.root = out_root / doc["campaign"]
        c = doc["cluster"]
        self.capacity = float(c["mclock_capacity_iops"])
        #: ``cluster.device_class: ssd`` flags the OSDs' disk non-rotational for the sitting (devclass.py);
        #: ``cluster.mclock_capacity: bench`` gives each OSD the capacity its own benchmark measures
        self.device_class = c.get("device_class")
        self.capacity_mode = str(c.get("mclock_capacity", "set"))
        self.rotational: Rotational | None = None
        self.capacity_bench: dict[str, float] = {}
        self.pg_num = int(c.get("pg_num", 32))
        #: the Ceph release the campaign runs (``ceph: pacific | reef``; Reef in its chroot)
        self.release = str(doc.get("ceph", "pacific"))
        self.cl = Cluster(Path(c.get("workdir", "/var/tmp/cephqos-cluster")), int(c["osds"]),
                          int(c["osd_size_gib"]) << 30, int(c["osd_memory_target_mib"]) << 20, log,
                          release=self.release)
        self.base = base_settings(self.capacity, doc.get("osd_config"), self.release)
        # mClock's res/lim are per op shard: the shard count the OSDs will run with
        self.shards = int(self.base.get("osd_op_num_shards", OSD_SHARDS))
        self.applied_scenario_keys: set[str] = set()
        self.throttle: Throttle | None = None  # set at bring-up when the campaign has ``throttle``
        #: a run whose machine steal time exceeds this share of its CPU time is flagged (not redone)
        self.steal_flag = float(doc.get("steal_flag_frac", 0.05))
        #: the discarded warm-up run before the current block (``warmup: block``): written into run.json
        #: as ``block_warmup`` (scenario/arm), so the analysis knows no run of the block was its first
        self.block_warmup: dict[str, Any] | None = None

    # ------------------------------------------------------------------ cluster lifetime
    def teardown(self) -> None:
        """Stop the daemons, lift the per-OSD IO limits, remove the cluster's work folder (every sitting
        ends here, after a failure or a signal too)."""
        self.cl.down()
        if self.throttle is not None:
            self.throttle.remove(range(self.cl.n))
        if self.rotational is not None:
            self.rotational.restore()
        shutil.rmtree(self.cl.dir, ignore_errors=True)

    def check_limits(self, during: str) -> None:
        """ClusterError when an OSD of a throttled campaign lost its IO limits (a restarted OSD is a new
        process, outside the cgroup): the run ``during`` measured an unthrottled OSD and is redone."""
        if self.throttle is None:
            return
        try:
            self.throttle.check_all(self.cl.pids())
        except ThrottleError as e:
            raise ClusterError(f"per-OSD IO limits lost during {during}: {e}") from None

    def bring_up(self) -> None:
        """Start the cluster, create the client pool and its RBD image (``client.pool`` / ``client.image``,
        default ``client/img``: the QoS campaigns' names; CBT's harness names them as CBT does) and prefill
        it, fill the scrub pool when the campaign has one, apply the per-OSD IO limits, and where the
        campaign asks, flag the disk non-rotational first and benchmark each OSD's capacity after."""
        if self.device_class == "ssd":
            self.cl.dir.mkdir(parents=True, exist_ok=True)
            self.rotational = Rotational(device_of(self.cl.dir), 0)
            self.log(f"OSD disk flagged non-rotational: {self.rotational.apply()}")
        self.cl.up(self.base)
        cl, c, p = self.cl, self.doc["client"], self.doc.get("pools", {})
        pool, image = client_target(self.doc)
        n, kib = int(p.get("scrub_objects", 0)), int(p.get("scrub_object_kib", 32))
        for name in (pool, "scrub") if n else (pool,):
            cl.ceph("osd", "pool", "create", name, str(self.pg_num), str(self.pg_num))
            cl.ceph("osd", "pool", "set", name, "size", "3")
        cl.ceph("osd", "pool", "application", "enable", pool, "rbd")
        if n:
            cl.ceph("osd", "pool", "application", "enable", "scrub", "rados")
        subprocess.run(cl.argv(["rbd", "--conf", cl.conf_arg, "create", f"{pool}/{image}", "--size",
                                f"{int(c['image_mib'])}M"]), check=True, capture_output=True)
        t = time.time()
        subprocess.run(cl.argv(["fio", "--name=prefill", "--ioengine=rbd", "--clientname=admin", f"--pool={pool}",
                                f"--rbdname={image}", "--rw=write", "--bs=4M", "--iodepth=8", "--direct=1",
                                "--output-format=terse"]), check=True, capture_output=True,
                       env=dict(os.environ, CEPH_CONF=cl.conf_arg))
        self.log(f"client image {c['image_mib']} MiB prefilled in {time.time() - t:.0f} s")
        if n:
            out = json.loads(cl.py("objfill.py", "--pool", "scrub", "--count", str(n),
                                   "--size", str(kib << 10)))
            self.log(f"scrub pool: {n} × {kib} KiB objects in {out['seconds']:.0f} s")
        cl.wait_clean()
        if self.doc.get("client_config"):
            # e.g. rbd_cache false: fio's rbd engine would otherwise absorb writes in librbd's cache
            cl.config_set("client", self.doc["client_config"])
        th = self.doc.get("throttle")
        if th:
            # the limit goes on the disk holding the OSDs' BlueStore files; pools were filled before
            # it applies (bring-up fills are not measured), each run attaches the OSDs again
            self.throttle = Throttle.for_path(cl.dir / "osd", int(th["read_iops"]), int(th["write_iops"]))
            self.log(f"per-OSD IO limits: {self.throttle.record()}")
        if self.capacity_mode == "bench":
            self.bench_capacity()
        versions = cl.ceph("versions", fmt_json=True)
        self.cluster_facts = {"fsid": cl.fsid, "brought_up": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "versions": versions, "release": self.release,
                              "ceph_version": self.ceph_version(versions), "address": cl.ip,
                              "chroot": None if cl.root is None else {"root": str(cl.root),
                                                                       **(chroot_info(cl.root) or {})},
                              "device_class": None if self.rotational is None else self.rotational.record(),
                              "mclock_capacity": {"source": self.capacity_source(),
                                                  "per_osd_iops": self.capacity_bench or None,
                                                  "used_for_custom_allocations": self.capacity}}
        self.log(f"ceph {self.cluster_facts['ceph_version']} ({self.release}) at {cl.ip}")

    def capacity_source(self) -> str:
        return "osd bench under the IO limit" if self.capacity_mode == "bench" else "set"

    def bench_capacity(self) -> None:
        """Each OSD's capacity from Ceph's own start-up benchmark, run with the IO limits in force
        (devclass.py), into the mon's config for that OSD; the median serves the custom allocations."""
        if self.throttle is not None:
            self.throttle.attach_all(self.cl.pids())
        for i in range(self.cl.n):
            doc = self.cl.ceph("tell", f"osd.{i}", "bench", *BENCH_ARGS, fmt_json=True, timeout=300)
            iops = round(bench_iops(doc), 1)
            self.capacity_bench[f"osd.{i}"] = iops
            for k in ("osd_mclock_max_capacity_iops_hdd", "osd_mclock_max_capacity_iops_ssd"):
                self.cl.ceph("config", "set", f"osd.{i}", k, str(iops))
        self.capacity = float(statistics.median(self.capacity_bench.values()))
        self.log(f"mClock capacity by osd bench under the IO limit: {self.capacity_bench}")

    def ceph_version(self, versions: dict[str, Any]) -> str:
        """The one version every daemon runs (``ceph versions`` → overall); a mixed or foreign cluster
        (not the campaign's release) is an error."""
        overall = list((versions or {}).get("overall", {}))
        if len(overall) != 1:
            raise ClusterError(f"daemons run {len(overall)} versions ({overall}): expected one")
        v = parse_ceph_version(overall[0])
        if v["release"] != self.release:
            raise ClusterError(f"the campaign asks for ceph {self.release}, the cluster runs {overall[0]}")
        return str(v["version"])

    # ------------------------------------------------------------------ one run
    def settings_for(self, run: cp.Run) -> dict[str, Any]:
        arm = self.doc["arms"][run.arm]
        sc = self.doc["scenarios"][run.scenario]
        out = arm_settings(arm, self.capacity, self.shards, self.release)
        out = {**(sc.get("osd_config") or {}), **out}
        return out

    def apply(self, run: cp.Run) -> tuple[dict[str, Any], float]:
        cl = self.cl
        want = self.settings_for(run)
        # a key an earlier run set and this one does not: back to the campaign base / Ceph default
        for k in sorted(self.applied_scenario_keys - set(want)):
            if k in self.base:
                cl.ceph("config", "set", "osd", k, str(self.base[k]))
            else:
                cl.ceph("config", "rm", "osd", k)
        cl.config_set("osd", want)
        self.applied_scenario_keys = set(want)
        return want, cl.restart_osds()

    def verify(self, want: dict[str, Any], rundir: Path) -> dict[str, Any]:
        shown, nondefault = {}, {}
        for i in range(self.cl.n):
            full = self.cl.osd_config(i, with_defaults=True)
            nondefault[f"osd.{i}"] = self.cl.osd_config(i)
            shown[f"osd.{i}"] = {**{k: full.get(k) for k in RECORDED_KEYS}, **nondefault[f"osd.{i}"]}
        with gzip.open(rundir / "osd_config.json.gz", "wt") as f:
            json.dump({"note": "per OSD: every non-default option (ceph config show) plus the "
                               "recorded keys from ceph config show-with-defaults", "osds": shown},
                      f, indent=1, sort_keys=True)
        rot = rotational_of(self.cl.ceph("osd", "metadata", fmt_json=True) or [])
        bad = {o: check_applied(want, s) for o, s in shown.items()}
        bad = {o: b for o, b in bad.items() if b}
        if bad:
            raise ClusterError(f"OSDs do not run the arm's settings: {bad}")
        ref = shown["osd.0"]
        eff = {k: ref.get(k) for k in RECORDED_KEYS}
        differ = sorted(k for k in RECORDED_KEYS if len({s.get(k) for s in shown.values()}) > 1)
        return {"effective": eff, "differ_between_osds": differ, "bluestore_bdev_rotational": rot}

    def prepare(self, sc: dict[str, Any], rundir: Path) -> dict[str, Any]:
        cl, p, facts = self.cl, self.doc.get("pools", {}), {}
        bg = sc.get("background", [])
        if "snaptrim" in bg:
            cl.ceph("osd", "pool", "create", "snap", str(self.pg_num), str(self.pg_num))
            cl.ceph("osd", "pool", "application", "enable", "snap", "rados")
            n, kib = int(p["snap_objects"]), int(p["snap_object_kib"])
            m = int(round(n * float(p.get("snap_overwrite", 0.8))))
            a = json.loads(cl.py("objfill.py", "--pool", "snap", "--count", str(n), "--size", str(kib << 10)))
            cl.rados("-p", "snap", "mksnap", "s1")
            b = json.loads(cl.py("objfill.py", "--pool", "snap", "--count", str(m), "--size", str(kib << 10)))
            facts["snap"] = {"objects": n, "object_B": kib << 10, "overwritten": m,
                             "fill_s": a["seconds"], "overwrite_s": b["seconds"]}
        if "recovery" in bg:
            victim = self.cl.n - 1
            cl.ceph("osd", "pool", "create", "recovery", str(self.pg_num), str(self.pg_num))
            cl.ceph("osd", "pool", "application", "enable", "recovery", "rados")
            cl.wait_clean()
            for flag in ("nobackfill", "norecover", "norebalance"):
                cl.ceph("osd", "set", flag)
            cl.stop_osd(victim)
            cl.ceph("osd", "down", str(victim))
            cl.ceph("osd", "out", str(victim))
            cl.wait_osds(self.cl.n - 1)
            cl.wait_peered()
            n, kib = int(p["recovery_objects"]), int(p["recovery_object_kib"])
            a = json.loads(cl.py("objfill.py", "--pool", "recovery", "--count", str(n),
                                 "--size", str(kib << 10)))
            cl.start_osd(victim)
            cl.ceph("osd", "in", str(victim))
            cl.wait_osds(self.cl.n)
            cl.wait_peered()
            facts["recovery"] = {"victim": f"osd.{victim}", "objects": n, "object_B": kib << 10,
                                 "fill_s": a["seconds"], "pg_states_before": cl.pg_states()}
        return facts

    def pg_primaries(self) -> dict[str, dict[str, int]]:
        """PGs per acting primary OSD, per pool: with per-OSD limits the primary of the most PGs of a
        pool sets the pace of its scrub or trim."""
        pgs = self.cl.ceph("pg", "dump", "pgs_brief", fmt_json=True, timeout=60)
        stats = pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else (pgs or [])
        pools = {str(d["poolnum"]): d["poolname"] for d in self.cl.ceph("osd", "lspools", fmt_json=True)}
        out: dict[str, dict[str, int]] = {}
        for s in stats:
            pool = pools.get(s["pgid"].split(".")[0], s["pgid"].split(".")[0])
            osd = f"osd.{s.get('acting_primary', s.get('up_primary'))}"
            out.setdefault(pool, {}).setdefault(osd, 0)
            out[pool][osd] += 1
        return {p: dict(sorted(v.items())) for p, v in sorted(out.items())}

    def trigger(self, op: str, poller: Poller) -> float:
        if op == "deep_scrub":
            return poller.do("deep_scrub", pool="scrub")
        if op == "snaptrim":
            return poller.do("snaptrim", pool="snap", snap="s1")
        if op == "recovery":
            return poller.do("recovery")
        raise ValueError(op)

    def finished(self, op: str, t_req: float) -> bool:
        pgs = self.cl.ceph("pg", "dump", "pgs", fmt_json=True, timeout=60)
        stats = pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else pgs
        pools = {str(d["poolnum"]): d["poolname"] for d in self.cl.ceph("osd", "lspools", fmt_json=True)}
        def mine(name):
            return [s for s in stats if pools.get(s["pgid"].split(".")[0]) == name]
        if op == "deep_scrub":
            from .pgpoll_stamp import stamp
            return all((stamp(s.get("last_deep_scrub_stamp")) or 0) >= t_req for s in mine("scrub"))
        if op == "snaptrim":
            return time.time() - t_req > 5 and all(
                s.get("snaptrimq_len", 0) == 0 and "snaptrim" not in s["state"] for s in mine("snap"))
        if op == "recovery":
            return all(s["state"] == "active+clean" and s["stat_sum"].get("num_objects_degraded", 0) == 0
                       and s["stat_sum"].get("num_objects_misplaced", 0) == 0 for s in stats)
        raise ValueError(op)

    def fio_argv(self, sc: dict[str, Any]) -> list[str]:
        c = {**self.doc["client"], **(sc.get("client") or {})}
        pool, image = client_target(self.doc)
        return ["fio", "--name=client", "--ioengine=rbd", "--clientname=admin", f"--pool={pool}",
                f"--rbdname={image}", f"--rw={c['rw']}", f"--bs={c['bs']}", f"--iodepth={c['iodepth']}",
                "--numjobs=1", "--direct=1", "--time_based", f"--runtime={c['runtime_s']}",
                "--randrepeat=0", "--output-format=json+", "--output=fio.json",
                "--write_lat_log=client", "--write_bw_log=client", "--write_iops_log=client",
                "--log_avg_msec=1000", "--write_hist_log=client", "--log_hist_msec=1000"] + \
               (["--rwmixread=" + str(c["rwmixread"])] if "rwmixread" in c else [])

    def one(self, run: cp.Run) -> dict[str, Any]:
        """Do one run into ``_inprogress/<relpath>``; whatever happens, the child processes it
        started (fio, pgpoll, the /proc sampler) are stopped and the per-run cluster state (pools,
        flags, a stopped OSD) is undone, so a failed run does not poison the next attempt."""
        sc = self.doc["scenarios"][run.scenario]
        stage = self.root / cp.INPROGRESS / run.relpath
        if stage.exists():
            shutil.rmtree(stage)
        stage.mkdir(parents=True)
        bg = list(sc.get("background", []))
        self._children: list[Any] = []
        try:
            return self._one(run, sc, stage, bg)
        finally:
            self._stop_children()
            self.cleanup_run(bg)

    def _stop_children(self) -> None:
        for c in reversed(getattr(self, "_children", [])):
            try:
                if isinstance(c, SysMon):
                    c.stop()
                elif isinstance(c, Poller):
                    if c.p.poll() is None:
                        c.close()
                elif c.poll() is None:  # fio
                    c.terminate()
                    try:
                        c.wait(10)
                    except subprocess.TimeoutExpired:
                        c.kill()
                        c.wait(10)
            except Exception as e:  # keep going: every child must go
                self.log(f"  stopping {type(c).__name__}: {e}")
        self._children = []

    def cleanup_run(self, bg: list[str]) -> None:
        """Undo what ``prepare`` did (idempotent; errors are logged, not raised)."""
        cl = self.cl
        try:
            if "recovery" in bg:
                victim = cl.n - 1
                if f"osd.{victim}" not in cl.pids():
                    cl.start_osd(victim)
                cl.ceph("osd", "in", str(victim), check=False)
            for flag in ("nobackfill", "norecover", "norebalance"):
                cl.ceph("osd", "unset", flag, check=False)
            for op, pool in (("snaptrim", "snap"), ("recovery", "recovery")):
                if op in bg:
                    cl.ceph("osd", "pool", "delete", pool, pool, "--yes-i-really-really-mean-it",
                            check=False)
        except Exception as e:
            self.log(f"  cleanup after the run: {type(e).__name__}: {e}")

    def _one(self, run: cp.Run, sc: dict[str, Any], stage: Path, bg: list[str]) -> dict[str, Any]:
        cl = self.cl
        arm = self.doc["arms"][run.arm]
        info: dict[str, Any] = {"campaign": run.campaign, "scenario": run.scenario, "arm": run.arm,
                                "repeat": run.repeat, "plan_order": run.order, "origin": "measured",
                                "ceph_release": self.release,
                                "forced": bool(getattr(self, "forced", False))}
        info["scheduler"] = arm["osd_op_queue"]
        info["profile"] = arm.get("osd_mclock_profile")
        info["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
        t_start = time.time()
        self._set_up_run(run, sc, stage, info)
        acct = CpuAccount()
        acct.track(list(cl.pids().values()))
        # fio and pgpoll of a chroot release write where they can: a folder in the cluster's tree, moved
        # into the run's stage when they are done
        work = stage if cl.root is None else cl.dir / "stage"
        if work != stage:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        poller = Poller(cl, work / "timeline.jsonl")
        self._children.append(poller)
        acct.track([poller.p.pid])
        mon = SysMon(stage / "sysutil.jsonl", probe=OsdProbe(cl.dir / "run", cl.pids))
        mon.start()
        self._children.append(mon)
        time.sleep(2.0)  # a couple of timeline samples before client IO
        log_pos = (cl.dir / "log" / "cluster.log").stat().st_size
        anchors = self._client_io(sc, bg, stage, work, poller)
        pending, done_at = self._await_background(sc, bg, anchors)
        time.sleep(2)  # one more timeline sample after the end
        info["background_unfinished"] = pending
        info["background_done_seen_unix"] = done_at
        poller.close()
        mon.stop()
        if work != stage:
            for f in sorted(work.iterdir()):
                shutil.move(str(f), str(stage / f.name))
        info["cpu"] = acct.result(list(cl.pids().values()))
        info["steal_flagged"] = info["cpu"]["steal_frac"] > self.steal_flag
        if self.block_warmup is not None:
            info["block_warmup"] = f"{self.block_warmup['scenario']}/{self.block_warmup['arm']}"
            info["block_warmup_s"] = self.block_warmup["wall_s"]
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        with open(cl.dir / "log" / "cluster.log", "rb") as f:
            f.seek(log_pos)
            (stage / "cluster-log.txt").write_bytes(f.read())
        self._record_context(sc, arm, stage, anchors, info)
        info["duration_s"] = round(time.time() - t_start, 1)
        compress_stage(stage)
        return info

    def _set_up_run(self, run: cp.Run, sc: dict[str, Any], stage: Path, info: dict[str, Any]) -> None:
        """The arm's settings applied (OSDs restarted) and checked, the scenario's pools and OSD states
        prepared, the per-OSD IO limits attached; each step's facts into ``info``."""
        want, restart_s = self.apply(run)
        info["osd_restart_s"] = round(restart_s, 1)
        info["osd_config"] = {"requested": want, **self.verify(want, stage)}
        rot = set(info["osd_config"]["bluestore_bdev_rotational"].values())
        info["osd_rotational"] = rot.pop() if len(rot) == 1 else "mixed"
        info["mclock_capacity_source"] = self.capacity_source()
        info["prepare"] = self.prepare(sc, stage)
        if self.throttle is not None:
            # restarted OSDs (and a recovery victim) are new PIDs in the root group: attach every OSD,
            # then every thread must be in its OSD's cgroup, or the run fails here
            try:
                threads = self.throttle.attach_all(self.cl.pids())
            except ThrottleError as e:
                raise ClusterError(f"per-OSD IO limits not in force: {e}") from None
            info["throttle"] = {**self.throttle.record(), "threads_checked": threads}
        info["pg_primaries"] = self.pg_primaries()

    def _client_io(self, sc: dict[str, Any], bg: list[str], stage: Path, work: Path,
                   poller: Poller) -> dict[str, Any]:
        """fio run to its end in ``work``, the background operations ``bg`` started ``bg_start_s`` (s)
        into it; → the anchors (unix s): fio spawned, each ``<op>_unix``, fio's exit.  ClusterError when fio
        ends early or fails, or an OSD lost its IO limits."""
        cl = self.cl
        env = dict(os.environ, CEPH_CONF=cl.conf_arg)
        t_fio = poller.mark("fio_start")
        with open(stage / "fio.stderr", "w") as err:
            fio = subprocess.Popen(cl.argv(self.fio_argv(sc), cwd=work), cwd=work, env=env,
                                   stdout=subprocess.DEVNULL, stderr=err)
        self._children.append(fio)
        anchors: dict[str, Any] = {"fio_spawn_unix": t_fio}
        if bg:
            delay = float(sc.get("bg_start_s", 10))
            while time.time() < t_fio + delay and fio.poll() is None:
                time.sleep(0.05)
            if fio.poll() is not None:
                raise ClusterError(f"fio ended (exit {fio.returncode}) before the background "
                                   f"operations were due at +{delay:g} s")
            for op in bg:
                anchors[f"{op}_unix"] = self.trigger(op, poller)
        rc = fio.wait()
        anchors["fio_exit_unix"] = poller.mark("fio_end")
        self.check_limits("the run")
        if rc != 0:
            raise ClusterError(f"fio exited {rc}: {(stage / 'fio.stderr').read_text()[-500:]}")
        return anchors

    def _await_background(self, sc: dict[str, Any], bg: list[str],
                          anchors: dict[str, Any]) -> tuple[list[str], dict[str, float]]:
        """Poll (every 2 s, up to ``max_wait_after_fio_s``) until each background operation has finished;
        → (the ones still unfinished, unix s each finished one was seen done)."""
        max_wait = float(sc.get("max_wait_after_fio_s", self.doc.get("max_wait_after_fio_s", 300)))
        end = time.time() + max_wait
        pending = list(bg)
        done_at = {}
        while pending and time.time() < end:
            for op in list(pending):
                if self.finished(op, anchors[f"{op}_unix"]):
                    pending.remove(op)
                    done_at[op] = time.time()
            time.sleep(2)
        return pending, done_at

    def _record_context(self, sc: dict[str, Any], arm: dict[str, Any], stage: Path, anchors: dict[str, Any],
                        info: dict[str, Any]) -> None:
        """What a reader of run.json needs beside the measurements: fio's time anchors, the fio command and
        version, the scenario, arm, cluster, campaign file and machine."""
        fj = json.loads((stage / "fio.json").read_text())
        anchors.update(fio_anchors(fj))
        info["anchors"] = anchors
        info["anchor_note"] = ("fio log times are ms since fio_t0_unix (fio's job_start if its JSON has "
                               "one, else timestamp_ms - job_runtime: then late by fio's rbd close and "
                               "report time, typically < 1 s; unix s); background ops started at "
                               "<op>_unix (unix s, written by pgpoll.py just before it sent the "
                               "request; same host clock)")
        info["fio_argv"] = self.fio_argv(sc)
        info["fio_version"] = fj.get("fio version")
        info["scenario_config"] = sc
        info["arm_config"] = arm
        info["cluster"] = self.cluster_facts
        info["campaign_file"] = self.file.name
        info["campaign_sha256"] = hashlib.sha256(self.file.read_bytes()).hexdigest()
        info["machine"] = machine_facts()


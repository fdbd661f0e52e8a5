"""One sitting of an RGW campaign on a throwaway local cluster (``capture.ceph.cluster``, Ceph 16.2).

Set-up: the cluster (WPQ, scrubs pushed out of the way), optionally per-OSD IO limits
(``cluster.throttle_iops``: ``capture.ceph.throttle``), the pools the diary names —
``default.rgw.buckets.index`` (``cluster.index_pg_num`` PGs) and ``default.rgw.buckets.data``
(``cluster.data_pg_num``) — made before radosgw starts (its other pools take 8 PGs), a ``bench`` pool
with the data pool's PG count for ``rados bench``, one radosgw ``client.rgw.gw0`` (beast on
127.0.0.1:``rgw.port``, dynamic resharding off) and one S3 user.

Per RGW run: ``rgw_override_bucket_index_max_shards`` set to the arm's value and radosgw restarted
(every run, so every arm starts from the same state); ``capture.rgw.loadgen`` PUTs for ``load.put_s``
then GETs for ``load.get_s`` into fresh bucket(s) named for the run; the 1 s system log
(``sysutil.jsonl``) carries each OSD's ops queued and in flight, those on the index pool's PGs
(``pool_in_flight``) and its CPU, and radosgw's CPU (``proc``); afterwards the index shards are read back (``radosgw-admin bucket stats`` and the index
pool's objects) and the buckets removed with their objects (outside the measured phases).
Per rados run: ``rados bench <put_s> write -b <osize> -t <procs> --no-cleanup`` then ``seq`` for
``get_s``, then ``rados cleanup``.  Files per run: ``output.gw0`` (getput's lines, as CBT archives
them; gzipped), ``loadgen.json.gz`` (every op's latency), or ``write.txt.gz``/``seq.txt.gz``;
``sysutil.jsonl.gz``, ``run.json``.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

from capture.block.cpu import OutsideCpu
from capture.ceph.cluster import Cluster
from capture.ceph.monitor import SysMon
from capture.ceph.opqueue import OsdProbe, proc_cpu_ticks
from capture.ceph.runner import machine_facts
from capture.common.sitting import KeptUnderRoot

from . import campaign as rc

REPO = Path(__file__).resolve().parents[2]
INDEX_POOL, DATA_POOL, BENCH_POOL = "default.rgw.buckets.index", "default.rgw.buckets.data", "bench"
RGW = "rgw.gw0"
ACCESS, SECRET = "cephqoslab0000000000", "cephqoslab-secret-not-a-secret-000000000"
PACKAGES = ["radosgw", "python3-boto3"]
CLK_TCK = 100


class RgwError(RuntimeError):
    """A run that failed and is redone (the sitting goes on)."""


def _gzip_file(src: Path) -> None:
    with open(src, "rb") as f, gzip.open(str(src) + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    src.unlink()


def total_line(text: str, test: str) -> dict[str, float] | None:
    """MB/Sec, Ops/Sec and mean latency (s) of the total line of ``test`` (put/get) in getput output:
    the line of that test whose Proc column is the largest (the per-process lines come first); a leading
    Rank column (getput's default, what CBT's getput output has) is skipped."""
    best = None
    for ln in text.splitlines():
        f = ln.split()
        if len(f) >= 2 and f[0].isdigit() and f[1] == test:
            f = f[1:]
        if len(f) >= 12 and f[0] == test and f[2].isdigit():
            row = {"procs": int(f[2]), "mib_s": float(f[6]), "ops": int(f[7]), "ops_s": float(f[8]),
                   "errs": int(f[9]), "lat_s": float(f[10])}
            if best is None or row["procs"] >= best["procs"]:
                best = row
    return best


class ProcCpu:
    """``SysMon``'s ``procs`` callable: radosgw's CPU (fraction of one CPU since the previous tick)."""

    def __init__(self, cl: Cluster) -> None:
        self.cl = cl
        self.prev: tuple[float, int] | None = None

    def __call__(self) -> dict[str, dict[str, float | None]]:
        pid = self.cl.pids().get(RGW)
        ticks, now = (proc_cpu_ticks(pid) if pid else None), time.time()
        cpu = None
        if ticks is not None and self.prev is not None and self.prev[1] <= ticks and now > self.prev[0]:
            cpu = round((ticks - self.prev[1]) / CLK_TCK / (now - self.prev[0]), 4)
        self.prev = (now, ticks) if ticks is not None else None
        return {"radosgw": {"cpu": cpu}}


class RgwRunner(KeptUnderRoot):
    def __init__(self, doc: dict[str, Any], root: Path, log: Callable[[str], None]) -> None:
        self.doc, self.root, self.log = doc, root, log
        self.cl: Cluster | None = None
        self.throttle = None
        self.versions: Any = None
        self.pool_ids: dict[str, int] = {}
        self.port = int(doc.get("rgw", {}).get("port", 7480))

    # ------------------------------------------------------------------ set-up
    def set_up(self) -> None:
        from capture.ceph.cluster import ensure_packages, preflight
        c = self.doc["cluster"]
        workdir = Path(c["workdir"])
        preflight(workdir)
        ensure_packages(self.log)
        missing = [p for p in PACKAGES if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode]
        if missing:
            self.log(f"installing {' '.join(missing)}")
            subprocess.run(["apt-get", "install", "-y", "-o", "DPkg::Lock::Timeout=600", "--no-install-recommends",
                            *missing], check=True, capture_output=True)
        self.cl = cl = Cluster(workdir, c["osds"], int(c["osd_size_gib"]) << 30, int(c["osd_memory_target_mib"]) << 20,
                               self.log)
        self.settings = {"osd_op_queue": "wpq", "osd_scrub_min_interval": 1e8, "osd_scrub_max_interval": 1e9,
                         "osd_deep_scrub_interval": 1e9}
        cl.up(self.settings)
        if c["throttle_iops"]:
            from capture.ceph.throttle import Throttle
            self.throttle = Throttle.for_path(cl.dir / "osd", c["throttle_iops"], c["throttle_iops"])
            self.throttle.attach_all(cl.pids())
            self.log(f"per-OSD IO limits: {self.throttle.record()}")
        cl.ceph("config", "set", "global", "osd_pool_default_pg_num", "8")
        cl.ceph("config", "set", "global", "osd_pool_default_pgp_num", "8")
        cl.ceph("config", "set", "global", "osd_pool_default_size", str(c["pool_size"]))
        if int(c["pool_size"]) == 1:
            cl.ceph("config", "set", "global", "mon_allow_pool_size_one", "true")
        for pool, pg, app in ((INDEX_POOL, c["index_pg_num"], "rgw"), (DATA_POOL, c["data_pg_num"], "rgw"),
                              (BENCH_POOL, c["data_pg_num"], "rados")):
            cl.ceph("osd", "pool", "create", pool, str(pg), str(pg))
            cl.ceph("osd", "pool", "set", pool, "size", str(c["pool_size"]), "--yes-i-really-mean-it")
            cl.ceph("osd", "pool", "application", "enable", pool, app)
        cl.wait_clean()
        (cl.dir / "rgw").mkdir(exist_ok=True)
        cl.config_set(f"client.{RGW}", {"rgw_frontends": f"beast endpoint=127.0.0.1:{self.port}",
                                        "rgw_dynamic_resharding": "false", "rgw_enable_usage_log": "false"})
        self.start_rgw(0)
        self.admin("user", "create", "--uid", "cephqos", "--display-name", "cephqos-lab",
                   "--access-key", ACCESS, "--secret-key", SECRET)
        cl.wait_clean()
        self.pool_ids = {p["poolname"]: int(p["poolnum"])
                         for p in cl.ceph("osd", "lspools", fmt_json=True) or []}
        self.versions = cl.ceph("versions", fmt_json=True)
        self.pgs = {p: int(cl.ceph("osd", "pool", "get", p, "pg_num", fmt_json=True)["pg_num"])
                    for p in self.pool_ids}
        self.brought_up = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def admin(self, *args: str, timeout: float = 600) -> str:
        assert self.cl is not None
        p = subprocess.run(self.cl.argv(["radosgw-admin", "--conf", self.cl.conf_arg, "-n", f"client.{RGW}",
                                         "--ms_mon_client_mode", "crc secure", *args]),
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RgwError(f"radosgw-admin {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        return p.stdout

    def start_rgw(self, shards: int) -> float:
        """(Re)start radosgw with ``rgw_override_bucket_index_max_shards`` = ``shards``; seconds taken."""
        cl = self.cl
        assert cl is not None
        t0 = time.time()
        cl.config_set(f"client.{RGW}", {"rgw_override_bucket_index_max_shards": shards})
        cl._stop(RGW, timeout=60)
        # rgw_data is one of the options the mon refuses to store: on the command line.  PITFALL (16.2.15,
        # auth none): radosgw, a daemon, asks the mon for a "secure" connection only, which auth none cannot
        # give (send_auth_request ... returned -13, forever); the CLI's "crc secure" works
        cl._start(RGW, ["radosgw", "-f", "-n", f"client.{RGW}", "--rgw_data", cl.inside(cl.dir / "rgw"),
                        "--ms_mon_client_mode", "crc secure"])

        def answering() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        cl._wait(answering, 120, "radosgw answering HTTP")
        return time.time() - t0

    def close(self) -> None:
        if self.cl is not None:
            if self.throttle is not None:
                self.throttle.remove(range(self.cl.n))
            self.cl.down()
            shutil.rmtree(self.cl.dir, ignore_errors=True)
            self.cl = None

    # ------------------------------------------------------------------ runs
    def _cpu_ticks(self) -> dict[str, int | None]:
        return {n: proc_cpu_ticks(p) for n, p in self.cl.pids().items() if n == RGW or n.startswith("osd.")}

    def index_shards(self, buckets: list[str]) -> dict[str, Any]:
        """Per bucket: ``num_shards`` from ``bucket stats`` and the index pool's objects of its marker."""
        objs = self.cl.rados("-p", INDEX_POOL, "ls").split()
        out = {}
        for b in buckets:
            st = json.loads(self.admin("bucket", "stats", "--bucket", b))
            marker = st.get("marker") or st.get("id")
            out[b] = {"num_shards": st.get("num_shards"), "index_objects":
                      sum(1 for o in objs if o == f".dir.{marker}" or o.startswith(f".dir.{marker}.")),
                      "objects": sum(int(v.get("num_objects", 0)) for v in (st.get("usage") or {}).values())}
        return out

    def check_regime(self) -> None:
        """Before a run: every Ceph daemon still running and every OSD thread under its IO limits (or the run
        would not be in the campaign's regime: :class:`RgwError`, the run is redone)."""
        cl = self.cl
        assert cl is not None, "set_up() first"
        dead = {k: p.returncode for k, p in cl.procs.items() if p.poll() is not None and k != RGW}
        if dead:
            raise RuntimeError(f"Ceph daemons exited {dead}; see {cl.dir}/log")
        if self.throttle is not None:
            from capture.ceph.throttle import ThrottleError
            try:
                self.throttle.check_all(cl.pids())
            except ThrottleError as e:
                raise RgwError(f"per-OSD IO limits lost: {e}") from None

    def one(self, run: rc.Run) -> dict[str, Any]:
        doc, cl = self.doc, self.cl
        assert cl is not None, "set_up() first"
        self.check_regime()
        a = rc.arm(doc, run.arm)
        ld = doc["load"]
        stage = self.root / rc.INPROGRESS / run.relpath
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        c = doc["cluster"]
        info: dict[str, Any] = {
            "campaign": doc["campaign"], "scenario": run.scenario, "arm": run.arm, "repeat": run.repeat,
            "plan_order": run.order, "tool": "rados bench" if a.get("rados") else "getput-format S3 load (capture.rgw.loadgen)",
            "osize": ld["osize"], "osize_B": rc.size_bytes(ld["osize"]), "procs": ld["procs"],
            "put_s": ld["put_s"], "get_s": ld["get_s"], "ctype": a.get("ctype"), "shards_config": a.get("shards"),
            "osds": c["osds"], "pool_size": c["pool_size"], "pg_num": self.pgs, "osd_op_queue": "wpq",
            "throttle_iops": c["throttle_iops"], "origin": "measured", "machine": machine_facts(),
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cluster_up": self.brought_up,
            "ceph_versions": self.versions, "osd_settings": self.settings}
        if a.get("rados"):
            info.update(self._rados(stage, ld))
        else:
            info.update(self._rgw(stage, run, a, ld))
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        for f in list(stage.glob("*.jsonl")) + [stage / "output.gw0"]:
            if f.exists():
                _gzip_file(f)
        time.sleep(float(ld["settle_s"]))
        return info

    def _measured(self, stage: Path, body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        cl = self.cl
        mon = SysMon(stage / "sysutil.jsonl", probe=OsdProbe(cl.dir / "run", cl.pids, self.pool_ids.get(INDEX_POOL)),
                     procs=ProcCpu(cl))
        acct = OutsideCpu(list(cl.pids().values()))
        t0, ticks0 = time.time(), self._cpu_ticks()
        mon.start()
        try:
            out = body()
        finally:
            mon.stop()
            ticks1 = self._cpu_ticks()
            cpu = acct.result()
        out["cpu"] = cpu
        out["daemon_cpu_s"] = {n: round((ticks1[n] - v) / CLK_TCK, 2) for n, v in ticks0.items()
                               if v is not None and ticks1.get(n) is not None}
        out["measured_s"] = round(time.time() - t0, 2)
        return out

    def _rgw(self, stage: Path, run: rc.Run, a: dict[str, Any], ld: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"rgw_restart_s": round(self.start_rgw(int(a["shards"])), 2)}
        cname = f"gp-r{run.repeat:02d}-{run.arm}"[:50]
        buckets = [f"{cname}-{i}" for i in range(ld["procs"])] if a["ctype"] == "byproc" else [cname]
        tests = "p,g" if ld["get_s"] > 0 else "p"
        argv = ["/usr/bin/python3", "-m", "capture.rgw.loadgen", "--endpoint", f"http://127.0.0.1:{self.port}",
                "--access", ACCESS, "--secret", SECRET, "--cname", cname, "--ctype", a["ctype"],
                "--procs", str(ld["procs"]), "--osize", ld["osize"], "--runtime", str(ld["put_s"]),
                "--get-runtime", str(ld["get_s"]), "--tests", tests, "--json", str(stage / "loadgen.json")] \
            + (["--psum"] if ld["psum"] else [])
        out["argv"] = argv[:6] + ["--access", "…", "--secret", "…"] + argv[10:]

        def body() -> dict[str, Any]:
            secs = ld["put_s"] + ld["get_s"]
            try:
                p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=secs + 600)
            except subprocess.TimeoutExpired:
                raise RgwError(f"load generator still running {secs + 600:.0f} s after a {secs:g} s run") from None
            (stage / "output.gw0").write_text(p.stdout)
            if p.stderr.strip():
                (stage / "loadgen.stderr").write_text(p.stderr)
            if p.returncode != 0:
                raise RgwError(f"load generator exited {p.returncode}: {p.stderr.strip()[-400:]}")
            return {"put": total_line(p.stdout, "put"), "get": total_line(p.stdout, "get")}
        out.update(self._measured(stage, body))
        if out["put"] is None or out["put"]["ops"] == 0:
            raise RgwError("no PUT completed (see loadgen.stderr)")
        out["index"] = self.index_shards(buckets)
        _gzip_file(stage / "loadgen.json")
        t = time.time()
        for b in buckets:
            self.admin("bucket", "rm", "--bucket", b, "--purge-objects", "--bypass-gc", timeout=1800)
        out["cleanup_s"] = round(time.time() - t, 2)
        return out

    def _rados(self, stage: Path, ld: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def bench(phase: str, secs: float) -> dict[str, Any]:
            argv = ["rados", "--conf", str(self.cl.conf), "-p", BENCH_POOL, "bench", f"{secs:g}", phase,
                    "-t", str(ld["procs"])] + (["-b", str(rc.size_bytes(ld["osize"])), "--no-cleanup"]
                                               if phase == "write" else [])
            p = subprocess.run(argv, capture_output=True, text=True, timeout=secs + 600)
            if p.returncode != 0:
                raise RgwError(f"rados bench {phase} exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
            with gzip.open(stage / f"{phase}.txt.gz", "wt", compresslevel=9) as g:
                g.write(p.stdout)
            return {"argv": argv}

        def body() -> dict[str, Any]:
            r = {"write": bench("write", ld["put_s"])}
            if ld["get_s"] > 0:
                r["seq"] = bench("seq", ld["get_s"])
            return r
        out.update(self._measured(stage, body))
        t = time.time()
        self.cl.rados("-p", BENCH_POOL, "cleanup", timeout=1800)
        out["cleanup_s"] = round(time.time() - t, 2)
        return out


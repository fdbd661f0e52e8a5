"""CBT's own ``getput`` benchmark (``../shared/tools/cbt``, unmodified) against the radosgw of :mod:`capture.rgw`,
with :mod:`capture.rgw.getput_cli` (``capture/rgw/getput-shim``) as getput (issue 28).

``python -m capture.rgw cbt CAMPAIGN.yaml [--out DIR]``: one sitting.  The campaign is an RGW campaign
(:mod:`capture.rgw.campaign`: cluster, load, arms) whose ``repeats`` are CBT's ``iterations``; its arms are
RGW arms (shards, ctype), each one CBT invocation.  Bring-up is :class:`capture.rgw.runner.RgwRunner`'s (the
throttled cluster, the diary's pools, radosgw ``client.rgw.gw0`` on 127.0.0.1), plus CBT's Debian packages
and the user CBT's getput logs in as (below).  Per arm:

* the regime checked (daemons up, per-OSD IO limits in force), ``rgw_override_bucket_index_max_shards`` set
  to the arm's value and radosgw restarted;
* CBT's YAML written (:func:`cbt_config`): ``use_existing``, ``localhost`` everywhere, as
  :mod:`capture.cbt`'s; ``benchmarks.getput``: ``cmd_path`` the shim, ``procs``, ``op_size``, ``runtime``
  (``load.put_s``), ``test: p``, ``ctype``, ``user``/``key``, and ``auth`` (the gateway's Swift auth URL);
* ``cbt.py -a <archive> <yaml>`` run while the 1 s system log records radosgw's and the OSDs' CPU and the
  index pool's ops in flight; CBT's initialisation sleeps 60 s for its idle monitoring once, then runs
  getput once per iteration;
* the archive checked complete (one ``output.gw0.<host>`` per iteration with a put total line; CBT ignores
  the exit status of getput, so the shim's own record, one per invocation, must say exit 0), the
  buckets' index shards read back, the credential file CBT wrote into the archive (``gw00.cred.<host>``: the
  Swift key) removed, the buckets removed (outside the measured window), every file gzipped and the arm
  moved into place: ``<out>/<campaign>/<arm>/results/…`` (CBT's archive) and ``<out>/<campaign>/harness/<arm>/``
  (``run.json`` with the shim's records, ``sysutil.jsonl.gz``, ``cbt.yaml.gz``, ``cbt.log.gz``, ``done``), as
  :mod:`capture.cbt` lays them out.

CBT 9d6480f behaviours met here, each handled where it is met:

* ``use_existing: True`` never runs CBT's ``start_rgw``, the only code that fills the cluster's
  ``auth_urls``; so ``add_swift_user`` (``cluster/ceph.py``) does nothing and getput's URL comes from the
  benchmark's ``auth`` key.  The harness makes what ``add_swift_user`` would (user ``cbt``, subuser
  ``cbt:swift`` with full access, its Swift key) and the S3 key the shim maps the Swift credentials to;
* CBT makes a permutation of every list in a benchmark's config (``benchmarkfactory.all_configs``), so
  ``auth: [url]`` reaches getput.py as the string ``url``, whose characters it would take for gateways (one
  getput per character); ``auth: [[url]]`` reaches it as ``[url]``;
* ``Getput.run`` does not call ``Benchmark.run``, so a getput archive has no ``benchmark_config.yaml``
  (ingest takes the keys from CBT's path layout instead);
* ``is_teuthology: True`` (as :mod:`capture.cbt`): without it only the first iteration runs;
* getput's run folder of an iteration after the first is never made (``Getput.initialize``, which makes
  it, runs once per class), so its credential file and output cannot be written: the harness makes those
  folders before CBT starts (:func:`getput_run_dirs`; found when the first 3-iteration run failed);
* CBT reuses getput's container names in every iteration: iterations 2… PUT the same keys into the buckets
  iteration 1 filled (overwrites; radosgw's garbage collection of the old data waits 2 h by default).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from capture.cbt.archive import CBT_DIR, HARNESS, ArmRun, ArmStaging, ensure_cbt, gzip_tree, is_done, stage_arms
from capture.ceph.cluster import ClusterError
from capture.common.campaign import CampaignError, load_checked
from capture.common.sitting import do_runs, guarded, interrupt_on_sigterm, log_arms_left, now_stamp

from . import campaign as rc
from .runner import RgwError, RgwRunner, total_line

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "capture" / "rgw" / "getput-shim"
#: the user CBT's getput logs in as (``benchmark/getput.py``: ``user`` default ``cbt``, subuser ``<user>:swift``,
#: ``key`` default: "dummy key from ceph radosgw docs"); not a secret: a throwaway cluster on 127.0.0.1
CBT_USER = "cbt"
CBT_KEY = "vzCEkuryfn060dfee4fgQPqFrncKEIkh3ZcdOANY"
NODE = "localhost"
SHIM_LOG = "getput-shim.jsonl"


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    """An RGW campaign (:func:`capture.rgw.campaign.validate`) that CBT's getput can run: RGW arms only, PUTs
    only (``load.get_s`` 0: the shim runs getput's ``p`` test alone), whole seconds."""
    doc = rc.validate(doc, where)
    ld = doc["load"]
    if ld["get_s"] != 0:
        raise CampaignError(f"{where}: load.get_s must be 0 for CBT's getput (the shim runs PUTs only: getput's "
                            "GET test is not the generator's)")
    if int(ld["put_s"]) != ld["put_s"]:
        raise CampaignError(f"{where}: load.put_s must be whole seconds (getput's --runtime is an integer)")
    rados = [a["name"] for a in doc["arms"] if a.get("rados")]
    if rados:
        raise CampaignError(f"{where}: arms {rados}: rados bench arms are run by `python -m capture.rgw run`, "
                            "not through CBT's getput")
    extra = doc.setdefault("cbt", {})
    if not isinstance(extra, dict) or not isinstance(extra.setdefault("getput", {}), dict):
        raise CampaignError(f"{where}: cbt must be a mapping {{getput: {{…}}}} (keys passed to CBT's getput)")
    set_here = sorted(set(extra["getput"]) & {"cmd_path", "auth", "user", "key", "procs", "op_size", "runtime",
                                              "test", "ctype", "ops_per_proc", "grace"})
    if set_here:
        raise CampaignError(f"{where}: cbt.getput sets {set_here}: the harness sets these (from load and the arm; "
                            "ops_per_proc and grace are refused by the shim)")
    return doc


def load(path: str | Path) -> dict[str, Any]:
    return load_checked(path, "campaign, cluster, load, arms", validate)


def auth_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/auth/v1.0"


def cbt_config(doc: dict[str, Any], arm: dict[str, Any], *, conf_file: str, mon_addr: str, tmp_dir: str,
               port: int) -> dict[str, Any]:
    """CBT's YAML for one arm (its ``repeats`` are CBT's iterations)."""
    from capture.cbt.campaign import cbt_config as base
    ld = doc["load"]
    getput = {**doc["cbt"]["getput"],
              "cmd_path": str(SHIM), "user": CBT_USER, "key": CBT_KEY,
              # nested: CBT permutes a benchmark's top-level lists (module doc)
              "auth": [[auth_url(port)]],
              "procs": int(ld["procs"]), "op_size": rc.size_bytes(ld["osize"]), "runtime": int(ld["put_s"]),
              "test": "p", "ctype": arm["ctype"]}
    return base({"cbt": {"benchmarks": {"getput": getput}}, "cluster": {"osds": doc["cluster"]["osds"]}},
                conf_file=conf_file, mon_addr=mon_addr, tmp_dir=tmp_dir, iterations=int(doc["repeats"]),
                image=("", ""))


def getput_run_dirs(cfg: dict[str, Any], tmp_dir: str | Path) -> list[Path]:
    """The run folders CBT 9d6480f's getput writes into (its ``gwNN.cred`` and ``output.gwN``) for the
    iterations after the first: ``<tmp_dir>/<iteration>/Getput/osd_ra-…/op_size-…/procs-…/<test>/<ctype>``
    (``benchmark/getput.py``).  CBT makes that folder only in ``Getput.initialize``, which ``cbt.py`` calls
    once per benchmark class (iteration 0); a later iteration's ``echo … > <dir>/gw00.cred`` then fails and
    getput runs without credentials.  The harness makes them before CBT starts."""
    g = cfg["benchmarks"]["getput"]
    iters = int(cfg["cluster"]["iterations"])
    rel = (f"Getput/osd_ra-{int(g.get('osd_ra', 0)):08d}/op_size-{int(g['op_size']):08d}/"
           f"procs-{int(g['procs']):08d}/{g.get('test', 'p')}/{g['ctype']}")
    return [Path(tmp_dir) / f"{i:08d}" / rel for i in range(1, iters)]


def archive_outputs(archive: Path, doc: dict[str, Any], arm: dict[str, Any]) -> list[Path]:
    """getput's outputs in a CBT archive, in iteration order: ``results/<iteration>/id-*/osd_ra-*/op_size-<B>/
    procs-<N>/p/<ctype>/output.gw0[.<host>]``."""
    ld = doc["load"]
    pat = (f"results/*/id-*/osd_ra-*/op_size-{rc.size_bytes(ld['osize']):08d}/procs-{int(ld['procs']):08d}/p/"
           f"{arm['ctype']}/output.gw0*")
    return sorted(archive.glob(pat))


def check_archive(archive: Path, doc: dict[str, Any], arm: dict[str, Any], shim: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """Per iteration the put total of getput's output; :class:`RgwError` naming what is missing."""
    want = int(doc["repeats"])
    outs = archive_outputs(archive, doc, arm)
    iters = sorted({p.relative_to(archive).parts[1] for p in outs})
    if len(outs) != want or iters != [f"{i:08d}" for i in range(want)]:
        raise RgwError(f"CBT's archive holds {len(outs)} getput outputs (iterations {iters}), expected one in each "
                       f"of {want} iterations")
    bad = [r for r in shim if r.get("exit") != 0]
    if len(shim) != want or bad:
        raise RgwError(f"the shim ran {len(shim)} times for {want} iterations"
                       + (f"; failed: {bad[0].get('error', bad[0].get('exit'))}" if bad else ""))
    got = []
    for p in outs:
        tot = total_line(p.read_text(), "put")
        if tot is None or tot["ops"] == 0 or tot["procs"] != int(doc["load"]["procs"]):
            raise RgwError(f"{p.relative_to(archive)}: no put total line of {doc['load']['procs']} processes with "
                           f"ops > 0 (got {tot})")
        got.append({"iteration": int(p.relative_to(archive).parts[1]), "file": str(p.relative_to(archive)), **tot})
    return got


class RgwCbtRunner(ArmStaging):
    """:class:`RgwRunner`'s bring-up and regime, one CBT invocation per arm (capture.common.sitting's
    runner), staged and moved into place as :mod:`capture.cbt` does."""

    def __init__(self, doc: dict[str, Any], root: Path, log) -> None:
        self.doc, self.root, self.log = doc, root, log
        self.rgw = RgwRunner(doc, root, log)
        self.cbt_commit = "unknown"

    def set_up(self) -> None:
        self.cbt_commit = ensure_cbt(self.log)
        self.rgw.set_up()
        a = self.rgw.admin
        sub = f"{CBT_USER}:swift"
        # what CBT's add_swift_user runs (a no-op under use_existing), then the S3 key the shim maps to
        a("user", "create", f"--uid={CBT_USER}", f"--display-name={CBT_USER}")
        a("subuser", "create", f"--uid={CBT_USER}", f"--subuser={sub}", "--access=full")
        a("key", "create", f"--subuser={sub}", "--key-type=swift", f"--secret={CBT_KEY}")
        a("key", "create", f"--subuser={sub}", "--key-type=s3", f"--access-key={sub}", f"--secret-key={CBT_KEY}")
        info = json.loads(a("user", "info", f"--uid={CBT_USER}"))
        self.user_keys = {"swift": [k["user"] for k in info.get("swift_keys", [])],
                          "s3": [{"user": k["user"], "access_key": k["access_key"]} for k in info.get("keys", [])]}
        self.log(f"CBT's getput user: {self.user_keys}")

    def _buckets(self) -> list[str]:
        return sorted(json.loads(self.rgw.admin("bucket", "list", f"--uid={CBT_USER}")))

    def one(self, run: ArmRun) -> dict[str, Any]:
        from capture.ceph.runner import machine_facts
        import yaml
        rgw, doc = self.rgw, self.doc
        rgw.check_regime()
        cl = rgw.cl
        arm = rc.arm(doc, run.arm)
        stage = self.stage(run)
        shutil.rmtree(stage, ignore_errors=True)
        harness, archive = stage / HARNESS, stage / "archive"
        harness.mkdir(parents=True)
        tmp = self.cbt_tmp(run)
        shutil.rmtree(tmp, ignore_errors=True)
        for b in self._buckets():  # an earlier attempt's buckets
            rgw.admin("bucket", "rm", f"--bucket={b}", "--purge-objects", "--bypass-gc", timeout=1800)
        t0 = time.time()
        ld, c = doc["load"], doc["cluster"]
        info: dict[str, Any] = {
            "campaign": doc["campaign"], "arm": run.arm, "plan_order": run.order, "origin": "measured",
            "tool": "cbt getput (capture/rgw/getput-shim → capture.rgw.loadgen)", "cbt_commit": self.cbt_commit,
            "iterations": int(doc["repeats"]), "osize": ld["osize"], "osize_B": rc.size_bytes(ld["osize"]),
            "procs": ld["procs"], "put_s": ld["put_s"], "ctype": arm["ctype"], "shards_config": arm["shards"],
            "osds": c["osds"], "pool_size": c["pool_size"], "pg_num": rgw.pgs, "osd_op_queue": "wpq",
            "throttle_iops": c["throttle_iops"], "cluster_up": rgw.brought_up, "ceph_versions": rgw.versions,
            "osd_settings": rgw.settings, "cbt_user": self.user_keys, "machine": machine_facts(),
            "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        info["rgw_restart_s"] = round(rgw.start_rgw(int(arm["shards"])), 2)
        cfg = cbt_config(doc, arm, conf_file=cl.conf_arg, mon_addr=f"{cl.ip}:6789", tmp_dir=str(tmp),
                         port=rgw.port)
        (harness / "cbt.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True))
        info["run_dirs_made"] = [str(d.relative_to(tmp)) for d in getput_run_dirs(cfg, tmp)]
        for d in getput_run_dirs(cfg, tmp):  # CBT makes only iteration 0's (getput_run_dirs)
            d.mkdir(parents=True, exist_ok=True)
        argv = ["/usr/bin/python3", str(CBT_DIR / "cbt.py"), "-a", str(archive), str(harness / "cbt.yaml")]
        shim_log = harness / SHIM_LOG
        env = dict(os.environ, CEPH_CONF=cl.conf_arg, LC_ALL="C", **{"CEPHQOS_GETPUT_LOG": str(shim_log)})
        limit = 600 + int(doc["repeats"]) * (int(ld["put_s"]) + 300)

        def body() -> dict[str, Any]:
            with open(harness / "cbt.log", "w") as logf:
                try:
                    p = subprocess.run(argv, cwd=CBT_DIR, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                       timeout=limit)
                except subprocess.TimeoutExpired:
                    raise RgwError(f"cbt.py still running after {limit} s (log {harness / 'cbt.log'})") from None
            return {"cbt_exit": p.returncode}
        t_cbt = time.time()
        info.update(rgw._measured(harness, body))
        info["cbt_s"] = round(time.time() - t_cbt, 1)
        info["cbt_argv"] = argv
        shim = [json.loads(ln) for ln in shim_log.read_text().splitlines()] if shim_log.exists() else []
        shim_log.unlink(missing_ok=True)
        info["getput_shim"] = shim
        if info["cbt_exit"] != 0:
            tail = (harness / "cbt.log").read_text(errors="replace")[-600:]
            raise RgwError(f"cbt.py exited {info['cbt_exit']} (log {harness / 'cbt.log'}): …{tail}")
        info["put"] = check_archive(archive, doc, arm, shim)
        buckets = self._buckets()
        info["index"] = rgw.index_shards(buckets)
        creds = sorted(archive.rglob("gw*.cred*"))
        info["removed_from_archive"] = [str(p.relative_to(archive)) for p in creds]
        for p in creds:  # the Swift key CBT writes beside getput's output: not shipped
            p.unlink()
        t = time.time()
        for b in buckets:
            rgw.admin("bucket", "rm", f"--bucket={b}", "--purge-objects", "--bypass-gc", timeout=1800)
        info["cleanup_s"] = round(time.time() - t, 2)
        info["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        info["files_gzipped"] = gzip_tree(archive) + gzip_tree(harness)
        shutil.rmtree(tmp, ignore_errors=True)
        info["duration_s"] = round(time.time() - t0, 1)
        time.sleep(float(ld["settle_s"]))
        return info

    def close(self) -> None:
        self.rgw.close()


def _summary(info: dict[str, Any]) -> tuple[dict[str, Any], str]:
    mib = [p["mib_s"] for p in info["put"]]
    return ({"put_mib_s": mib, "cbt_s": info["cbt_s"]},
            f"CBT {info['cbt_s']:.0f} s; PUT MiB/s per iteration {mib}; outside CPU "
            f"{info['cpu']['outside_cpu_frac']:.3f}; index {json.dumps(info.get('index'))}")


def sitting(campaign_file: Path, out: Path, log) -> int:
    """Bring up, run every arm not yet done (one CBT invocation each), tear down."""
    if os.geteuid() != 0:
        print("capture.rgw cbt needs root (Ceph daemons, apt)", file=sys.stderr)
        return 2
    doc = load(campaign_file)
    root = (out / doc["campaign"]).resolve()
    arms = [a["name"] for a in doc["arms"]]
    todo = stage_arms(doc["campaign"], campaign_file, root, arms)
    if not todo:
        log(f"{doc['campaign']}: every arm is done")
        return 0
    runner = RgwCbtRunner(doc, root, log)
    rec: dict[str, Any] = {"started": now_stamp(), "planned": [r.arm for r in todo],
                           "iterations": doc["repeats"], "runs": []}
    interrupt_on_sigterm("SIGTERM")

    def work() -> None:
        runner.set_up()
        do_runs(todo, runner, threshold=float(doc["disturbed_outside_cpu_frac"]), deadline=None, log=log,
                errors=(RgwError, ClusterError, OSError), sitting=rec, summary=_summary)
    rc_ = guarded(work, close=runner.close, root=root, record=rec, log=log, errors=False,
                  after=lambda: log_arms_left(arms, [a for a in arms if not is_done(root, a)], log))
    return rc_ if rc_ else (0 if all(is_done(root, a) for a in arms) else 1)

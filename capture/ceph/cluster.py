"""A throwaway single-node Ceph cluster (1 mon, 1 mgr, N BlueStore OSDs on sparse files), cephx off:
Debian 12's 16.2 (Pacific) on the host at 127.0.0.1, or Debian 13's 18.2 (Reef) inside the chroot of
:mod:`capture.ceph.chroot` at 127.0.0.2 (its own address and ports, so it never meets a host cluster).
Only PIDs this object started are ever signalled.  Steps and pitfalls: ../shared/notes/ceph-single-node.md,
../shared/notes/ceph-reef-chroot.md."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from .chroot import DEFAULT_ROOT, chroot_argv
from .config import render_ceph_conf

#: per release: where it runs (None: the host), its address and the ports its OSDs/mgr bind
RELEASES: dict[str, dict[str, Any]] = {
    "pacific": {"root": None, "ip": "127.0.0.1", "ports": None},
    # the Reef cluster keeps clear of a host cluster: another loopback address and 7400-7600 (the note)
    "reef": {"root": DEFAULT_ROOT, "ip": "127.0.0.2", "ports": (7400, 7600)},
}
#: the harness's helper scripts that run under the cluster's own python3 (rados bindings)
HELPERS = ("pgpoll.py", "pgpoll_stamp.py", "objfill.py")

PACKAGES = ["ceph-mon", "ceph-osd", "ceph-mgr", "ceph-common", "ceph-base", "fio",
            "python3-rados", "python3-rbd", "python3-yaml"]


class ClusterError(RuntimeError):
    pass


PIDS_FILE = "harness-pids.json"  # {name: pid} of every daemon this harness started, in the workdir
MARKER = "cephqos-cluster"       # written into a workdir this harness created


def _cmdline(pid: int) -> list[str]:
    """argv of a live process ([] if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _is_ours(pid: int, workdir: Path) -> bool:
    """A Ceph daemon started with this workdir's ceph.conf — not a recycled PID of something else.  In a
    chroot the daemon names the conf by its path inside; the workdir is then under some root, and the
    daemon's own root (``/proc/PID/root``) must be that root."""
    argv = _cmdline(pid)
    if not argv or not Path(argv[0]).name.startswith("ceph-"):
        return False
    wd = Path(workdir).resolve()
    if str(wd / "ceph.conf") in argv:
        return True
    try:
        root = Path(os.readlink(f"/proc/{pid}/root"))
        inside = wd.relative_to(root)
    except (OSError, ValueError):
        return False
    return root != Path("/") and str(Path("/") / inside / "ceph.conf") in argv


def recorded_pids(workdir: Path) -> dict[str, int]:
    """PIDs the harness recorded for ``workdir``: its own PID file, then the daemons' ``run/*.pid``."""
    out: dict[str, int] = {}
    try:
        out.update({str(k): int(v) for k, v in json.loads((workdir / PIDS_FILE).read_text()).items()})
    except (OSError, ValueError, AttributeError):
        pass
    run = workdir / "run"
    for pf in sorted(run.glob("*.pid")) if run.is_dir() else []:
        try:
            pid = int(pf.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if out.get(pf.stem, pid) != pid:  # a daemon's own pid file disagrees: keep both
            out[f"{pf.stem}#pidfile"] = pid
        else:
            out[pf.stem] = pid
    return out


def live_pids(workdir: Path) -> dict[str, int]:
    """The recorded PIDs that still run one of our Ceph daemons."""
    return {k: p for k, p in recorded_pids(workdir).items() if p > 1 and _is_ours(p, workdir)}


def where(workdir: Path, release: str = "pacific") -> tuple[Path, str]:
    """(the cluster folder as the host sees it, the address its mon binds) for ``workdir`` as the
    release's daemons see it."""
    if release not in RELEASES:
        raise ClusterError(f"ceph release {release!r}: expected one of {', '.join(RELEASES)}")
    root, ip = RELEASES[release]["root"], RELEASES[release]["ip"]
    return ((root / str(workdir).lstrip("/")) if root else Path(workdir).resolve()), ip


def _remove_workdir(workdir: Path) -> None:
    """Delete a workdir only if this harness made it (marker file or ceph.conf) or it is empty."""
    if not workdir.exists():
        return
    if not ((workdir / MARKER).exists() or (workdir / "ceph.conf").exists() or not any(workdir.iterdir())):
        raise ClusterError(f"{workdir} exists and is not a cluster directory of this harness (no "
                           f"{MARKER} or ceph.conf in it): refusing to delete it; choose another "
                           "cluster.workdir or remove it yourself")
    shutil.rmtree(workdir)


def preflight(workdir: Path, ip: str = "127.0.0.1") -> None:
    """Refuse to start without root, or beside a cluster from an earlier run."""
    if os.geteuid() != 0:
        raise ClusterError("needs root (Ceph daemons, /proc of all processes): run it with sudo, "
                           "e.g. `sudo make capture-smoke`")
    pids = live_pids(workdir)
    busy = [p for p in (3300, 6789) if _port_open(p, ip)]
    if pids or busy:
        raise ClusterError(
            f"a cluster from an earlier run is still there ({workdir}: live daemons {pids}; "
            f"ports in use {busy}). Stop it with `python -m capture.ceph teardown --workdir {workdir}` "
            f"(kills only the daemons it recorded there) or stop whatever listens on those ports, "
            "then retry.")
    _remove_workdir(workdir)  # dead leftovers of an earlier run: nothing of value in there


def _port_open(port: int, ip: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex((ip, port)) == 0


def ensure_packages(log: Callable[[str], None], release: str = "pacific") -> None:
    if release != "pacific":
        root = RELEASES[release]["root"]
        if not (root / "usr/bin/ceph-osd").exists() or not (root / "usr/bin/fio").exists():
            raise ClusterError(f"the {release} chroot is not built at {root}: run `sudo make ceph-reef` first")
        from .chroot import mount
        mount(root)  # after a reboot the binds are gone
        return
    missing = [p for p in ("ceph-mon", "ceph-osd", "ceph-mgr", "ceph", "fio") if not shutil.which(p)]
    ok = subprocess.run(["/usr/bin/python3", "-c", "import rados, rbd"], capture_output=True).returncode == 0
    if missing or not ok:
        log(f"installing Debian packages ({', '.join(PACKAGES)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                        "-o", "DPkg::Lock::Timeout=600"] + PACKAGES, check=True, env=env)


def teardown_workdir(workdir: Path) -> list[int]:
    """Kill the daemons recorded in ``workdir`` that still are ours (nothing else), then remove it."""
    killed = []
    for name, pid in live_pids(workdir).items():
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
    if killed:
        time.sleep(1)
    _remove_workdir(workdir)
    return killed


class Cluster:
    def __init__(self, workdir: Path, osds: int, osd_size_bytes: int, osd_memory_target: int,
                 log: Callable[[str], None] = print,
                 devices: list[tuple[str, str | None]] | None = None, release: str = "pacific") -> None:
        """``devices``: per OSD (block device, DB device or None) — BlueStore on those devices instead
        of a sparse file in the OSD's directory (``osd_size_bytes`` is then unused).  ``release``: a key
        of :data:`RELEASES`; with a chroot, ``workdir`` is the path the daemons see and :attr:`dir` is
        where the host finds it."""
        self.dir, self.ip = where(Path(workdir), release)
        self.release = release
        rel = RELEASES[release]
        self.root: Path | None = rel["root"]
        self.ports = rel["ports"]
        self.idir = Path(workdir)  # as the daemons see it
        if devices is not None and len(devices) != osds:
            raise ClusterError(f"{osds} OSDs but {len(devices)} device entries")
        self.devices = devices
        self.n = osds
        self.osd_size = osd_size_bytes
        self.mem = osd_memory_target
        self.log = log
        self.conf = self.dir / "ceph.conf"
        self.procs: dict[str, subprocess.Popen] = {}
        self.fsid = str(uuid.uuid4())

    # ------------------------------------------------------------------ commands
    def inside(self, p: Path | str) -> str:
        """A host path under :attr:`dir` as the cluster's programs see it."""
        if self.root is None:
            return str(p)
        return str(Path("/") / Path(p).relative_to(self.root))

    def argv(self, argv: list[str], cwd: Path | None = None) -> list[str]:
        """A command of the cluster's release (in its chroot), optionally run in ``cwd`` (a host path)."""
        return chroot_argv(self.root, argv, None if cwd is None or self.root is None else self.inside(cwd))

    @property
    def conf_arg(self) -> str:
        return self.inside(self.conf)

    def ceph(self, *args: str, fmt_json: bool = False, timeout: float = 120, check: bool = True) -> Any:
        cmd = ["ceph", "--conf", self.conf_arg] + list(args) + (["--format", "json"] if fmt_json else [])
        p = subprocess.run(self.argv(cmd), capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise ClusterError(f"{' '.join(cmd[3:])}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        if fmt_json:
            return json.loads(p.stdout) if p.stdout.strip() else None
        return p.stdout

    def rados(self, *args: str, timeout: float = 600) -> str:
        p = subprocess.run(self.argv(["rados", "--conf", self.conf_arg] + list(args)), capture_output=True,
                           text=True, timeout=timeout)
        if p.returncode != 0:
            raise ClusterError(f"rados {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        return p.stdout

    def py(self, script: str, *args: str, timeout: float = 1800) -> str:
        """Run one of our helper scripts under the release's /usr/bin/python3 (where its rados bindings
        import)."""
        p = subprocess.run(self.helper_argv(script) + list(args), capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise ClusterError(f"{script} {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
        return p.stdout

    def helper_argv(self, script: str) -> list[str]:
        """``python3 <script> --conf <conf>``: the harness's copy for the host, the copy :meth:`up` put
        into the cluster's folder for a chroot."""
        path = Path(__file__).parent / script if self.root is None else self.inside(self.dir / "helpers" / script)
        return self.argv(["/usr/bin/python3", str(path), "--conf", self.conf_arg])

    def config_set(self, who: str, settings: dict[str, Any]) -> None:
        for k, v in settings.items():
            self.ceph("config", "set", who, k, str(v))

    # ------------------------------------------------------------------ daemons
    def _start(self, name: str, argv: list[str]) -> None:
        with open(self.dir / "log" / f"{name}.stdout", "ab") as logf:
            self.procs[name] = subprocess.Popen(self.argv(argv + ["--conf", self.conf_arg]), stdout=logf,
                                                stderr=subprocess.STDOUT, start_new_session=True)
        self._record_pids()

    def _record_pids(self) -> None:
        """The latest PID of every daemon started so far (teardown checks each is still ours)."""
        old = recorded_pids(self.dir)
        old.update({k: p.pid for k, p in self.procs.items()})
        tmp = self.dir / (PIDS_FILE + ".tmp")
        tmp.write_text(json.dumps(old, sort_keys=True))
        os.replace(tmp, self.dir / PIDS_FILE)

    def _stop(self, name: str, timeout: float = 60) -> None:
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)

    def pids(self) -> dict[str, int]:
        return {k: p.pid for k, p in self.procs.items() if p.poll() is None}

    def up(self, settings: dict[str, Any]) -> None:
        """Create and start the cluster; ``settings`` go into the mon config DB before OSDs start."""
        t0 = time.time()
        for sub in ("run", "log", "mon/mon.a", "mgr/mgr.x", "crash"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / MARKER).write_text(f"fsid {self.fsid}\n")
        if self.root is not None:
            (self.dir / "helpers").mkdir(exist_ok=True)
            for h in HELPERS:
                shutil.copyfile(Path(__file__).parent / h, self.dir / "helpers" / h)
        self.conf.write_text(render_ceph_conf(self.fsid, self.inside(self.dir), self.osd_size, self.mem,
                                              ip=self.ip, ports=self.ports))
        kr, mm = self.inside(self.dir / "keyring"), self.inside(self.dir / "monmap")
        def run(argv):
            return subprocess.run(self.argv(argv), check=True, capture_output=True)
        run(["ceph-authtool", "--create-keyring", kr, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"])
        run(["ceph-authtool", kr, "--gen-key", "-n", "client.admin", "--cap", "mon",
             "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *"])
        run(["monmaptool", "--create", "--fsid", self.fsid, "--addv", "a",
             f"[v2:{self.ip}:3300,v1:{self.ip}:6789]", mm])
        run(["ceph-mon", "--conf", self.conf_arg, "--mkfs", "-i", "a", "--monmap", mm, "--keyring", kr])
        self._start("mon.a", ["ceph-mon", "-f", "-i", "a"])
        self._wait(lambda: self.ceph("mon", "stat", check=False, timeout=10), 60, "mon up")
        self.config_set("osd", settings)
        self._start("mgr.x", ["ceph-mgr", "-f", "-i", "x"])
        for i in range(self.n):
            u = str(uuid.uuid4())
            osd_id = int(self.ceph("osd", "new", u).strip())
            (self.dir / "osd" / str(osd_id)).mkdir(parents=True, exist_ok=True)
            subprocess.run(self.argv(["ceph-osd", "--conf", self.conf_arg, "-i", str(osd_id), "--mkfs",
                                      "--osd-uuid", u] + self._device_args(osd_id)), check=True,
                           capture_output=True)
        for i in range(self.n):
            self.start_osd(i)
        self.wait_osds(self.n, up=True)
        self._wait(lambda: (self.ceph("mgr", "stat", fmt_json=True) or {}).get("available"), 120,
                   "mgr available")
        if self.root is not None:
            # PITFALL (Reef chroot): restful imports pyOpenSSL → cryptography, a PyO3 extension that cannot
            # load in the mgr's sub-interpreters (the bcrypt stub covers the others); off, or HEALTH_WARN
            self.ceph("mgr", "module", "disable", "restful", check=False)
        self.log(f"cluster up in {time.time() - t0:.0f} s (fsid {self.fsid})")

    def _device_args(self, osd_id: int) -> list[str]:
        """mkfs options that point BlueStore at block devices: it symlinks ``block`` (and ``block.db``)
        in the OSD's directory to them, and later starts read the symlinks."""
        if self.devices is None:
            return []
        block, db = self.devices[osd_id]
        out = ["--bluestore_block_path", block, "--bluestore_block_create", "false"]
        if db:
            out += ["--bluestore_block_db_path", db, "--bluestore_block_db_create", "false"]
        return out

    def start_osd(self, i: int) -> None:
        self._start(f"osd.{i}", ["ceph-osd", "-f", "-i", str(i)])

    def stop_osd(self, i: int) -> None:
        self._stop(f"osd.{i}")

    def restart_osds(self) -> float:
        """Stop every OSD, start them again, wait until all are up and all PGs active+clean."""
        t0 = time.time()
        for i in range(self.n):
            self.stop_osd(i)
        for i in range(self.n):
            self.start_osd(i)
        self.wait_osds(self.n, up=True)
        self.wait_clean()
        return time.time() - t0

    def down(self) -> None:
        for name in [k for k in self.procs if k.startswith("osd.")] + ["mgr.x", "mon.a"]:
            try:
                self._stop(name, timeout=30)
            except Exception as e:  # keep going: every PID we started must go
                self.log(f"stopping {name}: {e}")
        for p in list(self.procs.values()):
            if p.poll() is None:
                p.kill()

    # ------------------------------------------------------------------ waiting
    def _wait(self, cond: Callable[[], Any], timeout: float, what: str, every: float = 1.0) -> Any:
        end = time.time() + timeout
        last_err = None
        while time.time() < end:
            try:
                v = cond()
                if v:
                    return v
            except (ClusterError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                last_err = e
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise ClusterError(f"{name} exited with {p.returncode} while waiting for {what}; "
                                       f"see {self.dir}/log/{name}.log")
            time.sleep(every)
        raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}"
                           + (f" (last error: {last_err})" if last_err else ""))

    def wait_osds(self, n: int, up: bool = True, timeout: float = 180) -> None:
        def ok():
            s = self.ceph("osd", "stat", fmt_json=True, timeout=20)
            return s.get("num_up_osds") == n if up else True
        self._wait(ok, timeout, f"{n} OSDs up")

    def pg_states(self) -> dict[str, int]:
        s = self.ceph("pg", "stat", fmt_json=True, timeout=30)
        summ = s.get("pg_summary", s)
        return {d["name"]: d["num"] for d in summ.get("num_pg_by_state", [])}

    def wait_clean(self, timeout: float = 300) -> None:
        def ok():
            st = self.pg_states()
            return bool(st) and set(st) == {"active+clean"}
        self._wait(ok, timeout, "all PGs active+clean", every=2.0)

    def wait_peered(self, timeout: float = 180) -> None:
        """All PGs active (degraded/undersized/waiting is fine), none peering/unknown/down."""
        def ok():
            st = self.pg_states()
            return bool(st) and all("active" in k and "peering" not in k for k in st)
        self._wait(ok, timeout, "all PGs active", every=2.0)

    def osd_config(self, i: int, with_defaults: bool = False) -> dict[str, str]:
        """What osd.i runs (``config show``: non-default values; or every option)."""
        if self.root is not None:
            # PITFALL (Reef note): `ceph config show` is served by the mgr from OSD reports and lags ~5 s
            # behind a restart; the OSD's admin socket answers at once with what it runs
            from .opqueue import asok_command
            sock = self.dir / "run" / f"osd.{i}.asok"
            if with_defaults:
                doc = asok_command(sock, "config show", timeout=10)
                return {k: str(v) for k, v in (doc or {}).items()}
            diff = (asok_command(sock, "config diff", timeout=10) or {}).get("diff", {})
            return {k: str(v.get("final", v.get("current"))) for k, v in diff.items() if isinstance(v, dict)}
        doc = self.ceph("config", "show-with-defaults" if with_defaults else "show", f"osd.{i}",
                        fmt_json=True, timeout=30)
        if isinstance(doc, list):
            return {d["name"]: str(d["value"]) for d in doc}
        return {k: str(v) for k, v in (doc or {}).items()}

"""Ceph 18.2 (Reef) from Debian 13 (trixie) in a ``debootstrap`` chroot beside the host's Pacific.

``python -m capture.ceph.chroot {build,mount,umount,clean,info} [--root DIR]`` (root).  The measured steps
and pitfalls are in ../shared/notes/ceph-reef-chroot.md; each pitfall handled here says so where it is
handled.  The daemons run as host processes (``chroot ROOT ceph-osd …`` execs, so the PID the harness
starts is the daemon's): the cgroup throttle, /proc sampling and admin sockets work as for Pacific.

Pure parts (unit-tested without root): :func:`mirror_from_sources`, :func:`parse_ceph_version`,
:func:`chroot_argv`, :data:`BCRYPT_STUB`, :func:`missing_packages`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

DEFAULT_ROOT = Path("/var/tmp/cephqos-reef-root")
SUITE = "trixie"
MARKER = "cephqos-chroot.json"   # written last by build(): release, timings, size
#: inside the chroot: ceph daemons and CLI, fio with the rbd engine (3.39), the rados bindings for the
#: harness's helper scripts (pgpoll.py, objfill.py run under the chroot's python3)
PACKAGES = ["ceph-mon", "ceph-mgr", "ceph-osd", "ceph-common", "fio", "procps", "python3-rados",
            "python3-rbd"]
#: bind mounts, in mount order.  PITFALL: plain --bind of /sys, not --rbind, which drags the host's
#: cgroup mounts in (and umount of the chroot would then need -R).
BINDS = ("proc", "sys", "dev", "dev/pts", "dev/shm")

#: PITFALL 1: trixie's python3-bcrypt (and cryptography) are PyO3 extensions that refuse to load in
#: ceph-mgr's per-module sub-interpreters, so *every* mgr module fails (mgr_util imports bcrypt).  This
#: stub, first on the mgr's module path, shadows it; only password hashing (dashboard) needs the real one.
BCRYPT_STUB = '''# cephqos-lab: stub shadowing python3-bcrypt (PyO3), which cannot load in ceph-mgr sub-interpreters.
__version__ = "0-stub"


def _nope(*a, **k):
    raise NotImplementedError("bcrypt is stubbed out for ceph-mgr (PyO3 sub-interpreter issue)")


gensalt = hashpw = checkpw = kdf = _nope
'''
BCRYPT_STUB_PATH = "usr/share/ceph/mgr/bcrypt.py"


class ChrootError(RuntimeError):
    pass


def mirror_from_sources(text: str) -> str | None:
    """The first Debian mirror in an APT sources file (deb822 ``URIs:`` or one-line ``deb URL suite``),
    skipping security mirrors.  None if there is none."""
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"^URIs:\s*(\S+)", s) or re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+", s)
        if m and "security" not in m.group(1):
            return m.group(1)
    return None


def host_mirror() -> str:
    """The Debian mirror this machine's APT already uses (debootstrap fetches trixie from it)."""
    files = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for f in files:
        try:
            m = mirror_from_sources(f.read_text())
        except OSError:
            continue
        if m:
            return m
    return "http://deb.debian.org/debian"


_VERSION = re.compile(r"ceph version (\d+)\.(\d+)\.(\d+)\S*\s+\(([0-9a-f]+)\)\s+(\w+)")


def parse_ceph_version(text: str) -> dict[str, object]:
    """``ceph version 18.2.7 (<sha1>) reef (stable)`` → {version, major, minor, patch, sha1, release}.

    Accepts the ``ceph --version`` line and the values of ``ceph versions`` (JSON keys are such lines)."""
    m = _VERSION.search(text)
    if not m:
        raise ValueError(f"not a ceph version string: {text.strip()[:120]!r}")
    ma, mi, pa, sha, rel = m.groups()
    return {"version": f"{ma}.{mi}.{pa}", "major": int(ma), "minor": int(mi), "patch": int(pa),
            "sha1": sha, "release": rel}


def chroot_argv(root: Path | None, argv: list[str], cwd: str | None = None) -> list[str]:
    """``argv`` as run inside ``root`` (unchanged for the host), in ``cwd`` (a path inside) if given:
    chroot(8) changes to the new ``/``, ``env -C`` to ``cwd``.  ``chroot`` and ``env`` both exec, so the
    PID of the returned command is the program's own."""
    if root is None:
        return list(argv)
    return (["chroot", str(root), "/usr/bin/env"] + (["-C", cwd] if cwd else [])
            + ["LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"] + list(argv))


def missing_packages(dpkg_status: str, wanted: list[str] = PACKAGES) -> list[str]:
    """Packages of ``wanted`` not installed according to a dpkg ``status`` file's text."""
    ok, pkg = set(), None
    for line in dpkg_status.splitlines():
        if line.startswith("Package: "):
            pkg = line.split(": ", 1)[1].strip()
        elif line.startswith("Status: ") and pkg and line.split()[-1] == "installed":
            ok.add(pkg)
    return [p for p in wanted if p not in ok]


def _mounted(path: Path) -> bool:
    return subprocess.run(["mountpoint", "-q", str(path)]).returncode == 0


def mount(root: Path) -> None:
    for b in BINDS:
        src, dst = Path("/") / b, root / b
        if not src.exists() or _mounted(dst):
            continue
        dst.mkdir(parents=True, exist_ok=True)
        if b == "proc":
            subprocess.run(["mount", "-t", "proc", "proc", str(dst)], check=True)
        else:
            subprocess.run(["mount", "--bind", str(src), str(dst)], check=True)


def umount(root: Path) -> None:
    for b in reversed(BINDS):
        dst = root / b
        if dst.exists() and _mounted(dst):
            subprocess.run(["umount", str(dst)], check=True)


def _du_bytes(root: Path) -> int:
    p = subprocess.run(["du", "-sxb", str(root)], capture_output=True, text=True)
    return int(p.stdout.split()[0]) if p.returncode == 0 and p.stdout else -1


def run_in(root: Path, argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(chroot_argv(root, argv), env=env, **kw)


def build(root: Path = DEFAULT_ROOT, mirror: str | None = None, log: Callable[[str], None] = print) -> dict:
    """Make (or complete) the chroot; idempotent.  Returns and writes ``root/MARKER``: timings, size,
    Ceph version."""
    if os.geteuid() != 0:
        raise ChrootError("building the Reef chroot needs root: sudo make ceph-reef")
    t0 = time.time()
    facts: dict[str, object] = {"root": str(root), "suite": SUITE}
    if not shutil.which("debootstrap"):
        log("installing debootstrap on the host")
        subprocess.run(["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", "debootstrap"],
                       check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if not (root / "usr/bin/apt-get").exists():
        mirror = mirror or host_mirror()
        log(f"debootstrap --variant=minbase {SUITE} {root} {mirror}")
        t = time.time()
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["debootstrap", "--variant=minbase", SUITE, str(root), mirror], check=True,
                       stdout=subprocess.DEVNULL)
        facts["debootstrap_s"] = round(time.time() - t, 1)
        facts["mirror"] = mirror
    # no daemon may start from a package's postinst inside the chroot
    prc = root / "usr/sbin/policy-rc.d"
    prc.write_text("#!/bin/sh\nexit 101\n")
    prc.chmod(0o755)
    shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
    mount(root)
    status = (root / "var/lib/dpkg/status").read_text()
    need = missing_packages(status)
    if need:
        t = time.time()
        log(f"apt-get install in the chroot: {' '.join(need)}")
        run_in(root, ["apt-get", "update", "-qq"], check=True)
        run_in(root, ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + PACKAGES, check=True,
               stdout=subprocess.DEVNULL)
        facts["apt_install_s"] = round(time.time() - t, 1)
    stub = root / BCRYPT_STUB_PATH
    if not stub.exists() or stub.read_text() != BCRYPT_STUB:
        stub.write_text(BCRYPT_STUB)
    v = run_in(root, ["ceph", "--version"], capture_output=True, text=True, check=True).stdout
    facts.update(parse_ceph_version(v))
    facts["fio"] = run_in(root, ["fio", "--version"], capture_output=True, text=True).stdout.strip()
    facts["build_s"] = round(time.time() - t0, 1)
    facts["size_B"] = _du_bytes(root)
    old = info(root) or {}
    facts = {**{k: v for k, v in old.items() if k in ("debootstrap_s", "apt_install_s", "mirror")}, **facts}
    tmp = root / (MARKER + ".tmp")
    tmp.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, root / MARKER)
    return facts


def info(root: Path = DEFAULT_ROOT) -> dict | None:
    try:
        return json.loads((root / MARKER).read_text())
    except (OSError, ValueError):
        return None


def clean(root: Path = DEFAULT_ROOT) -> None:
    """Unmount and delete the chroot — only one this module built (its marker is there)."""
    if not root.exists():
        return
    if not (root / MARKER).exists() and (root / "usr").exists():
        raise ChrootError(f"{root} has no {MARKER}: not a chroot this harness built; remove it yourself")
    umount(root)
    for b in BINDS:  # never recurse into a live bind mount
        if _mounted(root / b):
            raise ChrootError(f"{root / b} is still mounted; not deleting {root}")
    shutil.rmtree(root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.ceph.chroot", description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["build", "mount", "umount", "clean", "info"])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--mirror", default=None)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "build":
            f = build(a.root, a.mirror)
            print(f"Reef chroot ready: {a.root}: ceph {f['version']} ({f['release']}), "
                  f"{int(f['size_B']) / 2**20:.0f} MiB, this build {f['build_s']:.0f} s "
                  f"(debootstrap {f.get('debootstrap_s', '-')} s, apt {f.get('apt_install_s', '-')} s)")
        elif a.cmd == "mount":
            mount(a.root)
        elif a.cmd == "umount":
            umount(a.root)
        elif a.cmd == "clean":
            clean(a.root)
            print(f"removed {a.root}")
        else:
            print(json.dumps(info(a.root), indent=1))
    except (ChrootError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

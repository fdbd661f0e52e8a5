"""Build-once, load-fast native helpers: a C source beside this file → a cached shared library (ctypes).

Why not numba: its import and the first dispatch of even a cached function cost ~0.8 s per process
here (2-core VM), more than pandas needs to parse a 5M-line log; a ctypes library loads in ~1 ms.

The library is compiled with the system C compiler (``$CC``, else ``cc``/``gcc``/``clang``) the first
time it is needed — ``make venv`` does it up front — into ``analysis/ingest/_build/`` (or, if that is not
writable, ``$XDG_CACHE_HOME/cephqos-lab``), named by a hash of the source, flags and platform, so an
edited source is rebuilt and a stale build is never loaded.  The build writes a temporary file and
renames it into place, so concurrent first uses cannot load a half-written library.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
CFLAGS = ["-O3", "-shared", "-fPIC", "-std=c99"]


class NativeBuildError(RuntimeError):
    """No C compiler, or the compile failed: says what to install or what the compiler printed."""


def compiler() -> list[str]:
    """The C compiler command: ``$CC``, Python's configured CC if present, else cc/gcc/clang."""
    for cand in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if not cand:
            continue
        argv = shlex.split(cand)
        if argv and shutil.which(argv[0]):
            return argv
    raise NativeBuildError(
        "analysis needs a C compiler once, to build its log scanner (analysis/ingest/_cscan.c): "
        "on Debian `apt-get install gcc` (make venv does this when run as root), or set CC")


def _build_dirs() -> list[Path]:
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [HERE / "_build", cache_home / "cephqos-lab"]


def _tag(src: Path) -> str:
    h = hashlib.sha256(src.read_bytes())
    h.update(" ".join(CFLAGS).encode())
    h.update(f"{platform.machine()}-{platform.system()}".encode())
    return h.hexdigest()[:16]


@cache
def load(name: str) -> ctypes.CDLL:
    """The shared library built from ``<name>.c`` beside this module (built first if needed)."""
    src = HERE / f"{name}.c"
    found = _existing(src)
    if found is not None:
        return ctypes.CDLL(str(found))
    cc = compiler()
    tag = _tag(src)
    errors = []
    for d in _build_dirs():
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=d)
            os.close(fd)
        except OSError as e:
            errors.append(f"{d}: {e.strerror}")
            continue
        try:
            proc = subprocess.run([*cc, *CFLAGS, "-o", tmp, str(src)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise NativeBuildError(f"compiling {src} with {' '.join(cc)} failed:\n{proc.stderr.strip()}")
            final = d / f"{name}-{tag}.so"
            os.replace(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return ctypes.CDLL(str(final))
    raise NativeBuildError(f"no writable folder to build {name}: " + "; ".join(errors))


def _existing(src: Path) -> Path | None:
    tag = _tag(src)
    for d in _build_dirs():
        p = d / f"{src.stem}-{tag}.so"
        if p.is_file():
            return p
    return None

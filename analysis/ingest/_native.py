"""Build-once, load-fast native helpers: a C source beside this file → a cached shared library (ctypes).

Why not numba: its import and the first dispatch of even a cached function cost ~0.8 s per process
here (2-core VM), more than pandas needs to parse a 5M-line log; a ctypes library loads in ~1 ms.

The library is compiled with the system C compiler (``$CC``, else ``cc``/``gcc``/``clang``) by ``make
venv`` (``python -m analysis.ingest._native``), into ``analysis/ingest/_build/`` (or, if that is not
writable, ``$XDG_CACHE_HOME/cephqos-lab``; ``$CEPHQOS_NATIVE_DIR`` names the one folder to use), named
by a hash of the source, flags and platform, so an edited source is rebuilt and a stale build is never
loaded.  A library missing at first use (a source edited since ``make venv``) is built then.  The build
writes a temporary file and renames it into place, so concurrent first uses cannot load a half-written
library.

Every reader that uses C has a plain path (numpy, pyarrow, the standard library) that gives the same
tables: ``CEPHQOS_NATIVE=0`` selects it for every reader (tests run twice, once so), and it is used
automatically, after one :class:`NativeFallbackWarning` naming the cause, when no library can be built
or loaded.  Readers ask :func:`library`, never :func:`load`, so a build error is never a reader's error.
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
import warnings
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
CFLAGS = ["-O3", "-shared", "-fPIC", "-std=c99"]


#: the switch: ``CEPHQOS_NATIVE=0`` (or off/no/false/plain) reads every format by the plain path
ENV = "CEPHQOS_NATIVE"
#: the one folder to build into and load from (else ``analysis/ingest/_build``, then the user cache)
ENV_DIR = "CEPHQOS_NATIVE_DIR"
#: the C sources beside this module, each a shared library of its own
SOURCES = ("_cscan", "_blkscan")


class NativeBuildError(RuntimeError):
    """No C compiler, or the compile failed: says what to install or what the compiler printed."""


class NativeFallbackWarning(RuntimeWarning):
    """The C part could not be built or loaded: the plain path reads the files (same tables, slower)."""


def enabled() -> bool:
    """False when ``$CEPHQOS_NATIVE`` switches the C part off (read at every call: tests flip it)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false", "plain")


def library(name: str) -> ctypes.CDLL | None:
    """The library built from ``<name>.c``, or None: switched off by ``$CEPHQOS_NATIVE``, or it cannot be
    built or loaded (then one :class:`NativeFallbackWarning` per process names the cause)."""
    return _library(name) if enabled() else None


@cache
def _library(name: str) -> ctypes.CDLL | None:
    global _WARNED
    try:
        return load(name)
    except (NativeBuildError, OSError) as e:
        if not _WARNED:
            _WARNED = True
            warnings.warn(NativeFallbackWarning(
                f"the C part of analysis.ingest is not used ({e}); every reader takes its plain path (same "
                f"tables, slower; see docs/performance.md). Set {ENV}=0 to choose that and silence this."),
                stacklevel=3)
        return None


_WARNED = False


def prepare() -> None:
    """Load (or build) every library in this process before it forks readers: they inherit the result,
    so a machine without a compiler tries once and warns once."""
    for name in SOURCES:
        library(name)


def compiler() -> list[str]:
    """The C compiler command: ``$CC``, Python's configured CC if present, else cc/gcc/clang."""
    for cand in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if not cand:
            continue
        argv = shlex.split(cand)
        if argv and shutil.which(argv[0]):
            return argv
    raise NativeBuildError(
        "no C compiler to build the fast scanners (analysis/ingest/_cscan.c, _blkscan.c) with: "
        "on Debian `apt-get install gcc` (make venv does this when run as root), or set CC")


def _build_dirs() -> list[Path]:
    if os.environ.get(ENV_DIR):
        return [Path(os.environ[ENV_DIR])]
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


def main() -> int:
    """``python -m analysis.ingest._native``: build every library now (``make venv``); exit 0 either way,
    saying whether the readers will use C or their plain path."""
    try:
        built = [Path(load(n)._name).name for n in SOURCES]
    except (NativeBuildError, OSError) as e:
        print(f"C part not built ({e}): the readers will use their plain path (same tables, slower)")
        return 0
    print("C part built:", *built)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

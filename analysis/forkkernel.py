"""Notebook kernels forked from one warm process, for ``make report``'s parallel notebooks.

Every kernel that papermill starts is a new Python that imports ipykernel, then (first cell) pandas,
pyarrow, scipy, statsmodels and matplotlib: about 3.5 s of CPU each, 12 times per report on this 2-vCPU VM,
the same work every time.  ``serve`` imports them once (on a new venv, beside the ingest: that also writes
their bytecode), then listens on a UNIX socket; the kernel command of the ``python3`` kernelspec that
``make report`` puts first on ``JUPYTER_PATH`` (:func:`write_kernelspec`) is ``python -m
analysis.forkkernel -f CONNECTION_FILE``, which asks the server to fork a kernel with its working folder,
environment, argv and standard streams, and stays as the kernel's process for jupyter_client (signals are
passed on; it exits when the kernel does).  The forked kernel is ``ipykernel``'s own app, started as
``ipykernel_launcher`` starts it; only the modules imported before the fork differ, and those are imported
by the notebooks anyway (``matplotlib`` without ``pyplot``, the backend left to the kernel; numpy's
global random state is reseeded in each kernel).  Without the server (``CEPHQOS_FORK_SERVER`` unset or
not answering) the command runs ``ipykernel_launcher`` itself: a normal kernel.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

#: the environment variable naming the server's socket
SOCKET_ENV = "CEPHQOS_FORK_SERVER"
#: imported by the server before it forks kernels: what the notebooks' first cells import.  Never
#: ``matplotlib.pyplot`` nor ``matplotlib_inline.backend_inline``: the backend module hooks itself into the
#: IPython shell when it is first imported, which must happen in the kernel (figures left open at the end
#: of a cell are shown inline; tests/test_forkkernel.py)
WARM = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "pyarrow.compute", "scipy.stats", "scipy.special",
        "statsmodels.regression.linear_model", "statsmodels.stats.power", "statsmodels.stats.multitest",
        "statsmodels.stats.multicomp", "matplotlib", "matplotlib.figure", "matplotlib.font_manager",
        "matplotlib.backends.backend_agg", "PIL.Image", "IPython",
        "ipykernel.kernelapp", "ipykernel.ipkernel", "plotly.graph_objects", "yaml")
#: how long the kernel command waits for a server that is starting (its socket not there yet), s
WAIT_S = 30.0


def write_kernelspec(folder: str | Path, python: str) -> Path:
    """``<folder>/kernels/python3/kernel.json`` whose command is this module's (with ``python``), the
    display name and metadata of ipykernel's own spec: put ``folder`` first on ``JUPYTER_PATH`` and the
    notebooks' ``python3`` kernels come from the server; the executed notebooks record the same kernelspec."""
    d = Path(folder) / "kernels" / "python3"
    d.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [python, "-m", "analysis.forkkernel", "-f", "{connection_file}"],
            "display_name": "Python 3 (ipykernel)", "language": "python",
            "metadata": {"debugger": True, "supported_encryption": ["curve"]}, "kernel_protocol_version": "5.5"}
    path = d / "kernel.json"
    tmp = d / f".kernel.json.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _plain_kernel(argv: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def _connect(path: str) -> socket.socket | None:
    deadline = time.monotonic() + WAIT_S
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            # a server that is still importing has not bound its socket yet; one that is gone never will
            if time.monotonic() > deadline or not Path(path + ".starting").exists():
                return None
            time.sleep(0.05)


def kernel(argv: list[str]) -> int:
    """The kernel command: a kernel forked by the server at ``$CEPHQOS_FORK_SERVER``, else a normal one."""
    path = os.environ.get(SOCKET_ENV)
    s = _connect(path) if path else None
    if s is None:
        _plain_kernel(argv)
    msg = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    try:
        socket.send_fds(s, [len(msg).to_bytes(8, "big") + msg], [0, 1, 2])
        reply = s.recv(64)
        pid = int(reply.decode())
    except (OSError, ValueError):
        s.close()
        _plain_kernel(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda n, _f, pid=pid: _pass_on(pid, n))
    # the kernel's life is this process's: jupyter_client watches and signals it
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3: look every 0.2 s
        while _alive(pid):
            time.sleep(0.2)
        return 0
    import select
    while True:
        try:
            if select.select([fd], [], [], None)[0]:
                return 0
        except InterruptedError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _pass_on(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    if sig != signal.SIGINT:  # interrupt: the kernel goes on; anything else ends it and this process
        os._exit(0)


def _recv(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    n = int.from_bytes(data[:8], "big")
    body = data[8:]
    while len(body) < n:
        more = conn.recv(n - len(body))
        if not more:
            raise OSError("kernel command hung up")
        body += more
    return json.loads(body), fds


def _child(conn: socket.socket, listener: socket.socket, req: dict, fds: list[int]) -> None:
    """In the forked kernel: the command's streams, folder, environment and argv, then ipykernel's app."""
    listener.close()
    conn.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's SIG_IGN would break the kernel's subprocesses
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    os.environ.pop(SOCKET_ENV, None)  # a kernel's own subprocesses start their kernels the plain way
    # the kernel watches its parent (ipykernel's poller; JPY_PARENT_PID was read when the server imported
    # ipykernel): here the server, so that no kernel outlives it
    sys.argv = ["ipykernel_launcher", *req["argv"], f"--IPKernelApp.parent_handle={os.getppid()}"]
    if sys.path and sys.path[0] in ("", os.getcwd(), str(Path(__file__).resolve().parents[1])):
        del sys.path[0]  # as ipykernel_launcher does; IPython adds the kernel's folder back
    import numpy as np
    np.random.seed()  # from the OS, as a new process's numpy does: not the server's state
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()
    os._exit(0)


def serve(path: str) -> int:
    """Import :data:`WARM`, then fork a kernel for each connection at ``path`` until SIGTERM; the kernels
    still running then are ended with it."""
    starting = Path(path + ".starting")
    starting.write_text(str(os.getpid()))
    try:
        # what ipykernel sets before the notebook imports pyplot: the inline backend stays the default
        os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
        import importlib
        for m in WARM:
            try:
                importlib.import_module(m)
            except ImportError:
                pass
        Path(path).unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)  # OSError for a path longer than a UNIX socket's 107 bytes: kernels start plainly
        listener.listen(16)
    finally:
        starting.unlink(missing_ok=True)  # bound or failed: no kernel command waits any longer
    children: set[int] = set()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels reaped by the system

    def stop(_n, _f):
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        Path(path).unlink(missing_ok=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        conn, _ = listener.accept()
        try:
            req, fds = _recv(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            _child(conn, listener, req, fds)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        try:
            conn.sendall(str(pid).encode())
        except OSError:
            pass
        conn.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        return serve(argv[1])
    if argv[:1] == ["kernelspec"]:
        print(write_kernelspec(argv[1], argv[2] if len(argv) > 2 else sys.executable))
        return 0
    return kernel(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

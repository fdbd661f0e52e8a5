"""Kernels forked from a warm process (``analysis.forkkernel``), as ``make report`` starts them: papermill
runs a notebook on one exactly as on a new kernel process (same outputs, inline figures, the run's folder
and environment), the kernel is the server's child and ends with the run, the server ends its kernels when
stopped, and without a server the same kernelspec starts a plain kernel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from analysis import forkkernel as fk
from conftest import ROOT

CELLS = ["import os, sys\nprint(os.getcwd())\nprint(os.environ.get('CEPHQOS_TEST_VAR'))",
         "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2], 'b': [0.5, 0.25]}).describe().to_string())",
         "import matplotlib\nimport matplotlib.pyplot as plt\nprint(matplotlib.get_backend())\n"
         "fig, ax = plt.subplots(figsize=(2, 1))\nax.plot([1, 3, 2]);",  # left open: the inline backend shows it
         "import numpy as np\nprint(np.random.random())",
         "print(os.getppid())"]


def _papermill(nb: Path, out: Path, cwd: Path, env: dict) -> None:
    r = subprocess.run([sys.executable, "-m", "papermill", str(nb), str(out), "--cwd", str(cwd), "-k", "python3",
                        "--log-level", "ERROR", "--no-progress-bar"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def _outputs(path: Path) -> list[list]:
    nb = nbformat.read(path, as_version=4)
    out = []
    for c in nb.cells:
        row = []
        for o in c.get("outputs", []):
            row.append(o.get("text") if o["output_type"] == "stream" else sorted(o.get("data", {})))
        out.append(row)
    return out


@pytest.fixture
def books(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path = tmp_path / "k.ipynb"
    nbformat.write(nb, path)
    (tmp_path / "run").mkdir()
    return path


def _env(spec_dir: Path, sock: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("JPY_PARENT_PID", fk.SOCKET_ENV)}
    env.update(JUPYTER_PATH=str(spec_dir), CEPHQOS_TEST_VAR="from-the-run", PYTHONPATH=str(ROOT))
    if sock:
        env[fk.SOCKET_ENV] = sock
    return env


def test_a_forked_kernel_runs_a_notebook_as_a_new_kernel_does_and_ends_with_it(tmp_path, books):
    spec = fk.write_kernelspec(tmp_path / "spec", sys.executable)
    assert json.loads(spec.read_text())["argv"][1:3] == ["-m", "analysis.forkkernel"]
    sockdir = tempfile.mkdtemp(prefix="fk-", dir="/tmp")  # a UNIX socket's path is at most 107 bytes
    sock = f"{sockdir}/s"
    server = subprocess.Popen([sys.executable, "-m", "analysis.forkkernel", "serve", sock], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        forked, plain = tmp_path / "forked.ipynb", tmp_path / "plain.ipynb"
        _papermill(books, forked, tmp_path / "run", _env(tmp_path / "spec", sock))   # waits for the server
        _papermill(books, plain, tmp_path / "run", _env(tmp_path / "nospec", None))  # ipykernel's own spec
        a, b = _outputs(forked), _outputs(plain)
        assert a[0] == b[0] == [f"{tmp_path / 'run'}\nfrom-the-run\n"]          # the run's folder and environment
        assert a[1] == b[1]
        assert a[2][0] == b[2][0] == "module://matplotlib_inline.backend_inline\n"  # the kernel's own backend
        assert a[2][1:] == b[2][1:] == [["image/png", "text/plain"]]             # the open figure shown inline
        assert int(a[4][0]) == server.pid                                        # forked by the server
        assert int(b[4][0]) != server.pid
        # numpy's random state is the kernel's own, not one shared by every kernel of the server
        again = tmp_path / "again.ipynb"
        _papermill(books, again, tmp_path / "run", _env(tmp_path / "spec", sock))
        assert _outputs(again)[3] != a[3]
        time.sleep(0.5)
        kids = subprocess.run(["ps", "--ppid", str(server.pid), "-o", "pid="], capture_output=True, text=True).stdout
        assert kids.strip() == ""  # each kernel ended with its run
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    assert not Path(sock).exists()


def test_without_a_server_the_kernelspec_starts_a_plain_kernel(tmp_path, books):
    fk.write_kernelspec(tmp_path / "spec", sys.executable)
    out = tmp_path / "o.ipynb"
    t0 = time.monotonic()
    _papermill(books, out, tmp_path / "run", _env(tmp_path / "spec", "/tmp/no-such-cephqos-server.sock"))
    assert time.monotonic() - t0 < fk.WAIT_S  # no server starting (no .starting marker): no wait
    assert _outputs(out)[0] == [f"{tmp_path / 'run'}\nfrom-the-run\n"]

#!/usr/bin/env python3
"""Speed benchmark of our readers (``analysis.ingest.read``) against reference tools — ``make bench``.

One run, on the SAME generated files, prints a table of wall time, peak memory and ratios:

1. a per-IO fio clat log of ``--lines`` lines (default 5,000,000), made by running the real fio
   (3 s randrw, psync, ``--write_lat_log`` without ``log_avg_msec``, so one line per IO) and
   replicating its ``b_clat.1.log`` with the time column shifted so it stays monotonic; parsed by
     a. ``analysis.ingest.read(path)``                          (ours)
     b. fio's own ``fio2gnuplot`` (/usr/bin/fio2gnuplot): only its parse + statistics step — see
        ``_worker_fio2gnuplot`` for exactly which of its functions are called
     c. ``pandas.read_csv(path, header=None)``                  (default options)
     d. ``wc -l path``
2. a rados bench stdout of ``--rados-lines`` lines (default 1,000,000), replicated from a real run
   (the longest real write run under tests/fixtures/rados_bench/ if one is long enough, else the
   1800 s run in ../shared/corpus, read in place); parsed by ours, ``wc -l`` and, as an extra
   reference, ``pandas.read_csv(sep=r"\\s+")`` on a file holding only the table lines.

Method
- Every measured step runs in a fresh subprocess (``python bench_ingest.py --worker ...`` or ``wc``).
- "call s": wall time of the parsing call alone, timed inside the child with ``time.perf_counter``
  after the interpreter has started and the top-level imports are done (``import pandas`` /
  ``from analysis.ingest import read`` / loading the fio2gnuplot script).  Imports that the call
  itself does lazily (our reader loads its C scanner library through ctypes on first use) are
  inside the timing.  ``wc`` has no such split: its call time is its whole process time.
- "process s": wall time of the whole child process (fork/exec, interpreter start, imports, call,
  exit), minus the time the child then spends on the bench's own correctness figures (timed there).
- "CPU s": user + system CPU of the child (our scanner runs one thread per core), minus the same.
- "peak RSS": the child's ``ru_maxrss`` (``getrusage(RUSAGE_SELF)``) read right after the call — the
  counter that ``os.wait4()`` / GNU ``/usr/bin/time -v`` ("Maximum resident set size") report at
  exit, read before the bench's own checks could raise it; for ``wc`` the rusage ``os.wait4()``
  returns for that child.  "RSS at start" is the child's ``ru_maxrss`` just before the timed call
  (interpreter + imports).  A memory-mapped input counts in RSS for the pages touched.  Linux
  carries a process's peak across fork/execve, so every figure is at least the launcher's own peak
  (printed; inputs are generated in child processes to keep it small).
- Each step is run 3 times, round-robin over the steps; the table gives the MEDIAN of the 3 wall
  times (with min–max) and the MAX of the 3 peak RSS.
- Before any timing every input file is read once (page cache warm for every tool alike), and our
  reader is run once untimed in a fresh process (on a fresh checkout it builds the C scanner once and caches
  the machine code in analysis/ingest/__pycache__; later processes only load it).
- Ratios use the median call times; each target is judged PASS/MISS on call time, and the same
  verdict on whole-process time is printed next to it.  Speed misses do not fail the run; a failed
  correctness check exits 1.

Correctness, checked in the same run: our row count == ``wc -l`` (for rados bench: == the number of
interval lines written, i.e. ``wc -l`` minus the header / ``min lat`` / preamble / summary lines),
and our clat mean (of the series, and the sample-weighted mean of the per-direction summary means)
equals pandas' mean of column 1 to 1e-9 relative.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIO2GNUPLOT = "/usr/bin/fio2gnuplot"
RADOS_FALLBACK = REPO.parent / "shared/corpus/rados_bench/no_license/fibird_2019-11_write_16k_t32_1800s.log"
RADOS_FIXTURES = REPO / "tests/fixtures/rados_bench"
#: a fixture is "long enough" to replicate when it has at least this many interval rows, i.e. the
#: header + ``min lat`` line repeated at least twice, and a write summary with ``Total writes made``
RADOS_MIN_ROWS = 60
REPS = 3
TARGET_F2G = 10.0   # ours at least 10x faster than fio2gnuplot's parse+stats
TARGET_WC = 3.0     # ours within 3x of wc -l
REL_TOL = 1e-9
FIO_CMD = ["fio", "--name=b", "--filename={tmp}/f", "--size=64M", "--rw=randrw", "--bs=4k",
           "--ioengine=psync", "--direct=1", "--time_based", "--runtime=3", "--write_lat_log=b",
           "--output-format=json+", "--output=b.json"]


# =============================================================================================
# workers: run in a fresh child process; stdlib-only imports at module level so that the
# fio2gnuplot and wc measurements are not charged for pandas
# =============================================================================================

def _rss_kb() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _call_end(res: dict) -> None:
    """Mark the end of the timed call: peak RSS so far, and where the bench's own checks start."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    res["rss_call_end_kb"] = ru.ru_maxrss
    res["_post_t0"] = time.perf_counter()
    res["_post_cpu0"] = ru.ru_utime + ru.ru_stime


def _worker_ours_fio(path: str, res: dict) -> None:
    import numpy as np  # noqa: F401  (top-level imports of our package, before the timer)
    import pandas as pd  # noqa: F401
    from analysis.ingest import read
    res["rss_start_kb"] = _rss_kb()
    t0 = time.perf_counter()
    p = read(path)
    res["call_s"] = time.perf_counter() - t0
    _call_end(res)
    # --- results for the correctness checks (not timed) ---
    s = p.summary
    res["kind"] = p.kind
    res["rows"] = int(len(p.series))
    res["series_mean"] = float(p.series["value"].mean())
    means = s[s["metric"].astype(str).str.endswith("_mean")]
    counts = s[s["metric"].astype(str).str.endswith("_samples")]
    per = {}
    for d in means["ddir"].astype(str).unique():
        m = float(means.loc[means["ddir"] == d, "value"].iloc[0])
        n = float(counts.loc[counts["ddir"] == d, "value"].iloc[0])
        per[d] = {"mean": m, "n": n}
    res["summary_per_ddir"] = per
    tot = sum(v["n"] for v in per.values())
    res["summary_mean"] = sum(v["mean"] * v["n"] for v in per.values()) / tot if tot else None
    res["metric"] = str(p.series["metric"].iloc[0]) if len(p.series) else None
    res["unit"] = str(p.series["unit"].iloc[0]) if len(p.series) else None
    res["latency_unit_source"] = p.meta.get("latency_unit_source")


def _worker_ours_breakdown(path: str, small: str, res: dict) -> None:
    """Where our reader's time goes: fixed first-call cost, file scan, and the rest.

    Instruments the module-level helpers that ``fio_log._parse_log`` calls (by wrapping them in
    this process only; no file is changed) and times each stage."""
    import numpy as np  # noqa: F401
    import pandas as pd  # noqa: F401
    from analysis.ingest import read
    st: dict[str, float] = {}
    rss: dict[str, float] = {}
    t0 = time.perf_counter()
    import analysis.ingest.fio_log as fl  # the reader and scanner modules (the C library loads lazily)
    st["import reader modules"] = time.perf_counter() - t0
    rss["import reader modules"] = _rss_kb()
    nsmall = sum(1 for _ in open(small, "rb"))
    k1 = f"first read() of fio's original {nsmall:,}-line log (loads the C scanner)"
    t0 = time.perf_counter()
    read(small)
    st[k1] = time.perf_counter() - t0
    rss[k1] = _rss_kb()
    k2 = f"second read() of the same {nsmall:,}-line log"
    t0 = time.perf_counter()
    read(small)
    st[k2] = time.perf_counter() - t0
    acc: dict[str, float] = {}

    def wrap(name):
        fn = getattr(fl, name, None)
        if fn is None:
            return

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
        setattr(fl, name, timed)

    for name in ("read_fio_log", "_companion", "_ddir_labels", "_time_base", "series_frame",
                 "summary_frame", "_crosscheck"):
        wrap(name)
    t0 = time.perf_counter()
    read(path)
    total = time.perf_counter() - t0
    st["read() of the big log, warm process: total"] = total
    rss["read() of the big log, warm process: total"] = _rss_kb()
    labels = {"read_fio_log": "  file scan: _scan.read_fio_log (mmap + C, one pass per thread)",
              "_companion": "  companion fio JSON lookup + parse: _companion",
              "_ddir_labels": "  ddir codes -> categorical from codes: _ddir_labels",
              "_time_base": "  time column -> seconds: _time_base",
              "series_frame": "  tidy series DataFrame: series_frame",
              "summary_frame": "  summary DataFrame: summary_frame",
              "_crosscheck": "  cross-check against the JSON: _crosscheck"}
    for k, v in acc.items():
        st[labels[k]] = v
    st["  rest of _parse_log (per-ddir masks, mean/min/max/std, exact percentiles)"] = \
        total - sum(acc.values())
    res["stages"] = st
    res["stage_rss_kb"] = rss
    res["call_s"] = total


def _worker_fio2gnuplot(path: str, outdir: str, res: dict) -> None:
    # fio2gnuplot is a Python 3 (and 2) script with no .py suffix.  It is loaded as a module from
    # the script file with importlib (SourceFileLoader, module name "fio2gnuplot", so its
    # `if __name__ == "__main__"` block does not run; bytecode writing off so nothing is written
    # to /usr/bin).  Its main() does, for a log selected by pattern:
    #   compute_temp_file()       read every line, keep the value, write the gnuplot data file
    #   compute_aggregated_file() concatenate the data files for gnuplot
    #   compute_math()            min / max / average / stddev, writes .min/.max/.average/.stddev/.global
    #   generate_gnuplot_script() gnuplot script;  render_gnuplot() only with -g
    # We time exactly compute_temp_file(...) + compute_math(...), called with main()'s defaults
    # (min_time=0, max_time=-1, gpm_dir=/usr/share/fio/) and globals verbose=False,
    # temporary_files=[] — its parsing and statistics step.  compute_temp_file's writing of the
    # per-line data file is inside its read loop and cannot be separated without editing it.
    import importlib.machinery
    import importlib.util
    sys.dont_write_bytecode = True
    loader = importlib.machinery.SourceFileLoader("fio2gnuplot", FIO2GNUPLOT)
    spec = importlib.util.spec_from_loader("fio2gnuplot", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    mod.verbose = False
    mod.temporary_files = []
    gpm_dir = "/usr/share/fio/" if os.path.isfile("/usr/share/fio/math.gpm") else "/usr/local/share/fio/"
    outdir = outdir.rstrip("/") + "/"
    os.makedirs(outdir, exist_ok=True)
    disk_perf: list = []
    res["rss_start_kb"] = _rss_kb()
    t0 = time.perf_counter()
    blk = mod.compute_temp_file([path], disk_perf, outdir, 0, -1)
    mod.compute_math([path], "bench", "result", outdir, "unknown", disk_perf, gpm_dir)
    res["call_s"] = time.perf_counter() - t0
    _call_end(res)
    res["blk_size"] = blk
    glob = {}
    with open(outdir + "result.global") as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            glob[k] = float(v)
    res["global"] = glob
    res["rows"] = int(glob.get("values_count", -1))


def _worker_pandas(path: str, res: dict) -> None:
    import pandas as pd
    res["rss_start_kb"] = _rss_kb()
    t0 = time.perf_counter()
    df = pd.read_csv(path, header=None)
    res["call_s"] = time.perf_counter() - t0
    _call_end(res)
    res["rows"] = int(len(df))
    res["ncols"] = int(df.shape[1])
    res["mean_col1"] = float(df[1].mean())
    res["per_ddir"] = {str(k): float(v) for k, v in df.groupby(2)[1].mean().items()}


def _worker_pandas_ws(path: str, res: dict) -> None:
    import pandas as pd
    res["rss_start_kb"] = _rss_kb()
    t0 = time.perf_counter()
    df = pd.read_csv(path, sep=r"\s+", header=None, na_values=["-"])
    res["call_s"] = time.perf_counter() - t0
    _call_end(res)
    res["rows"] = int(len(df))
    res["ncols"] = int(df.shape[1])


def _worker_ours_rados(path: str, mode: str, res: dict) -> None:
    """mode: 'auto' (decide and report), 'read' (analysis.ingest.read) or 'direct'
    (analysis.ingest.radosbench.parse, when read() does not recognise the file yet)."""
    import importlib.util
    import numpy as np  # noqa: F401
    import pandas as pd  # noqa: F401
    from analysis.ingest import read
    if mode == "auto":
        from analysis.ingest import detect
        try:
            kind = detect(path)
        except Exception as e:  # noqa: BLE001
            kind = f"error: {e}"
        res["detected"] = kind
        if kind == "rados-bench":
            mode = "read"
        elif importlib.util.find_spec("analysis.ingest.radosbench") is not None:
            mode = "direct"
        else:
            res["mode"] = "unavailable"
            return
    res["mode"] = mode
    res["rss_start_kb"] = _rss_kb()
    t0 = time.perf_counter()
    if mode == "read":
        p = read(path)
    else:
        # imported inside the timing, as read() imports its reader modules lazily on first use
        from analysis.ingest import radosbench
        p = radosbench.parse(Path(path), Path(path).read_bytes())
    res["call_s"] = time.perf_counter() - t0
    _call_end(res)
    spec = importlib.util.find_spec("analysis.ingest.radosbench")
    if spec is not None and spec.origin:
        import hashlib
        res["reader_file"] = {"sha256": hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()[:12],
                              "mtime": _dt.datetime.fromtimestamp(os.path.getmtime(spec.origin))
                              .astimezone().strftime("%H:%M:%S %Z")}
    ser, summ = p.series, p.summary
    res["kind"] = p.kind
    res["series_rows"] = int(len(ser))
    if len(ser) and "metric" in ser.columns:
        per = ser.groupby("metric", observed=True).size()
        res["per_metric_rows"] = {str(k): int(v) for k, v in per.items()}
        res["rows"] = int(per.max())
    else:
        res["rows"] = int(len(ser))
    if len(ser) and "t_s" in ser.columns:
        res["distinct_t_s"] = int(ser["t_s"].nunique())
        res["min_t_s"] = float(ser["t_s"].min())
    res["summary"] = {f"{r.metric}|{r.ddir}": float(r.value) for r in summ.itertuples()} if len(summ) else {}
    res["partial"] = bool(p.partial)


def worker_main(argv: list[str]) -> int:
    step, out = argv[0], argv[1]
    args = argv[2:]
    sys.path.insert(0, str(REPO))
    res: dict = {"step": step}
    try:
        if step == "ours-fio":
            _worker_ours_fio(args[0], res)
        elif step == "ours-breakdown":
            _worker_ours_breakdown(args[0], args[1], res)
        elif step == "fio2gnuplot":
            _worker_fio2gnuplot(args[0], args[1], res)
        elif step == "pandas":
            _worker_pandas(args[0], res)
        elif step == "pandas-ws":
            _worker_pandas_ws(args[0], res)
        elif step == "ours-rados":
            _worker_ours_rados(args[0], args[1], res)
        elif step == "gen-fio":
            res.update({k: (str(v) if isinstance(v, Path) else v)
                        for k, v in make_fio_log(Path(args[0]), int(args[1])).items()})
        elif step == "gen-rados":
            res.update({k: (str(v) if isinstance(v, Path) else v)
                        for k, v in make_rados(Path(args[0]), int(args[1])).items()})
        else:
            raise SystemExit(f"unknown worker step {step}")
    except Exception as e:  # noqa: BLE001  (reported in the table, not hidden)
        import traceback
        res["error"] = f"{type(e).__name__}: {e}"
        res["traceback"] = traceback.format_exc()
    if "_post_t0" in res:  # the checks after the call are the bench's work, not the tool's
        import resource
        ru = resource.getrusage(resource.RUSAGE_SELF)
        res["post_s"] = time.perf_counter() - res.pop("_post_t0")
        res["post_cpu_s"] = ru.ru_utime + ru.ru_stime - res.pop("_post_cpu0")
        res["rss_exit_kb"] = ru.ru_maxrss
    Path(out).write_text(json.dumps(res))
    return 0


# =============================================================================================
# parent: machine info, input generation, running the steps
# =============================================================================================

def machine_info() -> dict[str, str]:
    info = {}
    try:
        aff = len(os.sched_getaffinity(0))
    except AttributeError:
        aff = os.cpu_count()
    info["nproc"] = str(aff)
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["cpu"] = model
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                kb = int(line.split()[1])
                info["memory"] = f"{kb / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        info["memory"] = "?"
    info["kernel"] = f"{platform.system()} {platform.release()}"
    try:
        info["fio"] = subprocess.run(["fio", "--version"], capture_output=True, text=True,
                                     check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["fio"] = "not found"
    info["python"] = platform.python_version()
    from importlib import metadata
    vers = []
    for pkg in ("pandas", "numpy", "pyarrow"):
        try:
            vers.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            vers.append(f"{pkg} -")
    info["packages"] = ", ".join(vers)
    try:  # _native.py alone (stdlib only): importing the package would load pandas into the launcher
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "_native_probe", Path(__file__).resolve().parents[1] / "analysis" / "ingest" / "_native.py")
        _native = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_native)
        cc = _native.compiler()
        first = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout.splitlines()
        info["packages"] += f"; C scanner built with {first[0] if first else cc[0]} {' '.join(_native.CFLAGS)}"
    except Exception as e:  # noqa: BLE001 - information only
        info["packages"] += f"; C compiler: {e}"
    # a fresh interpreter compiles every module that has no current .pyc (PYTHONDONTWRITEBYTECODE set, or
    # the code just changed): ~50 ms per process on this VM, paid once by a user, not by every ingest
    cc = subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "analysis")],
                        capture_output=True, text=True)
    info["packages"] += ("; analysis/ byte-compiled before timing (compileall)" if cc.returncode == 0
                         else f"; compileall failed: {cc.stderr.strip()[:80]}")
    try:
        info["load"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        info["load"] = "?"
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "no commit"
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "analysis"],
                               capture_output=True, text=True).stdout.strip()
        info["code"] = f"git {head}" + (" + uncommitted changes under analysis/" if dirty else "")
    except OSError:
        info["code"] = "?"
    info["date"] = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return info


def make_fio_log(workdir: Path, n_lines: int) -> dict:
    """Run the real fio once, then replicate its per-IO clat log to ``n_lines`` lines."""
    run = workdir / "fio_run"
    run.mkdir(parents=True, exist_ok=True)
    cmd = [a.format(tmp=str(run)) for a in FIO_CMD]
    proc = subprocess.run(cmd, cwd=run, capture_output=True, text=True)
    note = ""
    if proc.returncode != 0:  # O_DIRECT refused by the file system: run buffered, and say so
        cmd = [a if a != "--direct=1" else "--direct=0" for a in cmd]
        note = f" (direct=1 failed: {proc.stderr.strip()[:120]!r}; ran with --direct=0)"
        proc = subprocess.run(cmd, cwd=run, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"fio failed: {proc.stderr}")
    (run / "f").unlink(missing_ok=True)  # the 64 MiB data file is not needed any more
    src = run / "b_clat.1.log"
    lines = src.read_text().splitlines(keepends=True)
    if not lines:
        raise RuntimeError(f"fio wrote an empty {src}")
    ts = [int(line.split(",", 1)[0]) for line in lines]
    rest = [line[line.index(","):] for line in lines]  # ", value, ddir, bs, prio\n" verbatim
    period = ts[-1] + 1  # ms: each copy starts after the previous one ended
    big = workdir / "fio_big"
    big.mkdir(exist_ok=True)
    shutil.copy(run / "b.json", big / "b.json")  # fio's own JSON beside its log, as fio leaves it
    out = big / "b_clat.1.log"
    written, copy = 0, 0
    with open(out, "w") as f:
        while written < n_lines:
            k = min(len(lines), n_lines - written)
            off = copy * period
            f.write("".join([f"{t + off}{r}" for t, r in zip(ts[:k], rest[:k])]))
            written += k
            copy += 1
    return {"path": out, "small": src, "orig_lines": len(lines), "lines": written,
            "copies": copy, "cmd": " ".join(cmd).replace(str(run), "$TMP") + note,
            "bytes": out.stat().st_size}


_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
_HEADER = re.compile(r"^\s*sec\s+Cur ops")
#: the timestamp rados bench puts before ``min lat`` lines: "2019-11-05 15:54:07.011156" (older) or
#: "2026-11-21T13:29:31.886787+0000" (pacific); group 1 date, 2 separator, 3 time, 4 rest of line
_TS = re.compile(r"^(\d{4}-\d\d-\d\d)([ T])(\d\d:\d\d:\d\d\.\d{6})(.*)$")


def _rados_structure(text: str) -> dict | None:
    lines = text.splitlines()
    first_hdr = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    if first_hdr is None:
        return None
    rows, minlat = [], []
    summary_at = None
    for i in range(first_hdr, len(lines)):
        ln = lines[i]
        m = _ROW.match(ln)
        if m:
            rows.append(m.groups())
        elif "min lat:" in ln:
            minlat.append(ln)
        elif ln.startswith("Total time run"):
            summary_at = i
            break
    if summary_at is None or not rows:
        return None
    summary = lines[summary_at:]
    if not any(s.startswith("Total writes made") for s in summary):
        return None
    return {"preamble": lines[:first_hdr], "header": lines[first_hdr], "rows": rows,
            "minlat": minlat, "summary": summary}


def pick_rados_source() -> tuple[Path, dict, str]:
    best = None
    for p in sorted(RADOS_FIXTURES.glob("*.txt")):
        try:
            st = _rados_structure(p.read_text(errors="replace"))
        except OSError:
            continue
        if st and len(st["rows"]) >= RADOS_MIN_ROWS and st["minlat"]:
            if best is None or len(st["rows"]) > len(best[1]["rows"]):
                best = (p, st)
    if best:
        return best[0], best[1], f"fixture (≥ {RADOS_MIN_ROWS} interval rows, real write run)"
    st = _rados_structure(RADOS_FALLBACK.read_text())
    if st is None:
        raise RuntimeError(f"cannot read the rados bench structure of {RADOS_FALLBACK}")
    return RADOS_FALLBACK, st, (f"shared corpus, read in place (no fixture under "
                                f"tests/fixtures/rados_bench has ≥ {RADOS_MIN_ROWS} interval rows "
                                f"and a write summary)")


def _min_lat_ts0(minlats: list[str]) -> _dt.datetime | None:
    """The time the first ``min lat`` line (printed at sec 20) would have had at sec 0; None when it has
    no timestamp."""
    m = _TS.match(minlats[0])
    if not m:
        return None
    try:
        return (_dt.datetime.strptime(f"{m.group(1)} {m.group(3)}", "%Y-%m-%d %H:%M:%S.%f")
                - _dt.timedelta(seconds=20))
    except ValueError:
        return None


def _min_lat_line(minlats: list[str], sec: int, ts0: _dt.datetime | None) -> str:
    """The ``min lat`` line rados bench prints at ``sec`` (a multiple of 20): the originals cycled, their
    timestamp (when they have one) moved to ts0 + sec."""
    ml = minlats[(sec // 20 - 1) % len(minlats)]
    mm = _TS.match(ml)
    if ts0 is not None and mm:
        ml = (ts0 + _dt.timedelta(seconds=sec)).strftime(f"%Y-%m-%d{mm.group(2)}%H:%M:%S.%f") \
            + mm.group(4)
    return ml


def _rados_row_line(sec: int, r: tuple, started: int, finished: int) -> str:
    """One interval row: ``sec``, started and finished new, the other columns of row ``r`` as they were."""
    return (f"{sec:5d} {r[1]:>7} {started:9d} {finished:9d} {r[4]:>9} {r[5]:>9} "
            f"{r[6]:>11} {r[7]:>11}\n")


def _rados_summary(summary: list[str], total_writes: int, last_sec: int, src_last_sec: int) -> list[str]:
    """The original summary lines with ``Total writes made`` / ``Removed N objects`` set to
    ``total_writes`` and ``Total time run`` moved to the new length (s, its fraction past the source's
    last row kept)."""
    new_summary = []
    for ln in summary:
        if ln.startswith("Total writes made"):
            ln = re.sub(r"\d+\s*$", str(total_writes), ln)
        elif ln.startswith("Removed ") and ln.endswith(" objects"):
            ln = f"Removed {total_writes} objects"
        elif ln.startswith("Total time run"):
            mt = re.search(r"([\d.]+)\s*$", ln)
            if mt:
                frac = float(mt.group(1)) - (src_last_sec + 1)
                ln = ln[:mt.start(1)] + f"{last_sec + 1 + max(frac, 0):g}"
        new_summary.append(ln + "\n")
    return new_summary


def make_rados(workdir: Path, n_lines: int) -> dict:
    """Replicate a real rados bench write run to at least ``n_lines`` lines.

    Interval rows are cycled (the sec-0 row once, at the top); ``sec`` is renumbered; started and
    finished get an offset of (copy × last row's finished), which keeps both monotonic and the
    in-flight count (started − finished) as in the original.  Every 20 rows the ``min lat`` line
    (timestamp advanced with ``sec`` when it has one) and the column header are repeated, as rados
    bench prints them; the original summary follows with ``Total writes made`` (and ``Removed N
    objects``) set to the last row's finished, ``Total time run`` moved to the new length."""
    src, st, why = pick_rados_source()
    rows = st["rows"]
    zero = rows[0] if int(rows[0][0]) == 0 else None
    body = rows[1:] if zero else rows
    last_fin = int(body[-1][3])
    minlats = st["minlat"]
    ts0 = _min_lat_ts0(minlats)
    summary = list(st["summary"])
    out = workdir / "rados_bench.txt"
    table = workdir / "rados_table.txt"

    buf, tbuf = [], []
    for ln in st["preamble"]:
        buf.append(ln + "\n")
    buf.append(st["header"] + "\n")
    nlines = len(buf) + len(summary)
    data_rows = 0
    if zero:
        s = _rados_row_line(0, zero, int(zero[2]), int(zero[3]))
        buf.append(s)
        tbuf.append(s)
        nlines += 1
        data_rows += 1
    sec, copy, j = 1, 0, 0
    prev_s = prev_f = -1
    while nlines < n_lines:
        if sec % 20 == 0:
            buf.append(_min_lat_line(minlats, sec, ts0) + "\n")
            buf.append(st["header"] + "\n")
            nlines += 2
        r = body[j]
        off = copy * last_fin
        started, finished = int(r[2]) + off, int(r[3]) + off
        started, finished = max(started, prev_s), max(finished, prev_f)  # never decrease
        prev_s, prev_f = started, finished
        s = _rados_row_line(sec, r, started, finished)
        buf.append(s)
        tbuf.append(s)
        nlines += 1
        data_rows += 1
        sec += 1
        j += 1
        if j == len(body):
            j, copy = 0, copy + 1
    buf.extend(_rados_summary(summary, prev_f, sec - 1, int(body[-1][0])))
    out.write_text("".join(buf))
    table.write_text("".join(tbuf))
    total = sum(1 for _ in buf)
    return {"path": out, "table": table, "source": src, "why": why, "lines": total,
            "data_rows": data_rows, "non_data": total - data_rows, "total_writes": prev_f,
            "src_rows": len(rows), "bytes": out.stat().st_size}


def warm(paths) -> None:
    buf = bytearray(1 << 20)  # small reusable buffer: this process's peak RSS must stay small
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


def run_child(argv: list[str], workdir: Path, tag: str) -> dict:
    """Run one step in a fresh process; wall time around fork..wait4, rusage of that child only."""
    outf = workdir / f".res-{tag}.json"
    outf.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    is_worker = argv[0] == "worker"
    if is_worker:
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", argv[1], str(outf)] + argv[2:]
    with open(workdir / f".out-{tag}", "w") as so, open(workdir / f".err-{tag}", "w") as se:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=so, stderr=se, cwd=REPO, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    res = {}
    if is_worker and outf.exists():
        res = json.loads(outf.read_text())
    elif not is_worker:
        res["stdout"] = (workdir / f".out-{tag}").read_text()
        res["call_s"] = wall
    if p.returncode != 0 and "error" not in res:
        res["error"] = f"exit {p.returncode}: {(workdir / f'.err-{tag}').read_text()[-500:]}"
    # the bench's own post-call checks (timed in the child) are taken out of process and CPU time;
    # peak RSS of a Python step is its ru_maxrss read at the end of the call (the same counter
    # os.wait4 reports at exit, before the checks could raise it); wc's comes from os.wait4
    res["process_s"] = wall - res.get("post_s", 0.0)
    res["cpu_s"] = ru.ru_utime + ru.ru_stime - res.get("post_cpu_s", 0.0)
    res["wait4_maxrss_kb"] = ru.ru_maxrss
    res["peak_rss_kb"] = res.get("rss_call_end_kb", ru.ru_maxrss)
    return res


class Step:
    def __init__(self, key: str, label: str, argv: list[str]):
        self.key, self.label, self.argv = key, label, argv
        self.runs: list[dict] = []

    def ok_runs(self):
        return [r for r in self.runs if "error" not in r and "call_s" in r]

    def med(self, field):
        v = [r[field] for r in self.ok_runs()]
        return statistics.median(v) if v else None

    def rng(self, field):
        v = [r[field] for r in self.ok_runs()]
        return (min(v), max(v)) if v else (None, None)

    def peak(self):
        v = [r["peak_rss_kb"] for r in self.ok_runs()]
        return max(v) if v else None

    def first(self) -> dict:
        ok = self.ok_runs()
        return ok[0] if ok else (self.runs[0] if self.runs else {})


def md_table(head: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(head) - 1)
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w[i]) if align[i] == "l" else str(c).rjust(w[i])
                                 for i, c in enumerate(cells)) + " |"
    sep = "|" + "|".join(("-" * (w[i] + 1) + ":") if align[i] == "r" else ("-" * (w[i] + 2))
                         for i in range(len(head))) + "|"
    return [line(head), sep] + [line(r) for r in rows]


def fmt_s(x):
    return "—" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.2f}")


def fmt_mib(kb):
    return "—" if kb is None else f"{kb / 1024:.0f}"


def exit_rss_note(steps: list[Step]) -> str | None:
    """Say where the bench's own post-call checks raised a child's ru_maxrss at exit."""
    notes = []
    for s in steps:
        ex = [r.get("wait4_maxrss_kb", 0) for r in s.ok_runs()]
        if ex and s.peak() and max(ex) > 1.05 * s.peak():
            notes.append(f"{s.label} {fmt_mib(max(ex))} MiB")
    if not notes:
        return None
    return ("(ru_maxrss at exit, raised by the bench's own post-call checks and not counted above: "
            + "; ".join(notes) + ")")


def step_rows(steps: list[Step]) -> list[list[str]]:
    rows = []
    for s in steps:
        if not s.ok_runs():
            err = s.runs[0].get("error", "no run") if s.runs else "not run"
            if s.runs and s.runs[0].get("mode") == "unavailable":
                err = "rados bench: reader not available"
            rows.append([s.label, err[:90], "", "", "", "", ""])
            continue
        lo, hi = s.rng("call_s")
        rss0 = [r.get("rss_start_kb") for r in s.ok_runs() if r.get("rss_start_kb")]
        rows.append([s.label, fmt_s(s.med("call_s")), f"{fmt_s(lo)}–{fmt_s(hi)}",
                     fmt_s(s.med("process_s")), fmt_s(s.med("cpu_s")), fmt_mib(s.peak()),
                     fmt_mib(max(rss0)) if rss0 else "—"])
    return rows


STEP_HEAD = ["step", "call s (median of 3)", "call min–max", "process s", "CPU s",
             "peak RSS MiB (max of 3)", "RSS at start MiB"]


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("PASS" if ok else "MISS")


def ratio_rows(ours: Step, others: list[tuple[Step, str, str]]) -> list[list[str]]:
    """others: (step, kind, target text); kind 'speedup>=X', 'faster', 'within X'."""
    rows = []
    for ref, kind, text in others:
        vals = {}
        for field in ("call_s", "process_s"):
            a, b = ours.med(field), ref.med(field)
            if a is None or b is None:
                vals[field] = (None, None)
                continue
            if kind.startswith("speedup"):
                r = b / a
                vals[field] = (f"{r:.1f}× faster" if r >= 1 else f"{1 / r:.1f}× slower",
                               r >= float(kind.split(">=")[1]))
            elif kind == "faster":
                r = b / a
                vals[field] = (f"{r:.2f}× faster" if r >= 1 else f"{1 / r:.2f}× slower", r > 1)
            else:  # within X
                r = a / b
                vals[field] = (f"{r:.1f}× the time of wc", r <= float(kind.split()[1]))
        rows.append([f"ours vs {ref.label}", text,
                     vals["call_s"][0] or "—", verdict(vals["call_s"][1]),
                     vals["process_s"][0] or "—", verdict(vals["process_s"][1])])
    return rows


RATIO_HEAD = ["comparison", "target", "on call time", "verdict", "on process time", "(verdict)"]


def rel(a, b):
    if a is None or b is None:
        return None
    return abs(a - b) / abs(b) if b else abs(a - b)


class Report:
    """The report's lines: each printed as it comes and kept for ``--out``'s Markdown file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def table(self, head: list[str], rows: list[list[str]], align: str | None = None) -> None:
        for ln in md_table(head, rows, align):
            self(ln)


class Steps:
    """The measured steps: on the fio log, on the rados bench output, and our reader's stage breakdown."""

    def __init__(self, fpath: str, fio: dict, rados: dict, rmode: str, probe: dict) -> None:
        self.f_ours = Step("ours", "ours: analysis.ingest.read", ["worker", "ours-fio", fpath])
        self.f_f2g = Step("f2g", "fio2gnuplot parse+stats", ["worker", "fio2gnuplot", fpath, ""])
        self.f_pd = Step("pd", "pandas.read_csv(header=None)", ["worker", "pandas", fpath])
        self.f_wc = Step("wc", "wc -l", ["wc", "-l", fpath])
        rpath = str(rados["path"])
        r_label = {"read": "ours: analysis.ingest.read",
                   "direct": "ours: radosbench.parse (direct; read() does not route it yet)",
                   "unavailable": "ours (rados bench reader)"}[rmode]
        if rmode == "direct" and probe.get("reader_file"):
            rf = probe["reader_file"]
            r_label += f" [radosbench.py sha256 {rf['sha256']}…, mtime {rf['mtime']}]"
        self.r_ours = Step("ours", r_label, ["worker", "ours-rados", rpath, rmode])
        self.r_pd = Step("pd", "pandas.read_csv(sep=r'\\s+') on table lines only",
                         ["worker", "pandas-ws", str(rados["table"])])
        self.r_wc = Step("wc", "wc -l", ["wc", "-l", rpath])
        self.bd = Step("bd", "breakdown", ["worker", "ours-breakdown", fpath, str(fio["small"])])

    @property
    def fio(self) -> list[Step]:
        return [self.f_ours, self.f_f2g, self.f_pd, self.f_wc]

    @property
    def rados(self) -> list[Step]:
        return [self.r_ours, self.r_pd, self.r_wc]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=None, help="fio log lines (default 5,000,000)")
    ap.add_argument("--rados-lines", type=int, default=None, help="rados bench lines (default 1,000,000)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where to generate the inputs (default: a temp dir, removed at the end)")
    ap.add_argument("--quick", action="store_true", help="100k lines each: a smoke test")
    ap.add_argument("--out", type=Path, default=None, help="also write the tables as Markdown here")
    return ap.parse_args(argv)


def say_machine(say: Report, info: dict[str, str]) -> None:
    """The title and the date, machine and tools lines (:func:`machine_info`)."""
    say("# bench_ingest — analysis.ingest.read vs reference tools")
    say()
    say(f"- date: {info['date']}")
    say(f"- machine: nproc {info['nproc']}, CPU {info['cpu']}, memory {info['memory']}, "
        f"kernel {info['kernel']}, load average at start {info['load']}")
    say(f"- tools: {info['fio']}, Python {info['python']}, {info['packages']}; code: {info['code']}")


def generate_inputs(workdir: Path, n_fio: int, n_rados: int) -> tuple[dict, dict]:
    """The fio log and the rados bench output (:func:`make_fio_log`, :func:`make_rados`), made in child
    processes; their paths as Path.  Exits when one fails."""
    # generated in child processes: Linux carries a process's peak RSS across execve into
    # ru_maxrss, so every measured child starts from THIS process's peak; keep it small
    fio = run_child(["worker", "gen-fio", str(workdir), str(n_fio)], workdir, "gen-fio")
    rados = run_child(["worker", "gen-rados", str(workdir), str(n_rados)], workdir, "gen-rados")
    for g in (fio, rados):
        if "error" in g:
            raise SystemExit(f"input generation failed: {g['error']}\n{g.get('traceback', '')}")
        for k in ("path", "small", "table", "source"):
            if k in g:
                g[k] = Path(g[k])
    return fio, rados


def say_inputs(say: Report, fio: dict, rados: dict) -> None:
    """The inputs and the method."""
    say(f"- fio input: `{fio['cmd']}` wrote {fio['orig_lines']:,} per-IO clat lines; replicated "
        f"×{fio['copies']} (time shifted, fio's line format kept) to {fio['lines']:,} lines, "
        f"{fio['bytes'] / 2**20:.1f} MiB, beside fio's b.json")
    src = rados["source"]
    src_txt = src.relative_to(REPO) if src.is_relative_to(REPO) else Path("../") / src.relative_to(REPO.parent)
    say(f"- rados bench input: `{src_txt}` ({rados['why']}; {rados['src_rows']:,} interval rows) "
        f"replicated to {rados['lines']:,} lines ({rados['data_rows']:,} interval rows + "
        f"{rados['non_data']:,} preamble/header/min-lat/summary lines), "
        f"{rados['bytes'] / 2**20:.1f} MiB; Total writes made = {rados['total_writes']:,}")
    say(f"- method: each step in a fresh process, {REPS} runs round-robin; call s = median wall "
        f"time of the parsing call inside the child (after interpreter start and top-level "
        f"imports; lazy imports inside the call are included; for wc = whole process); "
        f"process s = median whole-process wall time and CPU s = median user+sys of the child, "
        f"both without the bench's own post-call checks (timed in the child, subtracted); "
        f"peak RSS = max over the runs of the child's ru_maxrss (getrusage RUSAGE_SELF) read "
        f"right after the call — the counter os.wait4()/GNU time -v report at exit, read before "
        f"the bench's checks; for wc from os.wait4(); every input read once beforehand (warm "
        f"page cache); our reader run once untimed first (C scanner built once → on-disk cache)")
    say("- fio2gnuplot: /usr/bin/fio2gnuplot (Python 3 script) loaded as a module with "
        "importlib SourceFileLoader (its __main__ block not run); timed = its "
        "compute_temp_file() (reads every line, writes its gnuplot data file) + compute_math() "
        "(min/max/avg/stddev, writes .global etc.), with main()'s defaults (min_time 0, "
        "max_time -1); no compute_aggregated_file / gnuplot script / rendering")


def warm_up_readers(workdir: Path, fpath: str, rpath: str) -> tuple[dict, str]:
    """Our reader once, untimed (builds the C scanner on a cold cache), and a probe of the rados reader:
    (the probe's result, the rados mode: read, direct or unavailable)."""
    print("(warm-up: our reader once, untimed)", flush=True)
    w = run_child(["worker", "ours-fio", fpath], workdir, "warmup-fio")
    if "error" in w:
        print(f"  warm-up error: {w['error']}", flush=True)
    probe = run_child(["worker", "ours-rados", rpath, "auto"], workdir, "warmup-rados")
    rmode = probe.get("mode", "unavailable")
    if "error" in probe and rmode != "unavailable":
        print(f"  rados warm-up error: {probe['error']}; warming up once more", flush=True)
        again = run_child(["worker", "ours-rados", rpath, rmode], workdir, "warmup-rados2")
        if "error" in again:
            print(f"  rados warm-up error again: {again['error']}", flush=True)
        else:
            probe["reader_file"] = again.get("reader_file")
    return probe, rmode


def run_steps(steps: Steps, workdir: Path, rmode: str) -> None:
    """Every step :data:`REPS` times round-robin, each run in a fresh child, into its ``runs``."""
    for rep in range(REPS):
        for grp, group in (("fio", steps.fio), ("rados", steps.rados)):
            for s in group:
                if s is steps.r_ours and rmode == "unavailable":
                    s.runs.append({"mode": "unavailable", "error": "rados bench: reader not available"})
                    continue
                argv = list(s.argv)
                if s is steps.f_f2g:
                    argv[-1] = str(workdir / f"f2g_out_{rep}")
                print(f"  run {rep + 1}/{REPS} {grp}: {s.label} …", end="", flush=True)
                r = run_child(argv, workdir, f"{grp}-{s.key}-{rep}")
                s.runs.append(r)
                if s is steps.f_f2g:
                    shutil.rmtree(workdir / f"f2g_out_{rep}", ignore_errors=True)
                print(f" {r.get('call_s', float('nan')):.3f} s" if "error" not in r
                      else f" ERROR {r['error'][:200]}", flush=True)
        steps.bd.runs.append(run_child(steps.bd.argv, workdir, f"bd-{rep}"))
    print(flush=True)


def say_step_table(say: Report, steps: list[Step]) -> None:
    """The steps' timing table, and where the bench's own checks raised a child's peak RSS."""
    say.table(STEP_HEAD, step_rows(steps))
    if exit_rss_note(steps):
        say()
        say(exit_rss_note(steps))
    say()


def say_timings(say: Report, steps: Steps, fio: dict, rados: dict, rmode: str, launcher_kb: int) -> None:
    """The peak-RSS floor (KiB of this launcher), then per input its steps and the ratios to targets."""
    say(f"- peak RSS floor: Linux carries a process's peak RSS across fork/execve into "
        f"ru_maxrss, so each child's figure is at least the launching process's own peak, "
        f"{launcher_kb / 1024:.0f} MiB here (inputs are generated in child processes to keep it "
        f"small); wc's own footprint is below that")
    say()
    say(f"## 1. fio per-IO clat log: {fio['lines']:,} lines, {fio['bytes'] / 2**20:.1f} MiB")
    say()
    say_step_table(say, steps.fio)
    say.table(RATIO_HEAD, ratio_rows(steps.f_ours, [
        (steps.f_f2g, f"speedup>={TARGET_F2G}", f"≥ {TARGET_F2G:g}× faster"),
        (steps.f_pd, "faster", "faster"),
        (steps.f_wc, f"within {TARGET_WC}", f"within {TARGET_WC:g}× of wc")]), "llllll")
    say()
    say(f"## 2. rados bench stdout: {rados['lines']:,} lines, {rados['bytes'] / 2**20:.1f} MiB")
    say()
    if rmode == "unavailable":
        say("rados bench: reader not available (read() does not recognise the file and "
            "analysis/ingest/radosbench.py does not exist)")
        say()
    say_step_table(say, steps.rados)
    if rmode != "unavailable":
        say.table(RATIO_HEAD, ratio_rows(steps.r_ours, [
            (steps.r_pd, "faster", "faster (extra reference)"),
            (steps.r_wc, f"within {TARGET_WC}", f"within {TARGET_WC:g}× of wc")]), "llllll")
        say()


def fio_checks(steps: Steps) -> tuple[list[list[str]], bool]:
    """(check, values, result) rows on the fio log: our rows and means against wc and pandas; failed?"""
    failed = False
    checks: list[list[str]] = []
    wc_n = int(steps.f_wc.first().get("stdout", "-1 x").split()[0]) if steps.f_wc.ok_runs() else None
    o = steps.f_ours.first()
    pdres = steps.f_pd.first()
    ok = o.get("rows") is not None and o.get("rows") == wc_n
    checks.append(["fio: our series rows == wc -l", f"{o.get('rows')} vs {wc_n}", verdict(ok)])
    failed |= not ok
    for key, label in (("series_mean", "mean of our series `value`"),
                       ("summary_mean", "sample-weighted mean of our per-ddir clat_mean")):
        e = rel(o.get(key), pdres.get("mean_col1"))
        ok = e is not None and e <= REL_TOL
        checks.append([f"fio: {label} == pandas df[1].mean() (rel ≤ 1e-9)",
                       f"{o.get(key)!r} vs {pdres.get('mean_col1')!r} (rel {e:.1e})"
                       if e is not None else "missing", verdict(ok)])
        failed |= not ok
    names = {"0": "read", "1": "write", "2": "trim"}
    for code, pm in (pdres.get("per_ddir") or {}).items():
        ours_d = (o.get("summary_per_ddir") or {}).get(names.get(code, code), {})
        e = rel(ours_d.get("mean"), pm)
        ok = e is not None and e <= REL_TOL
        checks.append([f"fio: clat_mean {names.get(code, code)} == pandas groupby(2)[1].mean()",
                       f"rel {e:.1e}" if e is not None else "missing", verdict(ok)])
        failed |= not ok
    checks.append(["fio: our unit / metric", f"{o.get('unit')} {o.get('metric')}; "
                   f"{o.get('latency_unit_source')}", "info"])
    g = steps.f_f2g.first().get("global") or {}
    if g:
        e = rel(g.get("avg"), pdres.get("mean_col1"))
        checks.append(["fio2gnuplot: values_count, avg (info, not a target)",
                       f"{int(g.get('values_count', -1)):,} values (wc -l {wc_n:,}); avg "
                       f"{g.get('avg')} (rel {e:.1e} to pandas). It keeps only lines with "
                       f"time > 0 ms: its `min_time==0.5` is a comparison, not an assignment",
                       "info"])
    return checks, failed


def rados_checks(steps: Steps, rados: dict, rmode: str) -> tuple[list[list[str]], bool]:
    """(check, values, result) rows on the rados bench output: line and interval-row counts against wc
    and the lines written, pandas on the table lines; failed?"""
    failed = False
    checks: list[list[str]] = []
    pr = steps.r_pd.first()
    if rmode != "unavailable":
        ro = steps.r_ours.first()
        exp = rados["data_rows"]
        wc_r = int(steps.r_wc.first().get("stdout", "-1 x").split()[0]) if steps.r_wc.ok_runs() else None
        ok = wc_r == rados["lines"]
        checks.append(["rados: wc -l == lines written", f"{wc_r} vs {rados['lines']}", verdict(ok)])
        failed |= not ok
        rr = ro.get("rows")
        ok = rr == exp
        detail = (f"{rr} vs {wc_r} − {rados['non_data']} = {exp}; per metric "
                  f"{ro.get('per_metric_rows')}; {ro.get('series_rows')} series rows, "
                  f"{ro.get('distinct_t_s')} distinct t_s")
        if "error" in ro:
            detail = ro["error"][:300]
        checks.append(["rados: our interval rows (largest per-metric count) == wc -l − non-data lines",
                       detail, verdict(ok)])
        failed |= not ok
        hit = [k for k, v in (ro.get("summary") or {}).items() if v == rados["total_writes"]]
        checks.append(["rados: a summary value equals Total writes made", f"{hit or 'none'}", "info"])
    else:
        checks.append(["rados: our reader", "rados bench: reader not available", "—"])
    checks.append(["rados: pandas rows on table lines == interval rows",
                   f"{pr.get('rows')} vs {rados['data_rows']}",
                   verdict(pr.get("rows") == rados["data_rows"])])
    return checks, failed


def say_breakdown(say: Report, bd: Step) -> None:
    """Where our reader's time goes: per stage the median s, its share of the warm read(), peak RSS."""
    say("## Where our reader's time goes (fio log; one fresh process per run, median of 3)")
    say()
    stages: dict[str, list[float]] = {}
    srss: dict[str, int] = {}
    for r in bd.ok_runs():
        for k, v in r["stages"].items():
            stages.setdefault(k, []).append(v)
        for k, v in r.get("stage_rss_kb", {}).items():
            srss[k] = max(srss.get(k, 0), v)
    if stages:
        tot = statistics.median(stages.get("read() of the big log, warm process: total", [float("nan")]))
        rows = [[k, fmt_s(statistics.median(v)),
                 f"{100 * statistics.median(v) / tot:.0f}%" if k.startswith("  ") else "",
                 fmt_mib(srss[k]) if k in srss else ""]
                for k, v in stages.items()]
        say.table(["stage", "s", "of warm read()", "peak RSS MiB so far"], rows, "lrrr")
    else:
        say(f"breakdown failed: {bd.runs[0].get('error') if bd.runs else 'not run'}")
    say()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    n_fio = args.lines or (100_000 if args.quick else 5_000_000)
    n_rados = args.rados_lines or (100_000 if args.quick else 1_000_000)
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench_ingest.")) if own_tmp else args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    say = Report()
    try:
        say_machine(say, machine_info())
        print(f"(generating inputs in {workdir} …)", flush=True)
        t0 = time.perf_counter()
        fio, rados = generate_inputs(workdir, n_fio, n_rados)
        gen_s = time.perf_counter() - t0
        say_inputs(say, fio, rados)
        warm([fio["path"], fio["small"], rados["path"], rados["table"], workdir / "fio_big/b.json"])
        fpath, rpath = str(fio["path"]), str(rados["path"])
        probe, rmode = warm_up_readers(workdir, fpath, rpath)
        steps = Steps(fpath, fio, rados, rmode, probe)
        run_steps(steps, workdir, rmode)
        say_timings(say, steps, fio, rados, rmode, _rss_kb())
        say("## Correctness (same run)")
        say()
        fio_rows, fio_failed = fio_checks(steps)
        rados_rows, rados_failed = rados_checks(steps, rados, rmode)
        say.table(["check", "values", "result"], fio_rows + rados_rows, "lll")
        say()
        say_breakdown(say, steps.bd)
        say(f"(inputs generated in {gen_s:.1f} s; exit status 1 only if a correctness check fails)")
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text("\n".join(say.lines) + "\n")
            print(f"Markdown written to {args.out}")
        return 1 if fio_failed or rados_failed else 0
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit(main())

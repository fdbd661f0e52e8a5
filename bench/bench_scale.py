#!/usr/bin/env python3
"""Scale benchmark of ``python -m analysis ingest`` on a multi-GB corpus of real captures — the scale
part of ``make bench``.

Corpus (built once into ``--workdir``, reused while its parameters and data/raw's MANIFEST are unchanged;
data/raw is only read):

* **scale corpus** ``WORKDIR/corpus``: copies k = 0..K-1 of the *large* real run directories of
  data/raw (every run directory whose files hold ≥ ``--min-run-kib`` KiB uncompressed, default 256:
  the traced block runs, the traced rados-block runs and every ceph-qos run — all file kinds of the
  captures), each copy under ``copy-KKK/<the run's path under data/raw>/`` with run.json's
  ``campaign`` rewritten to ``<campaign>-copyKKK`` and every ``.gz`` file stored decompressed (but
  ``osd_config.json.gz`` and ``cluster-log.txt.gz``, which ingest lists as context by that name).  Runs
  are taken round-robin over the campaigns, copy after copy, until the copies hold ≥ ``--gb`` GiB and
  ≥ ``--files`` files (the last copy may be partial).  Beside them ``big-NN/`` holds ``--big-logs``
  (default 2) single fio latency logs of ``--big-log-gb`` GiB each, each a real fio log replicated
  with its time column shifted by one period per copy so it stays monotonic (fio's line text is
  otherwise kept, as ``bench_ingest.py`` does), beside its run.json (campaign ``<campaign>-bigNN``)
  and fio's JSON.  ``--big-log-source mixed`` (default): ``big-00`` from block-2026's longest
  ``job_clat`` log — those captures used ``log_avg_msec=1000``, so its lines are 1 s windows (data/raw
  holds no per-IO log) — and ``big-01`` from the per-IO clat log of a real fio run made once at build
  time with bench_ingest.py's fio command (one line per IO: the reader's exact-percentile path);
  ``raw``: block-2026's ``job_clat`` and ``job_lat``; ``fio``: per-IO only; or a fio log file.
* **tiny corpus** ``WORKDIR/tiny``: ≥ ``--tiny-files`` small files: run.json + fio.json of real run
  directories (copied like above), for the per-file overhead.
* **one** ``WORKDIR/one``: a single run directory (run.json + fio.json): the fixed cost (interpreter
  start, imports, cluster start, writing the tables).

Method
- Every measured step is one fresh ``python -m analysis ingest DIR --out OUT --no-progress [--jobs N |
  --dask --workers N]`` process (``--jobs 1``: single process; ``--jobs N``: N forked pool workers, the
  tables joined in the main process; LocalCluster with N worker processes of 1 thread each),
  ``--repeat`` times (default 3), round-robin over the steps; OUT is removed before each run,
  untimed.  The table gives the MEDIAN wall time (min–max) and the MAX peak memory over the repeats.
- wall s: fork..wait4 of the CLI process, i.e. everything a user waits for (start-up, imports, cluster
  start and shutdown, reading, writing the Parquet tables).  CPU s: user + system of the CLI and of
  every descendant it waited for (``os.wait4`` rusage).
- Peak RSS, three figures:
  * "largest process": ``ru_maxrss`` of ``os.wait4`` on the CLI — Linux returns RUSAGE_BOTH there,
    i.e. the max of the CLI's own peak and of every descendant it reaped (the dask worker processes
    are the CLI's children, spawned by multiprocessing; anything below them is a grandchild).  It is
    the peak of the *single largest* process, not of the tree, and it is floored by this launcher's
    own peak (Linux carries ``maxrss`` across fork/exec; printed; the launcher imports no pandas).
  * "main" / "workers": every 0.2 s (``--poll``) the launcher walks the CLI's process tree (``ppid``
    from /proc/*/stat) and reads ``VmHWM`` (the kernel's per-process high-water mark, exact up to the
    last sample before the process exits) and ``VmRSS`` from /proc/<pid>/status.  Processes are
    named by their command line: the CLI = main; ``multiprocessing.spawn``/``forkserver`` children =
    dask worker processes, children with the CLI's own command line = forked ``--jobs`` workers; the
    multiprocessing resource tracker and others are listed apart.
  * "tree Σ": the largest sum of ``VmRSS`` over the tree at one sample (shared pages, e.g. library
    code, count once per process; a peak shorter than the poll interval can be missed).
- MB/s = corpus bytes (uncompressed, 10^6 B) / wall s; files/s = corpus files / wall s; ms/file on the
  tiny corpus = wall / files, and "marginal" = (wall(tiny) − wall(one)) / (files(tiny) − files(one)).
- Before any timing every corpus file is read once (page cache warm for every step alike; the launcher
  says when the corpus does not fit in MemAvailable) and each mode runs once untimed on ``one``
  (the C scanners are built once on a fresh checkout; a mode whose flags the CLI rejects is reported
  and not run further).
- Correctness, same run, in a child process with pyarrow: every mode's output of the last repeat has
  the same number of ``files`` rows (= the corpus' file count, none failed), and the same number of
  ``summary``, ``series`` (and ``blk_requests`` when written) rows in total and per (campaign, kind),
  with the same count and sum of finite ``value`` (relative 1e-9).  Single process writes
  ``OUT/<table>.parquet``; the dask path ``OUT/files.parquet`` plus hive-partitioned
  ``OUT/<table>/campaign=*/kind=*/part-*.parquet`` — both are read with ``pyarrow.dataset``.
- ``--with-parsers`` then runs ``bench_ingest.py`` and ``bench_blktrace.py`` (subprocesses, ``--out``
  to a temp file) and folds their step and comparison rows into the same table.

Exit status 1 if a step failed (exit code ≠ 0, timeout) or a correctness check failed, else 0.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_ingest import Report, fmt_s, machine_info, warm  # noqa: E402  (stdlib-only module)

RAW = REPO / "data" / "raw"
BUILDER_VERSION = 3  # bump when the corpus layout changes: a reused corpus is rebuilt
REL_TOL = 1e-9
GiB = 1 << 30
QUICK = {"gb": 0.2, "files": 300, "big_log_gb": 0.05, "tiny_files": 300, "repeat": 1}
FULL = {"gb": 5.0, "files": 2000, "big_log_gb": 1.0, "tiny_files": 2000, "repeat": 3}
TABLES = ("files", "summary", "series", "blk_requests")
#: capture side-files that ingest recognises by their name *with* .gz (``discovery.CAPTURE_AUX``, listed as
#: ``context``): copied as they are, not decompressed, so they are classified as in data/raw
KEEP_GZ = ("osd_config.json.gz", "cluster-log.txt.gz")


# =============================================================================================
# corpus: copies of real run directories of data/raw
# =============================================================================================

def _usize(p: Path) -> int:
    """Uncompressed size: gzip's ISIZE trailer (mod 2**32: every raw file here is far below 4 GiB)."""
    if p.suffix == ".gz":
        with open(p, "rb") as f:
            f.seek(-4, 2)
            return int.from_bytes(f.read(4), "little")
    return p.stat().st_size


def raw_runs(raw: Path) -> list[dict]:
    """Every run directory (a directory holding run.json) below ``raw``, with its files."""
    runs = []
    for dirpath, dirnames, filenames in os.walk(raw):
        dirnames.sort()
        if "run.json" not in filenames:
            continue
        d = Path(dirpath)
        try:
            campaign = json.loads((d / "run.json").read_text())["campaign"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        files = [(n, _usize(d / n)) for n in sorted(filenames) if not n.startswith(".")
                 and (d / n).is_file()]
        runs.append({"rel": d.relative_to(raw).as_posix(), "campaign": str(campaign), "files": files,
                     "bytes": sum(s for _, s in files)})
    return runs


def round_robin(runs: list[dict]) -> list[dict]:
    """Runs interleaved over campaigns (one of each campaign in turn, each campaign in path order),
    so that a partial copy still holds every campaign's kinds."""
    by: dict[str, list[dict]] = {}
    for r in sorted(runs, key=lambda r: r["rel"]):
        by.setdefault(r["campaign"], []).append(r)
    out, i = [], 0
    while len(out) < len(runs):
        for c in sorted(by):
            if i < len(by[c]):
                out.append(by[c][i])
        i += 1
    return out


def kind_by_name(name: str) -> str:
    """The kind of a capture file from its name (the capture's naming; ingest decides by content)."""
    n = name[:-3] if name.endswith(".gz") else name
    if re.match(r"trace.*\.blktrace$", n):
        return "blktrace"
    if n == "fio.json":
        return "fio-json"
    if re.search(r"_(clat_hist|lat_hist)\.\d+\.log$", n):
        return "fio-hist-log"
    if re.search(r"_(clat|lat|slat|bw|iops)\.\d+\.log$", n):
        return "fio-log"
    if n == "timeline.jsonl":
        return "ceph-pg-timeline"
    if n == "sysutil.jsonl":
        return "sysutil"
    if n in ("write.txt", "seq.txt"):
        return "rados-bench"
    return "context"


def _write_run_json(src: Path, dest: Path, campaign: str) -> int:
    doc = json.loads(src.read_text())
    doc["campaign"] = campaign
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    dest.write_text(text)
    return len(text.encode())


def _decompress(src: Path, dest: Path) -> int:
    with gzip.open(src, "rb") as fi, open(dest, "wb") as fo:
        shutil.copyfileobj(fi, fo, 1 << 20)
    return dest.stat().st_size


def copy_runs(raw: Path, root: Path, plan: list[tuple[int, dict]], only: tuple[str, ...] | None,
              tag: str = "copy") -> dict:
    """Write ``plan`` [(k, run)] below ``root``: ``<tag>-KKK/<run rel>/``, campaign ``<campaign>-<tag>KKK``,
    .gz decompressed.  The first copy of a source file is decompressed from data/raw, later ones are
    copied from it (kernel-side)."""
    first: dict[str, Path] = {}
    nbytes, nfiles = 0, 0
    mix: dict[str, list[int]] = {}
    campaigns = set()
    for k, run in plan:
        src_dir = raw / run["rel"]
        dest_dir = root / f"{tag}-{k:03d}" / run["rel"]
        dest_dir.mkdir(parents=True, exist_ok=True)
        camp = f"{run['campaign']}-{tag}{k:03d}"
        campaigns.add(camp)
        for name, _ in run["files"]:
            if only is not None and name not in only:
                continue
            src = src_dir / name
            out_name = name[:-3] if name.endswith(".gz") and name not in KEEP_GZ else name
            dest = dest_dir / out_name
            if name == "run.json":
                size = _write_run_json(src, dest, camp)
            elif str(src) in first:
                shutil.copyfile(first[str(src)], dest)
                size = dest.stat().st_size
            elif name.endswith(".gz") and name not in KEEP_GZ:
                size = _decompress(src, dest)
                first[str(src)] = dest
            else:
                shutil.copyfile(src, dest)
                size = dest.stat().st_size
                first[str(src)] = dest
            nbytes += size
            nfiles += 1
            m = mix.setdefault(kind_by_name(name), [0, 0])
            m[0] += 1
            m[1] += size
    return {"bytes": nbytes, "files": nfiles, "mix": mix, "campaigns": sorted(campaigns)}


def plan_copies(runs: list[dict], want_bytes: float, want_files: int,
                size_of=lambda r: (r["bytes"], len(r["files"]))) -> list[tuple[int, dict]]:
    """(k, run) in order — copy after copy of ``runs`` — until both targets are reached."""
    if not runs:
        raise SystemExit("no run directory to copy (data/raw empty?)")
    plan, b, n, k = [], 0, 0, 0
    while b < want_bytes or n < want_files:
        for r in runs:
            if b >= want_bytes and n >= want_files:
                break
            plan.append((k, r))
            sb, sn = size_of(r)
            b += sb
            n += sn
        k += 1
    return plan


def raw_window_logs(raw: Path, runs: list[dict]) -> list[dict]:
    """The block-2026 run with the longest job_clat log (ties: first path): its job_clat and job_lat
    logs (1 s windows: those captures used ``log_avg_msec=1000``), with its run.json and fio.json."""
    best = None
    for r in sorted(runs, key=lambda r: r["rel"]):
        if r["campaign"] != "block-2026":
            continue
        names = {n for n, _ in r["files"]}
        if not {"job_clat.1.log.gz", "job_lat.1.log.gz", "fio.json.gz"} <= names:
            continue
        with gzip.open(raw / r["rel"] / "job_clat.1.log.gz", "rb") as f:
            n = sum(1 for _ in f)
        if best is None or n > best[0]:
            best = (n, r)
    if best is None:
        raise SystemExit("no block-2026 run with job_clat/job_lat logs and fio.json: give --big-log-source")
    d = raw / best[1]["rel"]
    return [{"log": d / name, "run_json": d / "run.json", "fio_json": d / "fio.json.gz", "rel": best[1]["rel"],
             "what": "1 s windows (log_avg_msec=1000)"} for name in ("job_clat.1.log.gz", "job_lat.1.log.gz")]


def fio_per_io_log(workdir: Path) -> dict:
    """A per-IO clat log from a real fio run now: bench_ingest.py's fio command (3 s randrw, psync, no
    log_avg_msec, so one line per IO) run once in ``workdir/fio-src``, with fio's b.json."""
    from bench_ingest import make_fio_log
    src = workdir / "fio-src"
    shutil.rmtree(src, ignore_errors=True)
    g = make_fio_log(src, 1)
    run_json = src / "run.json"
    run_json.write_text(json.dumps({"campaign": "fio-per-io", "origin": "bench_scale.py: bench_ingest.py's fio run",
                                    "fio_cmd": g["cmd"]}, indent=1) + "\n")
    return {"log": Path(g["small"]), "run_json": run_json, "fio_json": src / "fio_run" / "b.json",
            "rel": "fio-per-io", "what": f"per-IO lines of `{g['cmd']}`"}


def big_log_sources(choice: str, raw: Path, runs: list[dict], workdir: Path) -> list[dict]:
    """mixed: block-2026's job_clat (windows) + a per-IO fio clat log; raw: block-2026's job_clat +
    job_lat; fio: the per-IO log; else a path to a fio log (.gz ok; run.json and fio.json/b.json beside
    it are taken along)."""
    if choice == "raw":
        return raw_window_logs(raw, runs)
    if choice == "fio":
        return [fio_per_io_log(workdir)]
    if choice == "mixed":
        return [raw_window_logs(raw, runs)[0], fio_per_io_log(workdir)]
    log = Path(choice).resolve()
    if not log.is_file():
        raise SystemExit(f"--big-log-source {choice}: not mixed, raw, fio or a file")
    fj = next((log.parent / n for n in ("fio.json.gz", "fio.json", "b.json") if (log.parent / n).is_file()), None)
    rj = log.parent / "run.json"
    return [{"log": log, "run_json": rj if rj.is_file() else None, "fio_json": fj, "rel": "log",
             "what": "given with --big-log-source"}]


def make_big_log(src: Path, dest: Path, target_bytes: int) -> dict:
    """Replicate a real fio log to ≥ target_bytes: copy k has its time column + k × period, period =
    (last − first time) + the median step, so the times continue monotonically; the rest of each line
    (``, value, ddir, bs, prio``) is fio's text byte for byte."""
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    lines = raw.decode().splitlines(keepends=True)
    lines = [ln if ln.endswith("\n") else ln + "\n" for ln in lines if ln.strip()]
    if not lines:
        raise SystemExit(f"{src}: empty log")
    ts = [int(ln.split(",", 1)[0]) for ln in lines]
    rest = [ln[ln.index(","):] for ln in lines]
    diffs = sorted(b - a for a, b in zip(ts, ts[1:]) if b > a)
    step = diffs[len(diffs) // 2] if diffs else 1  # the median step: fio's last window is often short
    period = ts[-1] - ts[0] + step
    per_chunk = max(1, (8 << 20) // max(1, len(raw)))  # ~8 MB per write
    written, k = 0, 0
    with open(dest, "w") as f:
        while written < target_bytes:
            s = "".join([f"{t + (k + j) * period}{r}" for j in range(per_chunk) for t, r in zip(ts, rest)])
            f.write(s)
            written += len(s)  # ASCII: characters == bytes
            k += per_chunk
    return {"source": str(src), "source_lines": len(lines), "copies": k, "lines": k * len(lines),
            "bytes": dest.stat().st_size, "period_ms": period, "path": str(dest)}


def _manifest_digest(raw: Path) -> str:
    m = raw / "MANIFEST.sha256"
    return hashlib.sha256(m.read_bytes()).hexdigest()[:16] if m.is_file() else "no-manifest"


def walked_files(root: Path) -> int:
    """Files below ``root`` that ``ingest`` walks: not under a folder it keeps but does not read
    (``discovery.NOT_INGESTED``: ``_superseded``) or skips (``discovery.SKIP_DIRS``)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from analysis.ingest.discovery import SKIP_DIRS, NOT_INGESTED
    return sum(len(fns) for dp, _, fns in os.walk(root)
               if not (set(Path(dp).relative_to(root).parts) & (NOT_INGESTED | SKIP_DIRS)))


def _tree_stats(root: Path) -> tuple[int, int]:
    n = b = 0
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            n += 1
            b += os.stat(os.path.join(dirpath, fn)).st_size
    return n, b


def build(name: str, workdir: Path, params: dict, make) -> dict:
    """Build ``workdir/name`` with ``make(root) -> info`` unless ``workdir/name.json`` says it was
    completed with the same parameters (and the tree still has that many files and bytes)."""
    root = workdir / name
    marker = workdir / f"{name}.json"
    if marker.is_file() and root.is_dir():
        try:
            done = json.loads(marker.read_text())
        except ValueError:
            done = {}
        if done.get("params") == params:
            n, b = _tree_stats(root)
            if (n, b) == (done["info"]["files"], done["info"]["bytes"]):
                done["info"]["reused"] = True
                return done["info"]
            print(f"({root}: {n} files, {b} B on disk, marker says {done['info']['files']}, "
                  f"{done['info']['bytes']}: rebuilding)", flush=True)
    marker.unlink(missing_ok=True)
    if root.exists():
        shutil.rmtree(root)  # only ever WORKDIR/{corpus,tiny,one}, which this script made
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    info = make(root)
    info["build_s"] = round(time.perf_counter() - t0, 1)
    n, b = _tree_stats(root)
    info["files"], info["bytes"] = n, b
    marker.write_text(json.dumps({"params": params, "info": info}, indent=1))
    info["reused"] = False
    return info


def place_big_log(src: dict, i: int, root: Path, big_log_gb: float) -> dict:
    """Big log number ``i`` from ``src`` (:func:`big_log_sources`) under ROOT/big-NN/, beside its run.json
    (campaign ``<campaign>-bigNN``) and fio's JSON; :func:`make_big_log`'s info, path relative to root."""
    log = src["log"]
    d = root / f"big-{i:02d}" / src["rel"]
    d.mkdir(parents=True)
    name = log.name[:-3] if log.name.endswith(".gz") else log.name
    if src["run_json"] is not None:
        camp = json.loads(src["run_json"].read_text()).get("campaign", "big")
        _write_run_json(src["run_json"], d / "run.json", f"{camp}-big{i:02d}")
    else:
        (d / "run.json").write_text(json.dumps({"campaign": f"big{i:02d}",
                                                "origin": f"bench_scale --big-log-source {log}"}) + "\n")
    fj = src["fio_json"]
    if fj is not None:  # fio's JSON beside its log, as fio leaves it (units, cross-check)
        fj_name = "b.json" if fj.name == "b.json" else "fio.json"
        if fj.suffix == ".gz":
            _decompress(fj, d / fj_name)
        else:
            shutil.copyfile(fj, d / fj_name)
    g = make_big_log(log, d / name, int(big_log_gb * GiB))
    g["path"] = str(Path(g["path"]).relative_to(root))
    g["source"] = str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log)
    g["what"] = src["what"]
    return g


def add_big_logs(a, raw: Path, runs: list[dict], workdir: Path, root: Path, info: dict) -> None:
    """The ``--big-logs`` big fio logs of ``--big-log-gb`` GiB each into the scale corpus at ``root``:
    listed in info["big"], counted in info["mix"] (files, bytes) under their kind + " (big log)"."""
    info["big"] = []
    n_big = a.big_logs if a.big_log_gb > 0 else 0
    srcs = big_log_sources(a.big_log_source, raw, runs, workdir) if n_big else []
    for i in range(n_big):
        g = place_big_log(srcs[i % len(srcs)], i, root, a.big_log_gb)
        info["big"].append(g)
        name = Path(g["path"]).name
        m = info["mix"].setdefault(kind_by_name(name) + " (big log)", [0, 0])
        m[0] += 1
        m[1] += g["bytes"]


def build_corpora(a, raw: Path, workdir: Path) -> dict[str, dict]:
    runs = raw_runs(raw)
    digest = _manifest_digest(raw)
    base = {"raw": str(raw), "manifest": digest, "builder": BUILDER_VERSION}

    # --- scale corpus ------------------------------------------------------------------------
    large = round_robin([r for r in runs if r["bytes"] >= a.min_run_kib * 1024])

    def make_scale(root: Path) -> dict:
        plan = plan_copies(large, a.gb * GiB, a.files)
        info = copy_runs(raw, root, plan, None)
        info["copies"] = plan[-1][0] + 1
        info["set_runs"] = len(large)
        info["set_bytes"] = sum(r["bytes"] for r in large)
        info["set_files"] = sum(len(r["files"]) for r in large)
        info["last_copy_runs"] = sum(1 for k, _ in plan if k == plan[-1][0])
        info["set_by_campaign"] = {}
        for r in large:
            c = info["set_by_campaign"].setdefault(r["campaign"], [0, 0])
            c[0] += 1
            c[1] += r["bytes"]
        info["copies_bytes"], info["copies_files"] = info["bytes"], info["files"]
        add_big_logs(a, raw, runs, workdir, root, info)
        return info

    p_scale = {**base, "gb": a.gb, "files": a.files, "min_run_kib": a.min_run_kib,
               "big_logs": a.big_logs, "big_log_gb": a.big_log_gb,
               "big_log_source": str(a.big_log_source)}

    # --- tiny + one: run.json + fio.json of real runs ---------------------------------------
    with_json = [r for r in sorted(runs, key=lambda r: r["rel"])
                 if any(n in ("fio.json", "fio.json.gz") for n, _ in r["files"])]
    only = ("run.json", "fio.json", "fio.json.gz")

    def two(r):
        return sum(s for n, s in r["files"] if n in only), sum(1 for n, _ in r["files"] if n in only)

    def make_tiny(root: Path) -> dict:
        plan = plan_copies(with_json, 0, a.tiny_files, size_of=two)
        info = copy_runs(raw, root, plan, only)
        info["copies"] = plan[-1][0] + 1
        info["runs"] = len(plan)
        return info

    def make_one(root: Path) -> dict:
        info = copy_runs(raw, root, [(0, with_json[0])], only)
        info["run"] = with_json[0]["rel"]
        return info

    out = {}
    for name, params, fn in (("one", {**base}, make_one),
                             ("tiny", {**base, "tiny_files": a.tiny_files}, make_tiny),
                             ("corpus", p_scale, make_scale)):
        print(f"(corpus {workdir / name}: building or checking …)", flush=True)
        out[name] = build(name, workdir, params, fn)
    return out


# =============================================================================================
# running one measured step: wall time, wait4 rusage, /proc polling of the process tree
# =============================================================================================

def _status_kb(pid: int) -> tuple[int, int] | None:
    hwm = rss = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                    break
    except OSError:
        return None
    return (hwm, rss) if hwm is not None and rss is not None else None


def _proc_stats():
    """(pid, the /proc/<pid>/stat fields after the command name: state, ppid, pgrp, …) of every process."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                s = f.read()
        except OSError:
            continue
        yield int(name), s[s.rfind(")") + 2:].split()


def _descendants(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, fields in _proc_stats():
        kids.setdefault(int(fields[1]), []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "main"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "resource_tracker" in cmd:
        return "resource tracker"
    if "spawn_main" in cmd or "forkserver" in cmd or "--multiprocessing-fork" in cmd:
        return "worker"
    try:  # a forked pool worker (ingest --jobs): the main process's child with its command line
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if ppid == root and Path(f"/proc/{root}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace") == cmd:
            return "worker"
    except (OSError, ValueError, IndexError):
        pass
    return "other: " + (cmd.split()[0].rsplit("/", 1)[-1] if cmd.strip() else "?")


class TreePoller(threading.Thread):
    """Every ``interval`` s: the process tree under ``root``, each process's VmHWM/VmRSS."""

    def __init__(self, root: int, interval: float, limit_kb: int = 0):
        super().__init__(daemon=True)
        self.root, self.interval, self.limit_kb = root, interval, limit_kb
        self.over_kb = 0
        self.stop = threading.Event()
        self.procs: dict[int, dict] = {}
        self.tree_rss_max_kb = 0
        self.samples = 0

    def run(self) -> None:
        while True:
            self.sample()
            if self.stop.wait(self.interval):
                return

    def sample(self) -> None:
        total = 0
        for pid in _descendants(self.root):
            st = _status_kb(pid)
            if st is None:
                continue
            p = self.procs.get(pid)
            if p is None:
                p = self.procs[pid] = {"role": _role(pid, self.root), "hwm_kb": 0, "rss_max_kb": 0}
            elif p["role"].startswith("other") and pid != self.root:  # cmdline set after exec
                p["role"] = _role(pid, self.root)
            p["hwm_kb"] = max(p["hwm_kb"], st[0])
            p["rss_max_kb"] = max(p["rss_max_kb"], st[1])
            total += st[1]
        self.samples += 1
        self.tree_rss_max_kb = max(self.tree_rss_max_kb, total)
        if self.limit_kb and total > self.limit_kb and not self.over_kb:
            self.over_kb = total  # end the step before the machine swaps or the OOM killer picks a victim
            try:
                os.killpg(self.root, signal.SIGKILL)  # the session this script started for the step
            except OSError:
                pass


def run_step(argv: list[str], log_base: Path, poll: float, timeout: float, limit_kb: int = 0) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    res: dict = {"argv": argv}
    with open(f"{log_base}.out", "w") as so, open(f"{log_base}.err", "w") as se:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=so, stderr=se, cwd=REPO, env=env, start_new_session=True)
        poller = TreePoller(p.pid, poll, limit_kb)
        poller.start()
        timer = threading.Timer(timeout, lambda: _kill_group(p.pid, res))
        timer.start()
        box: dict = {}

        def reap() -> None:  # in a thread, so that the main thread stays interruptible
            _, box["status"], box["ru"] = os.wait4(p.pid, 0)
            box["t1"] = time.perf_counter()
        reaper = threading.Thread(target=reap, daemon=True)
        reaper.start()
        try:
            while reaper.is_alive():
                reaper.join(0.5)
        except BaseException:  # Ctrl-C / SIGTERM: the step runs in its own session and would not see it
            timer.cancel()
            poller.stop.set()
            _kill_group(p.pid, res)
            reaper.join()
            raise
        status, ru = box["status"], box["ru"]
        res["wall_s"] = box["t1"] - t0
        timer.cancel()
        poller.stop.set()
        poller.join()
    p.returncode = res["rc"] = os.waitstatus_to_exitcode(status)
    res["cpu_s"] = ru.ru_utime + ru.ru_stime
    res["maxrss_kb"] = ru.ru_maxrss
    res["procs"] = {str(k): v for k, v in poller.procs.items()}
    res["tree_rss_max_kb"] = poller.tree_rss_max_kb
    res["samples"] = poller.samples
    res["stdout"] = Path(f"{log_base}.out").read_text(errors="replace")[-2000:]
    res["stderr"] = Path(f"{log_base}.err").read_text(errors="replace")[-4000:]
    # ran to its end (exit 1 = some files failed: still timed, and a failed check below)
    res["completed"] = res["rc"] in (0, 1) and not poller.over_kb and not res.get("timeout")
    if poller.over_kb:
        res["error"] = (f"killed: process tree RSS {poller.over_kb / 2**20:.1f} GiB > --mem-limit-gb "
                        f"{limit_kb / 2**20:.1f}")
    elif res.get("timeout"):
        res["error"] = f"timeout after {timeout:.0f} s (process group killed)"
    elif res["rc"] != 0:
        last = [ln for ln in res["stderr"].splitlines() if ln.strip()]
        what = {1: "some files failed", 2: "bad input / usage"}.get(res["rc"], "error")
        res["error"] = f"exit {res['rc']} ({what}): {last[-1][:160] if last else ''}"
    # leftovers of the step (e.g. a worker that outlived the CLI): the step ran in its own session and
    # process group (pgid = the CLI's pid), so they are found by that group and ended by pid
    # (multiprocessing's resource tracker ends on its own a moment after the CLI: up to 5 s allowed)
    deadline = time.monotonic() + 5.0
    left = _group_members(p.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _group_members(p.pid)
    if left:
        for pid in left:
            _kill(pid)
        res["leftovers"] = len(left)
        res.setdefault("error", f"{len(left)} process(es) of the step still running 5 s after the CLI "
                                f"exited: killed")
    return res


def _group_members(pgid: int) -> list[int]:
    out = [pid for pid, fields in _proc_stats() if int(fields[2]) == pgid]
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _kill_group(pgid: int, res: dict) -> None:
    res["timeout"] = True
    try:
        os.killpg(pgid, signal.SIGKILL)  # the session this script started for the step
    except OSError:
        pass


# =============================================================================================
# correctness: a child process reads every output with pyarrow
# =============================================================================================

#: issue 26's targets for the default path on this corpus, and the default path's figures before it
#: (reports/bench.md of 2026-11-23, git 4332a31: --jobs 2 on the 6.94 GiB corpus of then)
TARGET_MBPS = 150.0
TARGET_TREE_GIB = 2.0
BEFORE = {"date": "2026-11-23", "wall_s": 219.52, "mbps": 34, "tree_mib": 14354, "largest_mib": 14386}
_STAGES = re.compile(r"in (\d+) batches on (\d+) process\(es\): read ([\d.]+) s, merge ([\d.]+) s")
KIND_SAMPLE_FILES = 60          # files timed per kind (all of a kind with fewer)


def _worker_kinds(corpus: str, res_path: str) -> None:
    """One process, one scanner thread, as one pool worker reads a batch: ``scale.run_batch`` (hash,
    detect, read, value rules, campaign attached to every series row (the other run keys stay in files), the
    batch's parts written (Arrow IPC, as the default path's temporary parts);
    a big log streamed to its part block by block) on a sample of each kind's files with their run
    context, timed per kind → JSON {kind: [files, bytes, s, files in corpus, bytes in corpus]}."""
    import shutil
    import tempfile
    from analysis.ingest import _scan
    from analysis.ingest.scale import run_batch
    _scan.THREADS = 1
    root = Path(corpus)
    by: dict[str, list[Path]] = {}
    for dp, _, fns in sorted(os.walk(root)):
        for fn in sorted(fns):
            by.setdefault(kind_by_name(fn) if not dp.startswith(str(root / "big-")) else "fio-log (big log)",
                          []).append(Path(dp) / fn)
    out = {}
    for kind, paths in sorted(by.items()):
        # whole folders spread over the corpus, read in walk order as a batch reads them (a folder's fio
        # logs share its JSON): a sample of both the sizes and the per-folder costs
        folders: dict[Path, list[Path]] = {}
        for q in paths:
            folders.setdefault(q.parent, []).append(q)
        names = list(folders)
        per = max(1, round(len(paths) / len(names)))
        step = max(1, len(names) // max(1, KIND_SAMPLE_FILES // per))
        pick = [q for f in names[::step] for q in folders[f]][:max(KIND_SAMPLE_FILES, per)]
        tmp = Path(tempfile.mkdtemp(prefix="kind-", dir=res_path.rsplit("/", 1)[0] or "."))
        t0 = time.perf_counter()
        run_batch(str(root), [q.relative_to(root).as_posix() for q in pick], str(tmp), 0, None, True, False)
        elapsed = time.perf_counter() - t0
        shutil.rmtree(tmp, ignore_errors=True)
        out[kind] = [len(pick), sum(q.stat().st_size for q in pick), elapsed,
                     len(paths), sum(q.stat().st_size for q in paths)]
    Path(res_path).write_text(json.dumps(out))


def _worker_check(outs: list[str], res_path: str) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    def norm(v):
        if v is None or v in ("__HIVE_DEFAULT_PARTITION__", "_none", "nan", "None", ""):
            return None
        return str(v)

    def table_stats(out: Path, name: str) -> dict | None:
        f, d = out / f"{name}.parquet", out / name
        if f.is_file():
            dset, layout = ds.dataset(f, format="parquet"), "file"
        elif d.is_dir():
            dset, layout = ds.dataset(d, format="parquet", partitioning="hive"), "hive"
        else:
            return None
        names = set(dset.schema.names)
        keys = [c for c in ("campaign", "kind") if c in names]
        cols = keys + [c for c in ("value", "status", "size_bytes") if c in names]
        st = {"layout": layout, "rows": 0, "n_finite": 0, "sum_finite": 0.0, "groups": {},
              "status": {}, "kind_bytes": {}, "fragments": len(list(dset.get_fragments()))}
        for b in dset.to_batches(columns=cols, batch_size=1 << 20):
            t = pa.Table.from_batches([b])
            st["rows"] += t.num_rows
            if "value" in cols:
                v = t["value"].cast(pa.float64())
                fin = pc.is_finite(v)
                st["n_finite"] += int(pc.sum(fin.cast(pa.int64())).as_py() or 0)
                st["sum_finite"] += float(pc.sum(pc.if_else(fin, v, 0.0)).as_py() or 0.0)
            if keys:
                kt = pa.table({k: t[k].cast(pa.string()) for k in keys})
                g = kt.group_by(keys).aggregate([([], "count_all")])
                for row in g.to_pylist():
                    key = "|".join(str(norm(row[k])) for k in keys)
                    st["groups"][key] = st["groups"].get(key, 0) + row["count_all"]
            if name == "files" and "status" in cols:
                for s, n in zip(*[x.to_pylist() for x in pc.value_counts(t["status"].cast(pa.string())).flatten()]):
                    st["status"][str(s)] = st["status"].get(str(s), 0) + n
                if "kind" in cols and "size_bytes" in cols:
                    kt = pa.table({"kind": t["kind"].cast(pa.string()),
                                   "size_bytes": t["size_bytes"].cast(pa.float64())})
                    g = kt.group_by(["kind"]).aggregate([([], "count_all"), ("size_bytes", "sum")])
                    for row in g.to_pylist():
                        k = str(row["kind"])
                        a = st["kind_bytes"].setdefault(k, [0, 0.0])
                        a[0] += row["count_all"]
                        a[1] += row["size_bytes_sum"] or 0.0
        st["campaigns"] = len({k.split("|")[0] for k in st["groups"]})
        return st

    res: dict = {}
    for o in outs:
        out = Path(o)
        r: dict = {}
        for name in TABLES:
            try:
                r[name] = table_stats(out, name)
            except Exception as e:  # noqa: BLE001  (reported as a failed check)
                r[name] = {"error": f"{type(e).__name__}: {e}"}
        res[o] = r
    Path(res_path).write_text(json.dumps(res))


def run_check(outs: list[Path], workdir: Path) -> dict:
    resf = workdir / ".check.json"
    resf.unlink(missing_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "check", str(resf)] + [str(o) for o in outs]
    p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0 or not resf.exists():
        return {"error": f"check worker failed (exit {p.returncode}): {p.stderr[-800:]}"}
    return json.loads(resf.read_text())


def compare(labels: list[str], stats: list[dict], corpus_files: int) -> list[list[str]]:
    """Rows [check, values, result] over the outputs of one corpus (labels[i] ↔ stats[i])."""
    rows = []

    def verdict(ok):
        return "PASS" if ok else "FAIL"
    ref_label, ref = labels[0], stats[0]
    for name in TABLES:
        per = [s.get(name) for s in stats]
        if all(x is None for x in per):
            continue
        errs = [f"{lab}: {x['error']}" for lab, x in zip(labels, per) if x and "error" in x]
        if errs:
            rows.append([f"{name}: readable", "; ".join(errs)[:300], "FAIL"])
            continue
        missing = [lab for lab, x in zip(labels, per) if x is None]
        if missing:
            have = [x for x in per if x is not None]
            if name == "blk_requests":  # not in the CLI's contract (files, summary, series): reported only
                rows.append([f"{name}: written by every mode", f"only by "
                             f"{', '.join(lab for lab, x in zip(labels, per) if x is not None)} "
                             f"({have[0]['rows']:,} rows)", "—"])
                continue
            if all(x["rows"] == 0 for x in have):  # an empty table may be written as no file at all
                rows.append([f"{name}: rows equal", f"0 rows; no table from {', '.join(missing)}", "PASS"])
                continue
            rows.append([f"{name}: written by every mode", f"missing in {', '.join(missing)}", "FAIL"])
            continue
        counts = [x["rows"] for x in per]
        lay = ", ".join(f"{lab} {x['layout']}" + (f" ({x['fragments']} parts)" if x["layout"] == "hive" else "")
                        for lab, x in zip(labels, per))
        rows.append([f"{name}: rows equal", " vs ".join(f"{c:,}" for c in counts) + f" [{lay}]",
                     verdict(len(set(counts)) == 1)])
        if name == "files":
            rows.append(["files: rows == files the ingest walks (the corpus minus `_superseded/`, kept, not read)",
                         f"{counts[0]:,} vs {corpus_files:,}", verdict(all(c == corpus_files for c in counts))])
            bad = [f"{lab}: {x['status'].get('failed', 0)}" for lab, x in zip(labels, per)]
            rows.append(["files: status 'failed'", ", ".join(bad),
                         verdict(all(x["status"].get("failed", 0) == 0 for x in per))])
            rows.append(["files: status counts equal", json.dumps(ref["files"]["status"], sort_keys=True),
                         verdict(all(x["status"] == per[0]["status"] for x in per))])
            continue
        if per[0]["groups"]:
            diff = [lab for lab, x in zip(labels, per) if x["groups"] != per[0]["groups"]]
            rows.append([f"{name}: rows per (campaign, kind) equal",
                         f"{len(per[0]['groups'])} groups, {per[0]['campaigns']} campaigns"
                         + (f"; differ from {ref_label}: {', '.join(diff)}" if diff else ""),
                         verdict(not diff)])
        if per[0]["n_finite"] or per[0]["sum_finite"]:
            s0 = per[0]["sum_finite"]
            rel = max(abs(x["sum_finite"] - s0) / abs(s0) if s0 else abs(x["sum_finite"]) for x in per)
            same_n = len({x["n_finite"] for x in per}) == 1
            rows.append([f"{name}: count and sum of finite value equal (rel ≤ 1e-9)",
                         f"{per[0]['n_finite']:,} values, sum {s0:.6g}, max rel diff {rel:.1e}",
                         verdict(same_n and rel <= REL_TOL)])
    return rows


# =============================================================================================
# the other benchmarks (--with-parsers): run, parse their Markdown tables
# =============================================================================================

def md_tables(text: str) -> list[tuple[str, list[dict]]]:
    """(the last ``##`` heading or input line before it, rows as dicts) for every Markdown table."""
    out, head, ctx, rows = [], None, "", []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if head is None:
                head = cells
            elif not all(set(c) <= set("-: ") for c in cells):
                rows.append(dict(zip(head, cells)))
            continue
        if head is not None:
            out.append((ctx, rows))
            head, rows = None, []
        if line.startswith("## ") or line.startswith("Input:"):
            ctx = line.lstrip("# ").strip()
    return out


def parser_rows(script: str, text: str) -> list[list[str]]:
    """Table rows from a parser benchmark's Markdown: its step rows (wall = its median call or process
    time) and its comparison rows (the ratio text in the last column)."""
    rows: list[list[str]] = []
    for ctx, tab in md_tables(text):
        if not tab:
            continue
        keys = list(tab[0])
        m = re.match(r"Input: ([\d,]+) records, ([\d,]+) of them events.*?, ([\d.]+ MiB)", ctx)
        if m:
            ctx = f"block trace: {m.group(1)} records ({m.group(2)} events), {m.group(3)}"
        ctx = re.sub(r"^\d+\.\s*", "", ctx)[:90]
        part = f"{ctx} ({script})" if ctx else script
        if keys[0] == "step" and any(k.startswith(("call s", "process s")) for k in keys):
            wall_k = next(k for k in keys if k.startswith(("call s", "process s")))
            rng_k = next((k for k in keys if "min–max" in k), None)
            cpu_k = next((k for k in keys if k.startswith("CPU")), None)
            rss_k = next((k for k in keys if k.startswith("peak RSS")), None)
            for r in tab:
                what = "call" if wall_k.startswith("call") else "process"
                rows.append([part, f"{r['step']} [{what} s]", r.get(wall_k, ""), r.get(rng_k, "") if rng_k else "",
                             r.get(cpu_k, "") if cpu_k else "", "", "", "",
                             r.get(rss_k, "") if rss_k else "", "", "", ""])
        elif keys[0] == "comparison":
            for r in tab:
                vals = list(r.values())
                if "on call time" in r:
                    txt = (f"{r['on call time']} ({r['target']}: {r['verdict']}); process time: "
                           f"{r['on process time']} {r.get('(verdict)', '')}".strip())
                else:
                    txt = f"{vals[2]} ({vals[1]}{': ' + vals[3] if len(vals) > 3 and vals[3] else ''})"
                rows.append([part, r["comparison"], "", "", "", "", "", "", "", "", "", txt])
    return rows


def run_parsers(a, tmp: Path) -> tuple[list[list[str]], list[str], list[str]]:
    """Run bench_ingest.py and bench_blktrace.py; their rows for the table, notes, raw Markdown."""
    rows, notes, appendix = [], [], []
    jobs = [("bench_ingest.py", ["--quick"] if a.quick else []),
            ("bench_blktrace.py", (["--events", "200000", "--repeat", "1"] if a.quick
                                   else ["--repeat", str(a.repeat)]))]
    for script, extra in jobs:
        md = tmp / f"{script}.md"
        argv = [sys.executable, str(BENCH / script), *extra, "--out", str(md)]
        print(f"\n(running {' '.join([script, *extra])} …)", flush=True)
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        took = time.perf_counter() - t0
        cmd = shlex.join([os.path.relpath(sys.executable, REPO), f"bench/{script}", *extra])
        if not md.exists():
            notes.append(f"`{cmd}` failed (exit {p.returncode}): {(p.stderr or p.stdout)[-300:]}")
            rows.append([script, f"failed: exit {p.returncode}", *[""] * 10])
            continue
        text = md.read_text()
        appendix += [f"### `{cmd}` (exit {p.returncode}, {took:.0f} s)", "", text, ""]
        verdict = "correctness checks passed" if p.returncode == 0 else "a correctness check FAILED"
        notes.append(f"`{cmd}`: exit {p.returncode} ({verdict}), {took:.0f} s")
        rows += parser_rows(script, text)
    return rows, notes, appendix


# =============================================================================================
# main
# =============================================================================================

MODES_HELP = "--jobs 1 (single process), --jobs N for each N of --pool, --dask --workers N for each N of --workers"


def _mib(kb) -> str:
    return "—" if not kb else f"{kb / 1024:,.0f}"


def _opts(d: dict) -> str:
    return ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in d.items())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options, the sizes --gb … --repeat not given taken from QUICK (--quick) or FULL."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                 epilog=f"Defaults: {_opts(FULL)}; --quick: {_opts(QUICK)}")
    ap.add_argument("--gb", type=float, default=None, help="GiB of copied run directories (default 5)")
    ap.add_argument("--files", type=int, default=None, help="at least this many files in the copies (default 2000)")
    ap.add_argument("--big-log-gb", type=float, default=None, help="GiB per big fio log (default 1; 0: none)")
    ap.add_argument("--big-logs", type=int, default=2, help="how many big fio logs (default 2)")
    ap.add_argument("--big-log-source", default="mixed",
                    help="mixed (default): block-2026's longest job_clat log (1 s windows) + a per-IO clat log "
                         "of a real fio run made now; raw: block-2026's job_clat + job_lat; fio: per-IO only; "
                         "or a fio log file (.gz ok)")
    ap.add_argument("--tiny-files", type=int, default=None, help="files in the per-file-overhead corpus (default 2000)")
    ap.add_argument("--min-run-kib", type=int, default=256,
                    help="copy the run directories holding at least this many KiB uncompressed (default 256; 0 = all)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per step (default 3)")
    ap.add_argument("--workers", default="1,2", help="dask worker counts to measure (default 1,2)")
    ap.add_argument("--no-dask", action="store_true", help="no Dask modes")
    ap.add_argument("--pool", default="2",
                    help="process-pool sizes to measure (ingest --jobs N; default 2; '' for none)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="corpus and outputs (default /var/tmp/cephqos-scale, --quick: /var/tmp/cephqos-scale-quick); "
                         "a complete corpus with the same parameters is reused")
    ap.add_argument("--raw", type=Path, default=RAW, help="the real captures to copy (default data/raw; only read)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    ap.add_argument("--with-parsers", action="store_true",
                    help="also run bench_ingest.py and bench_blktrace.py and fold their rows into the table")
    ap.add_argument("--build-only", action="store_true", help="build (or check) the corpus, print it and stop")
    ap.add_argument("--keep-outputs", action="store_true", help="keep WORKDIR/out (the tables of the last repeat)")
    ap.add_argument("--poll", type=float, default=0.2, help="s between /proc samples of the process tree (default 0.2)")
    ap.add_argument("--timeout", type=float, default=7200, help="s per step before it is killed (default 7200)")
    ap.add_argument("--mem-limit-gb", type=float, default=None,
                    help="kill a step whose process tree holds more RSS (GiB; default 85 %% of MemTotal)")
    ap.add_argument("--ingest-cmd", default=None,
                    help="the command measured, before 'DIR --out OUT --no-progress [--dask --workers N]' "
                         "(default: this Python's '-m analysis ingest')")
    ap.add_argument("--out", type=Path, default=None, help="also write everything as Markdown here (e.g. reports/bench.md)")
    a = ap.parse_args(argv)
    preset = QUICK if a.quick else FULL
    for k, v in preset.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def prepare_workdir(a: argparse.Namespace) -> tuple[Path, Path]:
    """(the workdir, data/raw), both resolved; the workdir made, refused when it overlaps data/raw or
    holds files this script did not make."""
    workdir = (a.workdir or Path("/var/tmp/cephqos-scale-quick" if a.quick else "/var/tmp/cephqos-scale")).resolve()
    raw = a.raw.resolve()
    if workdir == raw or raw in workdir.parents or workdir in raw.parents:
        raise SystemExit(f"--workdir {workdir} overlaps {raw}: data/raw is never written")
    workdir.mkdir(parents=True, exist_ok=True)
    sentinel = workdir / ".bench_scale"  # this script only ever deletes inside a workdir it made
    if not sentinel.exists():
        if any(workdir.iterdir()):
            raise SystemExit(f"--workdir {workdir} is not empty and was not made by bench_scale.py: "
                             f"give an empty or new folder")
        sentinel.write_text("made by bench/bench_scale.py: corpus/, tiny/, one/, fio-src/, out/, logs/ are rebuilt at will\n")
    return workdir, raw


def ingest_modes(a: argparse.Namespace) -> list[tuple[str, str, list[str]]]:
    """The modes measured: (key, label, the CLI's flags) for single process, each --pool, each --workers."""
    workers = [] if a.no_dask else [int(w) for w in str(a.workers).split(",") if w.strip()]
    pools = [int(n) for n in str(a.pool).split(",") if n.strip()]
    # single: --jobs 1 (the CLI's default is one process per core); a custom --ingest-cmd gets no flag
    return [("single", "single process", [] if a.ingest_cmd else ["--jobs", "1"])] + \
        [(f"pool{n}", f"--jobs {n}", ["--jobs", str(n)]) for n in pools] + \
        [(f"dask{n}", f"--dask --workers {n}", ["--dask", "--workers", str(n)]) for n in workers]


def shown_command(argv: list[str] | None) -> str:
    """This script's command line, paths inside the repository relative to it."""
    def shown_path(x: str) -> str:
        return os.path.relpath(x, REPO) if Path(os.path.abspath(x)).is_relative_to(REPO) else x
    return shlex.join([shown_path(sys.executable), shown_path(__file__),
                       *(sys.argv[1:] if argv is None else argv)])


def scale_machine_info() -> dict[str, str]:
    """:func:`machine_info` with the dask and distributed versions added to its packages."""
    info = machine_info()
    from importlib import metadata
    for pkg in ("dask", "distributed"):
        try:
            info["packages"] += f", {pkg} {metadata.version(pkg)}"
        except metadata.PackageNotFoundError:
            info["packages"] += f", {pkg} -"
    return info


def meminfo() -> tuple[int, int]:
    """(MemAvailable, MemTotal) in bytes, from /proc/meminfo."""
    mem_avail = mem_total = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable"):
            mem_avail = int(line.split()[1]) * 1024
        elif line.startswith("MemTotal"):
            mem_total = int(line.split()[1]) * 1024
    return mem_avail, mem_total


def check_free_space(a: argparse.Namespace, workdir: Path) -> None:
    """Refuse to build a corpus that would not fit 1.5 times in the workdir's free space."""
    est = a.gb * GiB + a.big_logs * a.big_log_gb * GiB
    free = shutil.disk_usage(workdir).free
    if not (workdir / "corpus.json").exists() and free < 1.5 * est:
        raise SystemExit(f"{workdir}: {free / GiB:.1f} GiB free, the corpus needs ~{est / GiB:.1f} GiB "
                         f"plus the outputs")


def say_corpus(say: Report, a: argparse.Namespace, command: str, info: dict, corp: dict, workdir: Path,
               raw: Path, mem_avail: int) -> None:
    """The title, command, machine, and what each corpus holds (a note when it does not fit in memory)."""
    c = corp["corpus"]
    say("# bench_scale — `python -m analysis ingest` on a multi-GB corpus of real captures")
    say()
    say(f"- command: `{command}`")
    say(f"- date: {info['date']}; machine: nproc {info['nproc']}, CPU {info['cpu']}, memory {info['memory']}, "
        f"kernel {info['kernel']}, load average at start {info['load']}")
    say(f"- Python {info['python']}; {info['packages']}; code: {info['code']}")
    built = "reused" if c["reused"] else f"built in {c['build_s']} s"
    bigb = sum(g["bytes"] for g in c["big"])
    say(f"- corpus `{workdir / 'corpus'}` ({built}): **{c['files']:,} files, {c['bytes'] / GiB:.2f} GiB** "
        f"uncompressed ({c['bytes'] / 1e9:.2f} GB): copies {c['copies_files']:,} files, "
        f"{c['copies_bytes'] / GiB:.2f} GiB + {len(c['big'])} big logs {bigb / GiB:.2f} GiB")
    say(f"- copies: {c['copies']} cop{'y' if c['copies'] == 1 else 'ies'} (the last with {c['last_copy_runs']} of "
        f"its {c['set_runs']} runs) of the {c['set_runs']} run directories of "
        f"`{raw.relative_to(REPO) if raw.is_relative_to(REPO) else raw}` holding ≥ {a.min_run_kib} KiB uncompressed "
        f"({c['set_files']:,} files, {c['set_bytes'] / 2**20:.0f} MiB per full copy; "
        + ", ".join(f"{k}: {v[0]} runs, {v[1] / 2**20:.0f} MiB" for k, v in sorted(c["set_by_campaign"].items()))
        + f"), taken round-robin over the campaigns; {len(c['campaigns'])} campaigns `<campaign>-copyKKK`; "
          f".gz stored decompressed (but {' and '.join(KEEP_GZ)}, which ingest lists as context by that name)")
    for g in c["big"]:
        say(f"- big log `{g['path']}`: {g['bytes'] / GiB:.2f} GiB, {g['lines']:,} lines = {g['copies']:,} copies "
            f"of the real `{g['source']}` ({g['source_lines']:,} lines, {g['what']}; time column + k × "
            f"{g['period_ms']} ms)")
    say("- mix by kind (by file name, the capture's naming): "
        + "; ".join(f"{k} {v[0]:,} files {v[1] / 2**20:,.0f} MiB" for k, v in
                    sorted(c["mix"].items(), key=lambda kv: -kv[1][1])))
    t, o = corp["tiny"], corp["one"]
    say(f"- tiny corpus `{workdir / 'tiny'}`: {t['files']:,} files ({t['bytes'] / 2**20:.1f} MiB): run.json + "
        f"fio.json (decompressed) of {t['runs']:,} real run directories; one `{workdir / 'one'}`: "
        f"{o['files']} files of `{o['run']}` (fixed cost)")
    if c["bytes"] + t["bytes"] > 0.8 * mem_avail:
        say(f"- NOTE: the corpus ({c['bytes'] / GiB:.1f} GiB) does not fit in 80 % of MemAvailable "
            f"({mem_avail / GiB:.1f} GiB): part of every run reads from disk")


class IngestRunner:
    """Runs one measured ingest step (:func:`run_step`): the command, the corpora's folder, where the logs
    go, the poll interval (s), timeout (s) and memory limit (KiB)."""

    def __init__(self, cmd: list[str], workdir: Path, logs: Path, poll: float, timeout: float,
                 limit_kb: int) -> None:
        self.cmd, self.workdir, self.logs = cmd, workdir, logs
        self.poll, self.timeout, self.limit_kb = poll, timeout, limit_kb

    def run(self, corpus: str, mode_args: list[str], out: Path, log: str) -> dict:
        argv = [*self.cmd, str(self.workdir / corpus), "--out", str(out), "--no-progress", *mode_args]
        return run_step(argv, self.logs / log, self.poll, self.timeout, self.limit_kb)


def warm_up(modes: list[tuple], ingest: IngestRunner, outroot: Path) -> list[tuple]:
    """Every corpus file read once (page cache warm), each mode run once untimed on ``one``: the modes
    as (key, label, flags, why not measured or None) — a mode the CLI rejects (exit 2) is not measured."""
    print("(reading the corpus once: page cache warm …)", flush=True)
    for name in ("corpus", "tiny", "one"):
        warm(Path(dp) / fn for dp, _, fns in os.walk(ingest.workdir / name) for fn in fns)
    usable = []
    for key, label, margs in modes:
        print(f"(warm-up, untimed: {label} on one …)", flush=True)
        out = outroot / f"warmup-{key}"
        r = ingest.run("one", margs, out, f"warmup-{key}")
        shutil.rmtree(out, ignore_errors=True)
        if "error" in r and r["rc"] == 2:
            print(f"  {label}: {r['error']} — not measured", flush=True)
            usable.append((key, label, margs, r["error"]))
        else:
            if "error" in r:
                print(f"  {label}: {r['error']}", flush=True)
            usable.append((key, label, margs, None))
    return usable


def measure(repeat: int, corpora: list[tuple[str, dict]], usable: list[tuple], ingest: IngestRunner,
            outroot: Path) -> dict[tuple[str, str], list[dict]]:
    """Every usable mode on every corpus, ``repeat`` times round-robin: (corpus, mode key) → its runs."""
    runs: dict[tuple[str, str], list[dict]] = {(cn, m[0]): [] for cn, _ in corpora for m in usable}
    for rep in range(repeat):
        for cn, _ in corpora:
            for key, label, margs, bad in usable:
                if bad:
                    continue
                out = outroot / f"{cn}-{key}"
                shutil.rmtree(out, ignore_errors=True)
                print(f"  run {rep + 1}/{repeat} {cn}: {label} …", end="", flush=True)
                r = ingest.run(cn, margs, out, f"{cn}-{key}-{rep}")
                runs[(cn, key)].append(r)
                print(f" {r['wall_s']:.2f} s" + (f"  {r['error']}" if "error" in r else ""), flush=True)
    return runs


def correctness_rows(corpora: list[tuple[str, dict]], usable: list[tuple], runs: dict, outroot: Path,
                     workdir: Path) -> tuple[list[list[str]], dict]:
    """(check, values, result) rows: the modes' outputs of the scale and tiny corpora compared
    (:func:`run_check`, :func:`compare`), every failed run and rejected mode; and the scale corpus' mix
    by kind as the first mode's files table has it."""
    checks: list[list[str]] = []
    real_kinds = {}
    for cn, ci in corpora[:2]:
        present = [(key, outroot / f"{cn}-{key}") for key, _, _, bad in usable if not bad
                   and runs[(cn, key)] and (outroot / f"{cn}-{key}").exists()]
        if not present:
            checks.append([f"{cn}: outputs", "no mode produced an output", "FAIL"])
            continue
        print(f"(checking the {cn} outputs: {', '.join(k for k, _ in present)} …)", flush=True)
        st = run_check([p for _, p in present], workdir)
        if "error" in st:
            checks.append([f"{cn}: check worker", st["error"][:300], "FAIL"])
            continue
        stats = [st[str(p)] for _, p in present]
        rows = compare([k for k, _ in present], stats, walked_files(workdir / cn))
        for r in rows:
            checks.append([f"{cn}: {r[0]}", r[1], r[2]])
        if cn == "corpus" and stats[0].get("files"):
            real_kinds = stats[0]["files"].get("kind_bytes", {})
        if len(present) < 2:
            checks.append([f"{cn}: modes compared", f"only {present[0][0]} produced an output", "—"])
    for key_ in runs:
        for i, r in enumerate(runs[key_]):
            if "error" in r:
                checks.append([f"{key_[0]}: {key_[1]} run {i + 1} exit status", r["error"][:200], "FAIL"])
    for key, label, _, bad in usable:
        if bad:
            checks.append([f"{label}: accepted by the CLI", bad[:200], "FAIL"])
    return checks, real_kinds


RESULTS_HEAD = ["part", "step", "wall s (median)", "min–max", "CPU s", "MB/s", "files/s", "ms/file",
                "peak RSS MiB: largest process", "main; workers (each)", "tree Σ (sampled)", "comparison"]


def worker_peaks(rs: list[dict]) -> list[int]:
    """Peak VmHWM (KiB) per worker slot, largest first: the max over the runs of each one's i-th largest."""
    wk: list[int] = []
    for r in rs:
        ws = sorted((p["hwm_kb"] for p in r["procs"].values() if p["role"] == "worker"), reverse=True)
        for i, v in enumerate(ws):
            if i < len(wk):
                wk[i] = max(wk[i], v)
            else:
                wk.append(v)
    return wk


def step_rows(part: str, label: str, cn: str, ci: dict, rs: list[dict]) -> tuple[list[str], list[str], float]:
    """One mode's completed runs on corpus ``cn`` (its info ``ci``): (its results row without the
    comparison, its row of the processes seen, its median wall s)."""
    w = [r["wall_s"] for r in rs]
    m = statistics.median(w)
    cpu = statistics.median(r["cpu_s"] for r in rs)
    main_hwm = max((p["hwm_kb"] for r in rs for p in r["procs"].values() if p["role"] == "main"), default=0)
    wk = worker_peaks(rs)
    mw = f"{_mib(main_hwm)}" + (f"; {', '.join(_mib(x) for x in wk)}" if wk else "")
    row = [part, label, fmt_s(m), f"{fmt_s(min(w))}–{fmt_s(max(w))}", fmt_s(cpu),
           f"{ci['bytes'] / 1e6 / m:,.0f}" if cn == "corpus" else "",
           f"{ci['files'] / m:,.0f}" if cn != "one" else "",
           f"{1000 * m / ci['files']:.2f}" if cn == "tiny" else "",
           _mib(max(r["maxrss_kb"] for r in rs)), mw,
           _mib(max(r["tree_rss_max_kb"] for r in rs)), ""]
    other = {}
    for r in rs:
        for p in r["procs"].values():
            if p["role"] not in ("main", "worker"):
                other[p["role"]] = max(other.get(p["role"], 0), p["hwm_kb"])
    detail = [part, label, str(len(rs)), str(max(len(r["procs"]) for r in rs)),
              ", ".join(f"{k} {_mib(v)}" for k, v in other.items()) or "—",
              str(min(r["samples"] for r in rs))]
    return row, detail, m


def comparison_notes(cn: str, key: str, med: dict, ci: dict, one_files: int) -> str:
    """The comparison cell of mode ``key`` on corpus ``cn``: its speed against single process and
    against one dask worker, and on the tiny corpus the marginal ms per file over the fixed cost."""
    notes = []
    if key != "single" and (cn, "single") in med:
        x = med[(cn, "single")] / med[(cn, key)]
        notes.append(f"{x:.2f}× single process speed")
    if key.startswith("dask") and key != "dask1" and (cn, "dask1") in med:
        n = int(key[4:])
        x = med[(cn, "dask1")] / med[(cn, key)]
        notes.append(f"speed-up {x:.2f}× vs 1 worker ({100 * x / n:.0f} % of ideal)")
    if cn == "tiny" and ("one", key) in med:
        marg = (med[(cn, key)] - med[("one", key)]) / (ci["files"] - one_files)
        notes.append(f"marginal {1000 * marg:.2f} ms/file over the fixed cost")
    return "; ".join(notes)


def results_table(corpora: list[tuple[str, dict]], usable: list[tuple], runs: dict) -> tuple[list, dict, list]:
    """(the results rows (:data:`RESULTS_HEAD`), (corpus, mode key) → median wall s, the rows of the
    processes seen) over every corpus and mode."""
    c, t, o = (ci for _, ci in corpora)
    parts = {"corpus": f"scale corpus: {c['files']:,} files, {c['bytes'] / GiB:.2f} GiB",
             "tiny": f"per-file overhead: {t['files']:,} small files",
             "one": f"fixed cost: {o['files']} files"}
    table: list[list[str]] = []
    med: dict[tuple[str, str], float] = {}
    detail: list[list[str]] = []
    for cn, ci in corpora:
        for key, label, _, bad in usable:
            rs = [r for r in runs[(cn, key)] if r["completed"]]
            if bad or not rs:
                why = bad or (runs[(cn, key)][0]["error"] if runs[(cn, key)] else "not run")
                table.append([parts[cn], label, "—", "", "", "", "", "", "", "", "", why[:100]])
                continue
            row, drow, med[(cn, key)] = step_rows(parts[cn], label, cn, ci, rs)
            table.append(row)
            detail.append(drow)
    for cn, ci in corpora:  # comparisons, once every median is known
        for r in table:
            key = next((k for k, lab, _, _ in usable if lab == r[1]), None)
            if r[0] != parts[cn] or key is None or (cn, key) not in med:
                continue
            r[-1] = comparison_notes(cn, key, med, ci, o["files"])
    return table, med, detail


def say_method(say: Report, a: argparse.Namespace, modes: list[tuple], launcher_kb: int, limit_kb: int) -> None:
    """How the steps are run and measured (the launcher's peak and the memory limit in KiB)."""
    say()
    say("## Method")
    say()
    shown = "python -m analysis ingest" if not a.ingest_cmd else a.ingest_cmd
    say(f"- steps: `{shown} DIR --out OUT --no-progress` + {MODES_HELP} ({', '.join(m[1] for m in modes)}); "
        f"each a fresh process, {a.repeat} run(s) round-robin over the steps, OUT removed before each run; "
        f"median wall time (fork..wait4 of the CLI: start-up, imports, cluster start/stop, reading, writing) "
        f"and the max of each memory figure over the runs")
    say("- CPU s: user+sys of the CLI and of every descendant it reaped (os.wait4 rusage)")
    say(f"- peak RSS, largest process: ru_maxrss of os.wait4 on the CLI = max of its own peak and of every "
        f"reaped descendant's (RUSAGE_BOTH), the single largest process, not the tree; floored by this "
        f"launcher's own peak, {launcher_kb / 1024:.0f} MiB")
    say(f"- main; workers: VmHWM (kernel high-water mark) of each process of the CLI's tree, read from "
        f"/proc/<pid>/status every {a.poll:g} s (tree from /proc/*/stat ppid; workers = multiprocessing "
        f"spawn/forkserver children, listed largest first, max over runs per rank); tree Σ: the largest "
        f"sum of VmRSS over the tree at one sample (shared pages count once per process)")
    say(f"- MB/s = corpus bytes (10^6) / wall s; ms/file = wall / files; every corpus file read once "
        f"before timing (page cache warm); each mode run once untimed on `one` first; a step is killed "
        f"when its tree Σ passes {limit_kb / 2**20:.1f} GiB (--mem-limit-gb) or it runs {a.timeout:.0f} s")
    say()


def target_rows(usable: list[tuple], runs: dict, med: dict, corpus_bytes: int) -> list[list[str]]:
    """Issue 26's targets per non-dask mode on the scale corpus: speed, tree Σ, the CLI's own stage
    times, and against the default path before and the fastest --dask here."""
    trows = []
    dask_best = min((med[("corpus", k)] for k, _, _, _ in usable if k.startswith("dask") and ("corpus", k) in med),
                    default=None)
    for key, label, _, bad in usable:
        rs = [r for r in runs[("corpus", key)] if r["completed"]]
        if key.startswith("dask") or bad or not rs:
            continue
        m = med[("corpus", key)]
        mbps = corpus_bytes / 1e6 / m
        tree = max(r["tree_rss_max_kb"] for r in rs) / 1024
        st = [tuple(map(float, x.groups()[2:])) for r in rs if (x := _STAGES.search(r["stdout"]))]
        stages = (f"read {statistics.median(a_ for a_, _ in st):.1f} s, merge "
                  f"{statistics.median(b_ for _, b_ in st):.1f} s") if st else "—"
        trows.append([label, f"{mbps:,.0f} MB/s", "PASS" if mbps >= TARGET_MBPS else "MISS",
                      f"{tree:,.0f} MiB", "PASS" if tree <= TARGET_TREE_GIB * 1024 else "MISS", stages,
                      f"{BEFORE['tree_mib'] / tree:.1f}× less memory, {mbps / BEFORE['mbps']:.2f}× the MB/s",
                      f"{dask_best / m:.2f}× the speed" if dask_best else "—"])
    return trows


def say_targets(say: Report, trows: list[list[str]]) -> None:
    say("## Targets of the default path (issue 26)")
    say()
    say.table(["step", f"speed (target ≥ {TARGET_MBPS:.0f} MB/s)", "", "tree Σ peak (target ≤ "
               f"{TARGET_TREE_GIB:g} GiB)", "", "stages (CLI's own timing: read = the batches, their parts merged as "
               "they come back; merge = what is left after the last batch)",
               f"vs the default path of {BEFORE['date']} (--jobs 2: {BEFORE['mbps']} MB/s, tree Σ "
               f"{BEFORE['tree_mib']:,} MiB; another corpus build)", "vs the fastest --dask here"],
              trows, "llllllll")
    say()


def say_kinds(say: Report, workdir: Path) -> None:
    """Each kind timed in one process with one scanner thread (``--worker kinds``), its one-core MB/s
    and estimated share of the scale corpus' time; nothing when the worker wrote no result."""
    kres = Path(workdir) / ".kinds.json"
    print("(timing each kind in one process, one scanner thread …)", flush=True)
    subprocess.run([sys.executable, __file__, "--worker", "kinds", str(kres), str(workdir / "corpus")],
                   cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    if not kres.is_file():
        return
    kinds = json.loads(kres.read_text())
    krows, total = [], 0.0
    for k, (n, b, sec, nall, ball) in sorted(kinds.items(), key=lambda kv: -kv[1][4]):
        rate = b / 1e6 / sec if sec > 0 else float("inf")
        est = ball / 1e6 / rate if rate else 0.0
        total += est
        krows.append([k, f"{n:,} of {nall:,}", f"{b / 2**20:,.0f} MiB", f"{rate:,.1f}",
                      f"{ball / 2**20:,.0f} MiB", f"{est:,.1f}",
                      "PASS" if rate >= TARGET_MBPS / 2 else "MISS"])
    for r in krows:
        r.append(f"{100 * float(r[5].replace(',', '')) / total:.0f} %" if total else "")
    say(f"Where the time goes: each kind read by `scale.run_batch` (SHA-256, detection, reader, value "
        f"rules, campaign on every series row (other run keys once per file, in files), the batch's parts written as the default path writes them) in one process with one scanner thread, as one "
        f"pool worker reads a batch, on whole folders spread "
        f"over the corpus (≥ {KIND_SAMPLE_FILES} files; estimate = time × corpus bytes / bytes timed); a kind below {TARGET_MBPS / 2:.0f} MB/s per core keeps two cores under {TARGET_MBPS:.0f} MB/s. "
        f"Σ one-core estimate {total:,.0f} s for the whole corpus (÷ 2 cores ≈ {total / 2:,.0f} s, plus the merge's own CPU, which runs beside the reading).")
    say()
    say.table(["kind (by file name)", "files timed", "bytes timed", "MB/s (one core)", "bytes in corpus",
               "one-core s (estimate)", f"≥ {TARGET_MBPS / 2:.0f} MB/s", "share of the time"],
              krows, "lrrrrrlr")
    say()


def say_mix_and_processes(say: Report, real_kinds: dict, detail: list[list[str]]) -> None:
    """The scale corpus' mix by kind as ingest classified it, and the processes seen in each step's tree."""
    if real_kinds:
        say("Mix by kind as ingest classified it (files.parquet of the first mode's scale run): "
            + "; ".join(f"{k if k != 'None' else '(no kind: unrecognised/empty)'} {v[0]:,} files "
                        f"{v[1] / 2**20:,.0f} MiB" for k, v in sorted(real_kinds.items(), key=lambda kv: -kv[1][1])))
        say()
    if detail:
        say("Processes seen in the tree (other than main and workers: their peak VmHWM MiB):")
        say()
        say.table(["part", "step", "runs", "processes (max)", "other processes", "samples (min)"], detail, "llrrlr")
        say()


def write_markdown(out: Path, lines: list[str], appendix: list[str]) -> None:
    """The report and, after it, the parser benchmarks' own output."""
    out.parent.mkdir(parents=True, exist_ok=True)
    extra = ["", "## Appendix: the parser benchmarks' own output", "", *appendix] if appendix else []
    out.write_text("\n".join(lines + extra) + "\n")
    print(f"Markdown written to {out}")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends the running step too (run_step)
    workdir, raw = prepare_workdir(a)
    ingest_cmd = shlex.split(a.ingest_cmd) if a.ingest_cmd else [sys.executable, "-m", "analysis", "ingest"]
    modes = ingest_modes(a)
    command = shown_command(argv)
    say = Report()
    info = scale_machine_info()
    mem_avail, mem_total = meminfo()
    limit_kb = int((a.mem_limit_gb * GiB if a.mem_limit_gb else 0.85 * mem_total) / 1024)
    check_free_space(a, workdir)
    t0 = time.perf_counter()
    corp = build_corpora(a, raw, workdir)
    say_corpus(say, a, command, info, corp, workdir, raw, mem_avail)
    if a.build_only:
        return 0
    outroot, logs = workdir / "out", workdir / "logs"
    for d in (outroot, logs):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    ingest = IngestRunner(ingest_cmd, workdir, logs, a.poll, a.timeout, limit_kb)
    usable = warm_up(modes, ingest, outroot)
    corpora = [("corpus", corp["corpus"]), ("tiny", corp["tiny"]), ("one", corp["one"])]
    runs = measure(a.repeat, corpora, usable, ingest, outroot)
    import resource
    launcher_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    checks, real_kinds = correctness_rows(corpora, usable, runs, outroot, workdir)
    failed = any(r[2] == "FAIL" for r in checks)
    if not a.keep_outputs:
        shutil.rmtree(outroot, ignore_errors=True)
    table, med, detail = results_table(corpora, usable, runs)
    parser_notes, appendix = [], []
    if a.with_parsers:
        with tempfile.TemporaryDirectory(prefix="bench_scale.") as tmp:
            prow, parser_notes, appendix = run_parsers(a, Path(tmp))
        table += prow
        failed |= any("FAILED" in n or "failed" in n for n in parser_notes)
    say_method(say, a, modes, launcher_kb, limit_kb)
    say("## Correctness (same run)")
    say()
    say.table(["check", "values", "result"], checks, "lll")
    for n in parser_notes:
        say(f"- {n}")
    say()
    say("## Results")
    say()
    say.table(RESULTS_HEAD, table, "llrrrrrrrrrl")
    say()
    say_targets(say, target_rows(usable, runs, med, corp["corpus"]["bytes"]))
    say_kinds(say, workdir)
    say_mix_and_processes(say, real_kinds, detail)
    say(f"(exit status {1 if failed else 0}: 1 when a step or a correctness check failed; "
        f"{time.perf_counter() - t0:.0f} s in all)")
    if a.out:
        write_markdown(a.out, say.lines, appendix)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker" and sys.argv[2] == "kinds":
        _worker_kinds(sys.argv[4], sys.argv[3])
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--worker" and sys.argv[2] == "check":
        _worker_check(sys.argv[4:], sys.argv[3])
        sys.exit(0)
    sys.exit(main())

"""Each C piece of the ingest against its plain path (issue 49), on the data users have: the shipped
captures of ``data/raw`` read file by file, a 5M-line per-IO fio log made from a real fio run, and the whole
``--jobs 2`` ingest of ``data/raw``.  Prints a Markdown table (and writes it to ``--out``): per piece the
input, the median wall time of ``--repeat`` runs with the C part and with ``CEPHQOS_NATIVE=0``, the
speed-up, and whether both gave the same tables.

Run it alone on the machine (``make bench`` runs it after bench_scale).  Times are in-process
(``time.perf_counter`` around the reads, files read once before timing: page cache warm) except the
whole ingest, which is a fresh ``python -m analysis ingest`` process per run.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "data" / "raw"
sys.path.insert(0, str(ROOT))


def _files(pattern: str, exclude: str = "_superseded") -> list[Path]:
    return sorted(p for p in RAW.rglob(pattern) if exclude not in p.parts)


def _timed(fn, repeat: int, mode: str) -> tuple[float, object]:
    os.environ["CEPHQOS_NATIVE"] = mode
    fn()  # once untimed: imports, first calls, page cache
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _read_all(paths: list[Path]):
    """Each file read as the ingest reads it: one RunFolder per folder, so that a fio log's companion JSON is
    decoded once per folder, not once per log (a bare ``read(log)`` looks for its companion afresh)."""
    from analysis.ingest.detect import read
    from analysis.ingest.runfolder import RunFolder

    def run():
        out, folder = [], None
        for p in paths:
            if folder is None or not folder.holds(p):
                folder = RunFolder(p.parent)
            out.append(read(p, folder=folder))
        return out
    return run


def _digest(parsed) -> list:
    """What must be equal between the two paths: every summary and series value of every file."""
    out = []
    for p in parsed:
        s = p.summary
        out.append((len(s), np.nansum(s["value"].to_numpy(np.float64)) if len(s) else 0.0,
                    None if p.series is None else len(p.series),
                    None if p.series is None or not len(p.series) else
                    float(np.nansum(p.series["value"].to_numpy(np.float64)))))
    return out


def _big_fio_log(work: Path, lines: int) -> Path:
    """A per-IO clat log of ``lines`` lines: one real fio run (null engine, per-IO logging) repeated with its
    time column shifted, as bench_ingest builds its log."""
    run = work / "fio"
    run.mkdir(parents=True, exist_ok=True)
    subprocess.run(["fio", "--name=b", "--ioengine=null", "--size=1g", "--rw=randrw", "--bs=4k",
                    "--write_lat_log=b", "--log_avg_msec=0", "--number_ios=200000", "--output-format=json",
                    "--output=b.json"], cwd=run, check=True, capture_output=True)
    src = (run / "b_clat.1.log").read_text().splitlines(keepends=True)
    ts = [int(x.split(",", 1)[0]) for x in src]
    rest = [x[x.index(","):] for x in src]
    out = work / "big" / "b_clat.1.log"
    out.parent.mkdir(exist_ok=True)
    with open(out, "w") as f:
        n, k = 0, 0
        while n < lines:
            m = min(len(src), lines - n)
            f.write("".join(f"{t + k * (ts[-1] + 1)}{r}" for t, r in zip(ts[:m], rest[:m])))
            n, k = n + m, k + 1
    return out


def _ingest(out: Path, mode: str) -> float:
    env = {**os.environ, "CEPHQOS_NATIVE": mode}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "analysis", "ingest", str(RAW), "--out", str(out), "--no-progress",
                    "--jobs", "2"], cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lines", type=int, default=5_000_000, help="lines of the per-IO fio log")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (Markdown)")
    ap.add_argument("--no-ingest", action="store_true", help="skip the whole-ingest rows")
    a = ap.parse_args(argv)
    from analysis.ingest import _native, blktrace
    if _native.library("_cscan") is None:
        print("no C part here: nothing to compare", file=sys.stderr)
        return 2
    rows: list[list[str]] = []

    def piece(name: str, what: str, fn, same=_digest):
        c, oc = _timed(fn, a.repeat, "1")
        p, op = _timed(fn, a.repeat, "0")
        equal = same(oc) == same(op)
        rows.append([name, what, f"{c:.3f}", f"{p:.3f}", f"{p / c:.2f}×", "yes" if equal else "**NO**"])
        print(" | ".join(rows[-1]), flush=True)

    def size(paths):
        b = sum(len(gzip.decompress(p.read_bytes())) if p.suffix == ".gz" else p.stat().st_size for p in paths)
        return f"{len(paths):,} files, {b / 2**20:,.1f} MiB"

    with tempfile.TemporaryDirectory(prefix="bench-native-") as tmp:
        work = Path(tmp)
        big = _big_fio_log(work, a.lines)
        piece("fio log scanner (`parse_fio_log`)", f"per-IO clat log, {a.lines:,} lines, "
              f"{big.stat().st_size / 2**20:,.1f} MiB", _read_all([big]))
        logs = [p for p in _files("*_*.log.gz") if "_hist" not in p.name
                and p.name.split("_")[-1].split(".")[0] in ("lat", "clat", "slat", "iops", "bw")]
        piece("fio log scanner (`parse_fio_log`)", f"shipped fio logs: {size(logs)}", _read_all(logs))
        hist = _files("*_hist.*.log.gz")
        piece("histogram scanner (`parse_rows`; percentiles in numpy since issue 49)",
              f"shipped histogram logs: {size(hist)}", _read_all(hist))
        tl = _files("timeline.jsonl.gz")
        piece("PG timeline (`pg_lines`, `pg_rows`)", f"shipped timelines: {size(tl)}", _read_all(tl))
        traces = _files("*.blktrace.gz")
        piece("block traces (`blk_chain`, `blk_gather`, `blk_events`, `blk_asof`)",
              f"shipped traces: {size(traces)}", _read_all(traces))
        # blk_asof alone: the C path with pandas.merge_asof in its place
        real = blktrace.asof_join
        t_c, _ = _timed(_read_all(traces), a.repeat, "1")
        blktrace.asof_join = blktrace.asof_join_pandas
        try:
            t_p, _ = _timed(_read_all(traces), a.repeat, "1")
        finally:
            blktrace.asof_join = real
        rows.append(["… `blk_asof` alone vs `pandas.merge_asof` (rest in C)", "the same traces", f"{t_c:.3f}",
                     f"{t_p:.3f}", f"{t_p / t_c:.2f}×", "(tested equal: tests/test_blktrace.py)"])
        print(" | ".join(rows[-1]), flush=True)
        rados = [p for p in _files("*.txt.gz") if p.name in ("seq.txt.gz", "write.txt.gz", "rand.txt.gz")]
        piece("rados bench (no C since issue 49)", f"shipped outputs: {size(rados)}", _read_all(rados))
        if not a.no_ingest:
            ing = [[_ingest(work / f"o{m}{i}", m) for i in range(a.repeat)] for m in ("1", "0")]
            c, p = statistics.median(ing[0]), statistics.median(ing[1])
            import pandas as pd
            eq = all((work / "o10" / f"{t}.parquet").read_bytes() == (work / "o00" / f"{t}.parquet").read_bytes()
                     for t in ("files", "summary", "series", "blk_requests"))
            mb = sum(p.stat().st_size for p in RAW.rglob("*") if p.is_file()) / 1e6
            rows.append(["whole ingest, `--jobs 2`, fresh process", f"data/raw: {mb:,.0f} MB as stored",
                         f"{c:.2f}", f"{p:.2f}", f"{p / c:.2f}×", "yes (bytes)" if eq else "**NO**"])
            print(" | ".join(rows[-1]), flush=True)
            del pd
    head = ["piece (C)", "input", "C s", "plain s", "plain / C", "same tables"]
    lines = [f"# C pieces against their plain paths ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"- machine: nproc {os.cpu_count()}, {platform.processor() or platform.machine()}, "
             f"Python {platform.python_version()}; command: `.venv/bin/python bench/bench_native.py "
             f"--repeat {a.repeat}`; median of {a.repeat} runs each, page cache warm", "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        tmp = a.out.with_name(f".{a.out.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, a.out)
    return 0 if all(r[-1] != "**NO**" for r in rows) else 1


def _once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Block-trace ingest speed: our per-IO table vs blkparse's text rendering vs btt, same trace, one run.

The input is a real capture — by default the largest ``trace*.blktrace.gz`` under ``data/raw/block``
(binary ``blk_io_trace`` v7 records written by the kernel's ``blk`` ftrace tracer) — replicated to at
least ``--events`` records: copy k has its record times shifted by k × (the capture's span + 1 ms), so
the stream stays time-ordered and every copy's requests stay intact.  Steps, each in a fresh process,
``--repeat`` times round-robin (median wall time and max peak RSS reported):

* **ours**: ``analysis.ingest.blktrace.parse(path)`` → per-request and per-bio tables, Q2C/D2C/Q2D and
  the summary (what ``analysis.ingest.read`` does for this kind below 256 MiB: the file read a block of
  32 MiB at a time, reading included), timed around the call;
* **blkparse**: ``blkparse -i - -o /dev/null < trace`` (blktrace 1.2: decode, sort and render every
  event as text — the text that a text-based pipeline would then have to parse);
* **btt**: ``btt -i dump.bin -o <tmp>`` on the same events dumped by ``blkparse -d`` (btt reads only
  that format); the dump is made once, untimed.

Correctness in the same run: our completed count equals blkparse's "Reads/Writes Completed" and our
Q2C/D2C means equal btt's "All Devices" averages within 1 %.  Targets (issue 26): ours ≥ 4× faster than
blkparse with peak RSS ≤ 1.5× the trace size — reported for ``parse`` (the trace read a block at a time;
its event columns, 56 B per event, and tables grow with the trace) and for the bounded ``parse_stream`` that ingest uses from 256 MiB — and at least as
fast as btt (which reads blkparse's pre-sorted dump).  Exit status 1 only if a correctness check fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def largest_trace() -> Path:
    cands = sorted((ROOT / "data" / "raw" / "block").rglob("trace*.blktrace.gz"), key=lambda p: p.stat().st_size)
    if not cands:
        raise SystemExit("no trace*.blktrace.gz under data/raw/block: give --source")
    return cands[-1]


def replicate(src: Path, n_events: int, out: Path) -> dict:
    from analysis.ingest import blktrace as bt
    raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    buf = np.frombuffer(raw, dtype=np.uint8)
    order = bt.byte_order(src, raw)
    starts = bt.record_offsets(src, buf, order)
    ends = np.append(starts[1:], len(raw))
    if ends[-1] != len(raw) or starts[0] != 0:
        raise SystemExit(f"{src}: records do not tile the file")
    t = np.array([int.from_bytes(raw[s + 8:s + 16], "little" if order == "<" else "big") for s in starts[[0, -1]]])
    shift = int(t[1] - t[0]) + 1_000_000
    act = buf[starts[:, None] + 28 + np.arange(4)].copy().view(np.dtype(order + "u4")).ravel()
    events = int((act & np.uint32(0x400 << 16) == 0).sum())  # notify records (process names, BFQ messages) aside
    copies = -(-n_events // events)
    time_at = starts + 8  # the u64 time of every record
    sector_at = starts + 16  # ... and its u64 sector
    dt = np.dtype(order + "u8")
    sec = buf[sector_at[:, None] + np.arange(8)].copy().view(dt).ravel()
    real = sec < (1 << 40)  # not a notify record's filler
    sshift = int(sec[real].max()) + (1 << 20) if real.any() else 0
    with open(out, "wb") as f:
        for k in range(copies):
            b = bytearray(raw)
            arr = np.frombuffer(b, dtype=np.uint8)
            tv = arr[time_at[:, None] + np.arange(8)].copy().view(dt).ravel() + np.uint64(k * shift)
            arr[time_at[:, None] + np.arange(8)] = tv.astype(dt).view(np.uint8).reshape(-1, 8)
            sv = sec.copy()
            sv[real] += np.uint64(k * sshift)
            arr[sector_at[:, None] + np.arange(8)] = sv.astype(dt).view(np.uint8).reshape(-1, 8)
            f.write(b)
    return {"source": str(src.relative_to(ROOT)) if src.is_relative_to(ROOT) else str(src),
            "source_records": int(len(starts)), "source_events": events, "source_bytes": len(raw), "copies": copies,
            "events": copies * events,
            "records": int(copies * len(starts)), "bytes": out.stat().st_size, "shift_ns": shift,
            "shift_sectors": sshift}


# ---------------------------------------------------------------------------------------------- workers
def worker(step: str, path: str, res_path: str) -> None:
    res: dict = {}
    if step == "ours":
        from analysis.ingest import blktrace as bt
        res["rss_start_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        parsed = bt.parse(Path(path))  # as analysis.ingest.read calls it: the file read a block at a time
        res["call_s"] = time.perf_counter() - t0
        res["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        s, bios = parsed.summary, parsed.tables["bios"]
        res["completed"] = float(len(parsed.tables["requests"]))  # one row per C event
        res.update({f"{k}_mean": float(bios[f"{k}_ns"].mean()) for k in ("q2c", "d2c", "q2d")})  # per bio, as btt
        res["events"] = float(s[(s["metric"] == "events") & (s["job"] != "all")]["value"].sum())
        res["requests_rows"] = int(len(parsed.tables["requests"]))
        res["summary"] = _summary_values(parsed)
    elif step == "stream":  # bounded memory: the request rows go to a sink (here: counted, dropped)
        from analysis.ingest import blktrace as bt

        class Sink:
            rows = 0

            def __call__(self, frame):
                pass

            def requests(self, frame):
                Sink.rows += len(frame)
        res["rss_start_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        parsed = bt.parse_stream(Path(path), Sink())
        res["call_s"] = time.perf_counter() - t0
        res["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        res["completed"] = float(Sink.rows)
        res["bounds"] = parsed.meta["stream_bounds"]
        res["summary"] = _summary_values(parsed)
    Path(res_path).write_text(json.dumps(res))


def _summary_values(parsed) -> dict[str, float | None]:
    s = parsed.summary
    return {f"{j}|{d}|{m}": (None if v != v else float(v))
            for j, d, m, v in zip(s["job"].astype(str), s["ddir"].astype(str), s["metric"].astype(str), s["value"])}


def _same_summary(a: dict, b: dict) -> bool:
    """Equal keys; values equal, within 1e-9 relative for means (merged per step), NaN as NaN."""
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if (x is None) != (y is None):
            return False
        if x is not None and abs(x - y) > 1e-9 * max(abs(x), abs(y), 1.0):
            return False
    return True


def timed_child(argv: list[str], cwd: Path, stdin: Path | None = None, stdout: Path | None = None) -> dict:
    """Run argv (stdout to a file or discarded), return wall time, CPU and peak RSS (from wait4)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    fout = open(stdout, "wb") if stdout else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    for f in (fin, fout):
        if f is not subprocess.DEVNULL:
            f.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed: {err.decode()[-400:]}")
    return {"process_s": wall, "rss_kb": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime}


def blkparse_completed(text_file: Path) -> int:
    """Reads + Writes Completed over the devices of blkparse's summary (the text after its events)."""
    from analysis.ingest import blkparse as bp
    with open(text_file, "rb") as f:
        f.seek(max(0, text_file.stat().st_size - (1 << 20)))
        tail = f.read()
    at = tail.find(b"\nCPU")
    parsed = bp.parse(Path("blkparse-summary.txt"), tail[at + 1:])
    s = parsed.summary
    return int(s[(s["metric"] == "completed") & s["ddir"].isin(["read", "write"])]["value"].sum())


OURS = "ours: analysis.ingest.blktrace.parse"
STREAM = "ours, bounded memory: blktrace.parse_stream (request rows to a sink)"
BLKPARSE = "blkparse -i - -o /dev/null"
BTT = "btt -i dump.bin"
BTT_INPUT = "blkparse -i - -O -d dump.bin (btt's input)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=3_000_000, help="records after replication (default 3M)")
    ap.add_argument("--source", type=Path, default=None, help="a binary trace (.gz ok); default: largest shipped")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the tables as Markdown here")
    ap.add_argument("--worker", nargs=3, metavar=("STEP", "PATH", "RESULT"), help=argparse.SUPPRESS)
    ap.add_argument("--replicate-to", nargs=2, metavar=("OUT", "INFO"), help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def build_input(a: argparse.Namespace, work: Path, trace: Path) -> dict:
    """Replicate the source trace to ``trace`` in a child (``--replicate-to``) and print what it is;
    its info (records, events, bytes, copies, source)."""
    t0 = time.time()
    # A child's peak RSS (wait4's ru_maxrss) starts at what its parent had resident when it forked,
    # so this launcher never holds the trace: the copy is built, and the page cache warmed, by children.
    src = [] if a.source is None else ["--source", str(a.source)]
    subprocess.run([sys.executable, __file__, "--events", str(a.events), *src, "--replicate-to", str(trace),
                    str(work / "info.json")], check=True)
    info = json.loads((work / "info.json").read_text())
    print(f"input: {info['source']} ({info['source_records']:,} records, {info['source_events']:,} events) × "
          f"{info['copies']} = {info['records']:,} records ({info['events']:,} events), {info['bytes'] / 2**20:.1f} MiB ({time.time() - t0:.1f} s to build)")
    return info


def step_commands(work: Path, trace: Path, dump: Path) -> dict[str, list[str]]:
    """Step name → its command line (ours: without the result file the worker writes)."""
    return {
        OURS: [sys.executable, __file__, "--worker", "ours", str(trace)],
        STREAM: [sys.executable, __file__, "--worker", "stream", str(trace)],
        BLKPARSE: ["blkparse", "-i", "-", "-o", "/dev/null"],
        BTT: ["btt", "-i", str(dump)],
        BTT_INPUT: ["blkparse", "-i", "-", "-O", "-d", str(work / "dump2.bin")],
    }


def run_steps(steps: dict[str, list[str]], work: Path, trace: Path, repeat: int) -> dict[str, list[dict]]:
    """Every step ``repeat`` times round-robin, each a timed child; step name → its runs (process s,
    CPU s, peak RSS KiB, and for ours what the worker measured)."""
    results: dict[str, list[dict]] = {k: [] for k in steps}
    for rep in range(repeat):
        for name, cmd in steps.items():
            if name.startswith("ours"):
                resf = work / f"ours-{rep}-{len(results[name])}-{'stream' if 'stream' in name else 'parse'}.json"
                r = timed_child(cmd + [str(resf)], work)
                r.update(json.loads(resf.read_text()))
            elif name.startswith("blkparse"):  # both blkparse steps read the stream on stdin
                r = timed_child(cmd, work, stdin=trace)
            else:
                r = timed_child(cmd, work, stdout=work / "btt.txt")
            results[name].append(r)
    return results


def correctness_checks(work: Path, results: dict[str, list[dict]]) -> list[tuple]:
    """(check, ours, reference, ok) of the first runs against blkparse's and btt's output, same run."""
    ours = results[OURS]
    from analysis.ingest import btt as bttmod
    bt_sum = bttmod.parse(work / "btt.txt", (work / "btt.txt").read_bytes()).summary
    bt_all = bt_sum[bt_sum["job"] == "all"].set_index("metric")["value"]
    n_bp = blkparse_completed(work / "blkparse.txt")
    checks = [("completed == blkparse's Reads+Writes Completed", ours[0]["completed"], n_bp,
               ours[0]["completed"] == n_bp)]
    for m in ("q2c_mean", "d2c_mean"):
        key = m.split("_")[0].upper()
        ref = float(bt_all[m]) if m in bt_all.index else None
        ok = ref is not None and abs(ours[0][m] - ref) <= 0.01 * ref
        checks.append((f"{key} mean within 1 % of btt's", ours[0][m], ref, ok))
    st = results[STREAM][0]
    checks.append(("parse_stream: completed == parse's, no window bound hit", st["completed"],
                   ours[0]["completed"], st["completed"] == ours[0]["completed"] and not st["bounds"]))
    checks.append(("parse_stream: every summary value == parse's (means 1e-9 rel.)",
                   float(len(st["summary"])), float(len(ours[0]["summary"])),
                   _same_summary(st["summary"], ours[0]["summary"])))
    return checks


def _median(results: dict[str, list[dict]], name: str, key: str) -> float:
    return statistics.median(r[key] for r in results[name])


def timing_lines(results: dict[str, list[dict]], repeat: int) -> list[str]:
    """The Markdown table of every step: process s (median, min–max), CPU s, peak RSS MiB."""
    lines = ["| step | process s (median of %d) | min–max | CPU s | peak RSS MiB |" % repeat,
             "|---|---:|---:|---:|---:|"]
    for name, rs in results.items():
        lines.append(f"| {name} | {_median(results, name, 'process_s'):.3f} | {min(r['process_s'] for r in rs):.3f}–"
                     f"{max(r['process_s'] for r in rs):.3f} | {_median(results, name, 'cpu_s'):.3f} | "
                     f"{max(r['rss_kb'] for r in rs) / 1024:.0f} |")
    return lines


def target_lines(results: dict[str, list[dict]], trace_mib: float) -> list[str]:
    """The Markdown table of issue 26's targets (process-time ratios, peak RSS / trace size in MiB) and
    the line on the parse call alone."""
    ours = results[OURS]
    o = _median(results, OURS, "process_s")
    oc = statistics.median(r["call_s"] for r in ours)
    bpt, btt_t = _median(results, BLKPARSE, "process_s"), _median(results, BTT, "process_s")
    pipe = btt_t + _median(results, BTT_INPUT, "process_s")
    so = _median(results, STREAM, "process_s")

    def rss_ratio(name):
        return max(r["rss_kb"] for r in results[name]) / 1024 / trace_mib
    rp, rs_ = rss_ratio(OURS), rss_ratio(STREAM)
    return ["", "| comparison | target (issue 26) | ratio (process time, peak RSS) | verdict |",
            "|---|---|---:|---|",
            f"| ours (parse) vs blkparse text rendering | ≥ 4× faster | {bpt / o:.2f}× faster | "
            f"{'PASS' if bpt / o >= 4 else 'MISS'} |",
            f"| ours (parse_stream) vs blkparse text rendering | ≥ 4× faster | {bpt / so:.2f}× faster | "
            f"{'PASS' if bpt / so >= 4 else 'MISS'} |",
            f"| ours (parse): peak RSS / trace size | ≤ 1.5× | {rp:.2f}× | {'PASS' if rp <= 1.5 else 'MISS'} |",
            f"| ours (parse_stream): peak RSS / trace size | ≤ 1.5× | {rs_:.2f}× | "
            f"{'PASS' if rs_ <= 1.5 else 'MISS'} |",
            f"| blkparse: peak RSS / trace size | (information) | "
            f"{rss_ratio(BLKPARSE):.2f}× | |",
            f"| ours vs btt (Q2C/D2C) | at least as fast | {btt_t / o:.2f}× faster | "
            f"{'PASS' if btt_t / o >= 1 else 'MISS'} |",
            f"| ours vs btt's pipeline from the raw stream (blkparse -O -d, then btt) | (information) | "
            f"{pipe / o:.2f}× faster | |",
            "", f"ours, the parse call alone (after interpreter start and imports): {oc:.3f} s median; "
            f"{ours[0]['requests_rows']:,} requests; {int(ours[0]['events']):,} events counted."]


def report_header(info: dict, floor_kb: int) -> str:
    """The paragraph above the tables: input, machine, date, load, the peak-RSS floor (KiB)."""
    return (f"Input: {info['records']:,} records, {info['events']:,} of them events (not notify records), "
            f"{info['bytes'] / 2**20:.1f} MiB = {info['copies']} copies of "
            f"{info['source']} ({info['source_records']:,} records). Machine: nproc {os.cpu_count()}, "
            f"{time.strftime('%Y-%m-%d %H:%M %Z')}, load {open('/proc/loadavg').read().split()[:3]}. "
            f"Peak RSS: each step's process (wait4), which starts at what this launcher had resident when "
            f"it forked ({floor_kb / 1024:.0f} MiB at most).")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.worker:
        worker(*a.worker)
        return 0
    if a.replicate_to:  # in a child: the launcher must stay small (see build_input)
        info = replicate(a.source or largest_trace(), a.events, Path(a.replicate_to[0]))
        Path(a.replicate_to[1]).write_text(json.dumps(info))
        return 0
    for tool in ("blkparse", "btt"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found: `make tools` installs Debian's blktrace package (as root)")
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-blktrace-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        trace = work / "trace.bin"
        info = build_input(a, work, trace)
        dump = work / "dump.bin"
        timed_child(["blkparse", "-i", "-", "-d", str(dump)], work, stdin=trace, stdout=work / "blkparse.txt")
        subprocess.run(["cat", str(trace), str(dump)], stdout=subprocess.DEVNULL, check=True)  # page cache warm
        floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results = run_steps(step_commands(work, trace, dump), work, trace, a.repeat)
        checks = correctness_checks(work, results)
        lines = timing_lines(results, a.repeat) + target_lines(results, info["bytes"] / 2**20)
        lines += ["", "| correctness check | ours | reference | ok |", "|---|---:|---:|---|"]
        lines += [f"| {c} | {x:,.1f} | {y if y is None else f'{y:,.1f}'} | {'yes' if ok else 'NO'} |"
                  for c, x, y, ok in checks]
        text = report_header(info, floor) + "\n\n" + "\n".join(lines) + "\n"
        print(text)
        if a.out:
            a.out.write_text(text)
        return 0 if all(c[3] for c in checks) else 1
    finally:
        if a.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

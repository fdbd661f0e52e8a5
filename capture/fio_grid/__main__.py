"""A fio grid laid out as fio-plot's ``bench_fio`` writes it, on two loop devices that really differ.

``python -m capture.fio_grid pilot OUT``  : the pilot (``OUT/pilot.json``: GO / NO-GO, exit 1 on NO-GO)
``python -m capture.fio_grid run OUT --pilot P`` : the grid, only after a GO pilot

Targets: two 256 MiB loop devices, one over a file on the VM's disk (``--direct-io=on``: every IO goes to
the virtual disk), one over a file in ``/dev/shm`` (tmpfs: memory copies).  They are reached through
symlinks named ``loop-disk`` and ``loop-shm``, so bench_fio's folder (``basename(target)``) names them.
Layout: ``OUT/<target>/<bs>[/run-N]/<mode>-<iodepth>-<numjobs>.json`` plus the job's bw/lat/iops logs
(bench_fio's template, ``log_avg_msec`` 1000); options on the command line as bench_fio passes them
(``--size --runtime --time_based --filename``).  Unlike bench_fio, each cell runs both targets back to back
in a random order (seeded), so a drift of the machine over the ~7 min is not confounded with the target.
Every file is gzipped (the ingest reads by content); ``sitting-<time>.json`` records the machine, the
loop devices and every run's time and load.  Root, fio and losetup needed; run it alone on the machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "template.fio"
LINKS = Path("/run/cephqos-fio-grid")
BACKING = {"loop-disk": Path("/var/tmp/cephqos-fio-grid/disk.img"),
           "loop-shm": Path("/dev/shm/cephqos-fio-grid/shm.img")}
SIZE_MIB = 256
RUNTIME_S = 3
BS = "4k"
MODES = ("randread", "randwrite")
IODEPTHS = (1, 2, 4, 8, 16, 32, 64)
NUMJOBS = (1, 2, 4)
REPEATED_NUMJOBS = (1,)  # these cells run twice (bench_fio --runs 2: run-1/, run-2/); the rest once
PILOT_CELLS = (("randread", 1, 1), ("randread", 32, 1), ("randwrite", 8, 1))
PILOT_RUNS = 3


def sh(*cmd: str, **kw) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[:500]}")
    return r.stdout.strip()


@contextmanager
def targets():
    """The two loop devices behind their symlinks; torn down on any exit.  Yields what each is."""
    loops: list[str] = []
    try:
        LINKS.mkdir(parents=True, exist_ok=True)
        info = {}
        for name, img in BACKING.items():
            img.parent.mkdir(parents=True, exist_ok=True)
            sh("dd", "if=/dev/urandom", f"of={img}", "bs=1M", f"count={SIZE_MIB}", "status=none")
            dio = ["--direct-io=on"] if name == "loop-disk" else []
            dev = sh("losetup", "-f", "--show", *dio, str(img))
            loops.append(dev)
            link = LINKS / name
            link.unlink(missing_ok=True)
            link.symlink_to(dev)
            q = Path("/sys/block") / Path(dev).name
            info[name] = {"link": str(link), "device": dev, "backing": str(img), "size_mib": SIZE_MIB,
                          "direct_io": (q / "loop/dio").read_text().strip(),
                          "scheduler": (q / "queue/scheduler").read_text().strip()}
        yield info
    finally:
        for dev in loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        for name, img in BACKING.items():
            (LINKS / name).unlink(missing_ok=True)
            img.unlink(missing_ok=True)


def run_cell(link: str, mode: str, iodepth: int, numjobs: int, outdir: Path, cwd: Path) -> dict:
    """One bench_fio benchmark: fio with the template, its env and bench_fio's command-line options."""
    outdir.mkdir(parents=True, exist_ok=True)
    rel = outdir.relative_to(cwd)
    out = rel / f"{mode}-{iodepth}-{numjobs}.json"
    env = {**os.environ, "MODE": mode, "BLOCK_SIZE": BS, "ENGINE": "libaio", "IODEPTH": str(iodepth),
           "NUMJOBS": str(numjobs), "DIRECT": "1", "INVALIDATE": "1", "LOOPS": "1", "OUTPUT": str(rel),
           "LOGINTERVAL": "1000", "TARGET": link}
    cmd = ["fio", "--output-format=json", f"--output={out}", str(TEMPLATE), f"--size={SIZE_MIB}M",
           f"--runtime={RUNTIME_S}", "--time_based", f"--filename={link}"]
    t0 = time.time()
    load0 = Path("/proc/loadavg").read_text().split()[0]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"fio failed ({out}): {r.stderr.strip()[:500]}")
    doc = json.loads((cwd / out).read_text())
    job = doc["jobs"][0]
    d = job["read" if mode.endswith("read") else "write"]
    return {"file": str(out), "start_unix": round(t0, 3), "seconds": round(time.time() - t0, 2),
            "loadavg_before": float(load0), "iops": d["iops"], "clat_mean_ns": d["clat_ns"]["mean"],
            "iodepth_level": job.get("iodepth_level")}


def machine() -> dict:
    return {"kernel": os.uname().release, "nproc": os.cpu_count(), "fio": sh("fio", "--version"),
            "captured": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "origin": "measured"}


def write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


def _power_n(sd_log: float, change: float = 0.10, alpha: float = 0.05, power: float = 0.8) -> int:
    """Runs per side for a two-sample t-test to detect a ``change`` (ratio) at this spread of log values."""
    from statsmodels.stats.power import TTestIndPower
    if sd_log <= 0:
        return 2
    d = abs(np.log1p(change)) / sd_log
    return int(np.ceil(TTestIndPower().solve_power(effect_size=d, alpha=alpha, power=power)))


def pilot(out: Path) -> int:
    """Each pilot cell PILOT_RUNS times on each target, interleaved.  GO when the targets differ beyond
    the noise in at least one cell (|log ratio| > 3 pooled sd) — the grid can show a real difference —
    and the slower target keeps its queue full at QD 32 (fio's iodepth_level: ≥ 90 % of the time at
    the set depth).  Records the repeats per side a 10 % change would need at the pilot's spread."""
    if out.exists():
        raise SystemExit(f"{out} exists: raw data is immutable; choose another folder")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(48)
    runs = []
    with targets() as info:
        for rep in range(1, PILOT_RUNS + 1):
            for mode, qd, nj in PILOT_CELLS:
                for name in rng.sample(sorted(info), 2):
                    r = run_cell(info[name]["link"], mode, qd, nj, tmp / name / BS / f"run-{rep}", tmp)
                    runs.append({"target": name, "mode": mode, "iodepth": qd, "numjobs": nj, "run": rep, **r})
                    print(f"pilot {name:9s} {mode:9s} qd{qd:<3d} run {rep}: {r['iops']:10.0f} IOPS", flush=True)
    cells, sds = [], []
    for mode, qd, nj in PILOT_CELLS:
        logs = {t: np.log([r["iops"] for r in runs if (r["target"], r["mode"], r["iodepth"]) == (t, mode, qd)])
                for t in BACKING}
        sd = float(np.sqrt(np.mean([v.var(ddof=1) for v in logs.values()])))
        sds.append(sd)
        ratio = float(np.exp(logs["loop-disk"].mean() - logs["loop-shm"].mean()))
        cells.append({"mode": mode, "iodepth": qd, "numjobs": nj, "disk_over_shm_iops": round(ratio, 4),
                      "pooled_sd_log": round(sd, 4), "differs": bool(abs(np.log(ratio)) > 3 * sd)})
    qd32 = [r for r in runs if r["iodepth"] == 32 and r["target"] == "loop-disk"]
    full = [float((r["iodepth_level"] or {}).get(">=64", 0)) + float((r["iodepth_level"] or {}).get("32", 0))
            for r in qd32]
    checks = {"targets_differ": any(c["differs"] for c in cells),
              "queue_full_at_qd32_pct": round(min(full), 1) if full else None}
    go = checks["targets_differ"] and (checks["queue_full_at_qd32_pct"] or 0) >= 90
    verdict = {"campaign": "fio-grid", "go": go, "checks": checks, "cells": cells,
               "repeats_for_10pct_change": _power_n(float(np.median(sds))),
               "note": "the grid's repeated cells run twice (bench_fio --runs 2) and the rest once, as users' grids "
                       "do: two runs cannot detect a 10 % change at this spread unless repeats_for_10pct_change ≤ 2; "
                       "the grid is for the differences between targets the pilot shows, and for one-run honesty",
               "machine": machine(), "targets": info, "runs": runs}
    tmp.mkdir(parents=True, exist_ok=True)
    write_json(tmp / "pilot.json", verdict)
    _gzip_outputs(tmp)
    os.replace(tmp, out)
    print(json.dumps({k: verdict[k] for k in ("go", "checks", "cells", "repeats_for_10pct_change")}, indent=1))
    return 0 if go else 1


def _gzip_outputs(root: Path) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".json", ".log") and p.name != "pilot.json" \
                and not p.name.startswith("sitting-"):
            with open(p, "rb") as f, open(p.with_name(p.name + ".gz"), "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as g:
                shutil.copyfileobj(f, g)
            p.unlink()


def run(out: Path, pilot_json: Path, seed: int = 48) -> int:
    v = json.loads(pilot_json.read_text())
    if not v.get("go"):
        raise SystemExit(f"{pilot_json}: the pilot said NO-GO ({v.get('checks')}): redesign, do not run")
    if out.exists():
        raise SystemExit(f"{out} exists: raw data is immutable; choose another folder")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(seed)
    plan = []
    for mode in MODES:
        for qd in IODEPTHS:
            for nj in NUMJOBS:
                reps = (1, 2) if nj in REPEATED_NUMJOBS else (None,)
                plan += [(mode, qd, nj, rep) for rep in reps]
    rng.shuffle(plan)
    runs = []
    t_start = time.time()
    with targets() as info:
        for i, (mode, qd, nj, rep) in enumerate(plan, 1):
            for name in rng.sample(sorted(info), 2):
                d = tmp / name / BS / (f"run-{rep}" if rep else "")
                r = run_cell(info[name]["link"], mode, qd, nj, d, tmp)
                runs.append({"target": name, "mode": mode, "iodepth": qd, "numjobs": nj, "run": rep, **r})
            print(f"{i}/{len(plan)} {mode} qd{qd} nj{nj} run {rep or '-'}: disk {runs[-2]['iops']:.0f} / "
                  f"shm {runs[-1]['iops']:.0f} IOPS", flush=True)
        for p in tmp.rglob("*.log"):
            if p.stat().st_size == 0:
                p.unlink()  # a log fio left empty
        write_json(tmp / f"sitting-{time.strftime('%Y%m%dT%H%M%S')}.json",
                   {"campaign": "fio-grid", "pilot": str(pilot_json), "seed": seed, "machine": machine(),
                    "targets": info, "layout": "bench_fio: <target>/<bs>[/run-N]/<mode>-<iodepth>-<numjobs>.json",
                    "wall_s": round(time.time() - t_start, 1), "runs": runs})
    _gzip_outputs(tmp)
    os.replace(tmp, out)
    print(f"wrote {out}: {len(runs)} runs in {time.time() - t_start:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capture.fio_grid", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pilot")
    p.add_argument("out", type=Path)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--pilot", type=Path, required=True)
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("needs root (losetup)")
    if shutil.which("fio") is None:
        raise SystemExit("fio missing: apt-get install fio (make tools)")
    return pilot(a.out) if a.cmd == "pilot" else run(a.out, a.pilot)


if __name__ == "__main__":
    sys.exit(main())

"""The attempt loop every capture harness shares: do the runs not yet done, redo a failed or disturbed
run (up to 3 attempts, each thrown-away attempt kept in the kept run's ``earlier_attempts``), stop
before a run that would start past the deadline, and record the sitting.

A runner provides ``one(run) -> info`` (``info["cpu"]["outside_cpu_frac"]`` is the share of a CPU taken
by work outside the benchmark), ``finish(run, info) -> Path`` and ``discard(run)``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable

ATTEMPTS = 3


def do_runs(todo: Iterable[Any], runner: Any, *, threshold: float, deadline: float | None,
            log: Callable[[str], None], errors: tuple[type[BaseException], ...],
            sitting: dict[str, Any], summary: Callable[[dict[str, Any]], tuple[dict[str, Any], str]],
            after_failure: Callable[[], None] | None = None,
            block: Callable[[Any], Any] | None = None) -> None:
    """``summary(info)`` → (fields for the sitting record, text for the log line) of a kept run;
    ``after_failure`` runs after a failed attempt (e.g. wait until the cluster is clean again);
    ``block(run)``: the comparison block a run belongs to — past the deadline the sitting still finishes
    the block it is in, so a block is never split between sittings (each bring-up is a new cluster), and
    its first block runs whatever the budget (the bring-up and warm-up before it are already spent)."""
    prev = None
    for run in todo:
        if deadline and time.time() > deadline:
            if block is None or (prev is not None and block(run) != block(prev)):
                log("time budget reached: stopping before the next run (resume later)")
                break
            log(f"time budget reached: finishing block {block(run)} first (a block stays in one sitting"
                + (", and a sitting runs at least one)" if prev is None else ")"))
        prev = run
        earlier: list[dict[str, Any]] = []
        for attempt in range(1, ATTEMPTS + 1):
            log(f"run {run.order} {run.relpath} (attempt {attempt})")
            try:
                info = runner.one(run)
            except errors as e:
                log(f"  FAILED: {e}")
                runner.discard(run)
                sitting["runs"].append({"run": run.relpath, "status": "failed", "error": str(e)[:500]})
                earlier.append({"attempt": attempt, "status": "failed", "error": str(e)[:500]})
                if after_failure is not None:
                    after_failure()
                continue
            cpu = info["cpu"]
            if cpu["outside_cpu_frac"] > threshold:
                log(f"  disturbed: {cpu['outside_cpu_s']:.1f} CPU s outside the benchmark "
                    f"({cpu['outside_cpu_frac']:.2f} of a CPU > {threshold}); redoing")
                runner.discard(run)
                sitting["runs"].append({"run": run.relpath, "status": "disturbed", "cpu": cpu})
                earlier.append({"attempt": attempt, "status": "disturbed", "cpu": cpu})
                continue
            info["attempt"] = attempt
            info["earlier_attempts"] = earlier
            dest = runner.finish(run, info)
            fields, text = summary(info)
            sitting["runs"].append({"run": run.relpath, "status": "done", **fields})
            log(f"  done → {dest}; {text}")
            break


def write_record(root: Path, record: dict[str, Any]) -> Path:
    """The sitting's record, ended now: ``root/sitting-<start of writing>.json`` (temp file, then rename:
    a capture killed while writing leaves no half record for ingest to read as context)."""
    record["ended"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    root.mkdir(parents=True, exist_ok=True)
    dest = root / f"sitting-{time.strftime('%Y%m%dT%H%M%S')}.json"
    tmp = root / f".{dest.name}.tmp-{os.getpid()}"
    try:
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest

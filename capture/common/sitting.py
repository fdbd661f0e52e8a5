"""One sitting of a capture harness: the attempt loop (do the runs not yet done, redo a failed or
disturbed run up to 3 attempts, each thrown-away attempt kept in the kept run's ``earlier_attempts``,
stop before a run that would start past the deadline), the frame around it (SIGTERM as an interrupt;
whatever happens, the runner's teardown and the sitting's record), and the progress lines.

A runner provides ``one(run) -> info`` (``info["cpu"]["outside_cpu_frac"]`` is the share of a CPU taken
by work outside the benchmark), ``finish(run, info) -> Path`` and ``discard(run)``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from .campaign import INPROGRESS, discard_run, finish_run, remaining

ATTEMPTS = 3


def log_progress(msg: str) -> None:
    """A progress line on stdout, prefixed with the wall-clock time (HH:MM:SS)."""
    print(time.strftime("%H:%M:%S"), msg, flush=True)


class KeptUnderRoot:
    """A runner's ``finish`` and ``discard`` (module docstring) for runs kept under ``self.root``:
    :func:`capture.common.campaign.finish_run` and ``discard_run``; its progress lines go to ``self.log``
    (:func:`log_progress` unless the runner sets its own)."""

    root: Path
    log: Callable[[str], None] = staticmethod(log_progress)

    def finish(self, run: Any, info: dict[str, Any]) -> Path:
        return finish_run(self.root, run, info, self.log)

    def discard(self, run: Any) -> None:
        discard_run(self.root, run)


def now_stamp() -> str:
    """Local time as the sitting records and run.json files write it (ISO 8601 with the UTC offset)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def deadline_after(max_minutes: float | None) -> float | None:
    """Unix time ``max_minutes`` from now, or None (no time budget) when it is None or 0."""
    return time.time() + max_minutes * 60 if max_minutes else None


def to_do(root: Path, runs: list[Any], max_runs: int | None, log: Callable[[str], None]) -> list[Any]:
    """The planned ``runs`` not yet done under ``root``, the first ``max_runs`` of them if given; an empty
    list (saying so) when there is nothing to do."""
    todo = remaining(root, runs)
    if max_runs is not None:
        todo = todo[:max_runs]
    if not todo:
        log("nothing to do: every run has its done marker")
    return todo


def clear_stage(root: Path, log: Callable[[str], None]) -> None:
    """Remove ``<root>/_inprogress`` (half-finished runs of an earlier sitting), saying so."""
    if (root / INPROGRESS).exists():
        log(f"removing half-finished runs from an earlier sitting: {root / INPROGRESS}")
        shutil.rmtree(root / INPROGRESS)


def interrupt_on_sigterm(reason: str | None = None) -> None:
    """From now on SIGTERM raises KeyboardInterrupt (``reason``, default ``signal <n>``), so a killed sitting
    still tears down and writes its record."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}" if reason is None else reason)
    signal.signal(signal.SIGTERM, on_signal)


def guarded(work: Callable[[], None], *, close: Callable[[], None], root: Path, record: dict[str, Any],
            log: Callable[[str], None], undoing: str = "tearing down", interrupts: bool = True,
            errors: bool = True, after: Callable[[], None] | None = None) -> int:
    """Run ``work`` (bring-up and the runs), then always ``close`` (teardown), write the sitting ``record``
    under ``root`` and call ``after`` (the closing progress line).  An interrupt (``interrupts``) or any
    other error (``errors``) is logged with ``undoing`` (what ``close`` undoes) instead of raised.
    → 0, 130 after an interrupt, 1 after an error."""
    rc = 0
    try:
        work()
    except KeyboardInterrupt as e:
        if not interrupts:
            raise
        log(f"interrupted ({e}); {undoing}")
        rc = 130
    except Exception as e:
        if not errors:
            raise
        log(f"ERROR: {type(e).__name__}: {e}; {undoing}")
        rc = 1
    finally:
        close()
        write_record(root, record)  # sitting-*.json: the capture's record, context for ingest
        if after is not None:
            after()
    return rc


def log_runs_left(root: Path, runs: list[Any], log: Callable[[str], None]) -> None:
    """``<done>/<planned> runs done; <n> to do`` for a campaign of planned runs."""
    left = remaining(root, runs)
    log(f"{len(runs) - len(left)}/{len(runs)} runs done; {len(left)} to do")


def log_arms_left(arms: list[str], left: list[str], log: Callable[[str], None]) -> None:
    """``<done>/<planned> arms done[; to do: …]`` for a sitting of one CBT invocation per arm."""
    log(f"{len(arms) - len(left)}/{len(arms)} arms done" + (f"; to do: {', '.join(left)}" if left else ""))


def do_runs(todo: Iterable[Any], runner: Any, *, threshold: float, deadline: float | None,
            log: Callable[[str], None], errors: tuple[type[BaseException], ...],
            sitting: dict[str, Any], summary: Callable[[dict[str, Any]], tuple[dict[str, Any], str]],
            after_failure: Callable[[], None] | None = None,
            block: Callable[[Any], Any] | None = None,
            before_block: Callable[[Any], None] | None = None) -> None:
    """``summary(info)`` → (fields for the sitting record, text for the log line) of a kept run;
    ``after_failure`` runs after a failed attempt (e.g. wait until the cluster is clean again);
    ``block(run)``: the comparison block a run belongs to — past the deadline the sitting still finishes
    the block it is in, so a block is never split between sittings (each bring-up is a new cluster), and
    its first block runs whatever the budget (the bring-up and warm-up before it are already spent);
    ``before_block(run)`` runs before the first run of each block (e.g. a discarded warm-up run)."""
    prev = None
    for run in todo:
        if deadline and time.time() > deadline:
            if block is None or (prev is not None and block(run) != block(prev)):
                log("time budget reached: stopping before the next run (resume later)")
                break
            log(f"time budget reached: finishing block {block(run)} first (a block stays in one sitting"
                + (", and a sitting runs at least one)" if prev is None else ")"))
        if before_block is not None and block is not None and (prev is None or block(run) != block(prev)):
            before_block(run)
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
    record["ended"] = now_stamp()
    root.mkdir(parents=True, exist_ok=True)
    dest = root / f"sitting-{time.strftime('%Y%m%dT%H%M%S')}.json"
    tmp = root / f".{dest.name}.tmp-{os.getpid()}"
    try:
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest

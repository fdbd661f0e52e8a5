"""The campaign schema the capture harnesses share (pure; no machine needed): a campaign file read and
checked, the planned :class:`Run` and where its data goes, and the resume state of a campaign's folder.

A run is staged under ``<root>/_inprogress/<relpath>`` and moved to ``<root>/<relpath>`` when complete,
its ``done`` marker written last, so ingest never sees half a run and a later sitting knows what is left.
The campaign file is copied beside the data once (``<root>/campaign.yaml``); later sittings must use the
same file, or one the harness accepts as its continuation (:func:`freeze_campaign_file`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

DONE = "done"
INPROGRESS = "_inprogress"  # staging area; analysis.ingest.discovery skips it


class CampaignError(ValueError):
    """A campaign file that cannot be run: names the file and the key at fault."""


@dataclass(frozen=True)
class Run:
    """One planned run: a (scenario, arm, repeat) cell and where its data goes."""
    campaign: str
    scenario: str
    arm: str
    repeat: int
    order: int  # position in the plan (0-based)

    @property
    def relpath(self) -> str:
        return f"{self.scenario}/{self.arm}/rep-{self.repeat:02d}"


def read_yaml(path: Path, expected: str) -> dict[str, Any]:
    """A campaign file's mapping; ``CampaignError`` naming the file (and line) when it is not one."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise CampaignError(f"{path}{where}: not valid YAML ({e})") from None
    if not isinstance(doc, dict):
        raise CampaignError(f"{path}: expected a mapping with {expected}")
    return doc


def load_checked(path: str | Path, expected: str,
                 validate: Callable[[dict[str, Any], str], dict[str, Any]]) -> dict[str, Any]:
    """Read a campaign file (a mapping with ``expected``, for the message) and ``validate`` it, errors
    naming the file; → the campaign with its defaults filled in."""
    path = Path(path)
    return validate(read_yaml(path, expected), str(path))


def requirer(where: str) -> Callable[[bool, str], None]:
    """``need(cond, msg)`` for a validator: ``CampaignError("<where>: <msg>")`` unless ``cond``."""
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise CampaignError(f"{where}: {msg}")
    return need


def seeded_rng(seed: Any, *parts: Any) -> random.Random:
    """A random generator fixed by the campaign seed and ``parts`` (the same order in every sitting)."""
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def status(root: Path, run: Run) -> str:
    """``done`` (its marker exists), ``partial`` (a half-finished directory), or ``todo``."""
    d = root / run.relpath
    if (d / DONE).exists():
        return "done"
    if d.exists() or (root / INPROGRESS / run.relpath).exists():
        return "partial"
    return "todo"


def remaining(root: Path, runs: list[Run]) -> list[Run]:
    """The runs still to do, in plan order (a half-finished one is redone from scratch)."""
    return [r for r in runs if status(root, r) != "done"]


def set_aside(root: Path, run: Run) -> Path | None:
    """Move a half-finished run directory (no ``done`` marker) out of the data tree, so a redo never
    mixes with its files; it goes under ``_inprogress/_stale/`` (skipped by ingest, cleared at the
    start of the next sitting).  Returns where it went, or None if there was nothing there.  A run
    with its marker is finished data and is never touched."""
    d = root / run.relpath
    if not d.exists():
        return None
    if (d / DONE).exists():
        raise CampaignError(f"{d} is a finished run (it has its {DONE} marker): not redoing it")
    dest = root / INPROGRESS / "_stale" / f"{run.relpath}.{time.strftime('%Y%m%dT%H%M%S')}"
    n = 1
    while dest.exists():
        dest = dest.with_name(dest.name.split("~")[0] + f"~{n}")
        n += 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(d), str(dest))
    return dest


def finish_run(root: Path, run: Run, info: dict[str, Any], log) -> Path:
    """Write run.json and the ``done`` marker (last) in the run's staging directory, then move it into
    place; a half-finished directory already there is moved aside first, never mixed in."""
    stage = root / INPROGRESS / run.relpath
    (stage / "run.json").write_text(json.dumps(info, indent=1, default=str) + "\n")
    (stage / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z") + "\n")
    aside = set_aside(root, run)
    if aside is not None:
        log(f"  half-finished {run.relpath} from an earlier sitting moved aside to {aside}")
    dest = root / run.relpath
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(stage, dest)
    return dest


def discard_run(root: Path, run: Run) -> None:
    """Drop a run's staging directory (a failed or disturbed attempt)."""
    shutil.rmtree(root / INPROGRESS / run.relpath, ignore_errors=True)


def freeze_campaign_file(src: Path, root: Path, problem: Callable[[Path, Path], str | None],
                         log: Callable[[str], None]) -> None:
    """The campaign file is copied beside the data once; a later sitting must use the same file, or one
    that ``problem(kept, src)`` finds no fault with (None; else why not: for the Ceph harness
    :func:`capture.ceph.campaign.file_extension_problem`, a file that only raises repeats).  Then the file
    the earlier runs ran with is kept as ``campaign-<sha256[:12]>.yaml`` (each run.json names its file's
    SHA-256) and the new one takes its place."""
    root.mkdir(parents=True, exist_ok=True)
    dst = root / "campaign.yaml"
    if not dst.exists():
        shutil.copyfile(src, dst)
        return
    if dst.read_bytes() == src.read_bytes():
        return
    why = problem(dst, src)
    if why is not None:
        raise CampaignError(f"{src} differs from {dst}, the file the first sitting ran with: {why}; "
                            "a campaign's settings cannot change between sittings, only its repeats "
                            "can be raised (start a new campaign name instead)")
    keep = root / f"campaign-{hashlib.sha256(dst.read_bytes()).hexdigest()[:12]}.yaml"
    tmp = root / ".campaign.yaml.tmp"
    shutil.copyfile(dst, tmp)
    os.replace(tmp, keep)
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
    log(f"{src} raises repeats only: the campaign goes on with it ({dst}); the earlier file is kept "
        f"as {keep.name}")

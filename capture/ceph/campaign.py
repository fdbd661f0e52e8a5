"""Campaign YAML → ordered run plan, and resume state (pure; no Ceph needed).

A campaign file names the cluster, the arms (queue/profile settings), the scenarios (client IO plus
background operations) and the repeats.  The plan is repeat-major — every scenario × arm cell gets
its first repeat before any gets its second, so a campaign cut short is balanced — and the arm order
is shuffled within each (repeat, scenario) with a seed derived from the campaign seed, so the order is
random but the same in every sitting (which resuming relies on).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BACKGROUND_OPS = ("deep_scrub", "snaptrim", "recovery")
DONE = "done"


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


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a campaign file; defaults filled in."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise CampaignError(f"{path}{where}: not valid YAML ({e})") from None
    if not isinstance(doc, dict):
        raise CampaignError(f"{path}: expected a mapping with campaign, cluster, arms, scenarios")
    return validate(doc, str(path))


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise CampaignError(f"{where}: {msg}")

    need(isinstance(doc.get("campaign"), str) and doc["campaign"].strip() != "",
         "'campaign' must be a non-empty name")
    need("/" not in doc["campaign"], "'campaign' must not contain '/'")
    arms = doc.get("arms")
    need(isinstance(arms, dict) and arms, "'arms' must map arm names to settings")
    for name, a in arms.items():
        need(isinstance(a, dict) and a.get("osd_op_queue") in ("wpq", "mclock_scheduler"),
             f"arms.{name}.osd_op_queue must be wpq or mclock_scheduler")
        if a["osd_op_queue"] == "mclock_scheduler":
            need(a.get("osd_mclock_profile") in ("high_client_ops", "balanced",
                                                 "high_recovery_ops", "custom"),
                 f"arms.{name}.osd_mclock_profile must be a Pacific profile")
    scen = doc.get("scenarios")
    need(isinstance(scen, dict) and scen, "'scenarios' must map scenario names to settings")
    for name, s in scen.items():
        need(isinstance(s, dict), f"scenarios.{name} must be a mapping")
        for a in s.get("arms", list(arms)):
            need(a in arms, f"scenarios.{name}.arms names unknown arm {a!r}")
        for op in s.get("background", []):
            need(op in BACKGROUND_OPS, f"scenarios.{name}.background: {op!r} is not one of "
                                       f"{', '.join(BACKGROUND_OPS)}")
        r = s.get("repeats", doc.get("repeats", 3))
        need(isinstance(r, int) and r >= 1, f"scenarios.{name}.repeats must be a positive integer")
        for a, n in (s.get("repeats_for") or {}).items():
            need(a in s.get("arms", list(arms)), f"scenarios.{name}.repeats_for: unknown arm {a!r}")
            need(isinstance(n, int) and n >= 1, f"scenarios.{name}.repeats_for.{a} must be ≥ 1")
    doc.setdefault("seed", 0)
    doc.setdefault("repeats", 3)
    return doc


def _rng(seed: Any, *parts: Any) -> random.Random:
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def plan(doc: dict[str, Any]) -> list[Run]:
    """Every run of the campaign, in execution order (repeat-major, arms shuffled per repeat)."""
    arms_all = list(doc["arms"])
    cells: dict[str, dict[str, int]] = {}
    for sname, s in doc["scenarios"].items():
        base = s.get("repeats", doc["repeats"])
        per = s.get("repeats_for") or {}
        cells[sname] = {a: per.get(a, base) for a in s.get("arms", arms_all)}
    top = max(n for c in cells.values() for n in c.values())
    runs: list[Run] = []
    for rep in range(1, top + 1):
        for sname, c in cells.items():
            arms = [a for a in c if c[a] >= rep]
            _rng(doc["seed"], rep, sname).shuffle(arms)
            for a in arms:
                runs.append(Run(doc["campaign"], sname, a, rep, len(runs)))
    return runs


def status(root: Path, run: Run) -> str:
    """``done`` (its marker exists), ``partial`` (a half-finished directory), or ``todo``."""
    d = root / run.relpath
    if (d / DONE).exists():
        return "done"
    if d.exists() or (root / "_inprogress" / run.relpath).exists():
        return "partial"
    return "todo"


def remaining(root: Path, runs: list[Run]) -> list[Run]:
    """The runs still to do, in plan order (a half-finished one is redone from scratch)."""
    return [r for r in runs if status(root, r) != "done"]

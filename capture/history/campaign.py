"""A history campaign file: the fio job, the histories, the cap per point.

```yaml
campaign: history-2026
seed: 52
repeats: 3                      # runs per point (the distribution at each point)
points: 40
device: {size_mib: 256, backing_dir: /var/tmp/cephqos-history}
fio: {rw: randread, bs: 4k, iodepth: 8, runtime_s: 2, ramp_s: 0.5, size_mib: 200}
histories:                      # name → {first point: read IOPS cap from that point on}
  regression: {0: 20000, 25: 18800}
  null: {0: 20000}
```

The plan interleaves the histories point by point (point k of every history, in a seeded order, before
point k + 1), so a drift of the machine reaches each history at the same points.  Run directory:
``<history>/p-NNN/rep-NN``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capture.common.campaign import (INPROGRESS, CampaignError, Run, discard_run, finish_run, load_checked,
                                     requirer, seeded_rng)

__all__ = ["INPROGRESS", "CampaignError", "Run", "cap_at", "discard_run", "finish_run", "load", "plan"]


def load(path: str | Path) -> dict[str, Any]:
    return load_checked(path, "campaign, points, repeats, fio and histories", validate)


def validate(doc: dict[str, Any], where: str = "campaign") -> dict[str, Any]:
    need = requirer(where)
    for k in ("campaign", "points", "repeats", "fio", "histories", "device"):
        need(k in doc, f"missing key {k!r}")
    need(isinstance(doc["points"], int) and doc["points"] >= 2, "points must be an integer ≥ 2")
    need(isinstance(doc["repeats"], int) and doc["repeats"] >= 1, "repeats must be an integer ≥ 1")
    f = doc["fio"]
    need(isinstance(f, dict), "'fio' must be a mapping")
    for k in ("rw", "bs", "iodepth", "runtime_s", "size_mib"):
        need(k in f, f"fio.{k} is missing")
    f.setdefault("ramp_s", 0.5)
    f.setdefault("ioengine", "libaio")
    need(f["size_mib"] < doc["device"].get("size_mib", 0), "fio.size_mib must be smaller than device.size_mib")
    h = doc["histories"]
    need(isinstance(h, dict) and h, "'histories' must map names to {first point: cap}")
    for name, caps in h.items():
        need(isinstance(caps, dict) and 0 in caps, f"histories.{name} must give the cap from point 0 ({{0: IOPS}})")
        need(all(isinstance(p, int) and 0 <= p < doc["points"] for p in caps),
             f"histories.{name}: change points must be integers in [0, {doc['points']})")
        need(all(isinstance(c, int) and c > 0 for c in caps.values()), f"histories.{name}: caps must be IOPS > 0")
    return doc


def cap_at(doc: dict[str, Any], history: str, point: int) -> int:
    """The read IOPS cap of ``history`` at ``point`` (the last change at or before it)."""
    caps = doc["histories"][history]
    return caps[max(p for p in caps if p <= point)]


def plan(doc: dict[str, Any]) -> list[Run]:
    """Every run: point by point, the histories in a seeded order per point, each history's repeats back
    to back (``Run.scenario`` the history, ``Run.arm`` ``p-NNN``)."""
    runs: list[Run] = []
    names = sorted(doc["histories"])
    for k in range(doc["points"]):
        order = list(names)
        seeded_rng(doc.get("seed", 0), "point", k).shuffle(order)
        for h in order:
            for r in range(1, doc["repeats"] + 1):
                runs.append(Run(doc["campaign"], h, f"p-{k:03d}", r, len(runs)))
    return runs

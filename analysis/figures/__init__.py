"""One function per figure kind; each figure carries a stable id (``fig.get_label()``)."""

from __future__ import annotations

import os
from pathlib import Path


def save(fig, out_dir: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` as ``<out_dir>/<fig.get_label()>.png`` (temp file, then rename: never half-written)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = fig.get_label()
    if not label:
        raise ValueError("figure has no label (stable id); set it with fig.set_label()")
    path = out / f"{label}.png"
    tmp = out / f".{label}.tmp-{os.getpid()}.png"
    fig.savefig(tmp, dpi=dpi)
    os.replace(tmp, path)
    return path

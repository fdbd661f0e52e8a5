"""One function per figure kind; each figure carries a stable id (``fig.get_label()``)."""

from __future__ import annotations

import os
from pathlib import Path


def save(fig, out_dir: str | Path, dpi: int = 110, formats: tuple[str, ...] = ("png", "svg")) -> Path:
    """Write ``fig`` as ``<out_dir>/<fig.get_label()>.<format>`` for each format (temp file, then rename:
    never half-written); returns the first (PNG) path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = fig.get_label()
    if not label:
        raise ValueError("figure has no label (stable id); set it with fig.set_label()")
    paths = []
    for fmt in formats:
        path = out / f"{label}.{fmt}"
        tmp = out / f".{label}.tmp-{os.getpid()}.{fmt}"
        fig.savefig(tmp, dpi=dpi, format=fmt)
        os.replace(tmp, path)
        paths.append(path)
    return paths[0]


def show(out_dir: str | Path) -> None:
    """Save the current matplotlib figure with :func:`save`, then show it (notebook convenience)."""
    import matplotlib.pyplot as plt

    save(plt.gcf(), out_dir)
    plt.show()

"""The command line the capture harnesses share: the ``plan`` command and the error convention (a
campaign or machine error is ``error: …`` on stderr and exit status 2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from .campaign import Run, remaining, status


def show_plan(root: Path, runs: list[Run], order_width: int = 4,
              note: Callable[[Run], str] = lambda run: "") -> int:
    """``plan``: every run in order with its status (``done``/``partial``/``todo`` under ``root``) and
    ``note(run)`` after its path, then the counts.  → exit status 0."""
    for r in runs:
        print(f"{r.order:{order_width}d}  {status(root, r):8s} {r.relpath}{note(r)}")
    left = remaining(root, runs)
    print(f"{len(runs)} runs, {len(runs) - len(left)} done, {len(left)} to do")
    return 0


def add_campaign_command(sub: Any, name: str, default_out: Path, campaign_type: Any = str) -> Any:
    """A subcommand taking ``CAMPAIGN.yaml`` and ``--out DIR`` (default ``default_out``); → its parser."""
    p = sub.add_parser(name)
    p.add_argument("campaign", type=campaign_type)
    p.add_argument("--out", type=Path, default=default_out)
    return p


def exit_status(command: Callable[[], int], errors: tuple[type[BaseException], ...]) -> int:
    """``command()``'s exit status; one of ``errors`` is printed as ``error: …`` on stderr, status 2."""
    try:
        return command()
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

"""Ceph's JSON time stamps → unix seconds (shared by the harness and pgpoll.py, which runs
under /usr/bin/python3 as a script and imports it from its own folder)."""
from __future__ import annotations

import datetime as dt


def stamp(s: str | None) -> float | None:
    """'2026-11-21T14:25:33.146231+0000' → unix seconds; None for Ceph's zero stamp or junk."""
    if not s or s.startswith("0.000000") or s.startswith("1970-01-01"):
        return None
    try:
        return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    except ValueError:
        return None

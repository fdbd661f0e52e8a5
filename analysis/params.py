"""Notebook parameters as papermill hands them over."""

from __future__ import annotations

from collections.abc import Sequence


def as_list(value: str | Sequence[str] | None) -> list[str] | None:
    """A list parameter: a list or tuple as given; a string split at commas and stripped (``papermill -p
    campaigns qos-2026,qos-reef`` and ``make report`` pass one string; ``-y`` YAML passes a list); ``None``
    stays ``None`` (the notebook's default applies).  Empty items are dropped."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]

"""Readers for benchmark outputs; ``read(path)`` detects the format from the content, ``kinds()`` lists the
kinds the readers give (docs/formats.md has a row for each)."""

from __future__ import annotations

from .base import IngestError, Parsed  # noqa: F401
from .detect import detect, kinds, read  # noqa: F401

__all__ = ["read", "detect", "kinds", "Parsed", "IngestError"]

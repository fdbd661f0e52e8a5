"""Readers for benchmark outputs; ``read(path)`` detects the format from the content.

Kinds: ``fio-json`` (json and json+), ``fio-log`` (lat/clat/slat/iops/bw logs), ``fio-hist-log``,
``rados-bench`` (text and ``--format json``), ``ceph-pg-timeline`` (the capture's background-operation
timeline JSONL), ``sysutil`` (the capture's 1 Hz /proc utilisation JSONL).
"""

from __future__ import annotations

from .base import IngestError, Parsed  # noqa: F401
from .detect import KINDS, detect, read  # noqa: F401

__all__ = ["read", "detect", "Parsed", "IngestError", "KINDS"]

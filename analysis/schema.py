"""The schema of the tables an ingest writes: their columns (tidy ``summary``/``series``, the ``files``
table's own columns) and the run keys, one meaning per column and numbers as numbers.

Below both the ingest (which writes the tables) and the store (which reads and checks them): each takes the
schema from here and neither from the other.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

#: the tidy summary table's columns; ``series`` adds ``t_s`` (s since the run's start)
SUMMARY_COLUMNS: list[str] = ["source", "job", "ddir", "metric", "value", "unit"]
SERIES_COLUMNS: list[str] = SUMMARY_COLUMNS + ["t_s"]
#: Columns stored as pandas categoricals (few distinct values, many rows).
CATEGORY_COLUMNS: list[str] = ["source", "job", "ddir", "metric", "unit"]

#: run keys that are numbers (run.json, CBT's benchmark config, the OSD's effective settings): typed
#: columns (``Int64``; B for sizes, s for the ``*_s`` durations as ``float64``), not string categories.
#: A run context whose value of one is not a finite number (an integer for these; ``"repeat": "r1"``,
#: ``1e400``, ``NaN``, ``true``) is refused (:func:`key_problem`), its file named.
INT_KEYS = ("repeat", "iodepth", "op_size", "bs_B", "numjobs", "concurrent_ops", "concurrent_procs", "vol_size",
            "plan_order", "attempt", "device_size_mib", "max_scrubs", "scrub_cost", "requested_scrub_priority", "procs",
            "total_iodepth", "volume",  # a CBT workloads test's total iodepth and a volume's index (context.py)
            # fio's recorded workload (fio_workload): sizes in B, flags 0/1, % reads
            "bs_read_B", "bs_write_B", "rwmixread", "direct", "size_B", "time_based")
FLOAT_KEYS = ("duration_s", "osd_restart_s", "runtime_s")

#: the run keys every table with run keys has (null where a run names none), in this order, before the others
KEY_COLUMNS = ["campaign", "scenario", "arm", "op_queue", "io_scheduler", "profile", "repeat", "run"]
#: the most text one field may hold: a run key's value, a fio job name or option value (the longest in the
#: shipped data and ../shared/corpus is 180 characters; a 200 MB job name took 10 GB to ingest)
FIELD_MAX_BYTES = 64 << 10
#: columns of the ``files`` table that describe the file, not its run (every other column is a run key)
FILE_COLUMNS = ("path", "size_bytes", "sha256", "kind", "tool_version", "status", "error", "error_line", "partial",
                "meta_json", "manifest", "workload_conflict")


#: ``osd_op_queue`` values (Ceph 14–18): a run's ``scheduler`` that is one of these is the OSD's op queue,
#: any other (none, mq-deadline, kyber, bfq, cfq, deadline, noop) a block-layer IO scheduler
OSD_OP_QUEUES = ("wpq", "mclock_scheduler", "mclock_opclass", "mclock_client", "prioritized", "debug_random")


def scheduler_keys(ctx: dict[str, Any]) -> dict[str, Any]:
    """``ctx`` with a ``scheduler`` key (our run.json files use it for either meaning) moved to ``op_queue``
    (one of :data:`OSD_OP_QUEUES`) or ``io_scheduler`` (anything else): one meaning per column (in place)."""
    v = ctx.pop("scheduler", None)
    if v is not None:
        ctx["op_queue" if str(v) in OSD_OP_QUEUES else "io_scheduler"] = v
    return ctx


def _finite(v: Any) -> float | None:
    """``v`` as a finite float: a number (not a bool) or the text of one; else None."""
    if isinstance(v, bool):
        return None
    try:
        f = float(v.strip() if isinstance(v, str) else v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _quoted(v: Any) -> str:
    text = str(v).lower() if isinstance(v, bool) else repr(v)  # as JSON writes true/false
    return text if len(text) <= 60 else text[:57] + "..."


def key_problem(key: str, value: Any, named: bool = False) -> str | None:
    """What is wrong with one run key's value, or None: a key of :data:`INT_KEYS` must be an integer and one
    of :data:`FLOAT_KEYS` a finite number (either may be the text of one: ``"5"``, as Ceph prints a setting);
    a ``named`` key (a column every table has, :data:`KEY_COLUMNS`) a string or a finite number, not
    true/false, a list or an object; any other a string, a finite number or true/false; text at most
    :data:`FIELD_MAX_BYTES`."""
    if key in INT_KEYS or key in FLOAT_KEYS:
        f = _finite(value)
        if f is None:
            return f"expected a finite number, got {_quoted(value)}"
        if key in INT_KEYS and (f != int(f) or abs(f) >= 2.0 ** 63):
            return f"expected an integer (of at most 63 bits), got {_quoted(value)}"
        return None
    if isinstance(value, (list, tuple, dict)):
        return f"expected a string or a number, got a {'list' if not isinstance(value, dict) else 'JSON object'}"
    if isinstance(value, bool):
        return f"expected a string or a number, got {str(value).lower()}" if named else None
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value}"
    if isinstance(value, str) and len(value) > FIELD_MAX_BYTES // 4 \
            and len(value.encode("utf-8", "surrogatepass")) > FIELD_MAX_BYTES:
        n = len(value.encode("utf-8", "surrogatepass"))
        return f"expected at most {FIELD_MAX_BYTES >> 10} KiB of text, got {n} bytes"
    return None


def typed_keys(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its :data:`INT_KEYS` and :data:`FLOAT_KEYS` columns as numbers (in place; returned)."""
    for c in INT_KEYS + FLOAT_KEYS:
        if c not in df:
            continue
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = pd.to_numeric(pd.Series(col.cat.categories.astype(object)), errors="coerce").to_numpy(float)
            if np.isnan(cats).any():
                continue
            codes = col.cat.codes.to_numpy()
            if c in INT_KEYS and len(cats) and np.isfinite(cats).all() and (np.abs(cats) < 2.0 ** 63).all() \
                    and np.array_equal(cats, np.round(cats)):  # decided per label, not row
                df[c] = pd.arrays.IntegerArray(cats.astype(np.int64)[np.maximum(codes, 0)], codes < 0)
                continue
            v = np.where(codes >= 0, cats[np.maximum(codes, 0)] if len(cats) else np.nan, np.nan)
        elif not col.notna().any():  # a key no row has (a null column): no per-row conversion
            v = np.full(len(col), np.nan)
        elif pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            if c in INT_KEYS and isinstance(col.dtype, pd.Int64Dtype):
                continue  # typed already (a table read back)
            v = col.to_numpy(dtype=np.float64, na_value=np.nan)
        else:  # text (a block trace's request rows: 10^5–10^6 rows, one value): converted once per value
            codes, uniq = pd.factorize(col)
            num = pd.to_numeric(pd.Series(np.asarray(uniq, dtype=object), dtype=object), errors="coerce")
            if num.isna().any():  # a value that is not a number (missing values are not among ``uniq``)
                continue
            u = num.to_numpy(float)
            v = np.where(codes >= 0, u[np.maximum(codes, 0)] if len(u) else np.nan, np.nan)
        mask = np.isnan(v)
        if c in INT_KEYS and np.isfinite(v[~mask]).all() and (np.abs(v[~mask]) < 2.0 ** 63).all() \
                and np.array_equal(v[~mask], np.round(v[~mask])):  # 1e400 is not -2^63
            df[c] = pd.arrays.IntegerArray(np.where(mask, 0, v).astype(np.int64), mask)
        else:
            df[c] = v
    return df

"""Matching label columns of the tidy tables (categoricals of ``str``, or strings) against values.

``str_isin(df["kind"], ["fio-log"])`` is ``df["kind"].astype(str).isin(["fio-log"])`` without building a
string per row: a categorical is matched once per category and the codes pick the answer (0.1 ms
instead of 93 ms on the 724 k-row series table, measured here).  Missing labels never match.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd


def str_isin(col: pd.Series, values: Iterable[object]) -> pd.Series:
    """Boolean Series: ``str(label) in {str(v) for v in values}`` per row (False where missing)."""
    want = {str(v) for v in values}
    if isinstance(col.dtype, pd.CategoricalDtype):
        hit = np.append(col.cat.categories.astype(str).isin(list(want)), False)  # code -1 (missing) → last
        return pd.Series(hit[col.cat.codes.to_numpy()], index=col.index, name=col.name)
    return col.notna() & col.astype(str).isin(want)


def str_eq(col: pd.Series, value: object) -> pd.Series:
    """Boolean Series: ``str(label) == str(value)`` per row (False where missing)."""
    return str_isin(col, [value])

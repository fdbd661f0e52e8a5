"""Run keys typed as numbers (``analysis.schema.typed_keys``) and keys no file had (``walk._attach``):
the fast paths (decided per label, null columns without per-row work) give what the per-row rule gives."""

import numpy as np
import pandas as pd

from analysis.schema import typed_keys
from analysis.ingest.walk import _assemble
from analysis.ingest.base import SERIES_COLUMNS


def test_categorical_int_key_with_missing_rows():
    df = pd.DataFrame({"repeat": pd.Categorical(["2", None, "10", "2"])})
    typed_keys(df)
    assert str(df["repeat"].dtype) == "Int64"
    assert df["repeat"].tolist() == [2, pd.NA, 10, 2]


def test_categorical_int_key_with_a_fraction_is_float():
    df = pd.DataFrame({"repeat": pd.Categorical(["1.5", "2"])})
    typed_keys(df)
    assert df["repeat"].dtype == np.float64
    assert df["repeat"].tolist() == [1.5, 2.0]


def test_unused_fractional_label_does_not_decide():
    # a slice keeps a label no row uses: the rows' values (all whole) decide, as before the per-label path
    c = pd.Categorical(["3", "4"], categories=["3", "4", "0.5"])
    df = pd.DataFrame({"iodepth": c})
    typed_keys(df)
    assert str(df["iodepth"].dtype) == "Int64" and df["iodepth"].tolist() == [3, 4]


def test_text_key_stays_text():
    df = pd.DataFrame({"repeat": pd.Categorical(["r1", "2"])})
    typed_keys(df)
    assert isinstance(df["repeat"].dtype, pd.CategoricalDtype)


def test_null_columns_typed_without_conversion():
    n = 5
    df = pd.DataFrame({"repeat": pd.array([None] * n, dtype="string"),
                       "duration_s": pd.array([None] * n, dtype="string"),
                       "scenario": pd.array([None] * n, dtype="string")})
    typed_keys(df)
    assert str(df["repeat"].dtype) == "Int64" and df["repeat"].isna().all()
    assert df["duration_s"].dtype == np.float64 and df["duration_s"].isna().all()
    assert str(df["scenario"].dtype) == "string"  # not a numeric key: untouched


def test_numeric_columns():
    df = pd.DataFrame({"repeat": pd.array([1, None, 3], dtype="Int64"), "iodepth": [4.0, np.nan, 16.0],
                       "bs_B": [4096.0, 1.5, 2.0], "duration_s": pd.array([30, 60, None], dtype="Int64")})
    typed_keys(df)
    assert df["repeat"].tolist() == [1, pd.NA, 3]
    assert str(df["iodepth"].dtype) == "Int64" and df["iodepth"].tolist() == [4, pd.NA, 16]
    assert df["bs_B"].dtype == np.float64 and df["bs_B"].tolist() == [4096.0, 1.5, 2.0]
    assert df["duration_s"].dtype == np.float64 and df["duration_s"].tolist()[:2] == [30.0, 60.0]


def test_keys_no_file_had_are_null_strings():
    frame = pd.DataFrame({"source": ["a"] * 3, "job": ["j"] * 3, "ddir": ["read"] * 3, "metric": ["iops"] * 3,
                          "value": [1.0, 2.0, 3.0], "unit": ["1/s"] * 3, "t_s": [0.0, 1.0, 2.0]})
    for c in ("source", "job", "ddir", "metric", "unit"):
        frame[c] = frame[c].astype("category")
    df = _assemble([frame], [0], [{"kind": "fio-log", "source": "a", "campaign": "c", "tag": "x"}],
                   SERIES_COLUMNS)
    assert str(df["scenario"].dtype) == "string" and df["scenario"].isna().all()
    assert str(df["repeat"].dtype) == "Int64" and df["repeat"].isna().all()
    assert df["campaign"].tolist() == ["c"] * 3 and df["tag"].tolist() == ["x"] * 3
    assert df["value"].tolist() == [1.0, 2.0, 3.0]


def _per_row(col: pd.Series, key: str):
    """The per-row rule for a text key: every non-missing value converted on its own."""
    num = pd.to_numeric(col.astype(object), errors="coerce")
    if (num.isna() & col.notna()).any():
        return None
    v = num.to_numpy(float)
    m = np.isnan(v)
    if key == "repeat" and np.array_equal(v[~m], np.round(v[~m])):
        return pd.arrays.IntegerArray(np.where(m, 0, v).astype(np.int64), m)
    return v


def test_text_keys_converted_once_per_value_equal_the_per_row_rule():
    # the text branch converts each distinct value once (a block trace's request rows: one value, 10^6 rows)
    cases = {"ints": ["2", None, "10", "2", " 3"], "fraction": ["1.5", "2", None], "text": ["r1", "2", "2"],
             "nan": ["nan", "1"], "empty": ["", "1"], "objects": [1, "2", None, 3.0]}
    for name, vals in cases.items():
        for dtype in ("str", "string", object):
            col = pd.Series(vals, dtype=dtype)
            want = _per_row(col, "repeat")
            df = pd.DataFrame({"repeat": col})
            typed_keys(df)
            if want is None:
                assert df["repeat"].equals(col), (name, dtype)
            elif isinstance(want, np.ndarray):
                np.testing.assert_array_equal(df["repeat"].to_numpy(float), want, err_msg=f"{name} {dtype}")
                assert df["repeat"].dtype == np.float64, (name, dtype)
            else:
                assert str(df["repeat"].dtype) == "Int64", (name, dtype)
                assert df["repeat"].tolist() == list(want), (name, dtype)

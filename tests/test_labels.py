"""analysis.labels: matching label columns gives what astype(str) comparisons give."""

import numpy as np
import pandas as pd

from analysis.labels import str_eq, str_isin


def test_categorical_matches_astype_str_and_missing_never_matches():
    col = pd.Series(pd.Categorical(["fio-log", None, "sysutil", "fio-log", "blktrace"]), index=[5, 6, 7, 8, 9])
    got = str_isin(col, ["fio-log", "blktrace"])
    assert got.tolist() == [True, False, False, True, True] and got.index.tolist() == [5, 6, 7, 8, 9]
    assert str_eq(col, "sysutil").tolist() == [False, False, True, False, False]
    assert not str_eq(col, "absent").any()
    assert str_eq(col, "fio-log").equals(col.astype(str) == "fio-log")


def test_non_string_labels_compare_as_strings():
    rep = pd.Series(pd.Categorical([1, 2, 2, np.nan]))
    assert str_eq(rep, "2").tolist() == [False, True, True, False]
    assert str_isin(rep, [1]).tolist() == [True, False, False, False]
    plain = pd.Series(["a", None, "b"], dtype=object)
    assert str_isin(plain, {"a", "b"}).tolist() == [True, False, True]
    assert str_eq(pd.Series([3, 4]), 4).tolist() == [False, True]


def test_mask_filters_a_frame():
    df = pd.DataFrame({"kind": pd.Categorical(["a", "b", "a"]), "v": [1.0, 2.0, 3.0]})
    assert df[str_eq(df["kind"], "a")]["v"].tolist() == [1.0, 3.0]

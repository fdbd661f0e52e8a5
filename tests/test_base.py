"""The tidy-frame builders readers share (analysis.ingest.base): same frames as pandas' constructors."""

import numpy as np
import pandas as pd
import pytest

from analysis.ingest import base


def test_cat_keeps_codes_categories_and_missing():
    a = base.cat(np.array([1, 0, -1, 1], np.int8), ["write", "read"])
    b = base.cat(np.array([0], np.int8), ("write", "read"))
    assert a.dtype == b.dtype
    assert a.tolist()[:2] == ["read", "write"] and pd.isna(a[2]) and a[3] == "read"
    assert list(a.categories) == ["write", "read"] and a.categories.dtype == "str"
    ref = pd.Categorical(["read", "write", None, "read"], categories=["write", "read"])
    assert a.equals(ref.astype(a.dtype))


def test_tidy_frame_equals_the_dict_constructor_without_copying_floats():
    n = 5
    t = np.arange(n, dtype=np.float64)
    v = np.linspace(1.0, 2.0, n)
    cols = {"source": base.cat(np.zeros(n, np.int8), ["f.log"]), "job": base.cat(np.zeros(n, np.int8), ["j"]),
            "ddir": base.cat(np.array([0, 1, 0, 1, 0], np.int8), ["read", "write"]),
            "metric": base.cat(np.zeros(n, np.int8), ["clat"]), "value": v,
            "unit": base.cat(np.zeros(n, np.int8), ["ns"]), "t_s": t}
    got = base.tidy_frame(cols, base.SERIES_COLUMNS)
    pd.testing.assert_frame_equal(got, pd.DataFrame(cols, columns=base.SERIES_COLUMNS))
    assert np.shares_memory(got["value"].to_numpy(), v) and np.shares_memory(got["t_s"].to_numpy(), t)
    assert got.loc[3, "ddir"] == "write" and got.loc[4, "value"] == 2.0


def test_tidy_frame_checks_lengths():
    cols = {"value": np.zeros(3), "t_s": np.zeros(2)}
    with pytest.raises(ValueError, match="[Ll]ength"):
        base.tidy_frame(cols, ["value", "t_s"])
    with pytest.raises(ValueError, match="different lengths"):
        base.Tidy(cols, ["value", "t_s"])


def test_parsed_builds_its_frames_from_tidy_columns_only_when_asked():
    """A reader's Tidy columns: the ingest reads them as given (tidy_summary, no frame built); the frame
    that summary/series give equals the one the builders' columns make, built once; an absent table is
    the empty frame with the schema's columns."""
    summ = base.summary_frame("x.json", [("j", "read", "iops", 10.0, "1/s"), ("j", "write", "bw", 2.0, "B/s")])
    p = base.Parsed(path="x.json", kind="fio-json", summary=summ)
    assert p.tidy_summary is summ and isinstance(p.tidy_summary, base.Tidy)
    assert p.values_of("j", "write") == {"bw": 2.0} and p.tidy_summary is summ  # looked up without a frame
    f = p.summary
    assert isinstance(f, pd.DataFrame) and p.summary is f and list(f.columns) == base.SUMMARY_COLUMNS
    assert f["metric"].tolist() == ["iops", "bw"] and f["value"].tolist() == [10.0, 2.0]
    assert str(f["ddir"].dtype) == "category" and base.column(f, "unit").tolist() == ["1/s", "B/s"]
    assert f["source"].tolist() == ["x.json", "x.json"] and list(f["source"].cat.categories) == ["x.json"]
    assert isinstance(base.column(summ, "source"), pd.Categorical)  # a Label column, made when read
    assert p.value("bw") == 2.0
    assert len(p.series) == 0 and list(p.series.columns) == base.SERIES_COLUMNS and len(p.tidy_series) == 0
    q = p.with_meta({"a": 1})
    assert q.meta == {"a": 1} and p.meta == {} and q.summary["value"].tolist() == [10.0, 2.0]


def test_summary_lookup_by_job_and_direction():
    p = base.Parsed(path="x.json", kind="fio-json",
                    summary=base.summary_frame("x.json", [("j", "read", "iops", 10.0, "1/s"),
                                                          ("j", "write", "iops", 20.0, "1/s"),
                                                          ("k", "read", "iops", 30.0, "1/s")]))
    assert p.values_of("j", "write") == {"iops": 20.0}
    assert p.values_of("k", "read") == {"iops": 30.0} and p.values_of("k", "write") == {}


def test_json_number_reads_numbers_and_numeric_text_only():
    from analysis.ingest.base import json_number
    assert [json_number(x) for x in (3, 2.5, "4096", "1e3", " 7 ")] == [3.0, 2.5, 4096.0, 1000.0, 7.0]
    assert [json_number(x) for x in (None, True, False, "n/a", {"a": 1}, [1])] == [None] * 6


@pytest.mark.parametrize("ddir", ["read", "per-row"])
def test_series_metrics_frame_equals_a_frame_per_metric_concatenated(ddir):
    n = 4
    t = np.array([0.5, 1.0, 1.5, 2.0])
    labels = base.cat(np.array([1, 0, 1, 1], np.int8), ["read", "write"]) if ddir == "per-row" else ddir
    metrics = [("clat_p50", "ns", np.array([1.0, 2.0, 3.0, 4.0])), ("clat_p99", "ns", np.arange(n) * 10.0),
               ("clat_samples", "count", np.array([7.0, 0.0, 1.0, 2.0]))]
    got = base.series_metrics_frame("x.log", "job1", labels, t, metrics).frame()
    want = base.concat_tidy([base.series_frame("x.log", "job1", labels, m, u, t, val) for m, u, val in metrics],
                            base.SERIES_COLUMNS).frame()
    pd.testing.assert_frame_equal(got, want)
    assert got["metric"].tolist() == ["clat_p50"] * n + ["clat_p99"] * n + ["clat_samples"] * n
    assert got["unit"].tolist()[-1] == "count" and got["t_s"].tolist()[4:8] == t.tolist()
    assert len(base.series_metrics_frame("x.log", "job1", labels, t[:0], [(m, u, v[:0]) for m, u, v in metrics])) == 0


def test_category_names_are_the_categories_as_text():
    """base.category_names: the categories read off as text — always
    what ``[str(c) for c in categories]`` gives, also after cat()'s cache was emptied."""
    import numpy as np
    import pandas as pd
    from analysis.ingest import base
    a = base.cat(np.array([0, 1, -1], np.int8), ["read", "wr\u00efte"])
    assert base.category_names(a) == ["read", "wr\u00efte"] == [str(c) for c in a.categories]
    again = base.cat(np.array([1], np.int8), ["read", "wr\u00efte"])
    assert base.category_names(again) == base.category_names(pd.Series(a).array) == ["read", "wr\u00efte"]
    other = pd.Categorical(["x", "y", "x"], categories=["y", "x"])
    assert base.category_names(other) == ["y", "x"]
    numeric = pd.Categorical([3, 1])
    assert base.category_names(numeric) == ["1", "3"]
    base._DTYPES.clear()
    assert base.category_names(a) == ["read", "wr\u00efte"]
    b = base.cat(np.array([1, 0], np.int8), ["p", "q"])
    assert base.category_names(b) == ["p", "q"] and base.category_names(a) == ["read", "wr\u00efte"]

"""analysis.params: list parameters as papermill passes them (a string from -p, a list from -y)."""

from analysis.params import as_list


def test_a_comma_separated_string_is_split_and_stripped():
    assert as_list("qos-2026, qos-reef,,") == ["qos-2026", "qos-reef"]
    assert as_list("bfq") == ["bfq"]


def test_lists_and_none_pass_through():
    assert as_list(["a", " b "]) == ["a", "b"] and as_list(("x",)) == ["x"]
    assert as_list(None) is None and as_list("") == [] and as_list([]) == []

"""Key columns that one null turned from int64 into float64 (audit (c)):
integral values group, code, match keys and come back as the integers did."""

import math

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")

from privloss.query.engines import bounded_histogram  # noqa: E402


def _rows(users=40):
    return [(user, item) for user in range(users) for item in (1, 2, 3) if user % item == 0]


def test_float_item_column_is_the_integer_column_plus_the_null():
    integers = pd.DataFrame(_rows(), columns=["user", "item"])
    floats = pd.DataFrame(_rows() + [(999, None)], columns=["user", "item"])
    assert str(floats["item"].dtype) == "float64"
    for options in (dict(), dict(l0=1, seed=5), dict(domain=[1, 2, 3], l0=1, seed=5)):
        mine = bounded_histogram(integers, user_column="user", item_column="item", **options)
        theirs = bounded_histogram(floats, user_column="user", item_column="item", **options)
        assert theirs.items == mine.items and list(theirs.counts) == list(mine.counts)
        assert all(type(label) is int for label in theirs.items)


def test_float_user_column_bounds_as_the_integer_column():
    integers = pd.DataFrame(_rows(), columns=["user", "item"])
    floats = integers.astype({"user": "float64"})
    mine = bounded_histogram(integers, user_column="user", item_column="item", l0=1, seed=9)
    theirs = bounded_histogram(floats, user_column="user", item_column="item", l0=1, seed=9)
    assert theirs.items == mine.items and list(theirs.counts) == list(mine.counts)


def test_non_integral_and_special_float_labels():
    values = [1.0, 1.5, -0.0, float("inf"), float("nan"), 1e20, -3.0]
    frame = pd.DataFrame({"user": range(len(values)), "item": values})
    result = bounded_histogram(frame, user_column="user", item_column="item")
    labels = set(result.items) - {label for label in result.items
                                  if isinstance(label, float) and math.isnan(label)}
    assert labels == {1, 1.5, 0, float("inf"), 1e20, -3}
    assert {type(label).__name__ for label in result.items} == {"int", "float"}
    assert [type(label) for label in result.items if label in (1, 0, -3)] == [int] * 3

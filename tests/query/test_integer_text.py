"""Integer-valued text columns (issue 13 item 7): one per-value code rule.

Text that is canonical integer text (``bounding.CANONICAL_INTEGER``) is coded
and grouped as its integer; every other text keeps its md5 code.  The rule is
decided per value, so a value's code never depends on the rest of the data;
labels stay the original text; "007" and "7" stay apart; DuckDB, Spark and the
Python reference choose the same items.  Reference values: the pure-Python
reference (:mod:`privloss.query.engines.reference`) and hand-made ties."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from privloss.query import bounded_histogram
from privloss.query.bounding import (SelectionKey, is_canonical_integer, text_code,
                                         text_code_digits)
from privloss.query.engines.reference import reference_histogram
from tests.conftest import spark_skip_reason

pa = pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

SPARK_SKIP = spark_skip_reason()
needs_spark = pytest.mark.skipif(SPARK_SKIP is not None, reason=SPARK_SKIP or "")

#: Text that is NOT canonical integer text, each next to its canonical twin.
NEAR_INTEGERS = ["007", "+7", "-0", "00", " 7", "7 ", "7\n", "7.0", "1e3", "1_000",
                 "\u0663", "\uff17", "0x1F", "9" * 19, "-" + "9" * 19]


def _table(rows):
    return pa.table({"user": [row[0] for row in rows], "item": [row[1] for row in rows]})


def _assert_same(actual, expected):
    assert actual.items == expected.items
    assert np.array_equal(actual.counts, expected.counts)
    assert (actual.total_items, actual.next_count) == (expected.total_items,
                                                       expected.next_count)


def _rows(seed, kind, n_rows=600, n_users=50, n_items=20):
    """Text rows: ``integers`` (canonical integer text only), ``near`` (leading
    zeros, signs, spaces, other digits: never canonical), ``mixed`` (both, in
    both columns, "7" next to "007")."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        user = rng.randrange(n_users) * 7919 - 10 ** 5
        item = min(int(rng.paretovariate(1.2)), n_items) - 3
        if kind == "integers":
            rows.append((str(user), str(item)))
        elif kind == "near":
            rows.append((f"{user:08d}", rng.choice(NEAR_INTEGERS[:6]) + str(abs(item))))
        else:
            user_text = str(user) if rng.random() < 0.5 else f"u{user}"
            item_text = rng.choice([str(item), f"{abs(item):03d}", rng.choice(NEAR_INTEGERS)])
            rows.append((user_text, item_text))
    return rows


def test_canonical_integer_text():
    for text in ["0", "7", "-7", "10", "-1" + "0" * 17, "9" * 18]:
        assert is_canonical_integer(text) and text_code(text) == int(text)
    for text in NEAR_INTEGERS + ["", "-", "+", "a1"]:
        assert not is_canonical_integer(text), text
        expected = int(hashlib.md5(text.encode("utf-8")).hexdigest()[:text_code_digits], 16)
        assert text_code(text) == expected, text


@pytest.mark.parametrize("kind", ["integers", "near", "mixed"])
@pytest.mark.parametrize("config", [dict(l0=None, linf=2, top=None), dict(l0=1, linf=1, top=None),
                                    dict(l0=3, linf=2, top=5)],
                         ids=["linf", "l0-1", "l0-3-top"])
def test_duckdb_equals_reference_on_text(kind, config):
    for data_seed in range(2):
        rows = _rows(data_seed, kind)
        expected = reference_histogram(rows, seed=300 + data_seed, **config)
        actual = bounded_histogram(_table(rows), user_column="user", item_column="item",
                                   seed=300 + data_seed, **config)
        _assert_same(actual, expected)
        assert all(isinstance(label, str) for label in actual.items)  # labels stay text


def test_leading_zeros_never_merge():
    rows = [("1", "7"), ("2", "007"), ("3", "007"), ("4", "+7"), ("5", "-0"), ("6", "0"),
            ("7", "7.0"), ("8", "\uff17")]
    histogram = bounded_histogram(_table(rows), user_column="user", item_column="item",
                                  l0=1, seed=5)
    assert histogram.as_dict() == {"007": 2, "+7": 1, "-0": 1, "0": 1, "7": 1, "7.0": 1,
                                   "\uff17": 1}
    # ties (count 1) in label order, the text order (code points), not numeric
    assert histogram.items == ("007", "+7", "-0", "0", "7", "7.0", "\uff17")


def test_a_value_code_does_not_depend_on_other_values():
    """Adding one user whose item is not an integer (the column stops being all
    integers) changes at most l0 counts, each by at most linf: no other user's
    choice moves, as it would under a per-column rule."""
    rows = _rows(3, "integers", n_rows=2000, n_users=200)
    l0, linf = 2, 1
    kwargs = dict(user_column="user", item_column="item", l0=l0, linf=linf, seed=9)
    before = bounded_histogram(_table(rows), **kwargs).as_dict()
    intruder = [("intruder", label) for label in ["x", "007", "3", "-2", "y"]]
    after = bounded_histogram(_table(rows + intruder), **kwargs).as_dict()
    changed = {label: after.get(label, 0) - before.get(label, 0)
               for label in set(before) | set(after)}
    changed = {label: delta for label, delta in changed.items() if delta}
    assert len(changed) <= l0 and all(0 < delta <= linf for delta in changed.values())


def test_integer_text_selects_like_integers():
    """Same keys: integer-valued text chooses the items its integers choose."""
    rows = [(user, item) for user, item in
            ((int(u), int(i)) for u, i in _rows(4, "integers", n_rows=1000))]
    kwargs = dict(user_column="user", item_column="item", l0=2, linf=1, seed=13)
    typed = bounded_histogram(_table(rows), **kwargs)
    text = bounded_histogram(_table([(str(u), str(i)) for u, i in rows]), **kwargs)
    assert {str(label): count for label, count in typed.as_dict().items()} == text.as_dict()


def _code_tie():
    """(non-canonical text, canonical text) with the same code, hence the same
    selection key for every user: a tie that only the tie rule breaks."""
    for index in range(100):
        text = f"tie-{index}"
        code = text_code(text)
        if code < 10 ** 18:
            return text, str(code)
    raise AssertionError("no md5 prefix below 10^18 in 100 tries")  # pragma: no cover


def test_tie_on_key_and_code_keeps_the_non_integer_text():
    text, twin = _code_tie()
    assert text_code(twin) == text_code(text)
    key = SelectionKey.from_seed(1)
    assert key.key(5, text_code(text)) == key.key(5, text_code(twin))
    rows = [("u", twin), ("u", text), ("v", text), ("v", twin)]
    for seed in (1, 2):
        expected = reference_histogram(rows, l0=1, seed=seed)
        assert expected.as_dict() == {text: 2}
        _assert_same(bounded_histogram(_table(rows), user_column="user", item_column="item",
                                       l0=1, seed=seed), expected)


@needs_spark
def test_spark_equals_duckdb_and_reference_on_integer_text_csv(spark, tmp_path):
    text, twin = _code_tie()
    rows = _rows(6, "mixed") + [("t1", twin), ("t1", text), ("t2", text), ("t2", twin)]
    rows += _rows(7, "integers", n_rows=200)
    # Spark reads CSV line by line (no line breaks inside quotes): keep them out
    rows = [(user, item.replace("\n", "|")) for user, item in rows]
    path = tmp_path / "rows.csv"
    path.write_text("user,item\n" + "".join(f'"{u}","{i}"\n' for u, i in rows),
                    encoding="utf-8")
    for config in (dict(l0=1, linf=1, top=None), dict(l0=3, linf=2, top=6)):
        kwargs = dict(user_column="user", item_column="item", seed=21, **config)
        expected = reference_histogram(rows, seed=21, **config)
        _assert_same(bounded_histogram(path, engine="spark", **kwargs), expected)
        _assert_same(bounded_histogram(path, engine="duckdb", **kwargs), expected)

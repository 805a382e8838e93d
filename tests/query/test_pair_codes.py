"""The (unit, group) pairs' codes in the compiled SQL: computed once per
distinct group text and joined back (``_pair_ctes``), they equal the
bounding rule's codes of each pair's own group (``text_code`` /
``is_canonical_integer``), also for several group columns and for a type
whose equal values print differently."""

from __future__ import annotations

import hashlib

import duckdb
import pytest

from privloss.query.bounding import (SelectionKey, is_canonical_integer, text_code,
                                     text_code_digits)
from privloss.query.engines._sql import DUCKDB, bounded_sql, coded_pairs_sql


def _connection(rows, types):
    con = duckdb.connect()
    columns = ", ".join(f"c{i} {t}" for i, t in enumerate(types))
    con.execute(f"CREATE TABLE src ({columns})")
    con.executemany(f"INSERT INTO src VALUES ({', '.join('?' * len(types))})", rows)
    names = ["u"] + [f"g{i}" for i in range(len(types) - 1)]
    con.execute("CREATE VIEW privloss_source AS SELECT " +
                ", ".join(f"c{i} AS {n}" for i, n in enumerate(names)) + " FROM src")
    return con


def _coded(con, groups: int, unit_integer: bool, group_integer: bool) -> dict:
    built = bounded_sql(DUCKDB, "privloss_source", groups=groups, value_grids=[],
                        value_text=[], unit_integer=unit_integer, group_integer=group_integer,
                        key_codes=None, max_groups=None, max_rows=1,
                        group_key=SelectionKey.from_seed(1), row_key=SelectionKey.from_seed(2),
                        quantile_columns=[], bins=1)
    gcols = ", ".join(f"g{i}" for i in range(groups))
    tie = ", gt" if groups == 1 and not group_integer else ""
    out = con.execute(f"{built.with_clause}\nSELECT u, {gcols}, c, uc, gc{tie} FROM coded"
                      ).fetchall()
    return {row[:1 + groups]: row[1 + groups:] for row in out}


def _multi_code(texts) -> int:
    joined = "".join(f"{len(t)}:{t}" for t in texts)
    return int(hashlib.md5(joined.encode()).hexdigest()[:text_code_digits], 16)


def test_one_text_column_codes_equal_the_rule_on_every_pair():
    rows = [(1, "a"), (1, "a"), (1, "17"), (2, "a"), (2, "017"), (3, "-5"), (3, None),
            (None, "a"), (4, "é")]
    con = _connection(rows, ["BIGINT", "VARCHAR"])
    coded = _coded(con, 1, True, False)
    expected = {(1, "a"): 2, (1, "17"): 1, (2, "a"): 1, (2, "017"): 1, (3, "-5"): 1,
                (4, "é"): 1}
    assert {key: value[0] for key, value in coded.items()} == expected
    for (unit, group), (count, uc, gc, gt) in coded.items():
        assert uc == unit
        assert gc == text_code(group)
        assert gt == (1 if is_canonical_integer(group) else 0)


def test_several_columns_code_the_texts_of_each_pair():
    rows = [(1, "a", 2), (1, "a", 2), (1, "b", 10), (2, "ab", 1), (2, "a", 21)]
    con = _connection(rows, ["BIGINT", "VARCHAR", "BIGINT"])
    coded = _coded(con, 2, True, False)
    assert set(coded) == {(1, "a", 2), (1, "b", 10), (2, "ab", 1), (2, "a", 21)}
    for (_, first, second), (_, _, gc) in coded.items():
        assert gc == _multi_code([first, str(second)])


def test_an_integer_group_column_is_coded_as_itself():
    con = _connection([(1, 5), (1, 5), (2, -3)], ["BIGINT", "BIGINT"])
    assert _coded(con, 1, True, True) == {(1, 5): (2, 1, 5), (2, -3): (1, 2, -3)}


def test_equal_values_that_print_differently_keep_their_own_code():
    # 1 day and 24 hours are equal intervals with different texts: each unit's
    # pair is coded by the text of its own rows, whatever the other units hold
    rows = [(1, "1 day"), (2, "24 hours")]
    con = _connection(rows, ["BIGINT", "INTERVAL"])
    coded = _coded(con, 1, True, False)
    texts = {unit: text for (unit, text) in con.execute(
        "SELECT u, CAST(g0 AS VARCHAR) FROM privloss_source").fetchall()}
    alone = {}
    for unit in (1, 2):
        single = _connection([row for row in rows if row[0] == unit], ["BIGINT", "INTERVAL"])
        alone.update({key[0]: value[2] for key, value in _coded(single, 1, True, False).items()})
    for (unit, _), (_, _, gc, _) in coded.items():
        assert gc == text_code(texts[unit]) == alone[unit]


@pytest.mark.parametrize("group_integer", [False, True])
def test_coded_pairs_table_has_the_same_codes(group_integer):
    rows = [(1, 7), (1, 7), (2, 12), (3, 7)]
    con = _connection(rows, ["BIGINT", "BIGINT" if group_integer else "VARCHAR"])
    table = con.execute(coded_pairs_sql(DUCKDB, "privloss_source", groups=1,
                                        unit_integer=True, group_integer=group_integer)
                        ).fetchall()
    assert [row[2] for row in table] == [2, 1, 1]          # c, in the order of p
    assert sorted(row[4] for row in table) == sorted([7, 7, 12] if group_integer else
                                                     [text_code("7"), text_code("7"),
                                                      text_code("12")])


@pytest.mark.parametrize("max_groups", [1, 2, 5])
def test_the_count_only_choice_is_the_reference_choice(max_groups):
    # one window over the distinct pairs (``_group_choice(distinct_pairs=True)``)
    # keeps each unit's groups of smallest (key, code, canonical, group), as the
    # specification does; "7" / "07" and "x" / "y" put code and text ties in play
    import random

    from privloss.query.engines.reference import column_codes, selected_items

    rng = random.Random(max_groups)
    labels = ["7", "07", "x", "y", "-3", "abc", "12", "z z"]
    rows = [(rng.randrange(40), rng.choice(labels)) for _ in range(600)]
    con = _connection(rows, ["BIGINT", "VARCHAR"])
    key = SelectionKey.from_seed(11)
    built = bounded_sql(DUCKDB, "privloss_source", groups=1, value_grids=[], value_text=[],
                        unit_integer=True, group_integer=False, key_codes=None,
                        max_groups=max_groups, max_rows=3, group_key=key,
                        row_key=SelectionKey.from_seed(12), quantile_columns=[], bins=1)
    assert "dense_rank" not in built.with_clause
    kept = set(con.execute(built.with_clause + "\nSELECT u, g0 FROM kept").fetchall())
    groups = {}
    for unit, label in rows:
        groups.setdefault(unit, set()).add(label)
    user_codes = column_codes(groups)
    item_codes = column_codes(labels)
    expected = {(unit, label) for unit, items in groups.items()
                for label in selected_items(unit, sorted(items), max_groups, key, user_codes,
                                            item_codes)}
    assert kept == expected

"""Ties in the group key, and the one-pass shape of the DuckDB bounding.

The engines choose a unit's groups by ``dense_rank`` over its rows, first by
the key ``m`` alone and then by ``(m, code(g), g)`` on the rows that pass; two
groups with the same key must be split by code exactly as the reference does
(``row_number`` over the distinct pairs).  The tied groups below were found by
brute force (random 40-bit integers, and the texts ``t0, t1, ...``, until two
keys of unit 7 under seed 5 coincided); ``test_the_keys_tie`` re-checks them.
"""

from __future__ import annotations

import pandas as pd
import pytest

from privloss.query.engines._sql import DUCKDB, bounded_sql
from tests.aggregate.reference import Engine

engine_duckdb = Engine("duckdb")
from privloss.query.plan import ROW_SEED_OFFSET
from privloss.query.spec import ValueGrid
from privloss.query.bounding import SelectionKey, text_code

from tests.aggregate.reference import bounded
from tests.conftest import spark_skip_reason

SEED, UNIT = 5, 7
#: SelectionKey.from_seed(5).key(7, g) == 700787163 for both
TIED = (118397671477, 272207851805)
#: keys 477107457 (below the tie) and 1630216146 (above it)
BELOW, ABOVE = 6, 1
#: SelectionKey.from_seed(5).key(7, text_code(t)) == 1060047926 for both
TIED_TEXT = ("t18998", "t85932")
GRIDS = {"x": ValueGrid.for_range("x", 0.0, 100.0)}
SPARK_SKIP = spark_skip_reason()


def _rows(groups: list, text: bool) -> list:
    """(unit, (group,), {"x": value}): unit 7 with three rows in each of
    ``groups`` (listed in reverse, so the larger tied code comes first), and
    three more units in each group, each in that group only."""
    rows = []
    for index, group in enumerate(reversed(groups)):
        for j in range(3):
            rows.append((UNIT, (group,), {"x": float(10 * index + j)}))
            rows.append((100 + 10 * index + j, (group,), {"x": float(50 + j)}))
    return [(u, (str(g[0]) if text else g[0],), v) for u, g, v in rows]


def _frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame({"uid": [u for u, _, _ in rows], "g": [g[0] for _, g, _ in rows],
                         "x": [v["x"] for _, _, v in rows]})


def _exact(engine, data, max_groups: int) -> dict:
    got = engine.bounded_aggregates(data, unit="uid", by=("g",), value_columns=("x",),
                                    grids=GRIDS, quantile_columns=("x",), bins=8,
                                    max_groups=max_groups, max_rows=2, seed=SEED)
    return {row["group"]: {k: row[k] for k in ("distinct", "rows", "sum", "nonnull", "bins")}
            for row in got}


def test_the_keys_tie():
    key = SelectionKey.from_seed(SEED)
    assert key.key(UNIT, TIED[0]) == key.key(UNIT, TIED[1]) == 700787163
    assert key.key(UNIT, BELOW) < 700787163 < key.key(UNIT, ABOVE)
    text_keys = {key.key(UNIT, text_code(t)) for t in TIED_TEXT}
    assert text_keys == {1060047926}
    assert text_code(TIED_TEXT[0]) < text_code(TIED_TEXT[1])


@pytest.mark.parametrize("text", [False, True])
@pytest.mark.parametrize("max_groups, chosen", [(1, "first tied"), (2, "below + first tied"),
                                                (3, "all three")])
def test_tied_keys_are_split_by_code(text, max_groups, chosen):
    tied = TIED_TEXT if text else TIED
    groups = [BELOW, tied[0], tied[1], ABOVE] if max_groups > 1 else [tied[0], tied[1], ABOVE]
    rows = _rows(groups, text)
    expected = bounded(rows, by_integer=not text, unit_integer=True, grids=GRIDS,
                       columns=("x",), max_groups=max_groups, max_rows=2, seed=SEED)
    got = _exact(engine_duckdb, _frame(rows), max_groups)
    assert got == expected
    # every group has three units of its own; a fourth is unit 7
    first = str(BELOW) if text else BELOW
    wanted = {"first tied": [tied[0]], "below + first tied": [first, tied[0]],
              "all three": [first, tied[0], tied[1]]}[chosen]
    with_unit = sorted((g[0] for g, e in got.items() if e["distinct"] == 4), key=str)
    assert with_unit == sorted(wanted, key=str)


def test_duckdb_sql_reads_its_source_once():
    """One pass over the rows: no pairs table joined back to the source."""
    built = bounded_sql(DUCKDB, "privloss_source", groups=2,
                        value_grids=[GRIDS["x"]], value_text=[False], unit_integer=False,
                        group_integer=False, key_codes=[1, 2], max_groups=2, max_rows=3,
                        group_key=SelectionKey.from_seed(1),
                        row_key=SelectionKey.from_seed(1 + ROW_SEED_OFFSET),
                        quantile_columns=[0], bins=8)
    assert built.with_clause.count("privloss_source") == 1
    assert "JOIN" not in built.with_clause.upper()


@pytest.mark.slow
@pytest.mark.skipif(SPARK_SKIP is not None, reason=SPARK_SKIP or "")
@pytest.mark.parametrize("text", [False, True])
def test_spark_splits_tied_keys_as_duckdb(spark, tmp_path, text):
    engine_spark = Engine("spark")

    tied = TIED_TEXT if text else TIED
    rows = _rows([BELOW, tied[0], tied[1], ABOVE], text)
    path = tmp_path / "ties.parquet"
    _frame(rows).to_parquet(path, index=False)
    for max_groups in (1, 2):
        assert _exact(engine_spark, path, max_groups) == \
            _exact(engine_duckdb, path, max_groups)


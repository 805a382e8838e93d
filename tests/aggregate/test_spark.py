"""The Spark engine of aggregate gives DuckDB's results (slow: Spark start-up)."""

from __future__ import annotations

import pytest

from tests.aggregate.reference import Engine

engine_duckdb = Engine("duckdb")
from privloss.api.aggregate import aggregate
from privloss.query.spec import ValueGrid
from tests.aggregate.test_aggregate import _frame, _query
from tests.conftest import spark_skip_reason

SPARK_SKIP = spark_skip_reason()
needs_spark = pytest.mark.skipif(SPARK_SKIP is not None, reason=SPARK_SKIP or "")


@needs_spark
@pytest.mark.slow
@pytest.mark.parametrize("seed, by", [(1, ("g",)), (2, ("g",)), (3, ("g", "h"))])
def test_spark_bounding_equals_duckdb(spark, tmp_path, seed, by):
    engine_spark = Engine("spark")

    path = tmp_path / "t.csv"           # CSV: both engines read every column as text
    _frame(seed, text_groups=seed != 2).to_csv(path, index=False)
    grids = {"x": ValueGrid.for_range("x", 0.0, 100.0), "y": ValueGrid.for_range("y", 0, 10)}
    config = dict(unit="uid", by=by, value_columns=("x", "y"), grids=grids,
                  quantile_columns=("x",), bins=8, max_groups=2, max_rows=3, seed=seed,
                  key_texts=None if seed != 1 else [("c1",), ("c3",), ("c9",)])
    expected = {r["group"]: r for r in engine_duckdb.bounded_aggregates(path, **config)}
    got = {r["group"]: r for r in engine_spark.bounded_aggregates(path, **config)}
    assert got == expected and expected


@needs_spark
@pytest.mark.slow
def test_spark_release_equals_duckdb_for_the_same_seed(spark):
    frame = _frame(4)
    parameters = _query(keys=None, epsilon=3.0, aggregations=[
        "count", "count_distinct", "mean:x:0:100", "quantile:x:0:100:0.5"])
    duck = aggregate(frame, **parameters, seed=9)
    on_spark = aggregate(frame, **parameters, seed=9, engine="spark")
    assert on_spark.rows == duck.rows and on_spark.events == duck.events

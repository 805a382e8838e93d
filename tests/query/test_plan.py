"""The query plan and the one engine under every release kind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privloss
from privloss.query.engines import bounded_aggregates, bounded_histogram, histogram_plan, run
from privloss.query.plan import Bounding, QueryPlan
from privloss.query.spec import ValueGrid

from tests.conftest import spark_skip_reason


def _rows(seed: int = 3, n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, 400, n), "item": rng.integers(0, 60, n),
                         "x": rng.random(n) * 100})


@pytest.mark.parametrize("bad, error, match", [
    (dict(privacy_unit=""), TypeError, "privacy_unit"),
    (dict(by=()), ValueError, "by must name"),
    (dict(by=("uid",)), ValueError, "must differ"),
    (dict(bounding="l0=2"), TypeError, "Bounding"),
    (dict(top=0), ValueError, "top"),
    (dict(value_columns=("x",)), ValueError, "without a grid"),
])
def test_a_bad_plan_names_its_field(bad, error, match):
    fields = dict(source="t.csv", privacy_unit="uid", by=("item",), bounding=Bounding(2), seed=1)
    with pytest.raises(error, match=match):
        QueryPlan(**{**fields, **bad})


def test_bounding_checks_its_bounds():
    with pytest.raises(ValueError, match="max_groups must be an integer >= 1, got 0"):
        Bounding(0)
    with pytest.raises(TypeError, match="max_rows_per_group"):
        Bounding(2, 1.5)


def test_a_histogram_is_the_count_statistic_of_a_group_by():
    """The top-k path and the group-by path are one plan: the same bounded counts."""
    frame = _rows()
    histogram = bounded_histogram(frame, user_column="uid", item_column="item", l0=3, linf=2,
                                  seed=11)
    groups = bounded_aggregates(frame, unit="uid", by=("item",), value_columns=(), grids={},
                                quantile_columns=(), bins=0, max_groups=3, max_rows=2, seed=11)
    assert histogram.as_dict() == {row["group"][0]: row["rows"] for row in groups}
    # with value columns the rows are bounded one by one: the same groups, the same counts
    grids = {"x": ValueGrid.for_range("x", 0.0, 100.0)}
    with_values = bounded_aggregates(frame, unit="uid", by=("item",), value_columns=("x",),
                                     grids=grids, quantile_columns=(), bins=0, max_groups=3,
                                     max_rows=2, seed=11)
    assert {r["group"]: (r["rows"], r["distinct"]) for r in with_values} == \
        {r["group"]: (r["rows"], r["distinct"]) for r in groups}


def test_top_returns_the_head_and_the_number_of_groups():
    frame = _rows()
    everything = run(histogram_plan(frame, user_column="uid", item_column="item", l0=2, seed=5))
    head = run(histogram_plan(frame, user_column="uid", item_column="item", l0=2, top=7, seed=5))
    ordered = sorted(everything.groups, key=lambda r: (-r["rows"], r["group"]))
    assert [r["group"] for r in head.groups] == [r["group"] for r in ordered[:7]]
    assert head.total_groups == everything.total_groups == len(everything.groups)


def test_known_keys_keep_only_their_groups():
    frame = _rows()
    plan = QueryPlan(source=frame, privacy_unit="uid", by=("item",), bounding=Bounding(None, 1),
                     seed=2, keys=(("3",), ("5",), ("999",)))
    assert sorted(r["group"] for r in run(plan).groups) == [(3,), (5,)]


def test_without_max_groups_every_group_of_a_unit_counts():
    frame = pd.DataFrame({"uid": [1, 1, 1, 2], "item": ["a", "b", "c", "a"]})
    plan = histogram_plan(frame, user_column="uid", item_column="item", l0=None, linf=1)
    assert {r["group"][0]: r["rows"] for r in run(plan).groups} == {"a": 2, "b": 1, "c": 1}


@pytest.mark.skipif(spark_skip_reason() is not None, reason=str(spark_skip_reason()))
def test_spark_runs_the_same_plan(spark, tmp_path):
    path = tmp_path / "rows.csv"
    _rows(n=1500).to_csv(path, index=False)
    for plan in (histogram_plan(str(path), user_column="uid", item_column="item", l0=2,
                                top=5, seed=9),
                 histogram_plan(str(path), user_column="uid", item_column="item", l0=None,
                                seed=9)):
        duck, spark_result = run(plan, "duckdb"), run(plan, "spark")
        assert spark_result.total_groups == duck.total_groups
        assert sorted(map(str, spark_result.groups)) == sorted(map(str, duck.groups))


def test_epsilon_max_for_every_release_kind(tmp_path):
    from privloss.budget import Ledger

    ledger = Ledger(tmp_path / "b.sqlite", create=True)
    ledger.create_dataset("d", epsilon=1.0, delta=1e-6)
    frame = _rows()
    first = privloss.aggregate(frame, privacy_unit="uid", by=["item"], aggregations=["count"],
                               epsilon="max", delta=1e-7, ledger=ledger, dataset="d",
                               keys=[(i,) for i in range(60)], seed=1)
    assert 0.99 <= first.spent["epsilon"] <= 1.0
    with pytest.raises(privloss.BudgetExceededError):
        privloss.topk(frame, privacy_unit="uid", item="item", k=3, epsilon="max", delta=1e-7, l0=2,
                      ledger=ledger, dataset="d", seed=1)


def test_topk_epsilon_max_spends_what_fits(tmp_path):
    from privloss.budget import Ledger

    ledger = Ledger(tmp_path / "b.sqlite", create=True)
    ledger.create_dataset("d", epsilon=0.5, delta=1e-6)
    release = privloss.topk(_rows(), privacy_unit="uid", item="item", k=3, epsilon="max", delta=1e-7,
                            l0=2, ledger=ledger, dataset="d", seed=1)
    assert 0.49 <= release.spent["epsilon"] <= 0.5


def test_sql_at_the_top_level(tmp_path):
    path = tmp_path / "rows.parquet"
    _rows().to_parquet(path)
    release = privloss.sql("SELECT item, COUNT(*) FROM t GROUP BY item", tables={"t": str(path)},
                           privacy_unit="uid", epsilon=1.0, delta=1e-6, max_groups=2, seed=4,
                           keys=[(i,) for i in range(60)])
    assert len(release.rows) == 60

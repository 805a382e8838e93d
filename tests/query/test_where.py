"""WHERE: row filters in the plan, from SQL and --where, on both engines."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import privloss
from privloss.query import filters as f
from privloss.query.engines import run
from privloss.query.plan import Bounding, QueryPlan
from privloss.query.sql import UnsupportedSql, parse_sql, parse_where

from tests.conftest import spark_skip_reason

RETAIL = "../shared/data/online_retail.csv.gz"


def _frame(n: int = 3000, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"uid": rng.integers(0, 300, n), "g": rng.choice(list("abcde"), n),
                         "x": rng.integers(-5, 20, n).astype(float),
                         "day": pd.to_datetime("2024-01-01")
                         + pd.to_timedelta(rng.integers(0, 60, n), unit="D")})


@pytest.mark.parametrize("condition, expected", [
    ("x > 1 AND g = 'a'", "((\"x\" > 1) AND (\"g\" = 'a'))"),
    ("g NOT IN ('a', 'b')", "(\"g\" NOT IN ('a', 'b'))"),
    ("x BETWEEN -1 AND 3.5", "(\"x\" BETWEEN -1 AND 3.5)"),
    ("g IS NOT NULL", "(\"g\" IS NOT NULL)"),
    ("g LIKE 'a%'", "(\"g\" LIKE 'a%')"),
    ("NOT (x * 2 + 1 <> 3)", "(NOT (((\"x\" * 2) + 1) != 3))"),
    ("CAST(x AS INTEGER) >= 2", "(CAST(\"x\" AS BIGINT) >= 2)"),
    ("day >= DATE '2024-02-01'", "(\"day\" >= DATE '2024-02-01')"),
])
def test_the_supported_grammar(condition, expected):
    assert f.describe(parse_where(condition)) == expected
    parsed = parse_sql(f"SELECT g, COUNT(*) FROM t WHERE {condition} GROUP BY g")
    assert f.describe(parsed.where) == expected


@pytest.mark.parametrize("condition, construct", [
    ("lower(g) = 'a'", "function"),
    ("g IN (SELECT g FROM t)", "IN \\(SELECT"),
    ("x IS 1", r"IS \[NOT\] NULL only"),
    ("g LIKE x", "text pattern"),
    ("CAST(x AS BLOB) > 1", "CAST to"),
    ("x > 1; DROP TABLE t", "one condition"),
    ("NOT " * 60 + "x > 1", "nested"),
])
def test_constructs_outside_the_subset_are_named(condition, construct):
    with pytest.raises(UnsupportedSql, match=construct):
        parse_where(condition)


def _truth(frame: pd.DataFrame, mask) -> dict:
    kept = frame[mask & frame["uid"].notna()]
    return {(g,): (len(rows), rows["uid"].nunique()) for g, rows in kept.groupby("g")}


def _statistics(source, where, engine="duckdb") -> dict:
    plan = QueryPlan(source=source, privacy_unit="uid", by=("g",),
                     bounding=Bounding(None, 10 ** 6), seed=3, where=where)
    return {row["group"]: (row["rows"], row["distinct"]) for row in run(plan, engine).groups}


def test_filtered_statistics_equal_the_truth():
    frame = _frame()
    where = parse_where("x > 1 AND day >= DATE '2024-02-01' AND g IN ('a', 'c', 'e')")
    mask = (frame.x > 1) & (frame.day >= "2024-02-01") & frame.g.isin(["a", "c", "e"])
    assert _statistics(frame, where) == _truth(frame, mask)


def test_text_columns_meet_numbers_and_dates(tmp_path):
    """CSV columns are text: a comparison with a number reads them as numbers."""
    frame = _frame()
    path = tmp_path / "rows.csv"
    frame.assign(day=frame.day.dt.strftime("%Y-%m-%d %H:%M:%S")).to_csv(path, index=False)
    where = parse_where("x >= 10 AND day < TIMESTAMP '2024-01-15 00:00:00'")
    mask = (frame.x >= 10) & (frame.day < "2024-01-15")
    assert {(str(g[0]),): v for g, v in _statistics(str(path), where).items()} == \
        _truth(frame, mask)


def test_a_unit_filtered_out_changes_nothing():
    frame = _frame()
    where = parse_where("x >= 0")
    extra = pd.DataFrame({"uid": [10_000] * 5, "g": list("abcde"), "x": [-1.0] * 5,
                          "day": [pd.Timestamp("2024-01-01")] * 5})
    assert _statistics(pd.concat([frame, extra]), where) == _statistics(frame, where)


def test_a_filter_column_must_exist():
    with pytest.raises(ValueError, match="where column 'nope' is not a column"):
        _statistics(_frame(), parse_where("nope > 1"))


def test_sql_with_where_releases_near_the_truth():
    frame = _frame()
    release = privloss.sql("SELECT g, COUNT(*) FROM t WHERE x > 1 AND g <> 'b' GROUP BY g",
                           tables={"t": frame}, privacy_unit="uid", epsilon=50.0,
                           max_groups=5, max_rows_per_group=1000, seed=5,
                           keys=[(g,) for g in "acde"])
    truth = _truth(frame, (frame.x > 1) & (frame.g != "b"))
    for row in release.rows:
        assert abs(row["values"]["count"] - truth[tuple(row["group"])][0]) < 500
    assert release.parameters["where"] == "((\"x\" > 1) AND (\"g\" != 'b'))"


def test_the_retail_data_through_the_cli(tmp_path, capsys):
    from privloss.cli.main import main

    keys = tmp_path / "keys.csv"
    keys.write_text("Country\nFrance\nGermany\n")
    code = main(["aggregate", RETAIL, "--privacy-unit", "CustomerID", "--by", "Country",
                 "--count", "--where", "Quantity > 0 AND Country IN ('France', 'Germany')",
                 "--keys", str(keys), "--epsilon", "1", "--max-rows-per-group", "5",
                 "--seed", "1", "--json"])
    assert code == 0
    assert '"where"' in capsys.readouterr().out
    assert main(["aggregate", RETAIL, "--privacy-unit", "CustomerID", "--by", "Country",
                 "--count", "--where", "upper(Country) = 'X'", "--epsilon", "1",
                 "--keys", str(keys)]) == 2
    assert "--where: function" in capsys.readouterr().err


@pytest.mark.skipif(spark_skip_reason() is not None, reason=str(spark_skip_reason()))
def test_spark_filters_as_duckdb(spark, tmp_path):
    frame = _frame(800)
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    where = parse_where("(x > 1 OR g LIKE 'a%') AND NOT g = 'e' AND day <= DATE '2024-02-10'")
    assert _statistics(str(path), where, "spark") == _statistics(str(path), where)


def test_topk_and_histogram_take_a_filter():
    """where= on top-k and histograms: the same release as on the filtered data
    (same seed)."""
    frame = _frame(6000)
    kept = frame[frame.g != "a"].reset_index(drop=True)
    kwargs = dict(privacy_unit="uid", item="g", epsilon=1.0, l0=5, domain=list("abcde"),
                  seed=7)
    filtered = privloss.histogram(frame, where="g <> 'a'", **kwargs)
    direct = privloss.histogram(kept, **kwargs)
    assert filtered.items == direct.items
    assert list(filtered.counts) == list(direct.counts)
    top = privloss.topk(frame, privacy_unit="uid", item="g", k=2, epsilon=5.0, l0=5,
                        domain=list("abcde"), seed=7, where=parse_where("g IN ('b', 'c')"))
    assert set(top.items) == {"b", "c"}


def test_the_cli_filter_and_its_refusals(capsys):
    from privloss.cli.main import main

    code = main(["histogram", RETAIL, "--privacy-unit", "CustomerID", "--item-column",
                 "Country", "--epsilon", "1", "--delta", "1e-6", "--l0", "1",
                 "--where", "Quantity < 0", "--seed", "1", "--json", "--quiet"])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["topk", RETAIL, "--privacy-unit", "CustomerID", "--item-column", "Country",
                 "--k", "2", "--epsilon", "1", "--delta", "1e-6", "--l0", "1",
                 "--where", "Quantity <"]) == 2
    assert "--where: " in capsys.readouterr().err

"""Engines against the pure-Python reference, and against each other.

DuckDB tests need ``duckdb`` and ``pyarrow``; Spark tests need ``pyspark`` and
Java and are skipped, with the reason shown, where either is absent.
Statistical tests use fixed seeds and ALPHA = 1e-4."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from privloss.query import SqlQuery, bounded_histogram
from privloss.query.errors import ComputationFailed
from privloss.query.bounding import SelectionKey
from privloss.query.engines.reference import (column_codes, reference_histogram,
                                                  selected_items)
from privloss.samplers import InsecureSeededSource

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")

ALPHA = 1e-4
DATA = Path(__file__).parents[2] / ".." / "shared" / "data"
RETAIL = DATA / "online_retail.csv.gz"


def _table(rows, names=("user", "item")):
    return pa.table({names[0]: [r[0] for r in rows], names[1]: [r[1] for r in rows]})


def _random_rows(seed, n_rows=500, n_users=40, n_items=15, strings=False):
    """Heavy-tailed items; ``strings``: False (integers), True (text) or "mixed"
    (integer users, text items)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        user = rng.randrange(n_users)
        item = min(int(rng.paretovariate(1.2)), n_items)
        if strings is True:
            rows.append((f"user {user}", f"it\u00e9m'{item}"))
        elif strings == "mixed":
            rows.append((user * 2 ** 40 - 7, f"item {item}"))
        else:
            rows.append((user * 7919 - 10 ** 6, item))
    return rows


def _assert_same(actual, expected):
    assert actual.items == expected.items
    assert actual.counts.dtype == np.int64
    assert np.array_equal(actual.counts, expected.counts)
    assert actual.total_items == expected.total_items
    assert actual.next_count == expected.next_count


CONFIGS = [
    dict(l0=None, linf=1, top=None),
    dict(l0=1, linf=1, top=None),
    dict(l0=3, linf=2, top=None),
    dict(l0=2, linf=5, top=4),
    dict(l0=None, linf=3, top=3),
    dict(l0=40, linf=1, top=100),  # l0 above every user's item count, top above the items
]


@pytest.mark.parametrize("strings", [False, True, "mixed"], ids=["integers", "strings", "mixed"])
@pytest.mark.parametrize("config", CONFIGS,
                         ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_duckdb_equals_reference(config, strings):
    for data_seed in range(3):
        rows = _random_rows(data_seed, strings=strings)
        expected = reference_histogram(rows, seed=100 + data_seed, **config)
        actual = bounded_histogram(_table(rows), user_column="user", item_column="item",
                                   seed=100 + data_seed, **config)
        _assert_same(actual, expected)


def test_duckdb_domain_equals_reference():
    rows = _random_rows(7)
    domain = [1, 2, 3, 999]  # 999 is not in the data; items 4.. are dropped
    for top in (None, 2):
        expected = reference_histogram(rows, l0=2, seed=3, domain=domain, top=top)
        actual = bounded_histogram(_table(rows), user_column="user", item_column="item", l0=2,
                                   seed=3, domain=domain, top=top)
        _assert_same(actual, expected)
    full = bounded_histogram(_table(rows), user_column="user", item_column="item",
                             domain=[str(x) for x in domain])  # text labels match integers
    assert set(full.items) == {"1", "2", "3", "999"}
    assert full.as_dict()["999"] == 0


def test_l0_choice_in_duckdb_is_uniform_and_not_row_order():
    # 6000 users with the same 4 items, every user's rows in the same order: a
    # row-order rule would give every user the same pair of items.
    items = [40, 10, 30, 20]
    users = range(6000)
    rows = [(user, item) for user in users for item in items]
    histogram = bounded_histogram(_table(rows), user_column="user", item_column="item", l0=2,
                                  seed=2024)
    assert int(histogram.counts.sum()) == 2 * len(users)
    for count in histogram.counts:  # each item is kept by Binomial(6000, 1/2) users
        assert stats.binomtest(int(count), len(users), 0.5).pvalue > ALPHA
    # the engine's choice is the reference's, whose per-user pairs are uniform
    _assert_same(histogram, reference_histogram(rows, l0=2, seed=2024))
    key = SelectionKey.from_seed(2024)
    codes_u, codes_i = column_codes(users), column_codes(items)
    pairs = Counter(frozenset(selected_items(user, items, 2, key, codes_u, codes_i))
                    for user in users)
    observed = [pairs[frozenset(pair)] for pair in itertools.combinations(items, 2)]
    assert stats.chisquare(observed).pvalue > ALPHA, observed


def test_duckdb_ignores_row_order():
    rows = _random_rows(11)
    first = bounded_histogram(_table(rows), user_column="user", item_column="item", l0=2,
                              linf=2, seed=5)
    random.Random(0).shuffle(rows)
    second = bounded_histogram(_table(rows), user_column="user", item_column="item", l0=2,
                               linf=2, seed=5)
    _assert_same(first, second)


def test_seed_from_source_and_secure_default():
    rows = [(user, item) for user in range(300) for item in range(6)]
    kwargs = dict(user_column="user", item_column="item", l0=2)
    a = bounded_histogram(_table(rows), source=InsecureSeededSource(8), **kwargs)
    b = bounded_histogram(_table(rows), source=InsecureSeededSource(8), **kwargs)
    _assert_same(a, b)
    secure = [bounded_histogram(_table(rows), **kwargs) for _ in range(2)]
    assert all(int(h.counts.sum()) == 600 for h in secure)
    # two secure seeds choose differently (equal only with negligible probability)
    assert secure[0].as_dict() != secure[1].as_dict() or secure[0].as_dict() != a.as_dict()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(user_column="nope", item_column="item"), ValueError, "user_column 'nope' is not a column"),
    (dict(user_column="user", item_column="nope"), ValueError, "item_column 'nope' is not a column"),
    (dict(user_column="user", item_column="user"), ValueError, "must differ"),
    (dict(user_column="", item_column="item"), TypeError, "user_column"),
    (dict(user_column="user", item_column="item", l0=0), ValueError, "l0"),
    (dict(user_column="user", item_column="item", linf=0), ValueError, "linf"),
    (dict(user_column="user", item_column="item", top=0), ValueError, "top"),
    (dict(user_column="user", item_column="item", engine="sqlite"), ValueError, "engine"),
    (dict(user_column="user", item_column="item", l0=2, seed=-1), ValueError, "seed"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        bounded_histogram(_table([(1, 2)]), **kwargs)


def test_empty_table_and_nulls():
    """No data-dependent errors: an empty input is an empty histogram, rows with
    a null user id or a null item are dropped."""
    kwargs = dict(user_column="user", item_column="item")
    empty = pa.table({"user": pa.array([], pa.int64()), "item": pa.array([], pa.string())})
    histogram = bounded_histogram(empty, top=3, **kwargs)
    assert histogram.items == () and histogram.total_items == 0 and histogram.next_count == 0
    assert bounded_histogram(empty, domain=["a"], **kwargs).as_dict() == {"a": 0}
    for extra in ({}, {"l0": 1, "seed": 1}):
        assert bounded_histogram(_table([(1, "a"), (None, "b")]), **extra,
                                 **kwargs).as_dict() == {"a": 1}
        assert bounded_histogram(_table([(1, "a"), (2, None)]), **extra,
                                 **kwargs).as_dict() == {"a": 1}


def test_unreadable_and_missing_files(tmp_path):
    kwargs = dict(user_column="user", item_column="item")
    with pytest.raises(FileNotFoundError, match="not found"):
        bounded_histogram(tmp_path / "missing.csv", **kwargs)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"this is not parquet")
    with pytest.raises(ValueError, match="could not read parquet file"):
        bounded_histogram(garbage, **kwargs)
    header_only = tmp_path / "header.csv"
    header_only.write_text("user,item\n")
    assert bounded_histogram(header_only, **kwargs).items == ()


@pytest.fixture(scope="module")
def retail():
    """The Online Retail log loaded once into an in-memory DuckDB table."""
    if not RETAIL.exists():
        pytest.skip(f"shared data file {RETAIL} is absent")
    connection = duckdb.connect()
    connection.execute(f"CREATE TABLE retail AS SELECT CustomerID, StockCode FROM "
                       f"read_csv('{RETAIL}', all_varchar = true)")
    yield connection
    connection.close()


def test_online_retail_histogram(retail):
    kwargs = dict(user_column="CustomerID", item_column="StockCode")
    query = SqlQuery("SELECT * FROM retail WHERE CustomerID IS NOT NULL", retail)
    loose = bounded_histogram(query, top=10, **kwargs)
    # null user ids are dropped by the engine itself
    with_nulls = bounded_histogram(retail.sql("SELECT * FROM retail"), top=10, **kwargs)
    assert with_nulls.as_dict() == loose.as_dict() and with_nulls.total_items == 3684
    bounded = bounded_histogram(query, top=10, l0=20, seed=1, **kwargs)
    # 4,372 customers and 3,684 stock codes bought by identified customers
    assert loose.total_items == 3684
    assert set(loose.items[:2]) == {"22423", "85123A"}  # cake stand, T-light holder
    assert 800 < loose.counts[0] <= 4372
    assert list(loose.counts) == sorted(loose.counts, reverse=True)
    assert loose.next_count <= loose.counts[-1]
    assert 0 < bounded.counts[0] < loose.counts[0]
    assert bounded.total_items <= loose.total_items


@pytest.mark.slow
@pytest.mark.skipif(not RETAIL.exists(), reason=f"shared data file {RETAIL} is absent")
def test_online_retail_from_the_file():
    kwargs = dict(user_column="CustomerID", item_column="StockCode", top=3)
    assert bounded_histogram(RETAIL, **kwargs).total_items == 3684   # null users dropped
    query = SqlQuery("SELECT CustomerID, StockCode FROM retail WHERE CustomerID IS NOT NULL",
                     tables={"retail": RETAIL})
    assert bounded_histogram(query, **kwargs).total_items == 3684


# ---------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------

from tests.conftest import spark_skip_reason  # noqa: E402

SPARK_SKIP = spark_skip_reason()
needs_spark = pytest.mark.skipif(SPARK_SKIP is not None, reason=SPARK_SKIP or "")


@needs_spark
def test_spark_equals_reference_and_duckdb_on_a_csv_file(spark, tmp_path):
    rows = _random_rows(21, strings=True)
    path = tmp_path / "rows.csv"
    path.write_text("user,item\n" + "".join(f'"{u}","{i}"\n' for u, i in rows),
                    encoding="utf-8")
    kwargs = dict(user_column="user", item_column="item", l0=2, linf=2, top=5, seed=77)
    expected = reference_histogram(rows, l0=2, linf=2, top=5, seed=77)
    _assert_same(bounded_histogram(path, engine="spark", **kwargs), expected)
    _assert_same(bounded_histogram(path, engine="duckdb", **kwargs), expected)


@needs_spark
@pytest.mark.slow
def test_spark_equals_reference_on_integer_frames(spark):
    rows = _random_rows(22)
    frame = spark.createDataFrame(rows, "user long, item long")
    for config in CONFIGS[:3]:
        expected = reference_histogram(rows, seed=78, **config)
        _assert_same(bounded_histogram(frame, user_column="user", item_column="item",
                                       engine="spark", seed=78, **config), expected)


@needs_spark
def test_spark_errors(spark, tmp_path):
    frame = spark.createDataFrame([(1, "a"), (None, "b"), (2, None)], "user long, item string")
    assert bounded_histogram(frame, user_column="user", item_column="item",
                             engine="spark").as_dict() == {"a": 1}     # nulls dropped
    frame.createOrReplaceTempView("privloss_errors")
    for text in ("SELECT 1 AS user, 'a' AS item; SELECT 2", "INSERT INTO privloss_errors "
                 "VALUES (3, 'c')", "CREATE TABLE x AS SELECT 1", "SET spark.x = 1"):
        with pytest.raises(ValueError, match="SELECT|parse"):
            bounded_histogram(SqlQuery(text, spark), user_column="user", item_column="item",
                              engine="spark")
    failing = SqlQuery("SELECT user, raise_error(concat('count=', CAST(count(*) OVER () AS "
                       "STRING))) AS item FROM privloss_errors", spark)
    with pytest.raises(ComputationFailed) as failure:
        bounded_histogram(failing, user_column="user", item_column="item", engine="spark")
    assert "count" not in str(failure.value) and "3" not in str(failure.value).split("(")[0]
    with pytest.raises(ValueError, match="item_column 'x' is not a column"):
        bounded_histogram(frame, user_column="user", item_column="x", engine="spark")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match="could not"):
        bounded_histogram(garbage, user_column="user", item_column="item", engine="spark")


@needs_spark
@pytest.mark.slow
def test_spark_more_configurations(spark):
    for config in CONFIGS:
        rows = _random_rows(31, strings=True)
        frame = spark.createDataFrame(rows, "user string, item string")
        expected = reference_histogram(rows, seed=5, **config)
        _assert_same(bounded_histogram(frame, user_column="user", item_column="item",
                                       engine="spark", seed=5, **config), expected)


@needs_spark
@pytest.mark.slow
def test_spark_python_frames_and_sql(spark, tmp_path):
    pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    rows = _random_rows(41, strings=True)
    table = _table(rows)
    kwargs = dict(user_column="user", item_column="item", l0=2, seed=9, engine="spark")
    expected = reference_histogram(rows, l0=2, seed=9)
    for frame in (table, table.to_pandas(), pl.from_arrow(table), pl.from_arrow(table).lazy()):
        _assert_same(bounded_histogram(frame, **kwargs), expected)
    spark.createDataFrame(table.to_pandas()).createOrReplaceTempView("events")
    _assert_same(bounded_histogram(SqlQuery("SELECT * FROM events", spark), **kwargs), expected)
    _assert_same(bounded_histogram("SELECT * FROM events", **kwargs), expected)


@needs_spark
@pytest.mark.slow
@pytest.mark.skipif(not RETAIL.exists(), reason=f"shared data file {RETAIL} is absent")
def test_spark_online_retail_equals_duckdb(spark):
    frame = spark.read.csv(str(RETAIL), header=True, escape='"')
    frame = frame.where(frame.CustomerID.isNotNull())
    kwargs = dict(user_column="CustomerID", item_column="StockCode", l0=10, linf=1, top=20,
                  seed=3)
    on_spark = bounded_histogram(frame, engine="spark", **kwargs)
    duck_query = SqlQuery("SELECT CustomerID, StockCode FROM retail WHERE CustomerID IS NOT "
                          "NULL", tables={"retail": RETAIL})
    _assert_same(on_spark, bounded_histogram(duck_query, **kwargs))


@pytest.mark.parametrize("text, message", [
    ("SELECT 1 AS u, 2 AS i; DROP TABLE t", "does not parse as one"),
    ("CREATE TABLE leak AS SELECT 1 AS u", "must be a SELECT query"),
    ("INSERT INTO t VALUES (1, 2)", "must be a SELECT query|does not parse"),
    ("SET spark.sql.ansi.enabled = false", "must be a SELECT query"),
    ("CACHE TABLE t", "must be a SELECT query"),
])
def test_spark_refuses_anything_but_one_query(spark, text, message):
    """Issue 10 item 4: the Spark path takes exactly one query (Spark's own parser)."""
    from privloss.query.engines.spark_engine import check_single_query
    with pytest.raises(ValueError, match=message):
        check_single_query(spark, text)
    check_single_query(spark, "SELECT 1 AS u, 'a' AS i")        # one query: accepted

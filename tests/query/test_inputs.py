"""Every kind of input gives the same histogram; bad inputs fail clearly."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

from privloss.query import SqlQuery, bounded_histogram
from privloss.query.engines.reference import reference_histogram
from privloss.query.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       resolve_input)

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

KWARGS = dict(user_column="user id", item_column="item", l0=2, linf=2, top=4, seed=13)


@pytest.fixture(scope="module")
def rows():
    rng = random.Random(17)
    return [(f"u{rng.randrange(25)}", f"i{min(int(rng.paretovariate(1.1)), 12)}")
            for _ in range(300)]


@pytest.fixture(scope="module")
def expected(rows):
    return reference_histogram(rows, **{k: v for k, v in KWARGS.items() if "column" not in k})


@pytest.fixture(scope="module")
def table(rows):
    return pa.table({"user id": [u for u, _ in rows], "item": [i for _, i in rows],
                     "other": list(range(len(rows)))})


def _check(histogram, expected):
    assert histogram.items == expected.items
    assert np.array_equal(histogram.counts, expected.counts)
    assert (histogram.total_items, histogram.next_count) == (expected.total_items,
                                                             expected.next_count)


def _csv_text(rows, sep=","):
    return f"user id{sep}item{sep}other\n" + "".join(
        f"{u}{sep}{i}{sep}{n}\n" for n, (u, i) in enumerate(rows))


def test_files(tmp_path, rows, table, expected):
    csv = tmp_path / "rows.csv"
    csv.write_text(_csv_text(rows))
    gz = tmp_path / "rows.csv.gz"
    gz.write_bytes(gzip.compress(_csv_text(rows).encode()))
    tsv = tmp_path / "rows.tsv"
    tsv.write_text(_csv_text(rows, "\t"))
    parquet = tmp_path / "rows.parquet"
    pq.write_table(table, parquet)
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    pq.write_table(table.slice(0, 100), dataset / "part-0.parquet")
    pq.write_table(table.slice(100), dataset / "part-1.parquet")
    for data in (csv, str(gz), tsv, parquet, dataset):
        _check(bounded_histogram(data, **KWARGS), expected)


def test_csv_columns_are_text(tmp_path):
    path = tmp_path / "numbers.csv"
    path.write_text("user id,item\n1,10\n2,10\n2,9\n")
    h = bounded_histogram(path, user_column="user id", item_column="item")
    assert h.items == ("10", "9")  # labels are strings; ties would sort as text


def test_frames(rows, table, expected):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    frames = [table, table.combine_chunks().to_batches()[0],
              table.to_pandas(), pl.from_arrow(table), pl.from_arrow(table).lazy()]
    assert isinstance(frames[2], pd.DataFrame)
    for frame in frames:
        _check(bounded_histogram(frame, **KWARGS), expected)


def test_sql_inputs(tmp_path, table, expected):
    parquet = tmp_path / "rows.parquet"
    pq.write_table(table, parquet)
    # privloss's own connection reads only the registered tables
    _check(bounded_histogram(SqlQuery("SELECT * FROM rows", tables={"rows": parquet}),
                             **KWARGS), expected)
    empty = bounded_histogram(SqlQuery("SELECT * FROM rows WHERE false",
                                       tables={"rows": parquet}), **KWARGS)
    assert empty.items == () and empty.total_items == 0
    with pytest.raises(ValueError, match="Permission|disabled"):
        bounded_histogram(SqlQuery(f"SELECT * FROM read_parquet('{parquet}')"), **KWARGS)
    connection = duckdb.connect()
    connection.execute(f"CREATE TABLE events AS SELECT * FROM read_parquet('{parquet}')")
    before = connection.execute("SELECT count(*) FROM events").fetchall()
    _check(bounded_histogram(SqlQuery("SELECT * FROM events", connection), **KWARGS), expected)
    _check(bounded_histogram(connection.sql("FROM events"), **KWARGS), expected)
    # the user's connection is left usable and unchanged
    assert connection.execute("SELECT count(*) FROM events").fetchall() == before
    connection.close()


def test_resolve_input_kinds(tmp_path, table):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n")
    assert resolve_input(path) == FileInput(path, "csv", files=(str(path),))
    assert resolve_input(str(path)).format == "csv"
    assert isinstance(resolve_input(table), FrameInput)
    assert isinstance(resolve_input("  select 1"), QueryInput)
    assert isinstance(resolve_input("WITH t AS (SELECT 1) SELECT * FROM t"), QueryInput)
    assert isinstance(resolve_input(duckdb.sql("SELECT 1 AS a")), RelationInput)
    assert resolve_input(SqlQuery("SELECT 1", None)) == QueryInput("SELECT 1", None)
    resolved = resolve_input(SqlQuery("SELECT * FROM t", tables={"t": path}))
    assert resolved.tables == (("t", FileInput(path, "csv", files=(str(path),))),)
    with pytest.raises(FileNotFoundError, match="select 1.csv"):
        resolve_input(Path("select 1.csv"))  # a Path is never SQL


@pytest.mark.parametrize("name, error, match", [
    ("missing.csv", FileNotFoundError, "data file not found"),
    ("data.json", ValueError, "unsupported data file type"),
    ("data.parquet.gz", ValueError, "unsupported data file type"),
])
def test_bad_paths(tmp_path, name, error, match):
    if name != "missing.csv":
        (tmp_path / name).write_text("{}")
    with pytest.raises(error, match=match):
        resolve_input(tmp_path / name)


def test_bad_inputs(tmp_path):
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(ValueError, match="no \\*.parquet files"):
        resolve_input(empty_dir)
    with pytest.raises(TypeError, match="unsupported data of type"):
        resolve_input([("u", "i")])
    with pytest.raises(ValueError, match="empty string"):
        resolve_input("  ")
    with pytest.raises(ValueError, match="non-empty SQL"):
        SqlQuery("")
    with pytest.raises(ValueError, match="failed"):
        bounded_histogram("SELECT * FROM no_such_table", user_column="u", item_column="i")
    with pytest.raises(TypeError, match="DuckDB connection"):
        bounded_histogram(SqlQuery("SELECT 1", connection=object()), user_column="u",
                          item_column="i")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text('u,i\n1,"unterminated\n')
    with pytest.raises(ValueError, match="could not"):
        bounded_histogram(bad_csv, user_column="u", item_column="i")

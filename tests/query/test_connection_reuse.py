"""One release with a join opens two private DuckDB connections, not four:
the tables' schemas are read on one, and the check before the charge and the
release after it share the other (kept with the release's file copies,
closed with them).  The released values are those of separate connections."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privloss
from privloss.query.engines import duckdb_engine, duckdb_joins

QUERY = "SELECT p.region, COUNT(*) FROM o JOIN p ON o.k = p.k GROUP BY p.region"


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(5)
    orders = pd.DataFrame({"uid": rng.integers(0, 80, 800), "k": rng.choice(list("abcde"), 800)})
    lookup = pd.DataFrame({"k": list("abcd"), "region": ["N", "N", "S", "S"]})
    orders.to_parquet(tmp_path / "orders.parquet")
    lookup.to_csv(tmp_path / "lookup.csv", index=False)
    return {"o": str(tmp_path / "orders.parquet"), "p": str(tmp_path / "lookup.csv")}


def _release(files, **extra):
    return privloss.sql(QUERY, tables={"o": files["o"]}, public_tables={"p": files["p"]},
                        privacy_unit="uid", epsilon=1.0, keys=["N", "S"], max_groups=1,
                        max_rows_per_group=5, seed=7, **extra)


def _counting(monkeypatch):
    opened, closed = [], []
    real = duckdb_engine._locked_connection

    def counted(duckdb, allowed, spill):
        connection = real(duckdb, allowed, spill)
        opened.append(connection)
        return connection

    monkeypatch.setattr(duckdb_engine, "_locked_connection", counted)
    return opened


def test_a_join_release_opens_two_connections(files, monkeypatch):
    opened = _counting(monkeypatch)
    release = _release(files)
    assert len(opened) == 2
    for connection in opened:           # every one closed with the release
        with pytest.raises(Exception):
            connection.execute("SELECT 1")
    with monkeypatch.context() as patch:   # a connection per step: the same release
        patch.setattr(duckdb_joins, "_reusable", lambda inputs: False)
        alone = _release(files)
    assert release.rows == alone.rows


def test_a_service_snapshot_does_not_share(files):
    from privloss.query.inputs import FileInput, LoadedTables
    item = FileInput(None, "csv", False, ("x.csv",), tables=LoadedTables(prepare=True))
    assert not duckdb_joins._reusable([item])
    assert not duckdb_joins._reusable([FileInput(None, "csv", False, ("x.csv",))])


def test_a_join_statement_runs_on_its_own_cursor_again_and_again(files, monkeypatch):
    # the joined plan's statement runs over a view on the release's cursor (not the
    # relational API's rendering): a second run on the shared connection sees no
    # view of the first, and the released values are those of separate connections
    real, results = duckdb_engine.run, []

    def twice(plan):
        results.extend([real(plan), real(plan)])
        return results[-1]

    monkeypatch.setattr(duckdb_engine, "run", twice)
    release = _release(files)
    # the engine returns groups in no fixed order (DuckDB's threads): the release
    # orders them itself (by its keys, or sorted), so compare them as sets
    first, second = ({str(group["group"]): group for group in result.groups}
                     for result in results)
    assert len(results) == 2 and first == second
    assert results[0].total_groups == results[1].total_groups
    monkeypatch.setattr(duckdb_engine, "run", real)
    with monkeypatch.context() as patch:
        patch.setattr(duckdb_joins, "_reusable", lambda inputs: False)
        assert _release(files).rows == release.rows

"""Operator errors stop the start (one line naming the dataset and the column or
expression); the data is read once into a snapshot; a changed source is a new
version; a changed source that cannot be read keeps the old one serving."""

from __future__ import annotations

import os
import time

import pytest

from tests.service.conftest import bearer, cheap_hasher, need_service_extra

need_service_extra()
pytest.importorskip("duckdb")

from privloss.cli.main import main

RETAIL = "CustomerID,StockCode,Quantity,UnitPrice\n1,A,2,3.5\n2,B,1,1.0\n3,A,4,2.0\n"


def _config(directory, sql: str, columns='["StockCode"]', extra: str = "") -> str:
    (directory / "retail.csv").write_text(RETAIL, encoding="utf-8")
    path = directory / "service.toml"
    path.write_text("\n".join([
        "[service]", 'ledger = "budget.sqlite"', extra, "",
        "[[dataset]]", 'name = "retail"', f"sql = {sql!r}",
        'tables = { retail = "retail.csv" }', 'user_column = "CustomerID"',
        f"columns = {columns}", "epsilon = 1.0", "delta = 1e-6", "",
        "[[analyst]]", 'name = "alice"', 'datasets = ["retail"]', ""]), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("sql, columns, named", [
    # the red team's case: arithmetic over CSV text does not bind
    ("SELECT CustomerID, StockCode, Quantity * UnitPrice AS revenue FROM retail",
     '["StockCode", "revenue"]', "Quantity * UnitPrice"),
    ("SELECT CustomerID, StockCode FROM retail", '["StockCode", "Country"]', "'Country'"),
    ("SELECT CustomerID AS who, StockCode FROM retail", '["StockCode"]', "'CustomerID'"),
    ("SELECT CustomerID, CAST(StockCode AS INTEGER) AS code FROM retail", '["code"]',
     "Conversion Error"),
    ("SELECT * FROM read_csv('/etc/passwd')", '["StockCode"]', "FROM"),
    ("DELETE FROM retail", '["StockCode"]', "one SELECT"),
])
@pytest.mark.parametrize("command", [["serve"], ["serve", "check"]])
def test_operator_error_refuses_to_start_with_one_line(tmp_path, capsys, sql, columns, named,
                                                        command):
    path = _config(tmp_path, sql, columns)
    assert main(command + ["--config", path]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "dataset 'retail'" in error and named in error, error
    assert not (tmp_path / "budget.sqlite").exists()       # nothing created, nothing served


def test_serve_check_reads_every_dataset_once(tmp_path, capsys):
    path = _config(tmp_path, "SELECT CustomerID, StockCode FROM retail")
    assert main(["serve", "check", "--config", path]) == 0
    out = capsys.readouterr().out
    assert "dataset 'retail': ok" in out
    snapshots = list((tmp_path / "service.state" / "snapshots").glob("retail-*.parquet"))
    assert len(snapshots) == 1 and oct(snapshots[0].stat().st_mode & 0o777) == "0o600"


def _app(path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config

    config = load_config(path)
    token = add_analyst(config.tokens, "alice", hasher=cheap_hasher())
    app = create_app(config)
    return TestClient(app, raise_server_exceptions=False), token, config, app


HISTOGRAM = {"column": "StockCode", "epsilon": 0.1, "domain": ["A", "B"], "label": "q"}


def _touch(path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    later = time.time() + 5
    os.utime(path, (later, later))


def test_releases_read_the_snapshot_and_a_changed_source_is_a_new_version(tmp_path,
                                                                         monkeypatch):
    import privloss.query.engines as engines

    path = _config(tmp_path, "SELECT CustomerID, StockCode FROM retail")
    client, token, config, app = _app(path)
    read = []
    real = engines.bounded_histogram

    def spy(data, **kwargs):
        read.append(str(data.path))
        return real(data, **kwargs)
    monkeypatch.setattr(engines, "bounded_histogram", spy)
    with client:
        first = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                            json=HISTOGRAM)
        assert first.status_code == 200, first.text
        assert read and all(name.endswith(".parquet") and "/snapshots/" in name
                            for name in read)           # never the operator's CSV
        again = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                            json=HISTOGRAM).json()
        assert again["receipt"]["cached"]                # same data: the stored answer
        _touch(tmp_path / "retail.csv", RETAIL + "4,B,1,1.0\n")
        changed = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                              json=HISTOGRAM).json()
        assert not changed["receipt"]["cached"]          # new version: a new release
        assert read[-1] != read[0]


def test_each_version_is_read_into_the_engine_once(tmp_path, monkeypatch):
    """Issue 19 item 3: a snapshot version is loaded into the engine when it is
    made (rows and the pairs of every declared column), releases reuse it, and
    a changed source is a new version with tables of its own holding the new
    rows; statistics equal those of the snapshot file read directly."""
    import dataclasses

    import privloss.query.engines as engines
    from privloss.query.engines import duckdb_engine, histogram_plan

    path = _config(tmp_path, "SELECT CustomerID, StockCode FROM retail")
    client, token, config, app = _app(path)
    seen = []
    real = engines.bounded_histogram

    def spy(data, **kwargs):
        seen.append(data)
        return real(data, **kwargs)
    monkeypatch.setattr(engines, "bounded_histogram", spy)
    reads = []
    original = duckdb_engine.LoadedFile.read.__func__

    def counting(cls, *args, **kwargs):
        reads.append(1)
        return original(cls, *args, **kwargs)

    def statistics(source):
        plan = histogram_plan(source, user_column="CustomerID", item_column="StockCode",
                              l0=1, seed=5)
        return sorted(duckdb_engine.run(plan).groups, key=repr)
    with client:
        store = app.state.service.snapshots
        first_version = store.latest(config.datasets["retail"])
        assert first_version.tables is not None and len(first_version.tables) == 1
        monkeypatch.setattr(duckdb_engine.LoadedFile, "read", classmethod(counting))
        for label in ("a", "b"):
            response = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                                   json={**HISTOGRAM, "label": label})
            assert response.status_code == 200, response.text
        assert reads == [] and all(data.tables is first_version.tables for data in seen)
        assert statistics(seen[0]) == statistics(dataclasses.replace(seen[0], tables=None))
        _touch(tmp_path / "retail.csv", RETAIL + "4,B,1,1.0\n5,C,1,1.0\n")
        changed = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                              json={**HISTOGRAM, "label": "c"})
        assert changed.status_code == 200, changed.text
        assert reads == [1]                      # the new version, read once
        assert seen[-1].tables is not first_version.tables and seen[-1].path != seen[0].path
        new = statistics(seen[-1])
        assert new == statistics(dataclasses.replace(seen[-1], tables=None))
        assert {row["group"] for row in new} == {("A",), ("B",), ("C",)}


def test_a_changed_source_that_cannot_be_read_keeps_the_old_version(tmp_path, caplog):
    path = _config(tmp_path, "SELECT CustomerID, CAST(Quantity AS INTEGER) AS quantity "
                             "FROM retail", columns='["quantity"]')
    client, token, config, app = _app(path)
    body = {"column": "quantity", "epsilon": 0.1, "domain": ["1", "2", "4"], "label": "q"}
    with client:
        first = client.post("/v1/datasets/retail/histogram", headers=bearer(token), json=body)
        assert first.status_code == 200, first.text
        _touch(tmp_path / "retail.csv", RETAIL + "4,B,many,1.0\n")    # the cast now fails
        with caplog.at_level("ERROR", logger="privloss.service"):
            again = client.post("/v1/datasets/retail/histogram", headers=bearer(token),
                                json=body)
        assert again.status_code == 200 and again.json()["receipt"]["cached"]
        assert "still serving" in caplog.text


def test_the_snapshot_is_a_function_of_the_rows(tmp_path):
    """Two reads of the same rows give the same version (stored answers survive a
    lost manifest), and rows in another order too (the snapshot is sorted)."""
    from privloss.service.config import load_config
    from privloss.service.snapshots import SnapshotStore

    versions = []
    for number, text in enumerate([RETAIL, "CustomerID,StockCode,Quantity,UnitPrice\n"
                                   + "".join(reversed(RETAIL.splitlines(True)[1:]))]):
        folder = tmp_path / str(number)
        folder.mkdir()
        config = load_config(_config(folder, "SELECT CustomerID, StockCode FROM retail"))
        (folder / "retail.csv").write_text(text, encoding="utf-8")
        versions.append(SnapshotStore(folder / "state").load(config.datasets["retail"]).version)
    assert versions[0] == versions[1]


def test_sql_over_a_text_column_is_422_in_plan_and_release_without_the_operators_sql(
        tmp_path):
    operator_sql = "SELECT CustomerID, StockCode, Quantity FROM retail WHERE UnitPrice <> '0'"
    path = _config(tmp_path, operator_sql, columns='["StockCode", "Quantity"]')
    client, token, config, app = _app(path)
    body = {"query": "SELECT StockCode, SUM(Quantity) FROM retail GROUP BY StockCode",
            "epsilon": 0.5, "delta": 1e-6, "bounds": {"Quantity": [0, 10]}}
    with client:
        for endpoint in ("sql", "sql/plan"):
            response = client.post(f"/v1/datasets/retail/{endpoint}", headers=bearer(token),
                                   json=body)
            assert response.status_code == 422, response.text
            detail = response.json()["detail"]
            assert "'Quantity'" in detail and "numeric" in detail
            assert "WHERE" not in response.text and "snapshots" not in response.text
        assert app.state.service.ledger.show("retail")["releases"] == 0


def test_a_change_is_read_once_by_concurrent_releases(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import privloss.service.snapshots as snapshots
    from privloss.service.config import load_config

    config = load_config(_config(tmp_path, "SELECT CustomerID, StockCode FROM retail"))
    dataset = config.datasets["retail"]
    store = snapshots.SnapshotStore(tmp_path / "state")
    first = store.load(dataset)
    writes = []
    real = snapshots._write

    def counted(*args):
        writes.append(args)
        return real(*args)
    monkeypatch.setattr(snapshots, "_write", counted)
    _touch(tmp_path / "retail.csv", RETAIL + "4,B,1,1.0\n")
    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(lambda _: store.current(dataset).version, range(16)))
    assert len(writes) == 1 and set(seen) == {seen[0]} and seen[0] != first.version


def test_an_engine_fault_after_the_charge_is_503_and_stays_charged(service, monkeypatch):
    import privloss.query.engines as engines

    client, tokens, _, app = service

    def fault(*args, **kwargs):
        raise MemoryError("row 17 of customer 4711 needs more memory")
    monkeypatch.setattr(engines, "bounded_histogram", fault)
    response = client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                           json={"column": "article", "epsilon": 0.1, "delta": 1e-7, "k": 5,
                                 "l0": 3, "d_bar": 20})
    assert response.status_code == 503
    body = response.json()
    assert "engine fault" in body["detail"] and "stays charged" in body["detail"]
    assert "4711" not in response.text and body["type"].endswith("computation-failed")
    assert app.state.service.ledger.show("views")["releases"] == 1

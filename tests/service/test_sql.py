"""The DP SQL endpoint (``POST /v1/datasets/{name}/sql`` and ``.../sql/plan``):
releases with receipts, every refusal with its status, nothing charged or read
on refusal, SQL-injection-shaped queries refused, history and audit."""

from __future__ import annotations

import json

import pytest

from tests.service.conftest import bearer, cheap_hasher, need_service_extra

need_service_extra()

COUNTRIES = ["DE", "FR", "IN", "US"]
QUERY = "SELECT country, COUNT(*), SUM(price), AVG(price) FROM shop GROUP BY country"
BODY = {"query": QUERY, "epsilon": 0.2, "delta": 1e-7, "bounds": {"price": [0, 100]},
        "keys": COUNTRIES, "max_groups": 1, "max_rows_per_group": 3}


def _write_data(path) -> None:
    """2,000 purchases by 400 users; ``secret_score`` is in the file but not declared."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    generator = np.random.default_rng(15)
    users = generator.integers(0, 400, size=2000)
    pq.write_table(pa.table({
        "user_id": users.astype(np.int64),
        "country": np.array(COUNTRIES)[users % len(COUNTRIES)],
        "price": generator.uniform(0, 150, size=2000),
        "secret_score": generator.normal(size=2000)}), path)


def _config(directory, *, rate: float = 1000.0, burst: int = 1000):
    from privloss.service.config import load_config

    _write_data(directory / "shop.parquet")
    lines = [
        "[service]", 'ledger = "budget.sqlite"', f"rate = {rate}", f"burst = {burst}",
        "max_body_bytes = 4096", "",
        "[[dataset]]", 'name = "shop"', 'path = "shop.parquet"', 'user_column = "user_id"',
        'columns = ["country", "price"]', "epsilon = 1.0", "delta = 1e-6", "",
        "[[dataset]]", 'name = "other"', 'path = "shop.parquet"', 'user_column = "user_id"',
        'columns = ["country"]', "epsilon = 1.0", "delta = 1e-6", "",
        "[[analyst]]", 'name = "alice"', 'datasets = ["shop", "other"]', "",
        "[[analyst]]", 'name = "bob"', 'datasets = ["shop"]', "epsilon = 0.3", "",
        "[[analyst]]", 'name = "carol"', 'datasets = ["other"]', ""]
    (directory / "service.toml").write_text("\n".join(lines), encoding="utf-8")
    return load_config(directory / "service.toml")


def _client(directory, **limits):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.auth import add_analyst

    config = _config(directory, **limits)
    hasher = cheap_hasher()
    tokens = {name: add_analyst(config.tokens, name, hasher=hasher) for name in config.analysts}
    app = create_app(config)
    return TestClient(app, raise_server_exceptions=False), tokens, config, app


@pytest.fixture()
def shop(tmp_path):
    client, tokens, config, app = _client(tmp_path)
    with client:
        yield client, tokens, config, app


def _spent(client, token, dataset="shop") -> tuple:
    body = client.get(f"/v1/datasets/{dataset}/budget", headers=bearer(token)).json()
    return body["budget"]["dataset"]["spent_epsilon"], body["budget"]["dataset"]["releases"]


def test_plan_is_free_then_release_is_charged_once_and_in_history(shop):
    client, tokens, config, _ = shop
    alice = bearer(tokens["alice"])
    plan = client.post("/v1/datasets/shop/sql/plan", headers=alice, json=BODY)
    assert plan.status_code == 200, plan.text
    plan = plan.json()
    assert plan["fits"] and plan["by"] == ["country"]
    assert {m["aggregation"] for m in plan["measurements"]} >= {"count", "sum(price)",
                                                                 "mean(price)"}
    assert _spent(client, tokens["alice"]) == (0.0, 0)
    answer = client.post("/v1/datasets/shop/sql", headers=alice, json=BODY)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [row["group"] for row in body["rows"]] == [[c] for c in COUNTRIES]
    assert body["receipt"]["release_id"] == 1 and not body["receipt"]["cached"]
    assert body["budget"]["mine"]["spent_epsilon"] == pytest.approx(
        plan["verdict"]["spent_epsilon_after"])
    assert body["parameters"]["max_rows_per_group"] == 3
    for row in body["rows"]:       # 400 users, 1 group each, <= 3 rows: means within [0, 100]
        assert set(row["values"]) == set(body["columns"])
    again = client.post("/v1/datasets/shop/sql", headers=alice, json=BODY).json()
    assert again["receipt"]["cached"] and again["rows"] == body["rows"]
    assert _spent(client, tokens["alice"])[1] == 1
    history = client.get("/v1/datasets/shop/history", headers=alice).json()["releases"]
    assert len(history) == 1
    assert history[0]["query"]["command"] == "sql"
    assert history[0]["query"]["by"] == ["country"]
    assert history[0]["query"]["max_rows_per_group"] == 3
    assert "data" not in history[0]["query"]
    bob_history = client.get("/v1/datasets/shop/history", headers=bearer(tokens["bob"])).json()
    assert bob_history["releases"] == []
    records = [json.loads(line) for line in config.audit_log.read_text().splitlines()]
    released = [r for r in records if r.get("outcome") == "released"]
    assert released and released[0]["parameters"]["command"] == "sql"
    assert released[0]["release_id"] == 1
    # nothing but DP outputs in the audit log: no released values
    assert "values" not in json.dumps(released[0])


def test_quantiles_and_distinct_units(shop, monkeypatch):
    client, tokens, _, app = shop
    reads = _spy_engine(monkeypatch)       # the spy sees a release's reads
    body = {**BODY, "query": "SELECT country, COUNT(DISTINCT user_id), MEDIAN(price), "
                             "QUANTILE(price, 0.9) FROM shop GROUP BY country"}
    answer = client.post("/v1/datasets/shop/sql", headers=bearer(tokens["alice"]), json=body)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert len(body["rows"]) == len(COUNTRIES)
    assert body["aggregations"] == ["count_distinct", "quantile(price,0.5,0.9)"]
    assert reads == {"schema": 1, "rows": 1}
    assert app.state.service.ledger.show("shop")["releases"] == 1


def test_unknown_keys_go_through_the_threshold(shop):
    client, tokens, _, _ = shop
    body = {**BODY, "keys": None, "query": "SELECT country, COUNT(*) FROM shop GROUP BY country",
            "epsilon": 1.0 - 1e-9, "bounds": {}}
    plan = client.post("/v1/datasets/shop/sql/plan", headers=bearer(tokens["alice"]),
                       json={k: v for k, v in body.items() if v is not None}).json()
    assert plan["threshold"] is not None and plan["delta_selection"] > 0


#: (body changes, status, a fragment of the message, field)
REFUSALS = [
    ({"query": "SELECT country, COUNT(*) FROM other GROUP BY country"}, 422,
     "FROM names table 'other'", "query"),
    ({"query": "SELECT country, COUNT(*) FROM secret_table GROUP BY country"}, 422,
     "this endpoint queries dataset 'shop' only", "query"),
    ({"query": "SELECT country, COUNT(*) FROM main.shop GROUP BY country"}, 422,
     "FROM must name one table", "query"),
    ({"query": "SELECT country, COUNT(*) FROM read_parquet('/etc/passwd') GROUP BY country"},
     422, "FROM must name one table", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop GROUP BY country; DROP TABLE shop"}, 422,
     "exactly one SELECT", "query"),
    ({"query": "DROP TABLE shop"}, 422, "only SELECT", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop WHERE lower(country) = 'x' GROUP BY "
               "country"}, 422, "is not supported in WHERE", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop s JOIN other o ON s.country = o.country "
               "GROUP BY country"}, 422, "not a public table", "query"),
    ({"query": "SELECT country, COUNT(*) FROM (SELECT * FROM shop) GROUP BY country"}, 422,
     "subqueries are not supported", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop GROUP BY country HAVING COUNT(*) > 3"}, 422,
     "HAVING is not supported", "query"),
    ({"query": "SELECT country, price FROM shop GROUP BY country"}, 422,
     "neither aggregated nor in GROUP BY", "query"),
    ({"query": "SELECT country, AVG(price) FROM shop GROUP BY country", "bounds": {}}, 422,
     'has no bounds: add "bounds": {"price": [low, high]}', "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop GROUP BY country",
      "bounds": {"price": [0, 100]}}, 422,
     "bounds for 'price': no SUM, AVG or quantile of the query reads it", "bounds"),
    ({"query": "SELECT country, COUNT(*) FROM shop GROUP BY country' --"}, 422,
     "unsupported SQL", "query"),
    ({"query": "SELECT secret_score, COUNT(*) FROM shop GROUP BY secret_score"}, 403,
     "column 'secret_score' is not granted", "query"),
    ({"query": "SELECT country, SUM(secret_score) FROM shop GROUP BY country",
      "bounds": {"price": [0, 100]}}, 403, "column 'secret_score' is not granted", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop WHERE secret_score > 0 GROUP BY country"},
     403, "column 'secret_score' is not granted", "query"),
    ({"query": "SELECT country, SUM(price) FROM shop GROUP BY country",
      "bounds": {"price": [0, 100], "secret_score": [0, 1]}}, 403,
     "column 'secret_score' (in bounds) is not granted", "bounds"),
    ({"query": "SELECT user_id, COUNT(*) FROM shop GROUP BY user_id"}, 403,
     "column 'user_id' is not granted", "query"),
    ({"query": 'SELECT "country; DROP TABLE shop", COUNT(*) FROM shop GROUP BY '
               '"country; DROP TABLE shop"'}, 403, "is not granted", "query"),
    ({"query": "SELECT \u0441ountry, COUNT(*) FROM shop GROUP BY \u0441ountry"}, 403,
     "is not granted", "query"),
    ({"epsilon": -1.0}, 422, "epsilon", "epsilon"),
    ({"bounds": {"price": [100, 0]}}, 422, "", None),
    ({"max_groups": 0}, 422, "max_groups", "max_groups"),
    ({"keys": [["DE", "FR"]]}, 422, "key values must be strings or integers", None),
    ({"noise": "uniform"}, 422, "noise", None),
    ({"sql": "SELECT 1"}, 422, "", "sql"),
    ({"query": "x" * 5000}, 413, "larger than", None),
    ({"query": "SELECT country, COUNT(*) FROM shop WHERE " + "(" * 1500 + "1" + ")" * 1500
               + " GROUP BY country"}, 422, "parentheses nested 1500 deep", "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop WHERE " + "NOT " * 900 + "1 GROUP BY "
               "country"}, 422, "nested too deeply", "query"),
]


def _spy_engine(monkeypatch) -> dict:
    """Count the engine's schema binds and row reads (the real functions still run)."""
    from privloss.query.engines import duckdb_engine as engine_duckdb

    calls = {"schema": 0, "rows": 0}

    def counted(name, kind):
        original = getattr(engine_duckdb, name)

        def wrapper(*args, **kwargs):
            calls[kind] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(engine_duckdb, name, wrapper)

    counted("check", "schema")
    counted("run", "rows")
    return calls


@pytest.mark.parametrize("change, status, fragment, field", REFUSALS,
                         ids=[str(i) for i in range(len(REFUSALS))])
def test_refusals_have_their_status_and_charge_nothing(shop, monkeypatch, change, status,
                                                      fragment, field):
    client, tokens, _, app = shop
    reads = _spy_engine(monkeypatch)
    body = {**BODY, **change}
    if "price" not in body["query"] and "bounds" not in change:
        body["bounds"] = {}          # bounds nothing reads are refused (a case of their own)
    for path in ("sql", "sql/plan"):
        answer = client.post(f"/v1/datasets/shop/{path}", headers=bearer(tokens["alice"]),
                             json=body)
        assert answer.status_code == status, answer.text
        error = answer.json()
        assert fragment in error["detail"], error
        if field is not None:
            assert error.get("field") == field, error
        assert "Traceback" not in answer.text
    assert _spent(client, tokens["alice"]) == (0.0, 0)
    assert app.state.service.ledger.show("shop")["releases"] == 0
    assert reads == {"schema": 0, "rows": 0}


def test_authentication_grant_and_budget_refusals(shop, monkeypatch):
    client, tokens, _, app = shop
    reads = _spy_engine(monkeypatch)
    assert client.post("/v1/datasets/shop/sql", json=BODY).status_code == 401
    assert client.post("/v1/datasets/shop/sql", headers=bearer("not-a-token"),
                       json=BODY).status_code == 401
    forbidden = client.post("/v1/datasets/shop/sql", headers=bearer(tokens["carol"]), json=BODY)
    assert forbidden.status_code == 403 and "not granted" in forbidden.json()["detail"]
    # bob's cap (0.3) refuses epsilon 0.5: 409 naming the cap, nothing charged
    refused = client.post("/v1/datasets/shop/sql", headers=bearer(tokens["bob"]),
                          json={**BODY, "epsilon": 0.5})
    assert refused.status_code == 409, refused.text
    # issue 22: first, in one phrase, what still fits (a search over public parameters)
    detail = refused.json()["detail"]
    assert detail.startswith("refused: at most epsilon 0.2") and "fits" in detail, detail
    plan = client.post("/v1/datasets/shop/sql/plan", headers=bearer(tokens["bob"]),
                       json={**BODY, "epsilon": 0.5}).json()
    assert not plan["fits"] and plan["verdict"]["reason"]
    assert app.state.service.ledger.show("shop")["releases"] == 0
    assert reads["rows"] == 0          # the schema is bound before the charge, no rows read
    # within the cap: released
    assert client.post("/v1/datasets/shop/sql", headers=bearer(tokens["bob"]),
                       json=BODY).status_code == 200


def test_rate_limit(tmp_path):
    client, tokens, _, app = _client(tmp_path, rate=0.01, burst=2)
    with client:
        statuses = [client.post("/v1/datasets/shop/sql/plan", headers=bearer(tokens["alice"]),
                                json=BODY).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]
        assert app.state.service.ledger.show("shop")["releases"] == 0


def test_python_client_sql(shop):
    from privloss.client import BudgetRefused, Client

    client, tokens, _, app = shop
    with Client("http://testserver", tokens["bob"], transport=client._transport) as remote:
        plan = remote.sql_plan("shop", **BODY)
        assert plan["fits"]
        release = remote.sql("shop", **BODY)
        assert release["receipt"]["release_id"] == 1        # the body, as before
        # the library's kind of object (privloss.sql): rows, columns, tables
        from privloss.api.aggregate import AggregateRelease
        assert isinstance(release, AggregateRelease)
        assert release.rows and all(isinstance(row["group"], tuple) for row in release.rows)
        assert release.columns == release.raw["columns"]
        assert release.spent["receipt"]["release_id"] == 1 and not release.cached
        assert release.events and release.parameters["receipt"]["release_id"] == 1
        table = release.to_arrow()
        assert table.num_rows == len(release.rows) and "by0" in table.column_names
        for name in release.columns:
            assert table.column(name).to_pylist() == [row["values"][name]
                                                      for row in release.rows]
        pytest.importorskip("polars")
        assert release.to_polars().height == len(release.rows)
        with pytest.raises(BudgetRefused):
            remote.sql("shop", **{**BODY, "epsilon": 0.29})

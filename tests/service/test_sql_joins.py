"""The service's ``/sql`` with public tables (issue 20 item 4): joins of the
configuration's ``public_tables`` only, their columns public, the dataset's
own columns granted or 403, other joins 422, config checks."""

from __future__ import annotations

import pytest

from tests.service.conftest import bearer, cheap_hasher, need_service_extra
from tests.service.test_sql import COUNTRIES, _write_data

need_service_extra()


def _config(directory, extra_dataset: str = ""):
    from privloss.service.config import load_config

    _write_data(directory / "shop.parquet")
    (directory / "regions.csv").write_text("country,region,population\nDE,EU,83\nFR,EU,68\n"
                                           "IN,AS,1400\nUS,AM,330\n", encoding="utf-8")
    lines = [
        "[service]", 'ledger = "budget.sqlite"', "rate = 1000.0", "burst = 1000",
        'public_tables = { regions = "regions.csv" }', "",
        "[[dataset]]", 'name = "shop"', 'path = "shop.parquet"', 'user_column = "user_id"',
        'columns = ["country", "price"]', "epsilon = 10.0", "delta = 1e-6", extra_dataset, "",
        "[[analyst]]", 'name = "alice"', 'datasets = ["shop"]', ""]
    (directory / "service.toml").write_text("\n".join(lines), encoding="utf-8")
    return load_config(directory / "service.toml")


@pytest.fixture()
def shop(tmp_path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.auth import add_analyst

    config = _config(tmp_path)
    token = add_analyst(config.tokens, "alice", hasher=cheap_hasher())
    with TestClient(create_app(config), raise_server_exceptions=False) as client:
        yield client, token


def _body(query, **extra):
    return {"query": query, "epsilon": 5.0, "delta": 1e-7, "keys": ["EU", "AS", "AM"],
            "max_groups": 1, "max_rows_per_group": 3, **extra}


def test_release_grouped_by_a_public_column(shop):
    client, token = shop
    query = ("SELECT r.region, COUNT(*), AVG(price) FROM shop s JOIN regions r "
             "ON s.country = r.country WHERE r.population > 50 GROUP BY r.region")
    plan = client.post("/v1/datasets/shop/sql/plan", headers=bearer(token),
                       json=_body(query, bounds={"price": [0, 100]}))
    assert plan.status_code == 200, plan.text
    assert plan.json()["joins"][0]["table"] == "regions"
    response = client.post("/v1/datasets/shop/sql", headers=bearer(token),
                           json=_body(query, bounds={"price": [0, 100]}))
    assert response.status_code == 200, response.text
    rows = {row["group"][0]: row["values"] for row in response.json()["rows"]}
    assert set(rows) == {"EU", "AS", "AM"}
    assert rows["EU"]["count"] > rows["AS"]["count"] / 4      # 2 of 4 countries are EU


@pytest.mark.parametrize("query, status, words", [
    ("SELECT r.region, COUNT(*) FROM shop s JOIN regions r ON s.secret_score = r.country "
     "GROUP BY r.region", 403, "not granted"),
    ("SELECT r.region, COUNT(*) FROM shop s JOIN shop t ON s.user_id = t.user_id "
     "GROUP BY r.region", 422, "not a public table"),
    ("SELECT r.region, COUNT(*) FROM shop s JOIN elsewhere r ON s.country = r.country "
     "GROUP BY r.region", 422, "not a public table"),
    ("SELECT r.region, COUNT(*) FROM shop s CROSS JOIN regions r GROUP BY r.region", 422,
     "cross joins"),
    ("SELECT r.region, COUNT(*) FROM shop s JOIN regions r ON s.country <> r.country "
     "GROUP BY r.region", 422, "non-equi"),
    ("SELECT r.region, COUNT(*) FROM shop s JOIN regions r ON s.country = r.country "
     "GROUP BY r.region; DROP TABLE shop", 422, "exactly one"),
])
def test_refusals(shop, query, status, words):
    client, token = shop
    response = client.post("/v1/datasets/shop/sql", headers=bearer(token), json=_body(query))
    assert response.status_code == status, response.text
    assert words in response.json()["detail"]
    spent = client.get("/v1/datasets/shop/budget", headers=bearer(token)).json()
    assert spent["budget"]["dataset"]["releases"] == 0


def test_config_checks_public_tables(tmp_path):
    from privloss.service.config import ConfigError

    with pytest.raises(ConfigError, match="public_tables name"):
        _config(tmp_path, 'public_tables = { "bad name" = "x.csv" }')
    with pytest.raises(ConfigError, match="own name"):
        _config(tmp_path, 'public_tables = { shop = "x.csv" }')
    config = _config(tmp_path, 'public_tables = { fx = "fx.csv" }')
    assert sorted(config.datasets["shop"].public_tables) == ["fx", "regions"]
    assert COUNTRIES


def test_a_public_column_may_be_aggregated_with_its_bounds(shop):
    client, token = shop
    query = ("SELECT s.country, SUM(r.population) FROM shop s JOIN regions r "
             "ON s.country = r.country GROUP BY s.country")
    response = client.post("/v1/datasets/shop/sql/plan", headers=bearer(token),
                           json={**_body(query, bounds={"population": [0, 2000]}),
                                 "keys": COUNTRIES})
    assert response.status_code == 200, response.text

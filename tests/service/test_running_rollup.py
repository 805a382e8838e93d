"""Issue 21 through the service: ``POST /v1/datasets/{name}/running`` (and its
plan) and ``GROUP BY ROLLUP`` through ``/sql``: charged once, stored answers
free, every bad parameter a 422 problem+json before the charge, undeclared
columns 403, never a 500."""

from __future__ import annotations

import pytest

from tests.service.conftest import bearer, cheap_hasher, need_service_extra

need_service_extra()

RUNNING = {"time_column": "day", "period": "week", "start": "2024-01-01", "end": "2024-03-31",
           "statistic": "count_distinct", "max_periods_per_unit": 2, "max_rows_per_period": 1,
           "epsilon": 0.5}
ROLLUP = {"query": "SELECT country, device, COUNT(*) FROM shop GROUP BY ROLLUP(country, device)",
          "epsilon": 0.5, "keys": [[c, d] for c in ("DE", "FR") for d in ("mobile", "web")],
          "max_groups": 1, "max_rows_per_group": 2, "consistent": True}


def _write_data(path) -> None:
    import datetime as dt

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    generator = np.random.default_rng(21)
    users = generator.integers(0, 500, size=3000)
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=int(d))
            for d in generator.integers(0, 90, size=3000)]
    pq.write_table(pa.table({
        "user_id": users.astype(np.int64), "day": pa.array(days, type=pa.date32()),
        "amount": generator.integers(0, 50, size=3000).astype(np.int64),
        "country": np.array(["DE", "FR"])[users % 2],
        "device": np.array(["mobile", "web"])[(users // 2) % 2],
        "hidden": generator.normal(size=3000)}), path)


@pytest.fixture()
def shop(tmp_path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.auth import add_analyst
    from privloss.service.config import load_config

    _write_data(tmp_path / "shop.parquet")
    (tmp_path / "service.toml").write_text("\n".join([
        "[service]", 'ledger = "budget.sqlite"', "rate = 1000.0", "burst = 1000", "",
        "[[dataset]]", 'name = "shop"', 'path = "shop.parquet"', 'user_column = "user_id"',
        'columns = ["day", "amount", "country", "device"]', "epsilon = 2.0", "delta = 1e-5",
        "", "[[analyst]]", 'name = "alice"', 'datasets = ["shop"]', "",
        "[[analyst]]", 'name = "bob"', 'datasets = ["shop"]', "epsilon = 0.4", ""]),
        encoding="utf-8")
    config = load_config(tmp_path / "service.toml")
    hasher = cheap_hasher()
    tokens = {name: add_analyst(config.tokens, name, hasher=hasher) for name in config.analysts}
    with TestClient(create_app(config), raise_server_exceptions=False) as client:
        yield client, tokens


def _spent(client, token) -> tuple:
    body = client.get("/v1/datasets/shop/budget", headers=bearer(token)).json()
    return body["budget"]["dataset"]["spent_epsilon"], body["budget"]["dataset"]["releases"]


def _problem(response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    if field is not None:
        assert body.get("field", "").split(".")[0] == field or field in body["detail"], body
    return body


def test_running_plan_then_release_charged_once_then_stored(shop):
    client, tokens = shop
    alice = bearer(tokens["alice"])
    plan = client.post("/v1/datasets/shop/running/plan", headers=alice, json=RUNNING)
    assert plan.status_code == 200, plan.text
    plan = plan.json()
    assert plan["fits"] and plan["periods"] == 13 and len(plan["events"]) == 1
    assert plan["events"][0].startswith("PureDP(epsilon=0.4999")
    assert _spent(client, tokens["alice"]) == (0.0, 0)
    answer = client.post("/v1/datasets/shop/running", headers=alice, json=RUNNING)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [row["period"] for row in body["periods"]][:2] == ["2024-01-01", "2024-01-08"]
    assert body["receipt"]["release_id"] == 1 and not body["receipt"]["cached"]
    assert body["budget"]["mine"]["spent_epsilon"] == pytest.approx(0.5)
    again = client.post("/v1/datasets/shop/running", headers=alice, json=RUNNING).json()
    assert again["receipt"]["cached"] and again["periods"] == body["periods"]
    assert _spent(client, tokens["alice"]) == (pytest.approx(0.5), 1)
    history = client.get("/v1/datasets/shop/history", headers=alice).json()["releases"]
    assert [row["query"]["command"] for row in history] == ["running"]
    assert history[0]["query"]["period"] == "week" and history[0]["query"]["periods"] == 13
    assert "data" not in history[0]["query"]


def test_running_sum_and_gaussian(shop):
    client, tokens = shop
    body = {**RUNNING, "statistic": "sum", "sum_column": "amount", "low": 0, "high": 40,
            "noise": "gaussian", "delta": 1e-7, "period": "month", "end": "2024-03-01"}
    answer = client.post("/v1/datasets/shop/running", headers=bearer(tokens["alice"]), json=body)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["periods"]) == 3


@pytest.mark.parametrize("path", ["/v1/datasets/shop/running", "/v1/datasets/shop/running/plan"])
@pytest.mark.parametrize("change, status, field", [
    ({"epsilon": 1e-9}, 422, "epsilon"), ({"epsilon": 1e3}, 422, "epsilon"),
    ({"epsilon": "x"}, 422, "epsilon"), ({"delta": 1.0}, 422, "delta"),
    ({"delta": 1e-6}, 422, "delta"),                      # Laplace is pure DP
    ({"noise": "gaussian"}, 422, "delta"),                # needs delta > 0
    ({"max_periods_per_unit": 0}, 422, "max_periods_per_unit"),
    ({"max_periods_per_unit": 10 ** 9}, 422, "max_periods_per_unit"),
    ({"max_rows_per_period": 1e30}, 422, "max_rows_per_period"),
    ({"period": "year"}, 422, "period"), ({"start": "2024-13-01"}, 422, "start"),
    ({"start": "2024-04-01"}, 422, "end"),                # end before start
    ({"period": "month", "start": "2024-01-05"}, 422, "start"),
    ({"period": "day", "start": "1900-01-01", "end": "2100-01-01"}, 422, "end"),
    ({"statistic": "sum"}, 422, "statistic"),
    ({"sum_column": "amount"}, 422, "sum_column"),
    ({"statistic": "sum", "sum_column": "amount", "low": 5, "high": 1}, 422, "low"),
    ({"statistic": "sum", "sum_column": "amount", "low": 0, "high": 10 ** 30}, 422, "high"),
    ({"label": "\ud800"}, 422, "label"), ({"extra": 1}, 422, "extra"),
    ({"time_column": "hidden"}, 403, "time_column"),
    ({"time_column": "user_id"}, 403, "time_column"),
    ({"statistic": "sum", "sum_column": "hidden", "low": 0, "high": 1}, 403, "sum_column"),
    ({"statistic": "sum", "sum_column": "country", "low": 0, "high": 1}, 422, "sum_column"),
])
def test_bad_running_parameters_are_refused_before_the_charge(shop, path, change, status, field):
    import json

    client, tokens = shop
    response = client.post(path, content=json.dumps({**RUNNING, **change}, ensure_ascii=True),
                           headers={**bearer(tokens["alice"]),
                                    "content-type": "application/json"})
    _problem(response, status, field)
    assert _spent(client, tokens["alice"]) == (0.0, 0)


def test_running_over_the_analysts_cap_is_409(shop):
    client, tokens = shop
    response = client.post("/v1/datasets/shop/running", headers=bearer(tokens["bob"]),
                           json={**RUNNING, "epsilon": 0.5})
    _problem(response, 409)
    assert _spent(client, tokens["bob"]) == (0.0, 0)


def test_sql_rollup_plan_then_release_adds_up(shop):
    client, tokens = shop
    alice = bearer(tokens["alice"])
    plan = client.post("/v1/datasets/shop/sql/plan", headers=alice, json=ROLLUP)
    assert plan.status_code == 200, plan.text
    plan = plan.json()
    assert plan["rollup"] and plan["fits"] and plan["level_split"]["count"]["sizes"] == [1, 2, 4]
    answer = client.post("/v1/datasets/shop/sql", headers=alice, json=ROLLUP)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    groups = [tuple(row["group"]) for row in body["rows"]]
    assert groups[0] == (None, None) and len(groups) == 7
    values = {tuple(row["group"]): row["values"]["count"] for row in body["rows"]}
    for country in ("DE", "FR"):
        assert values[(country, None)] == values[(country, "mobile")] + values[(country, "web")]
    assert values[(None, None)] == values[("DE", None)] + values[("FR", None)]
    assert _spent(client, tokens["alice"]) == (pytest.approx(0.5), 1)
    selected = {**ROLLUP, "keys": None, "delta": 1e-6, "epsilon": 1.0}
    selected.pop("keys")
    answer = client.post("/v1/datasets/shop/sql", headers=alice, json=selected)
    assert answer.status_code == 200, answer.text
    assert answer.json()["rows"][0]["group"] == [None, None]


@pytest.mark.parametrize("change, status, field", [
    ({"query": "SELECT country, SUM(amount) FROM shop GROUP BY ROLLUP(country)",
      "bounds": {"amount": [0, 10]}}, 422, "bounds"),
    ({"query": "SELECT country, SUM(amount) FROM shop GROUP BY ROLLUP(country)"}, 422, "query"),
    ({"query": "SELECT country, COUNT(*) FROM shop GROUP BY country, ROLLUP(device)"}, 422,
     "query"),
    ({"query": "SELECT hidden, COUNT(*) FROM shop GROUP BY ROLLUP(hidden)"}, 403, "query"),
    ({"budget_split": {"count": 1.0}}, 422, "budget_split"),
    ({"epsilon": 500.0}, 422, "epsilon"), ({"delta": 0.9}, 422, "delta"),
    ({"keys": None, "delta": 0.0}, 422, None),
    ({"query": "SELECT country, COUNT(DISTINCT user_id) FROM shop GROUP BY ROLLUP(country)",
      "max_groups": 2, "keys": ["DE", "FR"]}, 422, "max_groups"),
])
def test_bad_rollup_parameters_are_refused_before_the_charge(shop, change, status, field):
    client, tokens = shop
    body = {key: value for key, value in {**ROLLUP, **change}.items() if value is not None}
    for path in ("/v1/datasets/shop/sql", "/v1/datasets/shop/sql/plan"):
        _problem(client.post(path, headers=bearer(tokens["alice"]), json=body), status, field)
    assert _spent(client, tokens["alice"]) == (0.0, 0)

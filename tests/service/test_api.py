"""The /v1 API: datasets, plan, releases with receipts, history, budget, client."""

from __future__ import annotations

import json

import pytest

from tests.service.conftest import bearer, need_service_extra

need_service_extra()

TOPK = {"column": "article", "epsilon": 0.1, "delta": 1e-7, "k": 5, "l0": 3, "d_bar": 20}


def test_datasets_lists_only_mine_with_both_budgets(service):
    client, tokens, _, _ = service
    body = client.get("/v1/datasets", headers=bearer(tokens["alice"])).json()
    assert [entry["name"] for entry in body["datasets"]] == ["views"]
    entry = body["datasets"][0]
    assert entry["columns"] == ["article", "country"]
    assert entry["budget"]["dataset"]["remaining_epsilon"] == 1.0
    assert entry["budget"]["mine"]["budget_epsilon"] == 1.0     # no cap: the dataset's
    bob = client.get("/v1/datasets", headers=bearer(tokens["bob"])).json()
    assert [entry["name"] for entry in bob["datasets"]] == ["views", "secret"]
    assert bob["datasets"][0]["budget"]["mine"]["budget_epsilon"] == 0.25


def test_plan_is_free_and_release_is_charged_once(service):
    client, tokens, config, app = service
    ledger = app.state.service.ledger
    plan = client.post("/v1/datasets/views/plan", headers=bearer(tokens["alice"]),
                       json={"command": "topk", **TOPK}).json()
    assert plan["fits"] and plan["algorithm"] == "unknown-gumbel"
    assert ledger.show("views")["releases"] == 0
    answer = client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]), json=TOPK)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["receipt"]["release_id"] == 1 and not body["receipt"]["cached"]
    assert body["budget"]["mine"]["spent_epsilon"] == pytest.approx(
        plan["verdict"]["spent_epsilon_after"])
    assert all(set(row) == {"item", "count", "ci95"} for row in body["items"])
    # the same query again: the stored answer, free
    again = client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                        json=TOPK).json()
    assert again["receipt"]["cached"] and again["items"] == body["items"]
    assert ledger.show("views")["releases"] == 1
    # another analyst asking the same question pays for a fresh release
    other = client.post("/v1/datasets/views/topk", headers=bearer(tokens["carol"]),
                        json=TOPK).json()
    assert not other["receipt"]["cached"] and ledger.show("views")["releases"] == 2


def test_a_plan_answers_the_same_in_the_thread_pool_and_in_the_event_loop(service):
    """The first plan of a parameter set calibrates (thread pool); later ones are
    quick (event loop, calibration cached): same answer either way."""
    from privloss.service.queries import plan_is_quick

    client, tokens, config, app = service
    body = {**TOPK, "epsilon": 0.123}
    dataset = config.datasets["views"]
    assert not plan_is_quick(dataset, "topk", body)
    first = client.post("/v1/datasets/views/plan", headers=bearer(tokens["alice"]), json=body)
    assert plan_is_quick(dataset, "topk", body)
    assert app.state.service.loop_ledger() is not None     # opened by the first plan
    again = client.post("/v1/datasets/views/plan", headers=bearer(tokens["alice"]), json=body)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    # bad parameters are never "quick": the regular path reports them
    assert not plan_is_quick(dataset, "topk", {**body, "column": "salary"})
    assert not plan_is_quick(dataset, "topk", {**body, "epsilon": -1})


def test_histogram_known_domain(service):
    client, tokens, _, _ = service
    body = client.post("/v1/datasets/views/histogram", headers=bearer(tokens["alice"]),
                       json={"column": "country", "epsilon": 0.2, "domain": ["US", "IN", "ZZ"],
                             "l0": 1}).json()
    # every listed label comes back, ordered by noisy count (not by the domain's order)
    assert sorted(row["item"] for row in body["items"]) == ["IN", "US", "ZZ"]
    counts = [row["count"] for row in body["items"]]
    assert counts == sorted(counts, reverse=True)
    assert body["algorithm"] == "known-laplace"


def test_history_shows_only_my_releases(service):
    client, tokens, _, _ = service
    for name, label in (("alice", "a"), ("carol", "c"), ("alice", "b")):
        response = client.post("/v1/datasets/views/topk", headers=bearer(tokens[name]),
                               json={**TOPK, "label": label})
        assert response.status_code == 200
    alice = client.get("/v1/datasets/views/history", headers=bearer(tokens["alice"])).json()
    carol = client.get("/v1/datasets/views/history", headers=bearer(tokens["carol"])).json()
    assert [row["query"]["label"] for row in alice["releases"]] == ["a", "b"]
    assert [row["query"]["label"] for row in carol["releases"]] == ["c"]
    assert {row["release_id"] for row in alice["releases"]}.isdisjoint(
        row["release_id"] for row in carol["releases"])
    assert "data" not in json.dumps(alice["releases"][0]["query"])   # no operator internals


def test_analyst_cap_refuses_with_409_naming_the_constraint(service):
    client, tokens, _, app = service
    spent = []
    for label in range(6):
        response = client.post("/v1/datasets/views/topk", headers=bearer(tokens["bob"]),
                               json={**TOPK, "label": str(label)})
        spent.append(response.status_code)
        if response.status_code == 409:
            message = response.json()["detail"]
            assert "bob" in message or "analyst" in message, message
            # issue 22: first, in one phrase, what still fits (data-independent)
            assert message.startswith("refused: at most epsilon ") or message.startswith(
                "refused: no epsilon of this release fits"), message
            break
    assert spent[-1] == 409 and spent.count(200) >= 1
    before = app.state.service.ledger.show("views")["releases"]
    # alice is not capped: her release still fits the dataset's budget
    assert client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                       json=TOPK).status_code == 200
    assert app.state.service.ledger.show("views")["releases"] == before + 1


def test_budget_endpoint_and_openapi(service):
    client, tokens, _, _ = service
    body = client.get("/v1/datasets/views/budget", headers=bearer(tokens["carol"])).json()
    assert body["budget"]["mine"]["releases"] == 0
    schema = client.get("/openapi.json").json()
    assert "/v1/datasets/{name}/topk" in schema["paths"]


def test_window_names(tmp_path):
    from datetime import datetime, timezone

    from privloss.service.config import DatasetConfig
    from privloss.service.queries import window_name

    dataset = DatasetConfig("views", "user_id", ("item",), 1.0, 0.0, window_days=30)
    moment = datetime(2026, 11, 25, tzinfo=timezone.utc)
    name = window_name(dataset, moment)
    start = datetime.fromisoformat(name.split("@")[1]).date()
    assert name.startswith("views@") and 0 <= (moment.date() - start).days < 30
    assert (start - datetime(1970, 1, 1).date()).days % 30 == 0
    assert window_name(DatasetConfig("views", "user_id", ("item",), 1.0, 0.0), moment) == "views"


def test_python_client_returns_a_release(service):
    from privloss.client import BudgetRefused, Client, ServiceRequestError

    client, tokens, _, _ = service
    with Client("http://testserver", tokens["alice"], transport=client._transport) as remote:
        assert remote.plan("views", **TOPK)["fits"]
        release = remote.topk("views", **TOPK)
        assert release.algorithm == "unknown-gumbel" and len(release.events) == 3
        assert release.spent["mine"]["releases"] == 1
        assert remote.budget("views")["mine"]["releases"] == 1
        assert len(remote.history("views")) == 1
        with pytest.raises(ServiceRequestError) as caught:
            remote.topk("secret", **TOPK)
        assert caught.value.status == 403
        with pytest.raises(BudgetRefused):
            remote.topk("views", **{**TOPK, "epsilon": 5.0})
        with pytest.raises(ServiceRequestError) as caught:      # problem+json, read back
            remote.topk("views", **{**TOPK, "linf": 10 ** 6})
        assert caught.value.status == 422 and caught.value.field == "linf"
        assert caught.value.value == 10 ** 6 and "10000" in caught.value.message


def test_plan_based_dataset_and_budget_window(tmp_path):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config
    from tests.service.conftest import issue_tokens, write_config

    (tmp_path / "plan.toml").write_text(
        '[[release]]\ncommand = "histogram"\nnoise = "laplace"\nepsilon = 0.5\nl0 = 1\n'
        "domain_size = 3\n")
    path = write_config(tmp_path)
    text = path.read_text().replace(
        'columns = ["industry"]\nepsilon = 1.0\ndelta = 1e-6',
        'columns = ["industry"]\nepsilon = 1.0\ndelta = 1e-6\ninteraction = "adaptive"\n'
        'plan = "plan.toml"\nwindow_days = 7').replace(
        'name = "carol"\ndatasets = ["views"]', 'name = "carol"\ndatasets = ["views", "secret"]')
    path.write_text(text)
    config = load_config(path)
    tokens = issue_tokens(config)
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        domain = ["software", "finance", "health"]
        wrong = client.post("/v1/datasets/secret/histogram", headers=bearer(tokens["bob"]),
                            json={"column": "industry", "epsilon": 0.25, "l0": 1,
                                  "domain": domain})
        assert wrong.status_code == 409 and "plan" in wrong.json()["detail"]
        body = client.post("/v1/datasets/secret/histogram", headers=bearer(tokens["bob"]),
                           json={"column": "industry", "epsilon": 0.5, "l0": 1,
                                 "domain": domain})
        # bob's cap (0.25) binds before the planned 0.5 fits
        assert body.status_code == 409
        carol = dict(headers=bearer(tokens["carol"]),
                     json={"column": "industry", "epsilon": 0.5, "l0": 1, "domain": domain})
        released = client.post("/v1/datasets/secret/histogram", **carol)
        assert released.status_code == 200, released.text
        receipt = released.json()["receipt"]
        assert receipt["plan_item"] == 1 and receipt["ledger_dataset"].startswith("secret@")
        carol["json"]["label"] = "again"
        assert client.post("/v1/datasets/secret/histogram", **carol).status_code == 409
        names = app.state.service.ledger.datasets()
        window = next(name for name in names if name.startswith("secret@"))
        assert app.state.service.ledger.show(window)["releases"] == 1

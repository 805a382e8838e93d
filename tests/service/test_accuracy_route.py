"""Issue 22 item 1 over HTTP: ``POST /v1/datasets/{name}/accuracy`` plans the
smallest epsilon meeting a target from public parameters only: free (nothing
charged), the planned epsilon meets the target, bad goals a 422 problem+json
naming the field, a column not granted 403."""

from __future__ import annotations

import pytest

from tests.service.conftest import bearer, need_service_extra

need_service_extra()


def _spent(client, token) -> tuple:
    body = client.get("/v1/datasets/views/budget", headers=bearer(token)).json()
    return body["budget"]["dataset"]["spent_epsilon"], body["budget"]["dataset"]["releases"]


def test_target_half_width_is_planned_free_and_met(service):
    from privloss.api.accuracy_plan import plan_accuracy
    from privloss.api.request import make_request

    client, tokens, _, _ = service
    alice = bearer(tokens["alice"])
    before = _spent(client, tokens["alice"])
    body = {"command": "histogram", "column": "country", "l0": 1,
            "domain": ["DE", "FR", "US"], "target_half_width": 25.0}
    response = client.post("/v1/datasets/views/accuracy", json=body, headers=alice)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["charged"] is False and plan["goal"] == "half-width"
    assert max(plan["half_widths_95"].values()) <= 25.0
    assert _spent(client, tokens["alice"]) == before
    # the same plan as the library's, from the same public parameters
    request = make_request("histogram", epsilon=1.0, l0=1, linf=1, domain=["DE", "FR", "US"],
                           noise="laplace", interaction="fully_adaptive")
    local = plan_accuracy("histogram", request=request, target_half_width=25.0, curve=False)
    assert plan["epsilon"] == pytest.approx(local.epsilon, rel=1e-9)
    # and the planned epsilon is then a regular plan
    check = client.post("/v1/datasets/views/plan", headers=alice, json={
        "command": "histogram", "column": "country", "l0": 1, "domain": ["DE", "FR", "US"],
        "epsilon": plan["epsilon"]})
    assert check.status_code == 200, check.text


def test_min_release_users_for_a_topk(service):
    client, tokens, _, _ = service
    response = client.post("/v1/datasets/views/accuracy", headers=bearer(tokens["alice"]),
                           json={"command": "topk", "column": "article", "k": 5, "l0": 2,
                                 "delta": 1e-7, "min_release_users": 500})
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["goal"] == "release" and plan["epsilon"] > 0 and plan["text"]


@pytest.mark.parametrize("body, field", [
    ({"command": "histogram", "column": "country", "l0": 1}, None),      # no goal
    ({"command": "histogram", "column": "country", "l0": 1, "target_half_width": 1.0,
      "min_release_users": 5}, None),                                      # two goals
    ({"command": "histogram", "column": "country", "target_half_width": -1.0},
     "target_half_width"),
    ({"command": "histogram", "column": "country", "target_half_width": 1e300},
     "target_half_width"),
    ({"command": "topk", "column": "article", "min_release_users": 0}, "min_release_users"),
    ({"command": "topk", "column": "article", "min_release_users": 5, "epsilon": 1.0},
     "epsilon"),
    ({"command": "topk", "column": "article\ud800", "min_release_users": 5}, "column"),
])
def test_bad_goals_are_422_problems(service, body, field):
    import json

    client, tokens, _, _ = service
    # json.dumps escapes a lone surrogate as \ud800, as a hostile client sends it
    response = client.post("/v1/datasets/views/accuracy", content=json.dumps(body),
                           headers={**bearer(tokens["alice"]),
                                    "content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    if field is not None:
        assert field in response.text


def test_a_column_not_granted_is_403(service):
    client, tokens, _, _ = service
    response = client.post("/v1/datasets/views/accuracy", headers=bearer(tokens["alice"]),
                           json={"command": "histogram", "column": "industry", "l0": 1,
                                 "target_half_width": 10.0})
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"

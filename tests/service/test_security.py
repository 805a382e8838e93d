"""Hostile requests: each gets its documented status; nothing is read or charged."""

from __future__ import annotations

import json
import time

import pytest

from tests.service.conftest import bearer, need_service_extra

need_service_extra()

TOPK = {"column": "article", "epsilon": 0.1, "delta": 1e-7, "k": 5, "l0": 3, "d_bar": 20}


def releases(app) -> int:
    ledger = app.state.service.ledger
    return sum(ledger.show(name)["releases"] for name in ledger.datasets())


@pytest.fixture()
def no_data_read(monkeypatch):
    """Fail the test if the engine is asked to read the data."""
    import privloss.query.engines as engines
    calls = []
    real = engines.bounded_histogram

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(engines, "bounded_histogram", spy)
    return calls


def _assert_refused(client, app, no_data_read, method, path, status, **options):
    before = releases(app)
    response = client.request(method, path, **options)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == status and isinstance(body["detail"], str)
    assert response.headers["content-type"] == "application/problem+json"
    assert body["type"].startswith("urn:privloss:error:") and isinstance(body["title"], str)
    assert "Traceback" not in response.text and "File \"" not in response.text
    assert releases(app) == before and no_data_read == []
    return body


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer "},
                                     {"Authorization": "Bearer plk_000000000000_wrong"},
                                     {"Authorization": "Basic YWxpY2U6cHc="},
                                     {"Authorization": "Bearer " + "x" * 5000}])
def test_no_or_bad_token_is_401(service, no_data_read, headers):
    client, _, _, app = service
    _assert_refused(client, app, no_data_read, "POST", "/v1/datasets/views/topk", 401,
                    headers=headers, json=TOPK)


def test_tampered_token_is_401(service, no_data_read):
    client, tokens, _, app = service
    token = tokens["alice"]
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    _assert_refused(client, app, no_data_read, "GET", "/v1/datasets", 401,
                    headers=bearer(tampered))
    # another analyst's id with alice's secret
    other = tokens["carol"].split("_")[1]
    mixed = "_".join(["plk", other, token.split("_", 2)[2]])
    _assert_refused(client, app, no_data_read, "GET", "/v1/datasets", 401, headers=bearer(mixed))


def test_dataset_not_granted_is_403_and_unknown_too(service, no_data_read):
    client, tokens, _, app = service
    for name in ("secret", "nonexistent", "views%3B%20DROP%20TABLE"):
        _assert_refused(client, app, no_data_read, "POST", f"/v1/datasets/{name}/topk", 403,
                        headers=bearer(tokens["alice"]), json={**TOPK, "column": "industry"})
        _assert_refused(client, app, no_data_read, "GET", f"/v1/datasets/{name}/history", 403,
                        headers=bearer(tokens["alice"]))


@pytest.mark.parametrize("column", ["user_id", "industry", "item; DROP TABLE releases",
                                    "article' OR '1'='1", 'article"--', "artícle",
                                    "article\u0000", "*", "(SELECT 1)"])
def test_undeclared_or_crafted_column_is_403(service, no_data_read, column):
    client, tokens, _, app = service
    body = _assert_refused(client, app, no_data_read, "POST", "/v1/datasets/views/topk", 403,
                           headers=bearer(tokens["alice"]), json={**TOPK, "column": column})
    assert body["field"] == "column"


@pytest.mark.parametrize("change, field", [
    ({"epsilon": -1}, "epsilon"), ({"epsilon": "1; DROP TABLE x"}, "epsilon"),
    ({"epsilon": float("nan")}, None), ({"delta": 1.5}, "delta"), ({"k": 0}, "k"),
    ({"k": "5 OR 1=1"}, "k"), ({"algorithm": "unknown-gumbel'; --"}, "algorithm"),
    ({"sql": "SELECT * FROM secret"}, "sql"), ({"user_column": "industry"}, "user_column"),
    ({"domain": ["a"] * 3, "algorithm": "known-laplace"}, None)])
def test_bad_or_crafted_parameters_are_422(service, no_data_read, change, field):
    client, tokens, _, app = service
    options = {"content": json.dumps({**TOPK, **change}, allow_nan=True),
               "headers": {**bearer(tokens["alice"]), "content-type": "application/json"}}
    body = _assert_refused(client, app, no_data_read, "POST", "/v1/datasets/views/topk", 422,
                           **options)
    if field is not None:
        assert field in body["detail"] or body.get("field") == field, body


def test_oversized_bodies_are_413(service, no_data_read):
    client, tokens, _, app = service
    big = {**TOPK, "domain": ["x" * 100] * 100}
    _assert_refused(client, app, no_data_read, "POST", "/v1/datasets/views/topk", 413,
                    headers=bearer(tokens["alice"]), json=big)

    def chunks():                    # no Content-Length: counted while streaming
        for _ in range(10):
            yield b" " * 1000
    _assert_refused(client, app, no_data_read, "POST", "/v1/datasets/views/plan", 413,
                    headers=bearer(tokens["alice"]), content=chunks())


def test_burst_from_one_token_is_429_and_others_unaffected(tmp_path, no_data_read):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config
    from tests.service.conftest import issue_tokens, write_config

    # one token per 100 s: nothing refills while a slow machine sends 300 requests, so the
    # request after the burst is refused whatever the timing
    config = load_config(write_config(tmp_path, rate=0.01, burst=10))
    tokens = issue_tokens(config)
    app = create_app(config)
    with TestClient(app, raise_server_exceptions=False) as client:
        started = time.monotonic()
        statuses = [client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                                json={**TOPK, "epsilon": -1}).status_code for _ in range(300)]
        elapsed = time.monotonic() - started
        # at most the burst plus what the bucket refilled meanwhile got through
        assert statuses.count(422) <= 10 + 0.01 * elapsed + 1
        assert statuses.count(429) == 300 - statuses.count(422) > 0
        limited = client.get("/v1/datasets", headers=bearer(tokens["alice"]))
        assert limited.status_code == 429 and "Retry-After" in limited.headers
        assert client.get("/v1/datasets", headers=bearer(tokens["carol"])).status_code == 200
        # failed sign-ins from one address are limited too (before any argon2 work)
        bad = [client.get("/v1/datasets", headers=bearer("plk_0_x")).status_code
               for _ in range(40)]
        assert bad.count(429) >= 20
    assert releases(app) == 0 and no_data_read == []


def test_audit_log_has_every_request_and_no_released_values(service):
    client, tokens, config, _ = service
    released = client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                           json=TOPK).json()
    client.post("/v1/datasets/views/topk", headers=bearer(tokens["alice"]),
                json={**TOPK, "column": "user_id"})
    client.get("/v1/datasets", headers=bearer("nope"))
    lines = [json.loads(line) for line in config.audit_log.read_text().splitlines()]
    outcomes = [(line["analyst"], line["outcome"], line["status"]) for line in lines]
    assert ("alice", "released", 200) in outcomes
    assert ("alice", "forbidden-column", 403) in outcomes
    assert (None, "unauthorized", 401) in outcomes
    text = config.audit_log.read_text()
    for row in released["items"]:
        assert json.dumps(row["item"]) not in text          # no released labels ...
    assert tokens["alice"] not in text                       # ... and no token


def test_token_file_holds_only_argon2id_hashes(service):
    _, tokens, config, _ = service
    text = config.tokens.read_text()
    assert all(token.split("_", 2)[2] not in text for token in tokens.values())
    assert text.count("$argon2id$") == len(tokens)
    import stat
    assert stat.S_IMODE(config.tokens.stat().st_mode) == 0o600


def test_unexpected_error_is_500_without_traceback(service, monkeypatch):
    client, tokens, _, _ = service
    import privloss.service.queries as queries

    def boom(*args, **kwargs):
        raise KeyError("secret internal detail")
    monkeypatch.setattr(queries, "plan_release", boom)
    response = client.post("/v1/datasets/views/plan", headers=bearer(tokens["alice"]), json=TOPK)
    assert response.status_code == 500
    assert "secret internal detail" not in response.text and "Traceback" not in response.text
    assert client.get("/v1/datasets", headers=bearer(tokens["alice"])).status_code == 200

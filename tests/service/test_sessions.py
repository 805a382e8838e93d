"""Sign-in and sessions: a valid token is never refused because of someone
else's failures; X-Forwarded-For only from trusted proxies; dashboard sessions
are random server-side ids that expire on the server and die at logout; forms
carry CSRF tokens; every page sends the security headers."""

from __future__ import annotations

import json
import re

import pytest

from tests.service.conftest import bearer, issue_tokens, need_service_extra, write_config

need_service_extra()


def _service(tmp_path, *, extra: str = "", client=("testclient", 50000), rate=1000.0,
             burst=1000):
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config

    from privloss.service.app import FAILED_SIGN_INS
    from privloss.service.ratelimit import RateLimiter

    config = load_config(write_config(tmp_path, extra=extra, rate=rate, burst=burst))
    tokens = issue_tokens(config)
    app = create_app(config)
    # failed sign-ins on a stopped clock: the limit does not refill while a
    # loaded machine runs the test, so the counts below are exact
    app.state.service.failures = RateLimiter(*FAILED_SIGN_INS, clock=lambda: 0.0)
    return TestClient(app, raise_server_exceptions=False, client=client,
                      follow_redirects=False), tokens, config, app


def _audit(config) -> list:
    return [json.loads(line) for line in config.audit_log.read_text().splitlines()]


def test_a_valid_token_is_never_refused_because_of_others_failures(tmp_path):
    client, tokens, _, _ = _service(tmp_path)
    with client:
        alice_id = tokens["alice"].split("_")[1]
        statuses = [client.get("/v1/datasets", headers=bearer(token)).status_code
                    for token in ["plk_000000000000_guess"] * 30
                    + [f"plk_{alice_id}_wrong-secret"] * 10]
        assert statuses.count(429) == 30                 # the address is limited ...
        # ... yet tokens never seen before (argon2 needed) still get in from it
        for name in ("carol", "alice", "bob"):
            response = client.get("/v1/datasets", headers=bearer(tokens[name]))
            assert response.status_code == 200, response.text
        assert client.get("/v1/datasets", headers=bearer("plk_1_x")).status_code == 429


def test_x_forwarded_for_is_ignored_without_trusted_proxies(tmp_path):
    client, tokens, config, _ = _service(tmp_path, client=("127.0.0.1", 40000))
    with client:
        statuses = [client.get("/v1/datasets", headers={
            **bearer("plk_000000000000_x"), "X-Forwarded-For": f"198.51.100.{number}"})
            .status_code for number in range(40)]
        assert statuses.count(429) == 30                 # rotating the header does not help
    assert {record["client"] for record in _audit(config)} == {"127.0.0.1"}


def test_trusted_proxies_name_the_forwarded_client(tmp_path):
    extra = 'trusted_proxies = ["127.0.0.1", "10.0.0.0/8"]'
    client, tokens, config, _ = _service(tmp_path, extra=extra, client=("127.0.0.1", 40000))
    with client:
        for _ in range(40):     # one client behind the proxy fails its sign-ins ...
            client.get("/v1/datasets", headers={**bearer("plk_000000000000_x"),
                                                "X-Forwarded-For": "203.0.113.9"})
        locked = client.get("/v1/datasets", headers={**bearer("plk_000000000000_x"),
                                                     "X-Forwarded-For": "203.0.113.9"})
        assert locked.status_code == 429
        # ... another client behind the same proxy is not limited by it
        other = client.get("/v1/datasets", headers={**bearer("plk_000000000000_x"),
                                                    "X-Forwarded-For": "203.0.113.10"})
        assert other.status_code == 401
        # a forged left-most hop is not believed: the right-most untrusted one counts
        client.get("/v1/datasets", headers={**bearer(tokens["alice"]),
                                            "X-Forwarded-For": "1.2.3.4, 192.0.2.1, 10.1.1.1"})
    clients = [record["client"] for record in _audit(config)]
    assert "203.0.113.9" in clients and "203.0.113.10" in clients
    assert clients[-1] == "192.0.2.1" and "127.0.0.1" not in clients


def test_trusted_proxies_config_is_checked(tmp_path, capsys):
    from privloss.cli.main import main

    path = write_config(tmp_path, extra='trusted_proxies = ["localhost"]')
    assert main(["serve", "--config", str(path)]) == 2
    assert "trusted_proxies" in capsys.readouterr().err


def _csrf(response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', response.text)
    assert found, response.text[:500]
    return found.group(1)


def _sign_in(client, token):
    page = client.get("/")
    response = client.post("/login", data={"token": token, "csrf": _csrf(page)})
    assert response.status_code == 303, response.text
    return response


def test_session_cookie_is_a_random_server_side_id_that_dies_at_logout(tmp_path):
    client, tokens, _, _ = _service(tmp_path)
    with client:
        response = _sign_in(client, tokens["alice"])
        cookie = response.cookies["privloss_session"]
        assert cookie != tokens["alice"] and tokens["alice"].split("_", 2)[2] not in cookie
        assert len(cookie) >= 43
        header = response.headers["set-cookie"].lower()
        assert "httponly" in header and "samesite=strict" in header
        home = client.get("/")
        assert 'id="analyst">alice<' in home.text
        logout = client.post("/logout", data={"csrf": _csrf(home)})
        assert logout.status_code == 303
        # the old cookie is worthless on the server, not only in the browser
        client.cookies.set("privloss_session", cookie)
        assert 'id="token"' in client.get("/").text
        page = client.get("/datasets/views")
        assert page.status_code == 303


def test_sessions_expire_on_the_server_and_with_a_reissued_token(tmp_path):
    from privloss.service.auth import add_analyst
    from tests.service.conftest import cheap_hasher

    client, tokens, config, app = _service(tmp_path, extra="session_hours = 1.0")
    store = app.state.service.sessions
    with client:
        _sign_in(client, tokens["alice"])
        assert 'id="analyst">alice<' in client.get("/").text
        now = store._clock()
        store._clock = lambda: now + 3601.0
        assert 'id="token"' in client.get("/").text            # expired on the server
        _sign_in(client, tokens["alice"])
        assert 'id="analyst">alice<' in client.get("/").text
        add_analyst(config.tokens, "alice", hasher=cheap_hasher())   # re-issued
        assert 'id="token"' in client.get("/").text


def test_forms_need_the_csrf_token_and_the_same_origin(tmp_path):
    client, tokens, _, app = _service(tmp_path)
    form = {"command": "topk", "column": "article", "epsilon": "0.1", "delta": "1e-7",
            "k": "5", "l0": "3", "d_bar": "20"}
    with client:
        page = client.get("/")
        refused = client.post("/login", data={"token": tokens["alice"]})      # no csrf
        assert refused.status_code == 403 and "privloss_session" not in refused.cookies
        null = client.post("/login", data={"token": tokens["alice"], "csrf": _csrf(page)},
                           headers={"Origin": "null"})
        assert null.status_code == 403
        _sign_in(client, tokens["alice"])
        csrf = _csrf(client.get("/datasets/views"))
        assert client.post("/datasets/views/release", data=form).status_code == 403
        assert client.post("/datasets/views/release",
                           data={**form, "csrf": "forged"}).status_code == 403
        assert client.post("/datasets/views/release", data={**form, "csrf": csrf},
                           headers={"Origin": "https://evil.example"}).status_code == 403
        assert client.post("/logout", data={}).status_code == 403
        ledger = app.state.service.ledger
        assert ledger.show("views")["releases"] == 0
        released = client.post("/datasets/views/release", data={**form, "csrf": csrf})
        assert released.status_code == 200 and "Release #1" in released.text
        # the dashboard applies the API's ranges before the charge
        huge = client.post("/datasets/views/release",
                           data={**form, "linf": str(10 ** 30), "csrf": csrf})
        assert huge.status_code == 422 and ledger.show("views")["releases"] == 1


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/", 200), ("GET", "/v1/datasets", 401), ("GET", "/openapi.json", 200),
    ("GET", "/static/style.css", 200), ("GET", "/nowhere", 404),
    ("POST", "/v1/datasets/views/topk", 413), ("GET", "/datasets/views", 303),
])
def test_every_response_sends_the_security_headers(tmp_path, method, path, status):
    client, _, _, _ = _service(tmp_path)
    with client:
        response = client.request(method, path, content=b" " * 10_000 if status == 413 else None)
    assert response.status_code == status
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    # scripts only from this origin (the dashboard's static file), never inline
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"

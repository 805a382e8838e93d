"""The service's paths of the grey-box harness (tests/leaks/test_greybox.py):
a fresh service per neighbour (a TestClient), its JSON endpoints and
dashboard pages, every response in one observation; HTML numbers masked.
Shared with tests/leaks/test_greybox_accuracy.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.leaks import harness
from tests.leaks.harness import DOMAIN, Observation

SERVICE_CONFIG = """[service]
ledger = "budget.sqlite"
rate = 1000.0
burst = 1000

[[dataset]]
name = "d"
path = "{data}"
user_column = "user"
columns = ["item"]
epsilon = 10.0
delta = 1e-4

[[analyst]]
name = "alice"
datasets = ["d"]
"""
#: dashboard HTML: the random CSRF token, then every number masked (the noisy counts
#: and intervals among them)
HTML_NUMBERS = [(r'name="csrf" value="[^"]*"', 'name="csrf" value="<CSRF>"'),
                (r"-?\d+(\.\d+)?([eE][-+]?\d+)?", "#")]


def csrf(response) -> str:
    import re

    found = re.search(r'name="csrf" value="([^"]+)"', response.text)
    return found.group(1) if found else ""


def run_service(directory: Path, data: Path, steps, config: str = SERVICE_CONFIG) -> Observation:
    """Run ``steps(client, headers)`` -> {name: response} on a fresh service over
    ``data``; stdout is the JSON of {name: [status, body]}, HTML bodies masked."""
    import re

    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config
    from tests.service.conftest import issue_tokens

    config_path = directory / "service.toml"
    config_path.write_text(config.format(data=data.name))
    config = load_config(config_path)
    token = issue_tokens(config)["alice"]
    seen = {}
    with harness.plain_process() as (out, err):
        with TestClient(create_app(config), raise_server_exceptions=False) as client:
            for name, response in steps(client, {"Authorization": f"Bearer {token}"}, token):
                if response.headers.get("content-type", "").startswith("application/json"):
                    body = response.json()
                else:
                    body = response.text
                    for pattern, replacement in HTML_NUMBERS:
                        body = re.sub(pattern, replacement, body)
                seen[name] = [response.status_code, body]
    return Observation(0, out.getvalue() + json.dumps(seen), err.getvalue())


def service_histogram_domain(directory, data):
    """Histogram with a public domain, history, budgets, the dashboard pages."""
    def steps(client, headers, token):
        yield "histogram", client.post("/v1/datasets/d/histogram", headers=headers, json={
            "column": "item", "epsilon": 1.0, "l0": 3, "domain": list(DOMAIN)})
        yield "history", client.get("/v1/datasets/d/history", headers=headers)
        yield "budget", client.get("/v1/datasets/d/budget", headers=headers)
        yield "datasets", client.get("/v1/datasets", headers=headers)
        client.post("/login", data={"token": token, "csrf": csrf(client.get("/"))},
                    follow_redirects=False)
        yield "home", client.get("/")
        page = client.get("/datasets/d")
        yield "page", page
        form = {"command": "histogram", "column": "item", "epsilon": "1", "l0": "3",
                "domain": ",".join(DOMAIN), "csrf": csrf(page)}
        yield "dashboard-preview", client.post("/datasets/d/preview", data=form)
        yield "dashboard-release", client.post("/datasets/d/release", data=form)
        sql = {"query": "SELECT item, COUNT(*) FROM d GROUP BY item", "epsilon": 1.0,
               "keys": list(DOMAIN)}
        yield "sql-plan", client.post("/v1/datasets/d/sql/plan", headers=headers, json=sql)
        yield "sql", client.post("/v1/datasets/d/sql", headers=headers, json=sql)
        yield "history-after", client.get("/v1/datasets/d/history", headers=headers)
    return run_service(directory, data, steps)


def service_topk(directory, data):
    """Plan, top-k (DP-selected items), history."""
    def steps(client, headers, token):
        parameters = {"column": "item", "epsilon": 1.0, "delta": 1e-6, "k": 2, "l0": 2,
                      "d_bar": 10}
        yield "plan", client.post("/v1/datasets/d/plan", headers=headers,
                                  json={"command": "topk", **parameters})
        yield "topk", client.post("/v1/datasets/d/topk", headers=headers, json=parameters)
        yield "history", client.get("/v1/datasets/d/history", headers=headers)
    return run_service(directory, data, steps)


#: issue 21: the operator's SQL derives a day from the amount's text length (the
#: harness data has no time column), so the running endpoint has dates to bound
RUNNING_SERVICE_CONFIG = SERVICE_CONFIG.replace(
    'path = "{data}"',
    "sql = \"SELECT user, item, amount, DATE '2024-01-01' + CAST(length(CAST(amount AS "
    "VARCHAR)) % 28 AS INTEGER) AS day FROM t\"\ntables = {{ t = \"{data}\" }}").replace(
    'columns = ["item"]', 'columns = ["item", "amount", "day"]')


def service_running_rollup(directory, data):
    """The running endpoint (plan, release, the stored answer) and GROUP BY
    ROLLUP through /sql with public keys (issue 21), then history and budget."""
    def steps(client, headers, token):
        running = {"time_column": "day", "period": "week", "start": "2024-01-01",
                   "end": "2024-01-28", "statistic": "count", "max_periods_per_unit": 2,
                   "max_rows_per_period": 2, "epsilon": 1.0}
        yield "running-plan", client.post("/v1/datasets/d/running/plan", headers=headers,
                                          json=running)
        yield "running", client.post("/v1/datasets/d/running", headers=headers, json=running)
        yield "running-again", client.post("/v1/datasets/d/running", headers=headers,
                                           json=running)
        rollup = {"query": "SELECT item, amount, COUNT(*) FROM d GROUP BY ROLLUP(item, amount)",
                  "epsilon": 1.0, "max_groups": 2, "consistent": True,
                  "keys": [[item, str(amount)] for item in DOMAIN for amount in range(10)]}
        yield "rollup-plan", client.post("/v1/datasets/d/sql/plan", headers=headers,
                                         json=rollup)
        yield "rollup", client.post("/v1/datasets/d/sql", headers=headers, json=rollup)
        yield "history", client.get("/v1/datasets/d/history", headers=headers)
        yield "budget", client.get("/v1/datasets/d/budget", headers=headers)
    return run_service(directory, data, steps, RUNNING_SERVICE_CONFIG)

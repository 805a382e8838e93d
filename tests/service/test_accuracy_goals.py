"""Issue 22 item 1 over HTTP, every release kind: ``target_half_width`` or
``min_release_users`` instead of ``epsilon`` in the release and dry-run bodies
(``/topk``, ``/histogram``, ``/plan``, ``/sql`` with ROLLUP, ``/sql/plan``,
``/running``, ``/running/plan``), and ``/accuracy`` for every kind.

A contract class per kind: ``/accuracy`` is free and gives the library's
plan; the dry run by goal is the dry run at the planned epsilon with the plan
as ``accuracy``; the release by goal charges exactly what the same release at
the planned epsilon charges, and an identical repeat is the stored answer,
free; exactly one of epsilon / target_half_width / min_release_users (422
problem+json naming the field, nothing charged); a goal out of its documented
range is a 422; a planned epsilon over the budget is the usual 409 saying
what the goal needs and what still fits."""

from __future__ import annotations

import pytest

from tests.service.conftest import bearer, need_service_extra

need_service_extra()

DOMAIN = ["US", "IN", "BR", "GB", "DE"]


def _spent(client, token, dataset="views") -> tuple:
    body = client.get(f"/v1/datasets/{dataset}/budget", headers=bearer(token)).json()
    return body["budget"]["dataset"]["spent_epsilon"], body["budget"]["dataset"]["releases"]


class Contract:
    """``command`` (for /accuracy), ``release_path``, ``plan_path``, ``body``
    (without epsilon), ``goal``, and ``library_plan(goal)``."""

    command: str
    release_path: str
    plan_path: str
    body: dict
    goal: dict
    dataset = "views"

    def library_plan(self, goal):
        raise NotImplementedError

    def post(self, client, token, path, body):
        return client.post(f"/v1/datasets/{self.dataset}{path}", json=body,
                           headers=bearer(token))

    def test_accuracy_is_free_and_the_librarys_plan(self, service):
        client, tokens, _, _ = service
        before = _spent(client, tokens["alice"], self.dataset)
        response = self.post(client, tokens["alice"], "/accuracy",
                             {"command": self.command, **self.body, **self.goal})
        assert response.status_code == 200, response.text
        plan = response.json()
        assert plan["charged"] is False and plan["text"]
        assert plan["epsilon"] == pytest.approx(self.library_plan(self.goal).epsilon, rel=1e-12)
        if "target_half_width" in self.goal:
            assert max(plan["half_widths_95"].values()) <= self.goal["target_half_width"]
        assert _spent(client, tokens["alice"], self.dataset) == before

    def test_a_dry_run_by_goal_is_the_dry_run_at_the_planned_epsilon(self, service):
        client, tokens, _, _ = service
        by_goal = self.post(client, tokens["alice"], self.plan_path, {**self.plan_body(),
                                                                       **self.goal})
        assert by_goal.status_code == 200, by_goal.text
        planned = by_goal.json()
        epsilon = planned["accuracy"]["epsilon"]
        at_epsilon = self.post(client, tokens["alice"], self.plan_path, {
            **self.plan_body(), "epsilon": epsilon, **self.split_of(planned)}).json()
        assert planned["fits"] is True
        assert {k: v for k, v in planned.items() if k not in ("accuracy", "ledger_dataset")} \
            == {k: v for k, v in at_epsilon.items() if k != "ledger_dataset"}

    def test_a_release_by_goal_charges_the_planned_epsilon_once(self, service):
        client, tokens, _, _ = service
        first = self.post(client, tokens["alice"], self.release_path, {**self.body, **self.goal})
        assert first.status_code == 200, first.text
        answer = first.json()
        assert answer["accuracy"]["epsilon"] > 0 and answer["receipt"]["cached"] is False
        spent = _spent(client, tokens["alice"], self.dataset)
        again = self.post(client, tokens["alice"], self.release_path, {**self.body, **self.goal})
        assert again.status_code == 200 and again.json()["receipt"]["cached"] is True
        assert _spent(client, tokens["alice"], self.dataset) == spent
        # the same release asked with the planned epsilon (and split) is that stored answer
        same = self.post(client, tokens["alice"], self.release_path, {
            **self.body, "epsilon": answer["accuracy"]["epsilon"],
            **self.split_of(answer)})
        assert same.status_code == 200 and same.json()["receipt"]["cached"] is True, same.text

    def test_the_audit_log_records_the_planned_epsilon(self, service):
        import json

        client, tokens, config, _ = service
        for path, body in ((self.plan_path, self.plan_body()), (self.release_path, self.body)):
            response = self.post(client, tokens["alice"], path, {**body, **self.goal})
            assert response.status_code == 200, response.text
            last = json.loads(config.audit_log.read_text().splitlines()[-1])
            assert last["path"].endswith(path) and last["status"] == 200
            assert last["parameters"]["planned_epsilon"] == response.json()["accuracy"]["epsilon"]
            assert all(last["parameters"][name] == value for name, value in self.goal.items())

    @pytest.mark.parametrize("extra, field", [
        ({}, "epsilon"),
        ({"epsilon": 0.5, "target_half_width": 10.0}, "target_half_width"),
        ({"epsilon": 0.5, "min_release_users": 10}, "min_release_users"),
        ({"target_half_width": 10.0, "min_release_users": 10}, "min_release_users"),
        ({"target_half_width": 0.0}, "target_half_width"),
        ({"target_half_width": 2e12}, "target_half_width"),
        ({"min_release_users": 0}, "min_release_users"),
        ({"min_release_users": 10 ** 10}, "min_release_users"),
        ({"target_half_width": "wide"}, "target_half_width"),
    ])
    def test_exactly_one_goal_in_range_else_422_naming_it(self, service, extra, field):
        client, tokens, _, _ = service
        before = _spent(client, tokens["alice"], self.dataset)
        for path in (self.release_path, self.plan_path):
            body = {**(self.plan_body() if path == self.plan_path else self.body), **extra}
            response = self.post(client, tokens["alice"], path, body)
            assert response.status_code == 422, (path, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["field"] == field, response.text
        assert _spent(client, tokens["alice"], self.dataset) == before

    def test_accuracy_refuses_an_epsilon(self, service):
        client, tokens, _, _ = service
        response = self.post(client, tokens["alice"], "/accuracy",
                             {"command": self.command, **self.body, **self.goal,
                              "epsilon": 1.0})
        assert response.status_code == 422 and response.json()["field"] == "epsilon"

    def test_a_goal_over_the_budget_is_the_usual_409(self, service):
        client, tokens, _, _ = service
        before = _spent(client, tokens["alice"], self.dataset)
        response = self.post(client, tokens["alice"], self.release_path,
                             {**self.body, **self.greedy})
        assert response.status_code == 409, response.text
        assert response.headers["content-type"] == "application/problem+json"
        detail = response.json()["detail"]
        goal = next(iter(self.greedy))
        assert detail.startswith(f"{goal} ") and " needs epsilon " in detail, detail
        assert "at most epsilon" in detail and "fits" in detail, detail
        assert _spent(client, tokens["alice"], self.dataset) == before

    def plan_body(self) -> dict:
        return dict(self.body)

    def split_of(self, answer) -> dict:
        return {}


class TestHistogram(Contract):
    command = "histogram"
    release_path, plan_path = "/histogram", "/plan"
    body = {"column": "country", "l0": 1, "domain": DOMAIN}
    goal = {"target_half_width": 20.0}
    greedy = {"target_half_width": 1.0}       # needs epsilon ~ 3.7 > the budget 1

    def plan_body(self):
        return {"command": "histogram", **self.body}

    def library_plan(self, goal):
        import privloss
        return privloss.plan("histogram", l0=1, domain=DOMAIN, interaction="fully-adaptive",
                             **goal).accuracy


class TestTopk(Contract):
    command = "topk"
    release_path, plan_path = "/topk", "/plan"
    body = {"column": "article", "k": 3, "l0": 2, "delta": 1e-7}
    goal = {"min_release_users": 400}
    greedy = {"min_release_users": 20}

    def plan_body(self):
        return {"command": "topk", **self.body}

    def library_plan(self, goal):
        import privloss
        return privloss.plan("topk", k=3, l0=2, delta=1e-7, interaction="fully-adaptive",
                             **goal).accuracy


class TestSql(Contract):
    command = "sql"
    release_path, plan_path = "/sql", "/sql/plan"
    body = {"query": "SELECT country, COUNT(*) FROM views GROUP BY country", "keys": DOMAIN,
            "max_rows_per_group": 2}
    goal = {"target_half_width": 40.0}
    greedy = {"target_half_width": 2.0}

    def library_plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("aggregate", curve=False, privacy_unit="user_id",
                             by=["country"], aggregations=["count"], keys=DOMAIN,
                             max_rows_per_group=2, **goal)

    def split_of(self, answer):
        split = answer["accuracy"]["budget_split"]
        return {} if split is None else {"budget_split": split}


class TestSqlSelected(TestSql):
    """No keys: the groups pass a noisy threshold (min_release_users plans on it)."""
    body = {"query": "SELECT country, COUNT(*) FROM views GROUP BY country", "delta": 1e-6,
            "max_rows_per_group": 2}
    goal = {"min_release_users": 300}
    greedy = {"min_release_users": 5}

    def library_plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("aggregate", curve=False, privacy_unit="user_id",
                             by=["country"], aggregations=["count"], delta=1e-6,
                             max_rows_per_group=2, **goal)


class TestRollup(TestSql):
    body = {"query": "SELECT country, article, COUNT(*) FROM views "
                     "GROUP BY ROLLUP(country, article)", "max_rows_per_group": 2,
            "keys": [["US", "a1"], ["DE", "a2"], ["DE", "a3"]]}
    goal = {"target_half_width": 60.0}
    greedy = {"target_half_width": 3.0}

    def library_plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("rollup", curve=False, privacy_unit="user_id",
                             by=["country", "article"], aggregations=["count"],
                             keys=self.body["keys"], max_rows_per_group=2, **goal)

    def test_a_target_without_keys_is_a_422(self, service):
        client, tokens, _, _ = service
        body = {**self.body, "delta": 1e-6, "target_half_width": 10.0}
        del body["keys"]
        response = self.post(client, tokens["alice"], "/sql", body)
        assert response.status_code == 422 and "needs keys" in response.json()["detail"]
        assert response.json()["field"] == "target_half_width"


@pytest.fixture()
def running_service(tmp_path):
    """A service whose dataset ``days`` has a time column (the operator's SQL
    derives a day from the user id)."""
    from fastapi.testclient import TestClient

    from privloss.service.app import create_app
    from privloss.service.config import load_config
    from tests.service.conftest import issue_tokens, write_config

    extra = ('\n[[dataset]]\nname = "days"\n'
             "sql = \"SELECT user_id, article, DATE '2024-01-01' + CAST(user_id % 28 AS "
             "INTEGER) AS day FROM t\"\n"
             'tables = { t = "views.parquet" }\nuser_column = "user_id"\n'
             'columns = ["article", "day"]\nepsilon = 1.0\ndelta = 1e-6\n')
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace('[[analyst]]\nname = "alice"\n'
                                             'datasets = ["views"]',
                                             '[[analyst]]\nname = "alice"\n'
                                             'datasets = ["views", "days"]') + extra)
    config = load_config(path)
    tokens = issue_tokens(config)
    with TestClient(create_app(config), raise_server_exceptions=False) as client:
        yield client, tokens, config, None


class TestRunning(Contract):
    command = "running"
    release_path, plan_path = "/running", "/running/plan"
    dataset = "days"
    body = {"time_column": "day", "period": "week", "start": "2024-01-01",
            "end": "2024-01-28", "statistic": "count", "max_periods_per_unit": 2,
            "max_rows_per_period": 1}
    goal = {"target_half_width": 60.0}
    greedy = {"target_half_width": 3.0}

    @pytest.fixture()
    def service(self, running_service):
        return running_service

    def library_plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("running", curve=False, privacy_unit="user_id",
                             time_column="day", period="week", start="2024-01-01",
                             end="2024-01-28", count=True, max_periods_per_unit=2,
                             max_rows_per_period=1, **goal)

    def test_min_release_users_is_for_thresholded_releases(self, service):
        client, tokens, _, _ = service
        response = self.post(client, tokens["alice"], "/running",
                             {**self.body, "min_release_users": 10})
        assert response.status_code == 422
        assert response.json()["field"] == "min_release_users"
        assert "thresholded" in response.json()["detail"]


def test_a_column_not_granted_is_403_before_planning(service):
    client, tokens, _, _ = service
    for path, body in (("/histogram", {"column": "industry", "l0": 1, "domain": DOMAIN}),
                       ("/sql", {"query": "SELECT industry, COUNT(*) FROM views GROUP BY "
                                          "industry", "keys": ["media"]})):
        response = client.post(f"/v1/datasets/views{path}", headers=bearer(tokens["alice"]),
                               json={**body, "target_half_width": 10.0})
        assert response.status_code == 403, response.text


def test_accuracy_names_an_unknown_command(service):
    client, tokens, _, _ = service
    response = client.post("/v1/datasets/views/accuracy", headers=bearer(tokens["alice"]),
                           json={"command": "median", "target_half_width": 10.0})
    assert response.status_code == 422 and response.json()["field"] == "command"


def test_the_client_passes_goals_through(service):
    from privloss.client import Client

    client, tokens, _, _ = service
    remote = Client("http://testserver", tokens["alice"], transport=client._transport)
    plan = remote.accuracy("views", command="sql", target_half_width=40.0,
                           query="SELECT country, COUNT(*) FROM views GROUP BY country",
                           keys=DOMAIN)
    assert plan["goal"] == "half-width"
    release = remote.histogram("views", column="country", l0=1, domain=DOMAIN,
                               target_half_width=20.0)
    assert release.accuracy_plan.target == 20.0
    grouped = remote.sql("views", query="SELECT country, COUNT(*) FROM views GROUP BY country",
                         keys=DOMAIN, target_half_width=40.0)
    assert grouped.accuracy_plan.epsilon == plan["epsilon"]


def test_the_openapi_body_of_accuracy_is_described_with_valid_examples(service):
    """/accuracy takes a body whose shape depends on ``command``: /openapi.json
    describes it and gives one example per command, each one a valid body."""
    from privloss.service.accuracy_route import _checked_body

    client, _, _, _ = service
    operation = client.get("/openapi.json").json()["paths"]["/v1/datasets/{name}/accuracy"]
    content = operation["post"]["requestBody"]["content"]["application/json"]
    assert "command" in content["schema"]["description"]
    assert set(content["examples"]) == {"topk", "histogram", "sql", "running"}
    for name, example in content["examples"].items():
        command, _ = _checked_body(example["value"])
        assert command == name

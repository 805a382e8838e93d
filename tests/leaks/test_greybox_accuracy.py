"""The grey-box neighbouring harness over the accuracy goals (issue 22 item 1):
releases asked with ``target_half_width`` / ``min_release_users`` instead of
``epsilon``, ``/accuracy`` for every kind, and the refusals that say what
still fits (``service.queries.refusal_saying_what_fits`` for top-k /
histograms, ``sql_route``'s, ``rollup_route``'s and ``running_route``'s, the
goal's own prefix).

Each case runs one path on D and on a neighbour D' (one unit added,
tests/leaks/harness.py) with the same seed and asserts that the masked
observations are identical: statuses, bodies but the noisy values (and the
DP-selected keys where the keys are not public), stderr and log records.
The planned epsilon is a function of public parameters only, so every
plan, charge, budget figure and refusal must be equal on D and D'.  Reuses
the helpers of :mod:`tests.leaks.test_greybox`; the fast suite runs each path
on one neighbour, ``-m slow`` on every one.
"""

from __future__ import annotations

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from tests.leaks import harness  # noqa: E402
from tests.leaks.harness import DOMAIN, assert_same, masked, run_library  # noqa: E402
from tests.leaks._service_paths import RUNNING_SERVICE_CONFIG, run_service  # noqa: E402
from tests.leaks.test_greybox import (COLUMNS, CSV_KINDS, SEED,  # noqa: E402
                                      _with_ledger_views)

ROLLUP_KEYS = [[item, str(amount)] for item in DOMAIN for amount in range(10)]


class _Planned:
    """A library release with its plan, as the harness compares it."""

    def __init__(self, release):
        self.release = release

    def to_dict(self) -> dict:
        from tests.leaks.harness import as_json
        return {"release": as_json(self.release),
                "accuracy": self.release.accuracy_plan.to_dict()}


def lib_histogram_target(directory, data):
    import privloss
    return run_library(lambda: _Planned(privloss.histogram(
        data, privacy_unit="user", item="item", l0=3, domain=list(DOMAIN),
        target_half_width=20.0, seed=SEED)))


def lib_topk_min_users(directory, data):
    import privloss
    return run_library(lambda: _Planned(privloss.topk(
        data, privacy_unit="user", item="item", k=2, l0=2, d_bar=10, delta=1e-6,
        min_release_users=40, seed=SEED)))


def lib_aggregate_target(directory, data):
    import privloss
    return run_library(lambda: _Planned(privloss.aggregate(
        data, privacy_unit="user", by="item", aggregations=["count", "sum:amount:0:10"],
        keys=list(DOMAIN), target_half_width=30.0, seed=SEED)))


def lib_rollup_min_users(directory, data):
    import privloss
    return run_library(lambda: _Planned(privloss.rollup(
        data, privacy_unit="user", by=["item", "amount"], delta=1e-6, max_groups=2,
        min_release_users=30, seed=SEED)))


def service_goals_public(directory, data):
    """Public keys: /accuracy for every kind, releases and dry runs by goal
    (histogram, SQL with keys, ROLLUP with keys, running), the stored answer
    of a repeat, a 422, refusals saying what fits, then history and budget."""
    def steps(client, headers, token):
        def post(path, body):
            return client.post(f"/v1/datasets/d{path}", headers=headers, json=body)

        histogram = {"column": "item", "l0": 3, "domain": list(DOMAIN)}
        sql = {"query": "SELECT item, COUNT(*), COUNT(DISTINCT user) FROM d GROUP BY item",
               "keys": list(DOMAIN)}
        rollup = {"query": "SELECT item, amount, COUNT(*) FROM d GROUP BY ROLLUP(item, amount)",
                  "max_groups": 2, "keys": ROLLUP_KEYS}
        running = {"time_column": "day", "period": "week", "start": "2024-01-01",
                   "end": "2024-01-28", "statistic": "count", "max_periods_per_unit": 2,
                   "max_rows_per_period": 2}
        yield "accuracy-histogram", post("/accuracy", {"command": "histogram", **histogram,
                                                       "target_half_width": 20.0})
        yield "accuracy-sql", post("/accuracy", {"command": "sql", **sql,
                                                 "target_half_width": 30.0})
        yield "accuracy-rollup", post("/accuracy", {"command": "sql", **rollup,
                                                    "target_half_width": 60.0})
        yield "accuracy-running", post("/accuracy", {"command": "running", **running,
                                                     "target_half_width": 60.0})
        yield "plan", post("/plan", {"command": "histogram", **histogram,
                                     "target_half_width": 20.0})
        yield "histogram", post("/histogram", {**histogram, "target_half_width": 20.0})
        yield "histogram-again", post("/histogram", {**histogram, "target_half_width": 20.0})
        yield "two-goals", post("/histogram", {**histogram, "epsilon": 1.0,
                                               "target_half_width": 20.0})
        yield "sql-plan", post("/sql/plan", {**sql, "target_half_width": 30.0})
        yield "sql", post("/sql", {**sql, "target_half_width": 30.0})
        yield "rollup", post("/sql", {**rollup, "consistent": True, "target_half_width": 60.0})
        yield "running-plan", post("/running/plan", {**running, "target_half_width": 60.0})
        yield "running", post("/running", {**running, "target_half_width": 60.0})
        # refusals (budget epsilon 10, most of it spent here): what the goal needs,
        # then what still fits
        yield "spend", post("/histogram", {**histogram, "epsilon": 6.0, "label": "spend"})
        yield "refused-histogram-goal", post("/histogram", {**histogram,
                                                            "target_half_width": 0.4})
        yield "refused-histogram", post("/histogram", {**histogram, "epsilon": 50.0})
        yield "refused-sql-goal", post("/sql", {**sql, "target_half_width": 0.5})
        yield "refused-sql", post("/sql", {**sql, "epsilon": 50.0})
        yield "refused-rollup-goal", post("/sql", {**rollup, "target_half_width": 3.0})
        yield "refused-running-goal", post("/running", {**running, "target_half_width": 3.0})
        yield "history", client.get("/v1/datasets/d/history", headers=headers)
        yield "budget", client.get("/v1/datasets/d/budget", headers=headers)
    return run_service(directory, data, steps, RUNNING_SERVICE_CONFIG)


def service_goals_selected(directory, data):
    """DP-selected keys: top-k by min_release_users, SQL and ROLLUP without
    keys by goal, their plans, a refusal, then history."""
    def steps(client, headers, token):
        def post(path, body):
            return client.post(f"/v1/datasets/d{path}", headers=headers, json=body)

        topk = {"column": "item", "k": 2, "l0": 2, "d_bar": 10, "delta": 1e-6}
        sql = {"query": "SELECT item, COUNT(*) FROM d GROUP BY item", "delta": 1e-6,
               "max_rows_per_group": 2}
        rollup = {"query": "SELECT item, amount, COUNT(*) FROM d GROUP BY ROLLUP(item, amount)",
                  "delta": 1e-6, "max_groups": 2}
        yield "accuracy-topk", post("/accuracy", {"command": "topk", **topk,
                                                  "min_release_users": 40})
        yield "accuracy-rollup", post("/accuracy", {"command": "sql", **rollup,
                                                    "min_release_users": 30})
        yield "topk", post("/topk", {**topk, "min_release_users": 40})
        yield "sql-plan", post("/sql/plan", {**sql, "min_release_users": 40})
        yield "sql", post("/sql", {**sql, "min_release_users": 40})
        yield "rollup", post("/sql", {**rollup, "min_release_users": 30})
        yield "rollup-target", post("/sql", {**rollup, "target_half_width": 10.0})
        yield "refused-topk-goal", post("/topk", {**topk, "min_release_users": 2})
        yield "history", client.get("/v1/datasets/d/history", headers=headers)
    return run_service(directory, data, steps, RUNNING_SERVICE_CONFIG)


def cli_odometer_and_bounds_refusals(directory, data):
    """An odometer dataset refusing a release whose delta no grid level allows
    (exit 3), then admitting a small-delta one; and SQL bounds that no aggregate
    reads (exit 2): every refusal a function of public parameters."""
    from tests.leaks.harness import Observation, run_cli

    path = directory / "odometer.sqlite"
    created = run_cli(["ledger", "create", "--ledger", path, "--dataset", "d", "--odometer",
                       "--budget-delta", "1e-6"])
    assert created.status == 0, created.stderr
    ledger = ["--ledger", path, "--dataset", "d"]
    topk = ["topk", data, *COLUMNS, "--k", "2", "--epsilon", "0.5", "--l0", "2", "--d-bar",
            "10", "--seed", SEED, "--json", *ledger]
    refused = run_cli([*topk, "--delta", "1e-7"])
    admitted = run_cli([*topk, "--delta", "1e-12"])
    unread = run_cli(["sql", "SELECT item, COUNT(*) FROM t GROUP BY item", "--table",
                      f"t={data}", "--privacy-unit", "user", "--epsilon", "1", "--keys",
                      _keys_file(directory), "--bounds", "amount=0:10", "--seed", SEED])
    seen = Observation(admitted.status, admitted.stdout,
                       "\n".join([refused.stderr, admitted.stderr, unread.stderr]),
                       {"statuses": [refused.status, admitted.status, unread.status]})
    return _with_ledger_views(seen, ledger)


def _keys_file(directory):
    path = directory / "keys.csv"
    path.write_text("item\n" + "\n".join(map(str, DOMAIN)) + "\n")
    return path


#: path -> (data format, public keys?, runner)
PATHS = {
    "lib-histogram-target": ("csv", True, lib_histogram_target),
    "lib-topk-min-users": ("csv", False, lib_topk_min_users),
    "lib-aggregate-target": ("parquet", True, lib_aggregate_target),
    "lib-rollup-min-users": ("csv", False, lib_rollup_min_users),
    "cli-odometer-and-bounds-refusals": ("csv", False, cli_odometer_and_bounds_refusals),
    "service-goals-public": ("csv", True, service_goals_public),
    "service-goals-selected": ("csv", False, service_goals_selected),
}
SERVICE_PATHS = ("service-goals-public", "service-goals-selected")


def _cases():
    for number, path in enumerate(PATHS):
        fast = CSV_KINDS[(number + 1) % len(CSV_KINDS)]
        for kind in CSV_KINDS:
            marks = [] if kind == fast else [pytest.mark.slow]
            yield pytest.param(path, kind, id=f"{path}-{kind}", marks=marks)


@pytest.fixture(scope="module")
def observe(tmp_path_factory):
    """observe(path, kind) -> (masked view, raw observation), cached."""
    root = tmp_path_factory.mktemp("greybox-accuracy")
    cache = {}

    def run(path: str, kind):
        if (path, kind) not in cache:
            form, public, runner = PATHS[path]
            if path in SERVICE_PATHS:
                pytest.importorskip("fastapi")
                pytest.importorskip("argon2")
            directory = root / path / str(kind)
            directory.mkdir(parents=True)
            data = directory / f"data.{form}"
            (harness.write_csv if form == "csv" else harness.write_parquet)(data, kind)
            seen = runner(directory, data)
            cache[path, kind] = (masked(seen, public_keys=public,
                                        run_directory=str(directory)), seen)
        return cache[path, kind]
    return run


@pytest.mark.parametrize("path,kind", list(_cases()))
def test_goal_paths_identical_but_noise(observe, path, kind):
    base_view, base = observe(path, None)
    assert base.status in (0, "ok"), base.stderr
    assert_same(base_view, observe(path, kind)[0], f"{path} on {kind}")


def test_the_service_paths_answer_what_they_should(observe):
    """The base run itself: every goal answered, the repeat free, the refusals
    409 saying what the goal needs and what fits, the bad body 422."""
    import json

    seen = json.loads(observe("service-goals-public", None)[1].stdout)
    for name in ("accuracy-histogram", "accuracy-sql", "accuracy-rollup", "accuracy-running",
                 "plan", "histogram", "sql-plan", "sql", "rollup", "running-plan", "running"):
        assert seen[name][0] == 200, (name, seen[name])
    assert seen["histogram-again"][1]["receipt"]["cached"] is True
    # problem+json bodies are text here (their numbers masked by the harness)
    assert seen["two-goals"][0] == 422 and '"field":"target_half_width"' in seen["two-goals"][1]
    for name in ("refused-histogram-goal", "refused-sql-goal", "refused-rollup-goal",
                 "refused-running-goal"):
        status, body = seen[name]
        assert status == 409 and '"detail":"target_half_width ' in body, body
        assert "needs epsilon" in body and "at most epsilon" in body, body
    for name in ("refused-histogram", "refused-sql"):
        assert seen[name][0] == 409 and "at most epsilon" in seen[name][1], seen[name]
    selected = json.loads(observe("service-goals-selected", None)[1].stdout)
    for name in ("accuracy-topk", "accuracy-rollup", "topk", "sql-plan", "sql", "rollup"):
        assert selected[name][0] == 200, (name, selected[name])
    assert selected["rollup-target"][0] == 422 and "needs keys" in selected["rollup-target"][1]
    assert selected["refused-topk-goal"][0] == 409, selected["refused-topk-goal"]


def test_the_odometer_and_bounds_refusals_happen(observe):
    """The base run itself: refused (3), admitted (0), unread bounds (2)."""
    seen = observe("cli-odometer-and-bounds-refusals", None)[1]
    assert seen.extra["statuses"] == [3, 0, 2], seen.stderr
    assert "cannot give this history a finite epsilon" in seen.stderr
    assert "bounds for 'amount'" in seen.stderr

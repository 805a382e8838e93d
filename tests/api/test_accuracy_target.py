"""Issue 22 item 1 in Python: every release function takes ``target_half_width``
or ``min_release_users`` instead of ``epsilon``, releases at the planned epsilon
and carries the plan (``accuracy_plan``).

One contract class, inherited per release kind: the release's epsilon is the
plan's (and the plan's is the library planner's for the same public
parameters), the plan meets the goal, exactly one of the three is accepted
(ValueError naming the field, before anything is read), a ledger charges the
planned epsilon once and an identical repeat is the stored answer, free."""

from __future__ import annotations

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

DOMAIN = ["US", "IN", "BR", "GB", "DE"]


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    from privloss.service.demo import write_demo_data

    path = tmp_path_factory.mktemp("views") / "views.parquet"
    write_demo_data(path, rows=5_000)
    return str(path)


def _ledger(directory, name="d"):
    from privloss.budget import Ledger

    ledger = Ledger(directory / "ledger.sqlite", create=True)
    ledger.create_dataset(name, epsilon=20.0, delta=1e-4, interaction="fully-adaptive")
    return ledger


class Contract:
    """A release kind: ``release(data, **goal_and_more)``, ``epsilon_of(release)``,
    ``goal`` (the one it plans for) and ``plan(goal)`` (the library planner)."""

    goal: dict

    def release(self, data, **options):
        raise NotImplementedError

    def check_epsilon(self, release, plan) -> None:
        assert release.parameters["epsilon"] == plan.epsilon

    def plan(self, goal):
        raise NotImplementedError

    def test_releases_at_the_planned_epsilon(self, views):
        release = self.release(views, **self.goal, seed=1)
        plan = release.accuracy_plan
        assert plan is not None and plan.goal in ("half-width", "release")
        self.check_epsilon(release, plan)
        assert plan.epsilon == self.plan(self.goal).epsilon
        if "target_half_width" in self.goal:
            assert max(plan.half_widths.values()) <= self.goal["target_half_width"]
        assert plan.to_dict()["charged"] is False and plan.lines

    @pytest.mark.parametrize("given, field", [
        ({}, "epsilon"),
        ({"epsilon": 1.0, "target_half_width": 10.0}, "target_half_width"),
        ({"target_half_width": 10.0, "min_release_users": 5}, "min_release_users"),
    ])
    def test_exactly_one_of_epsilon_and_the_goals(self, tmp_path, given, field):
        missing = tmp_path / "never-read.parquet"       # errors come before any read
        with pytest.raises(ValueError) as error:
            self.release(str(missing), **given)
        assert str(error.value).startswith(field)

    def test_a_ledger_charges_the_plan_once_and_a_repeat_is_free(self, views, tmp_path):
        ledger = _ledger(tmp_path)
        first = self.release(views, **self.goal, ledger=ledger, dataset="d")
        spent = ledger.show("d")["spent_epsilon"]
        again = self.release(views, **self.goal, ledger=ledger, dataset="d")
        assert not first.cached and again.cached
        assert ledger.show("d")["spent_epsilon"] == spent
        assert ledger.show("d")["releases"] == 1


class TestHistogram(Contract):
    goal = {"target_half_width": 15.0}

    def release(self, data, **options):
        import privloss
        return privloss.histogram(data, privacy_unit="user_id", item="country", l0=1,
                                  domain=DOMAIN, **options)

    def check_epsilon(self, release, plan):
        from privloss.api.request import make_request
        assert release.events == tuple(make_request(
            "histogram", epsilon=plan.epsilon, l0=1, domain=DOMAIN).events())

    def plan(self, goal):
        return __import__("privloss").plan("histogram", l0=1, domain=DOMAIN, **goal).accuracy

    def test_the_released_half_width_meets_the_target(self, views):
        release = self.release(views, **self.goal, seed=2)
        assert float(release.parameters["ci95_half_width"]) <= self.goal["target_half_width"]


class TestTopk(Contract):
    goal = {"min_release_users": 300}

    def release(self, data, **options):
        import privloss
        return privloss.topk(data, privacy_unit="user_id", item="article", k=3, l0=2,
                             delta=1e-7, **options)

    def check_epsilon(self, release, plan):
        from privloss.api.request import make_request
        assert release.events == tuple(make_request(
            "topk", epsilon=plan.epsilon, k=3, l0=2, delta=1e-7).events())

    def plan(self, goal):
        return __import__("privloss").plan("topk", k=3, l0=2, delta=1e-7, **goal).accuracy

    def test_min_release_users_needs_a_threshold(self, views):
        import privloss
        with pytest.raises(ValueError, match="thresholded"):
            privloss.histogram(views, privacy_unit="user_id", item="country", l0=1,
                               domain=DOMAIN, min_release_users=10)


class TestAggregate(Contract):
    goal = {"target_half_width": 30.0}
    public = dict(privacy_unit="user_id", by=["country"], aggregations=["count",
                                                                        "count_distinct"],
                  keys=DOMAIN, max_rows_per_group=3)

    def release(self, data, **options):
        import privloss
        return privloss.aggregate(data, **self.public, **options)

    def plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("aggregate", curve=False, **goal, **self.public)

    def test_the_planned_split_is_used(self, views):
        release = self.release(views, **self.goal)
        assert release.accuracy_plan.budget_split is not None
        assert release.to_dict()["accuracy"]["budget_split"] == \
            release.accuracy_plan.budget_split


class TestSql(TestAggregate):
    def release(self, data, **options):
        import privloss
        return privloss.sql("SELECT country, COUNT(*), COUNT(DISTINCT user_id) FROM v "
                            "GROUP BY country", tables={"v": data}, privacy_unit="user_id",
                            keys=DOMAIN, max_rows_per_group=3, **options)

    def test_exactly_one_of_epsilon_and_the_goals(self, tmp_path, views):
        # sql parses and snapshots its tables first: the data must exist
        for given, field in (({}, "epsilon"),
                             ({"epsilon": 1.0, "target_half_width": 1.0}, "target_half_width")):
            with pytest.raises(ValueError) as error:
                self.release(views, **given)
            assert str(error.value).startswith(field)


class TestRunning(Contract):
    goal = {"target_half_width": 60.0}
    public = dict(privacy_unit="user_id", time_column="day", period="week",
                  start="2024-01-01", end="2024-02-25", count=True, max_periods_per_unit=2,
                  max_rows_per_period=1)

    def release(self, data, **options):
        import privloss
        return privloss.running(data, **self.public, **options)

    def check_epsilon(self, release, plan):
        from privloss.api.running import make_running_request
        assert release.payload["accuracy"]["epsilon"] == plan.epsilon
        assert release.payload["events"] == [repr(event) for event in make_running_request(
            epsilon=plan.epsilon, **self.public).events]

    def plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("running", curve=False, **goal, **self.public)

    @pytest.fixture()
    def views(self, tmp_path):
        """The demo views with a day column (the running totals' time)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from privloss.service.demo import write_demo_data

        write_demo_data(tmp_path / "plain.parquet", rows=3_000)
        table = pq.read_table(tmp_path / "plain.parquet")
        days = pa.array([f"2024-01-{1 + user % 28:02d}" for user in
                         table.column("user_id").to_pylist()]).cast(pa.date32())
        pq.write_table(table.append_column("day", days), tmp_path / "days.parquet")
        return str(tmp_path / "days.parquet")


class TestRollupWithKeys(Contract):
    goal = {"target_half_width": 40.0}
    public = dict(privacy_unit="user_id", by=["country", "industry"],
                  aggregations=["count"], keys=[["US", "media"], ["DE", "retail"],
                                                ["DE", "media"]], max_rows_per_group=2)

    def release(self, data, **options):
        import privloss
        return privloss.rollup(data, **self.public, **options)

    def plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("rollup", curve=False, **goal, **self.public)

    def test_the_plan_is_the_largest_level_half_width(self, views):
        from privloss.api.rollup import make_rollup

        plan = self.plan(self.goal)
        levels = make_rollup(epsilon=plan.epsilon, **self.public).describe()["level_split"]
        assert max(levels["count"]["ci95_half_width_by_level"]) <= 40.0


class TestRollupSelected(Contract):
    goal = {"min_release_users": 80}
    public = dict(privacy_unit="user_id", by=["country", "industry"], delta=1e-6)

    def release(self, data, **options):
        import privloss
        return privloss.rollup(data, **self.public, **options)

    def plan(self, goal):
        from privloss.api.accuracy_plan import plan_accuracy
        return plan_accuracy("rollup", curve=False, **goal, **self.public)

    def test_a_target_needs_keys(self, views):
        with pytest.raises(ValueError, match="needs keys"):
            self.release(views, target_half_width=10.0)

    def test_the_path_probability_is_at_least_the_goal(self):
        """Each of the L nodes on a finest group's path is selected independently
        with probability p; the plan's 95% point makes p^L >= 0.95."""
        from privloss.api.accuracy_plan import _at_least
        from privloss.api.rollup import make_rollup

        plan = self.plan(self.goal)
        budget = make_rollup(epsilon=plan.epsilon, **self.public).budget
        one = _at_least(("laplace", budget.selection_scale),
                        int(-(-(budget.threshold - 80) // 1)))
        assert one ** 2 >= 0.95

"""Plan for an accuracy (issue 22 items 1 and 3): the planned epsilon meets the
target and slightly less does not; release probabilities of a group of N
users; planning charges nothing; the plot is a PNG."""

from __future__ import annotations

import json

import mpmath
import pytest

import privloss
from privloss.api.accuracy_plan import accuracy_figure, plan_accuracy
from privloss.api.aggregate import describe_plan, make_query, plan_aggregate
from privloss.api.planning import plan

PNG = b"\x89PNG\r\n\x1a\n"
BELOW = 1 - 1e-3
HISTOGRAMS = [dict(delta=1e-6, l0=5), dict(delta=0.0, l0=3, domain=50)]


def _width(epsilon, **parameters) -> float:
    return plan("histogram", epsilon=epsilon, **parameters).noise["ci95_half_width"]


@pytest.mark.parametrize("parameters", HISTOGRAMS)
def test_histogram_target_is_met_and_missed_just_below(parameters):
    planned = plan("histogram", target_half_width=20, **parameters)
    epsilon = planned.request.epsilon
    assert planned.accuracy.epsilon == epsilon and planned.accuracy.goal == "half-width"
    assert _width(epsilon, **parameters) <= 20
    assert _width(epsilon * BELOW, **parameters) > 20
    assert "95% half-width is at most 20" in str(planned)


def _widths(query) -> dict:
    return {m["measurement"]: m.get("ci95_half_width", m.get("ci95_rank_error"))
            for m in describe_plan(query)["measurements"]}


def test_aggregate_target_and_split_meet_every_measurement():
    query = dict(privacy_unit="u", by=["c"], aggregations=["count", "count_distinct",
                                                            "sum:p:0:10"],
                 delta=1e-6, max_rows_per_group=3)
    planned = plan_aggregate(target_half_width=40, **query)
    accuracy = planned["accuracy"]
    epsilon, split = accuracy["epsilon"], accuracy["budget_split"]
    assert set(split) == {"rows", "distinct", "sum:p"}
    assert max(_widths(make_query(epsilon=epsilon, budget_split=split, **query)).values()) <= 40
    assert max(_widths(make_query(epsilon=epsilon * BELOW, budget_split=split,
                                  **query)).values()) > 40
    assert accuracy["charged"] is False and "split:" in " ".join(accuracy["text"])


def _release_probability(epsilon: float, users: int, parameters) -> float:
    """P[users + Z >= offset], Z discrete Laplace of the plan's scale (closed form)."""
    planned = plan("histogram", epsilon=epsilon, **parameters)
    offset = planned.threshold["offset"]
    scale = mpmath.mpf(planned.noise["scale_exact"].split("/")[0]) / (
        mpmath.mpf(planned.noise["scale_exact"].split("/")[1])
        if "/" in planned.noise["scale_exact"] else 1)
    r = mpmath.exp(-1 / scale)
    m = int(mpmath.ceil(offset - users))            # Z >= m
    if m >= 1:
        return float(r ** m / (1 + r))
    return float(1 - r ** (1 - m) / (1 + r))


def test_min_release_users_probabilities():
    parameters = dict(delta=1e-6, l0=5)
    planned = plan_accuracy("histogram", min_release_users=300, **parameters)
    half, most = planned.release_epsilons["0.5"], planned.release_epsilons["0.95"]
    assert half < most == planned.epsilon
    assert _release_probability(half, 300, parameters) >= 0.5
    assert _release_probability(half * BELOW, 300, parameters) < 0.5
    assert _release_probability(most, 300, parameters) >= 0.95
    assert _release_probability(most * BELOW, 300, parameters) < 0.95
    text = " ".join(planned.lines)
    assert "a group of 300 distinct users is released with probability 1/2" in text
    assert "almost never released" in text
    assert accuracy_figure(planned).startswith(PNG)


def test_min_release_users_needs_a_threshold():
    with pytest.raises(ValueError, match="thresholded"):
        plan_accuracy("histogram", min_release_users=10, delta=0.0, l0=3, domain=20)


def test_aggregate_min_release_users_and_curve():
    planned = plan_accuracy("aggregate", min_release_users=100, privacy_unit="u", by=["c"],
                            aggregations=["count"], delta=1e-6, max_rows_per_group=2)
    query = make_query(epsilon=planned.epsilon, privacy_unit="u", by=["c"],
                       aggregations=["count"], delta=1e-6, max_rows_per_group=2)
    assert abs(query.plan.threshold - planned.threshold) <= 1
    assert planned.curve and all(0 <= p <= 1 for _, p in planned.curve)
    assert planned.to_dict()["curve"]["measure"] == "release probability"


def test_running_target():
    parameters = dict(privacy_unit="u", time_column="t", period="day", start="2020-01-01",
                      end="2020-01-16", count=True, max_periods_per_unit=2,
                      max_rows_per_period=1)
    planned = plan_accuracy("running", target_half_width=15, **parameters)
    from privloss.api.running import make_running_request

    def width(epsilon):
        request = make_running_request(epsilon=epsilon, **parameters)
        return request.plan_summary()["ci95_half_width_max"]
    assert width(planned.epsilon) <= 15 < width(planned.epsilon * BELOW)


def test_bad_targets_are_named():
    with pytest.raises(ValueError, match="target_half_width must be"):
        plan_accuracy("histogram", target_half_width=-1, delta=1e-6, l0=5)
    with pytest.raises(ValueError, match="min_release_users must be"):
        plan_accuracy("histogram", min_release_users=0, delta=1e-6, l0=5)
    with pytest.raises(ValueError, match="not both"):
        plan("histogram", epsilon=1.0, target_half_width=3, delta=1e-6, l0=5)


def test_exported():
    assert privloss.plan_accuracy is plan_accuracy
    assert json.dumps(plan_accuracy("histogram", epsilon=0.5, delta=1e-6, l0=5).to_dict())


def test_plan_at_a_given_epsilon_equals_the_dry_run():
    query = dict(privacy_unit="u", by=["c"], delta=1e-6, max_rows_per_group=5,
                 aggregations=["count", "quantile:p:0:100:0.5"])
    planned = plan_accuracy("aggregate", epsilon=0.5, curve=False, **query)
    assert planned.half_widths == _widths(make_query(epsilon=0.5, **query))
    assert planned.curve == ()


def test_a_plan_round_trips_through_json_and_draws():
    from privloss.api.accuracy_plan import AccuracyPlan

    planned = plan_accuracy("histogram", target_half_width=25, delta=1e-6, l0=5)
    again = AccuracyPlan.from_dict(json.loads(json.dumps(planned.to_dict())))
    assert again == planned
    assert accuracy_figure(again).startswith(PNG)

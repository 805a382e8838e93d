"""The pure-DP calibration (delta = 0) compares the exact rational epsilon of
the events (:func:`exact_pure_epsilon`) instead of running the accountant at
every bisection step: it must give the knob, events and guarantee that the
accountant's own search gives (the reference: the same bisection with
``_pure_meets`` switched off), and never a knob the accountant refuses."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from privloss.accounting import compose
from privloss.events import (ApproxDP, BoundedRange, DiscreteGaussian, DiscreteLaplace, Laplace,
                             PureDP)
from privloss.query.spec import check_aggregations
from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms.known_gumbel import calibrate_known_gumbel
from privloss.releases.calibration import build_plan


@pytest.fixture
def accountant_search(monkeypatch):
    """Run ``function`` with the accountant's search (the pure path off)."""
    def run(function, *args, **kwargs):
        with monkeypatch.context() as patch:
            patch.setattr(_calibrate, "_pure_meets", lambda *a, **k: None)
            return function(*args, **kwargs)
    return run


def test_exact_pure_epsilon_worked_values():
    events = (DiscreteLaplace(10.0, 10, count=3), BoundedRange(0.25, count=2),
              PureDP(0.125), Laplace(4.0, 2.0, count=2))
    assert _calibrate.exact_pure_epsilon(events) == 3 + Fraction(1, 2) + Fraction(1, 8) + 1
    # a float scale is read exactly: 1/3 of a rounded-down scale is above 1/3
    scale = 3.0 / 1.0000000000000002
    assert _calibrate.exact_pure_epsilon((DiscreteLaplace(scale, 1),)) == 1 / Fraction(scale)
    assert _calibrate.exact_pure_epsilon((ApproxDP(0.0, 1e-9),)) is None
    assert _calibrate.exact_pure_epsilon((DiscreteGaussian(3.0, 1),)) is None


@pytest.mark.parametrize("events", [
    (DiscreteLaplace(10.0, 10),),
    (DiscreteLaplace(7.0, 3, count=5), BoundedRange(0.1, count=5)),
    (Laplace(0.3, 1.0, count=4), PureDP(0.01, count=10)),
    (DiscreteLaplace(1 / 0.7, 1, count=2), DiscreteLaplace(2.9, 2, count=1)),
])
def test_no_accountant_row_is_below_the_exact_sum(events):
    """The accountant's answer at delta 0 is the exact sum rounded up (no valid
    bound is lower; basic composition is at most a float above it)."""
    exact = _calibrate.exact_pure_epsilon(events)
    value = compose(events, target_delta=0.0, interaction="adaptive").epsilon
    assert exact <= Fraction(value) <= exact * (1 + Fraction(1, 10 ** 12))


AGGREGATIONS = [["count"], ["count", "count_distinct"], ["count", "sum:x:-5:7"],
                ["mean:x:0:10"], ["count", "mean:x:0:10", "quantile:x:0:10:0.5"]]


@pytest.mark.parametrize("aggregations", AGGREGATIONS)
@pytest.mark.parametrize("epsilon, groups, rows", [(1.0, 1, 10), (0.3, 3, 5), (1 / 3, 7, 2),
                                                   (2.5, 1, 1)])
def test_build_plan_matches_the_accountant_search(accountant_search, aggregations, epsilon,
                                                 groups, rows):
    parameters = dict(epsilon=epsilon, delta=0.0, max_groups=groups, max_rows_per_group=rows,
                      unknown_keys=False)
    expected = accountant_search(build_plan, check_aggregations(aggregations), **parameters)
    plan = build_plan(check_aggregations(aggregations), **parameters)
    assert plan.strengths == expected.strengths
    assert plan.noises == expected.noises
    assert plan.events == expected.events
    assert plan.guarantee == expected.guarantee
    assert plan.guarantee["epsilon"] <= epsilon


def test_build_plan_with_a_budget_split_matches(accountant_search):
    parameters = dict(epsilon=0.7, delta=0.0, max_groups=2, max_rows_per_group=4,
                      unknown_keys=False, budget_split={"count": 1, "sum(x)": 3})
    aggregations = check_aggregations(["count", "sum:x:0:9"])
    expected = accountant_search(build_plan, aggregations, **parameters)
    assert build_plan(aggregations, **parameters).strengths == expected.strengths


@pytest.mark.parametrize("k, epsilon", [(1, 1.0), (5, 0.5), (10, 2.0)])
def test_known_gumbel_pure_matches_the_accountant_search(accountant_search, k, epsilon):
    parameters = dict(k=k, epsilon=epsilon, delta=0.0)
    assert calibrate_known_gumbel(**parameters) == \
        accountant_search(calibrate_known_gumbel, **parameters)


def test_a_refused_pure_answer_falls_back_to_the_search(monkeypatch):
    """If the full re-check refused the pure answer, the accountant's search
    decides (and its answer is re-checked as before)."""
    calls = []
    real = _calibrate.spent

    def strict(events, delta, interaction):
        calls.append(1)
        result = real(events, delta, interaction)
        if len(calls) == 1:
            return type(result)(result.target, result.target_value, math.inf, "refused", ())
        return result

    monkeypatch.setattr(_calibrate, "spent", strict)
    x, result = _calibrate.largest_meeting(lambda x: (DiscreteLaplace(1 / x, 1),), 1.0, 0.0,
                                           guess=1.0)
    assert len(calls) == 2 and result.epsilon <= 1.0 and x == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("events", [
    (BoundedRange(0.07, count=10), DiscreteLaplace(14.3, 1, count=10), ApproxDP(0.0, 5e-7)),
    (DiscreteLaplace(3.0, 2, count=4),),
    (BoundedRange(0.2, count=3), PureDP(0.1, count=2)),
    (DiscreteGaussian(4.0, 1, count=5), BoundedRange(0.1, count=2)),
])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_meets_epsilon_is_the_accountants_comparison(events, delta):
    """The search's early-stopping comparison says what the full accountant's
    minimum says, at targets around that minimum."""
    from privloss.accounting import PrivacyAccountant
    from privloss.accounting.accountant import meets_epsilon

    value = PrivacyAccountant(events, candidates=_calibrate.SEARCH_CANDIDATES) \
        .epsilon(delta).value
    for target in (value * 0.9, math.nextafter(value, 0.0), value,
                   math.nextafter(value, math.inf), value * 1.1):
        assert meets_epsilon(events, target, delta, "adaptive", _calibrate.SEARCH_ORDER) == \
            (value <= target)

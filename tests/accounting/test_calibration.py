"""Calibration never exceeds its target and is tight."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss import BoundedRange, PureDP, calibrate_epsilon, calibrate_gaussian_sigma, compose
from privloss.accounting.accountant import epsilon_of_profile
from privloss.accounting.calibration import _order_free
from privloss.accounting.candidates import CANDIDATES
from privloss.accounting.profile import Profile
from privloss.events import Interaction
from privloss.bounds.gaussian import analytic_gaussian_delta


def test_dp_calibration_matches_theorem_1():
    result = calibrate_epsilon(10, 0, 0.999370905722, 1e-6)
    assert result.per_mechanism_epsilon == pytest.approx(0.1, rel=1e-8)
    assert result.check.value <= 0.999370905722


def test_br_calibration_non_adaptive():
    result = calibrate_epsilon(0, 100, 2.246026212456, 1e-6, interaction="non-adaptive")
    assert result.per_mechanism_epsilon == pytest.approx(0.1, rel=1e-7)
    assert result.check.bound == "optimal-br-nonadaptive"


def test_bad_input():
    with pytest.raises(ValueError, match="num_dp"):
        calibrate_epsilon(-1, 0, 1.0, 1e-6)
    with pytest.raises(ValueError, match="target_delta"):
        calibrate_epsilon(1, 0, 1.0, 1.0)


CALIBRATION_CASES = dict(num_dp=st.integers(0, 40), num_br=st.integers(0, 40), target=st.floats(0.05, 5.0),
                         delta=st.floats(1e-10, 0.01),
                         interaction=st.sampled_from(["adaptive", "non-adaptive", "setwise"]))


@settings(max_examples=6, deadline=None)
@given(**CALIBRATION_CASES)
def test_calibrated_epsilon_never_exceeds_target(num_dp, num_br, target, delta, interaction):
    check_calibration(num_dp, num_br, target, delta, interaction)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(**CALIBRATION_CASES)
def test_calibrated_epsilon_never_exceeds_target_many(num_dp, num_br, target, delta, interaction):
    check_calibration(num_dp, num_br, target, delta, interaction)


def _events(num_dp, num_br, epsilon0, order="dp-first"):
    events = ([PureDP(epsilon0, count=num_dp)] if num_dp else []) + \
             ([BoundedRange(epsilon0, count=num_br)] if num_br else [])
    return events[::-1] if order == "br-first" else events


def check_calibration(num_dp, num_br, target, delta, interaction):
    if num_dp + num_br == 0:
        return
    result = calibrate_epsilon(num_dp, num_br, target, delta, interaction=interaction)
    epsilon0 = result.per_mechanism_epsilon
    assert result.order == "any"
    # the guarantee holds whichever order the mechanisms are spent in
    for order in ("dp-first", "br-first"):
        events = _events(num_dp, num_br, epsilon0, order)
        assert compose(events, target_delta=delta, interaction=interaction).epsilon <= target
    # tight for the bounds it may use (the order-free ones, adaptively)
    candidates = _order_free(CANDIDATES, num_dp, num_br, Interaction.parse(interaction))
    bigger = Profile.of(_events(num_dp, num_br, epsilon0 * (1 + 1e-6)))
    spent = epsilon_of_profile(bigger, Interaction.parse(interaction), delta, candidates).value
    assert spent > target * (1 - 1e-6)


# The order-dependence grid of issue 12 item 5: calibrated in one order (DP first), the
# re-check with the BR events first came out above the target in 5 of 33 adaptive cases
# (worst 2.1e-7 relative); here 6 of these 33 did (e.g. 2 DP + 5 BR at (1, 1e-6): 1.33e-7).
ORDER_GRID = [(num_dp, num_br, target, delta)
              for num_dp, num_br in [(1, 1), (2, 1), (1, 2), (3, 3), (5, 2), (2, 5), (10, 10),
                                     (50, 50), (1, 10), (10, 1), (30, 3)]
              for target, delta in [(1.0, 1e-6), (0.5, 1e-3), (3.0, 1e-9)]]
#: a cheap subset for the default run, with cases that failed before
ORDER_GRID_FAST = [(3, 3, 1.0, 1e-6), (2, 5, 1.0, 1e-6), (5, 2, 0.5, 1e-3), (30, 3, 1.0, 1e-6)]


def check_every_order(num_dp, num_br, target, delta):
    result = calibrate_epsilon(num_dp, num_br, target, delta, interaction="adaptive")
    epsilon0 = result.per_mechanism_epsilon
    assert 0 < epsilon0 < math.inf and result.check.value <= target
    orders = [_events(num_dp, num_br, epsilon0, "dp-first"), _events(num_dp, num_br, epsilon0, "br-first")]
    if num_dp + num_br <= 8:                 # and an interleaving: DP, BR, DP, BR, ...
        kinds = sorted(["dp"] * num_dp + ["br"] * num_br, key=lambda kind: kind == "br")
        kinds = [kinds[i // 2] if i % 2 == 0 else kinds[-(i // 2) - 1] for i in range(len(kinds))]
        orders.append([PureDP(epsilon0) if kind == "dp" else BoundedRange(epsilon0) for kind in kinds])
    for events in orders:
        assert compose(events, target_delta=delta, interaction="adaptive").epsilon <= target


@pytest.mark.parametrize("num_dp, num_br, target, delta", ORDER_GRID_FAST)
def test_calibration_holds_in_every_order(num_dp, num_br, target, delta):
    check_every_order(num_dp, num_br, target, delta)


@pytest.mark.slow
@pytest.mark.parametrize("num_dp, num_br, target, delta", ORDER_GRID)
def test_calibration_holds_in_every_order_grid(num_dp, num_br, target, delta):
    check_every_order(num_dp, num_br, target, delta)


def test_a_stated_order_changes_nothing_without_order_dependent_bounds():
    # 33 mechanisms: beyond the exact recursion, every remaining bound is order-free
    for order in ("dp-first", "br-first"):
        assert calibrate_epsilon(30, 3, 1.0, 1e-6, order=order).per_mechanism_epsilon == \
            calibrate_epsilon(30, 3, 1.0, 1e-6).per_mechanism_epsilon


@pytest.mark.slow
@pytest.mark.parametrize("order", ["dp-first", "br-first"])
def test_calibration_for_a_stated_order(order):
    # with the order known, the exact recursion (Lemma 5.1) is allowed: at least as large
    num_dp, num_br, target, delta = 2, 5, 1.0, 1e-6
    stated = calibrate_epsilon(num_dp, num_br, target, delta, order=order)
    assert stated.order == order
    events = _events(num_dp, num_br, stated.per_mechanism_epsilon, order)
    assert compose(events, target_delta=delta).epsilon <= target
    assert stated.per_mechanism_epsilon >= calibrate_epsilon(num_dp, num_br, target, delta).per_mechanism_epsilon


def test_order_is_validated_first():
    with pytest.raises(ValueError, match="order"):
        calibrate_epsilon(1, 1, 1.0, 1e-6, order="random")


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 10.0), delta=st.floats(1e-12, 0.1), count=st.integers(1, 1000))
def test_calibrated_sigma_never_exceeds_target(epsilon, delta, count):
    sigma = calibrate_gaussian_sigma(epsilon, delta, count=count)
    assert analytic_gaussian_delta(sigma, epsilon, sensitivity=math.sqrt(count)) <= delta

"""Calibration never exceeds its target and is tight."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss import BoundedRange, PureDP, calibrate_epsilon, calibrate_gaussian_sigma, compose
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


@settings(max_examples=8, deadline=None)
@given(**CALIBRATION_CASES)
def test_calibrated_epsilon_never_exceeds_target(num_dp, num_br, target, delta, interaction):
    check_calibration(num_dp, num_br, target, delta, interaction)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(**CALIBRATION_CASES)
def test_calibrated_epsilon_never_exceeds_target_many(num_dp, num_br, target, delta, interaction):
    check_calibration(num_dp, num_br, target, delta, interaction)


def check_calibration(num_dp, num_br, target, delta, interaction):
    if num_dp + num_br == 0:
        return
    result = calibrate_epsilon(num_dp, num_br, target, delta, interaction=interaction)
    epsilon0 = result.per_mechanism_epsilon
    events = ([PureDP(epsilon0, count=num_dp)] if num_dp else []) + \
             ([BoundedRange(epsilon0, count=num_br)] if num_br else [])
    assert compose(events, target_delta=delta, interaction=interaction).epsilon <= target
    bigger = [type(e)(epsilon0 * (1 + 1e-6), count=e.count) for e in events]
    assert compose(bigger, target_delta=delta, interaction=interaction).epsilon > target * (1 - 1e-6)


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 10.0), delta=st.floats(1e-12, 0.1), count=st.integers(1, 1000))
def test_calibrated_sigma_never_exceeds_target(epsilon, delta, count):
    sigma = calibrate_gaussian_sigma(epsilon, delta, count=count)
    assert analytic_gaussian_delta(sigma, epsilon, sensitivity=math.sqrt(count)) <= delta

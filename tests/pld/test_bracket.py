"""The certified bracket: contains the truth, shrinks with the step, inverts consistently."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds.gaussian import analytic_gaussian_delta, analytic_gaussian_epsilon
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.pld import gaussian_pld, laplace_pld, pure_dp_pld, randomized_response_pld
from privloss.pld._law import LossLaw
from tests.pld._reference import theorem1_exact


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 1.0), k=st.integers(1, 60), fraction=st.floats(0.0, 1.0),
       step=st.sampled_from([1e-3, 3.7e-3, 1e-2]))
def test_randomized_response_bracket_contains_theorem_1(epsilon, k, fraction, step):
    # off-grid epsilons included: the bracket must hold, it is only wider
    epsilon_g = fraction * k * epsilon
    bracket = randomized_response_pld(epsilon, step=step).self_compose(k).delta(epsilon_g)
    truth = theorem1_exact(k, epsilon, epsilon_g)
    assert bracket.lower <= truth <= bracket.upper


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(0.3, 20.0), k=st.integers(1, 40), epsilon=st.floats(0.0, 8.0))
def test_gaussian_bracket_contains_gdp(sigma, k, epsilon):
    bracket = gaussian_pld(sigma).self_compose(k).delta(epsilon)
    truth = analytic_gaussian_delta(sigma / math.sqrt(k), epsilon)
    assert bracket.lower <= truth <= bracket.upper + 1e-15


def test_bracket_shrinks_as_the_step_decreases_gaussian():
    truth = analytic_gaussian_delta(1.0 / math.sqrt(20), 5.0)
    widths = []
    for step in (1e-2, 3e-3, 1e-3):
        bracket = gaussian_pld(1.0, step=step).self_compose(20).delta(5.0)
        assert bracket.lower <= truth <= bracket.upper
        widths.append(bracket.width)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < widths[0] / 50          # second order: ~ step^2


def test_bracket_shrinks_as_the_step_decreases_off_grid_rr():
    truth = optimal_dp_epsilon(30, 0.1234, 1e-6)
    widths = []
    for step in (1e-2, 1e-3, 1e-4):
        bracket = randomized_response_pld(0.1234, step=step).self_compose(30).epsilon(1e-6)
        assert bracket.lower <= truth <= bracket.upper
        widths.append(bracket.width)
    assert widths[0] > widths[1] > widths[2]


def test_bracket_shrinks_laplace_composition():
    # no closed form: brackets at finer steps must overlap and be narrower
    brackets = [laplace_pld(2.0, step=step).self_compose(40).epsilon(1e-6) for step in (1e-2, 5e-3, 1e-3)]
    for coarse, fine in zip(brackets, brackets[1:]):
        assert fine.width < coarse.width
        assert fine.lower <= coarse.upper and coarse.lower <= fine.upper


def test_epsilon_and_delta_are_consistent():
    pld = gaussian_pld(1.0).self_compose(10)
    for delta in (1e-9, 1e-6, 1e-3, 0.1):
        bracket = pld.epsilon(delta)
        assert pld.delta(bracket.upper).upper <= delta            # the charged epsilon is safe
        assert pld.delta(max(bracket.lower - 1e-9, 0.0)).lower >= delta or bracket.lower == 0.0
        truth = analytic_gaussian_epsilon(1.0 / math.sqrt(10), delta)
        assert bracket.lower <= truth <= bracket.upper


def test_epsilon_is_never_negative_and_zero_when_delta_is_large():
    pld = laplace_pld(1.0).self_compose(3)
    assert pld.epsilon(0.999).lower == 0.0 and pld.epsilon(0.999).upper == 0.0
    for delta in np.geomspace(1e-12, 0.9, 15):
        bracket = pld.epsilon(float(delta))
        assert 0.0 <= bracket.lower <= bracket.upper


def test_trimming_moves_tails_to_the_safe_side():
    masses = np.array([1e-9, 1e-9, 0.3, 0.4, 0.3 - 4e-9, 1e-9, 1e-9])
    upper = LossLaw(0.1, -3, masses, 0.0, 0.0, 0.0, True)
    lower = LossLaw(0.1, -3, masses, 0.0, 0.0, 0.0, False)
    trimmed_upper, trimmed_lower = upper.trimmed(3e-9), lower.trimmed(3e-9)
    assert trimmed_upper.size == 3 and trimmed_lower.size == 3
    assert trimmed_upper.infinity_mass >= 2e-9                 # upper tail -> +inf
    for epsilon in np.linspace(-0.5, 0.5, 21):
        assert trimmed_upper.delta(float(epsilon)) >= upper.delta(float(epsilon))
        assert trimmed_lower.delta(float(epsilon)) <= lower.delta(float(epsilon))


def test_composition_of_infinity_masses():
    a = LossLaw(0.5, 0, np.array([0.9]), 0.1, 0.0, 0.0, True)
    b = LossLaw(0.5, 0, np.array([0.8]), 0.2, 0.0, 0.0, True)
    c = a.compose(b, 1e-15)
    assert c.infinity_mass == pytest.approx(1 - 0.9 * 0.8, rel=1e-14)
    assert c.infinity_mass >= 1 - 0.9 * 0.8


def test_composing_different_steps_is_refused():
    with pytest.raises(ValueError, match="different steps"):
        laplace_pld(1.0, step=1e-3).compose(laplace_pld(1.0, step=2e-3))


def test_certified_errors_stay_small_for_long_compositions():
    pld = pure_dp_pld(0.1).self_compose(1000)
    for _, upper, lower in pld.orders():
        assert upper.error < 1e-10 and lower.error < 1e-10

"""Mechanism PLDs against closed forms and brute-force enumeration (worked_values §§1, 5, 7)."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

from privloss.bounds.gaussian import analytic_gaussian_delta
from privloss.bounds.optimal_dp import optimal_dp_delta
from privloss.pld import (approx_dp_pld, bounded_range_pld, discrete_gaussian_pld,
                          discrete_laplace_pld, gaussian_pld, generalized_rr_pld, laplace_pld,
                          pure_dp_pld, randomized_response_pld, truncated_gaussian_pld)
from tests.pld._reference import theorem1_exact


def inside(bracket, value, slack=0.0):
    return bracket.lower - slack <= value <= bracket.upper + slack


def hockey_stick(p, q, epsilon):
    """sum_y [P(y) - e^eps Q(y)]_+ for explicit finite laws."""
    return float(np.sum(np.maximum(np.asarray(p) - math.exp(epsilon) * np.asarray(q), 0.0)))


# ----------------------------------------------------------------------- Laplace

@pytest.mark.parametrize("epsilon0, epsilon, expected", [
    (1.0, 0.0, 0.393469340287), (1.0, 0.3, 0.295311910281), (1.0, 0.9, 0.048770575499),
    (2.0, 1.0, 0.393469340287), (0.5, 0.6, 0.0),
])
def test_laplace_single_release_worked_values(epsilon0, epsilon, expected):
    pld = laplace_pld(1.0 / epsilon0)
    bracket = pld.delta(epsilon)
    assert inside(bracket, expected, 1e-12)
    assert bracket.width < 1e-6


def test_laplace_closed_form_on_a_grid_of_epsilons():
    pld = laplace_pld(2.0, sensitivity=3.0)            # eps0 = 1.5
    for epsilon in np.linspace(0.0, 2.0, 41):
        truth = max(0.0, -math.expm1((epsilon - 1.5) / 2))
        assert inside(pld.delta(float(epsilon)), truth, 1e-13)


def test_laplace_epsilon_inverts_closed_form():
    # delta = 1 - e^{(eps - eps0)/2}  <=>  eps = eps0 + 2 log(1 - delta)
    pld = laplace_pld(1.0)
    for delta in (1e-6, 1e-3, 0.1, 0.3):
        assert inside(pld.epsilon(delta), 1.0 + 2 * math.log1p(-delta), 1e-12)


# ----------------------------------------------------------------------- Gaussian

@pytest.mark.parametrize("sigma, epsilon, expected", [
    (1.0, 1.0, 0.126936737507), (2.0, 0.5, 0.0524403232877), (0.5, 3.0, 0.183813076544),
])
def test_gaussian_worked_values(sigma, epsilon, expected):
    assert inside(gaussian_pld(sigma).delta(epsilon), expected, 1e-12)


def test_gaussian_composition_equals_gdp_closed_form():
    k = 50
    pld = gaussian_pld(2.0).self_compose(k)           # mu = sqrt(50) / 2
    sigma_equivalent = 2.0 / math.sqrt(k)
    for epsilon in (0.0, 1.0, 5.0, 10.0, 20.0):
        truth = analytic_gaussian_delta(sigma_equivalent, epsilon)
        bracket = pld.delta(epsilon)
        assert inside(bracket, truth, 1e-12), (epsilon, bracket, truth)
        assert bracket.width < 1e-5


def test_truncated_gaussian_infinity_mass_is_equation_10():
    sigma, bound, sensitivity = 1.0, 3.0, 1.0
    pld = truncated_gaussian_pld(sigma, bound, sensitivity=sensitivity)
    norm = ndtr(bound / sigma) - ndtr(-bound / sigma)
    eq10 = (ndtr((sensitivity - bound) / sigma) - ndtr(-bound / sigma)) / norm
    assert inside(pld.delta(math.inf), eq10, 1e-15)
    assert inside(pld.delta(60.0), eq10, 1e-15)       # beyond every finite loss


def test_truncated_gaussian_matches_numerical_hockey_stick():
    sigma, bound = 1.0, 2.5
    y = np.linspace(-bound, 1.0 + bound, 400_001)
    p = np.where(np.abs(y) <= bound, np.exp(-y * y / 2), 0.0)
    q = np.where(np.abs(y - 1.0) <= bound, np.exp(-(y - 1.0) ** 2 / 2), 0.0)
    p, q = p / p.sum(), q / q.sum()
    pld = truncated_gaussian_pld(sigma, bound)
    for epsilon in (0.0, 0.5, 1.0):
        numeric = hockey_stick(p, q, epsilon)
        assert inside(pld.delta(epsilon), numeric, 5e-5)   # Riemann sum error ~ width


def test_truncated_gaussian_disjoint_supports():
    assert truncated_gaussian_pld(1.0, 0.4, sensitivity=1.0).delta(5.0).lower > 1 - 1e-14


# ----------------------------------------------------------------------- discrete laws

def test_discrete_laplace_matches_enumeration():
    scale, shift = 2.0, 3
    y = np.arange(-80, 84)
    p = np.tanh(0.5 / scale) * np.exp(-np.abs(y) / scale)
    q = np.tanh(0.5 / scale) * np.exp(-np.abs(y - shift) / scale)
    pld = discrete_laplace_pld(scale, sensitivity=shift)
    for epsilon in (0.0, 0.4, 1.0, 1.49):
        assert inside(pld.delta(epsilon), hockey_stick(p, q, epsilon), 1e-12)


def test_discrete_gaussian_matches_enumeration():
    sigma, shift = 1.3, 2
    y = np.arange(-60, 63)
    p = np.exp(-y * y / (2 * sigma * sigma))
    q = np.exp(-(y - shift) ** 2 / (2 * sigma * sigma))
    p, q = p / p.sum(), q / q.sum()
    pld = discrete_gaussian_pld(sigma, sensitivity=shift)
    for epsilon in (0.0, 0.5, 1.5, 3.0):
        assert inside(pld.delta(epsilon), hockey_stick(p, q, epsilon), 1e-12)


# ----------------------------------------------------------------------- RR / DP / BR

@pytest.mark.parametrize("k, epsilon_g", [(1, 0.05), (2, 0.0), (10, 0.3), (10, 0.95), (25, 0.5)])
def test_pure_dp_composition_is_theorem_1(k, epsilon_g):
    pld = pure_dp_pld(0.1).self_compose(k)
    assert inside(pld.delta(epsilon_g), theorem1_exact(k, 0.1, epsilon_g))
    assert abs(theorem1_exact(k, 0.1, epsilon_g) - optimal_dp_delta(k, 0.1, epsilon_g)) < 1e-12


def test_randomized_response_25_fold_worked_value():
    pld = randomized_response_pld(0.2).self_compose(25)
    assert inside(pld.delta(1.0), 0.1219257716, 1e-10)
    assert inside(pld.delta(1.0), theorem1_exact(25, 0.2, 1.0))


def test_theorem_1_at_the_edge_epsilon_g_equals_k_epsilon():
    pld = pure_dp_pld(0.1).self_compose(10)
    bracket = pld.delta(1.0)
    assert bracket.lower == 0.0 and bracket.upper < 1e-12


@pytest.mark.parametrize("epsilon, forward, reverse", [
    (0.0, 0.2064098610, 0.2064098610), (0.2, 0.0757865594, 0.1613301170), (0.5, 0.0, 0.0743239328),
])
def test_generalized_rr_orientation(epsilon, forward, reverse):
    """worked_values §7: delta_{P||Q} and delta_{Q||P} of RR_{1, 0.3}; the answer is their max."""
    pld = generalized_rr_pld(1.0, 0.3)
    profile = dict(pld.delta_profile(epsilon))
    assert inside(profile["forward"], forward, 1e-10)
    assert inside(profile["reverse"], reverse, 1e-10)
    assert inside(pld.delta(epsilon), max(forward, reverse), 1e-10)
    assert not pld.symmetric


def test_generalized_rr_at_half_is_symmetric_randomized_response():
    pld = generalized_rr_pld(2.0, 1.0)
    assert pld.symmetric
    assert inside(pld.delta(0.3), randomized_response_pld(1.0).delta(0.3).upper, 1e-12)


@pytest.mark.parametrize("epsilon_g", [0.0, 0.25, 0.5, 0.9])
def test_bounded_range_single_mechanism_closed_form(epsilon_g):
    """[CR] Theorem 2, k = 1: (1 - e^{(eps_g - eps)/2})^2 / (1 - e^{-eps})."""
    truth = (1 - math.exp((epsilon_g - 1.0) / 2)) ** 2 / (1 - math.exp(-1.0))
    assert inside(bounded_range_pld(1.0).delta(epsilon_g), truth, 1e-12)


def test_bounded_range_envelope_dominates_every_t():
    envelope = bounded_range_pld(1.0)
    for t in np.linspace(0.0, 1.0, 11):
        rr = generalized_rr_pld(1.0, float(t))
        for epsilon in (0.0, 0.2, 0.6):
            assert rr.delta(epsilon).upper <= envelope.delta(epsilon).upper + 1e-12


def test_bounded_range_envelope_is_valid_for_adaptive_composition():
    """worked_values §4: the adaptive optimum of 2 x 1-BR at eps_g = 0 is 0.303365496483."""
    two = bounded_range_pld(1.0).self_compose(2)
    assert two.delta(0.0).lower >= 0.303365496483
    assert two.delta(0.5).lower >= 0.152451906799


def test_bounded_range_interval_reduces_to_generalized_rr():
    a = bounded_range_pld(1.0, t_range=(0.3, 0.3)).delta(0.2)
    b = generalized_rr_pld(1.0, 0.3).delta(0.2)
    assert abs(a.upper - b.upper) < 1e-15 and abs(a.lower - b.lower) < 1e-15


def test_approx_dp_worst_case():
    pld = approx_dp_pld(1.0, 1e-3)
    # delta = delta0 + (1 - delta0) * RR profile
    rr = randomized_response_pld(1.0).delta(0.5).upper
    assert inside(pld.delta(0.5), 1e-3 + (1 - 1e-3) * rr, 1e-12)
    assert inside(pld.delta(math.inf), 1e-3, 1e-15)
    assert pld.epsilon(1e-4).upper == math.inf              # delta below the mass at +inf


# ----------------------------------------------------------------------- validation

@pytest.mark.parametrize("call, message", [
    (lambda: laplace_pld(0.0), "scale must be in (0, inf)"),
    (lambda: laplace_pld(1.0, sensitivity=-1), "sensitivity must be in (0, inf)"),
    (lambda: gaussian_pld(float("nan")), "sigma must be in (0, inf)"),
    (lambda: generalized_rr_pld(1.0, 1.5), "t must be in [0, epsilon=1]"),
    (lambda: bounded_range_pld(1.0, t_range=(0.6, 0.2)), "t_range"),
    (lambda: approx_dp_pld(1.0, 1.5), "delta must be in [0, 1]"),
    (lambda: discrete_laplace_pld(1.0, sensitivity=1.5), "sensitivity must be an integer >= 1"),
    (lambda: laplace_pld(1.0, step=0.0), "step must be in (0, 1]"),
    (lambda: laplace_pld(1.0, tail_mass=0.5), "tail_mass must be in (0, 1e-3]"),
    (lambda: pure_dp_pld(-0.1), "epsilon must be in [0, inf)"),
])
def test_validation_names_parameter(call, message):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert message in str(info.value)


def test_zero_epsilon_is_perfect_privacy():
    pld = pure_dp_pld(0.0).self_compose(5)
    assert pld.delta(0.0).upper < 1e-13          # only the certified float-error terms
    assert pld.epsilon(1e-12).upper == 0.0

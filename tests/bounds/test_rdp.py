"""Exact worst-case Renyi curves of DP and BR, and the RDP route."""

import math

import mpmath
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from hypothesis import given, settings, strategies as st

from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.bounds.rdp import br_renyi, dp_renyi, rdp_delta, rdp_epsilon
from privloss.bounds.zcdp import zcdp_epsilon_tight
from tests.enumeration import invert, product_delta, rr_pair


def renyi_of_pair(width, t, alpha):
    """D_alpha(RR_{width,t}(0) || RR_{width,t}(1)) in mpmath."""
    q, p = rr_pair(width, t)
    alpha = mpmath.mpf(alpha)
    return float(mpmath.log(q ** alpha * p ** (1 - alpha) + (1 - q) ** alpha * (1 - p) ** (1 - alpha)) / (alpha - 1))


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0, 8.0])
@pytest.mark.parametrize("alpha", [1.01, 2.0, 7.5, 300.0])
def test_br_renyi_is_the_supremum_over_t(epsilon, alpha):
    grid = [renyi_of_pair(epsilon, t, alpha) for t in np.linspace(0.0, epsilon, 803)[1:-1]]
    value = br_renyi(epsilon, alpha)
    assert value >= max(grid) - 1e-12
    # attained: a fine bounded search over t finds the same supremum
    best = minimize_scalar(lambda t: -renyi_of_pair(epsilon, t, alpha), bounds=(1e-12, epsilon - 1e-12),
                           method="bounded", options={"xatol": 1e-13})
    assert value == pytest.approx(max(-best.fun, max(grid)), rel=1e-7)
    assert value <= alpha * epsilon ** 2 / 8 + 1e-15               # the zCDP bound of BR


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 8.0])
@pytest.mark.parametrize("alpha", [1.5, 4.0, 100.0])
def test_dp_renyi_is_randomized_response(epsilon, alpha):
    assert dp_renyi(epsilon, alpha) == pytest.approx(renyi_of_pair(2 * epsilon, epsilon, alpha), rel=1e-10)
    assert dp_renyi(epsilon, alpha) <= min(epsilon, alpha * epsilon ** 2 / 2) + 1e-15


@pytest.mark.parametrize("k", [1, 3, 6])
def test_rdp_never_below_enumerated_optimum(k):
    epsilons = [0.4] * k
    for delta in (1e-6, 1e-3, 0.1):
        truth = float(invert(lambda e: product_delta([(0.8, 0.4)] * k, e), delta, 0.4 * k, iterations=70))
        assert rdp_epsilon(delta, dp_epsilons=epsilons) >= truth - 1e-12


def test_br_route_is_valid_for_every_equal_t():
    # a valid adaptive bound is at least the non-adaptive value at every common t
    k, epsilon, delta = 4, 0.5, 1e-3
    bound = rdp_epsilon(delta, br_epsilons=[epsilon] * k)
    for t in np.linspace(0, epsilon, 11):
        truth = float(invert(lambda e: product_delta([(epsilon, t)] * k, e), delta, epsilon * k, iterations=60))
        assert bound >= truth - 1e-12


def test_tighter_than_zcdp_for_br():
    # worked_values §8 reports the zCDP route 2.4190931769 for 100 BR(0.1) at 1e-6
    assert rdp_epsilon(1e-6, br_epsilons=[0.1] * 100) < zcdp_epsilon_tight(100 * 0.01 / 8, 1e-6)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 200), epsilon=st.floats(0.01, 3.0), delta=st.floats(1e-12, 0.3))
def test_rdp_properties(k, epsilon, delta):
    value = rdp_epsilon(delta, dp_epsilons=[epsilon] * k)
    assert value >= optimal_dp_epsilon(k, epsilon, delta) * (1 - 1e-9)
    assert rdp_delta(value, dp_epsilons=[epsilon] * k) <= delta * (1 + 1e-6)
    assert rdp_epsilon(delta, dp_epsilons=[epsilon] * (k + 1)) >= value * (1 - 1e-9)


def test_large_inputs_stay_finite():
    assert math.isfinite(rdp_epsilon(1e-6, dp_epsilons=[20.0] * 100000))
    assert math.isfinite(rdp_epsilon(1e-6, br_epsilons=[20.0] * 1000, rho=5.0))
    assert rdp_epsilon(1e-6, xi=0.2) == pytest.approx(0.2, rel=1e-9)

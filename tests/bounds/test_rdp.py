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


@mpmath.workdps(50)
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


# ---- accuracy against mpmath at 50 digits (issue 12, item 5) ---------------------------
# Reference recipe: the closed forms evaluated in mpmath with the float inputs taken exactly.
# DP: D_a = log(p e^{c eps} + q e^{-c eps}) / c, c = a - 1, p = 1 / (1 + e^-eps), q = 1 - p.
# BR: with b = eps/2, a' = c b: D_a(v) = [c v + log(sinh(a'+b) - sinh(a') e^v) - log sinh b] / c
# (v = t - eps/2), maximised at e^v = c sinh(a'+b) / ((c+1) sinh a'); the same supremum as a
# direct search over t (test_br_renyi_is_the_supremum_over_t).

def _dp_renyi_mpmath(epsilon, alpha):
    with mpmath.workdps(50):
        eps, c = mpmath.mpf(epsilon), mpmath.mpf(alpha) - 1
        p = 1 / (1 + mpmath.exp(-eps))
        return mpmath.log(p * mpmath.exp(c * eps) + (1 - p) * mpmath.exp(-c * eps)) / c


def _br_renyi_mpmath(epsilon, alpha):
    with mpmath.workdps(50):
        eps, c = mpmath.mpf(epsilon), mpmath.mpf(alpha) - 1
        b = eps / 2
        a = c * b
        v = mpmath.log(c * mpmath.sinh(a + b) / ((c + 1) * mpmath.sinh(a)))
        return (c * v + mpmath.log(mpmath.sinh(a + b) - mpmath.sinh(a) * mpmath.exp(v))
                - mpmath.log(mpmath.sinh(b))) / c


RENYI_EPSILONS = [1e-8, 1e-6, 1e-4, 1e-2, 0.1, 1.0, 5.0, 20.0, 300.0]
RENYI_ORDERS = [1 + 1e-8, 1 + 1e-6, 1.0001, 1.01, 1.5, 2.0, 10.0, 1e3, 1e5]


@pytest.mark.parametrize("epsilon", RENYI_EPSILONS)
def test_renyi_curves_match_mpmath(epsilon):
    # the former forms lost up to 1.6% (eps = 1e-4, alpha = 1.0001) and returned 0 for tiny eps
    for alpha in RENYI_ORDERS:
        for function, reference in ((dp_renyi, _dp_renyi_mpmath), (br_renyi, _br_renyi_mpmath)):
            truth = min(reference(epsilon, alpha), mpmath.mpf(epsilon))
            value = function(epsilon, alpha)
            assert value >= truth, (function.__name__, epsilon, alpha)
            assert value <= truth * (1 + 1e-10), (function.__name__, epsilon, alpha)


def _route_log_delta_mpmath(dp_epsilons, br_epsilons, epsilon_g):
    """min over c of c (sum eps - eps_g) + sum c (D_a - eps) - log(1 + c) - c log(1 + 1/c),
    at 50 digits: a grid in log c, then a ternary search (the objective is unimodal here)."""
    with mpmath.workdps(50):
        eg = mpmath.mpf(epsilon_g)
        total = sum(mpmath.mpf(e) for e in list(dp_epsilons) + list(br_epsilons))

        def objective(x):
            c = mpmath.exp(x)
            value = c * (total - eg) - mpmath.log1p(c) - c * mpmath.log1p(1 / c)
            value += sum(c * (_dp_renyi_mpmath(e, 1 + c) - e) for e in dp_epsilons)
            value += sum(c * (_br_renyi_mpmath(e, 1 + c) - e) for e in br_epsilons)
            return value

        grid = [mpmath.mpf(x) for x in np.linspace(-9.0, 12.0, 85)]
        values = [objective(x) for x in grid]
        best = min(range(len(grid)), key=values.__getitem__)
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        for _ in range(80):
            m1, m2 = low + (high - low) / 3, high - (high - low) / 3
            if objective(m1) < objective(m2):
                high = m2
            else:
                low = m1
        return min(objective((low + high) / 2), values[best])


@pytest.mark.parametrize("dp, br", [([16.94348870936686] * 11, []), ([0.47153718434967623] * 18, []),
                                    ([], [0.3] * 4), ([0.2, 0.7], [1.1])])
@pytest.mark.parametrize("below", [1e-6, 1e-8, 1e-12])
def test_rdp_delta_near_the_largest_loss(dp, br, below):
    # the conversion's exponent (a-1)(R(a) - eps_g) cancelled near eps_g = sum eps
    epsilon_g = math.fsum(dp + br) * (1 - below)
    truth = mpmath.exp(_route_log_delta_mpmath(dp, br, epsilon_g))
    value = rdp_delta(epsilon_g, dp_epsilons=dp, br_epsilons=br)
    assert value >= truth * (1 - 1e-9)        # the numerical minimum over orders may be
    assert value <= truth * (1 + 1e-6)        # a hair off; the evaluation itself is exact


def test_many_distinct_epsilons_locate_the_order_on_a_coarser_curve(monkeypatch):
    # beyond _LOCATE_MIN_DISTINCT distinct epsilons the order is found on the curve
    # with epsilons rounded up to 10 bits, and the exact curve is evaluated there:
    # a valid bound (any order is), equal to the full search up to its flat minimum
    import numpy as np

    from privloss.bounds import rdp

    eps = np.random.default_rng(0).uniform(0.01, 0.5, 5000)
    br = np.random.default_rng(1).uniform(0.01, 0.5, 3000)
    fast = (rdp.rdp_epsilon(1e-6, dp_epsilons=eps, br_epsilons=br),
            rdp.rdp_delta(40.0, dp_epsilons=eps, br_epsilons=br))
    monkeypatch.setattr(rdp, "_LOCATE_MIN_DISTINCT", 10 ** 9)
    full = (rdp.rdp_epsilon(1e-6, dp_epsilons=eps, br_epsilons=br),
            rdp.rdp_delta(40.0, dp_epsilons=eps, br_epsilons=br))
    assert fast[0] == pytest.approx(full[0], rel=1e-7)
    assert fast[1] == pytest.approx(full[1], rel=1e-5)


def test_rounding_for_the_order_search_goes_up():
    import numpy as np

    from privloss.bounds import rdp

    values = np.random.default_rng(2).uniform(1e-6, 10.0, 1000)
    up, counts = rdp._rounded_up(np.sort(values), np.ones(1000))
    assert counts.sum() == 1000
    assert up.size < 1000
    # every value has a rounded value >= it within 2^-9 relative
    index = np.searchsorted(up, values)
    assert np.all(up[index] >= values) and np.all(up[index] <= values * (1 + 2.0 ** -9))

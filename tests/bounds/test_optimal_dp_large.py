"""Issue 23 item 3: [CR] Theorem 1 at k up to 10^9 over a window of O(sqrt k) terms
with a certified tail and float-error bound (privloss.bounds._binomial_window).

References: mpmath at 30 digits (log-gamma of the exact binomial), the recipe in
each test; the certified lower end brackets the optimum to 1e-9 relative."""

from __future__ import annotations

import math

import mpmath
import pytest

from privloss._exact import multiple_upper
from privloss.bounds import _binomial_window as bw
from privloss.bounds.optimal_dp import WINDOW_FROM, optimal_dp_delta, optimal_dp_epsilon


def mp_log_pmf(k: int, i: int, epsilon: float):
    """log C(k, i) p^i (1-p)^(k-i), p = 1/(1 + e^eps), in mpmath (30 digits)."""
    with mpmath.workdps(30):
        p = 1 / (1 + mpmath.e ** mpmath.mpf(epsilon))
        return (mpmath.loggamma(k + 1) - mpmath.loggamma(i + 1) - mpmath.loggamma(k - i + 1)
                + i * mpmath.log(p) + (k - i) * mpmath.log(1 - p))


@pytest.mark.parametrize("k, epsilon", [(10**9, 1e-4), (10**9, 3.0), (10**7, 1.0), (300_000, 0.01),
                                        (1000, 0.5), (20, 0.5)])
def test_the_anchor_log_pmf_at_the_mode_matches_mpmath(k, epsilon):
    p, q = 1 / (1 + math.exp(epsilon)), 1 / (1 + math.exp(-epsilon))
    mode = math.floor((k + 1) * p)
    value = bw.log_binomial_pmf(mode, k, p, q)
    assert abs(value - float(mp_log_pmf(k, mode, epsilon))) < 1e-13


def mp_pure_delta(k: int, epsilon: float, epsilon_g: float, lo: int, hi: int):
    """sum over the active i in [lo, hi] of b(i) (1 - e^{eps_g + (2i - k) eps}), mpmath;
    [lo, hi] is mean -+ 40 sigma (the rest is below 1e-300)."""
    with mpmath.workdps(30):
        total = mpmath.mpf(0)
        for i in range(lo, hi + 1):
            exponent = mpmath.mpf(epsilon_g) + (2 * i - k) * mpmath.mpf(epsilon)
            if exponent >= 0:
                break
            total += mpmath.e ** mp_log_pmf(k, i, epsilon) * (1 - mpmath.e ** exponent)
        return total


@pytest.mark.parametrize("epsilon_g", [1500.0, 1650.0])
def test_windowed_profile_matches_mpmath_and_is_an_upper_bound(epsilon_g):
    k, epsilon = 300_000, 0.1                  # > WINDOW_FROM: the windowed path
    assert k > WINDOW_FROM
    p = 1 / (1 + math.exp(epsilon))
    mean, sigma = k * p, math.sqrt(k * p * (1 - p))
    reference = mp_pure_delta(k, epsilon, epsilon_g, int(mean - 40 * sigma), int(mean + 40 * sigma))
    value = optimal_dp_delta(k, epsilon, epsilon_g)
    assert value >= reference
    assert value <= reference * (1 + 1e-10)
    window, last = bw.window(k, epsilon), bw.active_last(k, epsilon, epsilon_g)
    assert window.pure_delta_lower(epsilon_g, last) <= reference
    assert window.pure_delta_direct(epsilon_g, *bw.active(k, epsilon, epsilon_g), lower=True) <= reference
    assert window.pure_delta(epsilon_g, last) >= reference


@pytest.mark.parametrize("k, epsilon, delta", [(10**9, 1e-4, 1e-6), (10**9, 0.01, 1e-9),
                                               (10**9, 1e-7, 1e-6), (10**7, 1e-3, 1e-6)])
def test_theorem1_at_a_billion_is_bracketed_to_1e9_relative(k, epsilon, delta):
    value = optimal_dp_epsilon(k, epsilon, delta)
    assert optimal_dp_delta(k, epsilon, value) <= delta           # certified upper end
    below = value * (1 - 1e-9)
    window = bw.window(k, epsilon)
    lower = window.pure_delta_direct(below, *bw.active(k, epsilon, below), lower=True)
    assert lower > delta, (value, lower)                           # the optimum is above `below`
    assert window.tail_share < 1e-20


def test_the_large_k_path_agrees_with_the_exact_closed_form_below_the_threshold():
    # just above WINDOW_FROM the window answers; the exact O(k) closed form (below
    # the threshold) at the neighbouring k must be close: epsilon grows smoothly in k
    above = optimal_dp_epsilon(WINDOW_FROM + 1, 0.01, 1e-6)
    below = optimal_dp_epsilon(WINDOW_FROM, 0.01, 1e-6)
    assert below <= above <= below * (1 + 1e-4)


def test_pure_and_approximate_edges_at_large_k():
    # delta 0: k eps, the exact product of the stored 1e-4 rounded up
    assert optimal_dp_epsilon(10**9, 1e-4, 0.0) == multiple_upper(1e-4, 10**9)
    assert optimal_dp_epsilon(10**9, 1e-4, 0.5, delta0=1e-10) == math.inf or \
        optimal_dp_delta(10**9, 1e-4, optimal_dp_epsilon(10**9, 1e-4, 0.5, delta0=1e-10),
                         delta0=1e-10) <= 0.5
    assert optimal_dp_delta(10**9, 1e-4, 2e5) == 0.0                 # beyond the largest loss
    assert optimal_dp_delta(10**9, 1e-4, 1e5) < 1e-290               # one active term, far out


def test_compose_answers_a_billion_equal_events_with_theorem1():
    from privloss import compose
    from privloss.events import ApproxDP, BoundedRange, PureDP

    result = compose([PureDP(1e-4, count=10**9)], target_delta=1e-6)
    assert result.bound == "optimal-dp" and result.epsilon == optimal_dp_epsilon(10**9, 1e-4, 1e-6)
    split = compose([PureDP(1e-4, count=5 * 10**8)] * 2, target_epsilon=result.epsilon)
    assert split.delta <= 1e-6
    approx = compose([ApproxDP(1e-4, 1e-16, count=10**9)], target_delta=1e-6)
    assert approx.epsilon > result.epsilon
    with pytest.raises(ValueError, match="at most"):            # not homogeneous: refused
        compose([PureDP(1e-4, count=10**9), BoundedRange(1e-4)], target_delta=1e-6)
    with pytest.raises(ValueError, match="at most"):            # fully adaptive: filter rules
        compose([PureDP(1e-4, count=10**9)], target_delta=1e-6, interaction="fully-adaptive")

"""Eq. (10) and the truncated Gaussian: p(C) by direct evaluation, the solver,
the worked value, the sampler's support and moments, the rounded quantile."""

import math

import mpmath
import numpy as np
import pytest

from privloss.releases.algorithms.truncated_gaussian import (failure_probability,
                                                              rounded_half_width,
                                                              rounded_variance,
                                                              sample_truncated_gaussian,
                                                              solve_truncation)
from tests.releases_algorithms._support import mean_is_zero, source, variance_matches


def p_direct(bound, sigma, linf):
    """p(C) at 50 digits, straight from the definition."""
    with mpmath.workdps(50):
        phi = lambda x: mpmath.ncdf(mpmath.mpf(x))        # noqa: E731
        c, s, d = mpmath.mpf(bound), mpmath.mpf(sigma), mpmath.mpf(linf)
        return float((phi((d - c) / s) - phi(-c / s)) / (2 * phi(c / s) - 1))


@pytest.mark.parametrize("bound, sigma, linf", [(3.0, 1.0, 1), (25.425, 5.0, 1),
                                                (60.0, 10.0, 3), (0.8, 1.0, 1), (400.0, 50, 2)])
def test_failure_probability_matches_direct_evaluation(bound, sigma, linf):
    exact = p_direct(bound, sigma, linf)
    assert exact <= failure_probability(bound, sigma, linf) <= exact * (1 + 1e-8)


def test_failure_probability_limits():
    assert failure_probability(0.5, 1.0, 1) == 1.0          # C = linf/2: no overlap
    values = [failure_probability(c, 2.0, 1) for c in np.linspace(0.6, 20, 40)]
    assert all(a >= b for a, b in zip(values, values[1:]))  # decreasing


def test_eq10_worked_value():
    # topk.md §6.3: sigma = 5, linf = 1, l0 = 3, delta = 1e-6 -> C = 25.425, T = 26.425
    bound = solve_truncation(5.0, 3, 1, 1e-6)
    assert bound == pytest.approx(25.425, abs=5e-4)
    assert bound + 1 == pytest.approx(26.425, abs=5e-4)


@pytest.mark.parametrize("sigma, l0, linf, delta", [(5.0, 3, 1, 1e-6), (1.0, 1, 1, 0.1),
                                                    (30.0, 10, 2, 1e-9), (2.0, 50, 5, 1e-12),
                                                    (1e3, 1, 1, 1e-300)])
def test_solver_returns_the_smallest_c_with_the_stated_delta(sigma, l0, linf, delta):
    bound = solve_truncation(sigma, l0, linf, delta)
    assert p_direct(bound, sigma, linf) <= delta / l0
    assert p_direct(bound * (1 - 1e-7), sigma, linf) > delta / l0 * (1 - 1e-5)


def test_sampler_support_and_moments():
    sigma, bound = 3.0, 4.0                                  # heavy truncation: visible effect
    z = sample_truncated_gaussian(sigma, bound, 60000, source(21))
    assert np.abs(z).max() <= bound
    c = bound / sigma
    variance = sigma ** 2 * (1 - 2 * c * math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
                             / math.erf(c / math.sqrt(2)))
    assert mean_is_zero(z)
    assert variance_matches(z, variance)


def test_rounded_moments_and_quantile():
    sigma, bound = 4.0, 9.3
    z = np.rint(sample_truncated_gaussian(sigma, bound, 60000, source(22)))
    assert variance_matches(z, rounded_variance(sigma, bound))
    w = rounded_half_width(sigma, bound)
    with mpmath.workdps(30):
        tail = lambda t: 2 * (mpmath.ncdf(bound / sigma) - mpmath.ncdf(t / sigma)) / (  # noqa: E731
            2 * mpmath.ncdf(bound / sigma) - 1)
        assert tail(w + 0.5) <= 0.05 < tail(w - 0.5)
    assert rounded_half_width(sigma, 100.0) == math.ceil(1.959964 * sigma - 0.5)

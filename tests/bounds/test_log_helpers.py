"""The log-space helpers of bounds._numeric that replace scipy.special on small
inputs (so a small composition never imports SciPy): log-gamma and logsumexp."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.special import gammaln
from scipy.special import logsumexp as scipy_logsumexp

from privloss.bounds._numeric import (_SMALL_GAMMA, _SMALL_GAMMA_ARGUMENT, log_binomial,
                                      log_gamma, logsumexp)


@pytest.mark.parametrize("size, top", [(1, 5e3), (17, 5e3), (_SMALL_GAMMA, _SMALL_GAMMA_ARGUMENT),
                                       (_SMALL_GAMMA + 1, 5e3), (17, 2e6)])
def test_log_gamma_agrees_with_mpmath_on_both_sides_of_the_switch(size, top):
    # reference: mpmath.loggamma at 40 digits (math.lgamma below both limits, SciPy above)
    x = np.geomspace(0.5, top, size)
    with mpmath.workdps(40):
        reference = np.array([float(mpmath.loggamma(mpmath.mpf(float(v)))) for v in x])
    got = log_gamma(x)
    assert got.shape == x.shape
    assert np.all(np.abs(got - reference) <= 1e-14 * np.maximum(1.0, np.abs(reference)))


def test_log_gamma_scalar_and_log_binomial_identities():
    assert float(log_gamma(5.0)) == pytest.approx(math.log(24.0), rel=1e-15)
    k = np.arange(0, 21, dtype=float)
    exact = np.array([math.log(math.comb(20, int(i))) for i in k])
    assert np.allclose(log_binomial(20, k), exact, rtol=1e-14, atol=1e-14)
    assert np.allclose(log_binomial(1000, k), gammaln(1001.0) - gammaln(k + 1) -
                       gammaln(1001.0 - k), rtol=1e-13)


@pytest.mark.parametrize("values", [
    [0.0], [-1e300, 0.0], [1000.0, 1000.0, -5.0], [-math.inf, -math.inf],
    list(np.linspace(-700.0, 700.0, 101)),
])
def test_logsumexp_matches_scipy(values):
    assert logsumexp(values) == pytest.approx(float(scipy_logsumexp(values)), rel=1e-15)


def test_logsumexp_edges():
    assert logsumexp([]) == -math.inf
    assert logsumexp([math.inf, 0.0]) == math.inf

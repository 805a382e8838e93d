"""CLT approximation: worked mu values, moments, and the (recalled) Berry–Esseen band."""

import math

import numpy as np
import pytest
from scipy import integrate

from privloss.fdp import (clt_approximation, gaussian_moments, generalized_rr_moments, laplace_moments,
                          pld_moments, randomized_response_moments, rr_composition_tradeoff)
from privloss.pld import laplace_pld


@pytest.mark.parametrize("eps, k, expected", [(0.2, 25, 1.0016675002), (0.1, 100, 1.0004167188)])
def test_clt_mu_worked_values(eps, k, expected):
    approx = clt_approximation(randomized_response_moments(eps).times(k))
    assert approx.mu == pytest.approx(expected, rel=1e-9)
    assert approx.is_guarantee is False
    assert approx.tradeoff().label.startswith("CLT approximation")


@pytest.mark.parametrize("eps, k", [(0.2, 25), (0.1, 100), (0.05, 400)])
def test_berry_esseen_band_contains_exact_rr_curve(eps, k):
    """Checks the recalled constant 0.56 on the spec's three cases (fdp.md §6)."""
    approx = clt_approximation(randomized_response_moments(eps).times(k))
    alphas = np.linspace(0, 1, 2001)
    lower, upper = approx.band(alphas)
    exact = rr_composition_tradeoff(eps, k)(alphas)
    inside = ~np.isnan(lower)
    assert inside.sum() > 100
    assert (lower[inside] <= exact[inside] + 1e-12).all() and (exact[inside] <= upper[inside] + 1e-12).all()


def test_clt_is_not_a_guarantee_for_rr():
    """Near alpha = 0.18 G_mu lies *above* the exact 25-fold RR curve, and its delta(0)
    is *below* the exact one: the approximation is optimistic there."""
    approx = clt_approximation(randomized_response_moments(0.2).times(25))
    exact = rr_composition_tradeoff(0.2, 25)
    alphas = np.linspace(0.1, 0.3, 201)
    assert np.max(approx.tradeoff()(alphas) - exact(alphas)) > 1e-3
    assert approx.delta(0.0) < exact.delta(0.0) - 1e-3


def test_moment_closed_forms():
    rr = randomized_response_moments(0.5)
    assert rr.kl == pytest.approx(0.5 * math.tanh(0.25))
    assert generalized_rr_moments(1.0, 0.5).kl == pytest.approx(randomized_response_moments(0.5).kl)
    g = gaussian_moments(1.3)
    assert g.kl == pytest.approx(1.3 ** 2 / 2) and g.variance == pytest.approx(1.3 ** 2)
    density = lambda x: math.exp(-(x - 0.845) ** 2 / (2 * 1.69)) / math.sqrt(2 * math.pi * 1.69)
    third, _ = integrate.quad(lambda x: abs(x) ** 3 * density(x), -30, 30)
    assert g.kappa3 == pytest.approx(third, rel=1e-8)


def test_laplace_moments_against_the_pld():
    exact = laplace_moments(1.0)
    assert exact.kl == pytest.approx(math.exp(-1.0), rel=1e-12)        # eps0 + e^-eps0 - 1
    grid = pld_moments(laplace_pld(1.0, step=1e-4))
    assert grid.kl == pytest.approx(exact.kl, rel=1e-4)
    assert grid.kappa2 == pytest.approx(exact.kappa2, rel=1e-4)


def test_clt_validation():
    with pytest.raises(ValueError, match="at least one"):
        clt_approximation([])
    with pytest.raises(TypeError, match=r"moments\[0\]"):
        clt_approximation([1.0])

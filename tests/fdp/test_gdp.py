"""GDP worked values (worked_values §7) and composition."""

import math

import numpy as np
import pytest

from privloss.fdp import (ApproxDPTradeoff, GaussianTradeoff, compose_gdp, gaussian_mechanism_mu,
                          gdp_delta, gdp_epsilon, gdp_mu, pure_dp_mu)


@pytest.mark.parametrize("mu, eps, expected", [
    (0.5, 0.5, 0.0524403232877), (1.0, 0.0, 0.382924922548), (1.0, 1.0, 0.126936737507),
    (2.0, 3.0, 0.183813076544), (3.0, 5.0, 0.319391879906),
])
def test_gdp_delta_worked_values(mu, eps, expected):
    value = gdp_delta(mu, eps)
    assert value == pytest.approx(expected, rel=1e-10)
    assert value >= expected * (1 - 1e-11)          # rounded up, never below
    # the conjugate of G_mu gives the same number (fdp.md §7)
    alphas = np.concatenate((np.linspace(0, 1, 200_001), np.geomspace(1e-14, 1e-2, 20_001)))
    conjugate = float(np.max(1 - GaussianTradeoff(mu)(alphas) - math.exp(eps) * alphas))
    assert conjugate == pytest.approx(expected, rel=1e-6)


def test_gdp_epsilon_and_mu_worked_values():
    assert gdp_epsilon(1.0, 1e-5) == pytest.approx(4.3771780957, rel=1e-9)
    assert gdp_epsilon(0.5, 1e-6) == pytest.approx(2.2540846502, rel=1e-9)
    assert gdp_mu(1.0, 1e-5) == pytest.approx(0.2680511232, rel=1e-9)
    assert gdp_mu(3.0, 1e-6) == pytest.approx(0.6477265307, rel=1e-9)
    # safe directions: the epsilon re-checks, the mu guarantees the target
    assert gdp_delta(1.0, gdp_epsilon(1.0, 1e-5)) <= 1e-5
    assert gdp_delta(gdp_mu(1.0, 1e-5), 1.0) <= 1e-5


def test_gdp_edge_cases():
    assert gdp_delta(0.0, 0.3) == 0.0 and gdp_epsilon(0.0, 1e-9) == 0.0
    assert gdp_delta(2.0, math.inf) == 0.0
    assert gdp_delta(1.0, 0.0) == pytest.approx(2 * 0.691462461274013 - 1, rel=1e-10)


def test_composition_and_gaussian_mechanism():
    assert compose_gdp([0.3, 0.4]) == pytest.approx(0.5)
    assert compose_gdp([1.0] * 25) == pytest.approx(5.0)
    assert gaussian_mechanism_mu(2.0, sensitivity=3.0) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="at least one mu"):
        compose_gdp([])


@pytest.mark.parametrize("eps, expected", [(0.1, 0.1253090122), (1.0, 1.2320353853)])
def test_pure_dp_to_gdp_is_smallest(eps, expected):
    mu = pure_dp_mu(eps)
    assert mu == pytest.approx(expected, rel=1e-9)
    alphas = np.linspace(0, 1, 100_001)
    rr = ApproxDPTradeoff(eps, 0.0)
    assert (rr(alphas) - GaussianTradeoff(mu)(alphas) >= -1e-12).all()         # f_eps >= G_mu*
    assert (rr(alphas) - GaussianTradeoff(0.999 * mu)(alphas) < 0).any()       # and mu* is the smallest


def test_gdp_validation():
    with pytest.raises(ValueError, match="mu must be in"):
        gdp_delta(-1.0, 0.0)
    with pytest.raises(ValueError, match="delta must be in"):
        gdp_mu(1.0, 0.0)

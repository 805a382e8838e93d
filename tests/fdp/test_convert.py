"""Tradeoff brackets from PLDs contain the exact curves; profile <-> curve conversions."""

import math

import numpy as np
import pytest

from privloss.fdp import (GaussianTradeoff, GeneralizedRRTradeoff, LaplaceTradeoff, mechanism_tradeoff,
                          pld_tradeoff, profile_from_tradeoff, rr_composition_tradeoff,
                          tradeoff_from_profile)
from privloss.pld import gaussian_pld, generalized_rr_pld, laplace_pld, randomized_response_pld

ALPHAS = np.concatenate((np.linspace(0, 1, 1001), np.geomspace(1e-9, 1e-2, 200)))


def assert_brackets(bracket, exact, slack=1e-12):
    lower, upper = bracket(ALPHAS)
    truth = exact(ALPHAS)
    assert (lower <= truth + slack).all()
    assert (truth <= upper + slack).all()


def test_rr_composition_bracket_contains_exact_curve():
    bracket = mechanism_tradeoff(randomized_response_pld(0.2).self_compose(25))
    assert_brackets(bracket, rr_composition_tradeoff(0.2, 25))
    lower, upper = bracket(np.linspace(0.01, 0.99, 99))
    assert np.max(upper - lower) < 1e-6


def test_gaussian_composition_bracket_contains_g_mu():
    bracket = mechanism_tradeoff(gaussian_pld(1.0).self_compose(10))
    assert_brackets(bracket, GaussianTradeoff(math.sqrt(10)))
    lower, upper = bracket(np.linspace(0.01, 0.99, 99))
    assert np.max(upper - lower) < 1e-4


def test_laplace_single_release_bracket():
    assert_brackets(mechanism_tradeoff(laplace_pld(1.0)), LaplaceTradeoff(1.0))


def test_asymmetric_pair_has_both_orders():
    brackets = pld_tradeoff(generalized_rr_pld(1.0, 0.3))
    assert set(brackets) == {"forward", "reverse"}
    assert_brackets(brackets["forward"], GeneralizedRRTradeoff(1.0, 0.3))
    assert_brackets(brackets["reverse"], GeneralizedRRTradeoff(1.0, 0.7))
    # the mechanism's curve is the minimum over the two orders
    both = mechanism_tradeoff(generalized_rr_pld(1.0, 0.3))
    exact = np.minimum(GeneralizedRRTradeoff(1.0, 0.3)(ALPHAS), GeneralizedRRTradeoff(1.0, 0.7)(ALPHAS))
    assert (both.lower(ALPHAS) <= exact + 1e-12).all()
    # the conjugate of each order reproduces the orientation rule (worked_values §7)
    assert brackets["forward"].lower.delta(0.2) == pytest.approx(0.1613301170, rel=1e-8)
    assert brackets["reverse"].lower.delta(0.2) == pytest.approx(0.0757865594, rel=1e-8)


def test_pld_curve_delta_bounds_the_profile():
    pld = gaussian_pld(1.0).self_compose(4)
    bracket = mechanism_tradeoff(pld)
    for eps in (0.0, 1.0, 3.0):
        assert bracket.lower.delta(eps) >= pld.delta(eps).lower - 1e-12
        assert bracket.lower.delta(eps) >= GaussianTradeoff(2.0).delta(eps) * (1 - 1e-9)


def test_profile_round_trip():
    g = GaussianTradeoff(1.0)
    epsilons = np.linspace(0, 5, 51)
    deltas = profile_from_tradeoff(g, epsilons)
    assert deltas[10] == pytest.approx(0.126936737507, rel=1e-9)
    rebuilt = tradeoff_from_profile(epsilons, deltas)
    alphas = np.linspace(0, 1, 501)
    assert (rebuilt(alphas) <= g(alphas) + 1e-12).all()      # valid: never above the truth
    assert np.max(g(alphas) - rebuilt(alphas)) < 0.02          # and close with 51 points


def test_conversion_validation():
    with pytest.raises(ValueError, match="equal length"):
        tradeoff_from_profile([0.1, 0.2], [1e-6])
    with pytest.raises(TypeError, match="TradeoffCurve"):
        profile_from_tradeoff("curve", [0.1])

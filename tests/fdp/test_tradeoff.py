"""Tradeoff curves: closed forms vs Neyman–Pearson, worked values, orientation, conjugates."""

import math

import numpy as np
import pytest

from privloss.fdp import (ApproxDPTradeoff, EnvelopeTradeoff, GaussianTradeoff, GeneralizedRRTradeoff,
                          LaplaceTradeoff, PiecewiseLinearTradeoff, identity_tradeoff,
                          randomized_response_tradeoff, rr_composition_tradeoff)
from tests.pld._reference import theorem1_exact


def neyman_pearson(p, q, alphas):
    """T(P, Q) of finite laws: reject P on the smallest likelihood ratios first (fdp.md §1)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    with np.errstate(divide="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1), np.inf)
    order = np.argsort(ratio, kind="stable")
    a = np.concatenate(([0.0], np.cumsum(p[order])))
    b = 1.0 - np.concatenate(([0.0], np.cumsum(q[order])))
    return np.interp(alphas, a, b)


def test_laplace_worked_values():
    curve = LaplaceTradeoff(1.0)
    assert curve(0.1) == pytest.approx(0.728171817154, rel=1e-11)
    assert curve(0.3) == pytest.approx(0.306566200976, rel=1e-11)
    assert curve(0.7) == pytest.approx(0.110363832351, rel=1e-11)


def test_laplace_matches_numerical_neyman_pearson():
    x = np.linspace(-30, 31, 1_220_001)
    p, q = np.exp(-np.abs(x)), np.exp(-np.abs(x - 1.0))
    alphas = np.linspace(0, 1, 201)
    numeric = neyman_pearson(p / p.sum(), q / q.sum(), alphas)
    assert np.max(np.abs(numeric - LaplaceTradeoff(1.0)(alphas))) < 1e-4


def test_laplace_delta_closed_form():
    curve = LaplaceTradeoff(1.0)
    for epsilon, expected in [(0.0, 0.393469340287), (0.3, 0.295311910281), (0.9, 0.048770575499), (1.2, 0.0)]:
        assert curve.delta(epsilon) == pytest.approx(expected, rel=1e-11, abs=1e-15)


def test_randomized_response_is_f_eps_zero():
    eps = 0.7
    a = math.exp(eps) / (1 + math.exp(eps))
    alphas = np.linspace(0, 1, 101)
    np.testing.assert_allclose(randomized_response_tradeoff(eps)(alphas),
                               neyman_pearson([a, 1 - a], [1 - a, a], alphas), atol=1e-15)


def test_f_eps_delta_formula_and_kink():
    curve = ApproxDPTradeoff(1.0, 0.01)
    alphas = np.linspace(0, 1, 1001)
    formula = np.maximum.reduce([np.zeros_like(alphas), 1 - 0.01 - math.e * alphas,
                                 math.exp(-1) * (1 - 0.01 - alphas)])
    np.testing.assert_allclose(curve(alphas), formula, atol=1e-15)
    kink = 0.99 / (1 + math.e)
    assert curve(kink) == pytest.approx(kink)
    assert curve.symmetric


def test_generalized_rr_orientation_worked_values():
    """fdp.md §7: 1 + T(P,Q)^*(-e^eps) = delta_{Q||P}; worked_values §7 for RR_{1, 0.3}."""
    curve = GeneralizedRRTradeoff(1.0, 0.3)
    assert curve.delta(0.0) == pytest.approx(0.2064098610, rel=1e-9)
    assert curve.delta(0.2) == pytest.approx(0.1613301170, rel=1e-9)      # delta_{Q||P}
    assert curve.inverse().delta(0.2) == pytest.approx(0.0757865594, rel=1e-9)   # delta_{P||Q}
    assert curve.delta(0.5) == pytest.approx(0.0743239328, rel=1e-9)
    assert curve.inverse().delta(0.5) == 0.0
    alphas = np.linspace(0, 1, 51)
    formula = np.maximum(1 - math.exp(1 - 0.3) * alphas, math.exp(-0.3) * (1 - alphas))
    np.testing.assert_allclose(curve(alphas), formula, atol=1e-14)
    # the inverse is the curve of RR_{1, 0.7}
    np.testing.assert_allclose(curve.inverse()(alphas), GeneralizedRRTradeoff(1.0, 0.7)(alphas), atol=1e-14)


def test_gaussian_curve_and_symmetry():
    g = GaussianTradeoff(1.0)
    alphas = np.linspace(0, 1, 101)
    from scipy.stats import norm

    np.testing.assert_allclose(g(alphas), norm.cdf(norm.ppf(1 - alphas) - 1.0), atol=1e-12)
    assert g(0.0) == 1.0 and g(1.0) == 0.0
    # symmetric: the graph is its own reflection
    for a in (0.05, 0.2, 0.4):
        assert g(g(a)) == pytest.approx(a, rel=1e-9)
    np.testing.assert_allclose(GaussianTradeoff(0.0)(alphas), 1 - alphas, atol=1e-15)


@pytest.mark.parametrize("k, eps, eps_g", [(25, 0.2, 1.0), (10, 0.1, 0.3), (3, 1.0, 0.0)])
def test_rr_composition_conjugate_is_theorem_1(k, eps, eps_g):
    curve = rr_composition_tradeoff(eps, k)
    assert curve.delta(eps_g) == pytest.approx(theorem1_exact(k, eps, eps_g), rel=1e-10, abs=1e-15)


def test_rr_composition_worked_value_and_enumeration():
    assert rr_composition_tradeoff(0.2, 25).delta(1.0) == pytest.approx(0.1219257716, rel=1e-9)
    # brute force for k = 3: all 8 outputs
    eps, k = 0.5, 3
    a = math.exp(eps) / (1 + math.exp(eps))
    import itertools

    outcomes = list(itertools.product([0, 1], repeat=k))
    p = [np.prod([a if bit else 1 - a for bit in o]) for o in outcomes]
    q = [np.prod([1 - a if bit else a for bit in o]) for o in outcomes]
    alphas = np.linspace(0, 1, 101)
    np.testing.assert_allclose(rr_composition_tradeoff(eps, k)(alphas), neyman_pearson(p, q, alphas), atol=1e-14)


def test_envelope_delta_is_a_safe_upper_bound():
    envelope = EnvelopeTradeoff([ApproxDPTradeoff(1.0, 1e-3), ApproxDPTradeoff(2.0, 1e-5)])
    for eps in (0.0, 0.5, 1.5, 2.5):
        exact_grid = np.linspace(0, 1, 400_001)
        dense = float(np.max(1 - envelope(exact_grid) - math.exp(eps) * exact_grid))
        assert envelope.delta(eps) >= dense - 1e-15
        assert envelope.delta(eps) <= dense + 1e-4


def test_piecewise_linear_validation_and_inverse():
    with pytest.raises(ValueError, match="alphas must increase from 0 to 1"):
        PiecewiseLinearTradeoff([0.0, 0.5], [1.0, 0.0])
    with pytest.raises(ValueError, match="non-increasing"):
        PiecewiseLinearTradeoff([0.0, 0.5, 1.0], [0.5, 0.6, 0.0])
    curve = PiecewiseLinearTradeoff([0.0, 0.2, 1.0], [0.9, 0.3, 0.0])
    inverse = curve.inverse()
    assert inverse(0.3) == pytest.approx(0.2) and inverse(0.95) == 0.0 and inverse(0.0) == 1.0
    assert identity_tradeoff()(0.3) == pytest.approx(0.7)


@pytest.mark.parametrize("call, message", [
    (lambda: GaussianTradeoff(-1.0), "mu must be in [0, inf)"),
    (lambda: LaplaceTradeoff(float("nan")), "epsilon0"),
    (lambda: ApproxDPTradeoff(1.0, 2.0), "delta must be in [0, 1]"),
    (lambda: GeneralizedRRTradeoff(1.0, 2.0), "t must be in [0, epsilon=1]"),
    (lambda: GaussianTradeoff(1.0)(1.5), "alpha must lie in [0, 1]"),
    (lambda: rr_composition_tradeoff(0.1, 0), "count must be an integer >= 1"),
])
def test_validation(call, message):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert message in str(info.value)

"""Per-level noise: sensitivity bounds, the exact budget, the events, and the
facts the guaranteed intervals rest on (checked with mpmath)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from privloss.events import PureDP, ZCDP
from privloss.releases import LevelBound, rho_for
from privloss.releases._levels import BETA, plan_noise
from privloss.samplers import discrete_gaussian_mass, discrete_laplace_mass


@pytest.mark.parametrize("l1, linf", [(1, 1), (5, 2), (6, 3), (7, 7), (9, 4)])
def test_l2_bound_is_the_maximum_over_integer_changes(l1, linf):
    # brute force over vectors of up to l1 non-negative entries (signs do not matter)
    best = 0
    for entries in itertools.product(range(linf + 1), repeat=min(l1, 5)):
        if sum(entries) <= l1:
            best = max(best, sum(e * e for e in entries))
    assert LevelBound(l1, linf).l2_squared == best


def test_level_bound_refuses_bad_values():
    with pytest.raises(ValueError, match="linf must be <= l1 = 2, got 3"):
        LevelBound(2, 3)
    with pytest.raises(ValueError, match="l1 must be an integer >= 1, got 0"):
        LevelBound(0, 1)


@pytest.mark.parametrize("kind, budget", [("laplace", 0.7), ("gaussian", 0.05),
                                          ("laplace", 1e-3), ("gaussian", 3.0)])
def test_plan_spends_at_most_the_budget_exactly(kind, budget):
    bounds = (LevelBound(3, 1), LevelBound(3, 2), LevelBound(3, 3))
    plan = plan_noise(kind, bounds, budget, [0.2, 0.3, 0.5])
    loss = plan.loss()
    assert loss <= Fraction(budget)
    assert loss >= Fraction(budget) * Fraction(999_999, 1_000_000)
    event = plan.event()
    assert isinstance(event, PureDP if kind == "laplace" else ZCDP)
    value = event.epsilon if kind == "laplace" else event.rho
    assert Fraction(value) >= loss and value <= budget
    # the formula: epsilon = sum l1 / t, rho = sum D^2 / (2 sigma^2)
    if kind == "laplace":
        assert loss == sum(Fraction(b.l1) / t for b, t in zip(bounds, plan.parameters))
    else:
        assert loss == sum(Fraction(b.l2_squared) / (2 * s)
                           for b, s in zip(bounds, plan.parameters))


def test_plan_refuses_bad_parameters():
    with pytest.raises(ValueError, match="noise must be one of laplace, gaussian"):
        plan_noise("cauchy", (LevelBound(1, 1),), 1.0, [1.0])
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        plan_noise("laplace", (LevelBound(1, 1),), -1.0, [1.0])


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(40)])
def test_discrete_laplace_mgf_below_the_continuous_one(scale):
    # the sub-gamma interval rests on E exp(uZ) <= 1 / (1 - t^2 u^2) for |u| < 1/t
    mpmath.mp.dps = 40
    t = mpmath.mpf(scale.numerator) / scale.denominator
    p = mpmath.e ** (-1 / t)
    for fraction in (0.05, 0.3, 0.6, 0.9, 0.99):
        u = fraction / t
        discrete = (1 - p) ** 2 / ((1 - p * mpmath.e ** u) * (1 - p * mpmath.e ** (-u)))
        assert discrete <= 1 / (1 - t * t * u * u)


@pytest.mark.parametrize("kind, parameter", [("gaussian", Fraction(1, 2)), ("gaussian", 9),
                                             ("gaussian", 250), ("laplace", Fraction(1, 2)),
                                             ("laplace", 3), ("laplace", 40)])
def test_guaranteed_half_width_of_one_draw_covers(kind, parameter):
    # one noisy value (weight 1): the exact miscoverage is at most 5%
    plan = plan_noise(kind, (LevelBound(1, 1),), 1.0, [1.0])
    plan = type(plan)(kind, (Fraction(parameter),), plan.bounds)
    proxies = plan.proxies()
    normal, sound = plan.half_widths(np.array(plan.variances()), proxies)
    w = math.floor(sound[0])
    mass = discrete_gaussian_mass if kind == "gaussian" else discrete_laplace_mass
    inside = mass(-w, w, plan.parameters[0])
    assert 1 - inside <= BETA
    assert normal[0] < sound[0]


def test_rho_for_meets_the_target():
    from privloss.accounting import compose

    rho = rho_for(1.0, 1e-6)
    assert compose((ZCDP(rho),), target_delta=1e-6).epsilon <= 1.0
    assert compose((ZCDP(rho * 1.01),), target_delta=1e-6).epsilon > 1.0
    with pytest.raises(ValueError, match="delta must be in"):
        rho_for(1.0, 0.0)


def _discrete_gaussian_weights(sigma_squared, shift=0, span=60):
    sigma = math.sqrt(sigma_squared)
    limit = int(span * sigma) + 10
    points = range(-limit, limit + 1)
    s2 = mpmath.mpf(sigma_squared)
    weights = [mpmath.e ** (-mpmath.mpf(x - shift) ** 2 / (2 * s2)) for x in points]
    total = mpmath.fsum(weights)
    return list(points), [w / total for w in weights]


@pytest.mark.parametrize("sigma_squared", [0.3, 1.0, 4.0, 30.0])
def test_discrete_gaussian_is_sigma_squared_sub_gaussian(sigma_squared):
    # the guaranteed Gaussian interval rests on E exp(uZ) <= exp(u^2 sigma^2 / 2) (CKS)
    mpmath.mp.dps = 40
    points, pmf = _discrete_gaussian_weights(sigma_squared)
    s2 = mpmath.mpf(sigma_squared)
    for u in (0.01, 0.3, 1.0, 2.5):
        u = mpmath.mpf(u) / mpmath.sqrt(s2)
        mgf = mpmath.fsum(p * mpmath.e ** (u * x) for x, p in zip(points, pmf))
        # equal to within ~exp(-2 pi^2 sigma^2) for large sigma: allow rounding of the sums
        assert mgf <= mpmath.e ** (u * u * s2 / 2) * (1 + mpmath.mpf(10) ** -30)


@pytest.mark.parametrize("sigma_squared, shift", [(0.5, 1), (2.0, 1), (2.0, 3), (9.0, 2)])
def test_discrete_gaussian_renyi_divergence_within_the_zcdp_bound(sigma_squared, shift):
    # per coordinate D_alpha(N_Z(0, s2) || N_Z(shift, s2)) <= alpha shift^2 / (2 s2); Renyi
    # divergences of independent coordinates add, which gives the per-level rho
    mpmath.mp.dps = 40
    points, p = _discrete_gaussian_weights(sigma_squared)
    _, q = _discrete_gaussian_weights(sigma_squared, shift)
    for alpha in (1.5, 2.0, 5.0, 20.0):
        moment = mpmath.fsum(a ** alpha * b ** (1 - alpha) for a, b in zip(p, q) if a > 0)
        divergence = mpmath.log(moment) / (alpha - 1)
        bound = mpmath.mpf(alpha) * shift ** 2 / (2 * mpmath.mpf(sigma_squared))
        assert divergence <= bound * (1 + mpmath.mpf(10) ** -30)

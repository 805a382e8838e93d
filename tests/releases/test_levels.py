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

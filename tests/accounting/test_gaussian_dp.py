"""Exact Gaussian-DP composition (privloss.bounds.gaussian_dp) and its accountant row.

Reference values: mpmath at 50 digits. Recipe (also ``_mp_delta`` / ``_mp_epsilon``):
delta(eps) = ncdf(-eps/mu + mu/2) - exp(eps) ncdf(-eps/mu - mu/2) with mp.dps = 50;
epsilon(delta) by 200 bisection steps on that exact profile (bracket
[0, mu^2/2 + mu sqrt(2 log(1/delta)) + mu]).
"""

import math

import pytest

mpmath = pytest.importorskip("mpmath")

from privloss import PrivacyFilter, compose                                    # noqa: E402
from privloss.accounting.accountant import epsilon_of_profile                   # noqa: E402
from privloss.accounting.profile import Profile                                 # noqa: E402
from privloss.accounting import pld_bound                                       # noqa: E402
from privloss.bounds.gaussian_dp import (composed_mu, gdp_delta, gdp_epsilon,   # noqa: E402
                                         gaussian_composition_epsilon)
from privloss.events import (DiscreteGaussian, Gaussian, Group, Interaction,    # noqa: E402
                             Parallel, ZCDP)


def _mp_delta(mu, eps):
    with mpmath.workdps(50):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def _mp_epsilon(mu, delta):
    with mpmath.workdps(50):
        lo = mpmath.mpf(0)
        hi = mpmath.mpf(mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta)) + mu)
        for _ in range(200):
            mid = (lo + hi) / 2
            if _mp_delta(mu, mid) > delta:
                lo = mid
            else:
                hi = mid
        return hi


#: mpmath (50 digits, recipe above): 1000 Gaussians with sigma = 1, delta = 1e-6
EXACT_1000 = 649.38508947148136470171435576159560740357488838609


def test_issue_value_1000_gaussians_is_exact():
    # timings: benchmarks/accounting.py (gaussian task), not tests
    result = compose([Gaussian(1.0, count=1000)], target_delta=1e-6)
    assert result.bound == "gaussian-dp"
    assert EXACT_1000 <= result.epsilon <= EXACT_1000 * (1 + 1e-12)


def test_a_million_gaussians_are_exact():
    result = compose([Gaussian(3.0, sensitivity=2.0, count=10**6)], target_delta=1e-6)
    mu = 1000.0 * 2.0 / 3.0
    exact = float(_mp_epsilon(mu, 1e-6))
    assert exact <= result.epsilon <= exact * (1 + 1e-12)


@pytest.mark.parametrize("mu", [0.01, 0.3, 1.0, 3.0, 31.6, 100.0, 1000.0])
@pytest.mark.parametrize("eps", [0.0, 0.01, 0.5, 1.0, 5.0, 50.0, 500.0, 5000.0])
def test_delta_exact_to_1e12_and_never_below(mu, eps):
    exact = _mp_delta(mu, eps)
    if exact < mpmath.mpf("1e-300"):
        assert gdp_delta(mu, eps) < 1e-290
        return
    value = gdp_delta(mu, eps)
    relative = float((value - exact) / exact)
    assert 0.0 <= relative <= 1e-12, (mu, eps, value, float(exact))


@pytest.mark.parametrize("mu", [0.01, 0.1, 1.0, 10.0, 1000.0])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1e-6, 1e-2])
def test_epsilon_exact_to_1e12_and_never_below(mu, delta):
    value = gdp_epsilon(mu, delta)
    if gdp_delta(mu, 0.0) <= delta:
        assert value == 0.0
        return
    exact = _mp_epsilon(mu, delta)
    relative = float((value - exact) / exact)
    assert 0.0 <= relative <= 1e-12, (mu, delta, value, float(exact))
    assert gdp_delta(mu, value) <= delta                      # re-check


def test_degenerate_and_extreme_inputs():
    assert gdp_delta(0.0, 1.0) == 0.0 and gdp_epsilon(0.0, 1e-6) == 0.0
    assert gdp_delta(math.inf, 1.0) == 1.0 and gdp_epsilon(math.inf, 1e-6) == math.inf
    assert gdp_epsilon(1.0, 0.0) == math.inf and gdp_epsilon(1.0, 1.0) == 0.0
    assert gdp_delta(1.0, math.inf) == 0.0
    assert 0.0 <= gdp_delta(1e-3, 1e300) < 1e-300          # no overflow, no NaN
    assert math.isfinite(gdp_epsilon(1e6, 1e-300))
    with pytest.raises(ValueError, match="mu"):
        gdp_delta(-1.0, 1.0)
    with pytest.raises(ValueError, match="delta"):
        gdp_epsilon(1.0, 2.0)


def test_heterogeneous_sigmas_and_sensitivities_compose_by_squares():
    events = [Gaussian(2.0, sensitivity=3.0, count=7), Gaussian(0.5, count=2), Gaussian(10.0)]
    mu = math.sqrt(7 * 1.5 ** 2 + 2 * 4.0 + 0.01)
    assert composed_mu([(1.5, 7), (2.0, 2), (0.1, 1)]) == pytest.approx(mu, rel=1e-15)
    result = compose(events, target_delta=1e-5, interaction="non-adaptive")
    assert result.bound == "gaussian-dp"
    exact = float(_mp_epsilon(mu, 1e-5))
    assert exact <= result.epsilon <= exact * (1 + 1e-12)
    back = compose(events, target_epsilon=result.epsilon)
    assert back.delta <= 1e-5 and back.bound == "gaussian-dp"


def test_equals_the_pld_bracket_limit():
    """Identity: the PLD bracket of a Gaussian-only profile contains the GDP value."""
    profile = Profile.of([Gaussian(2.0, count=30), Gaussian(1.0, sensitivity=0.5, count=5)])
    exact = gaussian_composition_epsilon([(0.5, 30), (0.5, 5)], 1e-6)
    bracket = pld_bound.epsilon(profile, 1e-6)
    assert bracket.lower <= exact <= bracket.upper * (1 + 1e-12)
    assert bracket.upper - exact < 1e-3 * exact


def test_every_interaction_model_including_fully_adaptive():
    profile = Profile.of([Gaussian(1.0, count=100)])
    values = {epsilon_of_profile(profile, model, 1e-6).value for model in Interaction}
    assert len(values) == 1
    row = next(r for r in epsilon_of_profile(profile, "fully-adaptive", 1e-6).bounds
               if r.name == "gaussian-dp")
    assert row.applies


def test_not_used_for_discrete_gaussian_or_zcdp():
    for events in ([DiscreteGaussian(2.0), Gaussian(1.0)], [ZCDP(0.5), Gaussian(1.0)]):
        result = compose(events, target_delta=1e-6)
        row = next(r for r in result.bounds if r.name == "gaussian-dp")
        assert not row.applies and "Gaussian" in row.reason


def test_group_and_parallel_of_gaussians_stay_exact():
    grouped = compose([Group(Gaussian(4.0, count=10), 2)], target_delta=1e-6)
    direct = compose([Gaussian(2.0, count=10)], target_delta=1e-6)
    assert grouped.bound == "gaussian-dp" and grouped.epsilon == direct.epsilon
    parallel = compose([Parallel([Gaussian(4.0), Gaussian(2.0, sensitivity=0.5), Gaussian(8.0)])],
                       target_delta=1e-6)
    single = compose([Gaussian(4.0)], target_delta=1e-6)
    assert parallel.bound == "gaussian-dp" and parallel.epsilon == pytest.approx(single.epsilon, rel=1e-14)


def test_filter_spends_gaussians_exactly():
    budget = PrivacyFilter(epsilon=EXACT_1000 * (1 + 1e-10), delta=1e-6, interaction="adaptive",
                           plan=[Gaussian(1.0, count=999), Gaussian(1.0)])
    budget.spend(Gaussian(1.0, count=999))
    result = budget.spend(Gaussian(1.0))
    assert result.bound == "gaussian-dp"
    assert EXACT_1000 <= result.value <= EXACT_1000 * (1 + 1e-12)


def test_seeded_sweep_never_below_and_within_1e12():
    """400 seeded points, mu in [1e-4, 1e4], eps spread over the regimes (tiny, around
    mu^2/2, around mu * 40, up to 1e5); reference: ``_mp_delta`` (50 digits)."""
    import random

    generator = random.Random(20251125)
    for _ in range(400):
        mu = 10 ** generator.uniform(-4, 4)
        eps = generator.choice([0.0, 10 ** generator.uniform(-6, 5),
                                mu * mu / 2 * generator.uniform(0.5, 1.5), mu * generator.uniform(0, 40)])
        exact = _mp_delta(mu, eps)
        if exact < mpmath.mpf("1e-250"):
            continue
        relative = float((gdp_delta(mu, eps) - exact) / exact)
        assert 0.0 <= relative <= 1e-12, (mu, eps, relative)

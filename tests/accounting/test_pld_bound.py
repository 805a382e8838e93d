"""Named mechanism events and the PLD bound in the accountant."""

import math

import pytest

from privloss import PrivacyFilter, PureDP, compose
from privloss.bounds.gaussian import analytic_gaussian_epsilon
from privloss.events import (DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace,
                             RandomizedResponse)


def test_named_events_state_their_generic_guarantee():
    assert Laplace(10.0, sensitivity=2.0).guarantee == PureDP(0.2)
    assert Gaussian(2.0).guarantee.rho == pytest.approx(0.125)
    assert RandomizedResponse(0.5).guarantee == PureDP(0.5)
    assert DiscreteLaplace(4.0, sensitivity=2).guarantee == PureDP(0.5)
    assert DiscreteGaussian(3.0).guarantee.rho == pytest.approx(1 / 18)
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteGaussian(3.0, sensitivity=0)


def test_one_laplace_matches_its_closed_form():
    # delta(eps) = 1 - e^{(eps - eps0)/2} for eps <= eps0 (worked_values §7)
    result = compose([Laplace(1.0)], target_epsilon=0.3)
    assert result.bound == "pld"
    assert result.delta == pytest.approx(0.295311910281, rel=1e-3)
    assert result.delta >= 0.295311910281 * (1 - 1e-12)
    row = next(row for row in result.bounds if row.name == "pld")
    assert row.lower <= 0.295311910281 <= row.value


def test_gaussians_match_gaussian_dp():
    # k Gaussians with sigma compose exactly to one with sigma / sqrt(k) (GDP)
    # (the PLD bracket's agreement: tests/accounting/test_gaussian_dp.py)
    result = compose([Gaussian(10.0, count=100)], target_delta=1e-6)
    exact = analytic_gaussian_epsilon(1.0, 1e-6)
    assert result.bound == "gaussian-dp"
    assert exact * (1 - 1e-12) <= result.epsilon <= exact * (1 + 1e-12)


def test_laplace_is_cheaper_than_the_pure_dp_worst_case():
    laplace = compose([Laplace(10.0, count=200)], target_delta=1e-6)
    worst = compose([PureDP(0.1, count=200)], target_delta=1e-6)
    assert laplace.bound == "pld" and laplace.epsilon < worst.epsilon


def test_randomized_response_equals_theorem_1():
    # binary RR is the worst case of pure DP: PLD bracket contains Theorem 1's exact value
    rr = compose([RandomizedResponse(0.1, count=50)], target_delta=1e-6)
    row = next(row for row in rr.bounds if row.name == "pld")
    assert row.lower <= 3.172902734019 * (1 + 1e-9)
    assert rr.epsilon <= 3.172902734019 * (1 + 1e-9)      # optimal-dp is also available


def test_pld_not_used_setwise_and_mixed_events_still_account():
    result = compose([Laplace(10.0, count=5), Gaussian(5.0)], target_delta=1e-6, interaction="setwise")
    assert result.bound != "pld" and math.isfinite(result.epsilon)
    row = next(row for row in result.bounds if row.name == "pld")
    assert not row.applies and "order" in row.reason


def test_filter_charges_named_mechanisms():
    budget = PrivacyFilter(1.0, 1e-6)
    for _ in range(8):              # epsilon 1/8 is exact in binary64 (budgets compare exactly)
        budget.spend(Laplace(8.0))
    assert budget.spent().value <= 1.0


def test_a_huge_discrete_lattice_is_left_to_the_renyi_routes():
    """DiscreteGaussian(sigma=1e6) would enumerate ~2e7 lattice atoms (14 s); the
    PLD row declines with the reason and the zCDP/Renyi routes answer (at delta
    1e-6 this mechanism is (0, 6.1e-7)-DP by [CKS] Cor. 13, so 0 is exact enough)."""
    result = compose([DiscreteGaussian(1e6)], target_delta=1e-6)
    row = next(row for row in result.bounds if row.name == "pld")
    assert row.value is None and "lattice" in row.reason
    assert result.bound in ("zcdp-tight", "rdp-exact") and result.epsilon >= 0.0

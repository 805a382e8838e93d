"""No overflow, NaN, hang or crash for k up to 1e5 and epsilon up to 20."""

import math

import mpmath
import pytest

from privloss import BoundedRange, Interaction, PrivacyAccountant, PureDP, ZCDP
from privloss.bounds.optimal_dp import optimal_dp_epsilon

FAST = [Interaction.ADAPTIVE, Interaction.SETWISE]


def check(result, k, epsilon):
    assert math.isfinite(result.value) and result.value >= 0
    assert result.value <= k * epsilon * (1 + 1e-9) + 1e-9
    for row in result.bounds:
        if row.applies:
            assert not math.isnan(row.value)


@pytest.mark.parametrize("interaction", FAST)
@pytest.mark.parametrize("epsilon", [1e-4, 0.1, 1.0, 20.0])
def test_pure_dp_and_br_at_k_1e5(interaction, epsilon):
    k = 10 ** 5
    for event in (PureDP(epsilon, count=k), BoundedRange(epsilon, count=k)):
        check(PrivacyAccountant([event], interaction=interaction).epsilon(1e-6), k, epsilon)
    mixed = [PureDP(epsilon, count=k // 2), BoundedRange(epsilon, count=k // 2), ZCDP(0.01, count=10)]
    result = PrivacyAccountant(mixed, interaction=interaction).epsilon(1e-6)
    assert math.isfinite(result.value)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 20.0])
def test_non_adaptive_at_k_1e5(epsilon):
    k = 10 ** 5
    for events in ([BoundedRange(epsilon, count=k)],
                   [PureDP(epsilon, count=k // 2), BoundedRange(epsilon, count=k // 2)]):
        check(PrivacyAccountant(events, interaction="non-adaptive").epsilon(1e-6), k, epsilon)


@pytest.mark.slow
@mpmath.workdps(40)
def test_theorem_1_at_k_1e4_is_exact_to_1e_9():
    """Reference: bisection at 40 digits on the closed form of [CR] Thm 1 (mpmath), recipe in
    worked_values.md §1 (CF + ROOT)."""
    k, eps, delta = 10 ** 4, mpmath.mpf("0.1"), mpmath.mpf("1e-6")
    terms = [mpmath.binomial(k, i) * mpmath.e ** ((k - i) * eps) for i in range(k + 1)]
    lows = [mpmath.binomial(k, i) * mpmath.e ** (i * eps) for i in range(k + 1)]
    norm = (1 + mpmath.e ** eps) ** k

    def profile(eg):
        ratio = mpmath.e ** eg
        total = mpmath.mpf(0)
        for i in range(k + 1):
            gap = terms[i] - ratio * lows[i]
            if gap <= 0:
                break
            total += gap
        return total / norm

    lo, hi = mpmath.mpf(0), k * eps
    for _ in range(110):
        mid = (lo + hi) / 2
        if profile(mid) <= delta:
            hi = mid
        else:
            lo = mid
    value = optimal_dp_epsilon(k, 0.1, 1e-6)
    assert value >= float(hi) * (1 - 1e-15)
    assert value == pytest.approx(float(hi), rel=1e-9)


def test_counts_beyond_the_documented_maximum_are_refused_at_once():
    """compose([PureDP(0.1, count=2**31)]) used to allocate 16 GB and hang."""
    import pytest
    from privloss import PrivacyFilter, PureDP, compose
    from privloss.accounting.profile import MAX_MECHANISMS
    with pytest.raises(ValueError, match="count must keep a composition to at most"):
        compose([PureDP(0.1, count=10**11)], target_delta=1e-6)
    # equal events up to 10^10 are answered by Theorem 1 over O(sqrt k) terms (issue 23)
    assert compose([PureDP(0.1, count=2**31)], target_delta=1e-6).bound == "optimal-dp"
    budget = PrivacyFilter(1.0)
    with pytest.raises(ValueError, match="10,000,000"):
        budget.spend(PureDP(1e-9, count=MAX_MECHANISMS + 1))
    assert budget.spent().value == 0.0

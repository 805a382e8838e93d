"""Issue 19 item 2: budgets compare exactly (no tolerance; any rounding goes toward
more loss), so no release over a budget is admitted.

Red-team cases: PureDP(1 * (1 + 0.99e-9)) on a (1, 0) budget; a (8, 1e-9) budget
reaching 7.9x its delta through an uncharged 1e-9 relative tolerance; ten
PureDP(0.1) on a (1, 0) budget (the stored 0.1 is 0.1000000000000000055...)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss import BudgetExceededError, PrivacyFilter, PureDP
from privloss.events import Laplace, RandomizedResponse
from privloss._exact import floor_difference, multiple_upper, quotient_upper, sum_upper
from privloss.accounting.fully_adaptive import FilterPolicy, check, default_policy, release_guarantee
from privloss.budget import Ledger, LedgerBudgetError, PlanItem
from tests.filters import game


def ceiling(exact: Fraction) -> float:
    """The smallest binary64 number >= exact (reference, in rationals)."""
    value = float(exact)
    return math.nextafter(value, math.inf) if Fraction(value) < exact else value


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1e3, allow_nan=False, allow_infinity=False), max_size=40))
def test_sum_upper_is_the_ceiling_of_the_exact_sum(values):
    exact = sum(map(Fraction, values), Fraction(0))
    assert sum_upper(values) == ceiling(exact)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 10.0), st.integers(65, 10**9))
def test_multiple_upper_is_the_ceiling_of_the_exact_product(value, count):
    assert multiple_upper(value, count) == ceiling(Fraction(value) * count)
    assert sum_upper([value] * 100) == ceiling(Fraction(value) * 100)     # constant fast path


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_quotient_upper_and_floor_difference(numerator, denominator):
    assert quotient_upper(numerator, denominator) == ceiling(Fraction(numerator) / Fraction(denominator))
    cap = floor_difference(numerator, [denominator / 7])
    if cap > 0:
        assert Fraction(cap) + Fraction(denominator / 7) <= Fraction(numerator)
        assert Fraction(math.nextafter(cap, math.inf)) + Fraction(denominator / 7) > Fraction(numerator)


def test_laplace_epsilon_is_never_below_the_true_ratio():
    third = Laplace(3.0).guarantee.epsilon
    assert Fraction(third) >= Fraction(1, 3) and third == math.nextafter(1 / 3, 1.0)
    assert Laplace(8.0).guarantee.epsilon == 0.125


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_red_team_one_release_just_over_the_budget_is_refused(delta):
    budget = PrivacyFilter(1.0, delta)
    over = PureDP(1.0 * (1 + 0.99e-9))
    assert not budget.can_spend(over)
    with pytest.raises(BudgetExceededError):
        budget.spend(over)
    budget.spend(PureDP(1.0))                       # exactly the budget: admitted
    assert not budget.can_spend(PureDP(5e-324))     # the smallest positive epsilon


def test_red_team_eight_one_e_minus_nine_budget():
    budget = PrivacyFilter(8.0, 1e-9)
    with pytest.raises(BudgetExceededError):
        budget.spend(PureDP(8.0 * (1 + 1e-9)))
    assert budget.can_spend(PureDP(8.0))


def test_ten_stored_tenths_do_not_fit_a_budget_of_one_and_the_refusal_says_why():
    assert sum(map(Fraction, [0.1] * 10)) > 1                    # the stored values
    budget = PrivacyFilter(1.0, 0.0)
    for _ in range(9):
        budget.spend(PureDP(0.1))
    with pytest.raises(BudgetExceededError, match="compare exactly.*binary64.*0.125"):
        budget.spend(PureDP(0.1))
    # the advice works: the printed total is itself an admissible budget
    roomy = PrivacyFilter(sum_upper([0.1] * 10), 0.0)
    for _ in range(10):
        roomy.spend(PureDP(0.1))
    exact = PrivacyFilter(1.0, 0.0)
    for _ in range(8):
        exact.spend(PureDP(0.125))
    assert exact.spent().value == 1.0 and not exact.can_spend(PureDP(5e-324))


def test_plans_and_the_ledger_compare_exactly(tmp_path):
    with pytest.raises(ValueError, match="compare exactly"):
        PrivacyFilter(1.0, 0.0, interaction="setwise", plan=[[PureDP(0.1)]] * 10)
    PrivacyFilter(1.0, 0.0, interaction="setwise", plan=[[PureDP(0.125)]] * 8)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.create_dataset("d", epsilon=1.0, delta=0.0)
    with pytest.raises(LedgerBudgetError):
        ledger.release("d", "over", lambda: 1, PureDP(1.0 * (1 + 0.99e-9)))
    for index in range(8):
        ledger.release("d", f"q{index}", lambda: 1, PureDP(0.125))
    with pytest.raises(LedgerBudgetError):
        ledger.release("d", "one-more", lambda: 1, PureDP(5e-324))
    ledger.create_dataset("tenths", epsilon=1.0, delta=0.0)
    for index in range(9):
        ledger.release("tenths", f"q{index}", lambda: 1, PureDP(0.1))
    with pytest.raises(LedgerBudgetError, match="compare exactly"):
        ledger.release("tenths", "q9", lambda: 1, PureDP(0.1))


def test_delta_shares_and_the_release_cap_are_exact():
    with pytest.raises(ValueError, match="delta_shares"):
        FilterPolicy(1.0, 1e-6, ("basic", "renyi"), (0.0, math.nextafter(1e-6, 1.0)))
    policy = default_policy(1.0, 1e-6)
    cap = policy.release_delta_cap
    assert Fraction(cap) + sum(map(Fraction, policy.delta_shares)) <= Fraction(1e-6)
    at_cap = release_guarantee(PureDP(0.0)).__class__(0.1, cap, 0.005, 0.0,
                                                      release_guarantee(PureDP(0.1)).renyi)
    assert check(policy, [at_cap]).admitted
    over = at_cap.__class__(0.1, math.nextafter(cap, 1.0), 0.005, 0.0, at_cap.renyi)
    assert not check(policy, [over]).admitted


@pytest.mark.parametrize("strategy", [
    game.alternating(0.1, 0.1),
    game.pseudo_random((0.05, 0.1, 0.2, 0.3, 0.7)),
    game.greedy(0.3, 0.1),
])
def test_exact_game_at_delta_zero_has_zero_divergence(strategy):
    """The adaptive game against a (1, 0) filter: the transcript's exact hockey-stick
    divergence at epsilon 1 is exactly 0 (the old 1e-9 tolerance gave 8.8e-20 > 0
    for ten PureDP(0.1))."""
    policy = default_policy(1.0, 0.0)
    guarantee = functools.lru_cache(maxsize=None)(lambda p: release_guarantee(RandomizedResponse(p)))

    @functools.lru_cache(maxsize=None)
    def admit(proposals):
        return check(policy, [guarantee(p) for p in proposals]).admitted

    forward, backward, _, refusals = game.both_directions(strategy, admit, 11, 1.0)
    assert refusals > 0
    assert forward == 0 and backward == 0


def test_the_old_tolerance_was_a_real_loss():
    """What the red team measured, as a game: ten RR(0.1) admitted by a 1e-9 relative
    tolerance have positive divergence at epsilon 1; exact admission stops at nine."""
    leaves, _ = game.play(lambda history: 0.1, lambda proposals: True, 10)
    with mpmath.workdps(game.DPS):
        assert game.hockey_stick(leaves, 1.0) > 0

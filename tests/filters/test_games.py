"""Issue 11 item 8 (a)-(b): exact enumeration of fully adaptive games.

(a) Against the fully-adaptive filter rules: for every policy and every analyst
    strategy (greedy, alternating, pseudo-random, and two built to exploit the
    rules: "largest admitted after a D-like output" and "switch rules by branch"),
    the exact hockey-stick divergence of the whole interaction at the budget
    epsilon is at most the budget delta, in both directions (D vs D' and D' vs D).
(b) The same kind of game against today's fixed-parameter accountant used as a
    filter (interaction "adaptive" re-evaluated on each realised sequence) breaks
    its budget: a documented demonstration, not the product's rule.

Budgets with large delta (0.1 - 0.3) and epsilon (2 - 5) are used on purpose: with
at most 12 rounds these are the regimes where the zCDP / Renyi rules admit more
than basic composition, so the rules themselves (not basic composition) are tested.
"""

from __future__ import annotations

import functools

import mpmath
import pytest

from privloss.accounting import Profile, epsilon_of_profile
from privloss.accounting.fully_adaptive import FilterPolicy, check, default_policy, release_guarantee
from privloss.events import ApproxDP, BoundedRange, PureDP, RandomizedResponse
from tests.filters import game


@functools.lru_cache(maxsize=None)
def guarantee(proposal):
    if isinstance(proposal, tuple) and proposal[0] == "br":
        return release_guarantee(BoundedRange(proposal[1]))
    if isinstance(proposal, tuple):
        return release_guarantee(ApproxDP(*proposal))
    return release_guarantee(RandomizedResponse(proposal))


def admitter(policy):
    @functools.lru_cache(maxsize=None)
    def admit(proposals: tuple) -> bool:
        return check(policy, [guarantee(p) for p in proposals]).admitted
    return admit


POLICIES = {
    "default-1-1e-6": default_policy(1.0, 1e-6),
    "basic+renyi-5-0.25": FilterPolicy(5.0, 0.25, ("basic", "renyi"), (0.0, 0.2)),
    "renyi-5-0.25": FilterPolicy(5.0, 0.25, ("renyi",), (0.25,)),
    "zcdp-5-0.25": FilterPolicy(5.0, 0.25, ("zcdp",), (0.25,)),
    "advanced-3-0.2": FilterPolicy(3.0, 0.2, ("advanced",), (0.2,)),
    # issue 23: the delta split of the declared mix (zCDP with all of delta for pure
    # streams; the Gaussian-DP filter for Gaussian ones, RR releases fall to its zCDP share)
    "pure-5-0.25": default_policy(5.0, 0.25, "pure"),
    "pure-2-0.3": default_policy(2.0, 0.3, "pure"),
    "gaussian-5-0.25": default_policy(5.0, 0.25, "gaussian"),
    "mixed-5-0.25": default_policy(5.0, 0.25),
    "all-2-0.3": FilterPolicy(2.0, 0.3, ("basic", "advanced", "zcdp", "renyi", "gdp"),
                              (0.0, 0.075, 0.075, 0.075, 0.075)),
}

LADDER = (2.0, 1.5, 1.2, 1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)


def strategies(admit):
    return {
        "greedy": game.greedy(1.0, 0.3),
        "alternating": game.alternating(0.9, 0.3),
        "pseudo-random": game.pseudo_random((0.1, 0.3, 0.5, 0.8, 1.2)),
        # exploit 1: push every D-like branch to the boundary of what the rules admit
        "largest-admitted": game.largest_admitted(admit, LADDER, after_other=0.3),
        # exploit 2: few large releases after a D-like output (basic composition's
        # region), many small ones otherwise (the Renyi / zCDP rules' region); found
        # by a grid search over (first, large, small) maximising the divergence
        "switch-rules": game.switch_rules(0.5, (0.6,) * 11, (0.4,) * 11),
    }


CASES = [(policy, strategy) for policy in POLICIES
         for strategy in ("greedy", "alternating", "pseudo-random", "largest-admitted", "switch-rules")]


@pytest.mark.parametrize("policy_name, strategy_name", CASES)
def test_fully_adaptive_games_never_exceed_the_budget_delta(policy_name, strategy_name):
    policy = POLICIES[policy_name]
    admit = admitter(policy)
    strategy = strategies(admit)[strategy_name]
    forward, backward, leaves, _ = game.both_directions(strategy, admit, 12, policy.epsilon)
    assert leaves >= 2
    assert forward <= policy.delta, (policy_name, strategy_name, forward)
    assert backward <= policy.delta, (policy_name, strategy_name, backward)


def test_the_rules_admit_more_than_basic_composition_in_these_games():
    # the budgets above are meant to exercise the Renyi/zCDP rules: check that some
    # admitted transcript spends more than the budget epsilon in sum of epsilons
    policy = POLICIES["basic+renyi-5-0.25"]
    admit = admitter(policy)
    assert admit((0.5,) * 11) and 0.5 * 11 > policy.epsilon
    status = check(policy, [guarantee(0.5)] * 11)
    assert status.rule == "renyi"


APPROX_POLICIES = {
    "basic-2-0.1": FilterPolicy(2.0, 0.1, ("basic",), (0.0,)),
    "basic+renyi-4-0.3": FilterPolicy(4.0, 0.3, ("basic", "renyi"), (0.0, 0.1)),
}


@pytest.mark.parametrize("policy_name", sorted(APPROX_POLICIES))
def test_approximate_dp_games_respect_the_delta_cap(policy_name):
    # releases are KOV's worst-case (eps, delta) pairs: 4 outputs each, 6 rounds
    policy = APPROX_POLICIES[policy_name]
    admit = admitter(policy)

    def probe(history):     # large delta after a D-like output, the analyst's favourite
        seen = game.outputs(history)
        return (0.3, 0.04) if not seen or seen[-1] in (0, 2) else (0.6, 0.01)

    for strategy in (probe, game.pseudo_random(((0.2, 0.02), (0.5, 0.03), 0.4, (1.0, 0.05)))):
        forward, backward, _, _ = game.both_directions(strategy, admit, 6, policy.epsilon)
        assert forward <= policy.delta and backward <= policy.delta


BR_POLICIES = {
    "renyi-3-0.25": FilterPolicy(3.0, 0.25, ("renyi",), (0.25,)),
    "zcdp-3-0.25": FilterPolicy(3.0, 0.25, ("zcdp",), (0.25,)),
    "basic+renyi-2-0.2": FilterPolicy(2.0, 0.2, ("basic", "renyi"), (0.0, 0.15)),
}


@pytest.mark.parametrize("policy_name", sorted(BR_POLICIES))
def test_bounded_range_games_with_adaptive_t(policy_name):
    # BR is charged eps^2/8 (zCDP) or by its exact Renyi curve: the cheapest claim of
    # all, so the analyst also picks each pair's t in [0, eps] from the history
    policy = BR_POLICIES[policy_name]
    admit = admitter(policy)

    def extreme_t(history):           # t near eps after D-like outputs, near 0 otherwise
        seen = game.outputs(history)
        eps = 1.2 if not seen or seen[-1] == 0 else 0.6
        return ("br", eps, 0.8 * eps if not seen or seen[-1] == 0 else 0.2 * eps)

    def middle_t(history):            # the t of the largest mean loss, eps sizes alternating
        eps = (1.5, 0.8)[len(history) % 2]
        return ("br", eps, eps / 2)

    for strategy in (extreme_t, middle_t):
        forward, backward, _, _ = game.both_directions(strategy, admit, 12, policy.epsilon)
        assert forward <= policy.delta and backward <= policy.delta


def test_the_delta_cap_is_tight_for_basic_composition():
    # with epsilon slack, the divergence is exactly the probability of a reveal:
    # the cap is charged in full and not more (1 - (1 - 0.02)^5 <= 0.1)
    policy = APPROX_POLICIES["basic-2-0.1"]
    admit = admitter(policy)
    forward, _, _, refusals = game.both_directions(lambda h: (0.0, 0.02), admit, 6, 2.0)
    assert refusals == 4 ** 5                     # on every path the sixth would exceed the cap
    with mpmath.workdps(game.DPS):
        expected = 1 - (1 - mpmath.mpf(0.02)) ** 5  # the float 0.02, as the game uses
        assert abs(forward - expected) < mpmath.mpf(10) ** -30 and forward <= 0.1


def test_filter_replay_matches_the_stateless_check():
    from privloss.accounting import BudgetExceededError, PrivacyFilter

    policy = POLICIES["basic+renyi-5-0.25"]
    admit = admitter(policy)
    sequence = (1.0, 0.8, 0.8, 0.6, 0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.3, 0.3)
    budget = PrivacyFilter(policy.epsilon, policy.delta, policy=policy)
    admitted = ()
    for proposal in sequence:
        expected = admit(admitted + (proposal,))
        try:
            budget.spend(RandomizedResponse(proposal))
            accepted = True
        except BudgetExceededError:
            accepted = False
        assert accepted == expected
        if accepted:
            admitted += (proposal,)
    assert len(budget.guarantees) == len(admitted)


# --------------------------------------------------------------------------
# (b) fixed-parameter rules used as a filter fail
# --------------------------------------------------------------------------

def test_fixed_parameter_accountant_used_as_a_filter_breaks_its_budget():
    """Demonstration (issue 11 item 8 b): today's adaptive accountant, asked on each
    realised sequence, admits every step of a 10-round strategy, yet the whole
    interaction is not (1, 0.01)-DP.

    Strategy (found by a grid search over one first release and two homogeneous
    continuations): RR(0.08); after output 0 (looks like D) three RR(0.34), after
    output 1 nine RR(0.18). Each realised sequence composes to epsilon <= 1 at delta
    0.01 under the optimal fixed-parameter bound (Murtagh-Vadhan), but the adaptive
    choice of the continuation raises the exact delta at epsilon 1 to 0.01323.
    (With delta = 1e-6 this family needs about 20 rounds, 1.12e-6 > 1e-6 by a
    closed-form search not run here; the issue's 14-round multi-level strategy
    reaches 1.475e-6.)
    """
    budget_epsilon, budget_delta = 1.0, 0.01

    @functools.lru_cache(maxsize=None)
    def admit(proposals):
        result = epsilon_of_profile(Profile.of([PureDP(p) for p in proposals]), "adaptive",
                                    budget_delta)
        return result.value <= budget_epsilon * (1 + 1e-9)

    strategy = game.branch_sequences(0.08, (0.34,) * 3, (0.18,) * 9)
    forward, _, _, refusals = game.both_directions(strategy, admit, 10, budget_epsilon)
    assert refusals == 0                              # every step was admitted
    assert forward > budget_delta * 1.3               # exact: 0.013229997...
    assert abs(forward - mpmath.mpf("0.0132299973468748")) < 1e-12
    # the fully-adaptive default policy refuses the large continuation instead
    policy = default_policy(budget_epsilon, budget_delta)
    fa_forward, fa_backward, _, _ = game.both_directions(strategy, admitter(policy), 10,
                                                         budget_epsilon)
    assert fa_forward <= budget_delta and fa_backward <= budget_delta

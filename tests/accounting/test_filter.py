"""Privacy filter: refuses over-budget events and leaves its state unchanged."""

import threading

import pytest

from privloss import (BoundedRange, BudgetExceededError, NonPrivate, PrivacyFilter, PureDP,
                      UnsupportedEventError, ZCDP, compose)
from privloss.events import Event


def test_accepts_until_the_budget_and_refuses_after():
    privacy_filter = PrivacyFilter(1.0, 1e-6)
    accepted = 0
    while True:
        try:
            privacy_filter.spend(PureDP(0.125))
        except BudgetExceededError as error:
            assert "budget" in str(error) and "remaining" in str(error)
            break
        accepted += 1
    # basic composition allows 8 (0.125 is exact in binary; budgets compare exactly)
    assert accepted >= 8
    spent = privacy_filter.spent()
    assert spent.value <= 1.0 * (1 + 1e-9)
    assert compose([PureDP(0.125, count=accepted + 1)], target_delta=1e-6).epsilon > 1.0


def test_refused_event_leaves_the_filter_unchanged():
    privacy_filter = PrivacyFilter(0.5, 0.0)
    privacy_filter.spend(PureDP(0.3))
    before = (privacy_filter.profile, privacy_filter.spent().value)
    for bad in (PureDP(0.3), NonPrivate(), ZCDP(0.01)):       # zCDP cannot meet delta = 0
        with pytest.raises(BudgetExceededError):
            privacy_filter.spend(bad)
    with pytest.raises(UnsupportedEventError):
        privacy_filter.spend(Event())
    assert (privacy_filter.profile, privacy_filter.spent().value) == before
    assert privacy_filter.can_spend(PureDP(0.2))
    assert not privacy_filter.can_spend(PureDP(0.21))


def test_budget_validation():
    with pytest.raises(ValueError, match="delta"):
        PrivacyFilter(1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyFilter(-1.0, 0.0)
    with pytest.raises(ValueError, match="interaction"):
        PrivacyFilter(1.0, 0.0, interaction="sometimes")


def test_threads_never_overspend():
    privacy_filter = PrivacyFilter(1.0, 0.0)      # delta = 0: exactly 8 of 0.125 fit
    successes = []

    def worker():
        for _ in range(5):
            try:
                privacy_filter.spend(BoundedRange(0.125))
                successes.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(successes) == 8
    assert privacy_filter.spent().value <= 1.0


# ---------------------------------------------------------------------------
# issue 11: fully-adaptive default, one release per spend, preregistered plans
# ---------------------------------------------------------------------------

import json  # noqa: E402

from privloss.accounting import PlanMismatchError  # noqa: E402
from privloss.accounting.fully_adaptive import FilterPolicy, default_policy  # noqa: E402
from privloss.events import ApproxDP, Gaussian, Laplace  # noqa: E402


def test_default_is_fully_adaptive_with_the_default_policy():
    privacy_filter = PrivacyFilter(1.0, 1e-6)
    assert privacy_filter.interaction.value == "fully-adaptive"
    assert privacy_filter.policy == default_policy(1.0, 1e-6)
    result = privacy_filter.spend([BoundedRange(0.1, count=3), PureDP(0.2)])   # one release
    assert len(privacy_filter.guarantees) == 1 and result.bound == "basic"
    assert result.epsilon == pytest.approx(0.5)
    assert "fully-adaptive" in repr(privacy_filter) and "releases=1" in repr(privacy_filter)
    assert repr(result).startswith("AccountingResult(epsilon=0.5")


def test_fully_adaptive_refusal_names_the_delta_constraint_and_keeps_state():
    privacy_filter = PrivacyFilter(1.0, 1e-6)
    for _ in range(3):
        privacy_filter.spend(ApproxDP(0.01, 2.5e-7))
    before = (privacy_filter.guarantees, privacy_filter.profile)
    with pytest.raises(BudgetExceededError, match="4 releases of delta 2.5e-07 reach 1e-06"):
        privacy_filter.spend(ApproxDP(0.01, 2.5e-7))
    assert (privacy_filter.guarantees, privacy_filter.profile) == before
    assert not privacy_filter.can_spend(ApproxDP(0.01, 2.5e-7))
    assert privacy_filter.can_spend(PureDP(0.5))


def test_custom_policy_must_match_the_budget():
    policy = FilterPolicy(1.0, 1e-6, ("zcdp",), (1e-6,))
    privacy_filter = PrivacyFilter(1.0, 1e-6, policy=policy)
    privacy_filter.spend(Gaussian(20.0))
    assert privacy_filter.spent().bound == "zcdp"
    with pytest.raises(ValueError, match="differs"):
        PrivacyFilter(2.0, 1e-6, policy=policy)
    with pytest.raises(ValueError, match="plan is only"):
        PrivacyFilter(1.0, 1e-6, plan=[[PureDP(0.1)]])


def test_adaptive_and_setwise_need_a_plan():
    for model in ("adaptive", "setwise"):
        with pytest.raises(ValueError, match="needs a preregistered plan"):
            PrivacyFilter(1.0, 1e-6, interaction=model)
    PrivacyFilter(1.0, 1e-6, interaction="non-adaptive")      # unchanged behaviour


def test_plan_that_does_not_fit_is_refused_with_the_excess():
    plan = [[PureDP(0.5)], [PureDP(0.5)], [PureDP(0.5)]]
    with pytest.raises(ValueError, match=r"over the budget epsilon 1 by 0\.\d+"):
        PrivacyFilter(1.0, 1e-6, interaction="adaptive", plan=plan)


def test_adaptive_plan_in_order_and_mismatch_names_the_item():
    plan = [[BoundedRange(0.1, count=10)], [Laplace(20.0)], [BoundedRange(0.1, count=10)]]
    privacy_filter = PrivacyFilter(2.1, 1e-6, interaction="adaptive", plan=plan)
    privacy_filter.spend(BoundedRange(0.1, count=10))
    before = privacy_filter.profile
    with pytest.raises(PlanMismatchError, match=r"plan item #2 \[Laplace"):
        privacy_filter.spend(BoundedRange(0.1, count=10))
    assert privacy_filter.profile == before
    privacy_filter.spend(Laplace(20.0))
    privacy_filter.spend([BoundedRange(0.1)] * 10)            # same release, other spelling
    with pytest.raises(PlanMismatchError, match="all used"):
        privacy_filter.spend(PureDP(0.01))
    assert [used for _, used in privacy_filter.plan] == [True, True, True]
    assert "plan=3/3 used" in repr(privacy_filter)


def test_setwise_plan_any_unused_item():
    plan = [[PureDP(0.2)], [PureDP(0.3)], [PureDP(0.2)]]
    privacy_filter = PrivacyFilter(1.0, 0.0, interaction="setwise", plan=plan)
    privacy_filter.spend(PureDP(0.3))
    privacy_filter.spend(PureDP(0.2))
    with pytest.raises(PlanMismatchError, match=r"one of: #3 \[PureDP"):
        privacy_filter.spend(PureDP(0.3))
    assert privacy_filter.can_spend(PureDP(0.2)) and not privacy_filter.can_spend(PureDP(0.3))
    privacy_filter.spend(PureDP(0.2))
    assert privacy_filter.spent().value == pytest.approx(0.7)


def test_plan_threads_get_exactly_the_planned_releases():
    plan = [[PureDP(0.125)]] * 8
    privacy_filter = PrivacyFilter(1.0, 0.0, interaction="setwise", plan=plan)
    successes = []

    def worker():
        for _ in range(3):
            try:
                privacy_filter.spend(PureDP(0.125))
                successes.append(1)
            except PlanMismatchError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(successes) == 8


def test_status_is_json_ready():
    privacy_filter = PrivacyFilter(1.0, 1e-6)
    privacy_filter.spend(PureDP(0.1))
    status = privacy_filter.status(PureDP(0.2))
    assert status.admitted and json.dumps(status.to_dict(), allow_nan=False)


def test_a_release_mixing_neighbouring_relations_leaves_the_filter_unchanged():
    """Validation happens before any state change (found in review: the guarantee
    was appended before the profile check refused the mixed relations)."""
    from privloss.events import Gaussian, PoissonSampled, SampledWithoutReplacement
    budget = PrivacyFilter(10.0, 1e-6)
    budget.spend(PoissonSampled(Gaussian(2.0), 0.1))
    before = (budget.spent(), budget.profile)
    with pytest.raises(ValueError, match="relation"):
        budget.spend(SampledWithoutReplacement(Gaussian(2.0), 10, 100))
    assert (budget.spent(), budget.profile) == before

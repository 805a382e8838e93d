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
            privacy_filter.spend(PureDP(0.1))
        except BudgetExceededError as error:
            assert "budget" in str(error) and "remaining" in str(error)
            break
        accepted += 1
    # basic composition allows 10, the optimal bound at 1e-6 allows more
    assert accepted >= 10
    spent = privacy_filter.spent()
    assert spent.value <= 1.0
    assert compose([PureDP(0.1, count=accepted + 1)], target_delta=1e-6).epsilon > 1.0


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
    privacy_filter = PrivacyFilter(1.0, 0.0)      # delta = 0: exactly 10 of 0.1 fit
    successes = []

    def worker():
        for _ in range(5):
            try:
                privacy_filter.spend(BoundedRange(0.1))
                successes.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(successes) == 10
    assert privacy_filter.spent().value <= 1.0 + 1e-9

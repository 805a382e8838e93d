"""Group privacy and parallel composition as events: identities, closed forms, errors,
the accountant, the filter and the ledger's JSON form."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss import PrivacyAccountant, PrivacyFilter, compose
from privloss.accounting.profile import Profile, dominating_branch, flatten
from privloss.serialize import events_from_text, events_to_text
from privloss.events import (ApproxDP, ApproxZCDP, BoundedRange, Composed, ConcentratedDP,
                             Gaussian, Group, Laplace, NonPrivate, Parallel, PoissonSampled,
                             PureDP, RandomizedResponse, SampledWithoutReplacement, ZCDP,
                             group_guarantee)


# ---------------------------------------------------------------------------
# Group
# ---------------------------------------------------------------------------

def test_group_of_one_is_the_event():
    for event in (PureDP(0.3), BoundedRange(0.2, count=3), ApproxDP(0.5, 1e-6), ZCDP(0.1),
                  Gaussian(2.0), Laplace(3.0)):
        assert group_guarantee(event, 1) == event
        assert compose([Group(event, 1)], target_delta=1e-6).epsilon == \
            compose([event], target_delta=1e-6).epsilon


def test_group_closed_forms():
    assert group_guarantee(PureDP(0.1, count=4), 3) == PureDP(0.1 * 3, count=4)
    approx = group_guarantee(ApproxDP(0.5, 1e-6), 4)
    assert approx.epsilon == 2.0
    assert approx.delta == pytest.approx(4 * math.exp(3 * 0.5) * 1e-6, rel=1e-14)
    assert group_guarantee(ApproxDP(5.0, 0.1), 10) == NonPrivate()         # delta >= 1
    assert group_guarantee(BoundedRange(0.2), 3) == BoundedRange(0.2 * 3)
    assert group_guarantee(ZCDP(0.05), 3).rho == pytest.approx(0.45, rel=1e-15)
    assert group_guarantee(ConcentratedDP(0.5, 1.0), 2) == ZCDP(2.0)         # tau^2/2 = 0.5; x4
    assert group_guarantee(Gaussian(2.0, sensitivity=1.5), 3) == Gaussian(2.0, sensitivity=4.5)
    assert group_guarantee(RandomizedResponse(0.4), 2) == PureDP(0.8)
    assert group_guarantee(Group(PureDP(0.1), 2), 3) == PureDP(0.1 * 6)
    nested = group_guarantee(Composed((PureDP(0.1), ZCDP(0.01))), 2)
    assert nested == Composed((PureDP(0.2), ZCDP(0.04)))


def test_group_of_gaussian_is_k_mu_gdp():
    grouped = compose([Group(Gaussian(1.0), 5)], target_delta=1e-6)
    assert grouped.bound == "gaussian-dp"
    assert grouped.epsilon == compose([Gaussian(0.2)], target_delta=1e-6).epsilon


def test_group_of_subsampled_uses_its_amplified_guarantee():
    event = PoissonSampled(Laplace(1.0), 0.1)
    assert group_guarantee(event, 2) == PureDP(2 * event.guarantee.epsilon)


@pytest.mark.parametrize("build, name", [
    (lambda: Group(PureDP(0.1), 0), "size"),
    (lambda: Group(PureDP(0.1), 1.5), "size"),
    (lambda: Group(PureDP(0.1), True), "size"),
    (lambda: Group("PureDP", 2), "event"),
    (lambda: Group(ZCDP(0.1, xi=0.1), 2), "xi"),
    (lambda: Group(ApproxZCDP(0.1, 1e-6), 2), "ApproxZCDP"),
    (lambda: Parallel([]), "events"),
    (lambda: Parallel([PureDP(0.1), "x"]), r"events\[1\]"),
])
def test_bad_input_names_the_parameter(build, name):
    with pytest.raises((ValueError, TypeError), match=name):
        build()


# ---------------------------------------------------------------------------
# Parallel
# ---------------------------------------------------------------------------

def test_parallel_of_one_event_is_the_event():
    for event in (PureDP(0.3, count=3), Composed((PureDP(0.1), BoundedRange(0.2))), ZCDP(0.1),
                  Gaussian(2.0, count=5), Laplace(3.0)):
        assert flatten(Parallel([event])) == flatten(event)
        assert compose([Parallel([event])], target_delta=1e-6).epsilon == \
            compose([event], target_delta=1e-6).epsilon


def test_parallel_costs_the_worst_branch():
    parallel = compose([Parallel([PureDP(0.1, count=5), PureDP(0.3, count=5), PureDP(0.2, count=5)])],
                       target_delta=1e-6)
    worst = compose([PureDP(0.3, count=5)], target_delta=1e-6)
    assert parallel.epsilon == worst.epsilon
    laplaces = flatten(Parallel([Laplace(2.0), Laplace(1.0, sensitivity=0.25)]))
    assert laplaces == ((Laplace(1.0, sensitivity=0.5), 1),)


def test_parallel_of_different_kinds_uses_a_common_currency():
    # pure branches: PureDP(max over branches of the sum of epsilons)
    atoms = dominating_branch([flatten(PureDP(0.1, count=3)), flatten(BoundedRange(0.5))])
    assert len(atoms) == 1 and atoms[0][0].epsilon == pytest.approx(0.5, rel=1e-14)
    # otherwise: (approximate) zCDP readings, maxima
    atoms = dominating_branch([flatten(PureDP(1.0)), flatten(ZCDP(0.3)),
                               flatten(ApproxDP(0.1, 1e-7))])
    (event, count), = atoms
    assert isinstance(event, ApproxZCDP) and count == 1
    assert event.rho == pytest.approx(0.5, rel=1e-14) and event.delta == pytest.approx(1e-7)
    assert dominating_branch([flatten(PureDP(1.0)), flatten(NonPrivate())])[0][0] == NonPrivate()


def test_parallel_refuses_replace_one_branches():
    with pytest.raises(ValueError, match="events"):
        flatten(Parallel([SampledWithoutReplacement(Gaussian(1.0), 1, 10), PureDP(0.1)]))


@settings(max_examples=25, deadline=None)
@given(epsilons=st.lists(st.floats(0.01, 2.0), min_size=1, max_size=4),
       count=st.integers(1, 5), delta=st.sampled_from([1e-9, 1e-6, 1e-3]))
def test_parallel_is_between_the_worst_branch_and_the_composition(epsilons, count, delta):
    branches = [PureDP(e, count=count) for e in epsilons]
    parallel = compose([Parallel(branches)], target_delta=delta).epsilon
    worst = compose([PureDP(max(epsilons), count=count)], target_delta=delta).epsilon
    sequential = compose(branches, target_delta=delta).epsilon
    assert parallel == worst
    assert parallel <= sequential * (1 + 1e-12)


# ---------------------------------------------------------------------------
# accountant, filter, ledger
# ---------------------------------------------------------------------------

def test_accountant_and_filter_use_group_and_parallel():
    accountant = PrivacyAccountant(interaction="adaptive")
    accountant.compose(Group(PureDP(0.1), 2), count=3)
    accountant.compose(Parallel([PureDP(0.2), PureDP(0.1)]))
    assert accountant.epsilon(0.0).value == pytest.approx(0.8, rel=1e-12)
    plan = [Group(PureDP(0.1), 2), Parallel([PureDP(0.2), PureDP(0.1)])]
    budget = PrivacyFilter(epsilon=0.4 + 1e-9, delta=0.0, interaction="adaptive", plan=plan)
    budget.spend(plan[0])
    assert budget.spend(plan[1]).value == pytest.approx(0.4, rel=1e-12)
    profile = Profile.of(plan)
    assert profile.size == 2


def test_events_round_trip_through_the_ledger_json():
    events = (Parallel([Group(PoissonSampled(Gaussian(1.5), 0.01, count=3), 2), PureDP(0.1)]),
              Group(Composed((PureDP(0.1), ZCDP(0.01))), 3),
              SampledWithoutReplacement(Laplace(2.0), 5, 100, count=2))
    assert events_from_text(events_to_text(events)) == events

"""The accountant: contract tests shared by every interaction, and its choices."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss import (ApproxDP, ApproxZCDP, BoundedRange, Composed, ConcentratedDP, Interaction,
                      NonPrivate, NoOp, PrivacyAccountant, PureDP, UnsupportedEventError, ZCDP, compose)
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.events import Event


class UnknownEvent(Event):
    pass


class AccountantContract:
    """Behaviour every accountant configuration must have."""

    interaction: Interaction

    def make(self, events=()):
        return PrivacyAccountant(events, interaction=self.interaction)

    def test_empty_costs_nothing(self):
        accountant = self.make()
        assert accountant.get_epsilon(1e-6) == 0.0
        assert accountant.get_delta(0.0) == 0.0
        assert accountant.epsilon(1e-6).bound == "empty"

    def test_noop_costs_nothing(self):
        assert self.make([NoOp(), NoOp()]).get_epsilon(1e-6) == 0.0

    def test_zero_epsilon_costs_nothing(self):
        assert self.make([PureDP(0.0, count=5)]).get_epsilon(1e-6) == 0.0

    def test_non_private_is_infinite(self):
        accountant = self.make([PureDP(0.1), NonPrivate()])
        assert accountant.get_epsilon(1e-6) == math.inf
        assert accountant.get_delta(5.0) == 1.0

    def test_unknown_event_is_refused_without_state_change(self):
        accountant = self.make([PureDP(0.1)])
        before = accountant.get_epsilon(1e-6)
        with pytest.raises(UnsupportedEventError, match="event must be one of"):
            accountant.compose(UnknownEvent())
        with pytest.raises(UnsupportedEventError):
            accountant.compose(Composed((PureDP(0.2), UnknownEvent())))
        assert accountant.get_epsilon(1e-6) == before
        assert accountant.profile.size == 1

    def test_invalid_events_are_refused_at_construction(self):
        for bad in (lambda: PureDP(-0.1), lambda: PureDP(math.nan), lambda: BoundedRange(math.inf),
                    lambda: ApproxDP(0.1, 1.0), lambda: ZCDP(-1.0), lambda: PureDP(0.1, count=0)):
            with pytest.raises(ValueError):
                bad()

    def test_invalid_targets(self):
        accountant = self.make([PureDP(0.1)])
        with pytest.raises(ValueError, match="target_delta"):
            accountant.epsilon(1.5)
        with pytest.raises(ValueError, match="target_epsilon"):
            accountant.delta(-1.0)

    def test_count_equals_repeated_events(self):
        many = self.make([PureDP(0.1)] * 6 + [BoundedRange(0.2)] * 2).get_epsilon(1e-5)
        counted = self.make([PureDP(0.1, count=6), BoundedRange(0.2, count=2)]).get_epsilon(1e-5)
        composed = self.make([PureDP(0.1) * 6, Composed((BoundedRange(0.2),)) * 2]).get_epsilon(1e-5)
        assert many == pytest.approx(counted, rel=1e-9) == pytest.approx(composed, rel=1e-9)

    def test_more_mechanisms_never_cost_less(self):
        base = [PureDP(0.1, count=5), BoundedRange(0.1, count=4), ZCDP(0.01)]
        value = self.make(base).get_epsilon(1e-6)
        for extra in (PureDP(0.05), BoundedRange(0.3), ZCDP(0.001), ConcentratedDP(0.005, 0.1)):
            assert self.make(base + [extra]).get_epsilon(1e-6) >= value * (1 - 1e-9)

    def test_result_is_the_minimum_of_applicable_bounds(self):
        result = self.make([PureDP(0.1, count=20), BoundedRange(0.1, count=20)]).epsilon(1e-6)
        applicable = [row.value for row in result.bounds if row.applies]
        assert result.value == min(applicable)
        for row in result.bounds:
            assert row.applies == (row.value is not None)
            assert row.reason

    def test_never_below_the_optimal_dp_value(self):
        # BR mechanisms are DP, so the optimum for all-DP of the same count bounds nothing
        # from below; but pure-DP mechanisms alone: the accountant equals Theorem 1
        assert self.make([PureDP(0.1, count=50)]).get_epsilon(1e-6) == \
            pytest.approx(optimal_dp_epsilon(50, 0.1, 1e-6), rel=1e-9)

    def test_delta_and_epsilon_agree(self):
        accountant = self.make([PureDP(0.2, count=10), BoundedRange(0.2, count=10)])
        epsilon = accountant.get_epsilon(1e-5)
        assert accountant.get_delta(epsilon) <= 1e-5 * (1 + 1e-6)


class TestAdaptive(AccountantContract):
    interaction = Interaction.ADAPTIVE


class TestNonAdaptive(AccountantContract):
    interaction = Interaction.NON_ADAPTIVE


class TestSetwise(AccountantContract):
    interaction = Interaction.SETWISE


def test_worked_choices():
    # 100 BR(0.1) at 1e-6: non-adaptive -> Theorem 2 (2.246026212456, worked_values §2)
    non_adaptive = compose([BoundedRange(0.1, count=100)], target_delta=1e-6, interaction="non-adaptive")
    assert non_adaptive.bound == "optimal-br-nonadaptive"
    assert non_adaptive.epsilon == pytest.approx(2.246026212456, rel=1e-9)
    # adaptive: never below the non-adaptive optimum, and below the zCDP route (2.4190931769)
    adaptive = compose([BoundedRange(0.1, count=100)], target_delta=1e-6)
    assert non_adaptive.epsilon < adaptive.epsilon < 2.4190931769
    # mixed non-adaptive (Theorem 3): worked_values §3
    mixed = compose([PureDP(0.1, count=5), BoundedRange(0.1, count=5)], target_delta=1e-6,
                    interaction="non-adaptive")
    assert mixed.bound == "optimal-mixed"
    assert mixed.epsilon == pytest.approx(0.853656441642, rel=1e-9)


def test_interaction_ordering():
    events = [PureDP(0.1, count=30), BoundedRange(0.1, count=30)]
    values = {i: compose(events, target_delta=1e-6, interaction=i).epsilon for i in Interaction}
    assert values[Interaction.NON_ADAPTIVE] <= values[Interaction.ADAPTIVE] * (1 + 1e-12)
    assert values[Interaction.ADAPTIVE] <= values[Interaction.SETWISE] * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(num_dp=st.integers(0, 12), num_br=st.integers(1, 12), epsilon=st.floats(0.01, 2.0),
       delta=st.floats(1e-10, 0.1))
def test_non_adaptive_never_above_adaptive_never_above_setwise(num_dp, num_br, epsilon, delta):
    events = ([PureDP(epsilon, count=num_dp)] if num_dp else []) + [BoundedRange(epsilon, count=num_br)]
    values = [compose(events, target_delta=delta, interaction=i).epsilon
              for i in (Interaction.NON_ADAPTIVE, Interaction.ADAPTIVE, Interaction.SETWISE)]
    assert values[0] <= values[1] * (1 + 1e-9) + 1e-12
    assert values[1] <= values[2] * (1 + 1e-9) + 1e-12


def test_mixed_with_gaussians_and_approx():
    events = [PureDP(0.1, count=5), BoundedRange(0.1, count=5), ConcentratedDP(0.005, 0.1, count=2)]
    result = compose(events, target_delta=1e-6)
    assert result.epsilon <= 1.5510492501 * (1 + 1e-9)       # eq. (3) value, worked_values §8
    approx = compose([ApproxDP(0.1, 1e-7, count=3)], target_delta=1e-6)
    assert approx.bound in {"optimal-dp", "basic"}
    assert compose([ApproxZCDP(0.1, 1e-6)], target_delta=1e-6).epsilon == math.inf


def test_json_shape():
    payload = compose([PureDP(0.1, count=3)], target_delta=1e-6).to_dict()
    assert set(payload) == {"target_delta", "epsilon", "bound", "bounds"}
    assert {"name", "epsilon", "applies", "reason"} <= set(payload["bounds"][0])
    payload = compose([PureDP(0.1, count=3)], target_epsilon=0.2).to_dict()
    assert set(payload) == {"target_epsilon", "delta", "bound", "bounds"}


def test_compose_requires_one_target():
    with pytest.raises(ValueError, match="exactly one"):
        compose([PureDP(0.1)])


@settings(max_examples=40, deadline=None)
@given(num_dp=st.integers(0, 30), num_br=st.integers(0, 30), epsilon=st.floats(0.01, 1.0),
       delta=st.floats(1e-10, 0.1), interaction=st.sampled_from(list(Interaction)))
def test_monotone_in_epsilon_and_count(num_dp, num_br, epsilon, delta, interaction):
    if num_dp + num_br == 0:
        return
    def value(n_dp, n_br, eps):
        events = [PureDP(eps, count=n_dp)] if n_dp else []
        events += [BoundedRange(eps, count=n_br)] if n_br else []
        return compose(events, target_delta=delta, interaction=interaction).epsilon
    base = value(num_dp, num_br, epsilon)
    assert value(num_dp, num_br, epsilon * 1.2) >= base * (1 - 1e-9)
    assert value(num_dp + 1, num_br, epsilon) >= base * (1 - 1e-9)
    assert value(num_dp, num_br + 1, epsilon) >= base * (1 - 1e-9)


def test_profile_counts_by_type_equal_isinstance_counts():
    from privloss.accounting.profile import Profile
    from privloss.events import ApproxDP, BoundedRange, PureDP

    atoms = ((PureDP(0.1), 3), (BoundedRange(0.2), 2), (ApproxDP(0.3, 1e-6), 4), (PureDP(0.5), 1))
    profile = Profile(atoms)
    for kinds in [(PureDP,), (BoundedRange,), (ApproxDP,), (PureDP, BoundedRange),
                  (PureDP, BoundedRange, ApproxDP)]:
        assert profile.count(*kinds) == sum(n for event, n in profile.generic_atoms
                                            if isinstance(event, kinds))
    assert profile.size == 10

"""Filter rules, release guarantees and policies (privloss.accounting.fully_adaptive)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.accounting import compose
from privloss.accounting.fully_adaptive import (RENYI_ORDERS, FilterPolicy, FilterStatus,
                                                ReleaseGuarantee, check, default_policy,
                                                release_guarantee)
from privloss.accounting.fully_adaptive.filters import zcdp_order
from privloss.bounds.rdp import br_renyi, dp_renyi
from privloss.bounds.zcdp import zcdp_epsilon_tight, zcdp_rho_for
from privloss.events import (ApproxDP, ApproxZCDP, BoundedRange, Composed, DiscreteGaussian,
                             Gaussian, Laplace, NonPrivate, NoOp, PureDP, ZCDP)


# --------------------------------------------------------------------------
# release guarantees
# --------------------------------------------------------------------------

def test_pure_release_currencies():
    guarantee = release_guarantee([BoundedRange(0.1, count=10), Laplace(20.0)])
    assert guarantee.delta == 0 and guarantee.pure_epsilon == pytest.approx(1.05, rel=1e-15)
    assert guarantee.rho == pytest.approx(10 * 0.01 / 8 + 0.05 ** 2 / 2, rel=1e-11)
    for order, value in zip(RENYI_ORDERS, guarantee.renyi):
        exact = 10 * br_renyi(0.1, order) + dp_renyi(0.05, order)
        assert value == pytest.approx(min(exact, order * guarantee.rho), rel=1e-11)
        assert value >= exact * (1 - 1e-15)
    assert math.isinf(guarantee.gdp_mu)


def test_approximate_release_is_conditioned_once():
    guarantee = release_guarantee([ApproxDP(0.2, 1e-7), ApproxZCDP(0.01, 2e-7), PureDP(0.1)])
    assert guarantee.delta == pytest.approx(3e-7, rel=1e-12)
    assert math.isinf(guarantee.epsilon) and math.isinf(guarantee.pure_epsilon)   # zCDP atom
    assert guarantee.rho == pytest.approx(0.02 + 0.01 + 0.005, rel=1e-11)
    only_dp = release_guarantee([ApproxDP(0.2, 1e-7), PureDP(0.1)])
    assert only_dp.epsilon == pytest.approx(0.3, rel=1e-15) and only_dp.delta == pytest.approx(1e-7)
    assert math.isinf(only_dp.pure_epsilon)


def test_gaussian_release_and_degenerate_releases():
    gaussian = release_guarantee([Gaussian(2.0), Gaussian(4.0, sensitivity=2.0)])
    assert gaussian.gdp_mu == pytest.approx(math.sqrt(0.5), rel=1e-11)
    assert gaussian.rho == pytest.approx(0.25, rel=1e-11) and math.isinf(gaussian.epsilon)
    assert math.isinf(release_guarantee(DiscreteGaussian(2.0)).gdp_mu)     # not exactly GDP
    assert release_guarantee(NoOp()) == ReleaseGuarantee.zero()
    assert release_guarantee([PureDP(0.1), NonPrivate()]) == ReleaseGuarantee.non_private()
    assert release_guarantee(Composed((PureDP(0.1),) * 3)) == release_guarantee([PureDP(0.1)] * 3)


def test_guarantee_json_round_trip_is_strict_json():
    for events in ([PureDP(0.1)], [Gaussian(1.0)], [ApproxDP(1.0, 1e-9)], [NonPrivate()]):
        guarantee = release_guarantee(events)
        text = json.dumps(guarantee.to_dict(), allow_nan=False)
        assert ReleaseGuarantee.from_dict(json.loads(text)) == guarantee
    with pytest.raises(ValueError, match="delta"):
        ReleaseGuarantee(epsilon=1.0, delta=2.0)
    with pytest.raises(ValueError, match="missing delta"):
        ReleaseGuarantee.from_dict({"epsilon": 0.1, "rho": 0.005, "xi": 0.0})
    with pytest.raises(ValueError, match="renyi"):
        ReleaseGuarantee(renyi=(1.0,))
    # stored with other orders: the Renyi currency is dropped (safe), the rest kept
    data = release_guarantee([PureDP(0.1)]).to_dict()
    data["renyi_orders"] = [2.0] * len(RENYI_ORDERS)
    assert all(math.isinf(v) for v in ReleaseGuarantee.from_dict(data).renyi)


# --------------------------------------------------------------------------
# policies
# --------------------------------------------------------------------------

def test_policy_validation_and_round_trip():
    policy = default_policy(1.0, 1e-6)
    assert policy.rules == ("basic", "zcdp", "renyi") and policy.delta_shares == (0.0, 5e-8, 5e-8)
    assert len(policy.renyi_orders) == 4 and set(policy.renyi_orders) <= set(RENYI_ORDERS)
    assert FilterPolicy.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy
    assert default_policy(1.0, 0.0).rules == ("basic",)
    with pytest.raises(ValueError, match="unknown filter rule 'magic'"):
        FilterPolicy(1.0, 1e-6, ("magic",), (0.0,))
    with pytest.raises(ValueError, match="positive share"):
        FilterPolicy(1.0, 1e-6, ("renyi",), (0.0,))
    with pytest.raises(ValueError, match="more than delta"):
        FilterPolicy(1.0, 1e-6, ("zcdp", "renyi"), (1e-6, 1e-6))
    with pytest.raises(ValueError, match="one share per rule"):
        FilterPolicy(1.0, 1e-6, ("basic", "renyi"), (0.0,))
    with pytest.raises(ValueError, match="epsilon"):
        default_policy(-1.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        default_policy(1.0, 1.0)
    with pytest.raises(ValueError, match="renyi_orders"):
        FilterPolicy(1.0, 1e-6, ("renyi",), (1e-7,), (2.2,))


# --------------------------------------------------------------------------
# the rules' arithmetic
# --------------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, share", [(1.0, 1e-7), (0.1, 1e-9), (10.0, 1e-3), (50.0, 0.1)])
def test_zcdp_order_meets_the_budget_exactly(epsilon, share):
    alpha, rho = zcdp_order(epsilon, share)
    log_inv = -math.log(share)
    assert alpha * rho + log_inv / (alpha - 1) == pytest.approx(epsilon, rel=1e-12)
    assert rho + 2 * math.sqrt(rho * log_inv) == pytest.approx(epsilon, rel=1e-12)   # [BS16] 1.3
    assert rho <= zcdp_rho_for(epsilon, share) * (1 + 1e-9)     # the tight conversion allows more


def test_advanced_rule_is_whitehouse_boundary():
    # admitted iff sum eps^2 / 2 + sqrt(2 log(1/delta') sum eps^2) <= epsilon
    share = 1e-6
    policy = FilterPolicy(1.0, share, ("advanced",), (share,))
    for eps, count in ((0.05, 40), (0.05, 60), (0.01, 1300), (0.01, 1400), (0.3, 1)):
        squares = count * eps * eps
        whitehouse = squares / 2 + math.sqrt(2 * math.log(1 / share) * squares)
        status = check(policy, [release_guarantee(PureDP(eps))] * count)
        assert status.admitted == (whitehouse <= 1.0)


def test_zcdp_rule_uses_rho_and_bounded_range_counts_an_eighth():
    share = 1e-6
    policy = FilterPolicy(1.0, share, ("zcdp",), (share,))
    rho_budget = zcdp_rho_for(1.0, share)            # the tight conversion's budget
    br = release_guarantee(BoundedRange(0.1))
    n_br = int(rho_budget / (0.01 / 8) * (1 - 1e-9))
    assert check(policy, [br] * n_br).admitted and not check(policy, [br] * (n_br + 2)).admitted
    dp = release_guarantee(PureDP(0.1))
    n_dp = int(rho_budget / (0.01 / 2) * (1 - 1e-9))
    assert check(policy, [dp] * n_dp).admitted and not check(policy, [dp] * (n_dp + 2)).admitted
    gaussian = release_guarantee(Gaussian(20.0))
    assert check(policy, [gaussian] * 10).spent_epsilon == pytest.approx(
        zcdp_epsilon_tight(10 / 800, share), rel=1e-12)
    assert not check(policy, [release_guarantee(ZCDP(0.001, xi=0.01))]).admitted   # xi > 0


def test_renyi_rule_certificate_by_hand():
    # each order: sum of curves + (log(k/share) + (a-1) log(1-1/a) - log a)/(a-1) [CKS] Prop. 12
    policy = FilterPolicy(2.0, 1e-6, ("renyi",), (1e-6,), (4.0, 8.0, 16.0))
    guarantees = [release_guarantee(BoundedRange(0.1))] * 30 + [release_guarantee(PureDP(0.2))] * 5
    status = check(policy, guarantees)
    log_inv = math.log(3 / 1e-6)
    expected = min(30 * br_renyi(0.1, a) + 5 * dp_renyi(0.2, a)
                   + (log_inv + (a - 1) * math.log(1 - 1 / a) - math.log(a)) / (a - 1)
                   for a in (4.0, 8.0, 16.0))
    assert status.spent_epsilon == pytest.approx(expected, rel=1e-9)
    assert status.spent_epsilon >= expected * (1 - 1e-12)


def test_gdp_rule_for_gaussians_only():
    gdp = FilterPolicy(1.0, 1e-6, ("gdp",), (1e-6,))
    guarantees = [release_guarantee(Gaussian(20.0))] * 10
    from privloss.bounds.gaussian_dp import gdp_epsilon
    assert check(gdp, guarantees).spent_epsilon == pytest.approx(gdp_epsilon(math.sqrt(10) / 20, 1e-6))
    tight = FilterPolicy(1.0, 1e-6, ("zcdp",), (1e-6,))
    assert check(gdp, guarantees).spent_epsilon < check(tight, guarantees).spent_epsilon
    refused = check(gdp, guarantees + [release_guarantee(Laplace(1.0))])
    assert not refused.admitted and "Gaussian" in refused.message
    # combined with basic, the Laplace release is admitted by basic alone only if it fits
    both = FilterPolicy(1.0, 1e-6, ("basic", "gdp"), (0.0, 5e-7))
    assert check(both, guarantees).rule == "gdp"
    assert check(both, [release_guarantee(Laplace(2.0))]).rule == "basic"


def test_union_names_the_binding_rule_and_charges_all_shares():
    policy = default_policy(1.0, 1e-6)
    few = check(policy, [release_guarantee(PureDP(0.3))] * 3)
    assert few.admitted and few.rule == "basic" and few.spent_delta == pytest.approx(1e-7)
    many = check(policy, [release_guarantee(BoundedRange(0.01))] * 500)
    assert many.admitted and many.rule == "zcdp" and many.spent_epsilon < 1.0 < 500 * 0.01
    names = [row[0] for row in many.rows]
    assert names == ["basic", "zcdp", "renyi"] and isinstance(many, FilterStatus)
    json.dumps(many.to_dict(), allow_nan=False)


def test_refusal_names_the_binding_delta_constraint():
    status = check(default_policy(1.0, 1e-6), [release_guarantee(ApproxDP(0.01, 2.5e-7))] * 4)
    assert not status.admitted and status.rule == "delta-cap"
    assert "4 releases of delta 2.5e-07 reach 1e-06" in status.message
    assert "reserved" in status.message
    basic_only = FilterPolicy(1.0, 1e-6, ("basic",), (0.0,))
    assert check(basic_only, [release_guarantee(ApproxDP(0.01, 2.5e-7))] * 4).admitted
    over = check(basic_only, [release_guarantee(PureDP(0.3))] * 4)
    assert not over.admitted and over.rule == "basic"
    assert "sum of epsilons 1.2: certifies epsilon 1.2 > budget 1" in over.message


def test_empty_history_and_non_private_release():
    policy = default_policy(1.0, 1e-6)
    assert check(policy, []).admitted and check(policy, []).spent_epsilon == 0.0
    status = check(policy, [release_guarantee(NonPrivate())])
    assert not status.admitted and math.isinf(status.spent_epsilon)
    with pytest.raises(TypeError, match="ReleaseGuarantee"):
        check(policy, [PureDP(0.1)])


# --------------------------------------------------------------------------
# (c) ordering of the models on fixed sequences
# --------------------------------------------------------------------------

EVENTS = st.one_of(
    st.builds(PureDP, st.sampled_from([0.05, 0.1, 0.3, 1.0]), count=st.integers(1, 4)),
    st.builds(BoundedRange, st.sampled_from([0.05, 0.1, 0.5]), count=st.integers(1, 4)),
    st.builds(ApproxDP, st.sampled_from([0.1, 0.5]), st.sampled_from([1e-8, 1e-7]),
              count=st.integers(1, 3)),
    st.builds(Gaussian, st.sampled_from([2.0, 5.0, 20.0])),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(EVENTS, min_size=1, max_size=4), st.sampled_from([1e-6, 1e-4]))
def test_fully_adaptive_never_below_adaptive_never_below_non_adaptive(events, delta):
    values = {model: compose(events, target_delta=delta, interaction=model).epsilon
              for model in ("non-adaptive", "adaptive", "fully-adaptive")}
    assert values["fully-adaptive"] >= values["adaptive"] * (1 - 1e-9)
    assert values["adaptive"] >= values["non-adaptive"] * (1 - 1e-9)
    # the filter's own certificate (each event one release) is a valid bound too
    status = check(default_policy(1.0, delta), [release_guarantee(event) for event in events])
    if status.spent_delta <= delta and math.isfinite(status.spent_epsilon):
        assert status.spent_epsilon >= values["adaptive"] * (1 - 1e-9)


def test_fully_adaptive_accountant_uses_filter_rules_only():
    result = compose([PureDP(0.1, count=20)], target_delta=1e-6, interaction="fully-adaptive")
    applied = {row.name for row in result.bounds if row.applies}
    assert applied <= {"basic", "filter-advanced", "filter-zcdp", "filter-renyi", "gaussian-dp"}
    assert result.bound == "filter-renyi"
    for name in ("zcdp-simple", "zcdp-tight", "rdp-exact"):     # same arithmetic, filter names
        row = next(row for row in result.bounds if row.name == name)
        assert not row.applies
    for name in ("optimal-dp", "kov-advanced", "pld", "setwise-eq3", "adaptive-sequence"):
        row = next(row for row in result.bounds if row.name == name)
        assert not row.applies and "filter" in row.reason
    assert result.bound in applied


def test_table_handles_ten_thousand_releases():
    guarantees = [release_guarantee(BoundedRange(0.001))] * 10_000
    status = check(default_policy(10.0, 1e-6), guarantees)
    assert status.admitted and status.rule == "zcdp"
    assert np.isfinite(status.spent_epsilon)


def test_subsampled_gaussian_release_uses_its_subsampled_renyi_curve():
    from privloss.bounds.subsampled_rdp import subsampled_gaussian_rdp
    from privloss.events import PoissonSampled

    guarantee = release_guarantee(PoissonSampled(Gaussian(1.0), 0.01, count=100))
    expected = 100 * subsampled_gaussian_rdp(0.5, 0.01, kind="poisson", orders=np.array(RENYI_ORDERS))
    assert np.allclose(guarantee.renyi, expected, rtol=1e-11)
    assert all(a >= b * (1 - 1e-15) for a, b in zip(guarantee.renyi, expected))
    unsampled = release_guarantee(Gaussian(1.0, count=100))
    assert all(a <= b for a, b in zip(guarantee.renyi, unsampled.renyi))
    assert guarantee.rho == unsampled.rho          # the zCDP currency is not amplified


def test_worked_example_of_the_docs():
    # docs/accounting.md: ten unknown-gumbel top-10 releases, planned vs fully adaptive
    from privloss.releases.algorithms import ALGORITHMS

    events = ALGORITHMS["unknown-gumbel"].events(epsilon=0.1, delta=1e-7, k=10, l0_sensitivity=1)
    planned = compose(list(events) * 10, target_delta=1e-6, interaction="adaptive")
    status = check(default_policy(1.0, 1e-6), [release_guarantee(events)] * 10)
    assert status.admitted and status.rule == "zcdp"
    assert status.spent_delta == pytest.approx(6e-7, rel=1e-9)
    assert planned.epsilon < status.spent_epsilon < 1.0
    assert planned.epsilon == pytest.approx(0.332, abs=0.01)          # X in the docs
    assert status.spent_epsilon == pytest.approx(0.387, abs=0.005)    # Y in the docs


def test_advanced_filter_candidate_matches_whitehouse_formula():
    result = compose([PureDP(0.05, count=100), ApproxDP(0.05, 1e-7, count=2)], target_delta=1e-6,
                     interaction="fully-adaptive")
    row = next(row for row in result.bounds if row.name == "filter-advanced")
    squares = 102 * 0.05 ** 2
    expected = squares / 2 + math.sqrt(2 * squares * math.log(1 / (1e-6 - 2e-7)))
    assert row.value == pytest.approx(expected, rel=1e-9) and row.value >= expected
    back = compose([PureDP(0.05, count=100), ApproxDP(0.05, 1e-7, count=2)], target_epsilon=row.value,
                   interaction="fully-adaptive")
    advanced = next(r for r in back.bounds if r.name == "filter-advanced")
    assert advanced.value == pytest.approx(1e-6, rel=1e-6) and advanced.value <= 1e-6 * (1 + 1e-9)


def test_declared_mixes_reach_the_issue_23_targets():
    """benchmarks/filters.py tightness: releases admitted per budget against the
    fixed-parameter optimum (562, 1949, 170, 22, from the accountant with the plan
    fixed in advance): >= 0.85 for pure streams, >= 0.99 for Gaussian streams."""
    def admitted(policy, event, high=3000):
        guarantee, low = release_guarantee(event), 0
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if check(policy, [guarantee] * middle).admitted else (low, middle - 1)
        return low

    assert admitted(default_policy(1.0, 1e-6, "pure"), PureDP(0.01)) >= 0.85 * 562
    assert admitted(default_policy(1.0, 1e-6, "pure"), BoundedRange(0.01)) >= 0.85 * 1949
    assert admitted(default_policy(3.0, 1e-6, "pure"), PureDP(0.05)) >= 0.85 * 170
    assert admitted(default_policy(1.0, 1e-6, "gaussian"), Gaussian(20.0)) >= 0.99 * 22
    pure = default_policy(1.0, 1e-6, "pure")
    assert pure.release_delta_cap == 0.0                     # all of delta to the zCDP rule
    refused = check(pure, [release_guarantee(ApproxDP(0.1, 1e-9))])
    assert not refused.admitted and refused.rule == "delta-cap"
    with pytest.raises(ValueError, match="mix must be one of"):
        default_policy(1.0, 1e-6, "exotic")

"""Heterogeneous composition, asymmetric pairs and the bounded-range supremum over t."""

import math

import pytest

from tests.pld._reference import theorem1_exact
from privloss.bounds.optimal_br import theorem2_delta, theorem3_delta
from privloss.pld import (PrivacyLossDistribution, bounded_range_common_t_delta,
                          bounded_range_common_t_epsilon, compose, gaussian_pld,
                          generalized_rr_pld, laplace_pld, pure_dp_pld)


def test_compose_accepts_pairs_lists_and_plds():
    a, b = pure_dp_pld(0.1), pure_dp_pld(0.2)
    one = compose((a, 3), b)
    two = compose([a, a, a, b])
    assert one.delta(0.4).upper == pytest.approx(two.delta(0.4).upper, rel=1e-9)
    assert compose(a).delta(0.05).upper == a.delta(0.05).upper


def test_compose_validates():
    with pytest.raises(ValueError, match="at least one"):
        compose()
    with pytest.raises(TypeError, match=r"items\[1\]"):
        compose(pure_dp_pld(0.1), 0.5)
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        compose((pure_dp_pld(0.1), 0))
    with pytest.raises(ValueError, match="same step"):
        compose(pure_dp_pld(0.1, step=1e-3), pure_dp_pld(0.1, step=1e-2))


def test_heterogeneous_equals_homogeneous_when_equal():
    pld = compose([(pure_dp_pld(0.1), 4), (pure_dp_pld(0.1), 6)])
    truth = theorem1_exact(10, 0.1, 0.3)
    assert pld.delta(0.3).lower <= truth <= pld.delta(0.3).upper


def test_asymmetric_orders_compose_separately():
    """(P1 x P2, Q1 x Q2) and its reverse: RR_{1,0.3} twice has a larger delta in the reverse
    order at eps = 0.2; each order equals the enumeration of the product pair."""
    pld = generalized_rr_pld(1.0, 0.3).self_compose(2)
    q = -math.expm1(0.3 - 1.0) / -math.expm1(-1.0)
    p = math.exp(-0.3) * q
    P = [q * q, q * (1 - q), (1 - q) * q, (1 - q) * (1 - q)]
    Q = [p * p, p * (1 - p), (1 - p) * p, (1 - p) * (1 - p)]

    def stick(a, b, epsilon):
        return sum(max(x - math.exp(epsilon) * y, 0.0) for x, y in zip(a, b))

    profile = dict(pld.delta_profile(0.2))
    assert profile["forward"].lower <= stick(P, Q, 0.2) <= profile["forward"].upper
    assert profile["reverse"].lower <= stick(Q, P, 0.2) <= profile["reverse"].upper
    assert pld.delta(0.2).upper >= max(stick(P, Q, 0.2), stick(Q, P, 0.2))
    # composing with a symmetric mechanism keeps both orders
    mixed = pld.compose(gaussian_pld(3.0))
    assert not mixed.symmetric
    assert pld.reversed().delta_profile(0.2)[0][1] == profile["reverse"]


@pytest.mark.parametrize("k, epsilon, epsilon_g, expected", [
    (2, 1.0, 0.0, 0.288317262369), (2, 1.0, 1.5, 0.0090548323895), (10, 0.1, 0.5, 3.99781340526e-05),
])
def test_common_t_supremum_brackets_theorem_2(k, epsilon, epsilon_g, expected):
    bracket = bounded_range_common_t_delta(epsilon, k, epsilon_g, rounds=8)
    assert bracket.lower <= expected <= bracket.upper
    assert bracket.lower <= theorem2_delta(k, epsilon, epsilon_g) <= bracket.upper * (1 + 1e-11)
    assert bracket.width <= 2e-3 * expected + 1e-9


def test_common_t_supremum_with_pure_dp_companions_is_theorem_3():
    """[CR] Theorem 3 (k = 3, d = 1, eps = 1, eps_g = 0): 0.477448251475 (worked_values §3)."""
    companions = pure_dp_pld(1.0)
    bracket = bounded_range_common_t_delta(1.0, 2, 0.0, others=companions, rounds=8)
    assert bracket.lower <= 0.477448251475 <= bracket.upper
    assert bracket.lower <= theorem3_delta(1, 2, 1.0, 0.0) <= bracket.upper * (1 + 1e-11)


def test_common_t_epsilon_is_below_the_adaptive_envelope():
    from privloss.pld import bounded_range_pld

    common = bounded_range_common_t_epsilon(0.1, 10, 1e-6, rounds=4)
    envelope = bounded_range_pld(0.1).self_compose(10).epsilon(1e-6)
    assert common.lower <= 0.628636838773 <= common.upper          # worked_values §2
    assert common.upper <= envelope.upper


def test_identity_and_repr():
    identity = PrivacyLossDistribution.identity()
    assert identity.delta(0.0).upper < 1e-14
    assert "symmetric" in repr(laplace_pld(1.0))

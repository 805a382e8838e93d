"""Near-lattice epsilons rounded up / down onto a short lattice
(privloss.bounds._heterogeneous_rounded, docs/accounting.md "Near-lattice epsilons").

Soundness: the optimum is non-decreasing in every epsilon_i, so the law rounded up
bounds it from above and the law rounded down from below. Checked against the exact
2^k enumeration, against [CR] Theorem 1 at the smallest / largest epsilon (which
bracket the optimum of nearly equal epsilons the same way), and through compose().
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds import _heterogeneous_rounded as rounded
from privloss.bounds._numeric import exact_rational_sum
from privloss.bounds.heterogeneous_dp import (_delta_bracket, heterogeneous_dp_delta,
                                              heterogeneous_dp_delta_enumerated,
                                              heterogeneous_dp_epsilon)
from privloss.bounds.optimal_dp import optimal_dp_delta, optimal_dp_epsilon


def _bracket(eps, epsilon_g):
    laws = rounded.rounded_lattice_laws(np.asarray(eps, dtype=float), 1e-280)
    assert laws is not None
    return _delta_bracket(laws[0], laws[1], epsilon_g, (0.0, 0.0))


@settings(max_examples=25, deadline=None)
@given(k=st.integers(2, 16), levels=st.lists(st.sampled_from([1, 2, 3, 5]), min_size=1, max_size=3),
       base=st.floats(0.05, 1.0), jitter=st.floats(1e-9, 5e-5), fraction=st.floats(0.0, 1.0),
       seed=st.integers(0, 2 ** 16))
def test_rounded_bracket_contains_the_enumerated_optimum(k, levels, base, jitter, fraction, seed):
    # near-lattice input: multiples of `base` (a few levels), each perturbed upward
    rng = np.random.default_rng(seed)
    eps = base * np.array([levels[i % len(levels)] for i in range(k)], dtype=float)
    eps = eps * (1.0 + jitter * rng.random(k))
    epsilon_g = fraction * float(eps.sum())
    bracket = _bracket(eps, epsilon_g)
    exact = heterogeneous_dp_delta_enumerated(eps, epsilon_g)
    assert bracket.lower <= exact * (1 + 1e-12) + 1e-300
    assert exact <= bracket.upper * (1 + 1e-12) + 1e-300


def test_nearly_equal_epsilons_are_bracketed_by_theorem1_at_the_ends():
    rng = np.random.default_rng(0)
    eps = 0.1 * (1.0 + 1e-6 * rng.random(20_000))
    epsilon_g = 150.0
    bracket = _bracket(eps, epsilon_g)
    low = optimal_dp_delta(eps.size, float(eps.min()), epsilon_g)
    high = optimal_dp_delta(eps.size, float(eps.max()), epsilon_g)
    # the rounded ends are Theorem 1's (one group: a binomial at the max / min epsilon)
    assert bracket.upper == pytest.approx(high, rel=1e-9)
    assert bracket.lower == pytest.approx(low, rel=1e-9)


def test_far_from_a_short_lattice_is_declined():
    eps = np.random.default_rng(1).uniform(0.01, 0.5, 3000)
    assert rounded.rounded_lattice_laws(eps, 1e-280) is None


def test_public_delta_and_epsilon_use_the_rounded_bracket():
    rng = np.random.default_rng(2)
    eps = np.concatenate([0.1 * (1 + 1e-7 * rng.random(1500)), 0.2 * (1 + 1e-7 * rng.random(1500))])
    epsilon_g = 60.0
    bracket = heterogeneous_dp_delta(eps, epsilon_g)
    assert bracket.upper - bracket.lower <= 1e-3 * bracket.upper
    # the optimum lies between the all-at-minimum and all-at-maximum compositions of
    # each level, both computable exactly on the lattice 0.1 * {1, 2}
    low = heterogeneous_dp_delta(np.concatenate([np.full(1500, eps[:1500].min()),
                                                 np.full(1500, eps[1500:].min())]), epsilon_g)
    high = heterogeneous_dp_delta(np.concatenate([np.full(1500, eps[:1500].max()),
                                                  np.full(1500, eps[1500:].max())]), epsilon_g)
    assert low.lower * (1 - 1e-12) <= bracket.lower <= bracket.upper <= high.upper * (1 + 1e-12)
    target = bracket.upper
    inverse = heterogeneous_dp_epsilon(eps, target, tolerance=1e-3)
    assert heterogeneous_dp_delta(eps, inverse.upper).upper <= target * (1 + 1e-9)
    assert inverse.upper - inverse.lower <= max(1e-3, 1e-5 * inverse.upper)


@pytest.mark.slow
def test_compose_at_10_5_nearly_equal_epsilons_is_within_one_percent():
    # the case: 10^5 distinct epsilons within 1e-6 (relative) of 0.1; the
    # optimum lies between Theorem 1 at the smallest and at the largest epsilon
    from privloss import PureDP, compose

    rng = np.random.default_rng(0)
    eps = 0.1 * (1 + 1e-6 * rng.random(10 ** 5))
    events = [PureDP(float(x)) for x in eps]
    epsilon_g = 594.489
    value = compose(events, target_epsilon=epsilon_g).value
    low = optimal_dp_delta(eps.size, float(eps.min()), epsilon_g)
    high = optimal_dp_delta(eps.size, float(eps.max()), epsilon_g)
    assert low <= value <= high * (1 + 1e-9)
    assert value <= 1.01 * low
    epsilon = compose(events, target_delta=1.2e-3).value
    assert optimal_dp_epsilon(eps.size, float(eps.min()), 1.2e-3) <= epsilon
    assert epsilon <= optimal_dp_epsilon(eps.size, float(eps.max()), 1.2e-3) * (1 + 1e-9)


def test_exact_rational_sum_matches_fractions():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.uniform(1e-8, 3.0, 200), [5e-324, 1e300, 0.1, 0.0]])
    counts = rng.integers(1, 10 ** 6, values.size)
    expected = sum((Fraction(float(v)) * int(n) for v, n in zip(values, counts)), Fraction(0))
    assert exact_rational_sum(values, counts) == expected
    assert exact_rational_sum([], []) == 0

"""The anchor chain of privloss.bounds._optimal_br_chain (Theorem 2 at k = 10^5).

Reference: tests/bounds/_optimal_br_reference.py, a frozen copy of optimal_br.py
before the speed-up, which evaluates every candidate by a certified window sum.
The chain must agree with it to 1e-12 relative (deltas) and to the inversion
tolerance (epsilons), and stay a valid upper bound however few anchors it uses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds import _optimal_br_chain, optimal_br
from tests.bounds import _optimal_br_reference as reference

def _ends_only(forward, backward):
    """Anchors at the first and last candidate only: the loosest chain."""
    return np.array(sorted({0, forward.size - 1}), dtype=np.int64)


GRID = [  # (k, epsilon, target delta)
    (70, 0.1, 1e-6), (100, 1.0, 1e-3), (300, 0.01, 1e-9), (1000, 0.1, 1e-6),
    (1000, 0.001, 1e-12), (2000, 2.0, 1e-6), (2000, 0.05, 1e-2),
]


@pytest.mark.parametrize("k, epsilon, target", GRID)
def test_theorem2_epsilon_matches_reference(k, epsilon, target):
    new = optimal_br.theorem2_epsilon(k, epsilon, target)
    old = reference.theorem2_epsilon(k, epsilon, target)
    # both invert to 1e-12 * max(1, eps) with the same search; the profiles agree to 1e-12
    assert new == pytest.approx(old, rel=2e-12, abs=2e-12)
    assert optimal_br.theorem2_delta(k, epsilon, new) <= target


@pytest.mark.parametrize("k, epsilon, target", GRID)
@pytest.mark.parametrize("fraction", [0.3, 1.0, 1.3])
def test_theorem2_delta_matches_reference(k, epsilon, target, fraction):
    epsilon_g = fraction * reference.theorem2_epsilon(k, epsilon, target)
    new = optimal_br.theorem2_delta(k, epsilon, epsilon_g)
    old = reference.theorem2_delta(k, epsilon, epsilon_g)
    assert new == pytest.approx(old, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("k, epsilon, epsilon_g", [(500, 0.1, 3.0), (2000, 0.01, 0.9), (800, 1.0, 60.0)])
def test_sparse_anchors_stay_valid(monkeypatch, k, epsilon, epsilon_g):
    # with two anchors and no refinement the chain is loose but still an upper bound
    exact = reference.theorem2_delta(k, epsilon, epsilon_g)
    monkeypatch.setattr(_optimal_br_chain, "_initial_anchors", _ends_only)
    monkeypatch.setattr(_optimal_br_chain, "CHAIN_TOLERANCE", math.inf)
    loose = optimal_br.theorem2_delta(k, epsilon, epsilon_g)
    assert loose >= exact * (1 - 1e-13)
    assert loose <= 1.0


def test_chain_matches_reference_at_k_10000():
    # timings live in benchmarks/accounting.py, not in tests
    value = optimal_br.theorem2_epsilon(10_000, 0.001, 1e-9)
    assert value == pytest.approx(0.2601831892477695, rel=2e-12)   # reference implementation


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, target, expected", [
    # expected: the reference implementation (every candidate, ~56 s CPU), 2026-11-25
    (0.001, 1e-9, 0.8632150562201358),
])
def test_theorem2_k100000_matches_reference_and_is_certified(epsilon, target, expected):
    value = optimal_br.theorem2_epsilon(100_000, epsilon, target)
    assert value == pytest.approx(expected, rel=2e-12)
    assert optimal_br.theorem2_delta(100_000, epsilon, value) <= target


@pytest.mark.slow
def test_theorem2_k100000_delta_contains_reference():
    # one profile evaluation of the reference (~6 s): the chain's value is an upper
    # bound of the same optimum, within the float allowances
    epsilon_g = 0.8
    new = optimal_br.theorem2_delta(100_000, 0.001, epsilon_g)
    old = reference.theorem2_delta(100_000, 0.001, epsilon_g)
    assert new == pytest.approx(old, rel=1e-12)


# --------------------------------------------------------------------------
# Theorem 3: chains of whole layers i + 2j = l + 1
# --------------------------------------------------------------------------

GRID3 = [  # (num_dp, num_br, epsilon, target delta)
    (40, 60, 0.1, 1e-6), (300, 700, 1.0, 1e-6), (500, 500, 0.1, 1e-6),
    (1000, 200, 0.01, 1e-9), (100, 2000, 0.05, 1e-3), (1500, 1500, 0.001, 1e-12),
]


@pytest.mark.parametrize("num_dp, num_br, epsilon, target", GRID3)
def test_theorem3_epsilon_matches_reference(num_dp, num_br, epsilon, target):
    new = optimal_br.theorem3_epsilon(num_dp, num_br, epsilon, target)
    old = reference.theorem3_epsilon(num_dp, num_br, epsilon, target)
    assert new == pytest.approx(old, rel=2e-12, abs=2e-12)
    assert optimal_br.theorem3_delta(num_dp, num_br, epsilon, new) <= target


@pytest.mark.parametrize("num_dp, num_br, epsilon, target", GRID3)
@pytest.mark.parametrize("fraction", [0.3, 1.0, 1.3])
def test_theorem3_delta_matches_reference(num_dp, num_br, epsilon, target, fraction):
    epsilon_g = fraction * reference.theorem3_epsilon(num_dp, num_br, epsilon, target)
    new = optimal_br.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    old = reference.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    assert new == pytest.approx(old, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("num_dp, num_br, epsilon, epsilon_g",
                         [(200, 300, 0.1, 4.0), (1000, 1000, 0.01, 1.0), (50, 900, 1.0, 50.0)])
def test_theorem3_sparse_anchors_stay_valid(monkeypatch, num_dp, num_br, epsilon, epsilon_g):
    exact = reference.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    monkeypatch.setattr(_optimal_br_chain, "_initial_anchors", _ends_only)
    monkeypatch.setattr(_optimal_br_chain, "CHAIN_TOLERANCE", math.inf)
    loose = optimal_br.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    assert exact * (1 - 1e-13) <= loose <= 1.0


@pytest.mark.parametrize("num_dp, num_br, epsilon, t_fraction",
                         [(30, 50, 0.1, 0.5), (200, 40, 1.0, 0.2), (7, 300, 0.01, 0.9), (1, 1, 2.0, 0.5)])
def test_layer_mass_bound_is_above_the_exact_layer(num_dp, num_br, epsilon, t_fraction):
    # the log-concave layer bound against the full sum over j of P[J = j] P_t[I = m - 2j]
    import numpy as np
    from scipy.special import logsumexp

    tab = optimal_br._make_tables(num_dp, num_br, epsilon)
    t = t_fraction * epsilon
    log_q = float(optimal_br.log1mexp(t - epsilon) - tab.log1m_exp_eps)
    log_1mq = float(t - epsilon + optimal_br.log1mexp(-t) - tab.log1m_exp_eps)
    layers = np.arange(-1, num_br + 2 * num_dp + 2)
    ones = np.ones(layers.size)
    bound = _optimal_br_chain._log_layer_mass(tab, layers, log_q * ones, log_1mq * ones,
                                              0.0 * ones)
    for m, value in zip(layers.tolist(), bound.tolist()):
        terms = [tab.log_a[j] + tab.log_binom_br[m - 2 * j] + (num_br - m + 2 * j) * log_q
                 + (m - 2 * j) * log_1mq
                 for j in range(num_dp + 1) if 0 <= m - 2 * j <= num_br]
        exact = float(logsumexp(terms)) if terms else -math.inf
        assert value >= exact - 1e-12
        if terms:
            assert value <= exact + 2.5     # within a small factor (tightness, not validity)


def test_theorem3_k100000_matches_reference():
    value = optimal_br.theorem3_epsilon(50_000, 50_000, 0.001, 1e-9)
    assert optimal_br.theorem3_delta(50_000, 50_000, 0.001, value) <= 1e-9
    # the reference implementation (every candidate; 48.6 s CPU), 2026-11-25:
    # reference.theorem3_epsilon(50_000, 50_000, 0.001, 1e-9)
    assert value == pytest.approx(1.3955685056130853, rel=2e-12)


# --------------------------------------------------------------------------
# the steered inversion (_optimal_br_search): speed only, never validity
# --------------------------------------------------------------------------

@pytest.mark.parametrize("num_dp, num_br, epsilon, target",
                         [(0, 2000, 0.01, 1e-9), (500, 1500, 0.1, 1e-6), (300, 300, 1.0, 1e-3)])
def test_misled_steering_falls_back_to_the_certified_search(monkeypatch, num_dp, num_br,
                                                          epsilon, target):
    # an argmax search that always answers the first candidate steers too low; the
    # certification at the end rejects that point and the certified search decides
    expected = reference.theorem3_epsilon(num_dp, num_br, epsilon, target)

    def first_only(values, size):
        return 0, float(values(np.array([0]))[0])

    monkeypatch.setattr(optimal_br, "argmax_search", first_only)
    value = optimal_br.theorem3_epsilon(num_dp, num_br, epsilon, target)
    assert value == pytest.approx(expected, rel=2e-12, abs=2e-12)
    assert optimal_br.theorem3_delta(num_dp, num_br, epsilon, value) <= target


def test_newton_without_convergence_uses_the_bracketing_search(monkeypatch):
    expected = reference.theorem3_epsilon(200, 800, 0.1, 1e-6)
    monkeypatch.setattr(optimal_br, "newton_bracket", lambda *args, **kw: None)
    assert optimal_br.theorem3_epsilon(200, 800, 0.1, 1e-6) == pytest.approx(
        expected, rel=2e-12, abs=2e-12)


def test_argmax_search_finds_the_maximum_of_unimodal_values():
    from privloss.bounds._optimal_br_search import argmax_search

    for size, peak in [(1, 0), (2, 1), (17, 0), (1000, 999), (100_001, 31_337), (50, 25)]:
        values = -np.abs(np.arange(size) - peak) ** 1.5
        calls = []

        def evaluate(index):
            calls.append(index.size)
            return values[index]

        assert argmax_search(evaluate, size) == (peak, 0.0)
        assert sum(calls) <= 120


def test_sampled_layer_maxima_equal_full_bisection(monkeypatch):
    # the interpolated, sign-confirmed ranges give the same layer bounds as bisecting
    # every layer over its whole range
    tab = optimal_br._make_tables(3000, 2000, 0.05)
    cand = optimal_br._candidates(tab, 40.0)
    sampled = _optimal_br_chain.log_increments(tab, 40.0, cand)
    monkeypatch.setattr(_optimal_br_chain, "_SAMPLE_EVERY", 10 ** 12)
    full = _optimal_br_chain.log_increments(tab, 40.0, cand)
    assert np.array_equal(sampled[0], full[0]) and np.array_equal(sampled[1], full[1])


@pytest.mark.parametrize("epsilon_g, expected", [
    # recipe: reference.theorem3_delta(50_000, 50_000, 0.001, epsilon_g) (~5 s CPU each
    # with the reference, ~0.2 s with the chain)
    (1.2, 6.929518201800809e-08),
    (1.3955685056130853, 9.999999999654204e-10),
])
def test_theorem3_k100000_delta_matches_reference(epsilon_g, expected):
    assert optimal_br.theorem3_delta(50_000, 50_000, 0.001, epsilon_g) == pytest.approx(
        expected, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("num_dp, num_br, epsilon, target", [
    (0, 10_000, 0.1, 1e-6), (0, 10_000, 0.001, 1e-9), (5_000, 5_000, 0.1, 1e-6),
    (5_000, 5_000, 0.001, 1e-9), (2_000, 8_000, 1.0, 1e-12),
])
def test_k10000_matches_reference(num_dp, num_br, epsilon, target):
    new = optimal_br.theorem3_epsilon(num_dp, num_br, epsilon, target)
    old = reference.theorem3_epsilon(num_dp, num_br, epsilon, target)
    assert new == pytest.approx(old, rel=2e-12, abs=2e-12)
    for fraction in (0.5, 1.1):
        epsilon_g = fraction * old
        assert optimal_br.theorem3_delta(num_dp, num_br, epsilon, epsilon_g) == pytest.approx(
            reference.theorem3_delta(num_dp, num_br, epsilon, epsilon_g), rel=1e-12, abs=1e-300)


@settings(max_examples=15, deadline=None)
@given(num_dp=st.integers(0, 300), num_br=st.integers(65, 600),
       log_epsilon=st.floats(-3.0, 1.0), fraction=st.floats(0.0, 1.0),
       sparse=st.booleans())
def test_property_chain_is_an_upper_bound_and_exact(num_dp, num_br, log_epsilon, fraction,
                                                    sparse):
    epsilon = 10.0 ** log_epsilon
    epsilon_g = fraction * math.sqrt(num_dp + num_br) * epsilon * 3.0
    exact = reference.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    if sparse:          # few anchors, no refinement: looser, never below the optimum
        saved = (_optimal_br_chain._initial_anchors, _optimal_br_chain.CHAIN_TOLERANCE)
        _optimal_br_chain._initial_anchors, _optimal_br_chain.CHAIN_TOLERANCE = _ends_only, math.inf
        try:
            value = optimal_br.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
        finally:
            _optimal_br_chain._initial_anchors, _optimal_br_chain.CHAIN_TOLERANCE = saved
        assert exact * (1 - 1e-13) <= value <= 1.0
    else:
        value = optimal_br.theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
        assert value == pytest.approx(exact, rel=1e-12, abs=1e-300)


@settings(max_examples=12, deadline=None)
@given(num_dp=st.integers(0, 400), num_br=st.integers(65, 700), log_epsilon=st.floats(-3.0, 0.5),
       log_target=st.floats(-12.0, -1.0))
def test_property_steered_inversion_matches_reference(num_dp, num_br, log_epsilon, log_target):
    # the steered inversion (a few candidates, Newton, one certified end point) gives
    # the reference's epsilon (every candidate certified at every step) to 2e-12
    epsilon, target = 10.0 ** log_epsilon, 10.0 ** log_target
    new = optimal_br.theorem3_epsilon(num_dp, num_br, epsilon, target)
    old = reference.theorem3_epsilon(num_dp, num_br, epsilon, target)
    assert new == pytest.approx(old, rel=2e-12, abs=2e-12)
    assert optimal_br.theorem3_delta(num_dp, num_br, epsilon, new) <= target

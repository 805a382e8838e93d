"""Tests of the adaptive DP/BR sequence recursion ([CR] Lemma 5.1 = [DDR])."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from privloss.bounds import adaptive_sequence as module
from privloss.bounds._adaptive_nested import NestedEvaluator
from privloss.bounds.adaptive_sequence import (MAX_SEQUENCE_LENGTH, Bracket,
                                               adaptive_sequence_delta,
                                               adaptive_sequence_epsilon,
                                               adaptive_sequence_value)
from tests.enumeration import br_mechanism, dp_composition_delta, product_delta

BR1, DP1 = ("br", 1.0), ("dp", 1.0)


def assert_in_bracket(sequence, epsilon_g, value):
    bracket = adaptive_sequence_delta(sequence, epsilon_g)
    assert bracket.lower <= value <= bracket.upper, (sequence, epsilon_g, bracket, value)
    return bracket


# --------------------------------------------------------------------------
# worked values (worked_values.md section 4 and section 3)
# --------------------------------------------------------------------------

TWO_BR = [
    (1.0, 0.0, 0.303365496483, 0.288317262369),
    (1.0, 0.25, 0.220927270177, 0.216054528721),
    (1.0, 0.5, 0.152451906799, 0.152451906799),
    (0.1, 0.0, 0.031240563048, 0.029621401767),
    (0.1, 0.025, 0.020559453385, 0.020091016102),
    (0.1, 0.05, 0.012809766322, 0.012809766322),
]


@pytest.mark.parametrize("epsilon, epsilon_g, adaptive, non_adaptive", TWO_BR)
def test_two_br_worked_values(epsilon, epsilon_g, adaptive, non_adaptive):
    sequence = [("br", epsilon), ("br", epsilon)]
    value = adaptive_sequence_value(sequence, epsilon_g)
    assert value == pytest.approx(adaptive, rel=1e-9)
    bracket = assert_in_bracket(sequence, epsilon_g, value)
    assert bracket.upper - bracket.lower < 1e-6
    # adaptivity never helps the analyst: adaptive >= non-adaptive (Theorem 2)
    assert bracket.upper >= non_adaptive


THREE_ORDERS = {
    0.0: (0.488033035345, 0.488033035345, 0.492779345689),
    0.5: (0.355247751568, 0.355247751568, 0.357682971061),
    1.0: (0.221777948664, 0.221777948664, 0.221777948664),
}
ORDERS = ([BR1, BR1, DP1], [BR1, DP1, BR1], [DP1, BR1, BR1])
NON_ADAPTIVE_K3_D1 = {0.0: 0.477448251475, 0.5: 0.355247751568, 1.0: 0.210776808022}


@pytest.mark.parametrize("epsilon_g", sorted(THREE_ORDERS))
@pytest.mark.parametrize("order", range(3))
def test_three_orders_worked_values(epsilon_g, order):
    sequence = ORDERS[order]
    value = adaptive_sequence_value(sequence, epsilon_g)
    assert value == pytest.approx(THREE_ORDERS[epsilon_g][order], rel=1e-9)
    bracket = assert_in_bracket(sequence, epsilon_g, value)
    assert bracket.upper - bracket.lower < 1e-6
    assert bracket.upper >= NON_ADAPTIVE_K3_D1[epsilon_g]


SINGLE_BR = {0.0: 0.558425020664, 0.5: 0.4456328498, 1.0: 0.3378347121, 2.0: 0.1308959575}


@pytest.mark.parametrize("epsilon_g", sorted(SINGLE_BR))
@pytest.mark.parametrize("position", range(3))
def test_single_br_among_dp_equals_theorem3(epsilon_g, position):
    """[CR] Proposition 2 / Corollary 5.1: same value for every BR position."""
    sequence = [DP1, DP1]
    sequence.insert(position, BR1)
    value = adaptive_sequence_value(sequence, epsilon_g)
    assert value == pytest.approx(SINGLE_BR[epsilon_g], rel=1e-9, abs=1e-10)
    assert_in_bracket(sequence, epsilon_g, value)


def test_single_br_equals_theorem2_closed_form():
    # k = 1: (1 - e^{(eps_g - eps)/2})^2 / (1 - e^{-eps}); tanh(eps/4) at eps_g = 0
    for epsilon, epsilon_g, expected in [(1.0, 0.0, 0.244918662404), (1.0, 0.5, 0.077404686316),
                                         (0.1, 0.0, 0.024994792968)]:
        value = adaptive_sequence_value([("br", epsilon)], epsilon_g)
        assert value == pytest.approx(expected, rel=1e-9)
        bracket = assert_in_bracket([("br", epsilon)], epsilon_g, value)
        assert bracket.upper == pytest.approx(expected, rel=1e-9)


def test_single_dp_closed_form():
    for epsilon, epsilon_g in [(1.0, 0.0), (1.0, 0.4), (0.3, 0.1)]:
        expected = (math.exp(epsilon) - math.exp(epsilon_g)) / (1 + math.exp(epsilon))
        value = adaptive_sequence_value([("dp", epsilon)], epsilon_g)
        assert value == pytest.approx(expected, rel=1e-12)
        bracket = assert_in_bracket([("dp", epsilon)], epsilon_g, value)
        assert bracket.upper == pytest.approx(expected, rel=1e-9)


def test_lemma_5_3_structure():
    """(BR,BR,DP) = (BR,DP,BR) everywhere; (DP,BR,BR) strictly larger iff eps_g < eps."""
    for epsilon_g in (0.1, 1.3):
        a = adaptive_sequence_value([BR1, BR1, DP1], epsilon_g)
        b = adaptive_sequence_value([BR1, DP1, BR1], epsilon_g)
        c = adaptive_sequence_value([DP1, BR1, BR1], epsilon_g)
        assert a == pytest.approx(b, rel=1e-10)
        if epsilon_g < 1.0:
            assert c > b + 1e-6
            # the certified brackets already separate the two orders
            assert adaptive_sequence_delta([DP1, BR1, BR1], epsilon_g).lower > \
                adaptive_sequence_delta([BR1, DP1, BR1], epsilon_g).upper
        else:
            assert c == pytest.approx(b, rel=1e-10)


# --------------------------------------------------------------------------
# reduction identity ([CR] Lemma C.1)
# --------------------------------------------------------------------------

def _one_br_step_numeric(x, epsilon):
    def objective(t):
        q = (1 - np.exp(t - epsilon)) / (1 - math.exp(-epsilon))
        return (q * np.maximum(0.0, -np.expm1(x - t))
                + (1 - q) * np.maximum(0.0, -np.expm1(x - t + epsilon)))

    grid = np.linspace(0.0, epsilon, 20001)
    values = objective(grid)
    g = int(np.argmax(values))
    lo, hi = grid[max(g - 1, 0)], grid[min(g + 1, grid.size - 1)]
    refined = minimize_scalar(lambda t: -float(objective(t)), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-13})
    return max(float(values[g]), -refined.fun)


@pytest.mark.parametrize("epsilon", [1.0, 0.3])
def test_reduction_identity(epsilon):
    for x in np.linspace(-2.5, 1.5, 41) * epsilon:
        closed = float(module._br_terminal_step(x, epsilon))
        assert closed == pytest.approx(_one_br_step_numeric(x, epsilon), abs=1e-12)


# --------------------------------------------------------------------------
# independent brute force: per-history strategy search on the joint law (TREE)
# --------------------------------------------------------------------------

def _rr(width, t):
    """(q, p) = P(output 0) under the two neighbours, numpy version of Def. 2.4."""
    q = -np.expm1(t - width) / -np.expm1(-width)
    p = (np.exp(-t) - np.exp(-width)) / -np.expm1(-width)
    return q, p


def _tree_delta_two(first, second, epsilon_g):
    """sup over t1 and over t2 chosen after seeing the first output y1 of
    sum_{y1,y2} [P(y1,y2) - e^eps_g Q(y1,y2)]_+ ; the objective separates over y1."""
    threshold = math.exp(epsilon_g)

    def candidates(mechanism, size):
        kind, epsilon = mechanism
        if kind == "dp":
            return 2 * epsilon, np.array([epsilon])
        return epsilon, np.linspace(0.0, epsilon, size)

    def branch(p_mass, q_mass, width, t):
        q, p = _rr(width, t)
        return (np.maximum(p_mass * q - threshold * q_mass * p, 0.0)
                + np.maximum(p_mass * (1 - q) - threshold * q_mass * (1 - p), 0.0))

    def best_branch(p_mass, q_mass):
        width, grid = candidates(second, 4001)
        values = branch(p_mass, q_mass, width, grid)
        g = int(np.argmax(values))
        if grid.size == 1:
            return float(values[0])
        lo, hi = grid[max(g - 1, 0)], grid[min(g + 1, grid.size - 1)]
        refined = minimize_scalar(lambda t: -float(branch(p_mass, q_mass, width, t)),
                                  bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
        return max(float(values[g]), -refined.fun)

    def total(t1):
        width, _ = candidates(first, 1)
        q, p = _rr(width, t1)
        return best_branch(q, p) + best_branch(1 - q, 1 - p)

    width, grid = candidates(first, 201)
    values = np.array([total(t) for t in grid])
    g = int(np.argmax(values))
    if grid.size == 1:
        return float(values[0])
    lo, hi = grid[max(g - 1, 0)], grid[min(g + 1, grid.size - 1)]
    refined = minimize_scalar(lambda t: -total(t), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12})
    return max(float(values[g]), -refined.fun)


@pytest.mark.parametrize("sequence, epsilon_g", [
    ([BR1, BR1], 0.0), ([BR1, BR1], 0.25), ([("br", 0.1), ("br", 0.1)], 0.025),
    ([BR1, ("br", 0.5)], 0.3), ([("br", 0.5), BR1], 0.3), ([BR1, DP1], 0.2), ([DP1, BR1], 0.2),
])
def test_recursion_matches_tree_search(sequence, epsilon_g):
    tree = _tree_delta_two(sequence[0], sequence[1], epsilon_g)
    value = adaptive_sequence_value(sequence, epsilon_g)
    assert value == pytest.approx(tree, rel=1e-9, abs=1e-12)
    assert_in_bracket(sequence, epsilon_g, tree)


# --------------------------------------------------------------------------
# Proposition 1 (BR later is worse) and other structure
# --------------------------------------------------------------------------

def _adjacent_br_dp_swaps(k):
    for kinds in itertools.product(("dp", "br"), repeat=k):
        for i in range(k - 1):
            if kinds[i] == "br" and kinds[i + 1] == "dp":
                yield kinds, i


@pytest.mark.parametrize("epsilon", [
    pytest.param(0.5, marks=pytest.mark.slow), 1.0, pytest.param(2.0, marks=pytest.mark.slow)])
@pytest.mark.parametrize("kinds, position", list(_adjacent_br_dp_swaps(3)))
def test_proposition1_br_later_is_worse(epsilon, kinds, position):
    early = [(kind, epsilon) for kind in kinds]
    late = list(early)
    late[position], late[position + 1] = late[position + 1], late[position]
    for epsilon_g in (0.0, 0.3 * epsilon):
        a = adaptive_sequence_value(early, epsilon_g)
        b = adaptive_sequence_value(late, epsilon_g)
        assert b >= a - 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("kinds, position", list(_adjacent_br_dp_swaps(4)))
def test_proposition1_k4(kinds, position):
    # values of the two orders may come from different evaluators (nested vs
    # lattice), whose agreement at breakpoints (eps_g = eps) is ~1e-10
    early = [(kind, 1.0) for kind in kinds]
    late = list(early)
    late[position], late[position + 1] = late[position + 1], late[position]
    for epsilon_g in (0.0, 0.5, 1.0, 2.0):
        assert adaptive_sequence_value(late, epsilon_g) >= \
            adaptive_sequence_value(early, epsilon_g) - 1e-9


@pytest.mark.parametrize("sequence", [
    [("dp", 0.5), ("dp", 1.0), ("dp", 0.3)],
    [("dp", 0.1)] * 5,
    [("dp", 2.0), ("dp", 0.25)],
])
def test_all_dp_equals_murtagh_vadhan_enumeration(sequence):
    epsilons = [eps for _, eps in sequence]
    for epsilon_g in (0.0, 0.2, 0.9):
        exact = float(dp_composition_delta(epsilons, epsilon_g))
        value = adaptive_sequence_value(sequence, epsilon_g)
        assert value == pytest.approx(exact, rel=1e-12, abs=1e-15)
        bracket = assert_in_bracket(sequence, epsilon_g, exact)
        assert bracket.upper == pytest.approx(exact, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("k, epsilon", [
    (2, 1.0), pytest.param(3, 0.5, marks=pytest.mark.slow),
    pytest.param(3, 1.0, marks=pytest.mark.slow)])
def test_adaptive_at_least_non_adaptive_enumeration(k, epsilon):
    sequence = [("br", epsilon)] * k
    for epsilon_g in (0.0, 0.4 * epsilon)[:4 - k]:
        non_adaptive = max(float(product_delta([br_mechanism(epsilon, t)] * k, epsilon_g))
                           for t in np.linspace(0.0, epsilon, 21))
        bracket = adaptive_sequence_delta(sequence, epsilon_g)
        assert adaptive_sequence_value(sequence, epsilon_g) >= non_adaptive - 1e-12
        assert bracket.upper >= non_adaptive


def test_delta_is_convex_in_exp_epsilon_g():
    """The derived fact the certified bound rests on: delta_opt is convex in e^{eps_g}."""
    grid = np.linspace(0.0, 1.9, 39)
    for sequence in ([BR1, BR1], [DP1, BR1, BR1], [BR1, DP1]):
        values = np.array([adaptive_sequence_value(sequence, g) for g in grid])
        z = np.exp(grid)
        slopes = np.diff(values) / np.diff(z)
        assert np.all(np.diff(slopes) >= -1e-9)
        assert np.all(np.diff(values) <= 1e-15)


# certified bracket against the nested high-precision evaluator, including
# epsilons that are not multiples of one lattice step
@pytest.mark.parametrize("sequence", [
    [("br", 1.0), ("dp", math.pi / 4)],
    [("dp", math.pi / 4), ("br", 0.5), ("br", 2.0)],
    [("br", 0.1), ("dp", 0.3), ("br", 0.25)],
    [("dp", 0.05), ("br", 0.1), ("dp", 0.1)],
    [("br", math.log(3)), ("br", 0.5)],
])
def test_bracket_contains_high_precision_value(sequence):
    total = sum(eps for _, eps in sequence)
    reference = NestedEvaluator(module._validate_sequence(sequence))
    for epsilon_g in np.linspace(0.0, total, 7)[:-1] + 0.0123:
        value = float(reference.value(np.array([epsilon_g]))[0])
        bracket = assert_in_bracket(sequence, epsilon_g, value)
        assert bracket.upper - bracket.lower < 2e-7


@pytest.mark.parametrize("sequence, points", [
    ([DP1, BR1, ("br", 0.5)], (0.17,)),
    pytest.param([BR1, BR1, DP1], (0.17, 0.83), marks=pytest.mark.slow),
    pytest.param([("br", 0.25), ("br", 2.0), ("dp", 0.5)], (0.17, 0.83), marks=pytest.mark.slow),
])
def test_lattice_evaluator_agrees_with_nested(sequence, points):
    checked = module._validate_sequence(sequence)
    nested = NestedEvaluator(checked)
    for epsilon_g in points:
        assert module._lattice_value(checked, epsilon_g) == pytest.approx(
            float(nested.value(np.array([epsilon_g]))[0]), rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------
# edge cases (composition.md section 10)
# --------------------------------------------------------------------------

def test_large_epsilon_g_gives_zero():
    sequence = [BR1, DP1, ("br", 0.5)]
    assert adaptive_sequence_delta(sequence, 2.5) == Bracket(0.0, 0.0)
    assert adaptive_sequence_delta(sequence, 10.0) == Bracket(0.0, 0.0)
    assert adaptive_sequence_delta(sequence, math.inf) == Bracket(0.0, 0.0)
    assert adaptive_sequence_value(sequence, 3.0) == 0.0
    near = adaptive_sequence_delta(sequence, 2.45)
    assert 0.0 <= near.lower <= near.upper < 1e-3


def test_zero_epsilon_mechanisms_are_free():
    base = [BR1, DP1]
    padded = [("br", 0.0), BR1, ("dp", 0), DP1, ("br", 0.0)]
    for eg in (0.0, 0.7):
        assert adaptive_sequence_delta(padded, eg) == adaptive_sequence_delta(base, eg)
        assert adaptive_sequence_value(padded, eg) == adaptive_sequence_value(base, eg)
    assert adaptive_sequence_delta([("br", 0.0), ("dp", 0.0)], 0.0) == Bracket(0.0, 0.0)
    assert adaptive_sequence_epsilon([("br", 0.0)], 1e-6) == Bracket(0.0, 0.0)


def test_all_paths_active_below_minus_sum():
    """V(x) = 1 - e^x for x <= -(sum of epsilons), in both evaluators."""
    sequence = module._validate_sequence([BR1, DP1, ("br", 0.5)])
    total = 2.5
    x = np.array([-total - 0.3, -total])
    nested = NestedEvaluator(sequence).value(x)
    np.testing.assert_allclose(nested, -np.expm1(x), rtol=1e-14)
    for mode in ("upper", "lower", "value"):
        offset, values = module._grid_pass(("br", "dp", "br"), (2, 2, 1), 0.5, mode)
        nodes = np.arange(-offset, offset + 1) * 0.5
        below = nodes <= -total
        np.testing.assert_allclose(values[below], -np.expm1(nodes[below]), rtol=1e-14)
        assert np.all(values[nodes >= total] == 0.0)


def test_epsilon_edge_cases():
    sequence = [BR1, DP1]
    assert adaptive_sequence_epsilon(sequence, 1.0) == Bracket(0.0, 0.0)
    assert adaptive_sequence_epsilon(sequence, 1) == Bracket(0.0, 0.0)
    pure = adaptive_sequence_epsilon(sequence, 0.0)
    assert pure.upper == pytest.approx(2.0, rel=1e-12) and pure.upper >= 2.0
    assert pure.lower <= 2.0 <= pure.upper
    # a target above delta(0) needs no epsilon at all
    assert adaptive_sequence_epsilon(sequence, 0.9) == Bracket(0.0, 0.0)


@pytest.mark.parametrize("sequence, epsilon_g, delta", [
    ([BR1, BR1], 0.3, None), ([("br", 0.1)] * 4, None, 1e-6), ([DP1, BR1, BR1], None, 1e-3),
])
def test_epsilon_inverse_is_certified_and_tight(sequence, epsilon_g, delta):
    if delta is None:
        delta = adaptive_sequence_value(sequence, epsilon_g)
    bracket = adaptive_sequence_epsilon(sequence, delta)
    assert 0.0 < bracket.lower <= bracket.upper
    assert adaptive_sequence_delta(sequence, bracket.upper).upper <= delta
    assert bracket.upper - bracket.lower < 1e-4 * max(1.0, bracket.upper)
    if epsilon_g is not None:
        assert bracket.lower <= epsilon_g + 1e-9 and bracket.upper >= epsilon_g - 1e-9
    # just below the lower end the strategy still exceeds the target
    assert adaptive_sequence_delta(sequence, bracket.lower * (1 - 1e-6)).lower > delta


def test_validation_errors():
    with pytest.raises(ValueError, match="at least one"):
        adaptive_sequence_delta([], 0.0)
    with pytest.raises(ValueError, match="kind"):
        adaptive_sequence_delta([("gauss", 1.0)], 0.0)
    with pytest.raises(ValueError, match=r"sequence\[1\] epsilon"):
        adaptive_sequence_delta([BR1, ("dp", -1.0)], 0.0)
    with pytest.raises(ValueError, match=r"sequence\[0\] epsilon"):
        adaptive_sequence_delta([("br", math.nan)], 0.0)
    with pytest.raises(ValueError, match=r"sequence\[0\] epsilon"):
        adaptive_sequence_delta([("br", math.inf)], 0.0)
    with pytest.raises(ValueError, match="epsilon_g"):
        adaptive_sequence_delta([BR1], -0.1)
    with pytest.raises(ValueError, match="target_delta"):
        adaptive_sequence_epsilon([BR1], 1.5)
    with pytest.raises(TypeError):
        adaptive_sequence_delta("br", 0.0)
    with pytest.raises(TypeError):
        adaptive_sequence_delta([("br", 1.0, 2.0)], 0.0)
    with pytest.raises(ValueError, match="MAX_SEQUENCE_LENGTH"):
        adaptive_sequence_delta([BR1] * (MAX_SEQUENCE_LENGTH + 1), 0.0)
    with pytest.raises(ValueError, match="MAX_SEQUENCE_LENGTH"):
        adaptive_sequence_epsilon([DP1] * (MAX_SEQUENCE_LENGTH + 1), 1e-6)
    # case and surrounding spaces of the kind are not significant
    assert adaptive_sequence_delta([(" BR ", 1.0)], 0.0) == adaptive_sequence_delta([BR1], 0.0)
    assert MAX_SEQUENCE_LENGTH >= 6


# --------------------------------------------------------------------------
# Hypothesis properties
# --------------------------------------------------------------------------

mechanisms = st.tuples(st.sampled_from(["dp", "br"]), st.sampled_from([0.25, 0.5, 1.0]))
sequences = st.lists(mechanisms, min_size=1, max_size=3)


@settings(max_examples=10, deadline=None)
@given(sequences, st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_bracket_is_ordered_and_monotone_in_epsilon_g(sequence, a, b):
    low_g, high_g = sorted((a, b))
    first = adaptive_sequence_delta(sequence, low_g)
    second = adaptive_sequence_delta(sequence, high_g)
    for bracket in (first, second):
        assert 0.0 <= bracket.lower <= bracket.upper <= 1.0
    assert second.upper <= first.upper
    assert second.lower <= first.upper


@settings(max_examples=8, deadline=None)
@given(st.lists(mechanisms, min_size=1, max_size=2), mechanisms, st.floats(0.0, 2.0))
def test_monotone_in_k_and_in_epsilon(sequence, extra, epsilon_g):
    longer = adaptive_sequence_delta(list(sequence) + [extra], epsilon_g)
    assert longer.upper >= adaptive_sequence_delta(sequence, epsilon_g).lower
    bigger = [(kind, 2 * eps) if i == 0 else (kind, eps) for i, (kind, eps) in enumerate(sequence)]
    assert adaptive_sequence_delta(bigger, epsilon_g).upper >= \
        adaptive_sequence_delta(sequence, epsilon_g).lower


@settings(max_examples=12, deadline=None)
@given(sequences, st.floats(1e-9, 0.6))
def test_inverse_consistency(sequence, delta):
    bracket = adaptive_sequence_epsilon(sequence, delta)
    total = sum(eps for _, eps in sequence)
    assert 0.0 <= bracket.lower <= bracket.upper <= total * (1 + 1e-12)
    assert adaptive_sequence_delta(sequence, bracket.upper).upper <= delta


# --------------------------------------------------------------------------
# the longest sequences (timings are measured in benchmarks/accounting.py)
# --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sequence", [
    [BR1] * 6,
    [("br", 1.0), ("dp", 0.5), ("br", 0.3), ("br", 0.7), ("dp", 0.2), ("br", 1.0)],
    [("br", 0.1)] * MAX_SEQUENCE_LENGTH,
])
def test_longest_sequences_are_tight(sequence):
    module._curves.cache_clear()
    bracket = adaptive_sequence_delta(sequence, 1.0)
    module._curves.cache_clear()
    epsilon = adaptive_sequence_epsilon(sequence, 1e-6)
    value = adaptive_sequence_value(sequence, 1.0)
    assert bracket.lower <= value <= bracket.upper
    assert epsilon.lower <= epsilon.upper
    assert bracket.upper - bracket.lower < 1e-5

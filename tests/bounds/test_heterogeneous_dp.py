"""Tests for privloss.bounds.heterogeneous_dp (Murtagh–Vadhan heterogeneous optimal
composition, composition.md §7.3 / Theorem 1)."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds.heterogeneous_dp import (Bracket, _mixture_weights, heterogeneous_dp_delta,
                                              heterogeneous_dp_delta_enumerated,
                                              heterogeneous_dp_epsilon)
from tests.enumeration import dp_composition_delta, invert


# --------------------------------------------------------------------------
# independent references (implemented here, not imported from the library)
# --------------------------------------------------------------------------

@mpmath.workdps(50)
def kov_delta(k, epsilon, epsilon_g, delta0=0):
    """MV homogeneous form of [CR] Theorem 1, in mpmath."""
    eps, eg = mpmath.mpf(epsilon), mpmath.mpf(epsilon_g)
    total = mpmath.mpf(0)
    for i in range(k + 1):
        term = mpmath.e ** ((k - i) * eps) - mpmath.e ** (eg + i * eps)
        if term > 0:
            total += mpmath.binomial(k, i) * term
    pure = total / (1 + mpmath.e ** eps) ** k
    if delta0 == 0:
        return pure        # 1 - (1 - pure) would lose tiny values at 50 digits
    return 1 - (1 - mpmath.mpf(delta0)) ** k * (1 - pure)


def contains(bracket, truth):
    return mpmath.mpf(bracket.lower) <= truth <= mpmath.mpf(bracket.upper)


def mixture_profile(w, lo, hi, u):
    def d(c):
        return max(mpmath.e ** c - u, 0) / (1 + mpmath.e ** c)
    return w * d(hi) + (1 - w) * d(lo)


# --------------------------------------------------------------------------
# worked values (worked_values.md §1) and Theorem 1
# --------------------------------------------------------------------------

WORKED = [
    (1, 1e-6, 0.099998095161), (1, 1e-3, 0.098093346072),
    (10, 1e-6, 0.999370905722), (50, 1e-6, 3.172902734019), (100, 1e-6, 4.774567588108),
    (10, 1e-3, 0.753573154879), (50, 1e-3, 2.007441716737), (100, 1e-3, 3.115559460797),
]


@pytest.mark.parametrize("k, delta, expected", WORKED)
def test_worked_values_homogeneous(k, delta, expected):
    bracket = heterogeneous_dp_epsilon([0.1] * k, delta)
    assert bracket.lower <= bracket.upper
    assert bracket.lower == pytest.approx(expected, rel=1e-9)
    assert bracket.upper == pytest.approx(expected, rel=1e-9)


def test_worked_point_value_k25():
    bracket = heterogeneous_dp_delta([0.2] * 25, 1.0)
    assert bracket.upper == pytest.approx(0.1219257716, rel=1e-9)
    assert contains(bracket, kov_delta(25, 0.2, 1.0))


@pytest.mark.parametrize("k", [1, 2, 10, 25, 100, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 0.37, 1.0, 3.0])
def test_homogeneous_matches_theorem1(k, epsilon):
    for fraction in (0.0, 0.05, 0.3, 0.77):
        eg = fraction * k * epsilon
        truth = kov_delta(k, epsilon, eg)
        bracket = heterogeneous_dp_delta([epsilon] * k, eg)
        assert contains(bracket, truth)
        # exact mode: the ends differ only by the tracked float error (~k u)
        assert bracket.upper - bracket.lower <= 1e-12 * max(k / 100, 1) * float(truth) + 1e-300


def test_homogeneous_with_delta0_matches_theorem1():
    truth = kov_delta(20, 0.3, 1.1, delta0=1e-4)
    bracket = heterogeneous_dp_delta([0.3] * 20, 1.1, deltas=[1e-4] * 20)
    assert contains(bracket, truth)
    assert bracket.upper == pytest.approx(float(truth), rel=1e-12)


def test_homogeneous_large_k_is_fast_and_finite():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bracket = heterogeneous_dp_epsilon([0.01] * 100_000, 1e-6)
    assert 0 < bracket.lower <= bracket.upper < math.inf
    assert bracket.upper - bracket.lower <= 1e-9 * bracket.upper


# --------------------------------------------------------------------------
# brute force (tests.enumeration) for heterogeneous epsilons
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_bracket_contains_enumeration(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 11))
    eps = rng.uniform(0.01, 1.5, k)
    for eg in (0.0, float(0.2 * eps.sum()), float(0.6 * eps.sum())):
        truth = dp_composition_delta(eps, eg)
        for step in (None, 0.2, 0.031):
            assert contains(heterogeneous_dp_delta(eps, eg, lattice_step=step), truth)
        assert heterogeneous_dp_delta_enumerated(eps, eg) == pytest.approx(float(truth),
                                                                           rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("eps, step", [
    ([0.1, 0.25, 0.35, 0.05, 0.1], None),            # auto-detected step 0.05
    ([0.3, 0.6, 0.9, 1.2, 0.3, 0.3], None),
    ([0.037, 0.074, 0.111, 0.037], 0.037),           # explicit lattice step
    ([1 * math.pi / 7, 3 * math.pi / 7, 2 * math.pi / 7], math.pi / 7),
])
def test_exact_mode_equals_enumeration(eps, step):
    for eg in (0.0, 0.05, 0.33, 0.9):
        truth = dp_composition_delta(eps, eg)
        bracket = heterogeneous_dp_delta(eps, eg, lattice_step=step)
        assert contains(bracket, truth)
        assert bracket.upper - bracket.lower <= 1e-12
        assert bracket.upper == pytest.approx(float(truth), rel=1e-12, abs=1e-15)


def test_epsilon_bracket_contains_enumerated_inverse():
    rng = np.random.default_rng(5)
    eps = rng.uniform(0.05, 1.0, 6)
    for target in (1e-1, 1e-3, 1e-6):
        bracket = heterogeneous_dp_epsilon(eps, target, tolerance=1e-6)
        truth = invert(lambda x: dp_composition_delta(eps, x), target, eps.sum(), iterations=80)
        assert mpmath.mpf(bracket.lower) <= truth + 1e-20
        assert truth <= mpmath.mpf(bracket.upper)
        assert bracket.upper - bracket.lower <= 1e-6
        # certified: the true delta at upper meets the target, at lower exceeds it
        assert dp_composition_delta(eps, bracket.upper) <= target
        if bracket.lower > 0:
            assert dp_composition_delta(eps, bracket.lower) > target


def test_epsilon_large_individual_epsilons():
    eps = [19.5, 0.3, 7.25, 12.0]
    bracket = heterogeneous_dp_epsilon(eps, 1e-6)
    assert dp_composition_delta(eps, bracket.upper) <= 1e-6
    assert dp_composition_delta(eps, bracket.lower) > 1e-6
    assert bracket.upper - bracket.lower <= 1e-4


def test_bracket_shrinks_with_lattice_step():
    eps = np.random.default_rng(11).uniform(0.05, 0.5, 20)
    widths = []
    for step in (0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625):
        bracket = heterogeneous_dp_delta(eps, 1.5, lattice_step=step)
        widths.append(bracket.upper - bracket.lower)
    assert all(b < a for a, b in zip(widths, widths[1:]))
    # second order: four halvings shrink the width by far more than 2^4
    assert widths[-1] < widths[0] / 100


@pytest.mark.parametrize("seed", range(3))
@mpmath.workdps(40)
def test_mixture_weights_dominate_and_are_minimal(seed):
    """The revealed mixture of RR_lo and RR_hi dominates RR_eps (profile on u >= 1)."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(30):
        step = float(rng.choice([1e-3, 0.01, 0.1, 0.5, 2.0]))
        n = int(rng.integers(0, 15))
        eps = (n + float(rng.uniform(0.001, 0.999))) * step
        w = float(_mixture_weights(np.array([eps]), np.array([n * step]), step)[0])
        lo, hi, e = mpmath.mpf(n * step), mpmath.mpf(n * step + step), mpmath.mpf(eps)
        kinks = [mpmath.mpf(1), mpmath.e ** lo, mpmath.e ** e, mpmath.e ** hi]
        grid = kinks + [mpmath.e ** (hi * x) for x in np.linspace(0, 1, 41)]
        for u in grid:
            assert mixture_profile(mpmath.mpf(w), lo, hi, u) >= mixture_profile(1, e, e, u)
        smaller = mpmath.mpf(w) * (1 - mpmath.mpf(1e-6))
        assert any(mixture_profile(smaller, lo, hi, u) < mixture_profile(1, e, e, u)
                   for u in kinks)


# --------------------------------------------------------------------------
# deltas_i, zero epsilons, edge cases (composition.md §10)
# --------------------------------------------------------------------------

def test_deltas_formula():
    eps = [0.2, 0.45, 0.13, 0.9]
    deltas = [1e-3, 0.0, 2e-2, 5e-5]
    keep = math.prod(1 - d for d in deltas)
    for eg in (0.0, 0.4, 1.2):
        pure = heterogeneous_dp_delta(eps, eg)
        full = heterogeneous_dp_delta(eps, eg, deltas=deltas)
        assert full.lower == pytest.approx(1 - keep * (1 - pure.lower), rel=1e-12)
        assert full.upper == pytest.approx(1 - keep * (1 - pure.upper), rel=1e-12)
        assert contains(full, dp_composition_delta(eps, eg, deltas))
        assert heterogeneous_dp_delta_enumerated(eps, eg, deltas) == pytest.approx(
            float(dp_composition_delta(eps, eg, deltas)), rel=1e-12)


def test_zero_epsilons_are_free():
    eps = [0.21, 0.5, 0.77]
    padded = [0.0, 0.21, 0.0, 0.5, 0.77, 0.0]
    for eg in (0.0, 0.6):
        assert heterogeneous_dp_delta(padded, eg) == heterogeneous_dp_delta(eps, eg)
    assert heterogeneous_dp_epsilon(padded, 1e-5) == heterogeneous_dp_epsilon(eps, 1e-5)
    assert heterogeneous_dp_delta([0.0, 0.0], 0.0) == Bracket(0.0, 0.0)
    assert heterogeneous_dp_epsilon([0.0, 0.0], 1e-9) == Bracket(0.0, 0.0)


def test_edge_cases():
    eps = [0.1, 0.2, 0.3]
    assert heterogeneous_dp_epsilon(eps, 1.0) == Bracket(0.0, 0.0)
    assert heterogeneous_dp_epsilon(eps, 2.5) == Bracket(0.0, 0.0)
    pure_sum = heterogeneous_dp_epsilon(eps, 0.0)
    assert pure_sum.lower <= 0.6 <= pure_sum.upper
    assert pure_sum.upper - pure_sum.lower <= 2e-16
    # delta at or beyond the largest loss is the leak only
    assert heterogeneous_dp_delta(eps, 0.6000001) == Bracket(0.0, 0.0)
    assert heterogeneous_dp_delta(eps, math.inf) == Bracket(0.0, 0.0)
    leak = heterogeneous_dp_delta(eps, 5.0, deltas=[1e-3, 0, 0])
    assert leak.lower <= 1e-3 <= leak.upper
    # infeasible target (below the leak) and delta = 0 with leaks
    assert heterogeneous_dp_epsilon(eps, 1e-4, deltas=[1e-3, 0, 0]) == Bracket(math.inf, math.inf)
    assert heterogeneous_dp_epsilon(eps, 0.0, deltas=[1e-3, 0, 0]).upper == math.inf
    # any delta_i = 1 makes the composition useless
    assert heterogeneous_dp_delta(eps, 0.1, deltas=[0, 1, 0]) == Bracket(1.0, 1.0)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-2, 0.3])
def test_single_mechanism_closed_form(epsilon, delta):
    a = (math.exp(epsilon) - 1) / (math.exp(epsilon) + 1)
    expected = math.log(math.exp(epsilon) - delta * (1 + math.exp(epsilon))) if delta < a else 0.0
    bracket = heterogeneous_dp_epsilon([epsilon], delta)
    assert bracket.lower <= bracket.upper
    assert bracket.lower == pytest.approx(expected, rel=1e-10, abs=1e-12)
    assert bracket.upper == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_bracket_width():
    assert Bracket(0.5, 0.5).width == 0.0
    assert Bracket(0.4, 0.5).width == pytest.approx(0.1)
    lower, upper = heterogeneous_dp_delta([0.1, 0.2], 0.05)
    assert lower <= upper


def test_extreme_epsilons_do_not_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = np.concatenate([np.full(50, 20.0), np.random.default_rng(2).uniform(0, 20, 50)])
        bracket = heterogeneous_dp_epsilon(eps, 1e-6, tolerance=1e-2)
        assert 0 < bracket.lower <= bracket.upper <= eps.sum() * (1 + 1e-12)
        delta = heterogeneous_dp_delta(eps, 300.0, lattice_step=0.05)
        assert 0 <= delta.lower <= delta.upper <= 1


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: heterogeneous_dp_delta([], 0.1), "epsilons"),
    (lambda: heterogeneous_dp_delta([0.1, -0.2], 0.1), r"epsilons\[1\]"),
    (lambda: heterogeneous_dp_delta([0.1, math.nan], 0.1), r"epsilons\[1\]"),
    (lambda: heterogeneous_dp_delta([0.1], -1.0), "epsilon_g"),
    (lambda: heterogeneous_dp_delta([0.1], 0.1, deltas=[0.1, 0.2]), "deltas"),
    (lambda: heterogeneous_dp_delta([0.1], 0.1, deltas=[1.5]), r"deltas\[0\]"),
    (lambda: heterogeneous_dp_delta([0.1], 0.1, lattice_step=0.0), "lattice_step"),
    (lambda: heterogeneous_dp_epsilon([0.1], -1e-6), "target_delta"),
    (lambda: heterogeneous_dp_epsilon([0.1], 1e-6, tolerance=0.0), "tolerance"),
    (lambda: heterogeneous_dp_delta_enumerated([0.1] * 21, 0.1), "at most 20"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_validation_types():
    with pytest.raises(TypeError):
        heterogeneous_dp_delta([0.1], "0.1")
    with pytest.raises(TypeError):
        heterogeneous_dp_epsilon([0.1], 1e-6, tolerance=None)


# --------------------------------------------------------------------------
# Hypothesis properties (reference: the float enumeration, k <= 6)
# --------------------------------------------------------------------------

small_eps = st.lists(st.floats(0.0, 3.0, allow_subnormal=False), min_size=1, max_size=6)
epsilon_g_values = st.floats(0.0, 8.0, allow_subnormal=False)


#: Longest lattice of the exact mode (the library's MAX_LATTICE_POINTS is 2e7).
EXACT_LATTICE_POINTS = 2 ** 25


def exact_mode_width_bound(eps, upper: float) -> float:
    """Largest upper - lower of the exact modes, from their error analysis.

    Both ends evaluate the same float sum over the lattice (or the 2^k atoms) with
    steps one ulp apart, each pushed outward by its tracked relative error: a sum of
    n non-negative terms errs by at most (n - 1) u (n counts every lattice point with
    a positive loss, up to EXACT_LATTICE_POINTS, zero masses included), the masses
    by about 4 (k + 1) u plus 6 u per term; the enumeration also shifts every loss by
    at most k u sum(eps) + 4 u (eps_g + 1), and delta is 1-Lipschitz in eps_g. So
    width <= 2 (n + 4 (k + 1) + 16) u upper + 2 (k u sum(eps) + 4 u (sum(eps) + 1)).
    Here n is not known to the test, so n = EXACT_LATTICE_POINTS (>= 2^k for k <= 6).
    Example: eps = [1.0, 1.00001] lies on the lattice 1e-5 Z (n = 100,001 positive
    losses): at eps_g = 0, upper = 0.462 and the width is 1.03e-11 = 2 n u upper.
    """
    u, k, total = 2.0 ** -53, len(eps), math.fsum(eps)
    n = EXACT_LATTICE_POINTS
    return (2.02 * (n + 4 * (k + 1) + 16) * u * upper
            + 2.02 * (k * u * total + 4 * u * (total + 1)) + 1e-300)


@settings(max_examples=40, deadline=None)
@given(small_eps, epsilon_g_values, st.one_of(st.none(), st.floats(0.004, 0.5)))
def test_property_bracket_contains_truth(eps, eg, step):
    """step None: exact (lattice or enumeration) mode; else the lattice bracket mode."""
    bracket = heterogeneous_dp_delta(eps, eg, lattice_step=step)
    truth = heterogeneous_dp_delta_enumerated(eps, eg)      # within ~k 1e-15 of the optimum
    assert 0.0 <= bracket.lower <= bracket.upper <= 1.0
    assert bracket.lower <= truth * (1 + 1e-12) + 1e-13
    assert truth <= bracket.upper * (1 + 1e-12) + 1e-13
    if step is None:
        assert bracket.upper - bracket.lower <= exact_mode_width_bound(eps, bracket.upper)


def test_exact_mode_width_of_a_long_lattice():
    """The Hypothesis counterexample of issue #12 (containment held; the old 1e-12 width
    tolerance ignored the (n - 1) u error of summing the 100,001 lattice points)."""
    eps = [1.0, 1.00001]
    bracket = heterogeneous_dp_delta(eps, 0.0)
    truth = heterogeneous_dp_delta_enumerated(eps, 0.0)
    assert bracket.lower <= truth <= bracket.upper
    assert bracket.upper - bracket.lower <= exact_mode_width_bound(eps, bracket.upper)
    lattice_points = 100_001            # losses j 1e-5 > 0, j = 1 .. 200001 step 2
    assert bracket.upper - bracket.lower <= 2.02 * (lattice_points + 16) * 2.0 ** -53 * bracket.upper


medium_eps = st.lists(st.floats(0.001, 2.0), min_size=15, max_size=17)


@settings(max_examples=12, deadline=None)
@given(medium_eps, st.floats(0.0, 1.0), st.sampled_from([1e-2, 1e-5, 1e-8]))
def test_property_bracket_mode_against_enumeration(eps, fraction, target):
    """k = 15..17: the automatic (refined) bracket mode against the 2^k enumeration."""
    eg = fraction * sum(eps)
    bracket = heterogeneous_dp_delta(eps, eg)
    truth = heterogeneous_dp_delta_enumerated(eps, eg)      # within ~k 1e-15 of the optimum
    assert bracket.lower <= truth * (1 + 1e-12) + 1e-13
    assert truth <= bracket.upper * (1 + 1e-12) + 1e-13
    inverse = heterogeneous_dp_epsilon(eps, target, tolerance=1e-3)
    assert inverse.upper - inverse.lower <= 1e-3
    assert heterogeneous_dp_delta_enumerated(eps, inverse.upper) <= target * (1 + 1e-9) + 1e-13
    if inverse.lower > 0:
        assert heterogeneous_dp_delta_enumerated(eps, inverse.lower) > target * (1 - 1e-9) - 1e-13


@settings(max_examples=30, deadline=None)
@given(small_eps, epsilon_g_values, st.integers(0, 5), st.floats(0.0, 1.0))
def test_property_monotone_in_each_epsilon(eps, eg, index, increase):
    index %= len(eps)
    bigger = list(eps)
    bigger[index] += increase
    assert (heterogeneous_dp_delta_enumerated(bigger, eg)
            >= heterogeneous_dp_delta_enumerated(eps, eg) - 1e-13)
    small, large = heterogeneous_dp_delta(eps, eg), heterogeneous_dp_delta(bigger, eg)
    assert large.upper >= small.lower
    small_e = heterogeneous_dp_epsilon(eps, 1e-4, tolerance=1e-3)
    large_e = heterogeneous_dp_epsilon(bigger, 1e-4, tolerance=1e-3)
    assert large_e.upper >= small_e.lower


@settings(max_examples=30, deadline=None)
@given(small_eps, epsilon_g_values, st.floats(0.0, 3.0))
def test_property_monotone_in_adding_a_mechanism(eps, eg, extra):
    more = list(eps) + [extra]
    assert (heterogeneous_dp_delta_enumerated(more, eg)
            >= heterogeneous_dp_delta_enumerated(eps, eg) - 1e-13)
    assert heterogeneous_dp_delta(more, eg).upper >= heterogeneous_dp_delta(eps, eg).lower
    assert (heterogeneous_dp_epsilon(more, 1e-3, tolerance=1e-3).upper
            >= heterogeneous_dp_epsilon(eps, 1e-3, tolerance=1e-3).lower)


@settings(max_examples=30, deadline=None)
@given(small_eps, st.sampled_from([1e-1, 1e-3, 1e-6, 1e-9]))
def test_property_inverse_consistent(eps, target):
    bracket = heterogeneous_dp_epsilon(eps, target, tolerance=1e-3)
    assert 0.0 <= bracket.lower <= bracket.upper
    assert bracket.upper - bracket.lower <= 1e-3
    assert heterogeneous_dp_delta_enumerated(eps, bracket.upper) <= target * (1 + 1e-9) + 1e-13
    if bracket.lower > 0:
        assert heterogeneous_dp_delta_enumerated(eps, bracket.lower) > target * (1 - 1e-9) - 1e-13


# --------------------------------------------------------------------------
# performance cases (timings reported, not asserted)
# --------------------------------------------------------------------------

def kov_theorem35_epsilon(eps, target):
    """[KOV] Thm 3.5 log(1/delta) term: a valid (looser) upper bound for comparison."""
    eps = np.asarray(eps)
    mean = np.sum(eps * np.tanh(eps / 2))
    return float(mean + math.sqrt(2 * np.sum(eps ** 2) * math.log(1 / target)))


def test_thousand_heterogeneous_mechanisms():
    eps = np.random.default_rng(0).uniform(0.01, 0.5, 1000)
    bracket = heterogeneous_dp_epsilon(eps, 1e-6, tolerance=1e-3)
    assert bracket.upper - bracket.lower <= 1e-3
    assert float(np.sum(eps * np.tanh(eps / 2))) < bracket.lower
    assert bracket.upper < kov_theorem35_epsilon(eps, 1e-6)
    check = heterogeneous_dp_delta(eps, bracket.upper)
    assert check.lower <= 1e-6


@pytest.mark.slow
def test_ten_thousand_small_mechanisms():
    eps = np.random.default_rng(0).uniform(0.001, 0.05, 10_000)
    bracket = heterogeneous_dp_epsilon(eps, 1e-6, tolerance=1e-3)
    assert math.isfinite(bracket.upper)
    assert bracket.upper - bracket.lower <= 1e-3
    assert float(np.sum(eps * np.tanh(eps / 2))) < bracket.lower
    assert bracket.upper < kov_theorem35_epsilon(eps, 1e-6)

"""Tests for privloss.bounds.optimal_br ([CR] Theorems 2 and 3)."""

from __future__ import annotations

import math
import warnings

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.bounds.optimal_br import (theorem2_delta, theorem2_epsilon, theorem3_delta,
                                        theorem3_epsilon)
from tests.enumeration import br_mechanism, dp_mechanism, product_delta

REL = 1e-9


@mpmath.workdps(50)
def theorem1_delta_mv(k: int, epsilon: float, epsilon_g: float) -> mpmath.mpf:
    """[CR] Theorem 1 (MV homogeneous form, delta0 = 0), written independently in mpmath."""
    eps, eg = mpmath.mpf(epsilon), mpmath.mpf(epsilon_g)
    total = mpmath.mpf(0)
    for i in range(k + 1):
        gap = mpmath.e ** ((k - i) * eps) - mpmath.e ** (eg + i * eps)
        if gap > 0:
            total += mpmath.binomial(k, i) * gap
    return total / (1 + mpmath.e ** eps) ** k


def at_most(a: float, b: float, rel: float = 1e-9) -> bool:
    """a <= b up to the relative slack that separate upper bounds may carry."""
    return a <= b * (1 + rel) + 1e-300


# --------------------------------------------------------------------------
# worked values (worked_values.md sections 2, 3 and the Theorem-3 rows of 4)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("k, delta, expected", [
    (10, 1e-6, 0.628636838773),
    (50, 1e-6, 1.533740352924),      # candidates value (GRID gives ...923)
    (100, 1e-6, 2.246026212456),
])
def test_theorem2_epsilon_worked_values(k, delta, expected):
    assert theorem2_epsilon(k, 0.1, delta) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("k, epsilon, epsilon_g, expected", [
    (1, 1.0, 0.0, 0.244918662404),
    (1, 1.0, 0.5, 0.077404686316),
    (1, 0.1, 0.0, 0.024994792968),
    (2, 1.0, 0.0, 0.288317262369),
    (2, 1.0, 1.5, 0.0090548323895),
    (10, 0.1, 0.0, 0.0643154438431),
    (10, 0.1, 0.5, 3.99781340526e-05),
    (2, 1.0, 0.25, 0.216054528721),      # non-adaptive column of section 4
    (2, 1.0, 0.5, 0.152451906799),
    (2, 0.1, 0.0, 0.029621401767),
    (2, 0.1, 0.025, 0.020091016102),
    (2, 0.1, 0.05, 0.012809766322),
])
def test_theorem2_delta_worked_values(k, epsilon, epsilon_g, expected):
    assert theorem2_delta(k, epsilon, epsilon_g) == pytest.approx(expected, rel=REL)


def test_theorem2_k1_closed_forms():
    assert theorem2_delta(1, 1.0, 0.0) == pytest.approx(math.tanh(0.25), rel=1e-12)
    assert theorem2_delta(1, 0.1, 0.0) == pytest.approx(math.tanh(0.025), rel=1e-12)


@pytest.mark.parametrize("epsilon_g", [1.0, 1.5, 3.0, math.inf])
def test_theorem2_zero_at_max_loss(epsilon_g):
    # 10 * 0.1 is slightly above 1.0 in binary: the worked value allows ~1e-19 there
    assert theorem2_delta(10, 0.1, epsilon_g) <= 1e-18


@pytest.mark.parametrize("k, num_dp, delta, expected", [
    (10, 5, 1e-6, 0.853656441642),
    (50, 25, 1e-6, 2.428394805730),
    (100, 50, 1e-6, 3.650225769201),
])
def test_theorem3_epsilon_worked_values(k, num_dp, delta, expected):
    assert theorem3_epsilon(num_dp, k - num_dp, 0.1, delta) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("k, num_dp, epsilon, epsilon_g, expected", [
    (3, 1, 1.0, 0.0, 0.477448251475),
    (3, 2, 1.0, 0.0, 0.558425020664),
    (10, 5, 1.0, 0.5, 0.730723486021),
    (3, 1, 1.0, 0.5, 0.355247751568),
    (3, 1, 1.0, 1.0, 0.210776808022),
])
def test_theorem3_delta_worked_values(k, num_dp, epsilon, epsilon_g, expected):
    assert theorem3_delta(num_dp, k - num_dp, epsilon, epsilon_g) == pytest.approx(
        expected, rel=REL)


@pytest.mark.parametrize("epsilon_g, expected", [
    (0.0, 0.5584250207), (0.5, 0.4456328498), (1.0, 0.3378347121), (2.0, 0.1308959575),
])
def test_single_br_among_dp_corollary_5_1(epsilon_g, expected):
    # one BR among two DP: the adaptive optimum (REC) equals Theorem 3 with n = 1
    assert theorem3_delta(2, 1, 1.0, epsilon_g) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("k, delta, expected", [
    (1, 1e-6, 0.099998095161),
    (10, 1e-6, 0.999370905722),
    (50, 1e-6, 3.172902734019),
    (100, 1e-3, 3.115559460797),
])
def test_theorem3_without_br_is_theorem1(k, delta, expected):
    assert theorem3_epsilon(k, 0, 0.1, delta) == pytest.approx(expected, rel=REL)


def test_theorem3_without_br_point_value():
    assert theorem3_delta(25, 0, 0.2, 1.0) == pytest.approx(0.1219257716, rel=1e-9)


# --------------------------------------------------------------------------
# brute force: enumeration of products of RR over a grid of t
# --------------------------------------------------------------------------

def enumerated_delta(num_dp, num_br, epsilon, epsilon_g, t):
    mechanisms = [dp_mechanism(epsilon)] * num_dp + [br_mechanism(epsilon, t)] * num_br
    return product_delta(mechanisms, epsilon_g)


@mpmath.workdps(50)
def candidate_points(num_dp, num_br, epsilon, epsilon_g):
    eps, eg = mpmath.mpf(epsilon), mpmath.mpf(epsilon_g)
    k = num_dp + num_br
    return [min(eps, max(mpmath.mpf(0), (eg + (ell + 1 - num_dp) * eps) / (num_br + 1)))
            for ell in range(k + num_dp + 1)]


@mpmath.workdps(50)
def check_against_enumeration(num_dp, num_br, epsilon, epsilon_g, grid_points):
    value = theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    if num_dp == 0:
        assert value == theorem2_delta(num_br, epsilon, epsilon_g)
    # the candidate formula evaluated by enumeration at the candidate points
    at_candidates = max(enumerated_delta(num_dp, num_br, epsilon, epsilon_g, t)
                        for t in candidate_points(num_dp, num_br, epsilon, epsilon_g))
    assert value >= at_candidates
    assert value <= at_candidates * (1 + 1e-10) + 1e-300
    # no t beats the candidates; the candidates are matched to the grid resolution
    eps = mpmath.mpf(epsilon)
    grid = [enumerated_delta(num_dp, num_br, epsilon, epsilon_g, eps * g / grid_points)
            for g in range(grid_points + 1)]
    best = max(grid)
    resolution = max(abs(b - a) for a, b in zip(grid, grid[1:]))
    assert best <= value + 1e-12 * max(value, 1e-300)
    assert value - best <= resolution + 1e-12


@pytest.mark.parametrize("num_dp, num_br, epsilon, epsilon_g", [
    (0, 1, 1.0, 0.2),
    (0, 2, 0.5, 0.1),
    (0, 3, 1.0, 0.0),
    (1, 2, 1.0, 0.7),
    (2, 2, 0.3, 0.25),
    (3, 1, 2.0, 1.0),
    (0, 5, 0.5, 0.6),
    (3, 2, 0.5, 0.0),     # the lower clamp t = 0 is a candidate here
])
def test_matches_enumeration_over_t(num_dp, num_br, epsilon, epsilon_g):
    check_against_enumeration(num_dp, num_br, epsilon, epsilon_g, grid_points=120)


@pytest.mark.slow
@pytest.mark.parametrize("num_dp", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("epsilon, epsilon_g", [(0.1, 0.0), (0.5, 0.35), (1.0, 2.0), (3.0, 1.0)])
def test_matches_enumeration_over_t_k6(num_dp, epsilon, epsilon_g):
    check_against_enumeration(num_dp, 6 - num_dp, epsilon, epsilon_g, grid_points=400)


# --------------------------------------------------------------------------
# edge cases (composition.md section 10)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("num_dp, num_br", [(0, 4), (2, 2), (4, 0), (1, 3)])
def test_zero_beyond_total_loss(num_dp, num_br):
    assert theorem3_delta(num_dp, num_br, 0.5, 2.0) == 0.0        # 4 * 0.5 exactly
    assert theorem3_delta(num_dp, num_br, 0.5, 2.5) == 0.0
    assert theorem3_delta(num_dp, num_br, 0.5, math.inf) == 0.0
    assert theorem3_delta(num_dp, num_br, 0.5, 1.999) > 0.0


@pytest.mark.parametrize("num_dp, num_br", [(0, 7), (3, 4), (7, 0)])
def test_delta_zero_gives_pure_sum(num_dp, num_br):
    value = theorem3_epsilon(num_dp, num_br, 0.3, 0.0)
    assert value >= 7 * 0.3 and value == pytest.approx(2.1, rel=1e-15)
    assert theorem2_epsilon(7, 0.3, 0.0) == pytest.approx(2.1, rel=1e-15)


@pytest.mark.parametrize("delta", [1.0])
def test_delta_one_gives_zero(delta):
    assert theorem2_epsilon(5, 1.0, delta) == 0.0
    assert theorem3_epsilon(2, 3, 1.0, delta) == 0.0


def test_epsilon_zero_costs_nothing():
    assert theorem2_delta(10, 0.0, 0.0) == 0.0
    assert theorem3_delta(3, 7, 0.0, 0.0) == 0.0
    assert theorem2_epsilon(10, 0.0, 1e-9) == 0.0
    assert theorem3_epsilon(3, 7, 0.0, 0.0) == 0.0


def test_no_mechanisms():
    assert theorem3_delta(0, 0, 1.0, 0.0) == 0.0
    assert theorem3_epsilon(0, 0, 1.0, 1e-6) == 0.0


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.9, 0.999])
def test_k1_closed_form(epsilon, fraction):
    epsilon_g = fraction * epsilon
    expected = (-math.expm1((epsilon_g - epsilon) / 2)) ** 2 / -math.expm1(-epsilon)
    assert theorem2_delta(1, epsilon, epsilon_g) == pytest.approx(expected, rel=1e-10)
    assert theorem3_delta(0, 1, epsilon, epsilon_g) == theorem2_delta(1, epsilon, epsilon_g)


@pytest.mark.parametrize("k, epsilon, epsilon_g", [(1, 1.0, 0.0), (5, 0.2, 0.3), (12, 1.5, 4.0)])
def test_all_dp_is_theorem1(k, epsilon, epsilon_g):
    expected = theorem1_delta_mv(k, epsilon, epsilon_g)
    assert theorem3_delta(k, 0, epsilon, epsilon_g) == pytest.approx(float(expected), rel=1e-11)
    assert theorem3_delta(k, 0, epsilon, epsilon_g) >= expected


def test_tiny_epsilon_is_safe():
    for epsilon in (1e-300, 5e-324):
        assert 0.0 <= theorem2_delta(100, epsilon, 0.0) <= 1e-290
        assert theorem2_delta(100, epsilon, 0.0) >= 0.0
        assert theorem3_epsilon(50, 50, epsilon, 1e-9) == 0.0
    small = theorem2_delta(1000, 1e-6, 0.0)
    assert 0.0 < small < 1e-3


@pytest.mark.parametrize("call, name", [
    (lambda: theorem2_delta(0, 1.0, 0.0), "k"),
    (lambda: theorem2_delta(3, -1.0, 0.0), "epsilon"),
    (lambda: theorem2_delta(3, math.nan, 0.0), "epsilon"),
    (lambda: theorem2_delta(3, 1.0, -0.1), "epsilon_g"),
    (lambda: theorem2_epsilon(3, 1.0, 1.5), "target_delta"),
    (lambda: theorem2_epsilon(3, 1.0, -1e-9), "target_delta"),
    (lambda: theorem3_delta(-1, 2, 1.0, 0.0), "num_dp"),
    (lambda: theorem3_delta(1, -2, 1.0, 0.0), "num_br"),
    (lambda: theorem3_epsilon(1, 2, math.inf, 0.1), "epsilon"),
])
def test_invalid_arguments_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        call()


def test_wrong_types():
    with pytest.raises(TypeError, match="k"):
        theorem2_delta(2.5, 1.0, 0.0)
    with pytest.raises(TypeError, match="num_br"):
        theorem3_epsilon(1, True, 1.0, 0.1)


# --------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------

epsilons = st.floats(min_value=1e-3, max_value=20.0)
fast = settings(max_examples=40, deadline=None)


@fast
@given(k=st.integers(1, 30), frac_dp=st.floats(0.0, 1.0), epsilon=epsilons,
       frac_g=st.floats(0.0, 1.1))
def test_ordering_br_dp_theorem1(k, frac_dp, epsilon, frac_g):
    num_dp = round(frac_dp * k)
    epsilon_g = frac_g * k * epsilon
    all_br = theorem2_delta(k, epsilon, epsilon_g)
    mixed = theorem3_delta(num_dp, k - num_dp, epsilon, epsilon_g)
    assert 0.0 <= all_br <= 1.0 and 0.0 <= mixed <= 1.0
    # replacing BR by DP of the same epsilon can only cost more
    assert at_most(all_br, mixed)
    # every epsilon-BR mechanism is epsilon-DP: Theorem 1 with k = d + n dominates
    assert at_most(mixed, float(theorem1_delta_mv(k, epsilon, epsilon_g) * (1 + 1e-12)))


@fast
@given(num_dp=st.integers(0, 15), num_br=st.integers(1, 15), epsilon=epsilons,
       frac_g=st.floats(0.0, 1.0))
def test_monotone_in_k(num_dp, num_br, epsilon, frac_g):
    epsilon_g = frac_g * (num_dp + num_br) * epsilon
    base = theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    assert at_most(base, theorem3_delta(num_dp, num_br + 1, epsilon, epsilon_g))
    assert at_most(base, theorem3_delta(num_dp + 1, num_br, epsilon, epsilon_g))
    assert at_most(theorem2_delta(num_br, epsilon, epsilon_g),
                   theorem2_delta(num_br + 1, epsilon, epsilon_g))


@fast
@given(num_dp=st.integers(0, 10), num_br=st.integers(1, 20), epsilon=epsilons,
       factor=st.floats(1.0, 3.0), epsilon_g=st.floats(0.0, 30.0))
def test_monotone_in_epsilon(num_dp, num_br, epsilon, factor, epsilon_g):
    small = theorem3_delta(num_dp, num_br, epsilon, epsilon_g)
    large = theorem3_delta(num_dp, num_br, epsilon * factor, epsilon_g)
    assert at_most(small, large)


@fast
@given(num_dp=st.integers(0, 10), num_br=st.integers(1, 20), epsilon=epsilons,
       frac_a=st.floats(0.0, 1.0), frac_b=st.floats(0.0, 1.0))
def test_non_increasing_in_epsilon_g(num_dp, num_br, epsilon, frac_a, frac_b):
    total = (num_dp + num_br) * epsilon
    low, high = sorted((frac_a * total, frac_b * total))
    assert at_most(theorem3_delta(num_dp, num_br, epsilon, high),
                   theorem3_delta(num_dp, num_br, epsilon, low))


@fast
@given(num_dp=st.integers(0, 20), num_br=st.integers(0, 20), epsilon=epsilons,
       log_delta=st.floats(-40.0, 0.0))
def test_inverse_is_consistent(num_dp, num_br, epsilon, log_delta):
    target = 10.0 ** log_delta
    value = theorem3_epsilon(num_dp, num_br, epsilon, target)
    assert 0.0 <= value <= (num_dp + num_br) * epsilon * (1 + 1e-15)
    assert theorem3_delta(num_dp, num_br, epsilon, value) <= target
    if value > 0:
        # and it is the smallest such epsilon up to the search tolerance
        below = value - 1e-9 * max(1.0, value)
        assert theorem3_delta(num_dp, num_br, epsilon, max(below, 0.0)) > target * (1 - 1e-9)
    if num_dp == 0 and num_br > 0:
        assert theorem2_epsilon(num_br, epsilon, target) == value


@fast
@given(k=st.integers(1, 40), epsilon=epsilons, log_delta=st.floats(-30.0, -0.5))
def test_theorem2_inverse_and_order(k, epsilon, log_delta):
    target = 10.0 ** log_delta
    value = theorem2_epsilon(k, epsilon, target)
    assert theorem2_delta(k, epsilon, value) <= target
    num_dp = k // 2
    assert at_most(value, theorem3_epsilon(num_dp, k - num_dp, epsilon, target))


def test_inverse_at_large_epsilon_and_tiny_delta():
    for epsilon, target in ((20.0, 1e-6), (20.0, 1e-300), (0.1, 1e-300)):
        value = theorem2_epsilon(100, epsilon, target)
        assert 0.0 < value <= 100 * epsilon
        assert theorem2_delta(100, epsilon, value) <= target
        mixed = theorem3_epsilon(50, 50, epsilon, target)
        assert value <= mixed <= 100 * epsilon
        assert theorem3_delta(50, 50, epsilon, mixed) <= target


# --------------------------------------------------------------------------
# large k (performance targets are measured, not asserted)
# --------------------------------------------------------------------------

def test_k1000_is_sane():
    br = theorem2_epsilon(1000, 0.1, 1e-6)
    mixed = theorem3_epsilon(500, 500, 0.1, 1e-6)
    # below the adaptive bound of [CR] eq. (3) and above the non-adaptive k = 100 value
    ratio = 0.1 / -math.expm1(-0.1)
    adaptive = 1000 * (ratio - 1 - math.log(ratio)) + math.sqrt(0.5 * math.log(1e6) * 1000 * 0.01)
    assert 2.246 < br < adaptive
    assert br < mixed < 1000 * 0.1


@pytest.mark.slow
def test_k10000_runs_and_is_sane():
    br = theorem2_epsilon(10_000, 0.1, 1e-6)
    mixed = theorem3_epsilon(5_000, 5_000, 0.1, 1e-6)
    assert math.isfinite(br) and math.isfinite(mixed)
    assert theorem2_epsilon(1000, 0.1, 1e-6) < br < mixed < 10_000 * 0.1
    # CLT scaling: roughly mean k eps^2 / 8 plus a deviation term
    assert 10_000 * 0.1 ** 2 / 8 < br < 10_000 * 0.1 ** 2 / 8 + 5 * math.sqrt(10_000) * 0.1


@pytest.mark.slow
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("epsilon, epsilon_g", [(0.1, 200.0), (20.0, 1.6e6)])
def test_k100000_no_overflow(epsilon, epsilon_g):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        br = theorem2_delta(100_000, epsilon, epsilon_g)
        mixed = theorem3_delta(50_000, 50_000, epsilon, epsilon_g)
    assert 0.0 < br < 1.0 and 0.0 < mixed <= 1.0
    assert br <= mixed

"""Discrete and grid Laplace mechanisms: guarantee, exact noise law, exact rounding,
confidence half-widths (exactness and coverage), bad inputs.

Statistical tests: InsecureSeededSource, fixed seeds, ALPHA = 1e-4 each.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from privloss.accounting import BudgetExceededError, PrivacyFilter
from privloss.events import PureDP
from privloss.mechanisms.accuracy import (NoisyRelease, discrete_laplace_half_width,
                                          laplace_linf_bound)
from privloss.mechanisms.laplace import (DiscreteLaplaceMechanism, GridLaplaceMechanism,
                                         grid_sensitivity_l1, round_to_grid)
from privloss.samplers import InsecureSeededSource, discrete_laplace_mass
from tests.samplers._stats import ALPHA, chi_square_pvalue, integer_edges


# -- guarantee -------------------------------------------------------------------

@pytest.mark.parametrize("sensitivity, epsilon", [(1, 1), (1, 0.5), (3, "1/3"), (2, 0.1),
                                                  (Fraction(3, 2), Fraction(1, 7))])
def test_scale_from_epsilon_gives_pure_dp_epsilon(sensitivity, epsilon):
    mechanism = DiscreteLaplaceMechanism(sensitivity, epsilon=epsilon)
    exact_epsilon = Fraction(epsilon) if isinstance(epsilon, (int, float)) else Fraction(epsilon)
    assert mechanism.scale == Fraction(sensitivity) / exact_epsilon
    (event,) = mechanism.events
    assert isinstance(event, PureDP)
    assert Fraction(event.epsilon) >= exact_epsilon              # rounded up, never down
    assert event.epsilon == pytest.approx(float(exact_epsilon), rel=1e-15)


def test_epsilon_from_scale():
    mechanism = DiscreteLaplaceMechanism(2, scale=5)
    assert mechanism.epsilon == Fraction(2, 5)
    assert mechanism.events == (PureDP(0.4000000000000001),) or \
        Fraction(mechanism.events[0].epsilon) >= Fraction(2, 5)


def test_exact_pmf_ratio_between_neighbours_is_bounded_by_epsilon():
    # log P[x + Z = y] - log P[x' + Z = y] = (|y - x'| - |y - x|) / scale <= |x - x'| / scale
    mechanism = DiscreteLaplaceMechanism(3, epsilon=Fraction(1, 2))
    r = 1 / mechanism.scale
    worst = max((abs(y - 3) - abs(y - 0)) * r for y in range(-50, 50))
    assert worst == mechanism.epsilon


def test_budget_is_charged_after_release():
    budget = PrivacyFilter(1.0)
    mechanism = DiscreteLaplaceMechanism(1, epsilon=0.75, source=InsecureSeededSource(1))
    mechanism.release(10, budget=budget)
    with pytest.raises(BudgetExceededError):
        mechanism.release(10, budget=budget)


# -- noise law -------------------------------------------------------------------

@pytest.mark.parametrize("scale", [Fraction(1), Fraction(10, 3)])
def test_release_minus_input_is_discrete_laplace(scale):
    mechanism = DiscreteLaplaceMechanism(1, scale=scale, source=InsecureSeededSource(7))
    x = np.full(100_000, 1234, dtype=np.int64)
    noise = mechanism.release(x) - x
    pvalue, _ = chi_square_pvalue(noise, lambda lo, hi: discrete_laplace_mass(lo, hi, scale),
                                  integer_edges(float(scale)))
    assert pvalue > ALPHA
    assert float(np.var(noise)) == pytest.approx(mechanism.noise_variance, rel=0.05)


def test_outputs_are_exact_integers_without_overflow():
    mechanism = DiscreteLaplaceMechanism(1, epsilon=1, source=InsecureSeededSource(2))
    big = 10**30
    out = mechanism.release(big)
    assert isinstance(out, int) and abs(out - big) < 100
    edge = np.array([2**63 - 1] * 200, dtype=np.int64)
    out = mechanism.release(edge)
    assert all(abs(int(v) - (2**63 - 1)) < 100 for v in out)   # object array where needed
    assert mechanism.release(np.array([], dtype=np.int64)).shape == (0,)
    assert mechanism.release([[1, 2], [3, 4]]).shape == (2, 2)


# -- accuracy ------------------------------------------------------------------------

@mpmath.workdps(50)
def _tail(w, scale):
    r = mpmath.exp(-1 / mpmath.mpf(Fraction(scale).numerator) * Fraction(scale).denominator)
    return 2 * r ** (w + 1) / (1 + r)


@pytest.mark.parametrize("scale, beta, dimension", [(1, 0.05, 1), (3, 0.05, 1), ("10/3", 1e-6, 1),
                                                    (1, 0.05, 10_000), (7, 0.01, 50), (0.01, 0.5, 1)])
def test_half_width_is_the_smallest_valid_integer(scale, beta, dimension):
    w = discrete_laplace_half_width(scale, beta, dimension)

    @mpmath.workdps(50)
    def joint(width):
        return 1 - (1 - _tail(width, scale)) ** dimension

    assert joint(w) <= beta
    assert w == 0 or joint(w - 1) > beta
    # never wider than the lecture-notes union bound (rounded up to an integer)
    assert w <= math.ceil(laplace_linf_bound(Fraction(scale), beta, dimension))


def test_lecture_notes_example():
    # 10 000 name counts, epsilon = 1 (scale 1), 95 %: max error ln(10^4/0.05) ~ 12.2
    assert laplace_linf_bound(1, 0.05, 10_000) == pytest.approx(12.206, abs=1e-3)
    assert discrete_laplace_half_width(1, 0.05, 10_000) in (12, 13)


def test_confidence_intervals_cover_at_the_exact_rate():
    beta, dimension, repetitions = 0.1, 20, 20_000
    mechanism = DiscreteLaplaceMechanism(1, epsilon=Fraction(1, 2), source=InsecureSeededSource(9))
    truth = np.arange(dimension)
    w = mechanism.confidence_interval_half_width(beta, dimension)
    rows = mechanism.release(np.tile(truth, (repetitions, 1)))  # independent releases
    misses = int(np.sum(np.any(np.abs(rows - truth) > w, axis=1)))
    exact_rate = float(1 - (1 - _tail(w, 2)) ** dimension)
    assert exact_rate <= beta
    assert stats.binomtest(misses, repetitions, exact_rate).pvalue > ALPHA
    result = mechanism.release_with_error(truth, beta)
    assert isinstance(result, NoisyRelease) and result.confidence == pytest.approx(0.9)
    assert result.half_width == w


def test_noisy_release_bounds():
    result = NoisyRelease(np.array([1, 5]), 2, 0.05)
    assert result.lower.tolist() == [-1, 3] and result.upper.tolist() == [3, 7]
    scalar = NoisyRelease(10, 3, 0.05)
    assert (scalar.lower, scalar.upper) == (7, 13) and scalar.covers(12) and not scalar.covers(14)


# -- grid mechanism: exact rounding and the cost of rounding -----------------------

def test_round_to_grid_is_exact_round_half_up():
    k = 0
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, -0.49999999999999994,
                  2.0**52 + 1, 1e300 * 0 + 3.7, -3.7])
    expected = [1, 2, 3, 0, -1, 0, 0, 2**52 + 1, 4, -4]
    assert round_to_grid(x, k).tolist() == expected
    # huge values take the exact Python path
    out = round_to_grid(np.array([1e300]), 10)
    assert out.dtype == object and out[0] == math.floor(Fraction(1e300) * 1024 + Fraction(1, 2))
    # against exact rational rounding on random doubles and grids
    rng = np.random.default_rng(0)
    values = rng.normal(size=2000) * 10.0 ** rng.integers(-8, 8, size=2000)
    for k in (-3, 0, 7, 30):
        got = round_to_grid(values, k).tolist()
        want = [math.floor(Fraction(v) * Fraction(2) ** k + Fraction(1, 2)) for v in values]
        assert got == want


def test_grid_sensitivity_bound_holds_and_is_attained():
    rng = np.random.default_rng(1)
    grid = Fraction(1, 8)
    for sensitivity in (Fraction(1), Fraction(3, 10), Fraction(5, 8)):
        bound = grid_sensitivity_l1(sensitivity, grid, 1)
        a = rng.uniform(-5, 5, size=20000)
        b = a + rng.uniform(-1, 1, size=20000) * float(sensitivity)
        moved = np.abs(round_to_grid(a, 3) - round_to_grid(b, 3))
        assert moved.max() <= bound
        assert bound == math.ceil(sensitivity / grid)
    # attained: 0.49 -> 0 and 0.49 + 1 -> 1 (no growth) but 0.51 - 1 = -0.49 -> 0 and 0.51 -> 1
    assert grid_sensitivity_l1(Fraction(1), Fraction(1), 1) == 1
    # several coordinates: each can gain a step: 0.4 + 0.4 = 0.8 moves two coordinates by 1 each
    assert grid_sensitivity_l1(Fraction(4, 5), Fraction(1), 2) == 2
    moved = np.abs(round_to_grid(np.array([0.45, 0.45]), 0) - round_to_grid(np.array([0.55, 0.55]), 0))
    assert moved.sum() == 2 and grid_sensitivity_l1(Fraction(1, 5), Fraction(1), 2) == 2


def test_grid_events_include_the_rounding_cost():
    # sensitivity a multiple of the grid: no cost
    exact = GridLaplaceMechanism(1, epsilon=0.5)
    assert exact.grid == Fraction(1, 2**20) and exact.events == (PureDP(0.5),)
    assert exact.effective_sensitivity == 1
    # scale given: epsilon = ceil(Delta / g) g / scale
    mechanism = GridLaplaceMechanism("0.1", scale=1, grid_exponent=4)
    assert mechanism.effective_sensitivity == Fraction(2, 16)
    assert mechanism.events == (PureDP(0.125),)
    # epsilon given: the scale absorbs the rounding cost, the event is the target
    calibrated = GridLaplaceMechanism("0.1", epsilon=1, grid_exponent=4)
    assert calibrated.scale == Fraction(2, 16) and calibrated.events == (PureDP(1.0),)
    # vectors: l0 coordinates may each gain one step
    vector = GridLaplaceMechanism(1, scale=1, grid_exponent=2, dimension=3)
    assert vector.grid_sensitivity == 4 + 2 and vector.epsilon == Fraction(6, 4)
    single = GridLaplaceMechanism(1, scale=1, grid_exponent=2, dimension=3, l0_sensitivity=1)
    assert single.epsilon == 1


def test_grid_outputs_are_exact_grid_floats_and_noise_law():
    mechanism = GridLaplaceMechanism(1, epsilon=1, grid_exponent=3, source=InsecureSeededSource(4))
    x = 0.3  # rounds to 2/8
    out = np.array([mechanism.release(x) for _ in range(3000)])
    assert all(isinstance(v, float) for v in out[:5])
    units = out * 8
    assert np.array_equal(units, np.round(units))   # exact multiples of 1/8
    pvalue, _ = chi_square_pvalue((units - 2).astype(np.int64),
                                  lambda lo, hi: discrete_laplace_mass(lo, hi, 8),
                                  integer_edges(8.0))
    assert pvalue > ALPHA


def test_grid_clamps_to_declared_bounds():
    mechanism = GridLaplaceMechanism(1, scale=Fraction(1, 2**30), lower=-1, upper=2, dimension=3,
                                     source=InsecureSeededSource(5))
    out = mechanism.release([-50.0, 0.25, float("inf")])
    assert np.allclose(out, [-1, 0.25, 2], atol=1e-6)


def test_grid_half_width_covers():
    beta = 0.2
    mechanism = GridLaplaceMechanism(1, epsilon=1, grid_exponent=2, dimension=5,
                                     source=InsecureSeededSource(6))
    truth = np.array([0.1, 0.2, -3.3, 7.77, 1 / 3])
    misses = sum(not mechanism.release_with_error(truth, beta).covers(truth) for _ in range(2000))
    assert stats.binom.sf(misses - 1, 2000, beta) > ALPHA
    w = discrete_laplace_half_width(mechanism.grid_scale, beta, 5)
    assert mechanism.confidence_interval_half_width(beta) == w / 4 + 1 / 8


# -- bad inputs --------------------------------------------------------------------------

def test_bad_parameters():
    with pytest.raises(ValueError, match="exactly one of epsilon, scale"):
        DiscreteLaplaceMechanism(1)
    with pytest.raises(ValueError, match="exactly one of epsilon, scale"):
        DiscreteLaplaceMechanism(1, epsilon=1, scale=1)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        DiscreteLaplaceMechanism(1, epsilon=0)
    with pytest.raises(ValueError, match="sensitivity must be >= 0"):
        DiscreteLaplaceMechanism(-1, epsilon=1)
    with pytest.raises(ValueError, match="finite"):
        DiscreteLaplaceMechanism(1, scale=float("nan"))
    with pytest.raises(ValueError, match="sensitivity must be > 0"):
        DiscreteLaplaceMechanism(0, epsilon=1)
    with pytest.raises(ValueError, match="grid_exponent must be in"):
        GridLaplaceMechanism(1, epsilon=1, grid_exponent=5000)
    with pytest.raises(TypeError, match="grid_exponent must be an integer"):
        GridLaplaceMechanism(1, epsilon=1, grid_exponent=2.5)
    with pytest.raises(ValueError, match="lower must be <= upper"):
        GridLaplaceMechanism(1, epsilon=1, lower=2, upper=1)
    with pytest.raises(ValueError, match="both lower and upper"):
        GridLaplaceMechanism(1, epsilon=1, lower=2)
    with pytest.raises(ValueError, match="l0_sensitivity must be in"):
        GridLaplaceMechanism(1, epsilon=1, dimension=2, l0_sensitivity=3)
    with pytest.raises(ValueError, match="dimension must be"):
        GridLaplaceMechanism(1, epsilon=1, dimension=0)
    with pytest.raises(ValueError, match="beta must be in"):
        DiscreteLaplaceMechanism(1, epsilon=1).confidence_interval_half_width(0)


def test_bad_inputs():
    integer = DiscreteLaplaceMechanism(1, epsilon=1)
    with pytest.raises(TypeError, match="integers"):
        integer.release(1.5)
    with pytest.raises(TypeError, match="integers"):
        integer.release(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="bool"):
        integer.release(True)
    with pytest.raises(TypeError, match=r"value\[1\]"):
        integer.release(np.array([1, "a"], dtype=object))
    real = GridLaplaceMechanism(1, epsilon=1, dimension=2)
    with pytest.raises(ValueError, match="NaN"):
        real.release([1.0, float("nan")])
    with pytest.raises(ValueError, match="infinity"):
        real.release([1.0, float("inf")])
    with pytest.raises(ValueError, match="2 value"):
        real.release([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="real numbers"):
        real.release(["a", "b"])
    with pytest.raises(ValueError, match="2\\^53"):
        real.release(np.array([2**60, 0], dtype=np.int64))

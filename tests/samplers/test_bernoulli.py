"""Exact Bernoulli(p), Bernoulli(exp(-gamma)) and uniform integers."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from privloss.samplers import (InsecureSeededSource, RandomSource, bernoulli, bernoulli_exp,
                               uniform_integers)
from privloss.samplers import _batched, _exact
from tests.samplers._stats import ALPHA


class ScriptedSource(RandomSource):
    """uniform_below returns scripted values (spec 9.3); records the bounds asked."""

    def __init__(self, values):
        super().__init__()
        self.values = list(values)
        self.bounds = []

    def random_words(self, count):  # pragma: no cover - not used by the scalar path
        raise AssertionError("scripted source has no words")

    def uniform_below(self, m):
        self.bounds.append(m)
        value = self.values.pop(0)
        assert 0 <= value < m
        return value


class ScriptedArraySource(RandomSource):
    """uniform_below_array returns scripted arrays (for the batched kernels)."""

    def __init__(self, arrays):
        super().__init__()
        self.arrays = [np.asarray(a, dtype=np.int64) for a in arrays]
        self.bounds = []

    def random_words(self, count):  # pragma: no cover
        raise AssertionError("not used")

    def uniform_below_array(self, m, size):
        self.bounds.append(m)
        array = self.arrays.pop(0)
        assert array.shape == (size,)
        return array


def exp_minus(gamma) -> float:
    gamma = Fraction(gamma)
    return float(mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator))


def assert_binomial(successes: int, n: int, p: float):
    assert stats.binomtest(int(successes), n, p).pvalue > ALPHA, (successes, n, p)


# -- deterministic checks ---------------------------------------------------------

@pytest.mark.parametrize("n,d", [(0, 1), (1, 1), (0, 5), (3, 7), (7, 7), (5, 12)])
def test_bernoulli_ratio_exhaustive(n, d):
    # over all d equally likely outcomes of the uniform draw exactly n give 1
    ones = sum(_exact.bernoulli_ratio(ScriptedSource([u]), n, d) for u in range(d))
    assert ones == n
    p = Fraction(n, d)  # the public function reduces n/d first
    reduced = p.denominator
    assert sum(bernoulli(p, source=ScriptedSource([u])) for u in range(reduced)) == p.numerator


def test_algorithm_1_scripted_paths():
    # gamma = 1/2: first draw Bernoulli(gamma/1) = [U < 1] with U uniform on {0, 1}
    first_fails = ScriptedSource([1])
    assert bernoulli_exp(Fraction(1, 2), source=first_fails) is True  # K = 1, odd
    assert first_fails.bounds == [2]
    # A1 = 1 (U=0 < 1), A2 = Bernoulli(1/4) fails (U=3 of 4): K = 2, even -> 0
    second_fails = ScriptedSource([0, 3])
    assert bernoulli_exp(Fraction(1, 2), source=second_fails) is False
    assert second_fails.bounds == [2, 4]


def test_bernoulli_exp_zero_is_always_one():
    source = InsecureSeededSource(0)
    assert all(bernoulli_exp(0, source=source) for _ in range(200))
    assert bernoulli_exp(0, 10_000, source=source).all()
    assert bernoulli_exp("0/5", 10, source=source).all()


def test_batched_ratio_boundary_decisions():
    # num/den = 1/3, k = 32: x < floor(2**32/3) -> 1, x > floor -> 0, x == floor
    # -> Bernoulli(c/den) with c = 2**32 - 3*floor(2**32/3) = 1, on fresh bits.
    q = (1 << 32) // 3
    source = ScriptedArraySource([[q - 1, q + 1, q, 0], [0]])
    # fresh bits for the undecided element: first x=0 -> 0*3 < 1<<32 and decides 1
    result = _batched.bernoulli_ratio(source, np.array([1, 1, 1, 1]), 3)
    assert list(result) == [True, False, True, True]
    assert source.bounds == [1 << 32, 1 << 32]


def test_batched_ratio_undecided_element_can_be_zero():
    q = (1 << 32) // 3
    source = ScriptedArraySource([[q], [(1 << 32) - 1]])  # fresh x = max -> compare 1/3: 0
    assert list(_batched.bernoulli_ratio(source, np.array([1]), 3)) == [False]


# -- statistical checks ----------------------------------------------------------

PROBABILITIES = [0, 1, Fraction(1, 2), Fraction(1, 3), Fraction(2, 7), Fraction(999, 1000),
                 Fraction(12345, 2**31 + 11), Fraction(2**49, 3 * 2**49 + 1)]


@pytest.mark.parametrize("p", PROBABILITIES)
def test_bernoulli_batched(p):
    n = 200_000
    draws = bernoulli(p, n, source=InsecureSeededSource(11))
    assert draws.dtype == np.bool_ and draws.shape == (n,)
    assert_binomial(draws.sum(), n, float(p))


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(5, 8)])
def test_bernoulli_scalar(p):
    source = InsecureSeededSource(12)
    n = 20_000
    assert_binomial(sum(bernoulli(p, source=source) for _ in range(n)), n, float(p))


GAMMAS = [0, Fraction(1, 10), Fraction(1, 2), 1, Fraction(3, 2), Fraction(7, 3), 10,
          Fraction(10**6 + 1, 10**6)]


@pytest.mark.parametrize("gamma", GAMMAS)
def test_bernoulli_exp_batched(gamma):
    n = 400_000
    draws = bernoulli_exp(gamma, n, source=InsecureSeededSource(13))
    assert_binomial(draws.sum(), n, exp_minus(gamma))


@pytest.mark.parametrize("gamma", [Fraction(1, 2), Fraction(7, 3)])
def test_bernoulli_exp_scalar(gamma):
    source = InsecureSeededSource(14)
    n = 30_000
    assert_binomial(sum(bernoulli_exp(gamma, source=source) for _ in range(n)), n,
                    exp_minus(gamma))


# -- 64-bit limits: fallbacks agree in distribution ----------------------------------

def test_huge_denominators_fall_back_and_agree():
    source = InsecureSeededSource(15)
    n = 40_000
    p = Fraction(2**69, 2**70 + 1)  # denominator beyond int64: scalar loop
    assert_binomial(bernoulli(p, n, source=source).sum(), n, float(p))
    gamma = Fraction(2**70 + 1, 2**70)  # gamma just above 1, denominator 2**70
    assert_binomial(bernoulli_exp(gamma, n, source=source).sum(), n, exp_minus(gamma))


def test_ratio_kernel_with_few_bits_per_round():
    # den close to 2**62 leaves k = 1 bit per round: many rounds, still exact
    den = 2**61 + 12345
    num = den // 3
    source = InsecureSeededSource(16)
    n = 100_000
    draws = _batched.bernoulli_ratio(source, np.full(n, num, dtype=np.int64), den)
    assert_binomial(draws.sum(), n, num / den)


def test_chain_hands_over_to_python_ints_when_den_times_k_overflows():
    # den * 2 >= 2**62: the chain's step 2 must continue in Python integers
    den = 2**61 + 1
    num = den // 2
    n = 40_000
    source = InsecureSeededSource(17)
    draws = _batched.exp_chain_parity(source, np.full(n, num, dtype=np.int64), den)
    assert_binomial(draws.sum(), n, exp_minus(Fraction(num, den)))
    with pytest.raises(OverflowError):
        _batched.bernoulli_ratio(source, np.array([1]), 2**62)


def test_chain_started_late_matches_exact_continuation():
    # a chain for gamma = 1 started at step 9 (steps 1..8 passed) stops at K with
    # P[K > j | K > 8] = 8!/j!, so P[K odd | K > 8] = 8! * sum_{j>=8} (-1)^(j-8) / j!
    n = 200_000
    source = InsecureSeededSource(18)
    draws = _batched.exp_chain_parity(source, np.ones(n, dtype=np.int64), 1, start=9)
    with mpmath.workdps(30):
        p = mpmath.factorial(8) * mpmath.nsum(lambda j: (-1) ** (j - 8) / mpmath.factorial(j),
                                              [8, mpmath.inf])
    assert_binomial(draws.sum(), n, float(p))


def test_bernoulli_exp_minus_one_kernel():
    n = 400_000
    draws = _batched.bernoulli_exp_minus_one(InsecureSeededSource(19), n)
    assert_binomial(draws.sum(), n, exp_minus(1))


def test_geometric_kernel_matches_exact_pmf():
    n = 300_000
    v = _batched.geometric_exp_minus_one(InsecureSeededSource(20), n)
    ratio = exp_minus(1)
    top = 12
    expected = [(1 - ratio) * ratio**k * n for k in range(top)] + [ratio**top * n]
    observed = list(np.bincount(np.minimum(v, top), minlength=top + 1))
    assert stats.chisquare(observed, expected).pvalue > ALPHA


# -- uniform integers -------------------------------------------------------------

def test_uniform_integers_scalar_and_batched():
    source = InsecureSeededSource(21)
    values = uniform_integers(-3, 4, 70_000, source=source)
    assert values.dtype == np.int64 and values.min() == -3 and values.max() == 3
    assert stats.chisquare(np.bincount(values + 3, minlength=7)).pvalue > ALPHA
    scalar = [uniform_integers(-3, 4, source=source) for _ in range(200)]
    assert all(isinstance(v, int) and -3 <= v < 4 for v in scalar)
    assert uniform_integers(5, 6, 4, source=source).tolist() == [5] * 4


def test_uniform_integers_extreme_ranges():
    source = InsecureSeededSource(22)
    low = -(2**63)
    values = uniform_integers(low, low + 10, 1000, source=source)
    assert values.dtype == np.int64 and values.min() >= low and values.max() < low + 10
    big = uniform_integers(0, 10**30, (2, 3), source=source)
    assert big.shape == (2, 3) and big.dtype == object
    with pytest.raises(ValueError, match="high must be > low"):
        uniform_integers(3, 3)
    with pytest.raises(TypeError):
        uniform_integers(0.0, 3)


def test_shapes():
    source = InsecureSeededSource(23)
    assert bernoulli("1/2", (3, 4), source=source).shape == (3, 4)
    assert bernoulli_exp("1/2", (2, 0), source=source).shape == (2, 0)
    assert isinstance(bernoulli("1/2", source=source), bool)

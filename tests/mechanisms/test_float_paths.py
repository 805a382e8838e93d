"""The float / decimal paths that keep mpmath off a release's path give the
values the mpmath computations give: the discrete Laplace half-width
(:func:`privloss.mechanisms.accuracy._float_laplace_half_width`, else the
50-digit search) and variance (``discrete_laplace_variance_float``)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from privloss.mechanisms import accuracy
from privloss.samplers.exact_pmf import discrete_laplace_variance, discrete_laplace_variance_float


def _scales(count: int, seed: int):
    rng = random.Random(seed)
    out = [Fraction(10), Fraction(1, 3), Fraction(50), Fraction(1), Fraction(10 ** 6),
           Fraction(1, 1000), Fraction(1 << 30, 53687091), Fraction(14285714285714285, 10 ** 15)]
    for _ in range(count):        # strengths on the calibration's 2^-30 grid, and others
        out.append(Fraction(rng.randint(1, 10 ** 4)) / Fraction(rng.randint(1, 1 << 30), 1 << 30))
        out.append(Fraction(rng.uniform(0.01, 500)))
    return out


@pytest.mark.parametrize("beta, dimension", [(0.05, 1), (0.05, 9), (0.01, 1), (0.5, 3),
                                             (1e-6, 1), (0.999, 1)])
def test_float_half_width_is_the_mpmath_one(beta, dimension):
    decided = 0
    for scale in _scales(60, seed=dimension):
        fast = accuracy._float_laplace_half_width(scale, beta, dimension)
        exact = accuracy._mpmath_laplace_half_width(scale, beta, dimension)
        if fast is not None:
            decided += 1
            assert fast == exact, (scale, beta, dimension)
        assert accuracy.discrete_laplace_half_width(scale, beta, dimension) == exact
    assert decided >= 100


def test_float_half_width_defers_at_a_tie():
    # w = 1 exactly: tail(1) = 2 r^2 / (1 + r) = b for r = 1/2 -> b = 1/3
    scale = 1 / Fraction(0.6931471805599453)
    assert accuracy._float_laplace_half_width(scale, 1 / 3, 1) is None


def test_decimal_variance_is_the_mpmath_one():
    for scale in _scales(150, seed=11):
        assert discrete_laplace_variance_float(scale) == float(discrete_laplace_variance(scale))
    assert discrete_laplace_variance_float(Fraction(10 ** 25)) == \
        float(discrete_laplace_variance(Fraction(10 ** 25)))

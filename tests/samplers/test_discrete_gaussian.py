"""Discrete Gaussian sampler: goodness of fit against the exact pmf (alpha = 1e-4)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.samplers import (InsecureSeededSource, default_proposal_scale, discrete_gaussian,
                               discrete_gaussian_mass, discrete_gaussian_pmf,
                               discrete_gaussian_variance)
from privloss.samplers import _batched
from tests.samplers._stats import ALPHA, chi_square_pvalue, integer_edges


def assert_fits(samples, sigma_squared, reach=7.0):
    sigma_squared = Fraction(sigma_squared)
    sigma = math.sqrt(sigma_squared)
    edges = integer_edges(sigma, reach=reach)
    p, bins = chi_square_pvalue(
        samples, lambda lo, hi: discrete_gaussian_mass(lo, hi, sigma_squared), edges)
    assert bins >= 3, "too few bins for a meaningful test"
    assert p > ALPHA, (sigma_squared, p, bins)


# spec 9.1 list; sigma = 10**6 (sigma^2 = 10**12) is binned by ranges
FAST = [Fraction(1, 4), 1, Fraction(10, 3), 100, 10**12]
SLOW = [Fraction(1, 2), 2, 10, 10**4, 10**6, Fraction(10**15, 3), 10**16]


@pytest.mark.parametrize("sigma_squared", FAST)
def test_batched_fits_exact_pmf(sigma_squared):
    samples = discrete_gaussian(sigma_squared, 200_000, source=InsecureSeededSource(41))
    assert samples.dtype == np.int64
    assert_fits(samples, sigma_squared)


@pytest.mark.slow
@pytest.mark.parametrize("sigma_squared", FAST + SLOW)
def test_batched_fits_exact_pmf_large_n(sigma_squared):
    samples = discrete_gaussian(sigma_squared, 5_000_000, source=InsecureSeededSource(42))
    assert_fits(samples, sigma_squared)


@pytest.mark.parametrize("sigma_squared", [Fraction(10, 3), 10**12])
def test_scalar_fits_exact_pmf(sigma_squared):
    source = InsecureSeededSource(43)
    samples = [discrete_gaussian(sigma_squared, source=source) for _ in range(8_000)]
    assert all(type(v) is int for v in samples)
    assert_fits(np.array(samples), sigma_squared)


@pytest.mark.parametrize("sigma_squared,tau", [
    (Fraction(10, 3), 2),                  # the paper's t = floor(sigma) + 1
    (Fraction(10, 3), 1),                  # deliberately small t
    (Fraction(10, 3), 12),                 # spec 9.3: 5 floor(sigma) + 7 (floor(sigma) = 1)
    (100, 11),                             # the paper's t for sigma = 10
    (100, 57),                             # 5 floor(sigma) + 7
    (100, Fraction(23, 3)),                # rational proposal scale
])
def test_any_proposal_scale_gives_the_same_law(sigma_squared, tau):
    # correctness of Algorithm 3 does not depend on the proposal scale (spec 4)
    samples = discrete_gaussian(sigma_squared, 150_000, source=InsecureSeededSource(44),
                                proposal_scale=tau)
    assert_fits(samples, sigma_squared)


def test_default_proposal_scale():
    assert default_proposal_scale(Fraction(1, 4)) == 1          # paper's choice below 1
    assert default_proposal_scale(1) == 1
    assert default_proposal_scale(10**12) == 10**6              # sigma^2 / round(sigma)
    assert default_proposal_scale(Fraction(10, 3)) == Fraction(10, 6)  # round(1.826) = 2
    assert default_proposal_scale(2) == 2                       # round(1.414) = 1
    # round(sigma) computed exactly at a half-integer boundary: sigma = 2.5 -> 3
    assert default_proposal_scale(Fraction(25, 4)) == Fraction(25, 12)


def test_tiny_and_zero_sigma():
    source = InsecureSeededSource(45)
    # P[X != 0] = 2 e^-500 / Z: never observed
    assert not discrete_gaussian(Fraction(1, 1000), 10_000, source=source).any()
    assert discrete_gaussian(0, source=source) == 0
    assert not discrete_gaussian(0, 7, source=source).any()


def test_moments_detect_sigma_squared_versus_variance():
    # at sigma^2 = 1/4 the variance is 0.215, clearly below sigma^2
    sigma_squared = Fraction(1, 4)
    n = 400_000
    samples = discrete_gaussian(sigma_squared, n, source=InsecureSeededSource(46))
    variance = float(discrete_gaussian_variance(sigma_squared))
    assert abs(samples.mean()) < 4 * math.sqrt(variance / n)
    squares = samples.astype(float) ** 2
    assert abs(squares.mean() - variance) < 5 * squares.std() / math.sqrt(n)
    positives, negatives = int((samples > 0).sum()), int((samples < 0).sum())
    assert stats.binomtest(positives, positives + negatives).pvalue > ALPHA
    zero_mass = float(discrete_gaussian_pmf(0, sigma_squared))
    assert stats.binomtest(int((samples == 0).sum()), n, zero_mass).pvalue > ALPHA


def test_huge_denominator_falls_back_and_agrees():
    # sigma^2 = (2**70 + 1) / (3 * 2**70): gamma's denominator is far beyond
    # 64 bits, so the batched call runs the Python-integer sampler
    sigma_squared = Fraction(2**70 + 1, 3 * 2**70)
    assert not _batched.gaussian_fits(sigma_squared.numerator, sigma_squared.denominator,
                                      1, 1, sigma_squared.numerator, sigma_squared.denominator)
    samples = discrete_gaussian(sigma_squared, 20_000, source=InsecureSeededSource(47))
    assert samples.dtype == np.int64
    assert_fits(samples, sigma_squared)


def test_kernel_python_fallback_for_large_proposals(monkeypatch):
    # shrink the int64 room for gamma's numerator so that every proposal with
    # |y| > 4 takes the Python-integer acceptance test: same law
    monkeypatch.setattr(_batched, "_w_max", lambda b: 3)
    # N_Z(0, 10): sigma^2 = a/b = 10/1, proposal p/q = 3/1, shift e/f = 10/3
    samples = _batched.discrete_gaussian(InsecureSeededSource(48), 10, 1, 3, 1, 10, 3, 60_000)
    assert_fits(samples, 10)


def test_sigma_10_to_the_100_is_fast_and_exact_type():
    start = time.perf_counter()
    samples = discrete_gaussian(10**100, 1000, source=InsecureSeededSource(49))
    assert time.perf_counter() - start < 10
    assert samples.dtype == object and all(type(v) is int for v in samples)
    assert max(abs(v) for v in samples) < 10 * 10**50


def test_shapes_and_types():
    source = InsecureSeededSource(50)
    assert discrete_gaussian(2, (3, 2), source=source).shape == (3, 2)
    assert type(discrete_gaussian("10/3", source=source)) is int


def test_secure_default_source_fits():
    # not reproducible by design; a correct sampler fails with probability 1e-4
    assert_fits(discrete_gaussian(Fraction(10, 3), 100_000), Fraction(10, 3))


@pytest.mark.slow
@pytest.mark.parametrize("sigma_squared", [Fraction(1, 2), 10, 10**12])
def test_kolmogorov_distance_shrinks_like_root_n(sigma_squared):
    # spec 9.2: D_n < 1.63 / sqrt(n) (1% point of the KS limit, conservative for
    # discrete laws); checked at n = 10**4 .. 10**6 on independent streams
    sigma = math.sqrt(sigma_squared)
    for exponent, seed in ((4, 51), (5, 52), (6, 53)):
        n = 10**exponent
        samples = np.sort(discrete_gaussian(sigma_squared, n, source=InsecureSeededSource(seed)))
        # exact CDF at every distinct sample value (ranges for huge sigma are cheap:
        # evaluate at 400 quantile points of the sample instead of every value)
        points = np.unique(samples[np.linspace(0, n - 1, 400).astype(np.int64)])
        distance = 0.0
        for x in points.tolist():
            exact = float(discrete_gaussian_mass(None, x, sigma_squared))
            below = np.searchsorted(samples, x, side="right") / n
            before = np.searchsorted(samples, x, side="left") / n
            exact_before = exact - float(discrete_gaussian_pmf(x, sigma_squared))
            distance = max(distance, abs(below - exact), abs(before - exact_before))
        assert distance < 1.63 / math.sqrt(n), (sigma, n, distance)


@pytest.mark.slow
def test_scalar_path_large_n():
    source = InsecureSeededSource(54)
    samples = [discrete_gaussian(2, source=source) for _ in range(100_000)]
    assert_fits(np.array(samples), 2)

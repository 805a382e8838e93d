"""Discrete Laplace sampler: goodness of fit against the exact pmf (alpha = 1e-4)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.samplers import (InsecureSeededSource, discrete_laplace, discrete_laplace_mass,
                               discrete_laplace_variance)
from privloss.samplers import _batched
from tests.samplers._stats import ALPHA, chi_square_pvalue, integer_edges


def assert_fits(samples, scale):
    scale = Fraction(scale)
    edges = integer_edges(float(scale), reach=12)
    p, bins = chi_square_pvalue(samples, lambda lo, hi: discrete_laplace_mass(lo, hi, scale), edges)
    assert bins >= 3, "too few bins for a meaningful test"
    assert p > ALPHA, (scale, p, bins)


# spec 9.1: (s, t) in (1,1), (1,3), (3,2), (2,7), (1,1000); scale = t/s
FAST_SCALES = [1, 3, Fraction(2, 3), Fraction(7, 2), 1000, Fraction(10, 3), 10**6]
SLOW_SCALES = [Fraction(1, 3), Fraction(3, 2), Fraction(2, 7), 10, Fraction(1000, 7), 2**40,
               Fraction(2**45 + 1, 3)]


@pytest.mark.parametrize("scale", FAST_SCALES)
def test_batched_fits_exact_pmf(scale):
    samples = discrete_laplace(scale, 200_000, source=InsecureSeededSource(31))
    assert samples.dtype == np.int64
    assert_fits(samples, scale)


@pytest.mark.slow
@pytest.mark.parametrize("scale", FAST_SCALES + SLOW_SCALES)
def test_batched_fits_exact_pmf_large_n(scale):
    samples = discrete_laplace(scale, 5_000_000, source=InsecureSeededSource(32))
    assert_fits(samples, scale)


@pytest.mark.parametrize("scale", [Fraction(10, 3), 1000])
def test_scalar_fits_exact_pmf(scale):
    source = InsecureSeededSource(33)
    samples = [discrete_laplace(scale, source=source) for _ in range(15_000)]
    assert all(type(v) is int for v in samples)
    assert_fits(np.array(samples), scale)


def test_tiny_scale_is_almost_surely_zero():
    # P[Z != 0] = 2 e^-1000 / (1 + e^-1000): never observed
    samples = discrete_laplace(Fraction(1, 1000), 10_000, source=InsecureSeededSource(34))
    assert not samples.any()


def test_moments_and_symmetry():
    scale = Fraction(3, 2)
    n = 400_000
    samples = discrete_laplace(scale, n, source=InsecureSeededSource(35))
    variance = float(discrete_laplace_variance(scale))
    assert abs(samples.mean()) < 4 * np.sqrt(variance / n)
    # sample variance within 5 standard errors (fourth moment estimated from the data)
    centred = samples.astype(float) ** 2
    assert abs(centred.mean() - variance) < 5 * centred.std() / np.sqrt(n)
    # "-0" bug check: positives and negatives equally likely, zero has its exact mass
    positives, negatives = int((samples > 0).sum()), int((samples < 0).sum())
    assert stats.binomtest(positives, positives + negatives).pvalue > ALPHA
    zero_mass = float(discrete_laplace_mass(0, 0, scale))
    assert stats.binomtest(int((samples == 0).sum()), n, zero_mass).pvalue > ALPHA


def test_huge_scale_returns_python_ints_with_the_right_law():
    # t = 2**70 is beyond the int64 kernel: scalar loop, values beyond int64
    scale = 2**70
    samples = discrete_laplace(scale, 5_000, source=InsecureSeededSource(36))
    assert samples.dtype == object
    assert all(type(v) is int for v in samples)
    assert max(abs(v) for v in samples) > 2**63
    assert_fits(samples, scale)


def test_kernel_overflow_path_agrees_in_distribution(monkeypatch):
    # pretend int64 ends at 2**20: u + t*v overflows for v > 3 and values beyond
    # 2**20 must come back as Python ints in an object array
    monkeypatch.setattr(_batched, "INT64_MAX", 2**20)
    scale = 2**18
    samples = _batched.discrete_laplace(InsecureSeededSource(37), scale, 1, 30_000)
    assert samples.dtype == object
    assert max(abs(int(v)) for v in samples) > 2**20
    assert_fits(samples, scale)


def test_shapes_and_types():
    source = InsecureSeededSource(38)
    assert discrete_laplace(2, (4, 5), source=source).shape == (4, 5)
    assert discrete_laplace(2, 0, source=source).shape == (0,)
    assert type(discrete_laplace("5/2", source=source)) is int


def test_secure_default_source_fits():
    # not reproducible by design; a correct sampler fails with probability 1e-4
    assert_fits(discrete_laplace(Fraction(7, 2), 100_000), Fraction(7, 2))


def test_large_requests_are_drawn_in_chunks(monkeypatch):
    monkeypatch.setattr(_batched, "CHUNK", 4096)
    samples = discrete_laplace(Fraction(7, 2), 50_000, source=InsecureSeededSource(39))
    assert samples.dtype == np.int64 and samples.shape == (50_000,)
    assert_fits(samples, Fraction(7, 2))
    # a chunk that needs Python ints turns the whole result into an object array
    monkeypatch.setattr(_batched, "INT64_MAX", 2**20)
    wide = discrete_laplace(2**18, 20_000, source=InsecureSeededSource(40))
    assert wide.dtype == object and wide.shape == (20_000,)
    assert_fits(wide, 2**18)

"""Reference pmfs: spec test vectors, normalisation, and the two summation forms."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from privloss.samplers import exact_pmf
from privloss.samplers import (discrete_gaussian_mass, discrete_gaussian_normalizer,
                               discrete_gaussian_pmf, discrete_gaussian_variance,
                               discrete_laplace_mass, discrete_laplace_pmf,
                               discrete_laplace_variance)

# spec section 6.1 [derived, mpmath 30 digits]
NORMALIZERS = {"0.1": 1.0134758981204782, "0.25": 1.2713415221890152, "0.5": 1.7726372048266522,
               "1": 2.5066282880429055, "2": 3.5449077018110321, "10": 7.926654595212022,
               "100": 25.066282746310005}
VARIANCES = {"0.1": 0.013296725173624158, "0.25": 0.21501267508813849,
             "0.5": 0.49897913083282046, "1": 0.99999978876772808, "2": 1.9999999999999977,
             "10": 10.0}


@pytest.mark.parametrize("sigma_squared,value", NORMALIZERS.items())
def test_normalizer_spec_values(sigma_squared, value):
    assert float(discrete_gaussian_normalizer(sigma_squared)) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("sigma_squared,value", VARIANCES.items())
def test_variance_spec_values(sigma_squared, value):
    assert float(discrete_gaussian_variance(sigma_squared)) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("sigma_squared", [Fraction(1, 2), 1, 2, 5, Fraction(10, 3)])
def test_direct_and_poisson_forms_agree(sigma_squared):
    mp = mpmath.mp
    with mpmath.workdps(50):
        s2 = mp.mpf(Fraction(sigma_squared).numerator) / Fraction(sigma_squared).denominator
        direct_z, direct_second = exact_pmf._direct_sums(mp, s2, 40)
        dual = 1 / (4 * mp.pi ** 2 * s2)
        poisson_z = mp.sqrt(2 * mp.pi * s2) * exact_pmf._direct_sums(mp, dual, 40)[0]
        assert abs(direct_z - poisson_z) < mpmath.mpf(10) ** -35 * direct_z
        dual_z, dual_second = exact_pmf._direct_sums(mp, dual, 40)
        poisson_var = s2 * (1 - 4 * mp.pi ** 2 * s2 * dual_second / dual_z)
        assert abs(direct_second / direct_z - poisson_var) < mpmath.mpf(10) ** -35 * s2


@pytest.mark.parametrize("sigma_squared", [Fraction(1, 1000), Fraction(1, 4), Fraction(10, 3), 100])
def test_gaussian_pmf_is_normalised(sigma_squared):
    with mpmath.workdps(45):
        total = mpmath.fsum(discrete_gaussian_pmf(x, sigma_squared) for x in range(-300, 301))
    assert abs(total - 1) < 1e-30
    assert discrete_gaussian_mass(None, None, sigma_squared) == 1


@pytest.mark.parametrize("sigma_squared", [10**6, 10**12])
def test_gaussian_range_masses_partition_to_one(sigma_squared):
    sigma = int(mpmath.sqrt(sigma_squared))
    edges = [k * sigma // 3 for k in range(-18, 19)]
    parts = [discrete_gaussian_mass(None, edges[0] - 1, sigma_squared)]
    parts += [discrete_gaussian_mass(lo, hi - 1, sigma_squared) for lo, hi in zip(edges, edges[1:])]
    parts.append(discrete_gaussian_mass(edges[-1], None, sigma_squared))
    assert abs(mpmath.fsum(parts) - 1) < 1e-30
    # symmetry
    assert abs(discrete_gaussian_mass(sigma, 2 * sigma, sigma_squared)
               - discrete_gaussian_mass(-2 * sigma, -sigma, sigma_squared)) < 1e-35


def test_euler_maclaurin_matches_direct_sum():
    sigma_squared = 10**6  # sigma = 1000; a range of 5501 terms summed both ways
    with mpmath.workdps(50):
        s2 = mpmath.mpf(sigma_squared)
        direct = mpmath.fsum(mpmath.exp(-mpmath.mpf(y * y) / (2 * s2)) for y in range(-3000, 2501))
        em = exact_pmf._em_partial(mpmath.mp, s2, -3000, 2500)
        assert abs(direct - em) < mpmath.mpf(10) ** -35 * direct
        tail_direct = mpmath.fsum(mpmath.exp(-mpmath.mpf(y * y) / (2 * s2))
                                  for y in range(2000, 40001))
        tail_em = exact_pmf._em_partial(mpmath.mp, s2, 2000, mpmath.inf)
        assert abs(tail_direct - tail_em) < mpmath.mpf(10) ** -35 * tail_direct


def test_gaussian_variance_large_sigma_below_sigma_squared():
    # (for sigma^2 >~ 10 the deficit e^{-2 pi^2 sigma^2} is below any working precision)
    for sigma_squared in (Fraction(1, 3), 1, 3):
        assert discrete_gaussian_variance(sigma_squared) < sigma_squared
    # lower-order bound of spec 6.1: Var <= s (1 - 4 pi^2 s / (e^{4 pi^2 s} - 1))
    s = mpmath.mpf(1) / 4
    bound = s * (1 - 4 * mpmath.pi ** 2 * s / (mpmath.exp(4 * mpmath.pi ** 2 * s) - 1))
    assert discrete_gaussian_variance(Fraction(1, 4)) <= bound


@pytest.mark.parametrize("scale", [Fraction(1, 3), 1, Fraction(10, 3), 25])
def test_laplace_closed_forms_match_direct_sums(scale):
    with mpmath.workdps(45):
        reach = int(120 * max(1, float(scale)))  # neglected tail < e^-110
        pmf = [discrete_laplace_pmf(x, scale) for x in range(-reach, reach + 1)]
        assert abs(mpmath.fsum(pmf) - 1) < 1e-30
        second = mpmath.fsum(p * x * x for p, x in zip(pmf, range(-reach, reach + 1)))
        assert abs(second - discrete_laplace_variance(scale)) < 1e-30 * second
        window = mpmath.fsum(pmf[reach - 3:reach + 6])  # x = -3 .. 5
        assert abs(discrete_laplace_mass(-3, 5, scale) - window) < 1e-35
        assert abs(discrete_laplace_mass(None, -1, scale) + discrete_laplace_mass(0, None, scale)
                   - 1) < 1e-35


def test_laplace_variance_spec_formula():
    # spec 6.2: variance 2 e^{eps} / (e^{eps} - 1)^2 for scale 1/eps
    with mpmath.workdps(45):
        eps = mpmath.mpf(1) / 2
        expected = 2 * mpmath.exp(eps) / (mpmath.exp(eps) - 1) ** 2
        assert abs(discrete_laplace_variance(2) - expected) < 1e-35


def test_helpers_validate_parameters():
    with pytest.raises(ValueError):
        discrete_gaussian_pmf(0, 0)
    with pytest.raises(ValueError):
        discrete_laplace_pmf(0, -1)
    assert discrete_gaussian_mass(5, 4, 2) == 0

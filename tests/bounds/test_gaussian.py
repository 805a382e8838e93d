"""[CR] Section 6: analytic Gaussian (Lemma 6.1), Lemmas 6.2 and 6.3 (worked_values §5, §7, §9)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from privloss.bounds.gaussian import (analytic_gaussian_delta, analytic_gaussian_epsilon,
                                      analytic_gaussian_sigma, classical_gaussian_sigma,
                                      gaussian_histogram_epsilon, gaussian_histogram_sigma_simple,
                                      laplace_histogram_epsilon)

# worked_values §5: sigma by BW Algorithm 1 in mpmath, by root finding, and by GDP
SIGMAS = [(1, 1e-5, 3.730631634816), (0.5, 1e-6, 8.057618480725), (2, 1e-10, 3.025793544095),
          (0.1, 1e-5, 30.749566131977)]


@pytest.mark.parametrize("epsilon, delta, sigma", SIGMAS)
def test_analytic_sigma(epsilon, delta, sigma):
    value = analytic_gaussian_sigma(epsilon, delta)
    assert value == pytest.approx(sigma, rel=1e-9)
    assert analytic_gaussian_delta(value, epsilon) <= delta          # re-check: never optimistic


def test_classical_sigma_is_larger_and_refuses_large_epsilon():
    assert classical_gaussian_sigma(0.5, 1e-6) == pytest.approx(10.597605, rel=1e-6)
    assert classical_gaussian_sigma(0.5, 1e-6) > analytic_gaussian_sigma(0.5, 1e-6)
    with pytest.raises(ValueError, match="epsilon"):
        classical_gaussian_sigma(2.0, 1e-10)


# worked_values §5 and §7: exact Gaussian delta = mu-GDP curve with mu = 1/sigma
@pytest.mark.parametrize("sigma, epsilon, delta", [(1, 1, 0.126936737507), (2, 0.5, 0.0524403232877),
                                                   (0.5, 3, 0.183813076544), (1 / 3, 5, 0.319391879906),
                                                   (1, 0, 0.382924922548)])
def test_exact_delta(sigma, epsilon, delta):
    assert analytic_gaussian_delta(sigma, epsilon) == pytest.approx(delta, rel=1e-9)


def test_exact_epsilon():
    assert analytic_gaussian_epsilon(1.0, 1e-5) == pytest.approx(4.3771780957, rel=1e-9)
    assert analytic_gaussian_epsilon(2.0, 1e-6) == pytest.approx(2.2540846502, rel=1e-9)


def test_section6_comparison_point():
    # worked_values §9: Delta0 = 10, Delta_inf = 1, b = 10, sigma = sqrt(200), delta = 1e-6
    assert laplace_histogram_epsilon(10, 1, 10, 1e-6) == pytest.approx(0.9993709057, rel=1e-9)
    assert gaussian_histogram_epsilon(10, 1, math.sqrt(200), 1e-6, conversion="simple") == \
        pytest.approx(1.2003940002, rel=1e-9)
    assert gaussian_histogram_epsilon(10, 1, math.sqrt(200), 1e-6) == pytest.approx(1.0140742547, rel=1e-9)
    assert analytic_gaussian_epsilon(math.sqrt(200), 1e-6, sensitivity=math.sqrt(10)) == \
        pytest.approx(0.9405155265, rel=1e-9)


def test_lemma_6_3_sigma_solver():
    sigma = gaussian_histogram_sigma_simple(10, 1, 1.2003940002, 1e-6)
    assert sigma == pytest.approx(math.sqrt(200), rel=1e-8)
    assert gaussian_histogram_epsilon(10, 1, sigma, 1e-6, conversion="simple") <= 1.2003940002


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(0.0, 20.0), delta=st.floats(1e-15, 0.9), sensitivity=st.floats(0.01, 100.0))
def test_calibrated_sigma_never_exceeds_target(epsilon, delta, sensitivity):
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity=sensitivity)
    assert analytic_gaussian_delta(sigma, epsilon, sensitivity=sensitivity) <= delta
    if delta > 1e-12:      # tight too, where float resolution allows telling
        assert analytic_gaussian_delta(sigma * (1 - 1e-6), epsilon, sensitivity=sensitivity) > delta * (1 - 1e-3)

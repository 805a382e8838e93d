"""Discrete and grid Gaussian mechanisms: zCDP events, CKS Theorem 7 (exact delta),
calibration methods, exact noise law, confidence half-widths, bad inputs.

Statistical tests: InsecureSeededSource, fixed seeds, ALPHA = 1e-4 each.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from privloss.accounting import PrivacyFilter
from privloss.bounds.gaussian import analytic_gaussian_delta
from privloss.bounds.zcdp import zcdp_rho_for
from privloss.events import ZCDP, ApproxDP
from privloss.mechanisms.accuracy import discrete_gaussian_half_width
from privloss.mechanisms.gaussian import (CALIBRATION_METHODS, DiscreteGaussianMechanism,
                                          GridGaussianMechanism, discrete_gaussian_delta,
                                          discrete_gaussian_epsilon)
from privloss.samplers import (InsecureSeededSource, discrete_gaussian_mass,
                               discrete_gaussian_pmf)
from tests.samplers._stats import ALPHA, chi_square_pvalue, integer_edges


# -- zCDP events ([CKS] Theorem 4) --------------------------------------------------

@pytest.mark.parametrize("sensitivity, sigma_squared", [(1, 1), (1, 4), (2, 10), (3, "5/2"),
                                                        (Fraction(3, 2), Fraction(7, 3))])
def test_events_are_zcdp_delta_squared_over_two_sigma_squared(sensitivity, sigma_squared):
    mechanism = DiscreteGaussianMechanism(sensitivity, sigma_squared=sigma_squared)
    rho = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma_squared))
    assert mechanism.rho == rho
    (event,) = mechanism.events
    assert isinstance(event, ZCDP) and event.xi == 0
    assert Fraction(event.rho) >= rho and event.rho == pytest.approx(float(rho), rel=1e-15)


def test_rho_and_sigma_parameters():
    assert DiscreteGaussianMechanism(2, rho=Fraction(1, 8)).sigma_squared == 16
    assert DiscreteGaussianMechanism(1, sigma=3).sigma_squared == 9
    assert DiscreteGaussianMechanism(1, rho=0.5).events == (ZCDP(0.5),)
    zero = DiscreteGaussianMechanism(0, sigma_squared=0, source=InsecureSeededSource(1))
    assert zero.events == (ZCDP(0.0),) and zero.release(5) == 5


# -- exact (epsilon, delta) ([CKS] Theorem 7) ------------------------------------------

# spec samplers.md §7.2 test vectors (two independent methods agree to 12 digits)
THEOREM_7 = [(1, 1, 1, 0.141351339406), (4, 0.5, 1, 0.0540072236942), (10, 1, 2, 0.0234836088779),
             ("5/2", 0.3, 3, 0.606946742755), (100, 0.2, 1, 0.000939922547345)]


@pytest.mark.parametrize("sigma_squared, epsilon, sensitivity, delta", THEOREM_7)
def test_theorem_7_matches_spec_vectors(sigma_squared, epsilon, sensitivity, delta):
    value = discrete_gaussian_delta(epsilon, sigma_squared, sensitivity)
    assert value == pytest.approx(delta, rel=1e-10)
    assert value >= delta * (1 - 1e-11)   # rounded up, not down


@mpmath.workdps(50)
def _hockey_stick(epsilon, sigma_squared, shift):
    """sum_y max(0, P[Y = y] - e^eps P[Y = y - shift]), summed directly."""
    total = mpmath.mpf(0)
    reach = int(40 * math.sqrt(float(Fraction(sigma_squared)))) + 40 + shift
    for y in range(-reach, reach):
        gap = discrete_gaussian_pmf(y, sigma_squared) - mpmath.e ** epsilon * \
            discrete_gaussian_pmf(y - shift, sigma_squared)
        total += max(gap, 0)
    return float(total)


def test_theorem_7_equals_direct_hockey_stick_divergence():
    for sigma_squared, epsilon, shift in [(2, 0.7, 1), (3, 0.2, 2)]:
        assert discrete_gaussian_delta(epsilon, sigma_squared, shift) == pytest.approx(
            _hockey_stick(epsilon, sigma_squared, shift), rel=1e-9)


def test_delta_is_monotone_in_the_shift():
    # the formula with sensitivity Delta covers every integer shift d <= Delta
    for sigma_squared, epsilon in [(1, 0.5), (4, 1.0), ("5/2", 0.3)]:
        deltas = [discrete_gaussian_delta(epsilon, sigma_squared, d) for d in range(1, 6)]
        assert deltas == sorted(deltas)


def test_discrete_versus_continuous_gaussian():
    # spec: the discrete delta is slightly worse for small sigma (0.1414 vs 0.1269)
    assert analytic_gaussian_delta(1.0, 1.0) == pytest.approx(0.126936737507, rel=1e-9)
    assert discrete_gaussian_delta(1, 1, 1) > analytic_gaussian_delta(1.0, 1.0)
    # and converges to it for large sigma
    assert discrete_gaussian_delta(1, 400, 1) == pytest.approx(
        analytic_gaussian_delta(20.0, 1.0), rel=1e-6)


def test_epsilon_for_delta_inverts_the_curve():
    mechanism = DiscreteGaussianMechanism(1, sigma_squared=4)
    epsilon = mechanism.epsilon_for_delta(1e-6)
    assert mechanism.delta_for_epsilon(epsilon) <= 1e-6
    assert mechanism.delta_for_epsilon(epsilon * (1 - 1e-6)) > 1e-6
    assert discrete_gaussian_epsilon(0, 4) == math.inf
    assert discrete_gaussian_epsilon(1, 4) == 0.0
    assert discrete_gaussian_delta(0.5, 4, 0) == 0.0 and discrete_gaussian_delta(0.5, 0, 1) == 1.0


# -- calibration -----------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, delta, sensitivity", [(0.5, 1e-6, 1), (1.0, 1e-5, 2),
                                                         (0.9, 1e-10, 1)])
def test_every_calibration_method_meets_the_target_exactly(epsilon, delta, sensitivity):
    sigmas = {}
    for method in CALIBRATION_METHODS:
        if method == "classical" and epsilon >= 1:
            continue  # Dwork-Roth's theorem needs epsilon < 1
        mechanism = DiscreteGaussianMechanism.calibrate(epsilon, delta, sensitivity, method=method)
        exact_delta = discrete_gaussian_delta(epsilon, mechanism.sigma_squared, sensitivity)
        assert exact_delta <= delta, method
        sigmas[method] = mechanism.sigma_squared
        if method == "zcdp":
            (event,) = mechanism.events
            assert isinstance(event, ZCDP) and event.rho <= zcdp_rho_for(epsilon, delta)
        else:
            assert mechanism.events == (ApproxDP(epsilon, exact_delta),)
    # the exact search is the smallest, within its 2^-20 relative tolerance
    assert all(sigmas["exact"] <= s * (1 + 2**-19) for s in sigmas.values())
    assert sigmas["exact"] < sigmas.get("classical", math.inf) and sigmas["exact"] < sigmas["zcdp"]
    # one step less noise fails the exact check
    assert discrete_gaussian_delta(epsilon, sigmas["exact"] * (1 - 2**-18), sensitivity) > delta


def test_calibrated_mechanism_fits_the_budget_it_was_calibrated_for():
    # one mechanism: every interaction model agrees; a fully-adaptive filter's
    # default policy keeps 10% of delta for its Renyi rule, so use a one-rule policy
    from privloss.accounting.fully_adaptive import FilterPolicy
    budget = PrivacyFilter(0.5, 1e-6, policy=FilterPolicy(0.5, 1e-6, ("basic",), (0.0,)))
    mechanism = DiscreteGaussianMechanism.calibrate(0.5, 1e-6, source=InsecureSeededSource(3))
    mechanism.release(10, budget=budget)
    with pytest.raises(ValueError, match="one value at a time"):
        mechanism.release([1, 2])
    vector = DiscreteGaussianMechanism.calibrate(0.5, 1e-6, charge="zcdp")
    assert isinstance(vector.events[0], ZCDP)


def test_calibration_bad_inputs():
    with pytest.raises(ValueError, match="method must be"):
        DiscreteGaussianMechanism.calibrate(1, 1e-6, method="magic")
    with pytest.raises(ValueError, match="epsilon must be < 1|epsilon must be in \\(0, 1\\)"):
        DiscreteGaussianMechanism.calibrate(2, 1e-6, method="classical")
    with pytest.raises(ValueError, match="delta must be in"):
        DiscreteGaussianMechanism.calibrate(1, 0)
    with pytest.raises(ValueError, match="integer"):
        DiscreteGaussianMechanism.calibrate(1, 1e-6, Fraction(3, 2))
    with pytest.raises(ValueError, match="charge must be"):
        DiscreteGaussianMechanism.calibrate(1, 1e-6, charge="pure")


# -- noise law and accuracy -------------------------------------------------------------

@pytest.mark.parametrize("sigma_squared", [Fraction(1, 2), Fraction(10, 3), Fraction(400)])
def test_release_minus_input_is_discrete_gaussian(sigma_squared):
    mechanism = DiscreteGaussianMechanism(1, sigma_squared=sigma_squared,
                                          source=InsecureSeededSource(8))
    x = np.full(100_000, -77, dtype=np.int64)
    noise = mechanism.release(x) + 77
    scale = math.sqrt(float(sigma_squared))
    pvalue, _ = chi_square_pvalue(noise, lambda lo, hi: discrete_gaussian_mass(lo, hi, sigma_squared),
                                  integer_edges(scale, reach=8.0))
    assert pvalue > ALPHA
    assert float(np.var(noise)) == pytest.approx(mechanism.noise_variance, rel=0.05)


@pytest.mark.parametrize("sigma_squared, beta, dimension", [(1, 0.05, 1), ("10/3", 1e-3, 1),
                                                             (100, 0.05, 30), (10**6, 0.01, 1)])
def test_half_width_is_the_smallest_valid_integer(sigma_squared, beta, dimension):
    w = discrete_gaussian_half_width(sigma_squared, beta, dimension)

    def joint(width):
        tail = 2 * discrete_gaussian_mass(width + 1, None, sigma_squared)
        return 1 - (1 - tail) ** dimension

    assert joint(w) <= beta and (w == 0 or joint(w - 1) > beta)
    sigma = math.sqrt(float(Fraction(sigma_squared)))
    assert w <= math.ceil(sigma * math.sqrt(2 * math.log(2 * dimension / beta)))  # subgaussian


def test_confidence_intervals_cover_at_the_exact_rate():
    beta, dimension, repetitions = 0.1, 10, 20_000
    mechanism = DiscreteGaussianMechanism(1, sigma_squared=9, source=InsecureSeededSource(10))
    truth = np.arange(dimension) * 1000
    w = mechanism.confidence_interval_half_width(beta, dimension)
    # one release per row: rows are independent releases of the 10-vector
    rows = mechanism.release(np.tile(truth, (repetitions, 1)))
    misses = int(np.sum(np.any(np.abs(rows - truth) > w, axis=1)))
    tail = 2 * discrete_gaussian_mass(w + 1, None, 9)
    exact_rate = float(1 - (1 - tail) ** dimension)
    assert exact_rate <= beta
    assert stats.binomtest(misses, repetitions, exact_rate).pvalue > ALPHA
    result = mechanism.release_with_error(truth, beta)
    assert result.half_width == w and result.beta == beta


# -- grid Gaussian ----------------------------------------------------------------------

def test_grid_gaussian_events_include_rounding():
    exact = GridGaussianMechanism(1, rho=Fraction(1, 2))
    assert exact.grid == Fraction(1, 2**20)
    assert exact.events == (ZCDP(0.5),) and exact.sigma_squared == 1
    coarse = GridGaussianMechanism("0.1", sigma=1, grid_exponent=4)
    assert coarse.rho == Fraction(2**2, 2 * 16**2)       # ceil(1.6) = 2 grid steps
    assert coarse.effective_sensitivity == 0.125
    vector = GridGaussianMechanism(1, sigma=2, grid_exponent=3, dimension=4)
    bound = (1 * 8 + 2) ** 2 / (2 * 4 * 64)             # (Delta/g + sqrt(l0))^2 / (2 sigma_g^2)
    assert float(vector.rho) >= bound and float(vector.rho) == pytest.approx(bound, rel=1e-9)
    calibrated = GridGaussianMechanism("0.1", rho=Fraction(1, 4), grid_exponent=4)
    assert Fraction(calibrated.events[0].rho) <= Fraction(1, 4)


def test_grid_gaussian_rounding_bound_for_vectors_holds():
    rng = np.random.default_rng(3)
    from privloss.mechanisms.laplace import round_to_grid
    k, sensitivity, dimension = 2, 0.3, 5
    grid = 2.0 ** -k
    worst = 0.0
    for _ in range(3000):
        a = rng.uniform(-3, 3, size=dimension)
        direction = rng.normal(size=dimension)
        b = a + direction / np.linalg.norm(direction) * sensitivity * rng.uniform()
        worst = max(worst, float(np.linalg.norm(round_to_grid(a, k) - round_to_grid(b, k))))
    assert worst <= sensitivity / grid + math.sqrt(dimension)


def test_grid_gaussian_outputs_on_grid_and_exact_approx_dp():
    mechanism = GridGaussianMechanism(1, sigma=2, grid_exponent=0, approx_dp_epsilon=1,
                                      source=InsecureSeededSource(11))
    (event,) = mechanism.events
    assert event == ApproxDP(1.0, discrete_gaussian_delta(1, 4, 1))
    outputs = [mechanism.release(0.3) for _ in range(200)]
    assert all(float(v).is_integer() for v in outputs)
    with pytest.raises(ValueError, match="l0_sensitivity = 1"):
        GridGaussianMechanism(1, sigma=2, dimension=2, approx_dp_epsilon=1)


def test_grid_gaussian_half_width_covers():
    beta = 0.2
    mechanism = GridGaussianMechanism(1, sigma=1, grid_exponent=1, dimension=3,
                                      source=InsecureSeededSource(12))
    truth = np.array([0.3, -2.71, 9.9])
    misses = sum(not mechanism.release_with_error(truth, beta).covers(truth) for _ in range(2000))
    assert stats.binom.sf(misses - 1, 2000, beta) > ALPHA


def test_bad_gaussian_parameters_and_inputs():
    with pytest.raises(ValueError, match="exactly one of sigma_squared, sigma, rho"):
        DiscreteGaussianMechanism(1)
    with pytest.raises(ValueError, match="rho must be > 0"):
        DiscreteGaussianMechanism(1, rho=0)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        DiscreteGaussianMechanism(1, sigma_squared=0)
    with pytest.raises(TypeError, match="integers"):
        DiscreteGaussianMechanism(1, sigma=1).release(0.5)
    with pytest.raises(ValueError, match="NaN"):
        GridGaussianMechanism(1, sigma=1).release(float("nan"))

"""Randomized response: guarantee, exact report law, unbiased estimators and their
variances, confidence half-widths, bad inputs.

Statistical tests use InsecureSeededSource with fixed seeds and reject at
ALPHA = 1e-4 each (fewer than 20 such tests here: family-wise error < 0.2%).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.accounting import BudgetExceededError, PrivacyFilter
from privloss.events import PureDP
from privloss.mechanisms.randomized_response import (KaryRandomizedResponse, RandomizedResponse,
                                                     binary_rr_variance, kary_rr_probabilities,
                                                     kary_rr_variance)
from privloss.samplers import InsecureSeededSource

ALPHA = 1e-4


def two_sided_z_ok(mean, expected, standard_error):
    z = (mean - expected) / standard_error
    return 2 * stats.norm.sf(abs(z)) > ALPHA


# -- guarantee -----------------------------------------------------------------

@pytest.mark.parametrize("epsilon", [0.5, 1, "1/3", Fraction(2, 7), 3.0])
def test_events_are_pure_dp_epsilon_rounded_up(epsilon):
    for mechanism in (RandomizedResponse(epsilon), KaryRandomizedResponse(epsilon, 5)):
        (event,) = mechanism.events
        assert isinstance(event, PureDP)
        exact = Fraction(epsilon) if not isinstance(epsilon, float) else Fraction(epsilon)
        assert Fraction(event.epsilon) >= exact
        assert event.epsilon == pytest.approx(float(exact), rel=1e-15)


def test_probability_ratio_is_exactly_e_epsilon():
    for k in (2, 3, 10):
        p, q = kary_rr_probabilities(1.3, k)
        assert p / q == pytest.approx(math.exp(1.3), rel=1e-14)
        assert p + (k - 1) * q == pytest.approx(1.0, rel=1e-15)
    p, q = kary_rr_probabilities(2000.0, 4)  # no overflow for huge epsilon
    assert p == 1.0 and q == 0.0


def test_release_charges_the_budget_per_user_event():
    budget = PrivacyFilter(1.0)
    mechanism = RandomizedResponse(0.6, source=InsecureSeededSource(1))
    mechanism.release([0, 1, 1], budget=budget)
    with pytest.raises(BudgetExceededError):
        mechanism.release([0, 1, 1], budget=budget)


# -- exact report law ------------------------------------------------------------

@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(2), Fraction(13, 5)])
def test_binary_reports_keep_the_bit_with_probability_p(epsilon):
    n = 200_000
    bits = np.arange(n) % 2
    reports = RandomizedResponse(epsilon, source=InsecureSeededSource(11)).release(bits)
    kept = int(np.sum(reports == bits))
    p = math.exp(float(epsilon)) / (1 + math.exp(float(epsilon)))
    assert stats.binomtest(kept, n, p).pvalue > ALPHA
    # the law does not depend on the bit: same keep rate for zeros and ones
    table = [[int(np.sum((reports == bits) & (bits == b))), int(np.sum((reports != bits) & (bits == b)))]
             for b in (0, 1)]
    assert stats.chi2_contingency(table)[1] > ALPHA


def test_kary_reports_follow_the_generalized_rr_law():
    k, n, epsilon = 6, 300_000, Fraction(3, 2)
    values = np.arange(n) % k
    reports = KaryRandomizedResponse(epsilon, k, source=InsecureSeededSource(12)).release(values)
    offsets = (reports - values) % k
    p, q = kary_rr_probabilities(float(epsilon), k)
    expected = n * np.array([p] + [q] * (k - 1))
    observed = np.bincount(offsets, minlength=k)
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def test_randomness_used_does_not_depend_on_the_values():
    # same seed, different user values: identical offsets (report - value mod k),
    # so the number of rejection rounds - the running time - leaks nothing
    k = 7
    a = KaryRandomizedResponse(1, k, source=InsecureSeededSource(5)).release(np.zeros(1000, dtype=int))
    values = np.arange(1000) % k
    b = KaryRandomizedResponse(1, k, source=InsecureSeededSource(5)).release(values)
    assert np.array_equal(a % k, (b - values) % k)


def test_epsilon_zero_reports_are_uniform_and_cannot_be_estimated():
    mechanism = KaryRandomizedResponse(0, 4, source=InsecureSeededSource(3))
    reports = mechanism.release(np.zeros(40_000, dtype=int))
    assert stats.chisquare(np.bincount(reports, minlength=4)).pvalue > ALPHA
    assert mechanism.events == (PureDP(0.0),)
    with pytest.raises(ValueError, match="no information"):
        mechanism.estimate(reports)


# -- estimators -------------------------------------------------------------------

def test_binary_variance_formula_matches_direct_computation():
    epsilon, n = 0.8, 123
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    assert binary_rr_variance(epsilon, n) == pytest.approx(p * (1 - p) / (n * (2 * p - 1) ** 2),
                                                          rel=1e-13)
    # k = 2 case of the k-ary formula, for any truth
    for f1 in (0.0, 0.3, 1.0):
        kary = kary_rr_variance(epsilon, 2, n, [1 - f1, f1])
        assert kary == pytest.approx([binary_rr_variance(epsilon, n)] * 2, rel=1e-13)


def test_kary_variance_formula_matches_sum_of_bernoulli_variances():
    epsilon, k, n = 1.1, 5, 400
    f = np.array([0.5, 0.25, 0.125, 0.125, 0.0])
    p, q = kary_rr_probabilities(epsilon, k)
    direct = (n * f * p * (1 - p) + n * (1 - f) * q * (1 - q)) / (n * (p - q)) ** 2
    assert kary_rr_variance(epsilon, k, n, f) == pytest.approx(direct, rel=1e-12)
    small = kary_rr_variance(epsilon, k, 10**6, np.zeros(k))[0]
    assert small == pytest.approx((math.exp(epsilon) + k - 2) / (10**6 * math.expm1(epsilon) ** 2),
                                  rel=1e-12)


def _repeat_binary(epsilon, bits, repetitions, seed):
    mechanism = RandomizedResponse(epsilon, source=InsecureSeededSource(seed))
    n = bits.size
    reports = mechanism.release(np.tile(bits, repetitions)).reshape(repetitions, n)
    return [mechanism.estimate(row) for row in reports]


def test_binary_estimator_is_unbiased_with_the_exact_variance():
    n, ones, repetitions, epsilon = 500, 150, 4000, 0.7
    bits = np.zeros(n, dtype=int)
    bits[:ones] = 1
    estimates = _repeat_binary(epsilon, bits, repetitions, seed=21)
    values = np.array([e.proportion for e in estimates])
    exact_var = binary_rr_variance(epsilon, n)
    assert all(e.variance == exact_var for e in estimates)
    assert two_sided_z_ok(values.mean(), ones / n, math.sqrt(exact_var / repetitions))
    # s^2 / sigma^2 ~ chi2(R-1): the estimator is a sum of 500 Bernoullis (normal)
    statistic = (repetitions - 1) * values.var(ddof=1) / exact_var
    cdf = stats.chi2.cdf(statistic, repetitions - 1)
    assert ALPHA / 2 < cdf < 1 - ALPHA / 2
    counts = np.array([e.count for e in estimates])
    assert two_sided_z_ok(counts.mean(), ones, n * math.sqrt(exact_var / repetitions))


def test_kary_estimator_unbiased_variance_and_variance_estimate():
    k, n, repetitions, epsilon = 4, 400, 3000, Fraction(1)
    truth = np.array([200, 120, 80, 0])
    values = np.repeat(np.arange(k), truth)
    mechanism = KaryRandomizedResponse(epsilon, k, source=InsecureSeededSource(22))
    reports = mechanism.release(np.tile(values, repetitions)).reshape(repetitions, n)
    estimates = [mechanism.estimate(row) for row in reports]
    proportions = np.array([e.proportions for e in estimates])
    variance_estimates = np.array([e.variance_estimates for e in estimates])
    f = truth / n
    exact = kary_rr_variance(1.0, k, n, f)
    assert np.allclose(proportions.sum(axis=1), 1.0)
    for v in range(k):
        assert two_sided_z_ok(proportions[:, v].mean(), f[v], math.sqrt(exact[v] / repetitions))
        statistic = (repetitions - 1) * proportions[:, v].var(ddof=1) / exact[v]
        cdf = stats.chi2.cdf(statistic, repetitions - 1)
        assert ALPHA / 2 / k < cdf < 1 - ALPHA / 2 / k
        # the variance estimate is unbiased: its mean matches the exact variance
        spread = variance_estimates[:, v].std(ddof=1) / math.sqrt(repetitions)
        assert two_sided_z_ok(variance_estimates[:, v].mean(), exact[v], spread)


def test_hoeffding_half_width_covers_with_probability_at_least_one_minus_beta():
    n, repetitions, epsilon, beta = 300, 3000, 1.0, 0.1
    bits = (np.arange(n) < 90).astype(int)
    estimates = _repeat_binary(epsilon, bits, repetitions, seed=23)
    misses = sum(abs(e.proportion - 0.3) > e.half_width(beta) for e in estimates)
    # one-sided: more misses than Binomial(R, beta) allows would refute coverage
    assert stats.binom.sf(misses - 1, repetitions, beta) > ALPHA
    e = estimates[0]
    low, high = e.interval(beta)
    assert high - low == pytest.approx(2 * e.half_width(beta))
    assert e.half_width(beta) == pytest.approx(
        (math.e + 1) / (math.e - 1) * math.sqrt(math.log(2 / beta) / (2 * n)), rel=1e-12)


def test_kary_simultaneous_half_width_covers():
    k, n, repetitions, beta = 5, 250, 2000, 0.1
    values = np.arange(n) % k
    mechanism = KaryRandomizedResponse(Fraction(1, 2), k, source=InsecureSeededSource(24))
    reports = mechanism.release(np.tile(values, repetitions)).reshape(repetitions, n)
    misses = 0
    for row in reports:
        estimate = mechanism.estimate(row)
        misses += bool(np.any(np.abs(estimate.proportions - 0.2) > estimate.half_width(beta)))
    assert stats.binom.sf(misses - 1, repetitions, beta) > ALPHA
    assert estimate.half_width(beta, simultaneous=False) < estimate.half_width(beta)


def test_post_processing_helpers():
    mechanism = KaryRandomizedResponse(0.2, 3, categories=["a", "b", "c"],
                                       source=InsecureSeededSource(4))
    reports = mechanism.release(["a"] * 10 + ["b"] * 3)
    assert set(reports.tolist()) <= {"a", "b", "c"}
    assert mechanism.release("c") in {"a", "b", "c"}
    estimate = mechanism.estimate(reports)
    projected = estimate.projected()
    assert projected.sum() == pytest.approx(1.0) and (projected >= 0).all()
    assert (estimate.clipped() >= 0).all() and (estimate.clipped() <= 1).all()
    assert set(estimate.as_dict()) == {"a", "b", "c"}
    binary = RandomizedResponse(0.1, source=InsecureSeededSource(4)).estimate([1, 1, 1])
    assert binary.proportion > 1 and binary.clipped() == 1.0


def test_scalar_release_returns_python_int():
    report = RandomizedResponse(1, source=InsecureSeededSource(2)).release(True)
    assert isinstance(report, int) and report in (0, 1)


# -- bad inputs ------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, error", [(-1, ValueError), (float("nan"), ValueError),
                                            (float("inf"), ValueError), ("x", ValueError),
                                            (None, TypeError)])
def test_bad_epsilon(epsilon, error):
    with pytest.raises(error, match="epsilon"):
        RandomizedResponse(epsilon)


def test_bad_domain_and_values():
    with pytest.raises(ValueError, match="k must be"):
        KaryRandomizedResponse(1, 1)
    with pytest.raises(TypeError, match="k must be"):
        KaryRandomizedResponse(1, True)
    with pytest.raises(ValueError, match="pass k"):
        KaryRandomizedResponse(1)
    with pytest.raises(ValueError, match="distinct"):
        KaryRandomizedResponse(1, categories=["a", "a"])
    with pytest.raises(ValueError, match="does not match"):
        KaryRandomizedResponse(1, 3, categories=["a", "b"])
    mechanism = KaryRandomizedResponse(1, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\]"):
        mechanism.release([0, 3])
    with pytest.raises(TypeError, match="integers"):
        mechanism.release([0.5])
    with pytest.raises(ValueError, match="categories"):
        KaryRandomizedResponse(1, categories=["a", "b"]).release(["z"])
    with pytest.raises(ValueError, match="n must be"):
        mechanism.estimate([])
    with pytest.raises(ValueError, match="true_proportions"):
        kary_rr_variance(1, 3, 10, [0.5, 0.5])
    with pytest.raises(ValueError, match="beta"):
        RandomizedResponse(1).estimate([0, 1]).half_width(1.5)

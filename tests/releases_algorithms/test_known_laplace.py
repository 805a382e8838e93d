"""KnownLap: events, unbiasedness and variance, interval coverage, domain handling, errors."""

from fractions import Fraction
import math

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_known_laplace, known_laplace
from privloss.bounds.gaussian import laplace_histogram_epsilon
from privloss.events import DiscreteLaplace
from privloss.samplers import discrete_laplace_variance
from tests.releases_algorithms._support import (coverage_at_least, histogram, mean_is_zero,
                                                 source, variance_matches)

DOMAIN = [f"item{i:03d}" for i in range(120)]
TRUE = {label: (i * 37) % 50 for i, label in enumerate(DOMAIN)}


def test_events_are_pure_epsilon_dp_by_l1_calibration():
    release = known_laplace(histogram(TRUE, domain=DOMAIN), epsilon=0.5, l0_sensitivity=4,
                            linf_sensitivity=2, source=source())
    assert release.events == (DiscreteLaplace(16.0, 2, count=4),)    # b = 4 * 2 / 0.5
    assert compose(release.events, target_delta=0.0).value == pytest.approx(0.5, rel=1e-12)
    assert compose(release.events, target_delta=0.0).value >= 0.5
    # Lemma 6.2 at delta > 0: never worse than the optimal composition of l0 eps0-DP
    at_delta = compose(release.events, target_delta=1e-3).value
    assert at_delta <= laplace_histogram_epsilon(4, 2, 16.0, 1e-3) + 1e-9


def test_counts_unbiased_with_the_exact_variance_and_covered():
    h = histogram(TRUE, domain=DOMAIN)
    src = source(7)
    truth = np.array([TRUE[label] for label in DOMAIN])
    errors, covered = [], []
    for _ in range(150):
        release = known_laplace(h, epsilon=1.0, l0_sensitivity=3, domain=DOMAIN, source=src)
        index = [DOMAIN.index(item) for item in release.items]
        errors.append(release.counts - truth[index])
        covered.append([low <= truth[i] <= high for i, (low, high) in zip(index, release.ci95)])
    errors = np.concatenate(errors)
    variance = float(discrete_laplace_variance(3))
    assert release.parameters["noise_variance"] == pytest.approx(variance)
    assert mean_is_zero(errors)
    assert variance_matches(errors, variance)
    assert coverage_at_least(np.concatenate(covered))


def test_release_order_is_by_noisy_count_and_k_is_post_processing():
    h = histogram(TRUE, domain=DOMAIN)
    full = known_laplace(h, epsilon=1.0, l0_sensitivity=1, source=source(3))
    top = known_laplace(h, epsilon=1.0, l0_sensitivity=1, k=5, source=source(3))
    assert np.all(np.diff(full.counts) <= 0)
    assert top.items == full.items[:5] and top.events == full.events
    assert len(full.items) == len(DOMAIN) and full.counts.dtype == np.int64


def test_domain_argument_adds_zero_counts_and_drops_outsiders():
    h = histogram({"a": 10, "b": 3, "outside": 99})
    release = known_laplace(h, epsilon=1.0, l0_sensitivity=1, domain=["a", "b", "c"],
                            source=source())
    assert sorted(release.items) == ["a", "b", "c"]


def test_epsilon_is_rounded_down_to_an_exact_rational():
    release = known_laplace(histogram(TRUE, domain=DOMAIN), epsilon=0.1, l0_sensitivity=3,
                            source=source())
    assert release.parameters["epsilon_exact"] == "1/10"
    assert release.parameters["scale_exact"] == "30"


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0, l0_sensitivity=1), "epsilon"),
    (dict(epsilon=-1.0, l0_sensitivity=1), "epsilon"),
    (dict(epsilon=math.inf, l0_sensitivity=1), "epsilon"),
    (dict(epsilon=1.0, l0_sensitivity=0), "l0_sensitivity"),
    (dict(epsilon=1.0, l0_sensitivity=1, linf_sensitivity=0), "linf_sensitivity"),
    (dict(epsilon=1.0, l0_sensitivity=1, k=0), "k"),
    (dict(epsilon=1.0, l0_sensitivity=1, k=500), "k must be at most"),
])
def test_bad_input_is_a_clear_error(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        known_laplace(histogram(TRUE, domain=DOMAIN), source=source(), **kwargs)


def test_truncated_histogram_is_refused():
    with pytest.raises(ValueError, match="truncated"):
        known_laplace(histogram(TRUE, top=10), epsilon=1.0, l0_sensitivity=1)


def test_calibration_meets_the_target():
    pure = calibrate_known_laplace(epsilon=1.0, l0_sensitivity=5)
    assert pure["epsilon"] == pytest.approx(1.0)
    approx = calibrate_known_laplace(epsilon=1.0, delta=1e-2, l0_sensitivity=30)
    assert approx["epsilon"] > 1.0                   # Lemma 6.2 beats the l1 calibration
    release = known_laplace(histogram(TRUE, domain=DOMAIN), source=source(), **approx)
    assert compose(release.events, target_delta=1e-2).value <= 1.0
    with pytest.raises(ValueError, match="delta"):
        calibrate_known_laplace(epsilon=1.0, delta=1.0, l0_sensitivity=2)
    assert Fraction(release.parameters["epsilon_exact"]) <= Fraction(approx["epsilon"])

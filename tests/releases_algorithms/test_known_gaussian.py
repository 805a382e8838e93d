"""Gaussian variant of KnownLap: events (rho-zCDP), counts, calibration."""

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_known_gaussian, known_gaussian
from privloss.events import DiscreteGaussian
from privloss.samplers import discrete_gaussian_variance
from tests.releases_algorithms._support import (coverage_at_least, histogram, mean_is_zero,
                                                 source, variance_matches)

DOMAIN = [f"d{i:02d}" for i in range(60)]
TRUE = {label: 3 * i for i, label in enumerate(DOMAIN)}


def test_events_give_rho_zcdp():
    release = known_gaussian(histogram(TRUE, domain=DOMAIN), rho=0.125, l0_sensitivity=4,
                             linf_sensitivity=1, source=source())
    (event,) = release.events
    assert isinstance(event, DiscreteGaussian) and event.count == 4
    assert release.parameters["sigma_squared_exact"] == "16"        # 4 / (2 * 1/8)
    assert event.guarantee.rho * 4 == pytest.approx(0.125) and event.guarantee.rho * 4 >= 0.125


def test_counts_unbiased_exact_variance_and_covered():
    h = histogram(TRUE, domain=DOMAIN)
    src = source(41)
    truth = np.array([TRUE[label] for label in DOMAIN])
    errors, covered = [], []
    for _ in range(250):
        release = known_gaussian(h, rho=0.5, l0_sensitivity=2, domain=DOMAIN, source=src)
        index = [DOMAIN.index(item) for item in release.items]
        errors.append(release.counts - truth[index])
        covered.extend(low <= truth[i] <= high for i, (low, high) in zip(index, release.ci95))
    errors = np.concatenate(errors)
    assert mean_is_zero(errors)
    assert variance_matches(errors, float(discrete_gaussian_variance(2)))
    assert coverage_at_least(np.array(covered))


def test_calibration_meets_target_better_than_the_simple_zcdp_conversion():
    params = calibrate_known_gaussian(epsilon=1.0, delta=1e-6, l0_sensitivity=10)
    assert params["rho"] > 0.0174689                   # topk spec: rho of the simple conversion
    release = known_gaussian(histogram(TRUE, domain=DOMAIN), source=source(), **params)
    assert compose(release.events, target_delta=1e-6).value <= 1.0
    with pytest.raises(ValueError, match="delta"):
        calibrate_known_gaussian(epsilon=1.0, delta=0.0, l0_sensitivity=1)


def test_bad_input():
    with pytest.raises(ValueError, match="rho"):
        known_gaussian(histogram(TRUE, domain=DOMAIN), rho=0, l0_sensitivity=1)
    with pytest.raises(ValueError, match="k must be at most"):
        known_gaussian(histogram(TRUE, domain=DOMAIN), rho=1, l0_sensitivity=1, k=61)

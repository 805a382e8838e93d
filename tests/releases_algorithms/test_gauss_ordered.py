"""CR Algorithm 1: eq. (9) against nnls, the order, events for both discovery
modes, interval coverage, errors, calibration."""

import numpy as np
import pytest
from scipy.optimize import nnls

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_gauss_ordered, gauss_ordered
from privloss.releases.algorithms._isotonic import ordered_least_squares
from privloss.events import ApproxDP, BoundedRange, DiscreteGaussian
from tests.releases_algorithms._support import coverage_at_least, histogram, source


def nnls_fit(y):
    """x = A z, A upper-triangular ones, z >= 0: non-increasing and x_l >= 0."""
    size = len(y)
    a = np.triu(np.ones((size, size)))
    z, _ = nnls(a, np.asarray(y, dtype=float))
    return a @ z


@pytest.mark.parametrize("seed", range(40))
def test_fit_equals_nnls_on_small_cases(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 25))
    y = np.sort(rng.integers(0, 60, size))[::-1] + rng.normal(0, 8, size)
    fit = ordered_least_squares(y, nonnegative=True)
    assert np.all(np.diff(fit) <= 1e-12) and fit.min() >= 0
    assert np.max(np.abs(fit - nnls_fit(y))) <= 1e-8


def test_fit_without_the_nonnegativity_constraint():
    y = np.array([5.0, 7.0, -3.0, -1.0])
    fit = ordered_least_squares(y, nonnegative=False)
    assert fit.tolist() == pytest.approx([6.0, 6.0, -2.0, -2.0])
    assert ordered_least_squares(y).tolist() == pytest.approx([6.0, 6.0, 0.0, 0.0])
    assert ordered_least_squares([]).size == 0


def test_known_domain_release_respects_the_order_and_reports_events():
    counts = {f"w{i:02d}": 60 - 2 * i for i in range(30)}
    release = gauss_ordered(histogram(counts, domain=list(counts)), k=10, epsilon=0.2, rho=0.5,
                            source=source(51))
    assert len(release.items) == 10 and np.all(np.diff(release.counts) <= 0)
    assert release.counts.min() >= 0
    assert release.events == (BoundedRange(0.2, count=10),
                              DiscreteGaussian(release.events[1].sigma, 1, count=10))
    assert release.events[1].guarantee.rho * 10 == pytest.approx(0.5)
    assert release.events[1].guarantee.rho * 10 >= 0.5


def test_unknown_domain_discovery_adds_the_mixture_event():
    counts = {f"w{i:02d}": 1000 - 20 * i for i in range(30)}
    release = gauss_ordered(histogram(counts, top=20), k=5, epsilon=0.5, rho=0.5,
                            known_domain=False, delta=1e-7, l0_sensitivity=3, source=source(52))
    assert release.items == ("w00", "w01", "w02", "w03", "w04")
    assert release.events[0] == BoundedRange(0.5, count=5)
    assert release.events[2] == ApproxDP(0.0, 1e-7)


def test_intervals_cover_the_true_counts():
    counts = {f"w{i:02d}": 300 - 3 * i for i in range(40)}
    h = histogram(counts, domain=list(counts))
    src = source(53)
    covered = []
    for _ in range(300):
        release = gauss_ordered(h, k=8, epsilon=0.3, rho=0.2, source=src)
        for item, (low, high), value in zip(release.items, release.ci95, release.counts):
            assert low <= value <= high
            covered.append(low <= counts[item] <= high)
    assert coverage_at_least(np.array(covered))


def test_pooling_reduces_error_on_a_flat_tail():
    counts = {f"w{i:02d}": 100 for i in range(10)}
    h = histogram(counts, domain=list(counts))
    src = source(54)
    errors = []
    for _ in range(200):
        release = gauss_ordered(h, k=10, epsilon=0.1, rho=0.05, source=src)
        errors.append(release.counts - 100.0)
    sigma2 = release.parameters["sigma_squared"]
    assert np.mean(np.concatenate(errors) ** 2) < sigma2       # the order pools the noise


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0, epsilon=1.0, rho=1.0), "k"),
    (dict(k=2, epsilon=-1.0, rho=1.0), "epsilon"),
    (dict(k=2, epsilon=1.0, rho=0.0), "rho"),
    (dict(k=2, epsilon=1.0, rho=1.0, delta=1e-6), "only used with known_domain=False"),
    (dict(k=2, epsilon=1.0, rho=1.0, known_domain=False, l0_sensitivity=1), "delta is required"),
    (dict(k=2, epsilon=1.0, rho=1.0, known_domain=False, delta=1.5, l0_sensitivity=1), "delta"),
    (dict(k=9, epsilon=1.0, rho=1.0), "k must be at most"),
])
def test_bad_input(kwargs, message):
    counts = {"a": 3, "b": 2, "c": 1}
    with pytest.raises(ValueError, match=message):
        gauss_ordered(histogram(counts, domain=list(counts)), source=source(), **kwargs)


@pytest.mark.parametrize("known", [True, False])
def test_calibration_meets_the_target(known):
    params = calibrate_gauss_ordered(k=10, epsilon=1.0, delta=1e-6, known_domain=known,
                                     l0_sensitivity=4)
    counts = {f"w{i:02d}": i for i in range(30)}
    h = histogram(counts, domain=list(counts)) if known else histogram(counts)
    release = gauss_ordered(h, source=source(), **params)
    assert compose(release.events, target_delta=1e-6).value <= 1.0
    # equal zCDP-like shares: k eps^2 / 8 == rho
    assert 10 * params["epsilon"] ** 2 / 8 == pytest.approx(params["rho"])

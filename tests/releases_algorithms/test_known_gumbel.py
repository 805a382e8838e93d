"""KnownGumb: exact selection law, events, counts, errors, calibration."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_known_gumbel, known_gumbel
from privloss.events import BoundedRange, DiscreteLaplace
from privloss.samplers import discrete_laplace_variance
from tests.releases_algorithms._support import (ALPHA, coverage_at_least, histogram,
                                                 mean_is_zero, source, variance_matches)


def peeling_law(counts: dict, k: int, rate: float) -> dict:
    """Exact probability of every ordered k-tuple under peeling with weights exp(rate h)."""
    law = {}
    for sequence in itertools.permutations(counts, k):
        p, remaining = 1.0, set(counts)
        for label in sequence:
            total = sum(math.exp(rate * counts[other]) for other in remaining)
            p *= math.exp(rate * counts[label]) / total
            remaining.remove(label)
        law[sequence] = p
    return law


def test_selection_has_the_peeling_exponential_mechanism_law():
    counts = {"a": 6, "b": 5, "c": 3, "d": 0}
    h = histogram(counts, domain=list(counts))
    law = peeling_law(counts, 2, rate=0.5 / 2)           # epsilon / linf
    src = source(11)
    seen = {key: 0 for key in law}
    runs = 6000
    for _ in range(runs):
        seen[known_gumbel(h, k=2, epsilon=0.5, linf_sensitivity=2, source=src).items] += 1
    observed = np.array([seen[key] for key in law])
    expected = np.array([law[key] for key in law]) * runs
    assert chisquare(observed, expected).pvalue > ALPHA


def test_events_and_pure_total():
    counts = {f"x{i}": 100 - i for i in range(20)}
    release = known_gumbel(histogram(counts, domain=list(counts)), k=4, epsilon=0.25,
                           count_epsilon=0.5, source=source())
    assert release.events == (BoundedRange(0.25, count=4), DiscreteLaplace(2.0, 1, count=4))
    assert compose(release.events, target_delta=0.0).value == pytest.approx(4 * 0.75)
    assert len(release.items) == 4 and len(set(release.items)) == 4


def test_counts_of_selected_labels_unbiased_and_covered():
    counts = {f"x{i}": 1000 - 100 * i for i in range(8)}
    h = histogram(counts, domain=list(counts))
    src = source(5)
    errors, covered = [], []
    for _ in range(2000):
        release = known_gumbel(h, k=3, epsilon=1.0, count_epsilon=0.5, source=src)
        truth = np.array([counts[item] for item in release.items])
        errors.append(release.counts - truth)
        covered.extend(low <= t <= high for t, (low, high) in zip(truth, release.ci95))
    errors = np.concatenate(errors)
    assert mean_is_zero(errors)
    assert variance_matches(errors, float(discrete_laplace_variance(2)))
    assert coverage_at_least(np.array(covered))


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0, epsilon=1.0), "k"),
    (dict(k=5, epsilon=1.0), "k must be at most"),
    (dict(k=2, epsilon=0.0), "epsilon"),
    (dict(k=2, epsilon=1.0, count_epsilon=-1.0), "count_epsilon"),
])
def test_bad_input(kwargs, message):
    counts = {"a": 3, "b": 2, "c": 1}
    with pytest.raises(ValueError, match=message):
        known_gumbel(histogram(counts, domain=list(counts)), source=source(), **kwargs)


def test_calibration_meets_target_and_splits_evenly():
    params = calibrate_known_gumbel(k=5, epsilon=1.0)
    assert params["epsilon"] == params["count_epsilon"]
    assert 5 * 2 * params["epsilon"] <= 1.0 and params["epsilon"] >= 0.1 * (1 - 1e-4)
    approx = calibrate_known_gumbel(k=10, epsilon=1.0, delta=1e-6)
    counts = {f"x{i}": i for i in range(30)}
    release = known_gumbel(histogram(counts, domain=list(counts)), source=source(), **approx)
    assert compose(release.events, target_delta=1e-6).value <= 1.0
    assert approx["epsilon"] > 0.05                       # better than basic composition

"""The registry: every algorithm runs from a total budget, its events compose
within it, bad input is refused with a clear message, and the release is JSON-ready."""

import json

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import ALGORITHMS, HISTOGRAM_ALGORITHMS, KNOWN_GAUSSIAN
from privloss.releases.release import Release
from tests.releases_algorithms._support import histogram, source

COUNTS = {f"w{i:02d}": max(0, 400 - 15 * i) for i in range(40)}
DOMAIN = list(COUNTS)


def arguments(name):
    spec = ALGORITHMS.get(name, KNOWN_GAUSSIAN)
    kwargs = dict(epsilon=1.0, delta=1e-6, k=5, l0_sensitivity=3, source=source(61))
    if spec.domain == "known":
        return histogram(COUNTS, domain=DOMAIN), dict(kwargs, domain=DOMAIN)
    if name == "gauss-ordered":
        return histogram(COUNTS, domain=DOMAIN), dict(kwargs, domain=DOMAIN)
    if spec.complete:
        return histogram(COUNTS), kwargs
    return histogram(COUNTS, top=20), kwargs


def test_registry_names():
    assert set(ALGORITHMS) == {"known-laplace", "known-gumbel", "unknown-laplace",
                               "unknown-gumbel", "gauss-ordered", "trunc-gauss"}
    assert set(HISTOGRAM_ALGORITHMS) == {"laplace", "gaussian"}


@pytest.mark.parametrize("name", sorted(ALGORITHMS) + ["known-gaussian"])
def test_run_spends_at_most_the_budget(name):
    spec = ALGORITHMS.get(name, KNOWN_GAUSSIAN)
    h, kwargs = arguments(name)
    release = spec.run(h, **kwargs)
    assert isinstance(release, Release) and release.algorithm == name
    assert compose(release.events, target_delta=1e-6).value <= 1.0
    assert len(release.ci95) == len(release.items) == len(release.counts) <= 5
    assert all(low <= high for low, high in release.ci95)
    json.dumps(release.to_dict())
    assert {"item", "count", "ci95"} <= set(release.rows()[0])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_bad_budget_and_k_are_clear_errors(name):
    spec = ALGORITHMS[name]
    h, kwargs = arguments(name)
    with pytest.raises(ValueError, match="epsilon"):
        spec.run(h, **dict(kwargs, epsilon=0.0))
    with pytest.raises(ValueError, match="delta"):
        spec.run(h, **dict(kwargs, delta=1.0))
    with pytest.raises(ValueError, match="k"):
        spec.run(h, **dict(kwargs, k=0))
    if spec.needs_k:
        with pytest.raises(ValueError, match="k is required"):
            spec.run(h, **dict(kwargs, k=None))


def test_engine_requests():
    assert ALGORITHMS["known-laplace"].engine_request(domain=DOMAIN) == {"domain": DOMAIN,
                                                                         "top": None}
    assert ALGORITHMS["unknown-gumbel"].engine_request(d_bar=100) == {"domain": None, "top": 100}
    assert ALGORITHMS["trunc-gauss"].engine_request(d_bar=100) == {"domain": None, "top": None}
    assert ALGORITHMS["gauss-ordered"].engine_request(d_bar=50) == {"domain": None, "top": 50}
    with pytest.raises(ValueError, match="domain is required"):
        ALGORITHMS["known-gumbel"].engine_request()


def test_known_domain_algorithm_needs_the_domain():
    with pytest.raises(ValueError, match="domain .* is required"):
        ALGORITHMS["known-laplace"].run(histogram(COUNTS), epsilon=1.0, l0_sensitivity=1)


def test_unknown_domain_algorithm_refuses_a_domain():
    with pytest.raises(ValueError, match="unknown domain"):
        ALGORITHMS["unknown-gumbel"].run(histogram(COUNTS), epsilon=1.0, delta=1e-6, k=2,
                                         l0_sensitivity=2, domain=DOMAIN)


def test_release_rows_are_plain_python():
    release = ALGORITHMS["known-laplace"].run(histogram(COUNTS, domain=DOMAIN), epsilon=1.0,
                                              l0_sensitivity=1, k=2, domain=DOMAIN,
                                              source=source())
    row = release.rows()[0]
    assert type(row["count"]) is int and all(type(v) is int for v in row["ci95"])
    assert len(release.items) == 2 and isinstance(release.counts, np.ndarray)

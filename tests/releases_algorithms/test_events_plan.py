"""AlgorithmSpec.events: the events of a release, known before any data."""

import dataclasses

import pytest

from privloss.releases.algorithms import ALGORITHMS, KNOWN_GAUSSIAN
from privloss.query.histogram import Histogram
from privloss.samplers import InsecureSeededSource

OPTIONS = dict(epsilon=1.0, delta=1e-6, k=2, l0_sensitivity=2, d_bar=10)
DOMAIN = ["a", "b", "c"]


@pytest.mark.parametrize("spec", [*ALGORITHMS.values(), KNOWN_GAUSSIAN], ids=lambda s: s.name)
def test_events_equal_the_release_and_fully_adaptive_calibrates_as_adaptive(spec):
    known = spec.domain == "known"
    options = dict(OPTIONS, delta=0.0) if spec.name in ("known-laplace", "known-gumbel") \
        else OPTIONS
    planned = spec.events(**options, known_domain=known, domain_size=3 if known else None,
                          interaction="fully-adaptive")
    assert planned == spec.events(**options, known_domain=known, interaction="adaptive")
    histogram = Histogram.from_counts({"a": 9, "b": 4}, domain=DOMAIN if known else None)
    release = spec.run(histogram, **options, domain=DOMAIN if known else None,
                       source=InsecureSeededSource(1), interaction="fully-adaptive")
    assert release.events == planned


def test_events_checks_k_against_the_domain_and_run_refuses_other_events():
    spec = ALGORITHMS["known-gumbel"]
    with pytest.raises(ValueError, match="k must be at most"):
        spec.events(epsilon=1.0, k=4, known_domain=True, domain_size=3)
    with pytest.raises(ValueError, match="unknown domain"):
        ALGORITHMS["unknown-gumbel"].events(**OPTIONS, known_domain=True)
    other = ALGORITHMS["known-laplace"]
    wrong = dataclasses.replace(other, plan=lambda **kw: other.plan(
        **dict(kw, epsilon=kw["epsilon"] / 2)))
    histogram = Histogram.from_counts({"a": 1}, domain=DOMAIN)
    with pytest.raises(ValueError, match="planned"):
        wrong.run(histogram, epsilon=1.0, l0_sensitivity=1, domain=DOMAIN)

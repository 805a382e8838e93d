"""Consistency post-processing: constraints exactly, rounding unbiased."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from privloss.releases.consistency import (consistent_counts, project_to_simplex,
                                                      systematic_rounding)
from privloss.samplers import InsecureSeededSource


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 200), min_size=1, max_size=12), st.integers(0, 2 ** 31))
def test_nonnegative_integers_adding_up_to_the_total(noisy, seed):
    adjusted, total = consistent_counts(noisy, InsecureSeededSource(seed))
    assert total == max(0, sum(noisy))
    assert sum(adjusted) == total and all(v >= 0 and isinstance(v, int) for v in adjusted)


def test_projection_is_the_euclidean_one():
    # reference: p = max(y - theta, 0) with sum p = T, theta found by brute force
    y, total = [3.0, -2.0, 5.0, 1.0], 7.0
    thetas = np.linspace(-5, 5, 100001)
    sums = np.array([np.maximum(np.array(y) - t, 0).sum() for t in thetas])
    theta = thetas[np.argmin(np.abs(sums - total))]
    assert np.allclose(project_to_simplex(y, total), np.maximum(np.array(y) - theta, 0),
                       atol=1e-3)


def test_rounding_unbiased():
    """4000 roundings: each mean within 5 standard errors of the fractional value."""
    values = [2.25, 0.5, 4.0, 0.25]
    rng = np.random.default_rng(1)
    draws = np.array([systematic_rounding(values, 7, rng.random()) for _ in range(4000)])
    assert (draws.sum(axis=1) == 7).all()
    frac = np.array(values) - np.floor(values)
    error = np.sqrt(np.maximum(frac * (1 - frac), 1e-12) / len(draws))
    assert (np.abs(draws.mean(axis=0) - values) <= 5 * error + 1e-12).all()


def test_aggregate_consistent_flag():
    import pandas as pd

    from privloss.api.aggregate import aggregate

    frame = pd.DataFrame({"uid": range(40), "g": [f"c{i % 4}" for i in range(40)]})
    release = aggregate(frame, privacy_unit="uid", by=["g"], aggregations=["count"],
                        epsilon=0.5, keys=[f"c{i}" for i in range(6)], seed=2,
                        consistent=True)
    counts = [row["values"]["count"] for row in release.rows]
    assert min(counts) >= 0 and sum(counts) == release.totals["count"]

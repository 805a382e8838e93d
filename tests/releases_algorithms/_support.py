"""Helpers shared by the algorithm tests: histograms built by hand, fixed seeds."""

from __future__ import annotations

import math

import numpy as np

from privloss.query.histogram import Histogram
from privloss.samplers import InsecureSeededSource

#: significance level of every statistical test in this folder
ALPHA = 1e-4
#: two-sided normal quantile for ALPHA (one-sided tests use it too: conservative)
Z = 3.8906


def histogram(counts: dict, *, top: int | None = None, domain=None) -> Histogram:
    """What the engine returns (``Histogram.from_counts``): positive items sorted by
    (-count, label); ``top`` truncates and reports the next count; ``domain`` keeps
    exactly its labels (zeros included) and drops the others."""
    return Histogram.from_counts(counts, top=top, domain=domain)


def source(seed: int = 20240501) -> InsecureSeededSource:
    return InsecureSeededSource(seed)


def mean_is_zero(errors: np.ndarray) -> bool:
    """Two-sided z-test of E[error] = 0 at level ALPHA (CLT, n large)."""
    errors = np.asarray(errors, dtype=float)
    return abs(errors.mean()) <= Z * errors.std(ddof=1) / math.sqrt(errors.size)


def variance_matches(errors: np.ndarray, variance: float) -> bool:
    """z-test of Var[error] = variance at level ALPHA, with the standard error
    sqrt((m4 - s^4)/n) of the sample variance estimated from the data."""
    errors = np.asarray(errors, dtype=float)
    centred = errors - errors.mean()
    s2 = float(np.mean(centred ** 2))
    m4 = float(np.mean(centred ** 4))
    return abs(s2 - variance) <= Z * math.sqrt(max(m4 - s2 * s2, 0.0) / errors.size)


def coverage_at_least(covered: np.ndarray, level: float = 0.95) -> bool:
    """One-sided test that the coverage probability is >= level (normal approximation)."""
    covered = np.asarray(covered, dtype=float)
    return covered.mean() >= level - Z * math.sqrt(level * (1 - level) / covered.size)

"""UnkLap: the exact tail of the threshold comparison, the offset, the release
probability of a label at the edge, events, counts, errors."""

import math
from fractions import Fraction

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_unknown_laplace, unknown_laplace
from privloss.releases.algorithms.unknown_laplace import difference_tail, plan_unknown_laplace
from privloss.events import ApproxDP
from privloss.samplers import discrete_laplace_variance
from tests.releases_algorithms._support import (Z, coverage_at_least, histogram, mean_is_zero,
                                                 source, variance_matches)


def brute_tail(x: int, scale: float) -> float:
    """P[Z1 - Z2 > x] by convolving the two pmfs on a wide window."""
    limit = int(80 * scale) + 10
    z = np.arange(-limit, limit + 1)
    r = math.exp(-1 / scale)
    pmf = (1 - r) / (1 + r) * r ** np.abs(z)
    difference = np.convolve(pmf, pmf[::-1])            # support -2 limit .. 2 limit
    d = np.arange(-2 * limit, 2 * limit + 1)
    return math.fsum(difference[d > x])


@pytest.mark.parametrize("scale, x", [(0.7, 0), (0.7, 3), (2.5, 0), (2.5, 7), (6.0, 20)])
def test_difference_tail_closed_form(scale, x):
    exact = brute_tail(x, scale)
    assert exact <= difference_tail(x, scale) <= exact * (1 + 1e-8)     # rounded up


def test_offset_is_the_smallest_integer_meeting_the_failure_target():
    plan = plan_unknown_laplace(epsilon=0.5, delta=1e-6, l0_sensitivity=4, linf_sensitivity=2,
                                d_bar=3)
    scale = Fraction(5 * 2) / Fraction(1, 2)
    target = 1e-6 / (1 + math.exp(0.5))
    m = 3
    x = plan.offset - 2
    assert m * difference_tail(x, scale) <= target
    assert m * difference_tail(x - 1, scale) > target
    assert plan.events == (ApproxDP(0.5, plan.events[0].delta),)
    assert plan.events[0].delta <= 1e-6
    # the spec's simple sufficient offset is never smaller than the exact one
    assert plan.offset <= 2 + 2 * float(scale) * math.log(m / target) + 1


def test_edge_label_is_released_with_the_computed_probability():
    # one visible label at h_(d+1) + linf: released iff Z_c - Z_t > tau - linf
    plan = plan_unknown_laplace(epsilon=1.0, delta=0.5, l0_sensitivity=1, d_bar=1)
    p = difference_tail(plan.offset - 1, plan.noise.parameter)
    h = histogram({"edge": 21, "next": 20})
    src = source(9)
    runs = 4000
    hits = sum(len(unknown_laplace(h, epsilon=1.0, delta=0.5, l0_sensitivity=1, d_bar=1,
                                   source=src).items) for _ in range(runs))
    assert abs(hits / runs - p) <= Z * math.sqrt(p * (1 - p) / runs)
    assert p <= 0.5 / (1 + math.e)


def test_labels_at_or_below_the_next_count_are_not_released_at_small_delta():
    counts = {f"low{i}": 10 for i in range(30)}
    counts.update({"top1": 400, "top2": 350})
    h = histogram(counts, top=20)                      # h_(d+1) = 10
    src = source(4)
    for _ in range(200):
        release = unknown_laplace(h, epsilon=1.0, delta=1e-6, l0_sensitivity=3, source=src)
        assert set(release.items) == {"top1", "top2"}


def test_counts_unbiased_with_exact_variance_and_covered():
    counts = {"a": 500, "b": 450, "c": 400}
    h = histogram(counts)
    src = source(6)
    errors, covered = [], []
    for _ in range(1500):
        release = unknown_laplace(h, epsilon=1.0, delta=1e-6, l0_sensitivity=2, source=src)
        truth = np.array([counts[i] for i in release.items])
        assert len(release.items) == 3
        errors.append(release.counts - truth)
        covered.extend(low <= t <= high for t, (low, high) in zip(truth, release.ci95))
    errors = np.concatenate(errors)
    assert mean_is_zero(errors)
    assert variance_matches(errors, float(discrete_laplace_variance(3)))
    assert coverage_at_least(np.array(covered))


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0, delta=1e-6, l0_sensitivity=1), "epsilon"),
    (dict(epsilon=1.0, delta=1.0, l0_sensitivity=1), "delta"),
    (dict(epsilon=1.0, delta=0.0, l0_sensitivity=1), "delta"),
    (dict(epsilon=1.0, delta=1e-6, l0_sensitivity=1, k=0), "k"),
    (dict(epsilon=1.0, delta=1e-6, l0_sensitivity=1, d_bar=0), "d_bar"),
    # e^epsilon overflows a double past 709: refused naming the range (was OverflowError)
    (dict(epsilon=1000.0, delta=1e-6, l0_sensitivity=1), r"^epsilon must be in \(0, 700\]"),
    (dict(epsilon=700.0, delta=1e-300, l0_sensitivity=1), r"^delta must exceed 5e-324"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        unknown_laplace(histogram({"a": 3}), source=source(), **kwargs)


def test_the_largest_epsilon_is_planned():
    """At epsilon 700 the failure target is a subnormal double: the plan still
    finds its offset (the bracket is computed in logs), and the guarantee's delta
    stays within the budget's."""
    release = unknown_laplace(histogram({"a": 3}), epsilon=700.0, delta=1e-12, l0_sensitivity=1,
                              source=source())
    assert release.parameters["threshold_offset"] >= 1


def test_calibration_passes_the_budget_through():
    params = calibrate_unknown_laplace(epsilon=0.8, delta=1e-7, l0_sensitivity=3, d_bar=50)
    release = unknown_laplace(histogram({"a": 100}), source=source(), **params)
    assert compose(release.events, target_delta=1e-7).value <= 0.8

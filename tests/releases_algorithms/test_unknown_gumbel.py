"""UnkGumb: threshold offset (spec example), mixture weight, the exact law of
the stopped peeling, threshold behaviour, events, errors, calibration."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_unknown_gumbel, unknown_gumbel
from privloss.releases.algorithms._selection import threshold_failure, threshold_offset
from privloss.releases.algorithms.unknown_gumbel import plan_unknown_gumbel
from privloss.events import ApproxDP, BoundedRange, DiscreteLaplace
from privloss.samplers import discrete_laplace_variance
from tests.releases_algorithms._support import (ALPHA, histogram, mean_is_zero, source,
                                                 variance_matches)


def test_threshold_offset_matches_the_spec_example():
    # topk.md §3.3: h_(d+1) = 57, d_bar = 100, delta = 1e-6, epsilon = 0.1 -> h_bottom = 242.21
    offset = threshold_offset(Fraction(1, 10), 1, 100, 1e-6)
    exact = 1 + 10 * math.log(100 / 1e-6)
    assert exact <= float(offset) <= exact + 3 / 1024
    assert 57 + float(offset) == pytest.approx(242.21, abs=0.01)


@pytest.mark.parametrize("delta, k", [(1e-6, 1), (1e-6, 10), (0.3, 4), (5e-7, 100)])
def test_threshold_failure_gives_the_mixture_weight(delta, k):
    delta_t = threshold_failure(delta, k)
    assert 1 - (1 + Fraction(delta_t)) ** -k <= Fraction(delta)      # exact arithmetic
    assert delta_t >= delta / k * (1 - 1e-6)             # about delta / k, never less


def stopped_law(counts: dict, bottom: float, k: int, rate: float) -> dict:
    """Exact law of peeling over counts + bottom, cut at bottom or after k labels."""
    law = {}
    candidates = {**counts, None: bottom}

    def walk(prefix, remaining, p):
        if len(prefix) == k:
            law[tuple(prefix)] = law.get(tuple(prefix), 0) + p
            return
        total = sum(math.exp(rate * candidates[c]) for c in remaining)
        for c in remaining:
            q = p * math.exp(rate * candidates[c]) / total
            if c is None:
                law[tuple(prefix)] = law.get(tuple(prefix), 0) + q
            else:
                walk(prefix + [c], remaining - {c}, q)

    walk([], set(candidates), 1.0)
    return law


def test_stopped_peeling_has_the_exact_law():
    counts = {"a": 10, "b": 8, "c": 7}
    h = histogram(dict(counts, d=5, e=1), top=3)         # h_(d+1) = 5
    plan = plan_unknown_gumbel(k=2, epsilon=1.0, delta=0.3, l0_sensitivity=1)
    law = stopped_law(counts, 5 + float(plan.discovery.offset), 2, 1.0)
    src = source(12)
    seen = {key: 0 for key in law}
    runs = 5000
    for _ in range(runs):
        seen[unknown_gumbel(h, k=2, epsilon=1.0, delta=0.3, l0_sensitivity=1,
                            source=src).items] += 1
    observed = np.array([seen[key] for key in law])
    expected = np.array([law[key] for key in law]) * runs
    assert sum(law.values()) == pytest.approx(1.0)
    assert chisquare(observed, expected).pvalue > ALPHA


def test_threshold_keeps_out_labels_near_the_cut_and_lets_large_ones_in():
    counts = {f"low{i}": 20 for i in range(40)}
    counts.update({"big": 2000, "bigger": 3000})
    h = histogram(counts, top=25)                        # h_(d+1) = 20, visible lows at 20
    src = source(13)
    for _ in range(300):
        release = unknown_gumbel(h, k=5, epsilon=0.5, delta=1e-6, l0_sensitivity=5, source=src)
        assert release.items == ("bigger", "big")


def test_events_are_br_steps_laplace_counts_and_the_mixture():
    release = unknown_gumbel(histogram({"a": 50, "b": 40}), k=3, epsilon=0.25,
                             count_epsilon=0.5, delta=1e-7, d_bar=10, source=source())
    assert release.events == (BoundedRange(0.25, count=3), DiscreteLaplace(2.0, 1, count=3),
                              ApproxDP(0.0, 1e-7))
    assert compose(release.events, target_delta=2e-7).value <= 3 * 0.75
    assert release.parameters["threshold_failure"] == pytest.approx(1e-7 / 3, rel=1e-6)


def test_counts_unbiased_for_labels_far_above_the_threshold():
    counts = {"a": 900, "b": 800, "c": 700}
    h = histogram(counts)
    src = source(14)
    errors = []
    for _ in range(1500):
        release = unknown_gumbel(h, k=3, epsilon=1.0, delta=1e-6, l0_sensitivity=3, source=src)
        assert release.items == ("a", "b", "c")
        errors.append(release.counts - np.array([counts[i] for i in release.items]))
    errors = np.concatenate(errors)
    assert mean_is_zero(errors)
    assert variance_matches(errors, float(discrete_laplace_variance(1)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0, epsilon=1.0, delta=1e-6, l0_sensitivity=1), "k"),
    (dict(k=2, epsilon=0.0, delta=1e-6, l0_sensitivity=1), "epsilon"),
    (dict(k=2, epsilon=1.0, delta=1.0, l0_sensitivity=1), "delta"),
    (dict(k=2, epsilon=1.0, delta=0.0, l0_sensitivity=1), "delta"),
    (dict(k=2, epsilon=1.0, delta=1e-6), "d_bar"),
    (dict(k=20, epsilon=1.0, delta=1e-6, d_bar=10), "k must be at most d_bar"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        unknown_gumbel(histogram({"a": 3, "b": 2}), source=source(), **kwargs)


def test_fewer_visible_labels_than_k_is_fine():
    release = unknown_gumbel(histogram({"a": 10000}), k=5, epsilon=1.0, delta=1e-6,
                             l0_sensitivity=2, source=source())
    assert release.items == ("a",)
    empty = unknown_gumbel(histogram({}), k=5, epsilon=1.0, delta=1e-6, l0_sensitivity=2,
                           source=source())
    assert empty.items == () and len(empty.ci95) == 0 and empty.events


def test_calibration_meets_the_target():
    params = calibrate_unknown_gumbel(k=10, epsilon=1.0, delta=1e-6, l0_sensitivity=5)
    assert params["delta"] == pytest.approx(5e-7)
    release = unknown_gumbel(histogram({"a": 10}), source=source(), **params)
    assert compose(release.events, target_delta=1e-6).value <= 1.0
    with pytest.raises(ValueError, match="threshold_share"):
        calibrate_unknown_gumbel(k=2, epsilon=1.0, delta=1e-6, d_bar=5, threshold_share=1.0)


@pytest.mark.parametrize("k, epsilon", [(10, 0.1), (5, 0.3), (50, 0.05)])
def test_selection_costs_no_more_than_the_spec_dr19_bound(k, epsilon):
    # spec (topk.md §3.3): (eps*, delta + delta')-DP with the three-term DR19 bound;
    # our mixture events at total delta_mix + delta' must not cost more epsilon
    delta_mix, slack = 5e-7, 5e-7
    plan = plan_unknown_gumbel(k=k, epsilon=epsilon, delta=delta_mix, d_bar=100)
    events = plan.discovery.events + (plan.discovery.mixture_event,)
    log_term = math.log(1 / slack)
    dr19 = min(k * epsilon,
               k * epsilon * math.tanh(epsilon / 2) + epsilon * math.sqrt(2 * k * log_term),
               k * epsilon ** 2 / 2 + epsilon * math.sqrt(k / 2 * log_term))
    assert compose(events, target_delta=delta_mix + slack).value <= dr19 * (1 + 1e-9)

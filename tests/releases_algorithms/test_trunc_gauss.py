"""CR Algorithm 2: refusal on truncated histograms, the threshold rule, Lemma
6.4's events, released counts, calibration."""

import numpy as np
import pytest

from privloss.accounting import compose
from privloss.releases.algorithms import calibrate_trunc_gauss, gaussian, trunc_gauss
from privloss.releases.algorithms.gaussian import plan_trunc_gauss
from privloss.releases.algorithms.truncated_gaussian import failure_probability
from privloss.bounds.zcdp import zcdp_epsilon_simple
from privloss.events import ApproxZCDP
from tests.releases_algorithms._support import (Histogram, coverage_at_least, histogram,
                                                 mean_is_zero, source, variance_matches)


def test_refuses_a_truncated_histogram():
    counts = {f"x{i}": 100 - i for i in range(10)}
    with pytest.raises(ValueError, match="truncated"):
        trunc_gauss(histogram(counts, top=5), rho=0.1, delta=1e-6, l0_sensitivity=2)
    # total_items says more exist even if next_count is 0
    h = histogram(counts)
    with pytest.raises(ValueError, match="without top="):
        trunc_gauss(Histogram(h.items, h.counts, h.total_items + 1, 0), rho=0.1, delta=1e-6,
                    l0_sensitivity=2)


def test_events_are_lemma_6_4():
    plan = plan_trunc_gauss(rho=0.05, delta=1e-6, l0_sensitivity=4, linf_sensitivity=2)
    assert plan.events == (ApproxZCDP(plan.rho, 1e-6),)
    assert plan.rho == pytest.approx(4 * 4 / (2 * plan.sigma ** 2))
    assert plan.rho >= 0.05 * (1 - 1e-12)
    assert 4 * failure_probability(plan.bound, plan.sigma, 2) <= 1e-6
    assert plan.threshold == plan.bound + 2
    # (rho + 2 sqrt(rho ln(1/delta')), delta + delta')-DP
    assert compose(plan.events, target_delta=2e-6).value <= zcdp_epsilon_simple(plan.rho, 1e-6)


@pytest.mark.parametrize("linf", [1, 3])
def test_counts_at_most_linf_are_never_released_even_at_the_support_edge(monkeypatch, linf):
    # force every noise draw to the edge +C: h + C > C + linf iff h > linf
    def edge(sigma, bound, size, source):
        return np.full(size, bound)
    monkeypatch.setattr(gaussian, "sample_truncated_gaussian", edge)
    counts = {"below": linf - 1, "at": linf, "above": linf + 1} if linf > 1 else \
        {"at": linf, "above": linf + 1}
    release = trunc_gauss(histogram(counts), rho=0.3, delta=1e-6, l0_sensitivity=2,
                          linf_sensitivity=linf)
    assert release.items == ("above",)


def test_small_counts_never_released_statistically():
    counts = {f"one{i}": 1 for i in range(300)}
    counts["big"] = 500
    h = histogram(counts)
    src = source(31)
    for _ in range(100):
        release = trunc_gauss(h, rho=0.5, delta=1e-3, l0_sensitivity=1, source=src)
        assert release.items == ("big",)


def test_released_counts_unbiased_with_the_stated_variance_and_covered():
    counts = {"a": 800, "b": 700, "c": 650}
    h = histogram(counts)
    src = source(32)
    errors, covered = [], []
    for _ in range(3000):
        release = trunc_gauss(h, rho=0.05, delta=1e-6, l0_sensitivity=3, source=src)
        truth = np.array([counts[i] for i in release.items])
        errors.append(release.counts - truth)
        covered.extend(low <= t <= high for t, (low, high) in zip(truth, release.ci95))
    errors = np.concatenate(errors)
    assert errors.size == 9000
    assert mean_is_zero(errors)
    assert variance_matches(errors, release.parameters["noise_variance"])
    assert coverage_at_least(np.array(covered))


@pytest.mark.parametrize("kwargs, message", [
    (dict(rho=0.0, delta=1e-6, l0_sensitivity=1), "rho"),
    (dict(rho=0.1, delta=1.0, l0_sensitivity=1), "delta"),
    (dict(rho=0.1, delta=-1e-6, l0_sensitivity=1), "delta"),
    (dict(rho=0.1, delta=1e-6, l0_sensitivity=0), "l0_sensitivity"),
    (dict(rho=0.1, delta=1e-6, l0_sensitivity=1, k=0), "k"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        trunc_gauss(histogram({"a": 3}), source=source(), **kwargs)


def test_calibration_meets_the_target():
    params = calibrate_trunc_gauss(epsilon=1.0, delta=1e-6, l0_sensitivity=3)
    assert params["delta"] == pytest.approx(5e-7)
    release = trunc_gauss(histogram({"a": 100}), source=source(), **params)
    assert compose(release.events, target_delta=1e-6).value <= 1.0

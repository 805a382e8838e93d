"""Bounded lattice work of the heterogeneous optimal-DP bound (issue 12, item 5).

A spurious rational ratio between two epsilons used to build a 13.5-million-point
exact lattice (10.8 s); 10^7 x PureDP(1e-4) took 34 s. Automatic exact lattices
are now capped at EXACT_LATTICE_POINTS (2^20); beyond, the certified enumeration
or bracket modes answer. The fallback must contain the exact optimum.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from privloss.bounds import _heterogeneous_lattice
from privloss.bounds.heterogeneous_dp import (EXACT_LATTICE_POINTS, heterogeneous_dp_delta,
                                              heterogeneous_dp_delta_enumerated,
                                              heterogeneous_dp_epsilon)
from privloss.bounds.optimal_dp import optimal_dp_delta, optimal_dp_epsilon

SPURIOUS = [0.007992831568550445, 0.08814861712835606]


def test_limit_is_two_to_the_twenty():
    assert EXACT_LATTICE_POINTS == 1 << 20


def test_spurious_ratio_is_fast_and_exact():
    start = time.process_time()
    bracket = heterogeneous_dp_delta(SPURIOUS, 0.05)
    by_epsilon = heterogeneous_dp_epsilon(SPURIOUS, 1e-6)
    assert time.process_time() - start < 1.0        # was 10.8 s (13.5M-point lattice)
    reference = heterogeneous_dp_delta_enumerated(SPURIOUS, 0.05)
    assert bracket.lower <= reference * (1 + 1e-12)
    assert bracket.upper >= reference * (1 - 1e-12)
    assert bracket.upper <= bracket.lower * (1 + 1e-9)
    assert by_epsilon.upper - by_epsilon.lower <= 1e-9


@pytest.mark.parametrize("epsilons, epsilon_g", [
    ([0.1] * 30 + [0.25] * 20 + [0.35] * 10, 2.0),
    ([0.05] * 200 + [0.15] * 100, 3.0),
    ([1.0, 2.0, 3.0] * 6, 5.0),
])
def test_fallback_bracket_contains_exact_lattice(monkeypatch, epsilons, epsilon_g):
    exact = heterogeneous_dp_delta(epsilons, epsilon_g)          # exact lattice mode
    assert exact.upper - exact.lower <= 1e-12 * exact.upper
    monkeypatch.setattr(_heterogeneous_lattice, "EXACT_LATTICE_POINTS", 8)
    start = time.process_time()
    fallback = heterogeneous_dp_delta(epsilons, epsilon_g)       # certified bracket mode
    assert time.process_time() - start < 10.0
    assert fallback.upper >= exact.lower
    assert fallback.lower <= exact.upper
    assert fallback.upper - fallback.lower <= 2e-4 * fallback.upper


def test_fallback_epsilon_is_above_the_optimum(monkeypatch):
    epsilons = [0.1] * 40 + [0.3] * 20
    exact = heterogeneous_dp_epsilon(epsilons, 1e-6)
    monkeypatch.setattr(_heterogeneous_lattice, "EXACT_LATTICE_POINTS", 8)
    fallback = heterogeneous_dp_epsilon(epsilons, 1e-6, tolerance=1e-3)
    assert fallback.upper >= exact.lower
    assert fallback.lower <= exact.upper
    assert fallback.upper - fallback.lower <= 1e-3


def test_many_equal_epsilons_cost_one_pruned_binomial():
    # 10^6 x PureDP(1e-4): the pruned binomial keeps ~10^4 points (was a 2*10^6-point
    # lattice estimate); Theorem 1 is the independent reference
    epsilons = np.full(1_000_000, 1e-4)
    start = time.process_time()
    bracket = heterogeneous_dp_epsilon(epsilons, 1e-6)
    assert time.process_time() - start < 5.0
    # Theorem 1 is an upper bound whose outward rounding grows like u log k! (~5e-8
    # relative in delta at k = 10^6): it lies just above the certified bracket
    exact = optimal_dp_epsilon(1_000_000, 1e-4, 1e-6)
    assert bracket.lower <= exact <= bracket.upper * (1 + 1e-7)
    assert optimal_dp_delta(1_000_000, 1e-4, bracket.lower) >= 1e-6


@pytest.mark.slow
def test_ten_million_equal_epsilons_is_fast():
    start = time.process_time()
    bracket = heterogeneous_dp_epsilon(np.full(10_000_000, 1e-4), 1e-6)
    assert time.process_time() - start < 10.0         # was 34 s; ~0.6 s now
    exact = optimal_dp_epsilon(10_000_000, 1e-4, 1e-6)
    assert bracket.lower <= exact <= bracket.upper * (1 + 1e-6)

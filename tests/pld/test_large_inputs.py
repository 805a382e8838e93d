"""Inputs that break other accountants: no crash, no negative epsilon, truth inside the bracket."""

import math
import time

import numpy as np

from privloss.bounds.gaussian import analytic_gaussian_delta, analytic_gaussian_epsilon
from privloss.bounds.heterogeneous_dp import heterogeneous_dp_delta, heterogeneous_dp_epsilon
from privloss.pld import compose, gaussian_pld, laplace_pld, pure_dp_pld


def test_thousand_fold_laplace_eps0_one():
    start = time.perf_counter()
    pld = laplace_pld(1.0, step=2e-3).self_compose(1000)
    bracket = pld.epsilon(1e-6)
    assert time.perf_counter() - start < 5.0
    assert 0 < bracket.lower <= bracket.upper < 1000
    assert bracket.width <= 1e-4 * bracket.upper             # the benchmark target
    assert 486.0 < bracket.lower < 486.6                      # dp-accounting: 486.2975


def test_fifty_heterogeneous_pure_dp_mechanisms():
    epsilons = np.random.default_rng(2024).uniform(0.01, 0.5, 50)
    pld = compose([pure_dp_pld(float(e), step=1e-4) for e in epsilons])
    ours = pld.epsilon(1e-6)
    optimum = heterogeneous_dp_epsilon(epsilons, 1e-6)       # Murtagh–Vadhan bracket
    assert 0 <= ours.lower <= ours.upper
    assert ours.lower <= optimum.upper and optimum.lower <= ours.upper
    delta_ours, delta_mv = pld.delta(2.0), heterogeneous_dp_delta(epsilons, 2.0)
    assert delta_ours.lower <= delta_mv.upper and delta_mv.lower <= delta_ours.upper


def test_thousand_fold_gaussian():
    pld = gaussian_pld(1.0, step=2e-3).self_compose(1000)
    sigma_equivalent = 1.0 / math.sqrt(1000)
    for epsilon in (0.0, 300.0, 500.0, 650.0, 800.0):
        truth = analytic_gaussian_delta(sigma_equivalent, epsilon)
        bracket = pld.delta(epsilon)
        assert bracket.lower <= truth <= bracket.upper
    bracket = pld.epsilon(1e-6)
    assert bracket.lower <= analytic_gaussian_epsilon(sigma_equivalent, 1e-6) <= bracket.upper
    assert bracket.lower > 0


def test_tiny_and_huge_noise():
    tiny = gaussian_pld(1e4)                      # mu = 1e-4: narrower than one grid step
    assert tiny.delta(0.0).lower <= analytic_gaussian_delta(1e4, 0.0) <= tiny.delta(0.0).upper
    huge = laplace_pld(1e-3, step=1e-2)           # eps0 = 1000
    assert huge.epsilon(1e-6).upper <= 1000.0 + 1e-6
    assert huge.delta(0.0).lower > 0.99

"""Accounting speed and accuracy: privloss against dp-accounting, same work, same run.

Run:  python benchmarks/accounting.py          (needs `pip install -e '.[bench]'`)
Prints one row per task: both answers, both times, and the speed ratio.
Results are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc

import numpy as np

from privloss.bounds.heterogeneous_dp import heterogeneous_dp_epsilon
from privloss.bounds.optimal_br import theorem2_epsilon, theorem3_epsilon
from privloss.bounds.optimal_dp import optimal_dp_epsilon

try:
    from dp_accounting.pld import accountant as dpa_accountant
    from dp_accounting.pld import common as dpa_common
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld
except ImportError:  # pragma: no cover - the benchmark says so and still runs privloss
    dpa_pld = None


def timed(function, repeat: int = 3):
    """(result, best wall time in s, peak traced memory in MiB)."""
    best = math.inf
    result = None
    tracemalloc.start()
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, best, peak / 2 ** 20


def dpa_pure_dp_epsilon(epsilons, delta, interval=1e-4):
    """dp-accounting: worst-case pure-DP PLDs composed, epsilon at delta."""
    values, counts = np.unique(np.asarray(epsilons), return_counts=True)
    total = None
    for value, count in zip(values, counts):
        pld = dpa_pld.from_privacy_parameters(dpa_common.DifferentialPrivacyParameters(float(value), 0.0),
                                              value_discretization_interval=interval)
        pld = pld.self_compose(int(count)) if count > 1 else pld
        total = pld if total is None else total.compose(pld)
    return total.get_epsilon_for_delta(delta)


def row(task, ours, ours_time, ours_mem, theirs, theirs_time, note=""):
    ratio = theirs_time / ours_time if (theirs_time and ours_time) else float("nan")
    theirs_text = "-" if theirs is None else f"{theirs:.10g}"
    theirs_time_text = "-" if theirs_time is None else f"{theirs_time:.4f}"
    print(f"| {task} | {ours:.10g} | {ours_time:.4f} | {ours_mem:.1f} | {theirs_text} | "
          f"{theirs_time_text} | {ratio:.0f}x | {note} |")
    sys.stdout.flush()


def main() -> None:
    print("| task | privloss epsilon | privloss s | privloss MiB | dp-accounting epsilon | "
          "dp-accounting s | speed ratio | note |")
    print("|---|---|---|---|---|---|---|---|")

    # 1. Theorem 1: k = 1e4 pure DP, eps0 = 0.1, delta = 1e-6
    k, eps0, delta = 10 ** 4, 0.1, 1e-6
    ours, t_ours, m_ours = timed(lambda: optimal_dp_epsilon(k, eps0, delta), repeat=5)
    theirs = t_theirs = None
    if dpa_pld is not None:
        theirs, t_theirs, _ = timed(lambda: dpa_pure_dp_epsilon([eps0] * k, delta), repeat=1)
    row("Theorem 1, k=1e4, eps0=0.1, delta=1e-6 (dp-accounting: PLD, default grid 1e-4)",
        ours, t_ours, m_ours, theirs, t_theirs)
    if dpa_pld is not None:
        for kk in (954, 955, 2000):
            try:
                helper = dpa_accountant.advanced_composition(
                    dpa_common.DifferentialPrivacyParameters(0.75, 0.0), kk, delta)
                print(f"|   dp-accounting advanced_composition(eps0=0.75, k={kk}) | {helper} |")
            except OverflowError as error:
                print(f"|   dp-accounting advanced_composition(eps0=0.75, k={kk}) | OverflowError: {error} |")
            print(f"|   privloss optimal_dp_epsilon(k={kk}, eps0=0.75) | "
                  f"{optimal_dp_epsilon(kk, 0.75, delta):.10g} |")

    # 2. Theorems 2 and 3 (no peer implements them): k = 1000 and k = 1e4
    for kk in (1000, 10 ** 4):
        ours, t_ours, m_ours = timed(lambda: theorem2_epsilon(kk, 0.1, delta), repeat=1)
        row(f"Theorem 2 (non-adaptive BR), k={kk}, eps0=0.1", ours, t_ours, m_ours, None, None,
            "no peer implements it")
        ours, t_ours, m_ours = timed(lambda: theorem3_epsilon(kk // 2, kk - kk // 2, 0.1, delta), repeat=1)
        row(f"Theorem 3 (d={kk // 2} DP + {kk - kk // 2} BR), eps0=0.1", ours, t_ours, m_ours, None, None,
            "no peer implements it")

    # 3. heterogeneous pure DP, 1000 mechanisms in [0.01, 0.5]
    epsilons = np.random.default_rng(0).uniform(0.01, 0.5, 1000)
    bracket, t_ours, m_ours = timed(lambda: heterogeneous_dp_epsilon(epsilons, delta, tolerance=1e-3), repeat=1)
    theirs = t_theirs = None
    if dpa_pld is not None:
        theirs, t_theirs, _ = timed(lambda: dpa_pure_dp_epsilon(epsilons, delta), repeat=1)
    row("heterogeneous pure DP, 1000 eps in [0.01, 0.5] (certified upper; dp-accounting PLD 1e-4)",
        bracket.upper, t_ours, m_ours, theirs, t_theirs,
        f"certified bracket [{bracket.lower:.6f}, {bracket.upper:.6f}]")


if __name__ == "__main__":
    main()

"""Fully-adaptive filters: admission speed, and tightness against fixed parameters.

Run:  python benchmarks/filters.py             (speed)
      python benchmarks/filters.py tightness   (issue 23: releases admitted per budget)
      python benchmarks/filters.py alternatives (other fixed delta splits, same cases)
Target (issue 11): a fully-adaptive admission decision with 10,000 recorded
releases (stored guarantees) in under 20 ms. The guarantees are built once (as a
ledger stores them) and round-tripped through JSON first, as a ledger reads them.
Prints the best and median time of ``check`` (history + one candidate) for the
default policy and for the policy with every time-uniform rule.
Results are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import statistics
import time

from privloss.accounting.fully_adaptive import (FilterPolicy, ReleaseGuarantee, check,
                                                default_policy, release_guarantee)
from privloss.events import ApproxDP, BoundedRange, DiscreteLaplace, Gaussian, Laplace, PureDP

HISTORY = 10_000
REPEAT = 25


def history() -> list[ReleaseGuarantee]:
    kinds = [
        [BoundedRange(0.0007, count=10), DiscreteLaplace(1400.0, count=10), ApproxDP(0.0, 5e-11)],
        [Laplace(2000.0)],
        [Gaussian(500.0)],
        [PureDP(0.0004)],
    ]
    stored = [json.dumps(release_guarantee(events).to_dict()) for events in kinds]
    return [ReleaseGuarantee.from_dict(json.loads(stored[i % len(stored)])) for i in range(HISTORY)]


def timed(policy, guarantees, candidate) -> tuple[float, float, object]:
    times = []
    status = None
    for _ in range(REPEAT):
        start = time.perf_counter()
        status = check(policy, guarantees + [candidate])
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), status


TIGHTNESS_CASES = [
    ((1.0, 1e-6), PureDP(0.01), "PureDP(0.01)"),
    ((1.0, 1e-6), BoundedRange(0.01), "BoundedRange(0.01)"),
    ((3.0, 1e-6), PureDP(0.05), "PureDP(0.05)"),
    ((1.0, 1e-6), Gaussian(20.0), "Gaussian(20)"),
]


def largest_admitted(admits, high: int = 100_000) -> int:
    """The largest n with admits(n) (admits is monotone), by bisection."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if admits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _fixed_optimum(event, epsilon: float, delta: float) -> int:
    """The most repeats of ``event`` that fit (epsilon, delta) when the
    parameters are fixed in advance (adaptive composition: the optimum)."""
    import dataclasses

    from privloss.accounting import compose

    def fixed(n):
        repeated = dataclasses.replace(event, count=n)
        return compose([repeated], target_delta=delta, interaction="adaptive").epsilon <= epsilon
    return largest_admitted(fixed, 20_000)


def tightness() -> None:
    """How many equal releases each budget admits: the fixed-parameter optimum (the
    accountant with the plan fixed in advance) against the fully adaptive filters,
    the default ("mixed") policy and the policy of the declared mix."""
    print(f"{'budget':>12s} {'release':>22s} {'fixed':>6s} {'mixed':>12s} {'declared':>20s}")
    for (epsilon, delta), event, label in TIGHTNESS_CASES:
        optimum = _fixed_optimum(event, epsilon, delta)
        guarantee = release_guarantee(event)
        mix = "gaussian" if isinstance(event, Gaussian) else "pure"
        row = [f"({epsilon:g}, {delta:g})", label, f"{optimum:6d}"]
        for policy in (default_policy(epsilon, delta), default_policy(epsilon, delta, mix)):
            count = largest_admitted(lambda n, p=policy: check(p, [guarantee] * n).admitted, 20_000)
            row.append(f"{count:5d} ({count / optimum:.3f})")
        row[-1] = f"{mix:>8s}: {row[-1]}"
        print(f"{row[0]:>12s} {row[1]:>22s} {row[2]} {row[3]:>12s} {row[4]:>20s}")


def alternative_policies(epsilon: float, delta: float) -> dict:
    """Other valid delta splits (each a union of valid filters, "Combining rules"),
    measured against the targets (issue 23 item 3): what a fixed split can reach."""
    from privloss.accounting.fully_adaptive import filters as rules

    def one_order(share):
        return rules.renyi_orders_for(epsilon, share, 1)

    return {
        "cap .5: zcdp .45": FilterPolicy(epsilon, delta, ("basic", "zcdp", "renyi"),
                                         (0.0, 0.45 * delta, 0.05 * delta)),
        "cap .05: zcdp .9": FilterPolicy(epsilon, delta, ("basic", "zcdp", "renyi"),
                                         (0.0, 0.9 * delta, 0.05 * delta)),
        "cap .05: zcdp .3 gdp .6": FilterPolicy(epsilon, delta, ("basic", "zcdp", "gdp", "renyi"),
                                                (0.0, 0.3 * delta, 0.6 * delta, 0.05 * delta)),
        "cap 0: renyi 1 order": FilterPolicy(epsilon, delta, ("basic", "renyi"), (0.0, delta),
                                             one_order(delta)),
    }


def alternatives() -> None:
    """Releases admitted under the alternative splits (ratio to the fixed optimum)."""
    names = list(alternative_policies(1.0, 1e-6))
    print(f"{'budget':>12s} {'release':>20s} {'fixed':>6s} " + " ".join(f"{n:>24s}" for n in names))
    for (epsilon, delta), event, label in TIGHTNESS_CASES:
        optimum = _fixed_optimum(event, epsilon, delta)
        guarantee = release_guarantee(event)
        cells = []
        for policy in alternative_policies(epsilon, delta).values():
            count = largest_admitted(lambda n, p=policy: check(p, [guarantee] * n).admitted, 20_000)
            cells.append(f"{count:5d} ({count / optimum:.3f})")
        print(f"{f'({epsilon:g}, {delta:g})':>12s} {label:>20s} {optimum:6d} "
              + " ".join(f"{c:>24s}" for c in cells))


def main() -> None:
    guarantees = history()
    candidate = release_guarantee([BoundedRange(0.001, count=10)])
    policies = {
        "default (basic + renyi)": default_policy(10.0, 1e-5),
        "basic + advanced + zcdp + renyi": FilterPolicy(10.0, 1e-5, ("basic", "advanced", "zcdp", "renyi"),
                                                        (0.0, 1e-6, 1e-6, 2e-6)),
    }
    print(f"{'policy':34s} {'best ms':>8s} {'median ms':>10s}  verdict")
    for name, policy in policies.items():
        best, median, status = timed(policy, guarantees, candidate)
        print(f"{name:34s} {best * 1e3:8.2f} {median * 1e3:10.2f}  "
              f"{'admitted' if status.admitted else 'refused'} by {status.rule}, "
              f"epsilon {status.spent_epsilon:.4g}, delta {status.spent_delta:.3g}")
    start = time.perf_counter()
    release_guarantee([BoundedRange(0.001, count=10), Laplace(100.0, count=10)])
    print(f"release_guarantee of a 20-event release: {(time.perf_counter() - start) * 1e3:.2f} ms "
          f"(once per release, stored)")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["tightness"]:
        tightness()
    elif sys.argv[1:] == ["alternatives"]:
        alternatives()
    else:
        main()

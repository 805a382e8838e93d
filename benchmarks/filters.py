"""Fully-adaptive admission speed: one decision against 10,000 stored releases.

Run:  python benchmarks/filters.py
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
    main()

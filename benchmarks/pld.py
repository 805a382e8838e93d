"""Numerical PLD accounting: privloss against dp-accounting and prv-accountant, same work, same run.

Run:  python benchmarks/pld.py        (dp-accounting and prv-accountant are optional;
                                      `pip install -e '.[bench]'` and `pip install prv-accountant`)

Prints one row per task and library: the answer (privloss: the certified
bracket [lower, upper]), wall time (best of ``REPEAT``), peak traced memory,
and time ratios. dp-accounting uses its defaults (connect-the-dots, pessimistic,
value_discretization_interval = 1e-4); prv-accountant uses eps_error = 0.01,
delta_error = 1e-10 (its answers are (lower, estimate, upper)).
Targets (issue): 1000-fold Laplace bracket width <= 1e-4 x epsilon and faster
than dp-accounting; 1000-fold Gaussian within 1e-6 of the closed form;
100 heterogeneous Laplace + 100 Gaussian under 2 s; peak memory under 1 GB.
"""

from __future__ import annotations

import math
import resource
import time
import tracemalloc

import numpy as np

from privloss.bounds.gaussian import analytic_gaussian_delta, analytic_gaussian_epsilon
from privloss.pld import compose, gaussian_pld, laplace_pld

try:
    from dp_accounting.pld import privacy_loss_distribution as dpa
except ImportError:  # pragma: no cover - reported in the output
    dpa = None
try:
    from prv_accountant import PRVAccountant
    from prv_accountant import privacy_random_variables as prv
except ImportError:  # pragma: no cover - reported in the output
    PRVAccountant = None

REPEAT = 3
DELTA = 1e-6


def timed(function, repeat: int = REPEAT):
    """(result or exception, best wall time in s, peak traced memory in MiB)."""
    best, result = math.inf, None
    tracemalloc.start()
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            result = function()
        except Exception as error:  # noqa: BLE001 - a competitor crashing is a result to report
            result = error
        best = min(best, time.perf_counter() - start)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, best, peak / 2 ** 20


def show(value) -> str:
    if isinstance(value, Exception):
        return f"error: {type(value).__name__}: {str(value)[:60]}"
    if isinstance(value, tuple) and len(value) == 3:
        return f"[{value[0]:.8g}, {value[2]:.8g}] (est. {value[1]:.8g})"
    if hasattr(value, "lower"):
        return f"[{value.lower:.10g}, {value.upper:.10g}] (width/value {value.width / max(value.upper, 1e-300):.2e})"
    return f"{value:.10g}"


def header(title: str) -> None:
    print(f"\n### {title}\n")
    print("| library | answer | time (s) | peak MiB | privloss faster by |")
    print("|---|---|---|---|---|")


def row(name, result, seconds, memory, ours_seconds=None):
    ratio = "" if ours_seconds is None else f"{seconds / ours_seconds:.1f}x"
    print(f"| {name} | {show(result)} | {seconds:.3f} | {memory:.0f} | {ratio} |")


def laplace_task(epsilon0: float, step: float) -> None:
    header(f"1000-fold Laplace, eps0 = {epsilon0:g}: epsilon at delta = {DELTA:g}")
    ours, ours_time, ours_mem = timed(lambda: laplace_pld(1 / epsilon0, step=step).self_compose(1000).epsilon(DELTA))
    row(f"privloss (step {step:g})", ours, ours_time, ours_mem)
    target = "met" if ours.width <= 1e-4 * ours.upper else "MISSED"
    if dpa is not None:
        theirs, t, m = timed(lambda: dpa.from_laplace_mechanism(1 / epsilon0).self_compose(1000)
                             .get_epsilon_for_delta(DELTA))
        row("dp-accounting (default 1e-4 grid)", theirs, t, m, ours_time)
        inside = not isinstance(theirs, Exception) and ours.lower <= theirs <= ours.upper
        print(f"\ndp-accounting's value inside the privloss bracket: {inside}; "
              f"width target (<= 1e-4 x epsilon): {target}")
    if PRVAccountant is not None:
        def prv_run():
            accountant = PRVAccountant(prvs=[prv.LaplaceMechanism(mu=epsilon0)], max_self_compositions=[1000],
                                       eps_error=0.01, delta_error=1e-10)
            return accountant.compute_epsilon(DELTA, [1000])
        theirs, t, m = timed(prv_run, repeat=1)
        row("prv-accountant", theirs, t, m, ours_time)


def gaussian_task(step: float) -> None:
    header("1000-fold Gaussian, sigma = 1 (mu = sqrt(1000)): closed form vs brackets")
    sigma_equivalent = 1 / math.sqrt(1000)
    epsilons = np.linspace(0.0, 900.0, 181)
    truth = np.array([analytic_gaussian_delta(sigma_equivalent, float(e)) for e in epsilons])

    def ours_run():
        pld = gaussian_pld(1.0, step=step).self_compose(1000)
        return pld, [pld.delta(float(e)) for e in epsilons], pld.epsilon(DELTA)

    (pld, brackets, eps_bracket), ours_time, ours_mem = timed(ours_run)
    lows = np.array([b.lower for b in brackets])
    highs = np.array([b.upper for b in brackets])
    worst = float(np.max(np.maximum(highs - truth, truth - lows)))
    contained = bool(np.all((lows <= truth) & (truth <= highs)))
    row(f"privloss (step {step:g}), epsilon at 1e-6", eps_bracket, ours_time, ours_mem)
    if dpa is not None:
        def dpa_run():
            composed = dpa.from_gaussian_mechanism(1.0).self_compose(1000)
            return composed, [composed.get_delta_for_epsilon(float(e)) for e in epsilons]
        (composed, theirs), t, m = timed(dpa_run)
        row("dp-accounting, epsilon at 1e-6", composed.get_epsilon_for_delta(DELTA), t, m, ours_time)
        their_error = float(np.max(np.abs(np.array(theirs) - truth)))
    else:
        their_error = None
    if PRVAccountant is not None:
        def prv_run():
            accountant = PRVAccountant(prvs=[prv.GaussianMechanism(noise_multiplier=1.0)],
                                       max_self_compositions=[1000], eps_error=0.01, delta_error=1e-10)
            return accountant.compute_epsilon(DELTA, [1000])
        theirs, t, m = timed(prv_run, repeat=1)
        row("prv-accountant, epsilon at 1e-6", theirs, t, m, ours_time)
    print(f"\nclosed form epsilon(1e-6) = {analytic_gaussian_epsilon(sigma_equivalent, DELTA):.10g}")
    print(f"delta(eps) on 181 epsilons in [0, 900]: privloss bracket contains the closed form: {contained}; "
          f"max |bound - closed form| = {worst:.2e} (target 1e-6: {'met' if worst <= 1e-6 else 'MISSED'})")
    if their_error is not None:
        print(f"dp-accounting max |delta - closed form| = {their_error:.2e}")


def heterogeneous_task(steps: tuple[float, ...]) -> None:
    header("100 heterogeneous Laplace + 100 heterogeneous Gaussian: epsilon at delta = 1e-6")
    rng = np.random.default_rng(2024)
    scales, sigmas = rng.uniform(5, 50, 100), rng.uniform(5, 50, 100)

    def ours_run(step):
        items = [laplace_pld(float(b), step=step) for b in scales] + [gaussian_pld(float(s), step=step) for s in sigmas]
        return compose(items).epsilon(DELTA)

    # the Laplace atoms +-eps0 fall between grid points: the optimistic side loses up to one
    # step per mechanism, so the bracket is first order in the step here
    timings = []
    for step in steps:
        ours, ours_time, ours_mem = timed(lambda: ours_run(step))
        row(f"privloss (step {step:g})", ours, ours_time, ours_mem)
        timings.append(ours_time)
    ours_time = timings[-1]
    if dpa is not None:
        def dpa_run():
            total = None
            for b in scales:
                part = dpa.from_laplace_mechanism(float(b))
                total = part if total is None else total.compose(part)
            for s in sigmas:
                total = total.compose(dpa.from_gaussian_mechanism(float(s)))
            return total.get_epsilon_for_delta(DELTA)
        theirs, t, m = timed(dpa_run, repeat=1)
        row("dp-accounting", theirs, t, m, ours_time)
    if PRVAccountant is not None:
        def prv_run():
            prvs = [prv.LaplaceMechanism(mu=float(1 / b)) for b in scales]
            prvs += [prv.GaussianMechanism(noise_multiplier=float(s)) for s in sigmas]
            accountant = PRVAccountant(prvs=prvs, max_self_compositions=[1] * 200, eps_error=0.01,
                                       delta_error=1e-10)
            return accountant.compute_epsilon(DELTA, [1] * 200)
        theirs, t, m = timed(prv_run, repeat=1)
        row("prv-accountant", theirs, t, m, ours_time)
    print(f"\nunder 2 s: {'met' if max(timings) < 2 else 'MISSED'} "
          f"({', '.join(f'{t:.2f}' for t in timings)} s); ratios use the last step")


def main() -> None:
    print("# privloss PLD benchmark")
    print(f"dp-accounting: {'installed' if dpa is not None else 'NOT installed (skipped)'}; "
          f"prv-accountant: {'installed' if PRVAccountant is not None else 'NOT installed (skipped)'}")
    laplace_task(0.1, step=2e-3)
    laplace_task(1.0, step=2e-3)
    gaussian_task(step=8e-4)
    heterogeneous_task(steps=(1e-3, 2e-4))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of the whole run (all libraries): {peak:.0f} MiB "
          f"(target for privloss: under 1 GB; per-task traced peaks above)")


if __name__ == "__main__":
    main()

"""Accounting speed and accuracy: privloss against dp-accounting (and prv-accountant,
Opacus where installed), same work, same run.

Run:  python benchmarks/accounting.py [--pairs 3] [--only NAME ...] [--json]
      (needs `pip install -e '.[bench]'`; prv-accountant and Opacus are optional)

How it measures (honest ratios on a shared, noisy machine):

* no tracemalloc while timing (it slowed dp-accounting 3-4x and privloss 1.1-2x);
  peak memory is measured in a separate, untimed pass;
* paired runs: privloss and the peer alternate (A B A B ...) ``--pairs`` times, so
  load bursts hit both; per side the median CPU time (``time.process_time``: what
  the process computed, not inflated by other sessions) and the median wall time;
  the ratio column is the median of the per-pair CPU ratios (peer / privloss);
* every answer is printed next to the peer's; exact references where one exists
  (the Gaussian-DP closed form in mpmath at 50 digits).

A task whose privloss capability is not importable (built by another change) is
skipped with a note; every other task still runs.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import tracemalloc

import numpy as np

try:
    import dp_accounting
    from dp_accounting.pld import accountant as dpa_accountant
    from dp_accounting.pld import common as dpa_common
    from dp_accounting.pld import pld_privacy_accountant as dpa_pld_accountant
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld
    from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
except ImportError:  # pragma: no cover - reported in the output, privloss still runs
    dp_accounting = None
try:
    from prv_accountant import PRVAccountant
    from prv_accountant import privacy_random_variables as prv
except ImportError:  # pragma: no cover
    PRVAccountant = None
try:
    from opacus.accountants import RDPAccountant as OpacusRDP
except ImportError:  # pragma: no cover - Opacus pulls torch; see docs/benchmarks.md
    OpacusRDP = None

DELTA = 1e-6
ROWS: list[dict] = []


# --------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------

def clear_privloss_caches() -> None:
    """Empty privloss's memo caches (functools.lru_cache), so that a repeated run
    measures the work and not a cache hit."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("privloss") or module is None:
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def clock(function, *, fresh: bool = False):
    """(result, wall seconds, CPU seconds) of one call (after clearing caches if fresh)."""
    if fresh:
        clear_privloss_caches()
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def peak_mib(function) -> float:
    """Peak traced memory of one call, in MiB (a separate, untimed pass)."""
    clear_privloss_caches()
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def guarded(function):
    """A peer's call that returns its exception instead of raising (a crash is a result)."""
    def call():
        try:
            return function()
        except Exception as error:  # noqa: BLE001 - a competitor crashing is a result to report
            return error
    return call


def paired(ours, theirs, pairs: int) -> dict:
    """Alternate ours / theirs ``pairs`` times; medians and the median CPU ratio."""
    theirs = guarded(theirs) if theirs is not None else None
    ours_runs, their_runs = [], []
    for _ in range(pairs):
        ours_runs.append(clock(ours, fresh=True))
        if theirs is not None:
            their_runs.append(clock(theirs))
    out = {"ours": ours_runs[-1][0],
           "ours_cpu": statistics.median(r[2] for r in ours_runs),
           "ours_wall": statistics.median(r[1] for r in ours_runs)}
    if theirs is not None:
        out.update(theirs=their_runs[-1][0],
                   theirs_cpu=statistics.median(r[2] for r in their_runs),
                   theirs_wall=statistics.median(r[1] for r in their_runs),
                   ratio_cpu=statistics.median(t[2] / max(o[2], 1e-9)
                                               for o, t in zip(ours_runs, their_runs)),
                   ratio_wall=statistics.median(t[1] / max(o[1], 1e-9)
                                                for o, t in zip(ours_runs, their_runs)))
    return out


def text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, Exception):
        return f"error: {type(value).__name__}: {str(value)[:50]}"
    if isinstance(value, tuple) and len(value) == 3:       # prv-accountant (lower, est, upper)
        return f"{value[1]:.8g} [{value[0]:.6g}, {value[2]:.6g}]"
    if hasattr(value, "upper") and hasattr(value, "lower"):
        return f"{value.upper:.10g} (certified; optimum >= {value.lower:.10g})"
    return f"{value:.10g}"


def record(task: str, peer: str, measured: dict, *, memory: tuple = (None, None),
           note: str = "") -> None:
    row = {"task": task, "peer": peer, "privloss": text(measured["ours"]),
           "privloss_cpu_s": measured["ours_cpu"], "privloss_wall_s": measured["ours_wall"],
           "peer_answer": text(measured.get("theirs")), "peer_cpu_s": measured.get("theirs_cpu"),
           "peer_wall_s": measured.get("theirs_wall"), "ratio_cpu": measured.get("ratio_cpu"),
           "ratio_wall": measured.get("ratio_wall"), "privloss_mib": memory[0],
           "peer_mib": memory[1], "note": note}
    ROWS.append(row)

    def seconds(value):
        return "-" if value is None else f"{value:.4g}"

    ratio = "-" if row["ratio_cpu"] is None else \
        f"**{row['ratio_cpu']:.3g}x** (wall {row['ratio_wall']:.3g}x)"
    mib = " / ".join("-" if m is None else f"{m:.1f}" for m in memory)
    print(f"| {task} | {row['privloss']} | {seconds(row['privloss_cpu_s'])} "
          f"({seconds(row['privloss_wall_s'])}) | {peer or '-'}: {row['peer_answer']} | "
          f"{seconds(row['peer_cpu_s'])} ({seconds(row['peer_wall_s'])}) | {ratio} | {mib} | "
          f"{note} |")
    sys.stdout.flush()


def header(title: str) -> None:
    print(f"\n### {title}\n")
    print("| task | privloss answer | privloss CPU s (wall) | peer answer | peer CPU s (wall) "
          "| peer / privloss | MiB privloss / peer | note |")
    print("|---|---|---|---|---|---|---|---|")


# --------------------------------------------------------------------------
# peers
# --------------------------------------------------------------------------

def dpa_pure_dp_epsilon(epsilons, delta, interval=1e-4):
    """dp-accounting: worst-case pure-DP PLDs composed, epsilon at delta."""
    values, counts = np.unique(np.asarray(epsilons), return_counts=True)
    total = None
    for value, count in zip(values, counts):
        pld = dpa_pld.from_privacy_parameters(
            dpa_common.DifferentialPrivacyParameters(float(value), 0.0),
            value_discretization_interval=interval)
        pld = pld.self_compose(int(count)) if count > 1 else pld
        total = pld if total is None else total.compose(pld)
    return total.get_epsilon_for_delta(delta)


def dpa_epsilon(event, delta, kind: str):
    """dp-accounting's PLD or RDP accountant on one (composed) DpEvent."""
    accountant = (dpa_pld_accountant.PLDAccountant() if kind == "pld"
                  else dpa_rdp.RdpAccountant())
    return accountant.compose(event).get_epsilon(delta)


def gdp_reference(mu: float, delta: float) -> float | None:
    """epsilon(delta) of mu-GDP: bisection at 50 digits on the closed form
    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong et al. Cor. 2.13)."""
    try:
        import mpmath
    except ImportError:
        return None
    with mpmath.workdps(50):
        m, target = mpmath.mpf(mu), mpmath.mpf(delta)

        def curve(eps):
            return (mpmath.ncdf(-eps / m + m / 2)
                    - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2))

        low, high = mpmath.mpf(0), m * m / 2 + 10 * m + 10
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (low, middle) if curve(middle) <= target else (middle, high)
        return float(high)


# --------------------------------------------------------------------------
# tasks
# --------------------------------------------------------------------------

def theorem1(pairs: int) -> None:
    from privloss.bounds.optimal_dp import optimal_dp_epsilon

    k, eps0 = 10 ** 4, 0.1
    theirs = (lambda: dpa_pure_dp_epsilon([eps0] * k, DELTA)) if dp_accounting else None
    measured = paired(lambda: optimal_dp_epsilon(k, eps0, DELTA), theirs, pairs)
    memory = (peak_mib(lambda: optimal_dp_epsilon(k, eps0, DELTA)),
              peak_mib(theirs) if theirs else None)
    record("[CR] Theorem 1, k = 10^4 pure DP, eps0 = 0.1, delta = 1e-6",
           "dp-accounting PLD (grid 1e-4)", measured, memory=memory,
           note="privloss exact (closed form)")
    if dp_accounting is None:
        return
    for kk in (954, 955, 2000):
        try:
            helper = dpa_accountant.advanced_composition(
                dpa_common.DifferentialPrivacyParameters(0.75, 0.0), kk, DELTA)
            theirs_text = f"{helper}"
        except OverflowError as error:
            theirs_text = f"OverflowError: {error}"
        print(f"|   advanced_composition(eps0 = 0.75, k = {kk}) | "
              f"{optimal_dp_epsilon(kk, 0.75, DELTA):.10g} | | dp-accounting: {theirs_text} "
              f"| | | | |")


def theorems_2_3(pairs: int, sizes=(1000, 10 ** 4)) -> None:
    from privloss.bounds.optimal_br import theorem2_epsilon, theorem3_epsilon

    for k in sizes:
        measured = paired(lambda: theorem2_epsilon(k, 0.1, DELTA), None, pairs)
        record(f"[CR] Theorem 2 (non-adaptive BR), k = {k}, eps0 = 0.1", "", measured,
               memory=(peak_mib(lambda: theorem2_epsilon(k, 0.1, DELTA)), None),
               note="no peer implements it")
        half = k // 2
        measured = paired(lambda: theorem3_epsilon(half, k - half, 0.1, DELTA), None, pairs)
        record(f"[CR] Theorem 3, {half} DP + {k - half} BR, eps0 = 0.1", "", measured,
               memory=(peak_mib(lambda: theorem3_epsilon(half, k - half, 0.1, DELTA)), None),
               note="no peer implements it")


def theorems_2_3_at_scale(pairs: int) -> None:
    """Issue #12 item 2: the CLI's cases at 10^5 (through the accountant)."""
    from privloss.accounting import compose
    from privloss.events import BoundedRange, PureDP

    cases = [("compose --br 0.001x100000 --interaction non-adaptive, delta = 1e-9",
              [BoundedRange(0.001, count=10 ** 5)], 1e-9),
             ("compose --dp 0.1x50000 --br 0.1x50000 --interaction non-adaptive, delta = 1e-6",
              [PureDP(0.1, count=50_000), BoundedRange(0.1, count=50_000)], 1e-6)]
    for task, events, delta in cases:
        def ours():
            result = compose(events, target_delta=delta, interaction="non-adaptive")
            return result.epsilon
        measured = paired(ours, None, pairs)
        bound = compose(events, target_delta=delta, interaction="non-adaptive").bound
        record(task, "", measured, note=f"bound {bound}; no peer implements it")


def heterogeneous(pairs: int) -> None:
    """1000 and 10^4 distinct epsilons (issue #12 item 9: the tilted-FFT laws from
    1001 mechanisms on); 10^5 through the accountant, privloss only."""
    from privloss.accounting import compose
    from privloss.bounds.heterogeneous_dp import heterogeneous_dp_epsilon
    from privloss.events import PureDP

    for k in (1000, 10_000):
        epsilons = np.random.default_rng(0).uniform(0.01, 0.5, k)
        # dp-accounting takes 20 s at 1000 (one PLD per distinct epsilon); only there
        theirs = (lambda: dpa_pure_dp_epsilon(epsilons, DELTA)) \
            if dp_accounting and k == 1000 else None
        measured = paired(lambda: heterogeneous_dp_epsilon(epsilons, DELTA, tolerance=1e-3),
                          theirs, pairs)
        memory = (peak_mib(lambda: heterogeneous_dp_epsilon(epsilons, DELTA, tolerance=1e-3)),
                  None)
        record(f"heterogeneous pure DP, {k} eps_i ~ U[0.01, 0.5] (seed 0), delta = 1e-6",
               "dp-accounting PLD (grid 1e-4)" if theirs else "", measured, memory=memory,
               note="privloss: certified bracket, tolerance 1e-3")
    events = [PureDP(float(eps)) for eps in np.random.default_rng(0).uniform(0.01, 0.5, 10 ** 5)]
    measured = paired(lambda: compose(events, target_delta=DELTA).epsilon, None, 1)
    record("compose, 10^5 distinct eps_i ~ U[0.01, 0.5] (seed 0), delta = 1e-6", "", measured,
           note=f"bound {compose(events, target_delta=DELTA).bound}; one run")


def gaussian(pairs: int) -> None:
    """Issue #12 items 1 and 10: k Gaussians, sigma = 1: exactly mu-GDP, mu = sqrt(k)."""
    import importlib.util

    if importlib.util.find_spec("privloss.bounds.gaussian_dp") is None:
        print("| Gaussian composition | skipped: privloss.bounds.gaussian_dp not importable |")
        return
    from privloss.accounting import compose
    from privloss.events import Gaussian

    for k, peers in ((1000, ("pld", "rdp", "prv")), (10 ** 6, ("rdp", "prv"))):
        exact = gdp_reference(math.sqrt(k), DELTA)

        def ours():
            return compose([Gaussian(1.0, count=k)], target_delta=DELTA).epsilon
        bound = compose([Gaussian(1.0, count=k)], target_delta=DELTA).bound
        note = (f"bound {bound}; exact (mpmath GDP) {exact:.10g}; privloss rel. error "
                f"{(ours() - exact) / exact:.1e}" if exact else f"bound {bound}")
        for peer in peers:
            if peer in ("pld", "rdp") and dp_accounting is not None:
                event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), k)
                theirs = (lambda event=event, peer=peer: dpa_epsilon(event, DELTA, peer))
                name = f"dp-accounting {peer.upper()}"
            elif peer == "prv" and PRVAccountant is not None:
                def theirs(k=k):
                    accountant = PRVAccountant(
                        prvs=[prv.GaussianMechanism(noise_multiplier=1.0)],
                        max_self_compositions=[k], eps_error=0.01, delta_error=1e-10)
                    return accountant.compute_epsilon(DELTA, [k])
                name = "prv-accountant (eps_error 0.01)"
            else:
                continue
            measured = paired(ours, theirs, pairs)
            record(f"{k} x Gaussian(sigma = 1), epsilon at delta = 1e-6", name, measured,
                   memory=(peak_mib(ours), None), note=note)


def poisson_gaussian(pairs: int) -> None:
    """Issue #12 items 3 and 10: DP-SGD-like, 1000 steps, q = 0.01, sigma = 1."""
    try:
        from privloss.events import PoissonSampled
    except ImportError:
        print("| Poisson-subsampled Gaussian | skipped: privloss.events.PoissonSampled missing |")
        return
    from privloss.accounting import compose
    from privloss.events import Gaussian

    steps, q, sigma = 1000, 0.01, 1.0
    events = [PoissonSampled(Gaussian(sigma), q, count=steps)]

    def ours():
        return compose(events, target_delta=DELTA).epsilon
    result = compose(events, target_delta=DELTA)
    lower = next((row.lower for row in result.bounds
                  if row.name == result.bound and getattr(row, "lower", None) is not None), None)
    note = f"bound {result.bound}" + (f"; certified lower end {lower:.8g}" if lower else "")
    peers = []
    if dp_accounting is not None:
        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
        peers += [("dp-accounting PLD (grid 1e-4)", lambda: dpa_epsilon(event, DELTA, "pld")),
                  ("dp-accounting RDP", lambda: dpa_epsilon(event, DELTA, "rdp"))]
    if PRVAccountant is not None:
        def prv_run():
            accountant = PRVAccountant(
                prvs=[prv.PoissonSubsampledGaussianMechanism(noise_multiplier=sigma,
                                                             sampling_probability=q)],
                max_self_compositions=[steps], eps_error=0.01, delta_error=1e-10)
            return accountant.compute_epsilon(DELTA, [steps])
        peers.append(("prv-accountant (eps_error 0.01)", prv_run))
    if OpacusRDP is not None:
        def opacus_run():
            accountant = OpacusRDP()
            accountant.history = [(sigma, q, steps)]
            return accountant.get_epsilon(DELTA)
        peers.append(("Opacus RDP", opacus_run))
    for name, theirs in peers:
        measured = paired(ours, theirs, pairs)
        record(f"Poisson-subsampled Gaussian, {steps} steps, q = {q}, sigma = {sigma}", name,
               measured, memory=(peak_mib(ours), None), note=note)


# --------------------------------------------------------------------------
# issue 23: every measurement in its own process (no warm caches, no shared heap)
# --------------------------------------------------------------------------

#: (label, setup, statement): the statement's CPU time is measured inside a fresh
#: interpreter after the setup (imports and inputs), so each sample is independent
PROCESS_CASES = {
    "theorem1_1e4": ("privloss: [CR] Theorem 1, k = 10^4, eps0 = 0.1, delta = 1e-6",
                     "from privloss.bounds.optimal_dp import optimal_dp_epsilon as f",
                     "f(10**4, 0.1, 1e-6)"),
    "theorem1_1e4_peer": ("dp-accounting PLD (grid 1e-4), same task",
                          "import benchmarks.accounting as b",
                          "b.dpa_pure_dp_epsilon([0.1] * 10**4, 1e-6)"),
    "theorem1_1e7": ("privloss: [CR] Theorem 1, k = 10^7, eps0 = 1e-3, delta = 1e-6",
                     "from privloss.bounds.optimal_dp import optimal_dp_epsilon as f",
                     "f(10**7, 1e-3, 1e-6)"),
    "theorem1_1e9": ("privloss: [CR] Theorem 1, k = 10^9, eps0 = 1e-4, delta = 1e-6",
                     "from privloss.bounds.optimal_dp import optimal_dp_epsilon as f",
                     "f(10**9, 1e-4, 1e-6)"),
    "theorem2_1e5": ("privloss: [CR] Theorem 2, k = 10^5, eps0 = 0.001, delta = 1e-9",
                     "from privloss.bounds.optimal_br import theorem2_epsilon as f",
                     "f(10**5, 0.001, 1e-9)"),
    "theorem3_1e5": ("privloss: [CR] Theorem 3, 50000 DP + 50000 BR, eps0 = 0.1, delta = 1e-6",
                     "from privloss.bounds.optimal_br import theorem3_epsilon as f",
                     "f(50000, 50000, 0.1, 1e-6)"),
    "near_lattice_1e5_compose": ("privloss: compose(), 10^5 eps_i = 0.1 (1 + 1e-6 U), delta at 594.489",
                                 "import numpy as np; from privloss import compose, PureDP; "
                                 "e = [PureDP(float(x)) for x in 0.1 * (1 + 1e-6 * "
                                 "np.random.default_rng(0).random(10**5))]",
                                 "compose(e, target_epsilon=594.489)"),
    "hetero_1000_direct": ("privloss: 1000 eps_i ~ U[0.01, 0.5], heterogeneous_dp_epsilon",
                           "import numpy as np; from privloss.bounds.heterogeneous_dp import "
                           "heterogeneous_dp_epsilon as f; e = np.random.default_rng(0)"
                           ".uniform(0.01, 0.5, 1000)",
                           "f(e, 1e-6, tolerance=1e-3)"),
    "hetero_1000_compose": ("privloss: same through compose()",
                            "import numpy as np; from privloss import compose, PureDP; "
                            "e = [PureDP(float(x)) for x in np.random.default_rng(0)"
                            ".uniform(0.01, 0.5, 1000)]",
                            "compose(e, target_delta=1e-6)"),
}


def process_cpu(setup: str, statement: str) -> tuple[float, str]:
    """CPU seconds of ``statement`` in a fresh interpreter (after ``setup``), and its value."""
    import subprocess

    code = (f"{setup}\nimport time\nstart = time.process_time()\nvalue = {statement}\n"
            f"print(time.process_time() - start, repr(getattr(value, 'value', value)))")
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(root, "src"), root,
                                                      env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env, cwd=root)
    seconds, value = done.stdout.split(None, 1)
    return float(seconds), value.strip()


def processes(pairs: int) -> None:
    """Issue 23 item 4: CPU time of separate processes, medians of ``pairs`` runs; the
    privloss / peer case runs A B A B ... (paired) and reports the median ratio."""
    import os

    header(f"separate processes (load average {os.getloadavg()[0]:.1f})")
    ratios = []
    for name in PROCESS_CASES:
        if name == "theorem1_1e4_peer" and not dp_accounting:
            continue
        label, setup, statement = PROCESS_CASES[name]
        samples = [process_cpu(setup, statement) for _ in range(pairs)]
        times = [seconds for seconds, _ in samples]
        print(f"{label:75s} {statistics.median(times):9.4f} s CPU  (runs {', '.join(f'{t:.3g}' for t in times)})"
              f"  -> {samples[0][1]}")
        if name.startswith("theorem1_1e4"):
            ratios.append(times)
    if len(ratios) == 2:
        per_pair = [peer / ours for ours, peer in zip(*ratios)]
        print(f"dp-accounting / privloss, Theorem 1 at 10^4: median ratio {statistics.median(per_pair):.0f}x")


TASKS = {"processes": processes, "theorem1": theorem1, "theorems23": theorems_2_3, "theorems23_1e5": theorems_2_3_at_scale,
         "heterogeneous": heterogeneous, "gaussian": gaussian, "poisson": poisson_gaussian}


def main() -> None:
    parser = argparse.ArgumentParser(description="privloss against dp-accounting: accounting")
    parser.add_argument("--pairs", type=int, default=3, help="paired runs per task (default 3)")
    parser.add_argument("--only", nargs="*", choices=sorted(TASKS), default=None)
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the rows here")
    options = parser.parse_args()
    import os
    print(f"# privloss accounting benchmark ({time.strftime('%Y-%m-%d %H:%M')}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"dp-accounting: {'installed' if dp_accounting else 'NOT installed'}; prv-accountant: "
          f"{'installed' if PRVAccountant else 'NOT installed'}; Opacus: "
          f"{'installed' if OpacusRDP else 'NOT installed'}")
    header("paired runs (medians; ratio = median of per-pair CPU ratios)")
    for name in options.only or TASKS:
        TASKS[name](options.pairs)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(ROWS, handle, indent=2, default=str)


if __name__ == "__main__":
    main()

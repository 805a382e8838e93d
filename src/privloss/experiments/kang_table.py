"""Seed 002 (Kang 2016): "advanced composition fails adaptively" - re-run and exact check.

Definition
    The seed composes ``k`` randomized-response mechanisms at ``epsilon``; the
    privacy loss is the walk ``S_s = sum_{j<=s} L_j`` with ``L_j = +epsilon``
    with probability ``p = e^eps/(1+e^eps)`` and ``-epsilon`` otherwise.  A walk
    "fails" when ``|S_s|`` exceeds the bound ``f = scale x (k eps (e^eps-1) +
    eps sqrt(2 k log(1/delta)))`` at **any** step ``s <= k`` (time-uniform,
    two-sided; ``composition.md`` section 8).  Table 2 scales only the deviation
    term.  We re-run the seed's Monte Carlo and compute the exact probability of
    the same event by a dynamic programme over the walk's positions.
Privacy guarantee
    None (an experiment).  DRV10 (``privloss.bounds.advanced.drv_epsilon``)
    bounds the one-sided **final** loss ``P[S_k > f] <= delta`` for parameters
    fixed in advance; that column is reported too.
Citation
    Seed 002: C. Kang, "Exploring Composition Bound in Non-Adaptive Setting"
    (2016), sections II-III and both tables; Dwork-Rothblum-Vadhan (FOCS 2010).
Runtime
    Exact column: O(k x level) per row (< 1 s).  Simulation: vectorised over
    walks in blocks of ``2 x level`` steps (see :func:`simulate_failures`);
    full run (20 rows, up to 500,000 walks x 5,000 steps) ~ 10-30 s on 2 cores.
"""

from __future__ import annotations

import math
import pathlib
import time
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from privloss.bounds.advanced import drv_epsilon
from privloss.experiments import _common
from privloss.samplers import InsecureSeededSource, RandomSource, default_source

NAME = "kang-table"
TITLE = "Kang (2016) advanced-composition 'failure' experiment: Monte Carlo beside the exact probability"
SOURCE = "seed 002 (Kang 2016), section III.i (first experiment) and the tables of III.ii and III.iii"

#: Walks per row in quick mode (ours; the full run uses the seed's n).
QUICK_WALKS = 20_000
#: Two-sided confidence level of the Clopper-Pearson intervals (ours).
CONFIDENCE = 0.95


@dataclass(frozen=True)
class KangRow:
    """One row of the seed: where it is printed, its parameters and its failure count."""

    table: str          # "text" (section III.i), "1" (III.ii), "2" (III.iii)
    scale: float
    scaled_term: str    # "both" terms of the bound scaled, or only the "deviation" term
    epsilon: float
    delta: float
    walks: int
    seed_failures: int
    k: int


def _rows() -> tuple[KangRow, ...]:
    text = [KangRow("text", 1.0, "both", 0.0001, 0.0001, 500_000, 230, 1000)]
    table1 = [(1.5, 0.001, 0.001, 10_000, 0, 50_000), (1.1, 0.001, 0.0001, 290_000, 14, 1000),
              (1.05, 0.001, 0.0001, 200_000, 37, 1000), (1.05, 0.001, 0.0001, 200_000, 28, 2000),
              (1.08, 0.001, 0.0001, 500_000, 49, 1000), (1.08, 0.001, 0.0001, 500_000, 51, 2000),
              (1.08, 0.001, 0.0001, 500_000, 49, 2000), (1.08, 0.001, 0.0001, 500_000, 49, 3000),
              (1.08, 0.001, 0.0001, 500_000, 50, 4000), (1.08, 0.001, 0.0001, 500_000, 72, 4000),
              (1.08, 0.001, 0.0001, 500_000, 59, 5000)]
    table2 = [(1.08, 0.001, 0.0001, 500_000, 34, 1000), (1.08, 0.0001, 0.0001, 500_000, 37, 1000),
              (1.08, 0.001, 0.0001, 500_000, 63, 2000), (1.08, 0.001, 0.0001, 500_000, 68, 3000),
              (1.08, 0.001, 0.0001, 500_000, 63, 4000), (1.08, 0.001, 0.0001, 500_000, 80, 5000),
              (1.08, 0.0001, 0.0001, 500_000, 76, 5000), (1.08, 0.00001, 0.0001, 500_000, 74, 5000)]
    return tuple(text + [KangRow("1", s, "both", e, d, n, f, k) for s, e, d, n, f, k in table1]
                 + [KangRow("2", s, "deviation", e, d, n, f, k) for s, e, d, n, f, k in table2])


#: Every row of the seed (its first experiment, then table 1, then table 2).
ROWS = _rows()


def step_probability(epsilon: float) -> float:
    """P[L_j = +epsilon] = e^eps / (1 + e^eps) = 1 / (1 + e^-eps) (RR at epsilon)."""
    return float(special.expit(epsilon))


def bound(row: KangRow) -> float:
    """The seed's threshold f, scaled as in its table (DRV10 epsilon via ``drv_epsilon``)."""
    full = drv_epsilon(row.k, row.epsilon, row.delta)
    if row.scaled_term == "both":
        return row.scale * full
    mean = row.k * row.epsilon * math.expm1(row.epsilon)
    return mean + row.scale * (full - mean)


def level(row: KangRow) -> int:
    """Smallest walk position (in units of epsilon) that exceeds the bound: |m| >= level fails.

    Caveat: computed in floating point; a bound within 1e-9 of a multiple of
    epsilon would be ambiguous, which we check and refuse.
    """
    ratio = bound(row) / row.epsilon
    if abs(ratio - round(ratio)) < 1e-9:
        raise ValueError(f"bound/epsilon = {ratio!r} is too close to an integer to decide '>'")
    return math.floor(ratio) + 1


def exact_failure_probability(epsilon: float, k: int, level_: int) -> float:
    """P[max_{s<=k} |S_s| >= level] for the +/-1 walk with up-probability p(epsilon).

    Definition: dynamic programme over the positions -level+1..level-1 of the
    walks not yet absorbed; the mass stepping onto +-level is added to the answer
    (added directly rather than as 1 - survival, to keep relative accuracy).
    Runtime: O(k x level).
    """
    if k < 1 or level_ < 1:
        raise ValueError(f"k and level must be >= 1, got k={k}, level={level_}")
    p = step_probability(epsilon)
    q = 1.0 - p
    alive = np.zeros(2 * level_ - 1)
    alive[level_ - 1] = 1.0
    shifted = np.empty_like(alive)
    failure = 0.0
    for _ in range(k):
        failure += p * alive[-1] + q * alive[0]
        shifted[0] = 0.0
        np.multiply(alive[:-1], p, out=shifted[1:])
        shifted[:-1] += q * alive[1:]
        alive, shifted = shifted, alive
    return float(failure)


def final_one_sided_probability(epsilon: float, k: int, level_: int) -> float:
    """P[S_k >= level]: the event DRV10 bounds by delta (non-time-uniform, one-sided)."""
    ups = math.ceil((k + level_) / 2)       # S_k = 2 U - k >= level
    return float(stats.binom.sf(ups - 1, k, step_probability(epsilon)))


def clopper_pearson(failures: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided binomial confidence interval for failures/trials."""
    tail = (1.0 - confidence) / 2.0
    lower = 0.0 if failures == 0 else float(stats.beta.ppf(tail, failures, trials - failures + 1))
    upper = 1.0 if failures == trials else float(stats.beta.ppf(1 - tail, failures + 1, trials - failures))
    return lower, upper


def _log_choose_table(n: int) -> np.ndarray:
    return special.gammaln(np.arange(n + 1) + 1.0)


def _bridge_hit_probability(start, end, steps: int, level_: int, log_fact) -> np.ndarray:
    """P[a uniform bridge from start to end in ``steps`` steps touches +level or -level].

    Reflection principle: paths a -> c touching L are in bijection with paths
    a -> 2L - c.  Given its number of up-steps a +/-1 walk's path is uniform
    whatever p is, so this is exact for the biased walk.  Requires
    steps <= 2 level (then no path touches both levels).
    """
    ups = (steps + end - start) // 2
    log_paths = log_fact[steps] - log_fact[ups] - log_fact[steps - ups]
    total = np.zeros(start.shape)
    for target in (2 * level_ - end, -2 * level_ - end):
        reflected_ups = (steps + target - start) // 2
        possible = (reflected_ups >= 0) & (reflected_ups <= steps)
        safe = np.clip(reflected_ups, 0, steps)
        log_reflected = log_fact[steps] - log_fact[safe] - log_fact[steps - safe]
        total += np.where(possible, np.exp(np.minimum(log_reflected - log_paths, 0.0)), 0.0)
    # ending on or beyond a level is a hit for sure (the reflection count assumes |end| < level)
    return np.where(np.abs(end) >= level_, 1.0, np.minimum(total, 1.0))


def simulate_failures(epsilon: float, k: int, level_: int, walks: int, rng: np.random.Generator,
                      *, chunk: int = 250_000) -> int:
    """Monte Carlo count of walks with max_{s<=k} |S_s| >= level (the seed's experiment).

    Definition: the walks advance in blocks of B = min(2 level, steps left)
    steps: the number of up-steps of a block is Binomial(B, p) (numpy), and
    whether the path inside the block touched +-level is a Bernoulli with the
    exact bridge probability (:func:`_bridge_hit_probability`); walks whose
    block ends beyond the level fail with probability 1.  This has the same law
    as stepping every walk one step at a time, at 1/B of the cost.
    Runtime: O(walks x k / level).
    """
    p = step_probability(epsilon)
    block = 2 * level_
    log_fact = _log_choose_table(block)
    failures = 0
    for first in range(0, walks, chunk):
        position = np.zeros(min(chunk, walks - first), dtype=np.int64)
        done = 0
        while done < k and position.size:
            steps = min(block, k - done)
            end = position + 2 * rng.binomial(steps, p, size=position.size) - steps
            # a bridge a -> c in B steps reaches at most (a + c + B)/2, at least (a + c - B)/2
            near = ((position + end + steps) // 2 >= level_) | ((position + end - steps) // 2 <= -level_)
            failed = np.zeros(position.size, dtype=bool)
            if near.any():
                index = np.flatnonzero(near)
                chance = _bridge_hit_probability(position[index], end[index], steps, level_, log_fact)
                failed[index] = rng.random(index.size) < chance
            failures += int(failed.sum())
            position = end[~failed]
            done += steps
    return failures


def _generator(seed: int | None, source: RandomSource | None = None) -> np.random.Generator:
    # The Monte Carlo is not a private release: a PCG64 keyed by four words of the source.
    if source is None:
        source = InsecureSeededSource(seed) if seed is not None else default_source()
    words = source.random_words(4)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(w) for w in words])))


def _row_result(row: KangRow, walks: int, rng, *, simulate: bool) -> dict:
    level_ = level(row)
    started = time.perf_counter()
    exact = exact_failure_probability(row.epsilon, row.k, level_)
    exact_seconds = time.perf_counter() - started
    failures = simulate_failures(row.epsilon, row.k, level_, walks, rng) if simulate else None
    seed_low, seed_high = clopper_pearson(row.seed_failures, row.walks)
    out = {
        "table": row.table, "scale": row.scale, "scaled_term": row.scaled_term,
        "epsilon": row.epsilon, "delta": row.delta, "k": row.k,
        "bound": bound(row), "level_steps": level_,
        "seed_walks": row.walks, "seed_failures": row.seed_failures,
        "seed_ci_low": seed_low, "seed_ci_high": seed_high,
        "walks": walks, "failures": failures,
        "exact_probability": exact, "exact_expected_failures": exact * row.walks,
        "final_one_sided_probability": final_one_sided_probability(row.epsilon, row.k, level_),
        "seed_binomial_p_value": float(stats.binomtest(row.seed_failures, row.walks, exact).pvalue),
        "exact_seconds": exact_seconds,
    }
    if failures is not None:
        low, high = clopper_pearson(failures, walks)
        out.update(ci_low=low, ci_high=high, exact_in_ci=bool(low <= exact <= high))
    else:
        out.update(ci_low=None, ci_high=None, exact_in_ci=None)
    return out


def compute(*, quick: bool = False, seed: int | None = None, progress=None,
            rows: tuple[KangRow, ...] = ROWS, simulate: bool = True) -> list[dict]:
    """One result dict per seed row (see the CSV columns); ``walks`` = seed's n, or QUICK_WALKS."""
    rng = _generator(seed)
    results = []
    for index, row in enumerate(rows):
        walks = min(row.walks, QUICK_WALKS) if quick else row.walks
        _common.notify(progress, index / len(rows), f"row {index + 1}/{len(rows)}: eps={row.epsilon} k={row.k}")
        results.append(_row_result(row, walks, rng, simulate=simulate))
    _common.notify(progress, 1.0, "done")
    return results


COLUMNS = ("table", "scale", "scaled_term", "epsilon", "delta", "k", "bound", "level_steps",
           "seed_walks", "seed_failures", "seed_ci_low", "seed_ci_high", "walks", "failures",
           "ci_low", "ci_high", "exact_probability", "exact_expected_failures", "exact_in_ci",
           "final_one_sided_probability", "seed_binomial_p_value", "exact_seconds")


def _parameters(quick: bool) -> list[dict]:
    rows = [_common.parameter("rows", "seed's first experiment + tables 1 and 2", _common.DOCUMENT),
            _common.parameter("confidence", CONFIDENCE, _common.OURS, "Clopper-Pearson, two-sided")]
    if quick:
        rows.append(_common.parameter("walks per row", QUICK_WALKS, _common.OURS, "quick mode"))
    return rows


def _write_csv(path: pathlib.Path, results: list[dict], quick: bool) -> None:
    _common.write_csv(path, COLUMNS, [["" if r[key] is None else r[key] for key in COLUMNS]
                                      for r in results], _parameters(quick))


def _plot(path: pathlib.Path, results: list[dict]) -> None:
    plt = _common.pyplot()
    figure, ax = plt.subplots(figsize=(10, 5))
    x = np.arange(len(results))
    expected = np.array([r["exact_probability"] * r["seed_walks"] for r in results])
    ax.bar(x, expected, color="#bbbbbb", label="exact expected failures (DP, seed's n)")
    ax.plot(x, [r["seed_failures"] for r in results], "rv", label="seed's reported failures")
    ours = [(i, r) for i, r in enumerate(results) if r["failures"] is not None]
    scale = [r["seed_walks"] / r["walks"] for _, r in ours]
    ax.errorbar([i for i, _ in ours], [r["failures"] * s for (_, r), s in zip(ours, scale)],
                yerr=[[(r["failures"] / r["walks"] - r["ci_low"]) * r["seed_walks"] for _, r in ours],
                      [(r["ci_high"] - r["failures"] / r["walks"]) * r["seed_walks"] for _, r in ours]],
                fmt="o", color="C0", label="our Monte Carlo (95% CP, scaled to seed's n)")
    ax.plot(x, [r["delta"] * r["seed_walks"] for r in results], "k_", markersize=14,
            label="n x delta (seed's target)")
    # one label per row, rotated: two-line labels overlapped their neighbours
    ax.set_xticks(x, [f"{r['table']}:{r['scale']:g}{'d' if r['scaled_term'] == 'deviation' else ''}"
                      f" k={r['k']}" for r in results], fontsize=7, rotation=55, ha="right",
                  rotation_mode="anchor")
    ax.set_xlabel("seed row (table:scale, d = deviation term only; k)")
    ax.set_ylabel("failures among the seed's n walks")
    ax.set_title("Kang (2016): time-uniform two-sided exceedances of the DRV bound")
    ax.legend(fontsize=7)
    _common.save_figure(figure, path)


def _claims(results: list[dict]) -> list[dict]:
    first = results[0]
    scaled = [r for r in results if r["table"] == "1" and r["scale"] == 1.08]
    dev = [r for r in results if r["table"] == "2"]
    consistent = sum(r["seed_binomial_p_value"] >= 1e-3 for r in results)
    max_final = max(r["final_one_sided_probability"] / r["delta"] for r in results)
    return [
        {"claim": "first experiment (eps=1e-4, delta=1e-4, k=1000, n=500,000): 230 failures, "
                  "> 10 sd above n delta = 50",
         "document": "230 failures",
         "ours": f"exact P = {first['exact_probability']:.3e} -> {first['exact_expected_failures']:.1f} "
                 f"expected; our run {first['failures']}/{first['walks']}",
         "agree": bool(first["seed_binomial_p_value"] >= 1e-3),
         "why": "the exact probability of the seed's own event predicts far fewer failures than 230 "
                "(binomial p-value {:.1e}); the count is not reproducible".format(first["seed_binomial_p_value"])},
        {"claim": "hence the advanced composition bound does not hold adaptively",
         "document": "DRV bound fails in the adaptive setting",
         "ours": f"P[S_k > f] / delta <= {max_final:.3f} on every row; the walks are not adaptive",
         "agree": False,
         "why": "DRV10/KOV are theorems for adaptively chosen mechanisms with parameters fixed in "
                "advance and bound the final one-sided loss; the experiment fixes every parameter and "
                "counts a different (time-uniform, two-sided) event, so it cannot refute them"},
        {"claim": "bound x 1.08 gives n_f ~ n delta within one sd",
         "document": "49-72 failures for n delta = 50",
         "ours": ", ".join(f"k={r['k']}: {r['exact_expected_failures']:.1f}" for r in scaled),
         "agree": bool(all(abs(r["exact_expected_failures"] - 50) <= 7.07 for r in scaled)),
         "why": "exact expected counts of the seed's event with the 1.08 scaling; 1.08 is an "
                "empirical factor and must not be applied to DRV/KOV (composition.md section 8)"},
        {"claim": "1.08 on the deviation term only gives too many failures",
         "document": "34-80 failures",
         "ours": ", ".join(f"k={r['k']},eps={r['epsilon']:g}: {r['exact_expected_failures']:.1f}" for r in dev),
         "agree": bool(all(r["exact_expected_failures"] > 50 for r in dev)),
         "why": "exact expected counts; compare with n delta = 50"},
        {"claim": "standard deviation n delta (1-delta) ~ 7.07",
         "document": "n delta (1 - delta) = 7.07",
         "ours": f"sqrt(n delta (1-delta)) = {math.sqrt(500_000 * 1e-4 * (1 - 1e-4)):.3f}",
         "agree": False, "why": "the formula lacks a square root (the number is right)"},
        {"claim": "seed counts consistent with the exact probability (binomial test, p >= 1e-3)",
         "document": "all tables", "ours": f"{consistent} of {len(results)} rows", "agree": None,
         "why": "row-by-row check of the seed's counts against the exact law"},
    ]


def _markdown(results: list[dict], claims: list[dict], quick: bool, seconds: float) -> str:
    lines = [f"# {TITLE}", "", f"Source: {SOURCE}.", "",
             "Event (the seed's): a walk fails if |S_s| exceeds the bound at any step s <= k "
             "(time-uniform, two-sided). Exact column: dynamic programme over positions. "
             f"Intervals: Clopper-Pearson {CONFIDENCE:.0%} (ours). "
             + (f"Quick mode: {QUICK_WALKS:,} walks per row (ours), not the seed's n." if quick else
                "Walks: the seed's n per row."), "",
             "| table | scale | term | eps | delta | k | seed n_f | exact E[n_f] | ours (walks) | "
             "95% CI of p | exact P | P[S_k>f] (DRV event) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ours = "-" if r["failures"] is None else f"{r['failures']} ({r['walks']:,})"
        ci = "-" if r["ci_low"] is None else f"[{r['ci_low']:.2e}, {r['ci_high']:.2e}]"
        lines.append(f"| {r['table']} | {r['scale']:g} | {r['scaled_term']} | {r['epsilon']:g} | "
                     f"{r['delta']:g} | {r['k']} | {r['seed_failures']} | {r['exact_expected_failures']:.1f} | "
                     f"{ours} | {ci} | {r['exact_probability']:.3e} | {r['final_one_sided_probability']:.2e} |")
    lines += ["", "## The seed's conclusions against the evidence", "",
              "| claim | document | ours | agree | why |", "|---|---|---|---|---|"]
    for c in claims:
        agree = "n/a" if c["agree"] is None else ("yes" if c["agree"] else "no")
        lines.append(f"| {c['claim']} | {c['document']} | {c['ours']} | {agree} | {c['why']} |")
    lines += ["", "Advanced composition (DRV10) and KOV are theorems for adaptively chosen mechanisms "
              "whose privacy parameters are fixed in advance; the seed's 'adaptive' means parameters "
              "chosen adaptively (privacy filters/odometers, RRUV16). Do not scale DRV/KOV by 1.08.",
              "", f"Run time: {seconds:.1f} s."]
    return "\n".join(lines) + "\n"


def run(out_dir: pathlib.Path, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Compute, write ``kang-table.csv/.png/.md`` into ``out_dir`` and return the summary dict."""
    out_dir = _common.output_dir(out_dir)
    started = time.perf_counter()
    results = compute(quick=quick, seed=seed, progress=progress)
    claims = _claims(results)
    paths = {kind: out_dir / f"{NAME}.{kind}" for kind in ("csv", "png", "md")}
    _write_csv(paths["csv"], results, quick)
    _plot(paths["png"], results)
    paths["md"].write_text(_markdown(results, claims, quick, time.perf_counter() - started))
    first = results[0]
    key = {"first_experiment_exact_probability": first["exact_probability"],
           "first_experiment_exact_expected_failures": first["exact_expected_failures"],
           "first_experiment_failures": first["failures"],
           "max_final_one_sided_over_delta": max(r["final_one_sided_probability"] / r["delta"]
                                                 for r in results)}
    for r in results:
        key[f"exact_{r['table']}_{r['scale']:g}_{r['scaled_term']}_eps{r['epsilon']:g}_k{r['k']}"] = \
            r["exact_probability"]
    return {"csv": paths["csv"], "png": paths["png"], "md": paths["md"], "key_numbers": key,
            "claims": claims}

"""Seed 003's worked examples recomputed (lecture notes after Dwork & Roth).

Definition
    1. Histogram of 10,000 names, Laplace(1) noise: the 95% bound on the largest
       error, ln(10000/0.05) (union bound), next to the exact quantile
       -ln(1 - 0.95^(1/10000)).
    2. The exponential-mechanism ballot table (votes 4, 3, 3; utility = votes,
       sensitivity 1, McSherry-Talwar form exp(eps u / 2)) from
       :meth:`ExponentialMechanism.probabilities`.
    3. The lifetime example: the per-database epsilon0 for k = 10,000 databases
       so that the total is (1, e^-32): by the notes' Corollary 3.21, by the DRV
       theorem solved exactly (bisection on
       :func:`privloss.bounds.advanced.drv_epsilon`), by the optimal bound
       (bisection on :func:`privloss.bounds.optimal_dp.optimal_dp_epsilon`), and in
       full mode by :func:`privloss.accounting.calibrate_epsilon`.
    4. The Dinur-Nissim reconstruction attack (:func:`demonstrate_attack`) on
       small databases: bounded noise ~sqrt(n)/10 versus Laplace noise making
       all answers 1-DP.
Privacy guarantee
    None (a report). The attack's randomness comes from ``seed``
    (InsecureSeededSource) or the secure default source.
Citation
    Seed 003 (lecture notes): "First Names" example, ballot table, "Example"
    (lifetime) after Theorem 3.20 / Corollary 3.21, "Reconstruction attacks";
    Dwork & Roth 2014 Sections 3.3, 3.4, 3.5, 8.1.
Runtime
    quick: ~1 s; full: ~3 s (larger attack and calibrate_epsilon).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

from privloss.attacks.reconstruction import demonstrate_attack
from privloss.bounds.advanced import drv_epsilon
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.experiments._common import (DOCUMENT, OURS, claim, difference_verdict, notify,
                                          output_dir, parameter, pyplot, relative_difference,
                                          result, save_figure, seeded_source, write_csv,
                                          write_markdown)
from privloss.mechanisms.accuracy import laplace_linf_bound
from privloss.mechanisms.exponential import ExponentialMechanism

NAME = "notes-examples"
TITLE = "worked examples of the lecture notes: histogram error, ballot table, lifetime, attack"
SOURCE = "seed 003 (lecture notes): First Names, ballot table, lifetime Example, reconstruction"

NAMES = 10_000
BETA = 0.05
VOTES = (4, 3, 3)
#: the seed's table: epsilon -> probabilities of the three candidates
BALLOT_TABLE = {"5": (0.9, 0.045, 0.045), "0.5": (0.39, 0.3, 0.3), "0": (0.33, 0.33, 0.33)}
LIFETIME_K = 10_000
LIFETIME_EPSILON = 1.0
LIFETIME_DELTA = math.exp(-32)
QUICK_ATTACK_N = (64,)
FULL_ATTACK_N = (64, 128, 256)
#: Repetitions of the attack at the smallest n, for the verdict's confidence interval (ours).
ATTACK_TRIALS, QUICK_ATTACK_TRIALS = 40, 10

COLUMNS = ("example", "quantity", "document", "ours")


def _largest_below(meets, high: float, steps: int = 80) -> float:
    """Largest x in [0, high] with meets(x), for a monotone predicate (bisection)."""
    low = 0.0
    for _ in range(steps):
        mid = 0.5 * (low + high)
        if meets(mid):
            low = mid
        else:
            high = mid
    return low


def histogram_example() -> dict:
    union = laplace_linf_bound(1.0, BETA, NAMES)
    # exact: P[max |Lap(1)| <= t] = (1 - e^-t)^n = 1 - beta
    exact = -math.log(-math.expm1(math.log1p(-BETA) / NAMES))
    return {"union_bound": union, "exact_quantile": exact}


def ballot_example() -> dict:
    table = {}
    for text in ("5", "0.5", "0", "6"):
        mechanism = ExponentialMechanism(Fraction(text), sensitivity=1)
        table[text] = tuple(float(p) for p in mechanism.probabilities(list(VOTES)))
    return table


def lifetime_example(full: bool) -> dict:
    k, total, delta = LIFETIME_K, LIFETIME_EPSILON, LIFETIME_DELTA
    corollary = total / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / delta)))
    drv = _largest_below(lambda e0: drv_epsilon(k, e0, delta) <= total, total)
    optimal = _largest_below(lambda e0: optimal_dp_epsilon(k, e0, delta) <= total, total)
    values = {"corollary_3_21": corollary, "drv_exact": drv, "optimal": optimal,
              "drv_at_1_over_801": drv_epsilon(k, 1.0 / 801, delta)}
    if full:
        from privloss.accounting import calibrate_epsilon

        values["calibrate_epsilon"] = calibrate_epsilon(k, 0, total, delta).per_mechanism_epsilon
    return values


def attack_example(sizes, seed: int | None) -> list[tuple]:
    source = seeded_source(seed)
    rows = []
    for n in sizes:
        bounded = demonstrate_attack(n, noise="bounded", source=source)
        laplace = demonstrate_attack(n, noise="laplace", epsilon=1.0, source=source)
        rows.append((n, bounded.num_queries, bounded.noise_parameter, bounded.fraction_recovered,
                     laplace.noise_parameter, laplace.fraction_recovered))
    return rows


def attack_differences(n: int, trials: int, seed: int | None) -> list[float]:
    """Per trial: fraction recovered with bounded noise minus with 1-DP Laplace answers.
    The seed is offset so these trials do not repeat :func:`attack_example`'s draws."""
    source = seeded_source(None if seed is None else seed + 1)
    return [demonstrate_attack(n, noise="bounded", source=source).fraction_recovered
            - demonstrate_attack(n, noise="laplace", epsilon=1.0, source=source).fraction_recovered
            for _ in range(trials)]


def _draw(ballot, lifetime, attack, path: Path) -> Path:
    plt = pyplot()
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(13, 4))
    width = 0.2
    for index, (label, probs) in enumerate((("seed eps=5", BALLOT_TABLE["5"]), ("ours eps=5", ballot["5"]),
                                            ("ours eps=6", ballot["6"]),
                                            ("ours eps=0.5", ballot["0.5"]))):
        left.bar([i + (index - 1.5) * width for i in range(3)], probs, width, label=label)
    left.set_xticks(range(3), [f"candidate {i + 1}\n({v} votes)" for i, v in enumerate(VOTES)])
    left.set_ylabel("probability")
    left.set_title("ballot table (exp(eps u / 2))")
    left.legend(fontsize=7)
    names = [key for key in ("corollary_3_21", "drv_exact", "optimal", "calibrate_epsilon")
             if key in lifetime]
    middle.bar(range(len(names) + 1), [lifetime[key] for key in names] + [1 / 801])
    middle.set_xticks(range(len(names) + 1), names + ["notes: 1/801"], rotation=20, fontsize=7)
    middle.set_ylabel("epsilon0 per database")
    middle.set_title(f"lifetime: k = {LIFETIME_K}, (1, $e^{{-32}}$)")
    sizes = [row[0] for row in attack]
    right.plot(sizes, [row[3] for row in attack], "o-", label="bounded noise ~sqrt(n)/10")
    right.plot(sizes, [row[5] for row in attack], "s-", label="Laplace, all answers 1-DP")
    right.set_ylim(0, 1.05)
    right.set_xlabel("database size n (4n random subset queries)")
    right.set_ylabel("fraction of bits recovered")
    right.set_title("Dinur-Nissim LP attack")
    right.legend(fontsize=7)
    for axis in (left, middle, right):
        axis.grid(alpha=0.3)
    return save_figure(figure, path)


def run(out_dir, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Recompute the examples, write notes-examples.{csv,png,md}."""
    out = output_dir(out_dir)
    sizes = QUICK_ATTACK_N if quick else FULL_ATTACK_N
    parameters = [
        parameter("names", NAMES, DOCUMENT), parameter("beta", BETA, DOCUMENT),
        parameter("votes", "4, 3, 3", DOCUMENT),
        parameter("lifetime k, epsilon, delta'", "10000, 1, e^-32", DOCUMENT),
        parameter("attack n", ", ".join(map(str, sizes)), OURS, "4n queries, library defaults"),
        parameter("attack seed", "secure source" if seed is None else seed, OURS, ""),
        parameter("attack trials for the verdict", QUICK_ATTACK_TRIALS if quick else ATTACK_TRIALS,
                  OURS, f"at n = {sizes[0]}"),
    ]
    notify(progress, 0.0, "histogram and ballot")
    histogram = histogram_example()
    ballot = ballot_example()
    notify(progress, 0.2, "lifetime example")
    lifetime = lifetime_example(full=not quick)
    notify(progress, 0.5, "reconstruction attack")
    attack = attack_example(sizes, seed)
    attack_verdict = difference_verdict(
        attack_differences(sizes[0], QUICK_ATTACK_TRIALS if quick else ATTACK_TRIALS, seed))
    notify(progress, 1.0, "writing outputs")

    rows = [("histogram", "95% max error, union bound", 12.2, histogram["union_bound"]),
            ("histogram", "95% max error, exact quantile", "", histogram["exact_quantile"])]
    for text in ("5", "0.5", "0", "6"):
        for index in range(3):
            document = BALLOT_TABLE[text][index] if text in BALLOT_TABLE else ""
            rows.append(("ballot", f"eps={text} candidate {index + 1}", document, ballot[text][index]))
    rows += [("lifetime", "epsilon0 by Corollary 3.21", "", lifetime["corollary_3_21"]),
             ("lifetime", "epsilon0 by DRV, solved exactly", 1 / 801, lifetime["drv_exact"]),
             ("lifetime", "epsilon0 by the optimal bound (Theorem 1)", "", lifetime["optimal"]),
             ("lifetime", "DRV epsilon' at epsilon0 = 1/801", "< 1", lifetime["drv_at_1_over_801"])]
    if "calibrate_epsilon" in lifetime:
        rows.append(("lifetime", "epsilon0 by calibrate_epsilon", "", lifetime["calibrate_epsilon"]))
    for n, queries, bound, bounded, scale, laplace in attack:
        rows.append(("attack", f"n={n} bounded noise E={bound:g}: fraction recovered", "", bounded))
        rows.append(("attack", f"n={n} Laplace scale {scale:.4g}: fraction recovered", "", laplace))
    rows.append(("attack", "Theorem 1: noise <= n/401 recovers at least", "X%", 1 - 4 / 401))

    seed5_close = max(abs(a - b) for a, b in zip(BALLOT_TABLE["5"], ballot["5"]))
    seed6_close = max(abs(a - b) for a, b in zip(BALLOT_TABLE["5"], ballot["6"]))
    rest_close = max(abs(a - b) for text in ("0.5", "0")
                     for a, b in zip(BALLOT_TABLE[text], ballot[text]))
    key_numbers = {
        "histogram_union_bound": histogram["union_bound"],
        "histogram_exact_quantile": histogram["exact_quantile"],
        "ballot_eps5_top": ballot["5"][0], "ballot_eps6_top": ballot["6"][0],
        "ballot_eps0.5_top": ballot["0.5"][0],
        "ballot_eps5_second": ballot["5"][1], "ballot_eps6_second": ballot["6"][1],
        "lifetime_corollary": lifetime["corollary_3_21"],
        "lifetime_drv_exact": lifetime["drv_exact"],
        "lifetime_optimal": lifetime["optimal"],
        "lifetime_drv_at_1_over_801": lifetime["drv_at_1_over_801"],
        "attack_bounded_fraction_n64": attack[0][3],
        "attack_laplace_fraction_n64": attack[0][5],
        "attack_difference_mean": attack_verdict["mean"],
        "attack_difference_low": attack_verdict["low"],
        "attack_difference_high": attack_verdict["high"],
    }
    claims = [
        claim("10,000 names, (1,0)-DP: with prob. 95% no estimate is off by more than",
              "ln(10000/0.05) ~ 12.2", f"{histogram['union_bound']:.6g} (union bound); exact 95% "
              f"quantile {histogram['exact_quantile']:.6g}", abs(histogram["union_bound"] - 12.2) < 0.05,
              "union bound over the 10,000 Laplace(1) errors; the exact value is slightly smaller"),
        claim("ballot table, eps = 0.5 and eps = 0 columns", "0.39/0.3/0.3 and 0.33 each",
              f"{ballot['0.5'][0]:.4f}/{ballot['0.5'][1]:.4f}/{ballot['0.5'][2]:.4f}; 1/3 each",
              rest_close < 0.006, "exp(eps u / (2 Delta u)), Delta u = 1, rounded as in the table"),
        claim("ballot table, eps = 5 column", "0.9 / 0.045 / 0.045",
              f"eps = 5 gives {ballot['5'][0]:.4f}/{ballot['5'][1]:.4f}/{ballot['5'][2]:.4f} "
              f"(off by {seed5_close:.3f}); eps = 6 gives {ballot['6'][0]:.4f}/{ballot['6'][1]:.4f}"
              f"/{ballot['6'][2]:.4f}", False,
              "the seed's eps = 5 column matches eps = 6 in the notes' own form exp(eps u / 2) "
              f"(within {seed6_close:.4f}); with exp(eps u) (no 2) eps = 5 gives 0.987"),
        claim("lifetime: with delta' = e^-32 it suffices to have epsilon0 < 1/801",
              "epsilon0 < 1/801 ~ 0.0012484",
              f"DRV at 1/801 gives epsilon' = {lifetime['drv_at_1_over_801']:.6f} > 1; DRV solved "
              f"exactly needs epsilon0 <= {lifetime['drv_exact']:.7g} (1/{1 / lifetime['drv_exact']:.1f})",
              lifetime["drv_at_1_over_801"] <= 1.0,
              "1/801 ignores the k eps0 (e^eps0 - 1) term (~0.016 here); it is not sufficient by "
              "Theorem 3.20 itself"),
        claim("lifetime by Corollary 3.21", "epsilon0 = eps' / (2 sqrt(2k ln(1/delta')))",
              f"{lifetime['corollary_3_21']:.7g} = 1/1600", None,
              "the corollary is valid (for eps' < 1) but twice as conservative as solving DRV"),
        claim("(added) lifetime by the optimal composition bound", "-",
              f"epsilon0 = {lifetime['optimal']:.7g} (1/{1 / lifetime['optimal']:.1f})", None,
              "(1, e^-32)-DP by Theorem 1; the notes ask for the loss to be bounded with "
              "probability 1 - e^-32, a stronger event than (eps, delta)-DP"),
        claim("reconstruction: noise bounded by n/401 lets the adversary recover X% of entries",
              "X% (number lost in the seed)", f"Theorem 1: at least {1 - 4 / 401:.2%} "
              "(at most 4 alpha n = 4n/401 wrong bits)", None,
              "the seed's percentage was lost; Dwork-Roth state 99%"),
        claim("answers within o(sqrt n) to O(n log^2 n) queries are blatantly non-private",
              "Theorem 2 (Dinur-Nissim)",
              f"n = {attack[0][0]}: bounded noise recovers {attack[0][3]:.3f} of the bits, Laplace "
              f"(1-DP overall) {attack[0][5]:.3f}; difference over repeated attacks: "
              f"{attack_verdict['text']}", None,
              "LP attack, 4n random subset queries (fewer than n log^2 n suffice here); verdict "
              "from the 95% interval of the per-trial difference (bounded minus Laplace)",
              verdict=attack_verdict["verdict"] if attack[0][3] >= 0.9 else "disagree"),
    ]
    if "calibrate_epsilon" in lifetime:
        key_numbers["lifetime_calibrate_epsilon"] = lifetime["calibrate_epsilon"]
    csv_path = write_csv(out / f"{NAME}.csv", COLUMNS, rows, parameters)
    png_path = _draw(ballot, lifetime, attack, out / f"{NAME}.png")
    md_path = write_markdown(
        out / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE, parameters=parameters,
        key_numbers=key_numbers, claims=claims, png_name=png_path.name,
        notes=[f"Relative gap DRV-exact vs optimal epsilon0: "
               f"{relative_difference(lifetime['drv_exact'], lifetime['optimal']):.1%}."])
    return result(csv_path, png_path, md_path, key_numbers, claims)

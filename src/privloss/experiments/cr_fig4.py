"""[CR] Figure 4: Laplace versus Gaussian noise on a histogram at equal variance, one shot.

Definition
    A histogram with l0-sensitivity Delta_0 and linf-sensitivity Delta_inf gets
    Laplace noise of scale b on every count, or Gaussian noise of the same
    variance (sigma = sqrt(2) b). At a fixed delta, the overall epsilon of:
    Laplace by [CR] Lemma 6.2 (Theorem 1 with k = Delta_0); Gaussian by
    Lemma 6.3 (zCDP, simple and tight [CKS] conversion); Gaussian by Lemma 6.1
    (analytic Gaussian, exact, with Delta_2 = sqrt(Delta_0) Delta_inf); as
    Delta_0 varies.
Privacy guarantee
    None (a report about public bounds).
Citation
    Cesar & Rogers, ALT 2021 (seed 000), Section 6.1, Lemmas 6.1-6.3 and
    Figure 4; composition.md §5; worked_values.md §9.
Runtime
    quick: 6 values of Delta_0 (~0.1 s); full: Delta_0 = 1..100 (~1 s).
"""

from __future__ import annotations

import math
from pathlib import Path

from privloss.bounds.gaussian import (analytic_gaussian_epsilon, gaussian_histogram_epsilon,
                                      laplace_histogram_epsilon)
from privloss.experiments._common import (OURS, claim, notify, ours_suffix, output_dir, parameter,
                                          pyplot, result, save_figure, wrapped, write_csv,
                                          write_markdown)

NAME = "cr-fig4"
TITLE = "Laplace vs Gaussian noise for histograms at equal variance, one shot (Lemmas 6.1-6.3)"
SOURCE = "seed 000 (Cesar & Rogers 2021), Section 6.1 and Figure 4"

LINF_SENSITIVITY = 1.0
LAPLACE_SCALE = 10.0            # per-count Laplace epsilon Delta_inf / b = 0.1
SIGMA = math.sqrt(2.0) * LAPLACE_SCALE   # Var Lap(b) = 2 b^2 = sigma^2
DELTA = 1e-6
FULL_L0 = tuple(range(1, 101))
QUICK_L0 = (1, 2, 5, 10, 40, 100)

COLUMNS = ("l0_sensitivity", "laplace_lemma62", "gaussian_zcdp_simple", "gaussian_zcdp_tight",
           "gaussian_analytic_lemma61")
LABELS = ("Laplace (Lemma 6.2)", "Gaussian, zCDP simple (Lemma 6.3)",
          "Gaussian, zCDP + CKS (Lemma 6.3, optimised)", "analytic Gaussian (Lemma 6.1)")


def one_shot_row(l0: int) -> tuple:
    """Epsilons of the four bounds at l0-sensitivity ``l0`` (shared with cr-fig5)."""
    return (l0,
            laplace_histogram_epsilon(l0, LINF_SENSITIVITY, LAPLACE_SCALE, DELTA),
            gaussian_histogram_epsilon(l0, LINF_SENSITIVITY, SIGMA, DELTA, conversion="simple"),
            gaussian_histogram_epsilon(l0, LINF_SENSITIVITY, SIGMA, DELTA, conversion="tight"),
            analytic_gaussian_epsilon(SIGMA, DELTA, sensitivity=math.sqrt(l0) * LINF_SENSITIVITY))


def parameters_table(l0_values) -> list[dict]:
    return [
        parameter("Delta_inf", LINF_SENSITIVITY, OURS, "the seed's values were lost"),
        parameter("Laplace scale b", LAPLACE_SCALE, OURS, "per-count epsilon 0.1"),
        parameter("sigma", f"{SIGMA:.6f}", OURS, "sqrt(2) b: equal variance (the seed's rule)"),
        parameter("delta", DELTA, OURS, "same delta for every bound (the seed's rule)"),
        parameter("Delta_0", f"{l0_values[0]}..{l0_values[-1]} ({len(l0_values)} values)", OURS, ""),
    ]


def crossover(rows, column: int) -> int | None:
    """Smallest Delta_0 from which on the bound in ``column`` stays below Laplace."""
    found = None
    for row in rows:
        if row[column] < row[1]:
            found = row[0] if found is None else found
        else:
            found = None
    return found


def _draw(rows, path: Path, parameters, title: str) -> Path:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.8, 4.6))
    l0 = [row[0] for row in rows]
    for column, label in enumerate(LABELS, start=1):
        axis.plot(l0, [row[column] for row in rows], "o-" if len(rows) < 20 else "-",
                  markersize=3, label=label)
    axis.set_xlabel("l0-sensitivity Delta_0")
    axis.set_ylabel("overall epsilon")
    axis.set_title(f"{title}\n{wrapped(ours_suffix(parameters), 95)}", fontsize=8)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    return save_figure(figure, path)


def run(out_dir, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Compute the four bounds over Delta_0, write cr-fig4.{csv,png,md}; ``seed`` is unused."""
    out = output_dir(out_dir)
    l0_values = QUICK_L0 if quick else FULL_L0
    parameters = parameters_table(l0_values)
    rows = []
    for index, l0 in enumerate(l0_values):
        notify(progress, index / len(l0_values), f"Delta_0 = {l0}")
        rows.append(one_shot_row(l0))
    notify(progress, 1.0, "writing outputs")
    at = {row[0]: row for row in rows}
    key_numbers = {}
    for l0 in (10, 40, 100):
        for column, name in enumerate(COLUMNS[1:], start=1):
            key_numbers[f"{name}_l0_{l0}"] = at[l0][column]
    wins_small = all(at[1][1] < at[1][column] for column in (2, 3, 4))
    cross = {COLUMNS[column]: crossover(rows, column) for column in (2, 3, 4)}
    wins_large = all(value is not None for value in cross.values())
    claims = [
        claim("for small l0-sensitivity the Laplace mechanism gives the better guarantee",
              "Laplace better for relatively small Delta_0",
              f"Delta_0 = 1: Laplace {at[1][1]:.6g} vs Gaussian {at[1][2]:.6g} / {at[1][3]:.6g} / "
              f"{at[1][4]:.6g}", wins_small, "Lemmas 6.2, 6.3 (simple, tight), 6.1"),
        claim("Gaussian noise wins as the l0-sensitivity grows",
              "Gaussian wins out as Delta_0 increases",
              "Gaussian below Laplace from Delta_0 = " + ", ".join(
                  f"{value} ({name})" for name, value in cross.items()),
              wins_large, "crossover among the Delta_0 computed (quick mode: a coarse grid); the "
              "analytic Gaussian is already below Laplace at Delta_0 = 10 "
              f"({at[10][4]:.10g} vs {at[10][1]:.10g} there)"),
    ]
    csv_path = write_csv(out / f"{NAME}.csv", COLUMNS, rows, parameters)
    png_path = _draw(rows, out / f"{NAME}.png", parameters,
                     "[CR] Figure 4: one shot, equal variance")
    md_path = write_markdown(
        out / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE, parameters=parameters,
        key_numbers=key_numbers, claims=claims, png_name=png_path.name,
        notes=["Reference point: worked_values.md §9 (Delta_0 = 10: 0.9993709057, 1.2003940002, "
               "1.0140742547, 0.9405155265)."])
    return result(csv_path, png_path, md_path, key_numbers, claims)

"""[CR] Theorem 3 as an interpolation: optimal epsilon for d DP and k - d BR mechanisms, d = 0..k.

Definition
    For fixed k, epsilon and delta, the optimal non-adaptive epsilon_g of d
    epsilon-DP and k - d epsilon-BR mechanisms ([CR] Theorem 3,
    :func:`privloss.bounds.optimal_br.theorem3_epsilon`) as d goes from 0 to k.
    The end points are checked against the separate implementations of
    [CR] Theorem 2 (d = 0, DDR) and Theorem 1 (d = k, KOV).
Privacy guarantee
    None (a report about public bounds).
Citation
    Cesar & Rogers, ALT 2021 (seed 000), Section 4 (Theorem 3) and the
    introduction's interpolation remark; composition.md §3; worked_values.md §2-3.
Runtime
    quick: k = 10 (all d) and k = 50, 100 at d in {0, k/2, k}: ~0.3 s;
    full: k in {10, 50, 100}, every d: ~3 s.
"""

from __future__ import annotations

from pathlib import Path

from privloss.bounds.optimal_br import theorem2_epsilon, theorem3_epsilon
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.experiments._common import (OURS, claim, notify, ours_suffix, output_dir, parameter,
                                          pyplot, relative_difference, result, save_figure,
                                          write_csv, write_markdown)

NAME = "cr-interpolation"
TITLE = "Theorem 3 optimal epsilon as the number of DP mechanisms goes 0..k (DDR to KOV)"
SOURCE = "seed 000 (Cesar & Rogers 2021), Section 1 interpolation remark, Section 4 Theorem 3"

EPSILON = 0.1
DELTA = 1e-6
KS = (10, 50, 100)

COLUMNS = ("k", "num_dp", "num_br", "theorem3_epsilon", "theorem2_all_br", "theorem1_all_dp")


def _num_dps(k: int, quick: bool) -> list[int]:
    if quick and k > 10:
        return [0, k // 2, k]
    return list(range(k + 1))


def _draw(rows, path: Path, parameters) -> Path:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.5, 4.5))
    for k in KS:
        chosen = [row for row in rows if row[0] == k]
        line, = axis.plot([row[1] / k for row in chosen], [row[3] for row in chosen], "o-",
                          markersize=2, label=f"Thm 3, k={k}")
        axis.axhline(chosen[0][4], color=line.get_color(), linestyle=":", linewidth=0.8)
        axis.axhline(chosen[0][5], color=line.get_color(), linestyle="--", linewidth=0.8)
    axis.set_xlabel("fraction of DP mechanisms d/k (rest BR)")
    axis.set_ylabel("optimal overall epsilon (non-adaptive)")
    axis.set_title(f"DDR (d=0, dotted) to KOV (d=k, dashed)\n{ours_suffix(parameters)}", fontsize=9)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    return save_figure(figure, path)


def run(out_dir, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Compute the interpolation, write cr-interpolation.{csv,png,md}; ``seed`` is unused."""
    out = output_dir(out_dir)
    parameters = [
        parameter("epsilon", EPSILON, OURS, "per mechanism; the seed fixes none for this remark"),
        parameter("delta", DELTA, OURS, "overall delta"),
        parameter("k", ", ".join(map(str, KS)), OURS,
                  "quick mode: every d for k = 10, d in {0, k/2, k} otherwise"),
    ]
    rows = []
    for index, k in enumerate(KS):
        notify(progress, index / len(KS), f"k = {k}")
        theorem2 = theorem2_epsilon(k, EPSILON, DELTA)
        theorem1 = optimal_dp_epsilon(k, EPSILON, DELTA)
        for d in _num_dps(k, quick):
            rows.append((k, d, k - d, theorem3_epsilon(d, k - d, EPSILON, DELTA), theorem2, theorem1))
    notify(progress, 1.0, "writing outputs")

    def value(k: int, d: int) -> float:
        return next(row[3] for row in rows if row[0] == k and row[1] == d)

    key_numbers = {f"theorem3_k{k}_d{d}": value(k, d)
                   for k in KS for d in sorted({0, k // 2, k})}
    end_gaps = max(max(relative_difference(value(k, 0), row[4]),
                       relative_difference(value(k, k), row[5]))
                   for k in KS for row in rows if row[0] == k)
    monotone = all(value(k, d) <= value(k, d2) * (1 + 1e-12)
                   for k in KS for d, d2 in zip(_num_dps(k, quick), _num_dps(k, quick)[1:]))
    claims = [
        claim("Theorem 3 interpolates between composing only BR (DDR) and only DP (KOV)",
              "end points are [DDR] Thm 3 and [KOV] Thm 3.3",
              f"largest relative gap of the end points to Theorems 2 / 1: {end_gaps:.2e}",
              end_gaps < 1e-9, "separate implementations of Theorems 1, 2 and 3"),
        claim("the interpolation is monotone in the number of DP mechanisms",
              "implied (replacing BR by DP can only cost more)",
              f"non-decreasing in d for every k: {monotone}", monotone,
              "every eps-BR mechanism is eps-DP, so turning one BR into a DP mechanism "
              "enlarges the class and the optimal epsilon cannot decrease"),
    ]
    csv_path = write_csv(out / f"{NAME}.csv", COLUMNS, rows, parameters)
    png_path = _draw(rows, out / f"{NAME}.png", parameters)
    md_path = write_markdown(
        out / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE, parameters=parameters,
        key_numbers=key_numbers, claims=claims, png_name=png_path.name,
        notes=["Reference values: worked_values.md §2 (Theorem 2), §1 (Theorem 1), §3 "
               "(Theorem 3 at d = k/2)."])
    return result(csv_path, png_path, md_path, key_numbers, claims)

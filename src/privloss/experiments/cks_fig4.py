"""Seed 004 (Canonne-Kamath-Steinke), Figure 4: discrete Gaussian vs discrete Laplace for k queries.

Definition
    ``k`` sensitivity-1 counting queries, independent noise per query, equal
    per-query variance (``samplers.md`` section 8).
    Discrete Laplace Lap_Z(1/eps0): variance 2 e^eps0 / (e^eps0 - 1)^2; k-fold
    curve = optimal composition of k pure eps0-DP mechanisms
    (``privloss.bounds.optimal_dp``).  Discrete Gaussian N_Z(0, sigma^2):
    variance by the exact sum (``privloss.samplers.discrete_gaussian_variance``);
    k-fold curve from rho = k / (2 sigma^2) with the tight zCDP conversion
    (``privloss.bounds.zcdp``).
    Panel (a): delta(eps) for k = 100 queries of standard deviation 50, eps in [0, 3].
    Panel (b): per-query variance needed for (1, 1e-6)-DP, k = 1..100.
Privacy guarantee
    None (a comparison); each curve is a valid (optimal resp. tight-zCDP) bound.
Citation
    Seed 004: Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
    Privacy" (NeurIPS 2020), Figure 4 and its text ("for k = 100 the variance is 69% more").
Runtime
    Panel (b): one root-find of the optimal composition per k (~0.1 s each).
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
from scipy import optimize

from privloss.bounds.optimal_dp import optimal_dp_delta
from privloss.bounds.zcdp import zcdp_delta_tight, zcdp_rho_for
from privloss.experiments import _common
from privloss.samplers import discrete_gaussian_variance

NAME = "cks-fig4"
TITLE = "Discrete Gaussian vs discrete Laplace: privacy curve and variance for k queries"
SOURCE = "seed 004 (Canonne-Kamath-Steinke 2020), Figure 4 and its discussion; samplers.md section 8"

EPSILON, DELTA = 1.0, 1e-6          # panel (b)'s target (document)
PANEL_A_QUERIES, PANEL_A_SD = 100, 50.0
QUICK_KS = (1, 10, 50, 100)


def discrete_laplace_variance(epsilon0: float) -> float:
    """Var Lap_Z(1/eps0) = 2 e^-eps0 / (1 - e^-eps0)^2 (log-space form of 2e^eps0/(e^eps0-1)^2)."""
    return 2.0 * math.exp(-epsilon0) / math.expm1(-epsilon0) ** 2


def laplace_epsilon0(k: int, epsilon: float = EPSILON, delta: float = DELTA) -> float:
    """Largest eps0 whose optimal k-fold composition is (epsilon, delta)-DP (root-find)."""
    if epsilon / k <= 0:
        raise ValueError(f"k must be >= 1 and epsilon > 0, got k={k}, epsilon={epsilon}")
    # basic composition (eps0 = epsilon/k) is always feasible; eps0 = epsilon is the upper end
    low, high = epsilon / k, epsilon
    if optimal_dp_delta(k, high, epsilon) <= delta:
        return high
    gap = lambda e0: optimal_dp_delta(k, e0, epsilon) - delta  # noqa: E731 - one-line root target
    root = optimize.brentq(gap, low, high, xtol=1e-12, rtol=1e-12)
    return root if gap(root) <= 0 else root * (1 - 1e-12)   # stay on the feasible side


def gaussian_sigma_squared(k: int, epsilon: float = EPSILON, delta: float = DELTA) -> float:
    """sigma^2 = k / (2 rho) with rho the largest zCDP level that is (epsilon, delta)-DP (tight)."""
    return k / (2.0 * zcdp_rho_for(epsilon, delta))


def variance_row(k: int) -> dict:
    epsilon0 = laplace_epsilon0(k)
    sigma_squared = gaussian_sigma_squared(k)
    dl = discrete_laplace_variance(epsilon0)
    dg = float(discrete_gaussian_variance(sigma_squared))
    return {"k": k, "laplace_epsilon0": epsilon0, "laplace_variance": dl,
            "gaussian_sigma_squared": sigma_squared, "gaussian_variance": dg, "ratio": dl / dg}


def crossover_k(limit: int = 100) -> int | None:
    """Smallest k at which the discrete Laplace needs more variance than the discrete Gaussian."""
    for k in range(1, limit + 1):
        if variance_row(k)["ratio"] > 1:
            return k
    return None


def laplace_epsilon0_for_variance(variance: float) -> float:
    """eps0 with Var Lap_Z(1/eps0) = variance (the variance decreases in eps0)."""
    return optimize.brentq(lambda e: discrete_laplace_variance(e) - variance, 1e-8, 50.0, xtol=1e-15)


def gaussian_sigma_squared_for_variance(variance: float) -> float:
    """sigma^2 with Var N_Z(0, sigma^2) = variance (bisection on the exact sum)."""
    return optimize.brentq(lambda s: float(discrete_gaussian_variance(s)) - variance,
                           variance / 2, variance * 2 + 1, xtol=1e-9)


def panel_a(points: int) -> dict:
    variance = PANEL_A_SD ** 2
    epsilon0 = laplace_epsilon0_for_variance(variance)
    sigma_squared = gaussian_sigma_squared_for_variance(variance)
    rho = PANEL_A_QUERIES / (2 * sigma_squared)
    epsilons = np.linspace(0.0, 3.0, points)
    return {"epsilon": epsilons, "laplace_epsilon0": epsilon0, "gaussian_sigma_squared": sigma_squared,
            "laplace_delta": np.array([optimal_dp_delta(PANEL_A_QUERIES, epsilon0, e) for e in epsilons]),
            "gaussian_delta": np.array([zcdp_delta_tight(rho, e) for e in epsilons])}


def _figure(path: pathlib.Path, a: dict, rows: list[dict]) -> pathlib.Path:
    plt = _common.pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    floor = 1e-50
    left.semilogy(a["epsilon"], np.maximum(a["laplace_delta"], floor), label="discrete Laplace (optimal comp.)")
    left.semilogy(a["epsilon"], np.maximum(a["gaussian_delta"], floor), label="discrete Gaussian (zCDP, tight)")
    left.set_ylim(floor, 1)
    left.set(xlabel="epsilon", ylabel="delta",
             title=f"(a) k={PANEL_A_QUERIES} queries, sd {PANEL_A_SD:g} each")
    left.legend(fontsize=8)
    ks = [r["k"] for r in rows]
    right.plot(ks, [r["laplace_variance"] for r in rows], "o-", ms=2, label="discrete Laplace")
    right.plot(ks, [r["gaussian_variance"] for r in rows], "s-", ms=2, label="discrete Gaussian")
    right.set(xlabel="number of queries k", ylabel="per-query variance",
              title=f"(b) variance for ({EPSILON:g}, {DELTA:g})-DP")
    right.legend(fontsize=8)
    return _common.save_figure(figure, path)


def run(out_dir: pathlib.Path, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Compute, write ``cks-fig4.csv/.png/.md``; ``seed`` is unused (no randomness)."""
    out_dir = _common.output_dir(out_dir)
    ks = QUICK_KS if quick else tuple(range(1, 101))
    rows = []
    for index, k in enumerate(ks):
        _common.notify(progress, 0.8 * index / len(ks), f"panel (b): k={k}")
        rows.append(variance_row(k))
    _common.notify(progress, 0.8, "panel (a)")
    a = panel_a(61 if quick else 301)
    parameters = [_common.parameter("target (epsilon, delta)", f"({EPSILON:g}, {DELTA:g})", _common.DOCUMENT),
                  _common.parameter("panel (a) k and sd", f"{PANEL_A_QUERIES}, {PANEL_A_SD:g}", _common.DOCUMENT,
                                    "authors' plotting script, as mapped in samplers.md 8")]
    columns = ("k", "laplace_epsilon0", "laplace_variance", "gaussian_sigma_squared", "gaussian_variance",
               "ratio")
    csv_path = _common.write_csv(out_dir / f"{NAME}.csv", columns,
                                 [[r[c] for c in columns] for r in rows], parameters)
    png_path = _figure(out_dir / f"{NAME}.png", a, rows)
    by_k = {r["k"]: r for r in rows}
    key = {f"ratio_k{k}": by_k[k]["ratio"] for k in QUICK_KS}
    key.update({f"laplace_variance_k{k}": by_k[k]["laplace_variance"] for k in QUICK_KS})
    key.update({f"gaussian_variance_k{k}": by_k[k]["gaussian_variance"] for k in QUICK_KS})
    key["crossover_k"] = (next((r["k"] for r in rows if r["ratio"] > 1), None) if not quick
                          else crossover_k())
    key["panel_a_laplace_epsilon0"] = a["laplace_epsilon0"]
    key["panel_a_gaussian_sigma_squared"] = a["gaussian_sigma_squared"]
    gaussian_better = a["gaussian_delta"] < a["laplace_delta"]
    laplace_better = a["epsilon"][~gaussian_better]
    low, high = laplace_better[laplace_better < 1.5], laplace_better[laplace_better >= 1.5]
    key["panel_a_laplace_better_epsilons"] = "; ".join(
        f"[{part.min():.2f}, {part.max():.2f}]" for part in (low, high) if part.size) or "none"
    claims = [
        _common.claim("for k = 100 the discrete Laplace needs 69% more variance", "69% more",
                      f"{100 * (by_k[100]['ratio'] - 1):.1f}% more", abs(by_k[100]["ratio"] - 1.69) < 0.01,
                      "optimal composition for Laplace, tight zCDP conversion for the Gaussian"),
        _common.claim("the Gaussian is better except for few queries or near-pure DP",
                      "Laplace wins only for small k or delta ~ 0",
                      f"Laplace needs less variance only for k < {key['crossover_k']}; at k=100, sd 50 the "
                      f"Laplace delta is smaller only at eps in {key['panel_a_laplace_better_epsilons']}",
                      key["crossover_k"] is not None and key["crossover_k"] <= 20,
                      "panel (b) crossover; panel (a): the Laplace curve reaches delta = 0 at eps = k eps0 "
                      "(pure DP), the Gaussian never does"),
    ]
    md_path = _common.write_markdown(out_dir / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE,
                                     parameters=parameters, key_numbers=key, claims=claims,
                                     png_name=png_path.name,
                                     notes=["Mapping of the authors' two plots to 'Figure 4' is inferred "
                                            "(samplers.md 8)."] + (["Quick mode: k in {1, 10, 50, 100} only "
                                                                     "(ours)."] if quick else []))
    _common.notify(progress, 1.0, "done")
    return _common.result(csv_path, png_path, md_path, key, claims)

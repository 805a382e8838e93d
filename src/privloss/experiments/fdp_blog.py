"""Seed 001 (Dong's f-DP blog): the tradeoff-curve figures, recomputed.

Definition
    Panels: (1) randomized response at epsilon = 1 against f_{1,0}; (2) Laplace
    at epsilon = 1 against f_{1,0}; (3, 4) the Gaussian mechanism with the
    classical sigma = sqrt(2 log(1.25/delta))/epsilon at (1, 1e-3) and
    (4, 1e-3) against f_{epsilon,delta}; (5) 25-fold randomized response at 0.2
    against G_1 (Gaussian, sigma = 1); (6, 7) Laplace compositions n = 2 at
    epsilon = 1 and n = 25 at 0.2 against G_1; (8) the CLT curves.
    Exact curves from ``privloss.fdp``; Laplace compositions from certified PLDs
    (``privloss.pld.laplace_pld(scale=1/epsilon)`` -> ``mechanism_tradeoff``, a
    lower/upper bracket).
Privacy guarantee
    None (figures); every curve drawn is the certified lower curve.
Citation
    Seed 001 (J. Dong, "Gaussian differential privacy" blog post, f-DP figures);
    Dong, Roth, Su (2019/2022); ``fdp.md`` sections 3-6.
Runtime
    About 1-2 s (the 25-fold Laplace PLD dominates).
"""

from __future__ import annotations

import math
import pathlib

import numpy as np

from privloss.experiments import _common
from privloss.fdp import (ApproxDPTradeoff, GaussianTradeoff, LaplaceTradeoff, clt_approximation,
                          laplace_moments, mechanism_tradeoff, randomized_response_moments,
                          randomized_response_tradeoff, rr_composition_tradeoff)
from privloss.pld import laplace_pld

NAME = "fdp-blog"
TITLE = "f-DP blog: tradeoff curves of RR, Laplace, Gaussian and their compositions"
SOURCE = "seed 001 (Dong, f-DP / Gaussian DP blog post), its figures of sections 'building blocks' and 'composition'"

#: alpha grid on which the curves are written and compared.
GRID = np.linspace(0.0, 1.0, 1001)
GRID_QUICK = np.linspace(0.0, 1.0, 201)


def classical_gaussian_sigma(epsilon: float, delta: float) -> float:
    """sigma = sqrt(2 log(1.25/delta)) / epsilon, the blog's (classical DR14) calibration."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def _panels():
    """(title, [(label, curve, dashed)]) per panel; curves are TradeoffCurve or brackets."""
    rr1 = randomized_response_tradeoff(1.0)
    sigma1, sigma4 = classical_gaussian_sigma(1.0, 1e-3), classical_gaussian_sigma(4.0, 1e-3)
    rr25 = rr_composition_tradeoff(0.2, 25)
    g1 = GaussianTradeoff(1.0)
    lap2 = mechanism_tradeoff(laplace_pld(1.0 / 1.0).self_compose(2), label="Laplace eps=1, n=2")
    lap25 = mechanism_tradeoff(laplace_pld(1.0 / 0.2).self_compose(25), label="Laplace eps=0.2, n=25")
    clt_rr = clt_approximation(randomized_response_moments(0.2).times(25))
    clt_lap = clt_approximation(laplace_moments(0.2).times(25))
    return [
        ("randomized response, eps=1", [("RR (p=e/(1+e))", rr1, False),
                                        ("f_{1,0}", ApproxDPTradeoff(1.0, 0.0), True)]),
        ("Laplace, eps=1", [("Laplace b=1", LaplaceTradeoff(1.0), False),
                            ("f_{1,0}", ApproxDPTradeoff(1.0, 0.0), True)]),
        ("Gaussian for (1, 1e-3)", [(f"Gaussian sigma={sigma1:.3f}", GaussianTradeoff(1 / sigma1), False),
                                    ("f_{1,1e-3}", ApproxDPTradeoff(1.0, 1e-3), True)]),
        ("Gaussian for (4, 1e-3)", [(f"Gaussian sigma={sigma4:.3f}", GaussianTradeoff(1 / sigma4), False),
                                    ("f_{4,1e-3}", ApproxDPTradeoff(4.0, 1e-3), True)]),
        ("25-fold RR at 0.2 vs Gaussian sigma=1", [("RR^25, eps=0.2", rr25, False), ("G_1", g1, True)]),
        ("Laplace n=2, eps=1", [("Laplace^2, eps=1", lap2, False),
                                ("f_{2,0} (basic composition)", ApproxDPTradeoff(2.0, 0.0), True)]),
        ("Laplace n=25, eps=0.2 vs Gaussian sigma=1", [("Laplace^25, eps=0.2", lap25, False),
                                                       ("G_1", g1, True)]),
        ("CLT approximations (n=25, eps=0.2)", [("RR^25 exact", rr25, False),
                                                (f"CLT RR: G_{clt_rr.mu:.4f}", clt_rr.tradeoff(), True),
                                                (f"CLT Laplace: G_{clt_lap.mu:.4f}", clt_lap.tradeoff(), True)]),
    ], {"sigma_1": sigma1, "sigma_4": sigma4, "clt_rr": clt_rr, "clt_lap": clt_lap, "rr25": rr25,
        "g1": g1, "lap2": lap2, "lap25": lap25}


def mathtext(label: str) -> str:
    """Plot label with matplotlib mathtext for the sub/superscripts the CSV spells in
    TeX ('f_{1,0}' -> '$f_{1,0}$', 'G_1.0017' -> '$G_{1.0017}$', 'RR^25' -> 'RR$^{25}$')."""
    import re

    label = re.sub(r"\b([fG])_\{([^}]*)\}", r"$\1_{\2}$", label)
    label = re.sub(r"\b([fG])_([0-9.]+)", r"$\1_{\2}$", label)
    return re.sub(r"\^([0-9]+)", r"$^{\1}$", label)


def _values(curve, alpha: np.ndarray) -> np.ndarray:
    value = curve(alpha)
    if isinstance(value, tuple):         # a TradeoffBracket returns (lower, upper)
        return np.asarray(value[0], dtype=float)
    return np.asarray(value, dtype=float)


def key_numbers(extra: dict, grid: np.ndarray) -> dict:
    laplace = LaplaceTradeoff(1.0)
    g1 = extra["g1"]
    lap25 = _values(extra["lap25"], grid)
    rr25 = _values(extra["rr25"], grid)
    gaussian1 = GaussianTradeoff(1 / extra["sigma_1"])
    gaussian4 = GaussianTradeoff(1 / extra["sigma_4"])
    middle = grid[(grid >= math.exp(-1) / 2) & (grid <= 0.5) & (grid > 0)]
    return {
        "laplace_f_0.1": float(laplace(0.1)), "laplace_f_0.3": float(laplace(0.3)),
        "laplace_f_0.7": float(laplace(0.7)),
        "laplace_reciprocal_max_error": float(np.max(np.abs(laplace(middle) - math.exp(-1) / (4 * middle)))),
        "rr_minus_f_eps0_max": float(np.max(np.abs(randomized_response_tradeoff(1.0)(grid)
                                                   - ApproxDPTradeoff(1.0, 0.0)(grid)))),
        "sigma_classical_1_1e-3": extra["sigma_1"], "sigma_classical_4_1e-3": extra["sigma_4"],
        "gaussian_1_gap_max": float(np.max(gaussian1(grid) - ApproxDPTradeoff(1.0, 1e-3)(grid))),
        "gaussian_4_gap_max": float(np.max(gaussian4(grid) - ApproxDPTradeoff(4.0, 1e-3)(grid))),
        "clt_mu_rr_25_0.2": extra["clt_rr"].mu, "clt_mu_laplace_25_0.2": extra["clt_lap"].mu,
        "rr25_f_0.1": float(rr25[np.searchsorted(grid, 0.1)]),
        "rr25_vs_g1_max_abs": float(np.max(np.abs(rr25 - g1(grid)))),
        "laplace25_vs_g1_max_abs": float(np.max(np.abs(lap25 - g1(grid)))),
        "laplace2_f_0.1": float(_values(extra["lap2"], np.array([0.1]))[0]),
    }


def _claims(key: dict) -> list[dict]:
    return [
        _common.claim("randomized response: equality holds exactly, T = f_{eps,0}", "equal",
                      f"max |T - f_(1,0)| = {key['rr_minus_f_eps0_max']:.1e}",
                      key["rr_minus_f_eps0_max"] < 1e-12, "exact piecewise-linear curves (fdp.md 3.1)"),
        _common.claim("Laplace eps=1: equals f_{eps,0} except on [e^-eps/2, 1/2] where y = e^-1/(4x)",
                      "y = e^-1/4x", f"max error of e^-1/(4x) there = {key['laplace_reciprocal_max_error']:.1e}; "
                      f"f(0.1) = {key['laplace_f_0.1']:.12f}",
                      key["laplace_reciprocal_max_error"] < 1e-12,
                      "the blog's 'e^-1/4x' is the eps=1 case of e^-eps/(4x) (composition.md 8, fdp.md 3.3)"),
        _common.claim("Gaussian with the classical sigma is far from f_{eps,delta}", "far from equal",
                      f"max gap {key['gaussian_1_gap_max']:.3f} at (1,1e-3), "
                      f"{key['gaussian_4_gap_max']:.3f} at (4,1e-3)",
                      key["gaussian_1_gap_max"] > 0.05 and key["gaussian_4_gap_max"] > 0.05,
                      "the classical calibration is loose: G_mu lies well above f_{eps,delta}"),
        _common.claim("25-fold RR at 0.2 looks like the Gaussian sigma=1", "close (figure)",
                      f"max |RR^25 - G_1| = {key['rr25_vs_g1_max_abs']:.4f}; CLT mu = {key['clt_mu_rr_25_0.2']:.10f}",
                      key["rr25_vs_g1_max_abs"] < 0.02, "exact curve vs G_1; CLT mu from the privacy-loss moments (fdp.md 6)"),
        _common.claim("Laplace n=25 at 0.2 looks like the Gaussian sigma=1", "close (figure)",
                      f"max |Lap^25 - G_1| = {key['laplace25_vs_g1_max_abs']:.4f}; CLT mu = {key['clt_mu_laplace_25_0.2']:.4f}",
                      key["laplace25_vs_g1_max_abs"] < 0.02, "certified PLD lower curve vs G_1"),
    ]


def run(out_dir: pathlib.Path, *, quick: bool = False, seed: int | None = None, progress=None) -> dict:
    """Compute, write ``fdp-blog.csv/.png/.md`` into ``out_dir``; ``seed`` is unused (no randomness)."""
    out_dir = _common.output_dir(out_dir)
    grid = GRID_QUICK if quick else GRID
    _common.notify(progress, 0.0, "tradeoff curves and PLD compositions")
    panels, extra = _panels()
    _common.notify(progress, 0.5, "writing outputs")
    columns, values = ["alpha"], [grid]
    for title, curves in panels:
        for label, curve, _ in curves:
            columns.append(f"{title} | {label}")
            values.append(_values(curve, grid))
    parameters = [_common.parameter("panel parameters", "as in the blog", _common.DOCUMENT),
                  _common.parameter("alpha grid points", grid.size, _common.OURS)]
    csv_path = _common.write_csv(out_dir / f"{NAME}.csv", columns, np.column_stack(values).tolist(),
                                 parameters)
    plt = _common.pyplot()
    from privloss.fdp.plot import plot_tradeoffs

    figure, axes = plt.subplots(2, 4, figsize=(18, 9))
    for ax, (title, curves) in zip(axes.ravel(), panels):
        plot_tradeoffs([c for _, c, _ in curves], labels=[mathtext(label) for label, _, _ in curves],
                       dashed=[d for _, _, d in curves], ax=ax, title=title, points=grid.size)
    png_path = _common.save_figure(figure, out_dir / f"{NAME}.png")
    key = key_numbers(extra, grid)
    claims = _claims(key)
    md_path = _common.write_markdown(out_dir / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE,
                                     parameters=parameters, key_numbers=key, claims=claims,
                                     png_name=png_path.name,
                                     notes=["Laplace compositions are certified PLD brackets; the "
                                            "lower curve is drawn and compared."])
    _common.notify(progress, 1.0, "done")
    return _common.result(csv_path, png_path, md_path, key, claims)

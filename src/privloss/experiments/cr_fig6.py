"""Cesar-Rogers Figure 6: top-k word counts of Macbeth, Algorithm 1 (Gaussian + order fit) vs Laplace.

Definition
    Count phase of the comparison (``topk.md`` section 7), both methods given
    the true top-k order (ours): Laplace - each count plus discrete Laplace
    Lap_Z(1/eps0); Algorithm 1 - each count plus discrete Gaussian
    N_Z(0, sigma^2), then the order-constrained least-squares fit (eq. (9),
    ``privloss.analytics.algorithms._isotonic.ordered_least_squares``).  Same
    overall budget: eps = optimal composition of k eps0-DP counts at delta
    (``privloss.bounds.optimal_dp``); Lemma 6.3 (Delta_0 = k, Delta_inf = 1)
    solved for sigma: rho with rho + 2 sqrt(rho log(1/delta)) = eps, sigma^2 = k / (2 rho).
    Trials: 100 (10 in quick mode); per rank the mean, one standard deviation and RMSE.
Privacy guarantee
    Each trial is (eps, delta)-DP for the counts (not a release: an experiment).
Citation
    Seed 000: R. Cesar, R. Rogers, arXiv:2004.07223, section 6.2 and Figure 6.
Runtime
    trials x k exact discrete Gaussian / Laplace draws (well under a second).
"""

from __future__ import annotations

import collections
import math
import pathlib
import re

import numpy as np

from privloss.analytics.algorithms._isotonic import ordered_least_squares
from privloss.analytics.histogram import Histogram
from privloss.bounds.optimal_dp import optimal_dp_epsilon
from privloss.experiments import _common
from privloss.samplers import discrete_gaussian, discrete_laplace

NAME = "cr-fig6"
TITLE = "Top-k words of Macbeth: Algorithm 1 (Gaussian, ordered fit) vs Laplace counts at equal budget"
SOURCE = "seed 000 (Cesar-Rogers 2020), section 6.2, Figure 6; topk.md section 7"

#: Our defaults for the parameters the seed lost (topk.md section 7).
K, EPSILON0, DELTA = 10, 0.1, 1e-6
TRIALS, QUICK_TRIALS = 100, 10
_TOKEN = re.compile(r"\w+|[^\w\s]+")      # NLTK WordPunctTokenizer's pattern (data/README.md)


def macbeth_path() -> pathlib.Path:
    """``$PRIVLOSS_DATA/macbeth.txt`` or ``<repo>/../shared/data/macbeth.txt``."""
    return _common.data_dir() / "macbeth.txt"


def word_counts(text: str) -> collections.Counter:
    """Lower-cased alphabetic WordPunct tokens (18,272 tokens in Macbeth; data/README.md)."""
    return collections.Counter(token.lower() for token in _TOKEN.findall(text) if token.isalpha())


def gaussian_sigma_lemma_6_3(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(rho, sigma) with rho + 2 sqrt(rho log(1/delta)) = epsilon and sigma^2 = k / (2 rho)."""
    log_inverse = -math.log(delta)
    rho = (math.sqrt(log_inverse + epsilon) - math.sqrt(log_inverse)) ** 2
    return rho, math.sqrt(k / (2.0 * rho))


def simulate(true_counts: np.ndarray, epsilon0: float, sigma: float, trials: int, source) -> dict:
    """Noisy counts per trial: ``laplace`` (trials x k) and ``algorithm1`` (fitted, trials x k)."""
    k = true_counts.size
    scale = 1 / epsilon0
    laplace = true_counts + discrete_laplace(scale, size=(trials, k), source=source, allow_float=True)
    gaussian = true_counts + discrete_gaussian(sigma ** 2, size=(trials, k), source=source, allow_float=True)
    fitted = np.array([ordered_least_squares(row, nonnegative=True) for row in gaussian])
    return {"laplace": laplace.astype(float), "algorithm1": fitted}


def run(out_dir: pathlib.Path, *, quick: bool = False, seed: int | None = None, progress=None,
        data_path: pathlib.Path | None = None, k: int = K, epsilon0: float = EPSILON0,
        delta: float = DELTA) -> dict:
    """Compute, write ``cr-fig6.csv/.png/.md``; ``data_path`` defaults to :func:`macbeth_path`."""
    out_dir = _common.output_dir(out_dir)
    path = pathlib.Path(data_path) if data_path is not None else macbeth_path()
    if not path.is_file():
        raise FileNotFoundError(f"data_path: Macbeth text not found at {path} "
                                "(set PRIVLOSS_DATA or pass data_path)")
    _common.notify(progress, 0.0, "counting words")
    histogram = Histogram.from_counts(word_counts(path.read_text(encoding="utf-8")), top=k)
    words, true_counts = list(histogram.items), np.asarray(histogram.counts, dtype=np.int64)
    epsilon = optimal_dp_epsilon(k, epsilon0, delta)
    rho, sigma = gaussian_sigma_lemma_6_3(epsilon, delta, k)
    trials = QUICK_TRIALS if quick else TRIALS
    _common.notify(progress, 0.2, f"{trials} trials")
    source = _common.seeded_source(seed)
    runs = simulate(true_counts, epsilon0, sigma, trials, source)
    stats = {}
    for method, values in runs.items():
        stats[method] = {"mean": values.mean(axis=0), "sd": values.std(axis=0, ddof=1),
                         "rmse": np.sqrt(((values - true_counts) ** 2).mean(axis=0))}
    parameters = [_common.parameter("k", k, _common.OURS), _common.parameter("epsilon0", epsilon0, _common.OURS),
                  _common.parameter("delta", delta, _common.OURS),
                  _common.parameter("linf_sensitivity", 1, _common.OURS, "each token one contribution"),
                  _common.parameter("tokenisation", "lower-cased alphabetic WordPunct tokens", _common.OURS),
                  _common.parameter("order", "true top-k order given to both methods", _common.OURS),
                  _common.parameter("trials", trials, _common.DOCUMENT if not quick else _common.OURS),
                  _common.parameter("overall epsilon", round(epsilon, 6), _common.OURS, "derived"),
                  _common.parameter("sigma", round(sigma, 4), _common.OURS, "derived, Lemma 6.3")]
    columns = ["rank", "word", "true_count"] + [f"{m}_{s}" for m in runs for s in ("mean", "sd", "rmse")]
    rows = [[rank + 1, words[rank], int(true_counts[rank])]
            + [float(stats[m][s][rank]) for m in runs for s in ("mean", "sd", "rmse")] for rank in range(k)]
    csv_path = _common.write_csv(out_dir / f"{NAME}.csv", columns, rows, parameters)
    plt = _common.pyplot()
    figure, ax = plt.subplots(figsize=(7.5, 4.5))
    ranks = np.arange(1, k + 1)
    ax.plot(ranks, true_counts, "k*", label="true counts", zorder=3)
    for offset, (method, label) in zip((-0.12, 0.12), (("laplace", f"Laplace (eps0={epsilon0:g})"),
                                                       ("algorithm1", f"Algorithm 1 (sigma={sigma:.2f})"))):
        ax.errorbar(ranks + offset, stats[method]["mean"], yerr=stats[method]["sd"], fmt="o", ms=3,
                    capsize=2, label=f"{label}: mean +- 1 sd")
    ax.set_xticks(ranks, words, rotation=45, fontsize=8)
    ax.set(xlabel="rank", ylabel="count",
           title=f"Macbeth top-{k}, eps={epsilon:.4f}, delta={delta:g}, {trials} trials (parameters ours)")
    ax.legend(fontsize=8)
    png_path = _common.save_figure(figure, out_dir / f"{NAME}.png")
    tail = slice(k // 2, k)
    key = {"overall_epsilon": epsilon, "rho": rho, "sigma": sigma, "laplace_sd": math.sqrt(2) / epsilon0,
           "true_count_rank1": int(true_counts[0]), "true_count_rank10": int(true_counts[min(9, k - 1)]),
           "tokens": int(sum(word_counts(path.read_text(encoding="utf-8")).values())),
           "rmse_laplace_lower_half": float(stats["laplace"]["rmse"][tail].mean()),
           "rmse_algorithm1_lower_half": float(stats["algorithm1"]["rmse"][tail].mean())}
    better = key["rmse_algorithm1_lower_half"] < key["rmse_laplace_lower_half"]
    claims = [
        _common.claim("Algorithm 1 has smaller error than Laplace on the smaller counts",
                      "smaller error for smaller counts (Figure 6)",
                      f"mean RMSE over ranks {k // 2 + 1}-{k}: Algorithm 1 {key['rmse_algorithm1_lower_half']:.2f} "
                      f"vs Laplace {key['rmse_laplace_lower_half']:.2f}", better,
                      "the ordered fit pools the noisy tail; note sigma > Laplace sd at k=10 (our parameters)"),
        _common.claim("overall epsilon and sigma", "values lost in the seed",
                      f"eps={epsilon:.4f}, sigma={sigma:.2f} (topk.md 7: 0.9994, 16.93)", None,
                      "parameters are ours (topk.md section 7)"),
    ]
    md_path = _common.write_markdown(out_dir / f"{NAME}.md", name=NAME, title=TITLE, source=SOURCE,
                                     parameters=parameters, key_numbers=key, claims=claims,
                                     png_name=png_path.name,
                                     notes=["Randomness: InsecureSeededSource(seed) when --seed is given, "
                                            "else the secure default source."])
    _common.notify(progress, 1.0, "done")
    return _common.result(csv_path, png_path, md_path, key, claims)

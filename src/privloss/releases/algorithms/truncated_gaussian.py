"""The truncated Gaussian TN(0, sigma^2, C) of Cesar–Rogers §6.2 and eq. (10).

* :func:`failure_probability` ``p(C)`` – the probability that a noisy count
  falls outside the support it shares with its neighbour's (topk.md §6.3);
* :func:`solve_truncation` – eq. (10): the smallest ``C`` with
  ``p(C) <= delta / l0`` (total failure ``delta`` over the ``l0`` changed counts);
* :func:`sample_truncated_gaussian` – float draws, by rejection from a Gaussian
  made from the secure source's bits (**float caveat** below);
* :func:`rounded_variance`, :func:`rounded_half_width` – variance and exact 95%
  half-width of ``round(Z)`` (Algorithm 2 releases integers).

Float caveat: the privacy proof (Lemma 6.4) is for real-valued noise.  The
sampler maps 53 random bits through ``scipy.special.ndtri`` (inverse normal
CDF) and rejects ``|z| > C``; the support edge itself is enforced exactly (a
float comparison with the same float ``C`` that defines the threshold), so an
item with true count <= ``linf`` is never released, but the density inside
is only approximately Gaussian, and float outputs can leak their low bits
(Mironov 2012) – which is why Algorithm 2 rounds released values to integers.
A fully discrete version (truncated discrete Gaussian) needs its own proof
(spec topk.md §6.5) and is future work.
"""

from __future__ import annotations

import math

import numpy as np

from privloss.bounds._numeric import log1mexp, round_up

__all__ = ["failure_probability", "log_failure_probability", "solve_truncation",
           "sample_truncated_gaussian", "rounded_variance", "rounded_half_width"]

def _special():
    """scipy.special, imported on first use: it costs about half a second of
    CPU, which every command importing the algorithms paid (issue 22 item 6)."""
    import scipy.special
    return scipy.special


#: relative margin required between a computed probability and its target
_MARGIN = 1e-9
_TWO_TO_53 = float(1 << 53)
#: largest sigma / linf: the tail difference behind p(C) is ~ linf / sigma, and its float
#: rounding (~1e-16 absolute) must stay far below the 1e-9 relative margin
_MAX_SIGMA_RATIO = 1e6


def _log_mass_inside(c: float) -> float:
    """log(2 Phi(c) - 1) = log erf(c / sqrt 2), accurate for small and large c."""
    x = c / math.sqrt(2.0)
    return math.log(_special().erf(x)) if x < 1.0 else math.log1p(-_special().erfc(x))


def log_failure_probability(bound: float, sigma: float, linf: float) -> float:
    """``ln p(C)``, ``p(C) = (Phi((linf - C)/sigma) - Phi(-C/sigma)) / (2 Phi(C/sigma) - 1)``.

    The probability that ``TN(0, sigma^2, C)`` falls below ``-C + linf``, i.e.
    outside the support ``[x + linf - C, x + C]`` shared with a neighbour whose
    count is ``linf`` larger (and by symmetry the other way).  Defined for
    ``C > linf / 2``, where the shared support is non-empty; 0 (log) below.
    """
    if bound <= linf / 2.0:
        return 0.0
    if sigma > _MAX_SIGMA_RATIO * linf:
        raise ValueError(f"sigma / linf must be at most {_MAX_SIGMA_RATIO:g}, got "
                         f"{sigma / linf:g}: p(C) is not resolvable in floating point there")
    high = _special().log_ndtr((linf - bound) / sigma)
    low = _special().log_ndtr(-bound / sigma)
    if not low < high:   # the two tails rounded together: never report p = 0
        raise ArithmeticError(f"p(C) is not resolvable in floating point at C = {bound!r}, "
                              f"sigma = {sigma!r}")
    log_numerator = high + float(log1mexp(low - high))
    return min(0.0, log_numerator - _log_mass_inside(bound / sigma))


def failure_probability(bound: float, sigma: float, linf: float = 1.0) -> float:
    """``p(C)`` (see :func:`log_failure_probability`), rounded up."""
    return min(1.0, round_up(math.exp(log_failure_probability(bound, sigma, linf)),
                             relative=_MARGIN))


def solve_truncation(sigma: float, l0: int, linf: int, delta: float) -> float:
    """Eq. (10): the smallest float ``C`` (to 1e-12 relative) with ``p(C) <= delta / l0``.

    ``p`` decreases from 1 at ``C = linf/2`` to 0; bisection on
    ``ln p(C) - ln(delta/l0)`` keeps the invariant that the upper end meets
    the target with a relative margin of 1e-9 (far above the float error of
    ``log_ndtr``), and returns that upper end – so ``C`` is never too small.
    Example (spec topk.md §6.3): sigma = 5, linf = 1, l0 = 3, delta = 1e-6
    gives C = 25.425.
    """
    target = math.log(delta / l0) + math.log1p(-_MARGIN)

    def meets(bound: float) -> bool:
        return log_failure_probability(bound, sigma, linf) <= target

    low, high = linf / 2.0, linf + 40.0 * sigma
    while not meets(high):
        low, high = high, 2.0 * high
    while high - low > 1e-12 * high:
        middle = 0.5 * (low + high)
        if meets(middle):
            high = middle
        else:
            low = middle
    return high


def sample_truncated_gaussian(sigma: float, bound: float, size: int, source) -> np.ndarray:
    """``size`` float draws of TN(0, sigma^2, bound) by rejection (see the float caveat).

    A proposal is ``sigma * ndtri(u)`` with ``u = (j + 1/2) / 2^53``, ``j`` 53
    uniform bits from ``source``; it is kept iff ``|z| <= bound`` (acceptance
    ``2 Phi(bound/sigma) - 1``).
    """
    out = np.empty(size, dtype=np.float64)
    filled = 0
    while filled < size:
        need = size - filled
        batch = need + need // 8 + 16
        bits = (source.random_words(batch) >> np.uint64(11)).astype(np.float64)
        z = sigma * _special().ndtri((bits + 0.5) / _TWO_TO_53)
        kept = z[np.abs(z) <= bound][:need]
        out[filled:filled + kept.size] = kept
        filled += kept.size
    return out


def _rounded_masses(sigma: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """Values n and P[round(Z) = n] for Z ~ TN(0, sigma^2, bound)."""
    top = math.floor(bound + 0.5)
    n = np.arange(-top, top + 1, dtype=np.float64)
    upper = np.minimum(n + 0.5, bound) / sigma
    lower = np.maximum(n - 0.5, -bound) / sigma
    mass = np.clip(_special().ndtr(upper) - _special().ndtr(lower), 0.0, None)
    return n, mass / mass.sum()


def rounded_variance(sigma: float, bound: float) -> float:
    """Var[round(Z)] for Z ~ TN(0, sigma^2, bound) (mean 0 by symmetry)."""
    n, mass = _rounded_masses(sigma, bound)
    return float(np.sum(n * n * mass))


def _tail(t: float, sigma: float, bound: float) -> float:
    """P[|Z| >= t] for Z ~ TN(0, sigma^2, bound), rounded up."""
    if t > bound:
        return 0.0
    c = bound / sigma
    inside = math.exp(_log_mass_inside(c))
    value = 2.0 * (_special().ndtr(-t / sigma) - _special().ndtr(-c)) / inside   # no cancellation
    return min(1.0, round_up(max(value, 0.0), relative=_MARGIN))


def rounded_half_width(sigma: float, bound: float, beta: float = 0.05) -> int:
    """Smallest integer ``w >= 0`` with ``P[|round(Z)| > w] = P[|Z| >= w + 1/2] <= beta``."""
    inside = math.exp(_log_mass_inside(bound / sigma))
    quantile = sigma * _special().ndtri(0.5 + 0.5 * (1.0 - beta) * inside)
    w = max(0, math.ceil(quantile - 0.5))
    while _tail(w + 0.5, sigma, bound) > beta:
        w += 1
    while w > 0 and _tail(w - 0.5, sigma, bound) <= beta:
        w -= 1
    return w

"""Precomputed log-binomial tables and log-space error helpers for
:mod:`privloss.bounds.optimal_br` (the optimal DP/BR composition bound; its
module docstring states the theorem and the certified error budget these
tables feed).

Privacy guarantee
-----------------
The error terms are upper bounds in units of the float64 roundoff, so the
caller rounds toward more loss.

Citation
--------
Dong, Durfee and Rogers, ICML 2020; Kairouz, Oh and Viswanath, ICML 2015.

Runtime
-------
``O(num_dp + num_br)`` per table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from privloss.bounds._numeric import log1mexp, log_binomial

__all__ = []

#: Unit roundoff of float64.
_UNIT = 2.0 ** -53
#: Generous multiple of the unit roundoff per unit of magnitude of a log-space term.
_ERROR_FACTOR = 8.0


@dataclass(frozen=True)
class _Tables:
    num_dp: int
    num_br: int
    epsilon: float
    log_binom_br: np.ndarray     # log C(n, i), i = 0..n
    log_a: np.ndarray            # log C(d,j) a^{d-j} (1-a)^j   (DP law under P)
    log_ca: np.ndarray           # log sum_{j<=J} A_j, J = 0..d (last entry exactly 0)
    log_cb: np.ndarray           # log sum_{j<=J} B_j, J = 0..d (last entry exactly 0)
    log1m_exp_eps: float         # log(1 - e^-eps)
    eta_tables: float            # absolute log-error bound of the DP tables
    magnitude_br: float          # 3 log n! (magnitude of log C(n, i))


def _log_binomial_row(n: int) -> np.ndarray:
    return log_binomial(n, np.arange(n + 1, dtype=float))


def _make_tables(num_dp: int, num_br: int, epsilon: float) -> _Tables:
    d, n = num_dp, num_br
    j = np.arange(d + 1, dtype=float)
    log_norm = d * float(np.logaddexp(0.0, epsilon))        # log (1 + e^eps)^d
    log_binom_dp = _log_binomial_row(d)
    log_a = log_binom_dp + (d - j) * epsilon - log_norm
    log_b = log_binom_dp + j * epsilon - log_norm
    log_ca = np.logaddexp.accumulate(log_a)
    log_cb = np.logaddexp.accumulate(log_b)     # B_j = C(d,j) a^j (1-a)^{d-j} (under Q)
    log_ca[-1] = 0.0        # full sums of a probability law
    log_cb[-1] = 0.0
    magnitude_dp = 3.0 * float(gammaln(d + 1.0)) + 2.0 * d * epsilon + log_norm
    # gammaln and products (relative to magnitude_dp) and the d-step accumulation;
    # d = 0 gives exact zeros
    eta_tables = _ERROR_FACTOR * _UNIT * (magnitude_dp + 4.0 * d)
    return _Tables(d, n, epsilon, _log_binomial_row(n), log_a, log_ca, log_cb,
                   float(log1mexp(-epsilon)), eta_tables, 3.0 * float(gammaln(n + 1.0)))


# --------------------------------------------------------------------------
# small log-space helpers
# --------------------------------------------------------------------------

def _log_minus_upper(log_x: float, log_err: float) -> float:
    """log(x - err) (for a lower bound), -inf when err >= x."""
    if not log_err < log_x:
        return -math.inf
    return log_x + math.log1p(-math.exp(log_err - log_x))


def _log_geometric_tail(log_edge, slope, count):
    """log of e^{log_edge} * sum_{r=1..count} e^{-r slope} (slope >= 0), elementwise."""
    slope = np.maximum(slope, 0.0)
    with np.errstate(divide="ignore"):
        geometric = np.where(slope > 0, -slope - log1mexp(-np.maximum(slope, 1e-300)), np.inf)
        bound = np.minimum(geometric, np.log(np.maximum(count, 0.0)))
    return np.where(count > 0, log_edge + bound, -np.inf)

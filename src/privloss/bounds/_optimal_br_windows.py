"""Certified window sums of the Theorem-2/3 candidates for
:mod:`privloss.bounds.optimal_br` (its module docstring states the theorem, the
candidate set and the error budget; this module holds the per-candidate part).

Each candidate H_l(t_l) is a sum over the BR count i of positive log-space terms;
the terms within ``_window_half_width`` of the concave envelope's peak are summed
with explicit float-error allowances, the others are bounded by geometric tails.

Privacy guarantee
-----------------
Upper bounds (and lower bounds) on each candidate's value; rounding toward more loss.

Citation
--------
Cesar and Rogers, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
Composition for Data Analytics", ALT 2021 ([CR]), Lemma 4.4 and Theorems 2 and 3.

Runtime
-------
O(sqrt(n)) terms per candidate, in cache-sized batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privloss.bounds._numeric import log1mexp
from privloss.bounds._optimal_br_tables import (_ERROR_FACTOR, _UNIT, _Tables,
                                               _log_geometric_tail)

__all__ = []

#: Log-drop of the concave envelope at the window edge: the outside terms are
#: bounded rigorously, this only decides how small that bound is (~e^-40 of the
#: envelope; log(1/eps) more is added because terms can be ~eps times the envelope).
_WINDOW_DROP = 40.0
#: Window elements per numpy batch: small enough to stay in cache (large temporaries
#: cost page faults: ~3x slower per element at 1 << 20).
_BATCH_ELEMENTS = 1 << 15

@dataclass
class _Candidates:
    ell: np.ndarray       # truncation index l (outcomes m = i + 2j <= l)
    t: np.ndarray         # BR parameter
    log_q: np.ndarray     # log q_{eps,t}
    log_1mq: np.ndarray   # log (1 - q_{eps,t})
    top: np.ndarray       # last admissible BR count min(n, l)
    eta_s: np.ndarray     # absolute error bound of log(P[I = i] CA) per term
    eta_x: np.ndarray     # absolute error bound of the exponent X per term


def _candidates(tab: _Tables, epsilon_g: float, within: tuple[int, int] | None = None) -> _Candidates:
    """The interior candidates (those with truncation index l in ``within``, if given)."""
    d, n, eps = tab.num_dp, tab.num_br, tab.epsilon
    # 0 < t*_l < eps  <=>  d - 1 - eps_g/eps < l < n + d - eps_g/eps; scan with a margin
    # and keep the exact float test below.
    low = max(0, math.floor(d - 1 - epsilon_g / eps) - 1)
    high = min(n + 2 * d, math.ceil(n + d - epsilon_g / eps) + 1)
    if within is not None:
        low, high = max(low, within[0]), min(high, within[1])
    ell = np.arange(low, max(high, low) + 1, dtype=np.int64)
    t = (epsilon_g + (ell + 1.0 - d) * eps) / (n + 1.0)
    keep = (t > 0) & (t < eps)
    ell, t = ell[keep], t[keep]
    log_q = log1mexp(t - eps) - tab.log1m_exp_eps
    log_1mq = t - eps + log1mexp(-t) - tab.log1m_exp_eps
    top = np.minimum(ell, n)
    # eta_s: log C(n, i) (three gammaln ~ log n!) plus (n - i) log q + i log(1 - q);
    # eta_x: n t - i eps - eps_g; both plus the error of the DP prefix tables
    eta_s = tab.eta_tables + _ERROR_FACTOR * _UNIT * (
        tab.magnitude_br + n * (np.abs(log_q) + np.abs(log_1mq)) + 8.0)
    eta_x = tab.eta_tables + _ERROR_FACTOR * _UNIT * (n * (t + eps) + epsilon_g)
    return _Candidates(ell, t, log_q, log_1mq, top, eta_s, eta_x)


def _envelope(tab: _Tables, ell, log_q, log_1mq, i):
    """Concave envelope F(i) >= log(P[I = i] CA((l - i) // 2)), elementwise.

    P[I = i] is the binomial law of the BR count under P (log-concave in i);
    CA is interpolated linearly at half-integers (log CA is concave, non-decreasing).
    """
    d, n = tab.num_dp, tab.num_br
    g = tab.log_binom_br[i] + (n - i) * log_q + i * log_1mq
    rest = ell - i
    j0 = np.minimum(rest // 2, d)
    j1 = np.minimum(j0 + 1, d)
    h = np.where(rest % 2 == 0, tab.log_ca[j0], 0.5 * (tab.log_ca[j0] + tab.log_ca[j1]))
    return g + h


def _envelope_peak(tab: _Tables, cand: _Candidates) -> np.ndarray:
    """First i in [0, top] where the envelope stops increasing (its argmax)."""
    lo = np.zeros_like(cand.top)
    hi = cand.top.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        idx = np.nonzero(active)[0]
        mid = (lo[idx] + hi[idx]) // 2
        args = (cand.ell[idx], cand.log_q[idx], cand.log_1mq[idx])
        step = _envelope(tab, *args, mid + 1) - _envelope(tab, *args, mid)
        down = step < 0
        hi[idx[down]] = mid[down]
        lo[idx[~down]] = mid[~down] + 1


def _window_half_width(n: int, epsilon: float) -> int:
    # second differences of log P[I = i] are <= -4 / (n + 2), so s steps from the
    # peak the envelope has dropped by at least kappa s (s - 1) / 2.
    kappa = 4.0 / (n + 2.0)
    drop = _WINDOW_DROP + max(0.0, -math.log(epsilon))
    half = math.ceil(0.5 + math.sqrt(0.25 + 2.0 * drop / kappa)) + 1
    return int(min(half, n + 1))


def _log_peak_mass_factor(n: int, top: np.ndarray) -> np.ndarray:
    """log of a bound on sum_i e^{F(i)} / e^{max F} (strong concavity, or the count)."""
    kappa = 4.0 / (n + 2.0)
    return np.log(np.minimum(top + 1.0, 3.0 + math.sqrt(2.0 * math.pi / kappa)))


def _candidate_bounds(tab: _Tables, epsilon_g: float, cand: _Candidates,
                      peak: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log upper, log lower) bounds of H_l(t_l) for the selected candidates, and
    log(-d log H_l / d eps_g) (uncertified, a slope for steering the inversion).

    One row per candidate, one column per window position (a 2-D array: no
    per-element owner gathers); positions beyond [0, top] are masked to weight 0.
    """
    n, d, eps = tab.num_br, tab.num_dp, tab.epsilon
    ell, t, log_q, log_1mq = cand.ell[sel], cand.t[sel], cand.log_q[sel], cand.log_1mq[sel]
    top, centre = cand.top[sel], peak[sel]
    half = _window_half_width(n, eps)
    first = np.maximum(centre - half, 0)
    last = np.minimum(centre + half, top)
    lengths = last - first + 1
    width = int(lengths.max())
    i = first[:, None] + np.arange(width)[None, :]
    clipped = bool((lengths < width).any())
    if clipped:
        outside = i > last[:, None]
        i = np.minimum(i, last[:, None])        # masked below; keeps the gathers in range
    # float summation of up to `lengths` positive terms: relative error <= lengths * u
    eta_s = cand.eta_s[sel] + (lengths + 8.0) * _UNIT
    eta_x = cand.eta_x[sel]

    # term_i = e^{s_i} (1 - e^{-X_i}) with s = g + LA, X = c + LA - LB (> 0 exactly).
    # With errors ds <= eta_s, dX <= eta_x it is off by at most
    # e^{s} ((1 - e^{-X}) eta_s + e^{-X} eta_x) to first order (and a computed X <= 0
    # has a true term <= e^{s} eta_x), so the sum is off by eta_s S + eta_x sum e^{s-X}.
    fi = i.astype(float)
    s = tab.log_binom_br[i]
    s += (n - fi) * log_q[:, None]
    s += fi * log_1mq[:, None]
    x = (n * t - epsilon_g)[:, None] - fi * eps
    if d > 0:
        jj = np.minimum((ell[:, None] - i) >> 1, d)       # floor((l - i) / 2)
        la = tab.log_ca[jj]
        s += la
        la -= tab.log_cb[jj]
        x += la
    if clipped:
        s[outside] = -np.inf
    peak_s = s.max(axis=1)
    s -= peak_s[:, None]
    weight = np.exp(s)
    positive = -np.expm1(-np.maximum(x, 0.0))
    with np.errstate(divide="ignore", over="ignore"):
        log_sum = peak_s + np.log(np.einsum("ij,ij->i", weight, positive))
        log_boundary = peak_s + np.log(np.exp(s - x).sum(axis=1))
        log_err = np.logaddexp(np.log(eta_s) + log_sum, np.log(eta_x) + log_boundary)
    eta = np.maximum(eta_s, eta_x)

    # terms outside the window: below the envelope, which is concave
    args = (ell, log_q, log_1mq)
    has_low = first > 0
    f_first = _envelope(tab, *args, first)
    f_before = _envelope(tab, *args, np.maximum(first - 1, 0))
    tail_low = _log_geometric_tail(f_first, f_first - f_before, np.where(has_low, first, 0))
    has_high = last < top
    f_last = _envelope(tab, *args, last)
    f_after = _envelope(tab, *args, np.minimum(last + 1, top))
    tail_high = _log_geometric_tail(f_last, f_last - f_after,
                                    np.where(has_high, top - last, 0))
    # the envelope is evaluated in floats as well: allow the same relative error
    tails = np.logaddexp(tail_low, tail_high) + np.log1p(2.0 * eta)

    upper = np.logaddexp(np.logaddexp(log_sum, log_err), tails)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(log_err < log_sum,
                         log_sum + np.log1p(-np.exp(np.minimum(log_err - log_sum, 0.0))),
                         -np.inf)
        # -d log H / d eps_g (approximately: all window terms), for steering only
        log_rate = log_boundary - log_sum
    return upper, lower, log_rate


def _subset(cand: _Candidates, index: np.ndarray) -> _Candidates:
    return _Candidates(cand.ell[index], cand.t[index], cand.log_q[index], cand.log_1mq[index],
                       cand.top[index], cand.eta_s[index], cand.eta_x[index])


def _selection_bounds(tab: _Tables, epsilon_g: float, cand: _Candidates,
                      index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log upper, log lower, log rate) of the candidates ``index`` (see
    :func:`_candidate_bounds`), in batches."""
    sub = _subset(cand, index)
    peak = _envelope_peak(tab, sub)
    window = 2 * _window_half_width(tab.num_br, tab.epsilon) + 1
    per_batch = max(8, _BATCH_ELEMENTS // window)
    parts = [_candidate_bounds(tab, epsilon_g, sub, peak,
                               np.arange(start, min(start + per_batch, index.size)))
             for start in range(0, index.size, per_batch)]
    return tuple(np.concatenate(column) for column in zip(*parts))

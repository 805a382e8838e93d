"""[CR] Theorem 1 at large k: the binomial sums over O(sqrt k) terms, with a
certified bound on the rest and on the float error.

The optimal homogeneous profile (:mod:`privloss.bounds.optimal_dp`) is

    delta(eps_g) = A_m - e^{eps_g} B_m,   A_m = sum_{i<m} b(i),
    B_m = sum_{i<m} b(i) e^{(2i-k) eps},  m = number of active terms,

with b the Binomial(k, p) pmf, p = 1 / (1 + e^eps) (dividing the [KOV] sum by
(1 + e^eps)^k). Only the terms within a few standard deviations
sigma = sqrt(k p (1-p)) of the mean matter: the window holds
[k p - 40 sigma, k p + 12 sigma] (about 52 sigma terms: 8e5 at k = 10^9) and
the rest is bounded outward:

* b is log-concave, so below the window b(i - 1) / b(i) = i e^eps / (k - i + 1)
  only decreases, and sum_{i < lo} b(i) <= b(lo) r / (1 - r) with r the ratio at
  lo (a geometric series); the same above the window;
* A's tails are added (more loss), B's are dropped (more loss: it is subtracted);
* every window term carries a relative float error at most ``error`` (the anchor
  log-pmf by Loader's saddle-point formula, the running sum of log ratios, the
  exponentials, the prefix sums), summed per term and added.

The window is computed once per (k, eps) (cached): each evaluation of the
profile is then O(1), so the exact inversion needs no O(k) array.

Reference: C. Loader, "Fast and accurate computation of binomial probabilities"
(2000) for the anchor (stirlerr and bd0, as R's dbinom); the sum itself is
[KOV] Thm 3.3 / [MV] Thm 1.5 in Murtagh-Vadhan's form.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: unit roundoff of binary64
UNIT = 2.0 ** -53
#: the window spans this many standard deviations below / above the mean
SIGMAS_BELOW = 40.0
SIGMAS_ABOVE = 12.0

_STIRLING = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)


def stirling_error(n: float) -> float:
    """log(n!) - log(sqrt(2 pi n) (n/e)^n) (Loader's stirlerr): the series for n > 15,
    the log-gamma difference (small magnitudes, no cancellation) below."""
    if n <= 15:                  # n >= 1 here: x = 0 and x = n are handled by the caller
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2 * math.pi)
    s0, s1, s2, s3, s4 = _STIRLING
    nn = n * n
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x without cancellation (Loader's bd0)."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        term = 2.0 * x * v
        v2 = v * v
        for j in range(1, 1000):
            term *= v2
            updated = total + term / (2 * j + 1)
            if updated == total:
                return updated
            total = updated
        return total
    if x == 0:
        return mean
    return x * math.log(x / mean) + mean - x


def log_binomial_pmf(x: int, n: int, p: float, q: float) -> float:
    """log of C(n, x) p^x q^(n-x) (q = 1 - p given separately, both accurate),
    to about 1e-14 absolute for any n up to 2^53 (Loader 2000, saddle point)."""
    if x == 0:
        return n * math.log(q)
    if x == n:
        return n * math.log(p)
    lc = (stirling_error(float(n)) - stirling_error(float(x)) - stirling_error(float(n - x))
          - deviance(float(x), n * p) - deviance(float(n - x), n * q))
    return lc - 0.5 * (math.log(2 * math.pi) + math.log(x) + math.log1p(-x / n))


@dataclass(frozen=True)
class Window:
    """Prefix sums of A's and B's terms over [lo, hi], with the tail bounds."""

    k: int
    epsilon: float
    lo: int
    hi: int
    a_terms: np.ndarray           # b(i), lo <= i <= hi
    a_term_error: np.ndarray      # each A term's float error bound
    a_prefix: np.ndarray          # sum_{lo <= i <= lo + j} b(i)
    log_b_prefix: np.ndarray      # log sum_{lo <= i <= lo + j} b(i) e^{(2i - k) eps}
    a_error: np.ndarray           # prefix sums of each A term's float error bound
    log_b_error: np.ndarray       # log prefix sums of each B term's float error bound
    a_below: float                # >= sum_{i < lo} b(i)
    a_above: float                # >= sum_{i > hi} b(i)
    error: float                  # relative error bound of the prefix sums themselves

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1

    def pure_delta(self, epsilon_g: float, last: int) -> float | None:
        """An upper bound on (1 + e^eps)^-k sum_{i <= last} C(k, i) [e^{(k-i) eps} -
        e^{eps_g + i eps}] (the active terms i <= last), or None when the active
        terms end below the window (the caller sums them directly)."""
        if last < self.lo:
            # every active term lies below the window: their sum is within A's lower
            # tail bound (astronomically small: 40 standard deviations out)
            return self.a_below
        index = min(last, self.hi) - self.lo
        a = float(self.a_prefix[index]) + self.a_below + (self.a_above if last > self.hi else 0.0)
        b = _scaled(float(self.log_b_prefix[index]), epsilon_g)     # <= A: no overflow
        b_error = _scaled(float(self.log_b_error[index]), epsilon_g)
        if not (math.isfinite(b) and math.isfinite(b_error)):
            return None
        slack = (float(self.a_error[index]) + b_error
                 + (self.error + 4 * UNIT * max(1.0, epsilon_g)) * (a + b))
        return max(a - b, 0.0) + slack

    def pure_delta_direct(self, epsilon_g: float, last: int, last_exponent: float, *,
                          lower: bool = False) -> float:
        """The same upper bound summed term by term, sum b(i) (1 - e^{x_i}) with
        x_i = x_last - 2 (last - i) eps (``last_exponent`` = x_last, exact to an ulp):
        every term positive, so no cancellation (the closed form A - e^{eps_g} B
        loses about log10(A / delta) digits when eps is tiny). O(window).
        ``lower``: a lower bound instead (certifies how tight the upper one is)."""
        if last < self.lo:
            return 0.0 if lower else self.a_below
        stop = min(last, self.hi) - self.lo + 1
        steps = np.arange(last - self.lo, last - self.lo - stop, -1, dtype=float)
        exponent = last_exponent - 2.0 * self.epsilon * steps
        factor = -np.expm1(np.minimum(exponent, 0.0))
        terms = self.a_terms[:stop] * factor
        value = float(np.sum(terms)) + self.a_below + (self.a_above if last > self.hi else 0.0)
        # each factor: 5 units relative (x_i to 3 units: its effect on 1 - e^x is at most
        # that relative error, since |x| e^x / (1 - e^x) <= 1; expm1 itself to an ulp)
        error = float(np.sum(self.a_term_error[:stop] * factor)) + 5 * UNIT * float(np.sum(terms))
        if lower:                       # the window alone, less every error allowance
            return max(float(np.sum(terms)) - error - self.error * value, 0.0)
        return value + error + self.error * value

    def pure_delta_lower(self, epsilon_g: float, last: int) -> float:
        """A lower bound on the same sum (for certifying how close the upper bound is):
        the window's terms less their float error, less B's lower tail (each B term
        of an active index is at most the A term, so B's tail is within A's bound)."""
        if last < self.lo:
            return 0.0
        index = min(last, self.hi) - self.lo
        a = float(self.a_prefix[index])
        b = _scaled(float(self.log_b_prefix[index]), epsilon_g)
        b_error = _scaled(float(self.log_b_error[index]), epsilon_g)
        slack = (float(self.a_error[index]) + b_error
                 + (self.error + 4 * UNIT * max(1.0, epsilon_g)) * (a + b))
        return max(a - b - slack - self.a_below, 0.0)

    def relative_error(self, epsilon_g: float, last: int) -> float:
        """The bound's allowance relative to the computed value (for reports and tests)."""
        upper = self.pure_delta(epsilon_g, last)
        index = min(last, self.hi) - self.lo
        a = float(self.a_prefix[index])
        b = _scaled(float(self.log_b_prefix[index]), epsilon_g)
        return (upper - (a - b)) / max(a - b, 1e-300)

    @property
    def tail_share(self) -> float:
        """The tail bounds relative to the window's mass (how much is not summed)."""
        return (self.a_below + self.a_above) / max(float(self.a_prefix[-1]), 1e-300)


def _scaled(log_value: float, epsilon_g: float) -> float:
    """e^{log_value + eps_g}: B's prefix sums span e^{+-2 eps (window)}, so they are
    kept as logs; scaled by e^{eps_g} they are at most A (<= 1)."""
    exponent = log_value + epsilon_g
    if exponent == -math.inf:
        return 0.0
    return math.inf if exponent > 709.0 else math.exp(exponent)


@functools.lru_cache(maxsize=16)
def window(k: int, epsilon: float) -> Window:
    """The window of Binomial(k, 1/(1+e^eps)) for [CR] Thm 1 at large k (cached)."""
    p = 1.0 / (1.0 + math.exp(epsilon))             # both accurate to an ulp
    q = 1.0 / (1.0 + math.exp(-epsilon))
    mean, sigma = k * p, math.sqrt(k * p * q)
    lo = max(0, math.floor(mean - SIGMAS_BELOW * sigma) - 16)
    hi = min(k, math.ceil(mean + SIGMAS_ABOVE * sigma) + 16)
    anchor = min(max(math.floor((k + 1) * p), lo), hi)            # the mode
    log_anchor = log_binomial_pmf(anchor, k, p, q)
    i = np.arange(lo, hi + 1, dtype=float)
    # log b(i+1) - log b(i) = log((k - i) / (i + 1)) - eps (one correctly rounded
    # quotient, then a log of a number near 1: an absolute error of a few ulps of 1),
    # summed outward from the anchor; each term's absolute log error is bounded by
    # the sum of its steps' errors plus the running sums' roundings
    ratios = np.log((k - i[:-1]) / (i[:-1] + 1.0)) - epsilon
    step_error = 4.0 * UNIT * (1.0 + np.abs(ratios) + epsilon)
    split = anchor - lo
    up = np.cumsum(ratios[split:])
    down = np.cumsum(-ratios[:split][::-1])[::-1]
    up_error = np.cumsum(step_error[split:]) + UNIT * np.cumsum(np.abs(up))
    down_error = (np.cumsum(step_error[:split][::-1]) + UNIT * np.cumsum(np.abs(down[::-1])))[::-1]
    log_b = np.concatenate([down, [0.0], up]) + log_anchor
    # the anchor: 1e-13 absolute (Loader at the mode; tested against mpmath to 1e-14)
    log_error = np.concatenate([down_error, [0.0], up_error]) + 1e-13 + 2 * UNIT * abs(log_anchor)
    exponent = (2.0 * i - k) * epsilon
    with np.errstate(under="ignore", divide="ignore"):
        a_terms = np.exp(log_b)
        a_error = a_terms * np.expm1(log_error + 2 * UNIT) * 1.01
        log_b_terms = log_b + exponent
        log_b_error = log_b_terms + np.log(np.expm1(log_error + 2 * UNIT * (np.abs(exponent) + 2.0))
                                           * 1.01)
    a_prefix = np.cumsum(a_terms)
    log_b_prefix = np.logaddexp.accumulate(log_b_terms)
    log_b_error_prefix = np.logaddexp.accumulate(log_b_error)
    a_below = a_above = 0.0
    if lo > 0:
        ratio = lo * math.exp(epsilon) / (k - lo + 1)          # b(lo-1)/b(lo), decreasing below
        a_below = math.inf if ratio >= 1 else float(a_terms[0]) * ratio / (1.0 - ratio) * (1 + 1e-9)
    if hi < k:
        ratio = (k - hi) / (hi + 1.0) * math.exp(-epsilon)     # b(hi+1)/b(hi), decreasing above
        a_above = math.inf if ratio >= 1 else float(a_terms[-1]) * ratio / (1.0 - ratio) * (1 + 1e-9)
    # prefix sums of positive terms (cumsum; logaddexp: a few units per step): relative
    # error at most 4 (size - 1) units; A's terms below 1e-300 may underflow to 0:
    # at most that each, added to the lower tail
    error = 4 * (hi - lo + 1) * UNIT * 1.01
    a_below += (hi - lo + 1) * 1e-300
    return Window(k, epsilon, lo, hi, a_terms, a_error, a_prefix, log_b_prefix, np.cumsum(a_error),
                  log_b_error_prefix, a_below, a_above, error)


def active_last(k: int, epsilon: float, epsilon_g: float) -> int:
    """The largest active index i ((k - i) eps > eps_g + i eps), -1 if none, exactly."""
    return active(k, epsilon, epsilon_g)[0]


def active(k: int, epsilon: float, epsilon_g: float) -> tuple[int, float]:
    """(last, x_last): the largest active index and its exponent eps_g + (2 last - k) eps
    (< 0), both from the exact rationals of the float inputs; (-1, 0) if none."""
    exact_eps = Fraction(epsilon)
    gap = Fraction(epsilon_g) - k * exact_eps
    if gap >= 0:
        return -1, 0.0
    last = min(math.ceil(-gap / (2 * exact_eps)) - 1, k)
    return last, float(gap + 2 * last * exact_eps)

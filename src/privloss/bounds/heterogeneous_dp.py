"""Optimal adaptive composition of heterogeneous (epsilon_i, delta_i)-DP mechanisms
([MV] Theorem 1.5, composition.md §7.3).

The worst case of adaptively composing (epsilon_i, delta_i)-DP mechanisms is the
product of randomized responses RR_{epsilon_i} (plus independent delta_i "leaks"):

    delta_g = 1 - prod_i (1 - delta_i) * (1 - E_P[(1 - e^{epsilon_g - L})_+]),
    L = sum_i s_i epsilon_i,  s_i = +1 w.p. e^{eps_i}/(1+e^{eps_i}), else -1.

Computing it exactly is #P-hard in general, so this module returns a certified
``Bracket(lower, upper)`` around the optimum, by the first applicable mode:

* **Exact lattice mode.** Every epsilon_i is an integer multiple c_i h of one step
  h (detected from small-denominator ratios, or multiples of an explicit
  ``lattice_step``): the law of L lives on hZ; it is built from grouped binomials
  and sparse convolutions. ``upper`` uses the step rounded up so that
  c_i h >= epsilon_i as reals, ``lower`` the step rounded down (the profile is
  monotone in each epsilon_i), so the ends differ only by float rounding.
* **Exact enumeration mode** (at most ``AUTO_ENUMERATION_K`` mechanisms, no
  ``lattice_step``): the 2^k atoms of L.
* **Bracket mode** (arbitrary epsilon_i, lattice step h):
  - upper: mechanism i is replaced by the *revealed mixture* "RR at hi_i w.p.
    w_i, else RR at lo_i" (lo_i = floor(eps_i / h) h, hi_i = lo_i + h). With the
    minimal w_i of :func:`_mixture_weights` its privacy profile dominates that
    of RR_{eps_i} for all epsilon_g >= 0; both pairs are symmetric
    (delta_{P||Q} = delta_{Q||P}, and delta(-e) = 1 - e^{-e} + e^{-e} delta(e)),
    so the tradeoff curves are ordered and RR_{eps_i} is a post-processing of
    the mixture (Blackwell). Every eps_i-DP mechanism is therefore a
    post-processing of a fixed lattice pair, and the adaptive composition is
    dominated by the product of the mixtures, whose privacy-loss law is on hZ.
  - lower: the statistic T = sum_i s_i c_i h (c_i = nearest integer to
    eps_i / h) of the true worst-case product is a post-processing, so
    sum_t [P_T(t) - e^{epsilon_g} Q_T(t)]_+ <= true delta (data processing).
  For many mechanisms both errors are second order in h (the bracket shrinks
  like k h^2); for a few large epsilon_i they are first order near the atoms of
  L (the mixture profile exceeds RR's by O(h) just above u = e^{eps_i}).
  Without an explicit step the lattice is refined until the wanted width.

Numerics: the lattice laws are built by "shift-and-add" dynamic programmes or
binomial recurrences, i.e. sums of products of non-negative numbers, so every
entry carries a *relative* error bound (tracked explicitly, ~k u). Entries of
negligible P-mass are pruned from the edges; the pruned P-mass is added to the
upper bound (for the lower bound, pruning a state in both P and Q is itself a
post-processing). delta(epsilon_g) is evaluated as sum_l P(l) (-expm1(epsilon_g - l))
(non-negative terms; loss values j h formed exactly or in double-double) and the
bounds are pushed outward by the tracked errors. epsilon(delta) inverts the
piecewise affine (in e^{epsilon_g}) profiles exactly and re-checks the result
(``certify_epsilon`` upward for ``upper``, the mirror image downward for ``lower``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import expit, log_expit

from privloss.bounds._numeric import (Bracket, certify_epsilon, check_epsilon_list, check_nonnegative,
                                      check_positive)

#: Unit roundoff of IEEE double precision.
_U = 2.0 ** -53
#: Smallest positive double; bounds the absolute error of one underflowing operation.
_TINY = 5e-324
#: Memory limit: the longest lattice (number of grid points) ever allocated.
MAX_LATTICE_POINTS = 20_000_000
#: Work limit of one automatic lattice: k * (estimated lattice length); 1e10 is
#: roughly half a minute.
MAX_LATTICE_WORK = 1e10
#: Pruning never goes below this mass, which also keeps the DP away from subnormals.
_MIN_THRESHOLD = 1e-280
#: Default relative width targeted by :func:`heterogeneous_dp_delta` in bracket mode.
DELTA_RELATIVE_TOLERANCE = 1e-4
#: Largest k accepted by the 2^k enumeration.
MAX_ENUMERATION_K = 20
#: Up to this many mechanisms the main functions enumerate (exact) instead of bracketing.
AUTO_ENUMERATION_K = 14


# --------------------------------------------------------------------------
# validation and the delta_i "leak" factor
# --------------------------------------------------------------------------

def _validate_mechanisms(epsilons, deltas) -> tuple[np.ndarray, np.ndarray]:
    eps = check_epsilon_list("epsilons", epsilons)
    if deltas is None:
        return eps, np.zeros_like(eps)
    try:
        dels = np.asarray(deltas, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise TypeError(f"deltas must be a sequence of reals in [0, 1], got {deltas!r}") from err
    if dels.shape != eps.shape:
        raise ValueError(f"deltas must have the same length as epsilons ({eps.size}), "
                         f"got length {dels.size}")
    bad = ~((dels >= 0) & (dels <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"deltas[{i}] must be in [0, 1], got {dels[i]!r}")
    return eps, dels


def _leak_bounds(deltas: np.ndarray) -> tuple[float, float]:
    """(lower, upper) bounds on 1 - prod_i (1 - delta_i)."""
    if deltas.size == 0 or not deltas.any():
        return 0.0, 0.0
    if (deltas >= 1).any():
        return 1.0, 1.0
    # log1p: rel. error u each; fsum: exact rounding; -expm1: rel. error <= 3u.
    value = -math.expm1(math.fsum(np.log1p(-deltas).tolist()))
    slack = 16 * _U
    return max(0.0, value * (1 - slack)), min(1.0, value * (1 + slack) + _TINY)


def _combine_up(leak_up: float, pure_up: float) -> float:
    """Upper bound of 1 - (1 - leak)(1 - pure); increasing in both arguments."""
    pure_up = min(max(pure_up, 0.0), 1.0)
    value = leak_up + (1.0 - leak_up) * pure_up
    return min(1.0, value * (1 + 4 * _U) + _TINY) if value > 0 else 0.0


def _combine_down(leak_down: float, pure_down: float) -> float:
    """Lower bound of 1 - (1 - leak)(1 - pure)."""
    pure_down = min(max(pure_down, 0.0), 1.0)
    value = leak_down + (1.0 - leak_down) * pure_down
    return max(0.0, value * (1 - 4 * _U))


def _exact_sum(eps: np.ndarray) -> Fraction:
    values, counts = np.unique(eps, return_counts=True)
    return sum((int(n) * Fraction(float(v)) for v, n in zip(values, counts)), Fraction(0))


def _sum_bracket(eps: np.ndarray) -> tuple[float, float]:
    """Floats just below / above the exact real sum of the epsilons."""
    exact = _exact_sum(eps)
    value = float(exact)
    down = value if Fraction(value) <= exact else math.nextafter(value, -math.inf)
    up = value if Fraction(value) >= exact else math.nextafter(value, math.inf)
    return down, up


def _at_least_total(eps: np.ndarray, epsilon_g: float) -> bool:
    """epsilon_g >= sum(eps) exactly (then the pure part of delta is 0)."""
    if math.isinf(epsilon_g):
        return True
    return Fraction(epsilon_g) >= _exact_sum(eps)


# --------------------------------------------------------------------------
# accurate evaluation of epsilon_g - j h
# --------------------------------------------------------------------------

def _split(step: float) -> tuple[float, float]:
    """Veltkamp split step = high + low with ``high`` on 26 bits (j * high exact for |j| < 2^27)."""
    scaled = step * 134217729.0
    high = scaled - (scaled - step)
    return high, step - high


def _gaps(epsilon_g: float, index: np.ndarray, step: float) -> np.ndarray:
    """epsilon_g - index * step, with relative error <= 2u plus u 2^-26 |index step|."""
    high, low = _split(step)
    return (epsilon_g - index * high) - index * low


# --------------------------------------------------------------------------
# profile objects: upper (privacy-loss law) and lower (statistic pair)
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _LossLaw:
    """P-law of a privacy loss on a lattice: P(L = (offset + stride t) step) = mass[t].

    ``relative_error`` bounds the entrywise relative error of ``mass``; ``dropped``
    bounds the P-mass removed by pruning; ``absolute_error`` covers underflow.
    ``upward`` says whether evaluations round up (upper bound) or down.
    """

    step: float
    offset: int
    stride: int
    mass: np.ndarray
    relative_error: float
    dropped: float
    absolute_error: float
    upward: bool

    def _index(self) -> np.ndarray:
        return self.offset + self.stride * np.arange(self.mass.size, dtype=np.int64)

    def value(self, epsilon_g: float) -> float:
        """E_P[(1 - e^{epsilon_g - L})_+], rounded in the direction of the bound."""
        index = self._index()
        x = _gaps(epsilon_g, index, self.step)
        active = x < 0
        terms = self.mass[active] * -np.expm1(x[active])
        raw = float(np.sum(terms))
        # per term: mass rel. error + 2u (gap) + u (expm1) + u (product); a sum of
        # n non-negative terms in any order: (n - 1) u.
        relative = self.relative_error + (terms.size + 6) * _U
        # with a long step, rounding index * low (and the subtraction before it)
        # moves x by <= 2u |index low|: a term by <= mass e^min(x,0) 2u |index low|,
        # including terms whose sign of x flipped (hence the margin)
        low = abs(_split(self.step)[1])
        split_error = 0.0
        if low > 0:
            moved = 2.02 * _U * low * np.abs(index)
            near = x < moved
            weights = self.mass[near] * np.exp(np.minimum(x[near], 0.0)) * moved[near]
            split_error = 1.01 * float(np.sum(weights))
        if self.upward:
            return raw * (1 + relative) + self.dropped + self.absolute_error + split_error
        return max(0.0, raw * (1 - relative) - self.absolute_error - split_error)

    def root(self, level: float) -> float:
        """Approximately the smallest epsilon_g >= 0 with value(epsilon_g) <= level."""
        if self.upward:
            level = ((level - self.dropped - self.absolute_error)
                     / (1 + self.relative_error + 8 * _U))
        else:
            level = (level + self.absolute_error) / (1 - self.relative_error - 8 * _U)
        if level < 0:
            return math.inf
        losses = self._index() * self.step
        mass = self.mass
        from scipy.signal import lfilter  # lazy: scipy.signal costs ~1 s to import
        # tail[t] = P(L > l_t); tilt[t] = sum_{t' > t} P_t' e^{l_t - l_t'} (stable recursion)
        decay = math.exp(-self.stride * self.step)
        tail = np.concatenate([np.cumsum(mass[::-1])[::-1][1:], [0.0]])
        shifted = np.concatenate([mass[1:], [0.0]])[::-1]
        tilt = lfilter([decay], [1.0, -decay], shifted)[::-1]
        at_points = tail - tilt                       # value at epsilon_g = l_t (approx.)
        candidates = np.flatnonzero((losses >= 0) & (at_points <= level))
        if candidates.size == 0:
            return float(losses[-1]) if losses[-1] > 0 else 0.0
        t = int(candidates[0])
        low_end = max(0.0, float(losses[t - 1])) if t > 0 else 0.0
        # on (l_{t-1}, l_t] the active set is {t' >= t}: value = A - e^{e - l_t} B
        active_mass = tail[t] + mass[t]
        active_tilt = tilt[t] + mass[t]
        if active_mass <= level or active_tilt <= 0:
            return low_end
        root = float(losses[t]) + math.log((active_mass - level) / active_tilt)
        return min(max(root, low_end), float(losses[t]))


@dataclass(frozen=True)
class _AtomLaw:
    """P-law of a privacy loss with arbitrary atoms ``losses`` (ascending), ``mass``.

    Every computed loss is within ``shift`` of the true one and every mass within
    ``relative_error`` (relative), so the true profile lies between the computed
    profile at epsilon_g + shift and at epsilon_g - shift (a common shift of all
    losses is a shift of epsilon_g). ``upward`` selects the direction of the bound.
    """

    losses: np.ndarray
    mass: np.ndarray
    shift: float
    relative_error: float
    absolute_error: float
    upward: bool

    def value(self, epsilon_g: float) -> float:
        """E_P[(1 - e^{epsilon_g - L})_+], rounded in the direction of the bound."""
        # the shift also absorbs the rounding of epsilon_g -/+ shift itself
        shift = self.shift + 4 * _U * (abs(epsilon_g) + 1.0)
        moved = epsilon_g - shift if self.upward else epsilon_g + shift
        x = moved - self.losses
        active = x < 0
        terms = self.mass[active] * -np.expm1(x[active])
        raw = math.fsum(terms.tolist())             # correctly rounded (<= 2^20 terms)
        # x: 1 rounding (relative u, effect <= u on the term); expm1, product: 2u
        relative = self.relative_error + 6 * _U
        if self.upward:
            return raw * (1 + relative) + self.absolute_error
        return max(0.0, raw * (1 - relative) - self.absolute_error)

    def root(self, level: float) -> float:
        """Approximately the smallest epsilon_g >= 0 with value(epsilon_g) <= level."""
        losses, mass = self.losses, self.mass
        positive = mass > 0
        losses, mass = losses[positive], mass[positive]
        if losses.size == 0 or level < 0:
            return 0.0 if level >= 0 else math.inf
        # with the atoms above index j active: value(e) = A_j - e^e B_j
        tail = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])
        log_b = np.concatenate([np.logaddexp.accumulate((np.log(mass) - losses)[::-1])[::-1],
                                [-np.inf]])
        # value at e = losses[j] (atoms > j active)
        at_atoms = tail[1:] - np.exp(np.minimum(losses + log_b[1:], 700.0))
        candidates = np.flatnonzero((losses >= 0) & (at_atoms <= level))
        if candidates.size == 0:
            return max(float(losses[-1]), 0.0)
        j = int(candidates[0])
        low_end = max(0.0, float(losses[j - 1])) if j > 0 else 0.0
        if tail[j] <= level:
            return low_end
        root = math.log(tail[j] - level) - float(log_b[j])
        root = min(max(root, low_end), float(losses[j]))
        return root + self.shift if self.upward else max(0.0, root - self.shift)


#: Statistic states with P or tilted-Q mass below this are left out of the lower
#: bound (a post-processing), so underflow never matters relative to what is kept.
_LOWER_FLOOR = 1e-250


@dataclass(frozen=True)
class _StatisticPair:
    """Laws of a lattice statistic T = tau * step of the worst-case pair, for a lower bound.

    ``p[t]`` = P(T = tau_t step); ``r[t]`` = Q(T = tau_t step) e^{tau_t step} (Q tilted so
    that it has the magnitude of P: no underflow even for huge losses). By data
    processing sum_t [P_T(t) - e^{eps_g} Q_T(t)]_+ <= the true delta.
    ``relative_error`` bounds the entrywise relative errors of p and r from
    rounding; ``operations`` counts the DP's multiply-adds (underflow bound).
    """

    p: np.ndarray
    r: np.ndarray
    tau: np.ndarray
    step: float
    relative_error: float
    operations: int

    def _kept(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """States kept, their log p, log r, and the relative slack (incl. underflow)."""
        kept = (self.p >= _LOWER_FLOOR) & (self.r >= _LOWER_FLOOR)
        # each underflowing operation errs by <= 2^-1075 absolutely and the DP does
        # not amplify absolute errors in l1, so a kept entry (>= 1e-250) is off by
        # at most operations * 2^-1075 / 1e-250 relatively
        underflow = self.operations * 2.0 ** -1075 / _LOWER_FLOOR
        return kept, np.log(self.p[kept]), np.log(self.r[kept]), self.relative_error + underflow

    def _log_ratio(self, epsilon_g: float, kept, log_p, log_r, slack) -> np.ndarray:
        """Upper bound on z = epsilon_g + log Q_T - log P_T for the kept states."""
        gap = _gaps(epsilon_g, self.tau[kept], self.step)
        z = gap + (log_r - log_p)
        # roundoff in gap (2u), the logs (u each) and the two additions, plus the
        # entrywise relative errors of p and r
        dz = 4 * _U * (np.abs(gap) + np.abs(log_r) + np.abs(log_p) + 1) + 2.01 * slack
        return z + dz

    def value(self, epsilon_g: float) -> float:
        """Lower bound on sum_t [P_T(t) - e^{epsilon_g} Q_T(t)]_+."""
        kept, log_p, log_r, slack = self._kept()
        z = self._log_ratio(epsilon_g, kept, log_p, log_r, slack)
        active = z < 0
        terms = self.p[kept][active] * -np.expm1(z[active])
        raw = float(np.sum(terms))
        return max(0.0, raw * (1 - slack - (terms.size + 4) * _U))

    def root(self, level: float) -> float:
        """Approximately the smallest epsilon_g >= 0 with value(epsilon_g) <= level."""
        kept, log_p, log_r, _ = self._kept()
        if not kept.any():
            return 0.0
        # breakpoints: the state is active iff epsilon_g < log(P_T / Q_T) = rho
        rho = -_gaps(0.0, self.tau[kept], self.step) + (log_p - log_r)
        order = np.argsort(-rho)
        rho, p, log_q = rho[order], self.p[kept][order], (log_p - rho)[order]
        # with the first m states active: value(e) = A_m - e^e B_m
        cum_p = np.concatenate([[0.0], np.cumsum(p)])
        log_cum_q = np.concatenate([[-np.inf], np.logaddexp.accumulate(log_q)])
        m = np.arange(rho.size)
        with np.errstate(over="ignore"):
            at_rho = cum_p[m] - np.exp(np.minimum(rho + log_cum_q[m], 700.0))
        above = np.flatnonzero(at_rho > level)
        count = int(above[0]) if above.size else rho.size
        if count == 0 or cum_p[count] <= level:
            return 0.0
        return max(0.0, math.log(cum_p[count] - level) - float(log_cum_q[count]))


# --------------------------------------------------------------------------
# shift-and-add dynamic programme
# --------------------------------------------------------------------------

class _LatticeTooLarge(Exception):
    """A dynamic programme would exceed ``MAX_LATTICE_POINTS``."""


@dataclass
class _DPResult:
    mass: np.ndarray       # (rows, n)
    start: int             # entries pruned from the front
    dropped: float         # P-mass (row 0) pruned
    operations: int        # number of multiply-adds (for the underflow bound)


def _kernel_dp(offsets: list[np.ndarray], probs: list[np.ndarray], rows: int,
               threshold: float) -> _DPResult:
    """Convolve the small kernels (non-negative integer ``offsets``, ``probs`` of shape
    (rows, m)) starting from a point mass; entries of row 0 below ``threshold`` are
    pruned from both ends (in all rows)."""
    capacity = 1024
    cur = np.zeros((rows, capacity))
    nxt = np.zeros((rows, capacity))
    tmp = np.zeros((rows, capacity))
    cur[:, 0] = 1.0
    length, start, dropped, operations = 1, 0, 0.0, 0
    checked_length = 1
    for off, pr in zip(offsets, probs):
        new_length = length + int(off[-1])
        if new_length > capacity:
            if new_length > MAX_LATTICE_POINTS:
                raise _LatticeTooLarge(f"lattice of {new_length} points")
            capacity = min(max(2 * capacity, new_length), MAX_LATTICE_POINTS)
            grown = np.zeros((rows, capacity))
            grown[:, :length] = cur[:, :length]
            cur, nxt, tmp = grown, np.zeros((rows, capacity)), np.zeros((rows, capacity))
        out = nxt[:, :new_length]
        src, scratch = cur[:, :length], tmp[:, :length]
        # the first term (offset 0) initialises out[:, :length]; the rest is added
        np.multiply(src, pr[:, 0:1], out=out[:, :length])
        out[:, length:].fill(0.0)
        for j in range(1, off.size):
            np.multiply(src, pr[:, j:j + 1], out=scratch)
            segment = out[:, off[j]:off[j] + length]
            np.add(segment, scratch, out=segment)
        operations += length * off.size * rows
        cur, nxt, length = nxt, cur, new_length
        if length > 1.05 * checked_length + 64:
            length, start, dropped = _prune(cur, length, start, dropped, threshold)
            checked_length = length
    length, start, dropped = _prune(cur, length, start, dropped, threshold)
    return _DPResult(cur[:, :length].copy(), start, dropped, operations)


def _prune(buf: np.ndarray, length: int, start: int, dropped: float,
           threshold: float) -> tuple[int, int, float]:
    """Drop leading/trailing entries whose row-0 mass is below ``threshold``."""
    row = buf[0, :length]
    keep = np.flatnonzero(row >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(row))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    if first == 0 and last == length:
        return length, start, dropped
    dropped += float(row[:first].sum()) + float(row[last:].sum())
    buf[:, :last - first] = buf[:, first:last]
    return last - first, start + first, dropped


def _dp_relative_error(count: int, per_step: float) -> float:
    """Relative error after ``count`` steps each adding ``per_step`` units of roundoff."""
    return math.expm1(count * math.log1p(per_step * _U)) * 1.01


# --------------------------------------------------------------------------
# bracket mode
# --------------------------------------------------------------------------

def _short_step(step: float, bits: int) -> float:
    """Round a positive step down to ``bits`` significant bits (so n * step is exact)."""
    mantissa, exponent = math.frexp(step)
    return math.ldexp(math.floor(math.ldexp(mantissa, bits)), exponent - bits)


def _floor_index(eps: np.ndarray, step: float) -> np.ndarray:
    """n_i = floor(eps_i / step) exactly (n * step is exact for a short step)."""
    n = np.floor(eps / step)
    n = np.where(n * step > eps, n - 1, n)
    n = np.where((n + 1) * step <= eps, n + 1, n)
    return n.astype(np.int64)


def _mixture_weights(eps: np.ndarray, lo: np.ndarray, step: float) -> np.ndarray:
    """Minimal w with w D_hi + (1-w) D_lo >= D_eps on u = e^{eps_g} >= 1, rounded up.

    D_c(u) = (e^c - u)_+ / (1 + e^c) is the profile of RR_c. All three are piecewise
    linear in u, so it suffices to check the kinks u = 1 (tanh condition) and
    u = e^lo (ratio condition); at e^eps and beyond the left side is >= 0 = D_eps.
    """
    hi = lo + step
    gap = eps - lo
    with np.errstate(over="ignore", invalid="ignore"):
        # (tanh(eps/2) - tanh(lo/2)) / (tanh(hi/2) - tanh(lo/2)), cancellation-free
        cosh_ratio = np.exp((hi - eps) / 2) * (1 + np.exp(-hi)) / (1 + np.exp(-eps))
        tanh_condition = np.sinh(gap / 2) / math.sinh(step / 2) * cosh_ratio
        # D_eps(e^lo) / D_hi(e^lo)
        ratio_condition = (np.expm1(gap) / math.expm1(step) * np.exp(hi - eps)
                           * (1 + np.exp(-hi)) / (1 + np.exp(-eps)))
    weight = np.maximum(tanh_condition, ratio_condition) * (1 + 1e-12) + 1e-300
    weight = np.where(gap > 0, np.minimum(weight, 1.0), 0.0)
    return np.where(np.isfinite(weight), weight, 1.0)


def _mixture_law(eps: np.ndarray, step: float, threshold: float) -> _LossLaw:
    """Upper-bound loss law: product of revealed mixtures of RR_lo and RR_hi on step*Z."""
    n = _floor_index(eps, step)
    lo = n * step                                   # exact: short step
    weight = _mixture_weights(eps, lo, step)
    a_lo, a_hi = expit(lo), expit(lo + step)
    b_lo, b_hi = expit(-lo), expit(-(lo + step))
    offsets, probs, shift = [], [], 0
    for i in range(eps.size):
        # losses -hi, -lo, +lo, +hi as offsets from -hi (in steps)
        w, ni = weight[i], int(n[i])
        off = np.array([0, 1, 2 * ni + 1, 2 * ni + 2])
        pr = np.array([w * b_hi[i], (1 - w) * b_lo[i], (1 - w) * a_lo[i], w * a_hi[i]])
        used = pr > 0                               # w = 0 when eps_i is on the lattice
        base = int(off[used][0])
        offsets.append(off[used] - base)
        probs.append(pr[used][None, :])
        shift += base - (ni + 1)
    result = _kernel_dp(offsets, probs, 1, threshold)
    return _LossLaw(step=step, offset=shift + result.start, stride=1, mass=result.mass[0],
                    relative_error=_dp_relative_error(eps.size, 12.0),
                    dropped=result.dropped * (1 + 1e-9),
                    absolute_error=result.operations * _TINY, upward=True)


def _statistic_pair(eps: np.ndarray, step: float, threshold: float) -> _StatisticPair:
    """Lower-bound pair for T = sum_i s_i c_i step (c_i = round(eps_i / step)).

    The DP runs over U = sum_{s_i = +1} c_i (T = (2U - sum c) step): under P the
    kernel is {0: 1 - a_i, c_i: a_i}; the second row carries Q tilted by e^T, i.e.
    the kernel {0: a_i e^{-c_i step}, c_i: (1 - a_i) e^{c_i step}}.
    """
    c = np.rint(eps / step).astype(np.int64)
    keep = c > 0
    eps, c = eps[keep], c[keep]
    if eps.size == 0:
        return _StatisticPair(np.ones(1), np.ones(1), np.zeros(1, dtype=np.int64), step, 0.0, 0)
    values = c * step                                    # exact: short step
    log_a, log_b = log_expit(eps), log_expit(-eps)
    p_up, p_down = np.exp(log_a), np.exp(log_b)
    r_up, r_down = np.exp(log_b + values), np.exp(log_a - values)
    offsets = [np.array([0, int(ci)]) for ci in c]
    probs = [np.array([[p_down[i], p_up[i]], [r_down[i], r_up[i]]]) for i in range(eps.size)]
    result = _kernel_dp(offsets, probs, 2, threshold)
    tau = 2 * (result.start + np.arange(result.mass.shape[1], dtype=np.int64)) - int(c.sum())
    # kernel entries: exp of a rounded sum of terms of size <= eps + |log a| + 1
    per_step = 8.0 + 4.0 * float(eps.max())
    return _StatisticPair(result.mass[0], result.mass[1], tau, step,
                          relative_error=_dp_relative_error(eps.size, per_step),
                          operations=result.operations)


def _bracket_cost(eps: np.ndarray, step: float, threshold: float) -> tuple[int, float]:
    """(estimated lattice length after pruning, work = k * length) at ``step``.

    States below ``threshold`` lie ~ sqrt(2 log(1/threshold)) standard deviations
    out (Hoeffding for the bounded summands), so the pruned support is about
    2 z sigma wide; the estimate only steers the step choice (the dynamic
    programme itself enforces the memory limit).
    """
    unpruned = int(2 * np.sum(np.floor(eps / step) + 1)) + 1
    z = math.sqrt(2.0 * math.log(1.0 / threshold)) + 2.0
    spread = 2.0 * z * math.sqrt(float(np.sum(eps * eps))) + 4.0 * float(eps.max())
    length = min(unpruned, int(spread / step) + 64)
    return length, float(eps.size) * length


def _bracket_laws(eps: np.ndarray, step: float, threshold: float):
    order = np.argsort(eps, kind="stable")   # small first: the support grows slowly
    eps = eps[order]
    return _mixture_law(eps, step, threshold), _statistic_pair(eps, step, threshold)


# --------------------------------------------------------------------------
# exact mode
# --------------------------------------------------------------------------

#: Relative mismatch tolerated between epsilon_g / c_g for exact lattice detection
#: (a few ulps: decimal inputs such as 0.3 / 0.1 = 2.9999999999999996 qualify).
_LATTICE_MATCH = 64 * _U


def _reduced_multiples(fractions: list[Fraction]) -> np.ndarray | None:
    """Smallest integers c_g proportional to the positive rationals ``fractions``."""
    common = math.lcm(*(f.denominator for f in fractions))
    numerators = [f.numerator * (common // f.denominator) for f in fractions]
    g = math.gcd(*numerators)
    multiples = [x // g for x in numerators]
    if max(multiples) > MAX_LATTICE_POINTS:
        return None
    return np.array(multiples, dtype=np.int64)


def _decimal_multiples(values: np.ndarray) -> np.ndarray | None:
    """Multiples from the shortest decimal forms (``repr``), if all have denominators
    <= 10^6, e.g. 0.1, 0.25, 0.35 -> 2, 5, 7 (step 0.05)."""
    fractions = [Fraction(repr(float(v))) for v in values]
    if any(f.denominator > 10 ** 6 for f in fractions):
        return None
    return _reduced_multiples(fractions)


def _ratio_multiples(values: np.ndarray) -> np.ndarray | None:
    """Multiples from ratios to the smallest value that are rationals with
    denominators <= 10^6 up to a few ulps, e.g. pi/7, 2 pi/7."""
    base = float(values[0])
    fractions = []
    for v in values:
        ratio = float(v) / base
        if not math.isfinite(ratio):
            return None
        frac = Fraction(ratio).limit_denominator(10 ** 6)
        if abs(float(frac) - ratio) > _LATTICE_MATCH * ratio:
            return None
        fractions.append(frac)
    return _reduced_multiples(fractions)


def _lattice_multiples(values: np.ndarray, step: float | None) -> np.ndarray | None:
    """Integers c_g with values_g = c_g h (up to a few ulps) for a common step h, or None.

    With an explicit ``step`` the values must be multiples of it; otherwise the
    step is found from short decimal forms or from rational ratios (see above).
    A false detection would cost tightness, never validity: the two ends of the
    exact mode use steps certified against every value.
    """
    if step is not None:
        c = np.rint(values / step)
        if (c < 1).any() or (np.abs(values / step - c) > _LATTICE_MATCH * c).any():
            return None
        return c.astype(np.int64)
    multiples = _decimal_multiples(values)
    return multiples if multiples is not None else _ratio_multiples(values)


def _certified_step(values: np.ndarray, c: np.ndarray, upward: bool) -> float:
    """Float h with c_g h >= values_g for all g (upward) or <= (downward), as reals."""
    ratios = values / c
    h = float(ratios.max() if upward else ratios.min())
    exact_values = [Fraction(float(v)) for v in values]
    direction = math.inf if upward else -math.inf
    for _ in range(64):
        fh = Fraction(h)
        ok = all((int(ci) * fh >= v) if upward else (int(ci) * fh <= v)
                 for ci, v in zip(c, exact_values))
        if ok:
            return h
        h = math.nextafter(h, direction)
    raise ArithmeticError("could not certify the exact lattice step")


@dataclass
class _Sparse:
    offset: int
    stride: int
    mass: np.ndarray


def _binomial_weights(count: int, x: float) -> tuple[np.ndarray, float]:
    """Bin(count, e^x/(1+e^x)) probabilities and a bound on their relative error.

    Built from the mode outwards by the ratio recurrence
    p_{j+1}/p_j = (count - j)/(j + 1) e^x (products of positive numbers, so each
    step adds a few roundoffs) and normalised by their sum, which avoids the
    ~1e-12 relative error of log-gamma values for large counts.
    """
    mode = min(count, int(math.floor((count + 1) * float(expit(x)))))
    ratio_up, ratio_down = math.exp(x), math.exp(-x)
    j_up = np.arange(mode, count, dtype=float)
    up = np.cumprod((count - j_up) / (j_up + 1.0) * ratio_up)
    j_down = np.arange(mode, 0, -1, dtype=float)
    down = np.cumprod(j_down / (count - j_down + 1.0) * ratio_down)
    weights = np.concatenate([down[::-1], [1.0], up])
    weights /= np.sum(weights)
    # per recurrence step: 3u (ratio) + u (product) + |x| u (rounded argument);
    # normalisation: count u (sum) + u (division), and the sum inherits the steps.
    steps = max(mode, count - mode)
    relative = (2 * steps * (4 + abs(x)) + count + 4) * _U * 1.01
    return weights, relative


def _binomial_group(count: int, multiple: int, step: float, threshold: float):
    """count copies of RR at loss multiple*step: losses multiple*(2j - count)*step."""
    mass, relative = _binomial_weights(count, multiple * step)
    keep = np.flatnonzero(mass >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(mass))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    dropped = float(mass[:first].sum() + mass[last:].sum())
    group = _Sparse(offset=multiple * (2 * first - count), stride=2 * multiple,
                    mass=mass[first:last].copy())
    return group, relative, dropped


def _sparse_convolve(a: _Sparse, b: _Sparse) -> tuple[_Sparse, int]:
    """Exact-structure convolution of two lattice laws (sums of non-negative terms)."""
    if a.mass.size < b.mass.size:
        a, b = b, a
    g = math.gcd(a.stride, b.stride)
    step_a, step_b = a.stride // g, b.stride // g
    length = (a.mass.size - 1) * step_a + (b.mass.size - 1) * step_b + 1
    out = np.zeros(length)
    span = (a.mass.size - 1) * step_a + 1
    for t, weight in enumerate(b.mass.tolist()):
        begin = t * step_b
        out[begin:begin + span:step_a] += weight * a.mass
    return _Sparse(a.offset + b.offset, g, out), a.mass.size * b.mass.size


def _exact_cost(counts: np.ndarray, c: np.ndarray) -> tuple[int, float]:
    """(lattice length, work) of the exact mode: binomials, then sparse convolutions
    whose cost is (entries of the next group) x (current length), groups by c."""
    order = np.argsort(c, kind="stable")
    span, work = 0, 0.0
    for g in order:
        if span > 0:
            work += float(counts[g] + 1) * (span + 1)
        else:
            work += float(counts[g] + 1)
        span += 2 * int(counts[g]) * int(c[g])
    return span + 1, work


def _exact_law(values: np.ndarray, counts: np.ndarray, c: np.ndarray, step: float,
               upward: bool, threshold: float) -> _LossLaw:
    """Loss law of the product of RR_{c_g step} (counts_g copies each), on step*Z."""
    order = np.argsort(c, kind="stable")
    law, relative, dropped, operations = None, 0.0, 0.0, 0
    for g in order:
        group, rel_g, drop_g = _binomial_group(int(counts[g]), int(c[g]), step, threshold)
        relative += rel_g
        dropped += drop_g
        operations += group.mass.size
        if law is None:
            law = group
            continue
        law, ops = _sparse_convolve(law, group)
        operations += ops
        relative += (min(law.mass.size, group.mass.size) + 2) * _U
        law, dropped = _prune_sparse(law, dropped, threshold)
    return _LossLaw(step=step, offset=law.offset, stride=law.stride, mass=law.mass,
                    relative_error=relative, dropped=dropped * (1 + 1e-9),
                    absolute_error=operations * _TINY, upward=upward)


def _prune_sparse(law: _Sparse, dropped: float, threshold: float) -> tuple[_Sparse, float]:
    keep = np.flatnonzero(law.mass >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(law.mass))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    dropped += float(law.mass[:first].sum() + law.mass[last:].sum())
    kept = _Sparse(law.offset + first * law.stride, law.stride, law.mass[first:last].copy())
    return kept, dropped


def _try_exact(eps: np.ndarray, step: float | None, threshold: float):
    """(upper law, lower law) of exact mode, or None when it does not apply / is too big."""
    values, counts = np.unique(eps, return_counts=True)
    c = _lattice_multiples(values, step)
    if c is None:
        return None
    length, work = _exact_cost(counts, c)
    if length > MAX_LATTICE_POINTS or work > MAX_LATTICE_WORK:
        return None
    h_up = _certified_step(values, c, upward=True)
    h_down = _certified_step(values, c, upward=False)
    return (_exact_law(values, counts, c, h_up, True, threshold),
            _exact_law(values, counts, c, h_down, False, threshold))


# --------------------------------------------------------------------------
# enumeration (few mechanisms)
# --------------------------------------------------------------------------

def _enumerated_laws(eps: np.ndarray) -> tuple[_AtomLaw, _AtomLaw]:
    """(upper, lower) atom laws of the product of RR_{eps_i} over all 2^k outcomes."""
    loss, mass = np.zeros(1), np.ones(1)
    for e, a, b in zip(eps.tolist(), expit(eps).tolist(), expit(-eps).tolist()):
        loss = np.concatenate([loss + e, loss - e])
        mass = np.concatenate([mass * a, mass * b])
    order = np.argsort(loss, kind="stable")
    loss, mass = loss[order], mass[order]
    k = eps.size
    # each addition errs by <= u |partial sum| <= u sum(eps)
    shift = 1.01 * k * _U * float(np.sum(eps))
    # products of k factors, each with 3u (expit), plus u per multiplication
    relative = 4.04 * (k + 1) * _U
    absolute = mass.size * k * _TINY                        # underflowing products
    return (_AtomLaw(loss, mass, shift, relative, absolute, upward=True),
            _AtomLaw(loss, mass, shift, relative, absolute, upward=False))


def _exact_laws(eps: np.ndarray, step: float | None, threshold: float):
    """Exact (upper, lower) laws: common lattice, else enumeration of few mechanisms
    (only when no lattice step is imposed); None if neither applies."""
    lattice = _try_exact(eps, step, threshold)
    if lattice is not None:
        return lattice
    if step is None and eps.size <= AUTO_ENUMERATION_K:
        return _enumerated_laws(eps)
    return None


# --------------------------------------------------------------------------
# inversion helpers
# --------------------------------------------------------------------------

def _certify_below(delta_of_epsilon, target: float, epsilon: float) -> float:
    """Largest of epsilon (1 - 2^j 1e-15) with delta > target (0 if none): a lower bound."""
    if not epsilon > 0:
        return 0.0
    if math.isinf(epsilon):
        epsilon = 1e300
    step = epsilon * 1e-15
    candidate = epsilon
    for _ in range(64):
        if candidate <= 0:
            return 0.0
        if delta_of_epsilon(candidate) > target:
            return candidate
        candidate = epsilon - step
        step *= 2.0
    return 0.0


def _pure_level(target: float, leak: float) -> float:
    """Level of the pure part at which 1 - (1 - leak)(1 - pure) = target."""
    if leak >= 1:
        return -1.0
    return (target - leak) / (1.0 - leak)


def _epsilon_bracket(upper_law, lower_law, target: float, leak: tuple[float, float],
                     total: tuple[float, float]) -> Bracket:
    def upper_delta(e: float) -> float:
        return _combine_up(leak[1], upper_law.value(e))

    def lower_delta(e: float) -> float:
        return _combine_down(leak[0], lower_law.value(e))

    if upper_delta(0.0) <= target:
        upper = 0.0
    else:
        guess = upper_law.root(_pure_level(target, leak[1]))
        upper = certify_epsilon(upper_delta, target, guess)
    if leak[1] <= target:
        # at epsilon_g = sum(eps) the pure part of the true delta vanishes
        upper = min(upper, total[1])
    if lower_delta(0.0) <= target:
        lower = 0.0
    else:
        guess = lower_law.root(_pure_level(target, leak[0]))
        lower = _certify_below(lower_delta, target, guess)
    return Bracket(min(lower, upper), upper)


def _delta_bracket(upper_law, lower_law, epsilon_g: float,
                   leak: tuple[float, float]) -> Bracket:
    upper = _combine_up(leak[1], upper_law.value(epsilon_g))
    lower = _combine_down(leak[0], lower_law.value(epsilon_g))
    return Bracket(min(lower, upper), upper)


def _initial_step(eps: np.ndarray, points: int = 32768) -> float:
    return _short_step(2.0 * float(np.sum(eps)) / points, 8)


def _refined_step(step: float, width: float, tolerance: float) -> float:
    """Next step from the h^2 law of the bracket width (at least halve, at most /32)."""
    factor = 0.7 * math.sqrt(tolerance / width) if width > 0 and math.isfinite(width) else 0.5
    return _short_step(step * min(0.5, max(factor, 1.0 / 32.0)), 8)


def _affordable_step(eps: np.ndarray, step: float, threshold: float) -> float | None:
    """``step`` if within the memory/work limits, else the smallest affordable larger one."""
    for _ in range(400):
        length, work = _bracket_cost(eps, step, threshold)
        if length <= MAX_LATTICE_POINTS and work <= MAX_LATTICE_WORK:
            return step
        step = _short_step(step * 1.125, 8)
    return None


def _refine(eps: np.ndarray, step: float | None, threshold: float, width_of,
            tolerance: float, rethreshold=None):
    """Bracket-mode laws, refining the step until ``width_of(laws) <= tolerance``.

    With a fixed ``step`` a single pass is made. ``rethreshold(laws)`` (optional)
    gives the pruning threshold for the passes after the first, coarse one. Returns
    the last completed (valid) laws when the limits stop the refinement early.
    """
    if step is not None:
        step = _short_step(step, 26)
        length = int(2 * np.sum(np.floor(eps / step) + 1)) + 1
        if length > MAX_LATTICE_POINTS:
            raise ValueError(f"lattice_step={step!r} needs {length} lattice points, more than "
                             f"MAX_LATTICE_POINTS={MAX_LATTICE_POINTS}; use a larger step")
        return _bracket_laws(eps, step, threshold)
    h = _affordable_step(eps, _initial_step(eps), threshold)
    if h is None:
        raise MemoryError("no lattice fits MAX_LATTICE_POINTS / MAX_LATTICE_WORK")
    laws = _bracket_laws(eps, h, threshold)
    if rethreshold is not None:
        threshold = rethreshold(laws)
    for _ in range(12):
        width = width_of(laws)
        if width <= tolerance:
            break
        wanted = _refined_step(h, width, tolerance)
        affordable = _affordable_step(eps, wanted, threshold)
        if affordable is None or affordable >= h:
            break
        try:
            laws = _bracket_laws(eps, affordable, threshold)
        except _LatticeTooLarge:
            break
        h = affordable
        if affordable > wanted:
            break       # capped by the limits: no finer lattice is affordable
    return laws


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------

def heterogeneous_dp_delta(epsilons, epsilon_g: float, *, deltas=None,
                           lattice_step: float | None = None) -> Bracket:
    """Bracket on the optimal delta of adaptively composed (epsilon_i, delta_i)-DP mechanisms.

    Theorem: [MV] Theorem 1.5 (composition.md §7.3): the optimum is
    1 - prod(1 - delta_i) (1 - E_P[(1 - e^{epsilon_g - L})_+]) with L the summed
    loss of independent randomized responses RR_{epsilon_i}; homogeneous case =
    [CR] Theorem 1 = [KOV] Theorem 3.3.
    Assumptions: adaptive composition (hence also non-adaptive), heterogeneous;
    ``epsilons[i]``, ``deltas[i]`` are the parameters of mechanism i (epsilon_i = 0
    costs nothing); ``epsilon_g >= 0`` is the overall epsilon; ``lattice_step``
    (optional) is the loss grid: if every epsilon_i is a multiple of it the result
    is exact, otherwise it is the step of the bracket construction (rounded down to
    26 significant bits).
    Guarantee: ``lower <= optimal delta <= upper``, both certified. Exact modes
    give the optimum up to float rounding, pushed outward: epsilons on a common
    lattice (short decimals such as 0.1, 0.25, rational ratios, or multiples of
    ``lattice_step``), or at most ``AUTO_ENUMERATION_K`` mechanisms without
    ``lattice_step`` (2^k enumeration). Otherwise the revealed-mixture upper bound
    and the statistic lower bound of the module docstring; without
    ``lattice_step`` the grid is refined until ``upper - lower <= 1e-4 * upper``
    or the memory/work limits are reached (the bracket stays certified).
    Runtime: O(k * lattice length) for the dynamic programmes (about 1.5 s for
    k = 1000 epsilons in [0.01, 0.5]); homogeneous input is one O(k) binomial.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    step = None if lattice_step is None else check_positive("lattice_step", lattice_step)
    leak = _leak_bounds(dels)
    eps = eps[eps > 0]
    if eps.size == 0 or _at_least_total(eps, eg) or leak[0] >= 1:
        return Bracket(leak[0], leak[1])
    threshold = _MIN_THRESHOLD
    exact = _exact_laws(eps, step, threshold)
    if exact is not None:
        return _delta_bracket(exact[0], exact[1], eg, leak)

    def width_of(laws) -> float:
        bracket = _delta_bracket(laws[0], laws[1], eg, leak)
        return (bracket.upper - bracket.lower) / max(bracket.upper, 1e-300)

    def rethreshold(laws) -> float:
        # prune states whose total mass cannot move delta by more than 1e-12 relative
        bracket = _delta_bracket(laws[0], laws[1], eg, (0.0, 0.0))
        scale = bracket.lower if bracket.lower > 0 else 1e-6 * bracket.upper
        return max(_MIN_THRESHOLD, scale * 1e-12 / MAX_LATTICE_POINTS)

    laws = _refine(eps, step, threshold, width_of, DELTA_RELATIVE_TOLERANCE, rethreshold)
    return _delta_bracket(laws[0], laws[1], eg, leak)


def heterogeneous_dp_epsilon(epsilons, target_delta: float, *, deltas=None,
                             tolerance: float = 1e-4) -> Bracket:
    """Bracket on the optimal epsilon of adaptively composed (epsilon_i, delta_i)-DP mechanisms.

    Theorem: [MV] Theorem 1.5 (composition.md §7.3), inverted: the smallest
    epsilon_g whose optimal delta is at most ``target_delta``; homogeneous case =
    [CR] Theorem 1 = [KOV] Theorem 3.3.
    Assumptions: adaptive composition (hence also non-adaptive), heterogeneous;
    ``epsilons[i]``, ``deltas[i]`` are the parameters of mechanism i (epsilon_i = 0
    costs nothing); ``target_delta >= 0`` (>= 1 gives 0; 0 gives the pure sum);
    ``tolerance > 0`` is the wanted ``upper - lower``.
    Guarantee: ``upper`` is a valid epsilon (its upper-bound delta is re-checked to
    be <= ``target_delta``), ``lower`` is a certified lower bound on the optimal
    epsilon (a certified lower bound on the optimal delta exceeds the target there).
    Infeasible targets (below 1 - prod(1 - delta_i)) give ``Bracket(inf, inf)``.
    In the exact modes (see :func:`heterogeneous_dp_delta`) the ends differ by
    float rounding only; otherwise the lattice is refined until
    ``upper - lower <= tolerance``; if the memory/work limits
    (``MAX_LATTICE_POINTS``, ``MAX_LATTICE_WORK``) stop the refinement, the wider,
    still certified bracket is returned.
    Runtime: O(k * lattice length) per refinement, the lattice pruned to the mass
    that matters at ``target_delta`` (about 0.6 s for k = 1000 epsilons in
    [0.01, 0.5] at tolerance 1e-3, 2 s at 1e-4; 3 s for k = 10^4 in
    [0.001, 0.05] at 1e-3); homogeneous input is one O(k) binomial.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    target = check_nonnegative("target_delta", target_delta)
    tol = check_positive("tolerance", tolerance)
    if target >= 1:
        return Bracket(0.0, 0.0)
    leak = _leak_bounds(dels)
    if leak[0] > target:
        return Bracket(math.inf, math.inf)
    eps = eps[eps > 0]
    if eps.size == 0:
        return Bracket(0.0, 0.0 if leak[1] <= target else math.inf)
    total = _sum_bracket(eps)
    if target == 0:
        return Bracket(total[0], total[1] if leak[1] <= target else math.inf)
    # states of P-mass below this cannot move the bracket (their total is ~1e-12 target)
    threshold = max(_MIN_THRESHOLD, target * 1e-12 / MAX_LATTICE_POINTS)
    exact = _exact_laws(eps, None, threshold)
    if exact is not None:
        return _epsilon_bracket(exact[0], exact[1], target, leak, total)

    def width_of(laws) -> float:
        bracket = _epsilon_bracket(laws[0], laws[1], target, leak, total)
        return bracket.upper - bracket.lower

    laws = _refine(eps, None, threshold, width_of, tol)
    return _epsilon_bracket(laws[0], laws[1], target, leak, total)


def heterogeneous_dp_delta_enumerated(epsilons, epsilon_g: float, deltas=None) -> float:
    """Optimal delta of adaptive heterogeneous DP composition by 2^k enumeration (reference).

    Theorem: [MV] Theorem 1.5 (composition.md §7.3), evaluated term by term over
    the 2^k outcomes of the product of randomized responses.
    Assumptions: adaptive composition, heterogeneous; at most 20 mechanisms with
    epsilon_i > 0 (epsilon_i = 0 ones are free); ``deltas[i]`` as in
    :func:`heterogeneous_dp_delta`; ``epsilon_g >= 0``.
    Guarantee: an upper bound on the optimum, and close to it: outcome
    probabilities are products (relative error (4k + 4) u, u = 2^-53, pushed up)
    and the float error of the summed losses (<= k u sum(eps)) is absorbed by
    evaluating the profile at epsilon_g minus that bound.
    Runtime: O(2^k) time and memory.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    leak = _leak_bounds(dels)
    eps = eps[eps > 0]
    if eps.size > MAX_ENUMERATION_K:
        raise ValueError(f"epsilons must have at most {MAX_ENUMERATION_K} positive entries "
                         f"for enumeration, got {eps.size}")
    if eps.size == 0 or _at_least_total(eps, eg):
        return leak[1]
    return _combine_up(leak[1], _enumerated_laws(eps)[0].value(eg))

"""Lattice and atom laws of the heterogeneous optimal-DP bracket (privacy-loss laws
for the upper end, statistic pairs for the lower end); see
:mod:`privloss.bounds.heterogeneous_dp` for the construction and the error model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privloss.bounds._recurrence import decayed_cumsum

#: Unit roundoff of IEEE double precision.
_U = 2.0 ** -53
#: Smallest positive double; bounds the absolute error of one underflowing operation.
_TINY = 5e-324
#: Entries of a lattice law evaluated at once (bounds the temporaries of long laws).
_CHUNK = 1 << 21


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
    A spectral (tilted) law adds exp(``tilt_log_error`` - ``tilt`` epsilon_g / step)
    to upper evaluations: its L1 error times the untilting factor at epsilon_g
    (:mod:`privloss.bounds._lattice_fft`); ``tilt >= 0``.
    """

    step: float
    offset: int
    stride: int
    mass: np.ndarray
    relative_error: float
    dropped: float
    absolute_error: float
    upward: bool
    tilt: float = 0.0
    tilt_log_error: float = -math.inf

    def _index(self) -> np.ndarray:
        return self.offset + self.stride * np.arange(self.mass.size, dtype=np.int64)

    def tilt_error(self, epsilon_g: float) -> float:
        """Additive error of a spectral law at epsilon_g (losses above it only)."""
        if self.tilt_log_error == -math.inf:
            return 0.0
        scaled = epsilon_g / self.step
        exponent = self.tilt_log_error - self.tilt * scaled
        exponent += 4 * _U * (abs(self.tilt_log_error) + abs(self.tilt * scaled)) + 1e-12
        return math.exp(min(exponent, 700.0))

    def _first_active(self, epsilon_g: float) -> int:
        """An index at or (a few entries) below the first loss above epsilon_g."""
        if not math.isfinite(epsilon_g):
            return self.mass.size if epsilon_g > 0 else 0
        position = (epsilon_g / self.step - self.offset) / self.stride
        return int(min(max(math.floor(position) - 4, 0), self.mass.size))

    def value(self, epsilon_g: float) -> float:
        """E_P[(1 - e^{epsilon_g - L})_+], rounded in the direction of the bound."""
        # entries far below epsilon_g are inactive (x < 0) and need not be formed;
        # long (spectral) laws are summed in chunks to bound the temporary memory
        raw, count, split_error = 0.0, 0, 0.0
        for begin in range(self._first_active(epsilon_g), self.mass.size, _CHUNK):
            chunk_raw, chunk_count, chunk_split = self._partial_value(
                epsilon_g, begin, min(begin + _CHUNK, self.mass.size))
            raw += chunk_raw
            count += chunk_count
            split_error += chunk_split
        # per term: mass rel. error + 2u (gap) + u (expm1) + u (product); a sum of
        # n non-negative terms in any order (chunks included): (n - 1) u.
        relative = self.relative_error + (count + 6) * _U
        if self.upward:
            return (raw * (1 + relative) + self.dropped + self.absolute_error + split_error
                    + self.tilt_error(epsilon_g))
        return max(0.0, raw * (1 - relative) - self.absolute_error - split_error)

    def _partial_value(self, epsilon_g: float, begin: int, end: int) -> tuple[float, int, float]:
        """(sum of the active terms, their number, split error) over entries [begin, end)."""
        mass = self.mass[begin:end]
        index = self.offset + self.stride * np.arange(begin, end, dtype=np.int64)
        x = _gaps(epsilon_g, index, self.step)
        active = x < 0
        terms = mass[active] * -np.expm1(x[active])
        raw = float(np.sum(terms))
        # with a long step, rounding index * low (and the subtraction before it)
        # moves x by <= 2u |index low|: a term by <= mass e^min(x,0) 2u |index low|,
        # including terms whose sign of x flipped (hence the margin)
        low = abs(_split(self.step)[1])
        split_error = 0.0
        if low > 0:
            moved = 2.02 * _U * low * np.abs(index)
            near = x < moved
            weights = mass[near] * np.exp(np.minimum(x[near], 0.0)) * moved[near]
            split_error = 1.01 * float(np.sum(weights))
        return raw, int(terms.size), split_error

    def root(self, level: float) -> float:
        """Approximately the smallest epsilon_g >= 0 with value(epsilon_g) <= level."""
        if not (self.upward and self.tilt_log_error > -math.inf):
            return self._root(level)
        # spectral law: also leave room for the summation error of value() ...
        level /= 1 + (self.mass.size + 8) * _U
        guess = self._root(level)
        if math.isfinite(guess):
            # ... and for the tilt error, which decreases in epsilon_g: solving with
            # it taken at the first guess gives a point where value() <= level
            better = self._root(level - self.tilt_error(guess))
            if math.isfinite(better):
                guess = better
        return guess

    def _root_start(self, level: float) -> int:
        """An entry below the root: value(l) >= (1 - e^-1) P(L > l + 1), so the root lies
        above l_t - 1 for the last t with P(L > l_t) > level / 0.63."""
        tail = np.cumsum(self.mass[::-1])[::-1]             # tail[t] = P(L >= l_t)
        above = np.flatnonzero(tail > level / 0.63)
        del tail
        if above.size == 0:
            return 0
        distance = int(math.ceil(1.0 / (self.step * self.stride))) + 4
        return max(0, int(above[-1]) - 1 - distance)

    def _root(self, level: float) -> float:
        if self.upward:
            level = ((level - self.dropped - self.absolute_error)
                     / (1 + self.relative_error + 8 * _U))
        else:
            level = (level + self.absolute_error) / (1 - self.relative_error - 8 * _U)
        if level < 0:
            return math.inf
        # long laws: work above an entry known to lie below the root (sums over the
        # entries above t are then unchanged); entry 0 found there means no cut
        begin = self._root_start(level) if self.mass.size > _CHUNK else 0
        if begin > 0:
            root = self._root_from(level, begin)
            if root is not None:
                return root
        return self._root_from(level, 0)

    def _root_from(self, level: float, begin: int) -> float | None:
        losses = (self.offset + self.stride * np.arange(begin, self.mass.size,
                                                        dtype=np.int64)) * self.step
        mass = self.mass[begin:]
        # tail[t] = P(L > l_t); tilt[t] = sum_{t' > t} P_t' e^{l_t - l_t'} (stable recursion)
        decay = math.exp(-self.stride * self.step)
        tail = np.concatenate([np.cumsum(mass[::-1])[::-1][1:], [0.0]])
        shifted = np.concatenate([mass[1:], [0.0]])[::-1]
        tilt = (decay * decayed_cumsum(shifted, decay))[::-1]
        at_points = tail - tilt                       # value at epsilon_g = l_t (approx.)
        candidates = np.flatnonzero((losses >= 0) & (at_points <= level))
        if candidates.size == 0:
            return float(losses[-1]) if losses[-1] > 0 else 0.0
        t = int(candidates[0])
        if t == 0 and begin > 0:
            return None
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
        return root_of_states(rho[order], self.p[kept][order], (log_p - rho)[order], level)


def root_of_states(rho: np.ndarray, p: np.ndarray, log_q: np.ndarray, level: float) -> float:
    """Smallest epsilon_g >= 0 with sum over states of [P - e^{epsilon_g} Q]_+ <= level,
    the states sorted by decreasing rho = log(P / Q) (``p`` the P-masses, ``log_q``
    the log Q-masses): with the first m states active the profile is
    A_m - e^{epsilon_g} B_m, found at the first breakpoint below ``level``."""
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

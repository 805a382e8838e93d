"""One side of a certified PLD bracket: a privacy-loss law on the grid h*Z.

A :class:`LossLaw` stores P-masses ``masses[i]`` at the loss values
``(start + i) * step``, a mass at ``+inf`` and two numbers that make it a
*certified* bound rather than an estimate:

* ``error``: an L1 bound on the distance (finite masses and the +inf atom)
  between the stored vector and a law ``W`` that is exactly valid;
* ``shift``: a loss displacement that is allowed for: the pessimistic law is
  valid after moving all its losses *up* by ``shift`` (delta_true(eps) <=
  delta_W(eps - shift)), the optimistic one after moving them *down*
  (delta_true(eps) >= delta_W(eps + shift)). Shifts add under composition.

"Valid" means, for every real eps (so for both the privacy profile and the
tradeoff curve):

* pessimistic (``pessimistic=True``): delta_true(eps) <= delta_W(eps), and this
  survives composition (W dominates the true pair in the sense of
  post-processing, or its losses are coupled pointwise above the true ones);
* optimistic: delta_true(eps) >= delta_W(eps + shift) and this survives
  composition (W is a post-processing of the true pair whose losses were moved
  down, shifts add up under composition).

delta is evaluated with the expectation form
``delta(eps) = P[L = inf] + sum_l P[L = l] (1 - e^{eps - l})_+``, which is
1-Lipschitz in L1 and non-decreasing in every loss value; so the certified
values are ``delta_W + error`` (pessimistic) and ``delta_W(eps + shift) - error``
(optimistic), with the float error of the sum itself pushed outward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privloss.bounds._recurrence import decayed_cumsum
from privloss.pld._convolve import UNIT_ROUNDOFF, convolve

#: Largest number of grid points a law may hold (memory guard: 8 bytes each).
MAX_GRID_POINTS = 40_000_000
#: Convolutions with at most this many output points run in long double: they are
#: cheap, and their error is multiplied by every later composition.
EXTENDED_PRECISION_MAX_POINTS = 1 << 15


class GridTooLargeError(MemoryError):
    """The composed law would exceed :data:`MAX_GRID_POINTS` grid points."""


def _sum_relative_error(count: int) -> float:
    """Relative error bound of a sum/recurrence of ``count`` non-negative terms."""
    return (3.0 * count + 16.0) * UNIT_ROUNDOFF


@dataclass(frozen=True, eq=False)
class LossLaw:
    """P-masses on the grid ``step * Z`` (one side of a bracket, one order of a pair)."""

    step: float
    start: int
    masses: np.ndarray
    infinity_mass: float
    error: float
    shift: float
    pessimistic: bool

    # ------------------------------------------------------------------
    # basic views
    # ------------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self.masses.size)

    def losses(self) -> np.ndarray:
        """The grid loss values of ``masses`` (floats, computed as (start+i)*step)."""
        return (self.start + np.arange(self.size, dtype=np.float64)) * self.step

    @property
    def total_mass(self) -> float:
        return float(self.masses.sum()) + self.infinity_mass

    # ------------------------------------------------------------------
    # composition
    # ------------------------------------------------------------------
    def _check_compatible(self, other: "LossLaw") -> None:
        if self.step != other.step:
            raise ValueError(f"cannot compose laws on different grids: step {self.step!r} vs {other.step!r}")
        if self.pessimistic != other.pessimistic:
            raise ValueError("cannot compose a pessimistic with an optimistic law")

    def compose(self, other: "LossLaw", tail_mass: float) -> "LossLaw":
        """Law of the sum of independent losses, then tails below ``tail_mass`` trimmed."""
        self._check_compatible(other)
        if self.size + other.size - 1 > MAX_GRID_POINTS:
            raise GridTooLargeError(f"composition needs {self.size + other.size - 1} grid points "
                                    f"(limit {MAX_GRID_POINTS}); use a coarser discretization")
        extended = self.size + other.size - 1 <= EXTENDED_PRECISION_MAX_POINTS
        if other is self:
            masses, conv_error = convolve(self.masses, self.masses, extended=extended)
        else:
            masses, conv_error = convolve(self.masses, other.masses, extended=extended)
        return self._combined(other, masses, conv_error, tail_mass)

    def _combined(self, other: "LossLaw", masses: np.ndarray, conv_error: float,
                  tail_mass: float) -> "LossLaw":
        p, q = self.infinity_mass, other.infinity_mass
        infinity = p + q - p * q
        infinity = min(1.0, infinity * (1 + 4 * UNIT_ROUNDOFF)) if self.pessimistic \
            else infinity * (1 - 4 * UNIT_ROUNDOFF)
        total_self = max(1.0, self.total_mass)
        total_other = max(1.0, other.total_mass)
        # stored = W + e with |e| <= error: conv(W1+e1, W2+e2) - conv(W1, W2) is at most
        # e1 |W2| + e2 |W1 + e1| in L1 (same for the +inf atom, which the totals include)
        error = (conv_error + self.error * total_other
                 + other.error * (total_self + self.error)) * (1 + 8 * UNIT_ROUNDOFF)
        law = LossLaw(self.step, self.start + other.start, masses, infinity, error,
                      self.shift + other.shift, self.pessimistic)
        # trimming never needs to be finer than the error already carried
        return law.trimmed(max(tail_mass, conv_error))

    def trimmed(self, tail_mass: float) -> "LossLaw":
        """Remove tails of stored mass at most ``tail_mass`` on each side, on the safe side.

        Pessimistic: the lower tail moves *up* to the first kept point and the
        upper tail to +inf (losses only increase). Optimistic: the lower tail is
        dropped (moved to -inf) and the upper tail moves *down* to the last kept
        point (losses only decrease). Either way the moved law is valid again,
        and the stored/valid L1 distance is unchanged.
        """
        m = self.masses
        if m.size <= 1:
            return self
        low = int(np.searchsorted(np.cumsum(m), tail_mass, side="right"))
        high = int(np.searchsorted(np.cumsum(m[::-1]), tail_mass, side="right"))
        low = min(low, m.size - 1)
        high = min(high, m.size - 1 - low)
        if low == 0 and high == 0:
            return self
        kept = m[low:m.size - high].copy()
        low_mass = float(m[:low].sum())
        high_mass = float(m[m.size - high:].sum())
        infinity = self.infinity_mass
        if self.pessimistic:
            kept[0] += low_mass
            infinity = min(1.0, infinity + high_mass * (1 + 4 * UNIT_ROUNDOFF))
        else:
            kept[-1] += high_mass
        return LossLaw(self.step, self.start + low, kept, infinity, self.error, self.shift,
                       self.pessimistic)

    def self_compose(self, count: int, tail_mass: float) -> "LossLaw":
        """``count``-fold composition by repeated squaring (O(log count) convolutions)."""
        result = None
        base = self
        remaining = int(count)
        while remaining:
            if remaining & 1:
                result = base if result is None else result.compose(base, tail_mass)
            remaining >>= 1
            if remaining:
                base = base.compose(base, tail_mass)
        return result

    # ------------------------------------------------------------------
    # privacy profile
    # ------------------------------------------------------------------
    def _grid_delta(self, epsilon: float) -> float:
        """delta_W(epsilon) of the stored law (no error terms), float."""
        losses = self.losses()
        above = losses > epsilon
        if not above.any():
            return self.infinity_mass
        terms = self.masses[above] * -np.expm1(epsilon - losses[above])
        return self.infinity_mass + float(terms.sum())

    def delta(self, epsilon: float) -> float:
        """Certified delta on this law's side (upper or lower bound), any real epsilon."""
        rel = _sum_relative_error(self.size)
        if self.pessimistic:
            value = self._grid_delta(epsilon - self.shift) * (1 + rel) + self.error
            return min(1.0, value)
        value = self._grid_delta(epsilon + self.shift) * (1 - rel) - self.error
        return max(0.0, value)

    def _profile_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(above, decayed, grid_delta) at every grid point j:

        above[j] = sum_{i>j} m_i, decayed[j] = sum_{i>j} m_i e^{(l_j - l_i)},
        grid_delta[j] = p_inf + above[j] - decayed[j] (via a cancellation-free recurrence).
        All three are sums of non-negative terms (relative error ~ 3 n u; the
        recurrences are solved in closed-form blocks, a few hundred u more). They
        only give the inversion's first guess, which is then certified by delta().
        """
        m = self.masses
        decay = math.exp(-self.step)
        factor = -math.expm1(-self.step)
        tail = np.concatenate(([0.0], np.cumsum(m[::-1])[:-1]))     # tail[t] = sum of last t masses
        above = tail[::-1]                                            # above[j] = sum_{i>j} m_i
        # S_{j-1} = e^{-h} S_j + (1 - e^{-h}) above_{j-1}, run from the top
        s_rev = decayed_cumsum(factor * tail, decay)
        # D_{j-1} = e^{-h} (m_j + D_j)
        shifted = np.concatenate(([0.0], m[::-1][:-1])) * decay
        d_rev = decayed_cumsum(shifted, decay)
        return above, d_rev[::-1], self.infinity_mass + s_rev[::-1]

    def _grid_epsilon(self, target: float) -> float:
        """Smallest real e with delta_W(e) <= target (may be -inf or +inf)."""
        if target < self.infinity_mass:
            return math.inf
        if self.size == 0:
            return -math.inf
        above, decayed, grid_delta = self._profile_tables()
        losses = self.losses()
        index = int(np.argmax(grid_delta <= target))     # grid_delta[-1] = p_inf <= target
        if index == 0:
            total = float(self.masses.sum())
            numerator = self.infinity_mass + total - target
            if numerator <= 0:
                return -math.inf
            base = float(self.masses[0] + decayed[0])
            return float(losses[0] + math.log(numerator / base))
        numerator = self.infinity_mass + float(above[index - 1]) - target
        base = float(decayed[index - 1])
        low, high = float(losses[index - 1]), float(losses[index])
        if base <= 0 or numerator <= 0:
            return high
        return min(max(low + math.log(numerator / base), low), high)

    def epsilon(self, delta: float) -> float:
        """Certified epsilon(delta) >= 0 on this law's side (upper or lower bound)."""
        rel = _sum_relative_error(self.size)
        if self.pessimistic:
            target = (delta - self.error) / (1 + rel)
            if target < 0:
                return math.inf
            guess = self._grid_epsilon(target)
            if math.isinf(guess):
                return 0.0 if guess < 0 else math.inf
            return self._certify_upper(max(guess + self.shift, 0.0), delta)
        target = (delta + self.error) / (1 - rel)
        guess = self._grid_epsilon(target)
        if math.isinf(guess):
            return 0.0 if guess < 0 else math.inf
        return self._certify_lower(guess - self.shift, delta)

    def _certify_upper(self, epsilon: float, delta: float) -> float:
        """Nudge up until the certified delta confirms ``delta(epsilon) <= delta``."""
        if self.delta(epsilon) <= delta:
            return epsilon
        step = max(abs(epsilon), 1.0) * 1e-13
        for _ in range(80):
            candidate = epsilon + step
            if self.delta(candidate) <= delta:
                return candidate
            step *= 4.0
        return math.inf

    def _certify_lower(self, epsilon: float, delta: float) -> float:
        """Nudge down until the certified lower delta exceeds ``delta`` there (or reach 0)."""
        if epsilon <= 0:
            return 0.0
        if self.delta(epsilon) > delta:
            return epsilon
        step = max(abs(epsilon), 1.0) * 1e-13
        for _ in range(80):
            candidate = epsilon - step
            if candidate <= 0:
                return 0.0
            if self.delta(candidate) > delta:
                return candidate
            step *= 4.0
        return 0.0

    # ------------------------------------------------------------------
    # tradeoff vertices
    # ------------------------------------------------------------------
    def tradeoff_vertices(self) -> tuple[np.ndarray, np.ndarray]:
        """Vertices (alpha_j, beta_j) of sup_s e^{-s} (1 - alpha - delta_W(s)).

        alpha_j = 1 - p_inf - sum_{i>j} m_i (mass at or below l_j, including any
        dropped mass), beta_j = sum_{i>j} m_i e^{-l_i} (the implied Q-mass above
        l_j), for j = -1 (below the grid) .. n-1; computed in log space.
        Error and shift are *not* applied here (see privloss.fdp.convert).
        """
        m = self.masses
        losses = self.losses()
        with np.errstate(divide="ignore"):
            log_q = np.log(m) - losses
        # beta_j over j = -1..n-1: reverse cumulative logsumexp of log_q[j+1:]
        rev = np.logaddexp.accumulate(log_q[::-1])[::-1]        # rev[j] = log sum_{i>=j}
        log_beta = np.concatenate((rev, [-np.inf]))             # index j+1 -> sum_{i>j}
        above = np.concatenate((np.cumsum(m[::-1])[::-1], [0.0]))
        alpha = 1.0 - self.infinity_mass - above
        beta = np.exp(log_beta)
        return np.clip(alpha, 0.0, 1.0), beta

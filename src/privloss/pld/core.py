"""Certified numerical privacy-loss distributions (PLDs).

Definition
    For a neighbouring pair with output laws P = M(D), Q = M(D'), the privacy
    loss is L = log(P/Q) and the PLD is the law of L under P (a measure on
    R u {+inf}). Its privacy profile is the hockey-stick divergence
    delta_{P||Q}(eps) = E[(1 - e^{eps - L})_+] (mass at +inf counts fully).
    Composition of mechanisms adds independent losses, so PLDs convolve.
    Differential privacy quantifies over both orders of every neighbouring
    pair, so an asymmetric mechanism carries the PLD of (P, Q) and of (Q, P)
    (docs/fdp.md, spec fdp.md §7); answers are the max over the two orders.

:class:`PrivacyLossDistribution` holds, for each order, a pessimistic and an
optimistic discretised law on the grid ``step * Z`` (see ``_discretize`` and
``_law``), so every answer is a certified :class:`~privloss.bounds.Bracket`:
``lower <= true value <= upper``. Composition is by FFT, self-composition by
repeated squaring; tails below ``tail_mass`` are trimmed on the safe side and
FFT round-off is bounded a priori and added outward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privloss.bounds._numeric import Bracket, check_count, check_nonnegative, check_probability
from privloss.pld._discretize import optimistic_law, pessimistic_law
from privloss.pld._law import LossLaw
from privloss.pld._spec import LossSpec

#: Default grid step of the loss axis. The bracket width scales like step^2
#: per composed mechanism for smooth PLDs (connect-the-dots / merge-and-shift).
DEFAULT_STEP = 1e-3
#: Default mass that may be cut from each tail at each step (moved to the safe side).
DEFAULT_TAIL_MASS = 1e-15


def check_step(step) -> float:
    """Validate a grid step (a positive finite float, at most 1)."""
    value = check_nonnegative("step", step)
    if value <= 0 or value > 1:
        raise ValueError(f"step must be in (0, 1], got {step!r}")
    return value


def check_tail_mass(tail_mass) -> float:
    value = check_probability("tail_mass", tail_mass)
    if value <= 0 or value > 1e-3:
        raise ValueError(f"tail_mass must be in (0, 1e-3], got {tail_mass!r}")
    return value


@dataclass(frozen=True)
class _Order:
    """Both sides of the bracket for one order of the pair."""

    upper: LossLaw
    lower: LossLaw

    def compose(self, other: "_Order", tail_mass: float) -> "_Order":
        return _Order(self.upper.compose(other.upper, tail_mass),
                      self.lower.compose(other.lower, tail_mass))

    def self_compose(self, count: int, tail_mass: float) -> "_Order":
        return _Order(self.upper.self_compose(count, tail_mass),
                      self.lower.self_compose(count, tail_mass))


class PrivacyLossDistribution:
    """Certified bracket around the PLD of a mechanism (or composition).

    Definition
        See the module docstring. ``forward`` is the order (P, Q) = (M(D), M(D'))
        as given by the constructor; ``reverse`` is (Q, P), or ``None`` when the
        pair is symmetric (same PLD both ways).
    Privacy guarantee
        ``delta(eps)`` and ``epsilon(delta)`` return ``Bracket(lower, upper)``
        with lower <= exact value <= upper for the represented pair(s); the
        accountant must charge ``upper``. Valid for adaptive composition when
        every component is a dominating pair of its mechanism (all constructors
        in :mod:`privloss.pld.mechanisms` are, except where documented).
    Citation
        Koskela, Jälkö, Honkela (AISTATS 2020) FFT accountant; Doroshenko et al.
        (PETS 2022) connect-the-dots; Canonne–Kamath–Steinke (the PLD form of
        delta); spec fdp.md §8.
    Runtime
        Composition O(n log n) in the number n of grid points; n ~ (loss range)
        / step after tail trimming.
    """

    def __init__(self, forward: _Order, reverse: _Order | None = None, *,
                 tail_mass: float = DEFAULT_TAIL_MASS, description: str = ""):
        self._forward = forward
        self._reverse = reverse
        self._tail_mass = tail_mass
        self.description = description

    # ------------------------------------------------------------------
    # construction
    # ------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: LossSpec, reverse_spec: LossSpec | None = None, *,
                  step: float = DEFAULT_STEP, tail_mass: float = DEFAULT_TAIL_MASS,
                  description: str = "") -> "PrivacyLossDistribution":
        """Discretise exact loss laws (``reverse_spec=None``: the pair is symmetric)."""
        step = check_step(step)
        tail_mass = check_tail_mass(tail_mass)
        forward = _Order(pessimistic_law(spec, step), optimistic_law(spec, step))
        reverse = None
        if reverse_spec is not None:
            reverse = _Order(pessimistic_law(reverse_spec, step), optimistic_law(reverse_spec, step))
        return cls(forward, reverse, tail_mass=tail_mass, description=description)

    @classmethod
    def identity(cls, *, step: float = DEFAULT_STEP) -> "PrivacyLossDistribution":
        """The PLD of a mechanism that reveals nothing (loss 0 with probability 1)."""
        return cls.from_spec(LossSpec(np.array([0.0]), np.array([1.0])), step=step, description="identity")

    # ------------------------------------------------------------------
    # properties
    # ------------------------------------------------------------------
    @property
    def step(self) -> float:
        return self._forward.upper.step

    @property
    def tail_mass(self) -> float:
        return self._tail_mass

    @property
    def symmetric(self) -> bool:
        """True when one PLD describes both orders of the pair."""
        return self._reverse is None

    def orders(self) -> list[tuple[str, LossLaw, LossLaw]]:
        """[(name, pessimistic law, optimistic law)] for each distinct order."""
        result = [("forward", self._forward.upper, self._forward.lower)]
        if self._reverse is not None:
            result.append(("reverse", self._reverse.upper, self._reverse.lower))
        return result

    @property
    def grid_points(self) -> int:
        """Largest number of grid points held by any of the laws (memory ~ 8 bytes each)."""
        return max(max(upper.size, lower.size) for _, upper, lower in self.orders())

    def reversed(self) -> "PrivacyLossDistribution":
        """The same mechanism with the roles of D and D' exchanged."""
        if self._reverse is None:
            return self
        return PrivacyLossDistribution(self._reverse, self._forward, tail_mass=self._tail_mass,
                                       description=self.description)

    # ------------------------------------------------------------------
    # composition
    # ------------------------------------------------------------------
    def compose(self, other: "PrivacyLossDistribution") -> "PrivacyLossDistribution":
        """PLD of running both mechanisms on the same pair of neighbours.

        Orders are composed order by order ((P1 x P2, Q1 x Q2) and its reverse);
        a symmetric factor contributes its single law to both.
        """
        if not isinstance(other, PrivacyLossDistribution):
            raise TypeError(f"other must be a PrivacyLossDistribution, got {type(other).__name__}")
        if other.step != self.step:
            raise ValueError(f"cannot compose PLDs with different steps: {self.step!r} and {other.step!r}")
        tail = max(self._tail_mass, other._tail_mass)
        forward = self._forward.compose(other._forward, tail)
        reverse = None
        if self._reverse is not None or other._reverse is not None:
            mine = self._reverse if self._reverse is not None else self._forward
            theirs = other._reverse if other._reverse is not None else other._forward
            reverse = mine.compose(theirs, tail)
        description = " + ".join(part for part in (self.description, other.description) if part)
        return PrivacyLossDistribution(forward, reverse, tail_mass=tail, description=description)

    def self_compose(self, count: int) -> "PrivacyLossDistribution":
        """``count``-fold composition with itself (repeated squaring)."""
        count = check_count("count", count)
        if count == 1:
            return self
        forward = self._forward.self_compose(count, self._tail_mass)
        reverse = None if self._reverse is None else self._reverse.self_compose(count, self._tail_mass)
        description = f"{count} x ({self.description})" if self.description else ""
        return PrivacyLossDistribution(forward, reverse, tail_mass=self._tail_mass,
                                       description=description)

    # ------------------------------------------------------------------
    # answers
    # ------------------------------------------------------------------
    def delta(self, epsilon: float) -> Bracket:
        """Certified bracket on delta(epsilon) = max over orders of delta_{P||Q}(epsilon).

        ``epsilon`` may be any real number >= 0 (or inf, giving the mass at +inf).
        """
        eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
        if math.isinf(eps):
            lows = [lower.infinity_mass for _, _, lower in self.orders()]
            highs = [min(1.0, upper.infinity_mass + upper.error) for _, upper, _ in self.orders()]
            return Bracket(max(lows), max(highs))
        lows, highs = [], []
        for _, upper, lower in self.orders():
            lows.append(lower.delta(eps))
            highs.append(upper.delta(eps))
        return Bracket(max(lows), max(highs))

    def delta_profile(self, epsilon: float) -> list[tuple[str, Bracket]]:
        """delta(epsilon) per order (any real epsilon, negative allowed): [(order, Bracket)]."""
        eps = float(epsilon)
        if math.isnan(eps):
            raise ValueError(f"epsilon must be a real number, got {epsilon!r}")
        return [(name, Bracket(lower.delta(eps), upper.delta(eps)))
                for name, upper, lower in self.orders()]

    def epsilon(self, delta: float) -> Bracket:
        """Certified bracket on the smallest epsilon >= 0 with delta(epsilon) <= ``delta``.

        ``upper`` is ``inf`` when no finite epsilon works (delta below the mass at
        +inf plus the certified error).
        """
        target = check_probability("delta", delta)
        lows, highs = [], []
        for _, upper, lower in self.orders():
            lows.append(lower.epsilon(target))
            highs.append(upper.epsilon(target))
        return Bracket(max(lows), max(highs))

    def __repr__(self) -> str:
        kind = "symmetric" if self.symmetric else "asymmetric"
        return (f"PrivacyLossDistribution({self.description or 'unnamed'}; {kind}, step={self.step:g}, "
                f"{self.grid_points} grid points)")


"""Privacy odometer: a running epsilon, valid at every time at once, for releases
chosen fully adaptively and without any budget fixed in advance.

Construction (Rogers, Roth, Ullman, Vadhan 2016, section 5, odometers from
filters; Lecuyer 2021, Renyi odometers from a sequence of filters; Whitehouse,
Ramdas, Rogers, Wu 2023, section 5): a fixed infinite grid of filters
F_j = (epsilon_j, delta_j), epsilon_j = epsilon_min * ratio^j and
delta_j = delta / ((j + 1)(j + 2)) (so sum_j delta_j = delta), each with the
filter policy of :func:`privloss.accounting.fully_adaptive.default_policy`.
The odometer runs every release (it refuses nothing) and reads

    epsilon(t) = min { epsilon_j : filter j admits all releases up to t }.

Proof (docs/accounting.md, "Privacy odometer"): let V_j be the view up to the
first release filter j would refuse. V_j is the view of an analyst who plays
against filter j and stops at its first refusal (a post-processing of the
interaction with the filter), so V_j is (epsilon_j, delta_j)-DP by the filter
theorem. For events E_j of V_j, a union bound gives

    P_D(some V_j in E_j) <= sum_j e^{epsilon_j} P_D'(V_j in E_j) + delta

simultaneously for all j, in particular for the events "the odometer reads
epsilon_j at the stopping time and the transcript is in E": the whole
transcript V stopped at any (data-dependent) time satisfies
sum_v [P_D(v) - e^{epsilon(v)} P_D'(v)]_+ <= delta (tested by exact enumeration
in tests/filters/test_odometer.py). While every release is pure (delta 0 of
its own), the reading is also at most the exact sum of the epsilons (basic
composition bounds every transcript's loss pointwise, at no delta); with
delta = 0 that sum is the reading.
"""

from __future__ import annotations

import math
import threading

from privloss._exact import sum_upper
from privloss.accounting.fully_adaptive import (FilterPolicy, ReleaseGuarantee, check,
                                                default_policy, release_guarantee)
from privloss.bounds._numeric import check_positive, check_probability

__all__ = ["PrivacyOdometer"]

#: levels beyond this index are not searched (epsilon_min * ratio^MAX_LEVEL is huge)
MAX_LEVEL = 4096


class PrivacyOdometer:
    """A running (epsilon, delta) guarantee for releases chosen fully adaptively.

    Definition
        ``PrivacyOdometer(delta)``; :meth:`spend` records one release (an event or
        a sequence of events whose parameters the query fixed before it ran) and
        never refuses; :attr:`epsilon` is the smallest grid level
        epsilon_j = epsilon_min * ratio^j whose filter, with delta_j =
        delta / ((j + 1)(j + 2)), admits every release so far (inf if none: e.g.
        a non-private release). With ``delta = 0``: the exact sum of the releases'
        pure epsilons (inf if a release has none).
    Privacy guarantee
        Valid at every time at once, with mechanisms, parameters and the number
        of releases chosen from earlier outputs: for every stopping time T,
        sum over transcripts v of [P_D(v) - e^{epsilon(v)} P_D'(v)]_+ <= delta,
        where epsilon(v) is the odometer's reading at T (and the same with D, D'
        exchanged). The releases made while the reading is at most epsilon_j are
        (epsilon_j, delta_j)-DP.
    Citation
        Rogers, Roth, Ullman, Vadhan 2016 (arXiv:1605.08294), odometers from
        filters; Lecuyer 2021 ("Practical privacy filters and odometers with
        Renyi differential privacy"), the grid of filters with delta split;
        Whitehouse, Ramdas, Rogers, Wu 2023 (ICML), fully adaptive odometers.
        The filters: :mod:`privloss.accounting.fully_adaptive`.
    Runtime
        one release guarantee per spend; the reading only rises, so each spend
        checks the current level (O(n)) and moves up the grid as needed.
    """

    def __init__(self, delta: float, *, epsilon_min: float = 2.0 ** -10,
                 ratio: float = 2.0 ** 0.125):
        self._delta = check_probability("delta", delta, closed_upper=False)
        self._epsilon_min = check_positive("epsilon_min", epsilon_min)
        self._ratio = check_positive("ratio", ratio)
        if not self._ratio > 1:
            raise ValueError(f"ratio must be in (1, inf), got {ratio!r}")
        self._lock = threading.Lock()
        self._guarantees: list[ReleaseGuarantee] = []
        self._level = 0
        self._policies: dict[int, FilterPolicy] = {}

    # ---- the grid --------------------------------------------------------------
    def level_epsilon(self, level: int) -> float:
        """epsilon_j of grid level j."""
        return self._epsilon_min * self._ratio ** level

    def level_delta(self, level: int) -> float:
        """delta_j = delta / ((j + 1)(j + 2)): the levels' deltas sum to delta."""
        return self._delta / ((level + 1) * (level + 2))

    def policy(self, level: int) -> FilterPolicy:
        if level not in self._policies:
            self._policies[level] = default_policy(self.level_epsilon(level), self.level_delta(level))
        return self._policies[level]

    # ---- state -------------------------------------------------------------------
    @property
    def delta(self) -> float:
        return self._delta

    @property
    def guarantees(self) -> tuple:
        return tuple(self._guarantees)

    @property
    def epsilon(self) -> float:
        """The running epsilon (0 before any release)."""
        with self._lock:
            return self._reading()

    @property
    def level(self) -> int | None:
        """The lowest grid level that admits the history (None when delta = 0 or no
        level admits); the reading is its epsilon, or the pure sum if smaller."""
        with self._lock:
            if self._delta == 0 or self._level > MAX_LEVEL:
                return None
            return self._level

    def __repr__(self) -> str:
        return (f"PrivacyOdometer(delta={self._delta:g}, releases={len(self._guarantees)}, "
                f"epsilon={self.epsilon:.6g})")

    # ---- accounting ----------------------------------------------------------------
    def _reading(self) -> float:
        if not self._guarantees:
            return 0.0
        pure = [guarantee.pure_epsilon for guarantee in self._guarantees]
        basic = sum_upper(pure) if all(map(math.isfinite, pure)) else math.inf
        if self._delta == 0 or self._level > MAX_LEVEL:
            return basic
        # pure releases only: the loss of every transcript is at most the sum of the
        # epsilons (pointwise, no delta), so the smaller of the two readings is valid
        return min(basic, self.level_epsilon(self._level))

    def _advance(self) -> None:
        """Move to the lowest level that admits the history: levels below the current
        one refused a prefix and refuse every extension (the rules only grow)."""
        self._level = self._lowest_level(self._guarantees, self._level)

    def _lowest_level(self, guarantees, level: int) -> int:
        """The lowest level from ``level`` up whose filter admits ``guarantees`` (a
        sequence or a filter table); MAX_LEVEL + 1 if none does."""
        if self._delta == 0:
            return level
        while level <= MAX_LEVEL:
            status = check(self.policy(level), guarantees)
            if status.admitted:
                return level
            if status.rule == "delta-cap" or not math.isfinite(status.spent_epsilon):
                # the releases' deltas exceed this level's cap, and the caps only shrink
                # up the grid; or no rule certifies any epsilon: no level admits
                return MAX_LEVEL + 1
            level += 1
        return level

    def reading_of(self, table, level: int = 0) -> tuple[float, int | None]:
        """The reading of this odometer's grid for a whole history given at once
        (a :class:`privloss.accounting.fully_adaptive.filters.Table` of its release
        guarantees, e.g. a ledger's running one) and the lowest level that admits it
        (None when none does, or delta = 0), searching the grid from ``level``
        (a level known to refuse a prefix of the history, or 0). The same reading
        as :meth:`spend` after each of those releases in turn."""
        if table.size == 0:
            return 0.0, None
        basic = math.inf if table.positive("delta") else table.total("epsilon")
        level = self._lowest_level(table, level)
        if self._delta == 0 or level > MAX_LEVEL:
            return basic, None
        return min(basic, self.level_epsilon(level)), level

    def spend(self, release) -> float:
        """Record one release and return the new running epsilon (never refuses).

        Invalid events raise before any state change (the accountant's errors).
        """
        guarantee = release_guarantee(release)          # validates first
        with self._lock:
            self._guarantees.append(guarantee)
            self._advance()
            return self._reading()

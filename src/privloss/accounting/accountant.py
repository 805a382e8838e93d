"""The accountant: evaluate every bound that applies and report the tightest.

Every bound in :mod:`privloss.accounting.candidates` is a valid upper bound
under its stated assumptions, so the minimum over the applicable ones (all at
the same target) is valid too (composition.md §9). A bound that is the exact
optimum for the profile (:mod:`privloss.accounting.exact_optima`) ends the search:
no valid bound is below it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from privloss.accounting.candidates import CANDIDATES, Candidate
from privloss.accounting.profile import Profile, flatten
from privloss.bounds._numeric import Bracket, check_nonnegative, check_probability
from privloss.events import Composed, Event, Interaction


@dataclass(frozen=True)
class BoundResult:
    """One bound's answer: ``value`` is an epsilon or a delta (None if it does not apply)."""

    name: str
    theorem: str
    applies: bool
    value: float | None
    reason: str
    #: certified lower end of the optimum, for bounds that compute a bracket
    lower: float | None = None


@dataclass(frozen=True)
class AccountingResult:
    """The tightest valid answer and every bound's value.

    ``target`` is ``"delta"`` (then ``value`` is the epsilon spent at
    ``target_value``) or ``"epsilon"`` (then ``value`` is the delta).
    """

    target: str
    target_value: float
    value: float
    bound: str
    bounds: tuple[BoundResult, ...] = field(default=())

    def __repr__(self) -> str:
        applied = sum(1 for row in self.bounds if row.applies)
        return (f"AccountingResult(epsilon={self.epsilon:.6g}, delta={self.delta:.6g}, "
                f"bound={self.bound!r}, {applied} of {len(self.bounds)} bounds applied)")

    @property
    def epsilon(self) -> float:
        return self.value if self.target == "delta" else self.target_value

    @property
    def delta(self) -> float:
        return self.target_value if self.target == "delta" else self.value

    def to_dict(self) -> dict:
        """The CLI's ``--json`` object."""
        measured = "epsilon" if self.target == "delta" else "delta"
        rows = []
        for b in self.bounds:
            row = {"name": b.name, measured: b.value, "applies": b.applies, "reason": b.reason}
            if b.lower is not None:
                row[f"{measured}_lower"] = b.lower
            rows.append(row)
        return {f"target_{self.target}": self.target_value, measured: self.value,
                "bound": self.bound, "bounds": rows}


def _sorted(rows: list[BoundResult]) -> tuple[BoundResult, ...]:
    def key(row: BoundResult):
        return (not row.applies, math.inf if row.value is None else row.value, row.name)
    return tuple(sorted(rows, key=key))


_NOT_PROVEN = {
    Interaction.FULLY_ADAPTIVE: "not a filter theorem: needs the privacy parameters fixed in advance",
    Interaction.SETWISE: "not proven set-wise: needs the order of parameters fixed in advance",
    Interaction.ADAPTIVE: "needs a non-adaptive interaction (mechanisms fixed in advance)",
}


def _out_of_range_errors() -> tuple[type[BaseException], ...]:
    """What a bound raises when its arithmetic cannot represent the parameters. Read
    when an exception is being matched: GridTooLargeError can only come from the PLD
    package, and looking it up in sys.modules keeps that package off the import path
    of the accountant (issue 12 item 8)."""
    law = sys.modules.get("privloss.pld._law")
    return (OverflowError,) if law is None else (OverflowError, law.GridTooLargeError)


def _answer(candidate: Candidate, profile: Profile, target: str,
            target_value: float) -> BoundResult:
    """One applicable candidate's row (its bound evaluated at the target)."""
    compute = candidate.epsilon if target == "delta" else candidate.delta
    try:
        answer = compute(profile, target_value)
    except _out_of_range_errors() as error:
        # this bound's arithmetic cannot represent the parameters (e.g. epsilon ~ 1e6);
        # dropping it is safe: every other row is a valid bound on its own
        return BoundResult(candidate.name, candidate.theorem, False, None,
                           f"out of its numeric range ({error})")
    lower = None
    if isinstance(answer, Bracket):          # charge the certified upper end
        answer, lower = answer.upper, float(answer.lower)
    value = float(answer)
    if math.isnan(value):       # never let NaN through as an answer
        value = math.inf if target == "delta" else 1.0
    return BoundResult(candidate.name, candidate.theorem, True, value, "applies", lower)


def _settled_by(candidate: Candidate, row: BoundResult, profile: Profile,
                interaction: Interaction, target: str) -> str | None:
    """Why no other bound need be evaluated after ``row``, or None: the candidate is an
    exact optimum for this profile (``Candidate.exact_when``) and gave a usable answer
    (a finite epsilon, a delta below 1; else the others may still do better numerically)."""
    exact_when = getattr(candidate, "exact_when", None)
    if exact_when is None or not row.applies:
        return None
    if not (math.isfinite(row.value) if target == "delta" else row.value < 1.0):
        return None
    statement = exact_when(profile, interaction)
    if statement is None:
        return None
    return (f"not evaluated: {candidate.name} is the exact optimum here ({statement}); "
            f"no valid bound is lower")


def _evaluate(profile: Profile, interaction: Interaction, target: str, target_value: float,
              candidates: tuple[Candidate, ...], stop_at: float | None = None) -> AccountingResult:
    if profile.has_non_private:
        worst = math.inf if target == "delta" else 1.0
        return AccountingResult(target, target_value, worst, "non-private", ())
    if profile.is_empty:
        return AccountingResult(target, target_value, 0.0, "empty", ())
    rows: list[BoundResult] = []
    settled: str | None = None
    # candidates that may be exact optima first: once one has answered, no other bound
    # can be lower (beyond its rounding), so none is evaluated (exact_optima.py); the
    # table is sorted by value below, so this order does not show
    ordered_candidates = sorted(candidates, key=lambda c: getattr(c, "exact_when", None) is None)
    for candidate in ordered_candidates:
        models = getattr(candidate, "models", ())
        if interaction not in models:
            rows.append(BoundResult(candidate.name, candidate.theorem, False, None,
                                    _NOT_PROVEN.get(interaction, "not proven for this interaction")))
            continue
        reason = candidate.why_not(profile, interaction)
        if reason is None and settled is not None:
            reason = settled
        if reason is not None:
            rows.append(BoundResult(candidate.name, candidate.theorem, False, None, reason))
            continue
        row = _answer(candidate, profile, target, target_value)
        rows.append(row)
        if stop_at is not None and row.applies and row.value <= stop_at:
            # a valid bound at or below stop_at: so is the minimum (meets_epsilon)
            return AccountingResult(target, target_value, row.value, row.name, tuple(rows))
        settled = _settled_by(candidate, row, profile, interaction, target)
    ordered = _sorted(rows)
    best = next((row for row in ordered if row.applies), None)
    if best is None:
        worst = math.inf if target == "delta" else 1.0
        return AccountingResult(target, target_value, worst, "none", ordered)
    return AccountingResult(target, target_value, best.value, best.name, ordered)


def meets_epsilon(events, target_epsilon: float, target_delta: float, interaction,
                  candidates: tuple[Candidate, ...] = CANDIDATES) -> bool:
    """Whether the tightest valid epsilon of ``events`` at ``target_delta`` (the
    :class:`PrivacyAccountant`'s answer over ``candidates``) is at most
    ``target_epsilon``, evaluating no more bounds than it needs: the minimum
    is at most the target exactly when one valid bound is, so the bounds are
    evaluated in the accountant's order (exact optima first, then
    ``candidates``' order) up to the first at or below the target; a "no"
    evaluates them all, as the accountant does.  Used by calibration
    searches, which need only this comparison."""
    delta = check_probability("target_delta", target_delta)
    result = _evaluate(Profile.of(events), Interaction.parse(interaction), "delta", delta,
                       tuple(candidates), stop_at=target_epsilon)
    return result.value <= target_epsilon


def epsilon_of_profile(profile: Profile, interaction: Interaction, target_delta: float,
                       candidates: tuple[Candidate, ...] = CANDIDATES) -> AccountingResult:
    """Tightest valid epsilon of an already flattened profile (used by the filter)."""
    delta = check_probability("target_delta", target_delta)
    return _evaluate(profile, Interaction.parse(interaction), "delta", delta, tuple(candidates))


class PrivacyAccountant:
    """Accumulates events and answers with the tightest valid bound.

    Definition: the events are composed under ``interaction``
    (:class:`~privloss.events.Interaction`; default ``adaptive``, the safe one
    among the three models of the main document). Only candidates whose
    ``models`` include the interaction are evaluated; under ``fully-adaptive``
    these are filter rules and the answer is the smallest budget that one rule,
    fixed before the first event, would need (docs/accounting.md).
    Guarantee: :meth:`epsilon` returns the minimum, over every bound whose
    assumptions hold, of that bound's epsilon at the target delta; each bound
    is a valid upper bound, so the minimum is one too. :meth:`delta` likewise.
    When a bound that is the exact optimum for the profile has answered (equal
    (epsilon, delta)-DP events: Theorem 1; equal-epsilon BR mixes where Theorems
    2, 3 apply; Gaussians only: exact GDP), the others are not evaluated (their
    rows say so): none can be lower, beyond the optimum's outward rounding.
    Runtime: dominated by the exact bounds (O(k) to O(k^2) for k mechanisms;
    the exact adaptive recursion only for up to six mechanisms).
    """

    def __init__(self, events=(), *, interaction: Interaction | str = Interaction.ADAPTIVE,
                 candidates: tuple[Candidate, ...] = CANDIDATES):
        self._interaction = Interaction.parse(interaction)
        self._candidates = tuple(candidates)
        self._profile = Profile.of(events)

    @property
    def interaction(self) -> Interaction:
        return self._interaction

    @property
    def profile(self) -> Profile:
        return self._profile

    def compose(self, event: Event, count: int = 1) -> "PrivacyAccountant":
        """Add ``event`` (``count`` times). Validates before changing any state."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be an integer >= 1, got {count!r}")
        if isinstance(event, Composed):
            added = flatten((event,) * count)         # keeps the order A, B, A, B
        else:
            added = tuple((atom, n * count) for atom, n in flatten(event))
        self._profile = Profile(self._profile.atoms + added)
        return self

    def epsilon(self, target_delta: float) -> AccountingResult:
        """Smallest valid epsilon at ``target_delta`` and the table of all bounds."""
        delta = check_probability("target_delta", target_delta)
        return _evaluate(self._profile, self._interaction, "delta", delta, self._candidates)

    def delta(self, target_epsilon: float) -> AccountingResult:
        """Smallest valid delta at ``target_epsilon`` and the table of all bounds."""
        epsilon = check_nonnegative("target_epsilon", target_epsilon)
        return _evaluate(self._profile, self._interaction, "epsilon", epsilon, self._candidates)

    def get_epsilon(self, target_delta: float) -> float:
        return self.epsilon(target_delta).value

    def get_delta(self, target_epsilon: float) -> float:
        return self.delta(target_epsilon).value


#: the most equal (epsilon, delta)-DP events compose() answers beyond the array limit
#: of a Profile (Theorem 1 over O(sqrt k) terms: about 5e6 terms and 0.2 GB at 10^10)
MAX_HOMOGENEOUS = 10 ** 10


def _theorem1_at_scale(events, interaction: Interaction, target_delta, target_epsilon):
    """Issue 23 item 3: k equal PureDP / ApproxDP events beyond the Profile's array limit
    (``MAX_MECHANISMS``), under a fixed-parameter model: [CR] Thm 1 is the exact
    optimum (privloss.accounting.exact_optima.exact_theorem1), evaluated over a window
    of O(sqrt k) terms, so no other bound is needed and no array of length k is built.
    None for anything else (the accountant answers, or refuses beyond its limit)."""
    from privloss.accounting.profile import MAX_MECHANISMS
    from privloss.events import ApproxDP, PureDP

    if interaction is Interaction.FULLY_ADAPTIVE:
        return None
    atoms = flatten(events)
    total = sum(count for _, count in atoms)
    if not MAX_MECHANISMS < total <= MAX_HOMOGENEOUS:
        return None
    kinds = {(type(event), event.epsilon, getattr(event, "delta", 0.0)) for event, _ in atoms
             if type(event) in (PureDP, ApproxDP)}
    if len(kinds) != 1 or any(type(event) not in (PureDP, ApproxDP) for event, _ in atoms):
        return None
    ((_, epsilon, delta0),) = kinds
    from privloss.bounds.optimal_dp import optimal_dp_delta, optimal_dp_epsilon

    theorem = "optimal homogeneous DP composition [CR] Thm 1 = [KOV] Thm 3.3"
    reason = (f"applies; the exact optimum for {total:,} equal events (windowed sum with a "
              f"certified tail bound); no other bound evaluated")
    if target_delta is not None:
        delta = check_probability("target_delta", target_delta)
        value = optimal_dp_epsilon(total, epsilon, delta, delta0=delta0)
        row = BoundResult("optimal-dp", theorem, True, value, reason)
        return AccountingResult("delta", delta, value, "optimal-dp", (row,))
    epsilon_g = check_nonnegative("target_epsilon", target_epsilon)
    value = optimal_dp_delta(total, epsilon, epsilon_g, delta0=delta0)
    row = BoundResult("optimal-dp", theorem, True, value, reason)
    return AccountingResult("epsilon", epsilon_g, value, "optimal-dp", (row,))


def compose(events, *, target_delta: float | None = None, target_epsilon: float | None = None,
            interaction: Interaction | str = Interaction.ADAPTIVE) -> AccountingResult:
    """One-shot accounting: ``compose([PureDP(0.1, count=50)], target_delta=1e-6)``.

    Give exactly one of ``target_delta`` (returns epsilon) or ``target_epsilon``
    (returns delta).
    """
    if (target_delta is None) == (target_epsilon is None):
        raise ValueError("give exactly one of target_delta or target_epsilon")
    at_scale = _theorem1_at_scale(events, Interaction.parse(interaction), target_delta,
                                  target_epsilon)
    if at_scale is not None:
        return at_scale
    accountant = PrivacyAccountant(events, interaction=interaction)
    if target_delta is not None:
        return accountant.epsilon(target_delta)
    return accountant.delta(target_epsilon)

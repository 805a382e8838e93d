"""Privacy filter: a total (epsilon, delta) budget that accepts releases one at a
time and refuses any release whose addition would exceed it.

Two kinds of budget (docs/accounting.md, "Interaction models and filters"):

* ``fully-adaptive`` (the default): mechanisms, parameters and their number may
  depend on earlier outputs. Each :meth:`PrivacyFilter.spend` call is one
  release; its guarantee is computed once (tight bounds inside the release) and
  the filter rules of :mod:`privloss.accounting.fully_adaptive` decide.
* ``adaptive`` / ``setwise`` need a preregistered *plan* (a sequence of releases):
  the whole plan must fit at creation, and each release must be the next planned
  one (adaptive) or an unused one (setwise). ``non-adaptive`` keeps the old
  event-by-event behaviour (a plan is optional).
"""

from __future__ import annotations

import dataclasses
import math
import threading

from privloss.accounting.accountant import AccountingResult, BoundResult, epsilon_of_profile
from privloss.accounting.candidates import CANDIDATES, Candidate
from privloss.accounting.errors import BudgetExceededError, exactness_note, fits_budget
from privloss.accounting.fully_adaptive import (FilterPolicy, FilterStatus, check, default_policy,
                                                release_guarantee)
from privloss.accounting.fully_adaptive.rules import RULES
from privloss.accounting.profile import Profile, flatten
from privloss.bounds._numeric import check_nonnegative, check_probability
from privloss.events import Event, Interaction




class PlanMismatchError(ValueError):
    """The release is not the one the preregistered plan allows; nothing was recorded."""


def _atoms(release) -> tuple:
    """A release (Event or sequence of events) as its flattened atoms (validated)."""
    return flatten(release)


def _canonical(atoms: tuple) -> tuple:
    """Atoms with count 1 inside the event and runs of equal events merged, so that
    ``BoundedRange(0.1, count=10)`` and ten ``BoundedRange(0.1)`` are the same release."""
    out: list = []
    for event, count in atoms:
        if hasattr(event, "count"):
            event = dataclasses.replace(event, count=1)
        if out and out[-1][0] == event:
            out[-1] = (event, out[-1][1] + count)
        else:
            out.append((event, count))
    return tuple(out)


def _describe(atoms: tuple) -> str:
    parts = [f"{event!r}" if count == 1 else f"{count} x {event!r}" for event, count in atoms]
    return "[" + ", ".join(parts) + "]" if parts else "[]"


class PrivacyFilter:
    """A total (epsilon, delta) budget enforced release by release.

    Definition
        :meth:`spend` records one release (an event or a sequence of events whose
        parameters the query fixed before running) if the budget allows it;
        otherwise it raises :class:`BudgetExceededError` (or
        :class:`PlanMismatchError`) and leaves the filter exactly as it was.
    Privacy guarantee
        ``fully-adaptive`` (default): the admitted releases are (epsilon,
        delta)-DP even when each release, its parameters and the number of
        releases are chosen from earlier outputs (filter rules of ``policy``,
        default :func:`~privloss.accounting.fully_adaptive.default_policy` for
        the declared ``mix``: "mixed" (default), "pure" or "gaussian").
        ``adaptive`` / ``setwise``: the plan's composition under that model fits
        the budget and every release is a planned one, so the tight
        fixed-parameter bounds apply. ``non-adaptive``: the accountant's
        non-adaptive bounds on the events so far (assumes the sequence was fixed
        in advance).
    Runtime
        fully-adaptive: one guarantee per release, then O(n) sums per call.
    Exact budgets
        the certified total (an upper bound, sums rounded up to the next binary64
        number) must be ``<=`` the budget exactly; there is no tolerance. Ten
        releases of ``PureDP(0.1)`` do not fit a budget of 1 (the stored 0.1 is
        above 1/10); eight of ``PureDP(0.125)`` do (docs/accounting.md, "Exact
        budgets").
    Thread safety
        calls are serialised by a lock, so racing threads never overspend.
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *,
                 interaction: Interaction | str = Interaction.FULLY_ADAPTIVE,
                 plan=None, policy: FilterPolicy | None = None, mix: str | None = None,
                 candidates: tuple[Candidate, ...] = CANDIDATES):
        self._budget_epsilon = check_nonnegative("epsilon", epsilon)
        self._budget_delta = check_probability("delta", delta, closed_upper=False)
        self._interaction = Interaction.parse(interaction)
        self._candidates = tuple(candidates)
        self._lock = threading.Lock()
        self._profile = Profile()
        self._guarantees: list = []
        self._policy = None
        self._plan: tuple = ()
        self._used: list[bool] = []
        if self._interaction is Interaction.FULLY_ADAPTIVE:
            if plan is not None:
                raise ValueError("plan is only for adaptive, setwise or non-adaptive budgets; a "
                                 "fully-adaptive budget needs none")
            if policy is not None and mix is not None:
                raise ValueError("give either policy or mix (the declared mechanism mix that "
                                 "chooses the default policy's delta split), not both")
            if policy is None:
                policy = default_policy(self._budget_epsilon, self._budget_delta, mix or "mixed")
            if not isinstance(policy, FilterPolicy):
                raise TypeError(f"policy must be a FilterPolicy, got {type(policy).__name__}")
            if (policy.epsilon, policy.delta) != (self._budget_epsilon, self._budget_delta):
                raise ValueError(f"policy budget ({policy.epsilon:g}, {policy.delta:g}) differs from "
                                 f"the filter's ({self._budget_epsilon:g}, {self._budget_delta:g})")
            self._policy = policy
            return
        if policy is not None or mix is not None:
            raise ValueError(f"policy and mix are only for fully-adaptive budgets, not "
                             f"{self._interaction.value}")
        if plan is None:
            if self._interaction is not Interaction.NON_ADAPTIVE:
                raise ValueError(
                    f"a {self._interaction.value} budget needs a preregistered plan (plan=[release, "
                    f"...], each release an event or a sequence of events): its bounds assume the "
                    f"privacy parameters are fixed in advance; without a plan use "
                    f"interaction='fully-adaptive'")
            return
        self._set_plan(plan)

    # ---- plans ---------------------------------------------------------------
    def _set_plan(self, plan) -> None:
        if isinstance(plan, (Event, str, bytes)) or not hasattr(plan, "__iter__"):
            raise TypeError("plan must be a sequence of releases (each an event or a sequence of "
                            f"events), got {plan!r}")
        items = tuple(_canonical(_atoms(release)) for release in plan)
        if not items:
            raise ValueError("plan must contain at least one release")
        whole = Profile(tuple(atom for item in items for atom in item))   # plan order
        result = epsilon_of_profile(whole, self._interaction, self._budget_delta, self._candidates)
        if not self._within_budget(result.value):
            over = result.value - self._budget_epsilon
            raise ValueError(
                f"plan does not fit the budget: its {len(items)} releases compose to epsilon = "
                f"{result.value:.6g} at delta = {self._budget_delta:g} under the "
                f"{self._interaction.value} model (bound {result.bound}), over the budget epsilon "
                f"{self._budget_epsilon:g} by {over:.6g}"
                f"{exactness_note(result.value, self._budget_epsilon)}")
        self._plan = items
        self._used = [False] * len(items)

    def _match(self, atoms: tuple) -> int:
        """Index of the plan item ``atoms`` must be; raises PlanMismatchError."""
        if self._interaction is Interaction.SETWISE:
            for index, item in enumerate(self._plan):
                if not self._used[index] and item == atoms:
                    return index
            unused = [f"#{i + 1} {_describe(item)}" for i, item in enumerate(self._plan)
                      if not self._used[i]]
            if not unused:
                raise PlanMismatchError(f"every release of the plan is used; {_describe(atoms)} "
                                        f"is not in the plan")
            raise PlanMismatchError(f"release {_describe(atoms)} matches no unused plan item; it "
                                    f"should have matched one of: {'; '.join(unused)}")
        index = sum(self._used)
        if index >= len(self._plan):
            raise PlanMismatchError(f"the plan's {len(self._plan)} releases are all used; "
                                    f"{_describe(atoms)} is not in the plan")
        if self._plan[index] != atoms:
            raise PlanMismatchError(f"release {_describe(atoms)} is not the next planned release; "
                                    f"it should have matched plan item #{index + 1} "
                                    f"{_describe(self._plan[index])}")
        return index

    # ---- state -----------------------------------------------------------------
    @property
    def budget(self) -> tuple[float, float]:
        return self._budget_epsilon, self._budget_delta

    @property
    def interaction(self) -> Interaction:
        return self._interaction

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def policy(self) -> FilterPolicy | None:
        return self._policy

    @property
    def guarantees(self) -> tuple:
        """Stored guarantees of the admitted releases (fully-adaptive)."""
        return tuple(self._guarantees)

    @property
    def plan(self) -> tuple:
        """((atoms, used), ...) of the preregistered plan."""
        return tuple(zip(self._plan, self._used))

    def __repr__(self) -> str:
        spent = self.spent().value
        plan = f", plan={sum(self._used)}/{len(self._plan)} used" if self._plan else ""
        releases = (f", releases={len(self._guarantees)}"
                    if self._interaction is Interaction.FULLY_ADAPTIVE else "")
        return (f"PrivacyFilter(epsilon={self._budget_epsilon:g}, delta={self._budget_delta:g}, "
                f"interaction={self._interaction.value!r}{releases}{plan}, spent={spent:.6g})")

    # ---- accounting --------------------------------------------------------------
    def _within_budget(self, epsilon: float) -> bool:
        return fits_budget(epsilon, self._budget_epsilon)

    def _result(self, status: FilterStatus) -> AccountingResult:
        rows = tuple(BoundResult(name, RULES[name].citation, math.isfinite(eps), eps
                                 if math.isfinite(eps) else None, reason)
                     for name, _, eps, _, reason in status.rows)
        return AccountingResult("delta", self._budget_delta, status.spent_epsilon, status.rule, rows)

    def _account(self, profile: Profile) -> AccountingResult:
        return epsilon_of_profile(profile, self._interaction, self._budget_delta, self._candidates)

    def status(self, release=None) -> FilterStatus:
        """fully-adaptive: the filter's verdict on the history (plus ``release``)."""
        if self._policy is None:
            raise ValueError("status() is for fully-adaptive budgets")
        extra = [] if release is None else [release_guarantee(release)]
        return check(self._policy, self._guarantees + extra)

    def spent(self) -> AccountingResult:
        """Epsilon spent so far at the budget's delta (the rule or bound that binds)."""
        if self._policy is not None:
            return self._result(check(self._policy, self._guarantees))
        return self._account(self._profile)

    def remaining_epsilon(self) -> float:
        return max(0.0, self._budget_epsilon - self.spent().value)

    def can_spend(self, release) -> bool:
        """Whether :meth:`spend` would accept ``release`` now (no state change)."""
        atoms = _atoms(release)
        with self._lock:
            if self._policy is not None:
                return check(self._policy, self._guarantees + [release_guarantee(release)]).admitted
            if self._plan:
                try:
                    self._match(_canonical(atoms))
                except PlanMismatchError:
                    return False
                return True
            return self._within_budget(self._account(Profile(self._profile.atoms + atoms)).value)

    def spend(self, release) -> AccountingResult:
        """Record one release (an event or a sequence of events) if the budget allows it.

        Returns the new total. Raises :class:`BudgetExceededError` or
        :class:`PlanMismatchError` (nothing recorded) otherwise, and the
        accountant's errors for invalid or unknown events (nothing recorded).
        """
        atoms = _atoms(release)       # validates before any state change
        guarantee = release_guarantee(release) if self._policy is not None else None
        with self._lock:
            if self._policy is not None:
                return self._spend_fully_adaptive(atoms, guarantee)
            if self._plan:
                index = self._match(_canonical(atoms))
                profile = Profile(self._profile.atoms + atoms)
                result = self._account(profile)
                self._used[index] = True
                self._profile = profile
                return result
            profile = Profile(self._profile.atoms + atoms)
            result = self._account(profile)
            if not self._within_budget(result.value):
                spent = self._account(self._profile).value
                raise BudgetExceededError(
                    f"budget exceeded: this release would bring the total to epsilon = "
                    f"{result.value:.6g} at delta = {self._budget_delta:g} (bound {result.bound}), "
                    f"over the budget epsilon = {self._budget_epsilon:g}; spent so far "
                    f"{spent:.6g}, remaining {max(0.0, self._budget_epsilon - spent):.6g}"
                    f"{exactness_note(result.value, self._budget_epsilon)}",
                    spent=spent, budget_epsilon=self._budget_epsilon,
                    budget_delta=self._budget_delta, would_spend=result.value)
            self._profile = profile
            return result

    def _spend_fully_adaptive(self, atoms, guarantee) -> AccountingResult:
        status = check(self._policy, self._guarantees + [guarantee])
        if not status.admitted:
            before = check(self._policy, self._guarantees)
            remaining = max(0.0, self._budget_epsilon - before.spent_epsilon)
            raise BudgetExceededError(
                f"budget exceeded: {status.message.removeprefix('refused: ')}; spent so far "
                f"epsilon {before.spent_epsilon:.6g} "
                f"(rule {before.rule}), delta {before.spent_delta:.3g}; remaining epsilon "
                f"{remaining:.6g}",
                spent=before.spent_epsilon, budget_epsilon=self._budget_epsilon,
                budget_delta=self._budget_delta, would_spend=status.spent_epsilon)
        profile = Profile(self._profile.atoms + atoms)     # validates (relations) first
        self._guarantees.append(guarantee)
        self._profile = profile
        return self._result(status)

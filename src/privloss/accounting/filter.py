"""Privacy filter: a total (epsilon, delta) budget that accepts events one at a
time and refuses any event whose addition would exceed it."""

from __future__ import annotations

import threading

from privloss.accounting.accountant import AccountingResult, epsilon_of_profile
from privloss.accounting.candidates import CANDIDATES, Candidate
from privloss.accounting.profile import Profile, flatten
from privloss.bounds._numeric import check_nonnegative, check_probability
from privloss.events import Event, Interaction


#: A total that exceeds the budget by at most this relative amount is accepted:
#: decimal inputs are not exact in binary (ten events of 0.1 sum to slightly more
#: than 1.0), and every bound is already rounded outward by 1e-12.
BUDGET_TOLERANCE = 1e-9


class BudgetExceededError(Exception):
    """The event would exceed the filter's budget; nothing was recorded."""

    def __init__(self, message: str, *, spent: float, budget_epsilon: float, budget_delta: float,
                 would_spend: float):
        super().__init__(message)
        self.spent = spent
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta
        self.would_spend = would_spend


class PrivacyFilter:
    """A total (epsilon, delta) budget enforced event by event.

    Definition: :meth:`spend` adds an event if the tightest valid bound on the
    composition of everything accepted so far plus that event, at the budget's
    delta, is at most the budget's epsilon; otherwise it raises
    :class:`BudgetExceededError` and leaves the filter exactly as it was.
    Privacy guarantee: the accepted events compose to (budget epsilon, budget
    delta)-DP under the declared interaction. The composition theorems assume
    the privacy *parameters* are fixed in advance (adaptive: their order too;
    set-wise: as a preregistered set); the mechanisms themselves may be chosen
    adaptively. When the parameters themselves are picked from earlier outputs
    (Rogers et al. 2016's filters), that assumption fails: see docs/accounting.md.
    Runtime: one accountant evaluation per call.
    Tolerance: a total within a relative ``BUDGET_TOLERANCE`` (1e-9) of the
    budget is accepted, so that ten events of 0.1 fit a budget of 1.0.
    Thread safety: calls are serialised by a lock, so racing threads never overspend.
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *,
                 interaction: Interaction | str = Interaction.ADAPTIVE,
                 candidates: tuple[Candidate, ...] = CANDIDATES):
        self._budget_epsilon = check_nonnegative("epsilon", epsilon)
        self._budget_delta = check_probability("delta", delta, closed_upper=False)
        self._interaction = Interaction.parse(interaction)
        self._candidates = tuple(candidates)
        self._profile = Profile()
        self._lock = threading.Lock()

    @property
    def budget(self) -> tuple[float, float]:
        return self._budget_epsilon, self._budget_delta

    @property
    def profile(self) -> Profile:
        return self._profile

    def _account(self, profile: Profile) -> AccountingResult:
        return epsilon_of_profile(profile, self._interaction, self._budget_delta, self._candidates)

    def spent(self) -> AccountingResult:
        """Epsilon spent so far at the budget's delta (tightest valid bound)."""
        return self._account(self._profile)

    def remaining_epsilon(self) -> float:
        return max(0.0, self._budget_epsilon - self.spent().value)

    def can_spend(self, event: Event) -> bool:
        """Whether :meth:`spend` would accept ``event`` now (no state change)."""
        candidate = Profile(self._profile.atoms + flatten(event))
        return self._within_budget(self._account(candidate).value)

    def _within_budget(self, epsilon: float) -> bool:
        return epsilon <= self._budget_epsilon * (1.0 + BUDGET_TOLERANCE)

    def spend(self, event: Event) -> AccountingResult:
        """Record ``event`` if the budget allows it; return the new total.

        Raises :class:`BudgetExceededError` (nothing recorded) otherwise, and
        the accountant's errors for invalid or unknown events (nothing recorded).
        """
        added = flatten(event)       # validates before any state change
        with self._lock:
            candidate = Profile(self._profile.atoms + added)
            result = self._account(candidate)
            if not self._within_budget(result.value):
                spent = self._account(self._profile).value
                raise BudgetExceededError(
                    f"budget exceeded: this event would bring the total to epsilon = "
                    f"{result.value:.6g} at delta = {self._budget_delta:g} (bound {result.bound}), "
                    f"over the budget epsilon = {self._budget_epsilon:g}; spent so far "
                    f"{spent:.6g}, remaining {max(0.0, self._budget_epsilon - spent):.6g}",
                    spent=spent, budget_epsilon=self._budget_epsilon,
                    budget_delta=self._budget_delta, would_spend=result.value)
            self._profile = candidate
            return result

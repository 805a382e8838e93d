"""How a dataset's history is charged under its interaction model.

* ``fully-adaptive``: each release is one unit with a stored
  :class:`~privloss.accounting.fully_adaptive.ReleaseGuarantee`; the budget's
  :class:`~privloss.accounting.fully_adaptive.FilterPolicy` (fixed when the
  dataset was created) decides with filter-valid rules only
  (:func:`privloss.accounting.fully_adaptive.check`).
* ``adaptive`` / ``setwise``: every recorded event composes under the model's
  tightest valid bound at the budget's delta
  (:func:`privloss.accounting.epsilon_of_profile`); the preregistered plan is
  what makes those theorems apply (:mod:`._plan`).

Every recorded release counts, whatever its status (``pending``: charged
before computing; ``failed``: the computation raised; ``done``).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

from privloss.accounting.errors import exactness_note, fits_budget

__all__ = ["Dataset", "Spending", "spending_of", "within_budget"]


@dataclass(frozen=True)
class Dataset:
    name: str
    budget_epsilon: float
    budget_delta: float
    interaction: str
    policy: str | None
    plan: str | None
    note: str | None
    created: str


@dataclass(frozen=True)
class Spending:
    """What a history spends under its dataset's model.

    ``epsilon``: the tightest epsilon certified at the budget's delta;
    ``delta``: the delta it holds at (fully-adaptive: the filter's delta in use;
    plan models: the tightest delta at the budget's epsilon); ``admitted``:
    whether the history fits the budget; ``bound``: the rule or bound that
    decides; ``message``: on refusal, the binding constraint."""

    epsilon: float
    delta: float
    admitted: bool
    bound: str
    message: str


def within_budget(epsilon: float, budget_epsilon: float) -> bool:
    """Exact comparison of a certified epsilon with the budget (no tolerance:
    docs/accounting.md, "Exact budgets")."""
    return fits_budget(epsilon, budget_epsilon)


@functools.lru_cache(maxsize=256)
def _policy(text: str):
    """A stored filter policy, parsed once per process (immutable)."""
    from privloss.accounting.fully_adaptive import FilterPolicy
    return FilterPolicy.from_dict(json.loads(text))


def _fully_adaptive(dataset: Dataset, guarantees) -> Spending:
    """``guarantees``: a sequence, or a filter table (the ledger's running one)."""
    size = guarantees.size if hasattr(guarantees, "size") else len(guarantees)
    if not size:                # nothing spent yet: no rule's delta is in use either
        return Spending(0.0, 0.0, True, "empty", "")
    from privloss.accounting.fully_adaptive import check
    status = check(_policy(dataset.policy), guarantees)
    return Spending(status.spent_epsilon, status.spent_delta, bool(status.admitted),
                    status.rule, status.message)


def _planned(dataset: Dataset, events: list, with_delta: bool) -> Spending:
    from privloss.accounting import compose, epsilon_of_profile
    from privloss.accounting.profile import Profile

    if not events:
        return Spending(0.0, 0.0, True, "empty", "")
    profile = Profile.of(events)
    total = epsilon_of_profile(profile, dataset.interaction, dataset.budget_delta)
    admitted = within_budget(total.value, dataset.budget_epsilon)
    # the delta of the history at the budget's epsilon (one more evaluation: only
    # for reports); while charging, the epsilon at the budget's delta decides
    delta = compose(events, target_epsilon=dataset.budget_epsilon,
                    interaction=dataset.interaction).delta if with_delta else dataset.budget_delta
    message = "" if admitted else (
        f"the history would compose to epsilon = "
        f"{'infinity' if math.isinf(total.value) else format(total.value, '.6g')} at delta = "
        f"{dataset.budget_delta:g} under {dataset.interaction} (bound {total.bound}), over the "
        f"budget epsilon = {dataset.budget_epsilon:g}"
        f"{exactness_note(total.value, dataset.budget_epsilon)}")
    return Spending(total.value, delta, admitted, total.bound, message)


def spending_of(dataset: Dataset, events: list, guarantees: list, *,
                with_delta: bool = False) -> Spending:
    """The spending of a history (``events``: all recorded events in order;
    ``guarantees``: one stored guarantee per recorded release)."""
    if dataset.interaction == "fully-adaptive":
        return _fully_adaptive(dataset, guarantees)
    return _planned(dataset, events, with_delta)

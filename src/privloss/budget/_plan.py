"""Preregistered plans: what makes the tight fixed-parameter bounds usable.

Definition
----------
A plan is a sequence of :class:`PlanItem`, one per planned release: the
privacy events that release will spend and, optionally, ``match``, the query
fields it must have (for example ``{"command": "topk", "algorithm":
"unknown-gumbel", "k": 10, "epsilon": 0.1}``).

* ``adaptive``: the releases must come in the plan's order; release ``j``
  matches item ``j``. The adaptive-composition theorems (KOV, Murtagh–Vadhan,
  Lemma 5.1, PLD) need exactly this: each mechanism may be chosen from earlier
  outputs, but the privacy parameters and their order are fixed in advance.
* ``setwise``: the plan is a multiset; each release matches any unused item
  (the main document's set-wise adaptivity, section 3, eq. (3)).

A release matches an item when its events are exactly the item's events
(same JSON text) and every ``match`` field equals the query key's field.
When the dataset is created, the composition of *all* planned events under the
declared model must fit the budget, so every release that follows the plan is
covered by a theorem that assumed it.

Privacy guarantee
-----------------
The whole plan is (budget epsilon, budget delta)-DP under the declared model
(checked at creation, re-checked at every release on the recorded history).

Citation
--------
Main document, section 3 (set-wise adaptivity needs a preregistered multiset);
Rogers, Roth, Ullman, Vadhan (2016) for why parameters chosen as one goes need
filters instead.

Runtime
-------
Matching is linear in the plan's length; the creation check is one accountant
evaluation of the whole plan.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from privloss.accounting.errors import exactness_note, fits_budget
from privloss.serialize import (canonical_query_key, events_from_text,
                                           events_to_text)
from privloss.events import Event

from ._errors import LedgerPlanError

__all__ = ["PlanItem", "check_plan", "plan_to_text", "plan_from_text", "describe_item",
           "MAX_PLAN_ITEMS"]

#: longest plan (the creation check composes every planned event)
MAX_PLAN_ITEMS = 10_000


@dataclass(frozen=True)
class PlanItem:
    """One planned release: its events and the query fields it must have."""

    events: tuple
    match: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        events = self.events
        if isinstance(events, Event):
            events = (events,)
        try:
            events = tuple(events)
        except TypeError:
            raise TypeError(f"plan item events must be a sequence of privloss events, "
                            f"got {self.events!r}") from None
        if not events or not all(isinstance(event, Event) for event in events):
            raise TypeError(f"plan item events must be a non-empty sequence of privloss "
                            f"events, got {self.events!r}")
        if not isinstance(self.match, Mapping) or \
                not all(isinstance(key, str) for key in self.match):
            raise TypeError(f"plan item match must be a mapping with string keys, "
                            f"got {self.match!r}")
        canonical_query_key(dict(self.match))          # JSON-able, no NaN
        object.__setattr__(self, "events", events)
        object.__setattr__(self, "match", dict(self.match))

    @property
    def events_text(self) -> str:
        return events_to_text(self.events)

    def matches(self, query_key, events_text: str) -> bool:
        if events_text != self.events_text:
            return False
        if not self.match:
            return True
        if not isinstance(query_key, Mapping):
            return False
        return all(key in query_key and
                   canonical_query_key(query_key[key]) == canonical_query_key(value)
                   for key, value in self.match.items())


def describe_item(index: int, item: PlanItem) -> str:
    """``#3 (command=topk, algorithm=unknown-gumbel, k=10, epsilon=0.1)``."""
    if item.match:
        fields = ", ".join(f"{key}={value}" for key, value in item.match.items())
    else:
        fields = ", ".join(repr(event) for event in item.events)
    return f"#{index + 1} ({fields})"


def check_plan(plan, interaction: str, budget_epsilon: float, budget_delta: float) -> tuple:
    """Validate a plan for a new dataset and check that all of it fits the budget.

    Raises :class:`LedgerPlanError` naming the model and how much the plan
    exceeds the budget by; returns the plan as a tuple of :class:`PlanItem`."""
    if plan is None:
        raise LedgerPlanError(f"interaction {interaction!r} needs a preregistered plan "
                              f"(plan=[...] / --plan FILE): its composition theorems assume "
                              f"the privacy parameters were fixed in advance; use "
                              f"'fully-adaptive' to choose them as you go")
    if isinstance(plan, (str, bytes, Mapping)) or not hasattr(plan, "__iter__"):
        raise LedgerPlanError(f"plan must be a sequence of PlanItem, got {type(plan).__name__}")
    items = tuple(plan)
    if not items:
        raise LedgerPlanError("plan must list at least one planned release, got none")
    if len(items) > MAX_PLAN_ITEMS:
        raise LedgerPlanError(f"plan must list at most {MAX_PLAN_ITEMS} releases, "
                              f"got {len(items)}")
    for index, item in enumerate(items):
        if not isinstance(item, PlanItem):
            raise LedgerPlanError(f"plan[{index}] must be a PlanItem, got {item!r}")
    from privloss.accounting import epsilon_of_profile
    from privloss.accounting.profile import Profile

    events = [event for item in items for event in item.events]
    total = epsilon_of_profile(Profile.of(events), interaction, budget_delta)
    if not fits_budget(total.value, budget_epsilon):        # exact: no tolerance
        over = "infinitely" if math.isinf(total.value) else \
            f"by {total.value - budget_epsilon:.6g}"
        raise LedgerPlanError(
            f"the plan does not fit the budget: its {len(items)} release(s) compose to "
            f"epsilon = {total.value:.10g} at delta = {budget_delta:g} under {interaction} "
            f"(bound {total.bound}), over the budget epsilon = {budget_epsilon:g} {over}"
            f"{exactness_note(total.value, budget_epsilon)}")
    return items


def plan_to_text(items) -> str:
    return json.dumps([{"events": json.loads(item.events_text), "match": item.match}
                       for item in items], separators=(",", ":"), allow_nan=False)


def plan_from_text(text: str) -> tuple:
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("a stored plan must be a JSON array")
    return tuple(PlanItem(events_from_text(json.dumps(entry["events"])), entry.get("match", {}))
                 for entry in value)


def next_item(items: Sequence[PlanItem], used: set, interaction: str, query_key,
              events_text: str) -> int:
    """Index of the plan item this release uses, or :class:`LedgerPlanError`
    naming the item it should have matched (the plan is exhausted: ``-1``)."""
    unused = [index for index in range(len(items)) if index not in used]
    if not unused:
        return -1
    if interaction == "adaptive":
        expected = unused[0]
        if items[expected].matches(query_key, events_text):
            return expected
        raise LedgerPlanError(
            f"this release does not follow the plan: the next planned release is "
            f"{describe_item(expected, items[expected])} (adaptive plans are used in order); "
            f"nothing was computed or charged")
    for index in unused:
        if items[index].matches(query_key, events_text):
            return index
    listed = "; ".join(describe_item(index, items[index]) for index in unused[:5])
    more = f" and {len(unused) - 5} more" if len(unused) > 5 else ""
    raise LedgerPlanError(f"this release matches no unused item of the set-wise plan "
                          f"(unused: {listed}{more}); nothing was computed or charged")

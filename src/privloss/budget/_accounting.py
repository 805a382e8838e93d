"""How a dataset's history is charged under its interaction model.

* ``fully-adaptive``: each release is one unit with a stored
  :class:`~privloss.accounting.fully_adaptive.ReleaseGuarantee`; the budget's
  :class:`~privloss.accounting.fully_adaptive.FilterPolicy` (fixed when the
  dataset was created) decides with filter-valid rules only
  (:func:`privloss.accounting.fully_adaptive.check`).
* ``fully-adaptive`` without a fixed budget (a *privacy odometer*: the stored
  policy is ``{"odometer": {"delta", "epsilon_min", "ratio"}}``): nothing is
  refused, and the spent epsilon is the reading of
  :class:`privloss.accounting.PrivacyOdometer` over the history, valid at every
  time at once under fully adaptive choice (docs/accounting.md, "Privacy odometer").
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

__all__ = ["Dataset", "Spending", "spending_of", "within_budget", "odometer_policy",
           "is_odometer"]


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
    """A stored filter policy (or a privacy odometer), parsed once per process."""
    data = json.loads(text)
    if isinstance(data, dict) and "odometer" in data:
        from privloss.accounting.odometer import PrivacyOdometer
        grid = data["odometer"]
        return PrivacyOdometer(grid["delta"], epsilon_min=grid["epsilon_min"],
                               ratio=grid["ratio"])
    from privloss.accounting.fully_adaptive import FilterPolicy
    return FilterPolicy.from_dict(data)


def odometer_policy(delta: float) -> str:
    """The stored policy of a dataset without a fixed budget: the odometer's grid."""
    from privloss.accounting.odometer import PrivacyOdometer
    odometer = PrivacyOdometer(delta)
    return json.dumps({"odometer": {"delta": odometer.delta,
                                    "epsilon_min": odometer.level_epsilon(0),
                                    "ratio": odometer.level_epsilon(1) / odometer.level_epsilon(0)}},
                      allow_nan=False)


def is_odometer(dataset: Dataset) -> bool:
    """Whether the dataset keeps no fixed budget (its history is read by an odometer)."""
    from privloss.accounting.odometer import PrivacyOdometer
    return dataset.policy is not None and isinstance(_policy(dataset.policy), PrivacyOdometer)


def _fully_adaptive(dataset: Dataset, guarantees, hint=None) -> Spending:
    """``guarantees``: a sequence, or a filter table (the ledger's running one);
    ``hint``: an object whose ``odometer_level`` is a grid level known to refuse a
    prefix of the history (updated when ``guarantees`` is ``hint.table``)."""
    size = guarantees.size if hasattr(guarantees, "size") else len(guarantees)
    if not size:                # nothing spent yet: no rule's delta is in use either
        return Spending(0.0, 0.0, True, "empty", "")
    from privloss.accounting.fully_adaptive import check
    from privloss.accounting.fully_adaptive.filters import Table
    from privloss.accounting.odometer import PrivacyOdometer
    policy = _policy(dataset.policy)
    if isinstance(policy, PrivacyOdometer):
        table = guarantees if isinstance(guarantees, Table) else Table(guarantees)
        start = 0 if hint is None else hint.odometer_level
        epsilon, level = policy.reading_of(table, start)
        if hint is not None and level is not None and table is hint.table:
            hint.odometer_level = max(hint.odometer_level, level)
        bound = "odometer" if level is None else f"odometer level {level}"
        if level is None and policy.delta > 0 and math.isinf(epsilon):
            # no level of the grid admits the history: the reading would be
            # infinite from now on, so the release that would do it is refused
            return Spending(epsilon, policy.delta, False, bound,
                            _odometer_refusal(policy, table))
        return Spending(epsilon, policy.delta, True, bound, "")
    status = check(policy, guarantees)
    return Spending(status.spent_epsilon, status.spent_delta, bool(status.admitted),
                    status.rule, status.message)


def _odometer_refusal(odometer, table) -> str:
    """Why no level of a privacy odometer's grid admits a history, with the
    delta a release could have near its epsilon (a hint; public parameters only)."""
    delta_sum = table.total("delta")
    epsilon_sum = table.total("epsilon")
    level = 0
    from privloss.accounting.odometer import MAX_LEVEL
    while odometer.level_epsilon(level) < epsilon_sum and level < MAX_LEVEL:
        level += 1
    return (f"a privacy odometer at delta {odometer.delta:g} cannot give this history a "
            f"finite epsilon: its grid's level near epsilon {odometer.level_epsilon(level):.3g} "
            f"allows a total delta of about {odometer.level_delta(level):.3g} "
            f"(delta / ((j + 1)(j + 2)) at level j = {level}) and the releases' deltas add "
            f"up to {delta_sum:.3g}; release with a smaller delta, or use a dataset with a "
            f"fixed budget")


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
                with_delta: bool = False, hint=None) -> Spending:
    """The spending of a history (``events``: all recorded events in order;
    ``guarantees``: one stored guarantee per recorded release, or their table)."""
    if dataset.interaction == "fully-adaptive":
        return _fully_adaptive(dataset, guarantees, hint)
    return _planned(dataset, events, with_delta)

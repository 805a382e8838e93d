"""Errors and the exact budget comparison (filters, ledgers), in a module that imports
nothing heavy, so that code which only needs to name them (the ledger, the CLI) starts fast.

Budgets compare exactly (issue 19): a total is admitted only if the certified value,
a binary64 number that is an upper bound on the true loss, is ``<=`` the budget,
itself a binary64 number. There is no tolerance: a relative tolerance on epsilon is
an uncharged privacy loss (a pure (1 + t)-DP history is not (1, 0)-DP for any
t > 0). Sums of stored parameters are exact (:func:`sum_upper`), so that the
decision is exact for basic composition: ten ``PureDP(0.1)`` do NOT fit a budget
of 1, because the binary64 value 0.1 is 0.1000000000000000055511151231257827...
and the mechanism runs with that value (docs/accounting.md, "Exact budgets").
"""

from __future__ import annotations

import math

from privloss._exact import floor_difference, sum_upper

__all__ = ["BudgetExceededError", "fits_budget", "sum_upper", "floor_difference",
           "exactness_note"]


class BudgetExceededError(Exception):
    """The release would exceed the filter's budget; nothing was recorded."""

    def __init__(self, message: str, *, spent: float, budget_epsilon: float, budget_delta: float,
                 would_spend: float):
        super().__init__(message)
        self.spent = spent
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta
        self.would_spend = would_spend


def fits_budget(value: float, budget: float) -> bool:
    """``value <= budget`` for a certified upper bound ``value``: exact (two binary64
    numbers compare exactly); NaN never fits."""
    return value <= budget


def exactness_note(total: float, budget: float) -> str:
    """When ``total`` exceeds ``budget`` by a rounding-sized amount (at most 1e-9
    relative), a sentence that says why the comparison is exact and what to do."""
    if not (math.isfinite(total) and total > budget and total - budget <= 1e-9 * max(budget, 1e-300)):
        return ""
    return (f" (budgets compare exactly: the certified total {total!r} exceeds the budget "
            f"{budget!r} by {total - budget:.3g}, because parameters are binary64 numbers, e.g. "
            f"0.1 is stored as 3602879701896397/2^55 = 0.1000000000000000055511...; choose "
            f"epsilons that are exact binary fractions (0.125, 0.0625, ...) or a budget of at "
            f"least {total!r})")

"""Errors and the tolerance of budgets (filters, ledgers), in a module that imports nothing heavy,
so that code which only needs to name them (the ledger, the CLI) starts fast."""

from __future__ import annotations

__all__ = ["BudgetExceededError", "BUDGET_TOLERANCE"]

#: A total that exceeds the budget by at most this relative amount is accepted:
#: decimal inputs are not exact in binary (ten events of 0.1 sum to slightly more
#: than 1.0), and every bound is already rounded outward by 1e-12.
BUDGET_TOLERANCE = 1e-9


class BudgetExceededError(Exception):
    """The release would exceed the filter's budget; nothing was recorded."""

    def __init__(self, message: str, *, spent: float, budget_epsilon: float, budget_delta: float,
                 would_spend: float):
        super().__init__(message)
        self.spent = spent
        self.budget_epsilon = budget_epsilon
        self.budget_delta = budget_delta
        self.would_spend = would_spend

"""Errors of the budget ledger."""

from __future__ import annotations

from privloss.accounting.errors import BudgetExceededError

__all__ = ["LedgerError", "LedgerBudgetError", "LedgerPlanError", "UnknownDatasetError",
           "DatasetExistsError"]


class LedgerError(Exception):
    """The ledger file cannot be used (missing, not a ledger, corrupt, busy,
    linked under two names, replaced by a copy)."""


class UnknownDatasetError(LedgerError, LookupError):
    """No dataset of that name in the ledger."""


class DatasetExistsError(LedgerError, ValueError):
    """A dataset of that name already exists (budgets are never reset)."""


class LedgerPlanError(LedgerError, ValueError):
    """The release does not match the dataset's preregistered plan (or a plan
    is missing, malformed or does not fit the budget); nothing was recorded
    and nothing was computed."""


class LedgerBudgetError(BudgetExceededError, LedgerError):
    """The release would exceed the dataset's budget; nothing was recorded and
    nothing was computed. ``remaining_epsilon`` is budget minus spent."""

    def __init__(self, message: str, *, dataset: str, spent: float, budget_epsilon: float,
                 budget_delta: float, would_spend: float):
        super().__init__(message, spent=spent, budget_epsilon=budget_epsilon,
                         budget_delta=budget_delta, would_spend=would_spend)
        self.dataset = dataset
        self.remaining_epsilon = max(0.0, budget_epsilon - spent)

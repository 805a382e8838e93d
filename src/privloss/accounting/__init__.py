"""Accountant (tightest valid bound), privacy filter and calibration.

Names are imported lazily (``privloss._lazy``): ``from privloss.accounting import
PrivacyFilter`` loads the filter without the accountant's bound stack.
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.accounting.accountant": (
        "AccountingResult", "BoundResult", "PrivacyAccountant", "compose", "epsilon_of_profile",
    ),
    "privloss.accounting.calibration": (
        "Calibration", "calibrate_epsilon", "calibrate_gaussian_sigma",
    ),
    "privloss.accounting.candidates": ("CANDIDATES", "Candidate"),
    "privloss.accounting.errors": ("BudgetExceededError",),
    "privloss.accounting.filter": ("PlanMismatchError", "PrivacyFilter"),
    "privloss.accounting.odometer": ("PrivacyOdometer",),
    "privloss.accounting.profile": ("Profile", "UnsupportedEventError"),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.accounting", _EXPORTS)

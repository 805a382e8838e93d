"""Accountant (tightest valid bound), privacy filter and calibration."""

from privloss.accounting.accountant import (AccountingResult, BoundResult, PrivacyAccountant,
                                            compose, epsilon_of_profile)
from privloss.accounting.calibration import Calibration, calibrate_epsilon, calibrate_gaussian_sigma
from privloss.accounting.candidates import CANDIDATES, Candidate
from privloss.accounting.filter import BudgetExceededError, PrivacyFilter
from privloss.accounting.profile import Profile, UnsupportedEventError

__all__ = [
    "AccountingResult", "BoundResult", "PrivacyAccountant", "compose", "epsilon_of_profile",
    "Calibration", "calibrate_epsilon", "calibrate_gaussian_sigma", "CANDIDATES", "Candidate",
    "BudgetExceededError", "PrivacyFilter", "Profile", "UnsupportedEventError",
]

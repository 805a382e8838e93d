"""privloss: tight, never-optimistic differential-privacy accounting.

>>> from privloss import PureDP, BoundedRange, compose
>>> result = compose([PureDP(0.1, count=10), BoundedRange(0.1, count=10)], target_delta=1e-6)

See ``docs/accounting.md``. Names are imported lazily so that importing one
submodule (``privloss.bounds.zcdp``, say) does not load the whole library.
"""

from __future__ import annotations

import logging

from privloss._lazy import lazy_exports

# A library's loggers are silent unless the application configures logging:
# without a handler anywhere, Python's last-resort handler would print every
# WARNING+ record (an engine error's text, with values of the data) on stderr.
# Records still propagate to handlers the operator installs (root or
# "privloss.engine").
logging.getLogger("privloss").addHandler(logging.NullHandler())

__version__ = "0.1.0"

_EXPORTS = {
    # the high-level analytics API (privloss.topk(...), privloss.plan(...))
    "privloss.api.aggregate": ("aggregate",),
    "privloss.api.sql": ("sql",),
    "privloss.api.protocol": ("histogram", "topk"),
    "privloss.api.planning": ("max_epsilon", "plan"),
    "privloss.api.running": ("running",),
    "privloss.api.rollup": ("rollup",),
    "privloss.api.accuracy_plan": ("plan_accuracy",),
    "privloss.accounting": (
        "AccountingResult", "BudgetExceededError", "PrivacyAccountant", "PrivacyFilter",
        "PrivacyOdometer",
        "UnsupportedEventError", "calibrate_epsilon", "calibrate_gaussian_sigma", "compose",
    ),
    "privloss.events": (
        "ApproxDP", "ApproxZCDP", "BoundedRange", "Composed", "ConcentratedDP", "Interaction",
        "NonPrivate", "NoOp", "PureDP", "ZCDP",
    ),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss", _EXPORTS)

"""Fully-adaptive accounting: privacy filters whose rules stay valid when the
mechanisms, their privacy parameters and their number depend on earlier outputs.

One *release* (one call of a query: a top-k, a histogram, ...) is one unit: its
parameters are fixed by the query before it runs, so its own guarantee may use the
tight fixed-parameter bounds (:func:`release_guarantee`, computed once and stored).
Across releases only filter-valid rules apply (:func:`check`, numpy sums only).

Public API (the ledger codes against exactly this):
:class:`ReleaseGuarantee`, :func:`release_guarantee`, :class:`FilterPolicy`,
:func:`default_policy`, :class:`FilterStatus`, :func:`check`.

The rules and the proof that their combination is a valid filter are in
:mod:`privloss.accounting.fully_adaptive.rules` and docs/accounting.md
("Interaction models and filters").
"""

from __future__ import annotations

from privloss.accounting.fully_adaptive.rules import (MIXES, RULES, FilterPolicy, FilterStatus,
                                                      check, default_policy, mix_of)
from privloss.accounting.fully_adaptive.release import RENYI_ORDERS, ReleaseGuarantee, release_guarantee

__all__ = ["ReleaseGuarantee", "release_guarantee", "FilterPolicy", "default_policy",
           "FilterStatus", "check", "RULES", "RENYI_ORDERS", "MIXES", "mix_of"]

"""A durable privacy-budget ledger: one SQLite file, any number of datasets,
threads and processes.

>>> from privloss.budget import Ledger
>>> from privloss.events import PureDP
>>> ledger = Ledger("budget.sqlite")                                   # doctest: +SKIP
>>> ledger.create_dataset("retail", epsilon=1.0, delta=1e-6)           # doctest: +SKIP
>>> ledger.release("retail", {"query": "count", "epsilon": 0.1},       # doctest: +SKIP
...                lambda: noisy_count(), events=[PureDP(0.1)])

Definition
----------
Each dataset has a total budget (epsilon, delta) and an interaction model
(:class:`privloss.events.Interaction`):

* ``fully-adaptive`` (default): mechanisms, parameters and their number may
  depend on earlier outputs. Each release is one unit with a stored
  guarantee; filter-valid rules decide (:mod:`privloss.accounting.fully_adaptive`),
  with a policy fixed when the dataset is created.
* ``adaptive`` / ``setwise``: a preregistered plan (:class:`PlanItem`) is
  required; it must fit the budget as a whole when the dataset is created, and
  each release must match the next planned item (adaptive) or an unused one
  (setwise). The tight fixed-parameter bounds then apply.

:meth:`Ledger.release` runs the release protocol:

1. validate the arguments (query key, events) before anything else;
2. if a *completed* release with the same canonical query key is recorded,
   return its stored result at no cost (LinkedIn's Audience Engagements
   system does the same, ``spec/topk.md`` §3.5);
3. ``BEGIN IMMEDIATE`` (the write lock), re-read the dataset and its history,
   match the plan, check the budget, and either roll back and raise
   (:class:`LedgerPlanError`, :class:`LedgerBudgetError`: nothing recorded,
   nothing computed, no data read) or record the release as *pending* (charged)
   and ``COMMIT``;
4. call ``compute()`` outside any transaction; if it raises, the release stays
   charged (``failed``): a failure that depends on the data must not be a free
   oracle;
5. store the result (``done``) and return it, read back from the stored JSON.

Privacy guarantee
-----------------
Every result returned was recorded, with its events, before it was returned,
and every computation that started was charged before it started. A release is
recorded only if the whole history, this release included, fits (budget
epsilon, budget delta) under the dataset's model, compared exactly (no
tolerance; :func:`privloss.accounting.errors.fits_budget`, as
:class:`privloss.accounting.PrivacyFilter`).
Racing threads and processes never overspend: the check and the insert happen
under SQLite's single write lock. A crash at any moment leaves the charge
recorded or not recorded, never a returned answer unrecorded (WAL journal,
``synchronous=FULL``). The file is used under one name only
(:mod:`._store`: single hard link, recorded device and inode, regular file).
Anchored to a witness (:mod:`._anchor`), a ledger whose newest releases, a
dataset or the whole file were deleted, or an older copy restored, is refused
on open and by every charge (:mod:`._audit`). The charges of a process's
threads may share one transaction and one COMMIT (:mod:`._group`), each
re-checked in order under the same lock.

Citation
--------
Rogers et al., "LinkedIn's Audience Engagements API" (2020) for the
budget-per-analyst and repeated-query rules; Rogers, Roth, Ullman, Vadhan
(2016) and Whitehouse et al. (2023) for filters; Cesar and Rogers (2021),
section 3, for preregistered set-wise plans.

Runtime
-------
A release costs one budget check under the lock (fully-adaptive: O(1)
amortised, on the dataset's running table of its verified history,
:mod:`._running`, the same verdict as the full recomputation bit for bit;
plan models: the accountant over every recorded event) plus two short write
transactions with an fsync each. ``compute`` runs outside any lock.

Release records are insert-only (schema 3): the charge inserts the release and
its outcome is another row (``outcomes``); triggers refuse every UPDATE and
DELETE of either, on SQLite and PostgreSQL. ``create_dataset(name,
epsilon=None, delta=D)`` keeps no fixed budget: the spent epsilon is a privacy
odometer's reading (``show()["odometer"]``).

Public API: :class:`Ledger` (``create_dataset``, ``datasets``, ``show``,
``history``, ``events``, ``lookup``, ``release``, ``release_with_receipt``),
:class:`Receipt`, :class:`PlanItem`, :func:`check_dataset_name`, the errors;
anchoring (:mod:`._anchor`): ``Ledger(path, witness=..., key_file=...)``,
``Ledger.verify``, :func:`create_key_file`, :func:`load_key`.
"""

from ._errors import (DatasetExistsError, LedgerBudgetError, LedgerError, LedgerPlanError,
                      UnknownDatasetError)
from ._ledger import (DEFAULT_TIMEOUT, LEDGER_INTERACTIONS, MAX_NAME_LENGTH, Ledger, Receipt,
                      check_dataset_name)
from ._integrity import LedgerIntegrityError
from ._anchor import KEY_ENVIRONMENT, create_key_file, default_anchor, load_key
from ._plan import MAX_PLAN_ITEMS, PlanItem
from ._store import APPLICATION_ID, SCHEMA_VERSION

__all__ = ["Ledger", "Receipt", "PlanItem", "LedgerError", "LedgerBudgetError",
           "LedgerPlanError", "LedgerIntegrityError", "UnknownDatasetError", "DatasetExistsError", "check_dataset_name",
           "LEDGER_INTERACTIONS", "DEFAULT_TIMEOUT", "MAX_NAME_LENGTH", "MAX_PLAN_ITEMS",
           "APPLICATION_ID", "SCHEMA_VERSION", "KEY_ENVIRONMENT", "create_key_file", "default_anchor",
           "load_key"]

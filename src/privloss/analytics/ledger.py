"""A durable privacy-budget ledger: one SQLite file, any number of datasets,
threads and processes.

>>> from privloss.analytics.ledger import Ledger
>>> from privloss.events import PureDP
>>> ledger = Ledger("budget.sqlite")                                   # doctest: +SKIP
>>> ledger.create_dataset("retail", epsilon=1.0, delta=1e-6)           # doctest: +SKIP
>>> ledger.release("retail", {"query": "count", "epsilon": 0.1},       # doctest: +SKIP
...                lambda: noisy_count(), events=[PureDP(0.1)])

Definition: each dataset has a total budget (epsilon, delta) and an interaction
model (``adaptive`` or ``setwise``, :class:`privloss.events.Interaction`).
:meth:`Ledger.release` runs the release protocol:

1. validate the arguments (query key, events) before anything else;
2. if a release with the same canonical query key is recorded for the dataset,
   return its stored result at no cost: an identical repeated query does not
   drain the budget (LinkedIn's Audience Engagements system does the same,
   ``spec/topk.md`` §3.5); the stored answer is a post-processing of a release
   already paid for;
3. fail fast, before computing, if the recorded events plus the new ones
   already exceed the budget;
4. call ``compute()`` (the caller's private computation) outside any
   transaction, so a slow computation never blocks other analysts;
5. ``BEGIN IMMEDIATE`` (the write lock), re-read the dataset and every recorded
   event, re-check the budget with the accountant
   (:func:`privloss.accounting.epsilon_of_profile`, the tightest valid bound
   at the budget's delta, mixing DP / BR / zCDP / named mechanisms), and either
   roll back and raise :class:`LedgerBudgetError` (the computed result is
   discarded, never returned) or insert the release (query key, events, result,
   spent epsilon after, time) and ``COMMIT``;
6. only then return the result, read back from the stored JSON text, so the
   caller receives exactly what was recorded.

Privacy guarantee: every result returned was recorded, with its events,
before it was returned, and a release is recorded only if the accountant
certifies that all recorded events of the dataset compose to (budget epsilon,
budget delta)-DP under the declared interaction (within a relative
``BUDGET_TOLERANCE`` of 1e-9, as :class:`privloss.accounting.PrivacyFilter`).
Racing threads and processes never overspend: the check and the insert happen
under SQLite's single write lock. A crash (kill -9, power loss with
``synchronous=FULL``) at any moment leaves either the whole release recorded or
none of it, and never corrupts the file (WAL journal). The composition theorems
behind ``adaptive`` / ``setwise`` assume the privacy *parameters* were fixed
(adaptive: with their order) or preregistered as a set (setwise) in advance,
see ``docs/ledger.md`` and ``docs/accounting.md``.

Citation: Rogers et al., "LinkedIn's Audience Engagements API" (2020) for the
budget-per-analyst and repeated-query rules (``spec/topk.md`` §3.5); Cesar and
Rogers (2021) for mixing DP, BR and zCDP under set-wise adaptivity.

Runtime: a release costs two accountant evaluations over the dataset's whole
history (one before computing, one under the lock) plus a few milliseconds of
SQLite I/O with an fsync at commit. The lock is held only for the second
evaluation and the insert.

The file is opened afresh for every operation (no connection is kept), so a
:class:`Ledger` object is safe to share between threads and to pass to
``fork``/``spawn`` children.

Public API: :class:`Ledger` (``create_dataset``, ``datasets``, ``show``,
``history``, ``events``, ``lookup``, ``release``, ``release_with_receipt``),
:class:`Receipt`, :func:`check_dataset_name`, the errors :class:`LedgerError`,
:class:`LedgerBudgetError`, :class:`UnknownDatasetError`,
:class:`DatasetExistsError`; event and key (de)serialisation in
:mod:`privloss.analytics._serialize` (``canonical_query_key``,
``event_to_json``, ``event_from_json``). CLI helpers: :mod:`privloss.cli.ledger`.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from privloss.accounting import (AccountingResult, BudgetExceededError, Profile,
                                 epsilon_of_profile)
from privloss.accounting.filter import BUDGET_TOLERANCE
from privloss.analytics._serialize import (canonical_query_key, events_from_text, events_to_text,
                                           result_from_text, result_to_text)
from privloss.bounds._numeric import check_positive, check_probability
from privloss.events import Event, Interaction

__all__ = ["Ledger", "Receipt", "LedgerError", "LedgerBudgetError", "UnknownDatasetError",
           "DatasetExistsError", "check_dataset_name", "LEDGER_INTERACTIONS", "DEFAULT_TIMEOUT"]

#: ``PRAGMA application_id`` of a privloss ledger ("PLLG"): marks the file as ours
APPLICATION_ID = 0x504C4C47
#: ``PRAGMA user_version``: the schema below
SCHEMA_VERSION = 1
#: seconds a call waits for another process's write lock before failing
DEFAULT_TIMEOUT = 60.0
#: interaction models a ledger accepts (non-adaptive cannot hold for queries
#: that arrive over time)
LEDGER_INTERACTIONS = (Interaction.ADAPTIVE.value, Interaction.SETWISE.value)
#: longest dataset name
MAX_NAME_LENGTH = 200

_SCHEMA = (
    """CREATE TABLE datasets (
        name TEXT PRIMARY KEY NOT NULL,
        budget_epsilon REAL NOT NULL CHECK (budget_epsilon > 0),
        budget_delta REAL NOT NULL CHECK (budget_delta >= 0 AND budget_delta < 1),
        interaction TEXT NOT NULL CHECK (interaction IN ('adaptive', 'setwise')),
        created TEXT NOT NULL)""",
    """CREATE TABLE releases (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        query_key TEXT NOT NULL,
        events TEXT NOT NULL,
        result TEXT NOT NULL,
        spent_epsilon REAL NOT NULL,
        bound TEXT NOT NULL,
        time TEXT NOT NULL,
        UNIQUE (dataset, query_key))""",
)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

class LedgerError(Exception):
    """The ledger file cannot be used (missing, not a ledger, corrupt, busy)."""


class UnknownDatasetError(LedgerError, LookupError):
    """No dataset of that name in the ledger."""


class DatasetExistsError(LedgerError, ValueError):
    """A dataset of that name already exists (budgets are never reset)."""


class LedgerBudgetError(BudgetExceededError, LedgerError):
    """The release would exceed the dataset's budget; nothing was recorded and
    the computed result was discarded. ``remaining_epsilon`` is budget minus spent."""

    def __init__(self, message: str, *, dataset: str, spent: float, budget_epsilon: float,
                 budget_delta: float, would_spend: float):
        super().__init__(message, spent=spent, budget_epsilon=budget_epsilon,
                         budget_delta=budget_delta, would_spend=would_spend)
        self.dataset = dataset
        self.remaining_epsilon = max(0.0, budget_epsilon - spent)


# --------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Dataset:
    name: str
    budget_epsilon: float
    budget_delta: float
    interaction: str
    created: str


class Receipt(NamedTuple):
    """What :meth:`Ledger.release_with_receipt` returns."""

    result: Any
    #: True if the stored answer of an identical earlier query was returned (no cost)
    cached: bool
    release_id: int
    #: tightest epsilon of the dataset's history right after that release was recorded
    spent_epsilon: float
    bound: str
    time: str


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

def check_dataset_name(name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"dataset must be a string, got {name!r}")
    if not name.strip() or name != name.strip() or len(name) > MAX_NAME_LENGTH \
            or any(ord(char) < 32 for char in name):
        raise ValueError(f"dataset must be a non-empty name of at most {MAX_NAME_LENGTH} "
                         f"characters without control characters or surrounding spaces, "
                         f"got {name!r}")
    return name


def _check_interaction(interaction) -> str:
    try:
        value = Interaction.parse(interaction).value
    except ValueError:
        value = None
    if value not in LEDGER_INTERACTIONS:
        raise ValueError(f"interaction must be one of {', '.join(LEDGER_INTERACTIONS)} "
                         f"(queries reach a ledger over time), got {interaction!r}")
    return value


def _check_events(events) -> tuple[Event, ...]:
    if isinstance(events, Event):
        events = (events,)
    try:
        events = tuple(events)
    except TypeError:
        raise TypeError(f"events must be a privloss event or a sequence of events, "
                        f"got {events!r}") from None
    if not events:
        raise ValueError("events must name at least one event (use NoOp() for a release "
                         "that touches no private data)")
    for index, event in enumerate(events):
        if not isinstance(event, Event):
            raise TypeError(f"events[{index}] must be a privloss event, got {event!r}")
    Profile.of(events)               # the accountant's own check of the types
    return events


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def _within_budget(epsilon: float, budget_epsilon: float) -> bool:
    return epsilon <= budget_epsilon * (1.0 + BUDGET_TOLERANCE)


def _identity(value):
    return value


# --------------------------------------------------------------------------
# the ledger
# --------------------------------------------------------------------------

class Ledger:
    """Durable budget store over one SQLite file (see the module docstring).

    ``Ledger(path)`` creates and initialises the file if it does not exist
    (``create=False``: a missing or empty file is an error, nothing is created).
    The file is put in WAL mode; every connection uses ``synchronous=FULL`` and
    waits up to ``timeout`` seconds for another writer's lock.
    Raises :class:`LedgerError` if the path cannot be opened or is not a
    privloss ledger (another SQLite database, a corrupt or non-database file).
    """

    def __init__(self, path, *, create: bool = True, timeout: float = DEFAULT_TIMEOUT):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {path!r}")
        text = os.fspath(path)
        if isinstance(text, bytes):
            text = os.fsdecode(text)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise ValueError(f"path must name a file (the ledger must be durable), got {path!r}")
        self._timeout = check_positive("timeout", timeout)
        self._path = os.path.abspath(text)
        self._create = bool(create)
        self._mode = "rwc" if create else "rw"
        if not create and not os.path.exists(self._path):
            raise LedgerError(f"no ledger file at {self._path}")
        if os.path.isdir(self._path):
            raise LedgerError(f"ledger path {self._path} is a directory, not a file")
        self._initialise()

    @property
    def path(self) -> str:
        return self._path

    # ---- connections ---------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self):
        """A fresh connection in autocommit mode (transactions are explicit)."""
        uri = f"file:{urllib.parse.quote(self._path)}?mode={self._mode}"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as error:
            raise self._translate(error) from error
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
        except sqlite3.Error as error:
            raise self._translate(error) from error
        finally:
            conn.close()

    @contextlib.contextmanager
    def _transaction(self, conn, *, write: bool):
        """BEGIN (IMMEDIATE for writes: the write lock first, so the budget
        check and the insert see the same history); COMMIT on success, ROLLBACK
        on any exception (including KeyboardInterrupt)."""
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _translate(self, error: sqlite3.Error) -> LedgerError:
        message = str(error)
        if "locked" in message or "busy" in message:
            return LedgerError(f"ledger {self._path} is busy: another process held its lock "
                               f"for more than {self._timeout:g} s")
        if "not a database" in message or "malformed" in message or "corrupt" in message:
            return LedgerError(f"{self._path} is not a privloss ledger (not an SQLite database, "
                               f"or corrupt): {message}")
        if "unable to open" in message:
            return LedgerError(f"cannot open ledger {self._path}: {message}")
        return LedgerError(f"ledger {self._path}: {message}")

    def _initialise(self) -> None:
        with self._connect() as conn:
            with self._transaction(conn, write=False):    # one snapshot of the three reads
                state = self._schema_state(conn)
            if state == "empty":
                self._create_schema(conn)
        self._mode = "rw"          # from now on a vanished file is an error, never recreated

    def _create_schema(self, conn) -> None:
        if not self._create:
            raise LedgerError(f"{self._path} is not a privloss ledger (empty database)")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"cannot put ledger {self._path} in WAL mode (got {mode!r}); "
                              f"is it on a network file system?")
        with self._transaction(conn, write=True):
            if self._schema_state(conn) == "empty":      # another process may have won
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _schema_state(self, conn) -> str:
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id == 0 and version == 0 and tables == 0:
            return "empty"
        if application_id != APPLICATION_ID:
            raise LedgerError(f"{self._path} is an SQLite database but not a privloss ledger")
        if version != SCHEMA_VERSION:
            raise LedgerError(f"ledger {self._path} has schema version {version}; this privloss "
                              f"reads version {SCHEMA_VERSION}")
        return "ready"

    # ---- reading ---------------------------------------------------------------
    def _dataset(self, conn, name: str) -> _Dataset:
        row = conn.execute("SELECT name, budget_epsilon, budget_delta, interaction, created "
                           "FROM datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name LIMIT 20")]
            hint = f"; known: {', '.join(map(repr, known))}" if known else "; the ledger has none"
            raise UnknownDatasetError(f"no dataset {name!r} in ledger {self._path}{hint} "
                                      f"(create it with create_dataset / `privloss ledger create`)")
        return _Dataset(*row)

    def _recorded_events(self, conn, name: str) -> list[Event]:
        events: list[Event] = []
        for (text,) in conn.execute("SELECT events FROM releases WHERE dataset = ? ORDER BY id",
                                    (name,)):
            events.extend(self._decode_events(text))
        return events

    def _decode_events(self, text: str) -> tuple:
        try:
            return events_from_text(text)
        except (ValueError, TypeError) as error:
            raise LedgerError(f"ledger {self._path} holds events that cannot be read "
                              f"({error}); refusing to account with them") from error

    def _stored(self, conn, name: str, key: str):
        return conn.execute("SELECT id, result, spent_epsilon, bound, time FROM releases "
                            "WHERE dataset = ? AND query_key = ?", (name, key)).fetchone()

    @staticmethod
    def _account(dataset: _Dataset, events) -> AccountingResult:
        return epsilon_of_profile(Profile.of(events), dataset.interaction, dataset.budget_delta)

    # ---- datasets ----------------------------------------------------------------
    def create_dataset(self, name: str, *, epsilon: float, delta: float = 0.0,
                       interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
        """Add a dataset with a total budget (epsilon > 0, 0 <= delta < 1) and an
        interaction model (``adaptive`` or ``setwise``); returns :meth:`show`.

        Raises :class:`DatasetExistsError` if the name is taken: a budget is
        never reset or replaced (that would void its guarantee).
        """
        name = check_dataset_name(name)
        epsilon = check_positive("epsilon", epsilon)
        delta = check_probability("delta", delta, closed_upper=False)
        interaction = _check_interaction(interaction)
        with self._connect() as conn:
            with self._transaction(conn, write=True):
                exists = conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone()
                if exists:
                    raise DatasetExistsError(f"dataset {name!r} already exists in ledger "
                                             f"{self._path}; budgets are never reset")
                conn.execute("INSERT INTO datasets (name, budget_epsilon, budget_delta, "
                             "interaction, created) VALUES (?, ?, ?, ?, ?)",
                             (name, epsilon, delta, interaction, _now()))
        return self.show(name)

    def datasets(self) -> list[str]:
        """Names of the datasets, sorted."""
        with self._connect() as conn:
            return [row[0] for row in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def show(self, name: str) -> dict:
        """Budget and spending of one dataset.

        Keys: ``dataset``, ``budget_epsilon``, ``budget_delta``, ``spent_epsilon``
        (tightest valid epsilon of all recorded events at the budget's delta),
        ``spent_delta`` (the delta at which ``spent_epsilon`` holds: the budget's
        delta, or 0 when the history is empty or costs nothing),
        ``releases`` (count), ``remaining_epsilon`` (budget minus spent, >= 0; the
        accountant on the whole history decides whether a next release fits),
        ``interaction``, ``bound`` (name of the tightest bound), ``created``.
        """
        name = check_dataset_name(name)
        with self._connect() as conn:
            with self._transaction(conn, write=False):
                dataset = self._dataset(conn, name)
                count = conn.execute("SELECT count(*) FROM releases WHERE dataset = ?",
                                     (name,)).fetchone()[0]
                events = self._recorded_events(conn, name)
        spent = self._account(dataset, events)
        costless = spent.bound == "empty" or spent.value == 0.0
        return {
            "dataset": dataset.name,
            "budget_epsilon": dataset.budget_epsilon,
            "budget_delta": dataset.budget_delta,
            "spent_epsilon": spent.value,
            "spent_delta": 0.0 if costless else dataset.budget_delta,
            "releases": count,
            "remaining_epsilon": max(0.0, dataset.budget_epsilon - spent.value),
            "interaction": dataset.interaction,
            "bound": spent.bound,
            "created": dataset.created,
        }

    def history(self, name: str) -> list[dict]:
        """Recorded releases of a dataset, oldest first. Each is a dict with
        ``id``, ``query_key`` (canonical text), ``query`` (its JSON value),
        ``events`` (JSON objects, see :mod:`privloss.analytics._serialize`),
        ``result`` (the stored JSON value), ``spent_epsilon`` (after that
        release), ``bound`` and ``time`` (UTC, ISO 8601)."""
        name = check_dataset_name(name)
        with self._connect() as conn:
            with self._transaction(conn, write=False):
                self._dataset(conn, name)
                rows = conn.execute("SELECT id, query_key, events, result, spent_epsilon, bound, "
                                    "time FROM releases WHERE dataset = ? ORDER BY id",
                                    (name,)).fetchall()
        return [{"id": row[0], "query_key": row[1], "query": json.loads(row[1]),
                 "events": json.loads(row[2]), "result": result_from_text(row[3]),
                 "spent_epsilon": row[4], "bound": row[5], "time": row[6]} for row in rows]

    def events(self, name: str) -> tuple[Event, ...]:
        """Every recorded event of a dataset, in order of release."""
        name = check_dataset_name(name)
        with self._connect() as conn:
            with self._transaction(conn, write=False):
                self._dataset(conn, name)
                return tuple(self._recorded_events(conn, name))

    def lookup(self, name: str, query_key) -> Receipt | None:
        """The stored release of ``query_key`` (no cost, nothing computed), or None."""
        name = check_dataset_name(name)
        key = canonical_query_key(query_key)
        with self._connect() as conn:
            with self._transaction(conn, write=False):
                self._dataset(conn, name)
                stored = self._stored(conn, name, key)
        return None if stored is None else self._receipt(stored, cached=True, decode=_identity)

    @staticmethod
    def _receipt(row, *, cached: bool, decode) -> Receipt:
        release_id, text, spent, bound, time = row
        return Receipt(decode(result_from_text(text)), cached, release_id, spent, bound, time)

    # ---- releases ------------------------------------------------------------------
    def release(self, name: str, query_key, compute: Callable[[], Any], events, *,
                encode: Callable[[Any], Any] | None = None,
                decode: Callable[[Any], Any] | None = None):
        """Run the release protocol (module docstring) and return the result.

        ``query_key``: JSON-like value naming the query *and the data* (include
        the parameters and a fingerprint of the input; the stored answer is
        returned for an equal key). ``compute``: no-argument callable returning
        the private result. ``events``: the privacy events one release spends
        (fixed before computing; they must not depend on the data).
        ``encode`` maps the result to JSON-like values (default: named tuples,
        tuples, numpy arrays and scalars are converted); ``decode`` maps the
        stored JSON value back (default: none); the value returned is always
        ``decode(stored JSON)``, for a new release as for a repeated one.

        Raises :class:`LedgerBudgetError` (nothing recorded, result discarded),
        :class:`UnknownDatasetError`, ``TypeError`` / ``ValueError`` for bad
        arguments (before computing), :class:`LedgerError` for file problems;
        an exception from ``compute`` propagates and nothing is recorded.
        """
        return self.release_with_receipt(name, query_key, compute, events, encode=encode,
                                         decode=decode).result

    def release_with_receipt(self, name: str, query_key, compute: Callable[[], Any], events, *,
                             encode: Callable[[Any], Any] | None = None,
                             decode: Callable[[Any], Any] | None = None) -> Receipt:
        """As :meth:`release`, returning a :class:`Receipt` (result, whether it
        was a free repeat, the release id, spent epsilon after it, bound, time)."""
        name = check_dataset_name(name)
        key = canonical_query_key(query_key)
        events = _check_events(events)
        events_text = events_to_text(events)
        if not callable(compute):
            raise TypeError(f"compute must be a callable with no arguments, got {compute!r}")
        encode = _identity if encode is None else encode
        decode = _identity if decode is None else decode

        # repeated query, and fail fast before the (possibly slow) computation
        with self._connect() as conn:
            with self._transaction(conn, write=False):
                dataset = self._dataset(conn, name)
                stored = self._stored(conn, name, key)
                recorded = None if stored else self._recorded_events(conn, name)
        if stored:
            return self._receipt(stored, cached=True, decode=decode)
        self._charge_or_refuse(dataset, recorded, events)

        result_text = result_to_text(encode(compute()))
        self._stage("computed")

        with self._connect() as conn:
            with self._transaction(conn, write=True):
                self._stage("begun")
                dataset = self._dataset(conn, name)
                stored = self._stored(conn, name, key)
                if stored:            # an identical query was recorded meanwhile
                    return self._receipt(stored, cached=True, decode=decode)
                total = self._charge_or_refuse(dataset, self._recorded_events(conn, name), events)
                self._stage("checked")
                time = _now()
                cursor = conn.execute(
                    "INSERT INTO releases (dataset, query_key, events, result, spent_epsilon, "
                    "bound, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (name, key, events_text, result_text, total.value, total.bound, time))
                release_id = cursor.lastrowid
                self._stage("inserted")
        self._stage("committed")
        return Receipt(decode(result_from_text(result_text)), False, release_id, total.value,
                       total.bound, time)

    def _charge_or_refuse(self, dataset: _Dataset, recorded: list, events: tuple) -> AccountingResult:
        """Tightest epsilon of recorded + new events at the budget's delta, or
        :class:`LedgerBudgetError` naming what remains."""
        total = self._account(dataset, list(recorded) + list(events))
        if _within_budget(total.value, dataset.budget_epsilon):
            return total
        spent = self._account(dataset, recorded).value
        remaining = max(0.0, dataset.budget_epsilon - spent)
        would = "infinity" if math.isinf(total.value) else f"{total.value:.6g}"
        # the usual cause of an infinite total: the events' own deltas exceed the budget's
        own_delta = math.fsum(getattr(event, "delta", 0.0) * getattr(event, "count", 1)
                              for event in events)
        why = (f" (this release alone needs delta >= {own_delta:g}, more than the budget "
               f"delta {dataset.budget_delta:g})"
               if math.isinf(total.value) and own_delta > dataset.budget_delta else "")
        raise LedgerBudgetError(
            f"privacy budget of dataset {dataset.name!r} exceeded: this release would bring "
            f"the total to epsilon = {would} at delta = {dataset.budget_delta:g}{why} "
            f"(bound {total.bound}), over the budget epsilon = {dataset.budget_epsilon:g}; "
            f"spent {spent:.6g}, remaining epsilon {remaining:.6g}; nothing was recorded",
            dataset=dataset.name, spent=spent, budget_epsilon=dataset.budget_epsilon,
            budget_delta=dataset.budget_delta, would_spend=total.value)

    def _stage(self, stage: str) -> None:
        """Test seam: called at "computed", "begun", "checked", "inserted"
        (inside the transaction, before COMMIT) and "committed". No-op."""

    def __repr__(self) -> str:
        return f"Ledger({self._path!r})"

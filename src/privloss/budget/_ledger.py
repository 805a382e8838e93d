"""The :class:`Ledger`: opening and verifying, datasets, reading; the release
protocol is the mixin :class:`._protocol.ReleaseProtocol`."""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import threading

from privloss.serialize import (canonical_query_key, events_from_text, events_to_text,
                                           result_from_text)
from privloss.bounds._numeric import check_positive, check_probability
from privloss.events import Event, Interaction

from . import _plan
from ._common import (DEFAULT_TIMEOUT, LEDGER_INTERACTIONS, MAX_NAME_LENGTH, Receipt,
                      _check_analyst, _check_events, _check_interaction, _guarantee_of_json,
                      _Checked, _guarantee_text, _identity, _now, check_dataset_name)
from ._accounting import Dataset, Spending, is_odometer, odometer_policy, spending_of
from ._audit import AnchoredLedger
from ._errors import (DatasetExistsError, LedgerBudgetError, LedgerError, LedgerPlanError,
                      UnknownDatasetError)
from ._integrity import (DATASET_ROW, LedgerIntegrityError, Verified, check_seal,
                         dataset_digest, prefix, verify)
from ._migrate import upgrade_version_1, upgrade_version_2
from ._postgres import PostgresStore, is_postgres_url
from ._protocol import ReleaseProtocol
from ._running import DatasetTables, tables_for
from ._shared import check_view, forget_dataset, opened, replace, shared_for
from ._store import LedgerFile

__all__ = ["Ledger", "Receipt", "check_dataset_name", "LEDGER_INTERACTIONS", "DEFAULT_TIMEOUT",
           "MAX_NAME_LENGTH"]

#: dry-run verdicts kept per ledger object
_VERDICTS = 256


class Ledger(ReleaseProtocol, AnchoredLedger):
    """Durable budget store over one SQLite file (see the package docstring).

    ``Ledger(path)`` creates and initialises the file if it does not exist
    (``create=False``: a missing or empty file is an error, nothing is created)
    and upgrades a schema-1 file in place. Raises :class:`LedgerError` if the
    path is not a single-link regular file, is not a privloss ledger, or is not
    the file the ledger was created as.

    ``witness`` (a file path) anchors the ledger (:mod:`._anchor`): it is
    checked against the witness on open and every charge is recorded in it;
    ``key_file`` (mode 0600), else ``$PRIVLOSS_LEDGER_KEY``, authenticates the
    witness. Both are remembered in the ledger (the key's location only), so a
    later ``Ledger(path)`` uses them too. Without a witness, deleted newest
    releases or a restored older copy cannot be detected (:meth:`verify` says so).
    """

    def __init__(self, path, *, create: bool = True, timeout: float = DEFAULT_TIMEOUT,
                 witness=None, key_file=None):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path, got {path!r}")
        text = os.fspath(path)
        if isinstance(text, bytes):
            text = os.fsdecode(text)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise ValueError(f"path must name a file (the ledger must be durable), got {path!r}")
        timeout = check_positive("timeout", timeout)
        if is_postgres_url(text):
            self._file = PostgresStore(text, timeout=timeout, create=bool(create))
        else:
            self._file = LedgerFile(os.path.abspath(text), timeout=timeout, create=bool(create))
        # the process's verified histories and running tables (O(1) re-checks) of this
        # ledger, shared by its Ledger objects; per dataset this object's view (_shared)
        shared = shared_for(type(self._file).__name__, self._file.path)
        self._shared, self._verified, self._parsed, self._tables, self._lock, self._views = (
            shared, shared.verified, shared.parsed, shared.tables, shared.lock, {})
        # per thread: datasets verified in the current read-only snapshot
        self._snapshot_state = threading.local()
        # fresh dry-run verdicts and the (head, release count) they hold for
        self._verdicts: collections.OrderedDict = collections.OrderedDict()
        self._floor: dict[str, int] = {}
        self._initialise(bool(create), witness, key_file)

    @property
    def path(self) -> str:
        return self._file.path

    # ---- opening -----------------------------------------------------------------
    def _initialise(self, create: bool, witness, key_file) -> None:
        status = self._file.check_path()
        if status is None and not create:
            raise LedgerError(f"no ledger file at {self.path}")
        if status is None:
            self._refuse_recreation(witness)
        writable = status is None or self._file.writable()
        with self._file.connect(create=True, read_only=not writable) as conn:
            with self._file.transaction(conn, write=False):
                state = self._file.schema_state(conn)
            if state == "empty":
                self._refuse_recreation(witness)
                self._file.create_schema(conn)
            elif state in ("version-1", "version-2"):
                if not writable:
                    raise LedgerError(f"ledger {self.path} has schema {state} and must be "
                                      f"upgraded once by a process that can write it")
                with self._file.transaction(conn, write=True):
                    state = self._file.schema_state(conn)
                    if state == "version-1":
                        upgrade_version_1(conn, os.stat(self.path))
                    elif state == "version-2":
                        upgrade_version_2(conn, postgres=is_postgres_url(self.path))
            self._file.check_identity(conn)
            with self._file.transaction(conn, write=False):
                self._resolve_anchor(conn, witness, key_file)
            with self._file.transaction(conn, write=False):
                self._opened = {name: opened(self, conn, name)
                                for (name,) in conn.execute("SELECT name FROM datasets")}
                self._open_anchor(conn)
        self._finish_anchor()
        self._opened = None

    def _verify(self, conn, name: str, prefetched=None) -> Verified:
        """Verify the hash chain of a dataset's history (the part not yet
        verified by this process; all of it on open) and return the verified
        records: the accounting uses nothing else. Raises
        :class:`LedgerIntegrityError` naming the first bad record."""
        memo = getattr(self._snapshot_state, "verified", None)
        if memo is not None and name in memo:
            return memo[name]
        state = self._verify_now(conn, name, prefetched)
        if memo is not None:
            memo[name] = state
        return state

    def _verify_now(self, conn, name: str, prefetched=None) -> Verified:
        """(``prefetched``: the charge's reads, ``_protocol.Prefetched``, made in
        this transaction; used if made from the cache's present state.)"""
        with self._lock:
            cached = self._verified.get(name)
            present = row = records = None
            if cached is not None:
                # the dataset's row and its releases' count in one statement
                if prefetched is not None and prefetched.last_id == cached.last_id:
                    row, records = prefetched.dataset_row, prefetched.releases
                else:
                    row = conn.execute(DATASET_ROW, (name, name)).fetchone()
                if row is None:
                    raise LedgerIntegrityError(f"ledger {self.path}: dataset {name!r} vanished")
                row, present = row[:-1], row[-1]
                if present < cached.count:
                    # an older snapshot than one another thread verified: for a reader
                    # the cache's prefix if the snapshot's head is its chain there, else
                    # this snapshot verified on its own; a charge sees the newest state,
                    # so the ledger was rolled back: what it holds replaces the cache
                    state = None if prefetched is not None else prefix(cached, present, row)
                    if state is None:
                        state = verify(conn, self.path, name, None, present=present, row=row)
                    if prefetched is not None:
                        replace(self, name, state)
                    return state
            state = verify(conn, self.path, name, cached, present=present, row=row,
                           records=records)
            check_view(self.path, name, self._views, state)
            self._verified[name] = state
            # any count seen committed bounds every later one (the charging check)
            self._floor[name] = max(self._floor.get(name, 0), state.count)
            return state

    @contextlib.contextmanager
    def _snapshot(self, conn):
        """A read-only transaction: one snapshot of the ledger, so a dataset
        verified once inside it is not verified again (nothing can change it)."""
        with self._file.transaction(conn, write=False):
            with self._verified_once():
                yield

    @contextlib.contextmanager
    def _verified_once(self):
        """Within: a dataset verified once is not verified again (the caller's
        connection sees no change meanwhile: one snapshot, or one charge under
        the write lock)."""
        self._snapshot_state.verified = {}
        try:
            yield
        finally:
            self._snapshot_state.verified = None

    def connection_ready(self) -> bool:
        """Whether an operation now needs no new connection to a database server
        (an idle one is waiting; always for a local SQLite file)."""
        return self._file.ready()

    def warm(self) -> None:
        """Open a connection and keep it idle for the next operation."""
        with self._file.connect(read_only=True):
            pass

    def _connect(self, *, read_only: bool = False):
        return self._file.connect(read_only=read_only)

    def _read(self):
        """A connection for reading, with the file's identity re-checked."""
        return _Checked(self, read_only=True)

    def _write(self):
        return _Checked(self, read_only=False)

    # ---- reading -----------------------------------------------------------------
    def _dataset(self, conn, name: str) -> Dataset:
        row = conn.execute("SELECT name, budget_epsilon, budget_delta, interaction, policy, plan, "
                           "note, created FROM datasets WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name LIMIT 20")]
            hint = f"; known: {', '.join(map(repr, known))}" if known else "; the ledger has none"
            raise UnknownDatasetError(f"no dataset {name!r} in ledger {self.path}{hint} "
                                      f"(create it with create_dataset / `privloss ledger create`)")
        return Dataset(*row)

    def _decode_events(self, text: str) -> tuple:
        try:
            return events_from_text(text)
        except (ValueError, TypeError) as error:
            raise LedgerError(f"ledger {self.path} holds events that cannot be read "
                              f"({error}); refusing to account with them") from error

    def _recorded_events(self, conn, name: str) -> list[Event]:
        """Every verified recorded event of the dataset, in order."""
        events: list[Event] = []
        for text in self._verify(conn, name).events:
            events.extend(self._decode_events(text))
        return events

    def _parsed_guarantees(self, name: str, state: Verified) -> list:
        """The process's list of the dataset's parsed verified guarantees (call with
        ``self._lock`` held); ``state``'s history is a prefix of it."""
        parsed = self._parsed.setdefault(name, [])
        try:
            # one object per distinct stored text (immutable): a candidate's, once
            # charged, is the same object its history then holds
            parsed.extend(_guarantee_of_json(text) for text in state.guarantees[len(parsed):])
        except (ValueError, TypeError, KeyError) as error:
            raise LedgerError(f"ledger {self.path} holds a release guarantee that cannot "
                              f"be read ({error}); refusing to account with it") from error
        return parsed

    def _guarantees(self, conn, name: str) -> list:
        """Every verified stored guarantee of the dataset, parsed once per process."""
        state = self._verify(conn, name)
        with self._lock:
            # the history as this connection's snapshot sees it (a prefix of the cache)
            return self._parsed_guarantees(name, state)[:state.count]

    def _tables_of(self, conn, name: str) -> DatasetTables:
        """The verified history as running tables (``_running``), advanced by the
        releases verified since the cached ones, keyed by release count and head."""
        state = self._verify(conn, name)
        with self._lock:
            parsed = self._parsed_guarantees(name, state)
            cached = self._tables.get(name)
            tables = tables_for(cached, parsed, state.analysts, state.count, state.chain)
            if cached is None or tables.count >= cached.count:
                self._tables[name] = tables
            return tables

    def _spending(self, conn, dataset: Dataset, extra_events=(), extra_guarantee=None, *,
                  with_delta: bool = False) -> Spending:
        if dataset.interaction == "fully-adaptive":
            tables = self._tables_of(conn, dataset.name)
            table = tables.table
            if extra_guarantee is not None:
                table = table.plus(_guarantee_of_json(extra_guarantee))
            return spending_of(dataset, [], table, hint=tables)
        events = self._recorded_events(conn, dataset.name) + list(extra_events)
        return spending_of(dataset, events, [], with_delta=with_delta)

    @staticmethod
    def _capped(dataset: Dataset, cap) -> Dataset:
        """The dataset's model with an analyst's cap as its budget."""
        if cap is None:
            return dataset
        policy = dataset.policy
        if dataset.interaction == "fully-adaptive":      # the dataset's declared mix
            from privloss.accounting.fully_adaptive import default_policy, mix_of
            policy = json.dumps(default_policy(*cap, mix_of(json.loads(policy))).to_dict(),
                                allow_nan=False)
        return Dataset(dataset.name, cap[0], cap[1], dataset.interaction, policy, dataset.plan,
                       dataset.note, dataset.created)

    def _analyst_spending(self, conn, dataset: Dataset, analyst: str, cap, extra_events=(),
                          extra_guarantee=None, *, with_delta: bool = False) -> Spending:
        """Spending of one analyst's releases (plus a new one) against their cap
        (or, without a cap, against the dataset's budget)."""
        view = self._capped(dataset, cap)
        if dataset.interaction == "fully-adaptive":
            table = self._tables_of(conn, dataset.name).analyst(analyst)
            if extra_guarantee is not None:
                table = table.plus(_guarantee_of_json(extra_guarantee))
            return spending_of(view, [], table)
        state = self._verify(conn, dataset.name)
        mine = [index for index, who in enumerate(state.analysts) if who == analyst]
        events: list[Event] = []
        for index in mine:
            events.extend(self._decode_events(state.events[index]))
        return spending_of(view, events + list(extra_events), [], with_delta=with_delta)

    def _plan_state(self, conn, dataset: Dataset) -> tuple[tuple, set]:
        if dataset.plan is None:
            return (), set()
        try:
            items = _plan.plan_from_text(dataset.plan)
        except (ValueError, TypeError, KeyError) as error:
            raise LedgerError(f"ledger {self.path}: the plan of dataset {dataset.name!r} cannot "
                              f"be read ({error}); refusing it") from error
        used = {item for item in self._verify(conn, dataset.name).plan_items if item is not None}
        return items, used

    # ---- datasets ----------------------------------------------------------------
    def create_dataset(self, name: str, *, epsilon: float | None, delta: float = 0.0,
                       interaction: Interaction | str = Interaction.FULLY_ADAPTIVE,
                       plan=None, mix: str = "mixed") -> dict:
        """Add a dataset with a total budget (epsilon > 0, 0 <= delta < 1) and an
        interaction model; returns :meth:`show`.

        ``epsilon=None``: no fixed budget (fully-adaptive only): nothing is
        refused, and the spent epsilon is a privacy odometer's running reading at
        ``delta`` (:class:`privloss.accounting.PrivacyOdometer`: valid at every
        time at once, with mechanisms, parameters and the number of releases chosen
        from earlier outputs); ``show`` reports it as ``odometer``.

        ``fully-adaptive`` (default): parameters may be chosen from earlier
        outputs; filter-valid rules only, with a policy fixed now from the
        declared ``mix`` (``mixed``, ``pure`` or ``gaussian``:
        :func:`privloss.accounting.fully_adaptive.default_policy`). ``adaptive``
        / ``setwise``: ``plan`` (a sequence of :class:`PlanItem`) is required
        and must fit the budget as a whole (else :class:`LedgerPlanError` saying
        by how much). Raises :class:`DatasetExistsError` if the name is taken:
        a budget is never reset or replaced.
        """
        name = check_dataset_name(name)
        odometer = epsilon is None
        epsilon = math.inf if odometer else check_positive("epsilon", epsilon)
        delta = check_probability("delta", delta, closed_upper=False)
        interaction = _check_interaction(interaction)
        from privloss.accounting.fully_adaptive import MIXES
        if mix not in MIXES or (mix != "mixed" and interaction != "fully-adaptive"):
            raise ValueError(f"mix must be one of {', '.join(MIXES)} (a fully-adaptive "
                             f"budget's filter split), got {mix!r}")
        policy_text = plan_text = None
        if odometer:
            if interaction != "fully-adaptive" or plan is not None:
                raise LedgerPlanError("a dataset without a fixed budget (epsilon=None, a "
                                      "privacy odometer) is fully-adaptive and takes no plan")
            policy_text = odometer_policy(delta)
        elif interaction == "fully-adaptive":
            if plan is not None:
                raise LedgerPlanError("a fully-adaptive budget takes no plan (a plan is for "
                                      "'adaptive' or 'setwise')")
            from privloss.accounting.fully_adaptive import default_policy
            policy_text = json.dumps(default_policy(epsilon, delta, mix).to_dict(),
                                     allow_nan=False)
        else:
            plan_text = _plan.plan_to_text(_plan.check_plan(plan, interaction, epsilon, delta))
        with self._write() as conn:
            with self._file.transaction(conn, write=True):
                exists = conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone()
                if exists:
                    raise DatasetExistsError(f"dataset {name!r} already exists in ledger "
                                             f"{self.path}; budgets are never reset")
                self._check_not_witnessed(name)
                created = _now()
                digest = dataset_digest(name, epsilon, delta, interaction, policy_text,
                                        plan_text, None, created)
                conn.execute("INSERT INTO datasets (name, budget_epsilon, budget_delta, "
                             "interaction, policy, plan, note, created, digest, head, recorded) "
                             "VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, 0)",
                             (name, epsilon, delta, interaction, policy_text, plan_text, created,
                              digest, digest))
                forget_dataset(self, name)        # a deleted namesake's history is not this one
        self._witness(name, 0, digest)
        return self.show(name)

    def datasets(self) -> list[str]:
        """Names of the datasets, sorted."""
        with self._read() as conn:
            return [row[0] for row in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def show(self, name: str, *, analyst: str | None = None, analyst_budget=None) -> dict:
        """Budget and spending of one dataset.

        Keys: ``dataset``, ``budget_epsilon``, ``budget_delta``,
        ``spent_epsilon`` and ``spent_delta`` (see :class:`Spending`),
        ``remaining_epsilon`` / ``remaining_delta`` (budget minus spent, >= 0),
        ``releases`` (recorded, whatever their status), ``failed`` (charged
        computations that raised), ``interaction``, ``bound`` (rule or bound that
        decides), ``admitted`` (the history fits), ``note`` (e.g. an upgrade
        note, else None), ``plan`` (None, or one dict per planned release with
        ``item``, ``match``, ``events``, ``used``), ``odometer`` (None, or for a
        dataset without a fixed budget ``epsilon``, ``delta`` and ``bound``: the
        running odometer reading, valid under fully adaptive choice, also
        ``spent_epsilon``; the budget epsilon is then inf), ``created``.

        With ``analyst``: also ``analyst`` and ``mine``, that analyst's
        releases, spent and remaining (against ``analyst_budget`` when given,
        else against the dataset's budget).
        """
        name = check_dataset_name(name)
        analyst, cap = _check_analyst(analyst, analyst_budget)
        with self._read() as conn:
            with self._snapshot(conn):
                dataset = self._dataset(conn, name)
                self._verify(conn, name)
                count, failed = conn.execute(
                    "SELECT count(*), count(CASE WHEN o.status = 'failed' THEN 1 END) "
                    "FROM releases r LEFT JOIN outcomes o ON o.release_id = r.id "
                    "WHERE r.dataset = ?", (name,)).fetchone()
                spent = self._spending(conn, dataset, with_delta=True)
                items, used = self._plan_state(conn, dataset)
                mine = None
                if analyst is not None:
                    own = self._analyst_spending(conn, dataset, analyst, cap, with_delta=True)
                    view = self._capped(dataset, cap)
                    mine = {"analyst": analyst,
                            "releases": sum(1 for who in self._verify(conn, name).analysts
                                            if who == analyst),
                            "budget_epsilon": view.budget_epsilon,
                            "budget_delta": view.budget_delta,
                            "spent_epsilon": own.epsilon, "spent_delta": own.delta,
                            "remaining_epsilon": max(0.0, view.budget_epsilon - own.epsilon),
                            "remaining_delta": max(0.0, view.budget_delta - own.delta),
                            "bound": own.bound}
        odometer = {"epsilon": spent.epsilon, "delta": dataset.budget_delta,
                    "bound": spent.bound} if is_odometer(dataset) else None
        plan = None if dataset.plan is None else [
            {"item": index + 1, "match": item.match,
             "events": [repr(event) for event in item.events], "used": index in used}
            for index, item in enumerate(items)]
        return {
            "dataset": dataset.name,
            "budget_epsilon": dataset.budget_epsilon,
            "budget_delta": dataset.budget_delta,
            "spent_epsilon": spent.epsilon,
            "spent_delta": spent.delta,
            "remaining_epsilon": max(0.0, dataset.budget_epsilon - spent.epsilon),
            "remaining_delta": max(0.0, dataset.budget_delta - spent.delta),
            "releases": count,
            "failed": failed,
            "interaction": dataset.interaction,
            "bound": spent.bound,
            "admitted": spent.admitted,
            "note": dataset.note,
            "plan": plan,
            "odometer": odometer,
            "created": dataset.created,
            **({} if mine is None else {"mine": mine}),
        }

    def history(self, name: str, *, analyst: str | None = None) -> list[dict]:
        """Recorded releases of a dataset, oldest first: ``id``, ``query_key``
        (canonical text), ``query`` (its JSON value), ``events`` (JSON objects),
        ``status`` (``done``, ``failed`` or ``pending``), ``result`` (the stored
        JSON value; None unless done), ``plan_item`` (1-based, or None),
        ``spent_epsilon`` (after that release), ``bound``, ``time`` (UTC) and
        ``analyst`` (None if untagged). With ``analyst``: that analyst's only."""
        name = check_dataset_name(name)
        analyst, _ = _check_analyst(analyst, None)
        with self._read() as conn:
            with self._snapshot(conn):
                self._dataset(conn, name)
                self._verify(conn, name)
                rows = conn.execute("SELECT r.id, r.query_key, r.events, "
                                    "coalesce(o.status, 'pending'), o.result, r.plan_item, "
                                    "r.spent_epsilon, r.bound, r.time, r.analyst FROM releases r "
                                    "LEFT JOIN outcomes o ON o.release_id = r.id "
                                    "WHERE r.dataset = ? ORDER BY r.id", (name,)).fetchall()
        if analyst is not None:
            rows = [row for row in rows if row[9] == analyst]
        return [{"id": row[0], "query_key": row[1], "query": json.loads(row[1]),
                 "events": json.loads(row[2]), "status": row[3],
                 "result": None if row[4] is None else result_from_text(row[4]),
                 "plan_item": None if row[5] is None else row[5] + 1,
                 "spent_epsilon": row[6], "bound": row[7], "time": row[8], "analyst": row[9]}
                for row in rows]

    def events(self, name: str) -> tuple[Event, ...]:
        """Every recorded event of a dataset, in order of release."""
        name = check_dataset_name(name)
        with self._read() as conn:
            with self._snapshot(conn):
                self._dataset(conn, name)
                self._verify(conn, name)
                return tuple(self._recorded_events(conn, name))

    def lookup(self, name: str, query_key) -> Receipt | None:
        """The stored answer of ``query_key`` (no cost, nothing computed), or None."""
        name = check_dataset_name(name)
        key = canonical_query_key(query_key)
        with self._read() as conn:
            with self._snapshot(conn):
                self._dataset(conn, name)
                self._verify(conn, name)
                stored = self._stored(conn, name, key)
        return None if stored is None else self._receipt(stored, cached=True, decode=_identity)

    def _stored(self, conn, name: str, key: str):
        row = conn.execute("SELECT r.id, o.result, r.spent_epsilon, r.bound, r.time, "
                           "r.plan_item, r.chain, o.seal FROM releases r JOIN outcomes o ON "
                           "o.release_id = r.id WHERE r.dataset = ? AND r.query_key = ? AND "
                           "o.status = 'done' ORDER BY r.id LIMIT 1", (name, key)).fetchone()
        if row is None:
            return None
        check_seal(self.path, name, row[0], row[6], "done", row[1], row[7])
        return row[:6]

    @staticmethod
    def _receipt(row, *, cached: bool, decode) -> Receipt:
        release_id, text, spent, bound, time, plan_item = row
        return Receipt(decode(result_from_text(text)), cached, release_id, spent, bound, time,
                       None if plan_item is None else plan_item + 1)

    def would_admit(self, name: str, query_key, events, *, analyst: str | None = None,
                    analyst_budget=None, fresh: bool = False) -> dict:
        """What :meth:`release` would do now, without computing, recording or
        reading any data (a dry run; another process may spend meanwhile).

        Returns ``admitted`` (a new release would be charged), ``cached`` (the
        stored answer would be returned, free), ``plan_item`` (1-based, or
        None), ``spent_epsilon`` / ``spent_delta`` (of the history with this
        release), ``bound`` and ``reason`` (the binding constraint or plan
        mismatch when not admitted), ``refusal`` (None, ``"plan"`` or
        ``"budget"``: the error :meth:`release` would raise). ``fresh=True``
        says the query key was never answered (a dry run's unique key), so the
        stored answers are not searched; wrongly set, the answer can only
        overstate the cost."""
        name = check_dataset_name(name)
        analyst, cap = _check_analyst(analyst, analyst_budget)
        key = canonical_query_key(query_key)
        events = _check_events(events)
        events_text = events_to_text(events)
        if fresh:
            # a fresh query's verdict depends only on the history: reuse it while the
            # dataset's head and release count are those it was computed at
            memo_key = (name, events_text, analyst, repr(cap))
            with self._read() as conn:
                version = conn.execute("SELECT head, recorded FROM datasets WHERE name = ?",
                                       (name,)).fetchone()
            with self._lock:
                hit = self._verdicts.get(memo_key)
            if hit is not None and version is not None and hit[0] == tuple(version):
                return dict(hit[1])
        verdict, version = self._would_admit(name, query_key, key, events, events_text, analyst,
                                             cap, fresh)
        if fresh and version is not None:
            with self._lock:
                self._verdicts[memo_key] = (version, verdict)
                self._verdicts.move_to_end(memo_key)
                while len(self._verdicts) > _VERDICTS:
                    self._verdicts.popitem(last=False)
        return dict(verdict)

    def _would_admit(self, name, query_key, key, events, events_text, analyst, cap, fresh):
        """:meth:`would_admit`'s verdict and the (head, release count) it holds for
        (fully adaptive datasets only: under a plan the verdict also depends on the key)."""
        with self._read() as conn:
            with self._snapshot(conn):
                dataset = self._dataset(conn, name)
                state = self._verify(conn, name)
                version = (state.chain, state.count) \
                    if dataset.interaction == "fully-adaptive" else None
                if not fresh and self._stored(conn, name, key) is not None:
                    spent = self._spending(conn, dataset)
                    return {"admitted": True, "cached": True, "plan_item": None, "refusal": None,
                            "spent_epsilon": spent.epsilon, "spent_delta": spent.delta,
                            "bound": spent.bound, "reason": "an identical query was answered: "
                            "its stored answer is returned at no cost"}, version
                guarantee = _guarantee_text(events) \
                    if dataset.interaction == "fully-adaptive" else json.dumps({})
                try:
                    plan_item = self._match_plan(conn, dataset, query_key, events_text)
                    total = self._spending(conn, dataset, events, guarantee)
                    if total.admitted and cap is not None:
                        self._refuse_over_cap(conn, dataset, analyst, cap, events, guarantee)
                except (LedgerPlanError, LedgerBudgetError) as error:
                    spent = self._spending(conn, dataset)
                    kind = "plan" if isinstance(error, LedgerPlanError) else "budget"
                    return {"admitted": False, "cached": False, "plan_item": None, "refusal": kind,
                            "spent_epsilon": spent.epsilon, "spent_delta": spent.delta,
                            "bound": spent.bound, "reason": str(error)}, version
        return {"admitted": total.admitted, "cached": False,
                "refusal": None if total.admitted else "budget",
                "plan_item": None if plan_item is None else plan_item + 1,
                "spent_epsilon": total.epsilon, "spent_delta": total.delta,
                "bound": total.bound, "reason": total.message}, version

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"


"""The release protocol of :class:`~privloss.budget.Ledger`: check
and charge under the write lock, compute, store (package docstring, steps 2-5)."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time as _time
from typing import Any, Callable, NamedTuple

from privloss.serialize import (canonical_query_key, events_to_text, result_from_text,
                                           result_to_text)

from . import _plan
from ._accounting import Dataset, Spending
from ._common import (Receipt, _check_analyst, _check_events, _guarantee_text, _identity, _now,
                      check_dataset_name)
from ._errors import LedgerBudgetError, LedgerError
from ._group import AfterCommitError, group_for, writing
from ._integrity import DATASET_ROW, check_seal, release_chain, release_seal, releases_since

__all__ = ["ReleaseProtocol"]


_HOST: list = []        # [(pid, host name)]: asked once per process


def _host() -> str:
    pid = os.getpid()
    if not _HOST or _HOST[0][0] != pid:
        _HOST[:] = [(pid, socket.gethostname())]
    return _HOST[0][1]


def _owner() -> str:
    """Who computes a pending release: host, process and thread."""
    return f"{_host()}:{os.getpid()}:{threading.get_ident()}"


def _abandoned(owner: str | None, me: str) -> bool:
    """A pending release whose owner is the asking thread ``me`` (a nested
    identical query) or a process of this host that no longer exists: not
    worth waiting for."""
    if owner is None:
        return True
    if owner == me:
        return True
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != _host() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False



#: the releases of one query key with their outcomes (parameters: dataset, key)
_ANSWERS = ("SELECT r.id, o.status, o.result, r.spent_epsilon, r.bound, r.time, r.plan_item, "
            "r.chain, o.seal, r.owner FROM releases r LEFT JOIN outcomes o ON o.release_id = "
            "r.id WHERE r.dataset = ? AND r.query_key = ? ORDER BY r.id")


class Prefetched(NamedTuple):
    """A charge's reads (:meth:`ReleaseProtocol._prefetch`)."""

    last_id: int            # the verified release the releases were read from
    dataset_row: tuple | None
    releases: list
    answers: list
    next_id: int


def _guarantee_for(interaction: str, events) -> str:
    """The stored guarantee text of one release under a dataset's model."""
    return _guarantee_text(events) if interaction == "fully-adaptive" else "{}"


class ReleaseProtocol:
    """Mixin of :class:`Ledger`: the writing half (uses the reading half's
    ``_verify``, ``_spending``, ``_stored``... and ``_file``)."""

    # ---- releases ------------------------------------------------------------------
    def release(self, name: str, query_key, compute: Callable[[], Any], events, *,
                encode: Callable[[Any], Any] | None = None,
                decode: Callable[[Any], Any] | None = None,
                analyst: str | None = None, analyst_budget=None):
        """Run the release protocol and return the result (see
        :meth:`release_with_receipt`)."""
        return self.release_with_receipt(name, query_key, compute, events, encode=encode,
                                         decode=decode, analyst=analyst,
                                         analyst_budget=analyst_budget).result

    def release_with_receipt(self, name: str, query_key, compute: Callable[[], Any], events, *,
                             encode: Callable[[Any], Any] | None = None,
                             decode: Callable[[Any], Any] | None = None,
                             analyst: str | None = None, analyst_budget=None) -> Receipt:
        """Validate; answer an identical stored query for free; check the plan
        and the budget and *charge* (record the release as pending) under the
        write lock; only then call ``compute()``; store its result and return
        ``decode(stored JSON)``.

        ``query_key``: JSON-like value naming the query and the data (the stored
        answer is returned for an equal key). ``events``: what one release
        spends, fixed before computing. Raises :class:`LedgerBudgetError` or
        :class:`LedgerPlanError` before ``compute`` is called (nothing
        recorded); if ``compute`` (or ``encode``) raises, the release stays
        charged (status ``failed``) and the exception propagates: a failure
        that depended on the data must not be a free oracle.

        ``analyst`` tags the release with who asked; ``analyst_budget``
        ``(epsilon, delta)`` also requires that analyst's releases on this
        dataset, this one included, to fit that cap under the dataset's model
        (checked in the same transaction; a cap only stops earlier).
        """
        name = check_dataset_name(name)
        analyst, cap = _check_analyst(analyst, analyst_budget)
        key = canonical_query_key(query_key)
        events = _check_events(events)
        events_text = events_to_text(events)
        if not callable(compute):
            raise TypeError(f"compute must be a callable with no arguments, got {compute!r}")
        encode = _identity if encode is None else encode
        decode = _identity if decode is None else decode

        try:
            self._check_witness_writable()
        except LedgerError:
            # a stored answer leaves without a charge, so without a witness line
            stored = self._stored_answer(name, key)
            if stored:
                return self._receipt(stored, cached=True, decode=decode)
            raise
        # the guarantee is computed before the lock from the dataset's model as this
        # process verified it (immutable: covered by the dataset's digest); the
        # charge itself reads the model again, under the lock, and recomputes it
        # there if this process had not seen the dataset yet
        with self._lock:
            known = self._verified.get(name)
        guarantee = None if known is None or known.dataset is None else \
            _guarantee_for(known.dataset[3], events)
        owner = _owner()
        group = group_for(self._file.path)

        def charge(conn):
            """Check and charge under the write lock (run by the group's leader, in
            queue order, possibly after other threads' charges in this transaction)."""
            with self._verified_once():         # nothing changes until our insert
                return check_and_insert(conn)

        def check_and_insert(conn):
            self._stage("begun")
            with self._lock:
                cached = self._verified.get(name)
            if cached is None:
                self._dataset(conn, name)           # UnknownDatasetError, with the known names
            prefetched = None if cached is None else self._prefetch(conn, name, key, cached)
            verified = self._verify(conn, name, prefetched)
            # the row verify() just read and checked against its digest (one read)
            dataset = Dataset(*verified.dataset)
            self._check_not_behind(name, verified.count)
            # a repeated query costs nothing: its stored answer is looked up here, under
            # the lock, in the one query that also finds an identical pending release
            stored, pending = self._answers_of(
                conn, name, key, owner, None if prefetched is None else prefetched.answers)
            if stored:
                return "stored", stored
            if pending is not None:
                return "pending", pending
            nonlocal guarantee
            if guarantee is None:
                guarantee = _guarantee_for(dataset.interaction, events)
            plan_item = self._match_plan(conn, dataset, query_key, events_text)
            spent = self._charge_or_refuse(conn, dataset, events, guarantee)
            if cap is not None:
                self._refuse_over_cap(conn, dataset, analyst, cap, events, guarantee)
            self._stage("checked")
            time = _now()
            release_id, count, head = self._insert_pending(
                conn, name, key, events_text, guarantee, plan_item, spent, time, analyst,
                owner, verified.chain, verified.count,
                None if prefetched is None else prefetched.next_id)
            self._witness_after_commit(name, count, head)
            return "charged", (release_id, count, head, plan_item, spent, time)

        deadline = _time.monotonic() + self._file.timeout
        unwitnessed = None
        while True:
            try:
                outcome, value = group.run(self, charge)
            except AfterCommitError as failed:      # charged, but its witness line failed
                (outcome, value), unwitnessed = failed.result, failed.error
            if outcome == "stored":
                return self._receipt(value, cached=True, decode=decode)
            if outcome == "charged":
                release_id, count, head, plan_item, spent, time = value
                break
            # an identical query is being computed: its answer will be free
            if _time.monotonic() > deadline:
                raise LedgerError(f"an identical query on dataset {name!r} has been computing "
                                  f"for more than {self._file.timeout:g} s ({value}); try "
                                  f"again later (nothing was recorded)")
            _time.sleep(0.02)
        self._stage("charged")
        # the witness line (the batch's newest head of this dataset) was written after
        # the commit, before this thread was woken (_witness_after_commit)
        self._witnessed(name, count)
        if unwitnessed is not None:
            self._finish(release_id, head, "failed", None)
            raise unwitnessed

        try:
            result_text = result_to_text(encode(compute()))
        except BaseException:
            self._finish(release_id, head, "failed", None)
            raise
        self._stage("computed")
        self._finish(release_id, head, "done", result_text)
        self._stage("committed")
        return Receipt(decode(result_from_text(result_text)), False, release_id, spent.epsilon,
                       spent.bound, time, None if plan_item is None else plan_item + 1)

    def _stored_answer(self, name: str, key: str):
        """The stored answer of ``key`` read in a snapshot (``_stored``), or None."""
        with self._read() as conn:
            with self._snapshot(conn):
                self._dataset(conn, name)
                self._verify(conn, name)
                return self._stored(conn, name, key)

    def _prefetch(self, conn, name: str, key: str, cached) -> "Prefetched":
        """The reads of a charge, made together (one round trip to a PostgreSQL
        server, :meth:`PostgresStore.prefetch`) inside its transaction: the
        dataset's row and release count, its releases from ``cached``'s last
        verified one on, the rows of an identical query, the next release id."""
        with self._lock:        # other threads' reads advance the cached state in place
            last_id = cached.last_id
        row, releases, answers, next_id = self._file.prefetch(conn, (
            (DATASET_ROW, (name, name)), (releases_since(), (name, last_id)),
            (_ANSWERS, (name, key)), (self._file.NEXT_RELEASE_ID, ())))
        return Prefetched(last_id, row[0] if row else None, releases, answers, next_id[0][0])

    def _insert_pending(self, conn, name: str, key: str, events_text: str, guarantee: str,
                        plan_item, spent: Spending, time: str, analyst: str | None,
                        owner: str, head: str, recorded: int,
                        release_id: int | None = None) -> tuple[int, int, str]:
        """Record a charged release, chained to the dataset's head (inside the
        charging transaction; ``head`` and ``recorded`` as verified in it: the
        verification checked them against the dataset's row; ``release_id`` as
        prefetched in it, else read now); its id, the dataset's new release
        count and head."""
        if release_id is None:
            release_id = conn.execute(self._file.NEXT_RELEASE_ID).fetchone()[0]
        chain = release_chain(head, release_id, name, key, events_text, guarantee, plan_item,
                              owner, analyst, spent.epsilon, spent.bound, time)
        writing()       # from here on, a failure must roll back this piece's writes
        updated = self._file.insert_release(
            conn, (release_id, name, key, events_text, guarantee, plan_item, owner, analyst,
                   spent.epsilon, spent.bound, time, chain), (chain, name, head, recorded))
        if updated != 1:      # cannot happen under the write lock; never chain off a stale head
            raise LedgerError(f"ledger {self.path}: dataset {name!r} changed during its "
                              f"charging transaction; nothing was recorded")
        return release_id, recorded + 1, chain

    def _answers_of(self, conn, name: str, key: str, me: str, rows=None) -> tuple:
        """(the stored answer of an identical query as ``_stored`` gives it, or None;
        the owner of a live pending identical release, or None), in one query
        (``rows``: its rows, if prefetched in this transaction); ``me``: the
        asking thread's owner string."""
        stored = pending = None
        if rows is None:
            rows = conn.execute(_ANSWERS, (name, key)).fetchall()
        for (release_id, status, result, spent, bound, time, plan_item, chain, seal,
             owner) in rows:
            if status == "done" and stored is None:
                check_seal(self.path, name, release_id, chain, "done", result, seal)
                stored = (release_id, result, spent, bound, time, plan_item)
            elif status is None and pending is None and not _abandoned(owner, me):
                pending = owner
        return stored, pending

    def _finish(self, release_id: int, chain: str, status: str,
                result_text: str | None) -> None:
        """Store the outcome of a pending release (``chain``: its chain value,
        as charged) as a row of its own (release records are never updated); a
        release no longer pending is left as it is."""
        seal = release_seal(chain, status, result_text)

        def finish(conn):
            writing()
            conn.execute("INSERT INTO outcomes (release_id, status, result, seal) "
                         "SELECT id, ?, ?, ? FROM releases WHERE id = ? AND chain = ? AND "
                         "NOT EXISTS (SELECT 1 FROM outcomes WHERE release_id = ?)",
                         (status, result_text, seal, release_id, chain, release_id))
            self._stage("finishing")

        # not durable on its own: the charge was (before computing); a power failure
        # before the next durable COMMIT may lose this outcome, leaving the release
        # charged and pending, never free (docs/ledger.md, "Guarantees")
        group_for(self._file.path).run(self, finish, durable=False)

    def _match_plan(self, conn, dataset: Dataset, query_key, events_text: str) -> int | None:
        if dataset.interaction == "fully-adaptive":
            return None
        items, used = self._plan_state(conn, dataset)
        index = _plan.next_item(items, used, dataset.interaction, query_key, events_text)
        if index < 0:
            spent = self._spending(conn, dataset)
            raise LedgerBudgetError(
                f"privacy budget of dataset {dataset.name!r} is used up: all {len(items)} "
                f"planned releases were made (spent epsilon = {spent.epsilon:.6g} of "
                f"{dataset.budget_epsilon:g}); nothing was recorded",
                dataset=dataset.name, spent=spent.epsilon, budget_epsilon=dataset.budget_epsilon,
                budget_delta=dataset.budget_delta, would_spend=math.inf)
        return index

    def _refuse_over_cap(self, conn, dataset: Dataset, analyst: str, cap, events: tuple,
                         guarantee: str) -> None:
        """:class:`LedgerBudgetError` if the analyst's releases plus this one
        exceed the analyst's cap."""
        total = self._analyst_spending(conn, dataset, analyst, cap, events, guarantee)
        if total.admitted:
            return
        spent = self._analyst_spending(conn, dataset, analyst, cap)
        raise LedgerBudgetError(
            f"analyst {analyst!r}'s cap on dataset {dataset.name!r} (epsilon {cap[0]:g}, delta "
            f"{cap[1]:g}) exceeded: {total.message} (their spent epsilon {spent.epsilon:.6g}, "
            f"remaining {max(0.0, cap[0] - spent.epsilon):.6g}); nothing was recorded or computed",
            dataset=dataset.name, spent=spent.epsilon, budget_epsilon=cap[0],
            budget_delta=cap[1], would_spend=total.epsilon)

    def _charge_or_refuse(self, conn, dataset: Dataset, events: tuple,
                          guarantee: str) -> Spending:
        """Spending of the history plus this release, or :class:`LedgerBudgetError`
        naming the binding constraint and what remains."""
        total = self._spending(conn, dataset, events, guarantee)
        if total.admitted:
            return total
        spent = self._spending(conn, dataset)
        if math.isinf(dataset.budget_epsilon):          # a privacy odometer: no budget
            raise LedgerBudgetError(
                f"dataset {dataset.name!r} refused the release: {total.message} (spent "
                f"epsilon {spent.epsilon:.6g}); nothing was recorded or computed",
                dataset=dataset.name, spent=spent.epsilon,
                budget_epsilon=dataset.budget_epsilon, budget_delta=dataset.budget_delta,
                would_spend=total.epsilon)
        remaining = max(0.0, dataset.budget_epsilon - spent.epsilon)
        raise LedgerBudgetError(
            f"privacy budget of dataset {dataset.name!r} exceeded: {total.message} "
            f"(spent epsilon {spent.epsilon:.6g}, delta {spent.delta:.3g}; remaining epsilon "
            f"{remaining:.6g} of {dataset.budget_epsilon:g}, delta budget "
            f"{dataset.budget_delta:g}); nothing was recorded or computed",
            dataset=dataset.name, spent=spent.epsilon, budget_epsilon=dataset.budget_epsilon,
            budget_delta=dataset.budget_delta, would_spend=total.epsilon)

    def _stage(self, stage: str) -> None:
        """Test seam: called at "begun", "checked" (inside the charging
        transaction), "charged", "computed", "finishing" (inside the result
        transaction) and "committed". No-op."""


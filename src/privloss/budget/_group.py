"""Group commit: the write transactions of a process's threads share one commit.

Definition
----------
Every charge (and every stored answer) needs a write transaction that ends
with a durable COMMIT, an fsync on SQLite (``synchronous=FULL``) or a WAL
flush on PostgreSQL, and one writer holds the lock at a time. With many
threads, the lock and the fsyncs, not the checks, bound the throughput. Here
the threads of one process that write to one ledger queue their work; one of
them (the *leader*) opens one write transaction, runs each queued piece of
work in queue order and commits once; then every thread gets its own result
or exception, and the next waiting thread leads the next batch.

Privacy guarantee
-----------------
Unchanged: each piece of work is the same check-and-insert as before, run
under the same write lock, in order, on a connection that sees every earlier
piece of the batch (its own uncommitted writes), so each charge is re-checked
against the history including every charge admitted before it. A refusal
raises before the piece writes anything, so nothing needs rolling back; a
piece that raises after writing (:func:`writing` marks the point), or with a
database error, rolls the whole transaction back and the batch runs again with
each piece in its own savepoint, so that piece's ``ROLLBACK TO SAVEPOINT``
undoes its writes only (no savepoint per piece otherwise: two statements, and
on PostgreSQL two round trips, saved per charge). No thread is
told "charged" before the COMMIT returns; if the COMMIT fails, every piece of
the batch fails and nothing was charged, and the verified-record caches of
the ledgers that took part are dropped (they may hold rows that were never
committed; they are re-verified from the tables).

After the COMMIT, and before any thread of the batch is woken, the leader
runs the pieces' :func:`after_commit` actions, one per key (the ledger writes
one witness line per dataset: the batch's newest head).

Citation
--------
Group commit (DeWitt et al., "Implementation techniques for main memory
database systems", SIGMOD 1984; PostgreSQL's ``commit_delay``).

Runtime
-------
One COMMIT per batch instead of one per charge; a batch holds at most
:data:`MAX_BATCH` pieces, so a thread waits for at most one batch before its own.
"""

from __future__ import annotations

import os
import threading
from _thread import allocate_lock as _allocate_lock

__all__ = ["group_for", "writing", "after_commit", "AfterCommitError", "MAX_BATCH"]

#: pieces of work per transaction (bounds the wait of the last one)
MAX_BATCH = 64

_GROUPS: dict = {}
#: the piece of work the leader thread is running (for :func:`writing`)
_RUNNING = threading.local()
_GROUPS_LOCK = threading.Lock()


class _Work:
    """One piece of work and its thread's wake-up: ``signal`` is a bare lock,
    taken at creation, that the thread waits on by acquiring it and that is
    released once per wake-up (the lead handed to it, or its work done). A
    bare lock is a single C call on each side; an ``Event`` is a Condition with
    a lock and a waiter lock per wait, about a dozen Python-level steps, and
    with 16 writers those steps were a tenth of the interpreter's time."""

    __slots__ = ("ledger", "body", "result", "error", "finished", "signal", "wrote", "durable",
                 "after", "after_error")

    def __init__(self, ledger, body, durable: bool):
        self.ledger, self.body = ledger, body
        self.result = self.error = None
        self.wrote = False
        self.durable = durable
        self.after = self.after_error = None       # see after_commit
        self.finished = False       # set (by the leader) before the wake-up
        self.signal = _allocate_lock()
        self.signal.acquire()

    def wake(self) -> None:
        self.signal.release()

    def wait(self) -> None:
        self.signal.acquire()

    def finish(self) -> None:
        """Its result or error is set: mark it done and wake its thread (a leader
        finishing its own work wakes nobody: the released lock is just dropped)."""
        self.finished = True
        self.signal.release()


class GroupCommit:
    """The queue of one ledger's writers in one process (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queue: list[_Work] = []
        self._leading = False

    def run(self, ledger, body, *, durable: bool = True):
        """``body(conn)`` inside a write transaction of ``ledger``'s store,
        committed with the other queued work; its result, or its exception.
        ``durable=False``: the work may be lost with the last commits in a power
        failure (never torn; a later durable commit makes it durable too); a
        batch is committed durably if any of its pieces asks for it."""
        work = _Work(ledger, body, durable)
        with self._lock:
            self._queue.append(work)
            lead = not self._leading
            self._leading = True
        if lead:
            self._lead(work)
        else:
            work.wait()
            if not work.finished:   # handed the lead: our work is in the next batch
                self._lead(work)
        if work.error is not None:
            raise work.error
        if work.after_error is not None:
            raise AfterCommitError(work.result, work.after_error)
        return work.result

    def _lead(self, mine: _Work) -> None:
        """Commit batches until ``mine`` is done; then hand the lead on."""
        try:
            while not mine.finished:
                with self._lock:
                    batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                self._commit(mine.ledger, batch)
        finally:
            with self._lock:
                if self._queue:
                    successor = self._queue[0]
                    successor.wake()        # not finished: it leads
                else:
                    self._leading = False

    @staticmethod
    def _commit(ledger, batch: list[_Work]) -> None:
        floors = {id(work.ledger): dict(work.ledger._floor) for work in batch}
        if len(batch) == 1:
            GroupCommit._commit_one(ledger, batch[0], floors)
            return
        try:
            try:
                GroupCommit._run_batch(ledger, batch, savepoints=False)
            except _Dirty:
                # a piece failed after writing (or the database failed it): the whole
                # transaction was rolled back; run the batch again, each piece in its
                # own savepoint, so that piece's failure rolls back only its own writes
                for work in batch:
                    work.result = work.error = work.after = None
                    work.wrote = False
                    _forget(work.ledger, floors)
                GroupCommit._run_batch(ledger, batch, savepoints=True)
        except BaseException as error:
            # nothing of the batch was committed: no piece may report success,
            # and caches that saw its uncommitted rows are dropped
            for work in batch:
                if work.error is None:
                    work.result, work.error = None, error
                _forget(work.ledger, floors)
            for work in batch:
                work.finish()
            if not isinstance(error, Exception):
                raise
            return
        _after_commit(batch)
        for work in batch:
            work.finish()

    @staticmethod
    def _run_batch(ledger, batch: list[_Work], *, savepoints: bool) -> None:
        """Every piece in one write transaction, committed at the end. Without
        ``savepoints`` a piece that raises before writing anything (a refusal: the
        checks come before the insert) needs no rollback; one that raises after
        writing, or with a database error (PostgreSQL then aborts the whole
        transaction), raises :class:`_Dirty` and the transaction is rolled back."""
        with ledger._write() as conn:
            with ledger._file.transaction(conn, write=True,
                                          durable=any(work.durable for work in batch)):
                for work in batch:
                    if savepoints:
                        conn.execute("SAVEPOINT privloss_work")
                    _RUNNING.work = work
                    try:
                        work.result = work.body(conn)
                    except Exception as error:        # this piece only
                        if not savepoints and (work.wrote or _is_driver_error(error)):
                            raise _Dirty from error
                        if savepoints:
                            conn.execute("ROLLBACK TO SAVEPOINT privloss_work")
                        work.error = _translated(ledger, error)
                    finally:
                        _RUNNING.work = None
                    if savepoints:
                        conn.execute("RELEASE SAVEPOINT privloss_work")

    @staticmethod
    def _commit_one(ledger, work: _Work, floors: dict) -> None:
        """A batch of one: no savepoint; its exception rolls the transaction back."""
        try:
            with ledger._write() as conn:
                with ledger._file.transaction(conn, write=True, durable=work.durable):
                    _RUNNING.work = work
                    try:
                        work.result = work.body(conn)
                    except Exception as error:
                        work.error = _translated(ledger, error)
                        raise _PieceFailed from None
                    finally:
                        _RUNNING.work = None
            _after_commit([work])
        except _PieceFailed:
            pass        # rolled back; its caches saw no uncommitted row of another piece
        except BaseException as error:
            if work.error is None:
                work.result, work.error = None, error
            _forget(work.ledger, floors)
            if not isinstance(error, Exception):
                work.finish()
                raise
        work.finish()


def _forget(owner, floors: dict) -> None:
    """Drop a ledger's caches that may hold rows of a batch that was not committed."""
    with owner._lock:
        owner._verified.clear()
        owner._parsed.clear()
        owner._tables.clear()
        owner._views.clear()
        owner._floor.clear()
        owner._floor.update(floors[id(owner)])


class _Dirty(Exception):
    """Internal: a piece failed after writing; roll the batch back and rerun it
    with a savepoint per piece."""


def after_commit(key, rank: int, action) -> None:
    """Called by a piece of work: once its transaction has committed, and before
    any thread of the batch is woken, run ``action()`` (nothing if the piece or
    the transaction fails). Of the pieces of one batch that give the same
    ``key``, only the action of the largest ``rank`` runs; its exception, if any,
    is raised by :meth:`GroupCommit.run` in every one of those pieces' threads
    as :class:`AfterCommitError` (with the piece's result). The ledger writes
    one witness line per dataset and transaction this way: the newest head of
    the batch, which every charge of the batch precedes in the chain."""
    work = getattr(_RUNNING, "work", None)
    if work is None:
        raise RuntimeError("after_commit is for a piece of work run by GroupCommit")
    work.after = (key, rank, action)


def _after_commit(batch: list[_Work]) -> None:
    """After a commit: the chosen action of each key (see :func:`after_commit`)."""
    chosen: dict = {}
    for work in batch:
        if work.error is None and work.after is not None:
            key, rank, action = work.after
            if key not in chosen or rank > chosen[key][0]:
                chosen[key] = (rank, action)
    if not chosen:
        return
    errors = {}
    for key, (_, action) in chosen.items():
        try:
            action()
        except Exception as error:      # handed to each piece's own thread
            errors[key] = error
    for work in batch:
        if work.error is None and work.after is not None:
            work.after_error = errors.get(work.after[0])


class AfterCommitError(Exception):
    """An action run after the commit (:func:`after_commit`) failed: the piece's
    work *was* committed (``result``); ``error`` is the action's exception."""

    def __init__(self, result, error: Exception):
        super().__init__(str(error))
        self.result, self.error = result, error


def writing() -> None:
    """Called by a piece of work just before its first write (see :meth:`GroupCommit._run_batch`)."""
    work = getattr(_RUNNING, "work", None)
    if work is not None:
        work.wrote = True


class _PieceFailed(Exception):
    """Internal: the single piece of a batch raised; roll its transaction back."""


def _translated(ledger, error: Exception) -> Exception:
    """A database driver's error as the store's LedgerError (as ``connect`` does)."""
    from ._errors import LedgerError
    if isinstance(error, LedgerError) or not _is_driver_error(error):
        return error
    return ledger._file.translate(error)


def _is_driver_error(error: Exception) -> bool:
    import sqlite3
    if isinstance(error, sqlite3.Error):
        return True
    module = type(error).__module__ or ""
    return module.startswith("psycopg")


def _forget_after_fork() -> None:
    """In a forked child: the parent's queues and their locks (perhaps held by a
    parent thread at the fork) are not the child's."""
    global _GROUPS_LOCK
    _GROUPS_LOCK = threading.Lock()
    _GROUPS.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def group_for(path: str) -> GroupCommit:
    """The group of this process for the ledger at ``path`` (a forked child
    gets its own: its parent's threads are not its own)."""
    key = (os.getpid(), path)
    with _GROUPS_LOCK:
        group = _GROUPS.get(key)
        if group is None:
            group = _GROUPS[key] = GroupCommit()
        return group

"""Group commit (issue 19, item 6): the charges of a process's threads share
one write transaction and one COMMIT, each still re-checked under the lock in
order, so the budget is never overspent; a refusal rolls back only itself; a
failed COMMIT charges nothing and leaves no stale cache behind."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from privloss.budget import Ledger, LedgerBudgetError, LedgerError
from privloss.budget import _group
from privloss.budget._store import LedgerFile
from privloss.events import PureDP


class SlowFirstCharge(Ledger):
    """Holds the first charge inside the transaction a moment, so that the
    other threads queue behind it and the next batch holds several charges."""

    held = threading.Event()

    def _stage(self, stage):
        if stage == "begun" and not SlowFirstCharge.held.is_set():
            SlowFirstCharge.held.set()
            time.sleep(0.3)


@pytest.fixture
def batches(monkeypatch):
    sizes = []
    original = _group.GroupCommit._commit

    def recording(ledger, batch):
        sizes.append(len(batch))
        return original(ledger, batch)

    monkeypatch.setattr(_group.GroupCommit, "_commit", staticmethod(recording))
    SlowFirstCharge.held.clear()
    return sizes


def _race(ledgers, epsilon: float) -> list[str]:
    barrier = threading.Barrier(len(ledgers))
    outcomes = []

    def worker(index):
        barrier.wait()
        try:
            ledgers[index].release("d", f"q{index}", lambda: index, PureDP(epsilon))
            outcomes.append("ok")
        except LedgerBudgetError:
            outcomes.append("refused")

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(len(ledgers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_a_batch_admits_exactly_what_fits(tmp_path, batches):
    path = str(tmp_path / "ledger.sqlite")
    Ledger(path).create_dataset("d", epsilon=1.25)     # ten exact binary64 0.125s
    # one Ledger per thread (as the service opens them) and one shared by all
    ledgers = [SlowFirstCharge(path, create=False) for _ in range(8)]
    shared = SlowFirstCharge(path, create=False)
    ledgers += [shared] * 8
    outcomes = _race(ledgers, 0.125)
    assert outcomes.count("ok") == 10 and outcomes.count("refused") == 6
    assert max(batches) > 1                          # charges did share a commit
    shown = Ledger(path, create=False).show("d")
    assert shown["releases"] == 10 and shown["spent_epsilon"] == pytest.approx(1.25)
    assert Ledger(path, create=False).verify()["releases"] == 10


def test_a_failed_commit_charges_nothing_and_leaves_no_stale_cache(tmp_path, monkeypatch):
    path = str(tmp_path / "ledger.sqlite")
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "first", lambda: 1, PureDP(0.1))
    original = LedgerFile.transaction

    @contextlib.contextmanager
    def failing(self, conn, *, write, durable=True):
        if not write:
            with original(self, conn, write=write):
                yield
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
        raise LedgerError("simulated: the disk refused the COMMIT")

    monkeypatch.setattr(LedgerFile, "transaction", failing)
    computed = []
    with pytest.raises(LedgerError, match="simulated"):
        ledger.release("d", "second", lambda: computed.append(1), PureDP(0.1))
    monkeypatch.undo()
    assert computed == [] and ledger.show("d")["releases"] == 1
    # the same ledger object goes on: its caches hold no row that was never committed
    ledger.release("d", "third", lambda: 3, PureDP(0.1))
    assert [row["query"] for row in ledger.history("d")] == ["first", "third"]


def test_a_writer_waits_for_the_lock_at_most_its_timeout(tmp_path):
    """Another process holding SQLite's write lock: the charge waits (retrying
    every few milliseconds, not SQLite's growing sleeps) and then fails as busy,
    charging nothing; once the lock is free it goes through."""
    import sqlite3
    path = str(tmp_path / "ledger.sqlite")
    Ledger(path).create_dataset("d", epsilon=1.0)
    ledger = Ledger(path, create=False, timeout=0.3)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(LedgerError, match="busy"):
        ledger.release("d", "q", lambda: 1, PureDP(0.1))
    assert time.monotonic() - started >= 0.3
    threading.Timer(0.1, holder.rollback).start()          # freed while the next one waits
    assert ledger.release("d", "q", lambda: 1, PureDP(0.1)) == 1
    holder.close()
    assert Ledger(path, create=False).show("d")["releases"] == 1


class FailsAfterInsert(SlowFirstCharge):
    """The charge of query "bad" fails after its rows were inserted, with an
    error of ours or of the database (which aborts a PostgreSQL transaction):
    a piece that wrote must roll back its writes only."""

    database_error = False

    def _insert_pending(self, conn, name, key, *args):
        inserted = super()._insert_pending(conn, name, key, *args)
        if key == '"bad"':
            if self.database_error:
                conn.execute("SELECT simulated_missing_function()")
            raise LedgerError("simulated: failed after inserting")
        return inserted


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite")
    return request.getfixturevalue("postgres_server").new_database()


@pytest.mark.parametrize("database_error", [False, True])
def test_a_piece_failing_after_its_insert_rolls_back_only_itself(location, batches,
                                                                 database_error, monkeypatch):
    """Without a savepoint per piece: the batch is rolled back and run again with
    savepoints (on PostgreSQL too, where a failed statement aborts the whole
    transaction)."""
    path = location
    Ledger(path).create_dataset("d", epsilon=10.0)
    monkeypatch.setattr(FailsAfterInsert, "database_error", database_error)
    ledgers = [FailsAfterInsert(path, create=False) for _ in range(8)]
    barrier = threading.Barrier(len(ledgers))
    outcomes = {}

    def worker(index):
        key = "bad" if index == 3 else f"q{index}"
        barrier.wait()
        try:
            outcomes[key] = ledgers[index].release("d", key, lambda: index, PureDP(0.5))
        except LedgerError as error:
            outcomes[key] = str(error)

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(len(ledgers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "simulated" in outcomes.pop("bad")        # our error, or the missing function's
    assert outcomes == {f"q{index}": index for index in range(8) if index != 3}
    assert max(batches) > 1
    history = Ledger(path, create=False).history("d")
    assert sorted(row["query"] for row in history) == sorted(outcomes)
    assert all(row["status"] == "done" for row in history)
    assert Ledger(path, create=False).verify()["releases"] == 7
    # the ledgers go on from the tables: none kept the rolled-back row
    assert ledgers[3].release("d", "after", lambda: 1, PureDP(0.5)) == 1


def test_the_charge_is_committed_durably_and_the_outcome_without_an_fsync(tmp_path,
                                                                          monkeypatch):
    """The charge's COMMIT is fsynced (synchronous=FULL) before computing; the
    outcome's is not (NORMAL: it survives the process's crash, and the next
    charge's fsync of the log covers it), so a power failure can only leave a
    release charged and pending."""
    path = str(tmp_path / "ledger.sqlite")
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=1.0)
    original = LedgerFile.transaction
    seen = []

    @contextlib.contextmanager
    def recording(self, conn, *, write, durable=True):
        with original(self, conn, write=write, durable=durable):
            yield
            if write:
                seen.append((durable, conn.execute("PRAGMA synchronous").fetchone()[0]))

    monkeypatch.setattr(LedgerFile, "transaction", recording)
    ledger.release("d", "a", lambda: 1, PureDP(0.1))
    ledger.release("d", "b", lambda: 2, PureDP(0.1))
    assert seen == [(True, 2), (False, 1), (True, 2), (False, 1)]     # 2: FULL, 1: NORMAL
    monkeypatch.undo()
    assert [row["status"] for row in Ledger(path, create=False).history("d")] == ["done"] * 2

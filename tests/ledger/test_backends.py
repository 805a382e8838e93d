"""One contract, every ledger backend: SQLite (a file) and PostgreSQL (a real
server the tests start). Each backend class provides ``new_location()``; the
contract is the same release protocol, plans, refusals, integrity and races."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from privloss.budget import (Ledger, LedgerBudgetError, LedgerIntegrityError,
                                       LedgerPlanError, PlanItem)
from privloss.budget._store import LedgerFile
from privloss.events import ApproxDP, BoundedRange, Laplace, PureDP

#: ten stored PureDP(0.1) sum to just over 1 (0.1 is 0.1000000000000000055... in
#: binary64) and budgets compare exactly: this is the smallest budget they fit
TEN_TENTHS = 1.0000000000000002


def _race(location: str, index: int, barrier) -> str:
    ledger = Ledger(location, create=False)
    barrier.wait()
    try:
        ledger.release("d", {"worker": index}, lambda: index, [PureDP(0.1)])
        return "ok"
    except LedgerBudgetError:
        return "refused"


class LedgerContract:
    """Every backend inherits these tests."""

    def new_location(self) -> str:
        raise NotImplementedError

    def edit(self, location: str, sql: str) -> None:
        raise NotImplementedError

    @pytest.fixture
    def ledger(self):
        return Ledger(self.new_location())

    def test_create_release_repeat_refuse(self, ledger):
        shown = ledger.create_dataset("d", epsilon=1.0, delta=1e-6)
        assert shown["interaction"] == "fully-adaptive" and shown["releases"] == 0
        events = [BoundedRange(0.05, count=2), Laplace(20.0, count=2)]
        receipt = ledger.release_with_receipt("d", {"q": 1}, lambda: {"x": 0.1 + 0.2}, events)
        assert receipt.result == {"x": 0.30000000000000004} and not receipt.cached
        again = ledger.release_with_receipt("d", {"q": 1}, lambda: 1 / 0, events)
        assert again.cached and again.result == receipt.result
        ledger.release("d", {"q": 2}, lambda: 2, [PureDP(0.7)])
        with pytest.raises(LedgerBudgetError, match="budget"):
            ledger.release("d", {"q": 3}, lambda: 1 / 0, [PureDP(0.5)])
        rows = ledger.history("d")
        assert [row["status"] for row in rows] == ["done", "done"]
        assert ledger.events("d") == tuple(events) + (PureDP(0.7),)

    def test_failed_computation_is_charged(self, ledger):
        ledger.create_dataset("d", epsilon=1.0)
        with pytest.raises(ZeroDivisionError):
            ledger.release("d", "q", lambda: 1 / 0, [PureDP(0.4)])
        shown = ledger.show("d")
        assert shown["failed"] == 1 and shown["spent_epsilon"] == pytest.approx(0.4)

    def test_plans(self, ledger):
        plan = [PlanItem([PureDP(0.3)], {"q": "a"}), PlanItem([ApproxDP(0.2, 1e-8)], {"q": "b"})]
        ledger.create_dataset("d", epsilon=1.0, delta=1e-6, interaction="adaptive", plan=plan)
        with pytest.raises(LedgerPlanError, match="#1"):
            ledger.release("d", {"q": "b"}, lambda: 0, [ApproxDP(0.2, 1e-8)])
        assert ledger.release_with_receipt("d", {"q": "a"}, lambda: 0, [PureDP(0.3)]).plan_item == 1
        assert [item["used"] for item in ledger.show("d")["plan"]] == [True, False]
        with pytest.raises(LedgerPlanError, match="does not fit"):
            ledger.create_dataset("e", epsilon=0.1, interaction="setwise", plan=plan)

    def test_reopened_ledger_keeps_everything(self):
        location = self.new_location()
        Ledger(location).create_dataset("d", epsilon=2.0)
        Ledger(location, create=False).release("d", "q", lambda: [1, 2], [PureDP(0.5)])
        again = Ledger(location, create=False)
        assert again.datasets() == ["d"] and again.history("d")[0]["result"] == [1, 2]

    def test_deleted_release_is_detected(self):
        location = self.new_location()
        ledger = Ledger(location)
        ledger.create_dataset("d", epsilon=1.0)
        for index in range(3):
            ledger.release("d", index, lambda: index, [PureDP(0.3)])
        self.edit(location, "DELETE FROM releases WHERE id = (SELECT max(id) FROM releases)")
        with pytest.raises(LedgerIntegrityError, match="release"):
            Ledger(location, create=False)
        with pytest.raises(LedgerIntegrityError):
            ledger.release("d", "again", lambda: 0, [PureDP(0.3)])

    def test_connections_are_reused(self, ledger, monkeypatch):
        store = type(ledger._file)
        opened = []
        original = store._open
        monkeypatch.setattr(store, "_open", lambda self, *args: opened.append(1) or
                            original(self, *args))
        ledger.create_dataset("d", epsilon=5.0)
        for index in range(5):
            ledger.release("d", index, lambda: index, [PureDP(0.1)])
            ledger.would_admit("d", f"plan{index}", [PureDP(0.1)])
        assert ledger.show("d")["releases"] == 5
        assert len(opened) <= 1           # one connection, reused by every operation

    def test_connection_ready_and_warm(self, ledger):
        ledger.create_dataset("d", epsilon=1.0)
        assert ledger.connection_ready()          # an idle connection is kept
        ledger._file.close()
        assert ledger.connection_ready() == isinstance(ledger._file, LedgerFile)
        ledger.warm()
        assert ledger.connection_ready()
        assert ledger.show("d")["releases"] == 0

    def test_a_remembered_dry_run_follows_releases_made_elsewhere(self):
        location = self.new_location()
        ledger = Ledger(location)
        ledger.create_dataset("d", epsilon=1.0)
        first = ledger.would_admit("d", "plan-1", [PureDP(0.3)], fresh=True)
        again = ledger.would_admit("d", "plan-2", [PureDP(0.3)], fresh=True)
        assert first == again and first["spent_epsilon"] == pytest.approx(0.3)
        other = Ledger(location, create=False)          # another process, same budget
        other.release("d", "q1", lambda: 1, [PureDP(0.3)])
        other.release("d", "q2", lambda: 2, [PureDP(0.3)])
        after = ledger.would_admit("d", "plan-3", [PureDP(0.3)], fresh=True)
        assert after["spent_epsilon"] == pytest.approx(0.9) and after["admitted"]
        other.release("d", "q3", lambda: 3, [PureDP(0.3)])
        refused = ledger.would_admit("d", "plan-4", [PureDP(0.3)], fresh=True)
        assert not refused["admitted"] and refused["refusal"] == "budget"
        # without fresh=True the stored answers are searched as before
        assert ledger.would_admit("d", "q1", [PureDP(0.1)])["cached"]

    def test_a_forked_child_does_not_use_or_end_the_parents_connections(self, ledger):
        import os
        ledger.create_dataset("d", epsilon=5.0)
        ledger.release("d", "parent-1", lambda: 1, [PureDP(0.1)])     # leaves one idle
        child = os.fork()
        if child == 0:                                    # pragma: no cover - the child
            code = 1
            try:
                ledger.release("d", "child", lambda: 2, [PureDP(0.1)])
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # the parent's idle connection still works (the child neither used nor ended it)
        ledger.release("d", "parent-2", lambda: 3, [PureDP(0.1)])
        assert [row["query"] for row in ledger.history("d")] == ["parent-1", "child",
                                                                 "parent-2"]

    def test_budget_edit_is_detected(self):
        location = self.new_location()
        Ledger(location).create_dataset("d", epsilon=1.0)
        self.edit(location, "UPDATE datasets SET budget_epsilon = 1000000")
        with pytest.raises(LedgerIntegrityError, match="budget record"):
            Ledger(location, create=False)

    def test_threads_never_overspend(self, ledger):
        ledger.create_dataset("d", epsilon=TEN_TENTHS)
        barrier = threading.Barrier(12)
        outcomes = []

        def worker(index):
            barrier.wait()
            try:
                ledger.release("d", f"q{index}", lambda: index, PureDP(0.1))
                outcomes.append("ok")
            except LedgerBudgetError:
                outcomes.append("refused")

        threads = [threading.Thread(target=worker, args=(index,)) for index in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert outcomes.count("ok") == 10 and ledger.show("d")["releases"] == 10

    def test_processes_never_overspend(self):
        location = self.new_location()
        Ledger(location).create_dataset("d", epsilon=TEN_TENTHS)
        context = multiprocessing.get_context("spawn")
        with context.Manager() as manager:
            barrier = manager.Barrier(16)
            with context.Pool(16) as pool:
                outcomes = pool.starmap(_race, [(location, index, barrier)
                                                for index in range(16)])
        assert outcomes.count("ok") == 10
        assert Ledger(location, create=False).show("d")["releases"] == 10


class TestSqliteLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path):
        self._tmp = tmp_path
        self._count = 0

    def new_location(self) -> str:
        self._count += 1
        return str(self._tmp / f"ledger{self._count}.sqlite")

    def edit(self, location: str, sql: str) -> None:
        from tests.ledger._edits import untriggered
        with untriggered(location) as conn:
            conn.execute(sql)


class TestPostgresLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_server):
        self._server = postgres_server

    def new_location(self) -> str:
        return self._server.new_database()

    def edit(self, location: str, sql: str) -> None:
        import psycopg
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute("SET search_path TO privloss")
            # the owner (a superuser here) bypasses the append-only triggers
            conn.execute("SET session_replication_role = replica")
            conn.execute(sql)

"""Preregistered plans (adaptive: in order; setwise: any unused item), the
fully-adaptive default, delta as a budget, and the upgrade of schema-1 files."""


from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from privloss.accounting import Profile, epsilon_of_profile
from privloss.accounting.fully_adaptive import FilterPolicy, check, release_guarantee
from privloss.budget import (Ledger, LedgerBudgetError, LedgerPlanError, PlanItem,
                                       SCHEMA_VERSION)
from privloss.events import ApproxDP, BoundedRange, Laplace, PureDP


@pytest.fixture
def ledger(tmp_path):
    return Ledger(tmp_path / "ledger.sqlite")


def snapshot(ledger):
    return tuple((name, ledger.show(name), ledger.history(name)) for name in ledger.datasets())


#: ten stored PureDP(0.1) sum to just over 1 (0.1 is 0.1000000000000000055... in
#: binary64) and budgets compare exactly: this is the smallest budget they fit
TEN_TENTHS = 1.0000000000000002

TOPK = (BoundedRange(0.05, count=10), Laplace(20.0, count=10))


def topk_item(epsilon: float = 0.1) -> PlanItem:
    return PlanItem(TOPK, {"command": "topk", "epsilon": epsilon})


class Refuse:
    """A compute callable that must not be called."""

    calls = 0

    def __call__(self):
        Refuse.calls += 1
        raise AssertionError("computed")


# --------------------------------------------------------------------------
# creation
# --------------------------------------------------------------------------

@pytest.mark.parametrize("interaction", ["adaptive", "setwise"])
def test_adaptive_and_setwise_need_a_plan(ledger, interaction):
    with pytest.raises(LedgerPlanError, match="needs a preregistered plan"):
        ledger.create_dataset("d", epsilon=1.0, delta=1e-6, interaction=interaction)
    assert ledger.datasets() == []


def test_fully_adaptive_takes_no_plan(ledger):
    with pytest.raises(LedgerPlanError, match="takes no plan"):
        ledger.create_dataset("d", epsilon=1.0, plan=[topk_item()])


def test_a_plan_that_does_not_fit_is_refused_saying_by_how_much(ledger):
    plan = [topk_item()] * 12
    events = [event for item in plan for event in item.events]
    needed = epsilon_of_profile(Profile.of(events), "adaptive", 1e-6).value
    with pytest.raises(LedgerPlanError, match=r"does not fit the budget.*over the budget "
                                              r"epsilon = 1 by") as caught:
        ledger.create_dataset("d", epsilon=1.0, delta=1e-6, interaction="adaptive", plan=plan)
    assert f"{needed:.10g}" in str(caught.value)
    assert ledger.datasets() == []


@pytest.mark.parametrize("plan, message", [
    ([], "at least one"),
    ("topk", "sequence of PlanItem"),
    ([TOPK], "must be a PlanItem"),
])
def test_bad_plans(ledger, plan, message):
    with pytest.raises(LedgerPlanError, match=message):
        ledger.create_dataset("d", epsilon=1.0, interaction="adaptive", plan=plan)


# --------------------------------------------------------------------------
# releases under a plan
# --------------------------------------------------------------------------

def test_adaptive_plan_is_used_in_order_and_off_plan_releases_change_nothing(ledger):
    plan = [PlanItem([PureDP(0.3)], {"q": "a"}), PlanItem([BoundedRange(0.2)], {"q": "b"})]
    ledger.create_dataset("d", epsilon=1.0, interaction="adaptive", plan=plan)
    before = snapshot(ledger)
    compute = Refuse()
    for key, events in ((({"q": "b"}), [BoundedRange(0.2)]),       # out of order
                        ({"q": "a"}, [PureDP(0.4)]),                # other parameters
                        ({"q": "z"}, [PureDP(0.3)])):               # other query
        with pytest.raises(LedgerPlanError, match=r"next planned release is #1 \(q=a\)"):
            ledger.release("d", key, compute, events)
    assert Refuse.calls == 0 and snapshot(ledger) == before
    first = ledger.release_with_receipt("d", {"q": "a"}, lambda: 1, [PureDP(0.3)])
    assert first.plan_item == 1
    assert ledger.release_with_receipt("d", {"q": "b"}, lambda: 2, [BoundedRange(0.2)]).plan_item == 2
    with pytest.raises(LedgerBudgetError, match="all 2 planned releases were made"):
        ledger.release("d", {"q": "c"}, compute, [PureDP(0.01)])
    shown = ledger.show("d")
    assert [item["used"] for item in shown["plan"]] == [True, True]
    events = [PureDP(0.3), BoundedRange(0.2)]
    assert shown["spent_epsilon"] == epsilon_of_profile(Profile.of(events), "adaptive", 0.0).value


def test_setwise_plan_items_are_used_in_any_order(ledger):
    plan = [PlanItem([PureDP(0.3)]), PlanItem([BoundedRange(0.2)]), PlanItem([PureDP(0.3)])]
    ledger.create_dataset("d", epsilon=1.0, interaction="setwise", plan=plan)
    assert ledger.release_with_receipt("d", 1, lambda: 1, [BoundedRange(0.2)]).plan_item == 2
    assert ledger.release_with_receipt("d", 2, lambda: 1, [PureDP(0.3)]).plan_item == 1
    with pytest.raises(LedgerPlanError, match="matches no unused item"):
        ledger.release("d", 3, Refuse(), [BoundedRange(0.2)])
    assert ledger.release_with_receipt("d", 4, lambda: 1, [PureDP(0.3)]).plan_item == 3


def test_a_failed_release_uses_its_plan_item(ledger):
    ledger.create_dataset("d", epsilon=1.0, interaction="adaptive",
                          plan=[PlanItem([PureDP(0.5)]), PlanItem([PureDP(0.5)])])

    def fail():
        raise RuntimeError("engine")

    with pytest.raises(RuntimeError):
        ledger.release("d", 1, fail, [PureDP(0.5)])
    assert [item["used"] for item in ledger.show("d")["plan"]] == [True, False]


def _race(path: str, index: int, barrier) -> str:
    ledger = Ledger(path, create=False)
    barrier.wait()
    try:
        ledger.release("d", {"q": "topk", "worker": index}, lambda: index,
                       [PureDP(0.1)])
        return "ok"
    except LedgerBudgetError:
        return "refused"


def test_sixteen_processes_racing_on_a_plan_of_ten_get_exactly_ten(tmp_path):
    path = str(tmp_path / "race.sqlite")
    Ledger(path).create_dataset("d", epsilon=TEN_TENTHS, interaction="setwise",
                                plan=[PlanItem([PureDP(0.1)], {"q": "topk"})] * 10)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(16)
        with context.Pool(16) as pool:
            outcomes = pool.starmap(_race, [(path, index, barrier) for index in range(16)])
    assert outcomes.count("ok") == 10 and outcomes.count("refused") == 6
    shown = Ledger(path, create=False).show("d")
    assert shown["releases"] == 10 and all(item["used"] for item in shown["plan"])


# --------------------------------------------------------------------------
# fully adaptive (the default) and delta as a budget
# --------------------------------------------------------------------------

def test_fully_adaptive_spending_is_the_filter_on_stored_guarantees(ledger):
    shown = ledger.create_dataset("d", epsilon=3.0, delta=1e-6)
    assert shown["interaction"] == "fully-adaptive"
    releases = [TOPK, [ApproxDP(0.2, 1e-7)], [PureDP(0.1)]]
    for index, events in enumerate(releases):
        ledger.release("d", index, lambda: index, events)
    with sqlite3.connect(ledger.path) as conn:
        policy = FilterPolicy.from_dict(json.loads(conn.execute(
            "SELECT policy FROM datasets").fetchone()[0]))
    status = check(policy, [release_guarantee(events) for events in releases])
    shown = ledger.show("d")
    assert (shown["spent_epsilon"], shown["spent_delta"], shown["bound"]) == (
        status.spent_epsilon, status.spent_delta, status.rule)
    assert shown["remaining_delta"] == pytest.approx(max(0.0, 1e-6 - status.spent_delta))


def test_a_refusal_names_the_binding_delta(ledger):
    """Epsilon is plentiful; the releases' deltas are what runs out."""
    ledger.create_dataset("d", epsilon=100.0, delta=1e-6)
    answered = 0
    with pytest.raises(LedgerBudgetError, match="delta") as caught:
        for index in range(5):
            ledger.release("d", index, lambda: index, [ApproxDP(0.01, 2.5e-7)])
            answered += 1
    assert 1 <= answered <= 4 and "1e-06" in str(caught.value)
    assert "2.5e-07" in str(caught.value)
    shown = ledger.show("d")
    assert shown["releases"] == answered and shown["spent_delta"] <= 1e-6


# --------------------------------------------------------------------------
# schema-1 files
# --------------------------------------------------------------------------

V1_SCHEMA = (
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


def _version_1_file(path: str) -> None:
    """A ledger as privloss wrote it before schema 2 (the old module's SQL)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in V1_SCHEMA:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {0x504C4C47}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO datasets VALUES ('retail', 1.0, 1e-6, 'adaptive', '2026-11-01')")
    conn.execute("INSERT INTO datasets VALUES ('web', 2.0, 0.0, 'setwise', '2026-11-02')")
    events = '[{"type":"PureDP","epsilon":0.3,"count":1}]'
    for index in range(3):
        conn.execute("INSERT INTO releases (dataset, query_key, events, result, spent_epsilon, "
                     "bound, time) VALUES ('retail', ?, ?, ?, 0.5, 'optimal-dp', "
                     "'2026-11-03')", (json.dumps({"q": index}, separators=(",", ":")), events, json.dumps(index)))
    conn.close()


def test_a_version_1_ledger_is_upgraded_and_re_accounted_fully_adaptively(tmp_path):
    path = str(tmp_path / "old.sqlite")
    _version_1_file(path)
    ledger = Ledger(path, create=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    shown = ledger.show("retail")
    assert shown["interaction"] == "fully-adaptive"
    assert "created as adaptive without a preregistered plan" in shown["note"]
    assert shown["releases"] == 3
    assert shown["spent_epsilon"] == pytest.approx(0.9)          # basic: 3 x 0.3
    rows = ledger.history("retail")
    assert [row["result"] for row in rows] == [0, 1, 2]
    assert all(row["status"] == "done" for row in rows)
    assert "setwise" in ledger.show("web")["note"]
    # the stored answers are still free, and new releases are filtered
    assert ledger.release("retail", {"q": 1}, Refuse(), [PureDP(0.3)]) == 1
    ledger.release("retail", {"q": 9}, lambda: 9, [PureDP(0.1)])
    with pytest.raises(LedgerBudgetError):
        ledger.release("retail", {"q": 10}, Refuse(), [PureDP(0.3)])
    assert Ledger(path, create=False).show("retail")["releases"] == 4     # upgraded once


def test_would_admit_is_a_dry_run(ledger):
    ledger.create_dataset("d", epsilon=1.0, interaction="adaptive",
                          plan=[PlanItem([PureDP(0.6)]), PlanItem([PureDP(0.4)])])
    before = snapshot(ledger)
    assert ledger.would_admit("d", "a", [PureDP(0.6)])["admitted"]
    refused = ledger.would_admit("d", "a", [PureDP(0.4)])
    assert not refused["admitted"] and "next planned release is #1" in refused["reason"]
    assert refused["refusal"] == "plan"
    assert snapshot(ledger) == before
    ledger.release("d", "a", lambda: 1, [PureDP(0.6)])
    assert ledger.would_admit("d", "a", [PureDP(0.6)])["cached"]
    answer = ledger.would_admit("d", "b", [PureDP(0.4)])
    assert answer["admitted"] and answer["plan_item"] == 2
    assert answer["spent_epsilon"] == pytest.approx(1.0)


def test_would_admit_fully_adaptive_names_the_binding_constraint(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "a", lambda: 1, [PureDP(0.7)])
    answer = ledger.would_admit("d", "b", [PureDP(0.5)])
    assert not answer["admitted"] and "epsilon" in answer["reason"]
    assert answer["refusal"] == "budget"
    assert ledger.would_admit("d", "b", [PureDP(0.3)])["admitted"]


# --------------------------------------------------------------------------
# analysts and their caps
# --------------------------------------------------------------------------

def test_analyst_caps_inside_the_dataset_budget(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    cap = (0.5, 0.0)
    ledger.release("d", "a1", lambda: 1, [PureDP(0.3)], analyst="ann", analyst_budget=cap)
    with pytest.raises(LedgerBudgetError, match="analyst 'ann'.s cap"):
        ledger.release("d", "a2", Refuse(), [PureDP(0.3)], analyst="ann", analyst_budget=cap)
    assert not ledger.would_admit("d", "a2", [PureDP(0.3)], analyst="ann",
                                  analyst_budget=cap)["admitted"]
    ledger.release("d", "b1", lambda: 2, [PureDP(0.3)], analyst="bob", analyst_budget=cap)
    ledger.release("d", "b2", lambda: 3, [PureDP(0.1)], analyst="bob", analyst_budget=cap)
    # the dataset's budget binds across analysts
    with pytest.raises(LedgerBudgetError, match="dataset 'd' exceeded"):
        ledger.release("d", "c1", Refuse(), [PureDP(0.4)], analyst="cat", analyst_budget=cap)
    shown = ledger.show("d", analyst="bob", analyst_budget=cap)
    assert shown["mine"]["releases"] == 2
    assert shown["mine"]["spent_epsilon"] == pytest.approx(0.4)
    assert shown["mine"]["remaining_epsilon"] == pytest.approx(0.1)
    assert [row["query"] for row in ledger.history("d", analyst="ann")] == ["a1"]
    assert {row["analyst"] for row in ledger.history("d")} == {"ann", "bob"}


def test_bad_analyst_arguments(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    with pytest.raises(ValueError, match="analyst_budget needs analyst"):
        ledger.release("d", "q", Refuse(), [PureDP(0.1)], analyst_budget=(1.0, 0.0))
    with pytest.raises(ValueError, match="analyst_budget epsilon"):
        ledger.release("d", "q", Refuse(), [PureDP(0.1)], analyst="a", analyst_budget=(0, 0))
    with pytest.raises(ValueError, match="analyst must be"):
        ledger.release("d", "q", Refuse(), [PureDP(0.1)], analyst=" a")
    assert ledger.show("d")["releases"] == 0

"""The ledger in one process: datasets, the release protocol, repeated queries,
refusals, bad input (every error leaves the ledger unchanged) and the exact
JSON form of events."""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privloss.accounting import BudgetExceededError, Profile, epsilon_of_profile
from privloss.serialize import (EVENT_TYPES, canonical_query_key, event_from_json,
                                           event_to_json, events_from_text, events_to_text)
from privloss.budget import (DatasetExistsError, Ledger, LedgerBudgetError, LedgerError,
                                       PlanItem, UnknownDatasetError)
from privloss.events import (ApproxDP, ApproxZCDP, BoundedRange, Composed, ConcentratedDP,
                             DiscreteGaussian, DiscreteLaplace, Event, Gaussian, Laplace,
                             NonPrivate, NoOp, PureDP, RandomizedResponse, ZCDP, Group,
                             Parallel, PoissonSampled, SampledWithoutReplacement)

#: ten stored PureDP(0.1) sum to just over 1 (0.1 is 0.1000000000000000055... in
#: binary64) and budgets compare exactly: this is the smallest budget they fit
TEN_TENTHS = 1.0000000000000002


ALL_EVENTS = (
    NoOp(), NonPrivate(), PureDP(0.1), PureDP(0.3, count=4), BoundedRange(0.05, count=2),
    ApproxDP(0.5, 1e-7), ZCDP(0.01), ZCDP(0.02, xi=0.1, count=3), ApproxZCDP(0.01, 1e-9, xi=0.5),
    ConcentratedDP(0.02, 0.2), Laplace(10.0), Laplace(3.5, sensitivity=2.0, count=2),
    Gaussian(4.0), Gaussian(2.5, sensitivity=1.5), RandomizedResponse(0.7),
    DiscreteLaplace(5.0, sensitivity=2), DiscreteGaussian(3.0, sensitivity=3, count=2),
    Composed((PureDP(0.1), Composed((BoundedRange(0.2), Gaussian(5.0))), DiscreteLaplace(9.0))),
    Composed(()),
    PoissonSampled(Gaussian(2.0), 0.01, count=10), SampledWithoutReplacement(Laplace(3.0), 10, 100),
    Group(PureDP(0.2), 3), Parallel((PureDP(0.1), BoundedRange(0.3))),
)


@pytest.fixture
def ledger(tmp_path):
    return Ledger(tmp_path / "ledger.sqlite")


def snapshot(ledger: Ledger) -> tuple:
    """The logical state of a ledger (what 'unchanged' means)."""
    return tuple((name, ledger.show(name), ledger.history(name)) for name in ledger.datasets())


class Counter:
    """A compute callable that counts its calls."""

    def __init__(self, value=42):
        self.calls = 0
        self.value = value

    def __call__(self):
        self.calls += 1
        return self.value


# --------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------

def test_create_show_history(ledger):
    summary = ledger.create_dataset("retail", epsilon=2.0, delta=1e-6)
    assert summary == ledger.show("retail")
    assert {key: summary[key] for key in ("budget_epsilon", "budget_delta", "spent_epsilon",
                                          "spent_delta", "releases", "remaining_epsilon",
                                          "interaction")} == {
        "budget_epsilon": 2.0, "budget_delta": 1e-6, "spent_epsilon": 0.0, "spent_delta": 0.0,
        "releases": 0, "remaining_epsilon": 2.0, "interaction": "fully-adaptive"}
    assert ledger.history("retail") == []
    assert ledger.datasets() == ["retail"]

    value = ledger.release("retail", {"query": "count", "epsilon": 0.5}, lambda: 17.25,
                           PureDP(0.5))
    assert value == 17.25
    summary = ledger.show("retail")
    assert summary["releases"] == 1
    # one 0.5-DP release at delta = 1e-6: the exact bound is a little under 0.5
    # fully adaptive, basic composition: 0.5, rounded outward by at most 1e-11
    assert 0.5 <= summary["spent_epsilon"] <= 0.5 * (1 + 1e-11)
    assert 0.0 <= summary["spent_delta"] <= 1e-6      # the filter's delta in use
    assert summary["remaining_epsilon"] == pytest.approx(1.5, rel=1e-5)
    (row,) = ledger.history("retail")
    assert row["query"] == {"query": "count", "epsilon": 0.5}
    assert row["query_key"] == '{"epsilon":0.5,"query":"count"}'
    assert row["events"] == [{"type": "PureDP", "epsilon": 0.5, "count": 1}]
    assert row["result"] == 17.25
    assert row["spent_epsilon"] == summary["spent_epsilon"]
    assert row["time"].endswith("+00:00")


def test_file_is_in_wal_mode_and_marked(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x504C4C47


def test_setwise_dataset_uses_setwise_accounting(ledger):
    events = [Gaussian(5.0), BoundedRange(0.1, count=3), Laplace(10.0)]
    ledger.create_dataset("s", epsilon=5.0, delta=1e-6, interaction="setwise",
                          plan=[PlanItem(events)])
    ledger.release("s", "q", lambda: 0, events)
    expected = epsilon_of_profile(Profile.of(events), "setwise", 1e-6)
    summary = ledger.show("s")
    assert summary["interaction"] == "setwise"
    assert summary["spent_epsilon"] == expected.value and summary["bound"] == expected.bound


def test_duplicate_dataset_is_refused_and_budget_kept(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "q", lambda: 1, PureDP(0.4))
    before = snapshot(ledger)
    with pytest.raises(DatasetExistsError, match="already exists"):
        ledger.create_dataset("d", epsilon=100.0)
    assert snapshot(ledger) == before


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0), r"epsilon must be in \(0, inf\), got 0.0"),
    (dict(epsilon=-1.0), "epsilon must be in"),
    (dict(epsilon=math.inf), "epsilon must be in"),
    (dict(epsilon=math.nan), "epsilon must be in"),
    (dict(epsilon=1.0, delta=1.0), r"delta must be in \[0, 1\), got 1.0"),
    (dict(epsilon=1.0, delta=-1e-9), "delta must be in"),
    (dict(epsilon=1.0, interaction="non-adaptive"), "interaction must be one of fully-adaptive, adaptive, setwise"),
    (dict(epsilon=1.0, interaction="sometimes"), "interaction must be one of"),
])
def test_bad_dataset_parameters_leave_the_ledger_unchanged(ledger, kwargs, message):
    ledger.create_dataset("kept", epsilon=1.0)
    before = snapshot(ledger)
    with pytest.raises(ValueError, match=message):
        ledger.create_dataset("new", **kwargs)
    assert snapshot(ledger) == before


@pytest.mark.parametrize("name", ["", "  ", " padded", "tab\tname", "x" * 201])
def test_bad_dataset_names(ledger, name):
    with pytest.raises(ValueError, match="dataset must be a non-empty name"):
        ledger.create_dataset(name, epsilon=1.0)
    assert ledger.datasets() == []


def test_bad_types(ledger):
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        ledger.create_dataset("d", epsilon="1")
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        ledger.create_dataset("d", epsilon=True)
    with pytest.raises(TypeError, match="dataset must be a string"):
        ledger.create_dataset(3, epsilon=1.0)
    assert ledger.datasets() == []


def test_unknown_dataset(ledger):
    ledger.create_dataset("known", epsilon=1.0)
    compute = Counter()
    for call in (lambda: ledger.show("nope"), lambda: ledger.history("nope"),
                 lambda: ledger.release("nope", "q", compute, PureDP(0.1))):
        with pytest.raises(UnknownDatasetError, match="no dataset 'nope'.*known: 'known'"):
            call()
    assert compute.calls == 0


# --------------------------------------------------------------------------
# the file
# --------------------------------------------------------------------------

def test_missing_file_without_create_is_an_error_and_not_created(tmp_path):
    path = tmp_path / "missing.sqlite"
    with pytest.raises(LedgerError, match="no ledger file at"):
        Ledger(path, create=False)
    assert not path.exists()


def test_corrupt_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "corrupt.sqlite"
    content = b"this is not an SQLite database, just some text\n" * 100
    path.write_bytes(content)
    for create in (True, False):
        with pytest.raises(LedgerError, match="not a privloss ledger"):
            Ledger(path, create=create)
    assert path.read_bytes() == content


def test_truncated_ledger_is_refused(tmp_path, ledger):
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "q", lambda: 1, PureDP(0.1))
    data = open(ledger.path, "rb").read()
    assert len(data) > 1024
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"\0" * 100 + data[100:])          # header destroyed
    with pytest.raises(LedgerError, match="not a privloss ledger"):
        Ledger(broken, create=False).show("d")


def test_directory_and_other_databases_are_refused(tmp_path):
    with pytest.raises(LedgerError, match="is a directory"):
        Ledger(tmp_path)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(LedgerError, match="SQLite database but not a privloss ledger"):
        Ledger(other)
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(LedgerError, match="not a privloss ledger"):
        Ledger(empty, create=False)
    assert empty.read_bytes() == b""
    with pytest.raises(LedgerError, match="cannot open"):
        Ledger(tmp_path / "no" / "such" / "dir" / "l.sqlite")
    for bad in ("", ":memory:"):
        with pytest.raises(ValueError, match="path must name a file"):
            Ledger(bad)


def test_reopening_keeps_everything(tmp_path):
    path = tmp_path / "l.sqlite"
    Ledger(path).create_dataset("d", epsilon=1.0)
    Ledger(path).release("d", "q", lambda: [1, 2], PureDP(0.25))
    again = Ledger(path, create=False)
    assert again.show("d")["releases"] == 1
    assert again.release("d", "q", Counter(), PureDP(0.25)) == [1, 2]


# --------------------------------------------------------------------------
# releases
# --------------------------------------------------------------------------

def test_identical_repeated_query_is_free(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    first = Counter(value={"count": 12.5})
    assert ledger.release("d", {"a": 1, "b": [1, 2]}, first, PureDP(0.6)) == {"count": 12.5}
    spent = ledger.show("d")
    again = Counter(value="never used")
    # same canonical key (object keys in another order): stored answer, no compute, no cost
    receipt = ledger.release_with_receipt("d", {"b": (1, 2), "a": 1}, again, PureDP(0.6))
    assert receipt.result == {"count": 12.5} and receipt.cached
    assert again.calls == 0
    assert ledger.show("d") == spent
    # even when the budget could not pay for it again
    assert ledger.release("d", {"a": 1, "b": [1, 2]}, again, PureDP(0.6)) == {"count": 12.5}
    # a different key is a different query
    with pytest.raises(LedgerBudgetError):
        ledger.release("d", {"a": 1.0, "b": [1, 2]}, again, PureDP(0.6))
    assert again.calls == 0
    assert ledger.lookup("d", {"a": 1, "b": [1, 2]}).result == {"count": 12.5}
    assert ledger.lookup("d", "other") is None


def test_ten_releases_fit_and_the_eleventh_is_refused(ledger):
    ledger.create_dataset("d", epsilon=TEN_TENTHS)
    for index in range(10):
        ledger.release("d", index, lambda: index, PureDP(0.1))
    before = snapshot(ledger)
    compute = Counter()
    with pytest.raises(LedgerBudgetError) as caught:
        ledger.release("d", 10, compute, PureDP(0.1))
    error = caught.value
    assert isinstance(error, BudgetExceededError)
    message = str(error)
    assert "budget" in message and "remaining epsilon 0" in message and "'d'" in message
    assert compute.calls == 0                        # refused before computing
    assert error.remaining_epsilon == 0.0 and error.dataset == "d"
    assert error.would_spend == pytest.approx(1.1)
    assert snapshot(ledger) == before


def test_refusal_names_what_remains(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "a", lambda: 0, PureDP(0.7))
    with pytest.raises(LedgerBudgetError, match=r"remaining epsilon 0\.3 of 1"):
        ledger.release("d", "b", lambda: 0, Laplace(2.0))
    ledger.release("d", "c", lambda: 0, Laplace(4.0))       # 0.25 fits


def test_a_release_is_charged_before_it_computes(ledger):
    """The charge is recorded before compute() runs: a release racing in
    while this one computes sees the budget already taken and is refused."""
    ledger.create_dataset("d", epsilon=1.0)
    seen = {}

    def compute():
        seen["status"] = ledger.history("d")[-1]["status"]
        with pytest.raises(LedgerBudgetError, match="budget"):
            ledger.release("d", "other", lambda: "other", PureDP(0.8))
        return "mine"

    assert ledger.release("d", "mine", compute, PureDP(0.5)) == "mine"
    assert seen["status"] == "pending"
    rows = ledger.history("d")
    assert [(row["query"], row["status"], row["result"]) for row in rows] == [
        ("mine", "done", "mine")]


def test_nested_identical_query_is_charged_again(ledger):
    """An identical query asked from inside its own computation cannot wait for
    itself: it is charged as a release of its own (never free, never blocked)."""
    ledger.create_dataset("d", epsilon=1.0)

    def compute():
        assert ledger.release("d", "same", lambda: "inner", PureDP(0.5)) == "inner"
        return "outer"

    receipt = ledger.release_with_receipt("d", "same", compute, PureDP(0.5))
    assert receipt.result == "outer" and not receipt.cached
    assert ledger.show("d")["releases"] == 2
    # the stored answer is the first release's (the outer one, recorded first)
    assert ledger.release("d", "same", Counter(), PureDP(0.5)) == "outer"


def test_failing_compute_is_charged(ledger):
    """A computation that fails after it started is charged (status failed):
    a data-dependent failure must not be a free oracle."""
    ledger.create_dataset("d", epsilon=1.0)

    def compute():
        raise RuntimeError("engine failed")

    with pytest.raises(RuntimeError, match="engine failed"):
        ledger.release("d", "q", compute, PureDP(0.1))
    summary = ledger.show("d")
    assert summary["releases"] == 1 and summary["failed"] == 1
    assert summary["spent_epsilon"] == pytest.approx(0.1)
    [row] = ledger.history("d")
    assert row["status"] == "failed" and row["result"] is None
    # a failed release is not a stored answer: asking again is charged again
    assert ledger.release("d", "q", lambda: 7, PureDP(0.1)) == 7
    assert ledger.show("d")["spent_epsilon"] == pytest.approx(0.2)


@pytest.mark.parametrize("events, error, message", [
    ((), ValueError, "at least one event"),
    ([PureDP(0.1), "PureDP(0.1)"], TypeError, r"events\[1\] must be a privloss event"),
    (Event(), TypeError, "event must be one of"),
    (42, TypeError, "events must be a privloss event or a sequence"),
])
def test_bad_events_are_refused_before_computing(ledger, events, error, message):
    ledger.create_dataset("d", epsilon=1.0)
    compute = Counter()
    with pytest.raises(error, match=message):
        ledger.release("d", "q", compute, events)
    assert compute.calls == 0 and ledger.show("d")["releases"] == 0


def test_unknown_event_subclass_cannot_be_stored(ledger):
    class Custom(PureDP):
        pass

    ledger.create_dataset("d", epsilon=1.0)
    compute = Counter()
    with pytest.raises(TypeError, match="cannot store event.*Custom"):
        ledger.release("d", "q", compute, Custom(0.1))
    assert compute.calls == 0


def test_bad_query_keys_and_compute(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    for key, error in ((math.nan, ValueError), ({"x": math.inf}, ValueError), ({1: "x"}, TypeError),
                       (object(), TypeError)):
        with pytest.raises(error):
            ledger.release("d", key, Counter(), PureDP(0.1))
    with pytest.raises(TypeError, match="compute must be a callable"):
        ledger.release("d", "q", 42, PureDP(0.1))
    assert ledger.show("d")["releases"] == 0


def test_unstorable_result_is_charged_and_not_stored(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    with pytest.raises(TypeError, match="cannot store a value of type"):
        ledger.release("d", "q", lambda: {"x": object()}, PureDP(0.1))
    assert [row["status"] for row in ledger.history("d")] == ["failed"]


def test_non_private_event_is_refused(ledger):
    ledger.create_dataset("d", epsilon=1.0, delta=1e-6)
    compute = Counter()
    with pytest.raises(LedgerBudgetError, match=r"no .*guarantee"):
        ledger.release("d", "q", compute, NonPrivate())
    assert compute.calls == 0 and ledger.show("d")["releases"] == 0


class Answer(NamedTuple):
    items: tuple
    counts: np.ndarray
    ci95: tuple


def test_results_round_trip_through_encode_and_decode(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    answer = Answer(("a", "b"), np.array([3.25, 0.1 + 0.2]), ((1.0, 5.5), (-math.inf, math.inf)))

    def decode(value):
        return Answer(tuple(value["items"]), np.array(value["counts"]),
                      tuple(tuple(pair) for pair in value["ci95"]))

    first = ledger.release("d", "q", lambda: answer, PureDP(0.1), decode=decode)
    second = ledger.release("d", "q", Counter(), PureDP(0.1), decode=decode)
    for got in (first, second):
        assert got.items == answer.items and got.ci95 == answer.ci95
        assert got.counts.tolist() == answer.counts.tolist()       # exact doubles
    assert ledger.history("d")[0]["result"]["counts"] == [3.25, 0.30000000000000004]


def test_spent_under_a_plan_is_the_accountants_tightest_bound_on_mixed_events(ledger):
    releases = [[Laplace(10.0), BoundedRange(0.1, count=3)], [DiscreteGaussian(3.0)],
                [Composed((Gaussian(4.0), PureDP(0.2)))], [ApproxDP(0.3, 1e-8)]]
    ledger.create_dataset("mix", epsilon=50.0, delta=1e-6, interaction="adaptive",
                          plan=[PlanItem(events) for events in releases])
    for index, events in enumerate(releases):
        ledger.release("mix", index, lambda: index, events)
    everything = [event for events in releases for event in events]
    expected = epsilon_of_profile(Profile.of(everything), "adaptive", 1e-6)
    summary = ledger.show("mix")
    assert summary["spent_epsilon"] == expected.value and summary["bound"] == expected.bound
    assert ledger.history("mix")[-1]["spent_epsilon"] == expected.value
    assert ledger.events("mix") == tuple(everything)


def test_threads_racing_never_overspend(ledger):
    """16 threads, a budget for exactly 10 (basic composition at delta 0)."""
    ledger.create_dataset("d", epsilon=TEN_TENTHS)
    barrier = threading.Barrier(16)
    outcomes = []

    def worker(index):
        barrier.wait()
        try:
            value = ledger.release("d", f"query-{index}", lambda: index, PureDP(0.1))
            outcomes.append(("ok", index, value))
        except LedgerBudgetError:
            outcomes.append(("refused", index, None))

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    succeeded = [(index, value) for kind, index, value in outcomes if kind == "ok"]
    assert len(succeeded) == 10 and len(outcomes) == 16
    recorded = {row["query"]: row["result"] for row in ledger.history("d")}
    assert recorded == {f"query-{index}": value for index, value in succeeded}
    assert ledger.show("d")["spent_epsilon"] <= 1.0 * (1 + 1e-9)


def test_threads_asking_the_same_query_pay_once(ledger):
    ledger.create_dataset("d", epsilon=1.0)
    barrier = threading.Barrier(8)
    values = []

    def worker(index):
        barrier.wait()
        values.append(ledger.release("d", "same", lambda: index, PureDP(0.5)))

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(values)) == 1 and len(values) == 8
    summary = ledger.show("d")
    assert summary["releases"] == 1 and summary["spent_epsilon"] == pytest.approx(0.5)


# --------------------------------------------------------------------------
# serialisation
# --------------------------------------------------------------------------

def _bits(event) -> list:
    """Every field of an event tree with floats as exact hex (equality of bits)."""
    if isinstance(event, Composed):
        return ["Composed", [_bits(child) for child in event.events]]
    return [type(event).__name__] + [value.hex() if isinstance(value, float) else value
                                     for value in vars(event).values()]


def test_every_event_type_round_trips_exactly():
    assert set(EVENT_TYPES) == {type(event).__name__ for event in ALL_EVENTS}
    text = events_to_text(ALL_EVENTS)
    back = events_from_text(text)
    assert back == ALL_EVENTS
    assert [_bits(event) for event in back] == [_bits(event) for event in ALL_EVENTS]
    assert isinstance(back[15].sensitivity, int) and isinstance(back[11].sensitivity, float)


@settings(max_examples=300, deadline=None)
@given(epsilon=st.floats(min_value=0.0, max_value=1e300),
       delta=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
       sigma=st.floats(min_value=5e-324, max_value=1e300), count=st.integers(1, 10**12))
def test_floats_round_trip_bit_for_bit(epsilon, delta, sigma, count):
    tree = Composed((ApproxDP(epsilon, delta, count=count), Gaussian(sigma, sensitivity=sigma),
                     Composed((ZCDP(epsilon, xi=sigma),)), DiscreteLaplace(sigma, sensitivity=count)))
    back = events_from_text(events_to_text([tree]))
    assert [_bits(event) for event in back] == [_bits(tree)]


@pytest.mark.parametrize("value, message", [
    ({"type": "Mystery", "epsilon": 0.1}, "unknown stored event type 'Mystery'"),
    ({"epsilon": 0.1}, "must be an object with a string 'type'"),
    ({"type": "PureDP", "epsilon": 0.1}, "must have the fields"),
    ({"type": "PureDP", "epsilon": 0.1, "count": 1, "extra": 2}, "must have the fields"),
    ({"type": "Composed", "events": {}}, "exactly an 'events' list"),
    ({"type": "PureDP", "epsilon": -0.1, "count": 1}, "epsilon must be in"),
])
def test_bad_stored_events_are_refused(value, message):
    with pytest.raises(ValueError, match=message):
        event_from_json(value)


def test_event_json_form():
    assert event_to_json(PureDP(0.1, count=3)) == {"type": "PureDP", "epsilon": 0.1, "count": 3}
    assert event_to_json(Composed((NoOp(),))) == {"type": "Composed", "events": [{"type": "NoOp"}]}


def test_canonical_query_keys():
    assert canonical_query_key({"b": 1, "a": [1, 2.5, None, True]}) == '{"a":[1,2.5,null,true],"b":1}'
    assert canonical_query_key(("x", np.int64(3), np.float64(0.5))) == '["x",3,0.5]'
    assert canonical_query_key("é") == '"é"'
    assert canonical_query_key(1) != canonical_query_key(1.0) != canonical_query_key("1")


def test_threads_creating_the_same_ledger_and_dataset(tmp_path):
    """Initialising a fresh file and creating one dataset from 12 threads at once:
    one schema, exactly one creation, the others refused."""
    path = tmp_path / "fresh.sqlite"
    barrier = threading.Barrier(12)
    outcomes = []

    def worker(index):
        barrier.wait()
        try:
            Ledger(path).create_dataset("d", epsilon=1.0 + index)
            outcomes.append("created")
        except DatasetExistsError:
            outcomes.append("exists")

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["created"] + ["exists"] * 11
    assert Ledger(path).datasets() == ["d"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="file permissions do not apply to root")
def test_unreadable_file_is_a_clear_error(tmp_path):
    path = tmp_path / "locked.sqlite"
    Ledger(path).create_dataset("d", epsilon=1.0)
    path.chmod(0)
    try:
        with pytest.raises(LedgerError, match="ledger"):
            Ledger(path, create=False).show("d")
    finally:
        path.chmod(0o600)


def test_a_vanished_file_is_an_error_not_a_new_ledger(tmp_path):
    path = tmp_path / "gone.sqlite"
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=1.0)
    path.unlink()
    with pytest.raises(LedgerError, match="no ledger file|cannot open"):
        ledger.show("d")
    assert not path.exists()


def test_paths_with_spaces_and_unicode(tmp_path):
    path = tmp_path / "my ledgers ? #1" / "budget é.sqlite"
    path.parent.mkdir()
    Ledger(path).create_dataset("d", epsilon=1.0)
    assert Ledger(str(path), create=False).datasets() == ["d"]


def test_one_ledger_shared_by_threads_reading_and_releasing(ledger):
    """A read on an older snapshot must not take the newer verified cache of
    another thread for a deleted release (found by the service's load test:
    false "changed or vanished after it was verified" refusals)."""
    import random
    import time
    ledger.create_dataset("d", epsilon=1e6)
    failures = []

    def worker(index):
        rng = random.Random(index)
        for step in range(15):
            try:
                ledger.release("d", f"{index}-{step}",
                               lambda: time.sleep(rng.uniform(0, 0.01)) or step, PureDP(0.001),
                               analyst=f"a{index % 3}")
                ledger.show("d", analyst=f"a{index % 3}")
                ledger.history("d")
            except LedgerError as error:
                failures.append(str(error))

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert ledger.show("d")["releases"] == 16 * 15

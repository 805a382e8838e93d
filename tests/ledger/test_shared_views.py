"""Ledger objects of one process share their verified histories (``_shared``):
each release is verified once per process, yet every object still refuses a
history that does not continue the one it used, and opening still verifies
everything from the file."""

from __future__ import annotations

import threading

import pytest

from privloss.budget import Ledger, LedgerBudgetError, LedgerError, LedgerIntegrityError
from privloss.budget import _integrity
from privloss.events import PureDP
from tests.ledger._edits import untriggered


def _rolled_back(path: str) -> None:
    """Delete dataset d's newest release, pointing its head back (consistent:
    what a restored older copy in place would show)."""
    with untriggered(path) as conn:
        newest, = conn.execute("SELECT max(id) FROM releases WHERE dataset = 'd'").fetchone()
        before = conn.execute("SELECT chain FROM releases WHERE dataset = 'd' AND id < ? "
                              "ORDER BY id DESC LIMIT 1", (newest,)).fetchone()
        head = before[0] if before else conn.execute(
            "SELECT digest FROM datasets WHERE name = 'd'").fetchone()[0]
        conn.execute("DELETE FROM outcomes WHERE release_id = ?", (newest,))
        conn.execute("DELETE FROM releases WHERE id = ?", (newest,))
        conn.execute("UPDATE datasets SET head = ?, recorded = recorded - 1 WHERE name = 'd'",
                     (head,))


def test_each_release_is_verified_once_per_process(tmp_path, monkeypatch):
    path = str(tmp_path / "ledger.sqlite")
    first = Ledger(path)
    first.create_dataset("d", epsilon=10.0)
    second = Ledger(path, create=False)
    for index in range(8):
        first.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    hashed = []
    original = _integrity.release_chain
    monkeypatch.setattr(_integrity, "release_chain",
                        lambda *values: hashed.append(values[1]) or original(*values))
    second.release("d", {"q": "second"}, lambda: 0, [PureDP(0.1)])
    # before: the 8 releases `second` had not seen were hashed again; now only the
    # outcome of the newest (charged by `first` before its answer was stored) and
    # the new release itself
    assert len(hashed) <= 2, hashed
    assert second.show("d")["releases"] == 9


def test_opening_verifies_every_record_again(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=10.0)
    for index in range(3):
        ledger.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    with untriggered(path) as conn:      # an old record edited after this process verified it
        conn.execute("UPDATE releases SET events = replace(events, '0.1', '0.001') WHERE id = 1")
    with pytest.raises(LedgerIntegrityError, match="release #1"):
        Ledger(path, create=False)


def test_an_object_refuses_a_history_that_does_not_continue_its_own(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    old = Ledger(path)
    old.create_dataset("d", epsilon=10.0)
    for index in range(3):
        old.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    assert old.show("d")["releases"] == 3        # `old` has verified release 3 itself
    _rolled_back(path)
    # without a witness a consistent shorter history opens (documented), and the
    # new object charges on it: release 3 is now another one
    new = Ledger(path, create=False)
    new.release("d", {"q": "replacement"}, lambda: 0, [PureDP(0.1)])
    assert new.show("d")["releases"] == 3
    # the object that used the first history (through the shared cache) refuses
    with pytest.raises(LedgerIntegrityError, match="changed or vanished"):
        old.release("d", {"q": "after"}, lambda: 0, [PureDP(0.1)])
    assert new.show("d")["releases"] == 3


def test_an_object_refuses_a_rolled_back_history(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    old = Ledger(path)
    old.create_dataset("d", epsilon=10.0)
    for index in range(3):
        old.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    _rolled_back(path)
    Ledger(path, create=False)               # opening replaces the shared history
    with pytest.raises(LedgerIntegrityError):
        old.release("d", {"q": "after"}, lambda: 0, [PureDP(0.1)])


def test_threads_with_their_own_objects_never_overspend(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    # ten stored PureDP(0.1) sum to just over 1 in binary64 (test_backends.TEN_TENTHS)
    Ledger(path).create_dataset("d", epsilon=1.0000000000000002)
    outcomes, barrier = [], threading.Barrier(16)

    def writer(index):
        ledger = Ledger(path, create=False)
        barrier.wait()
        for step in range(3):
            try:
                ledger.release("d", {"writer": index, "step": step}, lambda: 0, [PureDP(0.1)])
                outcomes.append("charged")
            except LedgerBudgetError:
                outcomes.append("refused")

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("charged") == 10 and outcomes.count("refused") == 38
    fresh = Ledger(path, create=False)
    assert fresh.show("d")["releases"] == 10
    assert fresh.verify()["verified"]


def _anchored(tmp_path):
    from privloss.budget import create_key_file
    path = str(tmp_path / "ledger.sqlite")
    witness, key = str(tmp_path / "ledger.witness"), create_key_file(str(tmp_path / "key"))
    Ledger(path, witness=witness, key_file=key).create_dataset("d", epsilon=100.0)
    return path, witness, key


def test_one_witness_line_per_dataset_and_transaction(tmp_path):
    import json
    path, witness, key = _anchored(tmp_path)
    barrier = threading.Barrier(16)

    def writer(index):
        ledger = Ledger(path, create=False, witness=witness, key_file=key)
        barrier.wait()
        for step in range(5):
            ledger.release("d", {"writer": index, "step": step}, lambda: 0, [PureDP(0.01)])

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open(witness) as handle:
        lines = [json.loads(line) for line in handle if line.strip()][1:]
    counts = [line["releases"] for line in lines if line["dataset"] == "d"]
    # every commit's newest head, so the newest line is the whole history; the
    # batches of concurrent charges share lines
    assert max(counts) == 80 and len(counts) <= 81
    report = Ledger(path, create=False).verify()
    assert report["ahead"] == {} and report["releases"] == 80


def test_a_failed_witness_line_fails_the_charged_release(tmp_path, monkeypatch):
    from privloss.budget import LedgerError
    from privloss.budget._anchor import Anchor
    path, witness, key = _anchored(tmp_path)
    ledger = Ledger(path, create=False, witness=witness, key_file=key)

    def refuse(*_):
        raise LedgerError("cannot write the ledger's witness: disk full")

    monkeypatch.setattr(Anchor, "record", refuse)
    computed = []
    with pytest.raises(LedgerError, match="disk full"):
        ledger.release("d", "q", lambda: computed.append(1), [PureDP(0.5)])
    monkeypatch.undo()
    assert computed == []
    shown = ledger.show("d")        # charged (committed before the line), never computed
    assert shown["releases"] == 1 and shown["failed"] == 1 and shown["spent_epsilon"] == 0.5
    # the ledger is ahead of its witness: accepted and re-anchored on open
    assert Ledger(path, create=False).verify()["ahead"] == {}


def test_a_recreated_ledger_does_not_use_the_old_ones_history(tmp_path):
    import os
    path = str(tmp_path / "ledger.sqlite")
    old = Ledger(path)
    old.create_dataset("d", epsilon=10.0)
    for index in range(4):
        old.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    for suffix in ("", "-wal", "-shm"):       # deleted (no witness: allowed, documented)
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    new = Ledger(path)
    new.create_dataset("d", epsilon=10.0)
    for index in range(6):       # past the old history's length, in this process
        new.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    assert Ledger(path, create=False).show("d")["releases"] == 6
    with pytest.raises(LedgerError):       # the old object's file is gone
        old.release("d", {"q": "after"}, lambda: 0, [PureDP(0.1)])


def test_a_charge_after_a_rollback_by_another_process(tmp_path):
    # the shared history is longer than the ledger now: a new object charges on
    # what the ledger holds (without a witness, as before), the old one refuses
    path = str(tmp_path / "ledger.sqlite")
    old = Ledger(path)
    old.create_dataset("d", epsilon=10.0)
    new = Ledger(path, create=False)
    for index in range(3):
        old.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    assert old.show("d")["releases"] == 3
    _rolled_back(path)
    _rolled_back(path)
    for index in range(4):
        new.release("d", {"q": f"new {index}"}, lambda: index, [PureDP(0.1)])
    assert new.show("d")["releases"] == 5
    with pytest.raises(LedgerIntegrityError):
        old.release("d", {"q": "after"}, lambda: 0, [PureDP(0.1)])


def test_a_reader_with_an_older_snapshot_reads_the_shared_prefix(tmp_path, monkeypatch):
    path = str(tmp_path / "ledger.sqlite")
    writer = Ledger(path)
    writer.create_dataset("d", epsilon=10.0)
    for index in range(3):
        writer.release("d", {"q": index}, lambda: index, [PureDP(0.1)])
    reader = Ledger(path, create=False)
    expected = reader.events("d")
    with reader._read() as conn:
        with reader._snapshot(conn):
            reader._dataset(conn, "d")          # the snapshot begins: 3 releases
            for index in range(2):              # the shared history grows past it
                writer.release("d", {"q": f"later {index}"}, lambda: 0, [PureDP(0.2)])
            hashed = []
            original = _integrity.release_chain
            monkeypatch.setattr(_integrity, "release_chain",
                                lambda *values: hashed.append(values[1]) or original(*values))
            state = reader._verify(conn, "d")
            assert state.count == 3 and hashed == []        # no history hashed again
            assert tuple(reader._recorded_events(conn, "d")) == expected
            assert reader._spending(conn, reader._dataset(conn, "d")).epsilon < 0.31
    assert reader.show("d")["releases"] == 5


def test_the_shared_caches_go_with_the_last_object(tmp_path):
    import gc
    from privloss.budget import _shared
    path = str(tmp_path / "ledger.sqlite")
    ledger = Ledger(path)
    ledger.create_dataset("d", epsilon=1.0)
    ledger.release("d", "q", lambda: 0, [PureDP(0.1)])
    key = next(key for key in list(_shared._SHARED.keys()) if key[2].endswith("ledger.sqlite")
               and str(tmp_path) in key[2])
    del ledger
    gc.collect()
    assert key not in _shared._SHARED

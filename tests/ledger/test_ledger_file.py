"""One ledger, one file: hard links, non-regular files, copies restored in
place and foreign journals are refused before SQLite opens anything
(issue: a ledger opened under two names answered 20 releases on a budget of 10)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading

import pytest

from privloss.budget import Ledger, LedgerBudgetError, LedgerError
from privloss.budget._store import LedgerFile
from privloss.events import PureDP

#: ten stored PureDP(0.1) sum to just over 1 (0.1 is 0.1000000000000000055... in
#: binary64) and budgets compare exactly: this is the smallest budget they fit
TEN_TENTHS = 1.0000000000000002


@pytest.fixture
def path(tmp_path):
    path = str(tmp_path / "budget.sqlite")
    Ledger(path).create_dataset("d", epsilon=TEN_TENTHS)
    return path


def test_a_hard_linked_ledger_is_refused_under_both_names(path, tmp_path):
    other = str(tmp_path / "alias.sqlite")
    os.link(path, other)
    for name in (path, other):
        with pytest.raises(LedgerError, match="2 hard links"):
            Ledger(name, create=False)
    os.unlink(other)
    assert Ledger(path, create=False).show("d")["releases"] == 0


def test_the_double_spend_through_a_hard_link_is_gone(path, tmp_path):
    """The attack: two names, two WAL files, two locks; each name alone spends the
    whole budget. Now the second name cannot even be opened, and an already
    open Ledger re-checks the link count at every operation."""
    first = Ledger(path, create=False)
    other = str(tmp_path / "alias.sqlite")
    os.link(path, other)
    with pytest.raises(LedgerError, match="hard links"):
        Ledger(other, create=False)
    with pytest.raises(LedgerError, match="hard links"):
        first.release("d", "q", lambda: 1, PureDP(0.1))
    os.unlink(other)
    answered = 0
    for index in range(20):
        try:
            first.release("d", index, lambda: index, PureDP(0.1))
            answered += 1
        except LedgerBudgetError:
            pass
    assert answered == 10


def test_a_symbolic_link_is_the_same_ledger(path, tmp_path):
    """A symlink resolves to the one real file, so SQLite's journal names agree."""
    link = str(tmp_path / "link.sqlite")
    os.symlink(path, link)
    by_link, by_name = Ledger(link, create=False), Ledger(path, create=False)
    assert by_link.path == by_name.path == os.path.realpath(path)

    def spend(ledger, prefix):
        for index in range(10):
            try:
                ledger.release("d", f"{prefix}{index}", lambda: index, PureDP(0.1))
            except LedgerBudgetError:
                pass

    threads = [threading.Thread(target=spend, args=(ledger, prefix))
               for ledger, prefix in ((by_link, "a"), (by_name, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert by_name.show("d")["releases"] == 10


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_non_regular_files_are_refused_before_opening(tmp_path, kind):
    target = str(tmp_path / "special")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        os.mkdir(target)
    else:
        target = "/dev/null"
    before = set(os.listdir(os.path.dirname(target)))
    with pytest.raises(LedgerError, match="not a regular file|is a directory"):
        Ledger(target)
    # no stray journal next to a device or FIFO
    assert set(os.listdir(os.path.dirname(target))) == before


def test_a_copy_restored_in_place_is_refused(path, tmp_path):
    """Restoring yesterday's copy would give spent budget back."""
    ledger = Ledger(path, create=False)
    ledger.release("d", "first", lambda: 1, PureDP(0.5))
    backup = str(tmp_path / "backup.sqlite")
    with sqlite3.connect(path) as conn:          # a consistent copy (checkpointed)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(path, backup)
    ledger.release("d", "second", lambda: 2, PureDP(0.5))
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    os.replace(backup, path)                     # a new inode under the old name
    with pytest.raises(LedgerError, match="not the file the ledger was created as"):
        Ledger(path, create=False)
    with pytest.raises(LedgerError, match="not the file the ledger was created as"):
        ledger.release("d", "third", lambda: 3, PureDP(0.1))


def test_a_moved_ledger_on_the_same_file_system_keeps_working(path, tmp_path):
    moved = str(tmp_path / "moved.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.rename(path + suffix, moved + suffix)
    assert Ledger(moved, create=False).show("d")["releases"] == 0


def test_a_linked_journal_is_refused(path, tmp_path):
    Ledger(path, create=False).release("d", "q", lambda: 1, PureDP(0.1))
    journal = path + "-wal"
    if not os.path.exists(journal):
        open(journal, "wb").close()
    os.link(journal, str(tmp_path / "stolen-wal"))
    with pytest.raises(LedgerError, match="journal must belong to this ledger"):
        Ledger(path, create=False)


def test_read_only_files_are_opened_read_only(tmp_path):
    """show/history on a file that cannot be written use mode=ro (immutable=1
    when the directory cannot be written either): the URI says so."""
    store = LedgerFile(str(tmp_path / "x.sqlite"), timeout=1.0, create=False)
    assert "mode=ro" in store._uri(read_only=True, create=False)
    assert "mode=rw" in store._uri(read_only=False, create=False)

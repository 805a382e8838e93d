"""An anchored ledger on both backends: the red team's suffix deletion (T1),
deletion of a dataset or of the whole ledger (T2), rollback to an older copy
(T3) and single-bit changes of stored values are all refused, by ``Ledger``
on open, by ``privloss ledger verify`` and by a process that was already
running; a crash between a commit and its witness line leaves the ledger
ahead, which is re-anchored (issue 19, items 1 and 7)."""

from __future__ import annotations

import json
import os
import struct

import pytest

from privloss.budget import (Ledger, LedgerBudgetError, LedgerError, LedgerIntegrityError,
                             create_key_file)
from privloss.cli.main import main
from privloss.events import PureDP

BUDGET_RELEASES = 10          # a budget of 1.25 spent by releases of 0.125 (exact binary64)


class AnchorContract:
    """Every backend inherits these tests; a backend gives ``new_location``,
    ``edit`` (SQL run as the database's owner, triggers bypassed), ``snapshot``
    and ``restore`` (an older copy of the whole ledger), and ``delete``."""

    @pytest.fixture(autouse=True)
    def _keys(self, tmp_path):
        self.folder = tmp_path
        self.witness = str(tmp_path / "ledger.witness")
        self.key = create_key_file(tmp_path / "ledger.key")

    def open(self, location, **options) -> Ledger:
        return Ledger(location, witness=self.witness, key_file=self.key, **options)

    def build(self, releases: int = BUDGET_RELEASES):
        location = self.new_location()
        ledger = self.open(location)
        ledger.create_dataset("d", epsilon=1.25)
        ledger.create_dataset("other", epsilon=1.25)
        for index in range(releases):
            ledger.release("d", {"q": index}, lambda: index, [PureDP(0.125)], analyst="ann")
        ledger.release("other", "x", lambda: 1, [PureDP(0.5)])
        return location, ledger

    def rows(self, location: str, name: str) -> int:
        return self.fetch(location, f"SELECT count(*) FROM releases WHERE dataset = '{name}'"
                          )[0][0]

    def value(self, location, table, column, where):
        return self.fetch(location, f"SELECT {column} FROM {table} WHERE {where}")[0][0]

    def test_an_intact_anchored_ledger_verifies(self):
        location, ledger = self.build()
        report = Ledger(location, create=False).verify()     # the recorded witness and key
        assert report["anchored"] and report["keyed"] and report["ahead"] == {}
        assert report["releases"] == BUDGET_RELEASES + 1 and report["warning"] is None
        with pytest.raises(LedgerBudgetError):
            ledger.release("d", "over", lambda: 0, [PureDP(0.125)])

    def test_t1_suffix_deletion_is_refused(self, capsys):
        location, running = self.build()
        keep = 5
        self.edit(location, f"DELETE FROM releases WHERE dataset = 'd' AND id NOT IN "
                            f"(SELECT id FROM releases WHERE dataset = 'd' ORDER BY id "
                            f"LIMIT {keep})")
        self.edit(location, f"UPDATE datasets SET recorded = {keep}, head = (SELECT chain "
                            f"FROM releases WHERE dataset = 'd' ORDER BY id DESC LIMIT 1) "
                            f"WHERE name = 'd'")
        with pytest.raises(LedgerIntegrityError, match="behind by 5"):
            self.open(location, create=False)
        with pytest.raises(LedgerIntegrityError, match="behind by 5"):
            Ledger(location, create=False)                    # the recorded anchor
        assert main(["ledger", "verify", "--ledger", location]) == 2
        assert "behind by 5" in capsys.readouterr().err
        # a process that was running: refuses before charging or computing
        computed = []
        with pytest.raises(LedgerIntegrityError, match="deleted"):
            running.release("d", "over", lambda: computed.append(1), [PureDP(0.125)],
                            analyst="ann")
        assert computed == [] and self.rows(location, "d") == keep

    def test_t2_deleted_dataset_is_refused_and_not_recreated(self):
        location, running = self.build()
        self.edit(location, "DELETE FROM releases WHERE dataset = 'd'")
        self.edit(location, "DELETE FROM datasets WHERE name = 'd'")
        with pytest.raises(LedgerIntegrityError, match="'d' is missing"):
            self.open(location, create=False)
        with pytest.raises(LedgerIntegrityError, match="witness records it"):
            running.create_dataset("d", epsilon=1.25)
        assert self.rows(location, "d") == 0

    def test_t2_deleted_ledger_is_not_recreated(self, capsys):
        location, _ = self.build()
        self.delete(location)
        with pytest.raises(LedgerIntegrityError, match="was deleted"):
            self.open(location)
        if not location.startswith("postgresql://"):
            assert main(["ledger", "create", "--ledger", location, "--dataset", "d",
                         "--budget-epsilon", "1", "--witness", self.witness,
                         "--key-file", self.key]) == 2
            assert "was deleted" in capsys.readouterr().err
            assert not os.path.exists(location)

    def test_t3_rollback_to_an_older_copy_is_refused(self):
        location = self.new_location()
        running = self.open(location)
        running.create_dataset("d", epsilon=1.25)
        for index in range(3):
            running.release("d", index, lambda: index, [PureDP(0.125)])
        older = self.snapshot(location)
        for index in range(3, BUDGET_RELEASES):
            running.release("d", index, lambda: index, [PureDP(0.125)])
        self.restore(location, older)
        with pytest.raises(LedgerIntegrityError, match="behind by 7"):
            self.open(location, create=False)
        with pytest.raises(LedgerIntegrityError):
            running.release("d", "after", lambda: 0, [PureDP(0.125)])
        assert self.rows(location, "d") == 3

    def test_a_rewritten_history_is_refused(self):
        """Same count, another history, its hashes recomputed by someone without
        the key: the witnessed head is not in the chain."""
        from privloss.budget._integrity import release_chain, release_seal
        location, _ = self.build(3)
        rows = self.fetch(location, "SELECT id, dataset, query_key, events, guarantee, "
                                    "plan_item, owner, analyst, spent_epsilon, bound, time, "
                                    "result, chain FROM releases JOIN outcomes ON release_id = id "
                                    "WHERE dataset = 'd' ORDER BY id")
        *_, last = rows
        release_id, dataset, _, events, guarantee, plan_item, owner, analyst, spent, bound, \
            time, result, _ = last
        chain = release_chain(rows[-2][-1], release_id, dataset, '"forged"', events, guarantee,
                              plan_item, owner, analyst, spent, bound, time)
        self.edit(location, f"UPDATE releases SET query_key = '\"forged\"', chain = '{chain}' "
                            f"WHERE id = {release_id}")
        self.edit(location, f"UPDATE outcomes SET seal = '{release_seal(chain, 'done', result)}' "
                            f"WHERE release_id = {release_id}")
        self.edit(location, f"UPDATE datasets SET head = '{chain}' WHERE name = 'd'")
        # the chain itself verifies (opening checks it first); only the witness differs
        with pytest.raises(LedgerIntegrityError, match="rewritten"):
            self.open(location, create=False)

    @pytest.mark.parametrize("column", ["query_key", "events", "guarantee", "owner", "analyst",
                                        "result", "spent_epsilon", "bound", "time", "chain",
                                        "seal", "dataset:budget_epsilon", "dataset:created"])
    def test_a_single_bit_change_of_a_stored_value_is_refused(self, column):
        location, _ = self.build(4)
        table, column = ("datasets", column.split(":")[1]) if column.startswith("dataset:") \
            else ("outcomes", column) if column in ("result", "seal") else ("releases", column)
        third = "(SELECT min(id) + 2 FROM releases WHERE dataset = 'd')"
        where = "name = 'd'" if table == "datasets" else \
            f"release_id = {third}" if table == "outcomes" else f"id = {third}"
        value = self.value(location, table, column, where)
        if isinstance(value, float):
            bits = struct.unpack("<q", struct.pack("<d", value))[0] ^ 1
            flipped = struct.unpack("<d", struct.pack("<q", bits))[0]
            literal = repr(flipped)
        else:
            position = len(value) // 2
            flipped = value[:position] + chr(ord(value[position]) ^ 1) + value[position + 1:]
            literal = "'" + flipped.replace("'", "''") + "'"
        self.edit(location, f"UPDATE {table} SET {column} = {literal} WHERE {where}")
        with pytest.raises(LedgerIntegrityError):
            Ledger(location, create=False).verify()

    def test_crash_before_the_witness_line_leaves_the_ledger_ahead(self, monkeypatch):
        location, ledger = self.build(2)
        from privloss.budget._anchor import Anchor
        monkeypatch.setattr(Anchor, "record", lambda *args: None)    # lines lost in a crash
        ledger.release("d", "lost", lambda: 0, [PureDP(0.125)])
        monkeypatch.undo()
        reopened = Ledger(location, create=False)         # ahead by one: re-anchored on open
        assert reopened._ahead == {"d": 1}
        again = Ledger(location, create=False).verify()
        assert again["ahead"] == {} and again["releases"] == 4

    @pytest.mark.parametrize("audit", ["open", "verify"])
    def test_a_charge_committed_while_another_process_opens_is_not_a_deletion(
            self, monkeypatch, audit):
        """The race CI met with 50 analysts: a writer commits and appends its
        witness line between a reader's snapshot and its read of the witness.
        The reader must read the witness first (appends follow commits), so the
        newer witness never looks ahead of the ledger it checks."""
        from privloss.budget._anchor import Anchor
        location, writer = self.build(releases=2)
        original = Anchor.read
        charged = []

        def read_while_a_charge_commits(anchor):
            if not charged:
                charged.append(writer.release("d", "meanwhile", lambda: 0, [PureDP(0.125)]))
            return original(anchor)

        reader = self.open(location, create=False) if audit == "verify" else None
        monkeypatch.setattr(Anchor, "read", read_while_a_charge_commits)
        if audit == "open":
            reader = self.open(location, create=False)
        report = reader.verify()
        assert charged and report["ahead"] == {}
        assert report["releases"] == 2 + 1 + 1

    def test_a_forged_witness_line_is_refused(self):
        location, _ = self.build(2)
        with open(self.witness, "a") as handle:
            handle.write(json.dumps({"dataset": "d", "releases": 1, "head": "0" * 64,
                                     "mac": "0" * 64}) + "\n")
            handle.write(json.dumps({"dataset": "d", "releases": 9, "head": "0" * 64,
                                     "mac": "0" * 64}) + "\n")
        with pytest.raises(LedgerIntegrityError, match="MAC"):
            Ledger(location, create=False)

    def test_the_witness_and_key_are_required_once_anchored(self, monkeypatch):
        location, _ = self.build(1)
        os.unlink(self.witness)
        with pytest.raises(LedgerIntegrityError, match="witness .* is missing"):
            Ledger(location, create=False)
        with pytest.raises(LedgerIntegrityError, match="key"):
            Ledger(location, create=False, witness=self.witness,
                   key_file=create_key_file(self.folder / "other.key"))

    def test_an_unanchored_ledger_works_and_verify_says_what_it_cannot_see(self):
        location = self.new_location()
        ledger = Ledger(location)
        ledger.create_dataset("d", epsilon=1.25)
        ledger.release("d", "q", lambda: 1, [PureDP(0.125)])
        report = ledger.verify()
        assert not report["anchored"] and "cannot be detected" in report["warning"]


class TestSqliteAnchor(AnchorContract):
    def new_location(self) -> str:
        self._count = getattr(self, "_count", 0) + 1
        return str(self.folder / f"ledger{self._count}.sqlite")

    def _connect(self, location):
        import sqlite3
        from tests.ledger._edits import drop_triggers
        conn = sqlite3.connect(location, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = OFF")
        drop_triggers(conn)
        return conn

    def edit(self, location: str, sql: str) -> None:
        conn = self._connect(location)
        try:
            conn.execute(sql)
        finally:
            conn.close()

    def fetch(self, location: str, sql: str) -> list:
        conn = self._connect(location)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def snapshot(self, location: str) -> bytes:
        conn = self._connect(location)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        with open(location, "rb") as handle:
            return handle.read()

    def restore(self, location: str, data: bytes) -> None:
        """Write the older copy over the file in place (same inode, so the
        device:inode check cannot see it)."""
        conn = self._connect(location)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        with open(location, "r+b") as handle:
            handle.truncate(0)
            handle.write(data)

    def delete(self, location: str) -> None:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(location + suffix):
                os.unlink(location + suffix)


class TestPostgresAnchor(AnchorContract):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_server):
        self._server_ = postgres_server

    def new_location(self) -> str:
        return self._server_.new_database()

    def _run(self, location, sql, parameters=()):
        import psycopg
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute("SET search_path TO privloss")
            conn.execute("SET session_replication_role = replica")    # the owner bypasses triggers
            cursor = conn.execute(sql, parameters)
            return cursor.fetchall() if cursor.description else None

    def edit(self, location: str, sql: str) -> None:
        self._run(location, sql)

    def fetch(self, location: str, sql: str) -> list:
        return self._run(location, sql)

    def snapshot(self, location: str) -> str:
        self._run(location, "DROP TABLE IF EXISTS public.old_releases, public.old_datasets")
        self._run(location, "CREATE TABLE public.old_releases AS SELECT * FROM releases")
        self._run(location, "CREATE TABLE public.old_datasets AS SELECT * FROM datasets")
        return location

    def restore(self, location: str, _older) -> None:
        """What restoring an older dump does to the rows."""
        self._run(location, "DELETE FROM releases")
        self._run(location, "INSERT INTO releases SELECT * FROM public.old_releases")
        self._run(location, "UPDATE datasets SET head = o.head, recorded = o.recorded FROM "
                            "public.old_datasets o WHERE o.name = datasets.name")

    def delete(self, location: str) -> None:
        self._run(location, "DROP SCHEMA privloss CASCADE")


def _table_rows(path: str):
    """Every column of every row, read from the tables themselves."""
    import sqlite3
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {table: conn.execute(f"SELECT * FROM {table} NOT INDEXED ORDER BY 1").fetchall()
                for table in ("meta", "datasets", "releases", "outcomes")}
    finally:
        conn.close()


def test_single_bit_flips_of_the_file_are_refused_or_change_nothing(tmp_path):
    """The red team flipped 200 single bits of a ledger file: 20 changed stored
    rows while verify passed (it read those columns through an index). Now
    ``verify`` passes only if every row, read from its table, is unchanged."""
    import gc
    import random
    import sqlite3
    path = str(tmp_path / "ledger.sqlite")
    key = create_key_file(tmp_path / "ledger.key")
    ledger = Ledger(path, witness=str(tmp_path / "w"), key_file=key)
    ledger.create_dataset("d", epsilon=1.0, delta=1e-6)
    for index in range(8):
        ledger.release("d", {"q": index}, lambda: {"count": index}, [PureDP(0.125)],
                       analyst=f"analyst{index % 3}")
    ledger.create_dataset("other", epsilon=2.0)
    ledger.release("other", "x", lambda: 1, [PureDP(0.2)])
    ledger._file.close()
    del ledger
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(path, "rb") as handle:
        pristine = handle.read()
    before = _table_rows(path)
    rng = random.Random(19)
    outcomes = {"refused": 0, "unchanged": 0}
    for _ in range(200):
        data = bytearray(pristine)
        position = rng.randrange(len(data))
        data[position] ^= 1 << rng.randrange(8)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        with open(path, "r+b") as handle:          # in place: the same inode
            handle.truncate(0)
            handle.write(data)
        try:
            opened = Ledger(path, create=False)
            try:
                opened.verify()
            finally:
                opened._file.close()
        except LedgerError:
            outcomes["refused"] += 1
            gc.collect()                 # no connection of a refused open survives
            continue
        assert _table_rows(path) == before, f"bit {position} changed rows; verify passed"
        outcomes["unchanged"] += 1
    assert outcomes["refused"] > 0 and sum(outcomes.values()) == 200


def test_a_crash_while_anchoring_is_recovered(tmp_path):
    """The witness is created first, then the ledger records it: a witness with
    its header alone (a crash in between) is adopted, never refused."""
    from privloss.budget._anchor import Anchor, load_key
    key = create_key_file(tmp_path / "k")
    witness = str(tmp_path / "w")
    Anchor(witness, load_key(key)).create("0" * 32)
    ledger = Ledger(str(tmp_path / "l.sqlite"), witness=witness, key_file=key)
    ledger.create_dataset("d", epsilon=1.25)
    ledger.release("d", "q", lambda: 1, [PureDP(0.125)])
    assert Ledger(str(tmp_path / "l.sqlite"), create=False).verify()["anchored"]


def test_the_cli_anchors_new_ledgers_by_default(tmp_path, capsys):
    path = str(tmp_path / "budget.sqlite")
    assert main(["ledger", "create", "--ledger", path, "--dataset", "d",
                 "--budget-epsilon", "1", "--budget-delta", "1e-6"]) == 0
    assert os.stat(path + ".key").st_mode & 0o777 == 0o600
    assert os.path.exists(path + ".witness")
    capsys.readouterr()
    assert main(["ledger", "verify", "--ledger", path]) == 0
    captured = capsys.readouterr()
    assert "matches its witness" in captured.out and "(authenticated)" in captured.out
    assert captured.err == ""
    plain = str(tmp_path / "plain.sqlite")
    assert main(["ledger", "create", "--ledger", plain, "--dataset", "d",
                 "--budget-epsilon", "1", "--budget-delta", "1e-6", "--no-witness"]) == 0
    capsys.readouterr()
    assert main(["ledger", "verify", "--ledger", plain]) == 0
    assert "cannot be detected" in capsys.readouterr().err


def test_the_key_comes_from_a_private_file_or_the_environment(tmp_path, monkeypatch):
    from privloss.budget import load_key
    loose = tmp_path / "loose.key"
    loose.write_text("k" * 64)
    loose.chmod(0o640)
    with pytest.raises(LedgerError, match="chmod 600"):
        load_key(loose)
    short = tmp_path / "short.key"
    short.write_text("k" * 8)
    short.chmod(0o600)
    with pytest.raises(LedgerError, match="at least 32"):
        load_key(short)
    monkeypatch.setenv("PRIVLOSS_LEDGER_KEY", "e" * 64)
    key, source = load_key(None)
    assert key == b"e" * 64 and source == "environment"
    # a ledger anchored with the environment's key needs it again, and only it
    location = str(tmp_path / "env.sqlite")
    Ledger(location, witness=str(tmp_path / "env.witness")).create_dataset("d", epsilon=1.25)
    assert Ledger(location, create=False).verify()["keyed"]
    monkeypatch.setenv("PRIVLOSS_LEDGER_KEY", "f" * 64)
    with pytest.raises(LedgerIntegrityError, match="key id"):
        Ledger(location, create=False)
    monkeypatch.delenv("PRIVLOSS_LEDGER_KEY")
    with pytest.raises(LedgerError, match="no key was given"):
        Ledger(location, create=False)


def test_removing_the_anchor_record_does_not_unanchor_the_ledger(tmp_path, capsys):
    """An edit that deletes the ledger's anchor record as well as its newest
    releases: the witness beside the ledger (where the CLI puts it) is found."""
    import sqlite3
    path = str(tmp_path / "budget.sqlite")
    assert main(["ledger", "create", "--ledger", path, "--dataset", "d",
                 "--budget-epsilon", "1"]) == 0
    ledger = Ledger(path, create=False)
    for index in range(4):
        ledger.release("d", index, lambda: index, [PureDP(0.125)])
    from tests.ledger._edits import untriggered
    with untriggered(path) as conn:
        conn.execute("DELETE FROM releases WHERE id > 2")
        conn.execute("UPDATE datasets SET recorded = 2, head = (SELECT chain FROM releases "
                     "WHERE id = 2)")
        conn.execute("DELETE FROM meta WHERE key = 'anchor'")
    with pytest.raises(LedgerIntegrityError, match="no anchor record"):
        Ledger(path, create=False)
    capsys.readouterr()
    assert main(["ledger", "show", "--ledger", path, "--dataset", "d"]) == 2
    assert "no anchor record" in capsys.readouterr().err


def test_a_witness_that_cannot_be_appended_to_refuses_before_charging(tmp_path, monkeypatch):
    from privloss.budget import _audit
    key = create_key_file(tmp_path / "k")
    ledger = Ledger(str(tmp_path / "l.sqlite"), witness=str(tmp_path / "w"), key_file=key)
    ledger.create_dataset("d", epsilon=1.0)
    monkeypatch.setattr(_audit, "_appendable", lambda path: False)   # root may append anyway
    computed = []
    with pytest.raises(LedgerError, match="nothing was charged"):
        ledger.release("d", "q", lambda: computed.append(1), [PureDP(0.1)])
    monkeypatch.undo()
    assert computed == [] and ledger.show("d")["releases"] == 0

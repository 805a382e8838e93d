"""Schema 2 to 3 (issue 19 item 1): a ledger whose releases were finished by
UPDATE is upgraded in place on both backends; outcomes move to their own
insert-only table, every chain and seal still verifies, ids are not reused,
and the triggers then refuse updates and deletions of release records."""

from __future__ import annotations

import json
import sqlite3

import pytest

from privloss.budget import Ledger, LedgerBudgetError, SCHEMA_VERSION
from privloss.budget._integrity import dataset_digest, release_chain, release_seal
from privloss.events import PureDP

#: schema 2 as privloss created it (the tables and index; _store.SCHEMA before schema 3)
V2_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    """CREATE TABLE datasets (
        name TEXT PRIMARY KEY NOT NULL, budget_epsilon REAL NOT NULL, budget_delta REAL NOT NULL,
        interaction TEXT NOT NULL, policy TEXT, plan TEXT, note TEXT, created TEXT NOT NULL,
        digest TEXT NOT NULL, head TEXT NOT NULL, recorded INTEGER NOT NULL)""",
    """CREATE TABLE releases (
        id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL REFERENCES datasets(name),
        query_key TEXT NOT NULL, events TEXT NOT NULL, guarantee TEXT NOT NULL,
        plan_item INTEGER,
        status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed')),
        owner TEXT, analyst TEXT, result TEXT, spent_epsilon REAL NOT NULL, bound TEXT NOT NULL,
        time TEXT NOT NULL, chain TEXT NOT NULL, seal TEXT,
        CHECK ((status = 'done') = (result IS NOT NULL)))""",
    "CREATE INDEX releases_by_key ON releases (dataset, query_key, status)",
)

#: (query key, status, result) of the releases written: 0.25 each of a budget of 1
RELEASES = [({"q": 0}, "done", "10"), ({"q": 1}, "failed", None), ({"q": 2}, "pending", None)]


def _rows():
    """The dataset's row and its releases' rows, chained as schema 2 stored them."""
    from privloss.accounting.fully_adaptive import default_policy, release_guarantee
    from privloss.serialize import events_to_text

    policy = json.dumps(default_policy(1.0, 0.0).to_dict(), allow_nan=False)
    created = "2026-11-20T00:00:00+00:00"
    digest = dataset_digest("d", 1.0, 0.0, "fully-adaptive", policy, None, None, created)
    events = events_to_text((PureDP(0.25),))
    guarantee = json.dumps(release_guarantee((PureDP(0.25),)).to_dict())
    head, releases = digest, []
    for index, (key, status, result) in enumerate(RELEASES, 1):
        key_text = json.dumps(key, separators=(",", ":"), sort_keys=True)
        spent = 0.25 * index
        chain = release_chain(head, index, "d", key_text, events, guarantee, None, None, None,
                              spent, "basic", created)
        seal = None if status == "pending" else release_seal(chain, status, result)
        releases.append((index, "d", key_text, events, guarantee, None, status, None, None,
                         result, spent, "basic", created, chain, seal))
        head = chain
    dataset = ("d", 1.0, 0.0, "fully-adaptive", policy, None, None, created, digest, head,
               len(RELEASES))
    return dataset, releases


def _check_upgraded(ledger: Ledger) -> None:
    history = ledger.history("d")
    assert [(row["status"], row["result"]) for row in history] == \
        [("done", 10), ("failed", None), ("pending", None)]
    assert ledger.show("d")["failed"] == 1
    assert ledger.lookup("d", {"q": 0}).result == 10
    assert ledger.verify()["releases"] == 3
    receipt = ledger.release_with_receipt("d", {"q": 3}, lambda: 13, [PureDP(0.25)])
    assert receipt.release_id == 4 and receipt.spent_epsilon == 1.0
    with pytest.raises(LedgerBudgetError):
        ledger.release("d", {"q": 4}, lambda: 14, [PureDP(0.25)])
    assert ledger.history("d")[-1]["status"] == "done"


def test_a_schema_2_file_is_upgraded(tmp_path):
    path = str(tmp_path / "v2.sqlite")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for statement in V2_SCHEMA:
        conn.execute(statement)
    dataset, releases = _rows()
    conn.execute("INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", dataset)
    conn.executemany("INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     releases)
    import os
    status = os.stat(path)
    conn.execute("INSERT INTO meta VALUES ('file_id', ?)", (f"{status.st_dev}:{status.st_ino}",))
    conn.execute(f"PRAGMA application_id = {0x504C4C47}")
    conn.execute("PRAGMA user_version = 2")
    conn.close()

    ledger = Ledger(path, create=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        columns = [row[1] for row in conn.execute("PRAGMA table_info(releases)")]
        assert "status" not in columns and "result" not in columns
        assert conn.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 2
    _check_upgraded(ledger)
    with sqlite3.connect(path) as conn:
        for sql in ("UPDATE releases SET spent_epsilon = 0", "DELETE FROM releases",
                    "UPDATE outcomes SET result = '2'", "DELETE FROM outcomes",
                    "UPDATE datasets SET recorded = 0", "DELETE FROM meta"):
            with pytest.raises(sqlite3.IntegrityError, match="privloss ledger"):
                conn.execute(sql)


def test_a_schema_2_postgres_ledger_is_upgraded(postgres_server):
    import psycopg
    from privloss.budget._postgres import postgres_statements

    url = postgres_server.new_database()
    dataset, releases = _rows()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA privloss")
        conn.execute("SET search_path TO privloss")
        for statement in postgres_statements(V2_SCHEMA):
            conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('application', 'privloss-ledger'), "
                     "('schema_version', '2')")
        conn.execute("INSERT INTO datasets VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                     dataset)
        with conn.cursor() as cursor:
            cursor.executemany("INSERT INTO releases VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                               "%s, %s, %s, %s, %s, %s)", releases)
        conn.execute("SELECT setval('releases_id_seq', 3)")
    ledger = Ledger(url, create=False)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO privloss")
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                            ).fetchone()[0] == "3"
        assert conn.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 2
    _check_upgraded(ledger)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO privloss")
        for sql in ("UPDATE releases SET spent_epsilon = 0", "DELETE FROM outcomes"):
            with pytest.raises(psycopg.errors.RaiseException, match="privloss ledger"):
                conn.execute(sql)

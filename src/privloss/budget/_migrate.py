"""Upgrades of older ledgers to schema 3, each in one write transaction.

Schema 2 to 3 (SQLite and PostgreSQL): a release's outcome (status, result,
seal) moves from its release row, which the ledger used to UPDATE, to its own
insert-only table ``outcomes``; the release rows lose those columns and the
triggers that keep release records insert-only are installed. Hash chains and
seals are unchanged (a release's chain never covered its outcome). On
PostgreSQL the upgrade alters tables and must run once as the ledger's owner.

Schema 1 to 3 (SQLite files before plans and filters):

Schema-1 datasets were ``adaptive`` or ``setwise`` with no preregistered plan,
and were charged with fixed-parameter bounds that do not hold when an analyst
chooses parameters from earlier outputs. Their history is kept release by
release; from now on they are re-accounted as ``fully-adaptive`` with the
default filter policy of their budget, and the dataset carries a note saying
so (``ledger show`` prints it). Nothing keeps the unsound rule.

The upgrade runs once, in one write transaction (all or nothing), the first
time a writable schema-1 file is opened.
"""

from __future__ import annotations

import json

from privloss.serialize import events_from_text

from ._integrity import dataset_digest, release_chain, release_seal
from ._store import APPLICATION_ID, SCHEMA, SCHEMA_VERSION, SQLITE_TRIGGERS, file_id_of

__all__ = ["upgrade_version_1", "upgrade_version_2", "MIGRATION_NOTE"]

MIGRATION_NOTE = ("created as {model} without a preregistered plan; re-accounted as "
                  "fully-adaptive since ledger schema 2: the {model} bounds it was charged with "
                  "assume privacy parameters fixed in advance, which an analyst choosing as "
                  "they go does not satisfy")


def upgrade_version_1(conn, path_status) -> None:
    """Rewrite a schema-1 ledger in place (caller holds the write transaction)."""
    from privloss.accounting.fully_adaptive import default_policy, release_guarantee

    datasets = conn.execute("SELECT name, budget_epsilon, budget_delta, interaction, created "
                            "FROM datasets").fetchall()
    releases = conn.execute("SELECT id, dataset, query_key, events, result, spent_epsilon, "
                            "bound, time FROM releases ORDER BY id").fetchall()
    conn.execute("ALTER TABLE datasets RENAME TO datasets_v1")
    conn.execute("ALTER TABLE releases RENAME TO releases_v1")
    for statement in SCHEMA:
        conn.execute(statement)
    heads, counts = {}, {}
    for name, epsilon, delta, model, created in datasets:
        policy = json.dumps(default_policy(epsilon, delta).to_dict(), allow_nan=False)
        note = MIGRATION_NOTE.format(model=model)
        heads[name] = dataset_digest(name, epsilon, delta, "fully-adaptive", policy, None, note,
                                     created)
        counts[name] = 0
        conn.execute("INSERT INTO datasets (name, budget_epsilon, budget_delta, interaction, "
                     "policy, plan, note, created, digest, head, recorded) VALUES "
                     "(?, ?, ?, 'fully-adaptive', ?, NULL, ?, ?, ?, ?, 0)",
                     (name, epsilon, delta, policy, note, created, heads[name], heads[name]))
    for release_id, dataset, key, events, result, spent, bound, time in releases:
        guarantee = json.dumps(release_guarantee(events_from_text(events)).to_dict())
        chain = release_chain(heads[dataset], release_id, dataset, key, events, guarantee, None,
                              None, None, spent, bound, time)
        conn.execute("INSERT INTO releases (id, dataset, query_key, events, guarantee, "
                     "plan_item, owner, analyst, spent_epsilon, bound, time, chain) VALUES "
                     "(?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, ?)",
                     (release_id, dataset, key, events, guarantee, spent, bound, time, chain))
        conn.execute("INSERT INTO outcomes (release_id, status, result, seal) VALUES "
                     "(?, 'done', ?, ?)", (release_id, result, release_seal(chain, "done", result)))
        heads[dataset], counts[dataset] = chain, counts[dataset] + 1
    for name in heads:
        conn.execute("UPDATE datasets SET head = ?, recorded = ? WHERE name = ?",
                     (heads[name], counts[name], name))
    conn.execute("DROP TABLE releases_v1")
    conn.execute("DROP TABLE datasets_v1")
    conn.execute("INSERT INTO meta (key, value) VALUES ('file_id', ?)",
                 (file_id_of(path_status),))
    conn.execute("INSERT INTO meta (key, value) VALUES ('upgraded_from', '1')")
    for statement in SQLITE_TRIGGERS:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


#: the columns a release keeps in schema 3, in order
_RELEASE_COLUMNS = ("id, dataset, query_key, events, guarantee, plan_item, owner, analyst, "
                    "spent_epsilon, bound, time, chain")


def upgrade_version_2(conn, *, postgres: bool) -> None:
    """Move the outcomes of a schema-2 ledger to their own table (caller holds
    the write transaction; see the module docstring)."""
    if postgres:
        _upgrade_postgres(conn)
        return
    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'releases'").fetchone()
    conn.execute("ALTER TABLE releases RENAME TO releases_v2")
    conn.execute("DROP INDEX releases_by_key")
    for statement in SCHEMA[2:]:            # releases, outcomes and their indexes
        conn.execute(statement)
    conn.execute(f"INSERT INTO releases ({_RELEASE_COLUMNS}) SELECT {_RELEASE_COLUMNS} "
                 f"FROM releases_v2 ORDER BY id")
    conn.execute("INSERT INTO outcomes (release_id, status, result, seal) SELECT id, status, "
                 "result, seal FROM releases_v2 WHERE status <> 'pending' ORDER BY id")
    conn.execute("DROP TABLE releases_v2")
    if sequence is not None:                # ids never reused, as before the upgrade
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'releases'")
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('releases', "
                     "max(?, coalesce((SELECT max(id) FROM releases), 0)))", (sequence[0],))
    for statement in SQLITE_TRIGGERS:
        conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('upgraded_from_2', '2')")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _upgrade_postgres(conn) -> None:
    from ._postgres import APPEND_ONLY_SQL, postgres_statements

    for statement in postgres_statements(SCHEMA[3:4]):        # outcomes
        conn.execute(statement)
    conn.execute("INSERT INTO outcomes (release_id, status, result, seal) SELECT id, status, "
                 "result, seal FROM releases WHERE status <> 'pending' ORDER BY id")
    conn.execute("DROP TRIGGER IF EXISTS releases_append_only ON releases")
    # the old index on (dataset, query_key, status) goes with the column
    conn.execute("ALTER TABLE releases DROP COLUMN status, DROP COLUMN result, DROP COLUMN seal")
    for statement in postgres_statements(SCHEMA[4:]):         # the indexes
        conn.execute(statement)
    conn.execute("DROP TRIGGER IF EXISTS meta_append_only ON meta")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    conn.execute("INSERT INTO meta (key, value) VALUES ('upgraded_from_2', '2')")
    for statement in APPEND_ONLY_SQL:
        conn.execute_literal(statement)

"""Upgrade of a schema-1 ledger file (before plans and filters) to schema 2.

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
from ._store import APPLICATION_ID, SCHEMA, SCHEMA_VERSION, file_id_of

__all__ = ["upgrade_version_1", "MIGRATION_NOTE"]

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
                     "plan_item, status, owner, analyst, result, spent_epsilon, bound, time, "
                     "chain, seal) VALUES (?, ?, ?, ?, ?, NULL, 'done', NULL, NULL, ?, ?, ?, ?, "
                     "?, ?)",
                     (release_id, dataset, key, events, guarantee, result, spent, bound, time,
                      chain, release_seal(chain, "done", result)))
        heads[dataset], counts[dataset] = chain, counts[dataset] + 1
    for name in heads:
        conn.execute("UPDATE datasets SET head = ?, recorded = ? WHERE name = ?",
                     (heads[name], counts[name], name))
    conn.execute("DROP TABLE releases_v1")
    conn.execute("DROP TABLE datasets_v1")
    conn.execute("INSERT INTO meta (key, value) VALUES ('file_id', ?)",
                 (file_id_of(path_status),))
    conn.execute("INSERT INTO meta (key, value) VALUES ('upgraded_from', '1')")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

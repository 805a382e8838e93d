"""Editing a SQLite ledger as someone who can write its file (the attacks the
ledger must detect): foreign keys off, and the insert-only triggers dropped
first (they stop the ledger's own code and mistakes, not the file's owner)."""

from __future__ import annotations

import contextlib
import sqlite3


def drop_triggers(conn) -> None:
    names = [row[0] for row in
             conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()]
    for name in names:
        conn.execute(f'DROP TRIGGER "{name}"')


@contextlib.contextmanager
def untriggered(path):
    """A connection with the triggers dropped; committed and closed on exit."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        drop_triggers(conn)
        with conn:
            yield conn
    finally:
        conn.close()

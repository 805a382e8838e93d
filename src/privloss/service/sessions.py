"""Dashboard sessions: random server-side ids, expiring on the server.

Definition
----------
Signing in creates a session: a random id (``secrets.token_urlsafe(32)``,
256 bits) that goes into the ``privloss_session`` cookie (never the API
token), and a random CSRF token that every dashboard form carries.  The
server keeps, per session, only the SHA-256 of its id, the analyst, the id of
the API token signed in with, the CSRF token and the expiry time
(``session_hours`` after sign-in).  A session ends at its expiry, at logout
(deleted on the server: the cookie is then worthless), and when the analyst's
token is re-issued (``add-analyst``: the session's token id is no longer
current).  Sessions live in a SQLite file in the state directory, shared by
the processes of one host (``--workers``); several hosts need sticky routing
for the dashboard (the JSON API has no sessions).

Privacy guarantee
-----------------
None (authentication).  Neither the API token nor a session id is stored.

Runtime
-------
One indexed SQLite read per dashboard page; one write per sign-in / logout.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Session", "SessionStore"]


@dataclass(frozen=True)
class Session:
    analyst: str
    token_id: str
    csrf: str
    expires: float

    def csrf_matches(self, value) -> bool:
        return isinstance(value, str) and hmac.compare_digest(
            value.encode("utf-8", "surrogatepass"), self.csrf.encode("ascii"))


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


class SessionStore:
    def __init__(self, path, *, hours: float = 8.0, clock=time.time):
        self.path, self.seconds, self._clock = Path(path), float(hours) * 3600.0, clock
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._lock = threading.Lock()
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(descriptor)
        self._connection = sqlite3.connect(self.path, check_same_thread=False, timeout=30,
                                           isolation_level=None)
        with self._lock:
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute(
                "CREATE TABLE IF NOT EXISTS sessions (digest TEXT PRIMARY KEY, analyst TEXT "
                "NOT NULL, token_id TEXT NOT NULL, csrf TEXT NOT NULL, expires REAL NOT NULL)")

    def create(self, analyst: str, token_id: str) -> tuple[str, Session]:
        """A new session: ``(id for the cookie, session)``; expired ones are purged."""
        session_id = secrets.token_urlsafe(32)
        now = self._clock()
        session = Session(analyst, token_id, secrets.token_urlsafe(32), now + self.seconds)
        with self._lock:
            self._connection.execute("DELETE FROM sessions WHERE expires <= ?", (now,))
            self._connection.execute(
                "INSERT INTO sessions (digest, analyst, token_id, csrf, expires) VALUES "
                "(?, ?, ?, ?, ?)", (_digest(session_id), analyst, token_id, session.csrf,
                                    session.expires))
        return session_id, session

    def get(self, session_id) -> Session | None:
        """The live session of ``session_id`` (None: unknown, expired or ended)."""
        if not isinstance(session_id, str) or not 0 < len(session_id) <= 200:
            return None
        with self._lock:
            row = self._connection.execute(
                "SELECT analyst, token_id, csrf, expires FROM sessions WHERE digest = ?",
                (_digest(session_id),)).fetchone()
        if row is None or row[3] <= self._clock():
            return None
        return Session(*row)

    def end(self, session_id) -> None:
        if not isinstance(session_id, str) or not session_id:
            return
        with self._lock:
            self._connection.execute("DELETE FROM sessions WHERE digest = ?",
                                     (_digest(session_id),))

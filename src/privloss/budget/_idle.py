"""Idle ledger connections kept for reuse by one process.

Opening a connection costs more than a whole budget check (PostgreSQL: a
network handshake and two settings; SQLite: opening the file, and closing the
last connection checkpoints and truncates the write-ahead log with fsyncs), so
each store keeps a few idle connections. A connection goes back only when its
user finished cleanly outside any transaction; after a fork the parent's
connections are dropped (their sockets and file locks are not the child's).
The checks that guard every open (the file checks of :mod:`._store`, the file
identity re-checked on every use) run on reuse exactly as on a fresh open.
"""

from __future__ import annotations

import os
import threading
import weakref

__all__ = ["IdleConnections", "IDLE_CONNECTIONS"]

#: idle connections a process keeps per ledger (and per mode)
IDLE_CONNECTIONS = 8

#: connections inherited through a fork: kept referenced and never closed here,
#: since closing a PostgreSQL connection tells the server to end the session the
#: parent still uses
_INHERITED: list = []


def _close_all(stacks: dict, pid: int) -> None:
    """Close the connections in ``stacks`` if this is process ``pid`` (their opener)."""
    if os.getpid() != pid:
        return
    for stack in stacks.values():
        for connection in stack:
            connection.close()
    stacks.clear()


class IdleConnections:
    """A bounded stack of idle connections per key, valid in one process."""

    def __init__(self, limit: int = IDLE_CONNECTIONS):
        self._limit = limit
        self._idle: dict = {}
        self._pid = os.getpid()
        self._lock = threading.Lock()
        # closed with their owner (no "unclosed connection" warnings, no leaked handles)
        weakref.finalize(self, _close_all, self._idle, self._pid)

    def take(self, key):
        """An idle connection for ``key``, or None."""
        with self._lock:
            if self._pid != os.getpid():
                # forked: the parent's connections are not ours to use or to close
                _INHERITED.extend(self._idle.values())
                self._idle.clear()
                self._pid = os.getpid()
            stack = self._idle.get(key)
            return stack.pop() if stack else None

    def give_back(self, key, connection, *, reusable: bool) -> None:
        """Keep ``connection`` if ``reusable`` and there is room; close it otherwise."""
        with self._lock:
            if reusable and self._pid == os.getpid():
                stack = self._idle.setdefault(key, [])
                if len(stack) < self._limit:
                    stack.append(connection)
                    return
        connection.close()

    def available(self) -> bool:
        """Whether an idle connection of this process is waiting (any key)."""
        with self._lock:
            return self._pid == os.getpid() and any(self._idle.values())

    def close(self) -> None:
        """Close every idle connection of this process."""
        with self._lock:
            _close_all(self._idle, self._pid)

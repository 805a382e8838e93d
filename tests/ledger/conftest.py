"""Fixtures shared by the ledger tests: one PostgreSQL server per session."""

from __future__ import annotations

import pytest

from tests.postgres_server import PostgresServer, skip_reason


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server started for the session (skipped, with the
    reason, where its binaries are missing)."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    with PostgresServer() as server:
        yield server

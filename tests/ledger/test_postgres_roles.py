"""PostgreSQL: the service's role may INSERT and SELECT release records and
their outcomes but never UPDATE or DELETE them (no such privilege at all, and
triggers that refuse even the owner), while the whole release protocol keeps
working (issue 19, item 1)."""

from __future__ import annotations

import pytest

from privloss.budget import Ledger, LedgerBudgetError, create_key_file
from privloss.budget._postgres import service_role_sql
from privloss.events import PureDP

ROLE = "privloss_service"


def _as(url: str, user: str) -> str:
    return url.replace("postgresql://privloss@", f"postgresql://{user}@")


@pytest.fixture
def ledgers(postgres_server, tmp_path):
    """(owner's URL, the service role's URL) of a new ledger with the role's grants."""
    import psycopg
    owner = postgres_server.new_database()
    Ledger(owner).create_dataset("d", epsilon=1.25)
    with psycopg.connect(owner, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        if not exists:
            conn.execute(f'CREATE ROLE "{ROLE}" LOGIN')
        conn.execute(service_role_sql(ROLE))
    return owner, _as(owner, ROLE)


def _run(url: str, sql: str):
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO privloss")
        conn.execute(sql)


def test_the_service_role_charges_and_anchors(ledgers, tmp_path):
    _, service = ledgers
    ledger = Ledger(service, create=False, witness=str(tmp_path / "w"),
                    key_file=create_key_file(tmp_path / "k"))
    for index in range(10):                         # 1.2 of the 1.25 budget
        ledger.release("d", index, lambda: index, [PureDP(0.12)])
    with pytest.raises(ZeroDivisionError):          # finished as failed: still charged
        ledger.release("d", "fails", lambda: 1 / 0, [PureDP(1e-12)])
    with pytest.raises(LedgerBudgetError):
        ledger.release("d", "over", lambda: 0, [PureDP(0.12)])
    report = Ledger(service, create=False).verify()
    assert report["anchored"] and report["releases"] == 11


@pytest.mark.parametrize("sql", [
    "DELETE FROM releases",
    "DELETE FROM datasets",
    "DELETE FROM meta",
    "TRUNCATE releases",
    "UPDATE releases SET spent_epsilon = 0",
    "UPDATE releases SET chain = chain",
    "UPDATE datasets SET budget_epsilon = 100",
    "UPDATE meta SET value = value",
    "UPDATE releases SET analyst = NULL",
    "UPDATE datasets SET recorded = recorded + 1, budget_epsilon = 100",
    "DELETE FROM outcomes",
    "TRUNCATE outcomes",
    "UPDATE outcomes SET status = 'failed', result = NULL",
])
def test_the_service_role_cannot_edit_or_delete(ledgers, sql):
    import psycopg
    _, service = ledgers
    Ledger(service, create=False).release("d", "q", lambda: 1, [PureDP(0.1)])
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _run(service, sql)


@pytest.mark.parametrize("sql", [
    "UPDATE datasets SET recorded = 0, head = digest",          # rolled back
])
def test_permitted_columns_still_cannot_rewrite_history(ledgers, sql):
    import psycopg
    _, service = ledgers
    Ledger(service, create=False).release("d", "q", lambda: 1, [PureDP(0.1)])
    with pytest.raises(psycopg.errors.RaiseException, match="privloss ledger"):
        _run(service, sql)


@pytest.mark.parametrize("sql", ["DELETE FROM releases", "TRUNCATE releases, outcomes",
                                 "DELETE FROM datasets", "UPDATE outcomes SET result = '2'",
                                 "DELETE FROM outcomes", "UPDATE releases SET time = time",
                                 "TRUNCATE outcomes", "DELETE FROM meta"])
def test_the_triggers_bind_the_owner_too(ledgers, sql):
    import psycopg
    owner, _ = ledgers
    Ledger(owner, create=False).release("d", "q", lambda: 1, [PureDP(0.1)])
    with pytest.raises(psycopg.errors.RaiseException, match="privloss ledger"):
        _run(owner, sql)
    assert Ledger(owner, create=False).show("d")["releases"] == 1


def test_the_role_name_is_checked():
    with pytest.raises(ValueError, match="role"):
        service_role_sql('x"; DROP TABLE releases; --')

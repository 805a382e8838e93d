"""The ledger on PostgreSQL: several server processes or hosts, one budget.

Definition
----------
``Ledger("postgresql://user@host/db")`` keeps the same tables as the SQLite
file (schema 3, :data:`._store.SCHEMA` with PostgreSQL types) in the schema
``privloss`` of that database, and runs the same release protocol. Where
SQLite has one writer at a time, every writing transaction here first takes
one transaction-level advisory lock (``pg_advisory_xact_lock``), so charging
transactions are serialised exactly as under SQLite's write lock: the
re-check of the budget and the insert see the same history, across every
process and host that shares the database. Reading transactions run at
``REPEATABLE READ`` (one snapshot).

Privacy guarantee
-----------------
As for SQLite (:mod:`privloss.budget`): racing releases never
overspend, nothing unrecorded leaves, every charge is recorded before its
computation starts, and the hash chain (:mod:`._integrity`) is verified on open
and inside every charging transaction. The file checks of :mod:`._store`
(hard links, inode) have no meaning here; the database's own access control
decides who can write the tables, and triggers (:data:`APPEND_ONLY_SQL`,
installed with the schema) refuse every UPDATE or DELETE of a release record
or of its outcome (records are insert-only: a release's outcome is a row of
its own in ``outcomes``), every change to a dataset but advancing it by one
release, and every TRUNCATE, whoever asks; :func:`service_role_sql` grants a
service role INSERT and SELECT on release records and nothing more.

Citation
--------
PostgreSQL documentation: advisory locks, transaction isolation; psycopg 3.

Runtime
-------
Connections are reused (:mod:`._idle`: opening one costs a few milliseconds on
loopback, more than a whole budget check). Two short transactions per release.
"""

from __future__ import annotations

import contextlib
import urllib.parse
import weakref

from ._errors import LedgerError
from ._idle import IdleConnections
from ._store import (ADVANCE_DATASET, INSERT_RELEASE, SCHEMA, SCHEMA_VERSION,
                     explicit_transaction)

__all__ = ["PostgresStore", "is_postgres_url", "POSTGRES_SCHEMA", "APPEND_ONLY_SQL",
           "service_role_sql"]

#: the PostgreSQL schema holding the ledger's tables
POSTGRES_SCHEMA = "privloss"
#: the advisory lock every writing transaction takes ("PLLG")
_WRITE_LOCK = 0x504C4C47
_APPLICATION = "privloss-ledger"


def is_postgres_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def _postgres_schema() -> tuple[str, ...]:
    """The SQLite schema with PostgreSQL types (one definition for both)."""
    return postgres_statements(SCHEMA)


def postgres_statements(schema) -> tuple[str, ...]:
    """Statements of :data:`._store.SCHEMA` with PostgreSQL types."""
    statements = []
    for statement in schema:
        statement = (statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")
                     .replace("INTEGER", "BIGINT").replace("REAL", "DOUBLE PRECISION"))
        statements.append(statement)
    return tuple(statements)


#: triggers that keep the ledger insert-only, whoever writes (installed with the
#: schema; run again by :func:`service_role_sql` for a ledger created before them):
#: release records and their outcomes are never updated or deleted; a dataset's head
#: and count may only advance by one release; nothing is deleted or truncated
APPEND_ONLY_SQL = (
    """CREATE OR REPLACE FUNCTION privloss.refuse_release_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'privloss ledger: release records and outcomes are insert-only '
                        '(% refused)', TG_OP;
    END $$""",
    """CREATE OR REPLACE FUNCTION privloss.refuse_dataset_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'UPDATE' THEN
            RAISE EXCEPTION 'privloss ledger: budgets are never deleted (% refused)', TG_OP;
        END IF;
        IF NEW.recorded <> OLD.recorded + 1
           OR (NEW.name, NEW.budget_epsilon, NEW.budget_delta, NEW.interaction, NEW.policy,
               NEW.plan, NEW.note, NEW.created, NEW.digest)
              IS DISTINCT FROM
              (OLD.name, OLD.budget_epsilon, OLD.budget_delta, OLD.interaction, OLD.policy,
               OLD.plan, OLD.note, OLD.created, OLD.digest) THEN
            RAISE EXCEPTION 'privloss ledger: dataset % may only advance by one release', OLD.name;
        END IF;
        RETURN NEW;
    END $$""",
    """CREATE OR REPLACE FUNCTION privloss.refuse_meta_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'privloss ledger: its meta records are never changed (% refused)', TG_OP;
    END $$""",
    *(statement
      for table, function in (("releases", "refuse_release_change"),
                              ("outcomes", "refuse_release_change"),
                              ("datasets", "refuse_dataset_change"),
                              ("meta", "refuse_meta_change"))
      for statement in (
          f"DROP TRIGGER IF EXISTS {table}_append_only ON privloss.{table}",
          f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON privloss.{table} "
          f"FOR EACH ROW EXECUTE FUNCTION privloss.{function}()",
          f"DROP TRIGGER IF EXISTS {table}_no_truncate ON privloss.{table}",
          f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON privloss.{table} "
          f"FOR EACH STATEMENT EXECUTE FUNCTION privloss.{function}()")),
)


def service_role_sql(role: str) -> str:
    """The SQL a database owner runs once so that ``role`` (the service's login)
    may use the ledger but never edit or delete what it recorded: SELECT and
    INSERT on every table (release records and their outcomes: insert-only),
    UPDATE of a dataset's head and count only (charging), no other UPDATE, no
    DELETE or TRUNCATE, plus the triggers that refuse them (binding the owner too)."""
    if not isinstance(role, str) or not role or len(role) > 63 or \
            not all(char.isalnum() or char == "_" for char in role) or role[0].isdigit():
        raise ValueError(f"role must be a PostgreSQL role name (letters, digits, _; at most "
                         f"63 characters, not starting with a digit), got {role!r}")
    quoted = f'"{role}"'
    grants = (
        f"REVOKE ALL ON ALL TABLES IN SCHEMA privloss FROM {quoted}",
        f"GRANT USAGE ON SCHEMA privloss TO {quoted}",
        f"GRANT SELECT, INSERT ON privloss.meta, privloss.datasets, privloss.releases, "
        f"privloss.outcomes TO {quoted}",
        f"GRANT UPDATE (head, recorded) ON privloss.datasets TO {quoted}",
        f"GRANT USAGE ON SEQUENCE privloss.releases_id_seq TO {quoted}",
    )
    return ";\n".join((*APPEND_ONLY_SQL, *grants)) + ";\n"


def _redacted(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class _Connection:
    """A psycopg connection speaking the ledger's SQL (``?`` placeholders)."""

    def __init__(self, connection):
        self._connection = connection

    def execute(self, sql: str, parameters=()):
        return self._connection.execute(sql.replace("?", "%s"), tuple(parameters))

    def execute_literal(self, sql: str):
        """Run SQL text as it is (no placeholders: PL/pgSQL bodies use % and ?)."""
        return self._connection.execute(sql)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus
        return self._connection.info.transaction_status != TransactionStatus.IDLE


class PostgresStore:
    """Connections to a PostgreSQL ledger (same interface as :class:`._store.LedgerFile`)."""

    def __init__(self, url: str, *, timeout: float, create: bool):
        self._url = url
        self.path = _redacted(url)
        self.timeout = timeout
        self._create = create
        self._idle = IdleConnections()
        self._identified = weakref.WeakSet()    # connections whose schema was checked

    @staticmethod
    def _psycopg():
        try:
            import psycopg
        except ImportError as error:       # pragma: no cover - depends on the environment
            raise LedgerError("a PostgreSQL ledger needs the 'psycopg' package: install the "
                              "'postgres' extra (pip install '.[postgres]')") from error
        return psycopg

    # ---- what the SQLite file checks ------------------------------------------------
    def check_path(self):
        return True              # a database, not a file: always "present"

    def writable(self) -> bool:
        return True

    def check_identity(self, conn) -> None:
        """The schema holds a privloss ledger; checked once per connection (a
        database's identity cannot change under an open session, unlike a file's
        name)."""
        raw = getattr(conn, "_connection", None)
        if raw is not None and raw in self._identified:
            return
        row = conn.execute("SELECT value FROM meta WHERE key = 'application'").fetchone()
        if row is None or row[0] != _APPLICATION:
            raise LedgerError(f"{self.path}: schema {POSTGRES_SCHEMA!r} is not a privloss ledger")
        if raw is not None:
            self._identified.add(raw)

    # ---- connections -----------------------------------------------------------------
    def _open(self):
        psycopg = self._psycopg()
        try:
            raw = psycopg.connect(self._url, autocommit=True,
                                  connect_timeout=max(1, int(self.timeout)))
        except psycopg.Error as error:
            raise LedgerError(f"cannot open ledger {self.path}: "
                              f"{str(error).strip().splitlines()[0]}") from None
        try:
            raw.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
            raw.execute(f"SET search_path TO {POSTGRES_SCHEMA}")
        except psycopg.Error as error:
            raw.close()
            raise self.translate(error) from error
        return raw

    @contextlib.contextmanager
    def connect(self, *, read_only: bool = False, create: bool = False):
        psycopg = self._psycopg()
        raw = self._idle.take(None)
        if raw is None or raw.closed:
            raw = self._open()
        try:
            yield _Connection(raw)
        except psycopg.Error as error:
            raw.close()           # its state after a database error is unknown: not reused
            raise self.translate(error) from error
        except BaseException:
            self._give_back(raw)
            raise
        self._give_back(raw)

    def _give_back(self, raw) -> None:
        from psycopg.pq import TransactionStatus
        self._idle.give_back(None, raw, reusable=not raw.closed and
                             raw.info.transaction_status == TransactionStatus.IDLE)

    def ready(self) -> bool:
        """An operation now would reuse an idle connection (no network handshake)."""
        return self._idle.available()

    def close(self) -> None:
        """Close this process's idle connections."""
        self._idle.close()

    @staticmethod
    @contextlib.contextmanager
    def transaction(conn, *, write: bool, durable: bool = True):
        """Writes: BEGIN and the ledger's advisory lock (one writer at a time, as
        SQLite); reads: one REPEATABLE READ snapshot. ROLLBACK on any exception.
        ``durable=False``: ``synchronous_commit = off`` for this transaction (its
        COMMIT does not wait for the WAL flush; a server crash may lose it, never
        tear it, and a later durable COMMIT's flush covers it)."""
        if not write:
            with explicit_transaction(conn, ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"]):
                yield
            return
        raw = getattr(conn, "_connection", None)
        if raw is None:
            begin = ["BEGIN", *([] if durable else ["SET LOCAL synchronous_commit = off"]),
                     ("SELECT pg_advisory_xact_lock(?)", (_WRITE_LOCK,))]
        else:
            with raw.pipeline():        # BEGIN and the lock in one round trip
                raw.execute("BEGIN")
                if not durable:
                    raw.execute("SET LOCAL synchronous_commit = off")
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            begin = []
        with explicit_transaction(conn, begin):
            yield

    def translate(self, error) -> LedgerError:
        psycopg = self._psycopg()
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if isinstance(error, psycopg.errors.LockNotAvailable):
            return LedgerError(f"ledger {self.path} is busy: another process held its lock "
                               f"for more than {self.timeout:g} s")
        return LedgerError(f"ledger {self.path}: {message}")

    # ---- schema ----------------------------------------------------------------------
    def schema_state(self, conn) -> str:
        exists = conn.execute("SELECT to_regclass(?)", (f"{POSTGRES_SCHEMA}.meta",)).fetchone()[0]
        if exists is None:
            return "empty"
        rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if rows.get("application") != _APPLICATION:
            raise LedgerError(f"{self.path}: schema {POSTGRES_SCHEMA!r} holds a table 'meta' "
                              f"that is not a privloss ledger's")
        if rows.get("schema_version") == "2":
            return "version-2"
        if rows.get("schema_version") != str(SCHEMA_VERSION):
            raise LedgerError(f"ledger {self.path} has schema version "
                              f"{rows.get('schema_version')}; this privloss reads "
                              f"2 and {SCHEMA_VERSION}")
        return "ready"

    def create_schema(self, conn) -> None:
        if not self._create:
            raise LedgerError(f"{self.path} holds no privloss ledger (create=False)")
        with self.transaction(conn, write=True):
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {POSTGRES_SCHEMA}")
            if self.schema_state(conn) != "empty":        # another process won
                return
            for statement in _postgres_schema():
                conn.execute(statement)
            for statement in APPEND_ONLY_SQL:
                conn.execute_literal(statement)
            conn.execute("INSERT INTO meta (key, value) VALUES ('application', ?), "
                          "('schema_version', ?)", (_APPLICATION, str(SCHEMA_VERSION)))

    #: the id the next release will get (a sequence: ids taken by a charge that is
    #: then refused or rolled back are skipped, as PostgreSQL sequences do)
    NEXT_RELEASE_ID = f"SELECT nextval(pg_get_serial_sequence('{POSTGRES_SCHEMA}.releases', 'id'))"

    @staticmethod
    def prefetch(conn, statements) -> list:
        """The rows of each ``(sql, parameters)``, in order, sent together in
        psycopg's pipeline mode: one round trip for all of them."""
        raw = conn._connection
        with raw.pipeline():
            cursors = [raw.execute(sql.replace("?", "%s"), tuple(parameters))
                       for sql, parameters in statements]
        return [cursor.fetchall() for cursor in cursors]

    @staticmethod
    def insert_release(conn, release: tuple, advance: tuple) -> int:
        """As :meth:`LedgerFile.insert_release`, in one statement (one round trip)."""
        return conn.execute(f"WITH inserted AS ({INSERT_RELEASE} RETURNING id) "
                            f"{ADVANCE_DATASET} AND EXISTS (SELECT 1 FROM inserted)",
                            (*release, *advance)).rowcount

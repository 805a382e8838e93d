"""The ledger's SQLite file: one file under one name, its schema, and the
upgrade of schema-1 files.

Definition
----------
:class:`LedgerFile` connects to the *real path* of the ledger (symbolic links
resolved, so SQLite derives its ``-wal`` and ``-shm`` names from one name only)
and reuses idle connections (:mod:`._idle`: closing the last connection
checkpoints the log with fsyncs), after checking, before every operation:

* the path is a regular file (a device, FIFO or directory is refused before
  SQLite could create a stray ``-journal`` next to it);
* it has exactly one hard link: SQLite's write-ahead log is found by file
  *name*, so two names for one inode give two logs, two locks and a double
  spend (seen: 20 releases answered on a budget of 10);
* its ``-wal`` / ``-shm`` companions, if present, are regular single-link files;
* its device and inode equal those recorded inside the file at creation
  (``meta.file_id``): a ledger restored from a copy, or moved to another file
  system, is refused instead of silently giving budget back.

Read-only operations on a file that cannot be written open it with
``mode=ro`` (``immutable=1`` when its directory cannot be written either, as
on read-only media).

Privacy guarantee
-----------------
None by itself; it makes "one budget, one history" hold for the file.

Citation
--------
SQLite: write-ahead logging (``-wal``/``-shm`` naming), URI filenames
(``mode=ro``, ``immutable=1``), ``PRAGMA application_id`` / ``user_version``.

Runtime
-------
A ``stat`` of three paths per operation; an SQLite open only when no idle
connection is left.
"""

from __future__ import annotations

import contextlib
import os
import random as _random
import sqlite3
import stat
import time as _time
import urllib.parse

from ._errors import LedgerError
from ._idle import IdleConnections

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "LedgerFile", "file_id_of"]

#: ``PRAGMA application_id`` of a privloss ledger ("PLLG")
APPLICATION_ID = 0x504C4C47
#: ``PRAGMA user_version`` of the schema below (1: before plans and filters; 2: a
#: release's outcome stored by updating its row; 3: outcomes in their own insert-only table)
SCHEMA_VERSION = 3

SCHEMA = (
    """CREATE TABLE meta (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL)""",
    """CREATE TABLE datasets (
        name TEXT PRIMARY KEY NOT NULL,
        budget_epsilon REAL NOT NULL CHECK (budget_epsilon > 0),
        budget_delta REAL NOT NULL CHECK (budget_delta >= 0 AND budget_delta < 1),
        interaction TEXT NOT NULL
            CHECK (interaction IN ('fully-adaptive', 'adaptive', 'setwise')),
        policy TEXT,
        plan TEXT,
        note TEXT,
        created TEXT NOT NULL,
        digest TEXT NOT NULL,
        head TEXT NOT NULL,
        recorded INTEGER NOT NULL CHECK (recorded >= 0),
        CHECK ((interaction = 'fully-adaptive') = (policy IS NOT NULL)),
        CHECK ((interaction = 'fully-adaptive') = (plan IS NULL)))""",
    """CREATE TABLE releases (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        query_key TEXT NOT NULL,
        events TEXT NOT NULL,
        guarantee TEXT NOT NULL,
        plan_item INTEGER,
        owner TEXT,
        analyst TEXT,
        spent_epsilon REAL NOT NULL,
        bound TEXT NOT NULL,
        time TEXT NOT NULL,
        chain TEXT NOT NULL)""",
    # a release without an outcome is pending; at most one outcome per release
    """CREATE TABLE outcomes (
        release_id INTEGER PRIMARY KEY NOT NULL REFERENCES releases(id),
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        result TEXT,
        seal TEXT NOT NULL,
        CHECK ((status = 'done') = (result IS NOT NULL)))""",
    "CREATE INDEX releases_by_key ON releases (dataset, query_key)",
    "CREATE INDEX releases_by_dataset ON releases (dataset, id)",
)

#: SQLite's triggers keeping the ledger insert-only (PostgreSQL: ``_postgres.APPEND_ONLY_SQL``):
#: release records and outcomes are never updated or deleted, a dataset's row only
#: advances by one release (head and count), meta rows never change. They stop
#: mistakes and the service's own code; whoever can write the file can drop them,
#: which the hash chain and the witness detect.
SQLITE_TRIGGERS = (
    *(f"""CREATE TRIGGER {table}_no_{operation.lower()} BEFORE {operation} ON {table}
        BEGIN SELECT RAISE(ABORT, 'privloss ledger: {what} ({operation} refused)'); END"""
      for table, what in (("releases", "release records are insert-only"),
                          ("outcomes", "release outcomes are insert-only"),
                          ("meta", "its meta records are never changed"))
      for operation in ("UPDATE", "DELETE")),
    """CREATE TRIGGER datasets_no_delete BEFORE DELETE ON datasets
        BEGIN SELECT RAISE(ABORT, 'privloss ledger: budgets are never deleted (DELETE refused)');
        END""",
    """CREATE TRIGGER datasets_advance_only BEFORE UPDATE ON datasets
        WHEN NEW.recorded IS NOT OLD.recorded + 1
          OR NEW.name IS NOT OLD.name OR NEW.budget_epsilon IS NOT OLD.budget_epsilon
          OR NEW.budget_delta IS NOT OLD.budget_delta OR NEW.interaction IS NOT OLD.interaction
          OR NEW.policy IS NOT OLD.policy OR NEW.plan IS NOT OLD.plan OR NEW.note IS NOT OLD.note
          OR NEW.created IS NOT OLD.created OR NEW.digest IS NOT OLD.digest
        BEGIN SELECT RAISE(ABORT, 'privloss ledger: a dataset may only advance by one release');
        END""",
)


#: a charged release's record (its id, dataset, ... chain), and the dataset advanced by it
INSERT_RELEASE = ("INSERT INTO releases (id, dataset, query_key, events, guarantee, plan_item, "
                  "owner, analyst, spent_epsilon, bound, time, chain) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
ADVANCE_DATASET = ("UPDATE datasets SET head = ?, recorded = recorded + 1 "
                   "WHERE name = ? AND head = ? AND recorded = ?")


@contextlib.contextmanager
def explicit_transaction(conn, begin):
    """Run the ``begin`` statements, then COMMIT on success or ROLLBACK on any
    exception (KeyboardInterrupt included); shared by the SQLite and PostgreSQL stores."""
    for statement in begin:          # text, or (text, parameters)
        if isinstance(statement, tuple):
            conn.execute(*statement)
        else:
            conn.execute(statement)
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


#: what a damaged file raises from the driver (a damaged schema text may not even decode)
_DAMAGE = (sqlite3.Error, UnicodeDecodeError)


def file_id_of(status: os.stat_result) -> str:
    return f"{status.st_dev}:{status.st_ino}"


def _check_companion(path: str) -> None:
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1:
        raise LedgerError(f"refusing ledger: {path} is not a plain file with one name "
                          f"(SQLite's journal must belong to this ledger only)")


class _LedgerConnection(sqlite3.Connection):
    """An SQLite connection that remembers what it already read or set: the
    file identity recorded in its file (meta rows never change: insert-only) and
    whether its busy timeout is off (as :meth:`LedgerFile._begin_immediate` sets
    it), so neither costs a statement per transaction."""

    recorded_id: str | None = None
    waits: bool = True          # busy_timeout as configured (False: 0, the writers' setting)
    synchronous: str = "FULL"   # PRAGMA synchronous as last set


class LedgerFile:
    """Connections to one ledger file (see the module docstring)."""

    def __init__(self, path: str, *, timeout: float, create: bool):
        self.timeout = timeout
        self.path = os.path.realpath(path)
        self._create = create
        self._idle = IdleConnections()

    # ---- checks before any open ---------------------------------------------------
    def check_path(self) -> os.stat_result | None:
        """Stat the file and refuse what must never be opened; None if missing."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise LedgerError(f"cannot use ledger {self.path}: {error.strerror}") from error
        if stat.S_ISDIR(status.st_mode):
            raise LedgerError(f"ledger path {self.path} is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            raise LedgerError(f"ledger path {self.path} is not a regular file (a device, FIFO "
                              f"or socket); a ledger must be a plain file")
        if status.st_nlink != 1:
            raise LedgerError(f"refusing ledger {self.path}: the file has {status.st_nlink} "
                              f"hard links; SQLite finds its journal by name, so two names "
                              f"for one ledger could spend its budget twice. Remove the other "
                              f"links")
        for suffix in ("-wal", "-shm", "-journal"):
            _check_companion(self.path + suffix)
        return status

    def writable(self) -> bool:
        return os.access(self.path, os.W_OK)

    # ---- connections -----------------------------------------------------------------
    def _uri(self, *, read_only: bool, create: bool) -> str:
        if read_only:
            directory = os.path.dirname(self.path) or "."
            extra = "" if os.access(directory, os.W_OK) else "&immutable=1"
            return f"file:{urllib.parse.quote(self.path)}?mode=ro{extra}"
        return f"file:{urllib.parse.quote(self.path)}?mode={'rwc' if create else 'rw'}"

    @contextlib.contextmanager
    def connect(self, *, read_only: bool = False, create: bool = False):
        """A connection in autocommit mode (transactions are explicit), reused
        from :mod:`._idle` when one is idle. ``read_only``: opened ``mode=ro``
        when the file cannot be written. The file checks run on every call."""
        status = self.check_path()
        if status is None and not (create and self._create):
            raise LedgerError(f"no ledger file at {self.path}")
        uri = self._uri(read_only=read_only and status is not None and not self.writable(),
                        create=create and self._create)
        # an immutable (read-only directory) connection would not see later writes
        reuse = status is not None and "immutable=1" not in uri
        conn = self._idle.take(uri) if reuse else None
        if conn is None:
            conn = self._open(uri)
        if (read_only or create) and not conn.waits:
            # readers and schema work wait for locks as configured; writers that
            # retry BEGIN IMMEDIATE themselves keep the timeout off between uses
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            except _DAMAGE as error:
                conn.close()
                raise self.translate(error) from error
            conn.waits = True
        try:
            yield conn
        except _DAMAGE as error:
            conn.close()          # its state after a database error is unknown: not reused
            raise self.translate(error) from error
        except BaseException:
            self._idle.give_back(uri, conn, reusable=reuse and not conn.in_transaction)
            raise
        self._idle.give_back(uri, conn, reusable=reuse and not conn.in_transaction)

    def _open(self, uri: str):
        try:
            # one thread at a time uses a connection (taken from and given back to the
            # idle stack under its lock), so it may move between threads
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False, factory=_LedgerConnection)
        except sqlite3.Error as error:
            raise self.translate(error) from error
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except _DAMAGE as error:
            conn.close()
            raise self.translate(error) from error
        return conn

    @staticmethod
    def ready() -> bool:
        """Opening a local file is quick: always ready."""
        return True

    def close(self) -> None:
        """Close this process's idle connections."""
        self._idle.close()

    @contextlib.contextmanager
    def transaction(self, conn, *, write: bool, durable: bool = True):
        """BEGIN (IMMEDIATE for writes: the write lock first, so checks and
        inserts see the same history); COMMIT on success, ROLLBACK on any
        exception (including KeyboardInterrupt). ``durable=False`` (a write that
        may be lost in a power failure, a release's outcome): ``synchronous =
        NORMAL``, the COMMIT goes to the write-ahead log without an fsync; it
        survives a crash of the process, and the next durable COMMIT's fsync of
        the log (whoever makes it) covers it, since the log is written in order."""
        if not write:
            with explicit_transaction(conn, ["BEGIN"]):
                yield
            return
        wanted = "FULL" if durable else "NORMAL"
        if isinstance(conn, _LedgerConnection) and conn.synchronous != wanted:
            conn.execute(f"PRAGMA synchronous = {wanted}")
            conn.synchronous = wanted
        self._begin_immediate(conn)
        with explicit_transaction(conn, []):
            yield

    def _begin_immediate(self, conn) -> None:
        """``BEGIN IMMEDIATE``, waiting for the write lock at most ``timeout``.

        SQLite's own busy handler retries after sleeps that grow to 100 ms, so
        a writer that has waited long retries least often and loses to newer
        ones (writers in other processes waited up to 6 s, issue 19). Here
        every waiter retries within 0.5 to 5 ms (jittered), which bounds that
        unfairness; the lock itself is still SQLite's."""
        deadline = _time.monotonic() + self.timeout
        pause = 0.0005
        if getattr(conn, "waits", True):
            conn.execute("PRAGMA busy_timeout = 0")      # stays off until a reader takes it
            if isinstance(conn, _LedgerConnection):
                conn.waits = False
            else:
                # not one of ours (a test's own connection): restore as before
                try:
                    self._begin_retrying(conn, deadline, pause)
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                return
        self._begin_retrying(conn, deadline, pause)

    @staticmethod
    def _begin_retrying(conn, deadline: float, pause: float) -> None:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error):
                    raise
                if _time.monotonic() >= deadline:
                    raise
            _time.sleep(pause * _random.uniform(0.5, 1.5))
            pause = min(2 * pause, 0.005)

    def translate(self, error: sqlite3.Error) -> LedgerError:
        if isinstance(error, UnicodeDecodeError):
            # SQLite's message quoted a damaged schema text that is not UTF-8
            return LedgerError(f"{self.path} is not a privloss ledger (corrupt: its schema "
                               f"text is not UTF-8)")
        message = str(error)
        if "locked" in message or "busy" in message:
            return LedgerError(f"ledger {self.path} is busy: another process held its lock "
                               f"for more than {self.timeout:g} s")
        if "not a database" in message or "malformed" in message or "corrupt" in message:
            return LedgerError(f"{self.path} is not a privloss ledger (not an SQLite database, "
                               f"or corrupt): {message}")
        if "unable to open" in message or "readonly" in message:
            return LedgerError(f"cannot open ledger {self.path}: {message}")
        return LedgerError(f"ledger {self.path}: {message}")

    # ---- schema ----------------------------------------------------------------------
    def schema_state(self, conn) -> str:
        """"empty", "ready" (this schema), "version-1" or "version-2" (to upgrade)."""
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id == 0 and version == 0 and tables == 0:
            return "empty"
        if application_id != APPLICATION_ID:
            raise LedgerError(f"{self.path} is an SQLite database but not a privloss ledger")
        if version in (1, 2):
            return f"version-{version}"
        if version != SCHEMA_VERSION:
            raise LedgerError(f"ledger {self.path} has schema version {version}; this privloss "
                              f"reads versions 1 to {SCHEMA_VERSION}")
        return "ready"

    def create_schema(self, conn) -> None:
        if not self._create:
            raise LedgerError(f"{self.path} is not a privloss ledger (empty database)")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise LedgerError(f"cannot put ledger {self.path} in WAL mode (got {mode!r}); "
                              f"is it on a network file system?")
        with self.transaction(conn, write=True):
            if self.schema_state(conn) != "empty":      # another process may have won
                return
            for statement in SCHEMA + SQLITE_TRIGGERS:
                conn.execute(statement)
            conn.execute("INSERT INTO meta (key, value) VALUES ('file_id', ?)",
                         (file_id_of(os.stat(self.path)),))
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    #: the id the next release will get (inside the write transaction)
    NEXT_RELEASE_ID = ("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = "
                       "'releases'), 0) + 1")

    @staticmethod
    def prefetch(conn, statements) -> list:
        """The rows of each ``(sql, parameters)``, in order (a local file: one by one)."""
        return [conn.execute(sql, parameters).fetchall() for sql, parameters in statements]

    @staticmethod
    def insert_release(conn, release: tuple, advance: tuple) -> int:
        """Insert a release record and advance its dataset's head and count
        (``advance``: new head, name, old head, old count); the rows advanced (1)."""
        conn.execute(INSERT_RELEASE, release)
        return conn.execute(ADVANCE_DATASET, advance).rowcount

    def check_identity(self, conn) -> None:
        """Refuse a ledger whose device and inode differ from those recorded at
        creation (a copy restored in its place, or a move across file systems)."""
        recorded = getattr(conn, "recorded_id", None)
        if recorded is None:
            row = conn.execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()
            if row is not None and isinstance(conn, _LedgerConnection):
                conn.recorded_id = row[0]
        else:
            row = (recorded,)
        current = file_id_of(os.stat(self.path))
        if row is None:
            raise LedgerError(f"ledger {self.path} has no recorded file identity; refusing it")
        if row[0] != current:
            raise LedgerError(f"refusing ledger {self.path}: it is not the file the ledger was "
                              f"created as (device:inode {row[0]}, now {current}); a copy "
                              f"restored in place, or a move to another file system, would "
                              f"bring spent budget back")

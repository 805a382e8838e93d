"""Each dataset read once, checked at start-up, into a Parquet snapshot.

Definition
----------
At start-up (:meth:`SnapshotStore.load_all`) every DuckDB dataset's source
(the operator's file, or the operator's SQL over its ``tables``) is run once
and the privacy-unit column and the declared ``columns`` are written, sorted
by the privacy unit, to a Parquet file in the service's state directory
(``<state_dir>/snapshots/<dataset>-<version>.parquet``, written to a private
temporary name, then renamed).  Anything that does not bind or does not run
(a missing file, SQL that does not parse or bind, such as ``Quantity *
UnitPrice`` over CSV text, a declared column the source lacks, a cast that
fails on some row) refuses the start with :class:`StartupError`: one line
naming the dataset and the column or the failing expression.

Releases read the snapshot only, and read it once: each snapshot carries a
:class:`~privloss.query.inputs.LoadedTables` (``tables``) in which the engine
keeps the snapshot's rows in a DuckDB table and, per privacy unit and
column, the coded (unit, group) pairs every top-k and histogram starts from
(:mod:`privloss.query.engines.duckdb_engine`), so a release only draws its
keyed choice and its noise.  The tables belong to that snapshot (its file,
named by its version, is never rewritten), and are filled when it is made
(start-up, or a changed source); a new version gets new ones, and the old
ones are freed when the last release reading them ends.

Its ``version`` is a keyed MAC
(:func:`privloss.query.fingerprint.keyed_mac`) of the snapshot's bytes:
part of the repeated-query key, never a statistic of the data.  Before each
release :meth:`SnapshotStore.current` compares the source's identity (the
files' names, sizes, modification times and inodes, and the SQL text) with
the one it was read from; a changed source is read again into a new
snapshot, a new version.  If reading the changed source fails, the previous
snapshot keeps serving (the failure goes to the operator's log, and is
retried when the source changes again), so an analyst never sees a
data-dependent failure.

A Spark dataset (``spark_table``) is not snapshotted: its schema is bound at
start-up (both columns of every declared pair exist) and releases read the
table; give ``version`` to key stored answers to a table snapshot.

Privacy guarantee
-----------------
None by itself.  A snapshot holds the operator's rows (mode 0600, in a 0700
directory).  After start-up the only failures left on a release path are
engine faults (out of memory, a deleted snapshot), not properties of the data.

Runtime
-------
Start-up: one read of every source and one Parquet write.  Per release: a
``stat`` of the source files; the first release of a version on a column
nothing more: the snapshot is read into the engine, and the pairs of every
declared column built, when it is made (start-up, or the first release after
the source changed).  Memory, per process: the snapshot's columns in a DuckDB
table and the pairs of each declared column, under
``PRIVLOSS_DUCKDB_MEMORY_LIMIT``; beyond it DuckDB moves the tables to a
private temporary directory (mode 0700), removed with them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["StartupError", "Snapshot", "SnapshotStore", "source_identity"]

LOGGER = logging.getLogger("privloss.service")
_BLOCK = 1 << 20


class StartupError(ValueError):
    """A dataset cannot be served (one line naming the dataset and the column or
    expression)."""


@dataclass(frozen=True)
class Snapshot:
    dataset: str
    path: Path | None          # None: a Spark table, read live
    version: str
    columns: dict              # column name -> engine type (text)
    identity: str
    #: what the engine loaded from this snapshot's file (LoadedTables; None: Spark)
    tables: object = field(default=None, compare=False, repr=False)

    def with_tables(self) -> "Snapshot":
        """This snapshot with its own (empty) loaded tables, for a file."""
        if self.path is None or self.tables is not None:
            return self
        from privloss.query.inputs import LoadedTables
        return replace(self, tables=LoadedTables(prepare=True))


def _file_identity(path: Path) -> list:
    if path.is_dir():
        return [_file_identity(child) for child in sorted(path.rglob("*.parquet"))
                if child.is_file()]
    status = os.stat(path)
    return [str(path), status.st_size, status.st_mtime_ns, status.st_ino]


def source_identity(dataset) -> str:
    """What identifies the source cheaply (a ``stat`` per file): a change means
    the data may have changed."""
    files = ([dataset.path] if dataset.path is not None else []) + \
        [dataset.tables[name] for name in sorted(dataset.tables)]
    try:
        stats = [_file_identity(Path(path)) for path in files]
    except OSError as error:          # a vanished file: a changed source
        stats = [f"unreadable: {type(error).__name__}"]
    return repr((dataset.sql, dataset.spark_table, _needed(dataset), stats))


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _needed(dataset) -> list:
    return [dataset.user_column] + [c for c in dataset.columns if c != dataset.user_column]


def _relation(duckdb, connection, dataset):
    """The source as a DuckDB relation on ``connection`` (the library's reading
    rules: CSV with a header, every column text; Parquet as typed)."""
    from privloss.query.inputs import FileInput, resolve_input

    def read(path: Path, what: str):
        try:
            resolved = resolve_input(Path(path))
        except (OSError, ValueError) as error:
            raise StartupError(f"dataset {dataset.name!r}: {what}: {_first_line(error)}") \
                from None
        assert isinstance(resolved, FileInput)
        names = list(resolved.names)
        try:
            if resolved.format == "parquet":
                return connection.read_parquet(names)
            return connection.read_csv(names, header=True, all_varchar=True,
                                       sep="\t" if resolved.format == "tsv" else ",",
                                       quotechar='"', escapechar='"')
        except duckdb.Error as error:
            raise StartupError(f"dataset {dataset.name!r}: {what} {str(path)!r} cannot be "
                               f"read: {_first_line(error)}") from None

    if dataset.path is not None:
        return read(dataset.path, "path")
    for name in sorted(dataset.tables):
        read(dataset.tables[name], f"tables.{name}").create_view(name, replace=False)
    try:
        statements = duckdb.extract_statements(dataset.sql)
    except duckdb.Error as error:
        raise StartupError(f"dataset {dataset.name!r}: sql does not parse: "
                           f"{_first_line(error)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise StartupError(f"dataset {dataset.name!r}: sql must be exactly one SELECT "
                           f"statement")
    try:
        return connection.sql(dataset.sql)
    except duckdb.Error as error:
        where = _failing_expression(duckdb, connection, dataset.sql)
        raise StartupError(f"dataset {dataset.name!r}: sql does not bind"
                           f"{f' at {where}' if where else ''}: {_first_line(error)}") from None


def _failing_expression(duckdb, connection, text: str) -> str | None:
    """The first output expression of the operator's SELECT that does not bind
    on its own (DuckDB's binder message does not say which), if sqlglot can
    tell; None otherwise."""
    try:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import SqlglotError
    except ImportError:      # sqlglot comes with the analytics extra; only the message suffers
        return None
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except (SqlglotError, RecursionError):
        return None
    if not isinstance(tree, exp.Select):
        return None
    try:
        connection.sql(tree.copy().select(exp.Literal.number(1), append=False)
                       .sql(dialect="duckdb"))
    except duckdb.Error:
        return "its FROM clause"
    except SqlglotError:
        return None
    for expression in tree.expressions:
        alone = tree.copy().select(expression.copy(), append=False)
        try:
            connection.sql(alone.sql(dialect="duckdb"))
        except duckdb.Error:
            return f"`{expression.sql(dialect='duckdb')[:120]}`"
        except SqlglotError:
            return None
    return None


def _allowed_files(dataset) -> list:
    from privloss.query.inputs import resolve_input

    files = ([dataset.path] if dataset.path is not None else []) + list(dataset.tables.values())
    allowed = []
    for path in files:
        try:
            allowed += list(resolve_input(Path(path)).names)
        except (OSError, ValueError):
            pass            # reported by _relation, naming the field
    return allowed


def _write(dataset, directory: Path) -> Snapshot:
    """Read the source once into a new snapshot file (see the module docstring)."""
    from privloss.query.engines.duckdb_engine import import_duckdb
    from privloss.query.fingerprint import keyed_mac

    duckdb = import_duckdb()
    identity = source_identity(dataset)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = directory / f".{dataset.name}.{secrets.token_hex(8)}.tmp.parquet"
    connection = duckdb.connect()
    try:
        connection.execute("SET enable_progress_bar = false")
        # the operator's SQL reads the declared tables only (as in the library)
        connection.execute("SET allowed_paths = ?", [_allowed_files(dataset)])
        connection.execute("SET allowed_directories = ?", [[str(directory)]])
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
        relation = _relation(duckdb, connection, dataset)
        available = list(relation.columns)
        for column in _needed(dataset):
            if column not in available:
                role = "user_column" if column == dataset.user_column else "columns entry"
                raise StartupError(f"dataset {dataset.name!r}: {role} {column!r} is not a "
                                   f"column of its source (it has {len(available)} column(s))")
        columns = [duckdb.ColumnExpression(c) for c in _needed(dataset)]
        try:
            # sorted by the privacy unit first (then every column, so equal rows
            # are identical and the file's bytes a function of the rows): the
            # engine's per-unit window then costs about a fifth less CPU; no
            # result depends on row order
            projected = relation.select(*columns).sort(*columns)
            types = {name: str(kind) for name, kind in zip(projected.columns, projected.types)}
        except duckdb.Error as error:      # e.g. a column type that cannot be ordered
            raise StartupError(f"dataset {dataset.name!r}: its columns cannot be read into a "
                               f"snapshot: {_first_line(error)}") from None
        try:
            projected.write_parquet(str(temporary))
        except duckdb.Error as error:      # a row the operator's query cannot compute
            raise StartupError(f"dataset {dataset.name!r}: the source fails while it is "
                               f"read: {_first_line(error)}") from None
    except duckdb.Error as error:          # the connection's own settings
        raise StartupError(f"dataset {dataset.name!r}: DuckDB refused to open the source: "
                           f"{_first_line(error)}") from None
    finally:
        connection.close()
    try:
        os.chmod(temporary, 0o600)
        digest = hashlib.sha256()
        with open(temporary, "rb") as handle:
            for block in iter(lambda: handle.read(_BLOCK), b""):
                digest.update(block)
        version = keyed_mac("service-snapshot", dataset.name, digest.hexdigest())[:32]
        final = directory / f"{dataset.name}-{version}.parquet"
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return Snapshot(dataset.name, final, version, types, identity)


def _warm(dataset, snapshot: Snapshot) -> None:
    """Read the snapshot into the engine and build the coded pairs of every
    declared column now (:func:`privloss.query.engines.duckdb_engine.prepare`),
    so no release pays for it.  A failure is logged only: the release that
    next reads the snapshot tries again (and fails, if it does, after its
    charge, as any engine fault)."""
    if snapshot.tables is None:
        return
    from privloss.query.engines import histogram_plan
    from privloss.query.engines.duckdb_engine import prepare
    from privloss.query.errors import ComputationFailed
    from privloss.query.inputs import resolve_input

    source = replace(resolve_input(Path(snapshot.path)), tables=snapshot.tables)
    for column in dataset.columns:
        try:
            prepare(histogram_plan(source, user_column=dataset.user_column,
                                   item_column=column))
        except (ComputationFailed, ValueError, TypeError, OSError, MemoryError) as error:
            LOGGER.warning("dataset %r: version %s could not be loaded into the engine "
                           "ahead of its releases: %s", dataset.name, snapshot.version,
                           _first_line(error))
            return


def _spark_check(dataset) -> Snapshot:
    from privloss.query.engines import check_input
    from privloss.query.inputs import SparkTable

    source = SparkTable(dataset.spark_table)
    for column in dataset.columns:
        try:
            check_input(source, user_column=dataset.user_column, item_column=column,
                        engine="spark")
        except (ValueError, TypeError, OSError, ImportError) as error:
            raise StartupError(f"dataset {dataset.name!r}: spark_table "
                               f"{dataset.spark_table!r}: {_first_line(error)}") from None
    return Snapshot(dataset.name, None, dataset.version or "", {}, source_identity(dataset))


class SnapshotStore:
    """The current snapshot of every dataset (thread-safe; one per process)."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self._current: dict = {}
        self._locks: dict = {}
        self._lock = threading.Lock()

    def _manifest(self) -> Path:
        return self.directory / "snapshots" / "manifest.json"

    def _recorded(self, dataset) -> Snapshot | None:
        """The snapshot another process (or an earlier start) made of the same
        source, if its file is still there."""
        import json

        try:
            entry = json.loads(self._manifest().read_text(encoding="utf-8")).get(dataset.name)
        except (OSError, ValueError, AttributeError):
            return None
        if not isinstance(entry, dict) or entry.get("identity") != source_identity(dataset):
            return None
        path = Path(entry.get("path", ""))
        if not path.is_file() or path.parent != self.directory / "snapshots":
            return None
        return Snapshot(dataset.name, path, str(entry["version"]), dict(entry["columns"]),
                        entry["identity"])

    def _record(self, snapshot: Snapshot) -> None:
        import json

        manifest = self._manifest()
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            data = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            data = {}
        data[snapshot.dataset] = {"identity": snapshot.identity, "path": str(snapshot.path),
                                  "version": snapshot.version, "columns": snapshot.columns}
        temporary = manifest.with_name(f".manifest.{secrets.token_hex(6)}.tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, manifest)

    def load(self, dataset) -> Snapshot:
        """Read ``dataset`` now, or reuse the recorded snapshot of the same
        source (``StartupError`` if it cannot be served)."""
        if dataset.spark_table is not None:
            snapshot = _spark_check(dataset)
        else:
            snapshot = self._recorded(dataset)
            if snapshot is None:
                snapshot = _write(dataset, self.directory / "snapshots")
                self._record(snapshot)
            snapshot = snapshot.with_tables()
            _warm(dataset, snapshot)
        with self._lock:
            previous = self._current.get(dataset.name)
            self._current[dataset.name] = snapshot
        if previous is not None and previous.path is not None \
                and previous.path != snapshot.path:
            LOGGER.info("dataset %r: source changed, now version %s", dataset.name,
                        snapshot.version)
        return snapshot

    def load_all(self, datasets) -> dict:
        """Every dataset, in order; the first that cannot be served raises."""
        return {dataset.name: self.load(dataset) for dataset in datasets}

    def latest(self, dataset) -> Snapshot | None:
        """The snapshot last read (no check of the source: for dry runs)."""
        with self._lock:
            return self._current.get(dataset.name)

    def current(self, dataset) -> Snapshot:
        """The snapshot a release reads now: re-read first if the source changed
        (see the module docstring); never raises once the dataset was loaded."""
        with self._lock:
            snapshot = self._current.get(dataset.name)
            lock = self._locks.setdefault(dataset.name, threading.Lock())
        if snapshot is None:
            return self.load(dataset)
        if dataset.spark_table is not None:
            return snapshot
        if snapshot.identity == source_identity(dataset) and snapshot.path.exists():
            return snapshot
        with lock:                   # one re-read at a time; the others then reuse it
            with self._lock:
                snapshot = self._current[dataset.name]
            if snapshot.identity == source_identity(dataset) and snapshot.path.exists():
                return snapshot
            try:
                return self.load(dataset)
            except (StartupError, OSError) as error:
                LOGGER.error("dataset %r: the changed source cannot be read; still serving "
                             "version %s: %s", dataset.name, snapshot.version, error)
                with self._lock:     # retried when the source changes again
                    fresh = replace(snapshot, identity=source_identity(dataset))
                    self._current[dataset.name] = fresh
                return fresh

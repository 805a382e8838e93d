"""Where (user, item) rows come from: files, in-memory frames or SQL.

Definition
----------
:func:`resolve_input` classifies ``data`` without reading it (only the file
system is touched, to fail early on a missing file):

* a path (``str`` or ``os.PathLike``) to a regular file ``.csv`` / ``.csv.gz`` /
  ``.tsv`` / ``.tsv.gz`` (header row required; **every column is read as text**
  by both engines, so labels are strings and both engines parse the same way:
  RFC 4180 quoting, empty field = null) or ``.parquet`` / ``.pq`` (a directory
  is read as a Parquet dataset: every ``*.parquet`` file below it).  The exact
  list of files is fixed here (``FileInput.files``) and the engines read those
  names only: glob characters (``*?[]{}``) in a name are never expanded;
* a pandas ``DataFrame``, a Polars ``DataFrame`` / ``LazyFrame``, a PyArrow
  ``Table`` / ``RecordBatch`` (DuckDB scans them in place; Spark converts them);
* :class:`SqlQuery` ``(text, connection=None, tables=None)``: exactly one
  ``SELECT`` statement run by the engine (DuckDB dialect on a DuckDB
  connection, default a fresh in-memory one; Spark SQL on a ``SparkSession``).
  ``tables`` maps view names to data files (paths or :class:`FileInput`) the
  query reads; on privloss's own DuckDB connection the query can read nothing
  else (external access is switched off and the configuration locked before
  it runs);
* a string that starts with ``SELECT``, ``WITH`` or ``FROM``: the same as
  ``SqlQuery(text)`` (``pathlib.Path`` objects are always paths);
* a DuckDB relation (``con.sql("...")``), or a PySpark ``DataFrame``.

A :class:`FileInput` may carry :class:`LoadedTables` (``tables``): a promise
that its files do not change while it is open (private copies, a service
snapshot named by its fingerprint), so the DuckDB engine reads them once into
a table there and every later plan on the input reads that table.

Privacy guarantee
-----------------
None by itself; inputs are read by the engine, and only the aggregated
histogram returns to Python.  SQL text is trusted operator input (it runs with
the engine's privileges on a user-supplied connection or Spark session); on
privloss's own DuckDB connection it is confined to the registered tables.

Citation
--------
DuckDB ``read_csv`` / ``read_parquet`` and Spark ``DataFrameReader`` docs.

Runtime
-------
``O(1)`` (a ``stat`` of the path).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "SqlQuery",
    "FileInput",
    "FrameInput",
    "QueryInput",
    "RelationInput",
    "SparkFrameInput",
    "resolve_input",
    "describe_input",
    "SparkTable",
    "LoadedTables",
]

_SQL_START = re.compile(r"^\s*(select|with|from)\s", re.IGNORECASE)
_CSV_SUFFIXES = {".csv": "csv", ".tsv": "tsv"}
_COMPRESSED = {".gz"}
_PARQUET_SUFFIXES = {".parquet", ".pq"}
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class SqlQuery:
    """One ``SELECT`` statement to run inside the engine; ``connection`` is a
    DuckDB connection or a ``SparkSession`` (None: a fresh, locked in-memory
    DuckDB / the active Spark session); ``tables``: ``{name: path or FileInput}``
    registered as views before the query runs (privloss's own connection only)."""

    text: str
    connection: object = None
    tables: Mapping | None = None

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"SqlQuery text must be a non-empty SQL string, got {self.text!r}")
        if self.tables is not None and not isinstance(self.tables, Mapping):
            raise TypeError(f"SqlQuery tables must be a mapping {{name: path}}, got "
                            f"{type(self.tables).__name__}")


class LoadedTables:
    """What engines loaded from files that do not change while this is open:
    one entry per (engine, files), built once (:meth:`get`) and shared by
    every plan and thread; ``prepare``: the input is queried repeatedly (a
    service snapshot), so engines also keep their seed-independent
    intermediate results (:func:`privloss.query.engines._sql.coded_pairs_sql`).

    The owner of the files makes it and closes it with them (a
    :class:`~privloss.query.fingerprint.FileSnapshot` does); the files'
    identity is the owner's to guarantee (a changed source is a new owner,
    never the old one's tables)."""

    def __init__(self, *, prepare: bool = False):
        self.prepare = bool(prepare)
        self._lock = threading.Lock()
        self._entries: dict = {}
        self._building: dict = {}
        self.closed = False

    def get(self, key, load):
        """The entry ``key``, made by ``load()`` on first use (one thread loads,
        the others wait for it; a failed load is not kept).  After
        :meth:`close` every call loads afresh and keeps nothing."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                return entry
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    return entry
            entry = load()
            with self._lock:
                if not self.closed:
                    self._entries[key] = entry
                    self._building.pop(key, None)
            return entry

    def close(self) -> None:
        """Drop every entry now and close it (no query may still read it)."""
        with self._lock:
            entries, self._entries = list(self._entries.values()), {}
            self.closed = True
        for entry in entries:
            entry.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass(frozen=True)
class FileInput:
    """``files``: the exact file names to read, in order (the engines read these
    and nothing else; empty means ``(path,)``); ``tables``: where engines keep
    what they loaded from files that do not change (:class:`LoadedTables`),
    or None (read the files on every plan)."""

    path: Path
    format: str  # "csv", "tsv" or "parquet"
    is_directory: bool = False
    files: tuple = ()
    tables: LoadedTables | None = field(default=None, compare=False, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(str(file) for file in (self.files or (self.path,)))


@dataclass(frozen=True)
class FrameInput:
    frame: object
    kind: str  # "pandas", "polars", "polars-lazy", "arrow"


@dataclass(frozen=True)
class QueryInput:
    """``tables``: ``((name, FileInput), ...)`` registered as views before the query."""

    text: str
    connection: object = None
    tables: tuple = ()


@dataclass(frozen=True)
class RelationInput:
    relation: object


@dataclass(frozen=True)
class SparkFrameInput:
    frame: object


_SPARK_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


@dataclass(frozen=True)
class SparkTable:
    """A table of the Spark session's catalog, by name (``db.table``; engine
    ``"spark"``): read with ``session.table(name)``, never through SQL text."""

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not _SPARK_TABLE_NAME.match(self.name):
            raise ValueError(f"a Spark table name must be NAME, DB.NAME or CATALOG.DB.NAME "
                             f"(letters, digits, underscores), got {self.name!r}")


def _module_of(data) -> str:
    return type(data).__module__ or ""


def _file_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _CSV_SUFFIXES:
        return _CSV_SUFFIXES[last]
    if last in _PARQUET_SUFFIXES and path.suffix.lower() not in _COMPRESSED:
        return "parquet"
    raise ValueError(f"unsupported data file type {path.name!r}: use .csv, .csv.gz, .tsv, "
                     f".tsv.gz, .parquet or .pq, or pass a SqlQuery (e.g. read_json(...))")


def _resolve_path(path: Path) -> FileInput:
    if not path.exists():
        raise FileNotFoundError(f"data file not found: {str(path)!r}")
    if path.is_dir():
        files = tuple(sorted(str(file) for file in path.rglob("*.parquet") if file.is_file()))
        if not files:
            raise ValueError(f"data directory {str(path)!r} holds no *.parquet files")
        return FileInput(path, "parquet", is_directory=True, files=files)
    if not path.is_file():     # a FIFO or a device: reading could hang or never end
        raise ValueError(f"data {str(path)!r} is not a regular file or a directory")
    return FileInput(path, _file_format(path), files=(str(path),))


def _resolve_tables(tables) -> tuple:
    if not tables:
        return ()
    resolved = []
    for name, source in tables.items():
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            raise ValueError(f"table name must be a SQL identifier (letters, digits, _), "
                             f"got {name!r}")
        if not isinstance(source, FileInput):
            if not isinstance(source, (str, os.PathLike)):
                raise TypeError(f"table {name!r} must be a file path, got "
                                f"{type(source).__name__}")
            source = _resolve_path(Path(source))
        resolved.append((name, source))
    return tuple(resolved)


def resolve_input(data):
    """Classify ``data`` (module docstring); raise on unsupported or missing input."""
    if isinstance(data, SqlQuery):
        return QueryInput(data.text, data.connection, _resolve_tables(data.tables))
    if isinstance(data, str):
        if _SQL_START.match(data):
            return QueryInput(data)
        if not data.strip():
            raise ValueError("data must be a path, a frame or a SQL query, got an empty string")
        return _resolve_path(Path(data))
    if isinstance(data, (FileInput, FrameInput, QueryInput, RelationInput, SparkFrameInput,
                         SparkTable)):
        return data                     # already resolved
    if isinstance(data, os.PathLike):
        return _resolve_path(Path(data))
    module = _module_of(data)
    name = type(data).__name__
    if module.startswith("pandas") and name == "DataFrame":
        return FrameInput(data, "pandas")
    if module.startswith("polars") and name == "DataFrame":
        return FrameInput(data, "polars")
    if module.startswith("polars") and name == "LazyFrame":
        return FrameInput(data, "polars-lazy")
    if module.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        return FrameInput(data, "arrow")
    if module.startswith("duckdb") and "Relation" in name:
        return RelationInput(data)
    if module.startswith("pyspark") and name == "DataFrame":
        return SparkFrameInput(data)
    raise TypeError(f"unsupported data of type {module}.{name}: pass a CSV/Parquet path, a "
                    f"pandas/Polars/Arrow frame, a SqlQuery, a DuckDB relation or a Spark "
                    f"DataFrame")


def describe_input(resolved) -> str:
    """A short human name of an input, for error messages."""
    if isinstance(resolved, FileInput):
        return f"{resolved.format} {'directory' if resolved.is_directory else 'file'} " \
               f"{str(resolved.path)!r}"
    if isinstance(resolved, FrameInput):
        return f"{resolved.kind} frame"
    if isinstance(resolved, QueryInput):
        text = " ".join(resolved.text.split())
        return f"SQL query {text[:60] + ('...' if len(text) > 60 else '')!r}"
    if isinstance(resolved, RelationInput):
        return "DuckDB relation"
    if isinstance(resolved, SparkTable):
        return f"Spark table {resolved.name!r}"
    return "Spark DataFrame"

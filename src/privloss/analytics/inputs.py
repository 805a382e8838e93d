"""Where (user, item) rows come from: files, in-memory frames or SQL.

Definition
----------
:func:`resolve_input` classifies ``data`` without reading it (only the file
system is touched, to fail early on a missing file):

* a path (``str`` or ``os.PathLike``) to ``.csv`` / ``.csv.gz`` / ``.tsv`` /
  ``.tsv.gz`` (header row required; **every column is read as text** by both
  engines, so labels are strings and both engines parse the same way: RFC 4180
  quoting, empty field = null) or ``.parquet`` / ``.pq`` (a directory is read
  as a Parquet dataset, ``**/*.parquet``);
* a pandas ``DataFrame``, a Polars ``DataFrame`` / ``LazyFrame``, a PyArrow
  ``Table`` / ``RecordBatch`` (DuckDB scans them in place; Spark converts them);
* :class:`SqlQuery` ``(text, connection=None)``: a ``SELECT`` run by the
  engine (DuckDB dialect on a DuckDB connection, default a fresh in-memory one;
  Spark SQL on a ``SparkSession``);
* a string that starts with ``SELECT``, ``WITH`` or ``FROM``: the same as
  ``SqlQuery(text)`` (``pathlib.Path`` objects are always paths);
* a DuckDB relation (``con.sql("...")``), or a PySpark ``DataFrame``.

Privacy guarantee
-----------------
None by itself; inputs are read by the engine, and only the aggregated
histogram returns to Python.

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
from dataclasses import dataclass
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
]

_SQL_START = re.compile(r"^\s*(select|with|from)\s", re.IGNORECASE)
_CSV_SUFFIXES = {".csv": "csv", ".tsv": "tsv"}
_COMPRESSED = {".gz"}
_PARQUET_SUFFIXES = {".parquet", ".pq"}


@dataclass(frozen=True)
class SqlQuery:
    """A ``SELECT`` query to run inside the engine; ``connection`` is a DuckDB
    connection or a ``SparkSession`` (None: a fresh in-memory DuckDB / the
    active Spark session)."""

    text: str
    connection: object = None

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"SqlQuery text must be a non-empty SQL string, got {self.text!r}")


@dataclass(frozen=True)
class FileInput:
    path: Path
    format: str  # "csv", "tsv" or "parquet"
    is_directory: bool = False


@dataclass(frozen=True)
class FrameInput:
    frame: object
    kind: str  # "pandas", "polars", "polars-lazy", "arrow"


@dataclass(frozen=True)
class QueryInput:
    text: str
    connection: object = None


@dataclass(frozen=True)
class RelationInput:
    relation: object


@dataclass(frozen=True)
class SparkFrameInput:
    frame: object


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
        if not any(path.rglob("*.parquet")):
            raise ValueError(f"data directory {str(path)!r} holds no *.parquet files")
        return FileInput(path, "parquet", is_directory=True)
    return FileInput(path, _file_format(path))


def resolve_input(data):
    """Classify ``data`` (module docstring); raise on unsupported or missing input."""
    if isinstance(data, SqlQuery):
        return QueryInput(data.text, data.connection)
    if isinstance(data, str):
        if _SQL_START.match(data):
            return QueryInput(data)
        if not data.strip():
            raise ValueError("data must be a path, a frame or a SQL query, got an empty string")
        return _resolve_path(Path(data))
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
    return "Spark DataFrame"

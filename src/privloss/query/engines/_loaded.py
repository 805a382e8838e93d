"""Files read once into DuckDB: :class:`LoadedFile` and :func:`load`.

Definition
----------
A :class:`~privloss.query.inputs.FileInput` carrying
:class:`~privloss.query.inputs.LoadedTables` (files that do not change while
it is open) is read whole into the table ``rows`` of a private in-memory
database on a locked connection, once; plans then run on cursors of it
(:mod:`privloss.query.engines.duckdb_engine`).  With ``prepare`` the coded
(unit, group) pairs of count-only plans are materialised once per (privacy
unit, group columns) (:func:`~privloss.query.engines._sql.coded_pairs_sql`).

Privacy guarantee
-----------------
None (exact aggregates).  No caller text enters the SQL: the file names and
columns are parameters.

Citation
--------
DuckDB ``read_csv`` / ``read_parquet``, ``COLUMNS``.

Runtime
-------
One read of the files (every field of every CSV row parsed and checked);
one grouping of the pairs per (unit, columns) with ``prepare``.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
from typing import NamedTuple

from privloss.query.engines._files import exact_files
from privloss.query.engines._sql import DUCKDB, coded_pairs_sql
from privloss.query.errors import computation_failed, log_engine_error
from privloss.query.inputs import FileInput, describe_input
from privloss.query.plan import QueryPlan

__all__ = ["CodedPairs", "LoadedFile", "load", "unreadable"]


class CodedPairs(NamedTuple):
    """A table of :func:`coded_pairs_sql` (``name``) and its number of ``rows``."""

    name: str
    rows: int


def unreadable(inp, error, scan: bool):
    """The error of a file that does not read: before a charge (``scan``) the
    fixed ValueError of ``duckdb_engine._file_relation``; while computing,
    :class:`~privloss.query.errors.ComputationFailed`."""
    if not scan:
        return computation_failed(error, f"duckdb, {describe_input(inp)}")
    error_id = log_engine_error(error, f"reading {describe_input(inp)}")
    rule = "" if inp.format == "parquet" else \
        " (UTF-8, a header row, every row with the header's number of fields)"
    return ValueError(f"could not read {describe_input(inp)}: it is not a well-formed "
                      f"{inp.format.upper()} file{rule}; error id {error_id} (the "
                      f"reader's message is in the privloss.engine log)")


class LoadedFile:
    """The rows of a :class:`FileInput`'s files in the table ``rows`` of a
    private in-memory database (``connection``: locked, as every connection of
    ours; queries run on its cursors), and the pairs tables made from it
    (:meth:`coded_pairs`).  :meth:`close` frees both."""

    def __init__(self, connection, spill):
        self.connection = connection
        self._spill = spill
        self._lock = threading.Lock()
        self._pairs: dict = {}
        self._numbers = itertools.count()

    @classmethod
    def read(cls, duckdb, inp: FileInput, scan: bool = True,
             columns: tuple | None = None) -> "LoadedFile":
        """Read ``inp``'s files whole (the reading rules of
        :func:`~.duckdb_engine._file_relation`, by SQL over our own text with the file names
        and ``columns`` as parameters); a file that does not read raises as
        :func:`unreadable`.  ``columns``: keep only these (every row of a CSV
        file is still parsed and checked, every field; a column the files lack
        keeps them all, so the schema error names the file's columns)."""
        from privloss.query.engines.duckdb_engine import (_locked_connection,
                                                          memory_settings)

        limit_directory = memory_settings()[1]
        spill = None if limit_directory is not None else \
            tempfile.TemporaryDirectory(prefix="privloss-duckdb-")
        names, copies = exact_files(inp)       # glob-free copies, if any
        connection = None
        try:
            connection = _locked_connection(duckdb, names, limit_directory or spill.name)
            if inp.format == "parquet":
                reader, parameters = "read_parquet(?)", [list(names)]
            else:
                # the header is the first line, nothing is a comment: without these the
                # sniffer may take a malformed row for the header (and skip the rows
                # above it) or a line for a comment, where _file_relation refuses the file
                reader = ("read_csv(?, header = true, all_varchar = true, sep = ?, "
                          "quote = '\"', escape = '\"', skip = 0, comment = '')")
                parameters = [list(names), "\t" if inp.format == "tsv" else ","]
            try:
                # a CSV reader checks only the columns it reads past its sniffing
                # sample: this always-true filter reads (and checks) every field;
                # strlen (bytes) rather than length (characters, a pass over each
                # value): the reader's UTF-8 check is the same, the filter cheaper
                every_field = "" if inp.format == "parquet" else \
                    " WHERE coalesce(strlen(COLUMNS(*)), 0) >= 0"
                if columns is not None:
                    try:
                        connection.execute(f"CREATE TABLE rows AS SELECT COLUMNS(?) FROM "
                                           f"{reader}{every_field}",
                                           [list(columns)] + parameters).fetchall()
                    except duckdb.BinderException:      # a column the files lack
                        columns = None
                if columns is not None:
                    kept = {row[0] for row in connection.execute("DESCRIBE rows").fetchall()}
                    if not set(columns) <= kept:        # matched in another case
                        connection.execute("DROP TABLE rows").fetchall()
                        columns = None
                if columns is None:
                    connection.execute(f"CREATE TABLE rows AS SELECT * FROM {reader}",
                                       parameters).fetchall()
            except duckdb.Error as error:
                raise unreadable(inp, error, scan) from None
        except BaseException:
            if connection is not None:
                connection.close()
            if spill is not None:
                spill.cleanup()
            raise
        finally:
            if copies is not None:      # the rows are loaded
                copies.close()
        return cls(connection, spill)

    def coded_pairs(self, duckdb, plan: QueryPlan, projected, kinds: list,
                    inp) -> CodedPairs:
        """The table of :func:`coded_pairs_sql` over ``projected`` (the rows
        projected onto u, g..), made on first use per (privacy unit, group
        columns); a failure is :class:`ComputationFailed`."""
        key = (plan.privacy_unit, tuple(plan.by))
        with self._lock:            # one build at a time; a repeat finds the table
            made = self._pairs.get(key)
            if made is not None:
                return made
            name = f"pairs_{next(self._numbers)}"
            groups = len(plan.by)
            text = coded_pairs_sql(DUCKDB, "privloss_source", groups=groups,
                                   unit_integer=kinds[0] == "integer",
                                   group_integer=groups == 1 and kinds[1] == "integer")
            try:
                projected.query("privloss_source", text).create(name)
                # on the caller's cursor (the shared connection is not for threads)
                rows = projected.query("privloss_source",
                                       f"SELECT count(*) FROM {name}").fetchall()[0][0]
            except duckdb.Error as error:
                raise computation_failed(error, f"duckdb, {describe_input(inp)}") from None
            made = self._pairs[key] = CodedPairs(name, int(rows))
            return made

    def close(self) -> None:
        with self._lock:
            self._pairs = {}
        self.connection.close()
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None


def load(inp: FileInput, scan: bool = True, columns=None) -> LoadedFile:
    """``inp``'s :class:`LoadedFile`: kept in ``inp.tables`` (read on first
    use; see the module docstring).  ``columns``: the columns a plan reads, for
    an input read by one plan (not ``prepare``): only those are kept (the
    rest of the row is parsed and dropped), one table per set of columns."""
    from privloss.query.engines.duckdb_engine import import_duckdb

    duckdb = import_duckdb()
    if inp.tables.prepare or columns is None:
        columns = None
    else:
        columns = tuple(dict.fromkeys(columns))
    return inp.tables.get(("duckdb", inp.names, columns),
                          lambda: LoadedFile.read(duckdb, inp, scan, columns))

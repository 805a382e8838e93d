"""The DuckDB engine: a :class:`~privloss.query.plan.QueryPlan`'s contribution
bounding and per-group statistics in one SQL query.

Definition
----------
:func:`run` opens the plan's source (file scan, frame scan, a SQL query or
the caller's relation), projects the caller's columns onto our own names
``u`` (unit), ``g0..`` (groups) and ``v0..`` (values) through the relational
API, and runs :func:`~privloss.query.engines._sql.bounded_sql` over them:
rows with a null unit or group dropped, each unit's groups chosen by the
keyed hash of :mod:`privloss.query.bounding`, its rows per group capped,
values clamped to their grids, then the statistics per group (with ``top``,
only the head and the number of groups).  :func:`check` binds the source
and checks the columns without computing any row.

Memory: privloss's own connections (files, frames, a ``SqlQuery`` without a
connection) run with DuckDB's ``memory_limit`` set to
``PRIVLOSS_DUCKDB_MEMORY_LIMIT`` (default :data:`DEFAULT_MEMORY_LIMIT`) and
spill beyond it to ``PRIVLOSS_DUCKDB_TEMP_DIRECTORY``, by default a private
temporary directory (mode 0700: spilled pages hold the rows) removed
afterwards.  A caller's own connection or relation keeps its own settings.

Loading: a :class:`~privloss.query.inputs.FileInput` with ``tables`` (a
:class:`~privloss.query.inputs.LoadedTables`: files that do not change while
it is open, such as the private copies the API fingerprints or a service
snapshot) is read once, whole, into a table of an in-memory database on a
private locked connection (:class:`LoadedFile`; that read is also the parse
of every row that :func:`check` asks for), and every plan on the input then
runs on a cursor of that connection (thread-safe).  With
``LoadedTables(prepare=True)`` (a service snapshot, queried again and again)
a count-only plan without a row filter also reads the (unit, group) pairs
with their codes, materialised once per (privacy unit, group columns)
(:func:`~privloss.query.engines._sql.coded_pairs_sql`, numbered in the
choice's tie order), so a release only draws its keyed group choice (one
top-n aggregation over the pairs instead of a sort) and counts: the same
statistics as from the rows, for every seed.

Isolation: no caller text enters our SQL (only our names and integers
formatted by Python).  Files and frames are read on a private connection that
can read only the exact input files (DuckDB's ``allowed_paths``, external
access off, configuration locked); a :class:`~privloss.query.inputs.SqlQuery`
without a connection runs there too, after its ``tables`` are registered, and
must be exactly one SELECT.  Engine errors while the rows are computed become
:class:`~privloss.query.errors.ComputationFailed` (fixed text; the engine's
message goes to the ``privloss.engine`` log).

Privacy guarantee
-----------------
None by itself (exact bounded statistics); see :mod:`privloss.query.plan`
for what the bounding guarantees.

Citation
--------
Wilson et al., PoPETs 2020; DuckDB window functions (``dense_rank``,
``row_number``), ``histogram``.

Runtime
-------
One scan of the input (only the needed columns).  Count-only plans (top-k,
histograms, ``count`` / ``count_distinct``) aggregate the rows into (unit,
group) pairs first (each group's code computed once per distinct group) and
sort the pairs once by (unit, 4-byte key, then the tie order); plans with
value columns sort all rows once by (unit, key), then the rows that pass,
then per (unit, group).  Figures: ``docs/benchmarks.md``.
"""

from __future__ import annotations

import os
import tempfile

from privloss.query.bounding import SelectionKey, is_canonical_integer
from privloss.query.engines._codes import check_columns, column_kind, key_codes_of, text_ok
from privloss.query.engines._files import exact_files
from privloss.query.engines._loaded import LoadedFile, load, unreadable
from privloss.query.engines._sql import DUCKDB, bounded_sql
from privloss.query.errors import computation_failed
from privloss.query.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                   SparkFrameInput, SparkTable, describe_input,
                                   resolve_input)
from privloss.query.plan import ROW_SEED_OFFSET, GroupStatistics, QueryPlan

__all__ = ["DEFAULT_MEMORY_LIMIT", "check", "run", "check_select", "memory_settings",
           "import_duckdb", "open_source", "columns_of_tables", "LoadedFile", "load",
           "prepare"]

#: Memory limit of privloss's own DuckDB connections: beyond it DuckDB spills to
#: disk, so peak memory stays flat as the distinct (unit, group) pairs grow
#: (docs/benchmarks.md: 50 million rows under 1 GB).
DEFAULT_MEMORY_LIMIT = "500MB"
MEMORY_LIMIT_VARIABLE = "PRIVLOSS_DUCKDB_MEMORY_LIMIT"
TEMP_DIRECTORY_VARIABLE = "PRIVLOSS_DUCKDB_TEMP_DIRECTORY"


def import_duckdb():
    """The duckdb module, or ImportError naming the extra that installs it."""
    try:
        import duckdb
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the DuckDB engine needs the 'duckdb' package: "
                          "install the 'analytics' extra (pip install '.[analytics]' from a privloss checkout)") from error
    return duckdb


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"}


def floats_as_integer_text(duckdb, relation, names: tuple[str, ...]):
    """``(relation, floats)``: the key columns ``names`` (our own aliases) of
    type FLOAT / DOUBLE as text with an integral value written as its integer
    (``'1'``, not ``'1.0'``), and ``floats``, the names converted.  One null
    turns an integer column of a pandas frame (and the Parquet written from it)
    into float64: without this, known keys 1, 2, 3 stopped matching 1.0, labels
    became floats and the bounding codes changed for every user.  As text, an
    integral value groups, codes, matches keys and orders exactly as the
    integer did; :func:`number_label` turns the labels back into numbers."""
    expressions, floats = [], []
    for name, kind in zip(relation.columns, relation.types):
        if name in names and str(kind).upper() in _FLOAT_TYPES:
            floats.append(name)
            expressions.append(duckdb.SQLExpression(
                f"CASE WHEN isfinite({name}) AND {name} = trunc({name}) "
                f"AND abs({name}) < 9.2e18 THEN CAST(CAST({name} AS BIGINT) AS VARCHAR) "
                f"ELSE CAST({name} AS VARCHAR) END").alias(name))
        else:
            expressions.append(duckdb.ColumnExpression(name))
    return (relation.select(*expressions) if floats else relation), tuple(floats)


def number_label(text):
    """A label of a column :func:`floats_as_integer_text` converted: the int
    of integer text, else the float (``nan``, ``inf``, ``1.5``)."""
    if text is None:
        return None
    return int(text) if is_canonical_integer(text) else float(text)


def check_select(duckdb, text: str) -> None:
    """Refuse anything but exactly one SELECT statement (DuckDB's parser decides;
    a ``WITH`` or ``FROM``-first query is a SELECT)."""
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as error:
        raise ValueError(f"the SQL query does not parse: {str(error).splitlines()[0]}") \
            from None
    if len(statements) != 1:
        raise ValueError(f"the SQL query must be exactly one SELECT statement, got "
                         f"{len(statements)} statements")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise ValueError(f"the SQL query must be a SELECT statement, got "
                         f"{statements[0].type.name}")


def memory_settings() -> tuple[str, str | None]:
    """(memory limit, spill directory or None for a private temporary one) for
    privloss's own DuckDB connections, from ``PRIVLOSS_DUCKDB_MEMORY_LIMIT``
    (default :data:`DEFAULT_MEMORY_LIMIT`; DuckDB's syntax, e.g. ``"2GB"``) and
    ``PRIVLOSS_DUCKDB_TEMP_DIRECTORY``."""
    limit = os.environ.get(MEMORY_LIMIT_VARIABLE, "").strip() or DEFAULT_MEMORY_LIMIT
    directory = os.environ.get(TEMP_DIRECTORY_VARIABLE, "").strip() or None
    return limit, directory


def _locked_connection(duckdb, allowed: tuple[str, ...], spill_directory: str):
    """A private in-memory connection that can read only ``allowed`` files:
    external access off and the configuration locked (no ATTACH, COPY, INSTALL,
    read_csv of other files, SET), no progress bar, and a memory limit beyond
    which DuckDB spills to ``spill_directory`` (so peak memory does not grow
    with the number of distinct (user, item) pairs)."""
    limit, _ = memory_settings()
    connection = duckdb.connect()
    try:
        connection.execute("SET enable_progress_bar = false").fetchall()
        try:
            connection.execute("SET memory_limit = ?", [limit]).fetchall()
        except duckdb.Error as error:
            raise ValueError(f"{MEMORY_LIMIT_VARIABLE} must be a DuckDB memory size such as "
                             f"'500MB' or '2GB', got {limit!r}") from error
        connection.execute("SET temp_directory = ?", [spill_directory]).fetchall()
        if allowed:
            connection.execute("SET allowed_paths = ?", [list(allowed)]).fetchall()
        connection.execute("SET enable_external_access = false").fetchall()
        connection.execute("SET lock_configuration = true").fetchall()
    except BaseException:
        connection.close()
        raise
    return connection


def _file_relation(duckdb, con, inp: FileInput, names: tuple[str, ...], scan: bool = False):
    """A relation over exactly ``names`` (no glob expansion), through the
    relational API (no SQL text).  ``scan``: parse every row of a CSV / TSV
    file now (every column), so a malformed row anywhere fails here, before a
    charge, exactly as one inside DuckDB's sniffing sample does.  A read
    failure is one fixed message: DuckDB's names the line and quotes the row
    (the data), so that text goes to the ``privloss.engine`` log only."""
    try:
        if inp.format == "parquet":
            return con.read_parquet(list(names))
        relation = con.read_csv(list(names), header=True, all_varchar=True,
                                sep="\t" if inp.format == "tsv" else ",", quotechar='"',
                                escapechar='"')
        if scan:
            relation.aggregate([duckdb.FunctionExpression("count", duckdb.ColumnExpression(c))
                                for c in relation.columns]).fetchall()
        return relation
    except duckdb.Error as error:
        raise unreadable(inp, error, scan=True) from None


def _frame_relation(con, inp: FrameInput):
    frame = inp.frame
    if inp.kind == "pandas":
        return con.from_df(frame)
    if inp.kind == "polars-lazy":
        frame = frame.collect()
    if inp.kind in ("polars", "polars-lazy"):
        frame = frame.to_arrow()
    return con.from_arrow(frame)


class _Source:
    """A relation and what to release after use (connection, file snapshots,
    the private spill directory); ``loaded``: the :class:`LoadedFile` read
    (``prepare``: keep its pairs tables)."""

    def __init__(self):
        self.relation = None
        self.connection = None
        self.snapshots = []
        self.spill = None
        self.loaded = None
        self.prepare = False

    def spill_directory(self) -> str:
        """The configured spill directory, else a fresh private one (mode 0700,
        removed by :meth:`close`): spilled pages hold the caller's rows."""
        _, directory = memory_settings()
        if directory is not None:
            return directory
        if self.spill is None:
            self.spill = tempfile.TemporaryDirectory(prefix="privloss-duckdb-")
        return self.spill.name

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        for snapshot in self.snapshots:
            snapshot.close()
        self.snapshots = []
        if self.spill is not None:
            self.spill.cleanup()
            self.spill = None


def _files_of(source: _Source, inp: FileInput) -> tuple[str, ...]:
    names, snapshot = exact_files(inp)
    if snapshot is not None:
        source.snapshots.append(snapshot)
    return names


def _open(duckdb, inp, source: _Source, scan: bool = False, columns=None) -> None:
    """Fill ``source`` for a resolved input (schema errors: ValueError/TypeError);
    ``scan``: parse every row of CSV / TSV files now (:func:`_file_relation`);
    ``columns``: those the plan reads (a loaded input keeps only them)."""
    if isinstance(inp, RelationInput):
        source.relation = inp.relation
        return
    if isinstance(inp, (SparkFrameInput, SparkTable)):
        raise TypeError(f"a {describe_input(inp)} needs engine='spark'")
    if isinstance(inp, QueryInput):
        check_select(duckdb, inp.text)
        if inp.connection is not None:
            if not isinstance(inp.connection, duckdb.DuckDBPyConnection):
                raise TypeError(f"SqlQuery.connection must be a DuckDB connection for "
                                f"engine='duckdb', got {type(inp.connection).__name__}")
            if inp.tables:
                raise TypeError("SqlQuery tables are registered on privloss's own connection "
                                "only; create the views on your connection instead")
            con = inp.connection
        else:
            files = {name: _files_of(source, table) for name, table in inp.tables}
            allowed = tuple(name for names in files.values() for name in names)
            con = source.connection = _locked_connection(duckdb, allowed,
                                                          source.spill_directory())
            for name, table in inp.tables:
                _file_relation(duckdb, con, table, files[name], scan).create_view(
                    name, replace=False)
        try:
            source.relation = con.sql(inp.text)
        except duckdb.Error as error:
            raise ValueError(f"{describe_input(inp)} failed: {str(error).splitlines()[0]}") \
                from None
        if source.relation is None:
            raise ValueError(f"{describe_input(inp)} returns no rows: it must be a SELECT")
        return
    if isinstance(inp, FileInput) and inp.tables is not None:
        source.loaded = load(inp, scan, columns)
        source.prepare = inp.tables.prepare
        source.connection = source.loaded.connection.cursor()
        source.relation = source.connection.table("rows")
        return
    if isinstance(inp, FileInput):
        names = _files_of(source, inp)
        source.connection = _locked_connection(duckdb, names, source.spill_directory())
        source.relation = _file_relation(duckdb, source.connection, inp, names, scan)
        return
    source.connection = _locked_connection(duckdb, (), source.spill_directory())
    source.relation = _frame_relation(source.connection, inp)


def open_source(data, scan: bool = False):
    """``(duckdb, source)``: ``data`` (any input :func:`resolve_input` takes)
    bound on privloss's own locked connection (``source.relation``; close
    ``source`` when done).  ``scan``: parse CSV / TSV files whole now.  For
    queries outside a :class:`QueryPlan` (running totals' periods)."""
    duckdb = import_duckdb()
    source = _Source()
    try:
        _open(duckdb, resolve_input(data), source, scan)
    except BaseException:
        source.close()
        raise
    return duckdb, source


def columns_of_tables(tables: list) -> list:
    """The column names of each of ``tables`` (files or frames; any other
    input is opened on its own, as :func:`open_source` does), every file and
    frame bound on one private locked connection that can read exactly their
    files.  No row is computed."""
    duckdb = import_duckdb()
    inputs = [resolve_input(data) for data in tables]
    shared = [isinstance(inp, (FileInput, FrameInput)) and
              not (isinstance(inp, FileInput) and inp.tables is not None) for inp in inputs]
    source = _Source()
    try:
        files = [_files_of(source, inp) if isinstance(inp, FileInput) and ok else ()
                 for inp, ok in zip(inputs, shared)]
        if any(shared):
            source.connection = _locked_connection(
                duckdb, tuple(name for names in files for name in names),
                source.spill_directory())
        out = []
        for data, inp, names, ok in zip(tables, inputs, files, shared):
            if not ok:
                _, alone = open_source(data)
                try:
                    out.append([str(c) for c in alone.relation.columns])
                finally:
                    alone.close()
                continue
            relation = _file_relation(duckdb, source.connection, inp, names) \
                if isinstance(inp, FileInput) else _frame_relation(source.connection, inp)
            out.append([str(c) for c in relation.columns])
        return out
    finally:
        source.close()


def _opened(plan: QueryPlan, scan: bool = False):
    """(duckdb, input, source, the relation projected onto u, g.., v.., its
    kinds, the key columns written as integer text (:func:`floats_as_integer_text`))."""
    duckdb = import_duckdb()
    inp = resolve_input(plan.source)
    source = _Source()
    try:
        if plan.joins:          # every table on one private connection, joined first
            from privloss.query.engines.duckdb_joins import open_joined
            relation = source.relation = open_joined(duckdb, inp, plan, source, scan)
        else:
            columns = [plan.privacy_unit, *plan.by, *plan.value_columns]
            if plan.where is not None:
                columns += sorted(plan.where.columns())
            _open(duckdb, inp, source, scan, columns)
            relation = source.relation
        check_columns(list(relation.columns), list(relation.types), plan, describe_input(inp),
                      text_ok(inp))
        if plan.where is not None:      # row filters first: 1-stable, before the bounding
            from privloss.query.filters import to_duckdb
            types = dict(zip(relation.columns, map(str, relation.types)))
            relation = relation.filter(to_duckdb(plan.where, duckdb, types))
        # our SQL sees fixed names only: the caller's column names stay in the API
        expressions = [duckdb.ColumnExpression(plan.privacy_unit).alias("u")]
        expressions += [duckdb.ColumnExpression(b).alias(f"g{i}")
                        for i, b in enumerate(plan.by)]
        expressions += [duckdb.ColumnExpression(v).alias(f"v{i}")
                        for i, v in enumerate(plan.value_columns)]
        projected, floats = floats_as_integer_text(
            duckdb, relation.select(*expressions),
            ("u",) + tuple(f"g{i}" for i in range(len(plan.by))))
        kinds = [column_kind(kind) for kind in projected.types]
    except BaseException:
        source.close()
        raise
    return duckdb, inp, source, projected, kinds, floats


def check(plan: QueryPlan) -> None:
    """Bind the plan's source and check its columns: errors (``ValueError`` /
    ``TypeError``) a caller raises before charging a release.  No aggregate is
    computed; CSV / TSV files are parsed whole, so a malformed row fails here
    wherever it is (the same way for every neighbouring input)."""
    _, _, source, _, _, _ = _opened(plan, scan=True)
    source.close()


def prepare(plan: QueryPlan) -> None:
    """Read ``plan``'s source into the engine now if it carries
    :class:`~privloss.query.inputs.LoadedTables` (a warm-up; nothing is
    computed on its rows), and with ``prepare`` build the coded pairs a
    count-only plan without a row filter reads (:meth:`LoadedFile.coded_pairs`),
    so the first release on it does no more than later ones.  Errors as
    :func:`check`'s, or :class:`ComputationFailed`."""
    duckdb, inp, source, projected, kinds, _ = _opened(plan, scan=True)
    try:
        if source.prepare and not plan.value_columns and plan.where is None:
            source.loaded.coded_pairs(duckdb, plan, projected, kinds, inp)
    finally:
        source.close()


def compile_plan(plan: QueryPlan, kinds: list, source_name: str = "privloss_source",
                 coded_source=None):
    """The :class:`~privloss.query.engines._sql.BoundedSql` of ``plan`` over a
    view ``source_name`` with columns u, g.., v.. of the given kinds
    (``coded_source``: the :class:`~._loaded.CodedPairs` of its coded pairs,
    count-only plans)."""
    groups = len(plan.by)
    group_integer = groups == 1 and kinds[1] == "integer"
    key_texts = None if plan.keys is None else [tuple(map(str, k)) for k in plan.keys]
    return bounded_sql(
        DUCKDB, source_name, groups=groups,
        value_grids=[plan.grids[v] for v in plan.value_columns],
        value_text=[kind == "text" for kind in kinds[1 + groups:]],
        unit_integer=kinds[0] == "integer", group_integer=group_integer,
        key_codes=key_codes_of(key_texts, group_integer),
        max_groups=plan.bounding.max_groups, max_rows=plan.bounding.max_rows_per_group,
        group_key=SelectionKey.from_seed(plan.seed),
        row_key=SelectionKey.from_seed(plan.seed + ROW_SEED_OFFSET),
        quantile_columns=[plan.value_columns.index(c) for c in plan.quantile_columns],
        bins=plan.quantile_bins, top=plan.top,
        coded_source=None if coded_source is None else coded_source.name,
        coded_pairs=None if coded_source is None else coded_source.rows,
        rank_thresholds={plan.value_columns.index(c): tuple(t)
                         for c, t in plan.rank_thresholds.items()})


def statistics_of(plan: QueryPlan, rows: list, histograms: dict | None = None,
                  floats: tuple = ()) -> GroupStatistics:
    """:class:`GroupStatistics` from the rows of ``compile_plan(...).main``
    (``histograms``: (column index, group) -> {bin: count}, Spark only;
    ``floats``: the group columns keyed as integer text, labels turned back
    into numbers)."""
    groups, values = len(plan.by), plan.value_columns
    width = 2 * len(values)
    quantiles, topped = plan.quantile_columns, plan.top is not None
    # per plan, not per row (a top-k's d_bar rows): the rank columns in index order,
    # the group columns to turn back into numbers
    ranked = [(column, len(plan.rank_thresholds[column]))
              for _, column in sorted((values.index(c), c) for c in plan.rank_thresholds)]
    floated = tuple(f"g{i}" in floats for i in range(groups))
    indexed = list(enumerate(values))
    out, total = [], 0
    for row in rows:
        row = tuple(row)
        if topped:
            total, row = int(row[-1]), row[:-1]
        raw = row[:groups]
        group = tuple(number_label(value) if floated[i] else value
                      for i, value in enumerate(raw)) if any(floated) else raw
        rest = row[groups + 2:]
        if histograms is None:
            bins = {column: {int(b): int(c) for b, c in dict(rest[width + j] or {}).items()
                             if b is not None}
                    for j, column in enumerate(quantiles)}
        else:
            bins = {column: histograms.get((values.index(column), raw), {})
                    for column in quantiles}
        at = width + (len(quantiles) if histograms is None else 0)
        ranks = {}
        for column, size in ranked:
            ranks[column] = [int(c) for c in rest[at:at + size]]
            at += size
        out.append({"group": group, "distinct": int(row[groups]), "rows": int(row[groups + 1]),
                    "ranks": ranks,
                    "sum": {v: int(rest[2 * i] or 0) for i, v in indexed},
                    "nonnull": {v: int(rest[2 * i + 1]) for i, v in indexed},
                    "bins": bins})
    return GroupStatistics(out, total if plan.top is not None else len(out))


def groups_per_unit(plan: QueryPlan, thresholds) -> tuple:
    """``(units, [#units with at most t groups for t in thresholds])`` over
    ``plan``'s source after its joins and filter, before the bounding
    (:func:`~privloss.query.engines._sql.groups_per_unit_sql`).  Errors as
    :func:`run`'s."""
    from privloss.query.engines._sql import groups_per_unit_sql

    duckdb, inp, source, projected, _, _ = _opened(plan)
    try:
        text = groups_per_unit_sql("privloss_source", groups=len(plan.by),
                                   thresholds=thresholds)
        try:
            row = projected.query("privloss_source", text).fetchall()[0]
        except duckdb.Error as error:
            raise computation_failed(error, f"duckdb, {describe_input(inp)}") from None
    finally:
        source.close()
    return int(row[0]), [int(c) for c in row[1:]]


def run(plan: QueryPlan) -> GroupStatistics:
    """The plan's bounded statistics (see the module docstring).  Errors:
    ``ValueError`` / ``TypeError`` for what the schema shows; any failure while
    the rows are computed becomes
    :class:`~privloss.query.errors.ComputationFailed`."""
    duckdb, inp, source, projected, kinds, floats = _opened(plan)
    try:
        coded = None
        if source.prepare and not plan.value_columns and plan.where is None:
            coded = source.loaded.coded_pairs(duckdb, plan, projected, kinds, inp)
        built = compile_plan(plan, kinds, coded_source=coded)
        text = built.with_clause + "\n" + built.main
        try:
            if coded is None and plan.joins:
                # the joined relation lives on our own cursor (open_joined): a view of it
                # and our SQL there, without the relational API rendering the statement
                projected.create_view("privloss_source")
                rows = source.connection.execute(text).fetchall()
            elif coded is None:
                rows = projected.query("privloss_source", text).fetchall()
            else:           # our SQL over our own tables on this cursor
                rows = source.connection.execute(text).fetchall()
        except duckdb.Error as error:
            raise computation_failed(error, f"duckdb, {describe_input(inp)}") from None
    finally:
        source.close()
    return statistics_of(plan, rows, floats=floats)

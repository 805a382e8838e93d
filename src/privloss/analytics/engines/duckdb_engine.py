"""DuckDB engine: contribution bounding and aggregation in one SQL query.

Definition
----------
One query, run where the data is (file scan, frame scan or the user's
connection).  Each column is first encoded for grouping: an integer column as
BIGINT; a text (VARCHAR) column as ``(n, t)``, ``n`` the BIGINT of canonical
integer text (:data:`~privloss.analytics.bounding.CANONICAL_INTEGER`, checked
per value inside the query) and ``t`` any other text, the other one null (an
exact, invertible encoding: "007" and "7" stay apart, labels come back as the
original text); any other type as it is.  Then::

    pairs  = SELECT <user keys>, <item keys>, count(*) AS c ... GROUP BY them
    hist   = SELECT <item label>, sum(least(c, linf)) FROM pairs GROUP BY <item keys>

and with ``l0``, between the two::

    coded  = pairs + code(u), code(i)   (the integer, or md5 of the text)
    keyed  = coded + selection key (privloss.analytics.bounding): BIGINT
             shifts, xors, masks and small products in stacked projections
    sel    = keyed QUALIFY row_number() OVER (PARTITION BY <user keys>
                                             ORDER BY key, code(i), tie) <= l0

then ``hist ORDER BY count DESC, label LIMIT top + 1`` and the number of items
(kept inside the library: it only says whether the list was cut).  Rows with a
null user id or a null item are dropped first; an empty input gives an empty
histogram.  The input is scanned once, and only that result (the top
``d_bar + 1`` rows, or the whole aggregated histogram when ``top`` is None) is
fetched into Python.

Memory: privloss's own connections (files, frames, a ``SqlQuery`` without a
connection) run with DuckDB's ``memory_limit`` set to
``PRIVLOSS_DUCKDB_MEMORY_LIMIT`` (default :data:`DEFAULT_MEMORY_LIMIT`) and
spill beyond it to ``PRIVLOSS_DUCKDB_TEMP_DIRECTORY``, by default a private
temporary directory (mode 0700: spilled pages hold the rows) removed
afterwards.  A caller's own connection or relation keeps its own settings.

Isolation: the caller's columns are projected to ``u``, ``i`` through the
relational API, so no caller text enters our SQL.  Files and frames are read on
a private connection that can read only the exact input files (DuckDB's
``allowed_paths``, external access off, configuration locked); a
:class:`~privloss.analytics.inputs.SqlQuery` without a connection runs there
too, after its ``tables`` are registered, and must be exactly one SELECT.
Engine errors while the rows are computed become
:class:`~privloss.analytics.errors.ComputationFailed` (fixed text; the engine's
message goes to the ``privloss.engine`` log).
Users are partitioned by their exact value (its exact encoding), never by a
hash or a code.

Privacy guarantee
-----------------
See :mod:`privloss.analytics.bounding`: after the bounding each user changes at
most ``l0`` counts by at most ``linf``.

Citation
--------
DuckDB SQL (window ``QUALIFY``, ``MATERIALIZED`` CTEs); Wilson et al. 2020.

Runtime
-------
One scan, one hash aggregation over the rows (the pairs), a partitioned sort
of the distinct (user, item) pairs (only with ``l0``), one aggregation by
item; for text columns one regular-expression test per value.  10 million rows
(2 shared cores, CPU seconds; ``benchmarks/topk_engines.py``): about 3.2 s with
``l0`` for integer columns in Parquet; 5.4 s for the same rows as CSV text
(7.5 to 7.7 s before integer-valued text was grouped as integers), 6.2 to 6.6 s
under the default memory limit (peak 0.6 GB instead of 1.2 GB).
"""

from __future__ import annotations

import os
import tempfile

from privloss.analytics.bounding import (LANE_BITS, LANE_MASK, MIX_MULTIPLIER, MIX_SHIFT,
                                         CANONICAL_INTEGER, ContributionBounds, SelectionKey,
                                         is_canonical_integer, text_code_digits)
from privloss.analytics.engines._result import EngineResult, check_columns, exact_files
from privloss.analytics.errors import computation_failed, log_engine_error
from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       SparkFrameInput, describe_input)

__all__ = ["DEFAULT_MEMORY_LIMIT", "aggregate", "check_schema", "check_select", "column_kind",
           "histogram_sql", "memory_settings"]

#: Memory limit of privloss's own DuckDB connections: beyond it DuckDB spills to
#: disk, so peak memory stays flat as the distinct (user, item) pairs grow
#: (docs/benchmarks.md: 50 million rows with l0 under 1 GB).
DEFAULT_MEMORY_LIMIT = "500MB"
MEMORY_LIMIT_VARIABLE = "PRIVLOSS_DUCKDB_MEMORY_LIMIT"
TEMP_DIRECTORY_VARIABLE = "PRIVLOSS_DUCKDB_TEMP_DIRECTORY"

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER"}


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


def _code_sql(column: str) -> str:
    """``code`` of a non-integer value: md5 prefix of its text (see bounding)."""
    return (f"CAST(('0x' || substr(md5(CAST({column} AS VARCHAR)), 1, {text_code_digits}))"
            f" AS BIGINT)")


def _mix_ctes(name: str, source: str, keep: str, value: str) -> list[str]:
    """CTEs computing ``mix32(value)`` as column ``m`` of CTE ``name``.

    Each step is its own projection so that DuckDB evaluates every intermediate
    once (one nested expression would repeat ``x`` three times per step)."""
    c, mask, shift = MIX_MULTIPLIER, LANE_MASK, MIX_SHIFT
    return [
        f"{name}_0 AS (SELECT {keep}, {value} AS x FROM {source})",
        f"{name}_1 AS (SELECT {keep}, ((xor((x >> {shift}), x) * {c}) & {mask}) AS x "
        f"FROM {name}_0)",
        f"{name}_2 AS (SELECT {keep}, ((xor((x >> {shift}), x) * {c}) & {mask}) AS x "
        f"FROM {name}_1)",
        f"{name} AS (SELECT {keep}, xor((x >> {shift}), x) AS m FROM {name}_2)",
    ]


def _normalized_columns(role: str, column: str, kind: str) -> tuple[str, str, list[str]]:
    """(first projection, second projection, grouping keys) encoding one column.

    ``integer``: the value as BIGINT (``{role}_n``).  ``text``: canonical
    integer text (:data:`~privloss.analytics.bounding.CANONICAL_INTEGER`) as
    BIGINT in ``{role}_n``, any other text in ``{role}_t`` (the other one null).
    A canonical text is exactly the text of its BIGINT, so grouping on the pair
    groups on the text, with integers where the text is an integer.  ``other``:
    the value as it is, in ``{role}_t``."""
    if kind == "integer":
        return f"CAST({column} AS BIGINT) AS {role}_n", f"{role}_n", [f"{role}_n"]
    if kind == "other":
        return f"{column} AS {role}_t", f"{role}_t", [f"{role}_t"]
    pattern = "'" + CANONICAL_INTEGER + "'"   # our constant (no quote in it), not caller text
    return (f"{column} AS {role}_v, regexp_full_match({column}, {pattern}) AS {role}_k",
            f"CASE WHEN {role}_k THEN CAST({role}_v AS BIGINT) END AS {role}_n, "
            f"CASE WHEN {role}_k THEN NULL ELSE {role}_v END AS {role}_t",
            [f"{role}_n", f"{role}_t"])


def _pairs_ctes(source: str, user: str, item: str, kinds: tuple[str, str]) -> list[str]:
    """``pairs(<user keys>, <item keys>, c)``: rows per distinct (user, item),
    grouped on the encodings of :func:`_normalized_columns`."""
    first, second, keys = zip(_normalized_columns("user", user, kinds[0]),
                              _normalized_columns("item", item, kinds[1]))
    keys = ", ".join(keys[0] + keys[1])
    return [f"norm_0 AS (SELECT {', '.join(first)} FROM {source})",
            f"norm_1 AS (SELECT {', '.join(second)} FROM norm_0)",
            f"pairs AS (SELECT {keys}, count(*) AS c FROM norm_1 GROUP BY {keys})"]


def _label_sql(role: str, kind: str) -> str:
    """The original value of a normalized column (the text, for ``text``)."""
    if kind == "text":
        return f"coalesce({role}_t, CAST({role}_n AS VARCHAR))"
    return f"{role}_n" if kind == "integer" else f"{role}_t"


def _code_of(role: str, kind: str) -> str:
    """``code`` of a normalized column (bounding): the integer for integer
    columns and canonical integer text, md5 of the text otherwise."""
    if kind == "integer":
        return f"{role}_n"
    if kind == "text":
        return f"CASE WHEN {role}_n IS NOT NULL THEN {role}_n ELSE {_code_sql(role + '_t')} END"
    text = f"CAST({role}_t AS VARCHAR)"
    return (f"CASE WHEN regexp_full_match({text}, '{CANONICAL_INTEGER}') "
            f"THEN CAST({text} AS BIGINT) ELSE {_code_sql(role + '_t')} END")


def _selection_ctes(key: SelectionKey, l0: int, kinds: tuple[str, str]) -> list[str]:
    """CTEs (after ``pairs``) ending in ``sel(<item keys>, c)``: the pairs the
    users keep.  Users are partitioned by their exact value (the normalized
    keys), never by their code; ties as in :mod:`~privloss.analytics.bounding`."""
    user_keys = _normalized_columns("user", "", kinds[0])[2]
    item_keys = _normalized_columns("item", "", kinds[1])[2]
    carried = ", ".join(user_keys + item_keys + ["c", "uc", "ic"])
    ctes = [f"coded AS (SELECT {', '.join(user_keys + item_keys)}, c, "
            f"{_code_of('user', kinds[0])} AS uc, {_code_of('item', kinds[1])} AS ic FROM pairs)"]
    k, mask, bits = key.round_keys, LANE_MASK, LANE_BITS
    ctes += _mix_ctes("ma", "coded", carried, f"(((uc & {mask}) + {k[0]}) & {mask})")
    ctes += _mix_ctes("mb", "ma", carried,
                      f"((xor(m, ((uc >> {bits}) & {mask})) + {k[1]}) & {mask})")
    ctes += _mix_ctes("mc", "mb", carried, f"xor(((m + (ic & {mask})) & {mask}), {k[2]})")
    ctes += _mix_ctes("md", "mc", carried,
                      f"((xor(m, ((ic >> {bits}) & {mask})) + {k[3]}) & {mask})")
    # the tie rule (bounding): integer items are their code, so (m, ic) is a total
    # order; other text after canonical integer text (null item_t), then by label
    order = "m, ic" if kinds[1] == "integer" else "m, ic, item_t ASC NULLS LAST"
    ctes.append(f"sel AS (SELECT {', '.join(item_keys)}, c FROM md QUALIFY row_number() "
                f"OVER (PARTITION BY {', '.join(user_keys)} ORDER BY {order}) <= {l0})")
    return ctes


def column_kind(type_name: str) -> str:
    """``integer``, ``text`` or ``other``: how the SQL encodes a column of this
    DuckDB type (see :func:`histogram_sql`)."""
    name = str(type_name).upper()
    if name in _INTEGER_TYPES:
        return "integer"
    return "text" if name == "VARCHAR" else "other"


def histogram_sql(source: str, user_column: str, item_column: str, bounds: ContributionBounds,
                  key: SelectionKey | None, limit: int | None, *, user_is_integer: bool,
                  item_is_integer: bool, user_kind: str | None = None,
                  item_kind: str | None = None) -> str:
    """The whole bounded-histogram query over the table or view ``source``.

    ``aggregate`` calls it with its own names only (the view ``privloss_source``
    with columns ``u``, ``i``): no text from the caller enters the SQL.  Rows
    with a null user id or a null item are dropped first.  ``*_kind``:
    ``integer``, ``text`` (VARCHAR) or ``other`` (:func:`column_kind`); when
    None, ``*_is_integer`` decides between ``integer`` and ``other``."""
    kinds = (user_kind or ("integer" if user_is_integer else "other"),
             item_kind or ("integer" if item_is_integer else "other"))
    for name, kind in zip(("user_kind", "item_kind"), kinds):
        if kind not in ("integer", "text", "other"):
            raise ValueError(f"{name} must be 'integer', 'text' or 'other', got {kind!r}")
    user, item = quote_identifier(user_column), quote_identifier(item_column)
    ctes = [f"clean AS (SELECT {user}, {item} FROM {source} "
            f"WHERE {user} IS NOT NULL AND {item} IS NOT NULL)"]
    ctes += _pairs_ctes("clean", user, item, kinds)
    if bounds.l0 is not None:
        if key is None:
            raise ValueError("a SelectionKey is needed when l0 is set")
        ctes += _selection_ctes(key, bounds.l0, kinds)
    item_keys = ", ".join(_normalized_columns("item", item, kinds[1])[2])
    counted = "pairs" if bounds.l0 is None else "sel"
    ctes.append(f"hist AS MATERIALIZED (SELECT {_label_sql('item', kinds[1])} AS item, "
                f"sum(least(c, {bounds.linf})) AS cnt FROM {counted} GROUP BY {item_keys})")
    limit_sql = f" LIMIT {int(limit)}" if limit is not None else ""
    ctes.append(f"head AS (SELECT item, cnt FROM hist ORDER BY cnt DESC, item ASC{limit_sql})")
    ctes.append("stats AS (SELECT count(*) AS n FROM hist)")
    return ("WITH " + ",\n".join(ctes) + "\nSELECT stats.n, head.item, head.cnt "
            "FROM stats LEFT JOIN head ON TRUE ORDER BY head.cnt DESC, head.item ASC")


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
        error_id = log_engine_error(error, f"reading {describe_input(inp)}")
        rule = "" if inp.format == "parquet" else \
            " (UTF-8, a header row, every row with the header's number of fields)"
        raise ValueError(f"could not read {describe_input(inp)}: it is not a well-formed "
                         f"{inp.format.upper()} file{rule}; error id {error_id} (the "
                         f"reader's message is in the privloss.engine log)") from None


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
    the private spill directory)."""

    def __init__(self):
        self.relation = None
        self.connection = None
        self.snapshots = []
        self.spill = None

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


def _open(duckdb, inp, source: _Source, scan: bool = False) -> None:
    """Fill ``source`` for a resolved input (schema errors: ValueError/TypeError);
    ``scan``: parse every row of CSV / TSV files now (:func:`_file_relation`)."""
    if isinstance(inp, RelationInput):
        source.relation = inp.relation
        return
    if isinstance(inp, SparkFrameInput):
        raise TypeError("a Spark DataFrame needs engine='spark'")
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
    if isinstance(inp, FileInput):
        names = _files_of(source, inp)
        source.connection = _locked_connection(duckdb, names, source.spill_directory())
        source.relation = _file_relation(duckdb, source.connection, inp, names, scan)
        return
    source.connection = _locked_connection(duckdb, (), source.spill_directory())
    source.relation = _frame_relation(source.connection, inp)


def check_schema(inp, user_column: str, item_column: str) -> None:
    """Bind the input and check both columns exist: errors a caller can raise
    before charging a release.  No aggregate is computed; CSV / TSV files are
    parsed whole, so a malformed row fails here wherever it is."""
    duckdb = import_duckdb()
    source = _Source()
    try:
        _open(duckdb, inp, source, scan=True)
        check_columns(list(source.relation.columns), user_column, item_column,
                      describe_input(inp))
    finally:
        source.close()


def aggregate(inp, user_column: str, item_column: str, bounds: ContributionBounds,
              key: SelectionKey | None, limit: int | None) -> EngineResult:
    """Run the bounded histogram on a resolved input; see the module docstring.

    Errors: ``ValueError``/``TypeError`` for what the schema shows (missing
    column, a query that is not one SELECT, an unreadable file format);
    :class:`~privloss.analytics.errors.ComputationFailed` (fixed text, the
    engine's message logged) for any failure while the rows are computed."""
    duckdb = import_duckdb()
    source = _Source()
    try:
        _open(duckdb, inp, source)
        relation = source.relation
        check_columns(list(relation.columns), user_column, item_column, describe_input(inp))
        # our SQL sees fixed names only: the caller's column names stay in the API
        projected = relation.select(duckdb.ColumnExpression(user_column).alias("u"),
                                    duckdb.ColumnExpression(item_column).alias("i"))
        projected, floats = floats_as_integer_text(duckdb, projected, ("u", "i"))
        kinds = [column_kind(kind) for kind in projected.types]
        sql = histogram_sql("privloss_source", "u", "i", bounds, key, limit,
                            user_is_integer=kinds[0] == "integer",
                            item_is_integer=kinds[1] == "integer", user_kind=kinds[0],
                            item_kind=kinds[1])
        try:
            rows = projected.query("privloss_source", sql).fetchall()
        except duckdb.Error as error:
            raise computation_failed(error, f"duckdb, {describe_input(inp)}") from None
    finally:
        source.close()
    total = int(rows[0][0]) if rows else 0
    kept = [row for row in rows if row[2] is not None]
    labels = [number_label(row[1]) if "i" in floats else row[1] for row in kept]
    return EngineResult(labels, [int(row[2]) for row in kept], total)

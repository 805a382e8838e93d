"""Spark engine: the DuckDB query's semantics with the PySpark DataFrame API.

Definition
----------
Same steps as :mod:`privloss.analytics.engines.duckdb_engine`: ``groupBy(u, i)``
counts; the selection key of :mod:`privloss.analytics.bounding` as ``long``
column arithmetic (all values below ``2^59``, so ANSI mode never overflows);
``row_number()`` over ``Window.partitionBy(u).orderBy(key, item_code, tie)``
kept ``<= l0``; ``sum(least(c, linf))`` by item; ordered by count desc then
item and limited to ``top + 1`` rows.  Rows with a null user id or a null item
are dropped first.  The aggregated histogram is cached once and read twice (its
number of rows, kept inside the library, and the head); nothing else is
collected.  Files are read by their exact names; a ``SqlQuery`` must parse as
one query (Spark's parser, :func:`check_single_query`); Spark cannot confine a
query to the registered tables, so SQL text is trusted operator input here.
Failures while computing become
:class:`~privloss.analytics.errors.ComputationFailed`.

Results equal DuckDB's for the same data and seed because the key, the codes
(integer value, canonical integer text as its integer, else ``md5`` of the
text: the one per-value rule of :mod:`~privloss.analytics.bounding`, tested
here with ``rlike`` on Java's anchored form of the same pattern), the tie rules
and the sort orders (binary UTF-8 strings, numeric integers) are the same; CSV
files are read as text with RFC 4180 quoting (``escape='"'``) as DuckDB reads
them (but Spark reads a line at a time: no line break inside a quoted field).
Spark groups text as text (DuckDB groups integer-valued text as BIGINT); that
changes the speed only, never the result.

Session: the active ``SparkSession`` (or the one of a Spark DataFrame /
``SqlQuery.connection``); otherwise ``SparkSession.builder.getOrCreate()``,
local mode unless a master is configured.

Privacy guarantee
-----------------
See :mod:`privloss.analytics.bounding`.

Citation
--------
PySpark ``pyspark.sql`` API; Wilson et al. 2020.

Runtime
-------
Two shuffles (pairs; window by user) plus one by item; Spark start-up is
seconds, so use DuckDB below tens of millions of rows.
"""

from __future__ import annotations

import os

from privloss.analytics.bounding import (CANONICAL_INTEGER, LANE_BITS, LANE_MASK,
                                         MIX_MULTIPLIER, MIX_SHIFT, ContributionBounds,
                                         SelectionKey, text_code_digits)
from privloss.analytics.engines._result import EngineResult, check_columns, exact_files
from privloss.analytics.engines.duckdb_engine import number_label
from privloss.analytics.errors import computation_failed
from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       SparkFrameInput, describe_input)

__all__ = ["aggregate", "check_schema", "check_single_query", "get_session"]

_INTEGER_TYPES = {"ByteType", "ShortType", "IntegerType", "LongType"}


def _import_spark():
    try:
        from pyspark.sql import SparkSession, Window, functions
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the Spark engine needs the 'pyspark' package (and Java 17+): "
                          "install the 'spark' extra (pip install '.[spark]' from a privloss checkout)") from error
    return SparkSession, Window, functions


def get_session():
    """The active SparkSession, else ``builder.getOrCreate()`` (local if unset)."""
    spark_session, _, _ = _import_spark()
    session = spark_session.getActiveSession()
    if session is not None:
        return session
    # a library's own session stays quiet: errors only, no console progress bars
    builder = (spark_session.builder.appName("privloss").config("spark.log.level", "ERROR")
               .config("spark.ui.showConsoleProgress", "false"))
    return builder.master("local[*]").getOrCreate() if _no_master_configured() \
        else builder.getOrCreate()


def _no_master_configured() -> bool:
    return "MASTER" not in os.environ and "spark.master" not in \
        os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def check_single_query(session, text: str) -> None:
    """Refuse anything but one query: Spark's own parser must read ``text`` as a
    single statement whose plan is a query (not a command such as INSERT,
    CREATE, SET, CACHE, or a parsed DDL/DML statement)."""
    if not hasattr(session, "_jsparkSession"):     # Spark Connect: no parser to ask
        raise ValueError("SqlQuery on Spark needs a classic SparkSession (its SQL parser checks "
                         "that the text is one query); pass a DataFrame instead")
    jvm = session.sparkContext._jvm
    try:
        plan = session._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except _spark_error_types() as error:
        raise ValueError(f"the SQL query does not parse as one Spark SQL statement: "
                         f"{str(error).splitlines()[0]}") from None
    logical = "org.apache.spark.sql.catalyst.plans.logical."
    for name in ("Command", "ParsedStatement"):
        if jvm.java.lang.Class.forName(logical + name).isInstance(plan):
            raise ValueError(f"the SQL query must be a SELECT query, got a "
                             f"{plan.nodeName()} statement")


def _frame(inp, snapshots: list):
    if isinstance(inp, SparkFrameInput):
        return inp.frame
    if isinstance(inp, RelationInput):
        raise TypeError("a DuckDB relation needs engine='duckdb' (or pass a file path, a "
                        "frame or a SqlQuery)")
    if isinstance(inp, QueryInput):
        session = inp.connection if inp.connection is not None else get_session()
        if not hasattr(session, "sql") or not hasattr(session, "createDataFrame"):
            raise TypeError(f"SqlQuery.connection must be a SparkSession for engine='spark', "
                            f"got {type(session).__name__}")
        check_single_query(session, inp.text)
        for name, table in inp.tables:
            _file_frame(session, table, snapshots).createOrReplaceTempView(name)
        return session.sql(inp.text)
    session = get_session()
    if isinstance(inp, FileInput):
        return _file_frame(session, inp, snapshots)
    return _frame_from_python(session, inp)


def _file_frame(session, inp: FileInput, snapshots: list):
    """A DataFrame over exactly the input's files (glob characters never expanded)."""
    names, snapshot = exact_files(inp)
    if snapshot is not None:
        snapshots.append(snapshot)
    if inp.format == "parquet":
        return session.read.parquet(*names)
    return session.read.csv(list(names), header=True, sep="\t" if inp.format == "tsv" else ",",
                            quote='"', escape='"', inferSchema=False)


def _frame_from_python(session, inp: FrameInput):
    frame = inp.frame
    if inp.kind == "polars-lazy":
        frame = frame.collect()
    if inp.kind in ("polars", "polars-lazy"):
        frame = frame.to_arrow()
    if inp.kind == "arrow" and type(frame).__name__ == "RecordBatch":
        import pyarrow

        frame = pyarrow.Table.from_batches([frame])
    if inp.kind != "pandas" and _spark_major() < 4:  # Arrow tables need Spark 4
        frame = frame.to_pandas()
    return session.createDataFrame(frame)


def _spark_major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


#: CANONICAL_INTEGER for Java's ``find``: anchored, ``\z`` (``$`` would also
#: match before a final line break, and Spark's cast trims spaces and breaks).
_CANONICAL_JAVA = "^(?:" + CANONICAL_INTEGER + ")\\z"


def _is_integer_text(column):
    """Boolean column: the value's text is canonical integer text (bounding)."""
    return column.cast("string").rlike(_CANONICAL_JAVA)


def integral_as_text(functions, column):
    """Spark's :func:`~privloss.analytics.engines.duckdb_engine.floats_as_integer_text`
    for one FLOAT / DOUBLE key column: an integral finite value below 9.2e18 as
    its integer text, any other as Spark's text of the value."""
    f = functions
    integral = ~f.isnan(column) & (f.abs(column) < f.lit(9.2e18)) \
        & (column == f.floor(column).cast("double"))
    return f.when(integral, column.cast("long").cast("string")).otherwise(column.cast("string"))


#: Spark types of key columns written as integer text where integral (audit (c))
FLOAT_TYPES = ("FloatType", "DoubleType")


def _code(functions, column, is_integer: bool):
    """``code`` (bounding): the integer for integer columns and canonical integer
    text, else the md5 prefix of the text."""
    if is_integer:
        return column.cast("long")
    text = column.cast("string")
    digest = functions.md5(text)
    return functions.when(_is_integer_text(column), text.cast("long")).otherwise(
        functions.conv(functions.substring(digest, 1, text_code_digits), 16, 10).cast("long"))


def _mix(functions, frame, value, target: str):
    """``frame`` with column ``target = mix32(value)`` (one projection per step)."""
    f = functions
    frame = frame.withColumn("_x", value)
    for _ in range(2):
        frame = frame.withColumn(
            "_x", (f.shiftright(f.col("_x"), MIX_SHIFT).bitwiseXOR(f.col("_x"))
                   * f.lit(MIX_MULTIPLIER).cast("long")).bitwiseAND(LANE_MASK))
    frame = frame.withColumn(target, f.shiftright(f.col("_x"), MIX_SHIFT).bitwiseXOR(f.col("_x")))
    return frame.drop("_x")


def _keyed(functions, pairs, key: SelectionKey, user_is_integer: bool, item_is_integer: bool):
    """``pairs`` with ``ic`` (item code) and ``sk`` (selection key) columns."""
    f = functions
    k = [f.lit(value).cast("long") for value in key.round_keys]
    uc, ic = f.col("uc"), f.col("ic")

    def high(code):
        return f.shiftright(code, LANE_BITS).bitwiseAND(LANE_MASK)

    frame = pairs.withColumn("uc", _code(f, f.col("u"), user_is_integer)) \
                 .withColumn("ic", _code(f, f.col("i"), item_is_integer))
    frame = _mix(f, frame, (uc.bitwiseAND(LANE_MASK) + k[0]).bitwiseAND(LANE_MASK), "_a")
    frame = _mix(f, frame, (f.col("_a").bitwiseXOR(high(uc)) + k[1]).bitwiseAND(LANE_MASK), "_a")
    frame = _mix(f, frame, ((f.col("_a") + ic.bitwiseAND(LANE_MASK)).bitwiseAND(LANE_MASK))
                 .bitwiseXOR(k[2]), "_b")
    frame = _mix(f, frame, (f.col("_b").bitwiseXOR(high(ic)) + k[3]).bitwiseAND(LANE_MASK), "sk")
    return frame.drop("uc", "_a", "_b")


def _spark_error_types():
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JJavaError)


def _open(inp, user_column: str, item_column: str, snapshots: list):
    """The input frame, its columns checked (schema errors: ValueError/TypeError)."""
    what = describe_input(inp)
    try:
        frame = _frame(inp, snapshots)
        columns = frame.columns
    except _spark_error_types() as error:
        raise ValueError(f"could not read {what}: {str(error).splitlines()[0]}") from None
    check_columns(columns, user_column, item_column, what)
    return frame


def check_schema(inp, user_column: str, item_column: str) -> None:
    """Analyse the input (no rows are computed) and check both columns exist."""
    _import_spark()
    snapshots: list = []
    try:
        _open(inp, user_column, item_column, snapshots)
    finally:
        for snapshot in snapshots:
            snapshot.close()


def aggregate(inp, user_column: str, item_column: str, bounds: ContributionBounds,
              key: SelectionKey | None, limit: int | None) -> EngineResult:
    """Run the bounded histogram on a resolved input; see the module docstring.

    Errors as :func:`privloss.analytics.engines.duckdb_engine.aggregate`: schema
    problems are ``ValueError``/``TypeError``; failures while computing become
    :class:`~privloss.analytics.errors.ComputationFailed` (engine text logged)."""
    _, window, f = _import_spark()
    errors = _spark_error_types()
    what = describe_input(inp)
    snapshots: list = []
    try:
        frame = _open(inp, user_column, item_column, snapshots)
        types = {field.name: type(field.dataType).__name__ for field in frame.schema.fields}
        quoted = {name: f.col("`" + name.replace("`", "``") + "`")
                  for name in (user_column, item_column)}
        float_items = types[item_column] in FLOAT_TYPES
        keys = []
        for name, alias in ((user_column, "u"), (item_column, "i")):
            if types[name] in FLOAT_TYPES:   # one null made an integer column float64
                keys.append(integral_as_text(f, quoted[name]).alias(alias))
                types[name] = "StringType"
            else:
                keys.append(quoted[name].alias(alias))
        pairs = frame.select(*keys) \
                     .where(f.col("u").isNotNull() & f.col("i").isNotNull()) \
                     .groupBy("u", "i").agg(f.count(f.lit(1)).alias("c"))
        if bounds.l0 is not None:
            if key is None:
                raise ValueError("a SelectionKey is needed when l0 is set")
            keyed = _keyed(f, pairs, key, types[user_column] in _INTEGER_TYPES,
                           types[item_column] in _INTEGER_TYPES)
            # the tie rule (bounding): (key, code), then text before canonical
            # integer text (whose code is itself), then the label
            ties = [_is_integer_text(f.col("i")).asc()] \
                if types[item_column] == "StringType" else []
            order = window.partitionBy("u").orderBy(f.col("sk").asc(), f.col("ic").asc(),
                                                    *ties, f.col("i").asc_nulls_last())
            selected = keyed.withColumn("_r", f.row_number().over(order)) \
                            .where(f.col("_r") <= bounds.l0)
        else:
            selected = pairs
        hist = selected.groupBy("i").agg(
            f.sum(f.least(f.col("c"), f.lit(bounds.linf).cast("long"))).alias("cnt")) \
            .withColumnRenamed("i", "item")
        try:
            hist = hist.persist()
            try:
                total = int(hist.count())
                head = hist.orderBy(f.col("cnt").desc(), f.col("item").asc_nulls_last())
                if limit is not None:
                    head = head.limit(int(limit))
                rows = head.select("item", "cnt").collect()
            finally:
                hist.unpersist()
        except errors as error:
            raise computation_failed(error, f"spark, {what}") from None
    finally:
        for snapshot in snapshots:
            snapshot.close()
    labels = [number_label(row["item"]) if float_items else row["item"] for row in rows]
    return EngineResult(labels, [int(row["cnt"]) for row in rows], total)

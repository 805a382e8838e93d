"""Spark engine: the DuckDB query's semantics with the PySpark DataFrame API.

Definition
----------
Same steps as :mod:`privloss.analytics.engines.duckdb_engine`: ``groupBy(u, i)``
counts; the selection key of :mod:`privloss.analytics.bounding` as ``long``
column arithmetic (all values below ``2^59``, so ANSI mode never overflows);
``row_number()`` over ``Window.partitionBy(u).orderBy(key, item_code, i)``
kept ``<= l0``; ``sum(least(c, linf))`` by item; ordered by count desc then
item and limited to ``top + 1`` rows.  The aggregated histogram is cached
once and read twice (statistics, head); nothing else is collected.

Results equal DuckDB's for the same data and seed because the key, the codes
(integer value or ``md5`` of the text), the tie rules and the sort orders
(binary UTF-8 strings, numeric integers) are the same; CSV files are read as
text with RFC 4180 quoting (``escape='"'``) as DuckDB reads them.

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

from privloss.analytics.bounding import (LANE_BITS, LANE_MASK, MIX_MULTIPLIER, MIX_SHIFT,
                                         ContributionBounds, SelectionKey, text_code_digits)
from privloss.analytics.engines._result import EngineResult, check_columns, raise_for_stats
from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       SparkFrameInput, describe_input)

__all__ = ["aggregate", "get_session"]

_INTEGER_TYPES = {"ByteType", "ShortType", "IntegerType", "LongType"}


def _import_spark():
    try:
        from pyspark.sql import SparkSession, Window, functions
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the Spark engine needs the 'pyspark' package (and Java 17+): "
                          "pip install 'privloss[spark]'") from error
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


def _frame(inp):
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
        return session.sql(inp.text)
    session = get_session()
    if isinstance(inp, FileInput):
        path = str(inp.path)
        if inp.format == "parquet":
            return session.read.parquet(path)
        return session.read.csv(path, header=True, sep="\t" if inp.format == "tsv" else ",",
                                quote='"', escape='"', inferSchema=False)
    return _frame_from_python(session, inp)


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


def _code(functions, column, is_integer: bool):
    if is_integer:
        return column.cast("long")
    digest = functions.md5(column.cast("string"))
    return functions.conv(functions.substring(digest, 1, text_code_digits), 16, 10).cast("long")


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


def aggregate(inp, user_column: str, item_column: str, bounds: ContributionBounds,
              key: SelectionKey | None, limit: int | None) -> EngineResult:
    """Run the bounded histogram on a resolved input; see the module docstring."""
    _, window, f = _import_spark()
    errors = _spark_error_types()
    what = describe_input(inp)
    try:
        frame = _frame(inp)
        columns = frame.columns
    except errors as error:
        raise ValueError(f"could not read {what}: {str(error).splitlines()[0]}") from None
    check_columns(columns, user_column, item_column, what)
    types = {field.name: type(field.dataType).__name__ for field in frame.schema.fields}
    quoted = {name: f.col("`" + name.replace("`", "``") + "`") for name in (user_column,
                                                                           item_column)}
    pairs = frame.select(quoted[user_column].alias("u"), quoted[item_column].alias("i")) \
                 .groupBy("u", "i").agg(f.count(f.lit(1)).alias("c"))
    if bounds.l0 is not None:
        if key is None:
            raise ValueError("a SelectionKey is needed when l0 is set")
        keyed = _keyed(f, pairs, key, types[user_column] in _INTEGER_TYPES,
                       types[item_column] in _INTEGER_TYPES)
        order = window.partitionBy("u").orderBy(f.col("sk").asc(), f.col("ic").asc(),
                                                f.col("i").asc_nulls_last())
        selected = keyed.withColumn("_r", f.row_number().over(order)) \
                        .where(f.col("_r") <= bounds.l0)
    else:
        selected = pairs
    hist = selected.groupBy("i").agg(
        f.sum(f.least(f.col("c"), f.lit(bounds.linf).cast("long"))).alias("cnt"),
        f.max(f.col("u").isNull().cast("int")).alias("null_user")).withColumnRenamed("i", "item")
    hist = hist.persist()
    try:
        stats = hist.agg(f.count(f.lit(1)).alias("n"),
                         f.coalesce(f.max("null_user"), f.lit(0)).alias("nu"),
                         f.coalesce(f.max(f.col("item").isNull().cast("int")), f.lit(0))
                         .alias("ni")).collect()[0]
        raise_for_stats(int(stats["n"]), bool(stats["nu"]), bool(stats["ni"]), user_column,
                        item_column, what)
        head = hist.orderBy(f.col("cnt").desc(), f.col("item").asc_nulls_last())
        if limit is not None:
            head = head.limit(int(limit))
        rows = head.select("item", "cnt").collect()
    except errors as error:
        raise ValueError(f"could not compute the histogram of {what}: "
                         f"{str(error).splitlines()[0]}") from None
    finally:
        hist.unpersist()
    return EngineResult([row["item"] for row in rows], [int(row["cnt"]) for row in rows],
                        int(stats["n"]))

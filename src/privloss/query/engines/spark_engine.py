"""The Spark engine: a :class:`~privloss.query.plan.QueryPlan` compiled to the
same bounded SQL as the DuckDB engine, in Spark SQL.

Definition
----------
:func:`run` builds the plan's source as a DataFrame (the active SparkSession,
else a local one), projects the caller's columns onto ``u``, ``g0..``,
``v0..`` through the DataFrame API, registers it as a temporary view with a
random name and runs :func:`~privloss.query.engines._sql.bounded_sql` in the
Spark dialect over it.  Every operation is on BIGINT values below ``2^59`` or
exact doubles, so for the same plan and seed Spark returns exactly what
DuckDB returns (CSV files are read as text by both; integer and string
columns agree).  Quantile bins come from one extra query per quantile
column over the cached kept rows.

Privacy guarantee
-----------------
None by itself (exact bounded statistics); see :mod:`privloss.query.plan`.

Citation
--------
Apache Spark SQL; Wilson et al., PoPETs 2020.

Runtime
-------
As the DuckDB engine's plan, distributed: one scan, a shuffle by unit for the
group choice, one by group for the statistics.
"""

from __future__ import annotations

import os
import secrets

from privloss.query.engines._codes import check_columns, text_ok
from privloss.query.engines._files import exact_files
from privloss.query.engines._sql import SPARK, bounded_sql
from privloss.query.errors import computation_failed
from privloss.query.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                   SparkFrameInput, SparkTable, describe_input,
                                   resolve_input)
from privloss.query.plan import ROW_SEED_OFFSET, GroupStatistics, QueryPlan

__all__ = ["check", "run", "check_single_query", "get_session", "columns_of"]

_KINDS = {"ByteType": "integer", "ShortType": "integer", "IntegerType": "integer",
          "LongType": "integer", "StringType": "text", "FloatType": "numeric",
          "DoubleType": "numeric", "DecimalType": "numeric"}


def _kind(data_type) -> str:
    return _KINDS.get(type(data_type).__name__, "other")


def _type_name(data_type) -> str:
    # the DuckDB-style names check_columns understands
    return {"integer": "BIGINT", "text": "VARCHAR", "numeric": "DOUBLE"}.get(
        _kind(data_type), type(data_type).__name__)


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
    if isinstance(inp, SparkTable):
        return get_session().table(inp.name)
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


def _spark_error_types():
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JJavaError)


def integral_as_text(functions, column):
    """Spark's :func:`~privloss.query.engines.duckdb_engine.floats_as_integer_text`
    for one FLOAT / DOUBLE key column: an integral finite value below 9.2e18 as
    its integer text, any other as Spark's text of the value."""
    f = functions
    integral = ~f.isnan(column) & (f.abs(column) < f.lit(9.2e18)) \
        & (column == f.floor(column).cast("double"))
    return f.when(integral, column.cast("long").cast("string")).otherwise(column.cast("string"))


#: Spark types of key columns written as integer text where integral (audit (c))
FLOAT_TYPES = ("FloatType", "DoubleType")


def _joined_frame(plan: QueryPlan, inp, snapshots: list, views: list):
    """The plan's joins (:mod:`privloss.query.joins`) as one DataFrame named as
    the plan names its columns: every table projected onto our own names,
    registered as temporary views (``views``, dropped by the caller), joined by
    :func:`~privloss.query.engines._sql.joined_sql` in Spark SQL."""
    from privloss.query.engines.duckdb_joins import (internal_joins, join_statement,
                                                     joined_inputs, output_names)

    _, _, functions = _import_spark()
    frames = [_frame(item, snapshots) for item in joined_inputs(plan, inp, spark=True)]
    base_fields = frames[0].schema.fields
    base_internal, internal, joins, projections = internal_joins(
        plan, {f.name: _type_name(f.dataType) for f in base_fields},
        [frame.columns for frame in frames[1:]],
        [[_type_name(f.dataType) for f in frame.schema.fields] for frame in frames[1:]])
    prefix = f"privloss_join_{secrets.token_hex(8)}"
    renamed = {}
    for k, (frame, projection) in enumerate(zip(frames, projections)):
        view = f"{prefix}_t{k}"
        frame.select(*[functions.col("`" + column.replace("`", "``") + "`").alias(name)
                       for column, name in projection]).createOrReplaceTempView(view)
        views.append(view)
        renamed[f"privloss_t{k}"] = view
    import dataclasses
    joins = [dataclasses.replace(join, view=renamed[join.view]) for join in joins]
    joined = frames[0].sparkSession.sql(join_statement(plan, SPARK, f"{prefix}_t0",
                                                       base_internal, internal, joins))
    return joined.select(*[functions.col(internal[name]).alias(name)
                           for name in output_names(plan)])


def _opened(plan: QueryPlan, snapshots: list, views: list | None = None):
    """(resolved input, the frame projected onto u, g.., v.., its kinds, the key
    columns written as integer text)."""
    _, _, functions = _import_spark()
    inp = resolve_input(plan.source)
    try:
        frame = _joined_frame(plan, inp, snapshots, views) if plan.joins else \
            _frame(inp, snapshots)
        fields = frame.schema.fields
    except _spark_error_types() as error:
        raise ValueError(f"could not read {describe_input(inp)}: "
                         f"{str(error).splitlines()[0]}") from None
    check_columns([f.name for f in fields], [_type_name(f.dataType) for f in fields], plan,
                  describe_input(inp), text_ok(inp))
    if plan.where is not None:          # row filters first: 1-stable, before the bounding
        from privloss.query.filters import to_spark
        frame = frame.where(to_spark(plan.where, functions,
                                     {f.name: _type_name(f.dataType) for f in fields}))

    def quoted(name: str):
        return functions.col("`" + name.replace("`", "``") + "`")

    types = {field.name: type(field.dataType).__name__ for field in fields}
    floats = []

    def key(name: str, alias: str):         # a float key column (one null in an integer one)
        if types[name] in FLOAT_TYPES:
            floats.append(alias)
            return integral_as_text(functions, quoted(name)).alias(alias)
        return quoted(name).alias(alias)

    projected = frame.select(
        key(plan.privacy_unit, "u"), *[key(b, f"g{i}") for i, b in enumerate(plan.by)],
        *[quoted(v).alias(f"v{i}") for i, v in enumerate(plan.value_columns)])
    return (inp, projected, [_kind(field.dataType) for field in projected.schema.fields],
            tuple(floats))


def check(plan: QueryPlan) -> None:
    """Analyse the plan's source (no rows computed) and check its columns."""
    snapshots: list = []
    views: list = []
    try:
        _opened(plan, snapshots, views)
    finally:
        for view in views:
            get_session().catalog.dropTempView(view)
        for snapshot in snapshots:
            snapshot.close()


def run(plan: QueryPlan) -> GroupStatistics:
    """As :func:`privloss.query.engines.duckdb_engine.run`, in Spark."""
    from privloss.query.bounding import SelectionKey
    from privloss.query.engines._codes import key_codes_of
    from privloss.query.engines.duckdb_engine import statistics_of

    snapshots: list = []
    views: list = []
    kept = None
    try:
        inp, projected, kinds, floats = _opened(plan, snapshots, views)
        groups = len(plan.by)
        group_integer = groups == 1 and kinds[1] == "integer"
        key_texts = None if plan.keys is None else [tuple(map(str, k)) for k in plan.keys]
        source = f"privloss_plan_{secrets.token_hex(8)}"
        session = projected.sparkSession
        try:
            projected.createOrReplaceTempView(source)
            views.append(source)
            built = bounded_sql(
                SPARK, source, groups=groups,
                value_grids=[plan.grids[v] for v in plan.value_columns],
                value_text=[kind == "text" for kind in kinds[1 + groups:]],
                unit_integer=kinds[0] == "integer", group_integer=group_integer,
                key_codes=key_codes_of(key_texts, group_integer),
                max_groups=plan.bounding.max_groups,
                max_rows=plan.bounding.max_rows_per_group,
                group_key=SelectionKey.from_seed(plan.seed),
                row_key=SelectionKey.from_seed(plan.seed + ROW_SEED_OFFSET),
                quantile_columns=[plan.value_columns.index(c) for c in plan.quantile_columns],
                bins=plan.quantile_bins, top=plan.top,
                rank_thresholds={plan.value_columns.index(c): tuple(t)
                                 for c, t in plan.rank_thresholds.items()})
            kept = session.sql(built.with_clause + "\nSELECT * FROM kept").cache()
            kept_view = source + "_kept"
            kept.createOrReplaceTempView(kept_view)
            views.append(kept_view)
            main = session.sql(built.main.replace("FROM kept", f"FROM {kept_view}")).collect()
            bin_rows = {i: session.sql(sql.replace("FROM kept", f"FROM {kept_view}")).collect()
                        for i, sql in built.bins.items()}
        except _spark_error_types() as error:
            raise computation_failed(error, f"spark, {describe_input(inp)}") from None
        finally:
            if kept is not None:
                kept.unpersist()
            for view in views:
                session.catalog.dropTempView(view)
    except BaseException:
        for view in views:          # a join's views, when the plan failed before running
            get_session().catalog.dropTempView(view)
        raise
    finally:
        for snapshot in snapshots:
            snapshot.close()
    histograms: dict = {}
    for i, rows in bin_rows.items():
        for row in rows:
            histograms.setdefault((i, tuple(row[:groups])), {})[int(row[groups])] = \
                int(row[groups + 1])
    return statistics_of(plan, [tuple(row) for row in main], histograms, floats)


def columns_of(data) -> list:
    """The column names of ``data`` in Spark (no rows computed)."""
    snapshots: list = []
    try:
        return list(_frame(resolve_input(data), snapshots).columns)
    finally:
        for snapshot in snapshots:
            snapshot.close()

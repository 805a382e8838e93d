"""Contribution bounding and per-group aggregation on Spark (same results as DuckDB).

Definition
----------
The steps of :mod:`.engine_duckdb`, as Spark SQL built by
:func:`privloss.analytics.aggregate._sql.bounded_sql` (Spark dialect) over a
temporary view of the input projected onto our own names (``u``, ``g0..``,
``v0..``; the caller's names are backtick-quoted in the projection only).  The
kept rows are cached and read once for the per-group aggregates and once per
quantile column for its bins.  Every operation is on BIGINT below ``2^59`` or
exact doubles, the codes and tie rules are those of DuckDB, so both engines
return the same aggregates for the same data and seed (tested, slow).

Privacy guarantee
-----------------
As :mod:`.engine_duckdb` (exact bounded aggregates; nothing private leaves
except through the mechanisms).

Citation
--------
PySpark ``pyspark.sql``; Wilson et al., PoPETs 2020.

Runtime
-------
Three window sorts after one shuffle by unit (Spark limits the first two
per partition before it), a shuffle by group; Spark start-up is seconds.
"""

from __future__ import annotations

import secrets

from privloss.analytics.aggregate._sql import SPARK, bounded_sql
from privloss.analytics.aggregate.engine_duckdb import (ROW_SEED_OFFSET, _check, _resolved,
                                                        _text_ok, key_codes_of)
from privloss.analytics.bounding import SelectionKey

__all__ = ["bounded_aggregates", "check_schema"]

_KINDS = {"ByteType": "integer", "ShortType": "integer", "IntegerType": "integer",
          "LongType": "integer", "StringType": "text", "FloatType": "numeric",
          "DoubleType": "numeric", "DecimalType": "numeric"}


def _kind(data_type) -> str:
    return _KINDS.get(type(data_type).__name__, "other")


def _quoted(functions, name: str):
    return functions.col("`" + name.replace("`", "``") + "`")


def _open(inp, snapshots: list):
    from privloss.analytics.engines.spark_engine import _frame, _spark_error_types
    from privloss.analytics.inputs import describe_input

    try:
        frame = _frame(inp, snapshots)
        fields = frame.schema.fields
    except _spark_error_types() as error:
        raise ValueError(f"could not read {describe_input(inp)}: "
                         f"{str(error).splitlines()[0]}") from None
    return frame, fields


def _checked(inp, unit, by, value_columns, snapshots):
    from privloss.analytics.inputs import describe_input

    frame, fields = _open(inp, snapshots)
    _check([f.name for f in fields], [_spark_type_name(f.dataType) for f in fields], unit, by,
           value_columns, describe_input(inp), _text_ok(inp))
    return frame


def _spark_type_name(data_type) -> str:
    # the DuckDB-style names _check understands
    return {"integer": "BIGINT", "text": "VARCHAR", "numeric": "DOUBLE"}.get(
        _kind(data_type), type(data_type).__name__)


def check_schema(inp, unit: str, by: tuple, value_columns: tuple) -> None:
    """Analyse the input (no rows computed) and check the columns and types."""
    snapshots: list = []
    try:
        _checked(_resolved(inp), unit, by, value_columns, snapshots)
    finally:
        for snapshot in snapshots:
            snapshot.close()


def bounded_aggregates(inp, *, unit: str, by: tuple, value_columns: tuple, grids: dict,
                       quantile_columns: tuple, bins: int, max_groups: int, max_rows: int,
                       seed: int, key_texts=None) -> list[dict]:
    """As :func:`privloss.analytics.aggregate.engine_duckdb.bounded_aggregates`."""
    from pyspark.sql import functions

    from privloss.analytics.engines.duckdb_engine import number_label
    from privloss.analytics.engines.spark_engine import (FLOAT_TYPES, _spark_error_types,
                                                         integral_as_text)
    from privloss.analytics.errors import computation_failed
    from privloss.analytics.inputs import describe_input

    inp = _resolved(inp)
    snapshots: list = []
    views = []
    kept = None
    try:
        frame = _checked(inp, unit, by, value_columns, snapshots)
        types = {field.name: type(field.dataType).__name__ for field in frame.schema.fields}

        def key(name, alias):     # a float key column (one null in an integer column)
            if types[name] in FLOAT_TYPES:
                return integral_as_text(functions, _quoted(functions, name)).alias(alias)
            return _quoted(functions, name).alias(alias)
        float_groups = [types[b] in FLOAT_TYPES for b in by]
        projected = frame.select(
            key(unit, "u"), *[key(b, f"g{i}") for i, b in enumerate(by)],
            *[_quoted(functions, v).alias(f"v{i}") for i, v in enumerate(value_columns)])
        kinds = [_kind(field.dataType) for field in projected.schema.fields]
        group_integer = len(by) == 1 and kinds[1] == "integer"
        source = f"privloss_aggregate_{secrets.token_hex(8)}"
        session = projected.sparkSession
        try:
            projected.createOrReplaceTempView(source)
            views.append(source)
            built = bounded_sql(
                SPARK, source, groups=len(by), value_grids=[grids[v] for v in value_columns],
                value_text=[kind == "text" for kind in kinds[1 + len(by):]],
                unit_integer=kinds[0] == "integer", group_integer=group_integer,
                key_codes=key_codes_of(key_texts, group_integer), max_groups=max_groups,
                max_rows=max_rows, group_key=SelectionKey.from_seed(seed),
                row_key=SelectionKey.from_seed(seed + ROW_SEED_OFFSET),
                quantile_columns=[value_columns.index(c) for c in quantile_columns],
                bins=bins)
            kept = session.sql(built.with_clause + "\nSELECT * FROM kept").cache()
            kept_view = source + "_kept"
            kept.createOrReplaceTempView(kept_view)
            views.append(kept_view)
            main = session.sql(built.main.replace("FROM kept", f"FROM {kept_view}")).collect()
            bin_rows = {i: session.sql(sql.replace("FROM kept", f"FROM {kept_view}")).collect()
                        for i, sql in built.bins.items()}
        except _spark_error_types() as error:
            raise computation_failed(error, f"spark aggregate, {describe_input(inp)}") \
                from None
        finally:
            if kept is not None:
                kept.unpersist()
            for view in views:
                session.catalog.dropTempView(view)
    finally:
        for snapshot in snapshots:
            snapshot.close()
    groups = len(by)
    histograms = {}
    for i, rows in bin_rows.items():
        for row in rows:
            histograms.setdefault((i, tuple(row[:groups])), {})[int(row[groups])] = \
                int(row[groups + 1])
    out = []
    for row in main:
        row = tuple(row)
        group = row[:groups]
        rest = row[groups + 2:]
        out.append({
            "group": tuple(number_label(value) if is_float else value
                           for value, is_float in zip(group, float_groups)),
            "distinct": int(row[groups]), "rows": int(row[groups + 1]),
            "sum": {v: int(rest[2 * i] or 0) for i, v in enumerate(value_columns)},
            "nonnull": {v: int(rest[2 * i + 1]) for i, v in enumerate(value_columns)},
            "bins": {c: histograms.get((value_columns.index(c), group), {})
                     for c in quantile_columns}})
    return out

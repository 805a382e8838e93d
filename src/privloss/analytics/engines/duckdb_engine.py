"""DuckDB engine: contribution bounding and aggregation in one SQL query.

Definition
----------
One query, run where the data is (file scan, frame scan or the user's
connection)::

    pairs  = SELECT u, i, count(*) AS c ... GROUP BY u, i
    keyed  = pairs + selection key (privloss.analytics.bounding), as BIGINT
             arithmetic in stacked projections (each intermediate computed once)
    sel    = keyed QUALIFY row_number() OVER (PARTITION BY u
                                             ORDER BY key, item_code, i) <= l0
    hist   = SELECT i, sum(least(c, linf)) FROM sel GROUP BY i
    result = hist ORDER BY count DESC, i LIMIT top + 1, plus one row of
             statistics (number of items, null user / null item flags)

Only that result (the top ``d_bar + 1`` rows, or the whole aggregated
histogram when ``top`` is None) is fetched into Python.  Integer columns are
hashed as integers; other columns through ``md5`` of their text.

Privacy guarantee
-----------------
See :mod:`privloss.analytics.bounding`: after the bounding each user changes at
most ``l0`` counts by at most ``linf``.

Citation
--------
DuckDB SQL (window ``QUALIFY``, ``MATERIALIZED`` CTEs); Wilson et al. 2020.

Runtime
-------
One hash aggregation over the rows, one partitioned sort over the distinct
(user, item) pairs (only with ``l0``), one aggregation by item.
"""

from __future__ import annotations

import uuid

from privloss.analytics.bounding import (LIMB_BITS, LIMB_MASK, MODULUS, TOP_LIMB_MASK,
                                         ContributionBounds, SelectionKey, text_code_digits)
from privloss.analytics.engines._result import EngineResult, check_columns, raise_for_stats
from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       SparkFrameInput, describe_input)

__all__ = ["aggregate", "histogram_sql"]

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER"}


def _import_duckdb():
    try:
        import duckdb
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the DuckDB engine needs the 'duckdb' package: "
                          "pip install 'privloss[duckdb]'") from error
    return duckdb


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _code_sql(column: str, is_integer: bool) -> str:
    if is_integer:
        return f"CAST({column} AS BIGINT)"
    return (f"CAST(('0x' || substr(md5(CAST({column} AS VARCHAR)), 1, {text_code_digits}))"
            f" AS BIGINT)")


def _limbs_sql(code: str) -> tuple[str, str, str]:
    return (f"({code} & {LIMB_MASK})", f"(({code} >> {LIMB_BITS}) & {LIMB_MASK})",
            f"(({code} >> {2 * LIMB_BITS}) & {TOP_LIMB_MASK})")


def _key_ctes(key: SelectionKey, user_is_integer: bool, item_is_integer: bool) -> list[str]:
    """CTEs ``k0..k9`` computing the selection key of ``bounding`` per pair.

    Each step is its own projection so that DuckDB evaluates every intermediate
    once (one nested expression would repeat ``t`` in ``t^5`` exponentially)."""
    k = [f"CAST({value} AS BIGINT)" for value in key.round_keys]
    p = MODULUS
    u0, u1, u2 = _limbs_sql("uc")
    i0, i1, i2 = _limbs_sql("ic")
    keep = "u, i, c, ic"
    steps = [
        f"k0 AS (SELECT u, i, c, {_code_sql('u', user_is_integer)} AS uc, "
        f"{_code_sql('i', item_is_integer)} AS ic FROM pairs)",
        f"k1 AS (SELECT {keep}, ({k[0]} + {k[1]} * {u0} + {k[2]} * {u1} + {k[3]} * {u2}) % {p}"
        f" AS t FROM k0)",
        f"k2 AS (SELECT {keep}, t, t * t % {p} AS q FROM k1)",
        f"k3 AS (SELECT {keep}, q * q % {p} * t % {p} AS a FROM k2)",
        f"k4 AS (SELECT {keep}, a, (a + {k[4]} * {i0} + {k[5]} * {i1} + {k[6]} * {i2}) % {p}"
        f" AS t FROM k3)",
        f"k5 AS (SELECT {keep}, a, t, t * t % {p} AS q FROM k4)",
        f"k6 AS (SELECT {keep}, a, q * q % {p} * t % {p} AS b FROM k5)",
        f"k7 AS (SELECT {keep}, (b + {k[7]} * a + {k[8]}) % {p} AS t FROM k6)",
        f"k8 AS (SELECT {keep}, t, t * t % {p} AS q FROM k7)",
        f"k9 AS (SELECT {keep}, q * q % {p} * t % {p} AS sk FROM k8)",
    ]
    return steps


def histogram_sql(source: str, user_column: str, item_column: str, bounds: ContributionBounds,
                  key: SelectionKey | None, limit: int | None, *, user_is_integer: bool,
                  item_is_integer: bool) -> str:
    """The whole bounded-histogram query over the table or view ``source``."""
    ctes = [f"pairs AS (SELECT {quote_identifier(user_column)} AS u, "
            f"{quote_identifier(item_column)} AS i, count(*) AS c FROM {source} GROUP BY 1, 2)"]
    if bounds.l0 is not None:
        if key is None:
            raise ValueError("a SelectionKey is needed when l0 is set")
        ctes += _key_ctes(key, user_is_integer, item_is_integer)
        ctes.append(f"sel AS (SELECT u, i, c FROM k9 QUALIFY row_number() OVER "
                    f"(PARTITION BY u ORDER BY sk, ic, i) <= {bounds.l0})")
    else:
        ctes.append("sel AS (SELECT u, i, c FROM pairs)")
    ctes += [
        f"hist AS MATERIALIZED (SELECT i AS item, sum(least(c, {bounds.linf})) AS cnt, "
        f"bool_or(u IS NULL) AS null_user FROM sel GROUP BY i)",
        "stats AS (SELECT count(*) AS n, coalesce(bool_or(null_user), false) AS nu, "
        "coalesce(bool_or(item IS NULL), false) AS ni FROM hist)",
        "head AS (SELECT item, cnt FROM hist ORDER BY cnt DESC, item ASC"
        + (f" LIMIT {int(limit)})" if limit is not None else ")"),
    ]
    return ("WITH " + ",\n".join(ctes) + "\nSELECT stats.n, stats.nu, stats.ni, head.item, "
            "head.cnt FROM stats LEFT JOIN head ON TRUE ORDER BY head.cnt DESC, head.item ASC")


def _file_relation(duckdb, con, inp: FileInput):
    path = str(inp.path)
    if inp.format == "parquet":
        target = path.rstrip("/") + "/**/*.parquet" if inp.is_directory else path
        scan = f"read_parquet({_quote_literal(target)})"
    else:
        delimiter = "\\t" if inp.format == "tsv" else ","
        scan = (f"read_csv({_quote_literal(path)}, header = true, all_varchar = true, "
                f"delim = E'{delimiter}', quote = '\"', escape = '\"')")
    try:
        return con.sql(f"SELECT * FROM {scan}")
    except duckdb.Error as error:
        raise ValueError(f"could not read {describe_input(inp)}: "
                         f"{str(error).splitlines()[0]}") from None


def _frame_relation(con, inp: FrameInput):
    frame = inp.frame
    if inp.kind == "pandas":
        return con.from_df(frame)
    if inp.kind == "polars-lazy":
        frame = frame.collect()
    if inp.kind in ("polars", "polars-lazy"):
        frame = frame.to_arrow()
    return con.from_arrow(frame)


def _relation(duckdb, inp):
    """(relation, connection to close or None) for a resolved input."""
    if isinstance(inp, RelationInput):
        return inp.relation, None
    if isinstance(inp, SparkFrameInput):
        raise TypeError("a Spark DataFrame needs engine='spark'")
    if isinstance(inp, QueryInput):
        owned = inp.connection is None
        if not owned and not isinstance(inp.connection, duckdb.DuckDBPyConnection):
            raise TypeError(f"SqlQuery.connection must be a DuckDB connection for "
                            f"engine='duckdb', got {type(inp.connection).__name__}")
        con = duckdb.connect() if owned else inp.connection
        try:
            relation = con.sql(inp.text)
        except duckdb.Error as error:
            if owned:
                con.close()
            raise ValueError(f"{describe_input(inp)} failed: {str(error).splitlines()[0]}") \
                from None
        if relation is None:
            if owned:
                con.close()
            raise ValueError(f"{describe_input(inp)} returns no rows: it must be a SELECT")
        return relation, (con if owned else None)
    con = duckdb.connect()
    relation = None
    try:
        if isinstance(inp, FileInput):
            relation = _file_relation(duckdb, con, inp)
        else:
            relation = _frame_relation(con, inp)
    finally:
        if relation is None:  # reading failed: do not leak the connection
            con.close()
    return relation, con


def aggregate(inp, user_column: str, item_column: str, bounds: ContributionBounds,
              key: SelectionKey | None, limit: int | None) -> EngineResult:
    """Run the bounded histogram on a resolved input; see the module docstring."""
    duckdb = _import_duckdb()
    relation, owned = _relation(duckdb, inp)
    try:
        columns = list(relation.columns)
        types = {name: str(kind).upper() for name, kind in zip(columns, relation.types)}
        check_columns(columns, user_column, item_column, describe_input(inp))
        view = "privloss_source_" + uuid.uuid4().hex
        sql = histogram_sql(view, user_column, item_column, bounds, key, limit,
                            user_is_integer=types[user_column] in _INTEGER_TYPES,
                            item_is_integer=types[item_column] in _INTEGER_TYPES)
        try:
            rows = relation.query(view, sql).fetchall()
        except duckdb.Error as error:
            raise ValueError(f"could not compute the histogram of {describe_input(inp)}: "
                             f"{str(error).splitlines()[0]}") from None
    finally:
        if owned is not None:
            owned.close()
    total, null_user, null_item = rows[0][0], rows[0][1], rows[0][2]
    raise_for_stats(total, null_user, null_item, user_column, item_column, describe_input(inp))
    return EngineResult([row[3] for row in rows], [int(row[4]) for row in rows], int(total))

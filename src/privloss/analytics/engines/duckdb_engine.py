"""DuckDB engine: contribution bounding and aggregation in one SQL query.

Definition
----------
One query, run where the data is (file scan, frame scan or the user's
connection).  Without ``l0``::

    sel    = SELECT u, i, count(*) AS c ... GROUP BY u, i
    hist   = SELECT i, sum(least(c, linf)) FROM sel GROUP BY i

With ``l0``::

    dict_X = SELECT DISTINCT X, row_number(), md5 code   (text columns only:
             exact integer ids, item ids in label order)
    pairs  = SELECT uid, iid, count(*) ... GROUP BY uid, iid   (integers)
    keyed  = pairs + selection key (privloss.analytics.bounding): BIGINT
             shifts, xors, masks and small products in stacked projections
    sel    = keyed QUALIFY row_number() OVER (PARTITION BY uid
                                             ORDER BY key, item_code, iid) <= l0
    hist   = SELECT iid, sum(least(c, linf)) FROM sel GROUP BY iid

then ``hist ORDER BY count DESC, label LIMIT top + 1`` (labels looked up in
``dict_i`` for the kept rows only) and one row of statistics (number of items,
null user / null item flags).  Only that result (the top ``d_bar + 1`` rows, or
the whole aggregated histogram when ``top`` is None) is fetched into Python.
Users are partitioned by their exact value or exact dictionary id, never by a
hash.

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
(user, item) pairs (only with ``l0``), one aggregation by item; with ``l0`` and
text columns, one more scan and a hash join per text column.  10 million rows
(2 cores): about 1.4 s without ``l0`` and 2.7 s with it for integer columns,
5.6 s for text columns (``benchmarks/topk_engines.py``).
"""

from __future__ import annotations

import uuid

from privloss.analytics.bounding import (LANE_BITS, LANE_MASK, MIX_MULTIPLIER, MIX_SHIFT,
                                         ContributionBounds, SelectionKey, text_code_digits)
from privloss.analytics.engines._result import EngineResult, check_columns, raise_for_stats
from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                       SparkFrameInput, describe_input)

__all__ = ["aggregate", "histogram_sql"]

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER"}


def import_duckdb():
    """The duckdb module, or ImportError naming the extra that installs it."""
    try:
        import duckdb
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the DuckDB engine needs the 'duckdb' package: "
                          "pip install 'privloss[analytics]'") from error
    return duckdb


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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


def _selection_ctes(source: str, user: str, item: str, key: SelectionKey, l0: int,
                    user_is_integer: bool, item_is_integer: bool) -> list[str]:
    """CTEs ending in ``sel(iid, c, null_user)``: the pairs the users keep.

    Integer columns are used as they are.  A text column is first numbered
    through a dictionary of its distinct values (exact ids, so users are
    partitioned exactly; item ids follow the label order, so tie-breaking by id
    is tie-breaking by label), which also computes its md5 code once per value;
    grouping and sorting then run on integers, much faster than on strings."""
    ctes, select, joins, carried = [], [], [], []
    for role, column, is_integer in (("u", user, user_is_integer), ("i", item, item_is_integer)):
        if is_integer:
            select.append(f"CAST(src.{column} AS BIGINT) AS {role}id")
            continue
        numbering = "ORDER BY v" if role == "i" else ""
        ctes.append(f"dict_{role} AS (SELECT v, row_number() OVER ({numbering}) AS id, "
                    f"{_code_sql('v')} AS code FROM (SELECT DISTINCT {column} AS v "
                    f"FROM {source} WHERE {column} IS NOT NULL))")
        joins.append(f" LEFT JOIN dict_{role} ON src.{column} = dict_{role}.v")
        select += [f"dict_{role}.id AS {role}id", f"dict_{role}.code AS {role}code"]
        carried.append(f", any_value({role}code) AS {role}code")
    ctes.append(f"rows AS (SELECT {', '.join(select)} FROM {source} AS src{''.join(joins)})")
    ctes.append(f"pairs AS (SELECT uid, iid, count(*) AS c{''.join(carried)} FROM rows "
                f"GROUP BY uid, iid)")
    user_code = "uid" if user_is_integer else "ucode"
    item_code = "iid" if item_is_integer else "icode"
    ctes.append(f"coded AS (SELECT uid, iid, c, {user_code} AS uc, {item_code} AS ic FROM pairs)")
    k, mask, bits = key.round_keys, LANE_MASK, LANE_BITS
    base = "uid, iid, c, uc, ic"
    ctes += _mix_ctes("ma", "coded", base, f"(((uc & {mask}) + {k[0]}) & {mask})")
    ctes += _mix_ctes("mb", "ma", base,
                      f"((xor(m, ((uc >> {bits}) & {mask})) + {k[1]}) & {mask})")
    ctes += _mix_ctes("mc", "mb", base, f"xor(((m + (ic & {mask})) & {mask}), {k[2]})")
    ctes += _mix_ctes("md", "mc", base,
                      f"((xor(m, ((ic >> {bits}) & {mask})) + {k[3]}) & {mask})")
    # the tie rule (key, code(i), i); for integer items the code is the item
    order = "m, iid" if item_is_integer else "m, ic, iid"
    ctes.append(f"sel AS (SELECT iid, c, uid IS NULL AS null_user FROM md QUALIFY "
                f"row_number() OVER (PARTITION BY uid ORDER BY {order}) <= {l0})")
    return ctes


def histogram_sql(source: str, user_column: str, item_column: str, bounds: ContributionBounds,
                  key: SelectionKey | None, limit: int | None, *, user_is_integer: bool,
                  item_is_integer: bool) -> str:
    """The whole bounded-histogram query over the table or view ``source``."""
    user, item = quote_identifier(user_column), quote_identifier(item_column)
    labelled = True  # does `hist.iid` hold the label itself?
    if bounds.l0 is None:
        ctes = [f"sel AS (SELECT {item} AS iid, count(*) AS c, {user} IS NULL AS null_user "
                f"FROM {source} GROUP BY {user}, {item})"]
    else:
        if key is None:
            raise ValueError("a SelectionKey is needed when l0 is set")
        ctes = _selection_ctes(source, user, item, key, bounds.l0, user_is_integer,
                               item_is_integer)
        labelled = item_is_integer
    ctes += [
        f"hist AS MATERIALIZED (SELECT iid, sum(least(c, {bounds.linf})) AS cnt, "
        f"bool_or(null_user) AS null_user FROM sel GROUP BY iid)",
        "stats AS (SELECT count(*) AS n, coalesce(bool_or(null_user), false) AS nu, "
        "coalesce(bool_or(iid IS NULL), false) AS ni FROM hist)",
    ]
    limit_sql = f" LIMIT {int(limit)}" if limit is not None else ""
    if labelled:
        ctes.append(f"head AS (SELECT iid AS item, cnt, iid AS rank FROM hist "
                    f"ORDER BY cnt DESC, iid ASC{limit_sql})")
    else:  # item ids are label ranks: order by id, then look the labels up
        ctes.append(f"top AS (SELECT iid, cnt FROM hist ORDER BY cnt DESC, iid ASC{limit_sql})")
        ctes.append("head AS (SELECT dict_i.v AS item, top.cnt AS cnt, top.iid AS rank FROM top "
                    "LEFT JOIN dict_i ON top.iid = dict_i.id)")
    return ("WITH " + ",\n".join(ctes) + "\nSELECT stats.n, stats.nu, stats.ni, head.item, "
            "head.cnt FROM stats LEFT JOIN head ON TRUE ORDER BY head.cnt DESC, head.rank ASC")


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


def _connect(duckdb):
    """A private in-memory connection; a library prints no progress bar."""
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false").fetchall()
    return connection


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
        con = _connect(duckdb) if owned else inp.connection
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
    con = _connect(duckdb)
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
    duckdb = import_duckdb()
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

"""A small DP SQL: one ``SELECT ... FROM t GROUP BY ...`` parsed with sqlglot
into the plan of :func:`privloss.aggregate`.

Definition
----------
Supported (DuckDB dialect)::

    SELECT g1, g2, COUNT(*), COUNT(DISTINCT <privacy unit>), SUM(x), AVG(x),
           MEDIAN(x), QUANTILE(x, q), PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x)
    FROM table GROUP BY g1, g2

Every ``x`` needs declared bounds (``bounds={"x": (low, high)}``); the budget,
contribution bounds and keys are parameters, not SQL.  Refused, each with its
own message (:class:`UnsupportedSql`): several statements or not a SELECT,
joins (or several tables), subqueries / CTEs, HAVING, WHERE, DISTINCT,
ORDER BY / LIMIT, window functions, a missing GROUP BY, a selected column not
in GROUP BY, a GROUP BY expression that is not a column, aliases are
allowed and ignored; any other function.

Privacy guarantee
-----------------
Parsing reads no data; the release is the one of ``aggregate``.  The SQL text
is never sent to an engine: only the parsed column names are used, as quoted
identifiers through the relational API.

Citation
--------
sqlglot (https://sqlglot.com); BigQuery's differentially private aggregate
functions (COUNT, SUM, AVG, PERCENTILE_CONT) for the supported subset.

Runtime
-------
Linear in the length of the query.
"""

from __future__ import annotations

from dataclasses import dataclass

from privloss.query.spec import Aggregation

__all__ = ["UnsupportedSql", "ParsedQuery", "parse_sql"]


class UnsupportedSql(ValueError):
    """The query is outside the supported subset (the message says which part)."""


@dataclass(frozen=True)
class ParsedQuery:
    table: str
    by: tuple
    aggregations: tuple


def _sqlglot():
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("privloss sql needs sqlglot: pip install 'privloss[analytics]'") \
            from error
    return sqlglot, exp


def _column_name(node, exp, what: str) -> str:
    if not isinstance(node, exp.Column) or node.table:
        raise UnsupportedSql(f"{what} must be a plain column name, got {node.sql()!r}")
    return node.name


def _bounds(column: str, bounds: dict) -> tuple:
    if column not in bounds:
        raise UnsupportedSql(f"column {column!r} is aggregated but has no bounds: pass "
                             f"--bounds {column}=LOW:HIGH")
    return bounds[column]


def _aggregation(node, exp, bounds, privacy_unit):
    if isinstance(node, exp.Alias):
        node = node.this
    if isinstance(node, exp.Count):
        inner = node.this
        if isinstance(inner, exp.Star):
            return Aggregation("count")
        if isinstance(inner, exp.Distinct):
            columns = inner.expressions
            if len(columns) == 1 and _column_name(columns[0], exp, "COUNT(DISTINCT ...)") \
                    == privacy_unit:
                return Aggregation("count_distinct")
            raise UnsupportedSql("COUNT(DISTINCT ...) is supported for the privacy unit "
                                 f"column {privacy_unit!r} only")
        raise UnsupportedSql(f"COUNT(column) is not supported (use COUNT(*)), got "
                             f"{node.sql()!r}")
    if isinstance(node, (exp.Sum, exp.Avg)):
        column = _column_name(node.this, exp, f"the argument of {node.key.upper()}")
        low, high = _bounds(column, bounds)
        return Aggregation("sum" if isinstance(node, exp.Sum) else "mean", column, low, high)
    if isinstance(node, exp.Median):
        column = _column_name(node.this, exp, "the argument of MEDIAN")
        return Aggregation("quantile", column, *_bounds(column, bounds), (0.5,))
    if isinstance(node, exp.Quantile):
        column = _column_name(node.this, exp, "the argument of QUANTILE")
        level = node.args.get("quantile")
        if not isinstance(level, exp.Literal) or level.is_string:
            raise UnsupportedSql("QUANTILE(x, q) needs a number q")
        return Aggregation("quantile", column, *_bounds(column, bounds), (float(level.this),))
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        level = node.this.this
        order = node.expression
        if not isinstance(level, exp.Literal) or level.is_string or order is None \
                or len(order.expressions) != 1:
            raise UnsupportedSql("PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x) needs a "
                                 "number q and one column x")
        column = _column_name(order.expressions[0].this, exp, "the ORDER BY of PERCENTILE_CONT")
        return Aggregation("quantile", column, *_bounds(column, bounds), (float(level.this),))
    if isinstance(node, exp.Window):
        raise UnsupportedSql("window functions (OVER ...) are not supported")
    if isinstance(node, exp.Func):
        raise UnsupportedSql(f"function {node.sql()!r} is not supported (COUNT(*), "
                             f"COUNT(DISTINCT unit), SUM, AVG, MEDIAN, QUANTILE, "
                             f"PERCENTILE_CONT only)")
    return None


def parse_sql(text: str, *, bounds: dict | None = None, privacy_unit: str | None = None) \
        -> ParsedQuery:
    """Parse ``text`` into (table, by, aggregations); raises :class:`UnsupportedSql`."""
    if not isinstance(text, str) or not text.strip():
        raise UnsupportedSql("the SQL query must be a non-empty string")
    sqlglot, exp = _sqlglot()
    bounds = dict(bounds or {})
    try:
        statements = sqlglot.parse(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as error:
        raise UnsupportedSql(f"the SQL query does not parse: {str(error).splitlines()[0]}") \
            from None
    except RecursionError:
        raise UnsupportedSql("the SQL query is nested too deeply to parse") from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise UnsupportedSql(f"give exactly one SELECT statement, got {len(statements)}")
    select = statements[0]
    if not isinstance(select, exp.Select):
        raise UnsupportedSql(f"only SELECT is supported, got {type(select).__name__.upper()}")
    if select.args.get("with"):
        raise UnsupportedSql("WITH (common table expressions) is not supported")
    if select.args.get("joins"):
        raise UnsupportedSql("joins are not supported: query one table")
    source = select.args.get("from_") or select.args.get("from")
    if source is None:
        raise UnsupportedSql("the query needs FROM <table>")
    if any(True for _ in select.find_all(exp.Subquery)) or \
            any(s is not select for s in select.find_all(exp.Select)):
        raise UnsupportedSql("subqueries are not supported")
    table = source.this
    if not isinstance(table, exp.Table) or table.args.get("db") or not table.name:
        raise UnsupportedSql(f"FROM must name one table, got {source.sql()!r}")
    if select.args.get("having"):
        raise UnsupportedSql("HAVING is not supported (filtering on released values is "
                             "post-processing: filter the result instead)")
    if select.args.get("where"):
        raise UnsupportedSql("WHERE is not supported: filter the table before the query")
    if select.args.get("distinct"):
        raise UnsupportedSql("SELECT DISTINCT is not supported")
    if select.args.get("order") or select.args.get("limit"):
        raise UnsupportedSql("ORDER BY / LIMIT are not supported (post-processing: sort "
                             "the result)")
    group = select.args.get("group")
    if group is None or not group.expressions:
        raise UnsupportedSql("the query needs GROUP BY (one or more columns)")
    by = tuple(_column_name(node, exp, "each GROUP BY item") for node in group.expressions)
    aggregations = []
    for node in select.expressions:
        inner = node.this if isinstance(node, exp.Alias) else node
        if isinstance(inner, exp.Column):
            name = _column_name(inner, exp, "a selected column")
            if name not in by:
                raise UnsupportedSql(f"column {name!r} is selected but neither aggregated nor "
                                     f"in GROUP BY")
            continue
        if isinstance(inner, exp.Star):
            raise UnsupportedSql("SELECT * is not supported: name the GROUP BY columns and "
                                 "the aggregates")
        aggregation = _aggregation(inner, exp, bounds, privacy_unit)
        if aggregation is None:
            raise UnsupportedSql(f"expression {inner.sql()!r} is not supported (only GROUP BY "
                                 f"columns and aggregate functions)")
        aggregations.append(aggregation)
    if not aggregations:
        raise UnsupportedSql("the query needs at least one aggregate function")
    merged = []
    for a in aggregations:           # several quantiles of one column share its budget
        previous = next((m for m in merged if m.kind == "quantile" == a.kind
                         and m.column == a.column), None)
        if previous is not None:
            merged[merged.index(previous)] = Aggregation(
                "quantile", a.column, a.low, a.high, previous.quantiles + a.quantiles)
        else:
            merged.append(a)
    return ParsedQuery(table.name, by, tuple(merged))

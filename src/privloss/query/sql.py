"""A small DP SQL: one ``SELECT ... FROM t GROUP BY ...`` parsed with sqlglot
into the plan of :func:`privloss.aggregate`.

Definition
----------
Supported (DuckDB dialect)::

    SELECT g1, g2, COUNT(*), COUNT(DISTINCT <privacy unit>), SUM(x), AVG(x),
           MEDIAN(x), QUANTILE(x, q), PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x)
    FROM table [alias]
         [[INNER | LEFT [OUTER]] JOIN other [alias] ON a.k = b.k [AND ...] | USING (k, ..)]..
    [WHERE <filter>] GROUP BY g1, g2

Columns may be qualified (``t.x``); joins (with declared public tables, or
with a private table on the privacy unit) are parsed by
:func:`privloss.query.joins.parse_from` and resolved against the tables'
schemas by :func:`privloss.query.joins.resolve`.

``GROUP BY ROLLUP(g1, g2)`` (alone in GROUP BY) sets ``rollup``: the release
is :func:`privloss.rollup` (subtotals at every level, COUNT(*) and
COUNT(DISTINCT unit) only).

``<filter>``: comparisons (``= <> != < <= > >=``), ``[NOT] IN (...)``,
``[NOT] BETWEEN``, ``IS [NOT] NULL``, ``[NOT] LIKE`` / ``ILIKE``, ``AND``,
``OR``, ``NOT``, ``+ - * /`` on numbers, ``CAST(x AS DOUBLE | BIGINT |
INTEGER | VARCHAR | DATE | TIMESTAMP)``, ``DATE '...'`` / ``TIMESTAMP '...'``
literals (:mod:`privloss.query.filters`; a filter is 1-stable: the cost is
unchanged).

Every ``x`` needs declared bounds (``bounds={"x": (low, high)}``); the budget,
contribution bounds and keys are parameters, not SQL.  Refused, each with its
own message (:class:`UnsupportedSql`): several statements or not a SELECT,
cross, natural, full, right, semi, anti and non-equi joins, ``FROM a, b``, subqueries / CTEs, HAVING, DISTINCT, functions
in WHERE other than CAST,
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

#: a query as an analyst writes it, for the surfaces' documentation (the
#: service's OpenAPI examples): the surfaces themselves hold no SQL
EXAMPLE_QUERY = "SELECT country, COUNT(*) FROM views GROUP BY country"

__all__ = ["UnsupportedSql", "ParsedQuery", "parse_sql", "parse_where", "filter_of"]


class UnsupportedSql(ValueError):
    """The query is outside the supported subset (the message says which part)."""


@dataclass(frozen=True)
class ParsedQuery:
    """``table``: the FROM table (``alias``: its name in the query); with
    ``joins`` (:class:`~privloss.query.joins.ParsedJoin`) the column
    references may be qualified (:func:`~privloss.query.joins.split_reference`)
    until :func:`~privloss.query.joins.resolve` names them."""

    table: str
    by: tuple
    aggregations: tuple
    where: object = None
    alias: str | None = None
    joins: tuple = ()
    rollup: bool = False

    @property
    def tables(self) -> tuple:
        """The declared table names the query reads (FROM first)."""
        return tuple(dict.fromkeys([self.table] + [j.table for j in self.joins]))

    @property
    def columns(self) -> tuple:
        """Every column the query reads (group, aggregated and filter columns)."""
        used = list(self.by) + [a.column for a in self.aggregations if a.column is not None]
        if self.where is not None:
            used += sorted(self.where.columns())
        return tuple(dict.fromkeys(used))


def _sqlglot():
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("privloss sql needs sqlglot: pip install 'privloss[analytics]'") \
            from error
    return sqlglot, exp


def _column_name(node, exp, what: str) -> str:
    """A column's name, or for ``t.x`` its qualified reference (resolved by
    :func:`_unqualified` or :func:`privloss.query.joins.resolve`)."""
    if not isinstance(node, exp.Column) or node.args.get("db") or not node.name:
        raise UnsupportedSql(f"{what} must be a column name, got {node.sql()!r}")
    if node.table:
        from privloss.query.joins import qualified
        return qualified(node.table, node.name)
    return node.name


def _plain(reference: str) -> str:
    from privloss.query.joins import split_reference
    return split_reference(reference)[1]


def _bounds(column: str, bounds: dict) -> tuple:
    column = _plain(column)
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
            if len(columns) == 1 and _plain(_column_name(columns[0], exp,
                                                         "COUNT(DISTINCT ...)")) == privacy_unit:
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
    if select.args.get("with") or select.args.get("with_"):
        raise UnsupportedSql("WITH (common table expressions) is not supported")
    if any(True for _ in select.find_all(exp.Subquery)) or \
            any(s is not select for s in select.find_all(exp.Select)):
        raise UnsupportedSql("subqueries are not supported")
    from privloss.query.joins import parse_from
    table, alias, joins = parse_from(select, exp)
    if select.args.get("having"):
        raise UnsupportedSql("HAVING is not supported (filtering on released values is "
                             "post-processing: filter the result instead)")
    where = select.args.get("where")
    where = None if where is None else filter_of(where.this, exp)
    if select.args.get("distinct"):
        raise UnsupportedSql("SELECT DISTINCT is not supported")
    if select.args.get("order") or select.args.get("limit"):
        raise UnsupportedSql("ORDER BY / LIMIT are not supported (post-processing: sort "
                             "the result)")
    group = select.args.get("group")
    if group is None or not group.expressions:
        raise UnsupportedSql("the query needs GROUP BY (one or more columns)")
    items, rollup = group.expressions, False
    if any(isinstance(node, exp.Rollup) for node in items):
        if len(items) != 1 or not items[0].expressions:
            raise UnsupportedSql("ROLLUP must be the whole GROUP BY: GROUP BY ROLLUP(a, b, ...)")
        items, rollup = items[0].expressions, True
    if group.args.get("cube") or group.args.get("grouping_sets") or any(
            isinstance(node, (exp.Cube, exp.GroupingSets)) for node in items):
        raise UnsupportedSql("CUBE and GROUPING SETS are not supported (ROLLUP is)")
    by = tuple(_column_name(node, exp, "each GROUP BY item") for node in items)
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
    # bounds nobody reads are a mistake (a typo, or a column meant to be summed):
    # say so rather than release without them
    unread = sorted(set(bounds) - {_plain(a.column) for a in aggregations
                                   if a.column is not None})
    if unread and rollup:
        raise UnsupportedSql("bounds does not apply to GROUP BY ROLLUP (it releases COUNT(*) "
                             "and COUNT(DISTINCT unit) only)")
    if unread:
        raise UnsupportedSql(f"bounds for {', '.join(map(repr, unread))}: no SUM, AVG or "
                             f"quantile of the query reads {'it' if len(unread) == 1 else 'them'}"
                             f" (remove the bounds, or aggregate the column)")
    merged = []
    for a in aggregations:           # several quantiles of one column share its budget
        previous = next((m for m in merged if m.kind == "quantile" == a.kind
                         and m.column == a.column), None)
        if previous is not None:
            merged[merged.index(previous)] = Aggregation(
                "quantile", a.column, a.low, a.high, previous.quantiles + a.quantiles)
        else:
            merged.append(a)
    if rollup and joins:
        raise UnsupportedSql("GROUP BY ROLLUP with JOIN is not supported: join, then roll "
                             "up in two steps, or declare a view")
    parsed = ParsedQuery(table, by, tuple(merged), where, alias, joins, rollup)
    return parsed if joins else _unqualified(parsed)


def _unqualified(parsed: ParsedQuery) -> ParsedQuery:
    """A one-table query with its ``t.x`` references (t its name or alias) as ``x``."""
    from privloss.query.joins import rename_references, split_reference

    def name(reference):
        table, column = split_reference(reference)
        if table is not None and table != parsed.alias:
            raise UnsupportedSql(f"unknown table {table!r} in {table}.{column} (the query "
                                 f"reads {parsed.alias!r})")
        return column

    by, aggregations, where = rename_references(parsed, name)
    return ParsedQuery(parsed.table, by, aggregations, where, parsed.alias,
                       rollup=parsed.rollup)


_CASTS = {"DOUBLE": "DOUBLE", "FLOAT": "DOUBLE", "DECIMAL": "DOUBLE", "INT": "BIGINT",
          "BIGINT": "BIGINT", "SMALLINT": "BIGINT", "TINYINT": "BIGINT", "VARCHAR": "VARCHAR",
          "TEXT": "VARCHAR", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP",
          "TIMESTAMPNTZ": "TIMESTAMP", "DATETIME": "TIMESTAMP"}


def _literal(node, exp):
    import datetime as dt

    from privloss.query import filters as f

    if isinstance(node, exp.Null):
        return f.Literal(None)
    if isinstance(node, exp.Boolean):
        return f.Literal(bool(node.this))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return f.Literal(node.this)
        text = node.this
        try:
            value = int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            raise UnsupportedSql(f"the number {text!r} does not parse") from None
        return f.Literal(value)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) \
            and not node.this.is_string:
        inner = _literal(node.this, exp)
        return f.Literal(-inner.value)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) \
            and node.this.is_string:
        kind = _CASTS.get(node.to.this.name)
        if kind in ("DATE", "TIMESTAMP"):
            try:
                value = dt.datetime.fromisoformat(node.this.this)
            except ValueError:
                raise UnsupportedSql(f"{kind} {node.this.this!r} is not an ISO date or "
                                     f"timestamp") from None
            return f.Literal(value.date() if kind == "DATE" and len(node.this.this) <= 10
                             else value)
    return None


def filter_of(node, exp, depth: int = 0):
    """The :mod:`privloss.query.filters` tree of a sqlglot ``WHERE`` expression
    (:class:`UnsupportedSql` naming any construct outside the subset)."""
    from privloss.query import filters as f

    if depth > f.MAX_DEPTH:
        raise UnsupportedSql(f"the WHERE clause is nested more than {f.MAX_DEPTH} levels deep")
    deeper = depth + 1
    if isinstance(node, exp.Paren):
        return filter_of(node.this, exp, deeper)
    literal = _literal(node, exp)
    if literal is not None:
        return literal
    if isinstance(node, exp.Column):
        return f.Column(_column_name(node, exp, "a WHERE column"))
    comparisons = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
                   exp.GTE: ">="}
    operators = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
    for kind, op in comparisons.items():
        if type(node) is kind:
            return f.Compare(op, filter_of(node.this, exp, deeper),
                             filter_of(node.expression, exp, deeper))
    for kind, op in operators.items():
        if type(node) is kind:
            return f.Arithmetic(op, filter_of(node.this, exp, deeper),
                                filter_of(node.expression, exp, deeper))
    if isinstance(node, exp.Neg):
        return f.Arithmetic("-", f.Literal(0), filter_of(node.this, exp, deeper))
    if isinstance(node, (exp.And, exp.Or)):
        parts = (filter_of(node.this, exp, deeper), filter_of(node.expression, exp, deeper))
        return f.And(parts) if isinstance(node, exp.And) else f.Or(parts)
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.In):
            converted = filter_of(inner, exp, deeper)
            return f.In(converted.expression, converted.values, negated=True)
        if isinstance(inner, exp.Between):
            converted = filter_of(inner, exp, deeper)
            return f.Between(converted.expression, converted.low, converted.high, negated=True)
        if isinstance(inner, exp.Is):
            converted = filter_of(inner, exp, deeper)
            return f.IsNull(converted.expression, negated=True)
        return f.Not(filter_of(inner, exp, deeper))
    if isinstance(node, exp.In):
        if node.args.get("query") is not None:
            raise UnsupportedSql("IN (SELECT ...) is not supported: list the values")
        values = tuple(_literal(value, exp) for value in node.expressions)
        if not values or any(value is None for value in values):
            raise UnsupportedSql("IN (...) needs a list of literal values")
        return f.In(filter_of(node.this, exp, deeper), values)
    if isinstance(node, exp.Between):
        return f.Between(filter_of(node.this, exp, deeper),
                         filter_of(node.args["low"], exp, deeper),
                         filter_of(node.args["high"], exp, deeper))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise UnsupportedSql("IS is supported as IS [NOT] NULL only")
        return f.IsNull(filter_of(node.this, exp, deeper))
    if isinstance(node, (exp.Like, exp.ILike)):
        pattern = node.expression
        if not isinstance(pattern, exp.Literal) or not pattern.is_string:
            raise UnsupportedSql("LIKE needs a text pattern ('...')")
        if node.args.get("escape") is not None:
            raise UnsupportedSql("LIKE ... ESCAPE is not supported")
        return f.Like(filter_of(node.this, exp, deeper), pattern.this,
                      negated=bool(node.args.get("negate")),
                      case_insensitive=isinstance(node, exp.ILike))
    if isinstance(node, exp.Cast):
        kind = _CASTS.get(node.to.this.name)
        if kind is None:
            raise UnsupportedSql(f"CAST to {node.to.sql()} is not supported (DOUBLE, BIGINT, "
                                 f"INTEGER, VARCHAR, DATE, TIMESTAMP)")
        return f.Cast(filter_of(node.this, exp, deeper), kind)
    if isinstance(node, exp.Subquery) or isinstance(node, exp.Select):
        raise UnsupportedSql("subqueries are not supported")
    if isinstance(node, exp.Func):
        raise UnsupportedSql(f"function {node.sql()!r} is not supported in WHERE (CAST only)")
    raise UnsupportedSql(f"{node.sql()!r} is not supported in WHERE (comparisons, IN, "
                         f"BETWEEN, IS NULL, LIKE, AND/OR/NOT, arithmetic, CAST)")



def parse_where(text: str):
    """The filter of a ``--where`` / ``where=`` text (one SQL condition, the
    grammar of :func:`parse_sql`'s WHERE); :class:`UnsupportedSql` otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise UnsupportedSql("the WHERE condition must be a non-empty string")
    sqlglot, exp = _sqlglot()
    try:
        statements = [s for s in sqlglot.parse(text, read="duckdb") if s is not None]
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as error:
        raise UnsupportedSql(f"the WHERE condition does not parse: "
                             f"{str(error).splitlines()[0]}") from None
    except RecursionError:
        raise UnsupportedSql("the WHERE condition is nested too deeply to parse") from None
    if len(statements) != 1 or isinstance(statements[0], (exp.Query, exp.Command, exp.DDL,
                                                            exp.DML)):
        raise UnsupportedSql("the WHERE condition must be one condition, not a statement")
    return filter_of(statements[0], exp)

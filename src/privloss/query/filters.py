"""Row filters of a query plan (``WHERE``): a small expression tree of our own,
compiled by each engine through its expression API (never from SQL text).

>>> from privloss.query.filters import And, Column, Compare, Literal
>>> where = And((Compare(">", Column("Quantity"), Literal(0)),
...              Compare("=", Column("Country"), Literal("France"))))
>>> sorted(where.columns())
['Country', 'Quantity']

Definition
----------
Nodes: :class:`Column`, :class:`Literal` (a number, text, boolean, null, a
date or a timestamp), :class:`Compare` (``= != < <= > >=``),
:class:`Arithmetic` (``+ - * /``), :class:`In`, :class:`Between`,
:class:`IsNull`, :class:`Like` (``LIKE`` / ``ILIKE``), :class:`And`,
:class:`Or`, :class:`Not` and :class:`Cast` (to ``DOUBLE``, ``BIGINT``,
``VARCHAR``, ``DATE`` or ``TIMESTAMP``).  A row is kept when the expression
is true (null and false drop it), as SQL's ``WHERE``.  A text column (every
column of a CSV file) meets a number or a date as the number or timestamp its
text reads as (``TRY_CAST``; unreadable text is null, so the row is dropped):
``Quantity > 0`` works on CSV text as on integers.

Privacy guarantee
-----------------
A filter is applied to each row on its own, before the contribution
bounding: adding or removing one unit adds or removes only that unit's rows,
so the bounded statistics' sensitivities, and the release's cost, are
unchanged (a filter is 1-stable).  A filter on the privacy-unit column is
allowed and still DP: it only selects which units' rows enter.  Literals and
column names go to the engine as constants and identifiers through its
expression API; the analyst's text never does.

Citation
--------
McSherry, "Privacy integrated queries", SIGMOD 2009 (stable transformations);
Wilson et al., PoPETs 2020.

Runtime
-------
Compiling is linear in the number of nodes (at most :data:`MAX_NODES`, depth
at most :data:`MAX_DEPTH`); the engine evaluates the filter once per row.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
from dataclasses import dataclass

__all__ = ["Column", "Literal", "Compare", "Arithmetic", "In", "Between", "IsNull", "Like",
           "And", "Or", "Not", "Cast", "MAX_DEPTH", "MAX_NODES", "CAST_TYPES", "check_filter",
           "to_duckdb", "to_spark", "describe"]

#: deepest filter accepted (a deeper one is refused, not evaluated)
MAX_DEPTH = 48
#: most nodes in one filter
MAX_NODES = 2000
#: types a CAST may name
CAST_TYPES = ("DOUBLE", "BIGINT", "VARCHAR", "DATE", "TIMESTAMP")
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
OPERATORS = ("+", "-", "*", "/")


class _Node:
    def children(self) -> tuple:
        return ()

    def columns(self) -> set:
        found = set()
        for child in self.children():
            found |= child.columns()
        return found


@dataclass(frozen=True)
class Column(_Node):
    name: str

    def columns(self) -> set:
        return {self.name}


@dataclass(frozen=True)
class Literal(_Node):
    value: object


@dataclass(frozen=True)
class Compare(_Node):
    op: str
    left: _Node
    right: _Node

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class Arithmetic(_Node):
    op: str
    left: _Node
    right: _Node

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class In(_Node):
    expression: _Node
    values: tuple
    negated: bool = False

    def children(self):
        return (self.expression, *self.values)


@dataclass(frozen=True)
class Between(_Node):
    expression: _Node
    low: _Node
    high: _Node
    negated: bool = False

    def children(self):
        return (self.expression, self.low, self.high)


@dataclass(frozen=True)
class IsNull(_Node):
    expression: _Node
    negated: bool = False

    def children(self):
        return (self.expression,)


@dataclass(frozen=True)
class Like(_Node):
    expression: _Node
    pattern: str
    negated: bool = False
    case_insensitive: bool = False

    def children(self):
        return (self.expression,)


@dataclass(frozen=True)
class And(_Node):
    items: tuple

    def children(self):
        return tuple(self.items)


@dataclass(frozen=True)
class Or(_Node):
    items: tuple

    def children(self):
        return tuple(self.items)


@dataclass(frozen=True)
class Not(_Node):
    expression: _Node

    def children(self):
        return (self.expression,)


@dataclass(frozen=True)
class Cast(_Node):
    expression: _Node
    to: str

    def children(self):
        return (self.expression,)


_LITERAL_TYPES = (bool, int, float, str, dt.date, dt.datetime, type(None))


def check_filter(node) -> _Node:
    """``node`` checked: known node types, operators, literal types, finite
    numbers, text without NUL characters, depth and size within limits
    (``ValueError`` naming what is wrong)."""
    count = 0

    def visit(item, depth: int) -> None:
        nonlocal count
        count += 1
        if depth > MAX_DEPTH:
            raise ValueError(f"the filter is nested more than {MAX_DEPTH} levels deep")
        if count > MAX_NODES:
            raise ValueError(f"the filter has more than {MAX_NODES} parts")
        if not isinstance(item, _Node):
            raise TypeError(f"a filter part must be a filter node, got {item!r}")
        if isinstance(item, Column):
            if not isinstance(item.name, str) or not item.name or "\x00" in item.name:
                raise ValueError(f"a filter column must be a non-empty name, got {item.name!r}")
        elif isinstance(item, Literal):
            value = item.value
            if not isinstance(value, _LITERAL_TYPES):
                raise TypeError(f"a filter literal must be a number, text, boolean, date or "
                                f"null, got {type(value).__name__}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"a filter number must be finite, got {value!r}")
            if isinstance(value, int) and not isinstance(value, bool) \
                    and not -(1 << 63) <= value < (1 << 63):
                raise ValueError(f"a filter integer must fit 64 bits, got {value!r}")
            if isinstance(value, str) and "\x00" in value:
                raise ValueError("a filter text must not contain NUL characters")
        elif isinstance(item, (Compare, Arithmetic)):
            allowed = COMPARISONS if isinstance(item, Compare) else OPERATORS
            if item.op not in allowed:
                raise ValueError(f"operator {item.op!r} is not supported (allowed: "
                                 f"{', '.join(allowed)})")
        elif isinstance(item, Like):
            if not isinstance(item.pattern, str) or "\x00" in item.pattern:
                raise ValueError(f"a LIKE pattern must be text, got {item.pattern!r}")
        elif isinstance(item, Cast):
            if item.to not in CAST_TYPES:
                raise ValueError(f"CAST to {item.to!r} is not supported (allowed: "
                                 f"{', '.join(CAST_TYPES)})")
        elif isinstance(item, (And, Or)):
            if len(item.items) < 2:
                raise ValueError("AND / OR need at least two parts")
        for child in item.children():
            visit(child, depth + 1)

    visit(node, 0)
    return node


def describe(node) -> str:
    """A canonical text of the filter (for the repeated-query key and dry runs)."""
    if isinstance(node, Column):
        return '"' + node.name.replace('"', '""') + '"'
    if isinstance(node, Literal):
        value = node.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, numbers.Number):
            return repr(value)
        if isinstance(value, dt.datetime):
            return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
        if isinstance(value, dt.date):
            return f"DATE '{value.isoformat()}'"
        return "'" + value.replace("'", "''") + "'"
    if isinstance(node, (Compare, Arithmetic)):
        return f"({describe(node.left)} {node.op} {describe(node.right)})"
    if isinstance(node, In):
        values = ", ".join(describe(v) for v in node.values)
        return f"({describe(node.expression)} {'NOT ' if node.negated else ''}IN ({values}))"
    if isinstance(node, Between):
        return (f"({describe(node.expression)} {'NOT ' if node.negated else ''}BETWEEN "
                f"{describe(node.low)} AND {describe(node.high)})")
    if isinstance(node, IsNull):
        return f"({describe(node.expression)} IS {'NOT ' if node.negated else ''}NULL)"
    if isinstance(node, Like):
        word = "ILIKE" if node.case_insensitive else "LIKE"
        return (f"({describe(node.expression)} {'NOT ' if node.negated else ''}{word} "
                f"{describe(Literal(node.pattern))})")
    if isinstance(node, (And, Or)):
        word = " AND " if isinstance(node, And) else " OR "
        return "(" + word.join(describe(item) for item in node.items) + ")"
    if isinstance(node, Not):
        return f"(NOT {describe(node.expression)})"
    return f"CAST({describe(node.expression)} AS {node.to})"


# ----------------------------------------------------------------------------------
# kinds: what a text column is read as next to a number or a date
# ----------------------------------------------------------------------------------

def _literal_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, (dt.date, dt.datetime)):
        return "date"
    return "text"


def _type_kind(type_name: str) -> str:
    name = str(type_name).upper()
    if name.startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                        "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                        "REAL", "BYTE", "SHORT", "INT", "LONG")):
        return "number"
    if name.startswith(("DATE", "TIMESTAMP")):
        return "date"
    if name.startswith(("VARCHAR", "STRING")):
        return "text"
    if name.startswith("BOOL"):
        return "bool"
    return "other"


class _Compiler:
    """Shared walk: ``self.column``, ``self.constant``, ``self.read_as`` and the
    operator helpers are the engine's."""

    def __init__(self, types: dict):
        self.types = {name: _type_kind(kind) for name, kind in types.items()}

    def kind(self, node) -> str:
        if isinstance(node, Column):
            return self.types.get(node.name, "other")
        if isinstance(node, Literal):
            return _literal_kind(node.value)
        if isinstance(node, Arithmetic):
            return "number"
        if isinstance(node, Cast):
            return {"DOUBLE": "number", "BIGINT": "number", "VARCHAR": "text"}.get(node.to,
                                                                                    "date")
        return "bool"

    def operand(self, node, partner_kinds) -> object:
        """``node`` compiled; a text column next to a number (or date) read as one."""
        expression = self.compile(node)
        if self.kind(node) == "text" and not isinstance(node, Literal):
            if "number" in partner_kinds:
                return self.read_as(expression, "DOUBLE")
            if "date" in partner_kinds:
                return self.read_as(expression, "TIMESTAMP")
        return expression

    def compile(self, node):
        if isinstance(node, Column):
            return self.column(node.name)
        if isinstance(node, Literal):
            return self.constant(node.value)
        if isinstance(node, Compare):
            kinds = {self.kind(node.left), self.kind(node.right)}
            return self.compare(node.op, self.operand(node.left, kinds),
                                self.operand(node.right, kinds))
        if isinstance(node, Arithmetic):
            return self.arithmetic(node.op, self.operand(node.left, {"number"}),
                                   self.operand(node.right, {"number"}))
        if isinstance(node, In):
            kinds = {self.kind(value) for value in node.values}
            values = [self.compile(value) for value in node.values]
            return self.isin(self.operand(node.expression, kinds), values, node.negated)
        if isinstance(node, Between):
            kinds = {self.kind(node.low), self.kind(node.high)}
            expression = self.between(self.operand(node.expression, kinds),
                                      self.operand(node.low, {self.kind(node.expression)}),
                                      self.operand(node.high, {self.kind(node.expression)}))
            return self.negate(expression) if node.negated else expression
        if isinstance(node, IsNull):
            return self.isnull(self.compile(node.expression), node.negated)
        if isinstance(node, Like):
            expression = self.like(self.compile(node.expression), node.pattern,
                                   node.case_insensitive)
            return self.negate(expression) if node.negated else expression
        if isinstance(node, (And, Or)):
            parts = [self.compile(item) for item in node.items]
            result = parts[0]
            for part in parts[1:]:
                result = (result & part) if isinstance(node, And) else (result | part)
            return result
        if isinstance(node, Not):
            return self.negate(self.compile(node.expression))
        return self.read_as(self.compile(node.expression), node.to)


class _DuckDB(_Compiler):
    def __init__(self, duckdb, types):
        super().__init__(types)
        self.duckdb = duckdb

    def column(self, name):
        return self.duckdb.ColumnExpression(name)

    def constant(self, value):
        return self.duckdb.ConstantExpression(value)

    def read_as(self, expression, type_name):
        return expression.try_cast(self.duckdb.sqltype(type_name))

    def compare(self, op, left, right):
        return {"=": lambda: left == right, "!=": lambda: left != right,
                "<": lambda: left < right, "<=": lambda: left <= right,
                ">": lambda: left > right, ">=": lambda: left >= right}[op]()

    def arithmetic(self, op, left, right):
        return {"+": lambda: left + right, "-": lambda: left - right,
                "*": lambda: left * right, "/": lambda: left / right}[op]()

    def isin(self, expression, values, negated):
        return expression.isnotin(*values) if negated else expression.isin(*values)

    def between(self, expression, low, high):
        return expression.between(low, high)

    def isnull(self, expression, negated):
        return expression.isnotnull() if negated else expression.isnull()

    def like(self, expression, pattern, case_insensitive):
        pattern = self.constant(pattern)
        return expression.ilike(pattern) if case_insensitive else expression.like(pattern)

    def negate(self, expression):
        return ~expression


def to_duckdb(node, duckdb, types: dict):
    """``node`` as a DuckDB expression (``relation.filter``); ``types``: the
    relation's column -> DuckDB type name."""
    return _DuckDB(duckdb, types).compile(check_filter(node))


class _Spark(_Compiler):
    def __init__(self, functions, types):
        super().__init__(types)
        self.functions = functions

    def column(self, name):
        return self.functions.col("`" + name.replace("`", "``") + "`")

    def constant(self, value):
        return self.functions.lit(value)

    def read_as(self, expression, type_name):
        spark_type = {"DOUBLE": "double", "BIGINT": "bigint", "VARCHAR": "string",
                      "DATE": "date", "TIMESTAMP": "timestamp"}[type_name]
        if hasattr(expression, "try_cast"):           # Spark 4: null when unreadable
            return expression.try_cast(spark_type)
        return expression.cast(spark_type)

    def compare(self, op, left, right):
        return _DuckDB.compare(self, op, left, right)

    def arithmetic(self, op, left, right):
        return _DuckDB.arithmetic(self, op, left, right)

    def isin(self, expression, values, negated):
        found = expression.isin(*values)
        return ~found if negated else found

    def between(self, expression, low, high):
        return (expression >= low) & (expression <= high)

    def isnull(self, expression, negated):
        return expression.isNotNull() if negated else expression.isNull()

    def like(self, expression, pattern, case_insensitive):
        return expression.ilike(pattern) if case_insensitive else expression.like(pattern)

    def negate(self, expression):
        return ~expression


def to_spark(node, functions, types: dict):
    """``node`` as a Spark Column (``DataFrame.where``); ``types``: column ->
    DuckDB-style type name."""
    return _Spark(functions, types).compile(check_filter(node))

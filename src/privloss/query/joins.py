"""Joins of a DP SQL query: with declared public tables, and of two private
tables on the privacy unit after per-unit truncation.

>>> from privloss.query.joins import PublicJoin
>>> j = PublicJoin(table="countries", source="countries.csv", kind="inner",
...                left_keys=("Country",), right_keys=("Country",),
...                columns=(("Region", "Region"),))
>>> j.stability
'1 (a public table with unique keys); k with up to k rows per key'

Definition
----------
A :class:`~privloss.query.plan.QueryPlan`'s ``joins`` extend its private
source, in order, by equi-joins (``kind`` ``inner`` or ``left``):
``left_keys`` name columns of the joined relation so far (the private table's
or an earlier join's outputs), ``right_keys`` columns of the joined table,
and ``columns`` the joined table's columns the query reads, each with its
name in the joined relation.  Every later step of the plan (filter, bounding,
statistics) runs on the joined relation: a filter or a group may use a
public column, and the bounding happens AFTER the join.

* :class:`PublicJoin`: the table is public (declared by the analyst in
  Python or the CLI, or by the operator in the service): it is the same in
  both neighbouring inputs.  A private row matches the public rows of its
  keys, so a unit's rows are multiplied by at most the largest number of
  public rows per key (1 for a lookup table with unique keys).  Every unit's
  rows depend only on its own rows: removing a unit removes only its joined
  rows (a stable transformation, Dwork & Roth's stability; McSherry's PINQ
  Join).
* :class:`PrivateJoin`: the table is private, with the same privacy unit
  (one person's rows in both tables are removed together).  Before the join
  each private table keeps at most ``join_truncation`` = N rows per unit
  (chosen by a keyed hash of the unit and the row, reproducible with the
  plan's seed, independent of other units), and the join condition must
  equate the units, so after the join a unit has at most N·N rows, all its
  own.

Privacy guarantee
-----------------
The per-unit bounding (``max_groups`` groups, ``max_rows_per_group`` rows per
group) runs on the joined rows, and it bounds each unit's contribution
whatever number of rows the join produced for that unit.  Since every joined
row belongs to exactly one unit (public joins: the private row's unit;
private joins: the unit both sides share), adding or removing one unit still
changes at most ``max_groups`` groups by at most ``max_rows_per_group`` rows
each: the sensitivities, and so the events charged to the accountant, are
exactly those of the same query on one table.  The joins change bias and
running time (a unit's N·N rows, a public key's k rows), never the cost.

Citation
--------
McSherry, "Privacy Integrated Queries", SIGMOD 2009 (stable joins);
Wilson et al., PoPETs 2020 (bounding after the join, per-user truncation);
Johnson, Near & Song, "Towards Practical Differential Privacy for SQL
Queries", VLDB 2018 (join multiplicity as stability).

Runtime
-------
``O(columns)``; the engines compile the joins as hash joins
(:func:`privloss.query.engines._sql.joined_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PublicJoin", "PrivateJoin", "ParsedJoin", "JOIN_KINDS", "SEPARATOR",
           "qualified", "split_reference", "parse_from", "resolve", "ResolvedQuery",
           "rename_references",
           "describe_joins", "check_joins", "TRUNCATION_SEED_OFFSET"]

JOIN_KINDS = ("inner", "left")

#: between a table qualifier and a column name in a parsed reference (never in SQL text)
SEPARATOR = "\x1f"

#: the truncation of private table k uses SelectionKey.from_seed(seed + OFFSET + k)
TRUNCATION_SEED_OFFSET = 2 << 128


def qualified(table: str, name: str) -> str:
    return f"{table}{SEPARATOR}{name}"


def split_reference(reference: str) -> tuple:
    """``(qualifier or None, column)`` of a parsed column reference."""
    if SEPARATOR in reference:
        table, _, name = reference.partition(SEPARATOR)
        return table, name
    return None, reference


def _unsupported(message: str):
    from privloss.query.sql import UnsupportedSql
    return UnsupportedSql(message)


def _names(role: str, value) -> tuple:
    value = tuple(value)
    if not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{role} must be non-empty column names, got {value!r}")
    return value


@dataclass(frozen=True)
class PublicJoin:
    """A join with a public table (see the module docstring): ``table`` its
    declared name, ``source`` its data, ``columns`` pairs (its column, name in
    the joined relation)."""

    table: str
    source: object
    kind: str
    left_keys: tuple
    right_keys: tuple
    columns: tuple = ()

    def __post_init__(self):
        if self.kind not in JOIN_KINDS:
            raise ValueError(f"join kind must be one of {JOIN_KINDS}, got {self.kind!r}")
        left, right = _names("left_keys", self.left_keys), _names("right_keys", self.right_keys)
        if len(left) != len(right):
            raise ValueError(f"a join needs as many left keys as right keys, got {left} "
                             f"and {right}")
        columns = tuple((str(c), str(n)) for c, n in self.columns)
        object.__setattr__(self, "left_keys", left)
        object.__setattr__(self, "right_keys", right)
        object.__setattr__(self, "columns", columns)

    public = True

    @property
    def outputs(self) -> tuple:
        return tuple(name for _, name in self.columns)

    @property
    def stability(self) -> str:
        return "1 (a public table with unique keys); k with up to k rows per key"


@dataclass(frozen=True)
class PrivateJoin(PublicJoin):
    """A join with another private table on the privacy unit (see the module
    docstring); the plan's ``join_truncation`` applies to both sides."""

    public = False

    @property
    def stability(self) -> str:
        return "N*N rows per unit after truncating each side to N rows per unit"


def check_joins(joins, truncation, privacy_unit: str) -> tuple:
    """``(joins, truncation)`` checked: joins are :class:`PublicJoin` /
    :class:`PrivateJoin`, a private join needs ``truncation`` (an integer >= 1)
    and no other join takes it, no joined column is the unit or named twice."""
    from privloss.query.bounding import _positive_int_or_none

    joins = tuple(joins or ())
    if not all(isinstance(join, PublicJoin) for join in joins):
        raise TypeError(f"joins must be PublicJoin / PrivateJoin objects, got {joins!r}")
    truncation = _positive_int_or_none("join_truncation", truncation, allow_none=True)
    private = any(not join.public for join in joins)
    if private and truncation is None:
        raise ValueError("a join of two private tables needs join_truncation (rows kept per "
                         "unit in each table, an integer >= 1)")
    if truncation is not None and not private:
        raise ValueError(f"join_truncation applies to joins of two private tables only, got "
                         f"join_truncation={truncation} without one")
    available = set()
    for join in joins:
        if privacy_unit in join.outputs:
            raise ValueError(f"a joined table must not supply the privacy unit column "
                             f"{privacy_unit!r}")
        clash = available & set(join.outputs)
        if clash:
            raise ValueError(f"joined columns named twice: {sorted(clash)}")
        available |= set(join.outputs)
    return joins, truncation


def describe_joins(joins: tuple, truncation: int | None) -> list:
    """Public description of the joins (dry runs, release parameters)."""
    out = []
    for join in joins:
        entry = {"table": join.table, "public": join.public, "kind": join.kind,
                 "on": [f"{left} = {join.table}.{right}"
                        for left, right in zip(join.left_keys, join.right_keys)],
                 "columns": [name for _, name in join.columns]}
        if join.public:
            entry["stability"] = ("each private row matches at most k public rows (k: the "
                                  "most rows of one key in the public table); the bounding "
                                  "runs after the join, so the cost is unchanged")
        else:
            entry["truncation"] = truncation
            entry["stability"] = (f"each private table keeps at most {truncation} rows per "
                                  f"unit before the join: a unit has at most "
                                  f"{truncation}*{truncation} = {truncation * truncation} "
                                  f"joined rows, all its own; the bounding runs after the "
                                  f"join, so the cost is that of one table")
        out.append(entry)
    return out


@dataclass(frozen=True)
class ParsedJoin:
    """One ``JOIN table [alias] ON a.x = b.y [AND ...] | USING (x, ..)`` as parsed:
    ``pairs`` of (earlier side, joined side) references."""

    table: str
    alias: str
    kind: str
    pairs: tuple
    using: bool = False


def _table_of(node, exp, where: str) -> tuple:
    if not isinstance(node, exp.Table) or node.args.get("db") or not node.name:
        raise _unsupported(f"{where} must name one table, got {node.sql()!r}")
    return node.name, node.alias_or_name


def _pair(node, exp, aliases: list, alias: str) -> tuple:
    if not isinstance(node, exp.EQ):
        raise _unsupported(f"join conditions must be equalities of columns joined by AND "
                           f"(non-equi joins are not supported), got {node.sql()!r}")
    sides = []
    for side in (node.this, node.expression):
        if not isinstance(side, exp.Column) or not side.table or side.args.get("db"):
            raise _unsupported(f"each side of a join condition must be a qualified column "
                               f"(t.Country = c.Country), got {side.sql()!r}")
        if side.table not in aliases + [alias]:
            raise _unsupported(f"unknown table {side.table!r} in the join condition "
                               f"{node.sql()!r}")
        sides.append(qualified(side.table, side.name))
    tables = [split_reference(s)[0] for s in sides]
    if tables.count(alias) != 1:
        raise _unsupported(f"a join condition must relate the joined table {alias!r} to an "
                           f"earlier one, got {node.sql()!r}")
    return (sides[1], sides[0]) if tables[0] == alias else (sides[0], sides[1])


def parse_from(select, exp) -> tuple:
    """``(table, alias, joins)`` of a SELECT's FROM clause; refuses cross,
    natural, full, right, semi/anti and as-of joins, comma joins, subqueries
    and non-equi conditions, naming the construct."""
    source = select.args.get("from_") or select.args.get("from")
    if source is None:
        raise _unsupported("the query needs FROM <table>")
    if isinstance(source.this, exp.Subquery):
        raise _unsupported("subqueries are not supported")
    table, alias = _table_of(source.this, exp, "FROM")
    aliases, joins = [alias], []
    for node in select.args.get("joins") or ():
        side = (node.args.get("side") or "").upper()
        kind = (node.args.get("kind") or "").upper()
        method = (node.args.get("method") or "").upper()
        if kind == "CROSS" or (not side and not kind and not method
                               and not node.args.get("on") and not node.args.get("using")):
            raise _unsupported("cross joins (and FROM a, b) are not supported: join on keys "
                               "with JOIN ... ON or USING")
        if method:
            raise _unsupported(f"{method} JOIN is not supported (INNER or LEFT joins on "
                               f"equal keys only)")
        if side in ("RIGHT", "FULL") or kind in ("SEMI", "ANTI"):
            raise _unsupported(f"{side or kind} JOIN is not supported (INNER or LEFT only)")
        if kind not in ("", "INNER", "OUTER"):
            raise _unsupported(f"{kind} JOIN is not supported (INNER or LEFT only)")
        if isinstance(node.this, exp.Subquery):
            raise _unsupported("subqueries are not supported")
        name, joined = _table_of(node.this, exp, "JOIN")
        if joined in aliases:
            raise _unsupported(f"table name or alias {joined!r} is used twice: give each "
                               f"table its own alias")
        pairs = []
        using = node.args.get("using")
        if using:
            for item in using:
                column = item.name
                pairs.append((column, qualified(joined, column)))
        else:
            condition = node.args.get("on")
            parts, stack = [], [condition]
            while stack:
                item = stack.pop()
                if isinstance(item, exp.Paren):
                    stack.append(item.this)
                elif isinstance(item, exp.And):
                    stack += [item.expression, item.this]
                else:
                    parts.append(item)
            pairs = [_pair(part, exp, aliases, joined) for part in parts]
        joins.append(ParsedJoin(name, joined, "left" if side == "LEFT" else "inner",
                                tuple(pairs), bool(using)))
        aliases.append(joined)
    return table, alias, tuple(joins)


@dataclass(frozen=True)
class ResolvedQuery:
    """A parsed join query with every reference resolved to a column name of
    the joined relation: ``by``, ``aggregations``, ``where`` and ``joins``
    (:class:`PublicJoin` / :class:`PrivateJoin`) ready for a plan."""

    by: tuple
    aggregations: tuple
    where: object
    joins: tuple


def _rename_filter(node, rename):
    import dataclasses

    from privloss.query import filters as f

    if isinstance(node, f.Column):
        return f.Column(rename(node.name))
    if not dataclasses.is_dataclass(node):
        return node
    changes = {}
    for item in dataclasses.fields(node):
        value = getattr(node, item.name)
        if isinstance(value, f._Node):
            changes[item.name] = _rename_filter(value, rename)
        elif isinstance(value, tuple) and any(isinstance(v, f._Node) for v in value):
            changes[item.name] = tuple(_rename_filter(v, rename) for v in value)
    return dataclasses.replace(node, **changes) if changes else node


def resolve(parsed, schemas: dict, private: set, privacy_unit: str,
            sources: dict, join_truncation: int | None) -> ResolvedQuery:
    """Resolve ``parsed`` (a :class:`~privloss.query.sql.ParsedQuery` with
    joins) against the tables' column names ``schemas`` (alias -> columns;
    public schema, no rows read).  ``private``: the aliases of private tables
    (the FROM table is always private); ``sources``: alias -> data.  Raises
    :class:`~privloss.query.sql.UnsupportedSql` for an unknown or ambiguous
    column, a join of two private tables without ``join_truncation`` or not
    on the privacy unit."""
    base = parsed.alias
    order = [base] + [j.alias for j in parsed.joins]
    if privacy_unit not in schemas[base]:
        raise _unsupported(f"the privacy unit {privacy_unit!r} is not a column of the FROM "
                           f"table {parsed.table!r}")
    equal = set()          # (alias, alias', column) joined by equality on one name
    for join in parsed.joins:
        for left, right in join.pairs:
            (lq, ln), (_, rn) = split_reference(left), split_reference(right)
            if ln == rn:
                equal.add((lq, join.alias, ln))

    def locate(reference: str, visible: list) -> tuple:
        table, name = split_reference(reference)
        if table is not None:
            if table not in visible:
                raise _unsupported(f"unknown table {table!r} (tables: {visible})")
            if name not in schemas[table]:
                raise _unsupported(f"column {name!r} is not a column of table {table!r}")
            return table, name
        found = [alias for alias in visible if name in schemas[alias]]
        if not found:
            raise _unsupported(f"column {name!r} is not a column of any table of the query")
        first = found[0]
        if all(other == first or (first, other, name) in equal or (None, other, name) in equal
               for other in found):
            return first, name
        raise _unsupported(f"column {name!r} is ambiguous: qualify it (" +
                           " or ".join(f"{a}.{name}" for a in found) + ")")

    joins_located = []
    for index, join in enumerate(parsed.joins):
        visible = order[:index + 1]
        pairs = [(locate(left, visible), locate(right, [join.alias]))
                 for left, right in join.pairs]
        joins_located.append(pairs)
    used = [locate(b, order) for b in parsed.by]
    used += [locate(a.column, order) for a in parsed.aggregations if a.column is not None]
    if parsed.where is not None:
        used += [locate(c, order) for c in sorted(parsed.where.columns())]
    for pairs in joins_located:
        used += [left for left, _ in pairs if left[0] != base]
    names: dict = {}
    taken = set(schemas[base])
    for alias, column in dict.fromkeys(used):
        if alias == base:
            names[(alias, column)] = column
            continue
        name = column if column not in taken else f"{alias}.{column}"
        if name in taken:
            raise _unsupported(f"column {alias}.{column} clashes with a column named "
                               f"{name!r}: rename it")
        taken.add(name)
        names[(alias, column)] = name
    joins = []
    for join, pairs in zip(parsed.joins, joins_located):
        columns = tuple((column, names[(alias, column)]) for alias, column in names
                        if alias == join.alias)
        left_keys = tuple(names.get(left, left[1]) for left, _ in pairs)
        right_keys = tuple(right[1] for _, right in pairs)
        kind = PublicJoin
        if join.alias in private:
            kind = PrivateJoin
            if join_truncation is None:
                raise _unsupported(f"a join of two private tables ({parsed.table} and "
                                   f"{join.table}) needs --join-truncation N "
                                   f"(join_truncation=N): rows kept per unit in each table")
            if privacy_unit not in schemas[join.alias]:
                raise _unsupported(f"the private table {join.table!r} has no privacy unit "
                                   f"column {privacy_unit!r}")
            if not any(left == (base, privacy_unit) and right == (join.alias, privacy_unit)
                       for left, right in pairs):
                raise _unsupported(f"a join of two private tables must be on the privacy "
                                   f"unit: add {base}.{privacy_unit} = "
                                   f"{join.alias}.{privacy_unit}")
        joins.append(kind(join.table, sources[join.alias], join.kind, left_keys, right_keys,
                          columns))
    by, aggregations, where = rename_references(
        parsed, lambda reference: names[locate(reference, order)])
    return ResolvedQuery(by, aggregations, where, tuple(joins))


def rename_references(parsed, rename) -> tuple:
    """``(by, aggregations, where)`` of ``parsed`` with each column reference
    replaced by ``rename(reference)``."""
    from privloss.query.spec import Aggregation

    by = tuple(rename(b) for b in parsed.by)
    aggregations = tuple(a if a.column is None else
                         Aggregation(a.kind, rename(a.column), a.low, a.high, a.quantiles)
                         for a in parsed.aggregations)
    where = None if parsed.where is None else _rename_filter(parsed.where, rename)
    return by, aggregations, where

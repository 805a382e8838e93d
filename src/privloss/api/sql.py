"""``privloss.sql(query, tables=..., privacy_unit=..., bounds=..., ...)``: a DP
SQL query, parsed into a group-by plan and released like
:func:`privloss.aggregate` (``GROUP BY ROLLUP(...)``: like
:func:`privloss.rollup`, returning a ``RollupRelease``).

>>> import privloss                                                      # doctest: +SKIP
>>> release = privloss.sql("SELECT Country, COUNT(*), AVG(Price) FROM orders GROUP BY Country",
...                        tables={"orders": "orders.csv.gz"}, privacy_unit="CustomerID",
...                        bounds={"Price": (0, 100)}, epsilon=1.0, delta=1e-6)

Definition
----------
:func:`privloss.query.sql.parse_sql` turns the text into group columns and
aggregations (the supported subset and what is refused are documented
there); the table named in ``FROM`` must be a key of ``tables`` (a path,
Parquet directory or frame).  ``JOIN`` may name another key of ``tables``
(a private table with the same privacy unit, joined on it, with
``join_truncation=N`` rows kept per unit in each table) or a key of
``public_tables`` (public data: lookup tables such as country -> region);
see :mod:`privloss.query.joins` for the stability and cost of each.  The analyst's text never reaches an engine:
only the parsed column names do, as identifiers through the relational API.

Privacy guarantee
-----------------
That of :func:`privloss.aggregate` with the same parameters: the bounding
runs after the joins, so the events charged do not depend on them
(:mod:`privloss.query.joins`).

Citation
--------
Wilson et al., PoPETs 2020; sqlglot.

Runtime
-------
Parsing is linear in the query's length; then one :func:`privloss.aggregate`.
"""

from __future__ import annotations

__all__ = ["sql", "sql_parameters"]


def _declared(role: str, value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise TypeError(f"{role} must be a dict of table name -> data, got {value!r}")
    return value


def sql_parameters(query: str, *, tables: dict, privacy_unit: str, bounds: dict | None = None,
                   public_tables: dict | None = None, join_truncation=None,
                   engine: str = "duckdb", schemas: dict | None = None) -> dict:
    """``data``, ``by``, ``aggregations``, ``where``, ``joins`` and
    ``join_truncation`` of :func:`privloss.aggregate` for ``query`` (what
    :func:`sql`, the CLI and the service release).  A query with joins reads
    the schemas (column names) of its tables to resolve its columns, no row
    (``schemas``: table name -> the columns to resolve against instead, e.g.
    the service's granted columns).
    Raises :class:`~privloss.query.sql.UnsupportedSql` naming the construct,
    the undeclared table or the unresolvable column."""
    from privloss.query.sql import UnsupportedSql, parse_sql

    if not isinstance(tables, dict) or not tables:
        raise TypeError(f"tables must be a non-empty dict of name -> data, got {tables!r}")
    public = _declared("public_tables", public_tables)
    both = sorted(set(tables) & set(public))
    if both:
        raise ValueError(f"table {both[0]!r} is declared both private (tables) and public "
                         f"(public_tables)")
    from privloss.api.auto_bounds import auto_sql_bounds
    parsed = parse_sql(query, bounds=auto_sql_bounds(bounds), privacy_unit=privacy_unit)
    if parsed.table not in tables:
        where = "a public table" if parsed.table in public else "not declared"
        raise UnsupportedSql(f"the FROM table {parsed.table!r} must be a private table "
                             f"(declared: {sorted(tables)}); it is {where}")
    out = {"data": tables[parsed.table], "joins": (), "join_truncation": None}
    if not parsed.joins:
        if join_truncation is not None:
            raise ValueError("join_truncation applies to joins of two private tables only; "
                             "the query has no join")
        out = {**out, "by": list(parsed.by), "aggregations": list(parsed.aggregations),
               "where": parsed.where}
        if parsed.rollup:
            out.update(rollup=True)
        return out
    from privloss.query import engines
    from privloss.query.joins import resolve

    declared = {**tables, **public}
    for join in parsed.joins:
        if join.table not in declared:
            raise UnsupportedSql(f"table {join.table!r} is not declared (private: "
                                 f"{sorted(tables)}, public: {sorted(public)})")
    aliases = {parsed.alias: parsed.table, **{j.alias: j.table for j in parsed.joins}}
    known = dict(schemas or {})
    unread = [table for table in dict.fromkeys(aliases.values()) if table not in known]
    if unread:      # every schema on one connection
        known.update(zip(unread, engines.columns_of_tables([declared[t] for t in unread],
                                                           engine)))
    schemas = {alias: tuple(known[table]) for alias, table in aliases.items()}
    private = {alias for alias, table in aliases.items() if table in tables}
    sources = {alias: declared[table] for alias, table in aliases.items()}
    if not any(alias in private for alias in aliases if alias != parsed.alias) \
            and join_truncation is not None:
        raise ValueError("join_truncation applies to joins of two private tables only; the "
                         "query joins public tables")
    resolved = resolve(parsed, schemas, private, privacy_unit, sources, join_truncation)
    return {**out, "by": list(resolved.by), "aggregations": list(resolved.aggregations),
            "where": resolved.where, "joins": resolved.joins,
            "join_truncation": join_truncation}


def sql(query: str, *, tables: dict, privacy_unit: str, bounds: dict | None = None,
        public_tables: dict | None = None, join_truncation: int | None = None, **parameters):
    """Parse ``query`` and release it (see the module docstring); the other
    keyword arguments are :func:`privloss.aggregate`'s (:func:`privloss.rollup`'s
    for ``GROUP BY ROLLUP``).  Raises
    :class:`~privloss.query.sql.UnsupportedSql` (a ``ValueError``) naming the
    construct, before anything is charged."""
    prepared = sql_parameters(query, tables=tables, privacy_unit=privacy_unit, bounds=bounds,
                              public_tables=public_tables, join_truncation=join_truncation,
                              engine=parameters.get("engine", "duckdb"))
    data = prepared.pop("data")
    if prepared.pop("rollup", False):
        from privloss.api.rollup import rollup
        return rollup(data, privacy_unit=privacy_unit, by=prepared["by"],
                      aggregations=prepared["aggregations"], where=prepared["where"],
                      **parameters)
    from privloss.api.aggregate import aggregate
    return aggregate(data, privacy_unit=privacy_unit, **prepared, **parameters)

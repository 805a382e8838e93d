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
Parquet directory or frame).  The analyst's text never reaches an engine:
only the parsed column names do, as identifiers through the relational API.

Privacy guarantee
-----------------
That of :func:`privloss.aggregate` with the same parameters.

Citation
--------
Wilson et al., PoPETs 2020; sqlglot.

Runtime
-------
Parsing is linear in the query's length; then one :func:`privloss.aggregate`.
"""

from __future__ import annotations

__all__ = ["sql"]


def sql(query: str, *, tables: dict, privacy_unit: str, bounds: dict | None = None,
        **parameters):
    """Parse ``query`` and release it (see the module docstring); the other
    keyword arguments are :func:`privloss.aggregate`'s.  Raises
    :class:`~privloss.query.sql.UnsupportedSql` (a ``ValueError``) naming the
    construct, before anything is read or charged."""
    from privloss.api.aggregate import aggregate
    from privloss.query.sql import UnsupportedSql, parse_sql

    if not isinstance(tables, dict) or not tables:
        raise TypeError(f"tables must be a non-empty dict of name -> data, got {tables!r}")
    parsed = parse_sql(query, bounds=bounds, privacy_unit=privacy_unit)
    if parsed.table not in tables:
        raise UnsupportedSql(f"table {parsed.table!r} is not declared (declared: "
                             f"{sorted(tables)})")
    if parsed.rollup:
        from privloss.api.rollup import rollup
        return rollup(tables[parsed.table], privacy_unit=privacy_unit, by=list(parsed.by),
                      aggregations=list(parsed.aggregations), where=parsed.where,
                      **parameters)
    return aggregate(tables[parsed.table], privacy_unit=privacy_unit, by=list(parsed.by),
                     aggregations=list(parsed.aggregations), where=parsed.where, **parameters)

"""DP group-by beyond counts (issue 15): :func:`aggregate`, :func:`plan_aggregate`
and the small DP SQL :func:`sql_query`.  See ``docs/aggregate.md``.

Names are imported lazily (no DuckDB, sqlglot or mpmath at import time).
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.analytics.aggregate.api": ("aggregate", "plan_aggregate", "AggregateRelease"),
    "privloss.analytics.aggregate.spec": ("Aggregation",),
    "privloss.analytics.aggregate.sql": ("parse_sql", "sql_query", "UnsupportedSql"),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.analytics.aggregate", _EXPORTS)

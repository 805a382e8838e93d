"""The query layer: what a release reads and how it is bounded.

* :mod:`privloss.query.plan` - the immutable query plan every surface builds;
* :mod:`privloss.query.inputs` - data sources (files, Parquet directories,
  frames, DuckDB relations, SQL queries, Spark DataFrames);
* :mod:`privloss.query.sql` - the DP SQL front end (sqlglot -> plan);
* :mod:`privloss.query.engines` - one engine per backend (DuckDB, Spark) that
  compiles a plan's contribution bounding and per-group statistics into one
  query.

Nothing here is private by itself: engines return exact bounded statistics,
the input of :mod:`privloss.releases`.  Names are imported lazily: importing
this package loads neither DuckDB nor Spark.
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.query.engines": ("bounded_histogram",),
    "privloss.query.histogram": ("Histogram",),
    "privloss.query.inputs": ("SqlQuery",),
    "privloss.query.spec": ("Aggregation",),
    "privloss.query.sql": ("parse_sql", "UnsupportedSql"),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.query", _EXPORTS)

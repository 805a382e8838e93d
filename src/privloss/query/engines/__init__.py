"""The engines: one per backend, each compiling a
:class:`~privloss.query.plan.QueryPlan` into one query (:func:`run`);
:func:`bounded_histogram` and :func:`bounded_aggregates` are plans of the
top-k / histogram and group-by kinds.

>>> from privloss.query import bounded_histogram
>>> h = bounded_histogram("orders.csv.gz", user_column="CustomerID",
...                       item_column="StockCode", l0=10, linf=1, top=100)  # doctest: +SKIP
>>> h.items[:3], h.counts[:3], h.total_items, h.next_count              # doctest: +SKIP

Definition
----------
Reads (user, item) rows (see :mod:`privloss.query.inputs`), applies the
per-user contribution bounds of :mod:`privloss.query.bounding` (``l0``
distinct items per user chosen uniformly at random, each count capped at
``linf``), aggregates by item and returns a
:class:`~privloss.query.histogram.Histogram` sorted by count desc, then
label.  ``top=d_bar`` fetches only the top ``d_bar`` labels and the next count
from the engine; ``domain`` restricts the result to (and completes it with)
known labels.  Rows with a null user id or a null item are dropped (an empty
input is an empty histogram, not an error).  Engines: ``"duckdb"`` (embedded,
default) and ``"spark"``
(PySpark DataFrame API; the active session, else a local one).  Both give
identical results for the same data and seed (same keyed hash, same tie rules;
guaranteed for integer and string columns, and for CSV files, which both read
as text).

Privacy guarantee
-----------------
The output is exact, not private: it is the input of the DP algorithms.  After
bounding, adding or removing one user changes at most ``l0`` counts, each by at
most ``linf``.  The random ``l0`` choice uses a seed from ``source`` (default:
the secure source); an explicit ``seed`` is reproducible and **not** secure
(the guarantee above holds for any seed).

Citation
--------
Rogers et al., arXiv:2002.05839; Wilson et al., PoPETs 2020.

Runtime
-------
Inside the engine: one aggregation over the rows, a partitioned sort of the
distinct (user, item) pairs when ``l0`` is set, one aggregation by item.
Python receives at most ``top + 1`` rows (all items when ``top`` or ``domain``
asks for them).  Integer-valued text is grouped as integers (see
:mod:`privloss.query.bounding`); privloss's own DuckDB connections run under
a memory limit and spill beyond it (see
:mod:`privloss.query.engines.duckdb_engine`).
"""

from __future__ import annotations

import importlib

import numpy as np

from privloss.query.bounding import check_bounds, draw_seed
from privloss.query.histogram import Histogram, check_domain, check_top
from privloss.query.plan import Bounding, GroupStatistics, QueryPlan

__all__ = ["ENGINES", "run", "check", "columns", "columns_of_tables", "bounded_histogram",
           "bounded_aggregates",
           "check_input",
           "histogram_plan"]

#: Engine name -> module implementing ``check(plan)`` and ``run(plan)``.
ENGINES = {
    "duckdb": "privloss.query.engines.duckdb_engine",
    "spark": "privloss.query.engines.spark_engine",
}
#: how top-k and histogram errors name the unit and item columns
HISTOGRAM_ROLES = ("user_column", "item_column")


def engine_module(engine):
    """The module of ``engine`` (``ValueError`` naming the choices otherwise)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    return importlib.import_module(ENGINES[engine])


def check(plan: QueryPlan, engine: str = "duckdb") -> None:
    """Bind ``plan``'s source in ``engine`` and check its columns (no rows computed)."""
    engine_module(engine).check(plan)


def run(plan: QueryPlan, engine: str = "duckdb") -> GroupStatistics:
    """``plan``'s bounded per-group statistics, computed inside ``engine``."""
    return engine_module(engine).run(plan)


def groups_per_unit(plan: QueryPlan, thresholds, engine: str = "duckdb") -> tuple:
    """``(units, counts)``: per threshold, the units with at most that many
    distinct groups in ``plan``'s source (DuckDB only; ``ValueError`` else)."""
    module = engine_module(engine)
    if not hasattr(module, "groups_per_unit"):
        raise ValueError(f"max_groups 'auto' runs on the duckdb engine only, got {engine!r}")
    return module.groups_per_unit(plan, thresholds)


def _bounding_seed(seed, source) -> int:
    from privloss.query.bounding import SelectionKey
    if seed is None:
        return draw_seed(source)
    SelectionKey.from_seed(seed)      # validates it
    return seed


def histogram_plan(data, *, user_column: str, item_column: str, l0=None, linf=1, top=None,
                   seed: int = 0, where=None, measurement: str = "histogram",
                   noise: str | None = None) -> QueryPlan:
    """The plan of a bounded histogram of ``item_column`` (distinct users per
    item after bounding: at most ``l0`` items per user, ``linf`` rows per user
    and item), the head of ``top`` items when given, over the rows ``where``
    (a :mod:`privloss.query.filters` tree) holds."""
    bounds = check_bounds(l0, linf)
    return QueryPlan(source=data, privacy_unit=user_column, by=(item_column,),
                     bounding=Bounding(bounds.l0, bounds.linf), seed=seed, top=top,
                     measurements=(measurement,), roles=HISTOGRAM_ROLES, where=where,
                     noise=noise)


def check_input(data, *, user_column: str, item_column: str, engine: str = "duckdb",
                where=None) -> None:
    """Validate ``data`` without computing on its rows: the input resolves, a
    query is exactly one SELECT and binds, both columns exist.  The errors are
    those :func:`bounded_histogram` raises for the schema, so a caller (the
    CLI, a ledger) can raise them before charging a release."""
    check(histogram_plan(data, user_column=user_column, item_column=item_column, where=where),
          engine)


def bounded_histogram(data, *, user_column: str, item_column: str, l0=None, linf=1,
                      engine: str = "duckdb", top=None, domain=None, seed=None,
                      source=None, where=None, measurement: str = "histogram",
                      noise: str | None = None) -> Histogram:
    """Per-user bounded histogram of ``item_column``, computed inside ``engine``.

    ``data``: path, frame, :class:`~privloss.query.inputs.SqlQuery`, DuckDB
    relation or Spark DataFrame.  ``l0``: None (unrestricted) or integer >= 1;
    ``linf``: integer >= 1; ``top``: None or ``d_bar >= 1``; ``domain``: None or
    a sequence of distinct labels (all strings or all integers); ``seed``:
    None (drawn from ``source``, default the secure source) or a non-negative
    integer (reproducible, not secure).  Rows with a null user id or a null
    item are dropped; an empty input gives an empty histogram.  Raises
    ``ValueError`` / ``TypeError`` for bad arguments and what the schema shows
    (a missing column, a query that is not one SELECT, an unreadable file
    format), ``FileNotFoundError`` for a missing file, and
    :class:`~privloss.query.errors.ComputationFailed` (fixed message, the
    engine's text in the ``privloss.engine`` log) when the engine fails while
    computing.  See the module docstring.
    """
    top = check_top(top)
    domain = check_domain(domain)
    bounds = check_bounds(l0, linf)
    engine_module(engine)
    # the l0 choice needs a key: drawn from the secure source unless a seed is given
    if bounds.l0 is not None:
        seed = _bounding_seed(seed, source)
    elif seed is not None:
        _bounding_seed(seed, source)
    limit = top + 1 if top is not None and domain is None else None
    plan = histogram_plan(data, user_column=user_column, item_column=item_column, l0=l0,
                          linf=linf, top=limit, seed=0 if seed is None else seed,
                          where=where, measurement=measurement, noise=noise)
    result = run(plan, engine)
    items = [row["group"][0] for row in result.groups]
    counts = [row["rows"] for row in result.groups]
    if domain is not None:
        return Histogram.from_counts(dict(zip(items, counts)), top=top, domain=domain)
    if limit is None:       # the engine returned every group, unordered
        return Histogram.from_counts(dict(zip(items, counts)), top=top)
    next_count = 0
    if top is not None and len(items) > top:
        next_count = counts[top]
        items, counts = items[:top], counts[:top]
    return Histogram(tuple(items), np.array(counts, dtype=np.int64), result.total_groups,
                     next_count)


def bounded_aggregates(data, *, unit: str, by: tuple, value_columns: tuple, grids: dict,
                       quantile_columns: tuple, bins: int, max_groups: int, max_rows: int,
                       seed: int, key_texts=None, engine: str = "duckdb") -> list[dict]:
    """The group-by plan's statistics, one dict per group: ``group`` (tuple of
    values), ``distinct``, ``rows``, ``sum`` / ``nonnull`` (column -> int),
    ``bins`` (column -> {bin: count}).  Engine failures become
    :class:`~privloss.query.errors.ComputationFailed`."""
    plan = QueryPlan(source=data, privacy_unit=unit, by=tuple(by),
                     bounding=Bounding(max_groups, max_rows), seed=seed,
                     value_columns=tuple(value_columns), grids=dict(grids),
                     quantile_columns=tuple(quantile_columns), quantile_bins=bins,
                     keys=None if key_texts is None else tuple(map(tuple, key_texts)))
    return run(plan, engine).groups


def columns(data, engine: str = "duckdb") -> list:
    """The column names of ``data`` (its public schema; no row is computed):
    what :func:`privloss.query.joins.resolve` resolves a query's columns
    against.  Raises ``ValueError`` / ``TypeError`` as :func:`check` does."""
    if engine_module(engine).__name__.endswith("spark_engine"):
        from privloss.query.engines.spark_engine import columns_of
        return columns_of(data)
    from privloss.query.engines.duckdb_engine import open_source
    _, source = open_source(data)
    try:
        return [str(c) for c in source.relation.columns]
    finally:
        source.close()


def columns_of_tables(tables: list, engine: str = "duckdb") -> list:
    """:func:`columns` of each of ``tables`` (in order), read on one private
    connection where the engine allows (DuckDB: files and frames; a query
    with joins reads every table's schema, and each connection costs about
    30 ms of CPU).  Errors as :func:`columns`'s."""
    if engine_module(engine).__name__.endswith("spark_engine"):
        return [columns(data, engine) for data in tables]
    from privloss.query.engines.duckdb_engine import columns_of_tables as duckdb_columns
    return duckdb_columns(tables)

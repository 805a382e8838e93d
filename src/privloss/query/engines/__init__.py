"""Bounded histograms computed inside a query engine: :func:`bounded_histogram`.

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

from privloss.query.bounding import SelectionKey, check_bounds, draw_seed
from privloss.query.histogram import Histogram, check_domain, check_top
from privloss.query.inputs import resolve_input

__all__ = ["ENGINES", "bounded_histogram", "check_input"]

#: Engine name -> module implementing ``aggregate(inp, user, item, bounds, key, limit)``.
ENGINES = {
    "duckdb": "privloss.query.engines.duckdb_engine",
    "spark": "privloss.query.engines.spark_engine",
}


def _check_column(name: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty column name (str), got {value!r}")
    return value


def _check_engine(engine) -> str:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}, got {engine!r}")
    return engine


def check_input(data, *, user_column: str, item_column: str, engine: str = "duckdb") -> None:
    """Validate ``data`` without computing on its rows: the input resolves, a
    query is exactly one SELECT and binds, both columns exist.  The errors are
    those :func:`bounded_histogram` raises for the schema, so a caller (the
    CLI, a ledger) can raise them before charging a release."""
    user_column = _check_column("user_column", user_column)
    item_column = _check_column("item_column", item_column)
    if user_column == item_column:
        raise ValueError(f"user_column and item_column must differ, both are {user_column!r}")
    module = importlib.import_module(ENGINES[_check_engine(engine)])
    module.check_schema(resolve_input(data), user_column, item_column)


def bounded_histogram(data, *, user_column: str, item_column: str, l0=None, linf=1,
                      engine: str = "duckdb", top=None, domain=None, seed=None,
                      source=None) -> Histogram:
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
    user_column = _check_column("user_column", user_column)
    item_column = _check_column("item_column", item_column)
    if user_column == item_column:
        raise ValueError(f"user_column and item_column must differ, both are {user_column!r}")
    bounds = check_bounds(l0, linf)
    top = check_top(top)
    domain = check_domain(domain)
    module = importlib.import_module(ENGINES[_check_engine(engine)])
    key = None
    if bounds.l0 is not None:
        key = SelectionKey.from_seed(draw_seed(source) if seed is None else seed)
    elif seed is not None:
        SelectionKey.from_seed(seed)  # validate it anyway
    inp = resolve_input(data)
    limit = top + 1 if top is not None and domain is None else None
    result = module.aggregate(inp, user_column, item_column, bounds, key, limit)
    if domain is not None:
        return Histogram.from_counts(dict(zip(result.items, result.counts)), top=top,
                                     domain=domain)
    items, counts, next_count = result.items, result.counts, 0
    if top is not None and len(items) > top:
        next_count = counts[top]
        items, counts = items[:top], counts[:top]
    return Histogram(tuple(items), np.array(counts, dtype=np.int64), result.total_items,
                     next_count)

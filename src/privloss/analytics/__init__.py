"""Private histograms and top-k on real data (issue 5).

* :func:`bounded_histogram` - per-user contribution bounding and aggregation
  inside DuckDB (default) or Spark; returns a :class:`Histogram`;
* :class:`SqlQuery` - a SQL ``SELECT`` as input.

Names are imported lazily: ``import privloss.analytics`` loads neither DuckDB
nor Spark.
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.analytics.engines": ("bounded_histogram",),
    "privloss.analytics.histogram": ("Histogram",),
    "privloss.analytics.inputs": ("SqlQuery",),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.analytics", _EXPORTS)

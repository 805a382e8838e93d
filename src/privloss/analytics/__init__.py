"""Private histograms and top-k on real data (issue 5).

* :func:`bounded_histogram` - per-user contribution bounding and aggregation
  inside DuckDB (default) or Spark; returns a :class:`Histogram`;
* :class:`SqlQuery` - a SQL ``SELECT`` as input.

Names are imported lazily: ``import privloss.analytics`` loads neither DuckDB
nor Spark.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "privloss.analytics.engines": ("bounded_histogram",),
    "privloss.analytics.histogram": ("Histogram",),
    "privloss.analytics.inputs": ("SqlQuery",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'privloss.analytics' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)

"""What a histogram / top-k algorithm returns: :class:`Release`.

A release is the private output (labels, noisy counts, a 95% interval per
count) together with the privacy it spent, as ``privloss.events``, so a
budget (``PrivacyFilter``, the analytics ledger) can be charged without knowing
how the algorithm works.  Everything in it may be shown to the analyst: it is
computed only from the noisy output and public parameters (no exact count, not
even how many items the algorithm could see; ``tests/leaks`` checks every
field on neighbouring datasets).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import NamedTuple

import numpy as np

__all__ = ["Release"]


class Release(NamedTuple):
    """The output of one algorithm run.

    * ``items`` – released labels, in the released order (noisy order; never
      the order of the true counts);
    * ``counts`` – their noisy counts (``int64`` for discrete noise, ``float64``
      after least-squares post-processing);
    * ``ci95`` – one ``(low, high)`` pair per item: the interval contains the
      item's true (contribution-bounded) count with probability >= 95% (see the
      algorithm's docstring for what the probability is over);
    * ``events`` – the privacy spent, a tuple of ``privloss.events``; compose
      them with ``privloss.accounting`` (their order is the order of use);
    * ``algorithm`` – registry name (``"known-laplace"``, ...);
    * ``parameters`` – the noise parameters actually used (JSON-friendly:
      numbers and strings; exact rationals as strings such as ``"50/3"``);
    * ``spent`` – set by the high-level API (:mod:`privloss.api.protocol`):
      the budget after this release (a ledger's totals, or this release
      composed under the budget's model); None from an algorithm;
    * ``guarantee`` – without a ledger, this release's own guarantee (API);
    * ``cached`` – a ledger returned the stored answer of an identical query;
    * ``accuracy_plan`` – with ``target_half_width`` / ``min_release_users``
      (API): the :class:`~privloss.api.accuracy_plan.AccuracyPlan` whose epsilon
      the release used (public parameters only).
    """

    items: tuple
    counts: np.ndarray
    ci95: tuple
    events: tuple
    algorithm: str
    parameters: dict
    spent: dict | None = None
    guarantee: dict | None = None
    cached: bool = False
    accuracy_plan: object = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{_plain(item)!r}: {_plain(count)!r}"
                          for item, count in zip(self.items[:5], self.counts.tolist()[:5]))
        more = f", ... {len(self.items) - 5} more" if len(self.items) > 5 else ""
        text = f"Release({self.algorithm}, {len(self.items)} item(s) {{{shown}{more}}}"
        half_width = self.parameters.get("ci95_half_width")
        if half_width is not None:
            text += f", 95% interval +-{_plain(half_width)}"
        if self.spent is not None and "epsilon" in self.spent:
            text += f", spent epsilon={self.spent['epsilon']:.6g}"
            if "budget_epsilon" in self.spent:
                text += f" of {self.spent['budget_epsilon']:g}"
        if self.cached:
            text += ", stored answer"
        return text + ")"

    def columns(self) -> dict:
        """The release as columns: ``item``, ``count``, ``ci95_low``,
        ``ci95_high`` (plain Python values; counts after contribution bounding)."""
        rows = self.rows()
        return {"item": [row["item"] for row in rows],
                "count": [row["count"] for row in rows],
                "ci95_low": [row["ci95"][0] for row in rows],
                "ci95_high": [row["ci95"][1] for row in rows]}

    def to_pandas(self):
        """A pandas DataFrame, one row per released item (:meth:`columns`)."""
        from privloss._lazy import optional_import
        return optional_import("pandas").DataFrame(self.columns())

    def to_arrow(self):
        """A pyarrow Table, one row per released item (:meth:`columns`)."""
        from privloss._lazy import optional_import
        return optional_import("pyarrow").table(self.columns())

    def to_polars(self):
        """A Polars DataFrame, one row per released item (:meth:`columns`)."""
        from privloss._lazy import optional_import
        return optional_import("polars").DataFrame(self.columns())

    def rows(self) -> list[dict]:
        """``[{"item": ..., "count": ..., "ci95": [low, high]}, ...]`` with plain Python numbers."""
        return [{"item": _plain(item), "count": _plain(count), "ci95": [_plain(low), _plain(high)]}
                for item, count, (low, high) in zip(self.items, self.counts.tolist(), self.ci95)]

    def to_dict(self) -> dict:
        """JSON-ready summary: ``items`` rows, ``algorithm`` and ``parameters``
        (the events are left to the caller, who serialises them with the budget)."""
        return {"items": self.rows(), "algorithm": self.algorithm,
                "parameters": {key: _plain(value) for key, value in self.parameters.items()}}


def _plain(value):
    """NumPy scalars -> Python numbers, Fractions -> strings; other values unchanged."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        as_float = float(value)
        return as_float if math.isfinite(as_float) else str(as_float)
    if isinstance(value, np.generic):
        return value.item()
    return value

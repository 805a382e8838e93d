"""The bounded histogram that leaves the engine, and its data-independent order.

Definition
----------
:class:`Histogram` holds labels sorted by bounded count, descending, ties broken
by the label itself (ascending; integers numerically, strings by code point =
UTF-8 byte order, the same order DuckDB and Spark use).  The tie rule is fixed
and data-independent, as the top-k proofs require (``spec/topk.md`` section 1).

* ``items``: the labels, in that order;
* ``counts``: ``int64`` bounded counts, same order;
* ``total_items``: number of labels with positive bounded count *before*
  truncation to ``top`` (with a known domain: domain labels with positive count);
* ``next_count``: when truncated to the top ``d_bar`` labels, the count of the
  ``(d_bar + 1)``-th label (0 if there is none); 0 when not truncated.

With a known ``domain`` every domain label appears (count 0 included) and labels
outside it are dropped.  Domain labels are matched with data labels through
their text (``str`` for Python ints and strings, the engines' cast to text), so
a domain read from a file as strings matches an integer column.

Privacy guarantee
-----------------
None by itself: these are exact (bounded) counts, the input of the algorithms
in ``privloss.releases.algorithms``.

Citation
--------
Rogers et al., arXiv:2002.05839 (top-``d_bar`` plus the next count, as the
LinkedIn query engine returns); ``spec/topk.md`` sections 1 and 8.

Runtime
-------
:meth:`Histogram.from_counts`: ``O(n log n)`` for ``n`` labels.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

__all__ = ["Histogram", "check_top", "check_domain", "label_text"]


def label_text(label) -> str:
    """The text a label is matched by (``str`` of an int or a string)."""
    return str(label)


def check_top(top) -> int | None:
    """Validate ``top`` (``d_bar``): None or an integer >= 1."""
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, numbers.Integral):
        raise TypeError(f"top must be None or an integer >= 1, got {type(top).__name__} {top!r}")
    if top < 1:
        raise ValueError(f"top must be None or an integer >= 1, got {top}")
    return int(top)


def check_domain(domain) -> tuple | None:
    """Validate a known domain: a non-empty sequence of distinct labels, all
    strings or all integers (not bools)."""
    if domain is None:
        return None
    if isinstance(domain, (str, bytes)) or not hasattr(domain, "__iter__"):
        raise TypeError(f"domain must be a sequence of labels (strings or integers), got "
                        f"{type(domain).__name__}")
    labels = tuple(int(x) if isinstance(x, numbers.Integral) and not isinstance(x, bool) else x
                   for x in domain)
    if not labels:
        raise ValueError("domain must contain at least one label, got an empty sequence")
    if all(isinstance(x, str) for x in labels):
        pass
    elif all(isinstance(x, int) and not isinstance(x, bool) for x in labels):
        pass
    else:
        kinds = sorted({type(x).__name__ for x in labels})
        raise TypeError(f"domain labels must be all strings or all integers, got types {kinds}")
    seen: set[str] = set()
    for label in labels:
        text = label_text(label)
        if text in seen:
            raise ValueError(f"domain contains the label {label!r} more than once")
        seen.add(text)
    return labels


def _order_key(pair):
    label, count = pair
    return (-count, label)


class Histogram(NamedTuple):
    """Bounded counts sorted by count desc, then label (see module docstring)."""

    items: tuple
    counts: np.ndarray
    total_items: int
    next_count: int

    @property
    def truncated(self) -> bool:
        """True when some label with positive count was cut off by ``top``."""
        return self.total_items > int(np.count_nonzero(self.counts))

    def as_dict(self) -> dict:
        """``{label: count}`` of the released labels, in order."""
        return {label: int(count) for label, count in zip(self.items, self.counts)}

    @classmethod
    def from_counts(cls, counts: Mapping, *, top=None, domain=None) -> "Histogram":
        """Sort ``{label: count}`` and apply ``top`` / ``domain`` (module docstring).

        Counts must be integers >= 0; labels with count 0 are dropped unless
        they belong to ``domain``.
        """
        top = check_top(top)
        domain = check_domain(domain)
        clean = {}
        for label, count in counts.items():
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
                raise ValueError(f"count of label {label!r} must be an integer >= 0, "
                                 f"got {count!r}")
            clean[label] = int(count)
        if domain is not None:
            by_text = {label_text(label): count for label, count in clean.items()}
            pairs = [(label, by_text.get(label_text(label), 0)) for label in domain]
        else:
            pairs = [(label, count) for label, count in clean.items() if count > 0]
        try:
            pairs.sort(key=_order_key)
        except TypeError as error:
            raise TypeError(f"labels must be mutually comparable (all strings or all "
                            f"integers): {error}") from None
        total = sum(1 for _, count in pairs if count > 0)
        next_count = 0
        if top is not None and len(pairs) > top:
            next_count = pairs[top][1]
            pairs = pairs[:top]
        return cls(tuple(label for label, _ in pairs),
                   np.array([count for _, count in pairs], dtype=np.int64),
                   total, next_count)

"""Shared validation and bookkeeping of the histogram algorithms.

* argument checks (errors name the parameter, its value and the allowed range);
* exact parameters: a float privacy parameter becomes a rational *at most* its
  value (so the privacy claimed is never below the privacy delivered) with a
  small denominator (so the exact samplers stay in their int64 kernels);
* the histogram views the algorithms need: the known-domain counts aligned to
  a public domain, and the visible top-``d_bar`` of an unknown domain;
* the released order: by noisy value, ties broken by a data-independent label
  rank (never by the true counts' order, which would leak the ranking).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: Decimal-looking parameters (0.1, 0.25, 1e-3) are kept exact with denominators
#: up to this; other floats are rounded down to 24 significant bits.
_NICE_DENOMINATOR = 10**6
_SIGNIFICANT_BITS = 24


# ---------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------

def _real(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def check_positive(name: str, value) -> float:
    """A finite real > 0."""
    x = _real(name, value)
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be in (0, inf), got {value!r}")
    return x


def check_delta(name: str, value) -> float:
    """A probability in the open interval (0, 1)."""
    x = _real(name, value)
    if not 0 < x < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_integer(name: str, value, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (NumPy integers accepted, bools rejected)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_optional_integer(name: str, value, *, minimum: int = 1) -> int | None:
    return None if value is None else check_integer(name, value, minimum=minimum)


def check_fraction(name: str, value) -> float:
    """A real in the open interval (0, 1) used to split a budget."""
    x = _real(name, value)
    if not 0 < x < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return x


# ---------------------------------------------------------------------------
# exact parameters
# ---------------------------------------------------------------------------

def rational_at_most(value) -> Fraction:
    """A rational ``q <= value`` with a small denominator, ``q >= value (1 - 2^-23)``.

    Fractions and ints with small denominators are returned unchanged; a float
    such as 0.1 becomes 1/10 when that is not above its binary value (the
    binary 0.1 is slightly above 1/10), otherwise it is rounded down to 24
    significant bits.
    """
    exact = Fraction(value)
    if exact <= 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    if exact.denominator <= _NICE_DENOMINATOR:
        return exact
    nice = exact.limit_denominator(_NICE_DENOMINATOR)
    if nice <= exact and (exact - nice) <= exact / (1 << _SIGNIFICANT_BITS):
        return nice
    shift = _SIGNIFICANT_BITS - math.floor(math.log2(exact))
    if shift >= 0:
        return Fraction(math.floor(exact * (1 << shift)), 1 << shift)
    step = 1 << -shift
    return Fraction(math.floor(exact / step) * step)


def rational_at_least(value) -> Fraction:
    """A rational ``q >= value`` with a small denominator (mirror of :func:`rational_at_most`)."""
    return 1 / rational_at_most(1 / Fraction(value))


def float_at_most(value: Fraction) -> float:
    """The largest float <= ``value`` (events carry floats; a noise scale
    rounded *down* makes the claimed privacy loss larger, never smaller)."""
    result = float(value)
    if Fraction(result) > value:
        result = math.nextafter(result, -math.inf)
    return result


def float_at_least(value: Fraction) -> float:
    """The smallest float >= ``value``."""
    result = float(value)
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def sqrt_float_at_most(value: Fraction) -> float:
    """The largest float ``s`` with ``s * s <= value`` exactly (a sigma for an event)."""
    s = math.sqrt(float(value))
    while Fraction(s) ** 2 > value:
        s = math.nextafter(s, -math.inf)
    while Fraction(math.nextafter(s, math.inf)) ** 2 <= value:
        s = math.nextafter(s, math.inf)
    return s


# ---------------------------------------------------------------------------
# histograms
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class HistogramView:
    """A validated histogram: labels, int64 counts (non-increasing), and what
    the engine said about truncation."""

    items: tuple
    counts: np.ndarray
    total_items: int
    next_count: int

    @property
    def positive(self) -> int:
        """Number of items with a positive count in this histogram."""
        return int(np.count_nonzero(self.counts > 0))

    @property
    def truncated(self) -> bool:
        """True when the engine cut the list (more positive items exist than it returned)."""
        return self.next_count > 0 or self.total_items > self.positive


def check_histogram(histogram) -> HistogramView:
    """Validate a ``Histogram(items, counts, total_items, next_count)`` (any object
    with those attributes): distinct hashable items, one non-negative integer
    count each, counts sorted in non-increasing order, ``total_items`` and
    ``next_count`` non-negative integers."""
    missing = [name for name in ("items", "counts", "total_items", "next_count")
               if not hasattr(histogram, name)]
    if missing:
        raise TypeError(f"histogram must have items, counts, total_items and next_count "
                        f"(a privloss.query.histogram.Histogram); missing {missing} on "
                        f"{type(histogram).__name__}")
    items = tuple(histogram.items)
    counts = np.asarray(histogram.counts)
    if counts.ndim != 1 or counts.size != len(items):
        raise ValueError(f"histogram.counts must be one-dimensional with one count per item "
                         f"({len(items)}), got shape {counts.shape}")
    if counts.size and counts.dtype.kind not in "iu":
        raise ValueError(f"histogram.counts must be integers, got dtype {counts.dtype}")
    counts = counts.astype(np.int64)
    if counts.size and counts.min() < 0:
        raise ValueError(f"histogram.counts must be >= 0, got {int(counts.min())}")
    if counts.size > 1 and np.any(np.diff(counts) > 0):
        raise ValueError("histogram.counts must be sorted in non-increasing order "
                         "(ties by a fixed label rule), as bounded_histogram returns them")
    seen = set()
    for i, item in enumerate(items):
        try:
            if item in seen:
                raise ValueError(f"histogram.items must be distinct; {item!r} repeats")
        except TypeError:
            raise TypeError(f"histogram.items[{i}] must be hashable, got {item!r}") from None
        seen.add(item)
    total = check_integer("histogram.total_items", histogram.total_items, minimum=0)
    next_count = check_integer("histogram.next_count", histogram.next_count, minimum=0)
    view = HistogramView(items, counts, total, next_count)
    if counts.size and next_count > int(counts[counts > 0].min(initial=next_count)):
        raise ValueError(f"histogram.next_count ({next_count}) must not exceed the smallest "
                         f"returned positive count")
    return view


def domain_counts(view: HistogramView, domain) -> tuple[tuple, np.ndarray]:
    """Counts over the known domain: ``domain`` order, zeros for absent labels.

    ``domain=None`` means the histogram's items *are* the public domain (the
    engine was called with ``domain=``, so zero-count labels are present).
    Labels are matched by their text (``str``), as the engines match a domain
    read from a file to an integer column; labels outside ``domain`` are
    dropped.  A truncated histogram cannot be aligned to a domain: a missing
    label might have a positive count.
    """
    if domain is None:
        if view.truncated:
            raise ValueError("a known-domain algorithm needs the count of every domain item, but "
                             "the histogram was truncated; build it with domain= and no top=")
        return view.items, view.counts.copy()
    if isinstance(domain, (str, bytes)):
        raise TypeError("domain must be a sequence of labels, got a string")
    labels = tuple(domain)
    if not labels:
        raise ValueError("domain must contain at least one label, got an empty sequence")
    index = {}
    for i, label in enumerate(labels):
        if str(label) in index:
            raise ValueError(f"domain labels must be distinct; {label!r} repeats")
        index[str(label)] = i
    counts = np.zeros(len(labels), dtype=np.int64)
    for item, count in zip(view.items, view.counts.tolist()):
        position = index.get(str(item))
        if position is not None:
            counts[position] = count
    present = {str(item) for item in view.items}
    if view.truncated and any(str(label) not in present for label in labels):
        raise ValueError("the histogram was truncated (top= in the engine), so domain labels "
                         "missing from it may have positive counts; build it with domain= and "
                         "no top=")
    return labels, counts


@dataclass(frozen=True)
class Visible:
    """What an unknown-domain algorithm may look at: the top ``len(items)``
    positive labels and the next count ``h_(d+1)`` (0 when there is none)."""

    items: tuple
    counts: np.ndarray
    next_count: int


def visible_top(view: HistogramView, d_bar: int | None) -> Visible:
    """The top ``min(d_bar, returned)`` positive labels and the count just below them.

    The cut-off rank is data-independent: ``d_bar`` (a parameter) or the
    engine's ``top`` (when it truncated, ``len(items)`` is that parameter).
    Zero-count labels (from a domain) are never visible.
    """
    positive = view.positive       # counts are non-increasing: positives come first
    if d_bar is not None and positive > d_bar:
        return Visible(view.items[:d_bar], view.counts[:d_bar].copy(), int(view.counts[d_bar]))
    return Visible(view.items[:positive], view.counts[:positive].copy(), view.next_count)


def label_rank(labels: tuple) -> np.ndarray:
    """A data-independent rank of the labels (sorted order; by type and repr if
    the labels do not compare), used only to break ties among noisy values."""
    positions = range(len(labels))
    try:
        ordered = sorted(positions, key=labels.__getitem__)
    except TypeError:   # mixed label types: fall back to a total order on (type, repr)
        ordered = sorted(positions, key=lambda i: (type(labels[i]).__name__, repr(labels[i])))
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.asarray(ordered, dtype=np.int64)] = np.arange(len(labels), dtype=np.int64)
    return rank


def noisy_order(values: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Indices sorting ``values`` decreasingly, ties by ``rank`` (post-processing only)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.lexsort((rank, -values))
    try:
        return np.lexsort((rank, -values.astype(np.int64)))
    except OverflowError:   # exact noisy counts beyond int64 (epsilon ~ 1e-300): Python ints
        order = sorted(range(values.size), key=lambda i: (-int(values[i]), int(rank[i])))
        return np.asarray(order, dtype=np.int64)

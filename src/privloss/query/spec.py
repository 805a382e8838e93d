"""The public parameters of a DP group-by query, checked before anything is read.

Definition
----------
An :class:`Aggregation` is one requested output column per group:

* ``count``: rows (after bounding) per group;
* ``count_distinct``: privacy units per group (after bounding);
* ``sum`` of a column clamped to ``[low, high]``;
* ``mean`` of such a column (noisy centred sum / noisy count of non-null values);
* ``quantile`` of such a column at one or more levels ``q`` in (0, 1).

Every numeric column is put on the grid ``g = 2^-k`` (:class:`ValueGrid`):
``units(x) = floor(clamp(x * 2^k, lo, hi) + 1/2)`` with integers
``lo = round(low * 2^k)``, ``hi = round(high * 2^k)`` (round half up).  With
``|lo|, |hi| < 2^51`` every step is exact in IEEE doubles, so DuckDB and
Python compute the same integers, and sums of units are exact integers: the
noise is integer noise and the release ``(sum + Z) * g`` is an exact float
(docs/mechanisms.md, why float noise is unsafe).  Default ``k``: the span
``high - low`` covers about ``2^20`` grid steps.

Privacy guarantee
-----------------
None by itself: these checks only use public parameters.

Citation
--------
Wilson et al., "Differentially Private SQL with Bounded User Contribution",
PoPETs 2020 (clamping per row, per-group contribution bounds); Mironov, CCS 2012.

Runtime
-------
O(number of aggregations).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Aggregation", "ValueGrid", "KINDS", "check_aggregations", "parse_value_spec",
           "check_positive_integer", "check_max_groups", "MAX_GROUPS", "check_budget",
           "DEFAULT_QUANTILE_BINS"]

KINDS = ("count", "count_distinct", "sum", "mean", "quantile")
#: grid steps over the span high - low by default (2^20)
DEFAULT_GRID_BITS = 20
#: candidate points of a quantile: DEFAULT_QUANTILE_BINS + 1 points from low to high
DEFAULT_QUANTILE_BINS = 256
#: bound on |lo|, |hi| in grid units: x * 2^k + 1/2 is then exact in a double
UNITS_LIMIT = 1 << 51


def check_positive_integer(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value}")
    return int(value)


#: most groups one unit may touch: each is a mechanism per measurement in the
#: composition, and 10^5 already takes about 20 s to calibrate (the service allows 1,000)
MAX_GROUPS = 10_000


def check_max_groups(value) -> int:
    """``max_groups``: an integer in [1, :data:`MAX_GROUPS`]."""
    groups = check_positive_integer("max_groups", value)
    if groups > MAX_GROUPS:
        raise ValueError(f"max_groups must be an integer in [1, {MAX_GROUPS:,}], got {groups}")
    return groups


def _finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def check_budget(epsilon, delta) -> tuple[float, float]:
    """epsilon in (0, 100], delta in [0, 0.1)."""
    epsilon = _finite("epsilon", epsilon)
    if not 0 < epsilon <= 100:
        raise ValueError(f"epsilon must be in (0, 100], got {epsilon!r}")
    delta = _finite("delta", delta)
    if not 0 <= delta < 0.1:
        raise ValueError(f"delta must be in [0, 0.1), got {delta!r}")
    return epsilon, delta


def _round_half_up(value: Fraction) -> int:
    return math.floor(value + Fraction(1, 2))


@dataclass(frozen=True)
class ValueGrid:
    """Grid ``2^-exponent`` and the clamping range in grid units ``[lo, hi]``."""

    exponent: int
    lo: int
    hi: int

    @classmethod
    def for_range(cls, column: str, low: float, high: float, exponent=None) -> "ValueGrid":
        span = Fraction(high) - Fraction(low)
        if exponent is None:
            exponent = DEFAULT_GRID_BITS - (span.numerator.bit_length()
                                            - span.denominator.bit_length())
        elif isinstance(exponent, bool) or not isinstance(exponent, numbers.Integral):
            raise TypeError(f"grid exponent of {column!r} must be an integer, got {exponent!r}")
        exponent = int(exponent)
        scale = Fraction(2) ** exponent
        lo, hi = _round_half_up(Fraction(low) * scale), _round_half_up(Fraction(high) * scale)
        if max(abs(lo), abs(hi)) >= UNITS_LIMIT:
            raise ValueError(f"the range [{low!r}, {high!r}] of column {column!r} is too far "
                             f"from 0 for its grid 2^-{exponent}: |low|, |high| must be below "
                             f"2^51 grid steps (shift the column or use a coarser grid)")
        if hi <= lo:
            raise ValueError(f"the range [{low!r}, {high!r}] of column {column!r} is narrower "
                             f"than one grid step 2^-{exponent}")
        return cls(exponent, lo, hi)

    @property
    def step(self) -> Fraction:
        return Fraction(2) ** -self.exponent

    def to_float(self, units) -> float:
        """units * 2^-k (exact whenever |units| < 2^53)."""
        return math.ldexp(float(units), -self.exponent)

    def units_of(self, value: float) -> int | None:
        """The Python reference of the engine's rounding (same IEEE operations)."""
        if value is None or math.isnan(value):
            return None                                     # missing
        scaled = math.ldexp(float(value), self.exponent)
        clamped = min(max(scaled, float(self.lo)), float(self.hi))
        return math.floor(clamped + 0.5)

    @property
    def middle(self) -> int:
        """Centre of [lo, hi] in units (rounded down)."""
        return (self.lo + self.hi) // 2

    @property
    def largest_magnitude(self) -> int:
        return max(abs(self.lo), abs(self.hi))

    @property
    def centred_magnitude(self) -> int:
        return max(self.hi - self.middle, self.middle - self.lo)


@dataclass(frozen=True)
class Aggregation:
    """One output column: ``kind`` in :data:`KINDS`; ``column``, ``low``, ``high``
    for sum / mean / quantile; ``quantiles`` (levels in (0, 1)) for quantile."""

    kind: str
    column: str | None = None
    low: float | None = None
    high: float | None = None
    quantiles: tuple = ()

    @property
    def name(self) -> str:
        if self.kind in ("count", "count_distinct"):
            return self.kind
        if self.kind == "quantile":
            levels = ",".join(f"{q:g}" for q in self.quantiles)
            return f"quantile({self.column},{levels})"
        return f"{self.kind}({self.column})"

    def output_names(self) -> list[str]:
        if self.kind == "quantile":
            return [f"quantile({self.column},{q:g})" for q in self.quantiles]
        return [self.name]


def check_aggregation(value) -> Aggregation:
    if not isinstance(value, Aggregation):
        raise TypeError(f"aggregations must be Aggregation objects (or CLI-style strings), got "
                        f"{value!r}")
    if value.kind not in KINDS:
        raise ValueError(f"aggregation kind must be one of {list(KINDS)}, got {value.kind!r}")
    if value.kind in ("count", "count_distinct"):
        if value.column is not None or value.low is not None or value.quantiles:
            raise ValueError(f"{value.kind} takes no column or range")
        return value
    if not isinstance(value.column, str) or not value.column:
        raise TypeError(f"{value.kind} needs a non-empty column name, got {value.column!r}")
    low = _finite(f"low of {value.kind}({value.column})", value.low)
    high = _finite(f"high of {value.kind}({value.column})", value.high)
    if not low < high:
        raise ValueError(f"{value.kind}({value.column}) needs LOW < HIGH, got low={low!r}, "
                         f"high={high!r}")
    levels = ()
    if value.kind == "quantile":
        if not value.quantiles:
            raise ValueError(f"quantile({value.column}) needs at least one level q in (0, 1)")
        levels = tuple(_finite("quantile level", q) for q in value.quantiles)
        for q in levels:
            if not 0 < q < 1:
                raise ValueError(f"quantile levels must be in (0, 1), got {q!r}")
        if len(set(levels)) != len(levels):
            raise ValueError(f"quantile levels of {value.column!r} repeat: {list(levels)}")
    elif value.quantiles:
        raise ValueError(f"{value.kind} takes no quantile levels")
    return Aggregation(value.kind, value.column, low, high, levels)


def parse_value_spec(kind: str, text: str) -> Aggregation:
    """``COL:LOW:HIGH`` (sum, mean) or ``COL:LOW:HIGH:Q[,Q]`` (quantile); the
    column name is everything before the last 2 (or 3) colons."""
    parts = text.rsplit(":", 3 if kind == "quantile" else 2)
    wanted = 4 if kind == "quantile" else 3
    form = "COL:LOW:HIGH:Q[,Q]" if kind == "quantile" else "COL:LOW:HIGH"
    if len(parts) != wanted or not parts[0]:
        raise ValueError(f"--{kind} must be {form}, got {text!r}")
    try:
        low, high = float(parts[1]), float(parts[2])
        levels = tuple(float(q) for q in parts[3].split(",")) if kind == "quantile" else ()
    except ValueError:
        raise ValueError(f"--{kind} must be {form} with numbers, got {text!r}") from None
    return check_aggregation(Aggregation(kind, parts[0], low, high, levels))


def _from_text(text: str) -> Aggregation:
    kind, _, rest = text.partition(":")
    kind = kind.strip().replace("-", "_")
    if kind in ("count", "count_distinct") and not rest:
        return Aggregation(kind)
    if kind in ("sum", "mean", "quantile"):
        return parse_value_spec(kind, rest)
    raise ValueError(f"aggregation must be 'count', 'count_distinct', 'sum:COL:LOW:HIGH', "
                     f"'mean:COL:LOW:HIGH' or 'quantile:COL:LOW:HIGH:Q[,Q]', got {text!r}")


def check_aggregations(values) -> tuple[Aggregation, ...]:
    """A non-empty tuple of distinct checked aggregations (strings accepted in
    the CLI form ``"sum:price:0:100"``)."""
    if isinstance(values, (str, Aggregation)) or not hasattr(values, "__iter__"):
        raise TypeError(f"aggregations must be a list, got {type(values).__name__}")
    out = []
    for value in values:
        aggregation = _from_text(value) if isinstance(value, str) else value
        out.append(check_aggregation(aggregation))
    if not out:
        raise ValueError("aggregations must contain at least one aggregation, got none")
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"aggregations repeat: {names}")
    by_column: dict[str, tuple] = {}
    for a in out:
        if a.column is not None:
            if by_column.setdefault(a.column, (a.low, a.high)) != (a.low, a.high):
                raise ValueError(f"column {a.column!r} is given two different ranges "
                                 f"{by_column[a.column]} and {(a.low, a.high)}: one range per "
                                 f"column")
    return tuple(out)

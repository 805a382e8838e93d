"""Private clamping bounds (``auto``): a charged pre-pass that estimates a
value column's range with DP quantiles, inside the release it serves.

>>> from privloss.api.aggregate import aggregate             # doctest: +SKIP
>>> aggregate("retail.csv", privacy_unit="CustomerID", by=["Country"],
...           aggregations=["mean:UnitPrice:auto"], epsilon=1.0, delta=1e-6)

Definition
----------
A sum / mean / quantile column written ``COL:auto`` (``--mean COL:auto``;
``Aggregation(kind, COL, "auto", "auto")``) gets its ``[low, high]`` from the
data, privately:

1. **Budget.**  ``AUTO_SHARE`` (10%) of epsilon goes to the bounds, split
   equally over the ``2 c`` estimates of ``c`` auto columns; each estimate's
   strength is rounded down to a multiple of ``2^-30``.  The release itself is
   calibrated (:func:`~privloss.releases.calibration.build_plan`) for the
   remaining ``(1 - AUTO_SHARE) epsilon`` with a placeholder grid of
   ``[-2^20, 2^20]`` units for each auto column.  All events (the release's and
   one ``BoundedRange(s, count=1)`` per estimate) are fixed from public
   parameters, composed by the accountant and charged in the release's one
   ledger charge; nothing is read before it.
2. **Pre-pass** (after the charge): one engine plan with the release's
   bounding (``max_groups`` groups, ``max_rows_per_group`` rows per group and
   unit: at most ``G R`` rows per unit), its filter, keys and joins, reads per
   group the counts ``c_j`` of kept non-null values ``<= t_j`` for the public
   candidates ``t_j`` of :data:`CANDIDATES`: ``0`` and ``+-2^e`` for
   ``e = -10 .. 40`` (103 points, no data-dependent domain), on the grid
   ``2^-10`` (values clamped to ``[-2^40, 2^40]``).  Summed over groups, the
   ``q``-quantile (``q = LOW_LEVEL = 5%``, ``HIGH_LEVEL = 95%``) is drawn by
   the exponential mechanism with score ``-|c_j - q n|`` (scaled to integers,
   exact sampler), score range ``2 max(q, 1 - q) G R`` as
   :mod:`privloss.releases.aggregate`'s quantiles.
3. **Bounds** (post-processing): ``low`` the 5% estimate, ``high`` the 95%
   estimate (when not above ``low``, the next candidate: the range is never
   empty).  With ``2^m = max(|low|, |high|)`` the column's grid is ``2^-(20 -
   m)``, so ``|lo|, |hi| <= 2^20`` units: every sensitivity (``R |lo|``,
   ``R |hi|``, the centred ``R (hi - lo) / 2``) is at most the placeholder's,
   and the release's noise, calibrated for the placeholder, stays valid
   (larger noise than needed, never smaller).

The estimated bounds are noisy outputs; the release reports them
(``parameters["auto_bounds"]``).

**Why 5% / 95%.**  Above the largest value every candidate scores the same
``-(1 - q) n``: an estimate is reliable only when ``(1 - q) n s / (2 max(q,
1-q) G R)`` clearly exceeds ``ln 103``; 5% / 95% needs a fifth of the ranks
1% / 99% does, at the cost of clamping the outer 5%.  Measured on the retail
data (UnitPrice by Country, G = 1, R = 5, n = 21206 kept values), 300 draws
at epsilon 0.05 per estimate (epsilon 1 in all): neither level is reliable
there (the 95% estimate is 16 in 39 draws, the rest spread up to 2^40; the
99% estimate at its most frequent candidate 15 times); at epsilon 0.5 per
estimate the estimates concentrate (tests/api/test_auto_bounds.py).  Small
budgets on small data should give bounds.

Privacy guarantee
-----------------
User-level (add/remove one unit), pure DP for the pre-pass: one unit changes
each ``c_j`` and ``n`` by at most ``G R`` (bounding), so each estimate is
``s``-bounded-range (Dong, Durfee, Rogers 2020) hence ``s``-DP; the release's
events hold with the placeholder sensitivities (step 3); all are composed
together (fully adaptive within the one release).  The bounds' choice is
data-dependent only through the noisy estimates.

Citation
--------
Smith, STOC 2011 (quantiles by the exponential mechanism); Wilson et al.,
PoPETs 2020 (bounded contributions); Dong, Durfee, Rogers, ICML 2020.

Runtime
-------
One extra engine query (103 conditional counts per auto column) and ``2 c``
exact exponential-mechanism draws over 103 candidates.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["AUTO_SHARE", "LOW_LEVEL", "HIGH_LEVEL", "CANDIDATES", "AutoBounds",
           "split_auto", "estimate_bounds", "grid_for"]

#: the share of epsilon spent on the bounds (all auto columns together)
AUTO_SHARE = Fraction(1, 10)
#: the quantile levels estimated as low and high
LOW_LEVEL, HIGH_LEVEL = Fraction(5, 100), Fraction(95, 100)
#: the pre-pass grid 2^-PREPASS_EXPONENT and the candidates' exponent range
PREPASS_EXPONENT, SMALLEST, LARGEST = 10, -10, 40
#: the release's placeholder grid: [-2^PLACEHOLDER_BITS, 2^PLACEHOLDER_BITS] units
PLACEHOLDER_BITS = 20
#: the public candidates (values): -2^40 .. -2^-10, 0, 2^-10 .. 2^40
CANDIDATES = tuple([-Fraction(2) ** e for e in range(LARGEST, SMALLEST - 1, -1)] + [Fraction(0)]
                   + [Fraction(2) ** e for e in range(SMALLEST, LARGEST + 1)])
_STRENGTH_BITS = 30
_KINDS = ("sum", "mean", "quantile")


def _is_auto(value) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


def _parse(text: str):
    """``kind:COL:auto[:Q[,Q]]`` -> an Aggregation with placeholder bounds, or None."""
    from privloss.query.spec import Aggregation
    kind, _, rest = text.partition(":")
    kind = kind.strip().replace("-", "_")
    if kind not in _KINDS:
        return None
    parts = rest.rsplit(":", 2 if kind == "quantile" else 1)
    if len(parts) < 2 or not parts[0]:
        return None
    marker = parts[1]
    if not _is_auto(marker) or (kind == "quantile") != (len(parts) == 3):
        return None
    levels = ()
    if kind == "quantile":
        try:
            levels = tuple(float(q) for q in parts[2].split(","))
        except ValueError:
            raise ValueError(f"--quantile must be COL:auto:Q[,Q] with numbers, got "
                             f"{rest!r}") from None
    return Aggregation(kind, parts[0], -1.0, 1.0, levels)


@dataclass(frozen=True)
class AutoBounds:
    """The public plan of the bounds pre-pass: the auto ``columns``, the total
    ``epsilon`` and the ``share`` spent here, each estimate's ``strength``,
    the ``events`` (one ``BoundedRange`` per estimate) and the bounding."""

    columns: tuple
    epsilon: float
    share: Fraction
    strength: Fraction
    events: tuple
    max_groups: int
    max_rows_per_group: int

    def key(self) -> dict:
        """What the ledger key adds (the placeholder range is not a given range)."""
        return {"auto_bounds": {"columns": list(self.columns), "epsilon": self.epsilon,
                                "share": str(self.share)}}

    def check_engine(self, engine: str) -> None:
        """Every engine computes the rank counts."""

    def apply(self, release_plan, calibrated, engine: str, source):
        """After the charge: :func:`with_estimated_bounds`."""
        return with_estimated_bounds(release_plan, calibrated, self, engine, source)

    def describe(self) -> dict:
        """The dry run's / release's public description."""
        return {"columns": list(self.columns), "share_of_epsilon": float(self.share),
                "epsilon_per_estimate": float(self.strength),
                "levels": [float(LOW_LEVEL), float(HIGH_LEVEL)],
                "candidates": "0 and +-2^e, e = -10..40",
                "mechanism": "exponential mechanism over the public candidates (exact), "
                             "bounded contributions",
                "events": [repr(e) for e in self.events]}


def split_auto(aggregations, *, epsilon, grid_exponents, max_groups, max_rows_per_group):
    """``(aggregations, grid_exponents, release_epsilon, auto)``: the auto
    columns replaced by the placeholder range (grid exponent fixed), the
    release's share of epsilon and the :class:`AutoBounds` (None, and
    everything unchanged, without auto columns).  Raises ValueError /
    TypeError for bad input (nothing is read or charged)."""
    from privloss.query.spec import Aggregation, check_budget, check_positive_integer

    if isinstance(aggregations, (str, Aggregation)) or not hasattr(aggregations, "__iter__"):
        return aggregations, grid_exponents, epsilon, None
    out, columns = [], []
    for value in aggregations:
        parsed = None
        if isinstance(value, str):
            parsed = _parse(value)
        elif isinstance(value, Aggregation) and value.kind in _KINDS and _is_auto(value.low) \
                and (value.high is None or _is_auto(value.high)):
            parsed = Aggregation(value.kind, value.column, -1.0, 1.0, value.quantiles)
        if parsed is None:
            out.append(value)
            continue
        out.append(parsed)
        if parsed.column not in columns:
            columns.append(parsed.column)
    if not columns:
        return aggregations, grid_exponents, epsilon, None
    grid_exponents = dict(grid_exponents or {})
    for column in columns:
        if column in grid_exponents:
            raise ValueError(f"grid_exponents of {column!r}: an auto-bounded column takes its "
                             f"grid from the estimated bounds, give none")
        grid_exponents[column] = PLACEHOLDER_BITS
    if isinstance(epsilon, str):
        raise ValueError(f"epsilon {epsilon!r} cannot be combined with auto bounds (give a "
                         f"number)")
    epsilon, _ = check_budget(epsilon, 0.0)
    max_groups = check_positive_integer("max_groups", max_groups)
    max_rows_per_group = check_positive_integer("max_rows_per_group", max_rows_per_group)
    estimates = 2 * len(columns)
    strength = Fraction(math.floor(Fraction(epsilon) * AUTO_SHARE / estimates
                                   * (1 << _STRENGTH_BITS)), 1 << _STRENGTH_BITS)
    if strength <= 0:
        raise ValueError(f"epsilon {epsilon!r} is too small for auto bounds (each estimate's "
                         f"share is below 2^-30)")
    from privloss.events import BoundedRange
    from privloss.releases.algorithms._common import float_at_least
    events = tuple(BoundedRange(float_at_least(strength), count=1) for _ in range(estimates))
    # the release's own epsilon: what is left after the estimates, rounded down
    release_epsilon = math.nextafter(float(Fraction(epsilon) - strength * estimates), 0.0)
    auto = AutoBounds(tuple(columns), epsilon, AUTO_SHARE, strength, events, max_groups,
                      max_rows_per_group)
    return out, grid_exponents, release_epsilon, auto


def prepass_plan(release_plan, auto: AutoBounds):
    """The engine plan of the pre-pass: ``release_plan``'s source, bounding,
    filter, keys and joins; the auto columns on the grid ``2^-10`` over
    ``[-2^40, 2^40]``, with the candidates as rank thresholds."""
    from privloss.query.spec import ValueGrid

    wide = ValueGrid(PREPASS_EXPONENT, -(1 << (LARGEST + PREPASS_EXPONENT)),
                     1 << (LARGEST + PREPASS_EXPONENT))
    thresholds = tuple(int(c * (1 << PREPASS_EXPONENT)) for c in CANDIDATES)
    return dataclasses.replace(
        release_plan, value_columns=auto.columns, grids={c: wide for c in auto.columns},
        quantile_columns=(), quantile_bins=0, top=None, measurements=("auto bounds",),
        rank_thresholds={c: thresholds for c in auto.columns}, budget_split=None)


def _draw(counts: list, n: int, level: Fraction, auto: AutoBounds, source) -> int:
    """The exponential mechanism's candidate index for the ``level``-quantile."""
    import numpy as np

    from privloss.mechanisms.exponential import ExponentialMechanism

    cumulative = np.array(counts, dtype=object)
    scores = [-abs(int(c) * level.denominator - level.numerator * n) for c in cumulative]
    score_range = (2 * max(level, 1 - level) * auto.max_groups * auto.max_rows_per_group
                   * level.denominator)
    mechanism = ExponentialMechanism(auto.strength, score_range=score_range)
    return int(mechanism.release(np.array(scores, dtype=np.int64), source=source))


def estimate_bounds(groups: list, auto: AutoBounds, *, source=None) -> dict:
    """column -> (low, high) from the pre-pass's exact statistics (``groups``:
    :class:`~privloss.query.plan.GroupStatistics` rows): the noisy estimates
    (see the module docstring).  Runs after the charge."""
    out = {}
    for column in auto.columns:
        counts = [0] * len(CANDIDATES)
        n = 0
        for row in groups:
            for j, c in enumerate(row["ranks"][column]):
                counts[j] += c
            n += row["nonnull"][column]
        low = _draw(counts, n, LOW_LEVEL, auto, source)
        high = _draw(counts, n, HIGH_LEVEL, auto, source)
        if high <= low:                  # never an empty range: the next candidate
            low, high = (low, low + 1) if low + 1 < len(CANDIDATES) else (low - 1, low)
        out[column] = (float(CANDIDATES[low]), float(CANDIDATES[high]))
    return out


def grid_for(column: str, low: float, high: float):
    """The release grid of estimated bounds: ``2^-(20 - m)``, ``2^m = max(|low|,
    |high|)``, so ``|lo|, |hi| <= 2^20`` units (within the placeholder)."""
    from privloss.query.spec import ValueGrid

    largest = max(abs(Fraction(low)), abs(Fraction(high)))
    m = largest.numerator.bit_length() - largest.denominator.bit_length()   # 2^m exactly
    grid = ValueGrid.for_range(column, low, high, PLACEHOLDER_BITS - m)
    if grid.hi <= grid.lo or max(abs(grid.lo), abs(grid.hi)) > 1 << PLACEHOLDER_BITS:
        raise AssertionError("auto bounds outside the placeholder grid")   # by construction
    return grid


def with_estimated_bounds(release_plan, calibrated, auto: AutoBounds, engine: str, source):
    """After the charge: run the pre-pass, estimate the bounds and return
    ``(release_plan, calibrated, estimated)`` with the auto columns' grids
    replaced (the calibrated noises and events unchanged, see step 3);
    ``estimated``: column -> [low, high]."""
    from privloss.query import engines

    exact = engines.run(prepass_plan(release_plan, auto), engine).groups
    estimated = estimate_bounds(exact, auto, source=source)
    grids = dict(calibrated.grids)
    for column, (low, high) in estimated.items():
        grids[column] = grid_for(column, low, high)
    return (dataclasses.replace(release_plan, grids={c: grids[c] for c in release_plan.grids}),
            dataclasses.replace(calibrated, grids=grids),
            {column: [low, high] for column, (low, high) in estimated.items()})


def parse_auto_spec(kind: str, text: str):
    """The CLI's ``--sum/--mean COL:auto`` / ``--quantile COL:auto:Q[,Q]`` as an
    :class:`~privloss.query.spec.Aggregation` with ``low = high = "auto"``
    (:func:`split_auto` takes it); None for any other text."""
    from privloss.query.spec import Aggregation
    parsed = _parse(f"{kind}:{text}")
    return None if parsed is None else Aggregation(parsed.kind, parsed.column, "auto", "auto",
                                                   parsed.quantiles)


def auto_sql_bounds(bounds):
    """SQL ``bounds`` with ``"auto"`` as ``("auto", "auto")`` (what the parsed
    aggregations carry to :func:`split_auto`); another text is refused."""
    if not isinstance(bounds, dict):
        return bounds
    out = {}
    for column, value in bounds.items():
        if isinstance(value, str):
            if not _is_auto(value):
                raise ValueError(f"bounds of {column!r} must be (low, high) or 'auto', got "
                                 f"{value!r}")
            value = ("auto", "auto")
        out[column] = value
    return out

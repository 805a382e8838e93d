"""Sensitivities, the budget split and the calibration of one group-by query.

Definition
----------
A query is a list of *measurements*, each applied to every group:

==================  ===============================  ==========================
measurement         per-group value (integers)       change by one unit, per group
==================  ===============================  ==========================
``rows``            kept rows                        ``R``
``distinct``        kept privacy units               ``1``
``sum:C``           sum of grid units of C           ``R * max(|lo|, |hi|)``
``csum:C``          sum of (units - mid) of C        ``R * max(hi - mid, mid - lo)``
``nonnull:C``       non-null values of C             ``R``
``q:C:Q``           exponential mechanism (rank)     score range ``2 max(q, 1-q) R``
==================  ===============================  ==========================

with ``R = max_rows_per_group``; adding or removing one privacy unit touches at
most ``G = max_groups`` groups (bounding, :mod:`.engine_duckdb`).  Each noisy
measurement with strength ``s`` adds exact discrete Laplace noise of scale
``linf / s`` (or a discrete Gaussian of sigma ``linf / s``) to every group, and
spends ``DiscreteLaplace(linf / s, linf, count=G)``
(``DiscreteGaussian(...)``): ``G`` affected groups, each moved by at most
``linf``.  A quantile level spends ``BoundedRange(s, count=G)``: per affected
group one exponential mechanism, ``s``-bounded-range for its score range.

**Split.**  Strengths are ``s_i = lambda * w_i`` with weights ``w_i``
proportional to ``a_i^(1/3)`` (Laplace) or ``a_i^(1/4)`` (Gaussian), where
``a_i`` is the measurement's squared error at strength 1 in units of one row
(so counts, sums and quantile ranks weigh alike).  ``a_i^(1/3)`` minimises
``sum a_i / s_i^2`` for a fixed ``sum s_i`` (Lagrange), i.e. the total expected
squared error under pure-DP composition.  **Fair floor**: no measurement's
share of the cost (its strength under Laplace, its strength squared, i.e. its
rho, under Gaussian) is below ``1 / (4m)`` of the total for ``m``
measurements (:func:`fair_shares`), so a cheap-to-serve measurement such as
``COUNT(DISTINCT)`` is not starved by a high row cap.  A caller's
``budget_split`` (weights per aggregation name) replaces ``a_i``'s role and
is used as given (no floor).  ``lambda`` is the largest value
(bisection, relative 1e-6,
:func:`privloss.releases.algorithms._calibrate.largest_meeting`) whose events,
composed by the accountant at the target delta, stay within epsilon; the
answer is re-checked with every bound.

**Unknown keys.**  Groups are released when their noisy ``distinct`` count is
at least the threshold ``tau``: a group in only one of two neighbouring
datasets holds only the differing unit (``distinct = 1``), and at most ``G``
such groups exist, so the probability that any of them appears is at most
``G * P[Z >= tau - 1] <= delta_selection`` (exact tail, mpmath); the event is
``ApproxDP(0, delta_selection)`` with ``delta_selection = delta / 2``.

Privacy guarantee
-----------------
User-level (one privacy unit added or removed), given the bounding.  The
events are fixed from public parameters before any data is read; the
accountant's result is re-checked against epsilon.

Citation
--------
Wilson et al., PoPETs 2020 (bounded contributions, thresholding); Korolova et
al., WWW 2009 (partition selection by threshold); Dong, Durfee, Rogers, ICML
2020 (bounded range); Canonne, Kamath, Steinke 2020 (discrete noise).

Runtime
-------
About 20 accountant comparisons (bisection) and one full evaluation; for
pure DP (delta = 0) the comparisons are exact rational sums instead
(:func:`privloss.releases.algorithms._calibrate.exact_pure_epsilon`); for
unknown keys, O(log tau) tail evaluations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from privloss.query.spec import DEFAULT_QUANTILE_BINS, ValueGrid

__all__ = ["Measurement", "QueryPlan", "build_plan", "fair_shares", "FAIR_FLOOR"]

_STRENGTH_BITS = 30


@dataclass(frozen=True)
class Measurement:
    """One per-group measurement: ``kind`` (rows, distinct, sum, csum, nonnull,
    quantile), its ``column`` and ``level`` (quantiles), ``linf`` (integer
    change of one group, or the score range of a quantile) and its weight."""

    name: str
    kind: str
    column: str | None
    linf: Fraction
    weight: float
    level: Fraction | None = None
    owner: str = ""

    @property
    def is_quantile(self) -> bool:
        return self.kind == "quantile"


@dataclass(frozen=True)
class QueryPlan:
    """The calibrated query: measurements with their strengths, noises, events."""

    measurements: tuple
    strengths: dict
    noises: dict            # name -> DiscreteNoise (noisy measurements)
    events: tuple
    guarantee: dict
    max_groups: int
    max_rows_per_group: int
    grids: dict             # column -> ValueGrid
    quantile_bins: int
    threshold: int | None
    delta_selection: float
    noise: str
    notes: tuple = field(default_factory=tuple)
    #: name -> share of the budget's cost (strength, or its square under Gaussian)
    shares: dict = field(default_factory=dict)

    def event_of(self, name: str):
        """The event one measurement spends (all groups)."""
        measurement = next(m for m in self.measurements if m.name == name)
        return _event(measurement, self.strengths[name], self.noises.get(name), self.max_groups)


def _measurements(aggregations, grids, rows: int, unknown_keys: bool, split) -> list:
    out = []

    def add(name, kind, column, linf, error, owner, level=None):
        weight = error if split is None else split.get(owner, split.get(name))
        if weight is None or not (isinstance(weight, (int, float)) and weight > 0
                                  and math.isfinite(weight)):
            raise ValueError(f"budget_split must give a positive weight to {owner!r}, got "
                             f"{weight!r}")
        out.append(Measurement(name, kind, column, Fraction(linf), float(weight), level, owner))

    log_candidates = math.log(DEFAULT_QUANTILE_BINS + 1)
    for a in aggregations:
        grid = grids.get(a.column)
        if a.kind == "count":
            add("rows", "rows", None, rows, rows, a.name)
        elif a.kind == "count_distinct":
            add("distinct", "distinct", None, 1, 1, a.name)
        elif a.kind == "sum":
            # error in row units: the noise is linf / s grid units, one row is
            # largest_magnitude units, so a_i = rows^2 as for a count
            add(f"sum:{a.column}", "sum", a.column, rows * grid.largest_magnitude, rows,
                a.name)
        elif a.kind == "mean":
            add(f"csum:{a.column}", "csum", a.column, rows * grid.centred_magnitude,
                rows, a.name)
            if not any(m.name == f"nonnull:{a.column}" for m in out):
                add(f"nonnull:{a.column}", "nonnull", a.column, rows, rows, a.name)
        else:
            for q in a.quantiles:
                level = Fraction(q)
                score_range = 2 * max(level, 1 - level) * rows
                add(f"quantile:{a.column}:{q:g}", "quantile", a.column, score_range,
                    float(score_range) * log_candidates, a.name, level)
    if unknown_keys and not any(m.name == "distinct" for m in out):
        add("distinct", "distinct", None, 1, rows, "selection")
    return out


def _weights(measurements, noise: str, split) -> dict:
    power = 1.0 if split is not None else (1 / 3 if noise == "laplace" else 1 / 4)
    # a_i = error^2: the weight is error^(2 * power)
    raw = {m.name: (m.weight ** (2 * power) if split is None else m.weight)
           for m in measurements}
    total = sum(raw.values())
    weights = {name: value / total for name, value in raw.items()}
    if split is not None:            # the caller's split is taken as given
        return weights
    # the cost of a measurement grows as its strength (pure DP, bounded range) or
    # its square (rho, Gaussian): the floor is on the share of that cost
    exponent = 1 if noise == "laplace" else 2
    costs = {name: weight ** exponent for name, weight in weights.items()}
    floored = fair_shares(costs)
    return {name: share ** (1 / exponent) for name, share in floored.items()}


#: no measurement's share of the budget is below FAIR_FLOOR / m (m measurements)
FAIR_FLOOR = 0.25


def fair_shares(costs: dict) -> dict:
    """``costs`` (positive) as shares summing to 1 in which none is below
    ``FAIR_FLOOR / m``: the shares under the floor are raised to it and the
    others scaled down together, keeping their ratios (water-filling; the
    floor times m is 1/4 < 1, so it always exists).  Without this the
    error-optimal split gives a count of distinct units a sliver (epsilon
    0.0036 of 0.3) when rows are capped high."""
    total = sum(costs.values())
    shares = {name: value / total for name, value in costs.items()}
    floor = FAIR_FLOOR / len(shares)
    fixed: set = set()
    while True:
        free = {name: value for name, value in shares.items() if name not in fixed}
        rest = 1 - floor * len(fixed)
        free_total = sum(free.values())
        scaled = {name: value * rest / free_total for name, value in free.items()}
        low = {name for name, value in scaled.items() if value < floor}
        if not low:
            return {**{name: floor for name in fixed}, **scaled}
        fixed |= low


def _strength(value: float) -> Fraction:
    """``value`` rounded down to a multiple of 2^-30 (positive), a short rational."""
    units = math.floor(value * (1 << _STRENGTH_BITS))
    if units < 1:
        raise ValueError("the budget is too small for this query (a measurement's share of "
                         "epsilon is below 2^-30)")
    return Fraction(units, 1 << _STRENGTH_BITS)


def _noise_of(measurement: Measurement, strength: Fraction, noise: str):
    from privloss.releases.algorithms._common import rational_at_least
    from privloss.releases.algorithms._noise import gaussian_noise, laplace_noise

    linf = int(measurement.linf)
    if noise == "laplace":
        return laplace_noise(Fraction(linf) / strength, linf)
    return gaussian_noise(rational_at_least((Fraction(linf) / strength) ** 2), linf)


def _event(measurement, strength: Fraction, noise, groups: int):
    from privloss.releases.algorithms._common import float_at_least
    from privloss.events import BoundedRange

    if measurement.is_quantile:
        return BoundedRange(float_at_least(strength), count=groups)
    return noise.event(groups)


def _events_at(measurements, weights, scale: float, noise: str, groups: int):
    strengths, noises, events = {}, {}, []
    for m in measurements:
        strength = _strength(scale * weights[m.name])
        strengths[m.name] = strength
        if not m.is_quantile:
            noises[m.name] = _noise_of(m, strength, noise)
        events.append(_event(m, strength, noises.get(m.name), groups))
    return strengths, noises, events


def _threshold(noise, groups: int, delta_selection: float) -> int:
    """Smallest integer tau >= 2 with groups * P[Z >= tau - 1] <= delta_selection,
    checked in mpmath (a larger tau is always safe)."""
    from privloss.mechanisms.accuracy import discrete_gaussian_tail, discrete_laplace_tail
    import mpmath

    def tail_at_least(m: int):          # P[Z >= m] = P[|Z| > m - 1] / 2 for m >= 1
        if noise.kind == "laplace":
            return discrete_laplace_tail(m - 1, noise.parameter) / 2
        return discrete_gaussian_tail(m - 1, noise.parameter) / 2

    target = mpmath.mpf(delta_selection) / groups

    def meets(tau: int) -> bool:
        return tail_at_least(tau - 1) <= target * (1 - mpmath.mpf(10) ** -30)

    high = 2
    while not meets(high):
        high *= 2
        if high > 1 << 62:
            raise ValueError("no threshold reaches this delta")
    low = high // 2 if high > 2 else 1          # meets(low) false or low < 2
    while high - low > 1:
        middle = (low + high) // 2
        if middle >= 2 and meets(middle):
            high = middle
        else:
            low = middle
    return high


def build_plan(aggregations: tuple, *, epsilon: float, delta: float, max_groups: int,
               max_rows_per_group: int, unknown_keys: bool, noise: str = "laplace",
               budget_split=None, grid_exponents=None) -> QueryPlan:
    """Calibrate a checked query (see the module docstring).  Raises
    ``ValueError`` for a budget that cannot be met."""
    if noise not in ("laplace", "gaussian"):
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    if unknown_keys and delta <= 0:
        raise ValueError("without keys the groups are found by a noisy threshold, which needs "
                         "delta > 0 (or give the keys)")
    if noise == "gaussian" and delta <= 0:
        raise ValueError("noise='gaussian' needs delta > 0")
    if budget_split is not None and not isinstance(budget_split, dict):
        raise TypeError(f"budget_split must be a dict of aggregation name -> weight, got "
                        f"{budget_split!r}")
    grid_exponents = grid_exponents or {}
    grids = {}
    for a in aggregations:
        if a.column is not None and a.column not in grids:
            grids[a.column] = ValueGrid.for_range(a.column, a.low, a.high,
                                                  grid_exponents.get(a.column))
    measurements = _measurements(aggregations, grids, max_rows_per_group, unknown_keys,
                                 budget_split)
    weights = _weights(measurements, noise, budget_split)
    extra = []
    delta_selection = 0.0
    if unknown_keys:
        from privloss.events import ApproxDP
        delta_selection = delta / 2
        extra = [ApproxDP(0.0, delta_selection)]

    from privloss.releases.algorithms._calibrate import largest_meeting

    def events_of(scale: float) -> tuple:
        return tuple(_events_at(measurements, weights, scale, noise, max_groups)[2] + extra)

    # largest lambda whose events fit (bisection on the accountant, re-checked there)
    scale, result = largest_meeting(events_of, epsilon, delta, guess=epsilon / max_groups,
                                    interaction="adaptive", tolerance=1e-6)
    strengths, noises, events = _events_at(measurements, weights, scale, noise, max_groups)
    events = tuple(events + extra)
    spent = result.epsilon
    threshold = None
    if unknown_keys:
        threshold = _threshold(noises["distinct"], max_groups, delta_selection)
    return QueryPlan(tuple(measurements), strengths, noises, events,
                     {"epsilon": spent, "delta": delta, "bound": result.bound}, max_groups,
                     max_rows_per_group, grids, DEFAULT_QUANTILE_BINS, threshold,
                     delta_selection, noise, shares=_cost_shares(weights, noise))


def _cost_shares(weights: dict, noise: str) -> dict:
    """Each measurement's share of the cost (as :func:`_weights` floors it)."""
    exponent = 1 if noise == "laplace" else 2
    costs = {name: weight ** exponent for name, weight in weights.items()}
    total = sum(costs.values())
    return {name: cost / total for name, cost in costs.items()}

"""The query plan: one immutable description of what a release reads, how each
privacy unit's contribution is bounded, and which per-group statistics the
engine returns.

>>> from privloss.query.plan import Bounding, QueryPlan
>>> plan = QueryPlan(source="orders.csv", privacy_unit="CustomerID", by=("StockCode",),
...                  bounding=Bounding(max_groups=10, max_rows_per_group=1), top=101, seed=7)
>>> plan.needs_rows                        # only counts: the engine works on (unit, group) pairs
False

Definition
----------
A plan holds, in the order an engine applies them:

1. ``source``: a path (CSV / TSV / Parquet file or directory), a frame, a
   :class:`~privloss.query.inputs.SqlQuery`, a DuckDB relation or a Spark
   DataFrame (:func:`~privloss.query.inputs.resolve_input`);
2. ``privacy_unit``: the column whose values are the units protected; rows
   with a null unit or a null group column are dropped;
2b. ``joins`` (:mod:`privloss.query.joins`): equi-joins with public tables,
   or with private tables on the unit after keeping at most
   ``join_truncation`` rows per unit in each; every later step sees the
   joined rows (the bounding runs after the joins);
3. ``where``: a row filter (:mod:`privloss.query.filters`), applied to each
   row before anything else (1-stable: the cost is unchanged); ``by``: the
   group columns; ``keys``: public group keys (known domain:
   only rows of these groups are kept, and every key is released) or None
   (the release selects groups privately);
4. ``bounding`` (:class:`Bounding`): per unit at most ``max_groups`` groups
   (chosen uniformly at random by the keyed hash of
   :mod:`privloss.query.bounding`; None keeps every group) and per (unit,
   group) at most ``max_rows_per_group`` rows; each value column clamped to
   its grid's range (:class:`~privloss.query.spec.ValueGrid`);
5. the statistics per group: kept units (``distinct``), kept rows
   (``rows``), and for each value column the sum of its grid units and its
   non-null count, and for ``quantile_columns`` the histogram of
   ``quantile_bins + 1`` bins;
6. ``top``: only the ``top`` groups of largest ``rows`` (ties by group value)
   come back, with the number of groups in ``total_groups`` (top-k and
   unknown-domain histograms read only their head).

7. the release: ``measurements`` (``count``, ``count_distinct``,
   ``sum(x)``, ``mean(x)``, ``quantile(x,q)``, ``top-k``, ``histogram``),
   ``noise`` (the algorithm or noise family) and ``budget_split`` (each
   measurement's share).  :mod:`privloss.releases` calibrates and adds the
   noise; the plan names them so that one object describes the whole release
   (dry runs show it).

Privacy guarantee
-----------------
None by itself.  After the bounding, adding or removing one unit changes at
most ``max_groups`` groups' statistics, each by one ``distinct``, at most
``max_rows_per_group`` rows, and at most ``max_rows_per_group`` clamped values
per value column: the sensitivities :mod:`privloss.releases.calibration` and
the top-k algorithms are calibrated for.  ``seed`` only makes the random
choice of groups and rows reproducible (tests); it is drawn from the secure
source by default and never affects the bound.

Citation
--------
Wilson et al., "Differentially Private SQL with Bounded User Contribution",
PoPETs 2020; the plan/engine split follows Tumult Analytics' query
expressions compiled by one evaluator.

Runtime
-------
Constructing a plan is ``O(columns)``; nothing is read.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

__all__ = ["Bounding", "QueryPlan", "GroupStatistics", "ROW_SEED_OFFSET"]

#: the per-(unit, group) row choice uses SelectionKey.from_seed(seed + ROW_SEED_OFFSET),
#: independent of the group choice's key
ROW_SEED_OFFSET = 1 << 128


def _positive(name: str, value, *, optional: bool) -> int | None:
    from privloss.query.bounding import _positive_int_or_none    # the one check
    return _positive_int_or_none(name, value, allow_none=optional)


def _column(role: str, value) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{role} must be a non-empty column name (str), got {value!r}")
    return value


@dataclass(frozen=True)
class Bounding:
    """Per-unit contribution bounds: ``max_groups`` (the l0 bound; None keeps
    every group) and ``max_rows_per_group`` (the linf bound, >= 1)."""

    max_groups: int | None
    max_rows_per_group: int = 1

    def __post_init__(self):
        object.__setattr__(self, "max_groups",
                           _positive("max_groups", self.max_groups, optional=True))
        object.__setattr__(self, "max_rows_per_group",
                           _positive("max_rows_per_group", self.max_rows_per_group,
                                     optional=False))


@dataclass(frozen=True)
class QueryPlan:
    """See the module docstring.  ``roles`` names the unit column and the group
    columns in error messages (``("user_column", "item_column")`` for top-k)."""

    source: object
    privacy_unit: str
    by: tuple
    bounding: Bounding
    seed: int
    value_columns: tuple = ()
    grids: dict = field(default_factory=dict)
    quantile_columns: tuple = ()
    quantile_bins: int = 0
    keys: tuple | None = None
    top: int | None = None
    measurements: tuple = ()
    roles: tuple | None = None
    where: object = None
    noise: str | None = None
    budget_split: dict | None = None
    joins: tuple = ()
    join_truncation: int | None = None
    #: value column -> increasing grid-unit thresholds t: per group, the number of
    #: kept non-null rows with units <= t (the ranks private bounds read)
    rank_thresholds: dict = field(default_factory=dict)

    def __post_init__(self):
        roles = self.roles or ("privacy_unit", "by")
        _column(roles[0], self.privacy_unit)
        by = (self.by,) if isinstance(self.by, str) else tuple(self.by)
        object.__setattr__(self, "by", tuple(_column(roles[1], b) for b in by))
        if not self.by:
            raise ValueError("by must name at least one column, got none")
        if len(set(self.by)) != len(self.by) or self.privacy_unit in self.by:
            unit_role, group_role = self.role_names[0], self.role_names[1]
            if len(self.by) == 1:
                raise ValueError(f"{unit_role} and {group_role} must differ, both are "
                                 f"{self.privacy_unit!r}")
            raise ValueError(f"by columns must be distinct and differ from privacy_unit, got "
                             f"by={list(self.by)}, privacy_unit={self.privacy_unit!r}")
        if not isinstance(self.bounding, Bounding):
            raise TypeError(f"bounding must be a Bounding, got {self.bounding!r}")
        object.__setattr__(self, "top", _positive("top", self.top, optional=True))
        if self.top is not None and len(self.by) != 1:
            raise ValueError("top needs exactly one group column")
        missing = [c for c in self.value_columns if c not in self.grids]
        if missing:
            raise ValueError(f"value columns without a grid: {missing}")
        for column, thresholds in self.rank_thresholds.items():
            if column not in self.value_columns or not thresholds or any(
                    isinstance(t, bool) or not isinstance(t, int) for t in thresholds) or \
                    list(thresholds) != sorted(set(thresholds)):
                raise ValueError(f"rank thresholds of {column!r} must be increasing integers "
                                 f"of a value column")
        if self.keys is not None:
            object.__setattr__(self, "keys", tuple(tuple(key) for key in self.keys))
        if self.where is not None:
            from privloss.query.filters import check_filter
            check_filter(self.where)
        self._check_joins()

    def _check_joins(self) -> None:
        from privloss.query.joins import check_joins

        joins, truncation = check_joins(self.joins, self.join_truncation, self.privacy_unit)
        object.__setattr__(self, "joins", joins)
        object.__setattr__(self, "join_truncation", truncation)

    @property
    def base_columns(self) -> tuple:
        """The columns read from ``source`` itself: every column the plan uses
        (unit, groups, values, filter, join keys) not supplied by a join."""
        joined = {name for join in self.joins for name in join.outputs}
        used = [self.privacy_unit, *self.by, *self.value_columns]
        if self.where is not None:
            used += sorted(self.where.columns())
        used += [key for join in self.joins for key in join.left_keys]
        used += [self.privacy_unit for join in self.joins if not join.public]
        return tuple(c for c in dict.fromkeys(used) if c not in joined)

    @property
    def role_names(self) -> tuple:
        return self.roles or ("privacy_unit",) + ("by",) * len(self.by)

    @property
    def needs_rows(self) -> bool:
        """Whether a statistic reads row values: without value columns the rows
        of one (unit, group) are interchangeable, and the engine bounds their
        count on the (unit, group) pairs."""
        return bool(self.value_columns)


@dataclass(frozen=True)
class GroupStatistics:
    """What an engine returns for a plan: one dict per group (``group`` tuple,
    ``distinct``, ``rows``, ``sum`` and ``nonnull`` per value column, ``bins``
    per quantile column, ``ranks`` per rank-threshold column: the counts of
    kept rows at or below each threshold) and ``total_groups``, the number of groups with at
    least one kept row (it stays inside the library: with ``top`` it only says
    whether the list was cut)."""

    groups: list
    total_groups: int

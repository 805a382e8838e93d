"""Private contribution bound ``max_groups="auto"`` (``--max-groups auto``):
a charged pre-pass that picks the groups kept per privacy unit with a DP
quantile, inside the release it serves.

Definition
----------
1. **Budget.**  ``L0_SHARE`` (10%) of epsilon goes to one estimate of
   strength ``s`` (rounded down to a multiple of ``2^-30``); auto bounds
   (:mod:`privloss.api.auto_bounds`) take their own share first.  For every
   public candidate ``G`` of :data:`GROUP_CANDIDATES` (``1, 2, 4, .., 256``)
   the release is calibrated for the rest ``epsilon_r``
   (:func:`~privloss.releases.calibration.build_plan`); each is
   ``(epsilon_G, delta)``-DP with ``epsilon_G <= epsilon_r`` at the query's
   delta (its accountant's guarantee).  A candidate whose calibration fails
   is dropped (public).  The charged events, fixed before anything is read:
   ``BoundedRange(s)`` and ``ApproxDP(max_G epsilon_G, delta)`` (the release,
   whichever ``G`` is chosen), and the auto bounds' events.
2. **Pre-pass** (after the charge): per unit its number ``k_u`` of distinct
   groups (after joins and filter, before bounding, every group even with known
   keys); the engine returns the
   number of units and, per candidate ``t``, ``#{u : k_u <= t}``
   (:func:`~privloss.query.engines._sql.groups_per_unit_sql`).  The
   exponential mechanism draws the candidate with score
   ``-|#{k_u <= t} - q N|`` (``q = L0_LEVEL = 95%``, scaled to integers,
   score range ``2 max(q, 1 - q)``: one unit moves every count and ``N`` by
   at most 1), exact sampler.
3. **Release**: the plan calibrated for the drawn ``G`` (post-processing of a
   DP output), then the auto bounds with that ``G``.

Privacy guarantee
-----------------
User-level.  The estimate is ``s``-bounded-range hence ``s``-DP; for each
``G`` the release is ``(epsilon_G, delta)``-DP, so the release with a
data-chosen ``G`` is ``(max_G epsilon_G, delta)``-DP given the estimate
(adaptive composition, Dwork-Roth Theorem 3.16); the ledger composes the
charged events.  The summary ``ApproxDP`` event is looser than the
calibrated events in later compositions (the price of a data-chosen ``G``).

Citation
--------
Smith, STOC 2011 (DP quantiles); Wilson et al., PoPETs 2020 (contribution
bounds); Amin et al., ICML 2019 (choosing contribution bounds).

Runtime
-------
``len(GROUP_CANDIDATES)`` calibrations before the charge (about 0.3 s
each); one engine query (distinct (unit, group) pairs).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["GROUP_CANDIDATES", "L0_SHARE", "L0_LEVEL", "AutoGroups", "auto_groups_query"]

#: the public candidates of max_groups
GROUP_CANDIDATES = tuple(1 << j for j in range(9))
#: the share of epsilon spent on the estimate, and the quantile it estimates
L0_SHARE, L0_LEVEL = Fraction(1, 10), Fraction(95, 100)
_STRENGTH_BITS = 30


@dataclass(frozen=True)
class AutoGroups:
    """The public plan: total ``epsilon``, the estimate's ``strength``, the
    calibrated query per candidate (``queries``), the charged ``events`` and
    the auto bounds' plan (``bounds``, or None)."""

    epsilon: float
    strength: Fraction
    queries: dict
    events: tuple
    bounds: object = None

    def key(self) -> dict:
        return {"auto_max_groups": {"epsilon": self.epsilon, "share": str(L0_SHARE),
                                    "candidates": list(self.queries)},
                **({} if self.bounds is None else self.bounds.key())}

    def check_engine(self, engine: str) -> None:
        if engine != "duckdb":
            raise ValueError(f"max_groups 'auto' runs on the duckdb engine only, got engine "
                             f"{engine!r}")

    def describe(self) -> dict:
        return {"max_groups": {"share_of_epsilon": float(L0_SHARE),
                               "epsilon": float(self.strength), "level": float(L0_LEVEL),
                               "candidates": list(self.queries),
                               "mechanism": "exponential mechanism over the public "
                                            "candidates (exact), groups per unit",
                               "events": [repr(e) for e in self.events[:2]]},
                **({} if self.bounds is None else self.bounds.describe())}

    def apply(self, release_plan, calibrated, engine: str, source):
        """After the charge: draw ``G``, take its calibrated plan, then the
        auto bounds (if any) with bounding ``G``."""
        from privloss.query import engines
        from privloss.query.plan import Bounding

        candidates = tuple(self.queries)
        units, counts = engines.groups_per_unit(release_plan, candidates, engine)
        groups = candidates[_draw(counts, units, self.strength, source)]
        query = self.queries[groups]
        plan = dataclasses.replace(
            release_plan, bounding=Bounding(groups, release_plan.bounding.max_rows_per_group),
            budget_split={m.name: str(query.plan.strengths[m.name])
                          for m in query.plan.measurements})
        calibrated = query.plan
        estimated = {"max_groups": groups}
        if self.bounds is not None:
            bounds = dataclasses.replace(self.bounds, max_groups=groups)
            plan, calibrated, found = bounds.apply(plan, calibrated, engine, source)
            estimated.update(found)
        return plan, calibrated, estimated


def _draw(counts: list, units: int, strength: Fraction, source) -> int:
    import numpy as np

    from privloss.mechanisms.exponential import ExponentialMechanism

    level = L0_LEVEL
    scores = [-abs(c * level.denominator - level.numerator * units) for c in counts]
    mechanism = ExponentialMechanism(strength, score_range=2 * max(level, 1 - level)
                                     * level.denominator)
    return int(mechanism.release(np.array(scores, dtype=np.int64), source=source))


def auto_groups_query(parameters: dict, make_query) -> tuple:
    """``(query, auto, events)`` for ``max_groups="auto"`` (see the module
    docstring); ``query`` is the smallest candidate's (what a dry run shows).
    Raises ValueError / TypeError for bad input, before anything is read."""
    from privloss.api.auto_bounds import split_auto
    from privloss.events import ApproxDP, BoundedRange
    from privloss.query.spec import check_budget, check_positive_integer
    from privloss.releases.algorithms._common import float_at_least

    value = parameters.get("max_groups")
    if value.strip().lower() != "auto":
        raise ValueError(f"max_groups must be an integer >= 1 or 'auto', got {value!r}")
    epsilon = parameters.get("epsilon")
    if isinstance(epsilon, str):
        raise ValueError(f"epsilon {epsilon!r} cannot be combined with max_groups 'auto'")
    epsilon, delta = check_budget(epsilon, parameters.get("delta", 0.0))
    rows = check_positive_integer("max_rows_per_group", parameters.get("max_rows_per_group", 1))
    strength = Fraction(math.floor(Fraction(epsilon) * L0_SHARE * (1 << _STRENGTH_BITS)),
                        1 << _STRENGTH_BITS)
    if strength <= 0:
        raise ValueError(f"epsilon {epsilon!r} is too small for max_groups 'auto'")
    aggregations, grid_exponents, rest, bounds = split_auto(
        parameters.get("aggregations"), epsilon=epsilon,
        grid_exponents=parameters.get("grid_exponents"), max_groups=1,
        max_rows_per_group=rows)
    release_epsilon = math.nextafter(float(Fraction(rest) - strength), 0.0)
    queries, first_error = {}, None
    for groups in GROUP_CANDIDATES:
        try:
            queries[groups] = make_query(**{**parameters, "aggregations": aggregations,
                                            "grid_exponents": grid_exponents,
                                            "epsilon": release_epsilon, "max_groups": groups})
        except ArithmeticError as error:
            first_error = first_error or error
        except ValueError as error:
            if groups == 1:
                raise                     # bad input: the smallest candidate says why
            first_error = first_error or error
    if not queries:
        raise ValueError(str(first_error))
    worst = max(q.plan.guarantee["epsilon"] for q in queries.values())
    events = (BoundedRange(float_at_least(strength), count=1),
              ApproxDP(float(worst), float(delta)))
    if bounds is not None:
        events += bounds.events
    auto = AutoGroups(epsilon, strength, queries, events, bounds)
    return next(iter(queries.values())), auto, events

"""Releases that add up: consistent hierarchies and running totals.

* :func:`hierarchy_release` / :func:`plan_hierarchy`: noise on every node of a
  tree of keys, the linear-time least-squares projection, exact variances,
  95% intervals, optional non-negative integers that add up
  (:mod:`privloss.releases.hierarchy`);
* :func:`plan_running` / :class:`RunningTotals`: every prefix total of a
  sequence of periods through the binary-tree mechanism, released at once or
  period by period on one budget (:mod:`privloss.releases.running`);
* :func:`rho_for`: the zCDP parameter of a Gaussian tree for an
  (epsilon, delta) budget.

See ``docs/releases.md``.
"""

from __future__ import annotations

from privloss.releases._levels import LevelBound, NoisePlan
from privloss.releases.hierarchy import (HierarchyPlan, HierarchyRelease, hierarchy_release,
                                         level_bounds, plan_hierarchy)
from privloss.releases.running import RunningPlan, RunningTotals, plan_running, running_bounds

__all__ = ["LevelBound", "NoisePlan", "HierarchyPlan", "HierarchyRelease", "hierarchy_release",
           "plan_hierarchy", "level_bounds", "RunningPlan", "RunningTotals", "plan_running",
           "running_bounds", "rho_for"]


def rho_for(epsilon: float, delta: float, *, interaction: str = "adaptive") -> float:
    """The largest rho whose one ``ZCDP(rho)`` event the accountant composes
    to at most (epsilon, delta) (the tree's own guarantee)."""
    from privloss.analytics.algorithms._calibrate import largest_meeting
    from privloss.events import ZCDP

    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) for Gaussian noise, got {delta!r}")
    rho, _ = largest_meeting(lambda x: (ZCDP(x),), epsilon, delta,
                             guess=epsilon * epsilon / 8.0, interaction=interaction)
    return rho

"""The release layer: DP algorithms over an engine's bounded statistics.

* :mod:`privloss.releases.algorithms` - top-k and histogram algorithms
  (known / unknown domain, Laplace, Gumbel, Gaussian);
* :mod:`privloss.releases.calibration` - a group-by's measurements, their
  budget split and calibration; :mod:`privloss.releases.aggregate` adds the
  noise per group;
* :mod:`privloss.releases.consistency` - non-negative integer counts that add up;
* :func:`hierarchy_release` / :func:`plan_hierarchy`: noise on every node of a
  tree of keys, the linear-time least-squares projection, exact variances,
  95% intervals, optional non-negative integers that add up
  (:mod:`privloss.releases.hierarchy`);
* :func:`plan_running` / :class:`RunningTotals`: every prefix total of a
  sequence of periods through the binary-tree mechanism, released at once or
  period by period on one budget (:mod:`privloss.releases.running`);
* :func:`plan_rollup` / :func:`release_rollup`: ``GROUP BY ROLLUP`` with public
  keys or a private selection per level, on top of the hierarchy release
  (:mod:`privloss.releases.rollup`);
* :func:`rho_for`: the zCDP parameter of a Gaussian tree for an
  (epsilon, delta) budget;
* :class:`privloss.releases.release.Release` - a released top-k / histogram.

Nothing here reads data or charges a budget (that is :mod:`privloss.api`).
See ``docs/releases.md``.  Names are imported lazily.
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.releases._levels": ("LevelBound", "NoisePlan"),
    "privloss.releases.hierarchy": ("HierarchyPlan", "HierarchyRelease", "hierarchy_release",
                                    "level_bounds", "plan_hierarchy"),
    "privloss.releases.running": ("RunningPlan", "RunningTotals", "plan_running",
                                  "running_bounds"),
    "privloss.releases._rho": ("rho_for",),
    "privloss.releases.rollup": ("RollupBudget", "plan_rollup", "release_rollup"),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.releases", _EXPORTS)

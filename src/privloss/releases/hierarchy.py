"""Consistent hierarchies: noisy totals on every node of a tree of keys
(e.g. ``GROUP BY ROLLUP(a, b, c)``), the least-squares projection, exact
variances and 95% intervals, and optionally non-negative integers that add up.

>>> from privloss.releases import LevelBound, plan_hierarchy           # doctest: +SKIP
>>> plan = plan_hierarchy([1, 3, 12], [LevelBound(1, 1)] * 3, noise="laplace", budget=1.0)
>>> release = plan.release(values, parents, consistent=True)           # doctest: +SKIP

Definition
----------
Levels 0 (roots, e.g. the grand total) to L (the finest keys); ``parents[l]``
maps each node of level l to its parent in level l - 1 and ``values[l]`` are
the true bounded integer totals (counts or clamped sums), each parent the sum
of its children.  The release:

1. adds independent integer noise to every node (:mod:`._levels`: discrete
   Laplace or discrete Gaussian, one law per level);
2. computes the BLUE of every node in linear time (:mod:`._tree`; Hay et al.
   2010, Honaker 2015, generalised to unequal fan-out and per-level
   variances): consistent, with exact per-node variances;
3. reports two 95% intervals per node: ``ci95`` (normal, from the exact
   variance) and ``ci95_guaranteed`` (sub-Gaussian / sub-gamma tail bound,
   sound for the integer noise); with ``nonnegative`` their lower ends are
   clipped at 0 (valid when every true total is >= 0);
4. with ``consistent=True`` also non-negative integers adding up exactly at
   every level (:mod:`._rounding`); ``ci95`` is then centred on the integers
   (same half-widths; its coverage is measured, docs/releases.md) while
   ``ci95_guaranteed`` stays centred on the least-squares estimate, where its
   guarantee holds.

The split of the budget across levels minimises the sum over levels of the
BLUE variance of a node of that level in the regular tree with the
hierarchy's average fan-outs (n_l / n_{l-1}), computed from the same
up/down recursions (:func:`regular_tree_variances`); a caller may pass its own
``shares``.  It depends only on public parameters (the level sizes and
bounds).

Privacy guarantee
-----------------
The noisy tree is epsilon-DP (Laplace, one ``PureDP`` event) or rho-zCDP
(Gaussian, one ``ZCDP`` event) for neighbours that differ by one privacy unit
whose change at each level is within that level's :class:`LevelBound`
(:mod:`._levels`).  Everything after step 1 is post-processing.  The key
structure (``parents``) must be public or itself released privately before;
it is not protected here.

Citation
--------
Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of Differentially Private
Histograms Through Consistency", VLDB 2010; Honaker, "Efficient Use of
Differentially Private Binary Trees", 2015; Cormode et al., "Differentially
Private Spatial Decompositions", ICDE 2012 (non-uniform budgets);
arXiv:2603.10099 (BlueDown, the linear-time BLUE for Census-style trees).

Runtime
-------
O(n) for the noise and the projection, O(n log n) for ``consistent`` (n
nodes); 10^5 leaves in well under a second (benchmarks/releases.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privloss.releases._levels import LevelBound, NoisePlan, optimal_shares, plan_noise
from privloss.releases._rounding import consistent_integers
from privloss.releases._tree import blue, check_parents

__all__ = ["HierarchyPlan", "HierarchyRelease", "plan_hierarchy", "hierarchy_release",
           "regular_tree_variances", "level_bounds"]


def regular_tree_variances(noise_variances, fanouts) -> np.ndarray:
    """BLUE variance of a node of each level of the regular tree whose level l
    nodes have ``fanouts[l]`` children (``fanouts[0]`` unused) and noise
    variance ``noise_variances[l]``."""
    v = [float(x) for x in noise_variances]
    depth = len(v)
    up = [0.0] * depth
    up[-1] = v[-1]
    for level in range(depth - 2, -1, -1):
        below = fanouts[level + 1] * up[level + 1]
        up[level] = v[level] * below / (v[level] + below)
    result = np.empty(depth)
    result[0] = up[0]
    down = v[0]
    for level in range(1, depth):
        out = down + (fanouts[level] - 1.0) * up[level]
        result[level] = up[level] * out / (up[level] + out)
        down = v[level] * out / (v[level] + out)
    return result


def level_bounds(depth: int, *, max_leaves: int = 1, per_leaf: int = 1,
                 leaves_below=None) -> tuple:
    """Sound :class:`LevelBound` per level for a unit that touches at most
    ``max_leaves`` leaves, changing each by at most ``per_leaf``: at every
    level l1 = max_leaves * per_leaf; linf = per_leaf * min(max_leaves,
    leaves_below[l]) (the most leaves under one node of level l; default:
    max_leaves at inner levels, 1 at the leaves)."""
    if leaves_below is None:
        leaves_below = [max_leaves] * (depth - 1) + [1]
    l1 = max_leaves * per_leaf
    return tuple(LevelBound(l1, per_leaf * min(max_leaves, int(below)))
                 for below in leaves_below)


def _bounds_of(bounds, depth: int) -> tuple:
    if isinstance(bounds, LevelBound):
        return (bounds,) * depth
    bounds = tuple(bounds)
    if len(bounds) != depth or not all(isinstance(b, LevelBound) for b in bounds):
        raise ValueError(f"bounds must be a LevelBound or {depth} LevelBounds (one per level), "
                         f"got {bounds!r}")
    return bounds


def _check_sizes(sizes) -> tuple:
    sizes = tuple(sizes)
    if not sizes:
        raise ValueError("sizes must list at least one level, got none")
    for level, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"sizes[{level}] must be an integer >= 1, got {size!r}")
    return tuple(int(size) for size in sizes)


@dataclass(frozen=True)
class HierarchyPlan:
    """What a hierarchy release spends and how it adds noise, fixed from
    public parameters alone (before any data is read)."""

    sizes: tuple
    noise: NoisePlan
    shares: tuple

    @property
    def events(self) -> tuple:
        return (self.noise.event(),)

    def expected_variances(self) -> np.ndarray:
        """Per level: the BLUE variance in the regular tree with these sizes."""
        return regular_tree_variances(self.noise.variances(), _fanouts(self.sizes))

    def describe(self) -> dict:
        return {**self.noise.describe(), "levels": len(self.sizes), "sizes": list(self.sizes),
                "budget_shares": list(self.shares),
                "expected_variance_by_level": self.expected_variances().tolist()}

    def release(self, values, parents, *, consistent: bool = False, nonnegative: bool = True,
                source=None) -> "HierarchyRelease":
        """Noise, project and report (module docstring)."""
        depth = len(self.sizes)
        if len(values) != depth:
            raise ValueError(f"values must have one array per level ({depth}), got {len(values)}")
        parents = [None] + [np.asarray(p, dtype=np.int64) for p in list(parents)[1:]]
        check_parents(self.sizes, parents)
        measured = []
        for level in range(depth):
            true = np.asarray(values[level])
            if true.shape != (self.sizes[level],) or not np.issubdtype(true.dtype, np.integer):
                raise ValueError(f"values[{level}] must be an integer array of length "
                                 f"{self.sizes[level]}, got shape {true.shape} and dtype "
                                 f"{true.dtype}")
            noise = self.noise.sample(level, true.size, source)
            measured.append(true.astype(np.int64) + noise.astype(np.int64))
        return _project(self, measured, parents, consistent=consistent, nonnegative=nonnegative)


def _fanouts(sizes) -> list:
    return [1.0] + [sizes[level] / sizes[level - 1] for level in range(1, len(sizes))]


def plan_hierarchy(sizes, bounds, *, noise: str = "laplace", budget: float,
                   shares=None) -> HierarchyPlan:
    """Plan a release over levels of ``sizes`` nodes: ``bounds`` (one
    :class:`LevelBound`, or one per level), ``noise`` (``"laplace"``: budget
    is epsilon; ``"gaussian"``: budget is rho), ``shares`` (default: the
    variance-minimising split, module docstring)."""
    sizes = _check_sizes(sizes)
    bounds = _bounds_of(bounds, len(sizes))
    fanouts = _fanouts(sizes)
    if shares is None:
        shares = optimal_shares(noise, bounds,
                                lambda variances: float(regular_tree_variances(
                                    variances, fanouts).sum()))
    noise_plan = plan_noise(noise, bounds, budget, shares)
    total = float(np.sum(shares))
    return HierarchyPlan(sizes, noise_plan, tuple(float(s) / total for s in shares))


@dataclass(frozen=True)
class HierarchyRelease:
    """Per level (tuples of arrays): ``estimates`` (BLUE), ``variances``
    (exact), ``ci95`` and ``ci95_guaranteed`` (pairs of arrays low, high),
    ``consistent`` (integers or None), and ``measured`` (the raw noisy
    values: also a DP output)."""

    plan: HierarchyPlan
    measured: tuple
    estimates: tuple
    variances: tuple
    ci95: tuple
    ci95_guaranteed: tuple
    consistent: tuple | None

    @property
    def events(self) -> tuple:
        return self.plan.events

    def rows(self, labels=None) -> list:
        """One dict per node, level by level (``labels[l][i]`` if given)."""
        out = []
        for level, estimates in enumerate(self.estimates):
            for index in range(estimates.size):
                row = {"level": level, "node": index if labels is None else labels[level][index],
                       "estimate": float(estimates[index]),
                       "variance": float(self.variances[level][index]),
                       "ci95": [float(self.ci95[level][0][index]),
                                float(self.ci95[level][1][index])],
                       "ci95_guaranteed": [float(self.ci95_guaranteed[level][0][index]),
                                           float(self.ci95_guaranteed[level][1][index])]}
                if self.consistent is not None:
                    row["consistent"] = int(self.consistent[level][index])
                out.append(row)
        return out


def _project(plan: HierarchyPlan, measured, parents, *, consistent: bool,
             nonnegative: bool) -> HierarchyRelease:
    variances = plan.noise.variances()
    proxies = plan.noise.proxies()
    estimate = blue(measured, variances, proxies, parents)
    integers = consistent_integers(estimate.values, parents) if consistent else None
    intervals, guaranteed = [], []
    for level in range(len(measured)):
        normal, sound = plan.noise.half_widths(estimate.variances[level],
                                               estimate.proxies[level])
        centre = estimate.values[level] if integers is None \
            else integers[level].astype(np.float64)
        intervals.append(_interval(centre, normal, nonnegative))
        # the guarantee holds around the least-squares estimate only
        guaranteed.append(_interval(estimate.values[level], sound, nonnegative))
    return HierarchyRelease(plan, tuple(measured), estimate.values, estimate.variances,
                            tuple(intervals), tuple(guaranteed), integers)


def _interval(centre, half_width, nonnegative: bool):
    low = centre - half_width
    if nonnegative:
        low = np.maximum(low, 0.0)
    return (low, centre + half_width)


def hierarchy_release(values, parents, *, bounds, noise: str = "laplace",
                      epsilon: float | None = None, rho: float | None = None, shares=None,
                      consistent: bool = False, nonnegative: bool = True,
                      source=None) -> HierarchyRelease:
    """One call: :func:`plan_hierarchy` from the level sizes, then
    :meth:`HierarchyPlan.release`.  ``epsilon`` goes with Laplace noise,
    ``rho`` with Gaussian noise (calibrate rho to an (epsilon, delta) budget
    with :func:`privloss.releases.rho_for`)."""
    if noise == "laplace" and (epsilon is None or rho is not None):
        raise ValueError("noise='laplace' takes epsilon (and no rho)")
    if noise == "gaussian" and (rho is None or epsilon is not None):
        raise ValueError("noise='gaussian' takes rho (and no epsilon)")
    sizes = [np.asarray(level).size for level in values]
    plan = plan_hierarchy(sizes, bounds, noise=noise,
                          budget=epsilon if noise == "laplace" else rho, shares=shares)
    return plan.release(values, parents, consistent=consistent, nonnegative=nonnegative,
                        source=source)

"""``GROUP BY ROLLUP(a, b, c)`` privately: subtotals at every level of a
group-by, with noise on every node, the least-squares projection, per-node
95% intervals and optionally non-negative integers that add up.

Definition
----------
The engine returns the bounded statistics of the finest groups (the leaves,
one per ``(a, b, c)`` value; each privacy unit keeps at most ``max_groups``
of them and ``max_rows`` rows in each).  Level ``l`` (0 to L, L the number of
``by`` columns) holds the prefixes of length ``l``: level 0 the grand total,
level L the leaves; a node's true total is the sum of the bounded leaves
below it, so every parent is the sum of its children.

Which nodes exist:

* public keys (full ``(a, b, c)`` tuples): the keys and all their prefixes
  (public; the engine keeps only the rows of the keys);
* private selection (no keys): every prefix of every level gets a noisy
  count ``pairs(p) + Z``, ``pairs(p)`` the number of kept (unit, leaf) pairs
  below it (the distinct units when ``max_groups = 1``) and ``Z`` discrete
  Laplace of scale ``t_sel``; it is selected when the noisy count reaches the
  threshold ``tau``, and kept when its parent is kept too (the grand total
  always is).  A kept node with kept children also gets one *other* child:
  the rows of its children that were not kept (its total is the parent's
  minus its kept children's), so that the tree still adds up; every other
  child is a leaf.  The selection's noisy counts are not released.

Then a :class:`~privloss.releases.hierarchy.HierarchyPlan` on the tree:
noise on every node, one law per level, the measurement budget split across
levels to minimise the sum over levels of the mean exact BLUE variance of the
level's nodes in *this* tree (:func:`tree_variances`; a selected tree has
leaves on inner levels, which the regular-tree split of ``plan_hierarchy``
would leave with almost no budget), then the BLUE, exact variances, 95%
intervals (``ci95`` normal, ``ci95_guaranteed`` sound) and with
``consistent`` non-negative integers adding up at every level
(:class:`~privloss.releases.hierarchy.HierarchyRelease`).  Measures:
``count`` (kept rows) and ``count_distinct`` (kept units; only with
``max_groups = 1``, where a unit lies under one node per level).  Several
measures split the measurement budget equally, one tree each.

Budget: with selection, ``selection_share`` (default 1/2) of epsilon goes to
the selection and the rest to the measurements, equally per measure.  With
Laplace noise every part is pure and the parts add up to at most epsilon
exactly (basic composition, so every interaction model charges at most
epsilon); ``delta`` only pays for the selection (``delta / 2``).  Gaussian
noise measures the tree with zCDP (rho): the knob is the largest whose events
the accountant composes to within (epsilon, delta)
(:func:`privloss.releases.algorithms._calibrate.largest_meeting`).  The
selection always uses discrete Laplace.

Privacy guarantee
-----------------
User level, given the bounding.  Selection: a unit adds at most
``max_groups`` (unit, leaf) pairs, one under one prefix per level, so the
vector of all levels' pair counts moves by at most ``L * max_groups`` in l1:
over prefixes present in both neighbours the noisy counts are
``(L max_groups / t_sel)``-DP (discrete Laplace vector mechanism, Ghosh,
Roughgarden, Sundararajan 2009); a prefix present in one neighbour only
holds only that unit's pairs (at most ``max_groups``), and at most
``L max_groups`` such prefixes exist, so one of them is selected with
probability at most ``L max_groups P[Z >= tau - max_groups] <=
delta_selection`` (Korolova et al. 2009; Wilson et al. 2020): events
``PureDP(L max_groups / t_sel)`` and ``ApproxDP(0, delta_selection)``.
Measurement: for every fixed tree, a unit changes at each level at most
``max_groups`` nodes (each of its leaves lies under one node per level, or
none), by at most ``max_rows`` per leaf: the :class:`LevelBound` of
:func:`~privloss.releases.hierarchy.level_bounds` (an *other* leaf or an
inner leaf may hold ``max_groups`` of the unit's leaves), one ``PureDP`` /
``ZCDP`` event per measure charged at its whole budget (the planned noise
spends at most that).  The two compose adaptively (the tree is a function of
the selection's output).

Citation
--------
Hay et al., VLDB 2010; Honaker 2015 (consistent trees); Korolova, Kenthapadi,
Mishra, Ntoulas, WWW 2009; Wilson et al., PoPETs 2020 (thresholded selection
with bounded contributions); Cormode et al., ICDE 2012 (budgets per level).

Runtime
-------
O(leaves * L) to build the levels, then the hierarchy's O(n log n); the
budget: about 40 accountant calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.events import ApproxDP, PureDP, ZCDP

__all__ = ["MEASURES", "RollupBudget", "plan_rollup", "rollup_tree", "RollupTree",
           "release_rollup", "tree_variances", "MAX_LEVELS"]

#: measure -> the engine statistic it sums
MEASURES = {"count": "rows", "count_distinct": "distinct"}
#: the most ``by`` columns of one rollup
MAX_LEVELS = 8


@dataclass(frozen=True)
class RollupBudget:
    """The public part of a rollup release, fixed before any data is read:
    the events, the selection's noise and threshold, each measure's budget."""

    levels: int
    measures: tuple
    noise: str
    max_groups: int
    max_rows: int
    selection_scale: Fraction | None
    threshold: int | None
    delta_selection: float
    measure_budget: float
    events: tuple
    guarantee: dict

    @property
    def selects(self) -> bool:
        return self.selection_scale is not None

    def level_bounds(self, measure: str) -> tuple:
        from privloss.releases.hierarchy import level_bounds

        per_leaf = self.max_rows if measure == "count" else 1
        # with selection an "other" leaf at the last level may hold several of a unit's leaves
        below = None if not self.selects else [self.max_groups] * (self.levels + 1)
        return level_bounds(self.levels + 1, max_leaves=self.max_groups, per_leaf=per_leaf,
                            leaves_below=below)

    def plan(self, measure: str, parents, sizes):
        """The hierarchy plan of ``measure`` on this tree (``parents`` and level
        ``sizes``): the split across levels minimises the sum over levels of
        the mean BLUE variance of the level's nodes *in this tree* (leaves on
        inner levels included, which the regular-tree objective of
        :func:`~privloss.releases.hierarchy.plan_hierarchy` would starve)."""
        from privloss.releases._levels import optimal_shares, plan_noise
        from privloss.releases.hierarchy import HierarchyPlan

        sizes = tuple(sizes)
        bounds = self.level_bounds(measure)[:len(sizes)]
        shares = optimal_shares(self.noise, bounds, lambda variances: float(sum(
            level.mean() for level in tree_variances(variances, parents, sizes))))
        noise = plan_noise(self.noise, bounds, self.measure_budget, shares)
        return HierarchyPlan(sizes, noise, tuple(float(s) / float(np.sum(shares))
                                                 for s in shares))

    def describe(self) -> dict:
        out = {"levels": self.levels + 1, "measures": list(self.measures),
               "noise": f"discrete-{self.noise}",
               ("epsilon" if self.noise == "laplace" else "rho") + "_per_measure":
                   self.measure_budget,
               "events": [repr(event) for event in self.events], "guarantee": self.guarantee,
               "selection": None}
        if self.selects:
            out["selection"] = {
                "noise": "discrete-laplace", "scale": float(self.selection_scale),
                "scale_exact": str(self.selection_scale), "threshold": self.threshold,
                "epsilon": self.events[0].epsilon, "delta": self.delta_selection,
                "counts": "kept (unit, finest group) pairs below each prefix"}
        return out


def _check(name: str, value, low, high, *, integer: bool = False):
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) \
            or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind} in [{low:g}, {high:g}], got {value!r}")
    return value


def plan_rollup(*, levels: int, measures, epsilon: float, delta: float = 0.0,
                max_groups: int = 1, max_rows: int = 1, noise: str = "laplace",
                select: bool = True, selection_share: float = 0.5) -> RollupBudget:
    """Check the public parameters and fix the events (module docstring)."""
    from privloss.accounting import compose
    from privloss.releases._levels import _float_at_least, _rational_at_least
    from privloss.releases.algorithms._calibrate import largest_meeting
    from privloss.releases.algorithms._noise import DiscreteNoise
    from privloss.releases.calibration import _threshold

    levels = int(_check("levels (the number of by columns)", levels, 1, MAX_LEVELS,
                        integer=True))
    measures = tuple(measures)
    if not measures or len(set(measures)) != len(measures) \
            or any(m not in MEASURES for m in measures):
        raise ValueError(f"measures must be distinct names among {', '.join(MEASURES)}, got "
                         f"{list(measures)}")
    epsilon = float(_check("epsilon", epsilon, 1e-3, 100))
    delta = float(_check("delta", delta, 0, 0.5))
    max_groups = int(_check("max_groups", max_groups, 1, 10_000, integer=True))
    max_rows = int(_check("max_rows_per_group", max_rows, 1, 10_000, integer=True))
    if noise not in ("laplace", "gaussian"):
        raise ValueError(f"noise must be one of laplace, gaussian, got {noise!r}")
    if "count_distinct" in measures and max_groups != 1:
        raise ValueError(f"max_groups must be 1 for a rollup of count_distinct (a unit then "
                         f"lies under one group per level, so subtotals count distinct units), "
                         f"got {max_groups}")
    if select and delta <= 0:
        raise ValueError("without keys the groups of every level are selected by a noisy "
                         "threshold, which needs delta > 0 (or give the keys)")
    if noise == "gaussian" and delta <= 0:
        raise ValueError("noise='gaussian' needs delta > 0")
    share = float(_check("selection_share", selection_share, 0.01, 0.99)) if select else 0.0
    pairs_l1 = levels * max_groups
    delta_selection = delta / 2 if select else 0.0

    def parts(x: float, budget=None):
        events, scale = [], None
        if select:
            scale = _rational_at_least(pairs_l1 / (share * x))
            events += [PureDP(_float_at_least(Fraction(pairs_l1) / scale)),
                       ApproxDP(0.0, delta_selection)]
        if budget is None:
            rest = (1.0 - share) * x
            budget = rest / len(measures) if noise == "laplace" \
                else rest * rest / 2.0 / len(measures)
        events += [(PureDP if noise == "laplace" else ZCDP)(budget) for _ in measures]
        return scale, budget, tuple(events)

    if noise == "laplace":
        # pure parts adding up to at most epsilon exactly (basic composition: every
        # interaction model charges at most epsilon)
        scale, budget, events = parts(epsilon)
        while sum(Fraction(e.epsilon) for e in events if isinstance(e, PureDP)) \
                > Fraction(epsilon):
            scale, budget, events = parts(epsilon, math.nextafter(budget, 0.0))
        result = compose(events, target_delta=delta, interaction="adaptive")
    else:
        x, result = largest_meeting(lambda value: parts(value)[2], epsilon, delta,
                                    guess=epsilon, interaction="adaptive", tolerance=1e-6)
        scale, budget, events = parts(x)
    threshold = None
    if select:
        base = _threshold(DiscreteNoise("laplace", scale, 1), pairs_l1, delta_selection)
        threshold = base + max_groups - 1
    guarantee = {"epsilon": result.epsilon, "delta": delta, "bound": result.bound}
    return RollupBudget(levels, measures, noise, max_groups, max_rows, scale, threshold,
                        delta_selection, budget, events, guarantee)


def tree_variances(noise_variances, parents, sizes) -> tuple:
    """Per level: the exact BLUE variance of every node of this tree for these
    per-level noise variances (:func:`privloss.releases._tree.blue`; the
    variances do not depend on the measured values)."""
    from privloss.releases._tree import blue

    depth = len(sizes)
    zeros = [np.zeros(size) for size in sizes]
    return blue(zeros, noise_variances, [np.zeros(1)] * depth, list(parents)[:depth]).variances


@dataclass(frozen=True)
class RollupTree:
    """The nodes level by level: ``labels[l][i]`` (the prefix tuple; for an
    *other* node its parent's prefix), ``other[l][i]`` (bool), ``parents[l]``
    (index arrays, ``parents[0]`` None) and ``values[measure][l]`` (int64
    arrays of true bounded totals)."""

    labels: tuple
    other: tuple
    parents: tuple
    values: dict

    @property
    def sizes(self) -> tuple:
        return tuple(len(level) for level in self.labels)


def _prefix_totals(leaves: list, levels: int) -> list:
    """Per level l: prefix text -> (label tuple, {statistic: total})."""
    from privloss.query.keys import key_text

    out = [dict() for _ in range(levels + 1)]
    for leaf in leaves:
        label = tuple(leaf["group"])
        text = key_text(label)
        for level in range(levels + 1):
            entry = out[level].setdefault(text[:level], [label[:level], {"rows": 0,
                                                                          "distinct": 0}])
            entry[1]["rows"] += int(leaf["rows"])
            entry[1]["distinct"] += int(leaf["distinct"])
    return out


def _selected(totals: list, budget: RollupBudget, source) -> list:
    """Per level: the prefix texts whose noisy pair count reaches the threshold,
    closed under prefixes (the grand total always)."""
    from privloss.releases.algorithms._noise import DiscreteNoise

    noise = DiscreteNoise("laplace", budget.selection_scale, 1)
    kept = [{()}]
    for level in range(1, budget.levels + 1):
        order = sorted(totals[level])          # draws in a public order (label text)
        # summed leaf distincts: the kept (unit, leaf) pairs below the prefix
        counts = np.array([totals[level][text][1]["distinct"] for text in order],
                          dtype=np.int64)
        noisy = counts + noise.sample(len(order), source).astype(np.int64)
        kept.append({text for text, value in zip(order, noisy.tolist())
                     if value >= budget.threshold and text[:-1] in kept[level - 1]})
    return kept


def rollup_tree(leaves: list, budget: RollupBudget, *, keys=None, source=None) -> RollupTree:
    """The nodes of the release from the engine's leaf statistics (``group``,
    ``rows``, ``distinct`` per finest group): the keys' prefixes, or the noisy
    selection with *other* nodes (module docstring)."""
    from privloss.query.keys import key_text

    levels = budget.levels
    totals = _prefix_totals(leaves, levels)
    if keys is not None:
        known = [dict() for _ in range(levels + 1)]
        for key in keys:
            key = tuple(key)
            text = key_text(key)
            for level in range(levels + 1):
                known[level].setdefault(text[:level], key[:level])
        kept = [set(level) for level in known]
        label_of = known
    else:
        kept = _selected(totals, budget, source)
        label_of = [{text: entry[0] for text, entry in level.items()} for level in totals]
    empty = {"rows": 0, "distinct": 0}
    labels, other, parents = [[()]], [[False]], [None]
    texts = [[()]]
    values = {m: [[totals[0].get((), [None, empty])[1][MEASURES[m]]]] for m in budget.measures}
    children = [dict() for _ in range(levels + 1)]
    for level in range(1, levels + 1):
        for text in kept[level]:
            children[level].setdefault(text[:-1], []).append(text)
    for level in range(1, levels + 1):
        level_labels, level_other, level_parents, level_texts = [], [], [], []
        level_values = {m: [] for m in budget.measures}
        for index, (text, is_other) in enumerate(zip(texts[level - 1], other[level - 1])):
            below = [] if is_other else sorted(children[level].get(text, ()))
            for child in below:
                level_labels.append(label_of[level][child])
                level_other.append(False)
                level_parents.append(index)
                level_texts.append(child)
                for m in budget.measures:
                    level_values[m].append(
                        totals[level].get(child, [None, empty])[1][MEASURES[m]])
            if below and keys is None:
                level_labels.append(labels[level - 1][index])
                level_other.append(True)
                level_parents.append(index)
                level_texts.append(text)
                for m in budget.measures:
                    level_values[m].append(values[m][level - 1][index] - sum(
                        level_values[m][-len(below):]))
        labels.append(level_labels)
        other.append(level_other)
        parents.append(np.array(level_parents, dtype=np.int64))
        texts.append(level_texts)
        for m in budget.measures:
            values[m].append(level_values[m])
    arrays = {m: tuple(np.array(level, dtype=np.int64) for level in values[m])
              for m in budget.measures}
    return RollupTree(tuple(map(tuple, labels)), tuple(map(tuple, other)), tuple(parents),
                      arrays)


def release_rollup(budget: RollupBudget, leaves: list, *, keys=None, consistent: bool = False,
                   source=None) -> dict:
    """The JSON payload: ``rows`` (one per kept node, SQL ROLLUP's shape:
    ``group`` with ``None`` for the rolled-up columns, ``level``, ``values``,
    ``ci95``, ``ci95_guaranteed``, ``variance`` per measure), ``others`` (the
    *other* nodes: ``parent`` group, ``level``, the same fields) and
    ``columns``."""
    tree = rollup_tree(leaves, budget, keys=keys, source=source)
    # levels below the deepest selected one are empty: the tree stops there
    sizes = tuple(size for size in tree.sizes if size > 0)
    if any(tree.sizes[len(sizes):]):
        raise RuntimeError("a level below an empty level holds nodes")
    releases = {}
    for measure in budget.measures:
        plan = budget.plan(measure, tree.parents, sizes)
        releases[measure] = plan.release(tree.values[measure][:len(sizes)],
                                         tree.parents[:len(sizes)],
                                         consistent=consistent, nonnegative=True,
                                         source=source)
    rows, others = [], []
    for level in range(len(sizes)):
        order = sorted(range(sizes[level]),
                       key=lambda i: tuple(map(str, tree.labels[level][i])))
        for index in order:
            label = list(tree.labels[level][index])
            entry = {"level": level, "values": {}, "ci95": {}, "ci95_guaranteed": {},
                     "variance": {}}
            for measure, release in releases.items():
                estimate = float(release.estimates[level][index])
                entry["values"][measure] = (int(release.consistent[level][index])
                                            if consistent else estimate)
                entry["ci95"][measure] = [float(release.ci95[level][0][index]),
                                          float(release.ci95[level][1][index])]
                entry["ci95_guaranteed"][measure] = [
                    float(release.ci95_guaranteed[level][0][index]),
                    float(release.ci95_guaranteed[level][1][index])]
                entry["variance"][measure] = float(release.variances[level][index])
            if tree.other[level][index]:
                others.append({"parent": label + [None] * (budget.levels - len(label)),
                               **entry})
            else:
                rows.append({"group": label + [None] * (budget.levels - level), **entry})
    return {"rows": rows, "others": others, "columns": list(budget.measures)}

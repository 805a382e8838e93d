"""Consistent hierarchies: exact consistency, coverage over repeated runs
(fixed insecure seed), exact variances, the budget split, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from privloss.events import PureDP, ZCDP
from privloss.releases import (LevelBound, hierarchy_release, level_bounds, plan_hierarchy)
from privloss.releases._rounding import consistent_integers, simplex_projection
from privloss.releases.hierarchy import regular_tree_variances
from privloss.samplers import InsecureSeededSource
from tests.releases._trees import random_tree, totals

SIZES = (1, 4, 16)


def _data(seed=0, sizes=SIZES, high=30):
    rng = np.random.default_rng(seed)
    parents = random_tree(rng, sizes)
    return totals(rng.integers(0, high, sizes[-1]), parents, sizes), parents


@pytest.mark.parametrize("seed", range(6))
def test_consistent_integers_add_up_exactly(seed):
    rng = np.random.default_rng(seed)
    sizes = (1, 3, 11, 40)
    parents = random_tree(rng, sizes)
    estimates = [rng.normal(5, 8, size) for size in sizes]     # inconsistent, some negative
    integers = consistent_integers(estimates, parents)
    assert integers[0][0] == max(0, round(estimates[0][0]))
    for level in range(len(sizes)):
        assert integers[level].dtype == np.int64 and (integers[level] >= 0).all()
    for level in range(1, len(sizes)):
        sums = np.bincount(parents[level], weights=integers[level], minlength=sizes[level - 1])
        has_children = np.bincount(parents[level], minlength=sizes[level - 1]) > 0
        assert (sums[has_children] == integers[level - 1][has_children]).all()


def test_simplex_projection_is_the_least_squares_point():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    for _ in range(20):
        values = rng.normal(2, 4, 5)
        total = float(rng.integers(0, 15))
        got = simplex_projection(values, np.zeros(5, dtype=np.int64), np.array([total]))
        assert got.min() >= 0 and abs(got.sum() - total) < 1e-9
        best = minimize(lambda z: ((z - values) ** 2).sum(), np.full(5, total / 5),
                        constraints=[{"type": "eq", "fun": lambda z: z.sum() - total}],
                        bounds=[(0, None)] * 5, method="SLSQP", options={"ftol": 1e-12})
        assert ((got - values) ** 2).sum() <= best.fun + 1e-6


@pytest.mark.parametrize("noise, budget", [("laplace", 1.0), ("gaussian", 0.25)])
def test_release_is_consistent_and_charges_one_event(noise, budget):
    values, parents = _data()
    kwargs = {"epsilon": budget} if noise == "laplace" else {"rho": budget}
    release = hierarchy_release(values, parents, bounds=LevelBound(1, 1), noise=noise,
                                consistent=True, source=InsecureSeededSource(1), **kwargs)
    (event,) = release.events
    assert isinstance(event, PureDP if noise == "laplace" else ZCDP)
    assert (event.epsilon if noise == "laplace" else event.rho) <= budget
    for level in (1, 2):
        sums = np.bincount(parents[level], weights=release.estimates[level],
                           minlength=SIZES[level - 1])
        np.testing.assert_allclose(sums, release.estimates[level - 1], atol=1e-8)
        ints = np.bincount(parents[level], weights=release.consistent[level],
                           minlength=SIZES[level - 1])
        assert (ints == release.consistent[level - 1]).all()
    rows = release.rows()
    assert len(rows) == sum(SIZES)
    assert {"estimate", "variance", "ci95", "consistent"} <= set(rows[0])


@pytest.mark.parametrize("noise, budget", [("laplace", 0.5), ("gaussian", 0.1)])
def test_coverage_and_variance_over_repeated_runs(noise, budget):
    values, parents = _data(seed=2)
    plan = plan_hierarchy(SIZES, LevelBound(1, 1), noise=noise, budget=budget)
    source = InsecureSeededSource(2026)
    runs = 400
    errors = [[] for _ in SIZES]
    covered = {"ci95": 0, "ci95_guaranteed": 0, "consistent": 0}
    total = 0
    for _ in range(runs):
        release = plan.release(values, parents, source=source, nonnegative=False)
        consistent = plan.release(values, parents, source=source, consistent=True)
        for level, truth in enumerate(values):
            errors[level].append(release.estimates[level] - truth)
            for name in ("ci95", "ci95_guaranteed"):
                low, high = getattr(release, name)[level]
                covered[name] += int(((low <= truth) & (truth <= high)).sum())
            low, high = consistent.ci95[level]
            covered["consistent"] += int(((low <= truth) & (truth <= high)).sum())
            total += truth.size
    rates = {name: count / total for name, count in covered.items()}
    assert 0.88 <= rates["ci95"] <= 0.995, rates
    assert 0.88 <= rates["consistent"] <= 0.995, rates
    assert rates["ci95_guaranteed"] >= 0.95, rates
    # exact variances: the empirical ones agree (400 runs: about +-15% at 2 sigma)
    for level in range(len(SIZES)):
        empirical = np.var(np.array(errors[level]), axis=0)
        ratio = empirical.mean() / release.variances[level].mean()
        assert 0.82 <= ratio <= 1.18, (level, ratio)
        assert abs(np.mean(errors[level])) < 0.2 * np.sqrt(release.variances[level].mean())


def test_projection_lowers_every_level_variance():
    values, parents = _data()
    plan = plan_hierarchy(SIZES, LevelBound(1, 1), noise="gaussian", budget=0.2)
    release = plan.release(values, parents, source=InsecureSeededSource(4))
    raw = plan.noise.variances()
    for level in range(len(SIZES)):
        assert (release.variances[level] <= raw[level] + 1e-12).all()


def test_budget_split_minimises_the_documented_variance():
    sizes = (1, 10, 100, 1000)
    bounds = level_bounds(4)
    optimal = plan_hierarchy(sizes, bounds, noise="laplace", budget=1.0)
    uniform = plan_hierarchy(sizes, bounds, noise="laplace", budget=1.0, shares=[1, 1, 1, 1])
    assert optimal.expected_variances().sum() <= uniform.expected_variances().sum()
    # the regular-tree formula is the tree BLUE on a regular tree
    fan = [1, 10, 10, 10]
    exact = regular_tree_variances([2.0, 3.0, 1.0, 5.0], fan)
    from privloss.releases._tree import blue
    parents = [None] + [np.repeat(np.arange(sizes[level - 1]), 10) for level in range(1, 4)]
    result = blue([np.zeros(s) for s in sizes], [2.0, 3.0, 1.0, 5.0], [1.0] * 4, parents)
    np.testing.assert_allclose([v[0] for v in result.variances], exact, rtol=1e-12)


def test_level_bounds_cover_a_unit_touching_several_leaves():
    bounds = level_bounds(3, max_leaves=3, per_leaf=2)
    assert [(b.l1, b.linf) for b in bounds] == [(6, 6), (6, 6), (6, 2)]


def test_bad_input_named_before_noise():
    values, parents = _data()
    plan = plan_hierarchy(SIZES, LevelBound(1, 1), noise="laplace", budget=1.0)
    with pytest.raises(ValueError, match=r"values\[2\] must be an integer array of length 16"):
        plan.release(values[:2] + [values[2][:5]], parents)
    with pytest.raises(ValueError, match="noise='gaussian' takes rho"):
        hierarchy_release(values, parents, bounds=LevelBound(1, 1), noise="gaussian",
                          epsilon=1.0)
    with pytest.raises(ValueError, match=r"sizes\[1\] must be an integer >= 1, got 0"):
        plan_hierarchy((1, 0), LevelBound(1, 1), budget=1.0)


@pytest.mark.parametrize("noise, budget", [("laplace", 1.0), ("gaussian", 0.3)])
def test_neighbouring_inputs_give_the_same_structure(noise, budget):
    """D and D' (one unit more in one leaf): same events, variances, interval
    widths and row keys; only the noisy values differ."""
    values, parents = _data(seed=4)
    neighbour = [v.copy() for v in values]
    leaf = 5
    neighbour[2][leaf] += 1
    neighbour[1][parents[2][leaf]] += 1
    neighbour[0][0] += 1
    plan = plan_hierarchy(SIZES, LevelBound(1, 1), noise=noise, budget=budget)

    def shape(release):
        return (release.events, [v.tolist() for v in release.variances],
                [np.round(high - low, 9).tolist() for low, high in release.ci95_guaranteed],
                [(row["level"], row["node"], sorted(row)) for row in release.rows()])

    kwargs = dict(consistent=True, nonnegative=False)
    first = plan.release(values, parents, source=InsecureSeededSource(1), **kwargs)
    second = plan.release(neighbour, parents, source=InsecureSeededSource(1), **kwargs)
    assert shape(first) == shape(second)

"""Running totals: continual release, exact variances, coverage over repeated
runs (fixed insecure seed), error growth over T = 64 ... 4096, bounds."""

from __future__ import annotations

import numpy as np
import pytest

from privloss.events import PureDP, ZCDP
from privloss.releases import plan_running, running_bounds
from privloss.releases._levels import NoisePlan
from privloss.samplers import InsecureSeededSource


def _counts(periods, seed=0, high=40):
    return np.random.default_rng(seed).integers(0, high, periods)


@pytest.mark.parametrize("noise, budget", [("laplace", 1.0), ("gaussian", 0.5)])
def test_one_event_within_the_budget(noise, budget):
    plan = plan_running(100, max_periods=3, per_period=2, noise=noise, budget=budget)
    (event,) = plan.events
    assert isinstance(event, PureDP if noise == "laplace" else ZCDP)
    assert (event.epsilon if noise == "laplace" else event.rho) <= budget
    assert plan.capacity == 128 and plan.levels == 8


def test_running_bounds():
    bounds = running_bounds(8, max_periods=3, per_period=2)      # 4 levels, capacity 8
    assert [(b.l1, b.linf) for b in bounds] == [(6, 6), (6, 6), (6, 4), (6, 2)]
    assert [(b.l1, b.linf) for b in running_bounds(2, max_periods=5, per_period=1)] == \
        [(2, 2), (2, 1)]


def test_appending_never_changes_released_periods():
    plan = plan_running(50, max_periods=2, per_period=1, noise="laplace", budget=1.0)
    values = _counts(50)
    totals = plan.start(InsecureSeededSource(7))
    previous = None
    for chunk in np.array_split(values, [1, 2, 7, 8, 20, 33, 49]):
        release = totals.append(chunk)
        if previous is not None:
            np.testing.assert_array_equal(release.estimates[:previous.periods],
                                          previous.estimates)
            np.testing.assert_array_equal(release.variances[:previous.periods],
                                          previous.variances)
        previous = release
    assert release.periods == 50
    assert (np.diff(release.monotone) >= 0).all() and (release.monotone >= 0).all()
    with pytest.raises(ValueError, match="more than the horizon 50"):
        totals.append(np.array([1]))


def test_exact_variances_from_the_weights(monkeypatch):
    """Unit noise on one node at a time gives the estimator's weights; the
    reported variance is sum of squared weights times the noise variances."""
    periods = 13
    plan = plan_running(periods, max_periods=1, per_period=1, noise="gaussian", budget=0.3)
    variances = plan.noise.variances()
    nodes = [(level, i) for level in range(plan.levels) for i in range(1 << level)]
    weights = np.zeros((periods, len(nodes)))
    for column, (level_hit, index_hit) in enumerate(nodes):
        def fake(self, level, size, source, *, _l=level_hit, _i=index_hit, _calls={}):
            start = _calls.setdefault(level, 0)
            _calls[level] = start + size
            out = np.zeros(size, dtype=np.int64)
            if level == _l and start <= _i < start + size:
                out[_i - start] = 1
            return out
        monkeypatch.setattr(NoisePlan, "sample", fake)
        zero = plan.release(np.zeros(periods, dtype=np.int64), estimator="continual")
        weights[:, column] = zero.estimates
    node_variance = np.array([variances[level] for level, _ in nodes])
    monkeypatch.undo()
    release = plan.release(np.zeros(periods, dtype=np.int64), InsecureSeededSource(1),
                           estimator="continual")
    np.testing.assert_allclose(release.variances, (weights ** 2) @ node_variance, rtol=1e-10)
    # unbiased: the weights of the nodes covering [0, t) sum to one per period
    assert np.abs(weights).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("noise, budget", [("laplace", 1.0), ("gaussian", 0.2)])
def test_coverage_over_repeated_runs(noise, budget):
    periods = 60
    plan = plan_running(periods, max_periods=4, per_period=3, noise=noise, budget=budget)
    values = _counts(periods, seed=3)
    truth = np.cumsum(values)
    source = InsecureSeededSource(99)
    covered = {"ci95": 0, "ci95_guaranteed": 0}
    errors = []
    runs = 300
    for _ in range(runs):
        release = plan.release(values, source)
        errors.append(release.estimates - truth)
        for name in covered:
            low, high = getattr(release, name)
            covered[name] += int(((low <= truth) & (truth <= high)).sum())
    rates = {name: count / (runs * periods) for name, count in covered.items()}
    assert 0.88 <= rates["ci95"] <= 0.995, rates
    assert rates["ci95_guaranteed"] >= 0.95, rates
    ratio = np.var(np.array(errors), axis=0).mean() / release.variances.mean()
    assert 0.85 <= ratio <= 1.15, ratio


@pytest.mark.parametrize("noise, budget", [("laplace", 1.0), ("gaussian", 0.5)])
def test_error_grows_like_a_polylog_of_the_number_of_periods(noise, budget):
    horizons = 2 ** np.arange(6, 13)                 # T = 64 ... 4096
    rmse = []
    for horizon in horizons:
        plan = plan_running(int(horizon), max_periods=1, per_period=1, noise=noise,
                            budget=budget)
        rmse.append(np.sqrt(plan.expected_variances().mean()))
    rmse = np.array(rmse)
    slope_in_t = np.polyfit(np.log(horizons), np.log(rmse), 1)[0]
    slope_in_log_t = np.polyfit(np.log(np.log2(horizons)), np.log(rmse), 1)[0]
    # sqrt(T) growth would be slope 0.5; a polylog is far below and flattens
    assert slope_in_t < 0.25, slope_in_t
    assert 0.3 < slope_in_log_t < 2.0, slope_in_log_t
    # real runs agree with the exact variance (errors of one run are correlated
    # across periods and heavy-tailed: 80 runs at T = 1024)
    plan = plan_running(1024, max_periods=1, per_period=1, noise=noise, budget=budget)
    values = _counts(1024, seed=1, high=3)
    source = InsecureSeededSource(5)
    squares = [np.mean((plan.release(values, source).estimates - np.cumsum(values)) ** 2)
               for _ in range(80)]
    assert 0.7 <= np.mean(squares) / plan.expected_variances().mean() <= 1.35


def test_bad_parameters_named():
    with pytest.raises(ValueError, match="max_periods must be an integer >= 1, got 0"):
        plan_running(10, max_periods=0, per_period=1, budget=1.0)
    with pytest.raises(ValueError, match="horizon must be an integer >= 1"):
        plan_running(0, max_periods=1, per_period=1, budget=1.0)
    plan = plan_running(10, max_periods=1, per_period=1, budget=1.0)
    with pytest.raises(ValueError, match="values must be a one-dimensional integer array"):
        plan.release(np.array([1.5, 2.0]))


@pytest.mark.parametrize("horizon", [1, 2, 3])
def test_tiny_horizons_and_empty_appends(horizon):
    plan = plan_running(horizon, max_periods=1, per_period=1, budget=1.0)
    totals = plan.start(InsecureSeededSource(2))
    empty = totals.append(np.array([], dtype=np.int64))
    assert empty.periods == 0 and empty.ci95[0].size == 0
    release = totals.append(np.ones(horizon, dtype=np.int64))
    assert release.periods == horizon and (release.variances > 0).all()


def _complete_nodes(plan, periods):
    height = plan.levels - 1
    return [(level, i) for level in range(plan.levels)
            for i in range(periods >> (height - level))]


@pytest.mark.parametrize("noise, periods", [("gaussian", 13), ("laplace", 11), ("gaussian", 16)])
def test_offline_estimate_is_the_dense_least_squares_fit(monkeypatch, noise, periods):
    plan = plan_running(periods, max_periods=1, per_period=1, noise=noise, budget=0.7,
                        shares=None)
    height = plan.levels - 1
    nodes = _complete_nodes(plan, periods)
    weights = np.zeros((periods, len(nodes)))
    for column, (level_hit, index_hit) in enumerate(nodes):
        def fake(self, level, size, source, *, _l=level_hit, _i=index_hit):
            out = np.zeros(size, dtype=np.int64)
            if level == _l and _i < size:
                out[_i] = 1
            return out
        monkeypatch.setattr(NoisePlan, "sample", fake)
        totals = plan.start()
        totals.append(np.zeros(periods, dtype=np.int64))
        weights[:, column] = totals.offline().estimates
    monkeypatch.undo()
    variances = np.array(plan.noise.variances())
    node_variance = np.array([variances[level] for level, _ in nodes])
    # dense generalised least squares over the complete nodes
    design = np.zeros((len(nodes), periods))
    for row, (level, index) in enumerate(nodes):
        width = 1 << (height - level)
        design[row, index * width:(index + 1) * width] = 1.0
    precision = np.diag(1.0 / node_variance)
    leaves = np.linalg.solve(design.T @ precision @ design, design.T @ precision)
    np.testing.assert_allclose(weights, np.cumsum(leaves, axis=0), atol=1e-9)
    totals = plan.start(InsecureSeededSource(3))
    totals.append(np.zeros(periods, dtype=np.int64))
    release = totals.offline()
    np.testing.assert_allclose(release.variances, (weights ** 2) @ node_variance, rtol=1e-9)
    proxies = plan.noise.proxies()
    node_proxy = np.array([proxies[level, 0] for level, _ in nodes])
    from privloss.releases._offline import offline_prefixes
    *_, bounds = offline_prefixes(plan, totals._measured, periods)
    node_level = np.array([level for level, _ in nodes])
    for level in sorted(set(node_level.tolist())):     # the weight bounds hold
        actual = np.abs(weights[:, node_level == level]).max(axis=1)
        assert (actual <= bounds[:, level] + 1e-9).all(), level
    _, sound = plan.noise.half_widths(release.variances, (weights ** 2) @ np.array(
        [proxies[level] for level, _ in nodes]), bounds)
    np.testing.assert_allclose(release.ci95_guaranteed[1] - release.estimates, sound,
                               rtol=1e-9)
    assert ((weights ** 2) @ node_proxy > 0).all()
    # never worse than the continual estimate
    assert (release.variances <= totals._release().variances + 1e-9).all()

"""Running totals: every prefix total of a sequence of periods, released at
once or period by period (continual release) on one budget.

>>> from privloss.releases import plan_running                          # doctest: +SKIP
>>> plan = plan_running(3650, max_periods=30, per_period=5, noise="laplace", budget=1.0)
>>> totals = plan.start()                                                # doctest: +SKIP
>>> release = totals.append(daily_counts)                                # doctest: +SKIP

Definition
----------
Periods 0, 1, ..., ``horizon - 1`` (public); x_i is the bounded total of
period i (an integer: a count, a clamped sum, or the number of units first
seen in period i).  The binary-tree mechanism (Dwork, Naor, Pitassi,
Rothblum 2010; Chan, Shi, Song 2011): the dyadic intervals of a complete
binary tree over C = 2^H >= horizon periods are the nodes; level l (0 the
root, H the single periods) has 2^l nodes of 2^(H-l) periods each.  A node
gets its noisy sum y = (sum of its periods) + integer noise when its last
period is in (:mod:`._levels`: discrete Laplace or discrete Gaussian, one law
per level, sampled exactly).

Estimates.  ``offline`` (:meth:`RunningPlan.release`,
:meth:`RunningTotals.offline`): the least-squares estimate from every complete
node, with exact variances (:mod:`._offline`); earlier periods' estimates move
as periods are appended.  ``continual`` (:meth:`RunningTotals.append`): each
complete node's subtree estimate (Honaker 2015; the up pass of :mod:`._tree`): up_v = y_v at a period, else the inverse-variance
combination of y_v and the sum of its two children's up; variance U_l.  The
total of periods [0, t) is the sum of the up of the dyadic nodes covering
[0, t) (one per bit of t), with exact variance sum U_l.  Given the nodes
complete by period t these are the least-squares estimates (every ancestor
of those nodes is still incomplete, so no other released node measures
them), so past estimates never change when periods are appended.  For totals
that cannot decrease (counts, first appearances, sums with LOW >= 0),
``monotone`` is the weighted (1 / variance) least-squares non-decreasing fit
of all released estimates, clipped at 0 (``scipy.optimize.isotonic_regression``;
it may revise earlier periods: post-processing).

Intervals: ``ci95`` (normal, exact variance) and ``ci95_guaranteed`` (sound
sub-Gaussian / sub-gamma bound) as in :mod:`._levels`; for non-decreasing
statistics the lower ends are clipped at 0.  They are intervals around
``estimates``; ``monotone`` is a point estimate (its squared error is at most
that of ``estimates``: projection onto a convex set containing the truth).

The budget split across levels minimises the mean over t = 1..horizon of the
variance of the total of [0, t) (:func:`running_shares`).  Error: with H =
ceil(log2 horizon) levels the variance is O(H) times the per-level variance,
which is O(H^2 / epsilon^2) (Laplace) or O(H / rho) (Gaussian): the standard
deviation grows like log(T)^1.5 or log(T), not sqrt(T) (measured in
tests/releases over T = 64 ... 4096).

The square-root factorisation (Fichtenberger, Henzinger, Upadhyay 2023) has a
smaller constant but a real-valued right factor: integer noise then gives
outputs on different lattices for neighbouring inputs (no privacy), so it
would need continuous noise; privloss keeps exact integer noise and the 0/1
tree.

Privacy guarantee
-----------------
Neighbours differ by one privacy unit, which changes at most ``max_periods``
period totals, each by at most ``per_period`` (the data path enforces both).
Then at every level the unit changes at most ``max_periods`` nodes, their
changes adding up to at most max_periods * per_period and each at most
per_period * min(max_periods, 2^(H-l)) (:func:`running_bounds`), and the whole
tree (every node up to the horizon, all released or not) is epsilon-DP
(Laplace) or rho-zCDP (Gaussian): one event, charged once for the horizon.
Continual release: appending periods later releases more nodes of the same
tree with fresh noise, covered by that one charge, provided the totals of
released periods do not change afterwards (append-only data, periods released
in order), and the adversary may choose the data of later periods adaptively
(each node's noise is fresh and its sensitivity bound holds whatever came
before: the tree is a composition of mechanisms with fixed parameters,
adaptively chosen inputs).  Beyond the horizon nothing is released.

Citation
--------
Dwork, Naor, Pitassi, Rothblum, "Differential Privacy under Continual
Observation", STOC 2010; Chan, Shi, Song, "Private and Continual Release of
Statistics", TISSEC 2011; Honaker, "Efficient Use of Differentially Private
Binary Trees", 2015; Fichtenberger, Henzinger, Upadhyay, "Constant Matters:
Fine-grained Error Bound on Differentially Private Continual Observation",
ICML 2023.

Runtime
-------
O(horizon) noise draws and arithmetic, NumPy vectorised per level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privloss.releases._levels import LevelBound, NoisePlan, optimal_shares, plan_noise

__all__ = ["RunningPlan", "RunningTotals", "RunningRelease", "plan_running", "running_bounds",
           "running_shares", "prefix_variances"]


ESTIMATORS = ("offline", "continual")


def _check_estimator(estimator) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")


def _levels_for(horizon: int) -> int:
    return max(0, (int(horizon) - 1).bit_length())


def running_bounds(horizon: int, *, max_periods: int, per_period: int) -> tuple:
    """:class:`LevelBound` per level (root first) of the tree over ``horizon``
    periods for a unit changing at most ``max_periods`` periods by at most
    ``per_period`` each."""
    height = _levels_for(horizon)
    periods = min(int(max_periods), 1 << height)
    return tuple(LevelBound(periods * per_period,
                            per_period * min(periods, 1 << (height - level)))
                 for level in range(height + 1))


def _up_variances(noise_variances) -> np.ndarray:
    """U per level (root first) of the complete binary tree."""
    v = [float(x) for x in noise_variances]
    up = np.empty(len(v))
    up[-1] = v[-1]
    for level in range(len(v) - 2, -1, -1):
        below = 2.0 * up[level + 1]
        up[level] = v[level] * below / (v[level] + below)
    return up


def _bit_weights(horizon: int, levels: int) -> np.ndarray:
    """Per level (root first): the fraction of t in 1..horizon whose dyadic
    cover uses a node of that level (bit H - l of t set)."""
    t = np.arange(1, horizon + 1, dtype=np.int64)
    height = levels - 1
    return np.array([np.count_nonzero((t >> (height - level)) & 1) / horizon
                     for level in range(levels)])


def running_shares(kind: str, bounds, horizon: int) -> np.ndarray:
    """Budget shares minimising the mean over t = 1..horizon of Var(total of [0, t))."""
    weights = _bit_weights(horizon, len(bounds))
    return optimal_shares(kind, bounds, lambda variances: float(weights @ _up_variances(variances)))


def prefix_variances(per_level, t: np.ndarray, levels: int) -> np.ndarray:
    """Sum over the set bits of each t of ``per_level`` (root first; numbers,
    or rows of K numbers giving a (len(t), K) result)."""
    height = levels - 1
    per_level = np.asarray(per_level, dtype=np.float64)
    bits = np.stack([(t >> (height - level)) & 1 for level in range(levels)], axis=1)
    return bits.astype(np.float64) @ per_level


@dataclass(frozen=True)
class RunningPlan:
    """What a running release spends and how it adds noise, fixed from the
    public parameters alone: ``horizon`` periods, the tree's noise, the
    budget shares, and whether the statistic cannot decrease."""

    horizon: int
    noise: NoisePlan
    shares: tuple
    nondecreasing: bool

    @property
    def levels(self) -> int:
        return self.noise.depth

    @property
    def capacity(self) -> int:
        return 1 << (self.levels - 1)

    @property
    def events(self) -> tuple:
        return (self.noise.event(),)

    def _per_level(self):
        variances = self.noise.variances()
        proxies = self.noise.proxies()
        up = _up_variances(variances)
        # the same recursion with squared weights gives the tail proxies
        up_proxy = np.empty_like(proxies)
        up_proxy[-1] = proxies[-1]
        for level in range(self.levels - 2, -1, -1):
            below = 2.0 * up[level + 1]
            own = below / (variances[level] + below)
            up_proxy[level] = own * own * proxies[level] + (1 - own) ** 2 * 2 * up_proxy[level + 1]
        return up, up_proxy

    def expected_variances(self, periods=None, estimator: str = "offline") -> np.ndarray:
        """Exact variance of the estimated total of [0, t) for t = 1..periods,
        for the ``offline`` estimate (all complete nodes, :meth:`release`) or
        the ``continual`` one (:meth:`RunningTotals.append`)."""
        periods = periods or self.horizon
        _check_estimator(estimator)
        if estimator == "offline":
            from privloss.releases._offline import offline_prefixes
            empty = [np.zeros(1 << level) for level in range(self.levels)]
            return offline_prefixes(self, empty, periods)[1]
        t = np.arange(1, periods + 1, dtype=np.int64)
        return prefix_variances(self._per_level()[0], t, self.levels)

    def describe(self) -> dict:
        return {**self.noise.describe(), "horizon": self.horizon, "tree_capacity": self.capacity,
                "levels": self.levels, "budget_shares": list(self.shares),
                "mechanism": "binary-tree",
                "estimator": "least squares over all complete nodes (offline)"}

    def start(self, source=None) -> "RunningTotals":
        return RunningTotals(self, source)

    def release(self, values, source=None, *, estimator: str = "offline") -> "RunningRelease":
        """All prefix totals of ``values`` (at most ``horizon`` periods) at
        once: the ``offline`` least-squares estimate from every complete node
        (default; lower variance) or the ``continual`` one."""
        _check_estimator(estimator)
        totals = self.start(source)
        continual = totals.append(values)
        return totals.offline() if estimator == "offline" else continual


def plan_running(horizon: int, *, max_periods: int, per_period: int, noise: str = "laplace",
                 budget: float, nondecreasing: bool = True, shares=None) -> RunningPlan:
    """Plan a running release over ``horizon`` periods (module docstring):
    ``budget`` is epsilon (Laplace) or rho (Gaussian)."""
    for name, value in (("horizon", horizon), ("max_periods", max_periods),
                        ("per_period", per_period)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if horizon > 1 << 40:
        raise ValueError(f"horizon must be at most 2^40 periods, got {horizon!r}")
    bounds = running_bounds(horizon, max_periods=max_periods, per_period=per_period)
    if shares is None:
        shares = running_shares(noise, bounds, int(horizon))
    noise_plan = plan_noise(noise, bounds, budget, shares)
    total = float(np.sum(shares))
    return RunningPlan(int(horizon), noise_plan, tuple(float(s) / total for s in shares),
                       bool(nondecreasing))


@dataclass(frozen=True)
class RunningRelease:
    """Totals of [0, t) for t = 1..periods: ``estimates`` (never revised),
    ``variances`` (exact), ``ci95`` / ``ci95_guaranteed`` (low, high arrays),
    ``monotone`` (non-decreasing fit, or None)."""

    plan: RunningPlan
    estimates: np.ndarray
    variances: np.ndarray
    ci95: tuple
    ci95_guaranteed: tuple
    monotone: np.ndarray | None

    @property
    def periods(self) -> int:
        return int(self.estimates.size)

    @property
    def events(self) -> tuple:
        return self.plan.events

    def rows(self, labels=None) -> list:
        out = []
        for i in range(self.periods):
            row = {"period": i if labels is None else labels[i],
                   "total": float(self.estimates[i]), "variance": float(self.variances[i]),
                   "ci95": [float(self.ci95[0][i]), float(self.ci95[1][i])],
                   "ci95_guaranteed": [float(self.ci95_guaranteed[0][i]),
                                       float(self.ci95_guaranteed[1][i])]}
            if self.monotone is not None:
                row["monotone"] = float(self.monotone[i])
            out.append(row)
        return out


class RunningTotals:
    """The continual-release state of one running total: the true totals of
    the periods so far (private: kept in memory only, never returned) and the
    noisy sums and estimates of the complete nodes.  :meth:`append` adds
    periods and returns the release of every period so far."""

    def __init__(self, plan: RunningPlan, source=None):
        self.plan = plan
        self._source = source
        self._values = np.zeros(0, dtype=np.int64)
        levels = plan.levels
        self._up = [np.zeros(1 << level) for level in range(levels)]
        self._measured = [np.zeros(1 << level) for level in range(levels)]
        self._variances = plan.noise.variances()
        self._per_level = plan._per_level()

    @property
    def periods(self) -> int:
        return int(self._values.size)

    def append(self, values) -> RunningRelease:
        """Add the totals of the next periods (integers) and release."""
        values = np.asarray(values)
        if values.ndim != 1 or not (np.issubdtype(values.dtype, np.integer) or values.size == 0):
            raise ValueError(f"values must be a one-dimensional integer array, got shape "
                             f"{values.shape} and dtype {values.dtype}")
        before, after = self.periods, self.periods + values.size
        if after > self.plan.horizon:
            raise ValueError(f"values would release {after} periods, more than the horizon "
                             f"{self.plan.horizon} the budget covers")
        self._values = np.concatenate([self._values, values.astype(np.int64)])
        height = self.plan.levels - 1
        padded = np.zeros(self.plan.capacity, dtype=np.int64)
        padded[:after] = self._values
        for level in range(height, -1, -1):          # leaves first: parents need children
            width = 1 << (height - level)
            first, last = before // width, after // width    # newly complete: [first, last)
            if last <= first:
                continue
            sums = padded[first * width:last * width].reshape(last - first, width).sum(axis=1)
            noisy = sums + self.plan.noise.sample(level, last - first, self._source)
            noisy = noisy.astype(np.float64)
            self._measured[level][first:last] = noisy
            if level == height:
                self._up[level][first:last] = noisy
            else:
                s = self._variances[level]
                below = 2.0 * self._per_level[0][level + 1]
                own = below / (s + below)
                children = self._up[level + 1][2 * first:2 * last].reshape(-1, 2).sum(axis=1)
                self._up[level][first:last] = own * noisy + (1.0 - own) * children
        return self._release()

    def offline(self) -> RunningRelease:
        """The release of every period so far from *all* complete nodes
        (:mod:`._offline`): lower variance than :meth:`append`'s estimates, but
        earlier periods' estimates change as periods are appended."""
        from privloss.releases._offline import offline_prefixes

        estimates, variances, proxies, max_weights = offline_prefixes(
            self.plan, self._measured, self.periods)
        return self._finish(estimates, variances, proxies, max_weights)

    def _release(self) -> RunningRelease:
        plan = self.plan
        periods = self.periods
        t = np.arange(1, periods + 1, dtype=np.int64)
        height = plan.levels - 1
        estimates = np.zeros(periods)
        for level in range(plan.levels):
            used = ((t >> (height - level)) & 1).astype(bool)
            # the node of this level in the cover of [0, t): index (t >> h) - 1
            index = (t >> (height - level)) - 1
            estimates += np.where(used, self._up[level][np.maximum(index, 0)], 0.0)
        up, up_proxy = self._per_level
        variances = prefix_variances(up, t, plan.levels)
        proxies = prefix_variances(up_proxy, t, plan.levels)
        return self._finish(estimates, variances, proxies)

    def _finish(self, estimates, variances, proxies, max_weights=None) -> RunningRelease:
        plan = self.plan
        periods = self.periods
        normal, sound = plan.noise.half_widths(variances, proxies, max_weights)
        monotone = None
        low_clip = plan.nondecreasing
        if plan.nondecreasing and periods:
            from scipy.optimize import isotonic_regression
            monotone = np.maximum(isotonic_regression(estimates, weights=1.0 / variances,
                                                      increasing=True).x, 0.0)
        ci = (np.maximum(estimates - normal, 0.0) if low_clip else estimates - normal,
              estimates + normal)
        ci_sound = (np.maximum(estimates - sound, 0.0) if low_clip else estimates - sound,
                    estimates + sound)
        return RunningRelease(plan, estimates, variances, ci, ci_sound, monotone)

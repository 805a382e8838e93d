"""Noise on the levels of a tree: contribution bounds, the split of the budget
across levels, exact integer noise, the accounting event and sound tails.

Definition
----------
A release adds independent integer noise to every node of a tree (a
hierarchy of group-by keys, or the dyadic intervals of a running total).
Level ``l`` gets one noise law: discrete Laplace of scale t_l (CKS Algorithm
2) or discrete Gaussian with parameter sigma_l^2 (CKS Algorithm 3), sampled
exactly by :mod:`privloss.samplers`.  What one privacy unit can change at a
level is a :class:`LevelBound`: the l1 norm of its change over the level's
nodes (``l1``) and the largest change of one node (``linf``), both integers.

Privacy guarantee
-----------------
* Laplace: the level's vector release is (l1_l / t_l)-DP (independent
  discrete Laplace coordinates: the pmf ratio at an integer shift s is at
  most exp(|s| / t), the geometric mechanism of Ghosh, Roughgarden,
  Sundararajan 2009; the shifts add up to at most l1_l); the levels compose
  basically: epsilon = sum_l l1_l / t_l, one ``PureDP`` event.
* Gaussian: the level's release is (D_l^2 / (2 sigma_l^2))-zCDP with D_l^2 the
  largest squared l2 norm of an integer change with l1 <= l1_l and every entry
  <= linf_l, i.e. q linf^2 + r^2 for l1 = q linf + r ([CKS] Theorem 14 in
  the arXiv:2004.00010 numbering, the multivariate discrete Gaussian: per
  coordinate the Renyi divergence at an integer shift s is at most
  alpha s^2 / (2 sigma^2), checked with mpmath in tests/releases, and Renyi
  divergences of independent coordinates add; the bound is the maximum of a convex
  function over the box-and-l1 polytope, reached at a vertex); zCDP adds up
  over levels ([Bun–Steinke 2016] Lemma 2.3): rho = sum_l D_l^2/(2 sigma_l^2),
  one ``ZCDP`` event.

Both totals are computed exactly in rationals from the rational noise
parameters, and the event's float is rounded up (more claimed loss).  Noise
parameters are rounded toward more noise; the planned total never exceeds the
budget asked for.

Intervals
---------
An estimate's error is sum_i a_i Z_i with |a_i| <= 1 (:mod:`._tree`).

* ``normal``: +- 1.96 sqrt(exact variance).  Exact for Gaussian noise on the
  reals, a normal approximation for the integer laws (coverage measured in
  tests/releases).
* ``guaranteed``: a sound two-sided bound with miscoverage <= 5%.
  Gaussian: the discrete Gaussian is sigma^2-sub-Gaussian ([CKS] Corollary 9
  in the arXiv numbering; checked with mpmath in tests/releases),
  so the error is (sum a_i^2 sigma_i^2)-sub-Gaussian and the Chernoff bound
  gives the half-width sqrt(2 ln(2/beta) sum a_i^2 sigma_i^2).  Laplace: the
  moment generating function of the discrete Laplace of scale t is at most
  the continuous one's, 1/(1 - t^2 u^2) (derived: with f(x) = 1 - e^{-x} the
  ratio is f(q)^2/(f(q-u) f(q+u)) vs q^2/((q-u)(q+u)), q = 1/t, and
  log(f(x)/x) = log of the Laplace transform of the uniform law on [0, 1] is
  convex), hence sub-gamma with v = 2 sum a_i^2 t_i^2 and c = max t_i
  ([Boucheron–Lugosi–Massart 2013] Section 2.4): half-width
  sqrt(2 v x) + c x with x = ln(2/beta).

Citation
--------
[CKS] Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020 (arXiv:2004.00010).  Ghosh, Roughgarden, Sundararajan,
"Universally Utility-Maximizing Privacy Mechanisms", STOC 2009.  Bun, Steinke,
"Concentrated Differential Privacy",
TCC 2016.  Boucheron, Lugosi, Massart, "Concentration Inequalities", 2013.

Runtime
-------
Sampling: O(1) expected per node.  The budget split: a small numerical
optimisation over the number of levels (SciPy), independent of the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.events import PureDP, ZCDP

__all__ = ["LevelBound", "NoisePlan", "plan_noise", "optimal_shares", "Z95", "BETA"]

#: miscoverage of the reported intervals and the matching normal quantile
BETA = 0.05
Z95 = 1.959963984540054
KINDS = ("laplace", "gaussian")
#: the budget split never gives a level less than e^-14 of the largest share
LOGIT_RANGE = 14.0


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class LevelBound:
    """What one privacy unit can change at one level: ``l1`` (sum of the
    absolute changes over the level's nodes) and ``linf`` (the largest change
    of one node), integers >= 1 with linf <= l1."""

    l1: int
    linf: int

    def __post_init__(self):
        object.__setattr__(self, "l1", _check_int("l1", self.l1, 1))
        object.__setattr__(self, "linf", _check_int("linf", self.linf, 1))
        if self.linf > self.l1:
            raise ValueError(f"linf must be <= l1 = {self.l1}, got {self.linf}")

    @property
    def l2_squared(self) -> int:
        """Largest squared l2 norm of an integer change within both bounds."""
        whole, rest = divmod(self.l1, self.linf)
        return whole * self.linf ** 2 + rest ** 2


def _float_at_least(value: Fraction) -> float:
    result = float(value)
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def _rational_at_least(value: float) -> Fraction:
    """A rational >= value with at most 2^40 as denominator (more noise)."""
    exact = Fraction(value)
    scaled = exact * (1 << 40)
    return Fraction(math.ceil(scaled), 1 << 40)


@dataclass(frozen=True)
class NoisePlan:
    """The noise of every level: ``kind``, ``parameters`` (scale t for
    Laplace, sigma^2 for Gaussian, exact rationals) and the ``bounds``."""

    kind: str
    parameters: tuple
    bounds: tuple

    @property
    def depth(self) -> int:
        return len(self.parameters)

    def loss(self) -> Fraction:
        """Exact epsilon (Laplace) or rho (Gaussian) of the whole tree."""
        if self.kind == "laplace":
            return sum((Fraction(b.l1) / t for b, t in zip(self.bounds, self.parameters)),
                       Fraction(0))
        return sum((Fraction(b.l2_squared) / (2 * s) for b, s in
                    zip(self.bounds, self.parameters)), Fraction(0))

    def event(self):
        """The one event the accountant composes (loss rounded up)."""
        value = _float_at_least(self.loss())
        return PureDP(value) if self.kind == "laplace" else ZCDP(value)

    def noise(self, level: int):
        from privloss.releases.algorithms._noise import DiscreteNoise
        return DiscreteNoise(self.kind, self.parameters[level], 1)

    def sample(self, level: int, size: int, source) -> np.ndarray:
        return self.noise(level).sample(size, source)

    def variances(self) -> tuple:
        """Exact variance of one draw at each level (mpmath, as floats)."""
        return tuple(self.noise(level).variance() for level in range(self.depth))

    def proxies(self) -> np.ndarray:
        """Tail proxies per level, shape (depth, K).  Column 0: sigma^2
        (sub-Gaussian proxy) or 2 t^2 (sub-gamma v).  Laplace also has one
        column per level k holding t_k^2 at level k only: summed with squared
        weights it bounds max |a_i| t_i over level k by its square root."""
        if self.kind == "gaussian":
            return np.array([[float(s)] for s in self.parameters])
        squares = np.array([float(t) ** 2 for t in self.parameters])
        return np.column_stack([2.0 * squares, np.diag(squares)])

    def half_widths(self, variances, proxies, max_weights=None):
        """``(normal, guaranteed)`` 95% half-widths for estimates with these
        exact variances and summed proxies (shape (n, K), see
        :meth:`proxies`; module docstring).  ``max_weights`` (n, depth): per
        level, a bound on the largest |weight| of that level's noise in each
        estimate; default 1 (true for the tree passes of :mod:`._tree`)."""
        variances = np.asarray(variances, dtype=np.float64)
        proxies = np.asarray(proxies, dtype=np.float64)
        if proxies.ndim == 1:
            proxies = proxies[:, None]
        x = math.log(2.0 / BETA)
        normal = Z95 * np.sqrt(variances)
        if self.kind == "gaussian":
            guaranteed = np.sqrt(2.0 * x * proxies[:, 0])
        else:
            scales = np.array([float(t) for t in self.parameters])
            bounds = scales if max_weights is None else np.asarray(max_weights) * scales
            # c >= max_i |a_i| t_i: per level, |a_i| t_k <= sqrt(sum a_i^2 t_k^2) and
            # |a_i| <= the weight bound
            c = np.minimum(np.sqrt(proxies[:, 1:]), bounds).max(axis=1)
            guaranteed = np.sqrt(2.0 * proxies[:, 0] * x) + c * x
        return normal, guaranteed

    def describe(self) -> dict:
        name = "scale" if self.kind == "laplace" else "sigma_squared"
        return {"noise": f"discrete-{self.kind}",
                name + "_by_level": [str(p) for p in self.parameters],
                "noise_variance_by_level": list(self.variances()),
                "l1_by_level": [b.l1 for b in self.bounds],
                "linf_by_level": [b.linf for b in self.bounds],
                ("epsilon" if self.kind == "laplace" else "rho"): _float_at_least(self.loss())}


def plan_noise(kind: str, bounds, budget, shares) -> NoisePlan:
    """Noise for every level spending at most ``budget`` (epsilon for
    Laplace, rho for Gaussian), level l getting ``shares[l]`` of it.

    Laplace: t_l = l1_l / (epsilon share_l); Gaussian: sigma_l^2 = D_l^2 /
    (2 rho share_l); both rounded up to rationals, then all scaled up if the
    exact total exceeds the budget (float shares need not add to 1 exactly).
    """
    if kind not in KINDS:
        raise ValueError(f"noise must be one of {', '.join(KINDS)}, got {kind!r}")
    bounds = tuple(bounds)
    shares = np.asarray(shares, dtype=np.float64)
    if shares.shape != (len(bounds),) or not np.all(shares > 0) or not np.all(np.isfinite(shares)):
        raise ValueError(f"shares must be {len(bounds)} positive numbers, got {shares!r}")
    if isinstance(budget, bool) or not isinstance(budget, (int, float, Fraction)) \
            or not math.isfinite(budget) or budget <= 0:
        name = "epsilon" if kind == "laplace" else "rho"
        raise ValueError(f"{name} must be a positive finite number, got {budget!r}")
    shares = shares / shares.sum()
    target = Fraction(budget)
    if kind == "laplace":
        parameters = [_rational_at_least(b.l1 / (float(budget) * s))
                      for b, s in zip(bounds, shares)]
    else:
        parameters = [_rational_at_least(b.l2_squared / (2.0 * float(budget) * s))
                      for b, s in zip(bounds, shares)]
    plan = NoisePlan(kind, tuple(parameters), bounds)
    for _ in range(64):
        spent = plan.loss()
        if spent <= target and Fraction(_float_at_least(spent)) <= target:
            return plan
        ratio = float(spent / target) * (1.0 + 1e-12)
        plan = NoisePlan(kind, tuple(_rational_at_least(float(p) * ratio) for p in plan.parameters),
                         bounds)
    raise ArithmeticError("could not fit the noise parameters into the budget")


def optimal_shares(kind: str, bounds, objective, weights=None) -> np.ndarray:
    """Budget shares minimising ``objective(variances)``, where the level
    variances are 2 t_l^2 (Laplace, proportional to (l1_l / share_l)^2) or
    sigma_l^2 (Gaussian, proportional to D_l^2 / share_l) for a unit budget.
    The optimum does not depend on the budget (the objective is homogeneous
    in the variances).  One level: share 1."""
    bounds = tuple(bounds)
    if len(bounds) == 1:
        return np.ones(1)
    if kind == "laplace":
        base = np.array([2.0 * b.l1 ** 2 for b in bounds], dtype=np.float64)
        power = 2.0
    else:
        base = np.array([b.l2_squared / 2.0 for b in bounds], dtype=np.float64)
        power = 1.0

    def cost(logits):
        shares = np.exp(logits - logits.max())
        shares /= shares.sum()
        return objective(base / shares ** power)

    from scipy.optimize import minimize

    # logits in [-LOGIT_RANGE, 0]: no level gets less than e^-14 of the largest
    # share (a level that the objective would starve keeps finite, if useless, noise)
    start = np.zeros(len(bounds))
    best = minimize(cost, start, method="L-BFGS-B",
                    bounds=[(-LOGIT_RANGE, 0.0)] * len(bounds))
    logits = best.x if best.fun <= cost(start) else start
    shares = np.exp(logits - logits.max())
    return shares / shares.sum()

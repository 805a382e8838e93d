"""``UnkLap``: unknown domain, l0-restricted sensitivity – discrete Laplace
counts of the visible top labels above a noisy, data-dependent threshold,
with the spec's provably safe calibration (topk.md §3.4).

Public: :func:`unknown_laplace`, :func:`calibrate_unknown_laplace`,
:func:`plan_unknown_laplace`, :func:`difference_tail`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.releases.algorithms._calibrate import spent
from privloss.releases.algorithms._common import (check_delta, check_histogram, check_integer,
                                                   check_optional_integer, check_positive,
                                                   float_at_least, label_rank, noisy_order,
                                                   rational_at_most, visible_top)
from privloss.releases.algorithms._noise import DiscreteNoise, intervals, laplace_noise
from privloss.releases.release import Release
from privloss.bounds._numeric import round_up
from privloss.events import ApproxDP, Interaction
from privloss.samplers.randomness import resolve_source

__all__ = ["unknown_laplace", "calibrate_unknown_laplace", "plan_unknown_laplace",
           "UnknownLaplacePlan", "difference_tail"]

NAME = "unknown-laplace"
#: relative margin between the computed tail and its target (float error is ~1e-15)
_MARGIN = 1e-9


def difference_tail(x: int, scale) -> float:
    """``P[Z_1 - Z_2 > x]``, ``Z_i`` i.i.d. discrete Laplace ``Lap_Z(scale)``, integer ``x >= 0``.

    Closed form [derived here, checked against a direct double sum]: with
    ``r = e^{-1/scale}``, ``u = 1 - r``, ``c = (1 - r)/(1 + r)``, the difference
    has pmf ``c^2 r^|d| (|d| + (1 + r^2)/(1 - r^2))`` and
    ``P[D > x] = c^2 r^{x+1} ((1 + x u)/u^2 + (1 + r^2)/((1 - r^2) u))``.
    Evaluated in log space and rounded up (public parameters only).
    """
    b = float(scale)
    u = -math.expm1(-1.0 / b)
    r = 1.0 - u
    c = math.tanh(0.5 / b)
    a = (1.0 + r * r) / (u * (2.0 - u))        # (1 + r^2) / (1 - r^2), 1 - r^2 = u (2 - u)
    log_tail = 2.0 * math.log(c) - (x + 1) / b + math.log((1.0 + x * u) / (u * u) + a / u)
    return min(1.0, round_up(math.exp(log_tail), relative=_MARGIN))


@dataclass(frozen=True)
class UnknownLaplacePlan:
    """Exact parameters: ``epsilon`` (rational), count and threshold noise
    ``Lap_Z((l0 + 1) linf / epsilon)``, integer threshold offset ``tau`` and the
    failure probability ``failure`` (``<= delta / (1 + e^epsilon)``)."""

    epsilon: Fraction
    delta: float
    l0_sensitivity: int
    d_bar: int | None
    noise: DiscreteNoise
    offset: int
    failure: float

    @property
    def events(self) -> tuple:
        epsilon = float_at_least(self.epsilon)
        delta = min(1.0, round_up((1.0 + math.exp(epsilon)) * self.failure))
        return (ApproxDP(epsilon, delta),)


#: largest epsilon accepted: e^epsilon stays a finite double (documented in the error)
LARGEST_EPSILON = 700.0


def plan_unknown_laplace(*, epsilon, delta, l0_sensitivity, linf_sensitivity=1,
                         d_bar=None) -> UnknownLaplacePlan:
    """Validate and fix the noise scale ``b = (l0 + 1) linf / epsilon`` and the
    smallest integer offset ``tau >= linf`` with
    ``min(l0, d_bar) P[Z_c - Z_t > tau - linf] <= delta / (1 + e^epsilon)``."""
    if check_positive("epsilon", epsilon) > LARGEST_EPSILON:
        # the guarantee's delta is (1 + e^epsilon) times a failure probability: e^epsilon
        # must be a finite double (it overflows past 709)
        raise ValueError(f"epsilon must be in (0, {LARGEST_EPSILON:g}] for the unknown-domain "
                         f"Laplace algorithm, got {epsilon!r}")
    delta = check_delta("delta", delta)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    d_bar = check_optional_integer("d_bar", d_bar)
    exact = rational_at_most(epsilon)
    scale = Fraction((l0 + 1) * linf) / exact
    m = l0 if d_bar is None else min(l0, d_bar)
    target = delta / (1.0 + math.exp(float_at_least(exact))) * (1.0 - _MARGIN)
    if target == 0.0:
        raise ValueError(f"delta must exceed 5e-324 * (1 + e^epsilon) for the unknown-domain "
                         f"Laplace algorithm (delta / (1 + e^epsilon) underflows to 0 below), "
                         f"got delta={delta!r} at epsilon={epsilon!r}")

    def meets(x: int) -> bool:
        return m * difference_tail(x, scale) <= target

    # the spec's sufficient choice, 2 b log(m / target), with logs apart: m / target
    # overflows when target is subnormal (a large epsilon)
    high = max(1, math.ceil(2 * float(scale) * (math.log(m) - math.log(target))))
    while not meets(high):
        high *= 2
    low = -1                    # invariant: low fails (or is -1), high meets
    while high - low > 1:
        middle = (low + high) // 2
        if meets(middle):
            high = middle
        else:
            low = middle
    return UnknownLaplacePlan(exact, delta, l0, d_bar, laplace_noise(scale, linf), linf + high,
                              m * difference_tail(high, scale))


def unknown_laplace(histogram, *, epsilon, delta, l0_sensitivity, linf_sensitivity=1, d_bar=None,
                    k=None, source=None) -> Release:
    """Noisy counts of the visible top labels that beat a noisy threshold.

    Definition
        Visible: the top ``d_bar`` labels with positive count (all the engine
        returned when ``d_bar`` is None) and the next count ``h_(d+1)`` (the
        engine's ``next_count``, 0 when nothing was cut).  With
        ``b = (l0 + 1) linf / epsilon`` (epsilon rounded down to a rational):
        ``v_j = h_(j) + Lap_Z(b)`` for every visible label,
        ``v_bottom = h_(d+1) + tau + Lap_Z(b)``, and the labels with
        ``v_j > v_bottom`` are released with ``v_j``, sorted by ``v_j`` (ties
        by sorted label).  ``tau`` (integer) is the smallest with
        ``m P[Z_c - Z_t > tau - linf] <= delta / (1 + e^epsilon)``,
        ``m = min(l0, d_bar)`` (exact tail: :func:`difference_tail`).  With ``k``
        only the ``k`` largest are kept (post-processing).
    Privacy guarantee
        ``(epsilon, delta)``-DP (user-level add/remove, <= ``l0`` labels per
        user, each count changed by <= ``linf``): the spec's derived
        calibration (topk.md §3.4, "provably safe") – labels visible in only
        one of two neighbouring runs are at most ``m``, each at most
        ``h_(d+1) + linf`` in its own run, hence released with total
        probability <= ``delta_1 = delta / (1 + e^epsilon)``; off that event
        both runs post-process a Laplace mechanism on (common visible counts,
        ``h_(d+1)``) of l1-sensitivity ``(l0 + 1) linf``, i.e. epsilon-DP;
        together ``(epsilon, (1 + e^epsilon) delta_1)``.  Event:
        ``(ApproxDP(epsilon, delta_used),)`` with ``delta_used <= delta``.
        ``d_bar`` must not depend on the data.  No floating-point step decides
        the output (integer noise and comparisons); ``tau`` is computed in
        floats from public parameters and rounded up.
    Accuracy
        Each count is ``h + Lap_Z(b)``: unbiased with the exact variance, and
        its 95% interval from the pmf – *unconditionally*; given that a
        label was released, counts near the threshold are biased upward
        (selection effect).
    Citation
        R. Rogers et al., "LinkedIn's Audience Engagements API", arXiv:2002.05839
        (algorithm); R. Cesar, R. Rogers, arXiv:2004.07223 §6.2 (description);
        calibration derived in the project spec (topk.md §3.4).
    Runtime
        O(d_bar log d_bar).
    """
    plan = plan_unknown_laplace(epsilon=epsilon, delta=delta, l0_sensitivity=l0_sensitivity,
                                linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    k = check_optional_integer("k", k)
    visible = visible_top(check_histogram(histogram), plan.d_bar)
    src = resolve_source(source)
    values = visible.counts + plan.noise.sample(len(visible.items), src)
    bottom = visible.next_count + plan.offset + int(plan.noise.sample(1, src)[0])
    above = np.flatnonzero(values > bottom)
    labels = tuple(visible.items[i] for i in above.tolist())
    kept = values[above]
    order = noisy_order(kept, label_rank(labels))[:k]
    released = kept[order]
    parameters = {"epsilon": float(plan.epsilon), "epsilon_exact": str(plan.epsilon),
                  "delta": plan.delta, "l0_sensitivity": plan.l0_sensitivity,
                  "linf_sensitivity": plan.noise.sensitivity, "d_bar": plan.d_bar, "k": k,
                  "threshold_offset": plan.offset, "threshold_scale": float(plan.noise.parameter),
                  "threshold_failure": plan.failure, **plan.noise.describe()}
    return Release(tuple(labels[i] for i in order.tolist()), released,
                   intervals(released, plan.noise.half_width()), plan.events, NAME, parameters)


def calibrate_unknown_laplace(*, epsilon, delta, l0_sensitivity, linf_sensitivity=1, d_bar=None,
                              interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`unknown_laplace` spending at most (epsilon, delta): the
    algorithm already splits the budget (counts and threshold share epsilon in
    proportion ``l0 : 1``; ``delta`` pays for the threshold failure with the
    factor ``1 + e^epsilon``), so this validates and passes them through,
    after checking with the accountant.  ``interaction`` is accepted for a
    uniform signature (one ApproxDP event composes the same way under all)."""
    plan = plan_unknown_laplace(epsilon=epsilon, delta=delta, l0_sensitivity=l0_sensitivity,
                                linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    check = spent(plan.events, float(delta), interaction)
    if check.value > float(epsilon):
        raise ArithmeticError("unknown-laplace parameters failed their re-check")
    return {"epsilon": float(plan.epsilon), "delta": plan.delta,
            "l0_sensitivity": plan.l0_sensitivity,
            "linf_sensitivity": plan.noise.sensitivity, "d_bar": plan.d_bar}

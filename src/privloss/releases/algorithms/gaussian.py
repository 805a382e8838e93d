"""Gaussian histogram and top-k algorithms (Cesar–Rogers §6).

Public:

* :func:`known_gaussian` – discrete Gaussian on every count of a known domain
  (the Gaussian variant of ``KnownLap``, topk.md §5);
* :func:`gauss_ordered` – CR Algorithm 1: Gumbel discovery, discrete Gaussian
  counts, order-respecting least squares (eq. (9));
* :func:`trunc_gauss` – CR Algorithm 2: truncated Gaussian counts of every
  positive label, fixed threshold ``C + linf`` (eq. (10), Lemma 6.4);
* their ``calibrate_*`` and ``plan_*`` functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms._common import (check_delta, check_fraction, check_histogram,
                                                   check_integer, check_optional_integer,
                                                   check_positive, domain_counts, float_at_least,
                                                   label_rank, noisy_order, rational_at_most,
                                                   visible_top)
from privloss.releases.algorithms._isotonic import ordered_least_squares
from privloss.releases.algorithms._noise import DiscreteNoise, gaussian_noise, intervals
from privloss.releases.algorithms._selection import known_selection
from privloss.releases.algorithms.truncated_gaussian import (rounded_half_width,
                                                              rounded_variance,
                                                              sample_truncated_gaussian,
                                                              solve_truncation)
from privloss.releases.algorithms.unknown_gumbel import (THRESHOLD_SHARE, UnknownDiscoveryPlan,
                                                          plan_unknown_discovery)
from privloss.releases.release import Release
from privloss.bounds._numeric import round_up
from privloss.events import ApproxZCDP, BoundedRange, Interaction
from privloss.samplers.randomness import resolve_source

__all__ = ["known_gaussian", "gauss_ordered", "trunc_gauss", "calibrate_known_gaussian",
           "calibrate_gauss_ordered", "calibrate_trunc_gauss", "plan_known_gaussian",
           "plan_gauss_ordered", "plan_trunc_gauss"]

KNOWN_NAME = "known-gaussian"
ORDERED_NAME = "gauss-ordered"
TRUNCATED_NAME = "trunc-gauss"


def _rho_guess(epsilon: float, delta: float) -> float:
    """rho of the simple zCDP conversion for (epsilon, delta): a starting point only."""
    log_inverse = -math.log(delta)
    return (math.sqrt(log_inverse + epsilon) - math.sqrt(log_inverse)) ** 2


# ---------------------------------------------------------------------------
# known-domain Gaussian
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class KnownGaussianPlan:
    rho: Fraction
    l0_sensitivity: int
    noise: DiscreteNoise

    @property
    def events(self) -> tuple:
        return (self.noise.event(self.l0_sensitivity),)


def plan_known_gaussian(*, rho, l0_sensitivity, linf_sensitivity=1) -> KnownGaussianPlan:
    """sigma^2 = l0 linf^2 / (2 rho), exact (rho first rounded down to a rational)."""
    check_positive("rho", rho)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    exact = rational_at_most(rho)
    return KnownGaussianPlan(exact, l0, gaussian_noise(Fraction(l0 * linf * linf) / (2 * exact),
                                                       linf))


def known_gaussian(histogram, *, rho, l0_sensitivity, linf_sensitivity=1, k=None, domain=None,
                   source=None) -> Release:
    """Discrete Gaussian noisy counts of every label of a known domain.

    Definition
        ``c_i = h_i + N_Z(0, sigma^2)`` for every domain label (zeros included),
        ``sigma^2 = l0 linf^2 / (2 rho)``; sorted by noisy count (ties by domain
        order, or sorted label); ``k`` keeps the top ``k`` (post-processing).
        ``domain`` as in :func:`known_laplace`.
    Privacy guarantee
        ``rho``-zCDP ([CR] Lemma 6.3 / topk.md §5: at most ``l0`` counts change,
        each by at most ``linf``; [CKS] Theorem 4 for the discrete Gaussian).
        Events: ``(DiscreteGaussian(sigma, linf, count=l0),)`` – the accountant
        also uses its exact privacy-loss distribution.  Exact sampling (CKS
        Algorithm 3), no floating-point step.
    Accuracy
        Unbiased; variance slightly below ``sigma^2`` (exact value in
        ``parameters["noise_variance"]``); 95% interval from the exact pmf.
    Citation
        R. Cesar, R. Rogers, arXiv:2004.07223 §6; C. Canonne, G. Kamath,
        T. Steinke, NeurIPS 2020.
    Runtime
        O(|domain| log |domain|).
    """
    plan = plan_known_gaussian(rho=rho, l0_sensitivity=l0_sensitivity,
                               linf_sensitivity=linf_sensitivity)
    k = check_optional_integer("k", k)
    labels, counts = domain_counts(check_histogram(histogram), domain)
    if k is not None and k > len(labels):
        raise ValueError(f"k must be at most the number of domain items ({len(labels)}), got {k}")
    noisy = counts + plan.noise.sample(len(labels), resolve_source(source))
    rank = np.arange(len(labels)) if domain is not None else label_rank(labels)
    order = noisy_order(noisy, rank)[:k]
    released = noisy[order]
    parameters = {"rho": float(plan.rho), "rho_exact": str(plan.rho),
                  "l0_sensitivity": plan.l0_sensitivity,
                  "linf_sensitivity": plan.noise.sensitivity, "k": k,
                  "domain_size": len(labels), **plan.noise.describe()}
    return Release(tuple(labels[i] for i in order.tolist()), released,
                   intervals(released, plan.noise.half_width()), plan.events, KNOWN_NAME,
                   parameters)


def calibrate_known_gaussian(*, epsilon, delta, l0_sensitivity, linf_sensitivity=1,
                             interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """The largest ``rho`` whose events the accountant composes to (epsilon, delta)
    (exact discrete-Gaussian PLD when it applies).  Returns the keyword
    arguments of :func:`known_gaussian`."""
    target = check_positive("epsilon", epsilon)
    target_delta = check_delta("delta", delta)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)

    def events_of(x: float) -> tuple:
        return plan_known_gaussian(rho=x, l0_sensitivity=l0, linf_sensitivity=linf).events

    chosen, _ = _calibrate.largest_meeting(events_of, target, target_delta,
                                           guess=_rho_guess(target, target_delta),
                                           interaction=interaction,
                                           cache_key={"algorithm": "known-gaussian",
                                                      "l0_sensitivity": l0,
                                                      "linf_sensitivity": linf})
    return {"rho": chosen, "l0_sensitivity": l0, "linf_sensitivity": linf}


# ---------------------------------------------------------------------------
# Algorithm 1
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GaussOrderedPlan:
    k: int
    epsilon: Fraction
    rho: Fraction
    noise: DiscreteNoise
    discovery: UnknownDiscoveryPlan | None      # None: known domain

    @property
    def events(self) -> tuple:
        if self.discovery is None:
            selection = (BoundedRange(float_at_least(self.epsilon), count=self.k),)
            return selection + (self.noise.event(self.k),)
        return self.discovery.events + (self.noise.event(self.k), self.discovery.mixture_event)


def plan_gauss_ordered(*, k, epsilon, rho, known_domain=True, delta=None, l0_sensitivity=None,
                       linf_sensitivity=1, d_bar=None) -> GaussOrderedPlan:
    """Discovery as ``known_gumbel`` (known domain) or ``unknown_gumbel``; counts
    ``N_Z(0, sigma^2)`` with ``sigma^2 = k linf^2 / (2 rho)``."""
    k = check_integer("k", k)
    check_positive("epsilon", epsilon)
    check_positive("rho", rho)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    if known_domain:
        if delta is not None:
            raise ValueError("delta is only used with known_domain=False (the threshold of the "
                             f"unknown-domain discovery), got delta={delta!r}")
        discovery = None
        exact_epsilon = rational_at_most(epsilon)
    else:
        if delta is None:
            raise ValueError("delta is required with known_domain=False (the threshold's failure "
                             "probability)")
        discovery = plan_unknown_discovery(k=k, epsilon=epsilon, delta=delta,
                                           l0_sensitivity=l0_sensitivity,
                                           linf_sensitivity=linf, d_bar=d_bar)
        exact_epsilon = discovery.epsilon
    exact_rho = rational_at_most(rho)
    noise = gaussian_noise(Fraction(k * linf * linf) / (2 * exact_rho), linf)
    return GaussOrderedPlan(k, exact_epsilon, exact_rho, noise, discovery)


def gauss_ordered(histogram, *, k, epsilon, rho, known_domain=True, delta=None,
                  l0_sensitivity=None, linf_sensitivity=1, d_bar=None, domain=None,
                  nonnegative=True, source=None) -> Release:
    """Top-k by Gumbel discovery with Gaussian counts fitted to the discovered order
    (Cesar–Rogers Algorithm 1; ``GumbGaussOrdered``).

    Definition
        1. Discovery: ``known_domain=True`` – the exact Gumbel peeling of
           :func:`known_gumbel` over the public domain (``k`` labels);
           ``known_domain=False`` – the thresholded peeling of
           :func:`unknown_gumbel` (``l <= k`` labels; needs ``delta`` and
           ``d_bar`` or ``l0_sensitivity``).  ``epsilon`` per step.
        2. ``y_j = h_{i_j} + N_Z(0, sigma^2)``, ``sigma^2 = k linf^2 / (2 rho)``
           (exact discrete Gaussian).
        3. Eq. (9): ``x = argmin sum (x_j - y_j)^2`` s.t. ``x_1 >= ... >= x_l``
           (and ``x_l >= 0`` if ``nonnegative``) – PAVA, ``scipy.optimize.isotonic_regression``.
    Privacy guarantee
        Discovery: ``k`` adaptive epsilon-BR steps (unknown domain: plus the
        mixture event ``ApproxDP(0, delta)``, see :func:`unknown_gumbel`);
        counts: ``rho``-zCDP (``k`` counts, each shifted by <= ``linf``, at
        ``linf^2/(2 sigma^2)`` each); step 3 is post-processing.  Events:
        ``(BoundedRange(epsilon, count=k), DiscreteGaussian(sigma, linf, count=k))``
        [+ ``ApproxDP(0, delta)``].  The fit runs in floats on the released noisy
        counts (post-processing, no privacy relevance).
    Accuracy
        ``y`` is unbiased with the exact discrete Gaussian variance; the fit
        trades bias for variance (it pools the noisy tail).  ``ci95`` is the
        hull of ``y_j +- w`` (``w`` from the exact pmf, coverage >= 95% for
        each count whatever the order) and the fitted value, so it does not
        assume that the true counts respect the discovered order.
    Citation
        R. Cesar, R. Rogers, arXiv:2004.07223 §6.2, Algorithm 1 and eq. (9).
    Runtime
        Discovery as :func:`known_gumbel` / :func:`unknown_gumbel`; fit O(k).
    """
    plan = plan_gauss_ordered(k=k, epsilon=epsilon, rho=rho, known_domain=known_domain,
                              delta=delta, l0_sensitivity=l0_sensitivity,
                              linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    view = check_histogram(histogram)
    src = resolve_source(source)
    linf = plan.noise.sensitivity
    if plan.discovery is None:
        labels, counts = domain_counts(view, domain)
        if plan.k > len(labels):
            raise ValueError(f"k must be at most the number of domain items ({len(labels)}), "
                             f"got {plan.k}")
        chosen = known_selection(counts, plan.k, plan.epsilon, linf, src)
        extra = {"domain_size": len(labels)}
    else:
        if domain is not None:
            raise ValueError("domain is only used with known_domain=True")
        visible = visible_top(view, plan.discovery.d_bar)
        labels, counts = visible.items, visible.counts
        chosen = plan.discovery.select(visible, src)
        extra = plan.discovery.describe()
    measured = counts[chosen] + plan.noise.sample(len(chosen), src)
    fitted = ordered_least_squares(measured, nonnegative=nonnegative)
    half_width = plan.noise.half_width()
    ci = tuple((min(y - half_width, x), max(y + half_width, x))
               for y, x in zip(measured.tolist(), fitted.tolist()))
    parameters = {**extra, "k": plan.k, "epsilon": float(plan.epsilon),
                  "epsilon_exact": str(plan.epsilon), "rho": float(plan.rho),
                  "rho_exact": str(plan.rho), "linf_sensitivity": linf,
                  "known_domain": plan.discovery is None, "nonnegative": bool(nonnegative),
                  **plan.noise.describe()}
    return Release(tuple(labels[i] for i in chosen), fitted, ci, plan.events, ORDERED_NAME,
                   parameters)


def calibrate_gauss_ordered(*, k, epsilon, delta, known_domain=True, l0_sensitivity=None,
                            linf_sensitivity=1, d_bar=None, selection_share=0.5,
                            threshold_share=THRESHOLD_SHARE,
                            interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`gauss_ordered` spending at most (epsilon, delta).

    One knob ``R`` (a total zCDP-like budget) is split as ``k epsilon_sel^2 / 8 =
    selection_share R`` (the BR steps' zCDP cost) and ``rho = (1 - selection_share) R``;
    the largest ``R`` whose actual events the accountant composes to the
    target is chosen.  Unknown domain: ``threshold_share * delta`` is the
    threshold's mixture weight.  Returns the keyword arguments of
    :func:`gauss_ordered` (without histogram, domain, nonnegative, source).
    """
    target = check_positive("epsilon", epsilon)
    total_delta = check_delta("delta", delta)
    share = check_fraction("selection_share", selection_share)
    k = check_integer("k", k)
    base = dict(k=k, known_domain=bool(known_domain), l0_sensitivity=l0_sensitivity,
                linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    if not known_domain:
        base["delta"] = total_delta * check_fraction("threshold_share", threshold_share)

    def knobs(total: float) -> dict:
        return {"epsilon": math.sqrt(8.0 * share * total / k), "rho": (1.0 - share) * total}

    plan_gauss_ordered(**base, **knobs(1.0))       # validate before the search

    def events_of(total: float) -> tuple:
        return plan_gauss_ordered(**base, **knobs(total)).events

    chosen, _ = _calibrate.largest_meeting(events_of, target, total_delta,
                                           guess=_rho_guess(target, total_delta),
                                           interaction=interaction,
                                           cache_key={"algorithm": "gauss-ordered",
                                                      "selection_share": share, **base})
    return {**base, **knobs(chosen)}


# ---------------------------------------------------------------------------
# Algorithm 2
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TruncGaussPlan:
    """``sigma`` (float; the sampler's scale), truncation ``C`` from eq. (10),
    threshold ``T = C + linf`` (float sum, the same floats the sampler uses)."""

    rho: float
    delta: float
    l0_sensitivity: int
    linf_sensitivity: int
    sigma: float
    bound: float
    threshold: float

    @property
    def events(self) -> tuple:
        return (ApproxZCDP(self.rho, self.delta),)


def plan_trunc_gauss(*, rho, delta, l0_sensitivity, linf_sensitivity=1) -> TruncGaussPlan:
    """sigma = linf sqrt(l0 / (2 rho)) (rounded up), C by eq. (10) with delta/l0, T = C + linf."""
    rho = check_positive("rho", rho)
    delta = check_delta("delta", delta)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    sigma = math.nextafter(linf * math.sqrt(l0 / (2.0 * rho)), math.inf)
    claimed = round_up(l0 * linf * linf / (2.0 * sigma * sigma))   # rho of the float sigma
    bound = solve_truncation(sigma, l0, linf, delta)
    return TruncGaussPlan(claimed, delta, l0, linf, sigma, bound, bound + linf)


def trunc_gauss(histogram, *, rho, delta, l0_sensitivity, linf_sensitivity=1, k=None,
                source=None) -> Release:
    """Truncated-Gaussian counts of every positive label above a fixed threshold
    (Cesar–Rogers Algorithm 2; ``UnkTruncGauss``).

    Definition
        Needs *every* label with a positive count: refuses (``ValueError``) a
        histogram the engine truncated (``next_count > 0`` or
        ``total_items > returned positive items``).  ``sigma = linf sqrt(l0/(2 rho))``;
        ``C`` solves eq. (10) ``p(C) = delta / l0``; for every positive label
        ``v_i = h_i + Z_i``, ``Z_i ~ TN(0, sigma^2, C)``; the labels with
        ``v_i > T = C + linf`` are released with ``round(v_i)`` (nearest
        integer), sorted by released value (ties by sorted label).  ``k`` keeps
        the top ``k`` (post-processing).
    Privacy guarantee
        ``delta``-approximately ``rho``-zCDP, ``rho = l0 linf^2 / (2 sigma^2)``
        ([CR] Lemma 6.4, constants as reconstructed in topk.md §6.4): each
        changed count fails to stay in the shared support with probability
        ``p(C) = delta/l0``, conditioned on the shared support truncation only
        lowers the Rényi divergence, and a label with true count <= ``linf``
        can never pass ``T`` (so labels absent from one neighbour are never
        released from the other).  Event: ``(ApproxZCDP(rho, delta),)``; e.g.
        ``(rho + 2 sqrt(rho ln(1/delta')), delta + delta')``-DP.
        **Float caveat**: the noise is a float sampler (see
        :mod:`.truncated_gaussian`); the support edge and the threshold rule
        are enforced exactly in floats (an item with true count <= ``linf`` is
        never released), but the Gaussian shape is only float-accurate, so the
        guarantee holds for the idealised real-valued mechanism.  Outputs are
        rounded to integers to avoid leaking float low bits.
    Accuracy
        For a label far above ``T`` the released count is unbiased
        (``round`` of symmetric noise around an integer) with variance
        ``parameters["noise_variance"]``; ``ci95`` is ``+- w`` with the exact
        truncated-Gaussian quantile.  Near ``T`` released counts are biased
        upward (selection).
    Citation
        R. Cesar, R. Rogers, arXiv:2004.07223 §6.2, Algorithm 2, eq. (10), Lemma 6.4;
        truncated-noise template: Q. Geng et al., arXiv:1810.00877.
    Runtime
        O(n log n) for n positive labels; eq. (10) by a ~100-step bisection.
    """
    plan = plan_trunc_gauss(rho=rho, delta=delta, l0_sensitivity=l0_sensitivity,
                            linf_sensitivity=linf_sensitivity)
    k = check_optional_integer("k", k)
    view = check_histogram(histogram)
    if view.truncated:
        # no counts in the message: it may be shown to an analyst
        raise ValueError("trunc-gauss needs every item with a positive count, but the histogram "
                         "was truncated; build it without top= (a label ranked just below the "
                         "cut in one dataset could be released with probability near 1 in its "
                         "neighbour)")
    positive = view.positive
    counts = view.counts[:positive]
    values = counts + sample_truncated_gaussian(plan.sigma, plan.bound, positive,
                                                resolve_source(source))
    above = np.flatnonzero(values > plan.threshold)
    labels = tuple(view.items[i] for i in above.tolist())
    rounded = np.rint(values[above]).astype(np.int64)
    order = noisy_order(rounded, label_rank(labels))[:k]
    released = rounded[order]
    half_width = rounded_half_width(plan.sigma, plan.bound)
    parameters = {"rho": plan.rho, "delta": plan.delta, "l0_sensitivity": plan.l0_sensitivity,
                  "linf_sensitivity": plan.linf_sensitivity, "k": k, "sigma": plan.sigma,
                  "truncation": plan.bound, "threshold": plan.threshold,
                  "noise": "truncated-gaussian (float, rounded to integers)",
                  "noise_variance": rounded_variance(plan.sigma, plan.bound),
                  "ci95_half_width": half_width}
    return Release(tuple(labels[i] for i in order.tolist()), released,
                   intervals(released, half_width), plan.events, TRUNCATED_NAME, parameters)


def calibrate_trunc_gauss(*, epsilon, delta, l0_sensitivity, linf_sensitivity=1,
                          truncation_share=0.5,
                          interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`trunc_gauss` spending at most (epsilon, delta).

    Split (topk.md §6.4): ``delta = delta_trunc + delta'`` with
    ``delta_trunc = truncation_share * delta``; ``rho`` the largest whose event
    ``ApproxZCDP(rho, delta_trunc)`` the accountant composes to the target.
    Returns the keyword arguments of :func:`trunc_gauss`.
    """
    target = check_positive("epsilon", epsilon)
    total_delta = check_delta("delta", delta)
    truncation = total_delta * check_fraction("truncation_share", truncation_share)
    base = dict(delta=truncation, l0_sensitivity=l0_sensitivity,
                linf_sensitivity=linf_sensitivity)
    plan_trunc_gauss(rho=1.0, **base)       # validate before the search

    def events_of(x: float) -> tuple:
        return plan_trunc_gauss(rho=x, **base).events

    chosen, _ = _calibrate.largest_meeting(events_of, target, total_delta,
                                           guess=_rho_guess(target, total_delta - truncation),
                                           interaction=interaction,
                                           cache_key={"algorithm": "trunc-gauss", **base})
    return {**base, "rho": chosen}

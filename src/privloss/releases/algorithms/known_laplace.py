"""``KnownLap``: discrete Laplace noise on every count of a known domain.

Public: :func:`known_laplace`, :func:`calibrate_known_laplace`, :func:`plan_known_laplace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms._common import (check_delta, check_histogram, check_integer,
                                                   check_optional_integer, check_positive,
                                                   domain_counts, label_rank, noisy_order,
                                                   rational_at_most)
from privloss.releases.algorithms._noise import DiscreteNoise, intervals, laplace_noise
from privloss.releases.release import Release
from privloss.events import Interaction
from privloss.samplers.randomness import resolve_source

__all__ = ["known_laplace", "calibrate_known_laplace", "plan_known_laplace", "KnownLaplacePlan"]

NAME = "known-laplace"


@dataclass(frozen=True)
class KnownLaplacePlan:
    """Exact parameters of one release: ``epsilon`` (rational, at most the one
    asked for) and the noise Lap_Z(l0 * linf / epsilon) of every count."""

    epsilon: Fraction
    l0_sensitivity: int
    noise: DiscreteNoise

    @property
    def events(self) -> tuple:
        # Lemma 6.2: only the <= Delta_0 changed counts carry privacy loss, each
        # a (Delta_inf/scale)-DP discrete Laplace release.
        return (self.noise.event(self.l0_sensitivity),)


def plan_known_laplace(*, epsilon, l0_sensitivity, linf_sensitivity=1) -> KnownLaplacePlan:
    """Validate the parameters and fix the exact noise scale ``Delta_0 Delta_inf / epsilon``."""
    check_positive("epsilon", epsilon)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    exact_epsilon = rational_at_most(epsilon)
    return KnownLaplacePlan(exact_epsilon, l0, laplace_noise(Fraction(l0 * linf) / exact_epsilon,
                                                             linf))


def known_laplace(histogram, *, epsilon, l0_sensitivity, linf_sensitivity=1, k=None, domain=None,
                  source=None) -> Release:
    """Noisy counts of every label of a known domain (LinkedIn's ``KnownLap``).

    Definition
        For every label ``i`` of the public domain (zero counts included):
        ``c_i = h_i + Z_i`` with ``Z_i`` i.i.d. discrete Laplace ``Lap_Z(b)``,
        ``b = l0_sensitivity * linf_sensitivity / epsilon`` (``epsilon`` is first
        rounded *down* to a rational with a small denominator; the value used
        is ``parameters["epsilon"]``).  The labels are returned sorted by noisy
        count (ties by domain order, or by sorted label when ``domain`` is
        None); with ``k`` only the first ``k`` (top-k is post-processing).
        ``domain``: the public label list; None means ``histogram.items`` is the
        domain (the engine was called with ``domain=``).  A truncated histogram
        is refused.
    Privacy guarantee
        ``epsilon``-DP under add/remove of one user who changes at most
        ``l0_sensitivity`` counts by at most ``linf_sensitivity`` each (l1
        calibration).  Events: ``(DiscreteLaplace(b, linf, count=l0),)``: the
        accountant then also applies [CR] Lemma 6.2 (optimal composition over
        the changed counts, or their exact PLD) for delta > 0.  No floating
        point step: the noise is exact (CKS Algorithm 2) and the order is a
        sort of integers.
    Accuracy
        Each count is unbiased with variance ``2 r / (1 - r)^2``, ``r = e^{-1/b}``
        (``parameters["noise_variance"]``); its interval ``c_i +- w`` with the
        smallest integer ``w`` such that ``P[|Z| > w] <= 5%`` (exact pmf).
    Citation
        C. Dwork, F. McSherry, K. Nissim, A. Smith, TCC 2006; R. Rogers et al.,
        "LinkedIn's Audience Engagements API", 2020; R. Cesar, R. Rogers,
        arXiv:2004.07223, Lemma 6.2; C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020.
    Runtime
        O(|domain| log |domain|); one exact discrete Laplace draw per label.
    """
    plan = plan_known_laplace(epsilon=epsilon, l0_sensitivity=l0_sensitivity,
                              linf_sensitivity=linf_sensitivity)
    k = check_optional_integer("k", k)
    view = check_histogram(histogram)
    labels, counts = domain_counts(view, domain)
    if k is not None and k > len(labels):
        raise ValueError(f"k must be at most the number of domain items ({len(labels)}), got {k}")
    noisy = counts + plan.noise.sample(len(labels), resolve_source(source))
    rank = np.arange(len(labels)) if domain is not None else label_rank(labels)
    order = noisy_order(noisy, rank)[:k]
    released = noisy[order]
    half_width = plan.noise.half_width()
    parameters = {"epsilon": float(plan.epsilon), "epsilon_exact": str(plan.epsilon),
                  "l0_sensitivity": plan.l0_sensitivity,
                  "linf_sensitivity": plan.noise.sensitivity, "k": k,
                  "domain_size": len(labels), **plan.noise.describe()}
    return Release(tuple(labels[i] for i in order.tolist()), released,
                   intervals(released, half_width), plan.events, NAME, parameters)


def calibrate_known_laplace(*, epsilon, delta=0.0, l0_sensitivity, linf_sensitivity=1,
                            interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`known_laplace` spending at most (epsilon, delta).

    ``delta = 0``: the l1 calibration, ``epsilon`` itself (then rounded down).
    ``delta > 0``: the largest ``epsilon`` whose events (l0 discrete-Laplace
    counts) the accountant composes to (epsilon, delta) – [CR] Lemma 6.2,
    tighter than l1 when ``l0_sensitivity > 1``.  Returns
    ``{"epsilon", "l0_sensitivity", "linf_sensitivity"}``.
    """
    target = check_positive("epsilon", epsilon)
    target_delta = 0.0 if delta == 0 else check_delta("delta", delta)
    l0 = check_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    if target_delta == 0:
        chosen = float(rational_at_most(target))
    else:
        def events_of(x: float) -> tuple:
            return plan_known_laplace(epsilon=x, l0_sensitivity=l0, linf_sensitivity=linf).events
        chosen, _ = _calibrate.largest_meeting(events_of, target, target_delta, guess=target,
                                               interaction=interaction,
                                               cache_key={"algorithm": NAME,
                                                          "l0_sensitivity": l0,
                                                          "linf_sensitivity": linf})
        chosen = max(chosen, float(rational_at_most(target)))  # never worse than l1
    return {"epsilon": chosen, "l0_sensitivity": l0, "linf_sensitivity": linf}

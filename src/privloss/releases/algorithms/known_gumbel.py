"""``KnownGumb``: Gumbel (exponential-mechanism) top-k over a known domain,
then discrete Laplace counts of the k selected labels.

Public: :func:`known_gumbel`, :func:`calibrate_known_gumbel`, :func:`plan_known_gumbel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms._common import (check_delta, check_histogram, check_integer,
                                                   check_positive, domain_counts, float_at_least,
                                                   rational_at_most)
from privloss.releases.algorithms._noise import DiscreteNoise, intervals, laplace_noise
from privloss.releases.algorithms._selection import known_selection
from privloss.releases.release import Release
from privloss.events import BoundedRange, Interaction
from privloss.samplers.randomness import resolve_source

__all__ = ["known_gumbel", "calibrate_known_gumbel", "plan_known_gumbel", "KnownGumbelPlan"]

NAME = "known-gumbel"


@dataclass(frozen=True)
class KnownGumbelPlan:
    """Exact parameters: per-selection ``epsilon`` and the count noise
    Lap_Z(linf / count_epsilon)."""

    k: int
    epsilon: Fraction
    count_epsilon: Fraction
    noise: DiscreteNoise

    @property
    def events(self) -> tuple:
        return (BoundedRange(float_at_least(self.epsilon), count=self.k),
                self.noise.event(self.k))


def plan_known_gumbel(*, k, epsilon, count_epsilon=None, linf_sensitivity=1) -> KnownGumbelPlan:
    """Validate; ``count_epsilon=None`` means the same epsilon as each selection step."""
    k = check_integer("k", k)
    check_positive("epsilon", epsilon)
    if count_epsilon is not None:
        check_positive("count_epsilon", count_epsilon)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    selection = rational_at_most(epsilon)
    counting = selection if count_epsilon is None else rational_at_most(count_epsilon)
    return KnownGumbelPlan(k, selection, counting, laplace_noise(Fraction(linf) / counting, linf))


def known_gumbel(histogram, *, k, epsilon, count_epsilon=None, linf_sensitivity=1, domain=None,
                 source=None) -> Release:
    """Top-k labels of a known domain by exact Gumbel peeling, with noisy counts.

    Definition
        1. Discovery: the labels of the ``k`` largest ``h_i + Gumbel(linf/epsilon)``
           over the whole public domain, in noisy order – sampled exactly as
           ``k`` rounds of the peeling exponential mechanism (round ``j`` picks
           ``i`` among the labels not yet chosen with probability
           ``∝ exp(epsilon h_i / linf)``; same law by Durfee–Rogers).
        2. Counts: ``c_j = h_{i_j} + Lap_Z(linf / count_epsilon)`` (exact).
        ``epsilon``/``count_epsilon`` are rounded down to small-denominator
        rationals (``parameters`` has the values used).  ``domain``: as in
        :func:`known_laplace`.  ``k`` larger than the domain is an error.
    Privacy guarantee
        Unrestricted sensitivity (a user may touch every label, each count by
        at most ``linf_sensitivity``): ``k`` adaptive ``epsilon``-BR steps, then
        ``k`` discrete Laplace counts each ``count_epsilon``-DP.  Events:
        ``(BoundedRange(epsilon, count=k), DiscreteLaplace(linf/count_epsilon, linf, count=k))``;
        e.g. pure ``k (epsilon + count_epsilon)``-DP.  No floating-point step
        (exact rejection sampling; timing depends on the counts).
    Accuracy
        Counts unbiased for the selected labels' true counts, variance and 95%
        interval from the exact discrete Laplace pmf (``parameters``).
    Citation
        F. McSherry, K. Talwar, FOCS 2007; D. Durfee, R. Rogers, NeurIPS 2019;
        R. Rogers et al., arXiv:2002.05839; C. Canonne, G. Kamath, T. Steinke,
        NeurIPS 2020.
    Runtime
        ``O(k |domain|)`` array work plus the rejection proposals of each round.
    """
    plan = plan_known_gumbel(k=k, epsilon=epsilon, count_epsilon=count_epsilon,
                             linf_sensitivity=linf_sensitivity)
    view = check_histogram(histogram)
    labels, counts = domain_counts(view, domain)
    if plan.k > len(labels):
        raise ValueError(f"k must be at most the number of domain items ({len(labels)}), "
                         f"got {plan.k}")
    src = resolve_source(source)
    chosen = known_selection(counts, plan.k, plan.epsilon, plan.noise.sensitivity, src)
    noisy = counts[chosen] + plan.noise.sample(plan.k, src)
    parameters = {"k": plan.k, "epsilon": float(plan.epsilon), "epsilon_exact": str(plan.epsilon),
                  "count_epsilon": float(plan.count_epsilon),
                  "count_epsilon_exact": str(plan.count_epsilon),
                  "linf_sensitivity": plan.noise.sensitivity, "domain_size": len(labels),
                  **plan.noise.describe()}
    return Release(tuple(labels[i] for i in chosen), noisy,
                   intervals(noisy, plan.noise.half_width()), plan.events, NAME, parameters)


def calibrate_known_gumbel(*, k, epsilon, delta=0.0, linf_sensitivity=1,
                           interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`known_gumbel` spending at most (epsilon, delta).

    Split: the same epsilon for every selection step and every count (the
    largest one whose ``k`` BR + ``k`` discrete-Laplace events the accountant
    composes to the target; with ``delta = 0`` this is ``epsilon / (2k)``).
    Returns ``{"k", "epsilon", "count_epsilon", "linf_sensitivity"}``.
    """
    k = check_integer("k", k)
    target = check_positive("epsilon", epsilon)
    target_delta = 0.0 if delta == 0 else check_delta("delta", delta)
    linf = check_integer("linf_sensitivity", linf_sensitivity)

    def events_of(x: float) -> tuple:
        return plan_known_gumbel(k=k, epsilon=x, linf_sensitivity=linf).events

    chosen, _ = _calibrate.largest_meeting(events_of, target, target_delta, guess=target / (2 * k),
                                           interaction=interaction,
                                           cache_key={"algorithm": NAME, "k": k,
                                                      "linf_sensitivity": linf})
    return {"k": k, "epsilon": chosen, "count_epsilon": chosen, "linf_sensitivity": linf}

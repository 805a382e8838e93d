"""``UnkGumb``: unknown-domain top-k by exact Gumbel peeling against a threshold
candidate (Durfee–Rogers ``LimitDom``), then discrete Laplace counts.

Public: :func:`unknown_gumbel`, :func:`calibrate_unknown_gumbel`,
:func:`plan_unknown_discovery` (shared with :func:`gauss_ordered`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from privloss.releases.algorithms import _calibrate
from privloss.releases.algorithms._common import (check_delta, check_fraction, check_histogram,
                                                   check_integer, check_optional_integer,
                                                   check_positive, float_at_least,
                                                   rational_at_most, visible_top)
from privloss.releases.algorithms._noise import DiscreteNoise, intervals, laplace_noise
from privloss.releases.algorithms._selection import (threshold_failure, threshold_offset,
                                                      unknown_selection)
from privloss.releases.release import Release
from privloss.events import ApproxDP, BoundedRange, Interaction
from privloss.samplers.randomness import resolve_source

__all__ = ["unknown_gumbel", "calibrate_unknown_gumbel", "plan_unknown_discovery",
           "UnknownDiscoveryPlan", "plan_unknown_gumbel", "UnknownGumbelPlan"]

NAME = "unknown-gumbel"
#: default share of the total delta given to the threshold (the rest is composition slack)
THRESHOLD_SHARE = 0.5


@dataclass(frozen=True)
class UnknownDiscoveryPlan:
    """Exact parameters of the thresholded discovery: ``k`` steps of
    ``epsilon``-BR over the visible labels and ``bottom``; mixture weight
    ``delta``; per-release failure ``delta_t``; offset of ``bottom`` above
    ``h_(d+1)``; ``m = min(l0, d_bar)`` labels can change visibility."""

    k: int
    epsilon: Fraction
    delta: float
    l0_sensitivity: int | None
    d_bar: int | None
    linf_sensitivity: int
    m: int
    delta_t: float
    offset: Fraction

    @property
    def events(self) -> tuple:
        return (BoundedRange(float_at_least(self.epsilon), count=self.k),)

    @property
    def mixture_event(self) -> ApproxDP:
        return ApproxDP(0.0, self.delta)

    def select(self, visible, source) -> list[int]:
        return unknown_selection(visible, self.k, self.epsilon, self.linf_sensitivity,
                                 self.offset, source)

    def describe(self) -> dict:
        return {"k": self.k, "epsilon": float(self.epsilon), "epsilon_exact": str(self.epsilon),
                "delta": self.delta, "threshold_failure": self.delta_t,
                "threshold_offset": float(self.offset), "l0_sensitivity": self.l0_sensitivity,
                "d_bar": self.d_bar, "linf_sensitivity": self.linf_sensitivity}


def plan_unknown_discovery(*, k, epsilon, delta, l0_sensitivity=None, linf_sensitivity=1,
                           d_bar=None) -> UnknownDiscoveryPlan:
    """Validate and fix the threshold: ``delta_t = (1 - delta)^(-1/k) - 1`` and
    ``offset = linf + (linf/epsilon) ln(m/delta_t)`` (rounded up to 1/1024)."""
    k = check_integer("k", k)
    check_positive("epsilon", epsilon)
    delta = check_delta("delta", delta)
    l0 = check_optional_integer("l0_sensitivity", l0_sensitivity)
    linf = check_integer("linf_sensitivity", linf_sensitivity)
    d_bar = check_optional_integer("d_bar", d_bar)
    if l0 is None and d_bar is None:
        raise ValueError("give d_bar (how many top items the algorithm may look at) or "
                         "l0_sensitivity: the threshold needs a data-independent bound on how "
                         "many labels one user can make visible")
    if d_bar is not None and k > d_bar:
        raise ValueError(f"k must be at most d_bar ({d_bar}), got {k}")
    m = min(value for value in (l0, d_bar) if value is not None)
    exact = rational_at_most(epsilon)
    delta_t = threshold_failure(delta, k)
    return UnknownDiscoveryPlan(k, exact, delta, l0, d_bar, linf, m, delta_t,
                                threshold_offset(exact, linf, m, delta_t))


@dataclass(frozen=True)
class UnknownGumbelPlan:
    discovery: UnknownDiscoveryPlan
    count_epsilon: Fraction
    noise: DiscreteNoise

    @property
    def events(self) -> tuple:
        return self.discovery.events + (self.noise.event(self.discovery.k),
                                        self.discovery.mixture_event)


def plan_unknown_gumbel(*, k, epsilon, delta, count_epsilon=None, l0_sensitivity=None,
                        linf_sensitivity=1, d_bar=None) -> UnknownGumbelPlan:
    discovery = plan_unknown_discovery(k=k, epsilon=epsilon, delta=delta,
                                       l0_sensitivity=l0_sensitivity,
                                       linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    if count_epsilon is not None:
        check_positive("count_epsilon", count_epsilon)
    counting = discovery.epsilon if count_epsilon is None else rational_at_most(count_epsilon)
    linf = discovery.linf_sensitivity
    return UnknownGumbelPlan(discovery, counting, laplace_noise(Fraction(linf) / counting, linf))


def unknown_gumbel(histogram, *, k, epsilon, delta, count_epsilon=None, l0_sensitivity=None,
                   linf_sensitivity=1, d_bar=None, source=None) -> Release:
    """At most ``k`` labels of an unknown domain, in noisy order, above a threshold.

    Definition
        Visible: the top ``d_bar`` positive labels (all the engine returned when
        ``d_bar`` is None) and ``h_(d+1)`` (0 when nothing was cut).  A threshold
        candidate ``bottom`` gets the score
        ``h_(d+1) + linf + (linf/epsilon) ln(m/delta_t)`` (rounded up),
        ``m = min(l0, d_bar)``, ``delta_t = (1 - delta)^(-1/k) - 1`` (about
        ``delta/k``).  Discovery: the peeling exponential mechanism (rate
        ``epsilon/linf``) over visible labels plus ``bottom``, exact, stopping
        when ``bottom`` is drawn or ``k`` labels are out – the law of adding
        ``Gumbel(linf/epsilon)`` once to every score and reading the order
        down to ``bottom`` (Durfee–Rogers).  Counts:
        ``h + Lap_Z(linf / count_epsilon)`` for each released label.
        ``epsilon`` is per selection step (rounded down to a rational).
    Privacy guarantee
        Events ``BoundedRange(epsilon, count=k)``,
        ``DiscreteLaplace(linf/count_epsilon, linf, count=k)``, ``ApproxDP(0, delta)``:
        the release is a ``delta``-mixture of ``k`` adaptive epsilon-BR steps
        and ``k`` Laplace counts over the labels visible in both neighbours
        (derivation in :mod:`._selection`), which every composition bound of
        the accountant covers.  E.g. at total ``delta + delta'``:
        ``epsilon_BR(k, epsilon; delta') + k count_epsilon``.  The spec's DR19
        statement ``(epsilon*, delta_t + delta')`` is not used: its coupling
        argument as reconstructed costs an extra ``(1 + e^epsilon*)`` or a
        ``k ln(1 + delta_t)`` epsilon term; the mixture form composes with other
        queries.  Unrestricted sensitivity is fine (then ``d_bar`` bounds
        ``m``); ``d_bar`` must not depend on the data.  Charged for ``k``
        steps whatever the number returned (no pay-what-you-get refund).  No
        floating-point step decides the output; the offset is computed in
        floats from public parameters and rounded up.
    Accuracy
        Counts unbiased for the returned labels, exact Laplace variance and
        95% interval (``parameters``).
    Citation
        D. Durfee, R. Rogers, NeurIPS 2019 (arXiv:1905.04273), Algorithm
        ``LimitDom``; R. Rogers et al., arXiv:2002.05839.
    Runtime
        ``O(min(k, V+1) V)`` array work for ``V`` visible labels, plus rejection
        proposals.
    """
    plan = plan_unknown_gumbel(k=k, epsilon=epsilon, delta=delta, count_epsilon=count_epsilon,
                               l0_sensitivity=l0_sensitivity, linf_sensitivity=linf_sensitivity,
                               d_bar=d_bar)
    visible = visible_top(check_histogram(histogram), plan.discovery.d_bar)
    src = resolve_source(source)
    chosen = plan.discovery.select(visible, src)
    noisy = visible.counts[chosen] + plan.noise.sample(len(chosen), src)
    parameters = {**plan.discovery.describe(), "count_epsilon": float(plan.count_epsilon),
                  "count_epsilon_exact": str(plan.count_epsilon), **plan.noise.describe()}
    return Release(tuple(visible.items[i] for i in chosen), noisy,
                   intervals(noisy, plan.noise.half_width()), plan.events, NAME, parameters)


def calibrate_unknown_gumbel(*, k, epsilon, delta, l0_sensitivity=None, linf_sensitivity=1,
                             d_bar=None, threshold_share=THRESHOLD_SHARE,
                             interaction: Interaction | str = Interaction.ADAPTIVE) -> dict:
    """Parameters of :func:`unknown_gumbel` spending at most (epsilon, delta).

    Split (as both public DR19 implementations): ``threshold_share * delta``
    is the threshold's mixture weight, the rest is composition slack; the
    same epsilon for every selection step and every count, the largest the
    accountant accepts on the actual events.  Returns the keyword arguments
    of :func:`unknown_gumbel` (without the histogram and source).
    """
    target = check_positive("epsilon", epsilon)
    total_delta = check_delta("delta", delta)
    share = check_fraction("threshold_share", threshold_share)
    mixture = total_delta * share
    base = dict(k=k, delta=mixture, l0_sensitivity=l0_sensitivity,
                linf_sensitivity=linf_sensitivity, d_bar=d_bar)
    plan_unknown_gumbel(epsilon=1.0, **base)    # validate before the search

    def events_of(x: float) -> tuple:
        return plan_unknown_gumbel(epsilon=x, **base).events

    chosen, _ = _calibrate.largest_meeting(events_of, target, total_delta,
                                           guess=target / (2 * int(k)), interaction=interaction,
                                           cache_key={"algorithm": NAME, **base})
    return {**base, "epsilon": chosen, "count_epsilon": chosen}

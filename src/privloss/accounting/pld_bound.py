"""The numerical privacy-loss-distribution bound: compose the exact PLDs of
named mechanisms (and the worst-case PLDs of pure and approximate DP events).

Its answer is a certified bracket; the accountant charges the upper end and
reports the lower one (``epsilon_lower`` / ``delta_lower`` in JSON).

The PLD package (``scipy.fft`` and the grid machinery, ~0.15 s to import) is
imported when a PLD is first built, not with this module: the applicability rules
below run for every profile (issue 12 item 8).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from privloss.accounting.profile import Profile
from privloss.events import (MECHANISM_EVENTS, ApproxDP, BoundedRange, DiscreteGaussian,
                             DiscreteLaplace, Gaussian, Interaction, Laplace, PureDP,
                             RandomizedResponse)

if TYPE_CHECKING:
    from privloss import pld
    from privloss.bounds import Bracket

#: events a PLD is known for (worst-case PLDs for PureDP, ApproxDP and BoundedRange;
#: the BR one is the adaptive-valid envelope over t, privloss.pld.bounded_range_pld)
PLD_EVENTS = MECHANISM_EVENTS + (PureDP, ApproxDP, BoundedRange)
#: largest number of composed mechanisms: composition by repeated squaring makes the
#: count cheap (10^6 mixed mechanisms: ~1 s CPU), but the grid grows like sqrt(count)
#: (10^7: ~12 s), and beyond that the other bounds are within 0.1% anyway
PLD_LIMIT = 1_000_000


def _single(event) -> pld.PrivacyLossDistribution:
    from privloss import pld

    if isinstance(event, Laplace):
        return pld.laplace_pld(event.scale, sensitivity=event.sensitivity)
    if isinstance(event, Gaussian):
        return pld.gaussian_pld(event.sigma, sensitivity=event.sensitivity)
    if isinstance(event, RandomizedResponse):
        return pld.randomized_response_pld(event.epsilon)
    if isinstance(event, DiscreteLaplace):
        return pld.discrete_laplace_pld(event.scale, sensitivity=event.sensitivity)
    if isinstance(event, DiscreteGaussian):
        return pld.discrete_gaussian_pld(event.sigma, sensitivity=event.sensitivity)
    if isinstance(event, PureDP):
        return pld.pure_dp_pld(event.epsilon)
    if isinstance(event, BoundedRange):
        return pld.bounded_range_pld(event.epsilon)
    return pld.approx_dp_pld(event.epsilon, event.delta)


def _key(event):
    """Events equal up to ``count`` share one PLD."""
    fields = {name: value for name, value in vars(event).items() if name != "count"}
    return type(event), tuple(sorted(fields.items()))


@lru_cache(maxsize=16)
def composed_pld(atoms: tuple) -> pld.PrivacyLossDistribution:
    """PLD of the whole profile (cached: the filter asks again and again)."""
    from privloss import pld

    counts: Counter = Counter()
    representative = {}
    for event, count in atoms:
        key = _key(event)
        counts[key] += count
        representative[key] = event
    items = [(_single(representative[key]), count) for key, count in counts.items()]
    return pld.compose(items)


def why_not(profile: Profile, interaction: Interaction) -> str | None:
    if interaction is Interaction.SETWISE:
        return "composes mechanisms in an order fixed in advance (adaptive or non-adaptive)"
    if not profile.has_mechanism_events:
        return ("needs a named mechanism (Laplace, Gaussian, RandomizedResponse, DiscreteLaplace, "
                "DiscreteGaussian); for generic events the optimal bounds are exact")
    if any(not isinstance(event, PLD_EVENTS) for event, _ in profile.atoms):
        return "needs named mechanisms, PureDP, ApproxDP or BoundedRange events only (no zCDP/CDP)"
    if profile.size > PLD_LIMIT:
        return f"more than {PLD_LIMIT} mechanisms"
    return None


def epsilon(profile: Profile, target_delta: float) -> Bracket:
    return composed_pld(profile.atoms).epsilon(target_delta)


def delta(profile: Profile, target_epsilon: float) -> Bracket:
    return composed_pld(profile.atoms).delta(target_epsilon)

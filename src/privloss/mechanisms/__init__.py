"""Mechanisms that are private as implemented; each reports its guarantee as events.

Names are imported lazily (a mechanism module loads only when used).
"""

from __future__ import annotations

from privloss._lazy import lazy_exports

_EXPORTS = {
    "privloss.mechanisms.base": ("Mechanism",),
    "privloss.mechanisms.randomized_response": ("RandomizedResponse", "KaryRandomizedResponse"),
    "privloss.mechanisms.laplace": ("DiscreteLaplaceMechanism", "GridLaplaceMechanism"),
    "privloss.mechanisms.gaussian": ("DiscreteGaussianMechanism", "GridGaussianMechanism",
                                     "discrete_gaussian_delta", "discrete_gaussian_epsilon"),
    "privloss.mechanisms.accuracy": ("NoisyRelease",),
    "privloss.mechanisms.exponential": ("ExponentialMechanism",),
    "privloss.mechanisms.noisy_max": ("ReportNoisyMax",),
    "privloss.mechanisms.gumbel_topk": ("GumbelTopK",),
    "privloss.mechanisms.smooth_sensitivity": ("SmoothSensitivityMedian",),
    "privloss.mechanisms.sample_aggregate": ("SampleAggregate",),
    "privloss.mechanisms.two_party": ("TwoPartyCount",),
}
__getattr__, __dir__, __all__ = lazy_exports("privloss.mechanisms", _EXPORTS)

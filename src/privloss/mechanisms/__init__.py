"""Mechanisms that are private as implemented; each reports its guarantee as events.

Names are imported lazily (a mechanism module loads only when used).
"""

from __future__ import annotations

import importlib

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
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'privloss.mechanisms' has no attribute {name!r}")

"""Discrete noise on integer counts: exact sampling, the event it spends, its
exact 95% half-width and variance.

:class:`DiscreteNoise` wraps the exact samplers of :mod:`privloss.samplers`
(discrete Laplace, CKS Algorithm 2; discrete Gaussian, CKS Algorithm 3) with
the accounting view of one noisy count: ``event(count)`` is
``DiscreteLaplace`` / ``DiscreteGaussian`` with the float parameter rounded
toward *more* claimed privacy loss (scale and sigma rounded down), so the
accountant never sees less loss than the sampler delivers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.events import DiscreteGaussian, DiscreteLaplace
from privloss.mechanisms.accuracy import discrete_gaussian_half_width, discrete_laplace_half_width
from privloss.samplers import discrete_gaussian, discrete_gaussian_variance, discrete_laplace
from privloss.samplers.exact_pmf import discrete_laplace_variance_float

from privloss.releases.algorithms._common import float_at_most, sqrt_float_at_most

#: miscoverage of the reported intervals
BETA = 0.05


@dataclass(frozen=True)
class DiscreteNoise:
    """``kind`` is ``"laplace"`` (``parameter`` = scale t, pmf ∝ exp(-|z|/t)) or
    ``"gaussian"`` (``parameter`` = sigma^2, pmf ∝ exp(-z^2/(2 sigma^2)));
    ``sensitivity`` is the l_inf-sensitivity Delta_inf of one count."""

    kind: str
    parameter: Fraction
    sensitivity: int

    def sample(self, size: int, source) -> np.ndarray:
        if size == 0:
            return np.zeros(0, dtype=np.int64)
        if self.kind == "laplace":
            return discrete_laplace(self.parameter, size, source=source)
        return discrete_gaussian(self.parameter, size, source=source)

    def event(self, count: int):
        """The guarantee of ``count`` noisy counts each shifted by <= Delta_inf."""
        if self.kind == "laplace":
            return DiscreteLaplace(float_at_most(self.parameter), self.sensitivity, count=count)
        return DiscreteGaussian(sqrt_float_at_most(self.parameter), self.sensitivity, count=count)

    def half_width(self) -> int:
        """Smallest integer w with P[|Z| > w] <= 5%, from the exact pmf."""
        if self.kind == "laplace":
            return discrete_laplace_half_width(self.parameter, BETA)
        return discrete_gaussian_half_width(self.parameter, BETA)

    def variance(self) -> float:
        """Exact variance of one draw (mpmath, returned as float)."""
        return _variance(self.kind, self.parameter)

    def describe(self) -> dict:
        """Noise parameters for ``Release.parameters``."""
        name = "scale" if self.kind == "laplace" else "sigma_squared"
        return {"noise": f"discrete-{self.kind}", name: float(self.parameter),
                f"{name}_exact": str(self.parameter), "noise_variance": self.variance(),
                "ci95_half_width": self.half_width()}


@functools.lru_cache(maxsize=256)
def _variance(kind: str, parameter: Fraction) -> float:
    if kind == "laplace":
        return discrete_laplace_variance_float(parameter)    # exact_pmf: mpmath rarely
    return float(discrete_gaussian_variance(parameter))


def laplace_noise(scale: Fraction, sensitivity: int) -> DiscreteNoise:
    return DiscreteNoise("laplace", Fraction(scale), sensitivity)


def gaussian_noise(sigma_squared: Fraction, sensitivity: int) -> DiscreteNoise:
    return DiscreteNoise("gaussian", Fraction(sigma_squared), sensitivity)


def intervals(values: np.ndarray, half_width: float) -> tuple:
    """``(value - w, value + w)`` per value, as plain Python numbers."""
    return tuple((v - half_width, v + half_width) for v in np.asarray(values).tolist())

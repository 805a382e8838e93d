"""Sample-and-aggregate (Nissim–Raskhodnikova–Smith 2007, §4).

A black-box function ``f`` is made private without analysing it: the records
are split at random into ``num_blocks`` disjoint blocks, ``f`` is evaluated on
each block, the block outputs are clamped to a declared range
``[lower, upper]``, and only an aggregate of the block outputs is released
with noise. Changing one record changes one block, hence one block output, so
the aggregate needs only the privacy of a function of ``num_blocks`` bounded
values under substitution of one of them.

Aggregators:

* ``"median"``: :class:`~privloss.mechanisms.smooth_sensitivity.SmoothSensitivityMedian`
  on the block outputs (NRS's choice; noise adapts to how concentrated the
  block outputs are). Continuous noise: see the floating-point caveat there.
* ``"mean"``: the clamped mean with Laplace noise of scale
  ``(upper - lower) / (num_blocks epsilon)`` (spec §6, "simpler alternative"),
  implemented **exactly**: each block output is first rounded to the grid
  ``lower + (upper - lower) k / 2^grid_bits`` (a deterministic part of the
  released function, not a privacy step), the integer sum of the ``k`` has
  sensitivity ``2^grid_bits`` and gets exact discrete Laplace noise.

Neighbours: substitution of one record (n public). The partition is drawn from
the random source independently of the data values; for neighbours x, x'
couple the partitions, so conditioned on the partition the block outputs are
substitution neighbours, and a mixture over partitions of DP releases is DP.

Citation: K. Nissim, S. Raskhodnikova, A. Smith, "Smooth sensitivity and
sampling in private data analysis", STOC 2007, §4; lecture notes seed 003;
spec ``mechanisms.md`` §6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from privloss.bounds._numeric import check_positive
from privloss.events import PureDP
from privloss.mechanisms.base import Mechanism, check_integer
from privloss.mechanisms.smooth_sensitivity import NOISE_TYPES, SmoothSensitivityMedian, check_range
from privloss.samplers import discrete_laplace
from privloss.samplers.randomness import resolve_source

__all__ = ["AGGREGATORS", "random_partition", "block_outputs", "SampleAggregate"]

#: Aggregators offered by :class:`SampleAggregate`.
AGGREGATORS = ("median", "mean")


def random_partition(n: int, num_blocks: int, *, source=None) -> list[np.ndarray]:
    """A uniformly random partition of ``range(n)`` into ``num_blocks`` blocks.

    Definition
        A uniformly random permutation cut into blocks ``perm[b::num_blocks]``:
        sizes ``floor(n/num_blocks)`` or ``ceil(n/num_blocks)``, fixed by n alone.
        The permutation sorts n independent uniform 64-bit words; a draw with a
        repeated word is discarded and redrawn (probability < n^2 / 2^65), so
        given distinct keys the order is exactly uniform.
    Privacy guarantee
        Uses no data; the partition law is independent of the records.
    Runtime
        O(n log n); expected fewer than 1 + n^2/2^64 rounds.
    """
    n = check_integer("n", n, 1)
    num_blocks = check_integer("num_blocks", num_blocks, 1, n)
    src = resolve_source(source)
    while True:
        keys = src.random_words(n)
        permutation = np.argsort(keys, kind="stable")
        ordered = keys[permutation]
        if not np.any(ordered[1:] == ordered[:-1]):
            break
    return [np.sort(permutation[b::num_blocks]) for b in range(num_blocks)]


def block_outputs(function: Callable, data, blocks, lower: float, upper: float) -> np.ndarray:
    """``clamp(function(data[block]), lower, upper)`` for every block.

    A NaN output becomes ``lower`` (any fixed replacement keeps the privacy
    argument); infinities are clamped. Exceptions raised by ``function``
    propagate (they would reveal something about the data: make ``function``
    total).
    """
    values = np.empty(len(blocks), dtype=float)
    for index, block in enumerate(blocks):
        raw = function(data[block])
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise TypeError(f"function must return a real number, got {raw!r}") from None
        values[index] = lower if math.isnan(value) else min(max(value, lower), upper)
    return values


class SampleAggregate(Mechanism):
    """Private release of a black-box statistic by sample-and-aggregate.

    Definition
        Split the n records (first axis of ``data``) into ``num_blocks`` random
        disjoint blocks (:func:`random_partition`), compute
        ``z_b = clamp(function(block_b), lower, upper)`` and release

        * ``aggregator="median"``: ``SmoothSensitivityMedian(epsilon, lower,
          upper, noise=noise, delta=delta)`` applied to ``z``;
        * ``aggregator="mean"``: ``lower + width (sum_b k_b + L) / (2^grid_bits
          num_blocks)`` clamped to ``[lower, upper]``, with
          ``k_b = round((z_b - lower) 2^grid_bits / width)`` and L exact discrete
          Laplace with scale ``2^grid_bits / epsilon``.
    Privacy guarantee
        Substitution of one record (n public). Median: as
        :class:`SmoothSensitivityMedian` (epsilon-DP with Cauchy noise,
        (epsilon, delta)-DP with Laplace noise; continuous-noise caveat).
        Mean: epsilon-DP exactly (integer sum of sensitivity 2^grid_bits plus
        exact discrete Laplace; the rest is post-processing).
    Accuracy
        Good when ``function`` on a block of n/num_blocks records is
        concentrated near its value on all data. Mean: noise standard
        deviation ~ sqrt(2) width / (num_blocks epsilon), plus the bias of f on
        small blocks and of clamping, plus a rounding error <= width 2^-grid_bits.
    Citation
        NRS 2007 §4; spec ``mechanisms.md`` §6.
    Runtime
        ``num_blocks`` calls of ``function`` plus O(n + num_blocks log num_blocks).
    """

    neighbours = "substitution"

    def __init__(self, function: Callable, num_blocks, epsilon, lower, upper, *,
                 aggregator: str = "median", noise: str = "cauchy", delta=None,
                 grid_bits=20):
        if not callable(function):
            raise TypeError(f"function must be callable, got {function!r}")
        self.function = function
        self.num_blocks = check_integer("num_blocks", num_blocks, 1)
        self.epsilon = check_positive("epsilon", epsilon)
        self.lower, self.upper = check_range(lower, upper)
        if aggregator not in AGGREGATORS:
            raise ValueError(f"aggregator must be one of {AGGREGATORS}, got {aggregator!r}")
        self.aggregator = aggregator
        if aggregator == "median":
            self._median = SmoothSensitivityMedian(self.epsilon, self.lower, self.upper,
                                                   noise=noise, delta=delta)
            self._events = self._median.events
        else:
            if noise not in NOISE_TYPES:
                raise ValueError(f"noise must be one of {NOISE_TYPES}, got {noise!r}")
            if delta not in (None, 0, 0.0):
                raise ValueError(f"delta must be None or 0 with the mean aggregator "
                                 f"(pure DP), got {delta!r}")
            self.grid_bits = check_integer("grid_bits", grid_bits, 1, 60)
            self._events = (PureDP(self.epsilon),)

    def _records(self, data):
        records = data if isinstance(data, np.ndarray) else np.asarray(data)
        if records.ndim == 0:
            raise ValueError("data must be a sequence of records, got a scalar")
        if records.shape[0] < self.num_blocks:
            raise ValueError(f"num_blocks must be <= the number of records "
                             f"({records.shape[0]}), got {self.num_blocks}")
        return records

    def _release(self, data, *, source=None) -> float:
        src = resolve_source(source)
        records = self._records(data)
        blocks = random_partition(records.shape[0], self.num_blocks, source=src)
        values = block_outputs(self.function, records, blocks, self.lower, self.upper)
        if self.aggregator == "median":
            return self._median.release(values, source=src)
        return self._noisy_mean(values, src)

    def _noisy_mean(self, values: np.ndarray, source) -> float:
        grid = 1 << self.grid_bits
        width = self.upper - self.lower
        # deterministic rounding of each bounded block output to {0, ..., grid}
        steps = np.clip(np.rint((values - self.lower) / width * grid), 0, grid).astype(np.int64)
        total = int(steps.sum())
        noisy = total + int(discrete_laplace(grid / Fraction(self.epsilon), source=source))
        mean = Fraction(self.lower) + Fraction(width) * Fraction(noisy, grid * self.num_blocks)
        return float(min(max(mean, Fraction(self.lower)), Fraction(self.upper)))

    def __repr__(self) -> str:
        return (f"SampleAggregate(num_blocks={self.num_blocks}, epsilon={self.epsilon!r}, "
                f"lower={self.lower!r}, upper={self.upper!r}, aggregator={self.aggregator!r})")

"""Exact sampling of an index with probability proportional to exp(-gamma_i).

The selection mechanisms (exponential mechanism, report noisy max with Gumbel
noise, Gumbel top-k) all reduce to one primitive: given rational
``gamma_i >= 0`` with ``min_i gamma_i = 0``, return ``i`` with probability
``exp(-gamma_i) / sum_j exp(-gamma_j)`` -- exactly, with no floating-point step.

Algorithm (rejection, spec ``mechanisms.md`` section 4, option (ii)): propose
``i`` uniformly, accept it with probability ``exp(-gamma_i)`` by CKS
Algorithm 1 (``privloss.samplers``' exact Bernoulli(exp(-gamma)) kernels), and
repeat until a proposal is accepted.  The accepted index has law
``(1/m) exp(-gamma_i) / P[accept]``, i.e. exactly the target.  The first
trials run one at a time in Python integers, later ones in NumPy batches whose
first accepted proposal *in drawing order* is returned; this is the law of the
sequential loop because the (proposal, acceptance) pairs are i.i.d.  The
switch point and the batch sizes never depend on the data, and no float is
ever computed.

Runtime: ``m / Z`` proposals in expectation, ``Z = sum_j exp(-gamma_j)`` in
``[1, m]``; so at most ``m`` and at least 1.  The running time therefore
depends on the scores (timing side channel, see ``docs/mechanisms_selection.md``).

Representation: scores are exact rationals on a common denominator
(:class:`ExactScores`), log-weights ``gamma_i = numerator_i / denominator``
(:class:`LogWeights`).  Everything fits NumPy ``int64`` in the common case and
runs through the vectorised kernels; otherwise Python integers and the scalar
kernels take over (same law, slower).

Also here: parsing the shared mechanism parameters to exact rationals, and
rounding an exact epsilon *up* to the float that events carry.

Citation: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020 (Algorithm 1); C. Ilvento, "Implementing the
Exponential Mechanism with Base-2 Differential Privacy", CCS 2020 (why floats
break the exponential mechanism).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.samplers import _batched, _exact
from privloss.samplers._params import nonnegative_rational, positive_rational, to_rational

__all__ = [
    "ExactScores",
    "LogWeights",
    "exact_scores",
    "log_weights",
    "sample_index",
    "sample_ordered",
    "parse_epsilon",
    "parse_positive",
    "float_at_least",
]

#: Every int64 intermediate stays below this (the samplers' own headroom).
_SAFE = _batched.SAFE
#: Trials run one at a time in Python integers before switching to NumPy
#: batches (cheaper when few proposals are needed, the common case).
_SCALAR_TRIALS = 48
#: Proposal batches grow from the first to the last size by a factor 4.
_FIRST_BATCH = 32
_MAX_BATCH = 1 << 16


# ---------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------

def parse_epsilon(value, *, allow_float: bool = False) -> Fraction:
    """``epsilon`` as an exact non-negative rational (int, Fraction, Decimal, str)."""
    return nonnegative_rational("epsilon", value, allow_float=allow_float)


def parse_positive(name: str, value, *, allow_float: bool = False) -> Fraction:
    """A positive exact rational named ``name`` (sensitivity, score_range)."""
    return positive_rational(name, value, allow_float=allow_float)


def float_at_least(value: Fraction) -> float:
    """The smallest float >= ``value``: events carry floats, and a privacy
    parameter rounded to nearest could understate the exact one."""
    result = float(value)
    if Fraction(result) < value:
        result = math.nextafter(result, math.inf)
    return result


# ---------------------------------------------------------------------------
# scores
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ExactScores:
    """Scores ``numerators[i] / denominator`` (exact rationals, common denominator).

    ``numerators`` is an ``int64`` array when every value fits, else an object
    array of Python ints.
    """

    numerators: np.ndarray
    denominator: int

    def __len__(self) -> int:
        return int(self.numerators.size)


def exact_scores(scores, *, allow_float: bool = False, name: str = "scores") -> ExactScores:
    """Validate a 1-D sequence of scores and convert it to :class:`ExactScores`.

    Accepted elements: ints (also NumPy), ``Fraction``, ``Decimal``, strings such
    as ``"7/2"``; floats only with ``allow_float=True`` (their exact binary
    value).  NaN, infinities and bools are rejected with the offending index.
    """
    if isinstance(scores, (str, bytes, Mapping)) or not isinstance(scores, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence or 1-D array of numbers, "
                        f"got {type(scores).__name__}")
    array = np.asarray(scores) if isinstance(scores, np.ndarray) else None
    if array is not None and array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array is not None and array.dtype.kind in "iu":
        return _integer_array(array)
    if array is not None and array.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name}[{i}] must be finite, got {array[i]!r}")
    values = array.tolist() if array is not None else list(scores)
    return _from_python(values, allow_float, name)


def _integer_array(array: np.ndarray) -> ExactScores:
    if array.dtype.kind == "u" and array.size and int(array.max()) > _batched.INT64_MAX:
        return _pack([int(v) for v in array.tolist()], 1)
    return ExactScores(array.astype(np.int64, copy=True), 1)


def _from_python(values: list, allow_float: bool, name: str) -> ExactScores:
    if all(type(value) is int for value in values):  # the common case, kept fast
        return _pack(values, 1)
    exact = []
    for i, value in enumerate(values):
        # integers stay Python ints; everything else goes through the exact parser
        if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
            exact.append(int(value))
        else:
            exact.append(to_rational(f"{name}[{i}]", value, allow_float=allow_float))
    denominator = math.lcm(*(v.denominator for v in exact if isinstance(v, Fraction))) \
        if any(isinstance(v, Fraction) for v in exact) else 1
    numerators = [v * denominator if isinstance(v, int)
                  else v.numerator * (denominator // v.denominator) for v in exact]
    return _pack(numerators, denominator)


def _pack(numerators: list[int], denominator: int) -> ExactScores:
    if not numerators or (_batched.INT64_MIN <= min(numerators)
                          and max(numerators) <= _batched.INT64_MAX):
        return ExactScores(np.array(numerators, dtype=np.int64).reshape(len(numerators)),
                           denominator)
    out = np.empty(len(numerators), dtype=object)
    out[:] = numerators
    return ExactScores(out, denominator)


# ---------------------------------------------------------------------------
# log-weights
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LogWeights:
    """``gamma_i = numerators[i] / denominator >= 0``; weights ``exp(-gamma_i)``.

    ``numerators`` is ``int64`` when the batched kernels can take it (every
    value and the denominator below 2**62), else an object array.
    """

    numerators: np.ndarray
    denominator: int

    @property
    def batched(self) -> bool:
        return self.numerators.dtype != object

    def subset(self, indices: np.ndarray) -> "LogWeights":
        """The log-weights of ``indices``, shifted so that their minimum is 0."""
        part = self.numerators[indices]
        if part.size:
            part = part - part.min()
        return LogWeights(part, self.denominator)


def log_weights(scores: ExactScores, rate: Fraction) -> LogWeights:
    """``gamma_i = rate * (max_j u_j - u_i)`` for the weights ``exp(rate * u_i)``.

    Shifting by the maximum leaves the normalised law unchanged and makes the
    largest weight 1, which the rejection sampler needs.
    """
    u = scores.numerators
    factor = rate.numerator
    denominator = rate.denominator * scores.denominator
    if u.dtype != object and u.size:
        spread = int(u.max()) - int(u.min())
        if spread < _SAFE and spread * factor < _SAFE and denominator < _SAFE:
            # every gap top - u_i <= spread < 2**62, and so is its product with factor
            return LogWeights((u.max() - u) * np.int64(factor), denominator)
    values = [int(v) for v in u.tolist()]
    top = max(values)
    gammas = [(top - v) * factor for v in values]
    if denominator < _SAFE and all(g < _SAFE for g in gammas):
        return LogWeights(np.array(gammas, dtype=np.int64).reshape(len(gammas)), denominator)
    out = np.empty(len(gammas), dtype=object)
    out[:] = gammas
    return LogWeights(out, denominator)


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------

def sample_index(weights: LogWeights, source) -> int:
    """One index ``i`` with probability ``exp(-gamma_i) / sum_j exp(-gamma_j)``.

    Requires ``min gamma = 0`` (as :func:`log_weights` and
    :meth:`LogWeights.subset` produce).  No randomness is used for one candidate.
    """
    m = int(weights.numerators.size)
    if m == 0:
        raise ValueError("cannot sample from an empty candidate set")
    if m == 1:
        return 0
    if not weights.numerators.any():  # all gamma = 0 (e.g. epsilon = 0): uniform
        return int(source.uniform_below(m))
    # The trials (proposal, acceptance) are i.i.d., so switching from scalar to
    # batched trials after a fixed number of failures leaves the law unchanged.
    first = _sample_scalar(weights.numerators, weights.denominator, source, m,
                           _SCALAR_TRIALS if weights.batched else None)
    if first is not None:
        return first
    return _sample_batched(weights.numerators, weights.denominator, source, m)


def _sample_batched(numerators: np.ndarray, denominator: int, source, m: int) -> int:
    batch = _FIRST_BATCH
    while True:
        proposals = source.uniform_below_array(m, batch)
        accepted = np.flatnonzero(_batched.bernoulli_exp(source, numerators[proposals],
                                                         denominator))
        if accepted.size:
            return int(proposals[accepted[0]])  # first success in drawing order
        batch = min(4 * batch, _MAX_BATCH)


def _sample_scalar(numerators: np.ndarray, denominator: int, source, m: int,
                   trials: int | None) -> int | None:
    """Up to ``trials`` (None: unlimited) scalar trials; None if all were rejected."""
    count = 0
    while trials is None or count < trials:
        i = source.uniform_below(m)
        if _exact.bernoulli_exp(source, int(numerators[i]), denominator):
            return i
        count += 1
    return None


def sample_ordered(weights: LogWeights, k: int, source) -> list[int]:
    """``k`` distinct indices by peeling: each step draws from the indices not yet
    chosen with probability proportional to ``exp(-gamma_i)`` (exactly)."""
    remaining = np.arange(weights.numerators.size)
    chosen: list[int] = []
    for _ in range(k):
        position = sample_index(weights.subset(remaining), source)
        chosen.append(int(remaining[position]))
        remaining = np.delete(remaining, position)
    return chosen

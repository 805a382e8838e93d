"""Randomized response in the local model: binary (Warner) and k-ary.

**Local model.** Every user applies the randomizer to their *own* value and
sends only the randomized report; the collector never sees a true value. The
guarantee is per user and per report: whatever the other users do, the report
of one user is epsilon-DP with respect to that user's value (any two values of
the domain are neighbours). It therefore also holds for the whole collection of
reports when one user's value is *substituted*. It does not hide
*participation*: the number of reports, and who sent one, are public. A user
who reports twice (two releases) spends 2 epsilon.

* :class:`RandomizedResponse` - one bit; the truth with probability
  e^eps / (1 + e^eps).
* :class:`KaryRandomizedResponse` - a value of a k-element domain (direct
  encoding / generalized RR); the truth with probability e^eps / (e^eps + k - 1),
  each other value with probability 1 / (e^eps + k - 1).
* :class:`ProportionEstimate`, :class:`FrequencyEstimate` - the unbiased
  estimators computed from the reports, with exact variances, unbiased variance
  estimates and Hoeffding confidence half-widths.

Sampling is exact (no float decides a report): propose the true value or any
other value uniformly (one exact uniform integer in {0..k-1}); keep the true
value always and accept another value with probability exp(-eps) (CKS
Algorithm 1); repeat until accepted. Then P[truth] is proportional to 1 and
P[a given other value] to e^-eps, which are exactly the RR probabilities. The
number of rounds does not depend on the user's value (acceptance depends only
on the proposal offset), so running time leaks nothing.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from privloss.events import PureDP
from privloss.mechanisms.accuracy import check_beta
from privloss.mechanisms.base import Mechanism
from privloss.mechanisms.laplace import float_upper, rational
from privloss.samplers import bernoulli_exp
from privloss.samplers.randomness import resolve_source

__all__ = [
    "RandomizedResponse",
    "KaryRandomizedResponse",
    "ProportionEstimate",
    "FrequencyEstimate",
    "binary_rr_variance",
    "kary_rr_variance",
    "kary_rr_probabilities",
]


# ---------------------------------------------------------------------------
# probabilities and exact variances (floats: post-processing of public epsilon)
# ---------------------------------------------------------------------------

def _check_epsilon_value(epsilon) -> float:
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (numbers.Real, Fraction)):
        raise TypeError(f"epsilon must be a real number > 0, got {epsilon!r}")
    value = float(epsilon)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"epsilon must be in (0, inf), got {epsilon!r}")
    return value


def _check_k(k) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer >= 2, got {k!r}")
    if k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    return int(k)


def _check_n(n) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be an integer >= 1, got {n!r}")
    if n < 1:
        raise ValueError(f"n must be an integer >= 1 (number of reports), got {n!r}")
    return int(n)


def kary_rr_probabilities(epsilon, k: int) -> tuple[float, float]:
    """(p, q): P[report = truth] = e^eps/(e^eps + k - 1), P[report = v] = 1/(e^eps + k - 1)
    for each v != truth. Written with e^-eps so that no epsilon overflows."""
    eps = _check_epsilon_value(epsilon)
    k = _check_k(k)
    small = math.exp(-eps)
    p = 1.0 / (1.0 + (k - 1) * small)
    return p, small * p


def _gap(eps: float, k: int) -> float:
    """p - q = (1 - e^-eps) / (1 + (k-1) e^-eps), without cancellation."""
    return -math.expm1(-eps) / (1.0 + (k - 1) * math.exp(-eps))


def binary_rr_variance(epsilon, n) -> float:
    """Exact Var[f_hat] = e^eps / (n (e^eps - 1)^2) of the binary estimator, for any
    true fraction (the users' bits are fixed; the randomness is RR's)."""
    eps = _check_epsilon_value(epsilon)
    n = _check_n(n)
    # e^eps/(e^eps-1)^2 = e^-eps / (1 - e^-eps)^2
    return math.exp(-eps) / (n * math.expm1(-eps) ** 2)


def kary_rr_variance(epsilon, k, n, true_proportions) -> np.ndarray:
    """Exact Var[f_hat_v] = (q(1-q) + f_v (p-q)(1-p-q)) / (n (p-q)^2) for each value v.

    ``true_proportions`` f_v are the users' (fixed) frequencies; for k = 2 this is
    :func:`binary_rr_variance`.
    """
    eps = _check_epsilon_value(epsilon)
    k = _check_k(k)
    n = _check_n(n)
    f = np.asarray(true_proportions, dtype=float)
    if f.shape != (k,) or np.isnan(f).any() or (f < 0).any() or (f > 1).any():
        raise ValueError(f"true_proportions must be {k} values in [0, 1], got {true_proportions!r}")
    return _kary_variance(eps, k, n, f)


def _kary_variance(eps: float, k: int, n: int, f: np.ndarray) -> np.ndarray:
    p, q = kary_rr_probabilities(eps, k)
    gap = _gap(eps, k)
    # 1 - p - q = (k - 2) q, exactly, which avoids cancellation for k = 2
    return (q * (1.0 - q) + f * gap * (k - 2) * q) / (n * gap * gap)


# ---------------------------------------------------------------------------
# estimates
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ProportionEstimate:
    """Estimate of the fraction of ones from n binary RR reports.

    ``proportion`` is unbiased (it can fall outside [0, 1]; :meth:`clipped` is the
    biased but valid-range version); ``variance`` is exact (it does not depend
    on the truth); ``count`` = n * proportion estimates the number of ones.
    """

    proportion: float
    n: int
    epsilon: float

    @property
    def count(self) -> float:
        return self.n * self.proportion

    @property
    def variance(self) -> float:
        return binary_rr_variance(self.epsilon, self.n)

    @property
    def standard_error(self) -> float:
        return math.sqrt(self.variance)

    def clipped(self) -> float:
        """The proportion clipped to [0, 1] (post-processing; biased near 0 and 1)."""
        return min(1.0, max(0.0, self.proportion))

    def half_width(self, beta) -> float:
        """Hoeffding: |proportion - truth| <= (e^eps + 1)/(e^eps - 1) sqrt(ln(2/beta)/(2n))
        with probability >= 1 - beta (finite-sample, no normal approximation)."""
        beta = check_beta(beta)
        return math.sqrt(math.log(2.0 / beta) / (2.0 * self.n)) / _gap(self.epsilon, 2)

    def interval(self, beta) -> tuple[float, float]:
        w = self.half_width(beta)
        return self.proportion - w, self.proportion + w


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimates of the frequencies of all k values from n k-ary RR reports.

    ``proportions[v]`` = (C_v / n - q) / (p - q) is unbiased for f_v and the
    proportions sum to 1; ``variance_estimates[v]`` is unbiased for
    Var[proportions[v]] (the exact variance is linear in f_v, so plugging in the
    unbiased estimate keeps it unbiased; it can be slightly negative when the
    estimate is). :meth:`variances` gives the exact variance for known
    frequencies.
    """

    proportions: np.ndarray
    observed_counts: np.ndarray
    n: int
    epsilon: float
    categories: tuple

    @property
    def k(self) -> int:
        return len(self.categories)

    @property
    def counts(self) -> np.ndarray:
        return self.n * self.proportions

    @property
    def variance_estimates(self) -> np.ndarray:
        return _kary_variance(self.epsilon, self.k, self.n, self.proportions)

    @property
    def standard_errors(self) -> np.ndarray:
        return np.sqrt(np.maximum(self.variance_estimates, 0.0))

    def variances(self, true_proportions) -> np.ndarray:
        """Exact variances for the given true frequencies (:func:`kary_rr_variance`)."""
        return kary_rr_variance(self.epsilon, self.k, self.n, true_proportions)

    def as_dict(self) -> dict:
        return dict(zip(self.categories, self.proportions.tolist()))

    def clipped(self) -> np.ndarray:
        """Proportions clipped to [0, 1] (post-processing; biased, may not sum to 1)."""
        return np.clip(self.proportions, 0.0, 1.0)

    def projected(self) -> np.ndarray:
        """Euclidean projection onto the probability simplex (post-processing;
        biased, sums to 1; Duchi et al. 2008 sort-based algorithm)."""
        v = self.proportions
        u = np.sort(v)[::-1]
        cumulative = np.cumsum(u) - 1.0
        index = np.arange(1, v.size + 1)
        rho = np.nonzero(u - cumulative / index > 0)[0][-1]
        theta = cumulative[rho] / (rho + 1.0)
        return np.maximum(v - theta, 0.0)

    def half_width(self, beta, *, simultaneous: bool = True) -> float:
        """Hoeffding half-width: |proportions[v] - f_v| <= sqrt(ln(2m/beta)/(2n)) / (p - q)
        for all v simultaneously (m = k) or for one given v (m = 1), with
        probability >= 1 - beta. C_v / n is a mean of n independent indicators."""
        beta = check_beta(beta)
        m = self.k if simultaneous else 1
        return math.sqrt(math.log(2.0 * m / beta) / (2.0 * self.n)) / _gap(self.epsilon, self.k)


# ---------------------------------------------------------------------------
# exact sampling
# ---------------------------------------------------------------------------

_SMALL_BATCH = 16


def _sample_offset(epsilon: Fraction, k: int, src) -> int:
    """One offset, by the same rejection as :func:`_sample_offsets`."""
    while True:
        proposal = src.uniform_below(k)
        if proposal == 0 or epsilon == 0 or bernoulli_exp(epsilon, source=src):
            return proposal


def _sample_offsets(epsilon: Fraction, k: int, count: int, source) -> np.ndarray:
    """``count`` offsets in {0..k-1}: 0 (= report the truth) with probability
    e^eps/(e^eps + k - 1), each other offset with probability 1/(e^eps + k - 1).

    Rejection: propose a uniform offset; keep 0 always, keep others with
    probability exp(-eps) (exact). Expected rounds (k)/(1 + (k-1) e^-eps) <= min(k, e^eps).
    """
    src = resolve_source(source)
    if count <= _SMALL_BATCH:  # scalar exact draws: same law, less overhead
        return np.array([_sample_offset(epsilon, k, src) for _ in range(count)], dtype=np.int64)
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        proposal = src.uniform_below_array(k, pending.size).astype(np.int64)
        accept = proposal == 0
        others = np.flatnonzero(~accept)
        if others.size and epsilon > 0:
            accept[others] = bernoulli_exp(epsilon, others.size, source=src)
        elif others.size:
            accept[others] = True
        out[pending[accept]] = proposal[accept]
        pending = pending[~accept]
    return out


class KaryRandomizedResponse(Mechanism):
    """Generalized (k-ary, direct-encoding) randomized response, local model.

    Definition
        Domain: ``k`` values 0..k-1, or the labels in ``categories``. Each user's
        report is their true value with probability p = e^eps / (e^eps + k - 1)
        and each of the k - 1 other values with probability q = 1/(e^eps + k - 1).
        ``release(values)`` randomizes every entry independently (one entry per
        user) and returns reports of the same shape (labels if ``categories``).
    Privacy guarantee
        ``events = (PureDP(epsilon),)`` per user (p / q = e^eps); local DP: see
        the module docstring (value substitution, not participation). Also
        2 epsilon-bounded range (not reported: PureDP is the stronger event for
        a single use). Sampling is exact for rational epsilon (floats mean their
        exact binary value).
    Citation
        Warner 1965 (randomized response); Kairouz–Oh–Viswanath 2014 / Wang et
        al. 2017 (k-ary RR, "direct encoding", variance formula).
    Runtime
        O(min(k, e^eps)) expected exact draws per report; independent of the
        reported value. Estimation: O(n + k).
    """

    def __init__(self, epsilon, k=None, *, categories=None, source=None):
        self.epsilon = rational("epsilon", epsilon)
        if categories is not None:
            categories = tuple(categories)
            if k is not None and k != len(categories):
                raise ValueError(f"k={k!r} does not match len(categories)={len(categories)}")
            k = len(categories)
            if len(set(categories)) != k:
                raise ValueError("categories must be distinct")
        if k is None:
            raise ValueError("pass k (domain size) or categories")
        self.k = _check_k(k)
        self.categories = categories if categories is not None else tuple(range(self.k))
        self._index = {label: i for i, label in enumerate(self.categories)} \
            if categories is not None else None
        self._source = resolve_source(source) if source is not None else None
        self._events = (PureDP(float_upper(self.epsilon)),)

    @property
    def probabilities(self) -> tuple[float, float]:
        """(p, q) as floats (for reporting; sampling uses exact arithmetic)."""
        if self.epsilon == 0:
            return 1.0 / self.k, 1.0 / self.k
        return kary_rr_probabilities(float(self.epsilon), self.k)

    # -- input handling -------------------------------------------------------

    def _to_indices(self, values, name: str) -> np.ndarray:
        if self._index is not None:
            array = np.asarray(values, dtype=object)
            flat = array.reshape(-1)
            indices = np.empty(flat.size, dtype=np.int64)
            for i, label in enumerate(flat.tolist()):
                try:
                    indices[i] = self._index[label]
                except (KeyError, TypeError):
                    raise ValueError(f"{name}[{i}] = {label!r} is not one of the categories "
                                     f"{self.categories!r}") from None
            return indices.reshape(array.shape)
        array = np.asarray(values)
        if array.size == 0:
            return np.zeros(array.shape, dtype=np.int64)
        if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
            if array.dtype == object and all(isinstance(v, numbers.Integral) and
                                             not isinstance(v, bool) for v in array.reshape(-1)):
                array = array.astype(np.int64)
            else:
                raise TypeError(f"{name} must be integers in [0, {self.k - 1}], "
                                f"got dtype {array.dtype}")
        if array.size and (array.min() < 0 or array.max() >= self.k):
            raise ValueError(f"{name} must be integers in [0, {self.k - 1}], got values in "
                             f"[{array.min()}, {array.max()}]")
        return array.astype(np.int64)

    def _from_indices(self, indices: np.ndarray, like):
        if self._index is not None:
            labels = np.empty(indices.shape, dtype=object)
            labels.reshape(-1)[:] = [self.categories[i] for i in indices.reshape(-1).tolist()]
            return labels[()] if np.ndim(like) == 0 else labels
        return int(indices) if np.ndim(like) == 0 else indices

    # -- release and estimation -------------------------------------------------

    def _release(self, values):
        indices = self._to_indices(values, "values")
        offsets = _sample_offsets(self.epsilon, self.k, indices.size, self._source)
        reports = (indices.reshape(-1) + offsets) % self.k
        return self._from_indices(reports.reshape(indices.shape), values)

    def estimate(self, reports) -> FrequencyEstimate:
        """Unbiased frequency estimates from the reports (post-processing)."""
        if self.epsilon == 0:
            raise ValueError("epsilon = 0 reports carry no information; nothing to estimate")
        indices = self._to_indices(reports, "reports").reshape(-1)
        n = _check_n(indices.size)
        observed = np.bincount(indices, minlength=self.k)
        eps = float(self.epsilon)
        _, q = kary_rr_probabilities(eps, self.k)
        proportions = (observed / n - q) / _gap(eps, self.k)
        return FrequencyEstimate(proportions, observed, n, eps, self.categories)

    def __repr__(self) -> str:
        return f"KaryRandomizedResponse(epsilon={self.epsilon}, k={self.k})"


class RandomizedResponse(KaryRandomizedResponse):
    """Warner's binary randomized response, local model.

    Definition
        Each user holds a bit b (0/1 or bool); the report is b with probability
        p = e^eps / (1 + e^eps) and 1 - b otherwise. ``release(bits)`` returns
        reports of the same shape (ints; a Python int for a scalar).
    Privacy guarantee
        ``events = (PureDP(epsilon),)`` per user: p / (1 - p) = e^eps (local DP,
        module docstring). Exact sampling (k-ary sampler with k = 2).
    Citation
        Warner, JASA 1965; Dwork–Roth 2014 §3.2; lecture notes (seed 003).
    Runtime
        O(1) expected exact draws per report (at most 2 rounds on average).
    """

    def __init__(self, epsilon, *, source=None):
        super().__init__(epsilon, 2, source=source)

    def _to_indices(self, values, name: str) -> np.ndarray:
        array = np.asarray(values)
        if array.dtype == np.bool_:
            return array.astype(np.int64)
        return super()._to_indices(values, name)

    def estimate(self, reports) -> ProportionEstimate:
        """Unbiased estimate f_hat = ((e^eps + 1) c_hat - 1) / (e^eps - 1) of the
        fraction of ones, c_hat the observed fraction (post-processing)."""
        frequencies = super().estimate(reports)
        return ProportionEstimate(float(frequencies.proportions[1]), frequencies.n,
                                  frequencies.epsilon)

    def __repr__(self) -> str:
        return f"RandomizedResponse(epsilon={self.epsilon})"

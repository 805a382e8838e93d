"""Report noisy max: add noise to every score, release only the index of the largest.

Public: :class:`ReportNoisyMax` with three noise families (spec
``mechanisms.md`` section 4.2):

* ``noise="laplace"``: discrete Laplace on integer scores, epsilon-DP;
* ``noise="gumbel"``: equal in law to the exponential mechanism,
  epsilon-bounded-range (sampled exactly as that mechanism);
* ``noise="exponential"``: equal in law to permute-and-flip, epsilon-DP
  (sampled exactly as permute-and-flip).

The noisy values are never released (releasing the maximum itself would cost
extra budget).
"""

from __future__ import annotations

import numpy as np

from privloss.events import BoundedRange, PureDP
from privloss.mechanisms._exact_choice import (LogWeights, float_at_least, log_weights,
                                               parse_epsilon, parse_positive, sample_index)
from privloss.mechanisms.base import Mechanism
from privloss.mechanisms.exponential import CandidateSet
from privloss.samplers import _batched, _exact, discrete_laplace
from privloss.samplers.randomness import resolve_source

__all__ = ["ReportNoisyMax", "NOISE_FAMILIES"]

NOISE_FAMILIES = ("laplace", "gumbel", "exponential")


class ReportNoisyMax(Mechanism):
    """Index of the largest noisy score, for scores of sensitivity ``sensitivity``.

    Definition
        ``argmax_r (u(x, r) + Z_r)`` over a data-independent candidate set,
        ``Z_r`` i.i.d.; only the argmax is released.
        * ``laplace``: ``Z_r`` discrete Laplace with scale ``sensitivity/epsilon``
          if ``monotone`` else ``2 sensitivity/epsilon``; scores must be
          integers; ties go to the lowest index (a fixed, data-independent rule).
        * ``gumbel``: ``Z_r`` Gumbel with scale ``range/epsilon``, where the
          range is ``sensitivity`` if ``monotone`` else ``2 sensitivity``.  The
          argmax has exactly the law of the exponential mechanism
          ``P[r] ~ exp(epsilon u_r / range)``, which is what is sampled (exactly,
          no Gumbel variate is ever formed).
        * ``exponential``: ``Z_r`` exponential with scale ``2 sensitivity/epsilon``;
          its argmax has exactly the law of permute-and-flip (Ding et al.), which
          is what is sampled: visit the candidates in a uniformly random order and
          stop at the first ``r`` accepted with probability
          ``exp(-epsilon (OPT - u_r) / (2 sensitivity))``.
        ``monotone=True`` declares that between neighbours all scores move in
        the same direction (counts under add/remove of one user).
    Privacy guarantee
        * ``laplace``: ``PureDP(epsilon)``.  Proof (Dwork-Roth Claim 3.9, redone
          for integer noise): fix the other noise values; ``r`` wins iff
          ``Z_r >= t`` for an integer threshold ``t``; on a neighbour it still wins
          if ``Z_r >= t + s`` with ``s = sensitivity`` (monotone) or
          ``2 sensitivity`` (general), rounded down to an integer; the discrete
          Laplace tail is log-concave, so ``P[Z >= t + s] >= exp(-epsilon) P[Z >= t]``.
          Only the generic 2 epsilon-BR follows, so the event is pure DP.
        * ``gumbel``: ``BoundedRange(epsilon)`` (it is the exponential mechanism).
        * ``exponential``: ``PureDP(epsilon)`` (permute-and-flip is epsilon-DP,
          McKenna-Sheldon).  ``monotone`` is not used: no halved scale is claimed.
        Exact: every decision is an integer comparison (CKS samplers).  Caveat:
        running time depends on the data (timing side channel).
    Citation
        C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy",
        2014, Section 3.3; D. Durfee, R. Rogers, NeurIPS 2019 (Gumbel = EM);
        R. McKenna, D. Sheldon, "Permute-and-Flip", NeurIPS 2020; Z. Ding,
        D. Kifer, et al., "The Permute-and-Flip Mechanism is Identical to Report
        Noisy Max with Exponential Noise", 2021; C. Canonne, G. Kamath,
        T. Steinke, NeurIPS 2020 (exact samplers).
    Runtime
        ``laplace``: O(|R|) noise draws.  ``gumbel``: as the exponential
        mechanism, ``|R|/Z <= |R|`` expected proposals.  ``exponential``: a
        walk over a uniform random order until the first acceptance, at most
        |R| steps (Python-level swaps: about 1 s per million visited candidates).

    ``release(scores, source=None, budget=None)`` returns a candidate (or an
    index when no candidates were declared).
    """

    def __init__(self, epsilon, sensitivity, *, noise: str = "laplace", monotone: bool = False,
                 candidates=None, allow_float: bool = False):
        if noise not in NOISE_FAMILIES:
            raise ValueError(f"noise must be one of {NOISE_FAMILIES}, got {noise!r}")
        if not isinstance(monotone, bool):
            raise TypeError(f"monotone must be a bool, got {monotone!r}")
        self.epsilon = parse_epsilon(epsilon, allow_float=allow_float)
        self.sensitivity = parse_positive("sensitivity", sensitivity, allow_float=allow_float)
        self.noise = noise
        self.monotone = monotone
        self.candidates = CandidateSet(candidates)
        self.allow_float = bool(allow_float)
        # noise scale in score units (Laplace, exponential) or EM range (Gumbel)
        halved = monotone and noise != "exponential"
        self.scale = self.sensitivity if halved else 2 * self.sensitivity
        epsilon_event = float_at_least(self.epsilon)
        event = BoundedRange(epsilon_event) if noise == "gumbel" else PureDP(epsilon_event)
        self._events = (event,)

    def _release(self, scores, *, source=None):
        exact = self.candidates.scores(scores, allow_float=self.allow_float)
        src = resolve_source(source)
        m = len(exact)
        if m == 1:
            return self.candidates.output(0)
        if self.epsilon == 0:  # infinite noise: every index equally likely
            return self.candidates.output(src.uniform_below(m))
        if self.noise == "laplace":
            if exact.denominator != 1:
                raise ValueError("noise='laplace' needs integer scores; round them to a "
                                 "data-independent grid and give the sensitivity in grid units")
            index = _laplace_argmax(exact.numerators, self.scale / self.epsilon, src)
        elif self.noise == "gumbel":
            index = sample_index(log_weights(exact, self.epsilon / self.scale), src)
        else:
            index = _permute_and_flip(log_weights(exact, self.epsilon / self.scale), src)
        return self.candidates.output(index)


#: Below this many candidates scalar noise draws beat the NumPy batch overhead.
_SCALAR_NOISE_MAX = 64


def _laplace_argmax(scores: np.ndarray, scale, source) -> int:
    if scores.size <= _SCALAR_NOISE_MAX:
        noisy = [int(u) + discrete_laplace(scale, source=source) for u in scores.tolist()]
        return max(range(len(noisy)), key=lambda i: (noisy[i], -i))
    noise = discrete_laplace(scale, size=scores.size, source=source)
    if scores.dtype != object and noise.dtype != object:
        bound = int(np.abs(scores).max()) + int(np.abs(noise).max())
        if bound <= _batched.INT64_MAX:
            return int(np.argmax(scores + noise))  # first maximum: lowest index wins ties
    noisy = [int(a) + int(b) for a, b in zip(scores.tolist(), noise.tolist())]
    return max(range(len(noisy)), key=lambda i: (noisy[i], -i))


def _permute_and_flip(weights: LogWeights, source) -> int:
    """Permute-and-flip, exactly: visit the candidates in a uniformly random order
    (lazy Fisher-Yates on exact uniform integers, so only the visited prefix of
    the permutation is drawn) and return the first one accepted with probability
    exp(-gamma_r).  The best candidate has gamma = 0, so the walk always stops.
    The first positions are visited one at a time in Python integers, later
    ones in NumPy chunks; acceptances are independent given the order, so the
    split does not change the law."""
    m = int(weights.numerators.size)
    numerators, denominator = weights.numerators, weights.denominator
    order = list(range(m))
    scalar_stop = m if not weights.batched else min(m, _PF_SCALAR_STEPS)
    for i in range(scalar_stop):
        j = i + source.uniform_below(m - i)  # uniform partner in [i, m)
        order[i], order[j] = order[j], order[i]
        if _exact.bernoulli_exp(source, int(numerators[order[i]]), denominator):
            return order[i]
    order = np.array(order, dtype=np.int64)
    start = scalar_stop
    chunk = _PF_FIRST_CHUNK
    while start < m:
        stop = min(m, start + chunk)
        positions = np.arange(start, stop, dtype=np.int64)
        partners = positions + source.uniform_below_array(m - positions, positions.size)
        for i, j in zip(positions.tolist(), partners.tolist()):
            order[i], order[j] = order[j], order[i]
        visited = order[start:stop]
        accepted = np.flatnonzero(_batched.bernoulli_exp(source, numerators[visited], denominator))
        if accepted.size:
            return int(visited[int(accepted[0])])
        start = stop
        chunk = min(4 * chunk, 1 << 16)
    raise AssertionError("permute-and-flip accepts the best candidate with probability 1")


#: Permute-and-flip visits this many positions in Python integers, then draws
#: the rest of its random order in NumPy chunks growing from the next size.
_PF_SCALAR_STEPS = 48
_PF_FIRST_CHUNK = 256

"""The exponential mechanism with range-based scaling, sampled exactly.

Public: :class:`ExponentialMechanism`.  Also the pieces the other selection
mechanisms share: :class:`CandidateSet` (data-independent outcome set, scores
given as a sequence or a mapping) and :func:`selection_scale` (declared range
or sensitivity -> the divisor of epsilon * score).

See ``docs/mechanisms_selection.md`` for the derivations, the exactness
argument and the ballot example.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction

import numpy as np

from privloss.events import BoundedRange
from privloss.mechanisms._exact_choice import (ExactScores, exact_scores, float_at_least,
                                               log_weights, parse_epsilon, parse_positive,
                                               sample_index)
from privloss.mechanisms.base import Mechanism
from privloss.samplers.randomness import resolve_source

__all__ = ["ExponentialMechanism", "CandidateSet", "selection_scale"]


def selection_scale(score_range, sensitivity, *, allow_float: bool = False) -> tuple[Fraction, str]:
    """Return ``(scale, form)`` so that weights are ``exp(epsilon * u / scale)``.

    Exactly one of ``score_range`` (range-based scaling, Dong-Durfee-Rogers:
    ``scale = range``) and ``sensitivity`` (McSherry-Talwar:
    ``scale = 2 * sensitivity``) must be given.  Either way the mechanism is
    epsilon-bounded-range, because the range is at most twice the sensitivity.
    """
    if (score_range is None) == (sensitivity is None):
        raise ValueError("give exactly one of score_range (weights exp(epsilon*u/range)) and "
                         f"sensitivity (weights exp(epsilon*u/(2*sensitivity))); got "
                         f"score_range={score_range!r}, sensitivity={sensitivity!r}")
    if score_range is not None:
        return parse_positive("score_range", score_range, allow_float=allow_float), "range"
    return 2 * parse_positive("sensitivity", sensitivity, allow_float=allow_float), "sensitivity"


class CandidateSet:
    """The outcome set, fixed independently of the data.

    With ``candidates`` given, scores are a sequence aligned with it or a
    mapping whose keys are exactly the candidates, and outputs are candidates.
    Without, scores are a sequence and outputs are indices into it; the length
    of that sequence must then itself be data-independent (the caller's duty).
    """

    def __init__(self, candidates):
        if candidates is None:
            self.items = None
            self._index = None
            return
        if isinstance(candidates, (str, bytes, Mapping)) or not isinstance(
                candidates, (Sequence, np.ndarray, range)):
            raise TypeError(f"candidates must be a sequence, got {type(candidates).__name__}")
        items = tuple(candidates.tolist() if isinstance(candidates, np.ndarray) else candidates)
        if not items:
            raise ValueError("candidates must contain at least one outcome, got an empty sequence")
        index = {}
        for i, item in enumerate(items):
            if not isinstance(item, Hashable):
                raise TypeError(f"candidates[{i}] must be hashable, got {item!r}")
            if item in index:
                raise ValueError(f"candidates must be distinct; candidates[{i}] = {item!r} "
                                 f"repeats candidates[{index[item]}]")
            index[item] = i
        self.items = items
        self._index = index

    def __len__(self) -> int:
        return 0 if self.items is None else len(self.items)

    @property
    def declared(self) -> bool:
        return self.items is not None

    def scores(self, scores, *, allow_float: bool) -> ExactScores:
        """Validate ``scores`` against the candidates and make them exact."""
        if isinstance(scores, Mapping):
            if self.items is None:
                raise TypeError("scores given as a mapping need candidates declared at "
                                "construction (the outcome set must not come from the data)")
            missing = [c for c in self.items if c not in scores]
            extra = [key for key in scores if key not in self._index]
            if missing or extra:
                raise ValueError(f"scores must have exactly the declared candidates as keys; "
                                 f"missing {missing[:5]!r}, unexpected {extra[:5]!r}")
            ordered = [scores[c] for c in self.items]
            return exact_scores(ordered, allow_float=allow_float)
        exact = exact_scores(scores, allow_float=allow_float)
        if len(exact) == 0:
            raise ValueError("scores must contain at least one candidate, got an empty sequence")
        if self.items is not None and len(exact) != len(self.items):
            raise ValueError(f"scores must have one entry per candidate ({len(self.items)}), "
                             f"got {len(exact)}")
        return exact

    def output(self, index: int):
        return index if self.items is None else self.items[index]


class ExponentialMechanism(Mechanism):
    """Select one candidate with probability proportional to ``exp(epsilon u / scale)``.

    Definition
        Outcome set ``R`` fixed independently of the data, quality scores
        ``u(x, r)`` (higher is better).  Output ``r`` with probability
        ``exp(epsilon u(x, r) / scale) / sum_r' exp(epsilon u(x, r') / scale)``
        where ``scale = score_range`` (range-based scaling, Dong-Durfee-Rogers;
        Cesar-Rogers Definition 2.3) or ``scale = 2 * sensitivity``
        (McSherry-Talwar).  ``score_range`` is
        ``max over neighbours of [max_r (u(x,r) - u(x',r)) - min_r (u(x,r) - u(x',r))]``;
        it is at most ``2 * sensitivity``, and equals the sensitivity when all
        scores move in the same direction between neighbours (e.g. counts under
        add/remove of one user).
    Privacy guarantee
        ``BoundedRange(epsilon)`` (hence epsilon-DP and epsilon**2/8-zCDP),
        for the neighbour relation under which the declared range or
        sensitivity holds.  Proof: the log-ratio of the probabilities of ``r``
        under neighbours is ``epsilon (u(x,r) - u(x',r)) / scale`` minus a
        constant, so over ``r`` it varies by at most ``epsilon``.
        Exactness: scores and epsilon are exact rationals; the sample is drawn
        by rejection with exact Bernoulli(exp(-gamma)) acceptances
        (:mod:`._exact_choice`), so the output law is exactly the one above;
        no float is used.  Caveat: the running time depends on the scores
        (about ``|R| / sum_r exp(-epsilon (OPT - u_r) / scale)`` proposals).
    Utility
        ``P[u(x, M(x)) <= OPT - (scale/epsilon) (ln(|R|/|R_OPT|) + ln(1/beta))] <= beta``,
        see :meth:`utility_gap`.
    Citation
        F. McSherry, K. Talwar, "Mechanism Design via Differential Privacy",
        FOCS 2007; J. Dong, D. Durfee, R. Rogers, "Optimal Differential Privacy
        Composition for Exponential Mechanisms", ICML 2020; D. Durfee, R. Rogers,
        "Practical Differentially Private Top-k Selection with Pay-what-you-get
        Composition", NeurIPS 2019; C. Canonne, G. Kamath, T. Steinke, NeurIPS
        2020 (Algorithm 1).
    Runtime
        O(|R|) to read the scores, then ``|R|/Z`` proposals in expectation,
        ``1 <= |R|/Z <= |R|``, each O(1) expected work (vectorised in batches).

    Parameters: ``epsilon`` (rational >= 0; 0 gives the uniform choice),
    exactly one of ``score_range`` / ``sensitivity`` (positive rationals),
    ``candidates`` (optional data-independent outcomes), ``allow_float``
    (accept floats for the parameters and scores as their exact binary values).
    ``release(scores, source=None, budget=None)`` returns a candidate (or an
    index when no candidates were declared).
    """

    def __init__(self, epsilon, *, score_range=None, sensitivity=None, candidates=None,
                 allow_float: bool = False):
        self.epsilon = parse_epsilon(epsilon, allow_float=allow_float)
        self.scale, self.form = selection_scale(score_range, sensitivity, allow_float=allow_float)
        self.candidates = CandidateSet(candidates)
        self.allow_float = bool(allow_float)
        #: epsilon / scale: the weights are exp(rate * u)
        self.rate = self.epsilon / self.scale
        self._events = (BoundedRange(float_at_least(self.epsilon)),)

    def _release(self, scores, *, source=None):
        exact = self.candidates.scores(scores, allow_float=self.allow_float)
        src = resolve_source(source)
        return self.candidates.output(sample_index(log_weights(exact, self.rate), src))

    # -- reference values (floats; never used to decide an output) -----------

    def probabilities(self, scores) -> np.ndarray:
        """The output probabilities for ``scores`` (float64, log-sum-exp), aligned
        with the candidates; for tests, documentation and utility studies."""
        exact = self.candidates.scores(scores, allow_float=self.allow_float)
        weights = log_weights(exact, self.rate)
        gammas = np.array([float(Fraction(int(g), weights.denominator))
                           for g in weights.numerators.tolist()])
        shifted = np.exp(-gammas)  # max weight is exactly 1, so no overflow
        return shifted / shifted.sum()

    def utility_gap(self, beta, *, n_candidates: int | None = None, n_optimal: int = 1) -> float:
        """Gap ``g`` with ``P[u(M(x)) <= OPT - g] <= beta``:
        ``g = (scale/epsilon) (ln(n_candidates/n_optimal) + ln(1/beta))``.

        Proof: every candidate scoring ``<= OPT - g`` has probability at most
        ``exp(-epsilon g/scale) / n_optimal`` (the optimal ones alone contribute
        ``n_optimal`` to the normaliser relative to ``exp(epsilon OPT/scale)``);
        a union bound over at most ``n_candidates`` of them gives ``beta``.
        Returned rounded up (a larger gap is the safe side); ``inf`` for epsilon 0.
        """
        n_candidates, n_optimal = self._counts(n_candidates, n_optimal)
        beta = _check_beta(beta)
        if self.epsilon == 0:
            return math.inf
        log_term = math.log(n_candidates / n_optimal) + math.log(1.0 / beta)
        gap = float(self.scale / self.epsilon) * log_term
        return math.nextafter(gap * (1.0 + 1e-12), math.inf)

    def failure_probability(self, gap, *, n_candidates: int | None = None,
                            n_optimal: int = 1) -> float:
        """Upper bound ``min(1, (n_candidates/n_optimal) exp(-epsilon gap/scale))`` on
        ``P[u(M(x)) <= OPT - gap]`` (rounded up)."""
        n_candidates, n_optimal = self._counts(n_candidates, n_optimal)
        gap = float(gap)
        if math.isnan(gap) or gap < 0:
            raise ValueError(f"gap must be a non-negative number, got {gap!r}")
        log_bound = math.log(n_candidates / n_optimal) - float(self.epsilon / self.scale) * gap
        return min(1.0, math.nextafter(math.exp(log_bound) * (1.0 + 1e-12), math.inf))

    def _counts(self, n_candidates, n_optimal) -> tuple[int, int]:
        if n_candidates is None:
            if not self.candidates.declared:
                raise ValueError("n_candidates is required when no candidates were declared")
            n_candidates = len(self.candidates)
        if not _is_int(n_candidates) or n_candidates < 1:
            raise ValueError(f"n_candidates must be an integer >= 1, got {n_candidates!r}")
        if not _is_int(n_optimal) or not 1 <= n_optimal <= n_candidates:
            raise ValueError(f"n_optimal must be an integer in [1, {n_candidates}], "
                             f"got {n_optimal!r}")
        return int(n_candidates), int(n_optimal)

    def __repr__(self) -> str:
        name = "score_range" if self.form == "range" else "sensitivity"
        value = self.scale if self.form == "range" else self.scale / 2
        return f"ExponentialMechanism(epsilon={self.epsilon}, {name}={value})"


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_beta(beta) -> float:
    value = float(beta)
    if not 0 < value < 1:
        raise ValueError(f"beta must be a probability in (0, 1), got {beta!r}")
    return value

"""One-shot Gumbel top-k (Durfee-Rogers 2019), sampled exactly by peeling.

Public: :class:`GumbelTopK`.
"""

from __future__ import annotations

import numbers

import numpy as np

from privloss.events import BoundedRange
from privloss.mechanisms._exact_choice import (float_at_least, log_weights, parse_epsilon,
                                               sample_ordered)
from privloss.mechanisms.base import Mechanism
from privloss.mechanisms.exponential import CandidateSet, selection_scale
from privloss.samplers.randomness import resolve_source

__all__ = ["GumbelTopK"]


class GumbelTopK(Mechanism):
    """The ``k`` best candidates, in order, by one-shot Gumbel noise.

    Definition
        Add i.i.d. Gumbel noise with scale ``scale/epsilon`` to every score
        ``u(x, r)`` once and release the indices of the ``k`` largest noisy
        scores **in noisy order** (never the noisy values).  ``scale`` is the
        declared ``score_range`` (``Delta_inf`` for counts under add/remove of a
        user, ``2 Delta_inf`` under substitution) or ``2 * sensitivity``.
        By the Durfee-Rogers theorem this has exactly the law of ``k`` rounds of
        *peeling*: round ``j`` picks, among the candidates not yet chosen, ``r``
        with probability proportional to ``exp(epsilon u(x, r) / scale)``.
        This implementation samples the peeling form, exactly (one exact
        exponential-mechanism draw per round, :mod:`._exact_choice`); no Gumbel
        variate and no float is ever formed.  There is no float path.
    Privacy guarantee
        ``k`` adaptively composed ``BoundedRange(epsilon)`` steps: ``events`` is
        ``(BoundedRange(epsilon),) * k`` and ``event`` their ``Composed``, in
        order.  (Each round is an exponential mechanism on a data-independent
        candidate set given the earlier outputs.)  Hence ``k epsilon``-DP,
        ``k epsilon**2/8``-zCDP, or any BR composition bound.
    Citation
        D. Durfee, R. Rogers, "Practical Differentially Private Top-k Selection
        with Pay-what-you-get Composition", NeurIPS 2019 (arXiv:1905.04273);
        C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020 (Algorithm 1).
    Runtime
        ``k`` exact exponential-mechanism draws on ``d, d-1, ..., d-k+1``
        candidates: ``O(k d)`` array work plus at most ``d`` expected proposals
        per round (far fewer when the remaining scores are close).  The one-shot
        Gumbel form would use ``d`` noise draws, but only in real arithmetic.
        The running time depends on the scores (timing side channel).

    ``release(scores, source=None, budget=None)`` returns a list of ``k``
    candidates (indices when no candidates were declared), best first.
    """

    def __init__(self, epsilon, k, *, score_range=None, sensitivity=None, candidates=None,
                 allow_float: bool = False):
        if not isinstance(k, numbers.Integral) or isinstance(k, (bool, np.bool_)) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        self.k = int(k)
        self.epsilon = parse_epsilon(epsilon, allow_float=allow_float)
        self.scale, self.form = selection_scale(score_range, sensitivity, allow_float=allow_float)
        self.candidates = CandidateSet(candidates)
        if self.candidates.declared and self.k > len(self.candidates):
            raise ValueError(f"k must be at most the number of candidates "
                             f"({len(self.candidates)}), got {self.k}")
        self.allow_float = bool(allow_float)
        self.rate = self.epsilon / self.scale
        self._events = (BoundedRange(float_at_least(self.epsilon)),) * self.k

    def _release(self, scores, *, source=None):
        exact = self.candidates.scores(scores, allow_float=self.allow_float)
        if self.k > len(exact):
            raise ValueError(f"k must be at most the number of scores ({len(exact)}), "
                             f"got {self.k}")
        src = resolve_source(source)
        chosen = sample_ordered(log_weights(exact, self.rate), self.k, src)
        return [self.candidates.output(i) for i in chosen]

    def __repr__(self) -> str:
        name = "score_range" if self.form == "range" else "sensitivity"
        value = self.scale if self.form == "range" else self.scale / 2
        return f"GumbelTopK(epsilon={self.epsilon}, k={self.k}, {name}={value})"

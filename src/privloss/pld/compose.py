"""Heterogeneous composition of PLDs and the non-adaptive bounded-range supremum.

:func:`compose` self-composes repeated mechanisms by squaring and then merges
the results smallest-first (each FFT then costs about the size of its output).

Bounded range: an eps-BR mechanism is a post-processing of RR_{eps,t} for an
unknown t in [0, eps], and the worst t depends on the rest of the composition.
Two certified choices are offered:

* adaptive (always valid): :func:`privloss.pld.bounded_range_pld` with the
  full range, whose profile is the supremum over t of the RR_{eps,t} profiles
  (each step gets its own worst t; conservative for k > 1);
* non-adaptive with a common t (:func:`bounded_range_common_t_delta`): the
  supremum over one t shared by all BR mechanisms, bracketed by branch and
  bound over t-intervals. ``lower`` = the best RR_{eps,t} found (attained by a
  real mechanism), ``upper`` = max over the remaining intervals I of the
  composition that uses the dominating pair of {RR_{eps,t}: t in I} for every
  BR mechanism (valid for any t's inside I). The common-t restriction is
  exactly the worst case only where [CR] Lemma 4.4 applies (non-adaptive BR
  mechanisms of equal epsilon, possibly with pure eps-DP ones); for other
  mixtures it is the common-t supremum, an assumption the caller must accept.
"""

from __future__ import annotations

import heapq
import itertools

from privloss.bounds._numeric import Bracket, check_count, check_nonnegative, check_positive, check_probability
from privloss.pld.core import DEFAULT_STEP, DEFAULT_TAIL_MASS, PrivacyLossDistribution
from privloss.pld.mechanisms import bounded_range_pld


def compose(*items) -> PrivacyLossDistribution:
    """Compose PLDs of mechanisms run on the same neighbouring pair.

    Definition
        ``items``: PrivacyLossDistribution objects or ``(pld, count)`` pairs (a
        list of them is also accepted). The result is the PLD of the product.
    Privacy guarantee
        Certified bracket (see PrivacyLossDistribution); adaptive composition is
        covered when each PLD is a dominating pair of its mechanism.
    Citation
        Koskela et al. (2020); spec fdp.md §8.
    Runtime
        O(sum of n log n) over the merges; all PLDs must share one ``step``.
    """
    if len(items) == 1 and isinstance(items[0], list):
        items = tuple(items[0])
    if not items:
        raise ValueError("compose needs at least one PrivacyLossDistribution")
    parts = []
    for position, item in enumerate(items):
        if _is_pair(item):
            pld, count = item
            count = check_count(f"items[{position}] count", count)
        else:
            pld, count = item, 1
        if not isinstance(pld, PrivacyLossDistribution):
            raise TypeError(f"items[{position}] must be a PrivacyLossDistribution or (pld, count), "
                            f"got {type(pld).__name__}")
        parts.append(pld.self_compose(count))
    steps = {pld.step for pld in parts}
    if len(steps) > 1:
        raise ValueError(f"all PLDs must use the same step, got {sorted(steps)}")
    tie = itertools.count()
    heap = [(pld.grid_points, next(tie), pld) for pld in parts]
    heapq.heapify(heap)
    while len(heap) > 1:
        _, _, first = heapq.heappop(heap)
        _, _, second = heapq.heappop(heap)
        merged = first.compose(second)
        heapq.heappush(heap, (merged.grid_points, next(tie), merged))
    return heap[0][2]


def _is_pair(item) -> bool:
    return (isinstance(item, tuple) and len(item) == 2
            and isinstance(item[0], PrivacyLossDistribution))


def _composition(epsilon, t_low, t_high, count, others, step, tail_mass):
    br = bounded_range_pld(epsilon, t_range=(t_low, t_high), step=step, tail_mass=tail_mass)
    pld = br.self_compose(count)
    return pld if others is None else pld.compose(others)


def _branch_and_bound(value, epsilon, count, others, step, tail_mass, pieces, rounds, tolerance):
    """Bracket of sup over a common t of ``value(pld)`` (a Bracket-valued function)."""
    symmetric = others is None or others.symmetric
    # reversing the pair maps t to eps - t, so with symmetric companions half the range suffices
    top = 0.5 * epsilon if symmetric else epsilon
    intervals = [(top * i / pieces, top * (i + 1) / pieces) for i in range(pieces)]
    best_lower = 0.0
    parked = 0.0            # largest upper bound of intervals that were not refined
    for round_number in range(rounds + 1):
        scored = []
        for low, high in intervals:
            middle = 0.5 * (low + high)
            point = value(_composition(epsilon, middle, middle, count, others, step, tail_mass))
            best_lower = max(best_lower, point.lower)
            upper = value(_composition(epsilon, low, high, count, others, step, tail_mass)).upper
            scored.append((upper, low, high))
        live = sorted((item for item in scored if item[0] > best_lower), reverse=True)
        best_upper = max([parked] + [item[0] for item in live])
        done = best_upper - best_lower <= tolerance * max(best_upper, 1e-300)
        if done or not live or round_number == rounds:
            break
        refine = max(2, pieces // 2)
        parked = max([parked] + [item[0] for item in live[refine:]])
        intervals = []
        for _, low, high in live[:refine]:
            middle = 0.5 * (low + high)
            intervals += [(low, middle), (middle, high)]
    return Bracket(best_lower, max(best_upper, best_lower))


def bounded_range_common_t_delta(epsilon: float, count: int, epsilon_g: float, *,
                                 others: PrivacyLossDistribution | None = None,
                                 pieces: int = 8, rounds: int = 6, tolerance: float = 1e-3,
                                 step: float = DEFAULT_STEP,
                                 tail_mass: float = DEFAULT_TAIL_MASS) -> Bracket:
    """sup over a common t of delta(epsilon_g) for ``count`` eps-BR mechanisms (+ ``others``).

    Definition
        sup_{t in [0, eps]} delta_{RR_{eps,t}^count x others}(epsilon_g), bracketed
        by branch and bound over t-intervals (module docstring).
    Privacy guarantee
        ``upper`` is a valid bound for any BR parameters t_i sharing one interval
        of the final partition, hence for a common t; it equals the non-adaptive
        optimum over *all* t-vectors where [CR] Lemma 4.4 applies (BR mechanisms
        of one epsilon, optionally with pure DP ones). Not valid for adaptive
        composition: use ``bounded_range_pld`` there.
    Citation
        [CR] Lemma 4.4 and Theorem 3; DDR Theorem 3.
    Runtime
        O(pieces x rounds) compositions.
    """
    eps = check_positive("epsilon", epsilon)
    k = check_count("count", count)
    eg = check_nonnegative("epsilon_g", epsilon_g)
    pieces = check_count("pieces", pieces)
    rounds = check_count("rounds", rounds, minimum=0)
    return _branch_and_bound(lambda pld: pld.delta(eg), eps, k, others, step, tail_mass,
                             pieces, rounds, tolerance)


def bounded_range_common_t_epsilon(epsilon: float, count: int, delta: float, *,
                                   others: PrivacyLossDistribution | None = None,
                                   pieces: int = 8, rounds: int = 6, tolerance: float = 1e-4,
                                   step: float = DEFAULT_STEP,
                                   tail_mass: float = DEFAULT_TAIL_MASS) -> Bracket:
    """sup over a common t of epsilon(delta) (see :func:`bounded_range_common_t_delta`)."""
    eps = check_positive("epsilon", epsilon)
    k = check_count("count", count)
    target = check_probability("delta", delta)
    pieces = check_count("pieces", pieces)
    rounds = check_count("rounds", rounds, minimum=0)
    return _branch_and_bound(lambda pld: pld.epsilon(target), eps, k, others, step, tail_mass,
                             pieces, rounds, tolerance)

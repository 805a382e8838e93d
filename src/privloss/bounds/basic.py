"""Basic and parallel composition, and group privacy."""

from __future__ import annotations

import math

import numpy as np

from privloss._exact import sum_upper
from privloss.bounds._numeric import (check_count, check_epsilon_list, check_nonnegative,
                                      check_probability, round_up, safe_delta)


def _deltas_like(deltas, epsilons: np.ndarray) -> np.ndarray:
    if deltas is None:
        return np.zeros_like(epsilons)
    arr = np.asarray(deltas, dtype=float).reshape(-1)
    if arr.shape != epsilons.shape:
        raise ValueError(f"deltas must have one entry per epsilon ({epsilons.size}), got {arr.size}")
    bad = ~(arr >= 0) | ~(arr <= 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"deltas[{i}] must be in [0, 1], got {arr[i]!r}")
    return arr


def basic_epsilon(epsilons, target_delta: float, *, deltas=None) -> float:
    """Epsilon of basic composition: sum of epsilons, if the deltas fit.

    Theorem: basic composition [DMNS06, DKMMN06] (composition.md §7.1).
    Assumptions: adaptive composition of (epsilon_i, delta_i)-DP mechanisms,
    heterogeneous; also valid for privacy filters (parameters chosen adaptively,
    Rogers et al. 2016).
    Guarantee: the smallest binary64 number >= the exact sum of the (binary64)
    epsilons, so that a budget comparison with it is exact; ``inf`` when the
    exact ``sum(deltas) > target_delta``.
    Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    target = check_probability("target_delta", target_delta)
    dels = _deltas_like(deltas, eps)
    if sum_upper(dels) > target:
        return math.inf
    return sum_upper(eps)


def basic_delta(epsilons, epsilon_g: float, *, deltas=None) -> float:
    """Delta of basic composition at ``epsilon_g``: sum of deltas if
    ``epsilon_g >= sum(epsilons)``, else the trivial 1.

    Theorem: basic composition (composition.md §7.1). Assumptions as
    :func:`basic_epsilon`. Guarantee: valid upper bound. Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    dels = _deltas_like(deltas, eps)
    if eg >= sum_upper(eps):
        return min(1.0, sum_upper(dels))
    return 1.0


def parallel_composition(epsilons, *, deltas=None) -> tuple[float, float]:
    """(epsilon, delta) of mechanisms run on disjoint partitions of the data.

    Theorem: parallel composition [McSherry 2009, PINQ].
    Assumptions: each user's data lies in exactly one partition (add/remove
    neighbours), the partitioning does not depend on private data, and each
    partition's mechanism is (epsilon_i, delta_i)-DP; any interaction.
    Guarantee: ``(max epsilon_i, max delta_i)``, a valid bound.
    Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    dels = _deltas_like(deltas, eps)
    return float(eps.max()), float(dels.max())


def group_privacy(epsilon: float, delta: float, group_size: int) -> tuple[float, float]:
    """Guarantee of an (epsilon, delta)-DP mechanism for groups of ``group_size`` users.

    Theorem: group privacy [Dwork–Roth 2014, Thm 2.2; Vadhan 2017, Lemma 2.2]:
    (g epsilon, g e^{(g-1) epsilon} delta)-DP; pure DP: g epsilon.
    Assumptions: neighbouring datasets differ in up to g users.
    Guarantee: valid upper bound; delta clipped at 1.
    Runtime: O(1).
    """
    eps = check_nonnegative("epsilon", epsilon)
    d = check_probability("delta", delta)
    g = check_count("group_size", group_size)
    if d == 0:
        return round_up(g * eps), 0.0
    log_delta = math.log(g) + (g - 1) * eps + math.log(d)
    return round_up(g * eps), 1.0 if log_delta >= 0 else safe_delta(math.exp(log_delta))

"""Set-wise adaptive composition of DP, BR and CDP/zCDP mechanisms
([CR] Section 3: eq. (3), Lemma 3.4) and DDR's efficient adaptive BR bound."""

from __future__ import annotations

import math

import numpy as np

from privloss.bounds._numeric import (certify_epsilon, check_epsilon_list, check_nonnegative,
                                      check_probability, round_up, safe_delta)


def mean_loss_dp(epsilon):
    """Largest expected privacy loss of an epsilon-DP mechanism: eps tanh(eps/2) [KOV]."""
    epsilon = np.asarray(epsilon, dtype=float)
    return epsilon * np.tanh(epsilon / 2.0)


def mean_loss_br(epsilon):
    """Largest expected privacy loss of an epsilon-BR mechanism [DDR]:
    r - 1 - log r with r = eps / (1 - e^-eps) ([CR] Lemma 3.2); 0 at eps = 0."""
    epsilon = np.asarray(epsilon, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(epsilon > 0, epsilon / -np.expm1(-np.where(epsilon > 0, epsilon, 1.0)), 1.0)
        # r - 1 - log r, accurate near r = 1 via log1p
        value = (r - 1.0) - np.log1p(r - 1.0)
    return np.where(epsilon > 0, value, 0.0)


def _as_list(name, values):
    if values is None or len(values) == 0:
        return np.zeros(0)
    return check_epsilon_list(name, values)


def _cdp_pairs(cdp, zcdp):
    """(mu, tau) arrays from CDP pairs and (xi, rho) zCDP pairs -> (xi+rho, sqrt(2 rho))."""
    mus, taus = [], []
    for index, (mu, tau) in enumerate(cdp or ()):
        mus.append(check_nonnegative(f"cdp[{index}].mu", mu))
        taus.append(check_nonnegative(f"cdp[{index}].tau", tau))
    for index, (xi, rho) in enumerate(zcdp or ()):
        xi = check_nonnegative(f"zcdp[{index}].xi", xi)
        rho = check_nonnegative(f"zcdp[{index}].rho", rho)
        mus.append(xi + rho)
        taus.append(math.sqrt(2.0 * rho))
    return np.asarray(mus, dtype=float), np.asarray(taus, dtype=float)


def _mean_and_variance(dp_epsilons, br_epsilons, cdp, zcdp) -> tuple[float, float]:
    dp = _as_list("dp_epsilons", dp_epsilons)
    br = _as_list("br_epsilons", br_epsilons)
    mus, taus = _cdp_pairs(cdp, zcdp)
    mean = math.fsum(mean_loss_dp(dp)) + math.fsum(mean_loss_br(br)) + math.fsum(mus)
    with np.errstate(over="ignore"):    # epsilon ~ 1e154+: inf, the safe value
        variance = math.fsum(dp * dp) + 0.25 * math.fsum(br * br) + math.fsum(taus * taus)
    return mean, variance


def setwise_epsilon(target_delta: float, *, dp_epsilons=(), br_epsilons=(), cdp=(), zcdp=()) -> float:
    """Epsilon of [CR] eq. (3) for a preregistered set of DP, BR and CDP mechanisms.

    Theorem: [CR] eq. (3) (Lemmas 3.1-3.3; composition.md §2):
    eps_g = sum mu_DP(eps_i) + sum mu_BR(eps_j) + sum mu_l
            + sqrt(2 log(1/delta) (sum eps_i^2 + sum eps_j^2 / 4 + sum tau_l^2)).
    A (xi, rho)-zCDP mechanism enters as (mu, tau) = (xi + rho, sqrt(2 rho)).
    Assumptions: set-wise adaptive (parameters preregistered as a multiset, the
    class and parameter of each round chosen adaptively); hence also adaptive
    and non-adaptive. Heterogeneous.
    Guarantee: valid upper bound (not optimal). It is not capped at the sum
    of pure epsilons; basic composition is a separate bound.
    Runtime: O(k).
    """
    target = check_probability("target_delta", target_delta)
    mean, variance = _mean_and_variance(dp_epsilons, br_epsilons, cdp, zcdp)
    if variance == 0:
        return round_up(mean)
    if target >= 1:
        return 0.0
    if target == 0:
        return math.inf
    closed_form = round_up(mean + math.sqrt(2.0 * -math.log(target) * variance))
    # both directions are rounded up independently; nudge so that setwise_delta
    # confirms the result (one evaluation unless the two roundings disagree)
    return certify_epsilon(lambda e: _delta_from(e, mean, variance), target, closed_form)


def _delta_from(eg: float, mean: float, variance: float) -> float:
    if eg <= mean:
        return 1.0 if (eg < mean or variance > 0) else 0.0
    if variance == 0 or math.isinf(eg):
        return 0.0
    return safe_delta(math.exp(-((eg - mean) ** 2) / (2.0 * variance)))


def setwise_delta(epsilon_g: float, *, dp_epsilons=(), br_epsilons=(), cdp=(), zcdp=()) -> float:
    """Delta of [CR] eq. (3) at ``epsilon_g``: exp(-(eps_g - mean)^2 / (2 variance)).

    Theorem, assumptions: as :func:`setwise_epsilon`. Guarantee: valid upper
    bound in [0, 1]. Runtime: O(k).
    """
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    mean, variance = _mean_and_variance(dp_epsilons, br_epsilons, cdp, zcdp)
    return _delta_from(eg, mean, variance)


def ddr_adaptive_br_epsilon(epsilons, target_delta: float) -> float:
    """Epsilon of DDR's efficiently computable bound for adaptive BR composition.

    Theorem: [DDR] Corollary 3.1 (arXiv) = Proposition 4 (ICML), composition.md §7.5:
    min{ sum eps_i, sum mu_BR(eps_i) + sqrt(log(1/delta)/2 * sum eps_i^2) }
    (the all-BR case of [CR] eq. (3)).
    Assumptions: adaptive (and set-wise), heterogeneous epsilon_i-BR mechanisms.
    Guarantee: valid upper bound. Runtime: O(k).
    """
    eps = check_epsilon_list("epsilons", epsilons)
    return min(round_up(math.fsum(eps)), setwise_epsilon(target_delta, br_epsilons=eps))


def ddr_adaptive_br_delta(epsilons, epsilon_g: float) -> float:
    """Delta of :func:`ddr_adaptive_br_epsilon` at ``epsilon_g`` (0 past the sum)."""
    eps = check_epsilon_list("epsilons", epsilons)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    if eg >= round_up(math.fsum(eps)):
        return 0.0
    return setwise_delta(eg, br_epsilons=eps)


def approx_zcdp_setwise_epsilon(target_delta: float, rhos, deltas, *, xis=None) -> float:
    """Epsilon of [CR] Lemma 3.4: set-wise composition of approximate zCDP.

    Theorem: [CR] Lemma 3.4 with the conservative union-bound delta term
    (composition.md §2, reconstructed): preregistered delta_i-approximately
    (xi_i, rho_i)-zCDP mechanisms are (xi + rho + 2 sqrt(rho log(1/delta')),
    delta' + sum delta_i)-DP with xi = sum xi_i, rho = sum rho_i.
    Assumptions: set-wise adaptive (so also adaptive, non-adaptive); heterogeneous.
    Guarantee: valid upper bound with delta' = target_delta - sum delta_i;
    ``inf`` if that is not positive (and rho > 0).
    Runtime: O(k).
    """
    target = check_probability("target_delta", target_delta)
    rho_arr = check_epsilon_list("rhos", rhos)
    del_arr = np.asarray(deltas, dtype=float).reshape(-1)
    if del_arr.shape != rho_arr.shape or not np.all((del_arr >= 0) & (del_arr < 1)):
        raise ValueError("deltas must give one value in [0, 1) per rho")
    xi_arr = np.zeros_like(rho_arr) if xis is None else check_epsilon_list("xis", xis)
    rho = math.fsum(rho_arr)
    xi = math.fsum(xi_arr)
    slack = target - math.fsum(del_arr)
    if rho == 0:
        return round_up(xi) if slack >= 0 else math.inf
    if slack <= 0:
        return math.inf
    if slack >= 1:
        return round_up(xi)
    return round_up(xi + rho + 2.0 * math.sqrt(rho * -math.log(slack)))


def approx_zcdp_setwise_delta(epsilon_g: float, rhos, deltas, *, xis=None) -> float:
    """Delta of [CR] Lemma 3.4 at ``epsilon_g``: exp(-(eps_g - xi - rho)^2 / (4 rho))
    + sum delta_i (1 if eps_g <= xi + rho). Theorem, assumptions: as
    :func:`approx_zcdp_setwise_epsilon`. Guarantee: valid upper bound in [0, 1].
    """
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    rho_arr = check_epsilon_list("rhos", rhos)
    del_arr = np.asarray(deltas, dtype=float).reshape(-1)
    if del_arr.shape != rho_arr.shape or not np.all((del_arr >= 0) & (del_arr < 1)):
        raise ValueError("deltas must give one value in [0, 1) per rho")
    xi = 0.0 if xis is None else math.fsum(check_epsilon_list("xis", xis))
    rho = math.fsum(rho_arr)
    conditioned = math.fsum(del_arr)
    if rho == 0:
        base = 0.0 if eg >= xi else 1.0
    elif eg <= xi + rho:
        base = 1.0
    elif math.isinf(eg):
        base = 0.0
    else:
        base = math.exp(-((eg - xi - rho) ** 2) / (4.0 * rho))
    return safe_delta(base + conditioned)

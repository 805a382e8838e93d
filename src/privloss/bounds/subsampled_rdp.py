"""Renyi-DP curves of subsampled Gaussian mechanisms and the Renyi route that uses them.

Definition
    RDP of order alpha: D_alpha(M(D) || M(D')) <= R(alpha) for all neighbours.
    A Gaussian with sensitivity s and noise sigma has R(alpha) = alpha rho,
    rho = s^2 / (2 sigma^2) (a discrete Gaussian too, [CKS] Prop. 5 / zCDP).
Theorems used
    * Poisson subsampling, add/remove neighbours, continuous Gaussian, integer
      alpha >= 2 [Mironov, Talwar, Zhang 2019, Thm 4 / eq. (3); = Zhu–Wang 2019 Thm 6
      with equality]: R(alpha) = log A_alpha / (alpha - 1),
      A_alpha = sum_k C(alpha, k) (1-q)^{alpha-k} q^k e^{(k^2 - k) rho}.
    * Poisson subsampling of any mechanism with RDP alpha rho in both directions
      (here: the discrete Gaussian) [Zhu–Wang 2019, Thm 6, general bound]:
      A_alpha <= (1-q)^{alpha-1} (alpha q - q + 1) + C(alpha, 2) q^2 (1-q)^{alpha-2} e^{2 rho}
      + 3 sum_{l>=3} C(alpha, l) (1-q)^{alpha-l} q^l e^{(l-1) l rho}.
    * Sampling m of n without replacement, replace-one neighbours (gamma = m/n)
      [Wang, Balle, Kasiviswanathan 2019, Thm 9 with eps(inf) = inf]:
      R(alpha) <= log(1 + gamma^2 C(alpha,2) min(4 (e^{eps(2)} - 1), 2 e^{eps(2)})
      + sum_{j>=3} gamma^j C(alpha, j) 2 e^{(j-1) eps(j)}) / (alpha - 1), eps(j) = j rho.
      (dp-accounting uses a tighter Gaussian-specific refinement of the j >= 3 terms,
      WBK Thm 27; this one is never below it.)
    * Fractional orders: (alpha - 1) R(alpha) is convex in alpha (a cumulant
      generating function), so the chord between consecutive integer orders bounds it
      [WBK Cor. 10].
    * Composition adds curves [Mironov 2017, Prop. 1] (adaptive; set-wise, the sum
      does not depend on the order); conversion to (eps, delta) by
      delta = e^{(a-1)(R(a) - eps)} / a (1 - 1/a)^{a-1} [CKS Prop. 12; Balle et al. 2020],
      the same as dp-accounting's RDP accountant. Minimising over a fixed grid of
      orders only loses tightness.
Numerics
    Log-space sums of positive terms (logsumexp); every curve value is rounded up by
    a relative 1e-12 plus a few ulps of its largest term.
"""

from __future__ import annotations

import math

import numpy as np

from privloss.bounds._numeric import log_binomial, round_up, safe_delta

#: orders of the Renyi route: integers 2..256, a few large ones, and half-integers
#: 2.5..31.5 (bounded through the convex chord of the integer orders)
INTEGER_ORDERS = np.concatenate((np.arange(2, 257), [320, 384, 512, 768, 1024])).astype(float)
HALF_ORDERS = np.arange(2.5, 32.0, 1.0)
ORDERS = np.sort(np.concatenate((INTEGER_ORDERS, HALF_ORDERS)))

_SLACK = 1e-12


def _logsumexp(values: np.ndarray) -> float:
    top = float(np.max(values))
    if not math.isfinite(top):
        return top
    return top + math.log(math.fsum(np.exp(values - top)))


def _log_a_poisson(q: float, rho: float, alpha: int, general: bool) -> float:
    """log A_alpha of the Poisson-subsampled Gaussian (``general``: Zhu–Wang's bound)."""
    k = np.arange(alpha + 1, dtype=float)
    with np.errstate(divide="ignore"):
        log_1mq = math.log1p(-q) if q < 1 else -math.inf
        terms = log_binomial(alpha, k) + k * math.log(q) + (alpha - k) * log_1mq \
            + (k * k - k) * rho
    if q == 1:
        terms = np.where(k == alpha, terms, -np.inf)
    if general and alpha >= 3:
        terms[3:] += math.log(3.0)
    return _logsumexp(terms)


def _log_a_without_replacement(gamma: float, rho: float, alpha: int) -> float:
    """log of WBK Thm 9's bracket (1 + ...) for the Gaussian (eps(j) = j rho)."""
    if gamma == 1:
        return (alpha - 1) * alpha * rho
    eps2 = 2.0 * rho
    second = 2 * math.log(gamma) + float(log_binomial(alpha, 2)) + min(
        math.log(4.0) + math.log(math.expm1(eps2)) if eps2 > 0 else -math.inf,
        math.log(2.0) + eps2)
    j = np.arange(3, alpha + 1, dtype=float)
    rest = j * math.log(gamma) + log_binomial(alpha, j) + math.log(2.0) + (j - 1) * j * rho
    return _logsumexp(np.concatenate(([0.0, second], rest)))


def subsampled_gaussian_rdp(rho: float, probability: float, *, kind: str,
                            orders: np.ndarray = ORDERS) -> np.ndarray:
    """RDP curve (upper bound, rounded up) of one subsampled Gaussian on ``orders``.

    Definition
        ``kind``: "poisson" (add/remove; continuous Gaussian, MTZ exact),
        "poisson-general" (add/remove; any mechanism with RDP alpha rho both ways,
        Zhu–Wang general bound: the discrete Gaussian), "without-replacement"
        (replace-one; WBK Thm 9). ``rho`` = s^2 / (2 sigma^2); ``probability`` = q or m/n.
    Privacy guarantee
        At every order, an upper bound on the subsampled mechanism's Renyi divergence
        (module docstring); at q = 1 it is alpha rho, the Gaussian's own curve.
    Citation
        Mironov–Talwar–Zhang 2019; Zhu–Wang 2019; Wang–Balle–Kasiviswanathan 2019.
    Runtime
        O(sum of the integer orders) (about 0.1 M terms for the default grid).
    """
    if kind not in ("poisson", "poisson-general", "without-replacement"):
        raise ValueError(f"kind must be 'poisson', 'poisson-general' or 'without-replacement', "
                         f"got {kind!r}")
    q = float(probability)
    if not 0 < q <= 1:
        raise ValueError(f"probability must be in (0, 1], got {probability!r}")
    if rho == 0:
        return np.zeros(len(orders))
    integers = sorted({int(math.floor(a)) for a in orders} | {int(math.ceil(a)) for a in orders})
    cgf = {}
    for alpha in integers:
        if alpha < 2:
            cgf[alpha] = 0.0
            continue
        if q == 1:
            value = (alpha - 1) * alpha * rho
        elif kind == "without-replacement":
            value = _log_a_without_replacement(q, rho, alpha)
        else:
            value = _log_a_poisson(q, rho, alpha, kind == "poisson-general")
        # never above the unsubsampled curve (joint convexity); round up
        value = min(value, (alpha - 1) * alpha * rho)
        cgf[alpha] = value * (1 + _SLACK) + 64 * 2.0 ** -53 * alpha * alpha * rho + 1e-300
    out = np.empty(len(orders))
    for index, alpha in enumerate(orders):
        low, high = int(math.floor(alpha)), int(math.ceil(alpha))
        if low == high:
            value = cgf[low]
        else:
            t = alpha - low
            value = (1 - t) * cgf[low] + t * cgf[high]
        out[index] = value / (alpha - 1.0)
    return out


def epsilon_from_curve(curve: np.ndarray, target_delta: float, *,
                       orders: np.ndarray = ORDERS) -> float:
    """min over orders of R(a) + (log(1/delta) + (a-1) log(1 - 1/a) - log a)/(a - 1), rounded up."""
    if target_delta >= 1:
        return 0.0
    if target_delta <= 0:
        return math.inf
    log_inv = -math.log(target_delta)
    values = curve + (log_inv + (orders - 1.0) * np.log1p(-1.0 / orders) - np.log(orders)) \
        / (orders - 1.0)
    best = float(np.min(values))
    return round_up(max(best, 0.0)) if math.isfinite(best) else math.inf


def delta_from_curve(curve: np.ndarray, target_epsilon: float, *,
                     orders: np.ndarray = ORDERS) -> float:
    """min over orders of e^{(a-1)(R(a) - eps)} / a (1 - 1/a)^{a-1}, rounded up, at most 1."""
    if math.isinf(target_epsilon):
        return 0.0
    log_delta = (orders - 1.0) * (curve - target_epsilon) - np.log(orders) \
        + (orders - 1.0) * np.log1p(-1.0 / orders)
    best = float(np.min(log_delta))
    return 1.0 if best >= 0 else safe_delta(math.exp(best))


def pure_curve(dp_epsilons=(), br_epsilons=(), *, orders: np.ndarray = ORDERS) -> np.ndarray:
    """Sum of the exact worst-case Renyi curves of pure-DP and BR mechanisms on ``orders``
    (:func:`privloss.bounds.rdp.dp_renyi` and ``br_renyi``), grouped by value."""
    from privloss.bounds.rdp import br_renyi, dp_renyi

    out = np.zeros(len(orders))
    for values, curve in ((dp_epsilons, dp_renyi), (br_epsilons, br_renyi)):
        array = np.asarray(values, dtype=float).reshape(-1)
        if not array.size:
            continue
        unique, counts = np.unique(array, return_counts=True)
        for epsilon, count in zip(unique.tolist(), counts.tolist()):
            out += count * np.array([curve(epsilon, float(a)) for a in orders])
    return out * (1 + _SLACK)

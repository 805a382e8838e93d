"""Gaussian differential privacy (mu-GDP): conversions and composition.

Definition
    M is mu-GDP if T(M(D), M(D')) >= G_mu for all neighbours, G_mu = T(N(0,1), N(mu,1))
    [DRS Def. 2.6]. The Gaussian mechanism with l2-sensitivity Delta and noise
    s.d. sigma is exactly (Delta/sigma)-GDP.
Results used (spec fdp.md §4)
    * composition: mu = sqrt(sum mu_i^2), adaptive and tight [DRS Cor. 3.3];
    * exact profile: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
      [DRS Cor. 2.13] (= [CR] Lemma 6.1 with mu = Delta/sigma);
    * pure eps-DP implies mu*-GDP with mu* = 2 Phi^{-1}(e^eps/(1+e^eps)), the
      smallest such mu [derived in the spec; checked numerically in the tests];
    * (eps, delta)-DP with delta > 0 implies no finite mu (f(0) = 1 - delta < 1).
All values are rounded in the safe direction (delta up, epsilon up, the mu that
*guarantees* a target (eps, delta) down, the mu implied by pure DP up).
"""

from __future__ import annotations

import math

from scipy.special import ndtri

from privloss.bounds._numeric import (check_nonnegative, check_positive, check_probability,
                                      round_up)
from privloss.bounds.gaussian import (analytic_gaussian_delta, analytic_gaussian_epsilon,
                                      analytic_gaussian_sigma)


def gdp_delta(mu: float, epsilon: float) -> float:
    """Exact delta(epsilon) of a mu-GDP mechanism (rounded up).

    Definition
        delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2); 0 for mu = 0.
    Privacy guarantee
        mu-GDP holds iff (eps, delta(eps))-DP holds for every eps >= 0.
    Citation
        [DRS] Cor. 2.13; spec fdp.md §4.
    Runtime
        O(1), log space.
    """
    m = check_nonnegative("mu", mu)
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if m == 0 or math.isinf(eps):
        return 0.0
    if math.isinf(m):
        return 1.0
    return analytic_gaussian_delta(1.0, eps, sensitivity=m)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with gdp_delta(mu, epsilon) <= delta (re-checked; inf if delta = 0).

    Citation
        [DRS] Cor. 2.13; bracketed bisection as spec fdp.md §4.
    Runtime
        O(log(1/tol)).
    """
    m = check_nonnegative("mu", mu)
    d = check_probability("delta", delta)
    if m == 0 or d >= 1:
        return 0.0
    if math.isinf(m):
        return math.inf
    return analytic_gaussian_epsilon(1.0, d, sensitivity=m)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu (up to 1e-12 relative, rounded down) such that mu-GDP implies (eps, delta)-DP.

    Definition
        The root in mu of gdp_delta(mu, eps) = delta (increasing in mu).
    Privacy guarantee
        Any mechanism that is mu'-GDP with mu' <= the result is (eps, delta)-DP.
    Citation
        [DRS] Cor. 2.13; equals Delta / (analytic Gaussian sigma) ([CR] Lemma 6.1).
    Runtime
        O(log(1/tol)).
    """
    eps = check_nonnegative("epsilon", epsilon)
    d = check_probability("delta", delta, open_lower=True, closed_upper=False)
    return 1.0 / analytic_gaussian_sigma(eps, d, sensitivity=1.0)


def compose_gdp(mus) -> float:
    """mu of the (adaptive) composition of mu_i-GDP mechanisms: sqrt(sum mu_i^2), rounded up.

    Citation
        [DRS] Cor. 3.3 (G_mu1 (x) ... (x) G_muk = G_sqrt(sum mu_i^2)).
    """
    values = [check_nonnegative(f"mus[{i}]", value, allow_inf=True) for i, value in enumerate(mus)]
    if not values:
        raise ValueError("mus must contain at least one mu")
    if any(math.isinf(v) for v in values):
        return math.inf
    return round_up(math.sqrt(math.fsum(v * v for v in values)))


def gaussian_mechanism_mu(sigma: float, *, sensitivity: float = 1.0) -> float:
    """mu = Delta / sigma of the Gaussian mechanism (exact GDP parameter), rounded up."""
    s = check_positive("sigma", sigma)
    delta = check_positive("sensitivity", sensitivity)
    return round_up(delta / s)


def pure_dp_mu(epsilon: float) -> float:
    """Smallest mu such that every epsilon-DP mechanism is mu-GDP: 2 Phi^{-1}(e^eps/(1+e^eps)).

    Definition
        G_mu <= f_{eps,0} iff it holds at the kink alpha = 1/(1+e^eps) of the
        randomized-response curve (both curves convex and symmetric).
    Privacy guarantee
        Rounded up, so the returned mu is always valid.
    Citation
        Spec fdp.md §4 [derived]; worked_values §7 (eps = 1 -> 1.2320353853).
    Runtime
        O(1).
    """
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    if math.isinf(eps):
        return math.inf
    # Phi^{-1}(e^eps/(1+e^eps)) = -Phi^{-1}(1/(1+e^eps)), accurate for large eps
    tail = math.exp(-math.log1p(math.exp(eps))) if eps < 700 else 0.0
    if tail == 0.0:
        return math.inf
    return round_up(-2.0 * float(ndtri(tail)), relative=1e-13)

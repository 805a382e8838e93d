"""Privacy-loss distributions of the standard mechanisms (certified brackets).

Every constructor takes the mechanism's parameters, then keyword-only ``step``
(grid step of the loss axis) and ``tail_mass`` (mass that may be cut from each
tail, on the safe side), and returns a
:class:`~privloss.pld.core.PrivacyLossDistribution`. The losses are written
for the pair (P, Q) = (M(D), M(D')) with L = log(P/Q) under P (spec fdp.md §8);
for asymmetric mechanisms the reverse pair is included automatically.

Grid alignment: atoms that fall on grid points are represented exactly on
both sides of the bracket. When composing mechanisms with atoms (randomized
response, Laplace, pure DP) pick ``step`` so that their epsilons are integer
multiples of it (e.g. ``step = 1e-3`` for epsilon = 0.1, 1, 2.5); otherwise the
optimistic side loses up to one step per atom and the bracket is wider.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from privloss.bounds._numeric import check_nonnegative, check_positive, check_probability
from privloss.pld._spec import (ExpTiltPart, GaussianPart, LossSpec, _normal_interval, atoms,
                                gaussian_cut)
from privloss.pld.core import DEFAULT_STEP, DEFAULT_TAIL_MASS, PrivacyLossDistribution, check_tail_mass
from privloss.pld._law import MAX_GRID_POINTS, GridTooLargeError

_U = 2.0 ** -53


def _build(spec: LossSpec, reverse: LossSpec | None, step, tail_mass, description: str):
    return PrivacyLossDistribution.from_spec(spec, reverse, step=step, tail_mass=tail_mass,
                                             description=description)


def _check_integer(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


# ----------------------------------------------------------------------
# two-point and atom-only mechanisms
# ----------------------------------------------------------------------

def _rr_spec(epsilon: float) -> LossSpec:
    """Loss +eps w.p. e^eps/(1+e^eps), -eps otherwise (symmetric)."""
    high = math.exp(-math.log1p(math.exp(-epsilon)))          # e^eps / (1 + e^eps)
    low = math.exp(-epsilon - math.log1p(math.exp(-epsilon)))  # 1 / (1 + e^eps)
    return LossSpec(*atoms([epsilon, -epsilon], [high, low]))


def randomized_response_pld(epsilon: float, *, step: float = DEFAULT_STEP,
                            tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of binary randomized response.

    Definition
        M(b) reports b with probability e^eps/(1+e^eps), else 1-b. The privacy
        loss is +eps with probability e^eps/(1+e^eps) and -eps otherwise.
    Privacy guarantee
        Exact (epsilon, 0)-DP; its tradeoff curve is f_{eps,0} (spec fdp.md §3.1).
        It is also the worst case of every epsilon-DP mechanism (KOV), so this
        PLD dominates any pure epsilon-DP mechanism, adaptively.
    Citation
        Warner 1965; Kairouz–Oh–Viswanath (ICML 2015); spec fdp.md §8.
    Runtime
        O(epsilon / step) to build.
    """
    eps = check_nonnegative("epsilon", epsilon)
    return _build(_rr_spec(eps), None, step, tail_mass, f"RR(eps={eps:g})")


def pure_dp_pld(epsilon: float, *, step: float = DEFAULT_STEP,
                tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Worst case of an epsilon-DP mechanism: RR_{2 eps, eps} = randomized response.

    Definition
        The two-point pair with losses +-eps (composition.md Def. 2.4, t = eps).
    Privacy guarantee
        Dominates every epsilon-DP mechanism on every neighbouring pair (KOV), so
        compositions of these PLDs are valid for adaptive composition and tight.
    Citation
        [KOV] Thm 3.3; composition.md §1 Def. 2.4.
    Runtime
        O(epsilon / step).
    """
    eps = check_nonnegative("epsilon", epsilon)
    return _build(_rr_spec(eps), None, step, tail_mass, f"pure-DP(eps={eps:g})")


def approx_dp_pld(epsilon: float, delta: float, *, step: float = DEFAULT_STEP,
                  tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Worst case of an (epsilon, delta)-DP mechanism.

    Definition
        Loss +inf w.p. delta, +eps w.p. (1-delta) e^eps/(1+e^eps), -eps w.p.
        (1-delta)/(1+e^eps); its tradeoff curve is f_{eps,delta}.
    Privacy guarantee
        Dominates every (epsilon, delta)-DP mechanism (KOV), adaptively.
    Citation
        [KOV] Thm 3.3 (the pair behind Theorem 1 with delta0); spec fdp.md §2.
    Runtime
        O(epsilon / step).
    """
    eps = check_nonnegative("epsilon", epsilon)
    d = check_probability("delta", delta)
    base = _rr_spec(eps)
    spec = LossSpec(base.atom_losses, base.atom_masses * (1.0 - d), infinity_mass=d)
    return _build(spec, None, step, tail_mass, f"approx-DP(eps={eps:g}, delta={d:g})")


# ----------------------------------------------------------------------
# generalized randomized response and bounded range
# ----------------------------------------------------------------------

def _q(epsilon: float, t: float) -> float:
    """q_{eps,t} = (1 - e^{t-eps}) / (1 - e^{-eps})."""
    return -math.expm1(t - epsilon) / -math.expm1(-epsilon)


def _one_minus_q(epsilon: float, t: float) -> float:
    """1 - q_{eps,t} = e^{-eps} (e^t - 1) / (1 - e^{-eps})."""
    return math.exp(-epsilon) * math.expm1(t) / -math.expm1(-epsilon)


def _br_spec(epsilon: float, t_low: float, t_high: float) -> LossSpec:
    """Dominating pair of {RR_{eps,t}: t in [t_low, t_high]} (derived, see bounded_range_pld)."""
    losses = [t_low - epsilon, t_high]
    masses = [_one_minus_q(epsilon, t_low), _q(epsilon, t_high)]
    continuous = None
    if t_high > t_low:
        log_coefficient = -0.5 * epsilon - math.log(2.0 * -math.expm1(-epsilon))
        continuous = ExpTiltPart(log_coefficient, 2.0 * t_low - epsilon, 2.0 * t_high - epsilon)
    spec_atoms = atoms(losses, masses)
    return LossSpec(*spec_atoms, atom_relative_error=64 * _U, continuous=continuous)


def _check_t(epsilon: float, name: str, t) -> float:
    value = check_nonnegative(name, t)
    if value > epsilon:
        raise ValueError(f"{name} must be in [0, epsilon={epsilon:g}], got {t!r}")
    return value


def generalized_rr_pld(epsilon: float, t: float, *, step: float = DEFAULT_STEP,
                       tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of generalized randomized response RR_{eps,t} (both orders).

    Definition
        composition.md Def. 2.4: P = RR(0) = (q, 1-q), Q = RR(1) = (p, 1-p) with
        p = (e^{-t} - e^{-eps})/(1 - e^{-eps}), q = (1 - e^{t-eps})/(1 - e^{-eps});
        the loss is t w.p. q and t - eps w.p. 1 - q. The reverse pair is
        RR_{eps, eps-t}. Asymmetric unless t = eps/2.
    Privacy guarantee
        Exact for this pair (both orders, the answer is the max).
    Citation
        Dong–Durfee–Rogers (2020); composition.md §1.
    Runtime
        O(epsilon / step).
    """
    eps = check_positive("epsilon", epsilon)
    t = _check_t(eps, "t", t)
    reverse = None if 2 * t == eps else _br_spec(eps, eps - t, eps - t)
    return _build(_br_spec(eps, t, t), reverse, step, tail_mass, f"RR(eps={eps:g}, t={t:g})")


def bounded_range_pld(epsilon: float, *, t_range: tuple[float, float] | None = None,
                      step: float = DEFAULT_STEP,
                      tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Worst case of an epsilon-bounded-range mechanism, valid for adaptive composition.

    Definition
        An eps-BR pair is a post-processing of RR_{eps,t} for some unknown
        t in [0, eps] (Lemma 2.1); the worst t depends on what it is composed
        with. This returns the pair D whose privacy profile is the pointwise
        supremum over t in ``t_range`` = [t1, t2] (default [0, eps]) of the
        profiles of RR_{eps,t}; by convex duality its tradeoff curve is the convex
        envelope of inf_t T(RR_{eps,t}), so every RR_{eps,t} (t in the range) is a
        post-processing of D. Its PLD [derived]: an atom at t1 - eps of mass
        1 - q_{t1}, the density e^{(l-eps)/2} / (2 (1 - e^{-eps})) on
        (2 t1 - eps, 2 t2 - eps) and an atom at t2 of mass q_{t2}. For the full
        range it is the continuous law with that density on (-eps, eps); for
        t1 = t2 = t it is RR_{eps,t}.
    Privacy guarantee
        Dominates every eps-BR mechanism with t in ``t_range`` on every pair of
        neighbours, so compositions are valid for *adaptive* composition (f-DP
        composition theorem, DRS Thm 3.2). One mechanism: exact worst case
        (delta(eps_g) = (1 - e^{(eps_g-eps)/2})^2 / (1 - e^{-eps}), [CR] Thm 2
        with k = 1). Several: conservative (each step gets its own worst t, which
        no single adversary attains); for the non-adaptive optimum use
        :func:`privloss.pld.compose.bounded_range_common_t_delta` or
        ``privloss.bounds.optimal_br``.
    Citation
        Durfee–Rogers (2019); Dong–Durfee–Rogers (2020); derivation in docs/fdp.md.
    Runtime
        O(epsilon / step).
    """
    eps = check_positive("epsilon", epsilon)
    if t_range is None:
        t_low, t_high = 0.0, eps
    else:
        t_low, t_high = (_check_t(eps, "t_range[0]", t_range[0]), _check_t(eps, "t_range[1]", t_range[1]))
        if t_low > t_high:
            raise ValueError(f"t_range must satisfy t_range[0] <= t_range[1], got {t_range!r}")
    reverse = None
    if not math.isclose(t_low + t_high, eps, rel_tol=0.0, abs_tol=0.0):
        reverse = _br_spec(eps, eps - t_high, eps - t_low)
    return _build(_br_spec(eps, t_low, t_high), reverse, step, tail_mass,
                  f"BR(eps={eps:g}, t in [{t_low:g}, {t_high:g}])")


# ----------------------------------------------------------------------
# Laplace
# ----------------------------------------------------------------------

def laplace_pld(scale: float, *, sensitivity: float = 1.0, step: float = DEFAULT_STEP,
                tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of the Laplace mechanism f(x) + Lap(scale), |f(D) - f(D')| <= sensitivity.

    Definition
        With eps0 = sensitivity / scale the loss is +eps0 w.p. 1/2, -eps0 w.p.
        e^{-eps0}/2, and has density e^{-eps0/2} e^{l/2} / 4 on (-eps0, eps0)
        (spec fdp.md §8); symmetric.
    Privacy guarantee
        Exact worst case (the shift by the full sensitivity); one release has
        delta(eps) = [1 - e^{(eps - eps0)/2}]_+.
    Citation
        Dwork–McSherry–Nissim–Smith (2006); spec fdp.md §3.3.
    Runtime
        O(eps0 / step).
    """
    b = check_positive("scale", scale)
    s = check_positive("sensitivity", sensitivity)
    eps0 = s / b
    if not math.isfinite(eps0):
        raise ValueError(f"sensitivity / scale must be finite, got {s!r} / {b!r}")
    spec = LossSpec(*atoms([eps0, -eps0], [0.5, 0.5 * math.exp(-eps0)]),
                    continuous=ExpTiltPart(-0.5 * eps0 - math.log(4.0), -eps0, eps0))
    return _build(spec, None, step, tail_mass, f"Laplace(eps0={eps0:g})")


def discrete_laplace_pld(scale: float, *, sensitivity: int = 1, step: float = DEFAULT_STEP,
                         tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of the discrete Laplace mechanism f(x) + Lap_Z(scale) for integer f.

    Definition
        Lap_Z(t): P[Z = z] = tanh(1/(2t)) e^{-|z|/t} (as ``privloss.samplers``).
        For the shift Delta = ``sensitivity`` the loss is Delta/t on z <= 0
        (mass 1/(1+e^{-1/t})), -Delta/t on z >= Delta (mass e^{-Delta/t}/(1+e^{-1/t}))
        and (Delta - 2z)/t for 0 < z < Delta (mass tanh(1/(2t)) e^{-z/t}); symmetric.
    Privacy guarantee
        Exact worst case for integer queries of sensitivity Delta.
    Citation
        Canonne–Kamath–Steinke (NeurIPS 2020); Ghosh–Roughgarden–Sundararajan (2009).
    Runtime
        O(Delta + Delta/(t step)).
    """
    t = check_positive("scale", scale)
    delta = _check_integer("sensitivity", sensitivity)
    if delta > MAX_GRID_POINTS:   # one atom per integer shift: refuse before allocating
        raise GridTooLargeError(f"sensitivity={delta} needs {delta} loss atoms (limit "
                                f"{MAX_GRID_POINTS})")
    z = np.arange(1, delta, dtype=np.float64)
    log_norm = math.log1p(math.exp(-1.0 / t))
    losses = np.concatenate(([delta / t, -delta / t], (delta - 2.0 * z) / t))
    masses = np.concatenate(([math.exp(-log_norm), math.exp(-delta / t - log_norm)],
                             math.tanh(0.5 / t) * np.exp(-z / t)))
    spec = LossSpec(*atoms(losses, masses), atom_relative_error=64 * _U)
    return _build(spec, None, step, tail_mass, f"discrete-Laplace(scale={t:g}, sensitivity={delta})")


# ----------------------------------------------------------------------
# Gaussian family
# ----------------------------------------------------------------------

def gaussian_pld(sigma: float, *, sensitivity: float = 1.0, step: float = DEFAULT_STEP,
                 tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of the Gaussian mechanism f(x) + N(0, sigma^2 I), l2-sensitivity Delta.

    Definition
        With mu = Delta / sigma the loss is N(mu^2/2, mu^2) (symmetric pair).
    Privacy guarantee
        Exact worst case; equals mu-GDP, delta(eps) = Phi(-eps/mu + mu/2) -
        e^eps Phi(-eps/mu - mu/2). Tails beyond the ``tail_mass`` quantiles go to
        +inf (pessimistic) / are dropped (optimistic).
    Citation
        Balle–Wang (ICML 2018) Thm 8; Dong–Roth–Su (2022); spec fdp.md §§3.4, 8.
    Runtime
        O(mu sqrt(log(1/tail_mass)) / step).
    """
    from scipy.special import ndtr  # SciPy where used: a pure-DP release never needs it

    sigma = check_positive("sigma", sigma)
    s = check_positive("sensitivity", sensitivity)
    tail_mass = check_tail_mass(tail_mass)
    mu = s / sigma
    mean = 0.5 * mu * mu
    z = gaussian_cut(tail_mass)
    tail = float(ndtr(-z))
    lo, hi = mean - z * mu, mean + z * mu
    spec = LossSpec(np.zeros(0), np.zeros(0), continuous=GaussianPart(mean, mu, lo, hi),
                    high_tail=tail, high_tail_from=hi, low_tail=tail, low_tail_to=lo)
    return _build(spec, None, step, tail_mass, f"Gaussian(mu={mu:g})")


def discrete_gaussian_pld(sigma: float, *, sensitivity: int = 1, step: float = DEFAULT_STEP,
                          tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of the discrete Gaussian mechanism f(x) + N_Z(0, sigma^2) for integer f.

    Definition
        N_Z(0, sigma^2): P[Y = y] proportional to e^{-y^2/(2 sigma^2)} on the integers.
        For the shift Delta the loss at y is (Delta^2 - 2 y Delta)/(2 sigma^2); the
        normaliser is the same for both laws, so the pair is symmetric.
    Privacy guarantee
        Exact worst case for integer queries of sensitivity Delta; y beyond
        +-M (mass <= tail_mass/2 each side, Gaussian-integral bound) is cut on
        the safe side.
    Citation
        Canonne–Kamath–Steinke (NeurIPS 2020).
    Runtime
        O(sigma sqrt(log(1/tail_mass)) + loss range / step).
    """
    from scipy.special import ndtr, ndtri  # SciPy where used: a pure-DP release never needs it

    sigma = check_positive("sigma", sigma)
    delta = _check_integer("sensitivity", sensitivity)
    tail_mass = check_tail_mass(tail_mass)
    # sum_{y > M} e^{-y^2/(2 s^2)} <= sigma sqrt(2 pi) Phi(-M/sigma), and Z >= 1
    root = sigma * math.sqrt(2.0 * math.pi)
    z = -float(ndtri(min(0.5, tail_mass / (2.0 * max(root, 1.0)))))
    bound = math.ceil(z * sigma) + 1
    if bound > 20_000_000:
        raise ValueError(f"sigma={sigma!r} is too large for the discrete Gaussian PLD (use gaussian_pld)")
    y = np.arange(-bound, bound + 1, dtype=np.float64)
    weights = np.exp(-(y * y) / (2.0 * sigma * sigma))
    normalizer = float(np.sum(weights))
    tail = root * float(ndtr(-bound / sigma)) / normalizer
    losses = (delta * delta - 2.0 * y * delta) / (2.0 * sigma * sigma)
    rel = (4.0 * y.size + 64) * _U + 2.0 * tail
    spec = LossSpec(*atoms(losses, weights / normalizer), atom_relative_error=rel,
                    high_tail=tail, high_tail_from=float(losses.max()),
                    low_tail=tail, low_tail_to=float(losses.min()))
    return _build(spec, None, step, tail_mass, f"discrete-Gaussian(sigma={sigma:g}, sensitivity={delta})")


def truncated_gaussian_pld(sigma: float, bound: float, *, sensitivity: float = 1.0,
                           step: float = DEFAULT_STEP,
                           tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """PLD of a count plus truncated Gaussian noise TN(0, sigma^2; [-bound, bound]).

    Definition
        composition.md §5 (eq. (10), Lemma 6.4): noise with density proportional
        to e^{-z^2/(2 sigma^2)} on [-C, C], C = ``bound``; neighbouring counts
        differ by Delta = ``sensitivity``. Outputs in [-C, Delta - C) are impossible
        under D', so the loss is +inf with mass
        delta_C = (Phi((Delta - C)/sigma) - Phi(-C/sigma)) / (Phi(C/sigma) - Phi(-C/sigma))
        (eq. (10)); on the common support it is Delta^2/(2 sigma^2) - y Delta/sigma^2,
        i.e. N(mu^2/2, mu^2) restricted to [mu^2/2 - mu C/sigma, mu C/sigma - mu^2/2]
        and renormalised (mu = Delta/sigma). Symmetric (reflect y -> Delta - y).
        If 2C <= Delta the supports are disjoint and the loss is +inf.
    Privacy guarantee
        Exact privacy profile of one count; Lemma 6.4 (delta_C-approximate
        mu^2/2-zCDP) follows from it and is never tighter.
    Citation
        Cesar–Rogers (ALT 2021) §6.2; composition.md §5.
    Runtime
        O(mu min(C/sigma, sqrt(log(1/tail_mass))) / step).
    """
    from scipy.special import ndtr  # SciPy where used: a pure-DP release never needs it

    sigma = check_positive("sigma", sigma)
    c_bound = check_positive("bound", bound)
    s = check_positive("sensitivity", sensitivity)
    tail_mass = check_tail_mass(tail_mass)
    if 2.0 * c_bound <= s:
        spec = LossSpec(np.zeros(0), np.zeros(0), infinity_mass=1.0)
        return _build(spec, None, step, tail_mass, "truncated-Gaussian(disjoint supports)")
    mu = s / sigma
    c = c_bound / sigma
    mean = 0.5 * mu * mu
    norm, norm_error = _normal_interval(np.array([-c]), np.array([c]))
    norm, norm_error = float(norm[0]), float(norm_error[0])
    outside, outside_error = _normal_interval(np.array([-c]), np.array([mu - c]))
    infinity = float(outside[0]) / norm
    infinity_error = (float(outside_error[0]) + infinity * norm_error) / norm * 1.01 + 8 * _U * infinity
    lo, hi = mean - mu * c, mu * c - mean
    z = gaussian_cut(tail_mass)
    window_lo, window_hi = max(lo, mean - z * mu), min(hi, mean + z * mu)
    high_tail = float(ndtr(-z)) / norm if window_hi < hi else 0.0
    low_tail = float(ndtr(-z)) / norm if window_lo > lo else 0.0
    spec = LossSpec(np.zeros(0), np.zeros(0),
                    continuous=GaussianPart(mean, mu, window_lo, window_hi, normalizer=norm),
                    infinity_mass=infinity, infinity_error=infinity_error,
                    high_tail=high_tail * 1.01, high_tail_from=window_hi,
                    low_tail=low_tail * 1.01, low_tail_to=window_lo)
    return _build(spec, None, step, tail_mass,
                  f"truncated-Gaussian(mu={mu:g}, C/sigma={c:g})")

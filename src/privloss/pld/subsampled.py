"""Certified PLDs of Poisson-subsampled Laplace, Gaussian and discrete mechanisms.

Definition
    Poisson subsampling keeps each record independently with probability q; the
    neighbouring relation is add/remove one record (dp-accounting's
    ADD_OR_REMOVE_ONE). With A the output law with the record and B without it
    (for additive noise, B = noise, A = noise shifted by the sensitivity), the
    subsampled mechanism has the two orders
    * remove: (P, Q) = (q A + (1 - q) B, B), loss log(1 - q + q e^{l0}),
    * add:    (P, Q) = (B, q A + (1 - q) B), loss -log(1 - q + q e^{l0}),
    where l0 = log(A/B) is the base privacy loss; both are carried (forward =
    remove, reverse = add) and every answer is the max over the two, as
    dp-accounting's PLD accountant does (its ``AdditiveNoisePrivacyLoss`` with
    ``sampling_prob``).
Privacy guarantee
    The pair (qA + (1-q)B, B) and its reverse dominate the subsampled mechanism on
    every add/remove pair when (A, B) dominates the base mechanism in both
    directions [Zhu, Dong, Wang 2022, Prop. 30 / Thm 11], which holds for the
    symmetric additive-noise pairs used here (shift by the full sensitivity; the
    constructors of :mod:`privloss.pld.mechanisms` state it). The discretisation
    is the certified bracket of :mod:`privloss.pld._discretize`: the pessimistic
    side is a dominating pair (connect the dots), the optimistic side a dominated one.
    Continuous parts are integrated exactly over the x-intervals that are the
    preimages of loss cells (the loss is monotone in x); the distance between a
    float preimage's loss and its grid point is carried as an edge shift.
Citation
    Zhu, Dong, Wang, "Optimal accounting of differential privacy via characteristic
    function", AISTATS 2022; Koskela, Jälkö, Honkela, AISTATS 2020; dp-accounting
    (privacy_loss_mechanism.py, supplementary "Sub-sampling").
Runtime
    O(loss range / step) to build, as the unsubsampled constructors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from privloss.bounds._numeric import check_positive, check_probability
from privloss.pld._spec import LossSpec, atoms, gaussian_cut, normal_interval
from privloss.pld.core import DEFAULT_STEP, DEFAULT_TAIL_MASS, PrivacyLossDistribution, check_tail_mass

_U = 2.0 ** -53
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _check_q(probability) -> float:
    q = check_probability("probability", probability)
    if q <= 0:
        raise ValueError(f"probability must be in (0, 1], got {probability!r}")
    return q


def _subsampled_loss(base_loss: np.ndarray, q: float) -> np.ndarray:
    """log(1 - q + q e^{l0}) (remove order), elementwise, without overflow."""
    with np.errstate(divide="ignore"):
        return np.logaddexp(math.log1p(-q), math.log(q) + np.asarray(base_loss, dtype=np.float64))


def _base_loss_of(loss: np.ndarray, q: float) -> np.ndarray:
    """Inverse of :func:`_subsampled_loss`: l0 = log((e^l - (1 - q)) / q); -inf at or
    below log(1 - q)."""
    loss = np.asarray(loss, dtype=np.float64)
    floor = math.log1p(-q)
    out = np.full(loss.shape, -np.inf)
    above = loss > floor
    gap = floor - loss[above]                             # < 0
    with np.errstate(divide="ignore"):
        # e^l - (1 - q) = e^l (1 - e^{floor - l})
        out[above] = loss[above] + np.log(-np.expm1(gap)) - math.log(q)
    return out


@dataclass(frozen=True)
class _SubsampledContinuous:
    """Continuous part of a Poisson-subsampled additive-noise loss (one order).

    The output coordinate x (in noise units) has base loss l0(x) = slope x + offset,
    increasing, on (x_low, x_high); the remove-order loss is g(l0) = log(1-q+q e^{l0})
    (``remove``), the add-order loss -g(l0). ``noise`` is "gaussian" (B = N(0,1),
    A = N(mu, 1), l0 = mu x - mu^2/2) or "laplace" (B = Lap(0,1), A = Lap(d, 1),
    l0 = 2x - d on (0, d)).
    """

    noise: str
    shift: float               # mu (Gaussian) or d (Laplace), in noise units
    q: float
    remove: bool
    lo: float                  # represented loss range
    hi: float
    x_cut: tuple = (-np.inf, np.inf)   # Gaussian: the x-window whose outside is the tails

    # ---- loss <-> x ---------------------------------------------------------
    def _l0_of_x(self, x):
        if self.noise == "gaussian":
            return self.shift * x - 0.5 * self.shift * self.shift
        return 2.0 * x - self.shift

    def _x_of_l0(self, l0):
        if self.noise == "gaussian":
            return (l0 + 0.5 * self.shift * self.shift) / self.shift
        return 0.5 * (l0 + self.shift)

    def _x_range(self):
        if self.noise == "gaussian":
            return self.x_cut
        return 0.0, self.shift

    def _loss_of_x(self, x):
        g = _subsampled_loss(self._l0_of_x(x), self.q)
        return g if self.remove else -g

    def _x_of_loss(self, loss):
        g = loss if self.remove else -loss
        x = self._x_of_l0(_base_loss_of(g, self.q))
        low, high = self._x_range()
        return np.clip(x, low, high)

    # ---- masses ----------------------------------------------------------------
    def _component_masses(self, xa, xb, center: float):
        """(mass, absolute error) of the noise centred at ``center`` on (xa, xb]."""
        if self.noise == "gaussian":
            za, zb = xa - center, xb - center
            value, error = normal_interval(za, zb)
            if center != 0.0:
                # the shifted end points are rounded again: a density times u |z| each
                with np.errstate(invalid="ignore", over="ignore"):
                    nearest = np.minimum(np.abs(za), np.abs(zb))
                    density = np.exp(-0.5 * nearest * nearest - _LOG_SQRT_2PI)
                    error = error + np.nan_to_num(density * 2 * _U * (np.abs(za) + np.abs(zb)))
            return value, error
        # Laplace density e^{-|x - c|}/2, here on (0, d) with c in {0, d}: monotone pieces
        width = xb - xa
        if center == 0.0:
            value = 0.5 * np.exp(-xa) * -np.expm1(-width)
        else:
            value = 0.5 * np.exp(xa - center) * np.expm1(width)
        relative = 8 * _U * (np.abs(xa) + np.abs(xb) + abs(center) + 4.0)
        return value, value * relative

    def masses(self, edges: np.ndarray):
        """(P, Q, P error, Q error, edge shift) of the loss intervals (edges[i], edges[i+1]]."""
        clipped = np.clip(edges, self.lo, self.hi)
        x = self._x_of_loss(clipped)
        if not self.remove:
            x = x[::-1]                   # the add-order loss decreases in x
        xa, xb = x[:-1], x[1:]
        empty = ~(xb > xa)
        xa = np.where(empty, 0.0, xa)
        xb = np.where(empty, 0.0, xb)
        base, base_error = self._component_masses(xa, xb, 0.0)
        shifted, shifted_error = self._component_masses(xa, xb, self.shift)
        mixture = (1.0 - self.q) * base + self.q * shifted
        mixture_error = (1.0 - self.q) * base_error + self.q * shifted_error + 4 * _U * mixture
        if self.remove:
            p, q, ep, eq = mixture, base, mixture_error, base_error
        else:
            p, q, ep, eq = base, mixture, base_error, mixture_error
            p, q, ep, eq = p[::-1], q[::-1], ep[::-1], eq[::-1]
        zero = empty[::-1] if not self.remove else empty
        p, q = np.where(zero, 0.0, p), np.where(zero, 0.0, q)
        ep, eq = np.where(zero, 0.0, ep), np.where(zero, 0.0, eq)
        # edge shift: the exact loss at each float preimage against its grid point, plus
        # a bound on the float error of evaluating that loss (log-sum-exp of rounded terms)
        finite = np.isfinite(x)
        shift = 0.0
        if finite.any():
            points = x[finite]
            target = (clipped if self.remove else clipped[::-1])[finite]
            losses = self._loss_of_x(points)
            evaluation = 8 * _U * (np.abs(self._l0_of_x(points)) + abs(math.log(self.q)) + 2.0
                                   + np.abs(losses))
            inside = np.isfinite(losses)
            if inside.any():
                shift = float(np.max(np.abs(losses[inside] - target[inside]) + evaluation[inside]))
        return p, q, ep, eq, shift

    def log_density_slope(self, losses):
        """An estimate of d/dl log(P-density of the loss): only steers the optimistic
        cell edges (any partition is valid), so a finite approximation suffices."""
        losses = np.clip(np.asarray(losses, dtype=np.float64), self.lo, self.hi)
        h = 1e-4 * max(1.0, self.hi - self.lo)
        left = self._x_of_loss(losses - h)
        right = self._x_of_loss(losses + h)
        if self.noise == "gaussian":
            density = lambda x: ((1 - self.q) * np.exp(-0.5 * x * x)
                                 + self.q * np.exp(-0.5 * (x - self.shift) ** 2)) if self.remove \
                else np.exp(-0.5 * x * x)
        else:
            density = lambda x: ((1 - self.q) * np.exp(-np.abs(x))
                                 + self.q * np.exp(-np.abs(x - self.shift))) if self.remove \
                else np.exp(-np.abs(x))
        with np.errstate(all="ignore"):
            mass = np.abs(right - left) * density(0.5 * (left + right))
            slope = np.gradient(np.log(np.maximum(mass, 1e-300)), losses) if losses.size > 1 \
                else np.zeros_like(losses)
        slope = np.clip(np.nan_to_num(slope, nan=0.5, posinf=0.5, neginf=0.5), -1e3, 1e3)
        # the discretiser evaluates log(sinh(x)/x) at (slope - 1) h/2 and slope h/2 on both
        # branches of a np.where: keep x away from exactly 0 (a harmless log(0) warning)
        return np.where((slope == 0.0) | (slope == 1.0), slope + 1e-7, slope)


def poisson_gaussian_pld(sigma: float, probability: float, *, sensitivity: float = 1.0,
                         step: float = DEFAULT_STEP,
                         tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Certified PLD of the Poisson-subsampled Gaussian mechanism (add/remove).

    Definition
        Each record is kept with ``probability`` q; f(sample) + N(0, sigma^2 I) with
        add/remove l2-sensitivity Delta. With mu = Delta/sigma: remove order
        (q N(mu,1) + (1-q) N(0,1), N(0,1)), add order reversed (module docstring).
    Privacy guarantee
        Certified bracket around the exact (tight) privacy profile, valid for
        adaptive composition (dominating pair; module docstring). Mass beyond
        +-z (Phi(-z) <= tail_mass/2 per component) goes to +inf (pessimistic).
    Citation
        Zhu–Dong–Wang 2022; Koskela–Jälkö–Honkela 2020; dp-accounting
        ``GaussianPrivacyLoss(sampling_prob=q)``.
    Runtime
        O(loss range / step).
    """
    from privloss.pld.mechanisms import gaussian_pld

    sigma = check_positive("sigma", sigma)
    q = _check_q(probability)
    s = check_positive("sensitivity", sensitivity)
    tail_mass = check_tail_mass(tail_mass)
    if q == 1.0:
        return gaussian_pld(sigma, sensitivity=s, step=step, tail_mass=tail_mass)
    mu = s / sigma
    z = gaussian_cut(tail_mass)
    tail = float(ndtr(-z))
    specs = []
    for remove in (True, False):
        part = _SubsampledContinuous("gaussian", mu, q, remove, 0.0, 0.0)
        if remove:
            x_low, x_high = -z, mu + z
        else:
            x_low, x_high = -z, z
        ends = part._loss_of_x(np.array([x_low, x_high]))
        lo, hi = float(ends.min()), float(ends.max())
        # float preimages of the end losses may fall outside the window (flat loss): clip
        part = _SubsampledContinuous("gaussian", mu, q, remove, lo, hi, (x_low, x_high))
        # remove: x below x_low has the lowest losses, above x_high the highest; add: reversed;
        # each tail's P-mass is at most Phi(-z) (every mixture component beyond its cut)
        specs.append(LossSpec(np.zeros(0), np.zeros(0), continuous=part,
                              high_tail=tail, high_tail_from=hi, low_tail=tail, low_tail_to=lo))
    return PrivacyLossDistribution.from_spec(
        specs[0], specs[1], step=step, tail_mass=tail_mass,
        description=f"Poisson({q:g}) x Gaussian(mu={mu:g})")


def poisson_laplace_pld(scale: float, probability: float, *, sensitivity: float = 1.0,
                        step: float = DEFAULT_STEP,
                        tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Certified PLD of the Poisson-subsampled Laplace mechanism (add/remove).

    Definition
        d = sensitivity/scale; B = Lap(0, 1), A = Lap(d, 1) in noise units; the base
        loss is -d on x <= 0, 2x - d on (0, d), d on x >= d, so the subsampled loss
        has two atoms (log(1-q+q e^{-+d})) and a continuous part between them.
    Privacy guarantee
        Certified bracket of the exact profile (dominating pair, module docstring);
        at most log(1 + q (e^d - 1)), the amplified pure-DP epsilon.
    Citation
        Zhu–Dong–Wang 2022; dp-accounting ``LaplacePrivacyLoss(sampling_prob=q)``.
    Runtime
        O(d / step).
    """
    from privloss.pld.mechanisms import laplace_pld

    b = check_positive("scale", scale)
    q = _check_q(probability)
    s = check_positive("sensitivity", sensitivity)
    d = s / b
    if not math.isfinite(d):
        raise ValueError(f"sensitivity / scale must be finite, got {s!r} / {b!r}")
    if q == 1.0:
        return laplace_pld(b, sensitivity=s, step=step, tail_mass=tail_mass)
    low_loss, high_loss = (float(v) for v in _subsampled_loss(np.array([-d, d]), q))
    specs = []
    for remove in (True, False):
        if remove:
            losses = [low_loss, high_loss]
            masses = [0.5 * (1 - q) + 0.5 * q * math.exp(-d), 0.5 * (1 - q) * math.exp(-d) + 0.5 * q]
            lo, hi = low_loss, high_loss
        else:
            losses = [-low_loss, -high_loss]
            masses = [0.5, 0.5 * math.exp(-d)]
            lo, hi = -high_loss, -low_loss
        part = _SubsampledContinuous("laplace", d, q, remove, lo, hi)
        specs.append(LossSpec(*atoms(losses, masses), atom_relative_error=256 * _U * (1 + d),
                              continuous=part))
    return PrivacyLossDistribution.from_spec(
        specs[0], specs[1], step=step, tail_mass=tail_mass,
        description=f"Poisson({q:g}) x Laplace(eps0={d:g})")


def _atom_specs(base_loss, with_mass, q, rel, tail=0.0):
    """Remove and add specs of a lattice mechanism from its base atoms (l0, A-mass)."""
    base_loss = np.asarray(base_loss, dtype=np.float64)
    with_mass = np.asarray(with_mass, dtype=np.float64)
    with np.errstate(divide="ignore"):                           # underflowed masses stay 0
        without_mass = np.exp(np.log(with_mass) - base_loss)      # B = A e^{-l0}
    loss = _subsampled_loss(base_loss, q)
    remove = LossSpec(*atoms(loss, q * with_mass + (1 - q) * without_mass), atom_relative_error=rel,
                      high_tail=tail, high_tail_from=float(loss.max()),
                      low_tail=tail, low_tail_to=float(loss.min()))
    add = LossSpec(*atoms(-loss, without_mass), atom_relative_error=rel,
                   high_tail=tail, high_tail_from=float(-loss.min()),
                   low_tail=tail, low_tail_to=float(-loss.max()))
    return remove, add


def poisson_discrete_laplace_pld(scale: float, probability: float, *, sensitivity: int = 1,
                                 step: float = DEFAULT_STEP,
                                 tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Certified PLD of the Poisson-subsampled discrete Laplace mechanism (add/remove).

    Definition
        Base atoms of :func:`privloss.pld.discrete_laplace_pld` (A = Lap_Z(t) at 0,
        B = shifted by Delta), subsampled as in the module docstring; finitely many atoms.
    Privacy guarantee, citation
        As :func:`poisson_laplace_pld`; CKS 2020 for the base law.
    Runtime
        O(Delta + loss range / step).
    """
    from privloss.pld.mechanisms import discrete_laplace_pld

    t = check_positive("scale", scale)
    q = _check_q(probability)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise ValueError(f"sensitivity must be an integer >= 1, got {sensitivity!r}")
    if q == 1.0:
        return discrete_laplace_pld(t, sensitivity=sensitivity, step=step, tail_mass=tail_mass)
    delta = sensitivity
    if delta > 10_000_000:
        raise ValueError(f"sensitivity must be at most 10000000 for the subsampled discrete "
                         f"Laplace PLD, got {sensitivity!r}")
    z = np.arange(1, delta, dtype=np.float64)
    log_norm = math.log1p(math.exp(-1.0 / t))
    base_loss = np.concatenate(([delta / t, -delta / t], (delta - 2.0 * z) / t))
    with_mass = np.concatenate(([math.exp(-log_norm), math.exp(-delta / t - log_norm)],
                                math.tanh(0.5 / t) * np.exp(-z / t)))
    remove, add = _atom_specs(base_loss, with_mass, q, 256 * _U * (1 + delta / t))
    return PrivacyLossDistribution.from_spec(
        remove, add, step=step, tail_mass=tail_mass,
        description=f"Poisson({q:g}) x discrete-Laplace(scale={t:g}, sensitivity={delta})")


def poisson_discrete_gaussian_pld(sigma: float, probability: float, *, sensitivity: int = 1,
                                  step: float = DEFAULT_STEP,
                                  tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """Certified PLD of the Poisson-subsampled discrete Gaussian mechanism (add/remove).

    Definition
        A = N_Z(0, sigma^2), B = A shifted by Delta; atoms y in [-M - Delta, M + Delta]
        where sum_{y > M} e^{-y^2/(2 sigma^2)} <= sigma sqrt(2 pi) Phi(-M/sigma) bounds
        each tail of A and of B (B's tail beyond M + Delta is A's beyond M); those
        tails go to +inf / the lowest loss on the pessimistic side.
    Privacy guarantee, citation
        As :func:`poisson_gaussian_pld`; CKS 2020 for the base law.
    Runtime
        O(sigma sqrt(log(1/tail_mass)) + loss range / step).
    """
    from privloss.pld.mechanisms import discrete_gaussian_pld

    sigma = check_positive("sigma", sigma)
    q = _check_q(probability)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise ValueError(f"sensitivity must be an integer >= 1, got {sensitivity!r}")
    tail_mass = check_tail_mass(tail_mass)
    if q == 1.0:
        return discrete_gaussian_pld(sigma, sensitivity=sensitivity, step=step, tail_mass=tail_mass)
    delta = sensitivity
    root = sigma * math.sqrt(2.0 * math.pi)
    from scipy.special import ndtri

    z = -float(ndtri(min(0.5, tail_mass / (2.0 * max(root, 1.0)))))
    bound = math.ceil(z * sigma) + 1
    if bound + delta > 20_000_000:
        raise ValueError(f"sigma={sigma!r} is too large for the discrete Gaussian PLD (use a Gaussian)")
    y = np.arange(-bound - delta, bound + delta + 1, dtype=np.float64)
    weights = np.exp(-(y * y) / (2.0 * sigma * sigma))
    normalizer = float(np.sum(weights))
    tail = root * float(ndtr(-bound / sigma)) / normalizer
    base_loss = (delta * delta - 2.0 * y * delta) / (2.0 * sigma * sigma)
    rel = (4.0 * y.size + 256) * _U + 2.0 * tail
    remove, add = _atom_specs(base_loss, weights / normalizer, q, rel, tail=tail * 1.01)
    return PrivacyLossDistribution.from_spec(
        remove, add, step=step, tail_mass=tail_mass,
        description=f"Poisson({q:g}) x discrete-Gaussian(sigma={sigma:g}, sensitivity={delta})")

"""Bracket-mode laws of the heterogeneous optimal-DP bound built spectrally
(tilted characteristic functions, :mod:`privloss.bounds._lattice_fft`) instead of
by the k-pass shift-and-add programme; same constructions (revealed mixtures for
the upper end, the statistic pair for the lower end), see
:mod:`privloss.bounds.heterogeneous_dp`.

Error model: each law is computed as a tilted law f with an L1 error E on its
window and tilted mass ``tail`` outside it; the untilted masses carry the
relative error of the untilting factor. For the upper law,
delta(epsilon_g) <= sum over the window + (E + tail) M e^{-theta epsilon_g / h}.
For the lower pair any set S of states gives
sum_S (P_T - e^{epsilon_g} Q_T) <= true delta, and the computed rows differ from
the exact ones on S by at most E_P M_P e^{-theta_P u_min(S)} and
e^{epsilon_g} E_Q M_Q e^{-theta_Q u_min(S)}: the value is maximised over the
lowest state u_min of S (a suffix of the active states).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from privloss.bounds._logistic import log_expit

from privloss.bounds._heterogeneous_laws import _CHUNK, _TINY, _U, _LossLaw, root_of_states
from privloss.bounds._lattice_fft import TiltedLaw, _Kernels, tilted_law

#: Relative error of log_expit (SciPy's formula with libm, privloss.bounds._logistic:
#: a few ulps), as an absolute error in logs.
_LOG_EXPIT_ULPS = 4.0


def _log_error(values: np.ndarray) -> np.ndarray:
    """Absolute error bound of computed logs of masses (0 where the mass is absent)."""
    finite = np.isfinite(values)
    return np.where(finite, _LOG_EXPIT_ULPS * _U * (np.abs(np.where(finite, values, 0.0)) + 1.0), 0.0)


def mixture_kernels(eps: np.ndarray, step: float, n: np.ndarray,
                    weight: np.ndarray) -> _Kernels:
    """Kernels of the revealed mixtures (losses -hi, -lo, lo, hi as offsets from -hi)."""
    lo = n * step                                   # exact: short step
    hi = lo + step
    with np.errstate(divide="ignore"):
        log_w, log_1w = np.log(weight), np.log1p(-weight)
    log_probs = np.stack([log_w + log_expit(-hi), log_1w + log_expit(-lo),
                          log_1w + log_expit(lo), log_w + log_expit(hi)], axis=1)
    offsets = np.stack([np.zeros_like(n), np.ones_like(n), 2 * n + 1, 2 * n + 2], axis=1)
    return _Kernels(offsets, log_probs, -int(np.sum(n + 1)), _log_error(log_probs))


def mixture_law(kernels: _Kernels, step: float, center: float | None,
                max_points: int) -> _LossLaw | None:
    """Upper-bound loss law (P-law of the product of revealed mixtures) on step*Z."""
    law = tilted_law(kernels, None if center is None else center / step, max_points)
    if law is None:
        return None
    # mass = f M e^{-theta x}, in place (the window can hold millions of points)
    mass = law.f
    with np.errstate(divide="ignore"):
        np.log(mass, out=mass)
    mass += law.log_mgf - law.theta * law.start
    mass -= law.theta * np.arange(mass.size, dtype=float)
    np.minimum(mass, 0.0, out=mass)                  # a probability is at most 1
    np.exp(mass, out=mass)
    log_error = (math.log(law.error + law.tail) + law.log_mgf + math.log1p(law.untilt_error)
                 if law.error + law.tail > 0 else -math.inf)
    return _LossLaw(step=step, offset=law.start, stride=1, mass=mass,
                    relative_error=law.untilt_error + 4 * _U, dropped=0.0,
                    absolute_error=mass.size * _TINY, upward=True, tilt=law.theta,
                    tilt_log_error=log_error)


def statistic_kernels(eps: np.ndarray, step: float):
    """(P kernels, Q kernels, C) of U = sum_{s_i = +1} c_i, c_i = round(eps_i / step) > 0."""
    c = np.rint(eps / step).astype(np.int64)
    keep = c > 0
    eps, c = eps[keep], c[keep]
    offsets = np.stack([np.zeros_like(c), c], axis=1)
    up, down = log_expit(eps), log_expit(-eps)
    p_logs = np.stack([down, up], axis=1)
    q_logs = np.stack([up, down], axis=1)
    return (_Kernels(offsets, p_logs, 0, _log_error(p_logs)),
            _Kernels(offsets, q_logs, 0, _log_error(q_logs)), int(c.sum()))


@dataclass(frozen=True)
class _SpectralPair:
    """Statistic pair T = tau step (tau = 2u - C) from tilted spectral rows, for a lower bound.

    ``log_p[t]``, ``log_q[t]``: computed log P_T and log Q_T at u = start + t (relative
    errors ``rho_p``, ``rho_q``); ``log_err_p - theta_p u`` bounds the log of the L1
    error of the P row weighted by its untilting factor from u upward (same for Q).
    """

    start: int
    log_p: np.ndarray
    log_q: np.ndarray
    total: int
    step: float
    theta_p: float
    theta_q: float
    log_err_p: float
    log_err_q: float
    rho: float
    trusted: int

    def _errors(self, epsilon_g: float, u: np.ndarray) -> np.ndarray:
        """Upper bounds on the additive errors of sum_{S, u >= cut} for each cut u."""
        fu = u.astype(float)
        first = self.log_err_p - self.theta_p * fu
        second = epsilon_g + self.log_err_q - self.theta_q * fu
        margin = 4 * _U * (np.abs(first) + np.abs(second) + abs(epsilon_g) + 2.0) + 1e-12
        with np.errstate(over="ignore"):
            return (np.exp(first + margin) + np.exp(second + margin)) * (1 + 4 * _U)

    def value(self, epsilon_g: float) -> float:
        """Lower bound on sum_t [P_T(t) - e^{epsilon_g} Q_T(t)]_+ (hence on delta)."""
        # suffix sums from the top, in chunks (bounded temporaries); any order of
        # summing n non-negative terms errs by at most (n - 1) u
        shrink = 1 - (self.log_p.size + 8) * _U - 2.02 * self.rho
        best, carry = 0.0, 0.0
        for end in range(self.log_p.size, 0, -_CHUNK):
            begin = max(0, end - _CHUNK)
            lp, lq = self.log_p[begin:end], self.log_q[begin:end]
            with np.errstate(invalid="ignore"):
                z = epsilon_g + lq - lp
                # roundoff in z and the rows' relative errors (as log errors)
                z += 4 * _U * (abs(epsilon_g) + np.abs(lq) + np.abs(lp) + 1) + 2.02 * self.rho
                active = (z < 0) & np.isfinite(lp)
            if not active.any():
                if carry == 0.0:
                    continue
                break               # everything below is inactive too (rho ~ T increases)
            terms = np.where(active, np.exp(np.minimum(lp, 0.0))
                             * -np.expm1(np.minimum(z, 0.0)), 0.0)
            suffix = np.cumsum(terms[::-1])[::-1] + carry
            carry = float(suffix[0])
            u = self.start + np.arange(begin, end, dtype=np.int64)
            best = max(best, float(np.max(suffix * shrink - self._errors(epsilon_g, u))))
        return best

    def root(self, level: float) -> float:
        """Approximately the smallest epsilon_g >= 0 with value(epsilon_g) <= level."""
        # room for the rounding and relative errors of value() ...
        level *= 1 + 4 * (self.log_p.size + 8) * _U + 4.04 * self.rho + 1e-12
        guess = self._root(level)
        if guess > 0:
            # ... and for the additive errors at the states above the guess
            cut = int(math.ceil((guess / self.step + self.total) / 2.0))
            slack = float(self._errors(guess, np.array([max(cut, self.start)]))[0])
            guess = self._root(level + 2.0 * slack)
        return guess

    def _root(self, level: float) -> float:
        # reversed: rho = log(P_T / Q_T) then nearly ascends in the position, and the
        # stable (merge) sort below is nearly linear
        lp, lq = self.log_p[self.trusted:][::-1], self.log_q[self.trusted:][::-1]
        keep = np.isfinite(lp) & np.isfinite(lq)
        if not keep.any():
            return 0.0
        lp, lq = np.minimum(lp[keep], 0.0), lq[keep]
        # the state is active iff epsilon_g < rho = log(P_T / Q_T)
        rho = lp - lq
        order = np.argsort(-rho, kind="stable")
        return root_of_states(rho[order], np.exp(lp[order]), lq[order], level)


def _row(law: TiltedLaw, first: int, last: int) -> tuple[np.ndarray, float]:
    """log of the untilted row on [first, last) and the log of its weighted L1 error."""
    index = np.arange(first, last, dtype=np.int64)
    with np.errstate(divide="ignore"):
        values = np.log(law.f[first - law.start:last - law.start]) + law.log_untilt(index)
    log_error = (math.log(law.error) + law.log_mgf + math.log1p(law.untilt_error)
                 if law.error > 0 else -math.inf)
    return values, log_error


def statistic_pair(eps: np.ndarray, step: float, center: float | None,
                   max_points: int) -> _SpectralPair | None:
    """Lower-bound statistic pair, both rows tilted to the state of T = ``center``."""
    p_kernels, q_kernels, total = statistic_kernels(eps, step)
    if p_kernels.offsets.shape[0] == 0:
        return None
    u_center = None if center is None else (center / step + total) / 2.0
    p_law = tilted_law(p_kernels, u_center, max_points)
    if p_law is None:
        return None
    q_center = p_law.mean if u_center is None else u_center
    q_law = tilted_law(q_kernels, q_center, max_points)
    if q_law is None:
        return None
    first = max(p_law.start, q_law.start)
    last = min(p_law.start + p_law.f.size, q_law.start + q_law.f.size)
    if last <= first:
        return None
    log_p, err_p = _row(p_law, first, last)
    log_q, err_q = _row(q_law, first, last)
    trusted = int(max(0, math.floor(p_law.mean - 5 * p_law.deviation) - first))
    return _SpectralPair(start=first, log_p=log_p, log_q=log_q, total=total, step=step,
                         theta_p=p_law.theta, theta_q=q_law.theta, log_err_p=err_p,
                         log_err_q=err_q, rho=p_law.untilt_error + q_law.untilt_error,
                         trusted=min(trusted, max(0, last - first - 1)))

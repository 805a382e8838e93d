"""Spectral construction of lattice laws for the heterogeneous optimal-DP bracket.

The law of X = base + sum_i O_i (independent integer offsets O_i with small
kernels) is built from its characteristic function on a window of N lattice
points, instead of k shift-and-add passes over the whole lattice.

Definition (exponential tilting). Convolution commutes with multiplying every
kernel by e^{theta o}: the tilted law f(x) = P(X = x) e^{theta x} / M(theta),
M(theta) = E e^{theta X}, is the law of a sum of independent tilted kernels.
theta is chosen so that f has its mean at the loss of interest (about
epsilon_g), so the entries that make delta are near the maximum of f and the
*absolute* error of a Fourier method is small *relative* to them.

Construction (all errors are L1 bounds on the tilted law, whose total mass is 1):

* window: [a, a + N) around the tilted mean, N >= 2 Z sd; the tilted mass outside
  (``tail``) is bounded by Chernoff's inequality on the exact log-MGF
  (P_theta(X >= b) <= exp(K(theta + l) - K(theta) - l b) for every l >= 0);
  the DFT of length N sees the law folded onto the window, which moves at most
  ``tail`` of L1 mass;
* significant frequencies: |phi_i(w)|^2 = 1 - 2 sum_{j<l} p_j p_l (1 - cos w d_jl)
  for a kernel with masses p_j at offsets o_j (d_jl = o_l - o_j), so
  |phi(w)| <= exp(-sum_d V_d (1 - cos w d)), V_d = the sum of p_j p_l over all
  pairs of all kernels at distance d: one real FFT of V bounds |phi| at all N
  grid frequencies; frequencies whose bound is below tau are left out
  (L1 error <= the l2 norm of the left-out bounds, Parseval);
* phi at the kept frequencies J: the product of the k kernel transforms (each
  within e_i of the exact one, |phi_i| <= 1, so the product within sum e_i plus
  sqrt(5) u per complex product);
* inverse real FFT: ||fl(F^-1 X) - F^-1 X||_2 <= eta ||F^-1 X||_2 with
  eta = 16 u log2 N (the constant of :mod:`privloss.pld._convolve`), and
  ||y||_1 <= sqrt(N) ||y||_2 = ||Y||_2 for the spectrum Y;
* negative outputs are clipped to 0 (the exact law is non-negative).

The caller untilts: P(x) = f(x) M(theta) e^{-theta x}. An L1 error E of f costs
at most E M(theta) e^{-theta epsilon_g / h} in delta(epsilon_g) (theta >= 0, and
only losses above epsilon_g count), which is what the laws add.

Runtime: O(k) for the tilt and the Chernoff bounds, O(N log N) for two real
FFTs, O(k |J|) for the characteristic function (|J| is about 60 for laws that
are not nearly periodic); ``None`` is returned when |J| makes that too costly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Unit roundoff of IEEE double precision.
_U = 2.0 ** -53
#: Constant c of the FFT error bound eta = c u log2 N (see privloss.pld._convolve).
_FFT_ERROR_CONSTANT = 16.0
#: Half-width of the window in tilted standard deviations (Chernoff tail ~1e-11,
#: below the other error terms).
WINDOW_DEVIATIONS = 7.0
#: Spectral bounds below this (times 1/sqrt(N)) are left out: L1 error <= 1e-18.
_FREQUENCY_CUTOFF = 1e-18
#: Largest k * |J| * (kernel size) evaluated for the characteristic function.
MAX_SPECTRAL_WORK = 4e8


@dataclass(frozen=True)
class TiltedLaw:
    """Tilted law f on the window [start, start + f.size) and its error terms.

    P(X = x) = f(x) exp(log_mgf - theta x) up to: an L1 error ``error`` of f on
    the window (folding, left-out frequencies, rounding), the tilted mass
    ``tail`` outside the window, and the relative error ``untilt_error`` of the
    factor exp(log_mgf - theta x) as computed for |x| <= ``reach``.
    """

    start: int
    f: np.ndarray
    theta: float
    log_mgf: float
    error: float
    tail: float
    untilt_error: float
    mean: float
    deviation: float

    def log_untilt(self, index: np.ndarray) -> np.ndarray:
        """log of the untilting factor M(theta) e^{-theta x} at lattice points x."""
        return self.log_mgf - self.theta * index.astype(float)


class _Kernels:
    """k small kernels: offsets (k, m) >= 0, log masses (k, m) (-inf: absent), and
    ``relative_error`` (k, m): bounds on the absolute errors of the log masses."""

    def __init__(self, offsets: np.ndarray, log_probs: np.ndarray, base: int,
                 relative_error: np.ndarray):
        self.offsets = offsets.astype(np.int64)
        self.fo = self.offsets.astype(float)
        self.log_probs = log_probs
        self.base = int(base)
        self.relative_error = relative_error
        present = np.isfinite(log_probs)
        self.top = self.base + int(np.where(present, self.offsets, 0).max(axis=1).sum())
        self.bottom = self.base + int(np.where(present, self.offsets, np.iinfo(np.int64).max)
                                      .min(axis=1).sum())

    def tilt(self, theta: float):
        """(tilted masses (k, m), mean, variance, per-kernel error e_i (k,)) at ``theta``.

        e_i bounds sum_j |computed - exact tilted mass|: the exponent is rounded
        (u |.|), the log masses carry ``relative_error``, exp/sum/divide add a few u.
        """
        exponent = self.log_probs + theta * self.fo
        peak = exponent.max(axis=1)
        shifted = exponent - peak[:, None]
        scaled = np.exp(shifted)
        total = scaled.sum(axis=1)
        probs = scaled / total[:, None]
        means = np.sum(probs * self.fo, axis=1)
        variance = float(np.sum(probs * (self.fo - means[:, None]) ** 2))
        with np.errstate(invalid="ignore"):
            spread = np.where(probs > 0, np.abs(exponent) + np.abs(shifted), 0.0)
        entry = self.relative_error + 4 * _U * (spread + np.abs(peak)[:, None] + 2.0)
        per_kernel = 2.02 * np.sum(probs * entry, axis=1) + (self.offsets.shape[1] + 4) * _U
        return probs, self.base + float(means.sum()), variance, per_kernel

    def log_mgf(self, theta: float) -> tuple[float, float]:
        """(K(theta) = log E e^{theta X}, a bound on its rounding error)."""
        exponent = self.log_probs + theta * self.fo
        peak = exponent.max(axis=1)
        scaled = np.exp(exponent - peak[:, None])
        total = scaled.sum(axis=1)
        log_m = peak + np.log(total)
        # numpy's pairwise sum: error <= (log2 k + 1) u sum |terms|
        value = theta * self.base + float(np.sum(log_m))
        summed = (math.log2(max(log_m.size, 2)) + 2) * _U * float(np.sum(np.abs(log_m)))
        # per kernel: exponent (2u |.|), exp/sum/log (8u relative + 8u absolute), and
        # the log masses' own errors, weighted by the tilted masses
        inherited = float(np.sum(np.sum(scaled * self.relative_error, axis=1) / total))
        error = (summed + 8 * _U * float(np.sum(np.abs(peak) + np.abs(log_m) + 2.0))
                 + 1.01 * inherited + 4 * _U * abs(theta * self.base))
        return value, error

    def moments(self, theta: float) -> tuple[float, float]:
        """(mean, variance) of the sum tilted by ``theta``."""
        exponent = self.log_probs + theta * self.fo
        scaled = np.exp(exponent - exponent.max(axis=1)[:, None])
        probs = scaled / scaled.sum(axis=1)[:, None]
        means = np.sum(probs * self.fo, axis=1)
        return (self.base + float(means.sum()),
                float(np.sum(probs * (self.fo - means[:, None]) ** 2)))

    def solve(self, target: float, start: float = 0.0) -> float:
        """theta with tilted mean ~ ``target`` (any accuracy is valid: only a guess)."""
        target = min(max(target, self.bottom + 0.25), self.top - 0.25)
        # safeguarded Newton: the mean increases in theta; a step changes no
        # exponent by more than ~40 and stays inside the bracket found so far
        limit = 40.0 / max(1.0, float(self.offsets.max(initial=1)))
        low, high, theta = -math.inf, math.inf, start
        for _ in range(100):
            mean, variance = self.moments(theta)
            if variance <= 0 or abs(mean - target) <= 1e-3 * math.sqrt(variance) + 1e-9:
                break
            if mean < target:
                low = theta
            else:
                high = theta
            step = max(-limit, min(limit, (target - mean) / variance))
            candidate = theta + step
            if not low < candidate < high:
                candidate = 0.5 * (low + high) if math.isfinite(low + high) else theta + step
            theta = candidate
        return theta


def _chernoff(kernels: _Kernels, theta: float, k_theta: float, k_error: float,
              boundary: int, upper: bool, mean: float, variance: float) -> float:
    """Bound on the theta-tilted mass of X >= boundary (upper) or X <= boundary:
    exp(K(theta + l) - K(theta) - l boundary) for any l of the sign of the side."""
    if (upper and boundary > kernels.top) or (not upper and boundary < kernels.bottom):
        return 0.0

    def bound(gap: float) -> float:
        if (upper and gap <= 0) or (not upper and gap >= 0):
            return 1.0
        k_other, other_error = kernels.log_mgf(theta + gap)
        exponent = k_other - k_theta - gap * boundary
        margin = k_error + other_error + 4 * _U * abs(gap * boundary) + 1e-12
        return math.exp(min(exponent + margin, 0.0))       # a bound above 1 says nothing

    # the Gaussian-optimal l first; the exactly optimal one if that is not small
    value = bound((boundary - mean) / variance) if variance > 0 else 1.0
    if value > 1e-14:
        value = min(value, bound(kernels.solve(float(boundary), theta) - theta))
    return value


def tilted_law(kernels: _Kernels, center: float | None, max_points: int) -> TiltedLaw | None:
    """The tilted law of the kernels' sum around ``center`` (lattice index), or None
    when the window exceeds ``max_points`` or the significant spectrum is too large."""
    from scipy import fft as sp_fft

    theta = 0.0
    if kernels.offsets.shape[0] == 0:
        return None
    mean0, _ = kernels.moments(0.0)
    if center is not None and center > mean0:
        theta = max(0.0, kernels.solve(center))
    probs, mean, variance, kernel_error = kernels.tilt(theta)
    deviation = math.sqrt(max(variance, 0.0))
    first = max(kernels.bottom, int(math.floor(mean - WINDOW_DEVIATIONS * deviation)) - 2)
    last = min(kernels.top, int(math.ceil(mean + WINDOW_DEVIATIONS * deviation)) + 2)
    size = int(sp_fft.next_fast_len(last - first + 1, real=True))
    if size > max_points:
        return None
    last = first + size - 1
    k_theta, k_error = kernels.log_mgf(theta)
    tail = (_chernoff(kernels, theta, k_theta, k_error, last + 1, True, mean, variance)
            + _chernoff(kernels, theta, k_theta, k_error, first - 1, False, mean, variance))
    if tail >= 1e-6:
        return None

    # ---- bound |phi| on the grid from the pair weights V_d
    m = probs.shape[1]
    rows, cols = np.triu_indices(m, 1)
    distance = np.abs(kernels.offsets[:, cols] - kernels.offsets[:, rows]) % size
    weight = probs[:, rows] * probs[:, cols]
    pairs = np.bincount(distance.ravel(), weights=weight.ravel(), minlength=size)
    total = float(pairs.sum())
    spectrum = sp_fft.rfft(pairs)
    eta = _FFT_ERROR_CONSTANT * _U * max(1.0, math.log2(size))
    slack = 1.01 * eta * math.sqrt(size) * float(np.sqrt(np.einsum("i,i->", pairs, pairs)))
    # masses off by e_i per kernel: each pair weight by <= 2 e_i, each 1 - cos <= 2
    slack += 4.04 * float(kernel_error.sum()) + 1e-300
    log_bound = np.minimum(0.0, -(total - spectrum.real) + slack)
    del spectrum, pairs
    multiplicity = np.full(log_bound.size, 2.0)
    multiplicity[0] = 1.0
    if size % 2 == 0:
        multiplicity[-1] = 1.0
    cutoff = math.log(_FREQUENCY_CUTOFF) - 0.5 * math.log(size)
    kept = np.flatnonzero(log_bound > cutoff)
    log_bound[kept] = -np.inf                       # in place: only the left-out ones
    log_bound *= 2.0
    np.exp(log_bound, out=log_bound)
    neglected = 1.01 * math.sqrt(float(np.dot(multiplicity, log_bound)))
    multiplicity = multiplicity[kept]
    del log_bound
    k = probs.shape[0]
    if float(k) * kept.size * m > MAX_SPECTRAL_WORK:
        return None

    # ---- the characteristic function at the kept frequencies
    phi = np.ones(kept.size, dtype=complex)
    frequencies = kept.astype(np.int64)
    # the distinct offsets (small non-negative integers) and each entry's place among them
    present = np.bincount(kernels.offsets.ravel()) > 0
    distinct = np.flatnonzero(present)
    position = (np.cumsum(present) - 1)[kernels.offsets]
    residue = (distinct[:, None] * frequencies[None, :]) % size
    residue = np.where(residue > size // 2, residue - size, residue)
    table = np.exp(-1j * (residue.astype(float) * (2.0 * math.pi / size)))
    del residue
    block = max(1, int(2 ** 20 // max(1, kept.size * m)))
    for begin in range(0, k, block):
        terms = np.einsum("km,kmj->kj", probs[begin:begin + block],
                          table[position[begin:begin + block]])
        phi *= np.prod(terms, axis=0)
    shift = (kernels.base - first) % size
    residue = (frequencies * shift) % size
    residue = np.where(residue > size // 2, residue - size, residue)
    phi *= np.exp(-1j * residue.astype(float) * (2.0 * math.pi / size))
    # per kernel transform: masses (e_i), angles (<= 10u), cos/sin and the products
    # (<= 4u), the sum of <= m terms (<= m u); then sqrt(5) u per complex product
    per_kernel = kernel_error + (16.0 + m) * _U
    per_frequency = 1.01 * (float(per_kernel.sum()) + (k + 2) * math.sqrt(5.0) * _U + 16 * _U)
    phi_error = per_frequency * math.sqrt(float(np.sum(multiplicity)))

    values = np.zeros(size // 2 + 1, dtype=complex)
    values[kept] = phi
    values_l2 = math.sqrt(float(np.sum(multiplicity * (phi.real ** 2 + phi.imag ** 2))))
    f = sp_fft.irfft(values, size)
    del values
    np.maximum(f, 0.0, out=f)
    fft_error = 1.01 * eta * (values_l2 + phi_error)
    error = (fft_error + phi_error + neglected + tail) * 1.01
    reach = max(abs(first), abs(last))
    # the caller forms log f + K - theta x (|log f| <= 745 for a positive double):
    # a few roundings of that size, plus the error of K itself
    untilt = 1.01 * (k_error + 8 * _U * (abs(k_theta) + abs(theta) * reach + 750.0))
    return TiltedLaw(start=first, f=f, theta=theta, log_mgf=k_theta, error=error, tail=tail,
                     untilt_error=math.expm1(untilt) * 1.01, mean=mean, deviation=deviation)


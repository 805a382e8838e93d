"""Convolution of non-negative mass vectors with an a-priori L1 error bound.

Every function returns ``(result, l1_error)`` where ``l1_error`` bounds
``sum_i |result_i - exact_i|`` for the exact convolution of the *given* inputs.
The caller adds it to the error it already carries (convolution with a
sub-probability vector never increases an L1 error, so errors just add).

Error model (why the constants are what they are):

* **Direct** (``numpy.convolve``, used when one input is short): every output
  is a sum of at most ``m = min(len(a), len(b))`` products of non-negative
  numbers, so its relative error is at most ``gamma_{m+1} = (m+1)u / (1-(m+1)u)``
  (Higham, *Accuracy and Stability*, eq. (3.5)); summed over outputs the L1
  error is at most ``gamma_{m+1} * sum(a) * sum(b)``.
* **FFT** (``scipy.fft.rfft``/``irfft`` on a zero-padded length N): a computed
  FFT satisfies ``||fl(Fx) - Fx||_2 <= eta ||Fx||_2`` with ``eta = c u log2 N``;
  Higham's Theorem 24.2 gives c ~ 6.7 for radix 2 with accurate twiddles; we use
  c = 16 for pocketfft's mixed radices. Propagating through forward transforms,
  the pointwise product (relative error 3u) and the inverse transform gives
  ``||c_hat - c||_2 <= (2 eta + 3u)(1+eta)^2 (1+3u) (|a|_1 |b|_2 + |a|_2 |b|_1)
  + eta^2 sqrt(N) |a|_2 |b|_2`` (derivation in docs/fdp.md, "Numerics"), and
  ``||.||_1 <= sqrt(n) ||.||_2`` over the ``n`` kept outputs.
  The bound is checked against exact rational convolution in the tests.
* Negative FFT outputs are clipped to 0: the exact convolution is non-negative,
  so clipping can only move the vector closer to it (no error is added).
* **Extended precision** (``extended=True``): the same computations in
  ``numpy.longdouble`` (x87 80-bit on x86-64: u = 2^-64), then rounded back to
  float64 (relative error u_64 per non-negative entry, i.e. at most u_64 times
  the total mass in L1). About 3x slower; used for the small, early
  convolutions whose error is multiplied by every later composition.
"""

from __future__ import annotations

import math

import numpy as np

#: Unit roundoff of IEEE double precision.
UNIT_ROUNDOFF = 2.0 ** -53
#: Constant c in eta = c u log2 N (see the module docstring).
FFT_ERROR_CONSTANT = 16.0
#: Unit roundoff of numpy.longdouble on this platform (equals UNIT_ROUNDOFF where
#: long double is plain double).
EXTENDED_UNIT_ROUNDOFF = float(np.finfo(np.longdouble).eps) / 2.0
#: Use direct convolution when the shorter input has at most this many entries ...
DIRECT_MAX_SHORT = 48
#: ... or when the product of the lengths is at most this (direct is then cheaper).
DIRECT_MAX_WORK = 400_000


def _gamma(count: int, u: float = UNIT_ROUNDOFF) -> float:
    nu = count * u
    return nu / (1.0 - nu)


def fft_relative_error(size: int, u: float = UNIT_ROUNDOFF) -> float:
    """eta for an FFT of length ``size``."""
    return FFT_ERROR_CONSTANT * u * max(1.0, math.log2(size))


def fft_l1_error(a: np.ndarray, b: np.ndarray, padded: int, kept: int,
                 u: float = UNIT_ROUNDOFF) -> float:
    """A-priori L1 error bound of the FFT convolution of non-negative ``a`` and ``b``."""
    eta = fft_relative_error(padded, u)
    l1a, l1b = float(a.sum()), float(b.sum())
    l2a, l2b = _l2_norm_up(a), _l2_norm_up(b)
    l2 = ((2.0 * eta + 3.0 * u) * (1.0 + eta) ** 2 * (1.0 + 3.0 * u) * (l1a * l2b + l2a * l1b)
          + eta * eta * math.sqrt(padded) * l2a * l2b)
    # the sums above are of non-negative terms (relative error <= n u, n << 10^13);
    # 1.01 covers them and the rounding of this expression itself
    return 1.01 * math.sqrt(kept) * l2


def _l2_norm_up(values: np.ndarray) -> float:
    """Euclidean norm, rounded up: a single-threaded einsum sum of squares.

    ``np.linalg.norm`` goes through BLAS, which OpenBLAS threads: on a busy
    machine that was 24x slower in wall time than this loop. The sum of n
    non-negative squares has relative error <= (n + 1) u; the square root halves it.
    """
    squares = float(np.einsum("i,i->", values, values))
    # underflowing squares lose at most 2^-1074 each
    return math.sqrt(squares * (1.0 + (values.size + 2) * UNIT_ROUNDOFF) + values.size * 5e-324)


def direct_l1_error(a: np.ndarray, b: np.ndarray, u: float = UNIT_ROUNDOFF) -> float:
    """A-priori L1 error bound of ``numpy.convolve`` on non-negative inputs."""
    shorter = min(a.size, b.size)
    return 1.01 * _gamma(shorter + 1, u) * float(a.sum()) * float(b.sum())


def next_fast_len_real(target: int) -> int:
    """The smallest 2^a 3^b 5^c >= ``target`` (``scipy.fft.next_fast_len(target,
    real=True)``: pocketfft's fast sizes for a real transform)."""
    if target <= 6:
        return max(int(target), 1)
    best = 1 << (target - 1).bit_length()
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            quotient = -(-target // power35)             # ceil(target / power35)
            candidate = power35 << (quotient - 1).bit_length()
            best = min(best, candidate)
            power35 *= 3
        power5 *= 5
    return best


class _NumpyFFT:
    """``numpy.fft`` under the names the convolutions use."""

    rfft = staticmethod(np.fft.rfft)
    irfft = staticmethod(np.fft.irfft)

    @staticmethod
    def next_fast_len(target: int, real: bool = True) -> int:
        return next_fast_len_real(target)


def fft_module():
    """The FFT the convolutions use: ``numpy.fft`` from NumPy 2 on, which is
    pocketfft's C++ code with long double support, the code of ``scipy.fft``
    (the same values, bit for bit: tests/pld/test_fft_module.py), so that a
    PLD does not import SciPy (``scipy.fft`` imports ``scipy.special``: 0.4 to
    0.8 s of CPU per process); ``scipy.fft`` before NumPy 2 (whose
    ``numpy.fft`` computes in double only)."""
    if int(np.__version__.split(".")[0]) >= 2:
        return _NumpyFFT
    from scipy import fft
    return fft


def convolve(a: np.ndarray, b: np.ndarray, *, extended: bool = False) -> tuple[np.ndarray, float]:
    """Linear convolution of non-negative vectors and an L1 bound on its error."""
    if a.size == 0 or b.size == 0:
        return np.zeros(0), 0.0
    if extended:
        return _convolve_extended(a, b)
    kept = a.size + b.size - 1
    if min(a.size, b.size) <= DIRECT_MAX_SHORT or a.size * b.size <= DIRECT_MAX_WORK:
        return np.convolve(a, b), direct_l1_error(a, b)
    sp_fft = fft_module()  # where used: direct convolutions never need it

    padded = sp_fft.next_fast_len(kept, real=True)
    if a is b:
        spectrum = sp_fft.rfft(a, padded)
        spectrum *= spectrum
    else:
        spectrum = sp_fft.rfft(a, padded)
        spectrum *= sp_fft.rfft(b, padded)
    result = sp_fft.irfft(spectrum, padded)[:kept]
    del spectrum
    np.maximum(result, 0.0, out=result)
    return result, fft_l1_error(a, b, padded, kept)


def _convolve_extended(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """As :func:`convolve`, computed in long double and rounded back to float64."""
    u = EXTENDED_UNIT_ROUNDOFF
    kept = a.size + b.size - 1
    wide_a = a.astype(np.longdouble)
    wide_b = wide_a if b is a else b.astype(np.longdouble)
    if min(a.size, b.size) <= DIRECT_MAX_SHORT or a.size * b.size <= DIRECT_MAX_WORK:
        wide = np.convolve(wide_a, wide_b)
        error = direct_l1_error(a, b, u)
    else:
        sp_fft = fft_module()
        padded = sp_fft.next_fast_len(kept, real=True)
        spectrum = sp_fft.rfft(wide_a, padded)
        spectrum *= spectrum if b is a else sp_fft.rfft(wide_b, padded)
        wide = sp_fft.irfft(spectrum, padded)[:kept]
        del spectrum
        error = fft_l1_error(a, b, padded, kept, u)
    result = np.maximum(wide, 0).astype(np.float64)
    # rounding non-negative entries to float64: relative u each, so u * total in L1
    error += 1.01 * UNIT_ROUNDOFF * float(result.sum())
    return result, error

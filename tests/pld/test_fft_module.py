"""The PLD convolutions' FFT (:func:`privloss.pld._convolve.fft_module`):
``numpy.fft`` from NumPy 2 on gives ``scipy.fft``'s values bit for bit
(both pocketfft's C++ code), in double and long double, at the sizes
``next_fast_len_real`` picks, which are ``scipy.fft.next_fast_len``'s."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import fft as scipy_fft

from privloss.pld import _convolve


def test_next_fast_len_is_scipys():
    for target in list(range(1, 5000)) + [65537, 99991, 1_000_003, 12_345_678, 40_000_001]:
        assert _convolve.next_fast_len_real(target) == \
            scipy_fft.next_fast_len(target, real=True), target


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="scipy.fft is used")
@pytest.mark.parametrize("size", [7, 100, 999, 4096, 6001, 30011])
@pytest.mark.parametrize("dtype", [np.float64, np.longdouble])
def test_numpy_fft_is_scipy_fft_bit_for_bit(size, dtype):
    rng = np.random.default_rng(size)
    a = rng.random(size).astype(dtype)
    module = _convolve.fft_module()
    assert module is not scipy_fft
    padded = module.next_fast_len(2 * size - 1, real=True)
    ours, theirs = module.rfft(a, padded), scipy_fft.rfft(a, padded)
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)
    assert np.array_equal(module.irfft(ours * ours, padded), scipy_fft.irfft(theirs * theirs,
                                                                              padded))


def test_convolutions_unchanged(monkeypatch):
    rng = np.random.default_rng(2)
    a, b = rng.random(3000), rng.random(2500)
    ours = [_convolve.convolve(a, b), _convolve.convolve(a, b, extended=True)]
    monkeypatch.setattr(_convolve, "fft_module", lambda: scipy_fft)
    theirs = [_convolve.convolve(a, b), _convolve.convolve(a, b, extended=True)]
    for (x, ex), (y, ey) in zip(ours, theirs):
        assert np.array_equal(x, y) and ex == ey

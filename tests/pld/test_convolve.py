"""The a-priori convolution error bounds hold against exact integer arithmetic."""

import math

import numpy as np
import pytest

from privloss.pld import _convolve


def _exact(a: np.ndarray, b: np.ndarray) -> list:
    """Exact convolution of float vectors via Python integers (floats are dyadic rationals)."""
    scale = 2 ** 1100
    ia = [int(x * 2.0 ** 1000) * 2 ** 100 for x in a]   # x * 2^1100 is an exact integer
    ib = [int(x * 2.0 ** 1000) * 2 ** 100 for x in b]
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(ia):
        if x:
            for j, y in enumerate(ib):
                out[i + j] += x * y
    return out, scale * scale


def _l1_distance(computed: np.ndarray, exact) -> float:
    values, denominator = exact
    from fractions import Fraction

    total = Fraction(0)
    for c, v in zip(computed, values):
        total += abs(Fraction(float(c)) - Fraction(v, denominator))
    return float(total)


def _vectors(seed: int, n: int, m: int):
    rng = np.random.default_rng(seed)
    a = rng.random(n) ** 4
    b = rng.random(m) ** 4
    a[rng.integers(0, n)] = 0.5          # a heavy atom, like Laplace / RR
    return a / a.sum(), b / b.sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("extended", [False, True])
def test_fft_bound_holds(monkeypatch, seed, extended):
    monkeypatch.setattr(_convolve, "DIRECT_MAX_SHORT", 0)
    monkeypatch.setattr(_convolve, "DIRECT_MAX_WORK", 0)
    a, b = _vectors(seed, 120, 90)
    result, bound = _convolve.convolve(a, b, extended=extended)
    actual = _l1_distance(result, _exact(a, b))
    assert actual <= bound
    assert bound < (1e-11 if not extended else 1e-14)       # and the bound is not vacuous


@pytest.mark.parametrize("extended", [False, True])
def test_direct_bound_holds(extended):
    a, b = _vectors(7, 40, 300)
    result, bound = _convolve.convolve(a, b, extended=extended)
    assert _l1_distance(result, _exact(a, b)) <= bound


def test_self_convolution_uses_one_transform(monkeypatch):
    monkeypatch.setattr(_convolve, "DIRECT_MAX_SHORT", 0)
    monkeypatch.setattr(_convolve, "DIRECT_MAX_WORK", 0)
    a, _ = _vectors(3, 150, 10)
    squared, bound = _convolve.convolve(a, a)
    assert _l1_distance(squared, _exact(a, a)) <= bound
    assert (squared >= 0).all()


def test_empty_input():
    result, bound = _convolve.convolve(np.zeros(0), np.ones(3))
    assert result.size == 0 and bound == 0.0


# --------------------------------------------------------------------------
# single-threaded norms and the SciPy-free recurrence
# --------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 7, 1000, 100_000])
def test_l2_norm_is_rounded_up(size):
    values = np.random.default_rng(size).random(size) ** 3
    assert _convolve._l2_norm_up(values) >= float(np.linalg.norm(values))
    # rounded up by at most (n + 2) u / 2 relative, plus the sums' own rounding
    assert _convolve._l2_norm_up(values) == pytest.approx(float(np.linalg.norm(values)),
                                                         rel=(size + 8) * 2.0 ** -52)
    tiny = np.full(size, 1e-170)           # squares underflow: still an upper bound
    assert _convolve._l2_norm_up(tiny) >= 1e-170


@pytest.mark.parametrize("size, step", [(1, 0.3), (10, 0.5), (5000, 1e-3), (200_000, 1e-4),
                                        (100_000, 2.0), (1000, 800.0)])
def test_decayed_cumsum_matches_lfilter(size, step):
    from scipy.signal import lfilter

    from privloss.bounds._recurrence import decayed_cumsum

    values = np.random.default_rng(size).random(size) ** 5
    decay = math.exp(-step)
    expected = lfilter([1.0], [1.0, -decay], values)
    assert np.allclose(decayed_cumsum(values, decay), expected, rtol=1e-12, atol=0)

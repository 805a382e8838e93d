"""Floating-point safety (spec samplers.md §10): Mironov's attack on the textbook
float Laplace sampler, and why privloss's real-valued mechanisms are immune.

The naive sampler below is what many systems shipped: a uniform double U (a
multiple of 2^-53), noise = lambda * -ln(U) with a random sign, added to f(D) in
double precision. Its set of reachable outputs depends on f(D) at the level of
the last bits, so for neighbouring inputs 0 and 1 most outputs of one input are
*impossible* under the other (infinite privacy loss), whatever epsilon says.

privloss's grid mechanisms output (m + Z) 2^-k with an exact integer Z whose law
gives every integer positive probability: the support is the same grid for
every input, and the exact probability ratio at each output is at most e^eps.

Statistical tests use fixed seeds (numpy default_rng for the naive sampler,
InsecureSeededSource for privloss) and ALPHA = 1e-4.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from privloss.mechanisms.gaussian import DiscreteGaussianMechanism, GridGaussianMechanism
from privloss.mechanisms.laplace import DiscreteLaplaceMechanism, GridLaplaceMechanism
from privloss.mechanisms.randomized_response import KaryRandomizedResponse, RandomizedResponse
from privloss.samplers import InsecureSeededSource

ALPHA = 1e-4
LAMBDA = 2.0        # scale: epsilon = 0.5 for sensitivity 1
DRAWS = 20_000


# -- the naive sampler and a feasibility oracle ------------------------------------

def naive_float_laplace(f: float, scale: float, n: int, rng) -> np.ndarray:
    """The textbook float Laplace mechanism (do not use)."""
    u = rng.random(n)                       # multiples of 2^-53 in [0, 1)
    u = np.where(u == 0.0, 2.0 ** -53, u)   # keep log finite
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return f + sign * (scale * -np.log(u))


def _pipeline(f: float, scale: float, k, sign: float):
    return f + sign * (scale * -np.log(k * 2.0 ** -53))


def feasible(y: np.ndarray, f: float, scale: float, window: int = 64) -> np.ndarray:
    """For each output y: can the naive sampler with input f produce y bit for bit?

    The float pipeline is monotone in the uniform's index k (for each sign), so a
    bisection over k in [1, 2^53) finds the crossing; the window around it
    absorbs any non-monotonicity of the vectorised log.
    """
    found = np.zeros(y.shape, dtype=bool)
    for sign in (-1.0, 1.0):
        low = np.ones(y.shape, dtype=np.int64)
        high = np.full(y.shape, 2**53 - 1, dtype=np.int64)
        for _ in range(60):
            middle = (low + high) // 2
            value = _pipeline(f, scale, middle.astype(float), sign)
            right = value > y if sign > 0 else value < y
            low = np.where(right, middle + 1, low)
            high = np.where(right, high, middle)
        for offset in range(-window, window + 1):
            k = np.clip(low + offset, 1, 2**53 - 1).astype(float)
            found |= _pipeline(f, scale, k, sign) == y
    return found


@pytest.fixture(scope="module")
def naive_outputs():
    rng = np.random.default_rng(20120101)
    return naive_float_laplace(0.0, LAMBDA, DRAWS, rng), naive_float_laplace(1.0, LAMBDA, DRAWS, rng)


def test_oracle_accepts_every_output_under_its_own_input(naive_outputs):
    y0, y1 = naive_outputs
    assert feasible(y0, 0.0, LAMBDA).all()
    assert feasible(y1, 1.0, LAMBDA).all()


def test_naive_float_laplace_outputs_are_impossible_under_the_neighbour(naive_outputs):
    # spec §10.1: about 64 % of outputs of M(0) cannot come from M(1); each such
    # output proves the input was 0 - infinite privacy loss at "epsilon = 0.5"
    y0, y1 = naive_outputs
    impossible_0 = np.mean(~feasible(y0, 1.0, LAMBDA))
    impossible_1 = np.mean(~feasible(y1, 0.0, LAMBDA))
    assert impossible_0 > 0.5 and impossible_1 > 0.5


def test_naive_float_laplace_low_bits_reveal_the_input(naive_outputs):
    # last mantissa bit: about 50/50 for input 0, about 75/25 for input 1
    y0, y1 = naive_outputs
    bit0 = np.bincount((y0.view(np.uint64) & np.uint64(1)).astype(int), minlength=2)
    bit1 = np.bincount((y1.view(np.uint64) & np.uint64(1)).astype(int), minlength=2)
    assert stats.chi2_contingency([bit0, bit1])[1] < 1e-50


# -- privloss: same grid for every input, bounded exact ratio -------------------------

def _grid_units(outputs: np.ndarray, k: int) -> np.ndarray:
    units = np.ldexp(outputs, k)
    assert np.array_equal(units, np.floor(units)), "output not on the grid 2^-k Z"
    return units.astype(np.int64)


def test_grid_laplace_outputs_are_possible_under_both_inputs():
    mechanism = GridLaplaceMechanism(1, epsilon=Fraction(1, 2), source=InsecureSeededSource(1))
    k, scale = mechanism.grid_exponent, mechanism.grid_scale
    shift = mechanism.grid_sensitivity                       # input 1 sits 2^20 units away
    outputs = {x: np.array([mechanism.release(x) for _ in range(2000)] +
                           list(GridLaplaceMechanism(1, epsilon=Fraction(1, 2), dimension=DRAWS,
                                                     l0_sensitivity=1,
                                                     source=InsecureSeededSource(2 + int(x)))
                                .release(np.full(DRAWS, x))))
               for x in (0.0, 1.0)}
    for x, ys in outputs.items():
        m = _grid_units(ys, k)
        centre, other = (0, shift) if x == 0.0 else (shift, 0)
        # exact log-likelihood ratio in grid units: (|m - other| - |m - centre|) / scale
        log_ratio = (np.abs(m - other) - np.abs(m - centre)) / float(scale)
        assert np.all(np.abs(log_ratio) <= float(mechanism.epsilon) + 1e-12)
    # the low bits of the grid index have the same law under both inputs
    low = [np.bincount(_grid_units(ys, k) % 16, minlength=16) for ys in outputs.values()]
    assert stats.chi2_contingency(low)[1] > ALPHA


def test_grid_gaussian_outputs_are_on_the_common_grid():
    for x in (0.0, 1.0):
        mechanism = GridGaussianMechanism(1, sigma=2, dimension=DRAWS, l0_sensitivity=1,
                                          source=InsecureSeededSource(7))
        units = _grid_units(mechanism.release(np.full(DRAWS, x)), mechanism.grid_exponent)
        assert units.dtype == np.int64  # every integer has positive probability: same support


def test_outputs_are_exact_python_types():
    assert isinstance(GridLaplaceMechanism(1, epsilon=1).release(0.25), float)
    assert isinstance(DiscreteLaplaceMechanism(1, epsilon=1).release(3), int)
    assert isinstance(DiscreteGaussianMechanism(1, sigma=1).release(3), int)


# -- no hidden floating point on the release path ---------------------------------------

def _raise(*args, **kwargs):
    raise AssertionError("floating-point math called while releasing")


def test_releases_call_no_float_math(monkeypatch):
    mechanisms = [
        (DiscreteLaplaceMechanism(1, epsilon="1/3", source=InsecureSeededSource(1)), [1, 2, 3] * 10),
        (DiscreteGaussianMechanism(1, sigma_squared="10/3", source=InsecureSeededSource(1)), 7),
        (GridLaplaceMechanism(1, epsilon=1, dimension=20, source=InsecureSeededSource(1)),
         np.linspace(0, 1, 20)),
        (GridGaussianMechanism(1, sigma=3, source=InsecureSeededSource(1)), 0.5),
        (RandomizedResponse("1/2", source=InsecureSeededSource(1)), [0, 1] * 20),
        (KaryRandomizedResponse(2, 7, source=InsecureSeededSource(1)), [3] * 40),
    ]
    for module, names in ((math, ("log", "exp", "log1p", "expm1", "sqrt")),
                          (np, ("log", "exp", "log1p", "expm1", "sqrt"))):
        for name in names:
            monkeypatch.setattr(module, name, _raise)
    for name in ("random", "normal", "laplace", "exponential", "uniform", "gumbel"):
        monkeypatch.setattr(np.random, name, _raise)
    for mechanism, value in mechanisms:
        mechanism.release(value)


# -- bad inputs of the real-valued mechanisms ---------------------------------------------

@pytest.mark.parametrize("cls, kwargs", [(GridLaplaceMechanism, {"epsilon": 1}),
                                         (GridGaussianMechanism, {"sigma": 1})])
def test_real_valued_bad_inputs(cls, kwargs):
    mechanism = cls(1, **kwargs)
    with pytest.raises(ValueError, match="NaN"):
        mechanism.release(float("nan"))
    with pytest.raises(ValueError, match="infinity"):
        mechanism.release(float("-inf"))
    with pytest.raises(ValueError, match="1 value"):
        mechanism.release([1.0, 2.0])
    with pytest.raises(TypeError, match="real"):
        mechanism.release("0.5")
    with pytest.raises(ValueError, match="2\\^53"):
        mechanism.release(np.int64(2**60))
    with pytest.raises(ValueError, match="grid_exponent"):
        cls(1, grid_exponent=-2000, **kwargs)
    clamped = cls(1, lower=0, upper=1, **kwargs)
    assert math.isfinite(clamped.release(float("inf")))

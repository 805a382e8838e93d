"""Laplace mechanism with exact discrete noise, on integers and on a real grid.

* :class:`DiscreteLaplaceMechanism` - integer query + Lap_Z(scale) noise
  (exact CKS sampler): epsilon = l1-sensitivity / scale, pure DP.
* :class:`GridLaplaceMechanism` - real-valued query, made float-safe: clamp to
  declared bounds, round *exactly* to the grid 2^-k Z, add integer Lap_Z noise in
  grid units, return the exactly representable float. The rounding can widen
  the sensitivity by less than one grid step per changed coordinate, and the
  stated epsilon includes that.

The helpers shared with :mod:`privloss.mechanisms.gaussian` (exact parameters,
safe float rounding of guarantees, integer inputs, grid rounding) live here too.
Why floats are not used for noise: ``docs/mechanisms.md`` (Mironov's attack).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from privloss.events import PureDP
from privloss.mechanisms.accuracy import (WithErrorBars, check_dimension, discrete_laplace_half_width)
from privloss.mechanisms.base import Mechanism
from privloss.samplers import discrete_laplace
from privloss.samplers._params import to_rational
from privloss.samplers.randomness import resolve_source

__all__ = ["DiscreteLaplaceMechanism", "GridLaplaceMechanism"]


_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
#: Default grid: the largest power of two <= sensitivity * 2^-DEFAULT_GRID_BITS,
#: so rounding costs at most a factor (1 + 2^-20) of the sensitivity.
DEFAULT_GRID_BITS = 20
#: Allowed grid exponents k (grid 2^-k): every m * 2^-k with |m| < 2^53 is then
#: a normal double (no subnormal rounding, no overflow).
GRID_EXPONENT_RANGE = (-960, 1000)


# ---------------------------------------------------------------------------
# exact parameters and safe reporting
# ---------------------------------------------------------------------------

def rational(name: str, value, *, positive: bool = False) -> Fraction:
    """A finite real parameter as an exact ``Fraction`` (>= 0, or > 0 with ``positive``).

    Floats are accepted and mean their exact binary value: the guarantee a
    mechanism reports is computed from that same rational, so nothing is
    silently rounded in the optimistic direction.
    """
    x = to_rational(name, value, allow_float=True)
    if positive and x <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return x


def float_upper(x: Fraction) -> float:
    """The smallest float >= ``x`` (privacy parameters are always rounded up);
    ``inf`` beyond the float range (the safe value; events then refuse it)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def one_of(**given):
    """Exactly one of the keyword arguments must be non-None; return its (name, value)."""
    chosen = [(name, value) for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        names = ", ".join(given)
        raise ValueError(f"pass exactly one of {names}; got "
                         f"{', '.join(n for n, _ in chosen) or 'none'}")
    return chosen[0]


# ---------------------------------------------------------------------------
# integer inputs and exact addition
# ---------------------------------------------------------------------------

def integer_input(name: str, value):
    """A Python int, or an int64 / object ndarray of integers (floats are refused)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer or an array of integers, got the bool {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    array = np.asarray(value)
    if array.dtype == object:
        for index, item in enumerate(array.reshape(-1)):
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral):
                raise TypeError(f"{name}[{index}] must be an integer, got {item!r}")
        return np.vectorize(int, otypes=[object])(array) if array.size else array
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must contain integers, got dtype {array.dtype} (for real-valued "
                        f"queries use the grid mechanisms, which round exactly)")
    if array.dtype == np.uint64 and array.size and int(array.max()) > _INT64_MAX:
        return array.astype(object)
    return array.astype(np.int64)


def add_exactly(values, noise):
    """values + noise without overflow: int64 when the sum fits, else Python ints."""
    if isinstance(values, int):
        return values + int(noise)
    noise = np.asarray(noise).reshape(values.shape)
    if values.size == 0:
        return values.copy()
    if values.dtype != object and noise.dtype != object:
        low = int(values.min()) + int(noise.min())
        high = int(values.max()) + int(noise.max())
        if _INT64_MIN <= low and high <= _INT64_MAX:
            return values + noise
    out = np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [int(a) + int(b) for a, b in zip(values.reshape(-1).tolist(),
                                                          noise.reshape(-1).tolist())]
    return out


def noise_size(values):
    """``size`` argument for a sampler: None for a scalar, the shape otherwise."""
    return None if isinstance(values, int) else values.shape


#: Below this many draws the scalar samplers are faster than the NumPy kernels.
SMALL_BATCH = 16


def draw_noise(sampler, parameter, size, source):
    """``sampler(parameter, size, source=...)``, with small arrays drawn one by one
    (same exact law; the vectorised kernels only pay off for larger batches)."""
    if size is None or math.prod(size) > SMALL_BATCH:
        return sampler(parameter, size, source=source)
    draws = [sampler(parameter, source=source) for _ in range(math.prod(size))]
    if all(_INT64_MIN <= v <= _INT64_MAX for v in draws):
        return np.array(draws, dtype=np.int64).reshape(size)
    out = np.empty(len(draws), dtype=object)
    out[:] = draws
    return out.reshape(size)


# ---------------------------------------------------------------------------
# the grid 2^-k Z
# ---------------------------------------------------------------------------

def floor_log2(x: Fraction) -> int:
    """floor(log2 x) for a rational x > 0, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > x else e


def check_grid_exponent(value, sensitivity: Fraction, fallback: Fraction) -> int:
    """Validate ``grid_exponent``; None -> the default for this sensitivity."""
    if value is None:
        reference = sensitivity if sensitivity > 0 else fallback
        k = DEFAULT_GRID_BITS - floor_log2(reference)
    else:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"grid_exponent must be an integer, got {value!r}")
        k = int(value)
    low, high = GRID_EXPONENT_RANGE
    if not low <= k <= high:
        raise ValueError(f"grid_exponent must be in [{low}, {high}] (grid 2^-k), got {k}"
                         + (" (the default for this sensitivity)" if value is None else ""))
    return k


def grid_sensitivity_l1(sensitivity: Fraction, grid: Fraction, l0_sensitivity: int) -> int:
    """Integer l1-sensitivity, in grid units, of round-half-up(x / grid).

    floor is monotone, so |floor(a + 1/2) - floor(b + 1/2)| <= ceil(|a - b|); over
    at most l0 changed coordinates with sum |a_i - b_i| <= A,
    sum ceil(|a_i - b_i|) < A + l0, hence <= ceil(A) + l0 - 1.
    """
    if sensitivity == 0:
        return 0
    return math.ceil(sensitivity / grid) + l0_sensitivity - 1


def check_bounds(lower, upper):
    """Validate optional clamping bounds (finite floats, lower <= upper)."""
    if (lower is None) != (upper is None):
        raise ValueError("pass both lower and upper, or neither")
    if lower is None:
        return None, None
    bounds = []
    for name, value in (("lower", lower), ("upper", upper)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        bounds.append(value)
    if bounds[0] > bounds[1]:
        raise ValueError(f"lower must be <= upper, got lower={lower!r}, upper={upper!r}")
    return bounds[0], bounds[1]


def real_input(name: str, value, dimension: int, lower, upper):
    """A float64 array of ``dimension`` values, clamped to [lower, upper] if declared."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number or an array of reals, got {value!r}")
    array = np.asarray(value)
    if array.dtype == object or array.dtype == np.bool_ or not (
            np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"{name} must contain real numbers, got dtype {array.dtype}")
    if array.size != dimension:
        raise ValueError(f"{name} must have {dimension} value(s) (the mechanism's dimension), "
                         f"got shape {array.shape}")
    if np.issubdtype(array.dtype, np.integer) and array.size and (
            int(array.max()) > 2 ** 53 or int(array.min()) < -2 ** 53):
        # float64 rounding of larger integers could widen differences (2^53 + 1
        # rounds to 2^53, 2^53 + 3 to 2^53 + 4) and so break the sensitivity
        raise ValueError(f"{name} has integers beyond 2^53, which float64 cannot hold "
                         f"exactly; use DiscreteLaplaceMechanism / DiscreteGaussianMechanism")
    array = array.astype(np.float64)
    if np.isnan(array).any():
        raise ValueError(f"{name} contains NaN; the mechanism needs real numbers")
    if lower is not None:
        array = np.clip(array, lower, upper)
    elif not np.isfinite(array).all():
        raise ValueError(f"{name} contains an infinity; declare lower/upper bounds to clamp it")
    return array


def round_to_grid(array: np.ndarray, k: int):
    """Exact floor(x * 2^k + 1/2) for every float x: int64 array, or Python ints.

    x * 2^k is exact in binary (or underflows only where the result is 0);
    rint is exact, and u - rint(u) is exact (Sterbenz), so ties that rint sent
    down to an even number are found exactly and moved up. Values beyond 2^62
    go through exact Python arithmetic.
    """
    with np.errstate(over="ignore"):
        scaled = np.ldexp(array, k)
    big = ~(np.abs(scaled) < 2.0 ** 62)
    nearest = np.rint(scaled)
    nearest += (scaled - nearest) == 0.5
    if not big.any():
        return nearest.astype(np.int64)
    out = np.empty(array.shape, dtype=object)
    flat_out, flat_x, flat_near, flat_big = (out.reshape(-1), array.reshape(-1),
                                             nearest.reshape(-1), big.reshape(-1))
    for i in range(flat_out.size):
        if flat_big[i]:
            flat_out[i] = math.floor(Fraction(float(flat_x[i])) * Fraction(2) ** k + Fraction(1, 2))
        else:
            flat_out[i] = int(flat_near[i])
    return out


def grid_to_float(units, k: int):
    """units * 2^-k as float64: exact whenever |units| < 2^53 (else nearest double,
    a deterministic post-processing of the private integer)."""
    as_float = np.array([float(u) for u in units.reshape(-1)]).reshape(units.shape) \
        if units.dtype == object else units.astype(np.float64)
    with np.errstate(over="ignore"):
        return np.ldexp(as_float, -k)


def shape_output(array: np.ndarray, like):
    """A Python float for scalar input, the array (same shape as the input) otherwise."""
    return float(array.reshape(-1)[0]) if np.ndim(like) == 0 else array.reshape(np.shape(like))


# ---------------------------------------------------------------------------
# mechanisms
# ---------------------------------------------------------------------------

class DiscreteLaplaceMechanism(WithErrorBars, Mechanism):
    """Integer-valued query plus exact discrete Laplace noise.

    Definition
        ``release(x) = x + Z`` for an integer (or integer array) x, Z iid
        Lap_Z(scale): P[Z = z] = tanh(1/(2 scale)) exp(-|z|/scale). Pass exactly
        one of ``epsilon`` (then scale = sensitivity / epsilon, exactly) or
        ``scale``. ``sensitivity`` is the l1-sensitivity of the query (over all
        coordinates of a vector) under the neighbour relation of the caller's
        choice (add/remove or substitution - the guarantee is for that relation).
        All parameters are exact rationals (int, Fraction, Decimal, "1/3";
        floats mean their exact binary value). A rational sensitivity is
        allowed; integer queries can only move by integers, so the effective
        sensitivity is floor(sensitivity), but the stated epsilon uses the
        declared value (conservative).
    Privacy guarantee
        ``events = (PureDP(sensitivity / scale),)``, epsilon rounded up to a
        float. Proof: the pmf ratio at any output is exp((|y - x'| - |y - x|) /
        scale) <= exp(|x - x'|_1 / scale) coordinate-wise (Dwork–Roth Thm 3.6
        with the discrete density). The noise is sampled exactly (CKS Alg. 2):
        no floating point decides the output.
    Citation
        Dwork–Roth 2014 (Laplace mechanism); [CKS] Canonne–Kamath–Steinke,
        NeurIPS 2020 (discrete Laplace sampler); Ghosh–Roughgarden–Sundararajan
        2009 (geometric mechanism).
    Runtime
        O(1) expected per coordinate; the sampling time depends on the noise
        value (timing channel, docs/samplers.md), not on x.
    """

    def __init__(self, sensitivity=1, *, epsilon=None, scale=None, source=None):
        self.sensitivity = rational("sensitivity", sensitivity)
        name, value = one_of(epsilon=epsilon, scale=scale)
        if name == "epsilon":
            epsilon = rational("epsilon", value, positive=True)
            if self.sensitivity == 0:
                raise ValueError("sensitivity must be > 0 to calibrate from epsilon; "
                                 "pass scale instead")
            self.scale = self.sensitivity / epsilon
        else:
            self.scale = rational("scale", value, positive=True)
        self.epsilon = self.sensitivity / self.scale
        self._source = resolve_source(source) if source is not None else None
        self._events = (PureDP(float_upper(self.epsilon)),)

    def _release(self, value):
        values = integer_input("value", value)
        noise = draw_noise(discrete_laplace, self.scale, noise_size(values), self._source)
        return add_exactly(values, noise)

    @property
    def noise_variance(self) -> float:
        """Exact variance 2 e^(1/scale) / (e^(1/scale) - 1)^2 of one noise coordinate."""
        from privloss.samplers import discrete_laplace_variance
        return float(discrete_laplace_variance(self.scale))

    def confidence_interval_half_width(self, beta, dimension: int = 1) -> int:
        """Smallest integer w with P[max_i |x_i - release_i| > w] <= beta (exact pmf,
        ``dimension`` independent coordinates; see
        :func:`~privloss.mechanisms.accuracy.discrete_laplace_half_width`)."""
        return discrete_laplace_half_width(self.scale, beta, dimension)

    def __repr__(self) -> str:
        return (f"DiscreteLaplaceMechanism(sensitivity={self.sensitivity}, scale={self.scale}, "
                f"epsilon={self.epsilon})")


class GridLaplaceMechanism(WithErrorBars, Mechanism):
    """Real-valued query, float-safe: exact rounding to a grid plus discrete Laplace noise.

    Definition
        With grid g = 2^-k (``grid_exponent`` k; default: the largest power of
        two <= sensitivity * 2^-20), for input x in R^d (``dimension`` d):
        clamp each coordinate to [lower, upper] (if declared), round exactly to
        m = floor(x / g + 1/2) (round half up), add Z iid Lap_Z(scale / g) and
        return (m + Z) * g as floats - exact multiples of g (exactly
        representable whenever |m + Z| < 2^53). Pass exactly one of
        ``epsilon`` (then the scale is calibrated *including* the rounding
        cost) or ``scale`` (real units).
    Privacy guarantee
        Rounding half up is monotone, so a coordinate that moves by a moves by
        at most ceil(a / g) grid steps; with l1-sensitivity Delta and at most
        ``l0_sensitivity`` (default d) changed coordinates the grid-unit
        sensitivity is D = ceil(Delta / g) + l0 - 1 (an integer), i.e. the
        effective sensitivity Delta' = D g < Delta + l0 g (= Delta exactly when
        d = 1 and Delta is a multiple of g). ``events = (PureDP(D g / scale),)``.
        Clamping is 1-Lipschitz per coordinate and adds nothing. The noise is an
        exact integer; the final float conversion is post-processing.
    Citation
        Mironov, CCS 2012 (why float Laplace is unsafe); OpenDP's
        discretized Laplace (round to 2^k, integer noise); [CKS] Alg. 2.
    Runtime
        O(d) plus O(1) expected noise work per coordinate; timing depends on
        the noise only.
    """

    def __init__(self, sensitivity, *, epsilon=None, scale=None, grid_exponent=None,
                 lower=None, upper=None, dimension: int = 1, l0_sensitivity=None, source=None):
        self.sensitivity = rational("sensitivity", sensitivity)
        name, value = one_of(epsilon=epsilon, scale=scale)
        self.dimension = check_dimension(dimension)
        self.l0_sensitivity = check_l0(l0_sensitivity, self.dimension)
        parameter = rational(name, value, positive=True)
        fallback = parameter if name == "scale" else Fraction(1)
        self.grid_exponent = check_grid_exponent(grid_exponent, self.sensitivity, fallback)
        self.grid = Fraction(2) ** -self.grid_exponent
        self.lower, self.upper = check_bounds(lower, upper)
        self.grid_sensitivity = grid_sensitivity_l1(self.sensitivity, self.grid,
                                                    self.l0_sensitivity)
        if name == "epsilon":
            if self.grid_sensitivity == 0:
                raise ValueError("sensitivity must be > 0 to calibrate from epsilon; "
                                 "pass scale instead")
            self.grid_scale = self.grid_sensitivity / parameter
        else:
            self.grid_scale = parameter / self.grid
        self.scale = self.grid_scale * self.grid
        self.effective_sensitivity = self.grid_sensitivity * self.grid
        self.epsilon = self.grid_sensitivity / self.grid_scale
        self._source = resolve_source(source) if source is not None else None
        self._events = (PureDP(float_upper(self.epsilon)),)

    def _release(self, value):
        array = real_input("value", value, self.dimension, self.lower, self.upper)
        units = round_to_grid(array, self.grid_exponent)
        noise = draw_noise(discrete_laplace, self.grid_scale, units.shape, self._source)
        return shape_output(grid_to_float(add_exactly(units, noise), self.grid_exponent), value)

    def confidence_interval_half_width(self, beta, dimension: int | None = None) -> float:
        """w g + g/2: with probability >= 1 - beta every coordinate of the release is
        within this distance of the (clamped) input; w is the exact discrete
        Laplace half-width in grid units, g/2 the rounding error. Rounded up."""
        dimension = self.dimension if dimension is None else dimension
        w = discrete_laplace_half_width(self.grid_scale, beta, dimension)
        return float_upper(w * self.grid + self.grid / 2)

    def _interval_dimension(self, value) -> int:
        return self.dimension        # the declared dimension, as the event charges

    def __repr__(self) -> str:
        return (f"GridLaplaceMechanism(sensitivity={self.sensitivity}, scale={self.scale}, "
                f"grid=2^-{self.grid_exponent}, epsilon={self.epsilon})")


def check_l0(value, dimension: int) -> int:
    """l0_sensitivity: integer in [1, dimension]; None means every coordinate may change."""
    if value is None:
        return dimension
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"l0_sensitivity must be an integer in [1, {dimension}], got {value!r}")
    if not 1 <= value <= dimension:
        raise ValueError(f"l0_sensitivity must be in [1, {dimension}] (the dimension), got {value!r}")
    return int(value)

"""Gaussian mechanism with exact discrete Gaussian noise, on integers and on a real grid.

* :class:`DiscreteGaussianMechanism` - integer query + N_Z(0, sigma^2) noise
  (exact CKS sampler): Delta^2 / (2 sigma^2)-zCDP ([CKS] Theorem 4); for a
  scalar release also the exact (epsilon, delta) curve of [CKS] Theorem 7.
* :class:`GridGaussianMechanism` - real-valued query, float-safe: clamp, round
  exactly to the grid 2^-k Z, add discrete Gaussian noise in grid units; the
  stated rho includes the rounding cost.
* :func:`discrete_gaussian_delta` / :func:`discrete_gaussian_epsilon` - the exact
  privacy curve of one discrete Gaussian release ([CKS] Theorem 7).

Calibration to a target (epsilon, delta) (:meth:`DiscreteGaussianMechanism.calibrate`):
the continuous formulas (classical Dwork–Roth, analytic Balle–Wang) are only
approximations for the *discrete* Gaussian, whose delta is slightly larger for
small sigma (sigma^2 = 1, epsilon = 1: 0.1414 against 0.1269). Every calibrated
sigma is therefore re-checked with the exact discrete delta of Theorem 7 and
raised until it passes; method "zcdp" instead calibrates rho with the tight
zCDP conversion, which is valid for the discrete Gaussian as is (Theorem 4).
"""

from __future__ import annotations

import math
from fractions import Fraction


from privloss.bounds._numeric import check_nonnegative, check_probability, invert_delta, safe_delta
from privloss.bounds.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma
from privloss.bounds.zcdp import zcdp_rho_for
from privloss.events import ApproxDP, ZCDP
from privloss.mechanisms.accuracy import (WithErrorBars, check_dimension, discrete_gaussian_half_width)
from privloss.mechanisms.base import Mechanism
from privloss.mechanisms.laplace import (add_exactly, check_bounds, check_grid_exponent, check_l0,
                                         draw_noise, float_upper, floor_log2, grid_to_float, integer_input,
                                         noise_size, one_of, rational, real_input, round_to_grid,
                                         shape_output)
from privloss.samplers import discrete_gaussian
from privloss.samplers.exact_pmf import discrete_gaussian_mass
from privloss.samplers.randomness import resolve_source

__all__ = [
    "DiscreteGaussianMechanism",
    "GridGaussianMechanism",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "CALIBRATION_METHODS",
]

CALIBRATION_METHODS = ("exact", "analytic", "classical", "zcdp")
#: significant bits kept when a calibrated sigma^2 is rounded *up* to a short
#: rational (short denominators keep the exact sampler in 64-bit kernels)
_SIGMA_BITS = 30
_DPS = 50


# ---------------------------------------------------------------------------
# exact privacy curve of one discrete Gaussian release ([CKS] Theorem 7)
# ---------------------------------------------------------------------------

def _integer_sensitivity(sensitivity) -> int:
    """Integer shifts only: a rational sensitivity Delta allows shifts up to floor(Delta)."""
    return math.floor(rational("sensitivity", sensitivity))


def discrete_gaussian_delta(epsilon, sigma_squared, sensitivity=1) -> float:
    """Exact delta(epsilon) of x + N_Z(0, sigma^2) for integer x with |x - x'| <= Delta.

    Definition
        [CKS] Theorem 7: delta = P[Y > eps sigma^2/Delta - Delta/2]
        - e^eps P[Y > eps sigma^2/Delta + Delta/2], Y ~ N_Z(0, sigma^2); the
        smallest valid delta when some neighbours differ by exactly Delta. The
        thresholds are floored exactly (rational eps sigma^2/Delta), and the
        formula is evaluated as sum_{y=L}^{U-1} p(y) - expm1(eps) P[Y >= U]
        (exact pmf sums, mpmath at 50 digits).
    Privacy guarantee
        Upper bound: rounded up (relative 1e-12 plus an absolute 1e-40 times
        the larger term) and clipped to [0, 1]. Integer queries shift by
        integers, so a rational ``sensitivity`` acts as floor(sensitivity).
        Scalar releases only (one coordinate changes).
    Citation
        [CKS] Canonne–Kamath–Steinke, NeurIPS 2020, Theorem 7; numerical recipe
        of their ``cdp2adp.py``.
    Runtime
        O(Delta + sigma) pmf terms (O(Delta) for sigma^2 >= 10^4).
    """
    eps = check_nonnegative("epsilon", epsilon, allow_inf=True)
    sigma_squared = rational("sigma_squared", sigma_squared)
    shift = _integer_sensitivity(sensitivity)
    if shift == 0 or math.isinf(eps):
        return 0.0
    if sigma_squared == 0:
        return 1.0
    import mpmath as mp  # test/samplers dependency, as in privloss.samplers.exact_pmf

    center = Fraction(eps) * sigma_squared / shift
    low = math.floor(center - Fraction(shift, 2)) + 1      # P[Y > a] = P[Y >= floor(a) + 1]
    high = math.floor(center + Fraction(shift, 2)) + 1
    with mp.workdps(_DPS + 10):
        inside = discrete_gaussian_mass(low, high - 1, sigma_squared, dps=_DPS)
        beyond = discrete_gaussian_mass(high, None, sigma_squared, dps=_DPS)
        delta = inside - mp.expm1(mp.mpf(eps)) * beyond
        margin = max(inside, mp.expm1(mp.mpf(eps)) * beyond) * mp.mpf(10) ** -40
        value = float(delta + margin)
    return safe_delta(value)


def discrete_gaussian_epsilon(delta, sigma_squared, sensitivity=1) -> float:
    """Smallest epsilon with :func:`discrete_gaussian_delta` <= delta (bisection on the
    exact, non-increasing curve; re-checks by construction; ``inf`` at delta = 0)."""
    delta = check_probability("delta", delta)
    sigma_squared = rational("sigma_squared", sigma_squared)
    shift = _integer_sensitivity(sensitivity)
    if shift == 0 or delta >= 1:
        return 0.0
    if delta == 0 or sigma_squared == 0:
        return math.inf
    mu = shift / math.sqrt(float(sigma_squared))
    upper = mu * mu / 2.0 + mu * math.sqrt(2.0 * -math.log(delta)) + 1.0
    return invert_delta(lambda e: discrete_gaussian_delta(e, sigma_squared, shift), delta, upper)


# ---------------------------------------------------------------------------
# calibration helpers
# ---------------------------------------------------------------------------

def _round_up_short(x: Fraction, bits: int = _SIGMA_BITS) -> Fraction:
    """A rational >= x with about ``bits`` significant bits (power-of-two denominator)."""
    if x.denominator & (x.denominator - 1) == 0 and x.numerator.bit_length() <= bits + 1:
        return x
    shift = bits - floor_log2(x)
    scale = Fraction(2) ** shift
    return Fraction(math.ceil(x * scale)) / scale


def _sigma_squared_from_float(sigma: float) -> Fraction:
    return _round_up_short(Fraction(sigma) ** 2)


def _calibrate_exact(epsilon: float, delta: float, shift: int, start: Fraction) -> Fraction:
    """Smallest (short) sigma^2 with the exact discrete delta <= target, by bisection on
    sigma^2 starting from ``start``. The answer is re-checked, never optimistic."""

    def meets(s2: Fraction) -> bool:
        return discrete_gaussian_delta(epsilon, s2, shift) <= delta

    high = start
    while not meets(high):
        high = _round_up_short(high * Fraction(5, 4))
    low = high
    while low > Fraction(1, 2 ** 40) and meets(low):
        high, low = low, low / 2
    if meets(low):
        return low
    # invariant: low fails, high meets; relative precision 2^-20 on sigma^2
    while high - low > high / 2 ** 20:
        middle = _round_up_short((low + high) / 2)
        if middle >= high:
            break
        if meets(middle):
            high = middle
        else:
            low = middle
    return high


def _raise_until(meets, sigma_squared: Fraction) -> Fraction:
    """Raise sigma^2 by factors (1 + 2^-10) until ``meets`` (a re-check that the
    continuous formulas need for the discrete Gaussian)."""
    while not meets(sigma_squared):
        sigma_squared = _round_up_short(sigma_squared * Fraction(1025, 1024))
    return sigma_squared


def _calibrated_sigma_squared(epsilon, delta, shift: int, method: str) -> Fraction:
    if method == "exact":
        start = _sigma_squared_from_float(
            analytic_gaussian_sigma(epsilon, delta, sensitivity=shift))
        return _calibrate_exact(epsilon, delta, shift, start)
    if method == "analytic":
        sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity=shift)
    else:  # classical
        sigma = classical_gaussian_sigma(epsilon, delta, sensitivity=shift)
    return _raise_until(lambda s2: discrete_gaussian_delta(epsilon, s2, shift) <= delta,
                        _sigma_squared_from_float(sigma))


def _check_target(epsilon, delta, method):
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"method must be one of {CALIBRATION_METHODS}, got {method!r}")
    eps = check_nonnegative("epsilon", epsilon)
    if eps == 0:
        raise ValueError("epsilon must be > 0 to calibrate a Gaussian mechanism, got 0")
    target = check_probability("delta", delta, open_lower=True, closed_upper=False)
    return eps, target


def _check_charge(charge, default: str) -> str:
    charge = default if charge is None else charge
    if charge not in ("zcdp", "approx_dp"):
        raise ValueError(f"charge must be 'zcdp' or 'approx_dp', got {charge!r}")
    return charge


# ---------------------------------------------------------------------------
# mechanisms
# ---------------------------------------------------------------------------

class _GaussianEvents:
    """Shared: events from (grid-unit) shift and sigma^2, exact curve, charging mode."""

    def _set_events(self, rho_shift_squared: Fraction, approx_dp_epsilon) -> None:
        self.rho = rho_shift_squared / (2 * self._noise_sigma_squared) \
            if self._noise_sigma_squared > 0 else None
        if self.rho is None:
            if rho_shift_squared != 0:
                raise ValueError("sigma must be > 0 when the sensitivity is > 0")
            self.rho = Fraction(0)
        if approx_dp_epsilon is None:
            self.approx_dp_epsilon = None
            self._events = (ZCDP(float_upper(self.rho)),)
        else:
            eps = check_nonnegative("approx_dp_epsilon", approx_dp_epsilon)
            self.approx_dp_epsilon = eps
            self._events = (ApproxDP(eps, self.delta_for_epsilon(eps)),)

    def delta_for_epsilon(self, epsilon) -> float:
        """Exact delta of one *scalar* release at ``epsilon`` ([CKS] Theorem 7)."""
        return discrete_gaussian_delta(epsilon, self._noise_sigma_squared, self._integer_shift)

    def epsilon_for_delta(self, delta) -> float:
        """Smallest epsilon of one *scalar* release at ``delta`` ([CKS] Theorem 7)."""
        return discrete_gaussian_epsilon(delta, self._noise_sigma_squared, self._integer_shift)

    def _check_charged_shape(self, size: int) -> None:
        if self.approx_dp_epsilon is not None and size != 1:
            raise ValueError("a mechanism charged with the exact (epsilon, delta) of CKS "
                             "Theorem 7 releases one value at a time (the theorem is one-"
                             f"dimensional); got {size} values. Use charge='zcdp' for vectors")

    @property
    def noise_variance(self) -> float:
        """Exact variance of one noise coordinate (grid units for grid mechanisms)."""
        from privloss.samplers import discrete_gaussian_variance
        if self._noise_sigma_squared == 0:
            return 0.0
        return float(discrete_gaussian_variance(self._noise_sigma_squared))


class DiscreteGaussianMechanism(WithErrorBars, _GaussianEvents, Mechanism):
    """Integer-valued query plus exact discrete Gaussian noise.

    Definition
        ``release(x) = x + Y`` for an integer (or integer array) x, Y iid
        N_Z(0, sigma^2): P[Y = y] proportional to exp(-y^2 / (2 sigma^2)). Pass
        exactly one of ``sigma_squared``, ``sigma`` or ``rho`` (then sigma^2 =
        Delta^2 / (2 rho) exactly). ``sensitivity`` is the l2-sensitivity of the
        query under the caller's neighbour relation (for a histogram with l0 /
        linf sensitivities: Delta_2^2 = Delta_0 Delta_inf^2). Exact rationals
        throughout (floats mean their exact binary value).
    Privacy guarantee
        ``events = (ZCDP(Delta^2 / (2 sigma^2)),)`` ([CKS] Theorem 4, coordinates
        composed), rho rounded up. With ``approx_dp_epsilon`` = eps the event is
        instead ``ApproxDP(eps, delta)`` with the exact delta of [CKS] Theorem 7
        (tight for one scalar release; refuses vector inputs). Not pure DP.
    Citation
        [CKS] Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential
        Privacy", NeurIPS 2020, Theorems 4 and 7, Algorithm 3.
    Runtime
        O(1) expected per coordinate; sampling time depends on the noise only.
    """

    def __init__(self, sensitivity=1, *, sigma_squared=None, sigma=None, rho=None,
                 approx_dp_epsilon=None, source=None):
        self.sensitivity = rational("sensitivity", sensitivity)
        name, value = one_of(sigma_squared=sigma_squared, sigma=sigma, rho=rho)
        if name == "rho":
            rho_value = rational("rho", value, positive=True)
            if self.sensitivity == 0:
                raise ValueError("sensitivity must be > 0 to calibrate from rho; pass sigma")
            self.sigma_squared = self.sensitivity ** 2 / (2 * rho_value)
        elif name == "sigma":
            self.sigma_squared = rational("sigma", value) ** 2
        else:
            self.sigma_squared = rational("sigma_squared", value)
        self._noise_sigma_squared = self.sigma_squared
        self._integer_shift = math.floor(self.sensitivity)
        self._source = resolve_source(source) if source is not None else None
        self._set_events(self.sensitivity ** 2, approx_dp_epsilon)

    @classmethod
    def calibrate(cls, epsilon, delta, sensitivity=1, *, method: str = "exact", charge=None,
                  source=None) -> "DiscreteGaussianMechanism":
        """A mechanism meeting (epsilon, delta) for one scalar release.

        ``method``:

        * ``"exact"`` (default): the smallest sigma^2 (to 2^-20 relative) whose
          exact discrete delta ([CKS] Thm 7) is <= delta;
        * ``"analytic"``: Balle–Wang's continuous sigma, then re-checked with
          Theorem 7 and raised (by factors 1 + 2^-10) until it passes;
        * ``"classical"``: Dwork–Roth sigma = Delta sqrt(2 ln(1.25/delta)) / eps
          (epsilon < 1), re-checked the same way;
        * ``"zcdp"``: the largest rho whose tight zCDP-to-DP conversion ([CKS]
          ``cdp_delta``, :func:`privloss.bounds.zcdp.zcdp_rho_for`) meets
          (epsilon, delta), sigma^2 = Delta^2 / (2 rho) rounded up; valid for
          vectors and composes well.

        ``charge`` ("approx_dp" or "zcdp"; default "zcdp" for method "zcdp",
        else "approx_dp") selects the event: ApproxDP(epsilon, exact delta) or
        ZCDP(rho). The sensitivity must be an integer for Theorem 7.
        """
        eps, target = _check_target(epsilon, delta, method)
        charge = _check_charge(charge, "zcdp" if method == "zcdp" else "approx_dp")
        shift = rational("sensitivity", sensitivity, positive=True)
        if method == "zcdp":
            rho = Fraction(zcdp_rho_for(eps, target))
            sigma_squared = _round_up_short(shift ** 2 / (2 * rho))
        else:
            if shift.denominator != 1:
                raise ValueError(f"sensitivity must be an integer for method {method!r} "
                                 f"(CKS Theorem 7), got {sensitivity!r}")
            sigma_squared = _calibrated_sigma_squared(eps, target, int(shift), method)
        return cls(shift, sigma_squared=sigma_squared,
                   approx_dp_epsilon=eps if charge == "approx_dp" else None, source=source)

    def _release(self, value):
        values = integer_input("value", value)
        self._check_charged_shape(1 if isinstance(values, int) else values.size)
        noise = draw_noise(discrete_gaussian, self.sigma_squared, noise_size(values), self._source)
        return add_exactly(values, noise)

    def confidence_interval_half_width(self, beta, dimension: int = 1) -> int:
        """Smallest integer w with P[max_i |x_i - release_i| > w] <= beta (exact pmf)."""
        return discrete_gaussian_half_width(self.sigma_squared, beta, dimension)

    def __repr__(self) -> str:
        return (f"DiscreteGaussianMechanism(sensitivity={self.sensitivity}, "
                f"sigma_squared={self.sigma_squared}, rho={self.rho})")


def _sqrt_upper(x: Fraction, bits: int = 40) -> Fraction:
    """A rational >= sqrt(x) within about 2^-bits (x >= 0 rational): sqrt(a/b) =
    sqrt(a b) / b, with the integer square root rounded up."""
    scaled = x.numerator * x.denominator << (2 * bits)
    root = math.isqrt(scaled)
    if root * root < scaled:
        root += 1
    return Fraction(root, x.denominator << bits)


class GridGaussianMechanism(WithErrorBars, _GaussianEvents, Mechanism):
    """Real-valued query, float-safe: exact rounding to a grid plus discrete Gaussian noise.

    Definition
        Grid g = 2^-k (``grid_exponent``; default the largest power of two <=
        sensitivity * 2^-20). For x in R^d: clamp to [lower, upper] (if
        declared), round exactly half up to m = floor(x/g + 1/2), add Y iid
        N_Z(0, sigma^2 / g^2) and return (m + Y) g (exact floats when
        |m + Y| < 2^53). Pass one of ``sigma_squared`` / ``sigma`` (real units)
        or ``rho`` (calibrated *including* the rounding cost).
    Privacy guarantee
        Rounding half up moves a coordinate that changes by a by at most
        ceil(a/g) grid steps. Grid-unit l2-sensitivity: D = ceil(Delta/g) when
        ``l0_sensitivity`` = 1 (scalars), otherwise D = Delta/g + sqrt(l0)
        (triangle inequality, sqrt rounded up). ``events = (ZCDP(D^2 / (2
        sigma_g^2)),)``, i.e. the effective sensitivity is D g < Delta + sqrt(l0) g.
        Scalars may instead be charged ``ApproxDP(eps, exact delta)`` of [CKS]
        Theorem 7 with integer shift D (``approx_dp_epsilon``).
    Citation
        [CKS] Theorems 4, 7 and Algorithm 3; Mironov, CCS 2012; OpenDP's
        discretized Gaussian.
    Runtime
        O(d) plus O(1) expected noise work per coordinate (64-bit kernels up to
        sigma/g of about 10^8; slower Python integers beyond).
    """

    def __init__(self, sensitivity, *, sigma_squared=None, sigma=None, rho=None,
                 grid_exponent=None, lower=None, upper=None, dimension: int = 1,
                 l0_sensitivity=None, approx_dp_epsilon=None, source=None):
        self.sensitivity = rational("sensitivity", sensitivity)
        name, value = one_of(sigma_squared=sigma_squared, sigma=sigma, rho=rho)
        self.dimension = check_dimension(dimension)
        self.l0_sensitivity = check_l0(l0_sensitivity, self.dimension)
        if name == "sigma":
            fallback = rational("sigma", value, positive=True)
        elif name == "sigma_squared":
            fallback = rational("sigma_squared", value, positive=True)
        else:
            fallback = Fraction(1)
        self.grid_exponent = check_grid_exponent(grid_exponent, self.sensitivity, fallback)
        self.grid = Fraction(2) ** -self.grid_exponent
        self.lower, self.upper = check_bounds(lower, upper)
        ratio = self.sensitivity / self.grid
        if self.sensitivity == 0:
            self._integer_shift, shift_squared = 0, Fraction(0)
        elif self.l0_sensitivity == 1:
            self._integer_shift = math.ceil(ratio)
            shift_squared = Fraction(self._integer_shift ** 2)
        else:
            self._integer_shift = None  # no 1-D theorem for several coordinates
            shift_squared = (ratio + _sqrt_upper(Fraction(self.l0_sensitivity))) ** 2
        self.grid_sensitivity_squared = shift_squared
        if name == "rho":
            rho_value = rational("rho", value, positive=True)
            if shift_squared == 0:
                raise ValueError("sensitivity must be > 0 to calibrate from rho; pass sigma")
            self.grid_sigma_squared = _round_up_short(shift_squared / (2 * rho_value))
        else:
            real = fallback ** 2 if name == "sigma" else fallback
            self.grid_sigma_squared = real / self.grid ** 2
        self.sigma_squared = self.grid_sigma_squared * self.grid ** 2
        self._noise_sigma_squared = self.grid_sigma_squared
        if approx_dp_epsilon is not None and self._integer_shift is None:
            raise ValueError("approx_dp_epsilon needs l0_sensitivity = 1 (CKS Theorem 7 is "
                             "one-dimensional); use the zCDP event for vectors")
        self._source = resolve_source(source) if source is not None else None
        self._set_events(shift_squared, approx_dp_epsilon)

    @property
    def effective_sensitivity(self) -> float:
        """D g: the l2-sensitivity after rounding, in real units (rounded up)."""
        return float_upper(_sqrt_upper(self.grid_sensitivity_squared) * self.grid)

    def _release(self, value):
        array = real_input("value", value, self.dimension, self.lower, self.upper)
        self._check_charged_shape(array.size)
        units = round_to_grid(array, self.grid_exponent)
        noise = draw_noise(discrete_gaussian, self.grid_sigma_squared, units.shape, self._source)
        return shape_output(grid_to_float(add_exactly(units, noise), self.grid_exponent), value)

    def confidence_interval_half_width(self, beta, dimension: int | None = None) -> float:
        """w g + g/2 (noise half-width in grid units from the exact pmf, plus the
        rounding error), simultaneous over ``dimension`` coordinates; rounded up."""
        dimension = self.dimension if dimension is None else dimension
        w = discrete_gaussian_half_width(self.grid_sigma_squared, beta, dimension)
        return float_upper(w * self.grid + self.grid / 2)

    def _interval_dimension(self, value) -> int:
        return self.dimension        # the declared dimension, as the event charges

    def __repr__(self) -> str:
        return (f"GridGaussianMechanism(sensitivity={self.sensitivity}, "
                f"sigma_squared={self.sigma_squared}, grid=2^-{self.grid_exponent}, rho={self.rho})")

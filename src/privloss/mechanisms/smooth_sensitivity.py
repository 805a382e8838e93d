"""Smooth sensitivity and the private median (Nissim–Raskhodnikova–Smith 2007).

* :func:`median_smooth_sensitivity` - the beta-smooth sensitivity of the median
  of data clamped to ``[lower, upper]``, by the exact NRS formula (an
  O(n log n) divide and conquer, or the O(n^2) direct evaluation);
* :func:`laplace_smoothness` - the smoothness parameter beta under which
  Laplace noise is admissible for a target (epsilon, delta);
* :class:`SmoothSensitivityMedian` - the median released with noise scaled to
  a smooth upper bound on its local sensitivity: Cauchy noise (epsilon-DP) or
  Laplace noise ((epsilon, delta)-DP).

Neighbours: **substitution** (Hamming distance 1 on datasets of a fixed,
public size n), as in NRS; the dataset size is not protected.

Definition (spec ``mechanisms.md`` §5): local sensitivity
``LS(x) = max_{d(x,y)=1} |f(x) - f(y)|``; ``S`` is a beta-smooth upper bound if
``S(x) >= LS(x)`` and ``S(x) <= e^beta S(y)`` for neighbours; the smallest one
is ``S*(x) = max_y LS(y) e^{-beta d(x, y)}``. For the median of sorted clamped
data ``x_1 <= ... <= x_n`` with ``m = ceil(n/2)`` (the lower median when n is
even) and padding ``x_i = lower`` for ``i < 1``, ``x_i = upper`` for ``i > n``:

    S*(x) = max_{k=0..n} e^{-k beta} max_{0<=t<=k+1} (x_{m+t} - x_{m+t-k-1})
          = max_{0 <= i <= m <= j <= n+1} (x_j - x_i) e^{-beta (j - i - 1)}.

Release ``median(x) + (S(x)/alpha) Z`` with Z from an (alpha, beta)-admissible
density (NRS Def. 2.5 and the theorem after it): shifting Z by at most alpha
and dilating it by at most e^{+-beta} each change the probability of every
event by a factor e^{epsilon/2} (plus a delta term for Laplace).

Floating point (caveat). The noise is continuous, so this mechanism is not
exact the way the discrete Laplace mechanisms are. What is done to keep the
float steps harmless:

* the smooth bound is computed in log space with a data-independent upward
  margin and with beta reduced by three times that margin, so the value used is
  a true upper bound on the local sensitivity *and* exactly beta-smooth (see
  :func:`_smooth_upper_bound`); it never underflows to 0 (a data-independent
  floor, which keeps smoothness);
* the noise is an exact rational drawn with 128-bit resolution from the
  library's random source (Cauchy: ratio of the coordinates of a uniform
  lattice point in a disk of radius 2^128; Laplace: the exact discrete Laplace
  sampler at scale 2^128, divided by 2^128), and ``median + scale * Z`` is
  evaluated in exact rational arithmetic and rounded once, correctly, to a
  double. Rounding a real-valued private output is post-processing.
* what remains: the 128-bit noise is a discretisation of the ideal density
  (its CDF is off by about 2^-128), so on output regions where the double grid
  is finer than the noise grid (outputs extremely close to 0, far tails) the
  implemented output law deviates from the ideal one. Such regions carry
  very little probability (heuristically far below 2^-60; not bounded
  rigorously here): the guarantee proven is that of the ideal
  real-arithmetic mechanism.

Citation: K. Nissim, S. Raskhodnikova, A. Smith, "Smooth sensitivity and
sampling in private data analysis", STOC 2007 (§2: admissible noise, Def. 2.5;
§3: the median); lecture notes seed 003.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from privloss.bounds._numeric import check_positive, check_probability
from privloss.events import ApproxDP, PureDP
from privloss.mechanisms.base import Mechanism
from privloss.samplers import discrete_laplace
from privloss.samplers.randomness import resolve_source

__all__ = [
    "NOISE_TYPES",
    "clamp_and_sort",
    "median_smooth_sensitivity",
    "laplace_smoothness",
    "SmoothSensitivityMedian",
]

#: Admissible noise distributions offered by :class:`SmoothSensitivityMedian`.
NOISE_TYPES = ("cauchy", "laplace")
#: Resolution (bits) of the rational noise draws.
NOISE_BITS = 128
_NOISE_GRID = 1 << NOISE_BITS
#: Rows of the O(n^2) evaluation processed per NumPy call (memory bound).
_QUADRATIC_CELLS = 1 << 20
_MAX_DOUBLE = Fraction(np.finfo(float).max)


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

def _check_finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return x


def check_range(lower, upper) -> tuple[float, float]:
    """``lower < upper``, both finite, and ``upper - lower`` finite as a double."""
    lo = _check_finite("lower", lower)
    hi = _check_finite("upper", upper)
    if not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={lower!r}, upper={upper!r}")
    if not math.isfinite(hi - lo):
        raise ValueError(f"upper - lower must be finite as a double, got lower={lower!r}, "
                         f"upper={upper!r}")
    return lo, hi


def clamp_and_sort(data, lower: float, upper: float) -> np.ndarray:
    """The data as a sorted float array clamped to ``[lower, upper]``.

    ``data`` is a non-empty 1-D sequence of real numbers (infinities are
    clamped; NaN is rejected, since no clamp defines where it belongs).
    """
    try:
        values = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"data must be a 1-D sequence of real numbers: {error}") from None
    if values.ndim != 1:
        raise ValueError(f"data must be 1-D, got shape {values.shape}")
    if values.size == 0:
        raise ValueError("data must contain at least one value, got an empty sequence")
    if np.isnan(values).any():
        raise ValueError("data must not contain NaN (clamping cannot place it)")
    return np.sort(np.clip(values, lower, upper))


def median_index(n: int) -> int:
    """1-based index of the (lower) median: ``ceil(n / 2)``."""
    return (n + 1) // 2


# --------------------------------------------------------------------------
# smooth sensitivity of the median (log space)
# --------------------------------------------------------------------------

def _log_pairs(padded: np.ndarray, i, j, beta: float) -> np.ndarray:
    """``log(x_j - x_i) - beta (j - i - 1)``; ``-inf`` where ``x_j == x_i``."""
    with np.errstate(divide="ignore"):
        return np.log(padded[j] - padded[i]) - beta * (j - i - 1)


def _log_smooth_quadratic(padded: np.ndarray, m: int, beta: float) -> float:
    """Max of :func:`_log_pairs` over all ``0 <= i <= m <= j <= n+1``: O(n^2)."""
    n = padded.size - 2
    j = np.arange(m, n + 2)
    rows = max(1, _QUADRATIC_CELLS // j.size)
    best = -math.inf
    for start in range(0, m + 1, rows):
        i = np.arange(start, min(m + 1, start + rows))[:, None]
        best = max(best, float(_log_pairs(padded, i, j[None, :], beta).max()))
    return best


def _log_smooth_fast(padded: np.ndarray, m: int, beta: float) -> float:
    """Same maximum in O(n log n) (NRS's divide and conquer), vectorised per level.

    For fixed i the best j maximises ``(x_j - x_i) e^{-beta j}``. If ``j*`` is a
    maximiser for ``i`` then some maximiser for every ``i' > i`` is ``>= j*``
    and for every ``i' < i`` is ``<= j*``: the difference
    ``(x_{j*} - c) e^{-beta j*} - (x_j - c) e^{-beta j}`` is monotone in c and
    ``x_i`` is non-decreasing in i. So the midpoint's maximiser splits the
    j-range; every level of the recursion scans O(n) pairs.
    """
    n = padded.size - 2
    ilo, ihi = np.array([0]), np.array([m])
    jlo, jhi = np.array([m]), np.array([n + 1])
    best = -math.inf
    while ilo.size:
        mid = (ilo + ihi) // 2
        lengths = jhi - jlo + 1
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        segment = np.repeat(np.arange(ilo.size), lengths)
        j = np.arange(int(lengths.sum())) - starts[segment] + jlo[segment]
        values = _log_pairs(padded, mid[segment], j, beta)
        segment_max = np.maximum.reduceat(values, starts)
        best = max(best, float(segment_max.max()))
        # first position of each segment's maximum (ties, including -inf, are fine)
        position = np.where(values == segment_max[segment], np.arange(values.size), values.size)
        j_star = j[np.minimum.reduceat(position, starts)]
        left = ilo <= mid - 1
        right = mid + 1 <= ihi
        ilo, ihi, jlo, jhi = (np.concatenate((ilo[left], mid[right] + 1)),
                              np.concatenate((mid[left] - 1, ihi[right])),
                              np.concatenate((jlo[left], j_star[right])),
                              np.concatenate((j_star[left], jhi[right])))
    return best


def _log_smooth(sorted_values: np.ndarray, lower: float, upper: float, beta: float,
                algorithm: str) -> float:
    padded = np.concatenate(([lower], sorted_values, [upper]))
    m = median_index(sorted_values.size)
    if algorithm == "fast":
        return _log_smooth_fast(padded, m, beta)
    return _log_smooth_quadratic(padded, m, beta)


def _log_slack(n: int, beta: float, width: float) -> float:
    """Data-independent bound on the absolute float error of the log-space maximum.

    Every candidate is ``log(d) - beta (j - i - 1)`` with ``d`` a correctly
    rounded difference in ``[5e-324, width]`` (so ``|log d| <= 745 + |log width|``)
    and ``j - i - 1 <= n``; a handful of roundings of relative size 2^-53 each
    on terms of that magnitude, plus the final ``exp``. 2^-48 per unit is a
    4x margin over that count.
    """
    return 2.0 ** -48 * (800.0 + abs(math.log(width)) + beta * (n + 1))


def _smooth_upper_bound(sorted_values: np.ndarray, lower: float, upper: float,
                        beta: float) -> float:
    """A beta-smooth upper bound on the median's local sensitivity, as a double.

    With ``s`` = :func:`_log_slack` and ``beta' = beta - 3 s``: the log-space
    maximum at ``beta'`` is within ``s`` of ``log S*_{beta'}``, so
    ``S = exp(max(computed + s, log_floor))`` satisfies
    ``S*_{beta'} <= S <= S*_{beta'} e^{2s} (1 + 2^-52)`` (when above the floor).
    Hence ``S >= LS`` and ``S(x) <= e^{beta' + 3s} S(y) = e^beta S(y)`` for
    neighbours. The floor ``max(width 2^-600, e^-690)`` is a constant, and the
    maximum of a smooth bound and a constant is still smooth; it keeps S a
    normal double.
    """
    n = sorted_values.size
    width = upper - lower
    slack = _log_slack(n, beta, width)
    reduced = beta - 3.0 * slack
    if reduced <= 0:
        raise ValueError(f"beta = {beta!r} is too small to be kept exactly smooth in "
                         f"double precision for n = {n} (needs beta > {3 * slack:.3g}); "
                         f"use a larger epsilon")
    log_floor = max(math.log(width) - 600.0 * math.log(2.0), -690.0)
    log_bound = _log_smooth(sorted_values, lower, upper, reduced, "fast") + slack
    return math.exp(max(log_bound, log_floor))


def median_smooth_sensitivity(data, beta, lower, upper, *, algorithm: str = "fast") -> float:
    """The beta-smooth sensitivity of the median of ``data`` clamped to ``[lower, upper]``.

    Definition
        ``S*(x) = max_{0 <= i <= m <= j <= n+1} (x_j - x_i) e^{-beta (j-i-1)}``
        on the sorted clamped data padded with ``x_0 = lower``,
        ``x_{n+1} = upper``; ``m = ceil(n/2)`` (lower median for even n).
    Privacy guarantee
        None: this is a function of the private data (a diagnostic). The
        mechanism uses it only through :class:`SmoothSensitivityMedian`.
    Accuracy
        Evaluated in log space in doubles, then raised by a relative margin of
        about 1e-12 (see :func:`_log_slack`): the returned value is >= the exact
        one and within that margin of it.
    Citation
        NRS 2007 §3 (formula); spec ``mechanisms.md`` §5.
    Runtime
        ``algorithm="fast"``: O(n log n); ``"quadratic"``: O(n^2) (reference).
    """
    beta = check_positive("beta", beta)
    lower, upper = check_range(lower, upper)
    if algorithm not in ("fast", "quadratic"):
        raise ValueError(f"algorithm must be 'fast' or 'quadratic', got {algorithm!r}")
    values = clamp_and_sort(data, lower, upper)
    slack = _log_slack(values.size, beta, upper - lower)
    return math.exp(_log_smooth(values, lower, upper, beta, algorithm) + slack)


# --------------------------------------------------------------------------
# admissible noise
# --------------------------------------------------------------------------

def laplace_smoothness(epsilon, delta) -> float:
    """Largest beta for which Lap(1) noise with alpha = epsilon/2 gives (epsilon, delta)-DP.

    Definition (derived; spec §5 quotes NRS's ``epsilon / (2 ln(2/delta))``).
    Release ``f(x) + (S(x)/alpha) Z``, ``Z ~ Lap(1)``, ``alpha = epsilon/2``.
    For neighbours x, y let ``Delta = (f(y)-f(x)) alpha / S(x)`` (|Delta| <= alpha)
    and ``e^mu = S(x)/S(y)`` (|mu| <= beta); then for every set U
    ``P[A(x) in .] = P[Z in U]`` and ``P[A(y) in .] = P[Z in e^mu (U - Delta)]``.

    * Sliding: ``P[Z in U] <= e^{epsilon/2} P[Z in U - Delta]`` exactly (the
      Laplace log-density is 1-Lipschitz).
    * Dilation: the log-ratio of the densities of Z and ``e^{-mu} Z`` at z is
      ``-mu + |z| (e^mu - 1)``: at most ``|mu| <= beta <= epsilon/2`` for
      ``mu <= 0``, and for ``0 < mu <= beta`` above epsilon/2 only when
      ``|z| > T(beta) = (epsilon/2 + beta)/(e^beta - 1)``, which has
      probability ``e^{-T(beta)}``. So ``P[Z in V] <= e^{epsilon/2} P[Z in e^mu V]
      + e^{-T(beta)}``.
    * Chaining sliding then dilation:
      ``P[A(x) in S] <= e^epsilon P[A(y) in S] + e^{epsilon/2} e^{-T(beta)}``.

    The returned beta is the largest in ``(0, epsilon/2]`` with
    ``T(beta) >= ln(1/delta) + epsilon/2`` (bisection; T is decreasing, the
    condition is checked with a relative margin of 1e-12). It is slightly
    *larger* than NRS's ``epsilon / (2 ln(2/delta))`` for small epsilon (e.g.
    0.0376 vs 0.0345 at epsilon = 1, delta = 1e-6), and unlike the NRS form
    its delta accounting includes the ``e^{epsilon/2}`` factor that chaining the
    two properties costs.
    Privacy guarantee
        (epsilon, delta)-DP for the release above with any beta-smooth upper bound S.
    Citation
        NRS 2007 Def. 2.5 and the smooth-sensitivity theorem (admissibility);
        the bound above is derived.
    Runtime
        O(100) float evaluations.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta, closed_upper=False, open_lower=True)
    half = 0.5 * epsilon
    needed = -math.log(delta) + half

    def ok(beta: float) -> bool:
        return half + beta >= needed * math.expm1(beta) * (1.0 + 1e-12)

    # (half + beta) - needed * expm1(beta) is concave and positive at 0, so the
    # feasible betas form an interval [0, beta*]; bisect for its end.
    if ok(half):
        return half
    low, high = 0.0, half
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid <= low or mid >= high:
            break
        if ok(mid):
            low = mid
        else:
            high = mid
    if low <= 0.0:
        raise ArithmeticError(f"no admissible beta found for epsilon={epsilon!r}, "
                              f"delta={delta!r}")
    return low


def _cauchy_noise(source) -> Fraction:
    """Standard Cauchy noise as an exact rational with 128-bit resolution.

    (a, b) uniform on the integer points of the disk of radius R = 2^128
    (rejection from the square, acceptance ~pi/4), ``b != 0``; the angle of a
    uniform point in a disk is uniform, so ``a/b = cot(angle)`` is standard
    Cauchy up to the lattice error (CDF off by O(1/R)).
    """
    radius = _NOISE_GRID
    side = 2 * radius + 1
    while True:
        a = source.uniform_below(side) - radius
        b = source.uniform_below(side) - radius
        if b != 0 and a * a + b * b <= radius * radius:
            return Fraction(a, b)


def _laplace_noise(source) -> Fraction:
    """Lap(1) noise discretised to the grid 2^-128, exactly (CKS discrete Laplace)."""
    return Fraction(discrete_laplace(Fraction(_NOISE_GRID), source=source), _NOISE_GRID)


# --------------------------------------------------------------------------
# the mechanism
# --------------------------------------------------------------------------

class SmoothSensitivityMedian(Mechanism):
    """Median with noise calibrated to its smooth sensitivity.

    Definition
        ``M(x) = med(x) + (S(x) / alpha) Z`` where ``med`` is the (lower) median
        of the data clamped to ``[lower, upper]``, ``alpha = epsilon / 2``,
        ``S`` a beta-smooth upper bound on the median's local sensitivity
        (``S*`` up to a 1e-12 relative margin, see the module docstring) and

        * ``noise="cauchy"``: Z standard Cauchy, ``beta = epsilon / 2``;
        * ``noise="laplace"``: Z ~ Lap(1), ``beta`` = :func:`laplace_smoothness`.

        With ``clamp_output`` (default) the result is clamped to
        ``[lower, upper]`` (post-processing).
    Privacy guarantee
        Substitution neighbours, n public. Cauchy: epsilon-DP (``PureDP``):
        the Cauchy log-density ``-ln(1+z^2)`` is 1-Lipschitz (sliding by
        alpha costs epsilon/2) and the dilation log-ratio
        ``-mu + ln((1+e^{2mu}z^2)/(1+z^2))`` lies in ``[-|mu|, |mu|]`` (dilation
        by e^{+-beta} costs epsilon/2). Laplace: (epsilon, delta)-DP
        (``ApproxDP``), proof at :func:`laplace_smoothness`.
        Floating-point caveat: continuous noise; see the module docstring for
        what is exact (rational noise, one correctly rounded final step) and
        what is not (the 128-bit discretisation of the density).
    Accuracy
        Error is ``(2 S(x) / epsilon) |Z|``: median |Z| is 1 (Cauchy) or ln 2
        (Laplace); the Cauchy has heavy tails (P[|Z| > t] ~ 2/(pi t)). Small
        when the data are dense around the median.
    Citation
        NRS 2007 (§2 admissible noise incl. Cauchy-type densities, §3 median);
        spec ``mechanisms.md`` §5.
    Runtime
        O(n log n) per release (sort + smooth sensitivity), O(1) expected noise
        draws. The sort and the divide and conquer take data-dependent time (a
        timing side channel, as for every non-constant-time release here).
    """

    neighbours = "substitution"

    def __init__(self, epsilon, lower, upper, *, noise: str = "cauchy", delta=None,
                 clamp_output: bool = True):
        self.epsilon = check_positive("epsilon", epsilon)
        self.lower, self.upper = check_range(lower, upper)
        if noise not in NOISE_TYPES:
            raise ValueError(f"noise must be one of {NOISE_TYPES}, got {noise!r}")
        if not isinstance(clamp_output, bool):
            raise TypeError(f"clamp_output must be a bool, got {clamp_output!r}")
        self.noise = noise
        self.clamp_output = clamp_output
        if noise == "cauchy":
            if delta not in (None, 0, 0.0):
                raise ValueError(f"delta must be None or 0 with Cauchy noise (pure DP), "
                                 f"got {delta!r}")
            self.delta = 0.0
            self.beta = 0.5 * self.epsilon
            self._events = (PureDP(self.epsilon),)
        else:
            if delta is None:
                raise ValueError("delta is required with Laplace noise: give delta in (0, 1)")
            self.delta = check_probability("delta", delta, closed_upper=False, open_lower=True)
            self.beta = laplace_smoothness(self.epsilon, self.delta)
            self._events = (ApproxDP(self.epsilon, self.delta),)
        # alpha = epsilon / 2 exactly (halving a double is exact)
        self.alpha = Fraction(self.epsilon) / 2

    def smooth_sensitivity(self, data) -> float:
        """The smooth bound ``S(x)`` the mechanism uses (not private: diagnostics only)."""
        values = clamp_and_sort(data, self.lower, self.upper)
        return _smooth_upper_bound(values, self.lower, self.upper, self.beta)

    def noise_scale(self, data) -> float:
        """``S(x) / alpha``, the scale of Z in the release (not private)."""
        return float(Fraction(self.smooth_sensitivity(data)) / self.alpha)

    def _release(self, data, *, source=None) -> float:
        src = resolve_source(source)
        values = clamp_and_sort(data, self.lower, self.upper)
        median = values[median_index(values.size) - 1]
        bound = _smooth_upper_bound(values, self.lower, self.upper, self.beta)
        noise = _cauchy_noise(src) if self.noise == "cauchy" else _laplace_noise(src)
        # exact rational evaluation, one correctly rounded conversion at the end
        output = Fraction(float(median)) + Fraction(bound) / self.alpha * noise
        if self.clamp_output:
            output = min(max(output, Fraction(self.lower)), Fraction(self.upper))
        elif abs(output) > _MAX_DOUBLE:     # far Cauchy tail: correct rounding is +-inf
            return math.copysign(math.inf, output)
        return float(output)

    def __repr__(self) -> str:
        extra = f", delta={self.delta!r}" if self.noise == "laplace" else ""
        return (f"SmoothSensitivityMedian(epsilon={self.epsilon!r}, lower={self.lower!r}, "
                f"upper={self.upper!r}, noise={self.noise!r}{extra})")

"""Optimal adaptive composition of heterogeneous (epsilon_i, delta_i)-DP mechanisms
([MV] Theorem 1.5, composition.md §7.3).

The worst case of adaptively composing (epsilon_i, delta_i)-DP mechanisms is the
product of randomized responses RR_{epsilon_i} (plus independent delta_i "leaks"):

    delta_g = 1 - prod_i (1 - delta_i) * (1 - E_P[(1 - e^{epsilon_g - L})_+]),
    L = sum_i s_i epsilon_i,  s_i = +1 w.p. e^{eps_i}/(1+e^{eps_i}), else -1.

Computing it exactly is #P-hard in general, so this module returns a certified
``Bracket(lower, upper)`` around the optimum, by the first applicable mode:

* **Exact lattice mode.** Every epsilon_i is an integer multiple c_i h of one step
  h (detected from small-denominator ratios, or multiples of an explicit
  ``lattice_step``): the law of L lives on hZ; it is built from grouped binomials
  and sparse convolutions. ``upper`` uses the step rounded up so that
  c_i h >= epsilon_i as reals, ``lower`` the step rounded down (the profile is
  monotone in each epsilon_i), so the ends differ only by float rounding.
* **Rounded lattice mode** (epsilons within 1e-4 relative of a short lattice, e.g.
  nearly equal ones; no ``lattice_step``): every epsilon_i rounded up onto the
  lattice for ``upper`` and down for ``lower`` (monotonicity, see
  :mod:`privloss.bounds._heterogeneous_rounded`), both exact lattice laws; used
  when that bracket meets the tolerance, else intersected with the bracket mode's.
* **Exact enumeration mode** (at most ``AUTO_ENUMERATION_K`` mechanisms, no
  ``lattice_step``): the 2^k atoms of L.
* **Bracket mode** (arbitrary epsilon_i, lattice step h):
  - upper: mechanism i is replaced by the *revealed mixture* "RR at hi_i w.p.
    w_i, else RR at lo_i" (lo_i = floor(eps_i / h) h, hi_i = lo_i + h). With the
    minimal w_i of :func:`_mixture_weights` its privacy profile dominates that
    of RR_{eps_i} for all epsilon_g >= 0; both pairs are symmetric
    (delta_{P||Q} = delta_{Q||P}, and delta(-e) = 1 - e^{-e} + e^{-e} delta(e)),
    so the tradeoff curves are ordered and RR_{eps_i} is a post-processing of
    the mixture (Blackwell). Every eps_i-DP mechanism is therefore a
    post-processing of a fixed lattice pair, and the adaptive composition is
    dominated by the product of the mixtures, whose privacy-loss law is on hZ.
  - lower: the statistic T = sum_i s_i c_i h (c_i = nearest integer to
    eps_i / h) of the true worst-case product is a post-processing, so
    sum_t [P_T(t) - e^{epsilon_g} Q_T(t)]_+ <= true delta (data processing).
  For many mechanisms both errors are second order in h (the bracket shrinks
  like k h^2); for a few large epsilon_i they are first order near the atoms of
  L (the mixture profile exceeds RR's by O(h) just above u = e^{eps_i}).
  Without an explicit step the lattice is refined until the wanted width.

Numerics: the lattice laws are built by "shift-and-add" dynamic programmes or
binomial recurrences, i.e. sums of products of non-negative numbers, so every
entry carries a *relative* error bound (tracked explicitly, ~k u). Entries of
negligible P-mass are pruned from the edges; the pruned P-mass is added to the
upper bound (for the lower bound, pruning a state in both P and Q is itself a
post-processing). delta(epsilon_g) is evaluated as sum_l P(l) (-expm1(epsilon_g - l))
(non-negative terms; loss values j h formed exactly or in double-double) and the
bounds are pushed outward by the tracked errors. epsilon(delta) inverts the
piecewise affine (in e^{epsilon_g}) profiles exactly and re-checks the result
(``certify_epsilon`` upward for ``upper``, the mirror image downward for ``lower``).

Many mechanisms (more than ``SPECTRAL_MIN_MECHANISMS - 1`` = 1000, when the k-pass
programme would cost more than ~0.05 s): the same two laws are built spectrally
(:mod:`privloss.bounds._lattice_fft`, :mod:`privloss.bounds._heterogeneous_spectral`).
Each kernel is *exponentially tilted* by e^{theta l} so that the tilted law has its
mean at the loss of interest (epsilon_g, or the previous pass's bracket end:
the coarse pass is reused to place the next pass's tilt); convolution commutes
with the tilt, so the tilted law is the product of the tilted kernels'
characteristic functions. Only the frequencies where a certified bound on |phi|
(from the pairwise kernel distances, one real FFT) is above 1e-18 / sqrt(N) are
evaluated (about 50 for non-periodic laws), then one inverse real FFT of a window
of +-7 tilted standard deviations gives the tilted law with a certified L1 error
(window tail by Chernoff's bound, left-out frequencies, the product of k transforms,
FFT rounding). Since the entries that make delta sit near the maximum of the tilted
law, that absolute error is relative to them: the upper law adds
(L1 error + tail) M(theta) e^{-theta epsilon_g / h} to every evaluation (only losses
above epsilon_g count, and theta >= 0), the lower pair subtracts the corresponding
terms over the states it keeps (any set of states is a valid lower bound). About
4e-9 relative at k = 2000, 1e-8 at 10^4, 1e-7 at 10^5 (the bracket's own width is
1e-4 .. 1e-3). Cost: O(k) for the tilt, O(k |J|) for
the characteristic function and O(N log N) for the FFTs, instead of O(k N).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from privloss.bounds._heterogeneous_lattice import (AUTO_ENUMERATION_K, EXACT_LATTICE_POINTS,
                                                    MAX_LATTICE_POINTS, MAX_LATTICE_WORK,
                                                    _bracket_cost, _bracket_laws,
                                                    _enumerated_laws, _exact_laws,
                                                    _LatticeTooLarge, _mixture_weights,
                                                    _short_step)
from privloss.bounds._heterogeneous_laws import _TINY, _U
from privloss.bounds._heterogeneous_rounded import rounded_lattice_laws
from privloss.bounds._numeric import (Bracket, certify_epsilon, check_epsilon_list, check_nonnegative,
                                      check_positive, exact_rational_sum)

__all__ = ["AUTO_ENUMERATION_K", "DELTA_RELATIVE_TOLERANCE", "EXACT_LATTICE_POINTS",
           "MAX_ENUMERATION_K", "MAX_LATTICE_POINTS", "MAX_LATTICE_WORK", "Bracket",
           "heterogeneous_dp_delta", "heterogeneous_dp_delta_enumerated",
           "heterogeneous_dp_epsilon"]

#: Pruning never goes below this mass, which also keeps the DP away from subnormals.
_MIN_THRESHOLD = 1e-280
#: Default relative width targeted by :func:`heterogeneous_dp_delta` in bracket mode.
DELTA_RELATIVE_TOLERANCE = 1e-4
#: A rounded-lattice bracket (nearly equal or near-lattice epsilons) at most this wide
#: (relative) is returned without the bracket mode, whose refinement stays far wider
#: for such inputs (1.47x at 10^5 epsilons within 1e-6 of each other).
ROUNDED_RELATIVE_TOLERANCE = 1e-3
#: The same for epsilon brackets (about the same relative delta: at 10^5 epsilons of
#: ~0.1, 1e-5 of epsilon_g moves delta by ~6e-4 relative); also accepted when
#: ``tolerance`` is smaller.
ROUNDED_EPSILON_RELATIVE_TOLERANCE = 1e-5
#: Largest k accepted by the 2^k enumeration.
MAX_ENUMERATION_K = 20


# --------------------------------------------------------------------------
# validation and the delta_i "leak" factor
# --------------------------------------------------------------------------

def _validate_mechanisms(epsilons, deltas) -> tuple[np.ndarray, np.ndarray]:
    eps = check_epsilon_list("epsilons", epsilons)
    if deltas is None:
        return eps, np.zeros_like(eps)
    try:
        dels = np.asarray(deltas, dtype=float).reshape(-1)
    except (TypeError, ValueError) as err:
        raise TypeError(f"deltas must be a sequence of reals in [0, 1], got {deltas!r}") from err
    if dels.shape != eps.shape:
        raise ValueError(f"deltas must have the same length as epsilons ({eps.size}), "
                         f"got length {dels.size}")
    bad = ~((dels >= 0) & (dels <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"deltas[{i}] must be in [0, 1], got {dels[i]!r}")
    return eps, dels


def _leak_bounds(deltas: np.ndarray) -> tuple[float, float]:
    """(lower, upper) bounds on 1 - prod_i (1 - delta_i)."""
    if deltas.size == 0 or not deltas.any():
        return 0.0, 0.0
    if (deltas >= 1).any():
        return 1.0, 1.0
    # log1p: rel. error u each; fsum: exact rounding; -expm1: rel. error <= 3u.
    value = -math.expm1(math.fsum(np.log1p(-deltas).tolist()))
    slack = 16 * _U
    return max(0.0, value * (1 - slack)), min(1.0, value * (1 + slack) + _TINY)


def _combine_up(leak_up: float, pure_up: float) -> float:
    """Upper bound of 1 - (1 - leak)(1 - pure); increasing in both arguments."""
    pure_up = min(max(pure_up, 0.0), 1.0)
    value = leak_up + (1.0 - leak_up) * pure_up
    return min(1.0, value * (1 + 4 * _U) + _TINY) if value > 0 else 0.0


def _combine_down(leak_down: float, pure_down: float) -> float:
    """Lower bound of 1 - (1 - leak)(1 - pure)."""
    pure_down = min(max(pure_down, 0.0), 1.0)
    value = leak_down + (1.0 - leak_down) * pure_down
    return max(0.0, value * (1 - 4 * _U))


def _exact_sum(eps: np.ndarray) -> Fraction:
    values, counts = np.unique(eps, return_counts=True)
    return exact_rational_sum(values, counts)


def _sum_bracket(eps: np.ndarray) -> tuple[float, float]:
    """Floats just below / above the exact real sum of the epsilons."""
    exact = _exact_sum(eps)
    value = float(exact)
    down = value if Fraction(value) <= exact else math.nextafter(value, -math.inf)
    up = value if Fraction(value) >= exact else math.nextafter(value, math.inf)
    return down, up


def _at_least_total(eps: np.ndarray, epsilon_g: float) -> bool:
    """epsilon_g >= sum(eps) exactly (then the pure part of delta is 0)."""
    if math.isinf(epsilon_g):
        return True
    return Fraction(epsilon_g) >= _exact_sum(eps)


# --------------------------------------------------------------------------
# inversion helpers
# --------------------------------------------------------------------------

def _certify_below(delta_of_epsilon, target: float, epsilon: float) -> float:
    """Largest of epsilon (1 - 2^j 1e-15) with delta > target (0 if none): a lower bound."""
    if not epsilon > 0:
        return 0.0
    if math.isinf(epsilon):
        epsilon = 1e300
    step = epsilon * 1e-15
    candidate = epsilon
    for _ in range(64):
        if candidate <= 0:
            return 0.0
        if delta_of_epsilon(candidate) > target:
            return candidate
        candidate = epsilon - step
        step *= 2.0
    return 0.0


def _pure_level(target: float, leak: float) -> float:
    """Level of the pure part at which 1 - (1 - leak)(1 - pure) = target."""
    if leak >= 1:
        return -1.0
    return (target - leak) / (1.0 - leak)


def _epsilon_bracket(upper_law, lower_law, target: float, leak: tuple[float, float],
                     total: tuple[float, float]) -> Bracket:
    def upper_delta(e: float) -> float:
        return _combine_up(leak[1], upper_law.value(e))

    def lower_delta(e: float) -> float:
        return _combine_down(leak[0], lower_law.value(e))

    if upper_delta(0.0) <= target:
        upper = 0.0
    else:
        guess = upper_law.root(_pure_level(target, leak[1]))
        upper = certify_epsilon(upper_delta, target, guess)
    if leak[1] <= target:
        # at epsilon_g = sum(eps) the pure part of the true delta vanishes
        upper = min(upper, total[1])
    if lower_delta(0.0) <= target:
        lower = 0.0
    else:
        guess = lower_law.root(_pure_level(target, leak[0]))
        lower = _certify_below(lower_delta, target, guess)
    return Bracket(min(lower, upper), upper)


def _delta_bracket(upper_law, lower_law, epsilon_g: float,
                   leak: tuple[float, float]) -> Bracket:
    upper = _combine_up(leak[1], upper_law.value(epsilon_g))
    lower = _combine_down(leak[0], lower_law.value(epsilon_g))
    return Bracket(min(lower, upper), upper)


def _intersection(bracket: Bracket, other: Bracket | None) -> Bracket:
    """Both brackets are certified, so the optimum lies in their intersection."""
    if other is None:
        return bracket
    upper = min(bracket.upper, other.upper)
    return Bracket(min(max(bracket.lower, other.lower), upper), upper)


def _initial_step(eps: np.ndarray, points: int = 32768) -> float:
    return _short_step(2.0 * float(np.sum(eps)) / points, 8)


def _refined_step(step: float, width: float, tolerance: float) -> float:
    """Next step from the h^2 law of the bracket width (at least halve, at most /32)."""
    factor = 0.7 * math.sqrt(tolerance / width) if width > 0 and math.isfinite(width) else 0.5
    return _short_step(step * min(0.5, max(factor, 1.0 / 32.0)), 8)


def _affordable_step(eps: np.ndarray, step: float, threshold: float) -> float | None:
    """``step`` if within the memory/work limits, else the smallest affordable larger one."""
    for _ in range(400):
        length, work = _bracket_cost(eps, step, threshold)
        if length <= MAX_LATTICE_POINTS and work <= MAX_LATTICE_WORK:
            return step
        step = _short_step(step * 1.125, 8)
    return None


def _gaussian_guess(eps: np.ndarray, target: float) -> tuple[float, float]:
    """(epsilon_g of the Gaussian approximation of the loss at delta = ``target``, the
    loss's standard deviation): a tilt centre for the spectral passes while the
    bracket is wide (any value keeps the bounds valid)."""
    from scipy.special import log_ndtr

    half = np.tanh(eps / 2.0)
    mean = float(np.sum(eps * half))
    deviation = max(math.sqrt(float(np.sum(eps * eps * (1.0 - half * half)))), 1e-300)
    low, high = 0.0, float(np.sum(eps))
    for _ in range(80):
        middle = 0.5 * (low + high)
        value = (math.exp(float(log_ndtr((mean - middle) / deviation)))
                 - math.exp(min(700.0, middle + float(log_ndtr(-(middle + mean) / deviation)))))
        if value > target:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high), deviation


def _refine(eps: np.ndarray, step: float | None, threshold: float, assess,
            tolerance: float, centers, rethreshold=None):
    """Bracket-mode laws, refining the step until the width is at most ``tolerance``.

    ``assess(laws)`` gives (width, centres for the next pass): the losses of interest
    (upper, lower) at which the spectral construction tilts its laws, taken from the
    previous, coarser pass; ``centers`` are those of the first pass. With a fixed
    ``step`` a single pass is made. ``rethreshold(laws)`` (optional) gives the pruning
    threshold for the passes after the first, coarse one. Returns the last completed
    (valid) laws when the limits stop the refinement early.
    """
    if step is not None:
        step = _short_step(step, 26)
        length = int(2 * np.sum(np.floor(eps / step) + 1)) + 1
        if length > MAX_LATTICE_POINTS:
            raise ValueError(f"lattice_step={step!r} needs {length} lattice points, more than "
                             f"MAX_LATTICE_POINTS={MAX_LATTICE_POINTS}; use a larger step")
        return _bracket_laws(eps, step, threshold, centers)
    h = _affordable_step(eps, _initial_step(eps), threshold)
    if h is None:
        raise MemoryError("no lattice fits MAX_LATTICE_POINTS / MAX_LATTICE_WORK")
    try:
        laws = _bracket_laws(eps, h, threshold, centers)
    except _LatticeTooLarge:
        laws = _bracket_laws(eps, h, threshold, None)     # no previous pass to fall back on
    if rethreshold is not None:
        threshold = rethreshold(laws)
    for _ in range(12):
        width, centers = assess(laws)
        if width <= tolerance:
            break
        wanted = _refined_step(h, width, tolerance)
        affordable = _affordable_step(eps, wanted, threshold)
        if affordable is None or affordable >= h:
            break
        try:
            laws = _bracket_laws(eps, affordable, threshold, centers)
        except _LatticeTooLarge:
            break
        h = affordable
        if affordable > wanted:
            break       # capped by the limits: no finer lattice is affordable
    return laws


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------

def heterogeneous_dp_delta(epsilons, epsilon_g: float, *, deltas=None,
                           lattice_step: float | None = None) -> Bracket:
    """Bracket on the optimal delta of adaptively composed (epsilon_i, delta_i)-DP mechanisms.

    Theorem: [MV] Theorem 1.5 (composition.md §7.3): the optimum is
    1 - prod(1 - delta_i) (1 - E_P[(1 - e^{epsilon_g - L})_+]) with L the summed
    loss of independent randomized responses RR_{epsilon_i}; homogeneous case =
    [CR] Theorem 1 = [KOV] Theorem 3.3.
    Assumptions: adaptive composition (hence also non-adaptive), heterogeneous;
    ``epsilons[i]``, ``deltas[i]`` are the parameters of mechanism i (epsilon_i = 0
    costs nothing); ``epsilon_g >= 0`` is the overall epsilon; ``lattice_step``
    (optional) is the loss grid: if every epsilon_i is a multiple of it the result
    is exact, otherwise it is the step of the bracket construction (rounded down to
    26 significant bits).
    Guarantee: ``lower <= optimal delta <= upper``, both certified. Exact modes
    give the optimum up to float rounding, pushed outward: epsilons on a common
    lattice (short decimals such as 0.1, 0.25, rational ratios, or multiples of
    ``lattice_step``), or at most ``AUTO_ENUMERATION_K`` mechanisms without
    ``lattice_step`` (2^k enumeration). Otherwise the revealed-mixture upper bound
    and the statistic lower bound of the module docstring; without
    ``lattice_step`` the grid is refined until ``upper - lower <= 1e-4 * upper``
    or the memory/work limits are reached (the bracket stays certified).
    Runtime: O(k * lattice length) for the dynamic programmes up to 1000
    mechanisms, beyond that O(k |J| + N log N) for the spectral construction of the
    module docstring (k = 10^4 epsilons in [0.01, 0.5]: about 0.4 s, was 6.7 s);
    homogeneous input is one O(k) binomial.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    step = None if lattice_step is None else check_positive("lattice_step", lattice_step)
    leak = _leak_bounds(dels)
    eps = eps[eps > 0]
    if eps.size == 0 or _at_least_total(eps, eg) or leak[0] >= 1:
        return Bracket(leak[0], leak[1])
    threshold = _MIN_THRESHOLD
    exact = _exact_laws(eps, step, threshold)
    if exact is not None:
        return _delta_bracket(exact[0], exact[1], eg, leak)
    rounded = None if step is not None else rounded_lattice_laws(eps, threshold)
    if rounded is not None:
        rounded = _delta_bracket(rounded[0], rounded[1], eg, leak)
        if rounded.upper - rounded.lower <= ROUNDED_RELATIVE_TOLERANCE * rounded.upper:
            return rounded

    def assess(laws):
        bracket = _delta_bracket(laws[0], laws[1], eg, leak)
        return (bracket.upper - bracket.lower) / max(bracket.upper, 1e-300), (eg, eg)

    def rethreshold(laws) -> float:
        # prune states whose total mass cannot move delta by more than 1e-12 relative
        bracket = _delta_bracket(laws[0], laws[1], eg, (0.0, 0.0))
        scale = bracket.lower if bracket.lower > 0 else 1e-6 * bracket.upper
        return max(_MIN_THRESHOLD, scale * 1e-12 / MAX_LATTICE_POINTS)

    laws = _refine(eps, step, threshold, assess, DELTA_RELATIVE_TOLERANCE, (eg, eg), rethreshold)
    return _intersection(_delta_bracket(laws[0], laws[1], eg, leak), rounded)


def heterogeneous_dp_epsilon(epsilons, target_delta: float, *, deltas=None,
                             tolerance: float = 1e-4) -> Bracket:
    """Bracket on the optimal epsilon of adaptively composed (epsilon_i, delta_i)-DP mechanisms.

    Theorem: [MV] Theorem 1.5 (composition.md §7.3), inverted: the smallest
    epsilon_g whose optimal delta is at most ``target_delta``; homogeneous case =
    [CR] Theorem 1 = [KOV] Theorem 3.3.
    Assumptions: adaptive composition (hence also non-adaptive), heterogeneous;
    ``epsilons[i]``, ``deltas[i]`` are the parameters of mechanism i (epsilon_i = 0
    costs nothing); ``target_delta >= 0`` (>= 1 gives 0; 0 gives the pure sum);
    ``tolerance > 0`` is the wanted ``upper - lower``.
    Guarantee: ``upper`` is a valid epsilon (its upper-bound delta is re-checked to
    be <= ``target_delta``), ``lower`` is a certified lower bound on the optimal
    epsilon (a certified lower bound on the optimal delta exceeds the target there).
    Infeasible targets (below 1 - prod(1 - delta_i)) give ``Bracket(inf, inf)``.
    In the exact modes (see :func:`heterogeneous_dp_delta`) the ends differ by
    float rounding only; near-lattice epsilons (rounded lattice mode) give a
    bracket accepted when ``upper - lower <= tolerance`` or ``<= 1e-5 * upper``
    (``ROUNDED_EPSILON_RELATIVE_TOLERANCE``; the bracket mode cannot tighten such
    input cheaply); otherwise the lattice is refined until
    ``upper - lower <= tolerance``; if the memory/work limits
    (``MAX_LATTICE_POINTS``, ``MAX_LATTICE_WORK``) stop the refinement, the wider,
    still certified bracket is returned.
    Runtime: O(k * lattice length) per refinement up to 1000 mechanisms, the
    lattice pruned to the mass that matters at ``target_delta`` (about 0.2 s for
    k = 1000 epsilons in [0.01, 0.5] at tolerance 1e-3); beyond, the spectral
    construction, O(k |J| + N log N) per refinement with a window of N <=
    ``SPECTRAL_MAX_POINTS`` points (k = 10^4 in [0.01, 0.5]: 0.4 s at 1e-3, was
    6.7 s; k = 10^5: about 4 s and 0.55 GB); homogeneous input is one O(k) binomial.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    target = check_nonnegative("target_delta", target_delta)
    tol = check_positive("tolerance", tolerance)
    if target >= 1:
        return Bracket(0.0, 0.0)
    leak = _leak_bounds(dels)
    if leak[0] > target:
        return Bracket(math.inf, math.inf)
    eps = eps[eps > 0]
    if eps.size == 0:
        return Bracket(0.0, 0.0 if leak[1] <= target else math.inf)
    total = _sum_bracket(eps)
    if target == 0:
        return Bracket(total[0], total[1] if leak[1] <= target else math.inf)
    # states of P-mass below this cannot move the bracket (their total is ~1e-12 target)
    threshold = max(_MIN_THRESHOLD, target * 1e-12 / MAX_LATTICE_POINTS)
    exact = _exact_laws(eps, None, threshold)
    if exact is not None:
        return _epsilon_bracket(exact[0], exact[1], target, leak, total)
    rounded = rounded_lattice_laws(eps, threshold)
    if rounded is not None:
        rounded = _epsilon_bracket(rounded[0], rounded[1], target, leak, total)
        width = rounded.upper - rounded.lower
        if width <= tol or width <= ROUNDED_EPSILON_RELATIVE_TOLERANCE * rounded.upper:
            return rounded

    guess, deviation = _gaussian_guess(eps, _pure_level(target, leak[1]))

    assessed = {}

    def assess(laws):
        bracket = _epsilon_bracket(laws[0], laws[1], target, leak, total)
        assessed[id(laws)] = (laws, bracket)      # the last pass is not evaluated twice
        width = bracket.upper - bracket.lower
        if width <= deviation:
            return width, (bracket.upper, bracket.lower)
        # a wide (coarse) bracket: tilt both laws at the approximation inside it
        middle = min(max(guess, bracket.lower), bracket.upper)
        return width, (middle, middle)

    laws = _refine(eps, None, threshold, assess, tol, (guess, guess))
    if id(laws) in assessed and assessed[id(laws)][0] is laws:
        return _intersection(assessed[id(laws)][1], rounded)
    return _intersection(_epsilon_bracket(laws[0], laws[1], target, leak, total), rounded)


def heterogeneous_dp_delta_enumerated(epsilons, epsilon_g: float, deltas=None) -> float:
    """Optimal delta of adaptive heterogeneous DP composition by 2^k enumeration (reference).

    Theorem: [MV] Theorem 1.5 (composition.md §7.3), evaluated term by term over
    the 2^k outcomes of the product of randomized responses.
    Assumptions: adaptive composition, heterogeneous; at most 20 mechanisms with
    epsilon_i > 0 (epsilon_i = 0 ones are free); ``deltas[i]`` as in
    :func:`heterogeneous_dp_delta`; ``epsilon_g >= 0``.
    Guarantee: an upper bound on the optimum, and close to it: outcome
    probabilities are products (relative error (4k + 4) u, u = 2^-53, pushed up)
    and the float error of the summed losses (<= k u sum(eps)) is absorbed by
    evaluating the profile at epsilon_g minus that bound.
    Runtime: O(2^k) time and memory.
    """
    eps, dels = _validate_mechanisms(epsilons, deltas)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    leak = _leak_bounds(dels)
    eps = eps[eps > 0]
    if eps.size > MAX_ENUMERATION_K:
        raise ValueError(f"epsilons must have at most {MAX_ENUMERATION_K} positive entries "
                         f"for enumeration, got {eps.size}")
    if eps.size == 0 or _at_least_total(eps, eg):
        return leak[1]
    return _combine_up(leak[1], _enumerated_laws(eps)[0].value(eg))

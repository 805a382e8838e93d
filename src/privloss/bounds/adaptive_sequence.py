"""Optimal adaptive composition of a short, ordered sequence of epsilon_i-DP and
epsilon_i-BR mechanisms ([CR] Lemma 5.1 = the [DDR] recursion).

The adversary fixes the privacy parameters and the order in advance but picks
every mechanism after seeing the earlier outputs. The worst case is a tree of
generalized randomized responses and the optimal delta is ``V_1(epsilon_g)`` for

    V_{k+1}(x) = [1 - e^x]_+,
    BR round:  V_i(x) = sup_{t in [0, eps_i]} q_t V_{i+1}(x - t) + (1 - q_t) V_{i+1}(x - t + eps_i),
    DP round:  V_i(x) = a V_{i+1}(x - eps_i) + (1 - a) V_{i+1}(x + eps_i),  a = e^eps / (1 + e^eps),

with q_t = q_{eps_i, t} of [DDR] Definition 2.4 (composition.md Lemma 5.1).

How the certified bracket is computed (all of it derived here, not in the papers):

* Every V_i is the optimal delta of the suffix composition, i.e. a supremum over
  adversaries of hockey-stick divergences ``sup_S P(S) - e^x Q(S)``; each is affine
  in ``z = e^x``, so **V_i is convex and non-increasing as a function of e^x**.
  Hence, between two grid points, V_i lies below the chord drawn in the
  variable e^x (second-order accurate, no monotone-step loss).
* V_i(x) = 1 - e^x for x <= -(sum of the remaining epsilons) and 0 for
  x >= (that sum): the per-round loss lies in [-eps_i, eps_i].
* Each epsilon is put on a lattice h Z: rounded *up* for the upper bound (an
  eps-BR / eps-DP mechanism is also eps'-BR / eps'-DP for eps' >= eps) and
  *down* for the lower bound; commensurate epsilons (rational ratios) are
  represented exactly by choosing h slightly above / below their common unit.
* Upper pass: for t in a lattice piece [m h, (m + 1) h] the objective is bounded
  by an explicit smooth function G (chords in e^x of the grid upper values,
  exact q_t) whose supremum is at most max(G at both ends) + h^2/8 sup|G''|,
  with sup|G''| bounded in closed form. G at the ends are the lattice values.
* Lower pass: the adversary restricted to lattice t (a valid strategy), exact
  at the grid points. Between grid points: secants in e^x (convexity again).
* The final BR step from the terminal value uses the closed form of [CR]
  Lemma C.1 ("reduction identity"); DP rounds are exact on the grid (the DP
  unrolling of [CR] Lemma 5.2 is used by the high-precision evaluator).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from scipy.special import expit

from privloss.bounds._numeric import (Bracket, RELATIVE_SLACK, certify_epsilon, check_nonnegative,
                                      check_probability, round_up, safe_delta)
from privloss.bounds._adaptive_steps import (_br_step_lattice, _br_step_upper,
                                             _dp_step, _q_and_complement,
                                             _refine_quartic)

#: Longest sequence (counting mechanisms with epsilon > 0) accepted. The cost does
#: not grow with k, but the certified bracket widens roughly like k^3 / resolution^2
#: (relative width ~4e-5 at k = 20, eps = 1).
MAX_SEQUENCE_LENGTH = 20

#: Number of lattice steps h across the sum of the epsilons in the certified
#: passes. Run time grows like its square (about 0.5 s at 9600 for any k).
_RESOLUTION = 9600
#: Same for the high-precision grid evaluator of :func:`adaptive_sequence_value`.
_VALUE_RESOLUTION = 9600
#: Largest denominator tried when looking for rational ratios between epsilons.
_MAX_DENOMINATOR = 1000
#: Number of BR rounds (excluding a final BR, which has a closed form) up to
#: which :func:`adaptive_sequence_value` uses direct nested maximisation.
_MAX_NESTED_DEPTH = 2
_KINDS = ("dp", "br")


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

def _validate_sequence(sequence) -> tuple[tuple[str, float], ...]:
    """Return the sequence as ((kind, epsilon), ...) with kind in {'dp', 'br'}."""
    if isinstance(sequence, (str, bytes)) or not isinstance(sequence, Sequence):
        raise TypeError("sequence must be a sequence of (kind, epsilon) pairs with kind "
                        f"in {_KINDS}, got {sequence!r}")
    if len(sequence) == 0:
        raise ValueError("sequence must contain at least one (kind, epsilon) pair")
    items = []
    for index, item in enumerate(sequence):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise TypeError(f"sequence[{index}] must be a (kind, epsilon) pair, got {item!r}")
        kind, epsilon = item
        if not isinstance(kind, str) or kind.strip().lower() not in _KINDS:
            raise ValueError(f"sequence[{index}] kind must be one of {_KINDS}, got {kind!r}")
        eps = check_nonnegative(f"sequence[{index}] epsilon", epsilon)
        items.append((kind.strip().lower(), eps))
    # epsilon = 0 mechanisms release nothing about the data: drop them
    effective = tuple(item for item in items if item[1] > 0)
    if len(effective) > MAX_SEQUENCE_LENGTH:
        raise ValueError(
            f"sequence has {len(effective)} mechanisms with epsilon > 0; the exact adaptive "
            f"recursion is limited to MAX_SEQUENCE_LENGTH = {MAX_SEQUENCE_LENGTH}. Use a "
            "set-wise bound ([CR] eq. (3)) or zCDP for longer sequences")
    return effective


def _exact_total(sequence) -> Fraction:
    """Exact sum of the epsilons: the largest possible total privacy loss."""
    return sum((Fraction(eps) for _, eps in sequence), Fraction(0))


def _total(sequence) -> float:
    """Sum of the epsilons, rounded up to a float."""
    return _float_above(_exact_total(sequence))


def _beyond_total(sequence, epsilon_g: float) -> bool:
    """True when epsilon_g >= sum of epsilons, where delta_opt = 0 exactly."""
    return math.isinf(epsilon_g) or Fraction(epsilon_g) >= _exact_total(sequence)


# --------------------------------------------------------------------------
# one-mechanism formulas
# --------------------------------------------------------------------------

def _terminal(x):
    """V_{k+1}(x) = [1 - e^x]_+."""
    x = np.asarray(x, dtype=float)
    return -np.expm1(np.minimum(x, 0.0))


def _br_terminal_step(x, epsilon):
    """Closed form of one epsilon-BR round in front of the terminal value.

    [CR] Lemma C.1 (reduction identity): sup_t q [1-e^{x-t}]_+ + (1-q) [1-e^{x-t+eps}]_+
    equals 1 - e^x for x <= -eps, (1 - e^{(x-eps)/2})^2 / (1 - e^{-eps}) on
    [-eps, eps] (at t = (x + eps) / 2) and 0 for x >= eps.
    """
    x = np.asarray(x, dtype=float)
    inside = np.clip(x, -epsilon, epsilon)
    middle = np.expm1((inside - epsilon) / 2.0) ** 2 / -math.expm1(-epsilon)
    return np.where(x <= -epsilon, _terminal(x), np.where(x >= epsilon, 0.0, middle))


# --------------------------------------------------------------------------
# lattice choice
# --------------------------------------------------------------------------

class _Lattice(NamedTuple):
    h_upper: float                 # grid step of the upper pass
    units_upper: tuple[int, ...]   # eps_i <= units_upper[i] * h_upper (exactly, in reals)
    h_lower: float
    units_lower: tuple[int, ...]   # units_lower[i] * h_lower <= eps_i
    commensurate: bool


def _float_above(value: Fraction) -> float:
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


def _float_below(value: Fraction) -> float:
    f = float(value)
    return f if Fraction(f) <= value else math.nextafter(f, -math.inf)


def _common_units(epsilons) -> tuple[int, ...] | None:
    """Integers n_i with eps_i / eps_max = n_i / L to relative 1e-12, or None."""
    largest = max(epsilons)
    numerators, denominators = [], []
    for eps in epsilons:
        ratio = eps / largest
        fraction = Fraction(ratio).limit_denominator(_MAX_DENOMINATOR)
        if abs(float(fraction) - ratio) > 1e-12 * ratio:
            return None
        numerators.append(fraction.numerator)
        denominators.append(fraction.denominator)
    common = math.lcm(*denominators)
    return tuple(n * (common // d) for n, d in zip(numerators, denominators))


def _near_units(epsilons, resolution: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Integer epsilons (upper, lower) for incommensurate epsilons.

    Scans the number of units given to the largest epsilon and keeps the choice
    whose integer vector is most nearly proportional to the epsilons
    (simultaneous rational approximation), so rounding onto the lattice moves
    each epsilon by much less than one step. Epsilons below half a step get one
    unit in the upper pass and none in the lower pass (both valid).
    """
    eps = np.asarray(epsilons, dtype=float)
    largest = float(eps.max())
    top = max(1, int(resolution * largest / eps.sum()))
    candidates = np.arange(max(1, (3 * top) // 4), top + 1)
    steps = largest / candidates                                   # one step per candidate
    counts = np.rint(eps[None, :] / steps[:, None])
    small = counts < 1
    ratio = np.where(small, np.nan, eps[None, :] / np.where(small, 1.0, counts))
    with np.errstate(invalid="ignore"):
        spread = np.nanmax(ratio, axis=1) / np.nanmin(ratio, axis=1)
    best = int(np.nanargmin(spread))
    chosen = counts[best]
    upper = tuple(int(max(n, 1)) for n in chosen)
    lower = tuple(int(n) for n in chosen)
    return upper, lower


def _choose_lattice(epsilons, resolution: int) -> _Lattice:
    """Lattice steps and integer epsilons for the two certified passes.

    The upper pass uses h_up = max_i eps_i / n_i (so n_i h_up >= eps_i) and the
    lower pass h_low = min_i eps_i / n_i (so n_i h_low <= eps_i), computed with
    exact rationals and rounded outward to floats.
    """
    units = _common_units(epsilons)
    if units is not None and sum(units) <= resolution:
        scale = max(1, resolution // sum(units))
        up = low = tuple(n * scale for n in units)
        commensurate = True
    else:
        up, low = _near_units(epsilons, resolution)
        commensurate = False
    h_up = max(Fraction(eps) / n for eps, n in zip(epsilons, up))
    h_low = min(Fraction(eps) / n for eps, n in zip(epsilons, low) if n > 0)
    return _Lattice(_float_above(h_up), up, _float_below(h_low), low, commensurate)


# --------------------------------------------------------------------------
# grid passes (upper, lower, high-precision value)
# --------------------------------------------------------------------------



def _grid_pass(kinds, units, h, mode, origin=0.0):
    """Tabulate V_1 on the nodes origin + j h, j = -J..J.

    ``mode``: 'upper' (certified upper bound), 'lower' (lattice strategy, exact at
    nodes) or 'value' (lattice plus quartic refinement: high-precision estimate).
    ``origin`` must lie in [0, h). Returns (j_offset, values) with
    values[j + j_offset] at node j.
    """
    total = sum(units)
    offset = total + max(units) + 5
    x = origin + np.arange(-offset, offset + 1) * h
    values = _terminal(x)
    effective = [i for i, n in enumerate(units) if n > 0]
    if not effective:
        return offset, values
    last = effective[-1]
    suffix = 0
    for i in reversed(effective):
        n = units[i]
        suffix += n
        prefix = sum(units[:i])
        # nodes x_j <= -suffix h are exact tails (x_j >= suffix h iff j >= suffix)
        low_tail = -suffix if origin == 0 else -suffix - 1
        # nodes that later rounds can read (and that are not exact tails)
        low_j = max(-prefix - 3, low_tail + 1)
        high_j = suffix - 1
        low, high = low_j + offset, high_j + offset
        # trivially valid bounds everywhere, overwritten where computed
        new = np.ones_like(values) if mode == "upper" else _terminal(x)
        if i == last and kinds[i] == "br":
            new[:] = _br_terminal_step(x, n * h)
        elif high >= low:
            if kinds[i] == "dp":
                new[low:high + 1] = _dp_step(values, low, high, n, h)
            elif mode == "upper":
                new[low:high + 1] = _br_step_upper(values, low, high, n, h)
            elif mode == "lower":
                new[low:high + 1] = _br_step_lattice(values, low, high, n, h)[0]
            else:
                best, arg = _br_step_lattice(values, low, high, n, h, track=True)
                new[low:high + 1] = _refine_quartic(values, low, high, n, h, best, arg)
        # exact tails: all paths active / no path active
        new[:offset + low_tail + 1] = _terminal(x[:offset + low_tail + 1])
        new[offset + suffix:] = 0.0
        values = new
    return offset, values


# --------------------------------------------------------------------------
# certified curves for one sequence (cached)
# --------------------------------------------------------------------------

class _Curves(NamedTuple):
    total: float               # sum of epsilons, rounded up: delta = 0 from here on
    h_upper: float
    upper: np.ndarray          # upper[j + 3] >= V_1(j h_upper), j = -3..
    h_lower: float
    lower: np.ndarray          # lower[j + 3] <= V_1(j h_lower), j = -3..


@functools.lru_cache(maxsize=64)
def _curves(sequence: tuple[tuple[str, float], ...], resolution: int) -> _Curves:
    kinds = tuple(kind for kind, _ in sequence)
    epsilons = [eps for _, eps in sequence]
    lattice = _choose_lattice(epsilons, resolution)
    offset, upper = _grid_pass(kinds, lattice.units_upper, lattice.h_upper, "upper")
    start = offset - 3
    upper = upper[start:].copy()
    # V is non-increasing and at most 1: running minimum keeps every entry valid
    upper = np.minimum.accumulate(np.minimum(upper, 1.0))
    offset, lower = _grid_pass(kinds, lattice.units_lower, lattice.h_lower, "lower")
    lower = lower[offset - 3:].copy()
    x_lower = (np.arange(lower.size) - 3) * lattice.h_lower
    lower = np.maximum(lower, _terminal(x_lower))            # V >= [1 - e^x]_+
    lower = np.maximum.accumulate(lower[::-1])[::-1]          # non-increasing
    lower = np.maximum(lower * (1.0 - 4 * RELATIVE_SLACK), 0.0)   # float error: push down
    if not (np.all(np.isfinite(upper)) and np.all(np.isfinite(lower))):
        raise FloatingPointError("adaptive_sequence: non-finite value in the recursion")
    upper.flags.writeable = False
    lower.flags.writeable = False
    return _Curves(_total(sequence), lattice.h_upper, upper, lattice.h_lower, lower)


def _upper_at(curves: _Curves, epsilon_g: float) -> float:
    """Certified upper bound at any epsilon_g >= 0: chord in e^x between grid points."""
    if epsilon_g >= curves.total:
        return 0.0
    h = curves.h_upper
    j = int(math.floor(epsilon_g / h))
    while j > 0 and j * h > epsilon_g:
        j -= 1
    index = j + 3
    if index + 1 >= curves.upper.size:
        return 0.0 if index >= curves.upper.size else safe_delta(float(curves.upper[index]))
    left, right = float(curves.upper[index]), float(curves.upper[index + 1])
    weight = min(max(math.expm1(epsilon_g - j * h) / math.expm1(h), 0.0), 1.0)
    value = min(left, (1.0 - weight) * left + weight * right)
    return safe_delta(value)


def _lower_at(curves: _Curves, epsilon_g: float) -> float:
    """Certified lower bound: monotonicity and secants in e^x (convexity)."""
    if epsilon_g >= curves.total:
        return 0.0
    h = curves.h_lower
    j = int(math.floor(epsilon_g / h))
    while j > 0 and j * h > epsilon_g:
        j -= 1
    index = j + 3
    size = curves.lower.size
    if index + 2 >= size:
        return 0.0
    here, nxt = float(curves.lower[index]), float(curves.lower[index + 1])
    gap = epsilon_g - j * h
    if gap <= 0:
        return here
    candidates = [nxt]
    # secant through nodes j-1, j extended to the right lies below the convex V
    mu = math.expm1(gap) / -math.expm1(-h)
    candidates.append((1 + mu) * here - mu * _upper_at(curves, (j - 1) * h))
    # secant through nodes j+1, j+2 extended to the left
    nu = -math.expm1(gap - h) / math.expm1(h)
    candidates.append((1 + nu) * nxt - nu * _upper_at(curves, (j + 2) * h))
    return max(0.0, max(candidates) * (1.0 - 4 * RELATIVE_SLACK))


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------

def adaptive_sequence_delta(sequence, epsilon_g) -> Bracket:
    """Bracket on the optimal delta of an ordered adaptive DP/BR sequence at ``epsilon_g``.

    Theorem: [CR] Lemma 5.1 = [DDR] recursion (optimal adaptive delta is V_1(epsilon_g)),
    with [CR] Lemma C.1 (closed form of a final BR round).
    Assumptions: ``sequence`` lists ``(kind, epsilon)`` pairs in order of use, kind
    "dp" (pure epsilon-DP) or "br" (epsilon-bounded range); epsilons may differ.
    Each mechanism is chosen adaptively from earlier outputs, but the kinds,
    epsilons and order are fixed in advance. ``epsilon_g >= 0`` is the target
    overall epsilon. Mechanisms with epsilon = 0 are free and ignored. At most
    ``MAX_SEQUENCE_LENGTH`` mechanisms with epsilon > 0.
    Guarantee: ``upper`` is a valid (certified) upper bound on the optimal delta:
    epsilons are rounded up onto a lattice and the recursion is bounded from above
    with explicit second-order remainder terms (module docstring), then rounded
    up by a relative 1e-12. ``lower`` is a certified lower bound: at grid points
    the value of an explicit adaptive strategy (lattice t, epsilons rounded
    down), in between secants in e^x; rounded down. The gap is second order in
    the lattice step: ~2e-7 for six eps = 1 BR mechanisms, ~4e-6 for twenty;
    it is first order (wider) only for an epsilon below sum(epsilons) / 9600,
    which the upper pass rounds up to one lattice step.
    ``upper`` at epsilon_g is the same function that
    :func:`adaptive_sequence_epsilon` inverts. Returns (0, 0) for
    epsilon_g >= sum of epsilons.
    Runtime: one tabulation per distinct sequence (cached, O(resolution^2)
    whatever k), ~0.2-1 s; each later call is O(1).
    """
    effective = _validate_sequence(sequence)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    if not effective or _beyond_total(effective, eg):
        return Bracket(0.0, 0.0)
    curves = _curves(effective, _RESOLUTION)
    upper = _upper_at(curves, eg)
    lower = min(_lower_at(curves, eg), upper)
    return Bracket(lower, upper)


def adaptive_sequence_epsilon(sequence, target_delta) -> Bracket:
    """Bracket on the optimal epsilon of an ordered adaptive DP/BR sequence at ``target_delta``.

    Theorem: [CR] Lemma 5.1 = [DDR] recursion, inverted (composition.md
    Definition 2.5: eps_opt(delta) = inf{eps_g : delta_opt(eps_g) <= delta}).
    Assumptions: as :func:`adaptive_sequence_delta`; ``target_delta`` in [0, 1].
    Guarantee: ``upper`` is certified: ``adaptive_sequence_delta(sequence,
    upper).upper <= target_delta`` (checked by re-evaluation), so the sequence is
    (upper, target_delta)-DP. ``lower`` is a valid lower bound on the optimal
    epsilon (the explicit lower strategy still exceeds target_delta below it).
    target_delta >= 1 gives (0, 0); target_delta = 0 gives the pure sum of epsilons.
    Runtime: the tabulation of :func:`adaptive_sequence_delta` (shared, cached)
    plus a closed-form solve on one grid piece.
    """
    effective = _validate_sequence(sequence)
    target = check_probability("target_delta", target_delta)
    if target >= 1 or not effective:
        return Bracket(0.0, 0.0)
    total = _total(effective)
    if target == 0:
        # delta_opt(x) > 0 for every x < sum of epsilons (all-0 outputs with t near eps)
        return Bracket(_float_below(_exact_total(effective)), total)
    curves = _curves(effective, _RESOLUTION)
    upper = _solve_upper(curves, target)
    lower = min(_solve_lower(curves, target), upper)
    return Bracket(lower, upper)


def _solve_upper(curves: _Curves, target: float) -> float:
    """Smallest epsilon_g with _upper_at(epsilon_g) <= target (certified)."""
    def profile(eg: float) -> float:
        return _upper_at(curves, eg)

    if profile(0.0) <= target:
        return 0.0
    h = curves.h_upper
    values = curves.upper
    # first node j >= 0 whose value is below the (slack-adjusted) target
    goal = target / (1.0 + 4 * RELATIVE_SLACK)
    below = np.nonzero(values[3:] <= goal)[0]
    if below.size == 0:
        return curves.total
    j = int(below[0])
    if j == 0:
        return certify_epsilon(profile, target, 0.0)
    left, right = float(values[j + 2]), float(values[j + 3])
    weight = (left - goal) / (left - right) if left > right else 1.0
    candidate = (j - 1) * h + math.log1p(min(max(weight, 0.0), 1.0) * math.expm1(h))
    candidate = min(round_up(candidate), curves.total)
    result = certify_epsilon(profile, target, candidate)
    return min(result, curves.total)


def _solve_lower(curves: _Curves, target: float) -> float:
    """A value below the optimal epsilon: the lower curve still exceeds target there."""
    h = curves.h_lower
    values = curves.lower
    above = np.nonzero(values[3:] > target)[0]
    if above.size == 0:
        return 0.0
    j = int(above[-1])
    here = float(values[j + 3])
    # secant lower bound (1 + mu) L_j - mu U_{j-1} stays above target while mu < mu_max
    upper_before = _upper_at(curves, max(j - 1, 0) * h) if j >= 1 else 1.0
    if upper_before > here:
        mu_max = (here - target) / (upper_before - here)
        extra = min(math.log1p(mu_max * -math.expm1(-h)), h)
    else:
        extra = h
    return max(0.0, (j * h + extra) * (1.0 - 4 * RELATIVE_SLACK))


def adaptive_sequence_value(sequence, epsilon_g) -> float:
    """High-precision estimate of the optimal adaptive delta (for tables and tests).

    Theorem: [CR] Lemma 5.1 = [DDR] recursion, evaluated directly; [CR] Lemma C.1
    for a final BR round and [CR] Lemma 5.2 (unrolled DP runs).
    Assumptions: as :func:`adaptive_sequence_delta`.
    Guarantee: an estimate, NOT a certified bound (use
    :func:`adaptive_sequence_delta` for accounting); it is clipped into the
    certified bracket. With at most two BR rounds before the last mechanism it
    is nested 1-D maximisation: for each point, a 129-point t-grid on the part
    of [0, eps] where the objective can be positive, then golden-section
    refinement of the grid maximum and of the three grid cells with the largest
    first-order upper bound (so maxima narrower than a cell are not missed);
    agreement with an independent per-history search is ~1e-12. Longer sequences
    use a lattice of 9600 steps across the sum of the epsilons through
    epsilon_g, maximising a quartic through the lattice values around each
    maximiser: ~1e-12 at generic points, up to ~1e-10 at breakpoints such as
    epsilon_g = epsilon; incommensurate epsilons are represented to a relative
    ~1e-7 there.
    Runtime: milliseconds (one numeric BR round) to ~0.5 s (two), or ~0.3-1 s
    (lattice), plus the certified bracket.
    """
    effective = _validate_sequence(sequence)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    if not effective or _beyond_total(effective, eg):
        return 0.0
    bracket = adaptive_sequence_delta(effective, eg)
    depth = sum(1 for kind, _ in effective[:-1] if kind == "br")
    if depth <= _MAX_NESTED_DEPTH:
        from privloss.bounds._adaptive_nested import NestedEvaluator
        value = float(NestedEvaluator(effective).value(np.array([eg]))[0])
    else:
        value = _lattice_value(effective, eg)
    return min(max(value, bracket.lower), bracket.upper)


# --------------------------------------------------------------------------
# high-precision evaluators
# --------------------------------------------------------------------------

def _lattice_value(sequence, epsilon_g: float) -> float:
    """V_1(epsilon_g) on a fine lattice through epsilon_g with quartic refinement."""
    kinds = tuple(kind for kind, _ in sequence)
    epsilons = [eps for _, eps in sequence]
    units = _common_units(epsilons)
    if units is not None and sum(units) <= _VALUE_RESOLUTION:
        counts = tuple(n * max(1, _VALUE_RESOLUTION // sum(units)) for n in units)
    else:
        counts = _near_units(epsilons, _VALUE_RESOLUTION)[0]
    # the epsilons are represented as counts * h (exact when commensurate)
    h = math.fsum(epsilons) / sum(counts)
    node = math.floor(epsilon_g / h)
    origin = min(max(epsilon_g - node * h, 0.0), math.nextafter(h, 0.0))
    offset, values = _grid_pass(kinds, counts, h, "value", origin=origin)
    return float(values[offset + node])

"""Building the lattice laws of the heterogeneous optimal-DP bracket: the
shift-and-add dynamic programme, the bracket mode (revealed mixtures and the
statistic pair), the exact lattice mode and the 2^k enumeration; see
:mod:`privloss.bounds.heterogeneous_dp` for the construction and the error model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from privloss.bounds._logistic import expit, log_expit

from privloss.bounds._heterogeneous_laws import _TINY, _U, _AtomLaw, _LossLaw, _StatisticPair

#: Memory limit: the longest lattice (number of grid points) ever allocated.
MAX_LATTICE_POINTS = 20_000_000
#: Largest automatically detected exact lattice (beyond: enumeration or the
#: certified bracket mode, which is refined to the requested width).
EXACT_LATTICE_POINTS = 1 << 20
#: Work limit of one automatic lattice: k * (estimated lattice length); 1e10 is
#: roughly half a minute.
MAX_LATTICE_WORK = 1e10
#: Up to this many mechanisms the main functions enumerate (exact) instead of bracketing.
AUTO_ENUMERATION_K = 14
#: The spectral construction (tilted characteristic functions) replaces the k-pass
#: programme from this many mechanisms and this much shift-and-add work on.
SPECTRAL_MIN_MECHANISMS = 1001
SPECTRAL_MIN_WORK = 3e7
#: Longest window of the spectral construction (peak memory: about 80 bytes a point).
SPECTRAL_MAX_POINTS = 1 << 23
#: Work of one spectral lattice point per log2(length), in shift-and-add units.
SPECTRAL_POINT_WORK = 4.0


# --------------------------------------------------------------------------
# shift-and-add dynamic programme
# --------------------------------------------------------------------------

class _LatticeTooLarge(Exception):
    """A dynamic programme would exceed ``MAX_LATTICE_POINTS``."""


@dataclass
class _DPResult:
    mass: np.ndarray       # (rows, n)
    start: int             # entries pruned from the front
    dropped: float         # P-mass (row 0) pruned
    operations: int        # number of multiply-adds (for the underflow bound)


def _kernel_dp(offsets: list[np.ndarray], probs: list[np.ndarray], rows: int,
               threshold: float) -> _DPResult:
    """Convolve the small kernels (non-negative integer ``offsets``, ``probs`` of shape
    (rows, m)) starting from a point mass; entries of row 0 below ``threshold`` are
    pruned from both ends (in all rows)."""
    capacity = 1024
    cur = np.zeros((rows, capacity))
    nxt = np.zeros((rows, capacity))
    tmp = np.zeros((rows, capacity))
    cur[:, 0] = 1.0
    length, start, dropped, operations = 1, 0, 0.0, 0
    checked_length = 1
    for off, pr in zip(offsets, probs):
        new_length = length + int(off[-1])
        if new_length > capacity:
            if new_length > MAX_LATTICE_POINTS:
                raise _LatticeTooLarge(f"lattice of {new_length} points")
            capacity = min(max(2 * capacity, new_length), MAX_LATTICE_POINTS)
            grown = np.zeros((rows, capacity))
            grown[:, :length] = cur[:, :length]
            cur, nxt, tmp = grown, np.zeros((rows, capacity)), np.zeros((rows, capacity))
        out = nxt[:, :new_length]
        src, scratch = cur[:, :length], tmp[:, :length]
        # the first term (offset 0) initialises out[:, :length]; the rest is added
        np.multiply(src, pr[:, 0:1], out=out[:, :length])
        out[:, length:].fill(0.0)
        for j in range(1, off.size):
            np.multiply(src, pr[:, j:j + 1], out=scratch)
            segment = out[:, off[j]:off[j] + length]
            np.add(segment, scratch, out=segment)
        operations += length * off.size * rows
        cur, nxt, length = nxt, cur, new_length
        if length > 1.05 * checked_length + 64:
            length, start, dropped = _prune(cur, length, start, dropped, threshold)
            checked_length = length
    length, start, dropped = _prune(cur, length, start, dropped, threshold)
    return _DPResult(cur[:, :length].copy(), start, dropped, operations)


def _prune(buf: np.ndarray, length: int, start: int, dropped: float,
           threshold: float) -> tuple[int, int, float]:
    """Drop leading/trailing entries whose row-0 mass is below ``threshold``."""
    row = buf[0, :length]
    keep = np.flatnonzero(row >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(row))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    if first == 0 and last == length:
        return length, start, dropped
    dropped += float(row[:first].sum()) + float(row[last:].sum())
    buf[:, :last - first] = buf[:, first:last]
    return last - first, start + first, dropped


def _dp_relative_error(count: int, per_step: float) -> float:
    """Relative error after ``count`` steps each adding ``per_step`` units of roundoff."""
    return math.expm1(count * math.log1p(per_step * _U)) * 1.01


# --------------------------------------------------------------------------
# bracket mode
# --------------------------------------------------------------------------

def _short_step(step: float, bits: int) -> float:
    """Round a positive step down to ``bits`` significant bits (so n * step is exact)."""
    mantissa, exponent = math.frexp(step)
    return math.ldexp(math.floor(math.ldexp(mantissa, bits)), exponent - bits)


def _floor_index(eps: np.ndarray, step: float) -> np.ndarray:
    """n_i = floor(eps_i / step) exactly (n * step is exact for a short step)."""
    n = np.floor(eps / step)
    n = np.where(n * step > eps, n - 1, n)
    n = np.where((n + 1) * step <= eps, n + 1, n)
    return n.astype(np.int64)


def _mixture_weights(eps: np.ndarray, lo: np.ndarray, step: float) -> np.ndarray:
    """Minimal w with w D_hi + (1-w) D_lo >= D_eps on u = e^{eps_g} >= 1, rounded up.

    D_c(u) = (e^c - u)_+ / (1 + e^c) is the profile of RR_c. All three are piecewise
    linear in u, so it suffices to check the kinks u = 1 (tanh condition) and
    u = e^lo (ratio condition); at e^eps and beyond the left side is >= 0 = D_eps.
    """
    hi = lo + step
    gap = eps - lo
    with np.errstate(over="ignore", invalid="ignore"):
        # (tanh(eps/2) - tanh(lo/2)) / (tanh(hi/2) - tanh(lo/2)), cancellation-free
        cosh_ratio = np.exp((hi - eps) / 2) * (1 + np.exp(-hi)) / (1 + np.exp(-eps))
        tanh_condition = np.sinh(gap / 2) / math.sinh(step / 2) * cosh_ratio
        # D_eps(e^lo) / D_hi(e^lo)
        ratio_condition = (np.expm1(gap) / math.expm1(step) * np.exp(hi - eps)
                           * (1 + np.exp(-hi)) / (1 + np.exp(-eps)))
    weight = np.maximum(tanh_condition, ratio_condition) * (1 + 1e-12) + 1e-300
    weight = np.where(gap > 0, np.minimum(weight, 1.0), 0.0)
    return np.where(np.isfinite(weight), weight, 1.0)


def _mixture_law(eps: np.ndarray, step: float, threshold: float) -> _LossLaw:
    """Upper-bound loss law: product of revealed mixtures of RR_lo and RR_hi on step*Z."""
    n = _floor_index(eps, step)
    lo = n * step                                   # exact: short step
    weight = _mixture_weights(eps, lo, step)
    a_lo, a_hi = expit(lo), expit(lo + step)
    b_lo, b_hi = expit(-lo), expit(-(lo + step))
    offsets, probs, shift = [], [], 0
    for i in range(eps.size):
        # losses -hi, -lo, +lo, +hi as offsets from -hi (in steps)
        w, ni = weight[i], int(n[i])
        off = np.array([0, 1, 2 * ni + 1, 2 * ni + 2])
        pr = np.array([w * b_hi[i], (1 - w) * b_lo[i], (1 - w) * a_lo[i], w * a_hi[i]])
        used = pr > 0                               # w = 0 when eps_i is on the lattice
        base = int(off[used][0])
        offsets.append(off[used] - base)
        probs.append(pr[used][None, :])
        shift += base - (ni + 1)
    result = _kernel_dp(offsets, probs, 1, threshold)
    return _LossLaw(step=step, offset=shift + result.start, stride=1, mass=result.mass[0],
                    relative_error=_dp_relative_error(eps.size, 12.0),
                    dropped=result.dropped * (1 + 1e-9),
                    absolute_error=result.operations * _TINY, upward=True)


def _statistic_pair(eps: np.ndarray, step: float, threshold: float) -> _StatisticPair:
    """Lower-bound pair for T = sum_i s_i c_i step (c_i = round(eps_i / step)).

    The DP runs over U = sum_{s_i = +1} c_i (T = (2U - sum c) step): under P the
    kernel is {0: 1 - a_i, c_i: a_i}; the second row carries Q tilted by e^T, i.e.
    the kernel {0: a_i e^{-c_i step}, c_i: (1 - a_i) e^{c_i step}}.
    """
    c = np.rint(eps / step).astype(np.int64)
    keep = c > 0
    eps, c = eps[keep], c[keep]
    if eps.size == 0:
        return _StatisticPair(np.ones(1), np.ones(1), np.zeros(1, dtype=np.int64), step, 0.0, 0)
    values = c * step                                    # exact: short step
    log_a, log_b = log_expit(eps), log_expit(-eps)
    p_up, p_down = np.exp(log_a), np.exp(log_b)
    r_up, r_down = np.exp(log_b + values), np.exp(log_a - values)
    offsets = [np.array([0, int(ci)]) for ci in c]
    probs = [np.array([[p_down[i], p_up[i]], [r_down[i], r_up[i]]]) for i in range(eps.size)]
    result = _kernel_dp(offsets, probs, 2, threshold)
    tau = 2 * (result.start + np.arange(result.mass.shape[1], dtype=np.int64)) - int(c.sum())
    # kernel entries: exp of a rounded sum of terms of size <= eps + |log a| + 1
    per_step = 8.0 + 4.0 * float(eps.max())
    return _StatisticPair(result.mass[0], result.mass[1], tau, step,
                          relative_error=_dp_relative_error(eps.size, per_step),
                          operations=result.operations)


def _bracket_cost(eps: np.ndarray, step: float, threshold: float) -> tuple[int, float]:
    """(lattice length, work in shift-and-add units) of the construction used at ``step``."""
    if _spectral_worthwhile(eps, step, threshold):
        # kernel i spans 2 floor(eps_i / h) + 2 steps: its deviation is at most half that
        deviation = math.sqrt(float(np.sum((eps / step + 1.0) ** 2)))
        length = int(2 * 7.0 * deviation * 1.05) + 64
        if length > SPECTRAL_MAX_POINTS:
            return length, math.inf
        return length, SPECTRAL_POINT_WORK * length * max(1.0, math.log2(length))
    return _dp_cost(eps, step, threshold)


def _dp_cost(eps: np.ndarray, step: float, threshold: float) -> tuple[int, float]:
    """(estimated lattice length after pruning, work = k * length) at ``step``.

    States below ``threshold`` lie ~ sqrt(2 log(1/threshold)) standard deviations
    out (Hoeffding for the bounded summands), so the pruned support is about
    2 z sigma wide; the estimate only steers the step choice (the dynamic
    programme itself enforces the memory limit).
    """
    unpruned = int(2 * np.sum(np.floor(eps / step) + 1)) + 1
    z = math.sqrt(2.0 * math.log(1.0 / threshold)) + 2.0
    spread = 2.0 * z * math.sqrt(float(np.sum(eps * eps))) + 4.0 * float(eps.max())
    length = min(unpruned, int(spread / step) + 64)
    return length, float(eps.size) * length


def _spectral_worthwhile(eps: np.ndarray, step: float, threshold: float) -> bool:
    """Use the spectral construction when the k-pass programme would be slow."""
    if eps.size < SPECTRAL_MIN_MECHANISMS:
        return False
    _, work = _dp_cost(eps, step, threshold)
    # each pass of the programme also costs ~10 us of interpreter time
    return work + 3000.0 * eps.size >= SPECTRAL_MIN_WORK


def _bracket_laws(eps: np.ndarray, step: float, threshold: float, centers=None):
    """(upper law, lower pair) at ``step``; ``centers`` = (upper, lower) losses of
    interest for the spectral construction's tilts (None: no tilt)."""
    order = np.argsort(eps, kind="stable")   # small first: the support grows slowly
    eps = eps[order]
    upper = lower = None
    if _spectral_worthwhile(eps, step, threshold):
        from privloss.bounds import _heterogeneous_spectral as spectral
        up_center, low_center = centers if centers is not None else (None, None)
        n = _floor_index(eps, step)
        kernels = spectral.mixture_kernels(eps, step, n, _mixture_weights(eps, n * step, step))
        upper = spectral.mixture_law(kernels, step, up_center, SPECTRAL_MAX_POINTS)
        lower = spectral.statistic_pair(eps, step, low_center, SPECTRAL_MAX_POINTS)
        if (upper is None or lower is None) and centers is not None:
            # rather than run a huge programme: a refinement keeps the previous pass's
            # valid laws, the first pass retries without tilt (centres None)
            if _dp_cost(eps, step, threshold)[1] > MAX_LATTICE_WORK:
                raise _LatticeTooLarge("the spectral construction declined this step")
    if upper is None:
        upper = _mixture_law(eps, step, threshold)
    if lower is None:
        lower = _statistic_pair(eps, step, threshold)
    return upper, lower


# --------------------------------------------------------------------------
# exact mode
# --------------------------------------------------------------------------

#: Relative mismatch tolerated between epsilon_g / c_g for exact lattice detection
#: (a few ulps: decimal inputs such as 0.3 / 0.1 = 2.9999999999999996 qualify).
_LATTICE_MATCH = 64 * _U


def _reduced_multiples(fractions: list[Fraction]) -> np.ndarray | None:
    """Smallest integers c_g proportional to the positive rationals ``fractions``."""
    common = math.lcm(*(f.denominator for f in fractions))
    numerators = [f.numerator * (common // f.denominator) for f in fractions]
    g = math.gcd(*numerators)
    multiples = [x // g for x in numerators]
    if max(multiples) > MAX_LATTICE_POINTS:
        return None
    return np.array(multiples, dtype=np.int64)


def _decimal_multiples(values: np.ndarray) -> np.ndarray | None:
    """Multiples from the shortest decimal forms (``repr``), if all have denominators
    <= 10^6, e.g. 0.1, 0.25, 0.35 -> 2, 5, 7 (step 0.05)."""
    fractions = []
    for value in values.tolist():
        fraction = Fraction(repr(value))
        if fraction.denominator > 10 ** 6:
            return None                    # stop at the first long one (10^5 values)
        fractions.append(fraction)
    return _reduced_multiples(fractions)


def _ratio_multiples(values: np.ndarray) -> np.ndarray | None:
    """Multiples from ratios to the smallest value that are rationals with
    denominators <= 10^6 up to a few ulps, e.g. pi/7, 2 pi/7."""
    base = float(values[0])
    fractions = []
    for v in values:
        ratio = float(v) / base
        if not math.isfinite(ratio):
            return None
        frac = Fraction(ratio).limit_denominator(10 ** 6)
        if abs(float(frac) - ratio) > _LATTICE_MATCH * ratio:
            return None
        fractions.append(frac)
    return _reduced_multiples(fractions)


def _lattice_multiples(values: np.ndarray, step: float | None) -> np.ndarray | None:
    """Integers c_g with values_g = c_g h (up to a few ulps) for a common step h, or None.

    With an explicit ``step`` the values must be multiples of it; otherwise the
    step is found from short decimal forms or from rational ratios (see above).
    A false detection would cost tightness, never validity: the two ends of the
    exact mode use steps certified against every value.
    """
    if step is not None:
        c = np.rint(values / step)
        if (c < 1).any() or (np.abs(values / step - c) > _LATTICE_MATCH * c).any():
            return None
        return c.astype(np.int64)
    multiples = _decimal_multiples(values)
    return multiples if multiples is not None else _ratio_multiples(values)


def _certified_step(values: np.ndarray, c: np.ndarray, upward: bool) -> float:
    """Float h with c_g h >= values_g for all g (upward) or <= (downward), as reals."""
    ratios = values / c
    h = float(ratios.max() if upward else ratios.min())
    exact_values = [Fraction(float(v)) for v in values]
    direction = math.inf if upward else -math.inf
    for _ in range(64):
        fh = Fraction(h)
        ok = all((int(ci) * fh >= v) if upward else (int(ci) * fh <= v)
                 for ci, v in zip(c, exact_values))
        if ok:
            return h
        h = math.nextafter(h, direction)
    raise ArithmeticError("could not certify the exact lattice step")


@dataclass
class _Sparse:
    offset: int
    stride: int
    mass: np.ndarray


def _binomial_weights(count: int, x: float) -> tuple[np.ndarray, float]:
    """Bin(count, e^x/(1+e^x)) probabilities and a bound on their relative error.

    Built from the mode outwards by the ratio recurrence
    p_{j+1}/p_j = (count - j)/(j + 1) e^x (products of positive numbers, so each
    step adds a few roundoffs) and normalised by their sum, which avoids the
    ~1e-12 relative error of log-gamma values for large counts.
    """
    mode = min(count, int(math.floor((count + 1) * float(expit(x)))))
    ratio_up, ratio_down = math.exp(x), math.exp(-x)
    j_up = np.arange(mode, count, dtype=float)
    up = np.cumprod((count - j_up) / (j_up + 1.0) * ratio_up)
    j_down = np.arange(mode, 0, -1, dtype=float)
    down = np.cumprod(j_down / (count - j_down + 1.0) * ratio_down)
    weights = np.concatenate([down[::-1], [1.0], up])
    weights /= np.sum(weights)
    # per recurrence step: 3u (ratio) + u (product) + |x| u (rounded argument);
    # normalisation: count u (sum) + u (division), and the sum inherits the steps.
    steps = max(mode, count - mode)
    relative = (2 * steps * (4 + abs(x)) + count + 4) * _U * 1.01
    return weights, relative


def _binomial_group(count: int, multiple: int, step: float, threshold: float):
    """count copies of RR at loss multiple*step: losses multiple*(2j - count)*step."""
    mass, relative = _binomial_weights(count, multiple * step)
    keep = np.flatnonzero(mass >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(mass))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    dropped = float(mass[:first].sum() + mass[last:].sum())
    group = _Sparse(offset=multiple * (2 * first - count), stride=2 * multiple,
                    mass=mass[first:last].copy())
    return group, relative, dropped


def _sparse_convolve(a: _Sparse, b: _Sparse) -> tuple[_Sparse, int]:
    """Exact-structure convolution of two lattice laws (sums of non-negative terms)."""
    if a.mass.size < b.mass.size:
        a, b = b, a
    g = math.gcd(a.stride, b.stride)
    step_a, step_b = a.stride // g, b.stride // g
    length = (a.mass.size - 1) * step_a + (b.mass.size - 1) * step_b + 1
    out = np.zeros(length)
    span = (a.mass.size - 1) * step_a + 1
    for t, weight in enumerate(b.mass.tolist()):
        begin = t * step_b
        out[begin:begin + span:step_a] += weight * a.mass
    return _Sparse(a.offset + b.offset, g, out), a.mass.size * b.mass.size


def _kept_binomial_entries(count: int, threshold: float) -> int:
    """Entries of Bin(count, p) kept by pruning at ``threshold`` (any p): by Hoeffding,
    P(|X - count p| >= s) <= 2 e^{-2 s^2 / count}, so every pmf value further than
    s = sqrt(count log(2 / threshold) / 2) from the mean is below the threshold."""
    spread = math.sqrt(count * math.log(2.0 / threshold) / 2.0)
    return int(min(count + 1, 2 * math.ceil(spread) + 3))


def _exact_cost(counts: np.ndarray, c: np.ndarray, threshold: float) -> tuple[int, float]:
    """(lattice length, work) of the exact mode: binomials (pruned at ``threshold``),
    then sparse convolutions whose cost is (entries of the next group) x (current
    length), groups by c."""
    order = np.argsort(c, kind="stable")
    span, work = 0, 0.0
    for g in order:
        kept = _kept_binomial_entries(int(counts[g]), threshold)
        if span > 0:
            work += float(kept) * (span + 1)
        else:
            work += float(counts[g] + 1)
        span += 2 * (kept - 1) * int(c[g])
    return span + 1, work


def _exact_law(values: np.ndarray, counts: np.ndarray, c: np.ndarray, step: float,
               upward: bool, threshold: float) -> _LossLaw:
    """Loss law of the product of RR_{c_g step} (counts_g copies each), on step*Z."""
    order = np.argsort(c, kind="stable")
    law, relative, dropped, operations = None, 0.0, 0.0, 0
    for g in order:
        group, rel_g, drop_g = _binomial_group(int(counts[g]), int(c[g]), step, threshold)
        relative += rel_g
        dropped += drop_g
        operations += group.mass.size
        if law is None:
            law = group
            continue
        law, ops = _sparse_convolve(law, group)
        operations += ops
        relative += (min(law.mass.size, group.mass.size) + 2) * _U
        law, dropped = _prune_sparse(law, dropped, threshold)
    return _LossLaw(step=step, offset=law.offset, stride=law.stride, mass=law.mass,
                    relative_error=relative, dropped=dropped * (1 + 1e-9),
                    absolute_error=operations * _TINY, upward=upward)


def _prune_sparse(law: _Sparse, dropped: float, threshold: float) -> tuple[_Sparse, float]:
    keep = np.flatnonzero(law.mass >= threshold)
    if keep.size == 0:
        keep = np.array([int(np.argmax(law.mass))])
    first, last = int(keep[0]), int(keep[-1]) + 1
    dropped += float(law.mass[:first].sum() + law.mass[last:].sum())
    kept = _Sparse(law.offset + first * law.stride, law.stride, law.mass[first:last].copy())
    return kept, dropped


def _try_exact(eps: np.ndarray, step: float | None, threshold: float):
    """(upper law, lower law) of exact mode, or None when it does not apply / is too big."""
    values, counts = np.unique(eps, return_counts=True)
    c = _lattice_multiples(values, step)
    if c is None:
        return None
    length, work = _exact_cost(counts, c, threshold)
    # an automatically detected lattice may come from a spurious rational ratio
    # (0.007992831568550445 / 0.08814861712835606: 13.5 million points): beyond
    # EXACT_LATTICE_POINTS the certified enumeration or bracket modes are used instead
    limit = MAX_LATTICE_POINTS if step is not None else EXACT_LATTICE_POINTS
    if length > limit or work > MAX_LATTICE_WORK:
        return None
    return _stepped_laws(values, values, counts, c, threshold)


def _stepped_laws(upper, lower, counts, c, threshold):
    """The exact laws on the lattice ``c`` from above (``upper``) and below
    (``lower``), each with its certified step."""
    h_up = _certified_step(upper, c, upward=True)
    h_down = _certified_step(lower, c, upward=False)
    return (_exact_law(upper, counts, c, h_up, True, threshold),
            _exact_law(lower, counts, c, h_down, False, threshold))


# --------------------------------------------------------------------------
# enumeration (few mechanisms)
# --------------------------------------------------------------------------

def _enumerated_laws(eps: np.ndarray) -> tuple[_AtomLaw, _AtomLaw]:
    """(upper, lower) atom laws of the product of RR_{eps_i} over all 2^k outcomes."""
    loss, mass = np.zeros(1), np.ones(1)
    for e, a, b in zip(eps.tolist(), expit(eps).tolist(), expit(-eps).tolist()):
        loss = np.concatenate([loss + e, loss - e])
        mass = np.concatenate([mass * a, mass * b])
    order = np.argsort(loss, kind="stable")
    loss, mass = loss[order], mass[order]
    k = eps.size
    # each addition errs by <= u |partial sum| <= u sum(eps)
    shift = 1.01 * k * _U * float(np.sum(eps))
    # products of k factors, each with 3u (expit), plus u per multiplication
    relative = 4.04 * (k + 1) * _U
    absolute = mass.size * k * _TINY                        # underflowing products
    return (_AtomLaw(loss, mass, shift, relative, absolute, upward=True),
            _AtomLaw(loss, mass, shift, relative, absolute, upward=False))


def _exact_laws(eps: np.ndarray, step: float | None, threshold: float):
    """Exact (upper, lower) laws: common lattice, else enumeration of few mechanisms
    (only when no lattice step is imposed); None if neither applies."""
    lattice = _try_exact(eps, step, threshold)
    if lattice is not None:
        return lattice
    if step is None and eps.size <= AUTO_ENUMERATION_K:
        return _enumerated_laws(eps)
    return None

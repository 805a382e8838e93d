"""Vectorised exact kernels on NumPy ``int64`` arrays.

Same algorithms as :mod:`privloss.samplers._exact` (CKS Algorithms 1-3), run
on whole arrays: every rejection or von Neumann loop is iterated on the subset
of elements that is still unfinished.  All decisions are integer comparisons.

Two exact shortcuts replace several single Bernoulli draws by one uniform
integer (same stopping-time law, fewer NumPy passes):

* a von Neumann chain for gamma = n/d passes its steps 1..j with probability
  gamma**j / j!; with X uniform on [0, M) and M = c * d**J * J!, the events
  "X < c * n**j * d**(J-j) * J!/j!" (j = 1..J) have exactly these
  probabilities and are nested, so one X decides the first J steps
  (J = 8 for gamma = 1, J = 2 for gamma = u/t);
* a Bernoulli(n/d) compares the bits of a uniform real with n/d, k bits at a
  time, in exact integer arithmetic (:func:`bernoulli_ratio`).

64-bit safety: every product is bounded *before* it is formed.  Moduli and
thresholds stay below ``2**62``; chain denominators ``d*k`` are checked at every
step, and elements whose next step would not fit finish in Python integers
(:mod:`._exact`), continuing the same chain; the Laplace and Gaussian kernels
check the ranges of their intermediates per batch and finish out-of-range
elements with Python ints.  An output beyond int64 turns the result into an
object array.  Nothing ever wraps around.

The public modules decide up front whether the parameters suit these kernels
at all (:func:`laplace_fits`, :func:`gaussian_fits`) and otherwise loop over
the scalar samplers.

Output order: batched samplers fill the output with accepted proposals in the
order they were drawn.  Acceptance depends only on each proposal's own
randomness, so the accepted values are i.i.d. from the target law and
independent of how many proposals each batch needed.
"""

from __future__ import annotations

import math

import numpy as np

from privloss.samplers import _exact

#: Bound kept by every int64 intermediate (one bit of headroom below 2**63).
SAFE = 1 << 62
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


#: Batched draws are produced in chunks of this many values, which bounds the
#: memory of the temporaries (about 20 arrays of 1.5 * chunk words).
CHUNK = 1 << 20


def chunked(draw, count: int) -> np.ndarray:
    """Call ``draw(k)`` on chunks of at most :data:`CHUNK` values and join them."""
    if count <= CHUNK:
        return draw(count)
    out = np.empty(count, dtype=np.int64)
    for start in range(0, count, CHUNK):
        part = draw(min(CHUNK, count - start))
        if part.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[start:start + part.size] = part
    return out


def chunked_bool(draw, count: int) -> np.ndarray:
    """:func:`chunked` for boolean draws."""
    if count <= CHUNK:
        return draw(count)
    out = np.empty(count, dtype=np.bool_)
    for start in range(0, count, CHUNK):
        out[start:start + min(CHUNK, count - start)] = draw(min(CHUNK, count - start))
    return out


def _nonzero(mask: np.ndarray) -> np.ndarray:
    # flatnonzero + integer take is about twice as fast as boolean indexing
    return np.flatnonzero(mask)


# ---------------------------------------------------------------------------
# Bernoulli(n/d)
# ---------------------------------------------------------------------------

def bernoulli_ratio(source, num, den) -> np.ndarray:
    """Bernoulli(num/den) elementwise, exactly.

    ``num``: int64 array with ``0 <= num <= den``; ``den``: int or int64 array,
    ``1 <= den < 2**62``.  A uniform real R in [0, 1) is compared with num/den
    k bits at a time: with x the next k bits, R < num/den iff
    x*den + R'*den < num*2**k (R' the remaining bits, uniform in [0, 1)).  If
    ``c = num*2**k - x*den`` is <= 0 the answer is 0, if it is >= den it is 1,
    otherwise it is Bernoulli(c/den) on fresh bits (probability <= 2**-k).
    """
    num = np.asarray(num, dtype=np.int64)
    size = num.size
    if size == 0:
        return np.empty(0, dtype=np.bool_)
    scalar_den = np.ndim(den) == 0
    max_den = int(den) if scalar_den else int(den.max())
    if max_den >= SAFE:
        raise OverflowError("bernoulli_ratio needs denominators below 2**62")
    # (2**k) * den < 2**63, so x*den, num << k and x*den + den all fit in int64
    k = 32 if max_den < (1 << 31) else 63 - max_den.bit_length()
    result = None
    positions = None
    while True:
        x = source.uniform_below_array(1 << k, num.size)
        lower = x * den
        upper = num << k
        one = lower < upper
        undecided = _nonzero(one & (upper < lower + den))
        if result is None:
            result = one
        else:
            result[positions] = one
        if not undecided.size:
            return result
        positions = undecided if positions is None else positions[undecided]
        num = (upper - lower)[undecided]
        if not scalar_den:
            den = den[undecided]


# ---------------------------------------------------------------------------
# von Neumann chains: Bernoulli(exp(-gamma)) for gamma in [0, 1]
# ---------------------------------------------------------------------------

def exp_chain_parity(source, num, den, start: int = 1) -> np.ndarray:
    """Von Neumann chains for Bernoulli(exp(-num/den)), ``0 <= num <= den``.

    Elementwise equal in law to :func:`_exact.exp_chain_parity` started at step
    ``start``.  ``num``: int64 array; ``den``: int or int64 array.
    """
    num = np.asarray(num, dtype=np.int64)
    scalar_den = np.ndim(den) == 0
    if start == 1 and scalar_den and int(den) < _JOINT_MAX_DEN:
        return _exp_chain_two_steps(source, num, int(den))
    size = num.size
    result = np.empty(size, dtype=np.bool_)
    positions = np.arange(size)
    k = start
    while positions.size:
        max_den = int(den) if scalar_den else int(den.max())
        if max_den * k >= SAFE:
            # the next denominator would not fit: finish these chains in Python ints
            for i, position in enumerate(positions.tolist()):
                d = int(den) if scalar_den else int(den[i])
                result[position] = _exact.exp_chain_parity(source, int(num[i]), d, k)
            break
        passed = bernoulli_ratio(source, num, den * k)
        result[positions] = (k % 2 == 1)  # final for those that stop here
        keep = _nonzero(passed)
        positions = positions[keep]
        num = num[keep]
        if not scalar_den:
            den = den[keep]
        k += 1
    return result


#: Denominators up to this use the joint draw of the first two chain steps.
_JOINT_MAX_DEN = 1 << 30


def _exp_chain_two_steps(source, num: np.ndarray, den: int) -> np.ndarray:
    """First two chain steps from one uniform X on [0, M), M = c * 2 den**2.

    P[pass step 1] = P[X < 2c num den] = num/den and
    P[pass steps 1, 2] = P[X < c num**2] = num**2/(2 den**2), exactly.
    """
    c = SAFE // (2 * den * den)
    modulus = c * 2 * den * den  # <= 2**62
    x = source.uniform_below_array(modulus, num.size)
    # thresholds <= modulus <= 2**62 because num <= den
    passed_one = x < num * (2 * c * den)
    passed_two = x < (num * c) * num
    result = ~passed_one  # stopped at K = 1 (odd); K = 2 gives False
    longer = _nonzero(passed_two)
    if longer.size:
        result[longer] = exp_chain_parity(source, num[longer], den, start=3)
    return result


# Bernoulli(exp(-1)): the chain for gamma = 1 always passes step 1 and passes
# steps 1..j with probability 1/j!.  X uniform on [0, c * 8!) decides steps
# 2..8 at once (P[X < c * 8!/j!] = 1/j!); the chain stops at K = 1 + #passed,
# so the result (K odd) is the parity of the number of thresholds above X,
# i.e. the XOR of the indicators.  X < c (probability 1/8!) continues at step 9.
_E1_STEPS = 8
_E1_SCALE = SAFE // math.factorial(_E1_STEPS)
_E1_MODULUS = _E1_SCALE * math.factorial(_E1_STEPS)
_E1_THRESHOLDS = [np.int64(_E1_SCALE * math.factorial(_E1_STEPS) // math.factorial(j))
                  for j in range(2, _E1_STEPS + 1)]


def bernoulli_exp_minus_one(source, count: int) -> np.ndarray:
    """``count`` draws of Bernoulli(exp(-1)) (von Neumann's chain for gamma = 1)."""
    x = source.uniform_below_array(_E1_MODULUS, count)
    # passed steps 2..j  <=>  x < threshold_j; stop at K = 2 + #passed
    result = np.zeros(count, dtype=np.bool_)
    for threshold in _E1_THRESHOLDS:
        result ^= x < threshold
    # K odd <=> #passed odd, which is what the XOR computed
    long_chains = _nonzero(x < _E1_THRESHOLDS[-1])
    if long_chains.size:
        result[long_chains] = exp_chain_parity(
            source, np.ones(long_chains.size, dtype=np.int64), 1, start=_E1_STEPS + 1)
    return result


def geometric_exp_minus_one(source, count: int) -> np.ndarray:
    """``count`` draws of V with P[V = v] = (1 - 1/e) e**(-v)."""
    value = np.zeros(count, dtype=np.int64)
    positions = np.arange(count)
    while positions.size:
        success = _nonzero(bernoulli_exp_minus_one(source, positions.size))
        positions = positions[success]
        value[positions] += 1
    return value


def bernoulli_exp(source, num: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for an int64 array ``num >= 0`` and an int ``den``.

    Whole part by Bernoulli(exp(-1)) factors with early exit, fractional part by
    one von Neumann chain (as :func:`_exact.bernoulli_exp`).
    """
    if not 1 <= den < SAFE:
        raise OverflowError("bernoulli_exp needs 1 <= den < 2**62")
    whole = num // den
    rest = num - whole * den
    result = np.ones(num.size, dtype=np.bool_)
    positions = _nonzero(whole)
    remaining = whole[positions]
    while positions.size:
        success = bernoulli_exp_minus_one(source, positions.size)
        result[positions] = success
        remaining -= 1
        more = _nonzero(success & (remaining > 0))
        positions = positions[more]
        remaining = remaining[more]
    # the fractional chain matters only where alive and rest > 0
    open_positions = _nonzero(result & (rest > 0))
    if open_positions.size:
        result[open_positions] = exp_chain_parity(source, rest[open_positions], den)
    return result


# ---------------------------------------------------------------------------
# discrete Laplace (CKS Algorithm 2)
# ---------------------------------------------------------------------------

#: Largest t for which the batched Laplace kernel is used (chain denominators
#: t*k stay below 2**62 for k up to 64; beyond that Python ints take over).
LAPLACE_MAX_T = 1 << 56


def laplace_fits(t: int, s: int) -> bool:
    """Whether Lap_Z(t/s) can use the int64 kernel."""
    return t <= LAPLACE_MAX_T and s < SAFE


def _batch_size(need: int) -> int:
    # one proposal is accepted with probability >= 0.3 (Laplace) or >= 0.44
    # (Gaussian); over-draw a little so that most calls need 1-2 rounds
    return need + need // 2 + 64


def discrete_laplace(source, t: int, s: int, count: int) -> np.ndarray:
    """``count`` draws of Lap_Z(t/s); int64 array (object array if a value overflows)."""
    out = np.empty(count, dtype=np.int64)
    wide: dict[int, int] = {}
    filled = 0
    v_max = (INT64_MAX - (t - 1)) // t  # u + t*v <= INT64_MAX for v <= v_max
    while filled < count:
        need = count - filled
        m = _batch_size(need)
        if t == 1:
            u = np.zeros(m, dtype=np.int64)  # U = 0 is always kept
        else:
            u = source.uniform_below_array(t, m)
            u = u[_nonzero(exp_chain_parity(source, u, t))]  # keep u w.p. exp(-u/t)
        v = geometric_exp_minus_one(source, u.size)
        negative = source.random_bits(u.size)
        if u.size and int(v.max()) > v_max:  # astronomically rare: Python ints
            values = _laplace_round_python(u, v, negative, t, s)
            for value in values[:need]:
                if INT64_MIN < value <= INT64_MAX:
                    out[filled] = value
                else:
                    wide[filled] = value
                filled += 1
            continue
        y = u + t * v  # geometric with ratio exp(-1/t)
        if s != 1:
            y //= s    # geometric with ratio exp(-s/t)
        accepted = _nonzero(~(negative & (y == 0)))  # reject "-0"
        z = y * (1 - 2 * negative.astype(np.int64))
        take = min(accepted.size, need)
        out[filled:filled + take] = z[accepted[:take]]
        filled += take
    return _with_wide_values(out, wide)


def _laplace_round_python(u, v, negative, t: int, s: int) -> list[int]:
    values = []
    for ui, vi, neg in zip(u.tolist(), v.tolist(), negative.tolist()):
        y = (ui + t * vi) // s
        if neg and y == 0:
            continue
        values.append(-y if neg else y)
    return values


def _with_wide_values(out: np.ndarray, wide: dict[int, int]) -> np.ndarray:
    if not wide:
        return out
    result = out.astype(object)
    for slot, value in wide.items():
        result[slot] = value
    return result


# ---------------------------------------------------------------------------
# discrete Gaussian (CKS Algorithm 3)
# ---------------------------------------------------------------------------

#: Largest 2 a f^2 (the denominator of gamma) for the batched kernel; chain
#: denominators 2 a f^2 * k then fit for k up to 64.
GAUSSIAN_MAX_DENOMINATOR = 1 << 56


def _w_max(b: int) -> int:
    """Largest |w| with b * w * w <= INT64_MAX."""
    return math.isqrt(INT64_MAX // b)


def gaussian_fits(a: int, b: int, p: int, q: int, e: int, f: int) -> bool:
    """Whether N_Z(0, a/b) with proposal Lap_Z(p/q) can use the int64 kernel.

    Requires the Laplace kernel, gamma's denominator 2 a f^2 <= 2**56, and room
    for gamma's numerator (|y| f - e)**2 b up to |y| = 16 proposal scales, so
    that Python-int fallbacks stay rare (P[|y| > 16 scales] = exp(-16)).
    """
    if not laplace_fits(p, q) or 2 * a * f * f > GAUSSIAN_MAX_DENOMINATOR:
        return False
    w_max = _w_max(b)
    return e <= w_max and (w_max + e) // f >= 16 * p // q + 1


def discrete_gaussian(source, a: int, b: int, p: int, q: int, e: int, f: int,
                      count: int) -> np.ndarray:
    """``count`` draws of N_Z(0, a/b), proposal Lap_Z(p/q), e/f = (a/b)/(p/q)."""
    den = 2 * a * f * f
    y_max = (_w_max(b) + e) // f  # |y| <= y_max  =>  0 <= |y| f <= w_max + e
    out = np.empty(count, dtype=np.int64)
    wide: dict[int, int] = {}
    filled = 0
    while filled < count:
        need = count - filled
        y = discrete_laplace(source, p, q, _batch_size(need))
        if y.dtype == object:  # a proposal beyond int64: finish this round in Python
            for value in y.tolist():
                if filled == count:
                    break
                gamma = _exact.gaussian_gamma(value, b, e, f)
                if _exact.bernoulli_exp(source, gamma, den):
                    if INT64_MIN < value <= INT64_MAX:
                        out[filled] = value
                    else:
                        wide[filled] = value
                    filled += 1
            continue
        accepted = _nonzero(_gaussian_accept(source, y, b, e, f, den, y_max))
        take = min(accepted.size, need)
        out[filled:filled + take] = y[accepted[:take]]
        filled += take
    return _with_wide_values(out, wide)


def _gaussian_accept(source, y, b, e, f, den, y_max) -> np.ndarray:
    """Accept y with probability exp(-(|y| f - e)**2 b / den), elementwise."""
    magnitude = np.abs(y)
    if not y.size or int(magnitude.max()) <= y_max:
        w = magnitude * f - e if f != 1 else magnitude - e
        return bernoulli_exp(source, w * w * b if b != 1 else w * w, den)
    accept = np.empty(y.size, dtype=np.bool_)
    narrow = _nonzero(magnitude <= y_max)
    w = magnitude[narrow] * f - e
    accept[narrow] = bernoulli_exp(source, w * w * b, den)
    for i in _nonzero(magnitude > y_max).tolist():
        accept[i] = _exact.bernoulli_exp(source, _exact.gaussian_gamma(int(y[i]), b, e, f), den)
    return accept

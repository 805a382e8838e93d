"""The maximum over the Theorem-2/3 candidates without evaluating every candidate.

For n epsilon-BR mechanisms (and d epsilon-DP ones, [CR] Theorem 3), write
G(l) = H_l(t_l) for the value of candidate l: H_l(t) = sum_{m <= l} w_m(t) over
the layers m = i + 2j of outcomes (i BR and j DP mechanisms on their low side),
which share the loss n t - m eps + d eps, so w_m(t) = P_t[I + 2J = m]
(1 - e^{eps_g - loss}); t_l maximises H_l. Neighbouring candidates are linked by
one layer each ([CR] Lemma 4.4: H_l is maximised at t_l):

    G(l + 1) = H_l(t_{l+1}) + w_{l+1}(t_{l+1}) <= G(l) + w_{l+1}(t_{l+1})      (forward)
    G(l)     = H_{l+1}(t_l) - w_{l+1}(t_l)     <= G(l + 1) - w_{l+1}(t_l)      (backward)

w_{l+1}(t_{l+1}) > 0 and w_{l+1}(t_l) < 0 are single binomial terms when d = 0
(O(1) each), and bounded by the log-concave layer bound of :func:`_log_layer_mass`
(O(log d) each) otherwise.
So an exact (window-summed, certified) upper bound U at some *anchor*
candidates bounds every candidate in between: G(l) <= min(U(a) + forward sum,
U(b) + backward sum). A link overshoots by about one layer's mass (~1e-3 of G),
so the chain certifies every candidate below the maximum by more than that, and
the candidates closer to it (the values are flat: at k = 10^5 about 800 lie
within 1e-3 nats of the maximum) become anchors themselves. Anchors are added
where the chained bound is highest (and in the middle of long gaps) until no
candidate's bound exceeds the best anchor by more than ``CHAIN_TOLERANCE``
(relative): about 1000 window sums per profile evaluation at k = 10^5 instead
of 10^5.

Every chained quantity is an upper bound (log-space terms with the same error
allowances as the window sums, cumulative sums rounded up), so the result is a
valid upper bound on max_l G(l) whatever the anchors are; the anchors only
decide how tight it is.
"""

from __future__ import annotations

import math

import numpy as np

from privloss.bounds._numeric import log1mexp

#: Unit roundoff of float64.
_UNIT = 2.0 ** -53
#: Refine until the chained bound is within this relative margin of the best anchor.
CHAIN_TOLERANCE = 1e-13
#: Anchors placed evenly before the first refinement (a geometric grid around the
#: estimated maximum is added).
_INITIAL_ANCHORS = 9
#: Refinement rounds (each adds one or two anchors per gap that is still too high).
_MAX_ROUNDS = 200
#: Gaps longer than this are also bisected (short gaps only get the argmax anchor).
_BISECT_GAPS = 32
#: Layer maxima found exactly on every this many candidates, the others near them.
_SAMPLE_EVERY = 64
#: Half-width of the narrowed search around an interpolated layer maximum.
_NEAR = 8


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0."""
    with np.errstate(divide="ignore"):
        return np.where(x > 30.0, x + np.log1p(-np.exp(-np.minimum(x, 700.0))),
                        np.log(np.expm1(np.minimum(x, 30.0))))


def _log_step(tab, layer, log_q, log_1mq, j):
    """f(j + 1) - f(j) for the layer terms of :func:`_log_layer_mass`, from the pmf
    ratios (no table lookups): the DP law gains log((d - j) / (j + 1)) - eps, the BR
    count i = layer - 2j loses two steps."""
    d, n = tab.num_dp, tab.num_br
    jf, i = j.astype(float), (layer - 2 * j).astype(float)
    return (np.log((d - jf) * i * (i - 1.0)) - np.log((jf + 1.0) * (n - i + 1.0) * (n - i + 2.0))
            - tab.epsilon + 2.0 * (log_q - log_1mq))


def _first_descent(tab, layer, log_q, log_1mq, lo, hi):
    """Elementwise first j in [lo, hi] with f(j + 1) - f(j) < 0 (hi if none), by bisection."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        with np.errstate(divide="ignore", invalid="ignore"):
            down = _log_step(tab, layer, log_q, log_1mq, np.where(active, mid, lo)) < 0
        hi = np.where(active & down, mid, hi)
        lo = np.where(active & ~down, mid + 1, lo)


def _log_layer_mass(tab, layer: np.ndarray, log_q: np.ndarray, log_1mq: np.ndarray,
                    eta: np.ndarray) -> np.ndarray:
    """log of an upper bound on P_t[I + 2J = layer] (BR count I, DP count J), elementwise.

    With DP mechanisms a chain link is the whole layer of outcomes i + 2j = l + 1
    (they share one loss). Its terms f(j) = P[J = j] P_t[I = layer - 2j] are
    log-concave in j with second differences <= -kappa, kappa = 4/(d+2) + 16/(n+2)
    (binomial log-pmfs: 1/(j+1) + 1/(d-j+1) >= 4/(d+2); a step of 2 in i adds four
    of them), so the sum is at most max f (3 + sqrt(2 pi / kappa)): O(log d) work
    per layer instead of a window sum, and within ~10% when the laws are near 1/2
    (a looser link only makes the anchors denser, never the bound invalid).
    The maximum is found by bisection on the sign of f(j+1) - f(j) (computed from
    the pmf ratios, so no table lookups); rounding can
    misplace it by at most one step (the differences fall by >= kappa per step), so
    the largest of f at the found index and its two neighbours is the maximum.
    """
    d, n = tab.num_dp, tab.num_br
    if d == 0:
        inside = (layer >= 0) & (layer <= n)
        layer_c = np.clip(layer, 0, n)
        value = tab.log_binom_br[layer_c] + (n - layer_c) * log_q + layer_c * log_1mq + eta
        return np.where(inside, value, -np.inf)
    low = np.maximum(0, -((n - layer) // 2))           # ceil((layer - n) / 2)
    high = np.minimum(d, layer // 2)
    empty = low > high

    def log_term(j):
        j = np.clip(j, low, np.maximum(high, low))
        i = np.clip(layer - 2 * j, 0, n)
        return tab.log_a[np.clip(j, 0, d)] + tab.log_binom_br[i] + (n - i) * log_q + i * log_1mq

    top = np.maximum(high, low)
    if layer.size > 4 * _SAMPLE_EVERY:
        # consecutive candidates have nearby maxima: bisect exactly on every
        # _SAMPLE_EVERY-th one, then search the others near the interpolated position,
        # keeping a narrowed range only where the signs at its ends confirm that it
        # holds the first descent (else the whole range)
        sample = np.unique(np.append(np.arange(0, layer.size, _SAMPLE_EVERY), layer.size - 1))
        found = _first_descent(tab, layer[sample], log_q[sample], log_1mq[sample],
                               low[sample], top[sample])
        guess = np.rint(np.interp(np.arange(layer.size), sample, found)).astype(np.int64)
        lo = np.clip(guess - _NEAR, low, top)
        hi = np.clip(guess + _NEAR, low, top)
        with np.errstate(divide="ignore", invalid="ignore"):
            rises_into = (lo == low) | (_log_step(tab, layer, log_q, log_1mq, np.maximum(lo - 1, low)) >= 0)
            falls_out = (hi == top) | (_log_step(tab, layer, log_q, log_1mq, np.minimum(hi, top)) < 0)
        confirmed = rises_into & falls_out
        lo, hi = np.where(confirmed, lo, low), np.where(confirmed, hi, top)
    else:
        lo, hi = low.copy(), top
    lo = _first_descent(tab, layer, log_q, log_1mq, lo, hi)
    peak = np.maximum(np.maximum(log_term(lo - 1), log_term(lo)), log_term(lo + 1))
    kappa = 4.0 / (d + 2.0) + 16.0 / (n + 2.0)
    factor = math.log(3.0 + math.sqrt(2.0 * math.pi / kappa))
    return np.where(empty, -np.inf, peak + factor + eta)


def log_increments(tab, epsilon_g: float, cand) -> tuple[np.ndarray, np.ndarray]:
    """(log forward, log backward) chain increments, upper bounds, per candidate.

    forward[c] bounds w_{l_c}(t_c) (the step from candidate c - 1 to c);
    backward[c] bounds -w_{l_c + 1}(t_c) (the step from candidate c + 1 to c).
    Layer m has the loss k t - m eps + d eps (d DP mechanisms), so
    w_m(t) = (1 - e^{eps_g - loss}) P_t[layer m].
    """
    n, d, eps = tab.num_br, tab.num_dp, tab.epsilon
    ell = cand.ell.astype(float)
    t = cand.t
    # one allowance for the pmf part (as in the window sums) and a few ulps for the
    # final exp / expm1 / products
    eta = cand.eta_s + 16.0 * _UNIT
    eta_x = cand.eta_x + 8.0 * _UNIT * d * eps
    x = n * t - ell * eps + d * eps - epsilon_g        # > 0 for interior candidates
    x_up = x + eta_x
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(x_up > 0, log1mexp(-np.maximum(x_up, 1e-300)), -np.inf)
    mass = _log_layer_mass(tab, cand.ell, cand.log_q, cand.log_1mq, eta)
    forward = np.where(x_up > 0, mass + factor, -np.inf)
    y = (ell + 1.0) * eps - d * eps + epsilon_g - n * t   # > 0 for interior candidates
    y_up = np.maximum(y + eta_x, 1e-300)
    mass_next = _log_layer_mass(tab, cand.ell + 1, cand.log_q, cand.log_1mq, eta)
    backward = mass_next + _log_expm1(y_up)
    return forward, backward


def _round_up(values: np.ndarray, count: int) -> np.ndarray:
    """Cumulative sums of ``count`` non-negative terms, pushed up by their error."""
    return values * (1.0 + (count + 4) * _UNIT)


def _initial_anchors(forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
    """Evenly spaced anchors, plus a geometric grid around the estimated maximum.

    G(c + 1) - G(c) lies between -backward[c] and forward[c + 1]; summing the
    midpoints locates the maximum roughly (only the anchors' placement depends on
    it, never the validity of the bound).
    """
    size = forward.size
    even = np.linspace(0, size - 1, min(size, _INITIAL_ANCHORS)).astype(np.int64)
    scale = float(max(forward.max(), backward.max()))
    if not math.isfinite(scale):
        return np.unique(even)
    steps = 0.5 * (np.exp(forward[1:] - scale) - np.exp(backward[:-1] - scale))
    centre = int(np.argmax(np.concatenate(([0.0], np.cumsum(steps)))))
    offsets = 2 ** np.arange(0, max(1, int(size).bit_length()))
    around = np.concatenate(([centre], centre - offsets, centre + offsets))
    return np.unique(np.clip(np.concatenate((even, around)), 0, size - 1))


def chain_maximum(tab, epsilon_g: float, cand, evaluate) -> float:
    """log of an upper bound on max over candidates of G(l) ([CR] Theorems 2 and 3).

    ``evaluate(indices)`` returns (log upper, log lower) window-sum bounds of the
    selected candidates. Candidates must be consecutive in l.
    """
    size = cand.ell.size
    forward, backward = log_increments(tab, epsilon_g, cand)
    anchors = _initial_anchors(forward, backward)
    upper, _ = evaluate(anchors)
    if np.isnan(upper).any() or np.isnan(forward).any() or np.isnan(backward).any():
        return 0.0                      # numeric trouble: the safe answer delta = 1
    known = dict(zip(anchors.tolist(), upper.tolist()))
    # one linear scale for all rounds: the best initial anchor (later anchors are at
    # most slightly larger; all terms are far below e^700 relative to it)
    reference = float(upper.max())
    if not math.isfinite(reference):
        reference = float(max(forward.max(), backward.max(), -700.0))
    up_steps = np.exp(np.minimum(forward - reference, 700.0))
    down_steps = np.exp(np.minimum(backward - reference, 700.0))
    cum_up = np.concatenate(([0.0], np.cumsum(up_steps)))       # cum_up[c] = sum_{m < c}
    cum_down = np.concatenate(([0.0], np.cumsum(down_steps)))
    slack_up = (size + 4) * _UNIT * cum_up[-1]                   # absolute error of a difference
    slack_down = (size + 4) * _UNIT * cum_down[-1]
    # Candidates certified in an earlier round keep that round's chained bound (any
    # chained bound is a valid upper bound); only the range that is still too high
    # is recomputed, and `retired` is the largest bound left behind.
    low, high, retired = 0, size - 1, 0.0
    best = -math.inf
    for _ in range(_MAX_ROUNDS):
        anchors = np.array(sorted(known), dtype=np.int64)
        anchor_values = np.exp(np.array([known[a] for a in anchors.tolist()]) - reference)
        index = np.arange(low, high + 1)
        gap = np.searchsorted(anchors, index, side="right") - 1      # anchor at or before
        gap = np.clip(gap, 0, anchors.size - 1)
        left = anchors[gap]
        right_gap = np.minimum(gap + 1, anchors.size - 1)
        right = anchors[right_gap]
        # forward from the left anchor: sum of steps into left+1 .. c
        via_left = np.where(index >= left,
                            _round_up(anchor_values[gap] + (cum_up[index + 1] - cum_up[left + 1]),
                                      size) + slack_up, np.inf)
        # backward from the right anchor: sum of backward steps c .. right-1
        via_right = np.where(right >= index,
                             _round_up(anchor_values[right_gap] + (cum_down[right] - cum_down[index]),
                                       size) + slack_down, np.inf)
        bound = np.minimum(via_left, via_right)
        inside = (anchors >= low) & (anchors <= high)
        bound[anchors[inside] - low] = anchor_values[inside]
        top_anchor = float(anchor_values.max())
        best = reference + math.log(max(float(bound.max()), retired, top_anchor))
        too_high = bound > top_anchor * (1.0 + CHAIN_TOLERANCE)
        if not too_high.any():
            return best
        positions = np.nonzero(too_high)[0]
        new_low, new_high = int(positions[0]), int(positions[-1])
        outside = np.concatenate((bound[:new_low], bound[new_high + 1:]))
        if outside.size:
            retired = max(retired, float(outside.max()))
        # new anchors in every gap that is still too high: where the chained bound is
        # highest, and the middle of the gap (so that every gap at least halves)
        gaps_high = gap[too_high]
        candidates_high = index[too_high]
        order = np.lexsort((-bound[too_high], gaps_high))
        first = np.concatenate(([True], gaps_high[order][1:] != gaps_high[order][:-1]))
        worst_gaps = gaps_high[order][first]
        gap_start = anchors[worst_gaps]
        gap_end = anchors[np.minimum(worst_gaps + 1, anchors.size - 1)]
        middles = ((gap_start + gap_end) // 2)[gap_end - gap_start > _BISECT_GAPS]
        new = np.unique(np.concatenate((candidates_high[order][first], middles)))
        new = new[[int(c) not in known for c in new.tolist()]]
        if new.size == 0:
            return best
        upper, _ = evaluate(new)
        if np.isnan(upper).any():
            return 0.0
        known.update(zip(new.tolist(), upper.tolist()))
        low, high = low + new_low, low + new_high
    return best

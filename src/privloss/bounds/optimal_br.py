"""Optimal non-adaptive composition of epsilon-BR mechanisms, alone ([CR] Theorem 2 =
[DDR] Theorem 3) or mixed with epsilon-DP mechanisms ([CR] Theorem 3).

Candidate set: by [CR] Lemma 4.4 the worst case is n copies of RR_{eps,t} with one
common t (and d copies of RR_{2 eps, eps}), and each truncated sum H_l(t) over the
outcomes m = i + 2j <= l lies below the profile, equals it where exactly those
outcomes are active, and is unimodal in t with peak t*_l = (eps_g + (l + 1 - d) eps)
/ (n + 1), so the supremum over t in [0, eps] is attained at one of the clamped
points t_l.  Clamped points t in {0, eps} make the BR mechanisms degenerate (loss 0)
and all give the pure-DP profile of the d DP mechanisms, so only the O(n) interior
candidates need a binomial sum.

Numerics (why it is fast and never optimistic):

* For a BR count i, the admissible DP counts form a prefix j <= J_i = (l - i) // 2,
  so the DP part is a pair of binomial prefix sums CA(J), CB(J) tabulated once
  in log space; each term of H_l is then e^{g_i} CA - e^{g_i - c_i} CB with
  g_i = log P[I = i] and c_i = n t - i eps - eps_g, a positive difference whose
  ratio is at least e^{eps - t}.
* log(P[I = i] CA(J_i)) is bounded by a concave envelope; its peak (binary
  search) gives each candidate's summation window of O(sqrt(n)) terms, rigorous
  geometric bounds for the terms outside the window, and an upper bound on the
  whole candidate used to skip candidates that cannot be the maximum.
* Every computed term carries an explicit float-error allowance (gammaln of
  arguments up to k has absolute error ~ u k log k), added to the result.
* Neighbouring candidates differ by one layer of outcomes i + 2j = l + 1 (one
  binomial term without DP mechanisms), so anchors evaluated as above (the
  candidates within ~1e-3 of the maximum, ~1000 at k = 1e5) bound all the
  others (:mod:`privloss.bounds._optimal_br_chain`): O(k log k) work plus the
  anchors' window sums instead of one window sum per candidate.
* Inversion: about six evaluations steered by a few candidates' certified window
  sums (Newton on log delta with the argmax's slope,
  :mod:`privloss.bounds._optimal_br_search`); only the end point is certified
  over all candidates (the chain), and the certified search runs when it fails.
"""


from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import gammaln

from privloss.bounds._optimal_br_chain import chain_maximum
from privloss.bounds._optimal_br_windows import (_BATCH_ELEMENTS, _Candidates, _candidate_bounds, _candidates,
                                                _envelope, _envelope_peak, _log_peak_mass_factor,
                                                _selection_bounds, _window_half_width)
from privloss.bounds._optimal_br_search import argmax_search, bracket_root, newton_bracket
from privloss.bounds._optimal_br_tables import (_ERROR_FACTOR, _UNIT, _Tables, _log_minus_upper,
                                               _make_tables)
from privloss.bounds._numeric import (EPSILON_TOLERANCE, check_count, check_nonnegative,
                                      check_probability, log1mexp, log_binomial,
                                      round_up)

#: Below this per-mechanism epsilon the BR parameter t ~ eps / k approaches the
#: subnormal range; the valid pure-DP bound 1 - e^{eps_g - k eps} is used instead.
_TINY_EPSILON = 1e-250
#: With more candidates than this the anchor chain is used (_optimal_br_chain).
_CHAIN_MIN_CANDIDATES = 64
#: Relative margin (in log) between a computed delta and the target when inverting;
#: larger than the 1e-12 rounding applied by the public delta functions.
_ACCEPT_MARGIN = 4e-12
#: Extra margin of the steered search: the certified profile at its end point lies
#: within ~1e-13 (relative) of the steered value, so it passes the acceptance test.
_STEER_MARGIN = 1e-12
#: Half-width (in candidates) of the steered search around the previous argmax.
_STEER_RADIUS = 256


# --------------------------------------------------------------------------
# tables (depend on the counts and epsilon only, shared by all epsilon_g)
# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# pure DP part ([CR] Theorem 1, MV homogeneous form, delta0 = 0)
# --------------------------------------------------------------------------

def _log_dp_profile(tab: _Tables, epsilon_g: float) -> tuple[float, float]:
    """(log upper, log lower) bound of sum_j [A_j - e^{eps_g} B_j]_+ (the d DP mechanisms).

    Term j is A_j (1 - e^{-y_j}) with y_j = (d - 2j) eps - eps_g, all positive.
    Error: log A_j is off by at most eta_tables and y_j by eta_y, so the sum is off
    by at most eta_tables * sum + eta_y * sum_j A_j e^{-y_j} (first order).
    """
    d, eps = tab.num_dp, tab.epsilon
    if d == 0:
        return -math.inf, -math.inf
    j = np.arange(d + 1, dtype=float)
    y = (d - 2.0 * j) * eps - epsilon_g
    eta_y = _ERROR_FACTOR * _UNIT * (2.0 * d * eps + epsilon_g)
    # a term whose computed y is marginally <= 0 may still be positive (at most
    # A_j * eta_y): it enters the error envelope.
    near = y > -2.0 * eta_y
    if not near.any():
        return -math.inf, -math.inf
    active = y > 0
    log_sum = (float(np.logaddexp.reduce(tab.log_a[active] + log1mexp(-y[active])))
               if active.any() else -math.inf)
    log_err = float(np.logaddexp(
        math.log(tab.eta_tables) + log_sum,
        math.log(eta_y) + float(np.logaddexp.reduce(tab.log_a[near] - y[near]))))
    return float(np.logaddexp(log_sum, log_err)), _log_minus_upper(log_sum, log_err)


# --------------------------------------------------------------------------
# interior candidates (BR parameter t strictly inside (0, eps)):
# privloss.bounds._optimal_br_windows
# --------------------------------------------------------------------------

def _log_br_candidates(tab: _Tables, epsilon_g: float, best_lower: float) -> float:
    """log of an upper bound on max over interior candidates of H_l(t_l)."""
    cand = _candidates(tab, epsilon_g)
    if cand.ell.size == 0:
        return -math.inf
    if cand.ell.size > _CHAIN_MIN_CANDIDATES and bool(np.all(np.diff(cand.ell) == 1)):
        # anchors and one-layer chains instead of every candidate
        return chain_maximum(tab, epsilon_g, cand,
                             lambda index: _selection_bounds(tab, epsilon_g, cand, index)[:2])
    peak = _envelope_peak(tab, cand)
    f_peak = _envelope(tab, cand.ell, cand.log_q, cand.log_1mq, peak)
    # H_l <= sum_i e^{F(i)}: a cheap bound used to skip hopeless candidates
    prune_bound = (f_peak + _log_peak_mass_factor(tab.num_br, cand.top)
                   + 2.0 * (cand.eta_s + cand.eta_x) + 1e-9)
    order = np.argsort(-prune_bound, kind="stable")
    window = 2 * _window_half_width(tab.num_br, tab.epsilon) + 1
    per_batch = max(8, _BATCH_ELEMENTS // window)
    best_upper = -math.inf
    position, batch = 0, 8
    while position < order.size:
        if prune_bound[order[position]] < best_lower:
            break        # sorted: no remaining candidate can reach the maximum
        sel = order[position:position + batch]
        upper, lower, _ = _candidate_bounds(tab, epsilon_g, cand, peak, sel)
        if np.isnan(upper).any():
            return 0.0       # numeric trouble: the safe answer delta = 1
        best_upper = max(best_upper, float(upper.max()))
        best_lower = max(best_lower, float(lower.max()))
        position += batch
        batch = min(per_batch, 4 * batch)
    return best_upper


# --------------------------------------------------------------------------
# the profile
# --------------------------------------------------------------------------

def _at_or_beyond_max_loss(num_dp: int, num_br: int, epsilon: float, epsilon_g: float) -> bool:
    """epsilon_g >= k epsilon exactly (the total loss never exceeds k epsilon)."""
    if math.isinf(epsilon_g):
        return True
    return Fraction(epsilon_g) >= (num_dp + num_br) * Fraction(epsilon)


def _log_profile(tab: _Tables, epsilon_g: float) -> float:
    """log of an upper bound on delta_opt(epsilon_g) ([CR] Theorem 3); -inf means 0."""
    if _at_or_beyond_max_loss(tab.num_dp, tab.num_br, tab.epsilon, epsilon_g):
        return -math.inf
    # t in {0, eps} (every clamped candidate): the BR mechanisms are degenerate
    dp_upper, dp_lower = _log_dp_profile(tab, epsilon_g)
    if tab.num_br == 0:
        return dp_upper
    br_upper = _log_br_candidates(tab, epsilon_g, dp_lower)
    return max(dp_upper, br_upper)


def _delta_from_log(log_delta: float) -> float:
    if math.isnan(log_delta):
        return 1.0
    if log_delta == -math.inf:
        return 0.0
    return min(1.0, round_up(math.exp(min(log_delta, 0.0))))


# --------------------------------------------------------------------------
# inversion
# --------------------------------------------------------------------------

def _mean_and_variance(num_dp: int, num_br: int, epsilon: float) -> tuple[float, float]:
    """Per-composition mean bound and subgaussian variance of [CR] eq. (3)."""
    ratio = epsilon / -math.expm1(-epsilon)                   # eps / (1 - e^-eps)
    mean_br = ratio - 1.0 - math.log(ratio)
    mean_dp = epsilon * math.tanh(epsilon / 2.0)
    return (num_dp * mean_dp + num_br * mean_br,
            (num_dp + num_br / 4.0) * epsilon * epsilon)


def _max_loss_up(num_dp: int, num_br: int, epsilon: float) -> float:
    """Smallest float >= (num_dp + num_br) * epsilon (exact real product)."""
    k = num_dp + num_br
    value = k * epsilon
    if Fraction(value) < k * Fraction(epsilon):
        value = math.nextafter(value, math.inf)
    return value


def _steered_log_profile(tab: _Tables, epsilon_g: float, state: dict) -> tuple[float, float]:
    """(log value, log rate): the value is the largest certified window-sum upper bound among the candidates that
    :func:`argmax_search` visits (and the DP-only part): the profile near its
    maximum, for steering the inversion only (the maximum itself is certified by
    :func:`_log_profile`). ``state`` carries the argmax's t between calls; the next
    search looks near the same t first (within at most ``_STEER_RADIUS`` candidates)
    and over all candidates when the best one lies on that range's edge. The rate
    is -d log(value) / d eps_g at the best candidate (its derivative by Danskin's
    theorem; NaN where the DP-only part is larger)."""
    if _at_or_beyond_max_loss(tab.num_dp, tab.num_br, tab.epsilon, epsilon_g):
        return -math.inf, math.nan
    dp_upper, _ = _log_dp_profile(tab, epsilon_g)
    rates: dict[int, float] = {}

    def search(cand: _Candidates) -> tuple[int, float]:
        rates.clear()

        def values(index):
            upper, _, log_rate = _selection_bounds(tab, epsilon_g, cand, index)
            rates.update(zip(index.tolist(), log_rate.tolist()))
            return upper

        return argmax_search(values, cand.ell.size)

    cand, found = None, None
    if "t" in state:
        # t_l = (eps_g + (l + 1 - d) eps) / (n + 1) solved for l
        centre = round(((tab.num_br + 1.0) * state["t"] - epsilon_g) / tab.epsilon
                       - 1.0 + tab.num_dp)
        # the argmax moves by about |change of eps_g| / eps candidates
        radius = min(_STEER_RADIUS, 16 + math.ceil(4.0 * abs(epsilon_g - state["at"]) / tab.epsilon))
        low, high = centre - radius, centre + radius
        cand = _candidates(tab, epsilon_g, (low, high))
        if cand.ell.size:
            found = search(cand)
            if ((found[0] == 0 and cand.ell[0] == low)
                    or (found[0] == cand.ell.size - 1 and cand.ell[-1] == high)):
                found = None            # on the edge of the range: search everything
    if found is None:
        cand = _candidates(tab, epsilon_g)
        if cand.ell.size == 0:
            return dp_upper, math.nan
        found = search(cand)
    state["t"], state["at"] = float(cand.t[found[0]]), epsilon_g
    if dp_upper >= found[1]:
        return dp_upper, math.nan
    return found[1], rates[found[0]]


def _uses_chain(tab: _Tables) -> bool:
    """Whether a profile evaluation needs the anchor chain (else it is cheap)."""
    return tab.num_br > 0 and tab.num_br + tab.num_dp > _CHAIN_MIN_CANDIDATES


def _invert(tab: _Tables, target_delta: float) -> float:
    """Smallest epsilon_g (to EPSILON_TOLERANCE) whose profile is <= target_delta.

    Illinois (modified regula falsi) on log delta (:func:`bracket_root`); the
    returned upper end of the bracket is always confirmed by the certified profile
    :func:`_log_profile`, so the public delta at the result never exceeds the target.
    With many candidates the search is first steered by the cheap
    :func:`_steered_log_profile` (with a slightly larger margin, so that the
    certified value, within ~1e-13 of the steered one, passes) and only its end
    point is certified; if that fails, the certified search runs from scratch.
    """
    k_epsilon = _max_loss_up(tab.num_dp, tab.num_br, tab.epsilon)
    log_target = math.log(target_delta)
    mean, variance = _mean_and_variance(tab.num_dp, tab.num_br, tab.epsilon)
    guess = mean + math.sqrt(2.0 * math.log(1.0 / target_delta) * variance)

    def excess(epsilon_g: float) -> float:
        """log delta - log target (+ margin); accepted iff <= 0."""
        log_delta = _log_profile(tab, epsilon_g)
        if math.isnan(log_delta):
            return math.inf
        return log_delta + _ACCEPT_MARGIN - log_target

    if _uses_chain(tab):
        state: dict = {}

        def steered(epsilon_g: float) -> tuple[float, float]:
            log_delta, log_rate = _steered_log_profile(tab, epsilon_g, state)
            if math.isnan(log_delta):
                return math.inf, math.nan
            return log_delta + _ACCEPT_MARGIN + _STEER_MARGIN - log_target, -math.exp(log_rate)

        found = newton_bracket(steered, k_epsilon, guess, EPSILON_TOLERANCE)
        if found is None:       # no convergence: the bracketing search on the same values
            found = bracket_root(lambda x: steered(x)[0], k_epsilon, guess, EPSILON_TOLERANCE)
        high = found[1]
        if high >= k_epsilon or excess(high) <= 0:
            return high
    return bracket_root(excess, k_epsilon, guess, EPSILON_TOLERANCE)[1]


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------

def _validated_counts(num_dp, num_br) -> tuple[int, int]:
    return check_count("num_dp", num_dp, minimum=0), check_count("num_br", num_br, minimum=0)


def _tiny_epsilon_delta(num_dp: int, num_br: int, epsilon: float, epsilon_g: float) -> float:
    """Valid (not optimal) bound for tiny epsilon: a pure (k eps)-DP pair has
    delta(eps_g) <= 1 - e^{eps_g - k eps}."""
    return min(1.0, round_up(-math.expm1(epsilon_g - _max_loss_up(num_dp, num_br, epsilon))))


def _delta(num_dp: int, num_br: int, epsilon: float, epsilon_g: float) -> float:
    if epsilon == 0 or num_dp + num_br == 0:
        return 0.0
    if _at_or_beyond_max_loss(num_dp, num_br, epsilon, epsilon_g):
        return 0.0
    if epsilon < _TINY_EPSILON:
        return _tiny_epsilon_delta(num_dp, num_br, epsilon, epsilon_g)
    return _delta_from_log(_log_profile(_make_tables(num_dp, num_br, epsilon), epsilon_g))


def _epsilon(num_dp: int, num_br: int, epsilon: float, target_delta: float) -> float:
    if epsilon == 0 or num_dp + num_br == 0 or target_delta >= 1:
        return 0.0
    if target_delta == 0:
        return _max_loss_up(num_dp, num_br, epsilon)
    if epsilon < _TINY_EPSILON:
        # the tiny-epsilon bound is ~ k eps - eps_g < 1e-240: either it already meets
        # the target at 0, or only the pure sum k eps does (to float precision)
        if _tiny_epsilon_delta(num_dp, num_br, epsilon, 0.0) <= target_delta:
            return 0.0
        return _max_loss_up(num_dp, num_br, epsilon)
    return _invert(_make_tables(num_dp, num_br, epsilon), target_delta)


def theorem2_delta(k: int, epsilon: float, epsilon_g: float) -> float:
    """Optimal delta at ``epsilon_g`` of k epsilon-BR mechanisms composed non-adaptively.

    Theorem:
        [CR] Theorem 2 = [DDR] Theorem 3: delta_opt = max(0, max_l sum_{i<=l} C(k,i)
        (e^{k t_l - i eps} - e^{eps_g}) p^{k-i} (1-p)^i) with p = p_{eps,t_l} and
        t_l = min(eps, (eps_g + (l + 1) eps) / (k + 1)), l = 0..k.
    Assumptions:
        ``k`` >= 1 mechanisms, each ``epsilon``-bounded-range (epsilon >= 0), chosen
        non-adaptively (fixed in advance); ``epsilon_g`` >= 0 is the overall epsilon.
        Homogeneous: every mechanism has the same ``epsilon``.
    Guarantee:
        The exact optimum (the supremum over all such compositions), returned as an
        upper bound: every term is a positive log-space quantity with an explicit
        float-error allowance, terms left out of a summation window are bounded and
        added, and the result is rounded up and clipped to [0, 1] (typically
        1e-12 above the optimum; the allowance grows like u k log k, ~1e-9 at
        k = 1e5). 0 exactly when ``epsilon_g`` >= k * epsilon or ``epsilon`` = 0.
        For ``epsilon`` < 1e-250 (t would be subnormal) the valid, non-optimal bound
        1 - e^{epsilon_g - k epsilon} is returned.
    Runtime:
        O(k) for the candidates and their one-term chain links plus O(sqrt(k))
        terms per anchor (~1000 anchors at k = 1e5, see ``_optimal_br_chain``):
        ~15 ms at k = 1e3, ~20 ms at k = 1e4, ~0.15 s at k = 1e5 (CPU).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    return _delta(0, k, eps, eg)


def theorem2_epsilon(k: int, epsilon: float, target_delta: float) -> float:
    """Optimal epsilon_g at ``target_delta`` of k epsilon-BR mechanisms composed non-adaptively.

    Theorem:
        [CR] Theorem 2 = [DDR] Theorem 3, inverted: the smallest epsilon_g with
        delta_opt(epsilon_g) <= target_delta (see :func:`theorem2_delta`).
    Assumptions:
        ``k`` >= 1 mechanisms, each ``epsilon``-bounded-range (epsilon >= 0), chosen
        non-adaptively; ``target_delta`` in [0, 1]. Homogeneous epsilon.
    Guarantee:
        An upper bound on the exact optimum within 1e-12 * max(1, epsilon_g): the
        search keeps a bracket whose upper end is confirmed by evaluating
        :func:`theorem2_delta` (so ``theorem2_delta(k, epsilon, result) <= target_delta``).
        ``target_delta`` = 0 gives k * epsilon (rounded up), ``target_delta`` >= 1 gives 0.
    Runtime:
        About six steered evaluations (a few candidates each) and one certified
        profile evaluation: 0.32 s at k = 1e5 (CPU in a fresh process, load 11 on
        2 cores, benchmarks/accounting.py; 3.2 s with ten certified evaluations,
        56 s evaluating every candidate).
    """
    k = check_count("k", k)
    eps = check_nonnegative("epsilon", epsilon)
    target = check_probability("target_delta", target_delta)
    return _epsilon(0, k, eps, target)


def theorem3_delta(num_dp: int, num_br: int, epsilon: float, epsilon_g: float) -> float:
    """Optimal delta at ``epsilon_g`` of num_dp epsilon-DP and num_br epsilon-BR mechanisms.

    Theorem:
        [CR] Theorem 3 (generalizes [DDR] Theorem 3): with d = num_dp, n = num_br,
        delta_opt = max(0, max_l F(t_l)) where F(t) is the hockey-stick divergence of
        n copies of RR_{eps,t} and d copies of RR_{2 eps, eps} ([CR] eq. (5)) and
        t_l = clamp((eps_g + (l + 1 - d) eps) / (n + 1), 0, eps), l = 0..k+d.
        num_br = 0 is [CR] Theorem 1 (Murtagh-Vadhan form, delta0 = 0), num_dp = 0 is
        [CR] Theorem 2.
    Assumptions:
        ``num_dp`` >= 0 pure ``epsilon``-DP mechanisms and ``num_br`` >= 0
        ``epsilon``-BR mechanisms (same epsilon >= 0), in any order, all chosen
        non-adaptively (fixed in advance); ``epsilon_g`` >= 0. Also exact
        under fully ADAPTIVE composition when ``num_br`` <= 1 ([CR] Corollary 5.1 for
        num_br = 1, Theorem 1 for num_br = 0); for num_br >= 2 adaptivity can cost more.
    Guarantee:
        The exact optimum, returned as an upper bound: positive log-space terms with
        explicit float-error allowances (including the difference of the two DP
        prefix sums, whose ratio is at least e^{eps - t}), rigorous bounds for the
        terms outside each summation window, rounded up and clipped to [0, 1]
        (typically 1e-12 above the optimum; up to ~1e-9 when epsilon < 0.01 and
        num_dp is large, where the prefix-sum difference cancels). 0 exactly when
        ``epsilon_g`` >= (num_dp + num_br) * epsilon or ``epsilon`` = 0. For
        ``epsilon`` < 1e-250 the valid, non-optimal bound 1 - e^{epsilon_g - k epsilon}.
    Runtime:
        O(k) tables, O(k log k) chain links, O(sqrt(n)) terms per anchor (~1000
        at k = 1e5): ~20 ms at k = 1e3, ~25 ms at k = 1e4, ~0.2 s at k = 1e5
        (num_dp = num_br, CPU).
    """
    d, n = _validated_counts(num_dp, num_br)
    eps = check_nonnegative("epsilon", epsilon)
    eg = check_nonnegative("epsilon_g", epsilon_g, allow_inf=True)
    return _delta(d, n, eps, eg)


def theorem3_epsilon(num_dp: int, num_br: int, epsilon: float, target_delta: float) -> float:
    """Optimal epsilon_g at ``target_delta`` of num_dp epsilon-DP and num_br epsilon-BR mechanisms.

    Theorem:
        [CR] Theorem 3, inverted: the smallest epsilon_g with delta_opt(epsilon_g) <=
        target_delta (see :func:`theorem3_delta`).
    Assumptions:
        ``num_dp`` >= 0 pure ``epsilon``-DP and ``num_br`` >= 0 ``epsilon``-BR
        mechanisms in any order, all chosen non-adaptively; exact also
        under ADAPTIVE composition when ``num_br`` <= 1 ([CR] Corollary 5.1).
        ``target_delta`` in [0, 1]. Homogeneous epsilon.
    Guarantee:
        An upper bound on the exact optimum within 1e-12 * max(1, epsilon_g); the
        returned value satisfies ``theorem3_delta(num_dp, num_br, epsilon, result)
        <= target_delta`` by evaluation. ``target_delta`` = 0 gives
        (num_dp + num_br) * epsilon (rounded up), ``target_delta`` >= 1 gives 0.
    Runtime:
        About six steered evaluations and one certified profile evaluation:
        0.41 s at k = 1e5 (num_dp = num_br, eps 0.1; CPU in a fresh process, load
        11 on 2 cores, benchmarks/accounting.py; 2.8 s with ten certified
        evaluations, 49 s evaluating every candidate).
    """
    d, n = _validated_counts(num_dp, num_br)
    eps = check_nonnegative("epsilon", epsilon)
    target = check_probability("target_delta", target_delta)
    return _epsilon(d, n, eps, target)

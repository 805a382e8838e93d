"""Calibration against a total (epsilon, delta): the largest noise-level knob
whose *actual* events compose to the target under ``privloss.accounting``.

Every algorithm module builds its events from its parameters with one
function (its ``plan``); calibration bisects a scalar knob ``x`` (a per-step
epsilon, a rho, ...) of that function, so the check is done on exactly the
events the release will report.  The accountant's answer is non-decreasing in
the knob (more privacy loss per step never composes to less), which is what
the bisection needs; the returned knob is the low end of the final bracket,
re-checked with the full accountant.

Speed: the exact adaptive recursion ("adaptive-sequence", up to six
mechanisms) costs ~0.4 s per evaluation, so the search runs on every other
bound (SEARCH_CANDIDATES) and only the final answer is checked with all of
them; the full accountant can only be tighter, so the answer stays valid (it
may be a hair below the largest knob the exact recursion would allow).

Pure DP (``target_delta = 0``, every event pure: ``PureDP``, ``BoundedRange``,
``Laplace``, ``DiscreteLaplace``): the search needs no accountant.  At delta = 0
the exact epsilon of an adaptive composition is the sum of the mechanisms'
largest privacy losses (basic composition, Dwork & Roth 2014 Thm 3.16; at
delta = 0 it is the optimum, Kairouz, Oh, Viswanath 2015 Thm 3.3), each of
which is attained or approached (``Delta / scale`` of a Laplace or discrete
Laplace, ``epsilon`` of an epsilon-DP or epsilon-BR mechanism), so no valid
bound is below that sum.  :func:`exact_pure_epsilon` computes it in rationals
and the bisection compares it with the target: exactly the comparison the
accountant makes (its ``basic`` row is the sum rounded up to a float, and
every other row is at least the sum), except at a rounding tie, where the
exact sum may admit a knob the float rows refuse (a knob still valid by the
theorem).  The answer is re-checked with every bound as always; if that
re-check refuses it (such a tie), the accountant's own search runs instead.
Same knob, same events, same noise as the accountant's search otherwise
(tests/releases_algorithms/test_pure_calibration.py).

Calibration cache: a search's answer depends only on public parameters
(the algorithm, its fixed arguments, the target epsilon and delta, the model,
the code), never on data, so callers that pass ``cache_key`` keep it across
processes in the per-user cache (:mod:`privloss._cache`; ``PRIVLOSS_CACHE_DIR``
names the folder, ``off`` turns it off).  A cached knob is used only after the
same final re-check with every bound as a searched one (its events composed by
the full accountant within the target), so a corrupted or forged entry can
never make a release less private: it is ignored, searched again and
overwritten.  The same knob gives the same events, so the release is the same
with or without the cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from privloss.accounting import CANDIDATES, AccountingResult, compose
from privloss.accounting.accountant import meets_epsilon
from privloss.events import Interaction

#: the calibrations' folder in the per-user cache (privloss._cache)
CACHE_NAMESPACE = "calibration"
#: relative width of the final bracket (the knob is at most this far below optimal)
TOLERANCE = 1e-5
#: bounds used during the search (all but the slow exact recursion)
SEARCH_CANDIDATES = tuple(c for c in CANDIDATES if c.name != "adaptive-sequence")
#: the same, the numerical PLD first: the search asks only whether some bound
#: meets the target (accounting.accountant.meets_epsilon), and the PLD is
#: usually the lowest, so a "yes" is mostly found without the others
SEARCH_ORDER = tuple(sorted(SEARCH_CANDIDATES, key=lambda c: c.name != "pld"))


def within_release(interaction) -> Interaction:
    """The model for the events of one release: at least adaptive, because its
    selection rounds depend on earlier winners (a BoundedRange(count=k) event does
    not record that), whatever the caller's outer model.  "fully-adaptive" is
    also adaptive here: inside one release the number of steps and their
    parameters are fixed before it runs, so the tight adaptive bounds hold."""
    interaction = Interaction.parse(interaction)
    if interaction.value in ("non-adaptive", "fully-adaptive"):
        return Interaction.ADAPTIVE
    return interaction


def spent(events, target_delta: float, interaction) -> AccountingResult:
    """The tightest valid epsilon of ``events`` at ``target_delta`` (within a release)."""
    return compose(tuple(events), target_delta=target_delta,
                   interaction=within_release(interaction))


def exact_pure_epsilon(events) -> Fraction | None:
    """The exact epsilon at delta = 0 of ``events`` composed adaptively, as a
    rational, or None when an event is not one of ``PureDP``, ``BoundedRange``,
    ``Laplace``, ``DiscreteLaplace`` (then the accountant is needed).

    Definition
        ``sum(count * loss)`` with ``loss`` the event's largest privacy loss:
        ``epsilon`` (PureDP, BoundedRange), ``sensitivity / scale`` (Laplace,
        DiscreteLaplace: the pmf/pdf ratio of two inputs Delta apart is at
        most exp(Delta / scale), attained), with each float read exactly.
    Privacy guarantee
        Adaptive composition of pure-DP mechanisms at delta = 0: the sum is
        valid (basic composition, Dwork & Roth 2014 Thm 3.16) and optimal
        (Kairouz, Oh, Viswanath 2015 Thm 3.3 at delta = 0; an epsilon-BR
        mechanism can have a largest loss arbitrarily close to epsilon), so
        every valid bound of the accountant is at least this value.
    Citation
        Dwork & Roth 2014; Kairouz, Oh, Viswanath, ICML 2015; Canonne, Kamath,
        Steinke 2020 (discrete Laplace).
    Runtime
        O(number of events), rational arithmetic.
    """
    from privloss.events import BoundedRange, DiscreteLaplace, Laplace, PureDP

    total = Fraction(0)
    for event in events:
        kind = type(event)
        if kind in (PureDP, BoundedRange):
            loss = Fraction(event.epsilon)
        elif kind in (Laplace, DiscreteLaplace):
            loss = Fraction(event.sensitivity) / Fraction(event.scale)
        else:
            return None
        total += loss * event.count
    return total


def _bracketed_largest(meets: Callable[[float], bool], guess: float, tolerance: float,
                       target_epsilon: float, target_delta: float) -> float:
    """Largest ``x`` (the low end of a bracket of relative width ``tolerance``)
    with ``meets(x)``, for a ``meets`` true below a threshold and false above."""
    guess = float(guess)
    if not (guess > 0 and math.isfinite(guess)):
        guess = 1.0
    if meets(guess):
        low, high = guess, 2.0 * guess
        for _ in range(80):
            if not meets(high):
                break
            low, high = high, 2.0 * high
        else:
            raise ValueError(f"calibration failed: the budget (epsilon={target_epsilon}, "
                             f"delta={target_delta}) is outside the range the calibration "
                             f"searches (parameter up to {high:g})")
    else:
        low, high = 0.5 * guess, guess
        for _ in range(200):
            if meets(low):
                break
            low, high = 0.5 * low, low
        else:
            raise ValueError(f"the budget (epsilon={target_epsilon}, delta={target_delta}) is too "
                             f"small for this algorithm: even negligible noise levels exceed it")
    while high / low - 1.0 > tolerance:
        middle = math.sqrt(low * high)
        if meets(middle):
            low = middle
        else:
            high = middle
    return low


def _pure_meets(events_of, target_epsilon: float, target_delta: float, interaction, guess):
    """``x -> exact_pure_epsilon(events_of(x)) <= target_epsilon`` when the
    events at ``guess`` are pure, the target delta is 0 and the model is the
    adaptive one (:func:`within_release`); else None."""
    if target_delta != 0 or within_release(interaction) is not Interaction.ADAPTIVE:
        return None
    try:
        if exact_pure_epsilon(events_of(float(guess))) is None:
            return None
    except (ValueError, ArithmeticError):
        return None             # the accountant's search reports the failure
    target = Fraction(target_epsilon)

    def meets(x: float) -> bool:
        value = exact_pure_epsilon(events_of(x))
        if value is None:       # the events changed kind along the search
            raise _NotPure
        return value <= target

    return meets


class _NotPure(Exception):
    pass


def largest_meeting(events_of: Callable[[float], tuple], target_epsilon: float,
                    target_delta: float, *, guess: float,
                    interaction: Interaction | str = Interaction.ADAPTIVE,
                    tolerance: float = TOLERANCE,
                    cache_key: dict | None = None) -> tuple[float, AccountingResult]:
    """Largest ``x > 0`` (to a relative ``tolerance``) with
    ``compose(events_of(x), target_delta).epsilon <= target_epsilon``.

    Pure DP (delta 0, pure events): the comparison is made on
    :func:`exact_pure_epsilon` (see the module docstring); the answer is
    re-checked with every bound either way.
    ``cache_key``: public parameters that, with the target, the model, the
    guess and the tolerance, determine ``events_of`` (the algorithm's name and
    its fixed arguments); when given, the answer is looked up in and stored to
    the per-user cache (:mod:`privloss._cache`, see "Calibration cache" in the
    module docstring).  None (the default): no cache.
    Raises ``ValueError`` (naming the budget) when not even a vanishing knob
    meets the target (e.g. a delta part that alone exceeds target_delta).
    """
    guess = float(guess)
    if not (guess > 0 and math.isfinite(guess)):
        guess = 1.0
    key = None
    if cache_key is not None:
        key = _full_key(cache_key, target_epsilon, target_delta, interaction, guess, tolerance)
        cached = _from_cache(key, events_of, target_epsilon, target_delta, interaction)
        if cached is not None:
            return cached
    low, result = _search(events_of, target_epsilon, target_delta, guess, interaction,
                          tolerance)
    if key is not None:
        from privloss._cache import write_entry

        write_entry(CACHE_NAMESPACE, key, low.hex())
    return low, result


def _search(events_of, target_epsilon, target_delta, guess, interaction, tolerance):
    pure = _pure_meets(events_of, target_epsilon, target_delta, interaction, guess)
    if pure is not None:
        try:
            low = _bracketed_largest(pure, guess, tolerance, target_epsilon, target_delta)
        except (_NotPure, ValueError, ArithmeticError):
            low = None
        if low is not None:
            result = spent(events_of(low), target_delta, interaction)
            if result.value <= target_epsilon:
                return low, result

    def meets(x: float) -> bool:
        return meets_epsilon(tuple(events_of(x)), target_epsilon, target_delta,
                             within_release(interaction), SEARCH_ORDER)

    low = _bracketed_largest(meets, guess, tolerance, target_epsilon, target_delta)
    result = spent(events_of(low), target_delta, interaction)
    if result.value > target_epsilon:       # monotone bounds make this impossible; stay safe
        raise ArithmeticError("calibrated parameters failed their re-check")
    return low, result


def _full_key(cache_key: dict, target_epsilon, target_delta, interaction, guess: float,
              tolerance) -> dict:
    """Everything the search's answer depends on: the caller's public
    parameters, the target, the model, where the search starts, its
    tolerance and the code (:func:`privloss._cache.code_fingerprint`)."""
    from privloss._cache import code_fingerprint

    return {"parameters": cache_key, "target_epsilon": target_epsilon,
            "target_delta": target_delta, "interaction": within_release(interaction).value,
            "guess": guess, "tolerance": tolerance, "code": code_fingerprint()}


def _from_cache(key: dict, events_of, target_epsilon, target_delta, interaction):
    """The cached knob and its full accountant result, or None: absent, not a
    positive finite float, refused by ``events_of``, or not within the target
    when re-checked with every bound (a corrupted or forged entry is then
    recomputed and overwritten, never used)."""
    from privloss._cache import read_entry

    value = read_entry(CACHE_NAMESPACE, key)
    if not isinstance(value, str):
        return None
    try:
        knob = float.fromhex(value)
    except (ValueError, OverflowError):
        return None
    if not (knob > 0 and math.isfinite(knob)):
        return None
    try:
        result = spent(events_of(knob), target_delta, interaction)
    except (ValueError, ArithmeticError):
        return None
    if not result.value <= target_epsilon:
        return None
    return knob, result

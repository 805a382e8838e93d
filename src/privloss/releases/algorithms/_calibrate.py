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
"""

from __future__ import annotations

import math
from collections.abc import Callable

from privloss.accounting import CANDIDATES, AccountingResult, PrivacyAccountant, compose
from privloss.events import Interaction

#: relative width of the final bracket (the knob is at most this far below optimal)
TOLERANCE = 1e-5
#: bounds used during the search (all but the slow exact recursion)
SEARCH_CANDIDATES = tuple(c for c in CANDIDATES if c.name != "adaptive-sequence")


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


def largest_meeting(events_of: Callable[[float], tuple], target_epsilon: float,
                    target_delta: float, *, guess: float,
                    interaction: Interaction | str = Interaction.ADAPTIVE,
                    tolerance: float = TOLERANCE) -> tuple[float, AccountingResult]:
    """Largest ``x > 0`` (to a relative ``tolerance``) with
    ``compose(events_of(x), target_delta).epsilon <= target_epsilon``.

    Raises ``ValueError`` (naming the budget) when not even a vanishing knob
    meets the target (e.g. a delta part that alone exceeds target_delta).
    """
    def check(x: float) -> AccountingResult:
        accountant = PrivacyAccountant(tuple(events_of(x)),
                                       interaction=within_release(interaction),
                                       candidates=SEARCH_CANDIDATES)
        return accountant.epsilon(target_delta)

    def meets(x: float) -> bool:
        return check(x).value <= target_epsilon

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
    result = spent(events_of(low), target_delta, interaction)
    if result.value > target_epsilon:       # monotone bounds make this impossible; stay safe
        raise ArithmeticError("calibrated parameters failed their re-check")
    return low, result

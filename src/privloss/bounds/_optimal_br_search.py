"""Root bracketing and argmax steering for the inversion of [CR] Theorems 2 and 3
(:mod:`privloss.bounds.optimal_br`).

Why: inverting the profile delta_opt(epsilon_g) takes about ten evaluations, and a
certified evaluation at k = 10^5 (an upper bound on the maximum over all O(k)
candidates, :mod:`privloss.bounds._optimal_br_chain`) costs about a thousand window
sums. The search itself only needs the *value* of the profile near its argmax, so it
is steered by :func:`argmax_search`: a k-section search over the candidates, each
evaluated by its own certified window sum (about 40 sums). Only the final point is
certified by the chain.

Soundness: the returned epsilon_g is accepted only after the certified evaluation
(:func:`privloss.bounds.optimal_br._log_profile`) confirms delta <= target there; a
steering error (a missed argmax, were the candidate values not unimodal) can only
make the steered point too small, which that check rejects, and then the certified
search runs from scratch. Steering decides the speed, never the validity.

Privacy guarantee
-----------------
None by itself: a numerical search whose result is confirmed by the caller.

Citation
--------
Illinois (modified regula falsi): Dowell and Jarratt, BIT 11 (1971). The slope of
a maximum of smooth functions at its argmax: Danskin, SIAM J. Appl. Math. 14 (1966).

Runtime
-------
``bracket_root``: about ten evaluations of ``excess``; ``newton_bracket`` about six. ``argmax_search``: about
``_POINTS * log(size) / log(_POINTS / 2)`` evaluations.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = []

#: Candidates evaluated per k-section round.
_POINTS = 8


def bracket_root(excess: Callable[[float], float], high: float, guess: float,
                 relative_tolerance: float) -> tuple[float, float]:
    """(lo, hi) with excess(lo) > 0 >= excess(hi) (or hi = 0), hi - lo <= tolerance.

    ``excess`` is non-increasing on [0, high] and excess(high) <= 0 is assumed (not
    evaluated). Illinois on the values with bisection safeguards: every third step
    must halve the bracket, else the next step bisects. The tolerance is
    ``relative_tolerance * max(1, hi)``.
    """
    f_lo = excess(0.0)
    if f_lo <= 0:
        return 0.0, 0.0
    lo, hi, f_hi = 0.0, high, -math.inf
    if 0.0 < guess < high:
        f_guess = excess(guess)
        if f_guess <= 0:
            hi, f_hi = guess, f_guess
        else:
            lo, f_lo = guess, f_guess
    side = 0
    width_before = hi - lo
    steps_since_check = 0
    for _ in range(400):
        width = hi - lo
        tolerance = relative_tolerance * max(1.0, hi)
        if width <= tolerance:
            break
        if steps_since_check >= 3:
            bisect = width > 0.5 * width_before
            width_before, steps_since_check = width, 0
        else:
            bisect = False
        if bisect or not (math.isfinite(f_lo) and math.isfinite(f_hi)) or f_lo == f_hi:
            x = 0.5 * (lo + hi)
        else:
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            x = min(max(x, lo + 0.5 * tolerance), hi - 0.5 * tolerance)
        steps_since_check += 1
        f_x = excess(x)
        if f_x <= 0:
            hi, f_hi = x, f_x
            if side == -1:
                f_lo *= 0.5
            side = -1
        else:
            lo, f_lo = x, f_x
            if side == 1 and math.isfinite(f_hi):
                f_hi *= 0.5
            side = 1
    return lo, hi


def newton_bracket(excess: Callable[[float], tuple[float, float]], high: float, guess: float,
                   relative_tolerance: float, max_steps: int = 40) -> tuple[float, float] | None:
    """(lo, hi) as :func:`bracket_root`, by safeguarded Newton steps, or None.

    ``excess(x)`` returns (f(x), f'(x)); f is non-increasing on [0, high] with
    f(high) <= 0 assumed. Steps leaving the current bracket, or with an unusable
    slope, bisect instead. Once a step is shorter than the tolerance, the point a
    tolerance beyond it (on the other side of the root) is tried to close the
    bracket. None after ``max_steps`` evaluations.
    """
    lo, hi = 0.0, high
    x = guess if 0.0 < guess < high else 0.5 * high
    for _ in range(max_steps):
        f, slope = excess(x)
        if f <= 0:
            hi = x
        else:
            lo = x
        tolerance = relative_tolerance * max(1.0, hi)
        if hi - lo <= tolerance:
            return lo, hi
        step = -f / slope if (math.isfinite(f) and math.isfinite(slope) and slope < 0) else math.nan
        target = x + step
        if abs(step) < 0.5 * tolerance:
            # at the root to within the tolerance: probe just across it
            target = x - 0.75 * tolerance if f <= 0 else x + 0.75 * tolerance
        if not lo < target < hi:
            target = 0.5 * (lo + hi)
        x = target
    return None


def argmax_search(values: Callable[[np.ndarray], np.ndarray], size: int) -> tuple[int, float]:
    """(index, value) of the largest of ``values`` over 0..size-1, for unimodal values.

    ``values(indices)`` evaluates a batch. k-section: ``_POINTS`` evenly spaced
    points per round, the bracket shrinks to the two neighbours of the best. The
    value returned is one of the evaluated values (so, for values that are not
    unimodal, at most their maximum).
    """
    known: dict[int, float] = {}

    def evaluate(indices: np.ndarray) -> None:
        new = np.array([i for i in indices.tolist() if i not in known], dtype=np.int64)
        if new.size:
            known.update(zip(new.tolist(), np.asarray(values(new), dtype=float).tolist()))

    lo, hi = 0, size - 1
    while hi - lo > 2 * _POINTS:
        grid = np.unique(np.linspace(lo, hi, _POINTS + 2).round().astype(np.int64))
        evaluate(grid)
        best = int(np.argmax([known[g] for g in grid.tolist()]))
        lo, hi = int(grid[max(best - 1, 0)]), int(grid[min(best + 1, grid.size - 1)])
    grid = np.arange(lo, hi + 1, dtype=np.int64)
    evaluate(grid)
    best = int(grid[int(np.argmax([known[g] for g in grid.tolist()]))])
    return best, known[best]

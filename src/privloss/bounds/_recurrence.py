"""A first-order linear recurrence without SciPy (``scipy.signal.lfilter`` costs ~1 s to import).

Used for the guesses of the lattice and PLD inversions (the answers are then
certified by re-evaluating the profile, so this only has to be accurate).
"""

from __future__ import annotations

import math

import numpy as np

#: Largest exponent range inside one block: decay^-r stays below e^50 (no overflow,
#: and the rescaling loses at most ~50 ulps).
_BLOCK_LOG_RANGE = 50.0


def _scan(values: np.ndarray, decay: float) -> np.ndarray:
    """The recurrence by doubling (Hillis-Steele): log2 passes until decay^s underflows."""
    out = values.copy()
    factor, shift = decay, 1
    while shift < out.size and factor > 0.0:
        out[shift:] += factor * out[:-shift].copy()
        factor *= factor
        shift *= 2
    return out


def decayed_cumsum(values: np.ndarray, decay: float) -> np.ndarray:
    """y[k] = values[k] + decay * y[k - 1] (y[-1] = 0), for 0 <= decay <= 1.

    Definition
        The recurrence of ``lfilter([1], [1, -decay], values)``.
    Runtime
        O(n) numpy work, no Python loop over the entries: blocks of r steps are
        solved in closed form, y[s + r] = decay^r (decay y[s - 1] +
        sum_{i <= r} values[s + i] decay^-i), with decay^-r <= e^50 inside a block;
        the carries between blocks (factor decay^block <= e^-50) by a doubling scan.
        For non-negative ``values`` every entry has a relative error of a few
        hundred ulps at most (sums of non-negative terms and two exponentials),
        apart from contributions below the underflow threshold (~1e-308).
    """
    values = np.asarray(values, dtype=float)
    size = values.size
    if size == 0:
        return values.copy()
    if not decay > 0:
        return values.copy()
    if decay >= 1.0:
        return np.cumsum(values)                  # no decay at all (a step below 1e-16)
    rate = -math.log(decay)                       # > 0
    block = max(1, min(size, int(_BLOCK_LOG_RANGE / rate)))
    blocks = -(-size // block)
    padded = np.zeros(blocks * block)
    padded[:size] = values
    exponents = np.arange(block, dtype=float) * rate
    grid = padded.reshape(blocks, block)
    local = np.cumsum(grid * np.exp(exponents), axis=1)
    local *= np.exp(-exponents)
    # carry[b] = y at the end of block b - 1: carry[b+1] = local[b, -1] + decay^block carry[b]
    ends = _scan(local[:, -1], math.exp(-rate * block))
    carry = np.concatenate(([0.0], ends[:-1]))
    local += np.exp(-(exponents + rate))[None, :] * carry[:, None]
    return local.reshape(-1)[:size]

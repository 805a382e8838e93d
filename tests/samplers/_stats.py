"""Goodness-of-fit helpers for the sampler tests (chi-square against exact masses).

Significance level: every statistical test in ``tests/samplers`` rejects at
``ALPHA = 1e-4`` per test.  The suite runs fewer than 100 such tests, so by
Bonferroni the chance that a correct sampler fails any of them is below 1%;
the seeds are fixed, so results are reproducible run to run.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 1e-4
MIN_EXPECTED = 5.0


def chi_square_pvalue(samples, mass, edges) -> tuple[float, int]:
    """Chi-square p-value of integer ``samples`` against ``mass(lo, hi)``.

    ``edges`` = increasing integers e_0 < ... < e_m define the bins
    (-inf, e_0 - 1], [e_0, e_1 - 1], ..., [e_m, inf); ``mass(lo, hi)`` returns
    P[lo <= X <= hi] with ``None`` for an infinite end.  Adjacent bins are
    merged until every expected count is >= 5.  Returns (p-value, number of bins).
    """
    samples = np.asarray(samples)
    n = samples.size
    edges = [int(e) for e in edges]
    lows = [None] + edges
    highs = [e - 1 for e in edges] + [None]
    expected = np.array([n * float(mass(lo, hi)) for lo, hi in zip(lows, highs)])
    if samples.dtype == object:
        index = np.array([np.searchsorted(edges, int(v), side="right") for v in samples])
    else:
        index = np.searchsorted(np.array(edges, dtype=np.int64), samples, side="right")
    observed = np.bincount(index, minlength=len(lows)).astype(float)
    merged_obs, merged_exp = _merge(observed, expected)
    statistic = float(np.sum((merged_obs - merged_exp) ** 2 / merged_exp))
    dof = len(merged_exp) - 1
    return float(stats.chi2.sf(statistic, dof)), len(merged_exp)


def _merge(observed, expected):
    out_obs, out_exp = [], []
    acc_obs = acc_exp = 0.0
    for o, e in zip(observed, expected):
        acc_obs += o
        acc_exp += e
        if acc_exp >= MIN_EXPECTED:
            out_obs.append(acc_obs)
            out_exp.append(acc_exp)
            acc_obs = acc_exp = 0.0
    if acc_exp > 0 or acc_obs > 0:
        if out_exp:
            out_obs[-1] += acc_obs
            out_exp[-1] += acc_exp
        else:
            out_obs.append(acc_obs)
            out_exp.append(acc_exp)
    return np.array(out_obs), np.array(out_exp)


def integer_edges(scale, bins_per_side: int = 40, reach: float = 12.0) -> list[int]:
    """Edges covering [-reach*scale, reach*scale] with about 2*bins_per_side ranges.

    Width 1 when the scale is small (every integer its own bin, tails pooled by
    the merge step).  ``scale`` is a float used only to place test bins.
    """
    width = max(1, int(scale * reach / bins_per_side))
    half = max(1, int(math.ceil(scale * reach / width)))
    return [k * width for k in range(-half, half + 1)]

"""Eq. (9) of Cesar–Rogers: the order-respecting least-squares fit of noisy counts.

``x_hat = argmin sum_j (x_j - y_j)^2`` subject to ``x_1 >= x_2 >= ... >= x_l``
(and optionally ``x_l >= 0``) is antitonic regression, solved exactly by the
pool-adjacent-violators algorithm (``scipy.optimize.isotonic_regression``,
SciPy >= 1.12).  With the extra constraint ``x_l >= 0`` the solution is the
unconstrained fit clipped at 0 (clipping an isotonic fit to a bound keeps it
optimal; the tests check it against ``scipy.optimize.nnls`` with
``x = A z``, ``A`` upper-triangular ones, ``z >= 0``).  Pure post-processing
of the noisy counts: no privacy cost.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ordered_least_squares"]


def ordered_least_squares(y, *, nonnegative: bool = True) -> np.ndarray:
    """Non-increasing least-squares fit of ``y`` (float64), clipped at 0 if ``nonnegative``."""
    values = np.asarray(y, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {values.shape}")
    if values.size == 0:
        return values.copy()
    from scipy.optimize import isotonic_regression    # SciPy's optimize is slow to import

    fit = isotonic_regression(values, increasing=False).x
    return np.maximum(fit, 0.0) if nonnegative else fit

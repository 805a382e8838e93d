"""``privloss.bounds._logistic`` gives SciPy's ``expit`` / ``log_expit`` bit
for bit (the same formulas on the same C library), so the lattice bounds'
values and error analysis are unchanged without importing ``scipy.special``."""

from __future__ import annotations

import numpy as np
from scipy import special

from privloss.bounds._logistic import expit, log_expit


def _values():
    rng = np.random.default_rng(4)
    return np.concatenate([rng.uniform(-800, 800, 20000), rng.uniform(-40, 40, 20000),
                           rng.uniform(-1e-3, 1e-3, 5000), rng.normal(0, 1e-10, 1000),
                           [0.0, -0.0, 1e-300, -1e-300, 709.7, -709.7, 745.2, -745.2, 1e308,
                            -1e308, np.inf, -np.inf]])


def test_bit_for_bit_with_scipy():
    x = _values()
    assert np.array_equal(expit(x), special.expit(x))
    assert np.array_equal(log_expit(x), special.log_expit(x))
    for value in (0.07, -3.5, 800.0, -800.0):
        assert expit(value) == special.expit(value)
        assert log_expit(value) == special.log_expit(value)
    grid = x[:12].reshape(3, 4)
    assert np.array_equal(expit(grid), special.expit(grid))

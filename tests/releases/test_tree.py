"""The linear-time BLUE against dense generalised least squares."""

from __future__ import annotations

import numpy as np
import pytest

from privloss.releases._tree import blue, check_parents
from tests.releases._trees import dense_blue, random_tree


@pytest.mark.parametrize("sizes", [(1, 3, 7, 15), (2, 5, 6), (1, 1, 4), (1, 12), (3,)])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_dense_least_squares(sizes, seed):
    rng = np.random.default_rng(seed)
    parents = random_tree(rng, sizes)
    variances = rng.uniform(0.2, 5.0, len(sizes))
    proxies = rng.uniform(0.1, 3.0, len(sizes))
    measured = [rng.normal(0, 3, size) for size in sizes]
    result = blue(measured, variances, proxies, parents)
    estimates, exact_variances, operator = dense_blue(measured, variances, parents, sizes)
    node_proxy = np.concatenate([np.full(size, proxies[level])
                                 for level, size in enumerate(sizes)])
    np.testing.assert_allclose(np.concatenate(result.values), estimates, atol=1e-10)
    np.testing.assert_allclose(np.concatenate(result.variances), exact_variances, rtol=1e-10)
    np.testing.assert_allclose(np.concatenate(result.proxies)[:, 0], (operator ** 2) @ node_proxy,
                               rtol=1e-10)
    # the weights the tail bounds assume: every |a_i| <= 1
    assert np.abs(operator).max() <= 1.0 + 1e-12


def test_consistent_and_exact_without_noise():
    rng = np.random.default_rng(5)
    sizes = (1, 4, 9)
    parents = random_tree(rng, sizes)
    leaves = rng.integers(0, 10, 9).astype(float)
    values = [None, None, leaves]
    values[1] = np.bincount(parents[2], weights=leaves, minlength=4)
    values[0] = np.array([values[1].sum()])
    result = blue(values, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], parents)
    for level in range(3):
        np.testing.assert_allclose(result.values[level], values[level], atol=1e-12)
    noisy = [v + rng.normal(0, 1, v.size) for v in values]
    result = blue(noisy, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], parents)
    for level in (1, 2):
        sums = np.bincount(parents[level], weights=result.values[level], minlength=sizes[level - 1])
        np.testing.assert_allclose(sums, result.values[level - 1], atol=1e-9)


def test_bad_parents_named():
    with pytest.raises(ValueError, match=r"parents\[1\] must hold indices in \[0, 2\)"):
        check_parents((2, 3), [None, np.array([0, 1, 2])])
    with pytest.raises(ValueError, match=r"parents\[1\] must be an integer array of length 3"):
        check_parents((2, 3), [None, np.array([0, 1])])

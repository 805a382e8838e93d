"""Running totals from *all* complete nodes of the tree (the offline
least-squares estimate), with exact variances.

Definition
----------
After T periods the complete nodes of the tree over C = 2^H periods form a
forest: the maximal dyadic blocks covering [0, T) (one per set bit of T), each
a perfect binary tree whose nodes all hold a noisy sum.  Blocks share no
measurement, so the least-squares (BLUE) estimate decouples: inside each block
it is the tree BLUE of :mod:`._tree` (up and down passes, every node using its
ancestors' information too), and the total of [0, t) is the sum of the leaf
estimates before t.

Exact variance of that total: the blocks before t contribute their roots'
subtree variances U; inside the block holding t, let Q_v be the part of node
v's mass before t.  From the lowest node v0 with t inside it, going up, the
BLUE of (x_v, Q_v) from v's subtree alone is a generalised least-squares fit
of three unknowns, (x_a, x_b, Q_b) or (x_a, Q_a, x_b) for children a, b, from
three independent statistics: v's own noisy value, the sibling's subtree
estimate (variance U) and the child's estimate of (x, Q) with its 2x2
covariance from the step below (the child's other inner contrasts appear in
its own measurements only, so this two-stage fit is the full BLUE).  At the
block's root, Var(Q) is the answer.  The tail proxies follow the same weights
(sandwich form: the weights fixed by the exact variances, the proxies in
place of the variances).

Runtime
-------
O(T log T) small (3x3) solves, NumPy batched over the periods; the block
BLUEs are O(T).
"""

from __future__ import annotations

import numpy as np

from privloss.releases._tree import blue

__all__ = ["offline_prefixes"]


def _blocks(periods: int, height: int) -> list:
    """(start, height) of the maximal dyadic blocks covering [0, periods)."""
    out, start = [], 0
    for h in range(height, -1, -1):
        if periods & (1 << h):
            out.append((start, h))
            start += 1 << h
    return out


def _block_estimates(plan, measured, start: int, h: int) -> np.ndarray:
    """BLUE of the 2^h period totals of one block."""
    height = plan.levels - 1
    variances = plan.noise.variances()
    values, parents, level_variances = [], [None], []
    for depth in range(h + 1):
        level = height - (h - depth)
        first = start >> (h - depth)
        values.append(measured[level][first:first + (1 << depth)])
        level_variances.append(variances[level])
        if depth:
            parents.append(np.arange(1 << depth, dtype=np.int64) // 2)
    result = blue(values, level_variances, [1.0] * (h + 1), parents)
    return result.values[-1]


def _outer(vectors: np.ndarray) -> np.ndarray:
    """Batched outer products v v^T of shape (n, d, d)."""
    return vectors[:, :, None] * vectors[:, None, :]


def up_weights(plan) -> np.ndarray:
    """``w[l, k]``: the weight of one level-k noisy value in the subtree
    estimate ``up`` of a level-l node (0 unless k >= l; in [0, 1])."""
    variances = plan.noise.variances()
    up = plan._per_level()[0]
    levels = plan.levels
    own = np.ones(levels)
    for level in range(levels - 1):
        below = 2.0 * up[level + 1]
        own[level] = below / (variances[level] + below)
    weights = np.zeros((levels, levels))
    for level in range(levels):
        carry = 1.0
        for deeper in range(level, levels):
            weights[level, deeper] = carry * own[deeper]
            carry *= 1.0 - own[deeper]
    return weights


def offline_prefixes(plan, measured, periods: int):
    """``(estimates, variances, proxies, max_weights)`` of the totals of
    [0, t), t = 1..periods (proxies: shape (periods, K), as
    :meth:`NoisePlan.proxies`; max_weights: shape (periods, levels), a bound per
    level on the largest |weight| of that level's noise, by the triangle
    inequality along the recursion)."""
    height = plan.levels - 1
    variances = np.asarray(plan.noise.variances(), dtype=np.float64)
    noise_proxies = np.asarray(plan.noise.proxies(), dtype=np.float64)      # (levels, K)
    up, up_proxy = plan._per_level()                                        # (levels,), (levels, K)
    k = noise_proxies.shape[1]
    w_up = up_weights(plan)
    leaves = np.zeros(periods)
    blocks = _blocks(periods, height)
    for start, h in blocks:
        leaves[start:start + (1 << h)] = _block_estimates(plan, measured, start, h)
    estimates = np.cumsum(leaves)

    t = np.arange(1, periods + 1, dtype=np.int64)
    starts = np.array([start for start, _ in blocks], dtype=np.int64)
    heights = np.array([h for _, h in blocks], dtype=np.int64)
    root_var = up[height - heights]
    root_proxy = up_proxy[height - heights]
    # blocks hold disjoint noise: the bound of the blocks up to each one is a running max
    root_weights = np.maximum.accumulate(w_up[height - heights], axis=0)
    which = np.searchsorted(starts, t - 1, side="right") - 1               # block of period t-1
    before_var = np.concatenate([[0.0], np.cumsum(root_var)])[which]
    before_proxy = np.concatenate([np.zeros((1, k)), np.cumsum(root_proxy, axis=0)])[which]
    r = t - starts[which]
    hb = heights[which]
    at_end = r == (1 << hb)
    out_var = before_var + np.where(at_end, root_var[which], 0.0)
    out_proxy = before_proxy + np.where(at_end[:, None], root_proxy[which], 0.0)
    before_weights = np.concatenate([np.zeros((1, height + 1)), root_weights])[which]
    out_weights = np.where(at_end[:, None], root_weights[which], before_weights)

    inside = np.flatnonzero(~at_end)
    if inside.size:
        q_var, q_proxy, q_weights = _inside_variances(r[inside], hb[inside], variances,
                                                      noise_proxies, up, up_proxy, w_up,
                                                      height)
        out_var[inside] += q_var
        out_proxy[inside] += q_proxy
        out_weights[inside] = np.maximum(out_weights[inside], q_weights)
    return estimates, out_var, out_proxy, out_weights


def _inside_variances(r, hb, variances, noise_proxies, up, up_proxy, w_up, height):
    """Var and proxies of the BLUE of the mass before offset r (0 < r < 2^hb)
    inside a perfect block of height hb (module docstring)."""
    n = r.size
    k = noise_proxies.shape[1]
    h0 = np.zeros(n, dtype=np.int64)
    rest = r.copy()
    while True:                                   # trailing zeros of r
        even = (rest & 1) == 0
        if not even.any():
            break
        h0 += even
        rest = np.where(even, rest >> 1, rest)
    sigma = np.zeros((n, 2, 2))
    sigma_proxy = np.zeros((n, k, 2, 2))
    levels = height + 1
    bound = np.zeros((n, 2, levels))       # per output (x, Q) and level: max |weight| bound
    for h in range(1, int(hb.max()) + 1):
        s = variances[height - h]
        p = noise_proxies[height - h]                        # (K,)
        u = up[height - (h - 1)]
        u_proxy = up_proxy[height - (h - 1)]                 # (K,)
        start = np.flatnonzero(h0 + 1 == h)
        if start.size:
            info = np.array([[1 / s + 1 / u, 1 / s], [1 / s, 1 / s + 1 / u]])
            g = np.linalg.inv(info)
            m = np.array([[1.0, 1.0], [1.0, 0.0]])
            weights = [(g @ np.array([1.0, 1.0]) / s, p), (g @ np.array([1.0, 0.0]) / u, u_proxy),
                       (g @ np.array([0.0, 1.0]) / u, u_proxy)]
            cov = m @ g @ m.T
            prox = sum(np.einsum("i,j,k->kij", m @ w, m @ w, proxy) for w, proxy in weights)
            sigma[start] = cov
            sigma_proxy[start] = prox
            first = np.zeros((2, levels))
            first[:, height - h] = np.abs(m @ weights[0][0])
            children = np.maximum(np.abs(m @ weights[1][0]), np.abs(m @ weights[2][0]))
            first += children[:, None] * w_up[height - (h - 1)][None, :]
            bound[start] = first
        step = np.flatnonzero((h0 + 1 < h) & (h <= hb))
        if not step.size:
            continue
        right = ((r[step] >> (h - 1)) & 1).astype(bool)
        for is_right in (True, False):
            rows = step[right == is_right]
            if not rows.size:
                continue
            if is_right:    # theta = (x_a, x_b, Q_b): child b holds the boundary
                own, sibling = np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
                embed = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
                m = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
            else:           # theta = (x_a, Q_a, x_b): child a holds the boundary
                own, sibling = np.array([1.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])
                embed = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
                m = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
            below = np.linalg.inv(sigma[rows])                           # (n, 2, 2)
            info = (np.outer(own, own) / s + np.outer(sibling, sibling) / u
                    + embed.T @ below @ embed)
            g = np.linalg.inv(info)                                       # (n, 3, 3)
            w_own = g @ own / s                                           # (n, 3)
            w_sibling = g @ sibling / u
            w_child = g @ embed.T @ below                                 # (n, 3, 2)
            mo, ms = w_own @ m.T, w_sibling @ m.T                         # (n, 2)
            mc = m @ w_child                                              # (n, 2, 2)
            child_bound = np.abs(mc) @ bound[rows]
            new_bound = np.maximum(child_bound, np.abs(ms)[:, :, None]
                                   * w_up[height - (h - 1)][None, None, :])
            new_bound[:, :, height - h] = np.maximum(new_bound[:, :, height - h], np.abs(mo))
            bound[rows] = new_bound
            sigma[rows] = m @ g @ m.T
            sigma_proxy[rows] = (_outer(mo)[:, None] * p[None, :, None, None]
                                 + _outer(ms)[:, None] * u_proxy[None, :, None, None]
                                 + mc[:, None] @ sigma_proxy[rows] @ np.swapaxes(mc, 1, 2)[:, None])
    return sigma[:, 1, 1], sigma_proxy[:, :, 1, 1], bound[:, 1, :]

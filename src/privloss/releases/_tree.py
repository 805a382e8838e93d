"""Linear-time least-squares (BLUE) estimation on a tree of noisy sums.

Definition
----------
A tree is given level by level: level 0 holds the roots, level ``l > 0`` an
array ``parents[l]`` of indices into level ``l - 1``.  Each node v has a true
value x_v, with x_p = sum of x_c over the children c of p, and one noisy
measurement y_v = x_v + e_v, the e_v independent with mean 0 and variance
``variances[level]``.  A node without children is a leaf.  The estimate is
the best linear unbiased estimate (BLUE, generalised least squares) of every
x_v from all the y's; it is consistent (every parent equals the sum of its
children's estimates).

Two passes, as in Hay et al. (2010) and Honaker (2015), generalised to unequal
fan-out and per-level variances:

* up (leaves to roots): ``up_v`` is the BLUE of x_v from the measurements in
  v's subtree, with variance U_v: a leaf has up_v = y_v, U_v = s_v; a parent
  combines y_v (variance s_v) with S_v = sum of its children's up (variance
  C_v = sum of their U) by inverse-variance weighting:
  U_v = s_v C_v / (s_v + C_v);
* down (roots to leaves): ``out_c`` is the BLUE of x_c from every measurement
  *outside* c's subtree, with variance O_c: for a child c of p,
  out_c = down_p - (S_p - up_c) and O_c = D_p + (C_p - U_c), where down_p
  combines y_p with out_p (variance D_p = 1/(1/s_p + 1/O_p); at a root,
  down = y, D = s).

The two estimates of x_v use disjoint sets of noise terms, hence are
independent, and (a standard property of the Gaussian linear model with
separate nuisance parameters: the subtree's inner contrasts enter only the
subtree's measurements, the rest of the tree only the outside ones) the BLUE
is their inverse-variance combination: final_v = (O_v up_v + U_v out_v) /
(U_v + O_v), with exact variance Var_v = U_v O_v / (U_v + O_v).  The tests
check it against dense generalised least squares.

Every estimate is a linear combination sum_i a_i e_i (plus x_v) whose
weights lie in [-1, 1] (each pass takes convex combinations or adds terms of
disjoint supports), and the same recursions with a_i^2 give
``sum a_i^2 p_i`` for any per-level "proxy" p (used for the sound tail bounds
of :mod:`privloss.releases._levels`).

Runtime
-------
O(number of nodes), NumPy vectorised per level (``np.bincount`` for sums over
children).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TreeEstimate", "check_parents", "blue", "subtree_estimates"]


@dataclass(frozen=True)
class TreeEstimate:
    """Per level: the BLUE ``values``, its exact ``variances`` and the tail
    ``proxies``, shape (n, K): for each of the K per-level proxy vectors, the
    sum of squared weights times the proxy."""

    values: tuple
    variances: tuple
    proxies: tuple


def check_parents(sizes, parents) -> None:
    """``parents[l]`` (l >= 1) must be integer arrays of length ``sizes[l]``
    with entries in [0, sizes[l - 1])."""
    if len(parents) != len(sizes):
        raise ValueError(f"parents must have one entry per level ({len(sizes)}), "
                         f"got {len(parents)}")
    for level in range(1, len(sizes)):
        parent = np.asarray(parents[level])
        if parent.shape != (sizes[level],) or not np.issubdtype(parent.dtype, np.integer):
            raise ValueError(f"parents[{level}] must be an integer array of length "
                             f"{sizes[level]}, got shape {parent.shape} and dtype {parent.dtype}")
        if parent.size and (parent.min() < 0 or parent.max() >= sizes[level - 1]):
            raise ValueError(f"parents[{level}] must hold indices in [0, {sizes[level - 1]}), "
                             f"got values in [{parent.min()}, {parent.max()}]")


def _sum_children(parent: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    if values.ndim == 1:
        return np.bincount(parent, weights=values, minlength=size)
    return np.stack([np.bincount(parent, weights=column, minlength=size)
                     for column in values.T], axis=1)


def _col(weights: np.ndarray) -> np.ndarray:
    """Per-node weights as a column, to scale proxies of shape (n, K)."""
    return weights[:, None]


def subtree_estimates(measured, variances, proxies, parents):
    """The up pass: per level ``(up, U, up_proxy, children_up, children_U,
    children_proxy, has_children)`` (see the module docstring)."""
    depth = len(measured)
    up = [None] * depth
    var = [None] * depth
    prox = [None] * depth
    below = [None] * depth
    for level in range(depth - 1, -1, -1):
        y = np.asarray(measured[level], dtype=np.float64)
        s, p = float(variances[level]), np.atleast_1d(np.asarray(proxies[level], dtype=np.float64))
        size = y.size
        if level + 1 < depth:
            parent = np.asarray(parents[level + 1])
            children = np.bincount(parent, minlength=size) > 0
            child_up = _sum_children(parent, up[level + 1], size)
            child_var = _sum_children(parent, var[level + 1], size)
            child_prox = _sum_children(parent, prox[level + 1], size)
        else:
            children = np.zeros(size, dtype=bool)
            child_up = child_var = np.zeros(size)
            child_prox = np.zeros((size,) + p.shape)
        # weight of the own measurement: C / (s + C); 1 for a leaf (C = 0)
        own = np.where(children, child_var / (s + child_var), 1.0)
        up[level] = own * y + (1.0 - own) * child_up
        var[level] = np.where(children, s * child_var / np.where(children, s + child_var, 1.0), s)
        prox[level] = _col(own * own) * p + _col((1.0 - own) ** 2) * child_prox
        below[level] = (child_up, child_var, child_prox, children)
    return up, var, prox, below


def blue(measured, variances, proxies, parents) -> TreeEstimate:
    """BLUE of every node from noisy measurements (see the module docstring).

    ``measured[l]``: the noisy values of level l; ``variances[l]`` /
    ``proxies[l]``: the tail proxy of every node of level l, a number or a
    vector of K numbers (K proxies computed at once).
    """
    depth = len(measured)
    up, var, prox, below = subtree_estimates(measured, variances, proxies, parents)
    values, out_variances, out_proxies = [None] * depth, [None] * depth, [None] * depth
    # down pass: (down_p, D_p, proxy of down_p) of the previous level
    previous = None
    for level in range(depth):
        y = np.asarray(measured[level], dtype=np.float64)
        s, p = float(variances[level]), np.atleast_1d(np.asarray(proxies[level], dtype=np.float64))
        if level == 0:
            values[0], out_variances[0], out_proxies[0] = up[0], var[0], prox[0]
            down, down_var = y, np.full(y.size, s)
            down_prox = np.broadcast_to(p, (y.size,) + p.shape).copy()
        else:
            parent = np.asarray(parents[level])
            p_down, p_down_var, p_down_prox, (child_up, child_var, child_prox, _) = previous
            out = p_down[parent] - (child_up[parent] - up[level])
            out_var = p_down_var[parent] + (child_var[parent] - var[level])
            out_prox = p_down_prox[parent] + (child_prox[parent] - prox[level])
            keep = out_var / (var[level] + out_var)            # weight of up_v
            values[level] = keep * up[level] + (1.0 - keep) * out
            out_variances[level] = var[level] * out_var / (var[level] + out_var)
            out_proxies[level] = (_col(keep * keep) * prox[level]
                                  + _col((1.0 - keep) ** 2) * out_prox)
            own = out_var / (s + out_var)                       # weight of y_v in down_v
            down = own * y + (1.0 - own) * out
            down_var = s * out_var / (s + out_var)
            down_prox = _col(own * own) * p + _col((1.0 - own) ** 2) * out_prox
        previous = (down, down_var, down_prox, below[level])
    return TreeEstimate(tuple(values), tuple(out_variances), tuple(out_proxies))

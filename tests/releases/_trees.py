"""Random trees and a dense generalised-least-squares reference for the tests."""

from __future__ import annotations

import numpy as np


def random_tree(rng, sizes):
    """Parents (level 0 has none) of a random tree with these level sizes;
    every node of an inner level gets at least one child when possible."""
    parents = [None]
    for level in range(1, len(sizes)):
        above, here = sizes[level - 1], sizes[level]
        parent = rng.integers(0, above, here)
        parent[:min(above, here)] = np.arange(min(above, here))
        parents.append(np.sort(parent))
    return parents


def totals(leaf_values, parents, sizes):
    """Per level, the sums of the leaves (nodes without children keep ``own``)."""
    values = [None] * len(sizes)
    values[-1] = np.asarray(leaf_values, dtype=np.int64)
    for level in range(len(sizes) - 2, -1, -1):
        values[level] = np.bincount(parents[level + 1], weights=values[level + 1],
                                    minlength=sizes[level]).astype(np.int64)
    return values


def dense_blue(measured, variances, parents, sizes):
    """(estimates, variances, weight matrix) by dense GLS over the leaves
    (nodes without children are leaves)."""
    nodes = [(level, i) for level in range(len(sizes)) for i in range(sizes[level])]
    index = {node: k for k, node in enumerate(nodes)}
    children = {node: [] for node in nodes}
    for level in range(1, len(sizes)):
        for i, p in enumerate(parents[level]):
            children[(level - 1, int(p))].append((level, i))
    leaves = [node for node in nodes if not children[node]]
    leaf_index = {node: k for k, node in enumerate(leaves)}

    def leaf_set(node):
        return [node] if not children[node] else [x for c in children[node] for x in leaf_set(c)]

    design = np.zeros((len(nodes), len(leaves)))
    for node in nodes:
        for leaf in leaf_set(node):
            design[index[node], leaf_index[leaf]] = 1.0
    weights = np.diag([1.0 / variances[level] for level, _ in nodes])
    y = np.concatenate([np.asarray(m, dtype=np.float64) for m in measured])
    covariance = np.linalg.inv(design.T @ weights @ design)
    operator = design @ covariance @ design.T @ weights
    return operator @ y, np.diag(design @ covariance @ design.T), operator

"""From an exact loss law (:class:`LossSpec`) to the two sides of a certified bracket.

Pessimistic side, "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi, PETS 2022): the P- and Q-mass of each loss interval (a, b] between
neighbouring grid points is split between a and b so that both masses are
kept: the mass u put at b solves u + w = P, u e^{-b} + w e^{-a} = Q, i.e.
u = (P - e^a Q) / (1 - e^{a-b}). This is the reverse of merging two outputs,
so the true pair is a post-processing of the discretised one (it dominates for
every epsilon and stays dominating under composition). Its error is second
order in the step h, against first order for rounding every loss up. Float
error in u is pushed toward b (more mass at the higher loss only increases
delta).

Optimistic side, "merge and shift" (derived for privloss): the outputs are
merged into cells (l_j - h/2, l_j + h/2] around each grid point l_j = j h
(edges offset by the second-order correction of :func:`_cell_edges`).
Merging is a post-processing, so the merged pair is dominated. A cell's
merged loss log(P_c / Q_c) is within O(h^2) of l_j for smooth laws; cells
whose merged loss is below their grid point by at most ``nu`` are kept at l_j
and the whole law is declared shifted by ``nu`` (delta_true(eps) >=
delta_grid(eps + nu)); cells further below go one grid point down (their loss
only decreases). ``nu`` is chosen to minimise nu + sum of (mass x extra drop).

Both sides also carry the "edge shift" of the continuous part: the real loss
interval behind a float edge may differ from it by a few ulps, which is
absorbed as a loss shift (upward for the pessimistic law, downward for the
optimistic one) instead of as mass error.
"""

from __future__ import annotations

import math

import numpy as np

from privloss.pld._law import MAX_GRID_POINTS, GridTooLargeError, LossLaw
from privloss.pld._spec import LossSpec

_U = 2.0 ** -53


def _grid_range(spec: LossSpec, step: float) -> tuple[int, int]:
    lo, hi = spec.loss_range()
    # grid indices must stay exact in float64 (searchsorted on float edges places atoms)
    limit = step * 2.0 ** 50
    if not (math.isfinite(lo) and math.isfinite(hi)) or max(abs(lo), abs(hi)) > limit:
        raise GridTooLargeError(f"loss range [{lo:g}, {hi:g}] is beyond +-{limit:g}, the largest "
                                f"loss a grid of step {step:g} represents exactly")
    first = math.floor(lo / step) - 1
    last = math.ceil(hi / step) + 1
    if last - first + 1 > MAX_GRID_POINTS:
        raise GridTooLargeError(f"loss range [{lo:g}, {hi:g}] needs {last - first + 1} grid points "
                                f"at step {step:g} (limit {MAX_GRID_POINTS}); use a coarser discretization")
    return first, last


def _cell_masses(spec: LossSpec, edges: np.ndarray):
    """P, Q masses, absolute error bounds and edge shift of the intervals (edges[i], edges[i+1]].

    The edge shift bounds how far (in loss) the real interval ends used for the
    continuous part may lie from the float ``edges`` (atoms use the floats exactly).
    """
    cells = edges.size - 1
    shift = 0.0
    if spec.continuous is not None:
        p, q, ep, eq, shift = spec.continuous.masses(edges)
        p, q, ep, eq = p.copy(), q.copy(), ep.copy(), eq.copy()
    else:
        p, q, ep, eq = (np.zeros(cells) for _ in range(4))
    if spec.atom_losses.size:
        # searchsorted on the same float edges: edges[i] < loss <= edges[i+1] exactly
        index = np.searchsorted(edges, spec.atom_losses, side="left") - 1
        if index.min() < 0 or index.max() >= cells:
            raise AssertionError("atom outside the discretisation range")
        atom_q = np.exp(np.log(spec.atom_masses) - spec.atom_losses)
        rel = spec.atom_relative_error
        rel_q = rel + 8 * _U * (np.abs(spec.atom_losses) + 1)
        np.add.at(p, index, spec.atom_masses)
        np.add.at(q, index, atom_q)
        np.add.at(ep, index, spec.atom_masses * rel)
        np.add.at(eq, index, atom_q * rel_q)
    return p, q, ep, eq, float(shift)


def _trim_zeros(start: int, masses: np.ndarray) -> tuple[int, np.ndarray]:
    nonzero = np.flatnonzero(masses)
    if nonzero.size == 0:
        return 0, np.zeros(1)
    first, last = int(nonzero[0]), int(nonzero[-1]) + 1
    return start + first, masses[first:last].copy()


def pessimistic_law(spec: LossSpec, step: float) -> LossLaw:
    """Connect-the-dots discretisation (dominating pair on the grid)."""
    first, last = _grid_range(spec, step)
    grid = (first + np.arange(last - first + 1, dtype=np.float64)) * step
    p, q, ep, eq, edge_shift = _cell_masses(spec, grid)
    a, b = grid[:-1], grid[1:]
    denominator = -np.expm1(a - b)                       # 1 - e^{a-b} > 0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        e_a_q = np.where(q > 0, np.exp(a + np.log(np.where(q > 0, q, 1.0))), 0.0)
        e_a_eq = np.where(q > 0, e_a_q * (eq / np.where(q > 0, q, 1.0)), 0.0)
        upper_share = (p - e_a_q) / denominator
        # error of the numerator (inputs and the exp/log round trip) over the denominator
        slack = (ep + e_a_eq + 8 * _U * (np.abs(a) + 4) * (p + e_a_q)) / denominator * 1.01
    upper_share = np.where(np.isfinite(upper_share), upper_share, p)
    slack = np.where(np.isfinite(slack), slack, p)
    upper_share = np.clip(upper_share + slack, 0.0, p)
    masses = np.zeros(grid.size)
    masses[:-1] += p - upper_share
    masses[1:] += upper_share
    error = 2.0 * float(ep.sum())
    if spec.low_tail > 0:
        # mass with loss <= low_tail_to goes to the first grid point >= low_tail_to
        index = int(np.searchsorted(grid, spec.low_tail_to, side="left"))
        masses[index] += spec.low_tail
    infinity = min(1.0, (spec.infinity_mass + spec.infinity_error + spec.high_tail) * (1 + 4 * _U))
    start, masses = _trim_zeros(first, masses)
    # continuous mass whose real interval end exceeds the float grid point by at most
    # edge_shift: the whole law is declared shifted up by that much
    return LossLaw(step, start, masses, infinity, error * (1 + 8 * _U), edge_shift, True)


def _log_sinhc(x: np.ndarray) -> np.ndarray:
    """log(sinh(x) / x), accurate near 0 and without overflow."""
    x = np.abs(x)
    small = x < 1e-3
    big = np.log(np.expm1(2.0 * np.minimum(x, 300.0)) / (2.0 * np.maximum(x, 1e-300))) \
        + np.maximum(x - 300.0, 0.0) - np.minimum(x, 300.0)
    return np.where(small, x * x / 6.0, big)


def _cell_edges(spec: LossSpec, first: int, last: int, step: float) -> np.ndarray:
    """Edges of the optimistic cells: (j - 1/2) h, moved so merged losses land on j h.

    For a P-density that is locally e^{kappa l}, the cell (c - h/2 + s, c + h/2 + s]
    has merged loss c + s + g(kappa) - g(kappa - 1), g(k) = log(sinh(k h/2)/(k h/2)),
    i.e. c + s + (h^2/12)(kappa - 1/2) + O(h^4). Offsetting each edge by
    s = g(kappa - 1) - g(kappa) (kappa at the edge) cancels that to leading order,
    so the remaining deficits (absorbed by the shift nu) are O(h^3) instead of
    O(h^2). Offsets are capped at h/4 so the edges stay ordered. Any partition is
    a valid post-processing; this only makes it a better one.
    """
    edges = (first - 0.5 + np.arange(last - first + 2, dtype=np.float64)) * step
    if spec.continuous is None:
        return edges
    kappa = spec.continuous.log_density_slope(edges)
    offset = _log_sinhc((kappa - 1.0) * step / 2.0) - _log_sinhc(kappa * step / 2.0)
    offset = np.clip(offset, -step / 4.0, step / 4.0)
    return edges + offset


def _choose_shift(deficit: np.ndarray, weight: np.ndarray) -> float:
    """nu minimising nu + sum_{deficit > nu} weight (candidates 0 and every deficit)."""
    positive = deficit > 0
    if not positive.any():
        return 0.0
    d = deficit[positive]
    w = weight[positive]
    order = np.argsort(d)
    d, w = d[order], w[order]
    # cost(d_i) = d_i + sum_{k > i} w_k; cost(0) = sum w
    after = np.concatenate((np.cumsum(w[::-1])[::-1][1:], [0.0]))
    cost = d + after
    best = int(np.argmin(cost))
    return float(d[best]) if cost[best] < float(w.sum()) else 0.0


def optimistic_law(spec: LossSpec, step: float) -> LossLaw:
    """Merge-and-shift discretisation (post-processing of the pair, shifted)."""
    first, last = _grid_range(spec, step)
    points = (first + np.arange(last - first + 1, dtype=np.float64)) * step
    edges = _cell_edges(spec, first, last, step)
    p, q, ep, eq, edge_shift = _cell_masses(spec, edges)
    occupied = p > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_p = np.where(occupied, p, 1.0)
        safe_q = np.where(q > 0, q, 1.0)
        merged = np.log(safe_p) - np.log(safe_q)
        # merged_true >= log(p - ep) - log(q + eq)
        ratio_p = np.minimum(ep / safe_p, 1.0)
        drop = -np.log1p(-ratio_p) + np.log1p(eq / safe_q) + 8 * _U * (np.abs(merged) + 2)
    lowest = edges[:-1] - edge_shift        # every output of the cell has a larger loss
    certain = np.where(occupied & (q > 0) & (ratio_p < 0.5), merged - drop, lowest)
    certain = np.maximum(certain, lowest)
    # deficit of each cell w.r.t. its own grid point (plus the rounding of that point)
    deficit = points - certain + 4 * _U * (np.abs(points) + np.abs(certain))
    deficit = np.where(occupied, deficit, 0.0)
    weight = p * (step - np.maximum(deficit, 0.0))
    shift = _choose_shift(deficit, weight)
    down = occupied & (deficit > shift)
    masses = np.where(occupied & ~down, p, 0.0)
    masses[:-1] += np.where(down[1:], p[1:], 0.0)
    if down[0] and p[0] > 0:
        raise AssertionError("lowest cell cannot move down")
    error = float(ep.sum())
    infinity = max(0.0, (spec.infinity_mass - spec.infinity_error) * (1 - 4 * _U))
    start, masses = _trim_zeros(first, masses)
    return LossLaw(step, start, masses, infinity, error * (1 + 8 * _U), max(shift, 0.0), False)

"""From exact bounded aggregates to the private release (runs after the charge).

Definition
----------
For the groups of the release (every key, in the given order, with known keys;
else the groups whose noisy ``distinct`` count reaches the threshold, in the
order of their labels' text), each measurement of the plan
(:mod:`.budget`) is released as:

* counts (``rows``, ``distinct``): ``value + Z``, exact integer noise;
  95% interval ``+-w`` with ``w`` the exact half-width (``P[|Z| > w] <= 5%``);
* ``sum(C)``: ``(sum of grid units + Z) * 2^-k``, an exact float; interval
  ``+-w * 2^-k`` around the sum of the grid-rounded clamped values (each value
  is within half a grid step of its clamped value);
* ``mean(C)``: ``mid + S' / max(N', 1)`` clipped to ``[low, high]``, with
  ``S'`` the noisy centred sum and ``N'`` the noisy count of non-null values.
  Not unbiased (a ratio).  Interval (stated method): with probability >= 95%
  both noises lie within their exact 97.5% half-widths (union bound); the
  interval is the range of ``mid + S/N`` over that box (``N >= 1``), clipped
  to ``[low, high]``; the whole range when the box allows ``N < 1``;
* ``quantile(C, q)``: the exponential mechanism over the ``B + 1`` points
  ``low + i (high - low) / B`` with score ``-|#{x <= t_i} - q n|`` (scaled to
  integers), score range ``2 max(q, 1-q) R``, exact sampler; its "interval"
  is the rank error ``(range/s) (ln(B+1) + ln 20)`` that holds with
  probability 95% (:meth:`ExponentialMechanism.utility_gap`).

With ``consistent``, count columns are then post-processed
(:mod:`.consistency`: non-negative integers adding up to the released total,
unbiased rounding); their intervals stay those of the raw noisy counts.

Privacy guarantee
-----------------
The events of the plan (:mod:`.budget`); everything returned is a noisy value
or a public parameter (the released group list is the keys, or the noisy
selection).

Citation
--------
Dwork and Roth 2014 (Laplace, exponential mechanisms); Canonne, Kamath,
Steinke 2020 (exact discrete noise); Smith, STOC 2011 (quantiles by the
exponential mechanism).

Runtime
-------
O(groups * (measurements + B)) plus the exact samplers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["release_payload"]

BETA = 0.05


def _half_width(noise, beta: float) -> int:
    from privloss.mechanisms.accuracy import (discrete_gaussian_half_width,
                                              discrete_laplace_half_width)
    if noise.kind == "laplace":
        return discrete_laplace_half_width(noise.parameter, beta)
    return discrete_gaussian_half_width(noise.parameter, beta)


def _empty() -> dict:
    """The exact aggregates of a group without kept rows (a known key)."""
    return {"distinct": 0, "rows": 0, "sum": {}, "nonnull": {}, "bins": {}}


def _mean_interval(s_noisy: int, n_noisy: int, ws: int, wn: int, grid) -> tuple:
    low, high = grid.to_float(grid.lo), grid.to_float(grid.hi)
    n_low = n_noisy - wn
    if n_low < 1:
        return (low, high)
    mid = grid.middle
    values = [Fraction(s, n) for s in (s_noisy - ws, s_noisy + ws)
              for n in (n_low, n_noisy + wn)]
    a = grid.to_float(mid) + float(min(values)) * float(grid.step)
    b = grid.to_float(mid) + float(max(values)) * float(grid.step)
    return (max(low, math.nextafter(a, -math.inf)), min(high, math.nextafter(b, math.inf)))


#: below this, |cumulative * denominator - numerator * n| fits an int64 exactly
_INT64_SAFE = 2 ** 62


def _quantile(plan, measurement, bins_counts: dict, n: int, source):
    from privloss.mechanisms.exponential import ExponentialMechanism

    bins = plan.quantile_bins
    level = measurement.level
    counts = np.zeros(bins + 1, dtype=np.int64)
    for b, c in bins_counts.items():
        counts[min(max(int(b), 0), bins)] += c
    cumulative = np.cumsum(counts)
    denominator, numerator = level.denominator, level.numerator
    if max(int(cumulative[-1]), n) * denominator < _INT64_SAFE:
        scores = -np.abs(cumulative * denominator - numerator * n)
    else:
        # a level that is not a short binary fraction (0.9 is 8106479329266893 / 2^53)
        # overflows int64: the same exact scores in Python integers
        scores = [-abs(int(c) * denominator - numerator * n) for c in cumulative.tolist()]
    scale = measurement.linf * denominator
    mechanism = ExponentialMechanism(plan.strengths[measurement.name], score_range=scale)
    index = int(mechanism.release(scores, source=source))
    grid = plan.grids[measurement.column]
    point = Fraction(grid.lo) + Fraction(index * (grid.hi - grid.lo), bins)
    return float(point * grid.step), mechanism


def release_payload(plan, aggregations, exact: list, *, keys, source,
                    consistent: bool = False) -> dict:
    """The JSON payload of a release from the engine's exact rows (see the
    module docstring).  ``keys``: None or the list of key tuples;
    ``consistent``: post-process the count columns (:mod:`.consistency`)."""
    from privloss.query.keys import key_text

    by_text = {tuple(str(v) for v in row["group"]): row for row in exact}
    if keys is not None:
        labels = [tuple(key) for key in keys]
        data = [by_text.get(key_text(key), _empty()) for key in labels]
    else:
        order = sorted(by_text)
        labels = [by_text[t]["group"] for t in order]
        data = [by_text[t] for t in order]
    size = len(labels)
    noisy = {}
    for m in plan.measurements:
        if m.is_quantile:
            continue
        if m.kind in ("rows", "distinct"):
            true = [row[m.kind] for row in data]
        elif m.kind == "sum":
            true = [row["sum"].get(m.column, 0) for row in data]
        elif m.kind == "csum":
            mid = plan.grids[m.column].middle
            true = [row["sum"].get(m.column, 0) - mid * row["nonnull"].get(m.column, 0)
                    for row in data]
        else:
            true = [row["nonnull"].get(m.column, 0) for row in data]
        noise = plan.noises[m.name].sample(size, source)
        noisy[m.name] = [int(t) + int(z) for t, z in zip(true, noise.tolist())]
    keep = list(range(size))
    if keys is None:
        keep = [i for i in range(size) if noisy["distinct"][i] >= plan.threshold]
    rows = [{"group": list(labels[i]), "values": {}, "ci95": {}} for i in keep]
    widths = {name: _half_width(noise, BETA) for name, noise in plan.noises.items()}
    for a in aggregations:
        if a.kind in ("count", "count_distinct"):
            name = "rows" if a.kind == "count" else "distinct"
            for row, i in zip(rows, keep):
                value = noisy[name][i]
                row["values"][a.name] = value
                row["ci95"][a.name] = [value - widths[name], value + widths[name]]
        elif a.kind == "sum":
            name, grid = f"sum:{a.column}", plan.grids[a.column]
            for row, i in zip(rows, keep):
                units = noisy[name][i]
                row["values"][a.name] = grid.to_float(units)
                row["ci95"][a.name] = [grid.to_float(units - widths[name]),
                                       grid.to_float(units + widths[name])]
        elif a.kind == "mean":
            grid = plan.grids[a.column]
            s_name, n_name = f"csum:{a.column}", f"nonnull:{a.column}"
            ws = _half_width(plan.noises[s_name], BETA / 2)
            wn = _half_width(plan.noises[n_name], BETA / 2)
            low, high = grid.to_float(grid.lo), grid.to_float(grid.hi)
            for row, i in zip(rows, keep):
                s, n = noisy[s_name][i], noisy[n_name][i]
                value = grid.to_float(grid.middle) + s / max(n, 1) * float(grid.step)
                row["values"][a.name] = min(max(value, low), high)
                row["ci95"][a.name] = list(_mean_interval(s, n, ws, wn, grid))
        else:
            for q in a.quantiles:
                m = next(x for x in plan.measurements if x.name == f"quantile:{a.column}:{q:g}")
                out_name = f"quantile({a.column},{q:g})"
                for row, i in zip(rows, keep):
                    value, mechanism = _quantile(plan, m, data[i]["bins"].get(a.column, {}),
                                                 data[i]["nonnull"].get(a.column, 0), source)
                    row["values"][out_name] = value
                    gap = mechanism.utility_gap(BETA, n_candidates=plan.quantile_bins + 1)
                    row["ci95"][out_name] = {"rank_error": gap / m.level.denominator}
    payload = {"rows": rows, "columns": [name for a in aggregations for name in a.output_names()]}
    if consistent:
        from privloss.releases.consistency import consistent_counts

        totals = {}
        for a in aggregations:
            if a.kind in ("count", "count_distinct"):
                adjusted, totals[a.name] = consistent_counts(
                    [row["values"][a.name] for row in rows], source)
                for row, value in zip(rows, adjusted):
                    row["values"][a.name] = value
        payload["totals"] = totals
    return payload

"""Pure-Python reference of the bounding in privloss.query.engines.aggregate_duckdb."""

from __future__ import annotations

from collections import defaultdict

from privloss.query.engines.aggregate_duckdb import (ROW_SEED_OFFSET, group_code, row_code,
                                                        unit_code)
from privloss.query.bounding import SelectionKey


def bounded(rows, *, by_integer: bool, unit_integer: bool, grids: dict, columns: tuple,
            max_groups: int, max_rows: int, seed: int, bins: int = 8) -> dict:
    """rows: (unit, group tuple, {column: value}); returns group -> exact aggregates."""
    gkey, rkey = SelectionKey.from_seed(seed), SelectionKey.from_seed(seed + ROW_SEED_OFFSET)
    per_unit = defaultdict(lambda: defaultdict(list))
    for unit, group, values in rows:
        if unit is None or any(g is None for g in group):
            continue
        units = tuple(grids[c].units_of(values.get(c)) for c in columns)
        per_unit[unit][group].append(units)
    out = defaultdict(lambda: {"distinct": 0, "rows": 0, "sum": defaultdict(int),
                               "nonnull": defaultdict(int),
                               "bins": defaultdict(lambda: defaultdict(int))})
    for unit, groups in per_unit.items():
        uc = unit_code(unit, unit_integer)

        def gorder(group):
            gc = group_code(tuple(map(str, group)), by_integer)
            return (gkey.key(uc, gc), gc, group)
        for group in sorted(groups, key=gorder)[:max_groups]:
            def rorder(units):
                rc = row_code(units) if columns else 0
                return (rkey.key(uc, rc), rc, tuple((u is None, u) for u in units))
            kept = sorted(groups[group], key=rorder)[:max_rows]
            entry = out[group]
            entry["distinct"] += 1
            for c in columns:          # the engine reports every column, 0 when empty
                entry["sum"][c] += 0
                entry["nonnull"][c] += 0
            entry["rows"] += len(kept)
            for units in kept:
                for c, u in zip(columns, units):
                    if u is not None:
                        grid = grids[c]
                        span = grid.hi - grid.lo
                        entry["bins"][c][-((grid.lo - u) * bins // span)] += 1   # ceil
                        entry["sum"][c] += u
                        entry["nonnull"][c] += 1
    return {g: {"distinct": e["distinct"], "rows": e["rows"], "sum": dict(e["sum"]),
                "nonnull": dict(e["nonnull"]),
                "bins": {c: dict(e["bins"][c]) for c in columns}} for g, e in out.items()}

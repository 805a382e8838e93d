"""Pure-Python reference of the bounding compiled by privloss.query.engines._sql."""

from __future__ import annotations

from collections import defaultdict

from privloss.query.engines._codes import group_code, row_code, unit_code
from privloss.query.plan import ROW_SEED_OFFSET
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


class Engine:
    """``Engine("duckdb").bounded_aggregates(data, ...)``: the engines' group-by
    plan, named as the tests call it."""

    def __init__(self, name: str):
        self.name = name

    def bounded_aggregates(self, data, **parameters):
        from privloss.query.engines import bounded_aggregates
        return bounded_aggregates(data, engine=self.name, **parameters)

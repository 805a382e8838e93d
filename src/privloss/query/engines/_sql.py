"""The bounded group-by as SQL text, for DuckDB and Spark SQL (same semantics).

Only our own names (``u``, ``g0..``, ``v0..``, CTE names) and integers
formatted by Python appear in the text; see :mod:`.engine_duckdb` for the
steps and the privacy argument.  The two dialects differ only in spelling
(``xor`` / ``^``, ``>>`` / ``shiftright``, md5 prefix to integer, full-match
regular expressions, integer division, a 4-byte unsigned sort key on
DuckDB); every operation is on BIGINT values below ``2^59`` or on exact
doubles, so both engines compute the same integers.
"""

from __future__ import annotations

from dataclasses import dataclass

from privloss.query.bounding import (CANONICAL_INTEGER, LANE_BITS, LANE_MASK,
                                         MIX_MULTIPLIER, MIX_SHIFT, SelectionKey,
                                         text_code_digits)

__all__ = ["Dialect", "DUCKDB", "SPARK", "BoundedSql", "bounded_sql", "MISSING_UNITS"]

#: row code of a missing value (grid units are below 2^51 in magnitude)
MISSING_UNITS = -(1 << 62)


@dataclass(frozen=True)
class Dialect:
    name: str

    def xor(self, a: str, b: str) -> str:
        return f"xor({a}, {b})" if self.name == "duckdb" else f"({a} ^ {b})"

    def shr(self, a: str, bits: int) -> str:
        return f"({a} >> {bits})" if self.name == "duckdb" else f"shiftright({a}, {bits})"

    @property
    def text(self) -> str:
        return "VARCHAR" if self.name == "duckdb" else "STRING"

    def md5_code(self, text_sql: str) -> str:
        digits = f"substr(md5({text_sql}), 1, {text_code_digits})"
        if self.name == "duckdb":
            return f"CAST(('0x' || {digits}) AS BIGINT)"
        return f"CAST(conv({digits}, 16, 10) AS BIGINT)"

    def is_canonical_integer(self, text_sql: str) -> str:
        if self.name == "duckdb":
            return f"regexp_full_match({text_sql}, '{CANONICAL_INTEGER}')"
        # Java: anchored, \z (``$`` would also match before a final line break)
        return f"({text_sql} RLIKE '^(?:{CANONICAL_INTEGER})\\\\z')"

    def key32(self, key_sql: str) -> str:
        """A selection key (in ``[0, 2^32)``) in 4 bytes where the engine has an
        unsigned type: the partitioned sort by it moves less data."""
        return f"CAST({key_sql} AS UINTEGER)" if self.name == "duckdb" else key_sql

    def int_div(self, a: str, b: str) -> str:
        return f"({a} // {b})" if self.name == "duckdb" else f"({a} div {b})"


DUCKDB = Dialect("duckdb")
SPARK = Dialect("spark")


def _text_code(dialect: Dialect, text_sql: str) -> str:
    return (f"CASE WHEN {dialect.is_canonical_integer(text_sql)} THEN CAST({text_sql} AS BIGINT) "
            f"ELSE {dialect.md5_code(text_sql)} END")


def _mix_ctes(dialect: Dialect, name: str, source: str, carried: list, value: str) -> list:
    """``mix32(value)`` as column ``m`` of CTE ``name`` (``carried`` kept)."""
    c, mask, shift, keep = MIX_MULTIPLIER, LANE_MASK, MIX_SHIFT, ", ".join(carried)
    step = f"((({dialect.xor(dialect.shr('x', shift), 'x')}) * {c}) & {mask})"
    return [f"{name}_0 AS (SELECT {keep}, {value} AS x FROM {source})",
            f"{name}_1 AS (SELECT {keep}, {step} AS x FROM {name}_0)",
            f"{name}_2 AS (SELECT {keep}, {step} AS x FROM {name}_1)",
            f"{name} AS (SELECT {keep}, {dialect.xor(dialect.shr('x', shift), 'x')} AS m "
            f"FROM {name}_2)"]


def _key_ctes(dialect: Dialect, prefix: str, source: str, carried: list, key: SelectionKey,
              left: str, right: str) -> list:
    """CTEs ending in ``{prefix}_d`` with column ``m = key.key(left, right)``."""
    k, mask, bits = key.round_keys, LANE_MASK, LANE_BITS
    x, shr = dialect.xor, dialect.shr
    ctes = _mix_ctes(dialect, f"{prefix}_a", source, carried,
                     f"((({left} & {mask}) + {k[0]}) & {mask})")
    ctes += _mix_ctes(dialect, f"{prefix}_b", f"{prefix}_a", carried,
                      f"((({x('m', f'({shr(left, bits)} & {mask})')}) + {k[1]}) & {mask})")
    ctes += _mix_ctes(dialect, f"{prefix}_c", f"{prefix}_b", carried,
                      x(f"((m + ({right} & {mask})) & {mask})", str(k[2])))
    ctes += _mix_ctes(dialect, f"{prefix}_d", f"{prefix}_c", carried,
                      f"((({x('m', f'({shr(right, bits)} & {mask})')}) + {k[3]}) & {mask})")
    return ctes


def _units_sql(column: str, grid, text: bool) -> str:
    value = f"TRY_CAST({column} AS DOUBLE)" if text else f"CAST({column} AS DOUBLE)"
    k = grid.exponent
    scaled = (f"({value} * CAST({1 << k} AS DOUBLE))" if k >= 0
              else f"({value} / CAST({1 << -k} AS DOUBLE))")
    # least / greatest skip NULLs: a missing (NULL or NaN) value must stay missing
    return (f"CASE WHEN {value} IS NULL OR isnan({value}) THEN NULL ELSE "
            f"CAST(floor(greatest(least({scaled}, CAST({grid.hi} AS DOUBLE)), "
            f"CAST({grid.lo} AS DOUBLE)) + 0.5) AS BIGINT) END")


@dataclass(frozen=True)
class BoundedSql:
    """``WITH ...`` ending in the CTE ``kept`` (``u, g.., w.., rn``: ``rn`` the
    row's place among its unit's kept rows in the group); the per-group aggregates
    (``main``; on DuckDB with one ``histogram`` MAP per quantile column); on
    Spark the bin counts of each quantile column (``bins``: column index ->
    ``SELECT g.., bin, n``)."""

    with_clause: str
    main: str
    bins: dict


def bounded_sql(dialect: Dialect, source: str, *, groups: int, value_grids: list,
                value_text: list, unit_integer: bool, group_integer: bool, key_codes,
                max_groups: int, max_rows: int, group_key: SelectionKey,
                row_key: SelectionKey, quantile_columns: list, bins: int) -> BoundedSql:
    """The bounded aggregation over ``source`` (columns u, g0.., v0..).

    One pass over the rows: the group key ``m`` of each row's (unit, group)
    pair and, per unit, ``dense_rank`` by ``m`` (rows whose key is among the
    unit's ``max_groups`` smallest distinct keys), then by ``(m, code(g),
    g..)`` on those rows; the rows of rank at most ``max_groups`` are the rows
    of the chosen groups (rows of one group share one rank, distinct groups
    never do).  This is the choice of ``row_number`` over the distinct pairs,
    without building the pairs and joining back; the per-(unit, group) row
    choice then runs on the rows kept.
    """
    gcols = [f"g{i}" for i in range(groups)]
    vcols = [f"v{i}" for i in range(len(value_grids))]
    wcols = [f"w{i}" for i in range(len(value_grids))]
    glist = ", ".join(gcols)
    text = dialect.text
    not_null = " AND ".join(["u IS NOT NULL"] + [f"{g} IS NOT NULL" for g in gcols])
    if groups == 1:
        gcode = "CAST(g0 AS BIGINT)" if group_integer else \
            _text_code(dialect, f"CAST(g0 AS {text})")
    else:
        parts = " || ".join(f"CAST(length(CAST({g} AS {text})) AS {text}) || ':' || "
                            f"CAST({g} AS {text})" for g in gcols)
        gcode = dialect.md5_code(f"({parts})")
    ucode = "CAST(u AS BIGINT)" if unit_integer else _text_code(dialect, f"CAST(u AS {text})")
    units = [f"{_units_sql(f'v{i}', grid, is_text)} AS w{i}"
             for i, (grid, is_text) in enumerate(zip(value_grids, value_text))]
    if len(wcols) == 1:       # the grid units themselves (|units| < 2^51; missing: -2^62)
        rcode = f"coalesce(w0, {MISSING_UNITS})"
    elif wcols:
        joined = " || ',' || ".join(f"coalesce(CAST({w} AS {text}), 'n')" for w in wcols)
        rcode = dialect.md5_code(f"({joined})")
    else:
        rcode = "CAST(0 AS BIGINT)"
    row_columns = ["u"] + gcols + vcols
    ctes = [f"coded AS (SELECT {', '.join(row_columns)}, {ucode} AS uc, {gcode} AS gc "
            f"FROM {source} WHERE {not_null})"]
    coded = "coded"
    if key_codes is not None:
        codes = ", ".join(str(int(c)) for c in sorted(set(key_codes))) or "NULL"
        ctes.append(f"coded_k AS (SELECT * FROM coded WHERE gc IN ({codes}))")
        coded = "coded_k"
    ctes += _key_ctes(dialect, "gk", coded, row_columns + ["uc", "gc"], group_key, "uc", "gc")
    # only what the rank and the later steps need goes through the partitioned sort; an
    # integer group's code is the group itself (CAST to BIGINT keeps the order)
    tie_codes = [] if group_integer else ["gc"]
    ranked_columns = ", ".join(row_columns + tie_codes)
    ctes.append(f"gin AS (SELECT {ranked_columns}, {dialect.key32('m')} AS m FROM gk_d)")
    # first by m alone (a short sort key): rows whose m is among the unit's max_groups
    # smallest distinct keys, which include every row of the chosen groups; then the
    # exact order on those few rows
    order_groups = ", ".join(["m"] + tie_codes + gcols)
    row_list = ", ".join(row_columns)
    ctes.append(f"gpre AS (SELECT {ranked_columns}, m FROM (SELECT {ranked_columns}, m, "
                f"dense_rank() OVER (PARTITION BY u ORDER BY m) AS rk FROM gin) WHERE rk <= "
                f"{max_groups})")
    ctes.append(f"gsel AS (SELECT {row_list} FROM (SELECT {row_list}, dense_rank() OVER "
                f"(PARTITION BY u ORDER BY {order_groups}) AS rk FROM gpre) WHERE rk <= "
                f"{max_groups})")
    ctes.append("vals AS (SELECT " + ", ".join(["u"] + gcols + units) + " FROM gsel)")
    ctes.append(f"rows_in AS (SELECT vals.*, {ucode} AS uc, {rcode} AS rc FROM vals)")
    row_columns = ["u"] + gcols + wcols + ["uc", "rc"]
    ctes += _key_ctes(dialect, "rk", "rows_in", row_columns, row_key, "uc", "rc")
    order_rows = ", ".join(["m", "rc"] + [f"{w} ASC NULLS LAST" for w in wcols])
    kept_columns = ", ".join(["u"] + gcols + wcols)
    ctes.append(f"kept AS (SELECT {kept_columns}, rn FROM (SELECT {kept_columns}, row_number() "
                f"OVER (PARTITION BY u, {glist} ORDER BY {order_rows}) AS rn FROM rk_d) "
                f"WHERE rn <= {max_rows})")
    # each kept (unit, group) has exactly one row numbered 1: the distinct units of a
    # group, without a distinct aggregation
    outputs = ["count(CASE WHEN rn = 1 THEN 1 END) AS distinct_units",
               "count(*) AS row_count"]
    for i, w in enumerate(wcols):
        outputs += [f"sum({w}) AS sum_{i}", f"count({w}) AS nonnull_{i}"]
    bin_queries = {}
    for i in quantile_columns:
        grid = value_grids[i]
        span = grid.hi - grid.lo
        bin_sql = dialect.int_div(f"((w{i} - ({grid.lo})) * {bins} + {span - 1})", str(span))
        if dialect.name == "duckdb":     # one query: a MAP bin -> count per group
            outputs.append(f"histogram(CASE WHEN w{i} IS NULL THEN NULL ELSE {bin_sql} END) "
                           f"AS bins_{i}")
            continue
        bin_queries[i] = (f"SELECT {glist}, {bin_sql} AS bin, count(*) AS n FROM kept "
                          f"WHERE w{i} IS NOT NULL GROUP BY {glist}, {bin_sql}")
    return BoundedSql("WITH " + ",\n".join(ctes),
                      f"SELECT {glist}, " + ", ".join(outputs) + f" FROM kept GROUP BY {glist}",
                      bin_queries)

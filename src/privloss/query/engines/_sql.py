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

__all__ = ["Dialect", "DUCKDB", "SPARK", "BoundedSql", "bounded_sql", "coded_pairs_sql",
           "groups_per_unit_sql", "TOP_N_LIMIT", "NARROW_KEY_BITS",
           "MISSING_UNITS", "JoinSql", "joined_sql"]

#: row code of a missing value (grid units are below 2^51 in magnitude)
MISSING_UNITS = -(1 << 62)
#: DuckDB's ``min(x, n)`` takes ``n`` below this; a larger ``max_groups`` on coded
#: pairs is chosen by the windows of :func:`_group_choice` instead
TOP_N_LIMIT = 1_000_000
#: a table of fewer pairs than ``2^NARROW_KEY_BITS`` has BIGINT choice keys
#: (:func:`_coded_group_choice`)
NARROW_KEY_BITS = 31


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
    """``WITH ...`` ending in the CTE ``kept``; the per-group statistics
    (``main``: ``g.., distinct_units, row_count, sum_i, nonnull_i..``, on DuckDB
    with one ``histogram`` MAP per quantile column, and with ``top`` the
    ``top`` groups of largest ``row_count`` and a last column ``total_groups``);
    on Spark the bin counts of each quantile column (``bins``: column index ->
    ``SELECT g.., bin, n``).  Without value columns ``kept`` holds (unit,
    group) pairs with their row count ``c``; with them, rows numbered ``rn``
    within their (unit, group)."""

    with_clause: str
    main: str
    bins: dict


def _group_choice(dialect: Dialect, source: str, carried: list, gcols: list, max_groups: int,
                  group_key: SelectionKey, tie_codes: list, final: str,
                  distinct_pairs: bool = False) -> list:
    """CTEs ending in ``final`` (the ``carried`` columns): per unit, the rows of
    its ``max_groups`` groups of smallest ``(m, code(g), [canonical(g)], g..)``.

    First by ``m`` alone (a short sort key): the rows whose ``m`` is among the
    unit's ``max_groups`` smallest distinct keys, which include every row of
    the chosen groups; then the exact order on those rows.  Rows of one group
    share one rank and distinct groups never do, so this is ``row_number`` over
    the distinct (unit, group) pairs without building them and joining back.

    ``distinct_pairs``: ``source`` has one row per (unit, group) (the
    count-only pairs), so the full order is distinct within a unit and both
    ranks are ``row_number`` over it: one window over the full order keeps
    the same rows (the first window's survivors hold every row of full rank
    ``<= max_groups``), one sort instead of two."""
    ctes = _key_ctes(dialect, "gk", source, carried, group_key, "uc", "gc")
    ranked = [c for c in carried if c not in ("uc", "gc", "gt")] + tie_codes
    ranked_columns = ", ".join(ranked)
    ctes.append(f"gin AS (SELECT {ranked_columns}, {dialect.key32('m')} AS m FROM gk_d)")
    order_groups = ", ".join(["m"] + tie_codes + gcols)
    kept = ", ".join(c for c in carried if c not in ("uc", "gc", "gt"))
    if distinct_pairs:
        ctes.append(f"{final} AS (SELECT {kept} FROM (SELECT {kept}, row_number() OVER "
                    f"(PARTITION BY u ORDER BY {order_groups}) AS rk FROM gin) WHERE rk <= "
                    f"{max_groups})")
        return ctes
    ctes.append(f"gpre AS (SELECT {ranked_columns}, m FROM (SELECT {ranked_columns}, m, "
                f"dense_rank() OVER (PARTITION BY u ORDER BY m) AS rk FROM gin) WHERE rk <= "
                f"{max_groups})")
    ctes.append(f"{final} AS (SELECT {kept} FROM (SELECT {kept}, dense_rank() OVER "
                f"(PARTITION BY u ORDER BY {order_groups}) AS rk FROM gpre) WHERE rk <= "
                f"{max_groups})")
    return ctes


def _coded_group_choice(dialect: Dialect, source: str, carried: list, max_groups: int,
                        group_key: SelectionKey, final: str, pairs: int | None) -> list:
    """:func:`_group_choice` over :func:`coded_pairs_sql`'s table ``source`` (DuckDB;
    ``pairs``: its number of rows, if known): the same pairs, by one
    aggregation instead of two sorts.

    Within a unit ``p`` increases with ``(code(g), [canonical(g)], g..)`` (the
    pairs are numbered in that order once, seed-independent), so the order
    ``(m, code(g), [canonical(g)], g..)`` of :func:`_group_choice` is the order
    of ``m * 2^b + p``, a key distinct for every pair: ``b = 31`` (a BIGINT)
    when ``pairs < 2^31`` (so ``0 < p < 2^31``; ``m < 2^32``: below ``2^63``),
    else ``b = 64`` (a HUGEINT; ``p < 2^63``); no overflow either way.  Rows of
    one unit are distinct pairs, so ``_group_choice``'s two dense ranks keep
    exactly the unit's ``max_groups`` pairs of smallest key:
    ``min(key, max_groups)`` per unit (``max_groups`` below
    :data:`TOP_N_LIMIT`), its ``p`` (the low ``b`` bits) joined back."""
    bits = NARROW_KEY_BITS if pairs is not None and pairs < 1 << NARROW_KEY_BITS else 64
    kind = "BIGINT" if bits < 63 else "HUGEINT"
    ctes = _key_ctes(dialect, "gk", source, ["u", "p", "uc", "gc"], group_key, "uc", "gc")
    ctes.append(f"gin AS (SELECT u, CAST(m AS {kind}) * {1 << bits} + p AS key FROM gk_d)")
    ctes.append(f"gtop AS (SELECT CAST(unnest(min(key, {int(max_groups)})) & {(1 << bits) - 1} "
                f"AS BIGINT) AS p FROM gin GROUP BY u)")
    kept = ", ".join(carried)
    ctes.append(f"{final} AS (SELECT {kept} FROM {source} SEMI JOIN gtop "
                f"ON {source}.p = gtop.p)")
    return ctes


def _top(glist: str, main: str, top: int | None) -> str:
    if top is None:
        return main
    return (f"SELECT *, count(*) OVER () AS total_groups FROM ({main}) AS per_group "
            f"ORDER BY row_count DESC, {glist} ASC LIMIT {int(top)}")


def _codes(dialect: Dialect, groups: int, unit_integer: bool, group_integer: bool):
    """(code(u), code(g), the canonical-integer tie column or "", the tie codes)
    as SQL over u, g0.. (see :func:`bounded_sql`)."""
    gcols = [f"g{i}" for i in range(groups)]
    text = dialect.text
    tie_codes = []
    if groups == 1:
        gcode = "CAST(g0 AS BIGINT)" if group_integer else \
            _text_code(dialect, f"CAST(g0 AS {text})")
        if not group_integer:
            tie_codes = ["gc", "gt"]
    else:
        parts = " || ".join(f"CAST(length(CAST({g} AS {text})) AS {text}) || ':' || "
                            f"CAST({g} AS {text})" for g in gcols)
        gcode = dialect.md5_code(f"({parts})")
        tie_codes = ["gc"]
    gtie = (f", CASE WHEN {dialect.is_canonical_integer(f'CAST(g0 AS {text})')} THEN 1 "
            f"ELSE 0 END AS gt") if "gt" in tie_codes else ""
    ucode = "CAST(u AS BIGINT)" if unit_integer else _text_code(dialect, f"CAST(u AS {text})")
    return ucode, gcode, gtie, tie_codes


def _pair_ctes(dialect: Dialect, source: str, gcols: list, ucode: str, gcode: str, gtie: str,
               group_integer: bool) -> list:
    """The CTEs ``pairs`` and ``coded``: the (unit, group) pairs of ``source``
    (null units and groups dropped) with their row count ``c`` and codes.

    A text code (one text group column, or several columns) is a function of
    the groups' texts alone, so it is computed once per distinct text
    (``gcodes``) and joined back on the texts (``CAST(g AS text)``; byte
    equality): the same value on every pair as computing it there, without a
    regular expression and an md5 per pair.  Joining on the texts, not on the
    values, keeps each pair's code a function of its own group's text even for
    types whose equal values print differently (so a unit's choice still
    reads no other unit's rows).  An integer group column's code is a cast:
    computed per pair."""
    glist = ", ".join(gcols)
    not_null = " AND ".join(["u IS NOT NULL"] + [f"{g} IS NOT NULL" for g in gcols])
    pairs = (f"pairs AS (SELECT u, {glist}, count(*) AS c FROM {source} "
             f"WHERE {not_null} GROUP BY u, {glist})")
    if len(gcols) == 1 and group_integer:
        return [pairs, f"coded AS (SELECT u, {glist}, c, {ucode} AS uc, {gcode} AS gc{gtie} "
                       f"FROM pairs)"]
    text = dialect.text
    texts = ", ".join(f"CAST({g} AS {text}) AS {g}" for g in gcols)
    on = " AND ".join(f"CAST(pairs.{g} AS {text}) = gcodes.{g}" for g in gcols)
    carried = ", ".join(f"pairs.{g} AS {g}" for g in gcols)
    tie = ", gcodes.gt AS gt" if gtie else ""
    # gcode and gtie read g0.. as text: here the columns already are the texts
    return [pairs,
            f"gcodes AS (SELECT {glist}, {gcode} AS gc{gtie} FROM "
            f"(SELECT DISTINCT {texts} FROM pairs) AS group_texts)",
            f"coded AS (SELECT pairs.u AS u, {carried}, pairs.c AS c, {ucode} AS uc, "
            f"gcodes.gc AS gc{tie} FROM pairs INNER JOIN gcodes ON {on})"]


def coded_pairs_sql(dialect: Dialect, source: str, *, groups: int, unit_integer: bool,
                    group_integer: bool) -> str:
    """The seed-independent part of a count-only :func:`bounded_sql` as one
    query: the CTE ``coded`` (columns ``u, g.., c, uc, gc`` and ``gt`` for one
    text group column), with ``u`` replaced by a dense integer id of the unit
    (a bijection on units, so every ``PARTITION BY u`` is unchanged), and
    ``p``, the pairs numbered from 1 by (unit, then the order of
    :func:`_group_choice` after the key: ``code(g), [canonical(g)], g..``),
    sorted by ``p`` (so by unit).  Materialised once per snapshot and columns, it is what
    ``bounded_sql(..., coded_source=...)`` then reads instead of ``source``:
    the same statistics, without regrouping and recoding the rows."""
    gcols = [f"g{i}" for i in range(groups)]
    ucode, gcode, gtie, tie_codes = _codes(dialect, groups, unit_integer, group_integer)
    ctes = _pair_ctes(dialect, source, gcols, ucode, gcode, gtie, group_integer)
    rest = ", ".join(gcols + ["c", "uc", "gc"] + (["gt"] if gtie else []))
    # p: the pairs numbered by unit, then by _group_choice's order after m
    order = ", ".join(["u"] + tie_codes + gcols)
    return ("WITH " + ",\n".join(ctes) + f"\nSELECT dense_rank() OVER (ORDER BY u) AS u, "
            f"{rest}, row_number() OVER (ORDER BY {order}) AS p FROM coded ORDER BY p")


def bounded_sql(dialect: Dialect, source: str, *, groups: int, value_grids: list,
                value_text: list, unit_integer: bool, group_integer: bool, key_codes,
                max_groups: int | None, max_rows: int, group_key: SelectionKey,
                row_key: SelectionKey, quantile_columns: list, bins: int,
                top: int | None = None, coded_source: str | None = None,
                rank_thresholds: dict | None = None,
                coded_pairs: int | None = None) -> BoundedSql:
    """The bounded aggregation over ``source`` (columns u, g0.., v0..): the one
    compilation of a :class:`~privloss.query.plan.QueryPlan`'s bounding and
    statistics, for both dialects.

    Codes (:mod:`privloss.query.bounding`): ``code(u)``, ``code(g)`` (one
    column: its integer or text code; several: the md5 prefix of
    ``len(t1) ':' t1 len(t2) ':' t2 ...``).  With ``max_groups`` each unit
    keeps its groups of smallest ``(m, code(g), canonical(g), g..)``, ``m`` the
    group key of the (unit, group) pair and ``canonical(g)`` 1 for canonical
    integer text (so other text comes first on a code tie, as the bounding
    rule says).  Without value columns the rows of one (unit, group) are
    interchangeable: the engine groups them into pairs first (``c`` rows each)
    and counts ``least(c, max_rows)``; with value columns each (unit, group)
    keeps its ``max_rows`` rows of smallest
    ``(row_key(code(u), code(row)), code(row), units..)``.

    ``rank_thresholds`` (value column index -> increasing integer grid units
    ``t``): after the other outputs, per group and threshold the count of kept
    rows with ``units <= t`` (``rank_i_j``), in index order.

    ``coded_source`` (count-only plans, DuckDB): a table holding
    :func:`coded_pairs_sql` of the source, read instead of grouping and
    coding ``source`` again; the group choice is then
    :func:`_coded_group_choice` (the same pairs; ``coded_pairs``: the table's
    number of rows, for its narrower keys).
    """
    gcols = [f"g{i}" for i in range(groups)]
    vcols = [f"v{i}" for i in range(len(value_grids))]
    wcols = [f"w{i}" for i in range(len(value_grids))]
    glist = ", ".join(gcols)
    text = dialect.text
    not_null = " AND ".join(["u IS NOT NULL"] + [f"{g} IS NOT NULL" for g in gcols])
    ucode, gcode, gtie, tie_codes = _codes(dialect, groups, unit_integer, group_integer)
    pairs = not value_grids
    if coded_source is not None and not pairs:
        raise ValueError("coded_source goes with count-only plans (no value columns)")
    ctes = []
    if pairs:       # count-only statistics: bound the (unit, group) pairs, not the rows
        row_columns = ["u"] + gcols + ["c"]
        if coded_source is None:
            ctes += _pair_ctes(dialect, source, gcols, ucode, gcode, gtie, group_integer)
    else:
        row_columns = ["u"] + gcols + vcols
        ctes.append(f"coded AS (SELECT {', '.join(row_columns)}, {ucode} AS uc, {gcode} AS gc"
                    f"{gtie} FROM {source} WHERE {not_null})")
    coded = "coded" if coded_source is None else coded_source
    if key_codes is not None:
        codes = ", ".join(str(int(c)) for c in sorted(set(key_codes))) or "NULL"
        ctes.append(f"coded_k AS (SELECT * FROM {coded} WHERE gc IN ({codes}))")
        coded = "coded_k"
    carried = row_columns + ["uc", "gc"] + (["gt"] if gtie else [])
    if max_groups is not None and coded_source is not None and max_groups < TOP_N_LIMIT:
        ctes += _coded_group_choice(dialect, coded, carried, max_groups, group_key, "gsel",
                                    coded_pairs)
    elif max_groups is not None:
        ctes += _group_choice(dialect, coded, carried, gcols, max_groups, group_key,
                              tie_codes, "gsel", distinct_pairs=pairs)
    else:
        ctes.append(f"gsel AS (SELECT {', '.join(row_columns)} FROM {coded})")
    if pairs:
        ctes.append(f"kept AS (SELECT {', '.join(row_columns)} FROM gsel)")
        main = (f"SELECT {glist}, count(*) AS distinct_units, "
                f"sum(least(c, {int(max_rows)})) AS row_count FROM kept GROUP BY {glist}")
        return BoundedSql("WITH " + ",\n".join(ctes), _top(glist, main, top), {})
    units = [f"{_units_sql(f'v{i}', grid, is_text)} AS w{i}"
             for i, (grid, is_text) in enumerate(zip(value_grids, value_text))]
    if len(wcols) == 1:       # the grid units themselves (|units| < 2^51; missing: -2^62)
        rcode = f"coalesce(w0, {MISSING_UNITS})"
    else:
        joined = " || ',' || ".join(f"coalesce(CAST({w} AS {text}), 'n')" for w in wcols)
        rcode = dialect.md5_code(f"({joined})")
    ctes.append("vals AS (SELECT " + ", ".join(["u"] + gcols + units) + " FROM gsel)")
    ctes.append(f"rows_in AS (SELECT vals.*, {ucode} AS uc, {rcode} AS rc FROM vals)")
    row_columns = ["u"] + gcols + wcols + ["uc", "rc"]
    ctes += _key_ctes(dialect, "rk", "rows_in", row_columns, row_key, "uc", "rc")
    order_rows = ", ".join(["m", "rc"] + [f"{w} ASC NULLS LAST" for w in wcols])
    kept_columns = ", ".join(["u"] + gcols + wcols)
    ctes.append(f"kept AS (SELECT {kept_columns}, rn FROM (SELECT {kept_columns}, row_number() "
                f"OVER (PARTITION BY u, {glist} ORDER BY {order_rows}) AS rn FROM rk_d) "
                f"WHERE rn <= {int(max_rows)})")
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
    for i, thresholds in sorted((rank_thresholds or {}).items()):
        outputs += [f"count(CASE WHEN w{i} <= {int(t)} THEN 1 END) AS rank_{i}_{j}"
                    for j, t in enumerate(thresholds)]
    main = f"SELECT {glist}, " + ", ".join(outputs) + f" FROM kept GROUP BY {glist}"
    return BoundedSql("WITH " + ",\n".join(ctes), _top(glist, main, top), bin_queries)


def groups_per_unit_sql(source: str, *, groups: int, thresholds) -> str:
    """One row over ``source`` (columns u, g0..): the number of units (null
    unit or group dropped) and, per integer threshold ``t``, the number of
    units with at most ``t`` distinct groups (``at_most_j``), before any
    bounding.  Standard SQL, both dialects."""
    gcols = [f"g{i}" for i in range(groups)]
    glist = ", ".join(gcols)
    not_null = " AND ".join(["u IS NOT NULL"] + [f"{g} IS NOT NULL" for g in gcols])
    counts = ", ".join(f"count(CASE WHEN k <= {int(t)} THEN 1 END) AS at_most_{j}"
                       for j, t in enumerate(thresholds))
    return (f"SELECT count(*) AS units, {counts} FROM (SELECT u, count(*) AS k FROM "
            f"(SELECT DISTINCT u, {glist} FROM {source} WHERE {not_null}) AS pairs "
            f"GROUP BY u) AS per_unit")


@dataclass(frozen=True)
class JoinSql:
    """One join of :func:`joined_sql` in our names: the view ``view`` (columns
    ``view_columns``), ``kind`` (``inner`` / ``left``), the equal ``left`` and
    ``right`` columns (``as_text``: per key pair, compare the texts, for keys
    of different types), the ``columns`` carried, and for a private table its
    ``unit`` column (truncated before the join)."""

    view: str
    view_columns: tuple
    kind: str
    left: tuple
    right: tuple
    columns: tuple
    as_text: tuple
    unit: str | None = None


def _row_text(dialect: Dialect, columns) -> str:
    """``len(t):t`` per column (``n`` for a null), concatenated: distinct rows
    have distinct texts."""
    text = dialect.text
    return " || ".join(f"(CASE WHEN {c} IS NULL THEN 'n' ELSE CAST(length(CAST({c} AS {text})) "
                       f"AS {text}) || ':' || CAST({c} AS {text}) END)" for c in columns)


def _truncated(dialect: Dialect, prefix: str, view: str, columns: list, unit: str,
               rows: int, key: SelectionKey) -> list:
    """CTEs ending in ``prefix``: per unit (a null unit dropped), its ``rows``
    rows of smallest ``(key(code(u), code(row)), code(row), row)``, ``code(row)``
    the md5 prefix of :func:`_row_text`.  A unit's choice depends on its own
    rows only (the key is keyed by the seed, not by other units' data)."""
    text, listed = dialect.text, ", ".join(columns)
    ucode = _text_code(dialect, f"CAST({unit} AS {text})")
    rcode = dialect.md5_code(f"({_row_text(dialect, columns)})")
    ctes = [f"{prefix}_in AS (SELECT {listed}, {ucode} AS uc, {rcode} AS rc FROM {view} "
            f"WHERE {unit} IS NOT NULL)"]
    ctes += _key_ctes(dialect, f"{prefix}_k", f"{prefix}_in", list(columns) + ["uc", "rc"],
                      key, "uc", "rc")
    order = ", ".join(["m", "rc"] + [f"{c} ASC NULLS LAST" for c in columns])
    ctes.append(f"{prefix} AS (SELECT {listed} FROM (SELECT {listed}, row_number() OVER "
                f"(PARTITION BY {unit} ORDER BY {order}) AS tn FROM {prefix}_k_d) "
                f"WHERE tn <= {int(rows)})")
    return ctes


def joined_sql(dialect: Dialect, base: str, base_columns: list, joins: list, *,
               unit: str, truncation: int | None = None, keys: list | None = None) -> str:
    """One ``SELECT`` of the base view's ``base_columns`` and every join's
    ``columns``: the plan's joins (:mod:`privloss.query.joins`) as hash
    joins on our own names.  With ``truncation`` (joins of private tables)
    the base view and every private join's view first keep at most
    ``truncation`` rows per unit (:func:`_truncated`, ``keys[k]`` the
    selection key of table k, 0 the base)."""
    ctes, source = [], base
    private = [join for join in joins if join.unit is not None]
    if private:
        ctes += _truncated(dialect, "t0", base, list(base_columns), unit, truncation, keys[0])
        source = "t0"
    sources = []
    for index, join in enumerate(joins, start=1):
        view = join.view
        if join.unit is not None:
            ctes += _truncated(dialect, f"t{index}", view, list(join.view_columns), join.unit,
                               truncation, keys[index])
            view = f"t{index}"
        sources.append(view)
    text = dialect.text
    clauses = []
    for join, view in zip(joins, sources):
        conditions = " AND ".join(
            f"CAST({left} AS {text}) = CAST({right} AS {text})" if as_text
            else f"{left} = {right}"
            for left, right, as_text in zip(join.left, join.right, join.as_text))
        clauses.append(f"{'LEFT' if join.kind == 'left' else 'INNER'} JOIN {view} "
                       f"ON {conditions}")
    selected = ", ".join(list(base_columns) + [c for join in joins for c in join.columns])
    with_clause = ("WITH " + ",\n".join(ctes) + "\n") if ctes else ""
    return f"{with_clause}SELECT {selected} FROM {source} " + " ".join(clauses)

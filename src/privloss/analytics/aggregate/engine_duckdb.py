"""Contribution bounding and per-group aggregation inside DuckDB, in one query.

Definition
----------
The caller's columns are projected through the relational API onto our own
names ``u`` (privacy unit), ``g0..`` (group-by columns) and ``v0..`` (value
columns), so no caller text enters the SQL; numbers in the SQL are integers
formatted by Python.  Steps (CTEs):

1. ``coded``: rows with a null unit or a null group column are dropped, and
   each row gets ``code(unit)`` and ``code(group)`` as in
   :mod:`privloss.analytics.bounding` (integers for integer columns and
   canonical integer text, else an md5 prefix; a multi-column group is the md5
   prefix of ``len(t1) ':' t1 len(t2) ':' t2 ...``); with known keys only rows
   whose group code is a key's code are kept (codes are integers computed in
   Python from the public keys; the exact key match is done again in Python);
2. ``gsel``: per unit, the rows of its ``max_groups`` distinct groups of
   smallest ``(m, code(g), g)`` with ``m = SelectionKey(seed).key(code(u),
   code(g))`` (the l0 choice of :mod:`privloss.analytics.bounding`, same
   arithmetic), in one pass over the rows: ``dense_rank`` over the unit's rows
   by ``m`` alone keeps the rows whose ``m`` is among the unit's
   ``max_groups`` smallest distinct keys (a superset of the chosen groups'
   rows, since ``m`` leads the order), then ``dense_rank`` by the full order on
   those rows keeps the chosen groups.  Rows of one group share a rank and
   distinct groups never do, so this is ``row_number`` over the distinct
   (unit, group) pairs, without building the pairs and joining them back;
3. ``vals``: each value column of the kept rows to grid units
   (:class:`~.spec.ValueGrid`): ``floor(clamp(x * 2^k, lo, hi) + 0.5)``
   (DOUBLE, exact; CSV text is cast with ``TRY_CAST``: unparseable text and
   NaN are missing values);
4. ``kept``: per (unit, group), the ``max_rows_per_group`` rows of smallest
   ``(SelectionKey(seed + 2^128).key(code(u), code(row)), code(row), units)``
   where ``code(row)`` is the row's grid units for one value column, else the
   md5 prefix of its units joined by ``,`` (:func:`row_code`): identical rows
   are interchangeable, so the choice is data-independent up to them;
5. per group: the distinct units (its kept rows numbered 1), ``count(*)``,
   per value column ``sum(units)`` and ``count(units)``, and for quantile
   columns the histogram of ``bin = ceil((units - lo) * B / (hi - lo))`` in
   ``0..B``.

Privacy guarantee
-----------------
None by itself (exact aggregates).  Each unit's kept rows depend only on that
unit's own rows and the seed: after bounding a unit touches at most
``max_groups`` groups with at most ``max_rows_per_group`` rows each, every
value within ``[lo, hi]`` grid units.

Citation
--------
Wilson et al., PoPETs 2020; DuckDB window functions (``dense_rank``,
``row_number``), ``histogram``.

Runtime
-------
One scan of the input (only the needed columns), one partitioned sort of all
rows by (unit, 4-byte key), two small sorts (the rows that pass; the rows of
the chosen groups) and one aggregation by group.  On the 10-million-row
benchmark the first sort is about 60% of the query's CPU time and the key
arithmetic about 20% (``benchmarks/aggregate.py``).
"""

from __future__ import annotations

import hashlib

from privloss.analytics.aggregate._sql import DUCKDB, MISSING_UNITS, bounded_sql
from privloss.analytics.bounding import (SelectionKey, is_canonical_integer, text_code,
                                         text_code_digits)

__all__ = ["bounded_aggregates", "check_schema", "group_code", "row_code", "ROW_SEED_OFFSET",
           "MISSING_UNITS"]

#: the row choice uses SelectionKey.from_seed(seed + ROW_SEED_OFFSET)
ROW_SEED_OFFSET = 1 << 128
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER"}
_NUMERIC_PREFIXES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                     "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                     "REAL")


# ----------------------------------------------------------------------------------
# Python references of the codes
# ----------------------------------------------------------------------------------

def _md5_code(text: str) -> int:
    return int(hashlib.md5(text.encode("utf-8")).hexdigest()[:text_code_digits], 16)


def group_code(texts: tuple, integer: bool = False) -> int:
    """code of a group from its column texts (``integer``: one integer column)."""
    if len(texts) == 1:
        return int(texts[0]) if integer else text_code(texts[0])
    return _md5_code("".join(f"{len(t)}:{t}" for t in texts))


def row_code(units: tuple) -> int:
    """code of a row from its grid units: the units of a single value column
    (:data:`MISSING_UNITS` when missing), else the md5 prefix of the units
    joined by ``,`` (``n`` for a missing value)."""
    if len(units) == 1:
        return MISSING_UNITS if units[0] is None else int(units[0])
    return _md5_code(",".join("n" if u is None else str(u) for u in units))


def key_codes_of(key_texts, group_integer: bool):
    """Group codes of the known keys (None without keys); for an integer group
    column only canonical integer text can equal a value's text."""
    if key_texts is None:
        return None
    if group_integer:
        return [int(t[0]) for t in key_texts if is_canonical_integer(t[0])]
    return [group_code(t) for t in key_texts]


def unit_code(value, integer: bool) -> int:
    return int(value) if integer else text_code(str(value))


# ----------------------------------------------------------------------------------
# running it
# ----------------------------------------------------------------------------------

def _kind(type_name) -> str:
    name = str(type_name).upper()
    if name in _INTEGER_TYPES:
        return "integer"
    if name == "VARCHAR":
        return "text"
    if name.startswith(_NUMERIC_PREFIXES):
        return "numeric"
    return "other"


def _resolved(inp):
    from privloss.analytics.inputs import (FileInput, FrameInput, QueryInput, RelationInput,
                                           SparkFrameInput, resolve_input)
    if isinstance(inp, (FileInput, FrameInput, QueryInput, RelationInput, SparkFrameInput)):
        return inp
    return resolve_input(inp)


def _text_ok(inp) -> bool:
    from privloss.analytics.inputs import FileInput
    return isinstance(inp, FileInput) and inp.format != "parquet"


def _open(inp, scan: bool = False):
    from privloss.analytics.engines.duckdb_engine import _open as open_input, _Source
    from privloss.analytics.engines.duckdb_engine import import_duckdb

    duckdb = import_duckdb()
    source = _Source()
    try:
        open_input(duckdb, inp, source, scan)
    except BaseException:
        source.close()
        raise
    return duckdb, source


def _check(columns: list, types: list, unit: str, by: tuple, value_columns: tuple,
           described: str, text_ok: bool) -> None:
    available = dict(zip(columns, types))
    for role, name in [("privacy_unit", unit)] + [("by", b) for b in by] + \
            [("aggregation column", v) for v in value_columns]:
        if name not in available:
            raise ValueError(f"{role} column {name!r} is not in {described} (columns: "
                             f"{sorted(map(str, columns))[:20]})")
    for name in value_columns:
        if _kind(available[name]) not in ("integer", "numeric", "text"):
            raise ValueError(f"aggregation column {name!r} must be numeric, got type "
                             f"{available[name]}")
        if _kind(available[name]) == "text" and not text_ok:
            raise ValueError(f"aggregation column {name!r} must be numeric, got type "
                             f"{available[name]} (text is accepted only from CSV files, "
                             f"where every column is text)")


def check_schema(inp, unit: str, by: tuple, value_columns: tuple) -> None:
    """Bind the input (no aggregate computed; CSV / TSV files parsed whole, so
    a malformed row fails here wherever it is) and check the columns and their
    types."""
    from privloss.analytics.inputs import describe_input

    inp = _resolved(inp)
    _, source = _open(inp, scan=True)
    try:
        relation = source.relation
        _check(list(relation.columns), list(relation.types), unit, by, value_columns,
               describe_input(inp), _text_ok(inp))
    finally:
        source.close()


def bounded_aggregates(inp, *, unit: str, by: tuple, value_columns: tuple, grids: dict,
                       quantile_columns: tuple, bins: int, max_groups: int, max_rows: int,
                       seed: int, key_texts=None) -> list[dict]:
    """Run the bounded aggregation; one dict per group: ``group`` (tuple of
    values), ``distinct``, ``rows``, ``sum`` / ``nonnull`` (column -> int),
    ``bins`` (column -> {bin: count}).  Engine failures become
    :class:`~privloss.analytics.errors.ComputationFailed`."""
    from privloss.analytics.engines.duckdb_engine import floats_as_integer_text, number_label
    from privloss.analytics.errors import computation_failed
    from privloss.analytics.inputs import describe_input

    inp = _resolved(inp)
    duckdb, source = _open(inp)
    try:
        relation = source.relation
        _check(list(relation.columns), list(relation.types), unit, by, value_columns,
               describe_input(inp), _text_ok(inp))
        expressions = [duckdb.ColumnExpression(unit).alias("u")]
        expressions += [duckdb.ColumnExpression(b).alias(f"g{i}") for i, b in enumerate(by)]
        expressions += [duckdb.ColumnExpression(v).alias(f"v{i}")
                        for i, v in enumerate(value_columns)]
        projected, floats = floats_as_integer_text(
            duckdb, relation.select(*expressions), ("u",) + tuple(f"g{i}" for i in range(len(by))))
        kinds = [_kind(t) for t in projected.types]
        group_integer = len(by) == 1 and kinds[1] == "integer"
        key_codes = key_codes_of(key_texts, group_integer)
        built = bounded_sql(
            DUCKDB, "privloss_source", groups=len(by),
            value_grids=[grids[v] for v in value_columns],
            value_text=[kind == "text" for kind in kinds[1 + len(by):]],
            unit_integer=kinds[0] == "integer", group_integer=group_integer,
            key_codes=key_codes, max_groups=max_groups, max_rows=max_rows,
            group_key=SelectionKey.from_seed(seed),
            row_key=SelectionKey.from_seed(seed + ROW_SEED_OFFSET),
            quantile_columns=[value_columns.index(c) for c in quantile_columns], bins=bins)
        sql = built.with_clause + "\n" + built.main
        try:
            rows = projected.query("privloss_source", sql).fetchall()
        except duckdb.Error as error:
            raise computation_failed(error, f"duckdb aggregate, {describe_input(inp)}") \
                from None
    finally:
        source.close()
    out = []
    groups, width = len(by), 2 * len(value_columns)
    for row in rows:
        group = tuple(number_label(value) if f"g{i}" in floats else value
                      for i, value in enumerate(row[:groups]))
        distinct, count = int(row[groups]), int(row[groups + 1])
        rest = row[groups + 2:]
        sums = {v: int(rest[2 * i] or 0) for i, v in enumerate(value_columns)}
        nonnull = {v: int(rest[2 * i + 1]) for i, v in enumerate(value_columns)}
        bins_of = {}
        for j, column in enumerate(quantile_columns):
            histogram = rest[width + j] or {}
            bins_of[column] = {int(b): int(c) for b, c in dict(histogram).items()
                               if b is not None}
        out.append({"group": group, "distinct": distinct, "rows": count, "sum": sums,
                    "nonnull": nonnull, "bins": bins_of})
    return out

"""What every engine shares: the Python references of the codes, column kinds,
and the schema check of a :class:`~privloss.query.plan.QueryPlan`.

Definition
----------
``code`` of a unit, a group and a row as :mod:`privloss.query.bounding` and
:func:`~privloss.query.engines._sql.bounded_sql` define them (the engines
compute the same integers in SQL; these are the references the tests compare
with and the known keys' codes).  :func:`check_columns` gives one error
message for every engine and release kind (column names are public schema).

Privacy guarantee
-----------------
None (public schema and parameters only).

Citation
--------
Not applicable.

Runtime
-------
``O(columns)``; one md5 per text code.
"""

from __future__ import annotations

import hashlib

from privloss.query.bounding import is_canonical_integer, text_code, text_code_digits
from privloss.query.engines._sql import MISSING_UNITS

__all__ = ["group_code", "row_code", "key_codes_of", "unit_code", "column_kind",
           "check_columns", "text_ok", "MISSING_UNITS"]

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                  "UINTEGER"}
_NUMERIC_PREFIXES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                     "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                     "REAL")


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


def column_kind(type_name) -> str:
    """``integer``, ``text``, ``numeric`` or ``other``: how a column of this
    (DuckDB-named) type is coded and whether it can be summed."""
    name = str(type_name).upper()
    if name in _INTEGER_TYPES:
        return "integer"
    if name == "VARCHAR":
        return "text"
    if name.startswith(_NUMERIC_PREFIXES):
        return "numeric"
    return "other"


def text_ok(inp) -> bool:
    """Text value columns are accepted only from CSV / TSV files (every column is text)."""
    from privloss.query.inputs import FileInput
    return isinstance(inp, FileInput) and inp.format != "parquet"


def check_columns(columns: list, types: list, plan, described: str, text_is_ok: bool) -> None:
    """Raise ``ValueError`` naming a missing column (with its role) or a value
    column that is not numeric."""
    available = dict(zip(columns, types))
    roles = plan.role_names
    named = [(roles[0], plan.privacy_unit)] + list(zip(roles[1:], plan.by)) + \
        [("aggregation column", v) for v in plan.value_columns]
    if plan.where is not None:
        named += [("where column", c) for c in sorted(plan.where.columns())]
    for role, name in named:
        if name not in available:
            raise ValueError(f"{role} {name!r} is not a column of {described} (columns: "
                             f"{sorted(map(str, columns))[:20]})")
    for name in plan.value_columns:
        kind = column_kind(available[name])
        if kind not in ("integer", "numeric", "text"):
            raise ValueError(f"aggregation column {name!r} must be numeric, got type "
                             f"{available[name]}")
        if kind == "text" and not text_is_ok:
            raise ValueError(f"aggregation column {name!r} must be numeric, got type "
                             f"{available[name]} (text is accepted only from CSV files, "
                             f"where every column is text)")

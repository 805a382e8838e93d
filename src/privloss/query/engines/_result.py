"""What an engine hands back, and the checks every engine shares.

Definition
----------
:class:`EngineResult`: labels and bounded counts sorted by count desc then
label (at most ``limit`` rows), and ``total_items``, the number of labels with
positive bounded count in the whole histogram (it stays inside the library: it
only says whether the list was cut).  :func:`check_columns` gives the same
error message for every engine (column names are public schema);
:func:`exact_files` gives the file names an engine may read without
expanding glob characters.

Privacy guarantee
-----------------
None (exact aggregates).

Citation
--------
Not applicable.

Runtime
-------
``O(columns)``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["EngineResult", "check_columns", "exact_files"]


class EngineResult(NamedTuple):
    items: list
    counts: list
    total_items: int


def check_columns(columns, user_column: str, item_column: str, what: str) -> None:
    """Raise ``ValueError`` naming a missing column and the available ones."""
    for role, name in (("user_column", user_column), ("item_column", item_column)):
        if name not in columns:
            raise ValueError(f"{role} {name!r} not found in {what}; available columns: "
                             f"{list(columns)}")


def exact_files(inp):
    """(names, snapshot or None) for a ``FileInput``: its exact file names, or, if
    a name holds glob characters (which DuckDB and Spark would expand), private
    copies under plain names (close the snapshot when done)."""
    from privloss.query.fingerprint import has_glob_characters, snapshot_files

    names = inp.names
    if not any(has_glob_characters(name) for name in names):
        return names, None
    snapshot = snapshot_files(names, keyed=False)
    return snapshot.files, snapshot

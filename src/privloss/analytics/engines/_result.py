"""What an engine hands back, and the checks every engine shares.

Definition
----------
:class:`EngineResult`: labels and bounded counts sorted by count desc then
label (at most ``limit`` rows), and ``total_items``, the number of labels with
positive bounded count in the whole histogram.  :func:`check_columns` and
:func:`raise_for_stats` give the same error messages for every engine.

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

__all__ = ["EngineResult", "check_columns", "raise_for_stats"]


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


def raise_for_stats(total_items: int, null_user: bool, null_item: bool, user_column: str,
                    item_column: str, what: str) -> None:
    """Refuse null user ids, null items and an empty table, naming the column."""
    if null_user:
        raise ValueError(f"user_column {user_column!r} of {what} contains null user ids; "
                         f"every row needs a user (filter them out first, e.g. with a "
                         f"SqlQuery ... WHERE {user_column} IS NOT NULL)")
    if null_item:
        raise ValueError(f"item_column {item_column!r} of {what} contains null items; "
                         f"filter them out first (e.g. WHERE {item_column} IS NOT NULL)")
    if total_items == 0:
        raise ValueError(f"{what} is empty: no (user, item) rows to count")

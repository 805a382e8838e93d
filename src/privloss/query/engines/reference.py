"""Pure-Python reference of the bounded histogram (tests and tiny data only).

Definition
----------
:func:`reference_histogram` follows :mod:`privloss.query.bounding` word
for word: count rows per (user, item); for each user with more than ``l0``
distinct items keep the ``l0`` with the smallest ``(key, code(item), tie)``
(tie: canonical integer text after other text, then the item); cap at
``linf``; sum per item; sort and truncate with :meth:`Histogram.from_counts`.
A column whose values are all Python ints is hashed as integers, any other
column through the text of its values (canonical integer text coded as its
integer, :func:`~privloss.query.bounding.text_code`), which is what the
engines do for integer and string columns.

Privacy guarantee
-----------------
As for the engines (same selection for the same seed).

Citation
--------
Not applicable (a specification in code).

Runtime
-------
``O(n log n)`` for ``n`` rows, in Python: keep it to small data.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from privloss.query.bounding import (SelectionKey, check_bounds, draw_seed, integer_code,
                                         is_canonical_integer, text_code)
from privloss.query.histogram import Histogram

__all__ = ["reference_histogram", "column_codes", "selected_items"]


def column_codes(values) -> dict:
    """``{value: code}`` for one column: integer codes if every value is an int."""
    distinct = set(values)
    if any(value is None for value in distinct):
        raise ValueError("the reference does not accept null values")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in distinct):
        return {value: integer_code(value) for value in distinct}
    return {value: text_code(str(value)) for value in distinct}


def _is_integer_text(value) -> bool:
    """Canonical integer text sorts after other text on a (key, code) tie."""
    return isinstance(value, str) and is_canonical_integer(value)


def selected_items(user, items, l0, key: SelectionKey, user_codes, item_codes) -> list:
    """The items one user keeps (all of them when there are at most ``l0``)."""
    if l0 is None or len(items) <= l0:
        return list(items)
    user_code = user_codes[user]
    ranked = sorted(items, key=lambda item: (key.key(user_code, item_codes[item]),
                                             item_codes[item], _is_integer_text(item), item))
    return ranked[:l0]


def reference_histogram(rows, *, l0=None, linf=1, top=None, domain=None, seed=None,
                        source=None) -> Histogram:
    """Bounded histogram of ``(user, item)`` pairs (an iterable), in Python."""
    bounds = check_bounds(l0, linf)
    pair_counts = Counter((user, item) for user, item in rows)
    if not pair_counts:
        raise ValueError("no (user, item) rows to count")
    user_codes = column_codes(user for user, _ in pair_counts)
    item_codes = column_codes(item for _, item in pair_counts)
    key = None
    if bounds.l0 is not None:
        key = SelectionKey.from_seed(draw_seed(source) if seed is None else seed)
    per_user = defaultdict(list)
    for user, item in pair_counts:
        per_user[user].append(item)
    histogram: Counter = Counter()
    for user, items in per_user.items():
        for item in selected_items(user, items, bounds.l0, key, user_codes, item_codes):
            histogram[item] += min(pair_counts[user, item], bounds.linf)
    return Histogram.from_counts(histogram, top=top, domain=domain)

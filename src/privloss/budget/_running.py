"""A dataset's fully-adaptive accounting state, kept incrementally.

Definition
----------
:class:`RunningTable` is a :class:`privloss.accounting.fully_adaptive.filters.Table`
whose aggregates (the exact sum of each currency's column rounded up to
binary64, the number of infinite and of positive values, the sum of squared
Gaussian-DP mus) are kept as running totals: exact sums as integers in units
of 2^-1074 (every binary64 number is an integer multiple of that), so adding a
release is O(1) and reading a total is one correctly rounded division. The
filter's :func:`~privloss.accounting.fully_adaptive.check` reads a table only
through those aggregates (except the ``advanced`` rule's maximum, and the
refusal message's delta column, built from the stored releases on demand).

Privacy guarantee
-----------------
None of its own: each aggregate equals the one the column table computes from
the whole history (the smallest binary64 number at least the exact sum is
unique), so :func:`check` gives the same verdict, bit for bit, as the full
recomputation (tests/ledger/test_running.py compares them on random histories,
refusals included). The ledger keeps one per dataset, keyed by the verified
release count and chain head, and re-checks every charge under the write lock
against it.

Citation
--------
Exact accumulation of floating-point sums as scaled integers (Kulisch's long
accumulator, "Computer Arithmetic and Validity", 2008, section 1.7).

Runtime
-------
O(30) integer additions per release added; O(1) per aggregate read.
"""

from __future__ import annotations

import functools
import math

from privloss.accounting.fully_adaptive.filters import Table
from privloss.accounting.fully_adaptive.release import RENYI_ORDERS

__all__ = ["RunningTable", "DatasetTables", "tables_for"]

#: every binary64 number is an integer multiple of 2^-_SCALE
_SCALE = 1074
_ONE = 1 << _SCALE
#: the columns kept, in order; "gdp_mu^2" holds each mu squared (rounded to binary64)
_NAMES = ("epsilon", "delta", "rho", "xi", "gdp_mu", "gdp_mu^2")
_INDEX = {name: index for index, name in enumerate(_NAMES)}
_WIDTH = len(_NAMES) + len(RENYI_ORDERS)


def _scaled(value: float) -> int:
    """A finite non-negative binary64 number as an integer in units of 2^-1074."""
    numerator, denominator = value.as_integer_ratio()
    return numerator << (_SCALE + 1 - denominator.bit_length())


def _upper(total: int) -> float:
    """The smallest binary64 number >= total * 2^-1074 (inf past the largest)."""
    try:
        value = total / _ONE                # integer true division: correctly rounded
    except OverflowError:
        return math.inf
    if _scaled(value) < total:
        value = math.nextafter(value, math.inf)
    return value


@functools.lru_cache(maxsize=1024)
def _contribution(guarantee) -> tuple:
    """What one guarantee adds: (column index, is infinite, scaled value) of each
    positive value (guarantees are immutable and hashable: computed once)."""
    mu = guarantee.gdp_mu
    values = (guarantee.epsilon, guarantee.delta, guarantee.rho, guarantee.xi, mu, mu * mu,
              *guarantee.renyi)
    return tuple((index, value == math.inf, 0 if value == math.inf else _scaled(value))
                 for index, value in enumerate(values) if value > 0)


class RunningTable(Table):
    """The aggregates of a sequence of release guarantees (see the module docstring).

    Immutable: :meth:`plus` returns a new table. ``items`` is a list the table
    reads its first ``count`` entries of (shared, only ever appended to), plus
    ``extra`` entries of its own."""

    def __init__(self, items: list | None = None, count: int | None = None, *, _state=None):
        items = [] if items is None else items
        self._list, self._count, self._extra = items, 0, ()
        self._sums = [0] * _WIDTH
        self._infinite = [0] * _WIDTH
        self._positive = [0] * _WIDTH
        self._full = None
        if _state is not None:
            self._count, self._extra, sums, infinite, positive = _state
            self._sums, self._infinite, self._positive = list(sums), list(infinite), list(positive)
        else:
            self._count = len(items) if count is None else count
            for guarantee in items[:self._count]:
                self._add(guarantee)

    def _add(self, guarantee) -> None:
        sums, infinite, positive = self._sums, self._infinite, self._positive
        for index, is_infinite, scaled in _contribution(guarantee):
            positive[index] += 1
            if is_infinite:
                infinite[index] += 1
            else:
                sums[index] += scaled

    def _copy(self, count: int, extra: tuple) -> "RunningTable":
        return RunningTable(self._list, _state=(count, extra, self._sums, self._infinite,
                                                self._positive))

    def plus(self, guarantee) -> "RunningTable":
        """This history and one more release (not added to the shared list)."""
        table = self._copy(self._count, self._extra + (guarantee,))
        table._add(guarantee)
        return table

    def advanced(self, items: list, count: int) -> "RunningTable":
        """This table (of ``items[:self.size]``, no extra entries) extended to
        ``items[:count]``: the shared list grew by the releases recorded since."""
        if self._extra or items is not self._list or count < self._count:
            raise ValueError("a running table advances along its own list only")
        table = self._copy(count, ())
        for guarantee in items[self._count:count]:
            table._add(guarantee)
        return table

    # ---- Table's interface --------------------------------------------------------
    @property
    def size(self) -> int:
        return self._count + len(self._extra)

    def _table(self) -> Table:
        if self._full is None:
            self._full = Table(self._list[:self._count] + list(self._extra))
        return self._full

    def column(self, name: str):
        return self._table().column(name)

    def renyi(self, order_index: int):
        return self._table().renyi(order_index)

    def _total(self, index: int) -> float:
        if self.size == 0:
            return 0.0
        if self._infinite[index]:
            return math.inf
        return _upper(self._sums[index])

    def total(self, name: str) -> float:
        return self._total(_INDEX[name])

    def renyi_total(self, order_index: int) -> float:
        return self._total(len(_NAMES) + order_index)

    def square_total(self, name: str) -> float:
        if name != "gdp_mu":
            return super().square_total(name)
        return self._total(_INDEX["gdp_mu^2"])

    def nonfinite(self, name: str) -> int:
        return self._infinite[_INDEX[name]]

    def positive(self, name: str) -> int:
        return self._positive[_INDEX[name]]


class DatasetTables:
    """One dataset's verified history as running tables: all of it, and per
    analyst (immutable; :func:`tables_for` makes the next one)."""

    def __init__(self, items: list, count: int, chain: str, table: RunningTable,
                 analysts: dict, analyst_items: dict, odometer_level: int = 0):
        self.items, self.count, self.chain = items, count, chain
        #: a privacy odometer's grid level known to refuse a prefix (a search start)
        self.odometer_level = odometer_level
        self.table = table
        self.analysts = analysts                # analyst -> RunningTable
        self._analyst_items = analyst_items     # analyst -> shared list

    def analyst(self, name: str) -> RunningTable:
        table = self.analysts.get(name)
        return RunningTable([]) if table is None else table


def tables_for(cached: DatasetTables | None, items: list, analysts: list, count: int,
               chain: str) -> DatasetTables:
    """The tables of ``items[:count]`` (``analysts[i]``: who asked release i),
    whose chain head is ``chain``: ``cached`` itself when it is that history,
    ``cached`` advanced by the releases verified since (O(new)), else rebuilt."""
    if cached is not None and cached.items is items and cached.count <= count:
        if cached.count == count:
            if cached.chain == chain:
                return cached
        else:
            table = cached.table.advanced(items, count)
            tables, lists = dict(cached.analysts), cached._analyst_items
            for index in range(cached.count, count):
                who = analysts[index]
                if who is None:
                    continue
                shared = lists.setdefault(who, [])
                base = tables.get(who)
                if base is None or base._list is not shared:
                    base = RunningTable(shared)
                shared.append(items[index])
                tables[who] = base.advanced(shared, len(shared))
            return DatasetTables(items, count, chain, table, tables, lists,
                                 cached.odometer_level)
    lists: dict = {}
    for index in range(count):
        if analysts[index] is not None:
            lists.setdefault(analysts[index], []).append(items[index])
    return DatasetTables(items, count, chain, RunningTable(items, count),
                         {who: RunningTable(shared) for who, shared in lists.items()}, lists)

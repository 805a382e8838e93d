"""The data path of ``privloss running``: bounded per-period totals in DuckDB.

Definition
----------
Input rows (unit u, time t[, value v]) are projected through DuckDB's
relational API to the fixed names ``u``, ``t``, ``v`` (the caller's column
names never enter SQL text); the generated SQL holds only those names and
validated numbers and dates.  Then:

1. rows whose unit or time is null, or whose time does not parse
   (``TRY_CAST`` to TIMESTAMP), or (for a sum) whose value does not parse as a
   number, are dropped; so are rows outside [start, end of the last period);
2. the period index: days, weeks (7-day blocks from ``start``) or calendar
   months since ``start`` (a first of the month for months);
3. bounding, per unit:

   * ``count``: each unit keeps its earliest ``max_periods`` periods and
     contributes min(rows, ``max_rows``) to each;
   * ``sum``: each row's value is clamped to [LOW, HIGH] and rounded to an
     integer (LOW, HIGH integers), summed per unit and period, and that sum
     clamped to [min(0, max_rows LOW), max(0, max_rows HIGH)] (what
     ``max_rows`` rows can give); earliest ``max_periods`` periods;
   * ``count-distinct``: each unit counts once, in the first period it
     appears in (its first appearance in the window): the running total is
     the number of distinct units seen so far;

4. the total of each period.

Keeping the *earliest* periods makes the bounding stable under appending
(later data never changes which earlier periods a unit contributes to).

Privacy guarantee
-----------------
Adding or removing one unit changes at most ``max_periods`` period totals
(1 for count-distinct), each by at most ``max_rows`` (count),
``max_rows * max(|LOW|, |HIGH|)`` (sum) or 1 (count-distinct): the
sensitivity :func:`privloss.releases.running.running_bounds` is given.  Every
choice above depends only on the unit's own rows and public parameters.

Runtime
-------
One scan, hash aggregations by (unit, period), by unit (the cut-off
period) and by period, and one hash join of the (unit, period) cells with the
cut-offs; only the per-period totals (at most the number of periods) are
fetched.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

__all__ = ["RunningQuery", "period_count", "period_starts", "running_totals_sql",
           "bounded_period_totals"]

PERIODS = ("day", "week", "month")
STATISTICS = ("count", "count-distinct", "sum")
#: the most one unit may add to one period total (keeps every total in int64)
MAX_PER_PERIOD = 10 ** 12


@dataclass(frozen=True)
class RunningQuery:
    """Validated public parameters of the data path."""

    period: str
    start: dt.date
    periods: int
    statistic: str
    max_periods: int
    max_rows: int
    low: int = 0
    high: int = 0

    def __post_init__(self):
        if self.period not in PERIODS:
            raise ValueError(f"period must be one of {', '.join(PERIODS)}, got {self.period!r}")
        if self.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, "
                             f"got {self.statistic!r}")
        if not isinstance(self.start, dt.date) or isinstance(self.start, dt.datetime):
            raise TypeError(f"start must be a datetime.date, got {self.start!r}")
        if self.period == "month" and self.start.day != 1:
            raise ValueError(f"start must be the first day of a month for period month, "
                             f"got {self.start.isoformat()}")
        for name in ("periods", "max_periods", "max_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 10 ** 15:
                raise ValueError(f"{name} must be an integer in [-10^15, 10^15], got {value!r}")
        if self.low > self.high:
            raise ValueError(f"low must be <= high, got low={self.low}, high={self.high}")
        if self.max_rows * max(abs(self.low), abs(self.high)) > MAX_PER_PERIOD:
            raise ValueError(f"max_rows * max(|low|, |high|) must be at most {MAX_PER_PERIOD} "
                             f"(what one unit may add to one period), got "
                             f"{self.max_rows * max(abs(self.low), abs(self.high))}")

    @property
    def per_period(self) -> int:
        """Largest change of one period total by one unit."""
        if self.statistic == "count-distinct":
            return 1
        if self.statistic == "count":
            return self.max_rows
        return max(1, self.max_rows * max(abs(self.low), abs(self.high)))

    @property
    def unit_periods(self) -> int:
        """Most period totals one unit changes."""
        return 1 if self.statistic == "count-distinct" else min(self.max_periods, self.periods)

    @property
    def nondecreasing(self) -> bool:
        return self.statistic != "sum" or self.low >= 0

    @property
    def end(self) -> dt.date:
        """The first day after the last period (exclusive end)."""
        return period_starts(self.period, self.start, self.periods + 1)[-1]


def _add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def period_starts(period: str, start: dt.date, count: int) -> list:
    """The first day of each of ``count`` periods from ``start``."""
    if period == "day":
        return [start + dt.timedelta(days=i) for i in range(count)]
    if period == "week":
        return [start + dt.timedelta(days=7 * i) for i in range(count)]
    return [_add_months(start, i) for i in range(count)]


def period_count(period: str, start: dt.date, end: dt.date) -> int:
    """Number of periods from ``start`` up to the one holding ``end`` (inclusive)."""
    if end < start:
        raise ValueError(f"end must not be before start ({start.isoformat()}), "
                         f"got {end.isoformat()}")
    if period == "day":
        return (end - start).days + 1
    if period == "week":
        return (end - start).days // 7 + 1
    return (end.year - start.year) * 12 + end.month - start.month + 1


def _index_sql(period: str, start: str) -> str:
    if period == "day":
        return f"date_diff('day', DATE '{start}', CAST(ts AS DATE))"
    if period == "week":
        return f"date_diff('day', DATE '{start}', CAST(ts AS DATE)) // 7"
    return f"date_diff('month', DATE '{start}', CAST(ts AS DATE))"


def running_totals_sql(source: str, query: RunningQuery) -> str:
    """The SQL over relation ``source`` with columns u, t[, v] (module docstring)."""
    start, end = query.start.isoformat(), query.end.isoformat()
    value = query.statistic == "sum"
    rows = (f"SELECT u, TRY_CAST(t AS TIMESTAMP) AS ts"
            + (", TRY_CAST(v AS DOUBLE) AS v" if value else "")
            + f" FROM {source} WHERE u IS NOT NULL AND t IS NOT NULL")
    inside = (f"SELECT u, CAST({_index_sql(query.period, start)} AS BIGINT) AS p"
              + (f", CAST(round(least(greatest(v, {query.low}), {query.high})) AS BIGINT) AS v"
                 if value else "")
              + f" FROM rows WHERE ts >= TIMESTAMP '{start}' AND ts < TIMESTAMP '{end}'"
              + (" AND v IS NOT NULL AND NOT isnan(v)" if value else ""))
    ctes = [f"rows AS ({rows})", f"inside AS ({inside})"]
    if query.statistic == "count-distinct":
        ctes.append("firsts AS (SELECT u, min(p) AS p FROM inside GROUP BY u)")
        final = "SELECT p, count(*) AS total FROM firsts GROUP BY p"
    else:
        if value:
            low = min(0, query.max_rows * query.low)
            high = max(0, query.max_rows * query.high)
            contribution = f"least(greatest(sum(v), {low}), {high})"
        else:
            contribution = f"least(count(*), {query.max_rows})"
        ctes.append(f"cells AS (SELECT u, p, CAST({contribution} AS BIGINT) AS c "
                    f"FROM inside GROUP BY u, p)")
        if query.max_periods >= query.periods:
            # every period may count: no cutoff (DuckDB's min(p, n) also needs n < 10^6)
            final = "SELECT p, sum(c) AS total FROM cells GROUP BY p"
        else:
            # the unit's max_periods-th earliest period (max_periods < periods <=
            # MAX_PERIODS = 10^6): an aggregation and a join, which DuckDB spills under
            # the memory limit (a row_number() window over every (unit, period) cell
            # did not, at 10 million cells in 500 MB)
            ctes.append(f"cutoffs AS (SELECT u, list_max(min(p, {query.max_periods})) "
                        f"AS last FROM cells GROUP BY u)")
            ctes.append("kept AS (SELECT p, c FROM cells JOIN cutoffs USING (u) "
                        "WHERE p <= last)")
            final = "SELECT p, sum(c) AS total FROM kept GROUP BY p"
    return "WITH " + ", ".join(ctes) + " " + final


def check_running_schema(inp, query: RunningQuery, *, unit: str, time: str,
                         value: str | None) -> None:
    """Bind the input (no rows computed); raise ``ValueError`` naming a
    missing column: data-independent, before any charge."""
    from privloss.query.engines import duckdb_engine as engine
    from privloss.query.inputs import describe_input, resolve_input

    inp = resolve_input(inp)
    duckdb, source = engine.open_source(inp, scan=True)
    try:
        columns = list(source.relation.columns)
        for role, name in (("privacy_unit", unit), ("time_column", time),
                           ("value column", value if query.statistic == "sum" else None)):
            if name is not None and name not in columns:
                raise ValueError(f"{role} {name!r} not found in {describe_input(inp)}; "
                                 f"available columns: {columns}")
    finally:
        source.close()


def bounded_period_totals(inp, query: RunningQuery, *, unit: str, time: str,
                          value: str | None = None) -> np.ndarray:
    """The bounded total of each of ``query.periods`` periods (int64 array)."""
    from privloss.query.engines import duckdb_engine as engine
    from privloss.query.errors import computation_failed
    from privloss.query.inputs import describe_input, resolve_input

    inp = resolve_input(inp)
    duckdb, source = engine.open_source(inp)
    try:
        expressions = [duckdb.ColumnExpression(unit).alias("u"),
                       duckdb.ColumnExpression(time).alias("t")]
        if query.statistic == "sum":
            expressions.append(duckdb.ColumnExpression(value).alias("v"))
        projected = source.relation.select(*expressions)
        sql = running_totals_sql("privloss_source", query)
        try:
            rows = projected.query("privloss_source", sql).fetchall()
        except duckdb.Error as error:
            raise computation_failed(error, f"duckdb, {describe_input(inp)}") from None
    finally:
        source.close()
    totals = np.zeros(query.periods, dtype=np.int64)
    for period, total in rows:
        if 0 <= period < query.periods:      # the window filter makes this always true
            totals[int(period)] = int(total)
    return totals

"""``privloss.running(...)``: running totals of a data file, charged to a ledger.

>>> import privloss                                                      # doctest: +SKIP
>>> result = privloss.running("orders.csv.gz", privacy_unit="CustomerID",
...                           time_column="InvoiceDate", period="day",
...                           start="2010-12-01", end="2011-12-09", count=True,
...                           max_periods_per_unit=30, max_rows_per_period=5, epsilon=1.0)
>>> result.payload["periods"][-1]                                        # doctest: +SKIP

Definition
----------
The same protocol as the other releases (``privloss.api.protocol``), in
this order, so nothing that depends on the data happens before the charge:

1. validate every public parameter and plan the tree
   (:func:`privloss.releases.running.plan_running`): the noise and the one
   event are fixed from the parameters alone; the periods are fixed by
   ``start``, ``end`` and ``period`` (public), never by the data;
2. with a ledger: a read-only budget check (refusal: nothing is read);
3. snapshot and fingerprint the data, check the columns exist;
4. the ledger charges the event (or returns the stored answer of an
   identical query, free), then the bounded per-period totals are computed in
   DuckDB (:mod:`._running_source`) and released
   (:class:`~privloss.releases.running.RunningTotals`); a failure there ends
   with one fixed message and the charge stays.

Laplace noise spends ``epsilon`` (pure DP, ``delta`` must be 0); Gaussian
noise spends the largest rho whose zCDP event composes to (``epsilon``,
``delta``) (:func:`privloss.releases.rho_for`).

Privacy guarantee
-----------------
See :mod:`privloss.releases.running` (the tree) and
:mod:`privloss.query.running_source` (the bounding); with a ledger the
whole history fits the dataset's budget under its interaction model.
``seed`` is INSECURE (predictable noise; the release is still charged).

Runtime
-------
One read of the data (fingerprint), one DuckDB aggregation, O(periods) noise
and arithmetic, two short ledger transactions.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass

__all__ = ["running", "RunningRequest", "make_running_request", "RunningResult",
           "compute_running"]

#: failures inside the computation that become the fixed "computation failed" error
_COMPUTE_ERRORS = (ValueError, TypeError, LookupError, ArithmeticError, MemoryError, OSError,
                   RuntimeError)
#: the most periods one release may hold
MAX_PERIODS = 1_000_000


def _date(name: str, value) -> dt.date:
    if isinstance(value, dt.datetime):
        raise TypeError(f"{name} must be a date (YYYY-MM-DD), got a datetime {value!r}")
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{name} must be a date YYYY-MM-DD, got {value!r}")


def _sum_spec(text) -> tuple:
    """``COL:LOW:HIGH`` (integers LOW <= HIGH) -> (column, low, high)."""
    if not isinstance(text, str) or text.count(":") < 2:
        raise ValueError(f"sum must be COL:LOW:HIGH with integer bounds, got {text!r}")
    column, low, high = text.rsplit(":", 2)
    try:
        low_value, high_value = int(low), int(high)
    except ValueError:
        raise ValueError(f"sum bounds must be integers (values are rounded to integers), got "
                         f"LOW={low!r}, HIGH={high!r}") from None
    if not column:
        raise ValueError(f"sum must name a column before LOW:HIGH, got {text!r}")
    if low_value > high_value:
        raise ValueError(f"sum needs LOW <= HIGH, got LOW={low_value}, HIGH={high_value}")
    return column, low_value, high_value


@dataclass(frozen=True)
class RunningRequest:
    """The validated public parameters and the planned tree."""

    query: object            # _running_source.RunningQuery
    unit: str
    time: str
    value: str | None
    noise: str
    epsilon: float
    delta: float
    plan: object             # running.RunningPlan

    @property
    def events(self) -> tuple:
        return self.plan.events

    def labels(self) -> list:
        from privloss.query.running_source import period_starts
        return [day.isoformat() for day in period_starts(self.query.period, self.query.start,
                                                         self.query.periods)]

    def query_key(self, fingerprint, seed) -> dict:
        q = self.query
        return {"query": "running", "privacy_unit": self.unit, "time_column": self.time,
                "value_column": self.value, "statistic": q.statistic, "period": q.period,
                "start": q.start.isoformat(), "periods": q.periods, "low": q.low,
                "high": q.high, "max_periods_per_unit": q.max_periods,
                "max_rows_per_period": q.max_rows, "noise": self.noise,
                "epsilon": self.epsilon, "delta": self.delta, "seed": seed,
                "data": fingerprint}

    def plan_summary(self) -> dict:
        variances = self.plan.expected_variances()
        from privloss.releases._levels import Z95
        return {"statistic": self.query.statistic, "period": self.query.period,
                "start": self.query.start.isoformat(), "periods": self.query.periods,
                "first_period": self.labels()[0], "last_period": self.labels()[-1],
                "sensitivity": {"periods_per_unit": self.query.unit_periods,
                                "per_period": self.query.per_period},
                "events": [repr(event) for event in self.events],
                "ci95_half_width_first": float(Z95 * variances[0] ** 0.5),
                "ci95_half_width_last": float(Z95 * variances[-1] ** 0.5),
                "ci95_half_width_max": float(Z95 * variances.max() ** 0.5),
                **self.plan.describe()}


def make_running_request(*, privacy_unit: str, time_column: str, period: str, start, end,
                         count: bool = False, count_distinct: bool = False, sum=None,
                         max_periods_per_unit: int, max_rows_per_period: int,
                         epsilon: float, delta: float = 0.0,
                         noise: str = "laplace") -> RunningRequest:
    """Validate everything public and plan the tree (no data is touched)."""
    from privloss.query.running_source import RunningQuery, period_count
    from privloss.releases.running import plan_running

    for name, value in (("privacy_unit", privacy_unit), ("time_column", time_column)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty column name, got {value!r}")
    chosen = [name for name, on in (("count", count), ("count_distinct", count_distinct),
                                    ("sum", sum is not None)) if on]
    if len(chosen) != 1:
        raise ValueError(f"choose exactly one statistic: count, count_distinct or sum, "
                         f"got {chosen or 'none'}")
    value, low, high = (None, 0, 0) if sum is None else _sum_spec(sum)
    statistic = "sum" if sum is not None else ("count" if count else "count-distinct")
    start_day, end_day = _date("start", start), _date("end", end)
    if period not in ("day", "week", "month"):
        raise ValueError(f"period must be one of day, week, month, got {period!r}")
    if period == "month" and start_day.day != 1:
        raise ValueError(f"start must be the first day of a month for period month, "
                         f"got {start_day.isoformat()}")
    periods = period_count(period, start_day, end_day)
    if periods > MAX_PERIODS:
        raise ValueError(f"start..end must hold at most {MAX_PERIODS} periods, got {periods}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) \
            or not 1e-3 <= epsilon <= 100:
        raise ValueError(f"epsilon must be in [0.001, 100], got {epsilon!r}")
    if noise not in ("laplace", "gaussian"):
        raise ValueError(f"noise must be one of laplace, gaussian, got {noise!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    if noise == "laplace" and delta != 0:
        raise ValueError(f"delta must be 0 with Laplace noise (pure DP), got {delta!r}")
    if noise == "gaussian" and delta == 0:
        raise ValueError("delta must be in (0, 1) with Gaussian noise, got 0")
    query = RunningQuery(period, start_day, periods, statistic, max_periods_per_unit,
                         max_rows_per_period, low, high)
    if noise == "laplace":
        budget = float(epsilon)
    else:
        from privloss.releases import rho_for
        budget = rho_for(float(epsilon), float(delta))
    plan = plan_running(periods, max_periods=query.unit_periods, per_period=query.per_period,
                        noise=noise, budget=budget, nondecreasing=query.nondecreasing)
    return RunningRequest(query, privacy_unit, time_column, value, noise, float(epsilon),
                          float(delta), plan)


def running_at(request: RunningRequest, epsilon: float) -> RunningRequest:
    """The same running release planned for another ``epsilon`` (public parameters only)."""
    import dataclasses

    from privloss.releases.running import plan_running

    if request.noise == "laplace":
        budget = float(epsilon)
    else:
        from privloss.releases import rho_for
        budget = rho_for(float(epsilon), request.delta)
    query = request.query
    plan = plan_running(query.periods, max_periods=query.unit_periods,
                        per_period=query.per_period, noise=request.noise, budget=budget,
                        nondecreasing=query.nondecreasing)
    return dataclasses.replace(request, epsilon=float(epsilon), plan=plan)


@dataclass(frozen=True)
class RunningResult:
    """``payload``: the JSON object the CLI prints (``periods`` with totals
    and intervals, ``parameters``, ``events``, ``spent``); ``cached``: an
    identical stored query answered for free; ``accuracy_plan``: the plan of
    a ``target_half_width`` call (its ``to_dict()`` is the payload's
    ``accuracy``)."""

    payload: dict
    cached: bool
    accuracy_plan: object = None

    def __post_init__(self):
        if self.accuracy_plan is not None:
            self.payload["accuracy"] = self.accuracy_plan.to_dict()


def _compute(request: RunningRequest, data_input, seed):
    from privloss.query.running_source import bounded_period_totals

    source = None
    if seed is not None:
        from privloss.samplers import InsecureSeededSource
        source = InsecureSeededSource(seed)
    totals = bounded_period_totals(data_input, request.query, unit=request.unit,
                                   time=request.time, value=request.value)
    release = request.plan.release(totals, source)
    return {"periods": release.rows(request.labels()),
            "mechanism": "binary-tree",
            "parameters": {**request.plan_summary(), "nulls": "dropped",
                           "seed": "INSECURE" if seed is not None else None},
            "events": [repr(event) for event in request.events]}


def compute_running(request: RunningRequest, data_input, seed=None,
                    what: str = "running release") -> dict:
    """The payload of a planned request over a bound input (runs after the
    charge); a failure becomes the fixed ``ComputationFailed``."""
    from privloss.query.errors import ComputationFailed, computation_failed

    try:
        return _compute(request, data_input, seed)
    except ComputationFailed:
        raise
    except _COMPUTE_ERRORS as error:       # never echo a data-dependent message
        raise computation_failed(error, what) from None


def running(data, *, privacy_unit: str, time_column: str, period: str, start, end,
            count: bool = False, count_distinct: bool = False, sum=None,
            max_periods_per_unit: int, max_rows_per_period: int, epsilon=None,
            delta: float = 0.0, noise: str = "laplace", ledger=None, dataset=None,
            seed: int | None = None, label: str | None = None,
            target_half_width=None, min_release_users=None) -> RunningResult:
    """Running totals of ``data`` per ``period`` from ``start`` to ``end``
    (inclusive, public), privately; see the module docstring.  Exactly one of
    ``count``, ``count_distinct`` (units by their first period: distinct units
    so far) and ``sum="COL:LOW:HIGH"`` (integer bounds).  ``ledger`` /
    ``dataset``: charge that budget first.  Raises ``ValueError`` /
    ``TypeError`` for bad parameters before anything is read,
    ``LedgerBudgetError`` / ``LedgerPlanError`` when the ledger refuses,
    ``ComputationFailed`` after the charge.  Instead of ``epsilon``:
    ``target_half_width=W``, the smallest epsilon whose largest 95% half-width
    is at most ``W``; the result then carries the plan as ``accuracy_plan``
    (:mod:`privloss.api.accuracy_target`)."""
    if epsilon is None or target_half_width is not None or min_release_users is not None:
        from privloss.api.accuracy_target import call
        return call("running", locals())
    request = make_running_request(
        privacy_unit=privacy_unit, time_column=time_column, period=period, start=start, end=end,
        count=count, count_distinct=count_distinct, sum=sum,
        max_periods_per_unit=max_periods_per_unit, max_rows_per_period=max_rows_per_period,
        epsilon=epsilon, delta=delta, noise=noise)
    return release_running(request, data, ledger=ledger, dataset=dataset, seed=seed, label=label)


def release_running(request: RunningRequest, data, *, ledger=None, dataset=None, seed=None,
                    label=None, prepare=None) -> RunningResult:
    """Run a planned request (the protocol in the module docstring);
    ``prepare``: a callable giving a ``DataSource`` (the CLI's snapshots)."""
    from privloss.api.protocol import (check_paths, prepare_data, refusal, resolve_ledger,
                                        _own_spending, _ledger_spending)
    from privloss.query.errors import ComputationFailed, computation_failed
    from privloss.query.running_source import check_running_schema

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {label!r}")
    ledger, dataset = resolve_ledger(ledger, dataset)
    events = request.events
    if prepare is None:
        check_paths(data)
    if ledger is not None:
        probe = request.query_key({"dry-run": secrets.token_hex(8)}, seed)
        verdict = ledger.would_admit(dataset, probe, events, fresh=True)
        if not verdict["admitted"] and not _asked_before(ledger, dataset, request, seed, label):
            def admitted(epsilon: float) -> dict:
                other = running_at(request, epsilon)
                return ledger.would_admit(dataset, other.query_key({"dry-run": nonce}, seed),
                                          other.events, fresh=True)
            nonce = secrets.token_hex(8)
            raise refusal(ledger, dataset, verdict, admitted=admitted,
                          epsilon_range=(1e-3, 100.0))
    source = prepare() if prepare is not None else prepare_data(data)
    try:
        check_running_schema(source.input, request.query, unit=request.unit,
                             time=request.time, value=request.value)

        def compute() -> dict:
            try:
                return _compute(request, source.input, seed)
            except ComputationFailed:
                raise
            except _COMPUTE_ERRORS as error:       # never echo a data-dependent message
                raise computation_failed(error, "running release") from None

        if ledger is None:
            payload = compute()
            spent, guarantee = _own_spending(events, request.delta, "fully-adaptive")
            return RunningResult({**payload, "spent": spent, "guarantee": guarantee}, False)
        key = request.query_key(source.fingerprint, seed)
        if label is not None:
            key["label"] = label
        receipt = ledger.release_with_receipt(dataset, key, compute, events)
        return RunningResult({**receipt.result,
                              "spent": _ledger_spending(ledger, dataset, receipt.cached)},
                             receipt.cached)
    finally:
        source.close()


def _asked_before(ledger, dataset, request, seed, label) -> bool:
    """Whether a completed release asked this query (data aside): only then
    may a stored answer make a refused budget irrelevant."""
    from privloss.api.protocol import may_be_stored

    wanted = request.query_key(None, seed)
    if label is not None:
        wanted["label"] = label
    return may_be_stored(ledger, dataset, wanted)

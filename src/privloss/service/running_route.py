"""The service's running totals: ``POST /v1/datasets/{name}/running`` and its
dry run ``POST /v1/datasets/{name}/running/plan``.

Definition
----------
The analyst sends the public parameters of :func:`privloss.running`:
``time_column`` (a declared column), ``period`` (``day`` / ``week`` /
``month``), ``start`` and ``end`` (``YYYY-MM-DD``, inclusive, public),
``statistic`` (``count``, ``count_distinct`` or ``sum`` with ``sum_column``,
``low`` and ``high``), ``max_periods_per_unit``, ``max_rows_per_period``,
``epsilon`` (or instead ``target_half_width``: the epsilon is planned,
:mod:`privloss.service.accuracy_goals`), ``delta``, ``noise`` and ``label``.  The privacy unit and the
rows come from the configuration.  In this order, nothing charged or read
before the last step:

1. the body's types and ranges (:data:`RUNNING_LIMITS`, 422 naming the
   field): epsilon in [0.001, 100], delta in [0, 1) (0 with Laplace, > 0 with
   Gaussian), ``max_periods_per_unit`` and ``max_rows_per_period`` in
   [1, 10000], ``low`` <= ``high`` integers within +-10^12, at most
   ``periods`` (10000) periods from ``start`` to ``end``;
2. the columns must be declared for analysts (403);
3. the request is planned (:func:`privloss.api.running.make_running_request`,
   422 naming the field) and the snapshot's schema checked (a ``sum`` column
   must be numeric; 422 without the engine's text);
4. the one event is charged to the dataset's ledger with the analyst's cap
   (409 when refused; an identical earlier question by the same analyst: the
   stored answer, free), then the bounded per-period totals are computed and
   released through the binary tree.

Privacy guarantee
-----------------
That of :func:`privloss.running` (:mod:`privloss.releases.running`):
event-level for the bounded contributions of one privacy unit, one event,
charged as one release unit before the data is read, so a refusal reveals
nothing about the data.

Runtime
-------
One ledger transaction, one DuckDB aggregation over the snapshot,
O(periods) noise.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator

from privloss.service.app import ServiceError
from privloss.service.routes import (Delta, MinReleaseUsers, TargetHalfWidth, Text,
                                     call_ledger, current_analyst, granted_dataset,
                                     note_release)

__all__ = ["router", "RunningParameters", "RUNNING_LIMITS", "checked_running", "plan_running",
           "run_running", "running_parameters"]

router = APIRouter(prefix="/v1")

#: documented ranges (docs/service.md), checked before anything is charged or read
RUNNING_LIMITS = {"epsilon": (1e-3, 100.0), "max_periods_per_unit": (1, 10_000),
                  "max_rows_per_period": (1, 10_000), "bound": 10 ** 12, "periods": 10_000}

_Bound = Annotated[int, Field(ge=-RUNNING_LIMITS["bound"], le=RUNNING_LIMITS["bound"])]


def _ranged_int(name: str):
    low, high = RUNNING_LIMITS[name]
    return Annotated[int, Field(ge=low, le=high)]


class RunningParameters(BaseModel):
    """A running release's public parameters (module docstring); ranges:
    :data:`RUNNING_LIMITS`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    time_column: Text(200)
    period: Literal["day", "week", "month"]
    start: Text(10)
    end: Text(10)
    statistic: Literal["count", "count_distinct", "sum"]
    sum_column: Text(200) | None = None
    low: _Bound | None = None
    high: _Bound | None = None
    max_periods_per_unit: _ranged_int("max_periods_per_unit")
    max_rows_per_period: _ranged_int("max_rows_per_period")
    epsilon: Annotated[float, Field(ge=RUNNING_LIMITS["epsilon"][0],
                                    le=RUNNING_LIMITS["epsilon"][1])] | None = None
    # instead of epsilon (privloss.service.accuracy_goals; exactly one of the three)
    target_half_width: TargetHalfWidth | None = None
    min_release_users: MinReleaseUsers | None = None
    delta: Delta = 0.0
    noise: Literal["laplace", "gaussian"] = "laplace"
    label: Text(200) | None = None

    @model_validator(mode="after")
    def _sum_fields(self):
        given = [self.sum_column is not None, self.low is not None, self.high is not None]
        if self.statistic == "sum":
            if not all(given):
                raise ValueError("statistic 'sum' needs sum_column, low and high")
            if self.low > self.high:
                raise ValueError(f"low must be <= high, got low={self.low}, high={self.high}")
        elif any(given):
            raise ValueError(f"sum_column, low and high go with statistic 'sum' only, not "
                             f"{self.statistic!r}")
        return self


def _refuse(message: str, field: str | None, value=None, *, status: int = 422,
            outcome: str = "bad-parameters"):
    raise ServiceError(status, message, field=field, value=value, outcome=outcome)


#: the library's parameter names -> this endpoint's fields, in error messages
_FIELDS = {"start": "start", "end": "end", "epsilon": "epsilon", "delta": "delta",
           "noise": "noise", "period": "period", "sum": "low"}
#: DuckDB type names a sum accepts (the snapshot's column types)
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL")


def checked_running(dataset, body: dict, snapshot=None):
    """The planned :class:`~privloss.api.running.RunningRequest`, or a
    :class:`ServiceError` (403 / 422) before anything is read or charged."""
    from privloss.api.running import make_running_request

    for field in ("time_column", "sum_column"):
        column = body.get(field)
        if column is not None and column not in dataset.columns:
            shown = column if len(column) <= 64 else column[:64] + "..."
            _refuse(f"column {shown!r} ({field}) is not granted on dataset {dataset.name!r} "
                    f"(allowed: {', '.join(dataset.columns)})", field, status=403,
                    outcome="forbidden-column")
    if dataset.spark_table is not None:
        _refuse(f"running totals need a file or SQL dataset; {dataset.name!r} is a Spark "
                f"table", None)
    statistic = body["statistic"]
    try:
        request = make_running_request(epsilon=body["epsilon"],
                                       **running_parameters(dataset, body))
    except ArithmeticError:
        _refuse("the parameters are outside the range the calibration can compute (see the "
                "documented ranges)", None)
    except (ValueError, TypeError) as error:
        message = str(error)
        field = _FIELDS.get(message.split(" ", 1)[0]) if message else None
        if message.startswith("start..end"):
            field = "end"
        _refuse(message, field, body.get(field) if field in ("epsilon", "delta") else None)
    if request.query.periods > RUNNING_LIMITS["periods"]:
        _refuse(f"start..end must hold at most {RUNNING_LIMITS['periods']} periods on this "
                f"service, got {request.query.periods}", "end")
    if statistic == "sum" and snapshot is not None:
        kind = snapshot.columns.get(body["sum_column"])
        if kind is not None and not kind.upper().startswith(_NUMERIC):
            _refuse(f"column {body['sum_column']!r} of dataset {dataset.name!r} has type "
                    f"{kind}; a sum needs a numeric column", "sum_column")
    return request


def running_parameters(dataset, body: dict) -> dict:
    """:func:`~privloss.api.running.make_running_request`'s arguments but
    ``epsilon`` for a body (the privacy unit from the configuration)."""
    statistic = body["statistic"]
    return dict(privacy_unit=dataset.user_column, time_column=body["time_column"],
                period=body["period"], start=body["start"], end=body["end"],
                count=statistic == "count", count_distinct=statistic == "count_distinct",
                sum=None if statistic != "sum" else
                f"{body['sum_column']}:{body['low']}:{body['high']}",
                max_periods_per_unit=body["max_periods_per_unit"],
                max_rows_per_period=body["max_rows_per_period"],
                delta=body.get("delta", 0.0), noise=body.get("noise", "laplace"))


def _key(request, analyst, body: dict, data) -> dict:
    key = {**request.query_key(data, None), "command": "running", "analyst": analyst.name}
    if body.get("label") is not None:
        key["label"] = body["label"]
    return key


def plan_running(ledger, dataset, analyst, body: dict, snapshot=None) -> dict:
    """The dry run: the cost, the tree and its interval widths, and the
    ledger's read-only verdict for this analyst (nothing read or charged)."""
    import secrets

    from privloss.service.queries import ensure_dataset

    request = checked_running(dataset, body, snapshot)
    name = call_ledger(ensure_dataset, ledger, dataset)
    key = _key(request, analyst, body, {"dry-run": secrets.token_hex(8)})
    verdict = call_ledger(ledger.would_admit, name, key, request.events,
                          analyst=analyst.name, analyst_budget=analyst.cap(dataset), fresh=True)
    return {"dry_run": True, "command": "running", **request.plan_summary(),
            "fits": bool(verdict["admitted"]),
            "verdict": {"fits": bool(verdict["admitted"]),
                        "spent_epsilon_after": verdict["spent_epsilon"]
                        if verdict["admitted"] else None,
                        "bound": verdict["bound"], "reason": verdict["reason"] or None},
            "ledger_dataset": name}


def run_running(ledger, dataset, analyst, body: dict, snapshot=None) -> dict:
    """Check, charge once, then compute; the response body (release, receipt,
    budget).  ``snapshot``: what to read (taken before the charge)."""
    from privloss.api.running import compute_running
    from privloss.query.running_source import check_running_schema
    from privloss.serialize import event_to_json
    from privloss.service.queries import (analyst_view, data_input, ensure_dataset,
                                          fingerprint, receipt_view)

    request = checked_running(dataset, body, snapshot)
    name = call_ledger(ensure_dataset, ledger, dataset)
    source = data_input(dataset, snapshot)
    try:
        check_running_schema(source, request.query, unit=request.unit, time=request.time,
                             value=request.value)
    except (ValueError, TypeError):        # the engine's text names the snapshot: not echoed
        _refuse(f"the columns of this request cannot be read on dataset {dataset.name!r}",
                "time_column")
    events = request.events

    def compute() -> dict:
        """Everything that reads the data; runs only after the charge."""
        return compute_running(request, source, None, what="service running release")

    key = _key(request, analyst, body, fingerprint(dataset, snapshot))
    receipt = call_ledger(_charged, ledger, name, key, compute, request, analyst,
                          analyst.cap(dataset))
    return {**dict(receipt.result),
            "event_objects": [event_to_json(event) for event in events],
            "receipt": receipt_view(receipt, dataset, name),
            "budget": call_ledger(analyst_view, ledger, name, analyst.name,
                                  analyst.cap(dataset))}


def _charged(ledger, name, key, compute, request, analyst, cap):
    """The ledger's charge; a budget refusal says first what epsilon still fits
    (the same request at other epsilons: public parameters only)."""
    from privloss.api.running import running_at
    from privloss.budget import LedgerBudgetError
    from privloss.service.queries import refusal_saying_what_fits

    try:
        return ledger.release_with_receipt(name, key, compute, request.events,
                                           analyst=analyst.name, analyst_budget=cap)
    except LedgerBudgetError as error:
        raise refusal_saying_what_fits(
            ledger, name, analyst, cap, request.events,
            lambda epsilon: running_at(request, epsilon).events, error,
            epsilon_range=RUNNING_LIMITS["epsilon"]) from None


@router.post("/datasets/{name}/running/plan",
             summary="dry run of running totals: cost, interval widths, fits or not")
def running_plan(name: str, body: RunningParameters, request: Request,
                 analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = body.model_dump(exclude_none=True)
    request.state.audit["parameters"] = {"command": "running-plan", **parameters}
    from privloss.service.accuracy_goals import answered, planned
    snapshot = state.snapshots.latest(dataset)
    parameters, plan = planned("running", dataset, parameters, snapshot,  # a goal's epsilon
                               audit=request.state.audit)
    result = answered(plan, plan_running, state.ledger, dataset, analyst, parameters,
                      snapshot=snapshot)
    request.state.outcome = "planned" if result["fits"] else "planned-refused"
    return result


@router.post("/datasets/{name}/running",
             summary="private running totals per day, week or month, charged")
def running_release(name: str, body: RunningParameters, request: Request,
                    analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = body.model_dump(exclude_none=True)
    request.state.audit["parameters"] = {"command": "running", **parameters}
    from privloss.service.accuracy_goals import answered, planned
    snapshot = state.snapshots.current(dataset)
    parameters, plan = planned("running", dataset, parameters, snapshot,  # a goal's epsilon
                               audit=request.state.audit)
    result = answered(plan, run_running, state.ledger, dataset, analyst, parameters,
                      snapshot=snapshot)
    note_release(request, result)
    return result

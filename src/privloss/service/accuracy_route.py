"""Plan for an accuracy over HTTP: ``POST /v1/datasets/{name}/accuracy``.

Definition
----------
The analyst sends a release's public parameters without ``epsilon`` and one
goal; ``command`` says which release:

* ``topk`` (default) or ``histogram``: the body of ``/plan`` (``column``,
  ``k``, ``l0``, ...);
* ``sql``: the body of ``/sql/plan`` (``query``, ``bounds``, ``max_groups``,
  ..., ``GROUP BY ROLLUP`` included);
* ``running``: the body of ``/running/plan``.

The goals:

* ``target_half_width`` W in (0, 10^12]: the smallest epsilon whose 95%
  half-width of every measurement is at most W (for a group-by also the
  ``budget_split`` under which all measurements reach W together);
* ``min_release_users`` N in [1, 10^9] (thresholded releases: top-k or a
  histogram without a domain, a group-by without keys): the epsilons at
  which a group of N distinct users is released with probability 1/2 and 95%
  (the answer's ``epsilon`` is the 95% one).

The answer is :meth:`privloss.api.accuracy_plan.AccuracyPlan.to_dict`: the
planned ``epsilon``, the half-widths, the threshold, the plan in words
(``text``) and ``charged: false``.  The same goal can also be sent instead of
``epsilon`` to the release and dry-run routes themselves
(:mod:`privloss.service.accuracy_goals`), which plan, then check the budget
or release at that epsilon.

Privacy guarantee
-----------------
Nothing is read or charged: the plan is a function of public parameters
only (the same for every dataset), so it is free.  Bad parameters get a
422 problem+json naming the field; a column not granted, 403.

Citation
--------
Issue 22 ("Answers, not noise"); :func:`privloss.api.accuracy_plan.plan_accuracy`.

Runtime
-------
A few calibrations (a second or so); run in the thread pool.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from privloss.query.sql import EXAMPLE_QUERY
from privloss.service.app import ServiceError
from privloss.service.routes import (GOAL_LIMITS, LIMITS, Delta, MinReleaseUsers,
                                     TargetHalfWidth, Text, current_analyst, granted_dataset)

__all__ = ["router", "AccuracyParameters", "ACCURACY_LIMITS", "COMMANDS"]

router = APIRouter(prefix="/v1")

#: documented ranges of the goals (docs/service.md), checked before any work
ACCURACY_LIMITS = GOAL_LIMITS
#: the release kinds ``command`` may name
COMMANDS = ("topk", "histogram", "sql", "running")


def _bounded_int(name: str):
    low, high = LIMITS[name]
    return Annotated[int, Field(ge=low, le=high)]


class AccuracyParameters(BaseModel):
    """A top-k's or histogram's public parameters without epsilon, and one goal."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    command: Literal["topk", "histogram"] = "topk"
    column: Text(200)
    delta: Delta = 0.0
    k: _bounded_int("k") | None = None
    l0: _bounded_int("l0") | None = None
    linf: _bounded_int("linf") = 1
    d_bar: _bounded_int("d_bar") | None = None
    domain: list[Text(200)] | None = Field(default=None, min_length=1,
                                           max_length=LIMITS["domain"][1])
    algorithm: Text(40) | None = None
    noise: Text(40) | None = None
    target_half_width: TargetHalfWidth | None = None
    min_release_users: MinReleaseUsers | None = None

    @model_validator(mode="after")
    def one_goal(self):
        if (self.target_half_width is None) == (self.min_release_users is None):
            raise ValueError("give exactly one of target_half_width and min_release_users")
        return self


def _checked_body(body: dict) -> tuple:
    """(command, the body checked by its release's model), or the usual 422."""
    from privloss.service.running_route import RunningParameters
    from privloss.service.sql_route import SqlParameters

    body = dict(body)
    command = body.pop("command", "topk")
    if command not in COMMANDS:
        raise ServiceError(422, f"command must be one of {', '.join(COMMANDS)}, got "
                                f"{str(command)[:64]!r}", field="command",
                           outcome="bad-parameters")
    model = {"sql": SqlParameters, "running": RunningParameters}.get(command)
    try:
        if model is None:
            return command, AccuracyParameters.model_validate(
                {"command": command, **body}).model_dump(exclude_none=True)
        return command, model.model_validate(body).model_dump(exclude_none=True)
    except ValidationError as error:      # answered as every other body's (app.py)
        raise RequestValidationError(error.errors()) from None


def _plan(command: str, dataset, body: dict, snapshot) -> dict:
    from privloss.service.accuracy_goals import plan_for

    body.pop("command", None)
    return plan_for(command, dataset, body, snapshot)


#: what /openapi.json says of the body: its shape depends on ``command``
_BODY = ("`command` (topk, the default; histogram; sql; running) and that release's "
         "dry-run body without `epsilon` (AccuracyParameters for topk and histogram, "
         "SqlParameters for sql, RunningParameters for running) and exactly one goal: "
         "`target_half_width` in (0, 1e12] or `min_release_users` in [1, 1e9].")
_EXAMPLES = {
    "topk": {"summary": "a top-10 whose smallest released group has about 500 users",
             "value": {"command": "topk", "column": "country", "k": 10, "l0": 1,
                       "min_release_users": 500}},
    "histogram": {"summary": "a histogram over a public domain, counts within +-50",
                  "value": {"command": "histogram", "column": "country",
                            "domain": ["US", "IN", "BR"], "target_half_width": 50}},
    "sql": {"summary": "a DP group-by, every count within +-25",
            "value": {"command": "sql", "query": EXAMPLE_QUERY, "target_half_width": 25}},
    "running": {"summary": "daily running counts, each total within +-100",
                "value": {"command": "running", "time_column": "day", "period": "day",
                          "start": "2026-01-01", "end": "2026-03-31",
                          "statistic": "count", "max_periods_per_unit": 30,
                          "max_rows_per_period": 1, "target_half_width": 100}},
}


@router.post("/datasets/{name}/accuracy",
             summary="plan for an accuracy: the smallest epsilon meeting a target (free)")
async def accuracy(name: str, request: Request,
                   body: dict = Body(..., description=_BODY, openapi_examples=_EXAMPLES),
                   analyst=Depends(current_analyst)):
    from starlette.concurrency import run_in_threadpool

    dataset = granted_dataset(request, analyst, name)
    command, parameters = _checked_body(body)
    request.state.audit["parameters"] = {"command": command, **parameters}
    snapshot = request.app.state.service.snapshots.latest(dataset)
    result = await run_in_threadpool(_plan, command, dataset, parameters, snapshot)
    request.state.outcome = "accuracy-planned"
    return JSONResponse(result)

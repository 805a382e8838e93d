"""Plan for an accuracy over HTTP: ``POST /v1/datasets/{name}/accuracy``.

Definition
----------
The analyst sends a top-k's or histogram's public parameters (those of
``/plan`` without ``epsilon``) and one goal:

* ``target_half_width`` W in (0, 10^12]: the smallest epsilon whose 95%
  half-width of every released count is at most W;
* ``min_release_users`` N in [1, 10^9]: the epsilons at which a group of N
  distinct users is released with probability 1/2 and 95% (the answer's
  ``epsilon`` is the 95% one).

The answer is :meth:`privloss.api.accuracy_plan.AccuracyPlan.to_dict`: the
planned ``epsilon``, the half-widths, the threshold, the plan in words
(``text``) and ``charged: false``.  Then ``/plan`` says whether that epsilon
fits the budgets, and ``/topk`` or ``/histogram`` releases at it.

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

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from privloss.service.app import ServiceError
from privloss.service.routes import (LIMITS, Delta, Text, current_analyst,
                                     granted_dataset)

__all__ = ["router", "AccuracyParameters", "ACCURACY_LIMITS"]

router = APIRouter(prefix="/v1")

#: documented ranges of the goals (docs/service.md), checked before any work
ACCURACY_LIMITS = {"target_half_width": (0.0, 1e12), "min_release_users": (1, 10 ** 9)}


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
    target_half_width: Annotated[float, Field(gt=ACCURACY_LIMITS["target_half_width"][0],
                                              le=ACCURACY_LIMITS["target_half_width"][1])] \
        | None = None
    min_release_users: Annotated[int, Field(ge=ACCURACY_LIMITS["min_release_users"][0],
                                            le=ACCURACY_LIMITS["min_release_users"][1])] \
        | None = None

    @model_validator(mode="after")
    def one_goal(self):
        if (self.target_half_width is None) == (self.min_release_users is None):
            raise ValueError("give exactly one of target_half_width and min_release_users")
        return self


def _plan(dataset, body: dict) -> dict:
    from privloss.api.accuracy_plan import plan_accuracy
    from privloss.service.queries import ColumnNotGranted, build_request

    command = body.pop("command")
    goal = {name: body.pop(name) for name in ("target_half_width", "min_release_users")
            if name in body}
    try:
        # epsilon 1 only checks the other parameters; the plan searches its own
        request = build_request(command, {**body, "epsilon": 1.0}, dataset,
                                dataset.interaction)
        plan = plan_accuracy(command, request=request, curve=False, **goal)
    except ColumnNotGranted as error:
        raise ServiceError(403, str(error)) from None
    except (ValueError, ArithmeticError) as error:
        raise ServiceError(422, str(error).splitlines()[0]) from None
    return plan.to_dict()


@router.post("/datasets/{name}/accuracy",
             summary="plan for an accuracy: the smallest epsilon meeting a target (free)")
async def accuracy(name: str, body: AccuracyParameters, request: Request,
                   analyst=Depends(current_analyst)):
    from starlette.concurrency import run_in_threadpool

    dataset = granted_dataset(request, analyst, name)
    parameters = body.model_dump(exclude_none=True)
    request.state.audit["parameters"] = dict(parameters)
    result = await run_in_threadpool(_plan, dataset, parameters)
    request.state.outcome = "accuracy-planned"
    return JSONResponse(result)

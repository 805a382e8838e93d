"""The JSON API under ``/v1`` (see :mod:`privloss.service.app` for errors).

Definition
----------
* ``GET /v1/datasets``: the datasets granted to me, their columns, the
  dataset's and my remaining budget;
* ``GET /v1/datasets/{name}/budget``: the same for one dataset;
* ``GET /v1/datasets/{name}/history``: my releases (never another analyst's),
  with their receipts and stored answers;
* ``POST /v1/datasets/{name}/plan``: dry run (``command`` ``topk`` or
  ``histogram`` and the release's parameters);
* ``POST /v1/datasets/{name}/topk`` and ``.../histogram``: a release, answered
  with ``items`` (``item``, ``count``, ``ci95``), ``algorithm``,
  ``parameters``, ``events``, a ``receipt`` and my ``budget`` afterwards;
* ``POST /v1/datasets/{name}/sql`` and ``.../sql/plan``: a DP group-by written
  as SQL (:mod:`privloss.service.sql_route`).

Parameters (JSON body): ``column`` (one of the dataset's declared columns),
``epsilon``, ``delta``, ``k``, ``l0``, ``linf``, ``d_bar``, ``domain`` (the
public list of items), ``algorithm`` (top-k) or ``noise`` (histogram),
``label`` (a name for the question: same parameters and label, the stored
answer for free).  Instead of ``epsilon``: ``target_half_width`` or
``min_release_users`` (the epsilon is planned from the public parameters,
:mod:`privloss.service.accuracy_goals`; the answer's ``accuracy`` says it).  No SQL, no table name, no privacy-unit column: the service
builds the query from its configuration.

Privacy guarantee
-----------------
Releases are charged before the data is read (:mod:`privloss.service.queries`).

Runtime
-------
As :mod:`privloss.service.queries`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from privloss.api.request import EPSILON_RANGE, MAX_TOPK_K
from privloss.service.app import LOGGER, ServiceError

__all__ = ["router", "QueryParameters", "PlanParameters", "current_analyst", "call_ledger",
           "note_release", "dataset_entry", "analyst_history", "Text", "Epsilon", "Delta",
           "LIMITS", "GOAL_LIMITS", "TargetHalfWidth", "MinReleaseUsers"]

router = APIRouter(prefix="/v1")

#: the documented range of every numeric parameter (docs/service.md, "Parameters");
#: checked before anything is charged or read
LIMITS = {"epsilon": EPSILON_RANGE, "k": (1, MAX_TOPK_K), "l0": (1, 10_000),
          "linf": (1, 10_000), "d_bar": (1, 100_000), "domain": (1, 10_000)}


def _unicode(text: str) -> str:
    """Refuse text that is not valid Unicode (a lone surrogate such as \\ud800
    decodes from JSON but cannot be stored, logged or compared as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogate code points)") \
            from None
    return text


def Text(max_length: int, min_length: int = 1):
    """A string type: ``min_length`` to ``max_length`` characters of valid Unicode."""
    return Annotated[str, StringConstraints(min_length=min_length, max_length=max_length),
                     AfterValidator(_unicode)]


def _bounded_int(name: str):
    low, high = LIMITS[name]
    return Annotated[int, Field(ge=low, le=high)]


Epsilon = Annotated[float, Field(ge=LIMITS["epsilon"][0], le=LIMITS["epsilon"][1])]
#: documented ranges of the goals that may replace epsilon (docs/service.md;
#: privloss.service.accuracy_goals)
GOAL_LIMITS = {"target_half_width": (0.0, 1e12), "min_release_users": (1, 10 ** 9)}
TargetHalfWidth = Annotated[float, Field(gt=GOAL_LIMITS["target_half_width"][0],
                                         le=GOAL_LIMITS["target_half_width"][1])]
MinReleaseUsers = Annotated[int, Field(ge=GOAL_LIMITS["min_release_users"][0],
                                       le=GOAL_LIMITS["min_release_users"][1])]
Delta = Annotated[float, Field(ge=0.0, lt=1.0)]
Label = Text(200)


class QueryParameters(BaseModel):
    """A release's public parameters (see the module docstring); every range
    is :data:`LIMITS`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    column: Text(200)
    epsilon: Epsilon | None = None
    # instead of epsilon (privloss.service.accuracy_goals; exactly one of the three)
    target_half_width: TargetHalfWidth | None = None
    min_release_users: MinReleaseUsers | None = None
    delta: Delta = 0.0
    k: _bounded_int("k") | None = None
    l0: _bounded_int("l0") | None = None
    linf: _bounded_int("linf") = 1
    d_bar: _bounded_int("d_bar") | None = None
    domain: list[Label] | None = Field(default=None, min_length=1,
                                       max_length=LIMITS["domain"][1])
    algorithm: Text(40) | None = None
    noise: Text(40) | None = None
    label: Label | None = None


class PlanParameters(QueryParameters):
    command: Literal["topk", "histogram"] = "topk"


def _token_of(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None
    return None


def client_of(request: Request) -> str:
    """The client's address (behind trusted proxies:
    :func:`privloss.service.web.client_address`)."""
    address = getattr(request.state, "client_address", None)
    if address is None:
        address = request.client.host if request.client else "?"
    return address


def sign_in(state, token, client: str):
    """The analyst (config entry) holding ``token``, or ServiceError 401 / 429.

    A valid token is never refused because of failures by others: failed
    attempts are counted per client address, and an address past its limit is
    refused (429) only for tokens that fail; a token whose id was never issued
    is then refused without the argon2 work (no valid token has such an id)."""
    locked = not state.failures.available(client)
    name = None
    if token and (not locked or state.tokens.known_id(token)
                  or state.tokens.remembered(token)):
        name = state.tokens.verify(token)
    analyst = state.config.analysts.get(name) if name is not None else None
    if analyst is not None:
        return analyst
    state.failures.allow(client)
    if locked:
        raise ServiceError(429, "too many failed sign-ins from this address; slow down",
                           outcome="rate-limited-auth",
                           headers={"Retry-After": str(state.failures.retry_after())})
    raise ServiceError(401, "missing or invalid token (send 'Authorization: Bearer <token>')",
                       outcome="unauthorized", headers={"WWW-Authenticate": "Bearer"})


def rate_limited(state, analyst) -> None:
    """429 past the analyst's own request rate."""
    if not state.limiter.allow(analyst.name):
        raise ServiceError(429, f"rate limit: at most {state.config.rate:g} requests per "
                                f"second (burst {state.config.burst})",
                           outcome="rate-limited",
                           headers={"Retry-After": str(state.limiter.retry_after())})


def authenticate(request: Request):
    """The analyst holding the request's bearer token; 401 / 429."""
    state = request.app.state.service
    analyst = sign_in(state, _token_of(request), client_of(request))
    request.state.audit = {"analyst": analyst.name}
    rate_limited(state, analyst)
    return analyst


async def current_analyst(request: Request):
    """A known token is checked in the event loop (no thread hand-off per
    request); a token not seen before costs an argon2 verification, which runs
    in the thread pool so that it never blocks other requests."""
    from starlette.concurrency import run_in_threadpool

    token = _token_of(request)
    if token and request.app.state.service.tokens.remembered(token):
        return authenticate(request)
    return await run_in_threadpool(authenticate, request)


def granted_dataset(request: Request, analyst, name: str):
    """The dataset config if ``analyst`` may query it; 403 otherwise (also for
    unknown names, so they do not leak)."""
    request.state.audit["dataset"] = name[:200]
    dataset = request.app.state.service.config.datasets.get(name)
    if dataset is None or name not in analyst.datasets:
        raise ServiceError(403, f"dataset {name[:64]!r} is not granted to analyst "
                                f"{analyst.name!r}", outcome="forbidden-dataset")
    return dataset


def call_ledger(function, *args, **kwargs):
    """Run a ledger / release call, mapping its errors to HTTP statuses."""
    from privloss.query.errors import ComputationFailed
    from privloss.budget import (LedgerBudgetError, LedgerError,
                                           LedgerIntegrityError, LedgerPlanError)
    from privloss.service.queries import ColumnNotGranted

    try:
        return function(*args, **kwargs)
    except ColumnNotGranted as error:
        raise ServiceError(403, str(error), field="column", outcome="forbidden-column") from None
    except LedgerBudgetError as error:
        raise ServiceError(409, str(error), outcome="refused-budget") from None
    except LedgerPlanError as error:
        raise ServiceError(409, str(error), outcome="refused-plan") from None
    except LedgerIntegrityError as error:
        LOGGER.error("ledger integrity check failed: %s", error)      # for the operator
        raise ServiceError(503, "the budget ledger failed its integrity check; the operator "
                                "must run 'privloss ledger verify' (nothing was charged or "
                                "read)", outcome="ledger-integrity") from None
    except LedgerError as error:
        LOGGER.error("ledger unavailable: %s", error)
        raise ServiceError(503, "the budget ledger is unavailable; try again later",
                           outcome="ledger-unavailable") from None
    except ComputationFailed as error:
        raise ServiceError(503, f"the engine failed after the charge (an engine fault: the "
                                f"data was read at start-up; error id {error.error_id} in the "
                                f"operator's log); the release stays charged",
                           outcome="computation-failed") from None
    except ArithmeticError:        # parameters whose calibration over- or underflows
        raise ServiceError(422, "the parameters are outside the range the calibration can "
                                "compute (see the documented ranges)",
                           outcome="bad-parameters") from None
    except (ValueError, TypeError) as error:
        message = str(error)
        field = message.split(" ", 1)[0] if message else None
        known = set(PlanParameters.model_fields)
        raise ServiceError(422, message, field=field if field in known else None,
                           value=_value_of(args, field) if field in known else None,
                           outcome="bad-parameters") from None


def _value_of(args, field):
    for argument in args:
        if isinstance(argument, dict) and field in argument:
            return argument[field]
    return None


def dataset_entry(state, analyst, dataset) -> dict:
    from privloss.service.queries import analyst_view, ensure_dataset

    name = ensure_dataset(state.ledger, dataset)
    return {"name": dataset.name, "columns": list(dataset.columns),
            "privacy_unit": dataset.user_column, "interaction": dataset.interaction,
            "window_days": dataset.window_days,
            "budget": analyst_view(state.ledger, name, analyst.name, analyst.cap(dataset))}


@router.get("/datasets", summary="the datasets I may query, with their and my budgets")
def list_datasets(request: Request, analyst=Depends(current_analyst)):
    state = request.app.state.service
    entries = [call_ledger(dataset_entry, state, analyst, state.config.datasets[name])
               for name in analyst.datasets]
    return {"analyst": analyst.name, "datasets": entries}


@router.get("/datasets/{name}/budget", summary="the dataset's budget and mine")
def budget(name: str, request: Request, analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    return call_ledger(dataset_entry, state, analyst, dataset)


#: query-key fields shown back in a history (the data fingerprint is the operator's)
_PUBLIC_QUERY = ("command", "algorithm", "epsilon", "delta", "k", "l0", "linf", "d_bar",
                 "domain", "interaction", "item_column", "label",
                 # sql releases (privloss.service.sql_route)
                 "by", "aggregations", "max_groups", "max_rows_per_group", "noise",
                 "consistent",
                 # running totals (privloss.service.running_route)
                 "time_column", "value_column", "statistic", "period", "start", "periods",
                 "max_periods_per_unit", "max_rows_per_period")


def analyst_history(state, analyst, dataset) -> list:
    from privloss.service.queries import ensure_dataset

    name = ensure_dataset(state.ledger, dataset)
    rows = []
    for row in state.ledger.history(name, analyst=analyst.name):
        query = row["query"] if isinstance(row["query"], dict) else {}
        if query.get("analyst") != analyst.name:      # defence in depth
            continue
        public = {key: query.get(key) for key in _PUBLIC_QUERY if key in query}
        public["column"] = public.pop("item_column", None)
        rows.append({"release_id": row["id"], "time": row["time"], "status": row["status"],
                     "query": public, "events": row["events"],
                     "result": row["result"], "spent_epsilon_after": row["spent_epsilon"],
                     "bound": row["bound"], "ledger_dataset": name})
    return rows


@router.get("/datasets/{name}/history", summary="my releases on this dataset")
def history(name: str, request: Request, analyst=Depends(current_analyst)):
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    return {"dataset": name, "analyst": analyst.name,
            "releases": call_ledger(analyst_history, state, analyst, dataset)}


def _parameters(body: BaseModel) -> dict:
    return body.model_dump(exclude_none=True)


@router.post("/datasets/{name}/plan", summary="dry run: cost, noise, threshold, fits or not")
async def plan(name: str, body: PlanParameters, request: Request,
               analyst=Depends(current_analyst)):
    """A plan whose calibration is cached is one short read-only ledger
    transaction: it runs in the event loop (handing it to the thread pool costs
    more than the plan, and the threads' contention for the interpreter lock
    quadrupled the p99 latency with 16 clients); any other plan runs in the
    thread pool, so a calibration never blocks other requests."""
    from starlette.concurrency import run_in_threadpool

    from privloss.service.queries import plan_is_quick, plan_release

    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = _parameters(body)
    request.state.audit["parameters"] = parameters
    command = parameters.pop("command")
    from privloss.service.accuracy_goals import goal_in, plan_with_goal
    if goal_in(parameters) is not None:        # the epsilon planned for a goal
        return await plan_with_goal(request, state, dataset, analyst, command, parameters)
    ledger = state.loop_ledger()
    if ledger is not None and plan_is_quick(dataset, command, parameters):
        result = call_ledger(plan_release, ledger, dataset, analyst, command, parameters)
    else:
        result = await run_in_threadpool(_plan_in_thread, state, dataset, analyst, command,
                                         parameters)
    request.state.outcome = "planned" if result["fits"] else "planned-refused"
    # plain JSON values already: skip FastAPI's recursive jsonable_encoder pass
    return JSONResponse(result)


def _plan_in_thread(state, dataset, analyst, command: str, parameters: dict) -> dict:
    """A plan in the thread pool (with the thread's own ledger); afterwards the
    event loop's ledger is made ready for the next quick plan."""
    from privloss.service.queries import plan_release

    result = call_ledger(plan_release, state.ledger, dataset, analyst, command, parameters)
    call_ledger(state.prepare_loop_ledger)
    return result


def _release(command: str, name: str, body: QueryParameters, request: Request, analyst):
    from privloss.service.queries import run_release

    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    parameters = _parameters(body)
    request.state.audit["parameters"] = {"command": command, **parameters}
    from privloss.service.accuracy_goals import answered, planned
    parameters, plan = planned(command, dataset, parameters,      # a goal's epsilon
                               audit=request.state.audit)
    snapshot = state.snapshots.current(dataset)       # before the charge
    result = answered(plan, call_ledger, run_release, state.ledger, dataset, analyst, command,
                      parameters, snapshot=snapshot)
    note_release(request, result)
    return result


def note_release(request: Request, result: dict) -> None:
    """The audit record of an answered release: its id, what it spent, its outcome."""
    receipt = result["receipt"]
    request.state.audit.update(release_id=receipt["release_id"],
                               spent={"mine": result["budget"]["mine"]["spent_epsilon"],
                                      "dataset": result["budget"]["dataset"]["spent_epsilon"]})
    request.state.outcome = "stored-answer" if receipt["cached"] else "released"


@router.post("/datasets/{name}/topk", summary="a private top-k, charged to the budget")
def topk(name: str, body: QueryParameters, request: Request, analyst=Depends(current_analyst)):
    return _release("topk", name, body, request, analyst)


@router.post("/datasets/{name}/histogram", summary="a private histogram, charged to the budget")
def histogram(name: str, body: QueryParameters, request: Request,
              analyst=Depends(current_analyst)):
    return _release("histogram", name, body, request, analyst)

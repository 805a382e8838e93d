"""Releases and dry runs at a planned epsilon over HTTP: ``target_half_width``
or ``min_release_users`` instead of ``epsilon`` in the bodies of ``/topk``,
``/histogram``, ``/plan``, ``/sql``, ``/sql/plan``, ``/running`` and
``/running/plan``.

Definition
----------
:func:`goal_in` checks that a body gives exactly one of ``epsilon``,
``target_half_width`` and ``min_release_users`` (422 problem+json naming the
field otherwise; the ranges are :data:`privloss.service.routes.GOAL_LIMITS`,
checked by the request models).  :func:`planned` turns a body with a goal
into the same body with the planned ``epsilon`` (and, for a group-by with a
target and no ``budget_split``, the planned split), and the plan
(:func:`privloss.api.accuracy_plan.plan_accuracy` from the release's public
parameters, after the same checks as the release: columns granted, SQL
parsed, ranges).  The release then goes through its ordinary route function
at that epsilon, and :func:`answered` adds the plan to the answer as
``accuracy`` (``epsilon``, ``half_widths_95``, ``budget_split``, ``text``);
a 409 refusal is prefixed with the goal and the epsilon it needs, before the
usual "at most epsilon X fits".  :func:`plan_for` is ``POST
/v1/datasets/{name}/accuracy``'s planning for every kind.

Privacy guarantee
-----------------
The planned epsilon is a deterministic function of the public parameters and
the dataset's configuration only (no rows, no ledger state): it is computed
before the charge, identically on neighbouring datasets, and a refusal or an
error says nothing about the data.  The repeated-query key is the resolved
release's (the same goal plans the same epsilon, so an identical request gets
the stored answer, free).

Citation
--------
Issue 22 item 1; :mod:`privloss.api.accuracy_target` (the Python side).

Runtime
-------
A plan is about 30 calibrations (up to a second or so); plans are kept per
process (:data:`_PLANS_LIMIT`), so a repeated request plans once.
"""

from __future__ import annotations

import collections
import json
import threading

from privloss.service.app import ServiceError

__all__ = ["GOALS", "goal_in", "planned", "answered", "plan_for", "plan_with_goal"]

#: the fields that replace ``epsilon``
GOALS = ("target_half_width", "min_release_users")

#: plans already made: (kind, dataset, body) -> AccuracyPlan (least recently used first)
_PLANS: collections.OrderedDict = collections.OrderedDict()
_PLANS_LIMIT = 256
_LOCK = threading.Lock()


def goal_in(body: dict) -> dict | None:
    """``{goal: value}`` of a body with a goal, None with ``epsilon``; a 422
    naming the field unless exactly one of the three is given."""
    from privloss.api.accuracy_target import goal_of

    try:
        return goal_of(body.get("epsilon"), body.get("target_half_width"),
                       body.get("min_release_users"))
    except ValueError as error:
        message = str(error)
        field = message.split(" ", 1)[0]
        raise ServiceError(422, message, field=field, value=body.get(field),
                           outcome="bad-parameters") from None


def _cache_key(kind: str, dataset, body: dict) -> str:
    public = {name: value for name, value in body.items() if name != "label"}
    return json.dumps([kind, dataset.name, dataset.user_column, dataset.interaction, public],
                      sort_keys=True, default=str)


def _plan(kind: str, dataset, body: dict, goal: dict, snapshot=None):
    """The :class:`~privloss.api.accuracy_plan.AccuracyPlan` of ``goal`` for a
    body of ``kind`` (``topk``, ``histogram``, ``sql``, ``running``), after
    the route's own checks (403 / 422 before any work)."""
    from privloss.api.accuracy_plan import plan_accuracy

    if kind in ("topk", "histogram"):
        from privloss.service.queries import build_request
        from privloss.service.routes import call_ledger

        # epsilon 1 only checks the other parameters; the plan searches its own
        request = call_ledger(build_request, kind, {**body, "epsilon": 1.0}, dataset,
                              dataset.interaction)
        return lambda: plan_accuracy(kind, request=request, curve=False, **goal)
    if kind == "sql":
        from privloss.service.rollup_route import is_rollup
        from privloss.service.sql_route import checked_query

        query = checked_query(dataset, {**body, "epsilon": 1.0})
        common = dict(privacy_unit=query.privacy_unit, by=list(query.by),
                      aggregations=list(query.aggregations), delta=query.delta,
                      keys=query.keys, max_groups=query.max_groups,
                      max_rows_per_group=query.max_rows_per_group, noise=query.noise,
                      where=query.where)
        if is_rollup(query):
            return lambda: plan_accuracy("rollup", curve=False, **goal, **common,
                                         selection_share=query.selection_share)
        return lambda: plan_accuracy("aggregate", curve=False, **goal, **common,
                                     budget_split=query.budget_split, joins=query.joins,
                                     join_truncation=query.join_truncation)
    from privloss.service.running_route import checked_running, running_parameters

    checked_running(dataset, {**body, "epsilon": 1.0}, snapshot)
    parameters = running_parameters(dataset, body)
    return lambda: plan_accuracy("running", curve=False, **goal, **parameters)


def _planned_plan(kind: str, dataset, body: dict, goal: dict, snapshot=None):
    """:func:`_plan`, kept per process (a pure function of its key)."""
    body = {name: value for name, value in body.items()
            if name not in GOALS and name != "epsilon"}
    make = _plan(kind, dataset, body, goal, snapshot)       # the checks, every time
    key = _cache_key(kind, dataset, {**body, **goal})
    with _LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    try:
        plan = make()
    except ArithmeticError:
        raise ServiceError(422, "the parameters are outside the range the calibration can "
                                "compute (see the documented ranges)",
                           outcome="bad-parameters") from None
    except ValueError as error:        # e.g. no epsilon in range reaches the target
        name = next(iter(goal))
        message = str(error).splitlines()[0]
        raise ServiceError(422, message if message.startswith(name) else f"{name}: {message}",
                           field=name, value=goal[name], outcome="bad-parameters") from None
    with _LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > _PLANS_LIMIT:
            _PLANS.popitem(last=False)
    return plan


def planned(kind: str, dataset, body: dict, snapshot=None, audit: dict | None = None) -> tuple:
    """``(body, plan)``: a body with ``epsilon`` unchanged and None, or with a
    goal: the body at the planned epsilon (and split) and its plan.  With
    ``audit`` (a request's audit record), its ``parameters`` get the
    ``planned_epsilon`` too, so the audit log shows what a goal cost (a
    function of public parameters only)."""
    goal = goal_in(body)
    if goal is None:
        return body, None
    plan = _planned_plan(kind, dataset, body, goal, snapshot)
    if audit is not None and audit.get("parameters") is not None:
        audit["parameters"] = {**audit["parameters"], "planned_epsilon": plan.epsilon}
    resolved = {**body, "epsilon": plan.epsilon}
    if kind == "sql" and plan.budget_split is not None and body.get("budget_split") is None:
        resolved["budget_split"] = dict(plan.budget_split)
    return resolved, plan


def answered(plan, function, *args, **kwargs) -> dict:
    """``function(*args, **kwargs)`` (a route's release or dry run) with the
    plan added as ``accuracy``; a budget refusal (409) says first what the goal
    needs."""
    if plan is None:
        return function(*args, **kwargs)
    try:
        result = function(*args, **kwargs)
    except ServiceError as error:
        if error.status == 409:
            goal = (f"target_half_width {plan.target:g}" if plan.goal == "half-width"
                    else f"min_release_users {plan.target:g}")
            error.message = f"{goal} needs epsilon {plan.epsilon:.6g}; {error.message}"
            error.args = (error.message,)
        raise
    return {**result, "accuracy": plan.to_dict()}


def plan_for(kind: str, dataset, body: dict, snapshot=None) -> dict:
    """``/accuracy``: the plan of a body with a goal and no epsilon (free)."""
    if body.get("epsilon") is not None:
        raise ServiceError(422, "epsilon: /accuracy plans the epsilon; give "
                                "target_half_width or min_release_users instead",
                           field="epsilon", value=body["epsilon"], outcome="bad-parameters")
    goal = goal_in(body)
    return _planned_plan(kind, dataset, body, goal, snapshot).to_dict()


async def plan_with_goal(request, state, dataset, analyst, command: str, parameters: dict):
    """``POST /plan`` with a goal: plan the epsilon, then the ordinary dry run at
    it (both in the thread pool), the plan added as ``accuracy``."""
    from fastapi.responses import JSONResponse
    from starlette.concurrency import run_in_threadpool

    from privloss.service.queries import plan_release
    from privloss.service.routes import call_ledger

    audit = request.state.audit

    def work() -> dict:
        body, plan = planned(command, dataset, parameters, audit=audit)
        return answered(plan, call_ledger, plan_release, state.ledger, dataset, analyst,
                        command, body)

    result = await run_in_threadpool(work)
    request.state.outcome = "planned" if result["fits"] else "planned-refused"
    return JSONResponse(result)

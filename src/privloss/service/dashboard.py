"""The web dashboard at ``/``: server-rendered (Jinja2), one small static
script (``/static/dashboard.js``: the "releasing..." progress) that the pages
also work without.

Definition
----------
Sign in with a token (``POST /login``): the service opens a server-side
session (:mod:`privloss.service.sessions`) whose random id, never the token,
goes into the cookie ``privloss_session`` (HttpOnly, SameSite=Strict, Secure
over HTTPS); the session expires on the server after ``session_hours``, ends
at logout and when the token is re-issued.  Every form carries a CSRF token
(the session's; the sign-in form's is a double-submit cookie).  Per dataset:
gauges of epsilon and delta spent (mine and the dataset's), a chart of budget
use over time and the tradeoff curve (f-DP) of the budget spent so far
(:mod:`privloss.service.dashboard_charts`); four query forms, top-k,
histogram (no ``k``: every item over the threshold), DP SQL (the query text
goes unchanged to the ``/sql`` route's own functions: ``GROUP BY ROLLUP``
with its subtotal rows, joins with public tables) and running totals (the
``/running`` route's functions; the release drawn with its 95% band), read by
:mod:`privloss.service.dashboard_forms`.  Each form's first button is the dry
run (``/datasets/{name}/preview``: nothing spent), shown with why the ledger
charges what it charges and a plot of accuracy against epsilon
(:func:`privloss.api.accuracy_plan.accuracy_figure`, planned by
:mod:`privloss.service.dashboard_explain`); the second button, shown with a
preview that fits, releases; an empty answer is explained from its public
threshold.  Every form plans by ``epsilon`` or, instead, by a target 95%
half-width or (thresholded releases) the fewest users released: the epsilon is
then planned from public parameters with the JSON routes' own
:func:`privloss.service.accuracy_goals.planned` (nothing read or charged),
the preview and the answer show the plan's words (``accuracy.text``) and the
cost and the accuracy plot are those of the planned epsilon.  Then my release
history with receipts.

The dashboard is a surface only: the preview and release call the same
functions as the JSON routes (``plan_release`` / ``run_release``,
``plan_sql`` / ``run_sql``, ``plan_running`` / ``run_running``) after the
same checks (the routes' pydantic models), so bad input is refused before any charge, with the message in the
page (never a 500).

Privacy guarantee
-----------------
Shows only what the JSON API returns to the same analyst, plus plans of
public parameters.  POSTs from another origin (``Origin: null`` too) or
without the form's CSRF token are refused (403) on top of SameSite=Strict.

Runtime
-------
One page: the ledger's ``show`` and ``history``; each PNG: one matplotlib
figure (the accuracy plot: one calibration per epsilon, cached).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from privloss.service.app import ServiceError
from privloss.service.dashboard_forms import COMMANDS

__all__ = ["router", "mount_static", "accuracy_png"]

_HERE = Path(__file__).parent
router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(_HERE / "templates"))
COOKIE = "privloss_session"


def mount_static(app) -> None:
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")


LOGIN_COOKIE = "privloss_login"


def _session(request: Request):
    """The request's live session (None: none, expired, ended, or its token was
    re-issued)."""
    state = request.app.state.service
    session = state.sessions.get(request.cookies.get(COOKIE))
    if session is None or state.tokens.current_id(session.analyst) != session.token_id \
            or session.analyst not in state.config.analysts:
        return None
    return session


def _signed_in(request: Request):
    """The signed-in analyst (None: not signed in); 429 past the analyst's rate."""
    from privloss.service.routes import rate_limited

    session = _session(request)
    if session is None:
        return None
    state = request.app.state.service
    analyst = state.config.analysts[session.analyst]
    request.state.audit = {"analyst": analyst.name}
    request.state.csrf = session.csrf
    rate_limited(state, analyst)
    return analyst


def _same_origin(request: Request) -> None:
    """Refuse a form posted from another origin (an opaque ``Origin: null`` too)."""
    origin = request.headers.get("origin")
    if origin is not None \
            and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
        raise ServiceError(403, "cross-origin form refused", outcome="cross-origin")


def _check_csrf(request: Request, form, session) -> None:
    if session is None or not session.csrf_matches(form.get("csrf")):
        raise ServiceError(403, "the form's CSRF token is missing or wrong; reload the page",
                           outcome="csrf")


def _page(request: Request, name: str, context: dict, status: int = 200):
    context = {"csrf": getattr(request.state, "csrf", None), **context}
    return templates.TemplateResponse(request, name, context, status_code=status)


def _login_page(request: Request, error, status: int = 200):
    """The sign-in form with a fresh CSRF value, also set as a cookie (double
    submit: a cross-site form cannot read or set it)."""
    import secrets

    value = secrets.token_urlsafe(32)
    request.state.csrf = value
    response = _page(request, "login.html", {"error": error}, status)
    response.set_cookie(LOGIN_COOKIE, value, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/login", max_age=3600)
    return response


@router.get("/", response_class=HTMLResponse)
def home(request: Request):
    from privloss.service.routes import dataset_entry, call_ledger

    try:
        analyst = _signed_in(request)
    except ServiceError as error:
        return _login_page(request, error.message, error.status)
    if analyst is None:
        return _login_page(request, None)
    state = request.app.state.service
    entries = [call_ledger(dataset_entry, state, analyst, state.config.datasets[name])
               for name in analyst.datasets]
    return _page(request, "home.html", {"analyst": analyst, "datasets": entries})


@router.post("/login")
async def login(request: Request):
    import hmac

    from starlette.concurrency import run_in_threadpool

    from privloss.service.auth import token_id_of
    from privloss.service.routes import client_of, sign_in

    _same_origin(request)
    form = await request.form()
    expected = request.cookies.get(LOGIN_COOKIE) or ""
    given = form.get("csrf")
    if not expected or not isinstance(given, str) or not hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")):
        request.state.outcome = "csrf"
        return _login_page(request, "the sign-in form expired; sign in again", 403)
    token = form.get("token", "")
    token = token.strip() if isinstance(token, str) else ""
    state = request.app.state.service
    try:
        analyst = await run_in_threadpool(sign_in, state, token, client_of(request))
    except ServiceError as error:
        request.state.outcome = error.outcome
        message = "unknown token" if error.status == 401 else \
            "too many failed sign-ins; wait a little"
        return _login_page(request, message, error.status)
    session_id, session = state.sessions.create(analyst.name, token_id_of(token))
    request.state.audit = {"analyst": analyst.name}
    request.state.outcome = "signed-in"
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, session_id, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/",
                        max_age=int(state.sessions.seconds))
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@router.post("/logout")
async def logout(request: Request):
    _same_origin(request)
    form = await request.form()
    session = _session(request)
    _check_csrf(request, form, session)
    request.app.state.service.sessions.end(request.cookies.get(COOKIE))
    request.state.outcome = "signed-out"
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def _dataset_page(request: Request, name: str, *, plan=None, release=None, error=None,
                  form=None, status: int = 200, analyst=None):
    """The dataset page; ``analyst``: already signed in by the action this page
    answers (signing in again would reset that action's audit record and take a
    second token from the analyst's rate)."""
    from privloss.service.routes import (analyst_history, call_ledger, dataset_entry,
                                         granted_dataset)

    analyst = analyst or _signed_in(request)
    if analyst is None:
        return RedirectResponse("/", status_code=303)
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(dataset_entry, state, analyst, dataset)
    releases = call_ledger(analyst_history, state, analyst, dataset)
    form = form or {}
    return _page(request, "dataset.html",
                 {"analyst": analyst, "dataset": entry, "releases": list(reversed(releases)),
                  "plan": plan, "release": release, "error": error, "form": form,
                  "command": form.get("command") if form.get("command") in COMMANDS
                  else "topk", "commands": COMMANDS, "inf": float("inf")},
                 status)


@router.get("/datasets/{name}", response_class=HTMLResponse)
def dataset_page(request: Request, name: str):
    return _dataset_page(request, name)


def _preview(state, dataset, analyst, command: str, parameters: dict,
             audit: dict | None = None) -> dict:
    """The dry run (the JSON routes' own function), with the cost explained and
    the accuracy image's address."""
    from urllib.parse import urlencode

    from privloss.service.dashboard_explain import cost_explanation, release_events
    from privloss.service.queries import plan_release
    from privloss.service.routes import call_ledger, dataset_entry
    from privloss.service.sql_route import plan_sql

    from privloss.service.accuracy_goals import answered

    before = call_ledger(dataset_entry, state, analyst, dataset)["budget"]
    snapshot = state.snapshots.latest(dataset)
    asked = parameters          # the image plans a goal again (a group-by's split too)
    body, goal_plan, parameters = _goal_planned(dataset, command, parameters, snapshot, audit)
    if command == "sql":
        plan = answered(goal_plan, plan_sql, state.ledger, dataset, analyst, body,
                        snapshot=snapshot)
    elif command == "running":
        from privloss.service.running_route import plan_running

        plan = answered(goal_plan, plan_running, state.ledger, dataset, analyst, body,
                        snapshot=snapshot)
        # one event, calibrated to exactly the asked budget (privloss.api.running)
        plan["guarantee"] = {"epsilon": parameters["epsilon"],
                             "delta": parameters.get("delta", 0.0),
                             "bound": "one binary-tree release"}
    else:
        plan = answered(goal_plan, call_ledger, plan_release, state.ledger, dataset, analyst,
                        command, body)
    events = call_ledger(release_events, dataset, command, parameters)
    plan = {**plan, "cost": cost_explanation(events, plan["guarantee"], plan["verdict"],
                                             before["dataset"]["spent_epsilon"],
                                             before["interaction"]),
            "epsilon": parameters["epsilon"],
            "accuracy_query": urlencode(_image_form(command, asked)),
            "accuracy_lines": _accuracy_lines(dataset, command, parameters)}
    return plan


def _goal_planned(dataset, command: str, parameters: dict, snapshot=None,
                  audit: dict | None = None) -> tuple:
    """``(body, plan, parameters)``: for a form with a goal
    (``target_half_width`` / ``min_release_users``), the JSON routes' body at
    the planned epsilon, its plan (:func:`privloss.service.accuracy_goals.planned`:
    public parameters only, nothing read or charged) and the same parameters
    without the goal (what the cost, the accuracy lines and the image explain);
    for a form with an epsilon, ``(parameters, None, parameters)``."""
    from privloss.service.accuracy_goals import GOALS, planned

    body, plan = planned(command, dataset, parameters, snapshot, audit=audit)
    return body, plan, {key: value for key, value in body.items() if key not in GOALS}


def _accuracy_lines(dataset, command: str, parameters: dict) -> list:
    """The accuracy plan's sentences (the half-widths, the smallest groups
    that are released, the split), cached with the plan the image draws; none
    for a ROLLUP or where the plan cannot be computed (the preview stands)."""
    from privloss.service.dashboard_explain import accuracy_plan
    from privloss.service.routes import call_ledger

    try:
        plan = call_ledger(accuracy_plan, dataset, command, parameters)
    except (ValueError, ArithmeticError):
        return []
    return [] if plan is None else list(plan.lines)


def _image_form(command: str, parameters: dict) -> dict:
    """The form fields that give ``parameters`` back (the accuracy image's query)."""
    fields = {"command": command}
    for key, value in parameters.items():
        if key == "bounds":
            value = ", ".join(f"{column}={low!r}:{high!r}" for column, (low, high)
                              in value.items())
        elif isinstance(value, list):
            value = ", ".join("|".join(map(str, item)) if isinstance(item, list) else str(item)
                              for item in value)
        elif isinstance(value, bool):
            value = "on" if value else ""
        fields[key] = value
    return fields


def _release(state, dataset, analyst, command: str, parameters: dict,
             audit: dict | None = None) -> dict:
    """The release (the JSON routes' own function); an empty answer explained."""
    from privloss.service.dashboard_explain import accuracy_points, empty_explanation
    from privloss.service.queries import run_release
    from privloss.service.routes import call_ledger
    from privloss.service.sql_route import run_sql

    from privloss.service.accuracy_goals import answered

    snapshot = state.snapshots.current(dataset)       # before the charge
    body, goal_plan, parameters = _goal_planned(dataset, command, parameters, snapshot, audit)
    if command == "sql":
        result = answered(goal_plan, run_sql, state.ledger, dataset, analyst, body,
                          snapshot=snapshot)
        empty = not result.get("rows")
    elif command == "running":
        from privloss.service.running_route import run_running

        result = answered(goal_plan, run_running, state.ledger, dataset, analyst, body,
                          snapshot=snapshot)
        empty = False           # every period has a total, zero or not
    else:
        result = answered(goal_plan, call_ledger, run_release, state.ledger, dataset, analyst,
                          command, body, snapshot=snapshot)
        empty = not result.get("items")
    result = {**result, "command": command}
    if empty:
        points = accuracy_points(dataset, command, parameters, factors=(2.0, 4.0))
        result["empty"] = empty_explanation(command, parameters["epsilon"], result, points)
    return result


async def _act(request: Request, name: str, action: str):
    from starlette.concurrency import run_in_threadpool

    from privloss.service.dashboard_forms import form_parameters
    from privloss.service.routes import granted_dataset

    _same_origin(request)
    form = {key: value for key, value in (await request.form()).items()
            if isinstance(value, str)}
    analyst = await run_in_threadpool(_signed_in, request)
    if analyst is None:
        return RedirectResponse("/", status_code=303)
    _check_csrf(request, form, _session(request))
    form.pop("csrf", None)
    dataset = granted_dataset(request, analyst, name)
    state = request.app.state.service
    try:
        command, parameters = form_parameters(form)
        request.state.audit["parameters"] = {"command": command, **parameters}
        if action == "preview":
            result = await run_in_threadpool(_preview, state, dataset, analyst, command,
                                             parameters, request.state.audit)
            request.state.outcome = "planned" if result["fits"] else "planned-refused"
            return await run_in_threadpool(_dataset_page, request, name, analyst=analyst,
                                           plan=result, form=form)
        result = await run_in_threadpool(_release, state, dataset, analyst, command,
                                         parameters, request.state.audit)
        request.state.audit["release_id"] = result["receipt"]["release_id"]
        request.state.outcome = "stored-answer" if result["receipt"]["cached"] else "released"
        return await run_in_threadpool(_dataset_page, request, name, analyst=analyst,
                                       release=result, form=form)
    except ValueError as error:
        request.state.outcome = "bad-parameters"
        return await run_in_threadpool(_dataset_page, request, name, analyst=analyst,
                                       error=str(error), form=form, status=422)
    except ServiceError as error:
        if error.status in (401, 429, 503):
            raise
        request.state.outcome = error.outcome
        return await run_in_threadpool(_dataset_page, request, name, analyst=analyst,
                                       error=error.message, form=form, status=error.status)


@router.post("/datasets/{name}/preview", response_class=HTMLResponse)
async def preview(request: Request, name: str):
    return await _act(request, name, "preview")


@router.post("/datasets/{name}/release", response_class=HTMLResponse)
async def release(request: Request, name: str):
    return await _act(request, name, "release")


def _image_entry(request: Request, name: str, history: bool = False):
    """(dataset config, its entry, my history or None) for an image; 401 when
    not signed in."""
    from privloss.service.routes import (analyst_history, call_ledger, dataset_entry,
                                         granted_dataset)

    analyst = _signed_in(request)
    if analyst is None:
        raise ServiceError(401, "sign in first", outcome="unauthorized")
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(dataset_entry, state, analyst, dataset)
    rows = call_ledger(analyst_history, state, analyst, dataset) if history else None
    return dataset, entry, rows


def _png(data: bytes) -> Response:
    return Response(data, media_type="image/png", headers={"Cache-Control": "no-store"})


@router.get("/datasets/{name}/tradeoff.png")
def tradeoff(request: Request, name: str):
    from privloss.service.dashboard_charts import tradeoff_png

    _, entry, _ = _image_entry(request, name)
    return _png(tradeoff_png(entry["budget"]))


@router.get("/datasets/{name}/budget.png")
def budget_chart(request: Request, name: str):
    from privloss.service.dashboard_charts import budget_png

    _, entry, rows = _image_entry(request, name, history=True)
    return _png(budget_png(rows, entry["budget"]))


@router.get("/datasets/{name}/running.png")
def running_chart(request: Request, name: str, release: int = 0):
    """My running-totals release ``release`` (its stored answer in my history)
    drawn with its 95% band; 404 when I have no such release."""
    from privloss.service.dashboard_charts import running_png

    _, _, rows = _image_entry(request, name, history=True)
    for row in rows:
        result = row.get("result")
        if row["release_id"] == release and isinstance(result, dict) and "periods" in result:
            return _png(running_png(result))
    raise ServiceError(404, f"no running-totals release #{release} of yours on {name!r}",
                       outcome="not-found")


@router.get("/datasets/{name}/accuracy.png")
def accuracy_chart(request: Request, name: str):
    """The preview's accuracy against epsilon, from the query string (the same
    fields as the forms; plans only, nothing read or charged)."""
    dataset, _, _ = _image_entry(request, name)
    return _png(accuracy_png(dataset, dict(request.query_params)))


def accuracy_png(dataset, form: dict) -> bytes:
    """The accuracy-against-epsilon image of a form's query (422 for a bad
    one, 404 for a ROLLUP): :func:`privloss.api.accuracy_plan.accuracy_figure`
    of its plan at the form's epsilon, or at the epsilon (and split) planned
    for the form's goal."""
    from privloss.api.accuracy_plan import accuracy_figure
    from privloss.service.dashboard_explain import accuracy_plan
    from privloss.service.dashboard_forms import form_parameters
    from privloss.service.routes import call_ledger

    try:
        command, parameters = form_parameters(form)
    except ValueError as error:
        raise ServiceError(422, str(error), outcome="bad-parameters") from None
    # a goal: its planned epsilon (and a group-by's planned split), as in the preview
    _, _, parameters = _goal_planned(dataset, command, parameters)
    try:
        plan = call_ledger(accuracy_plan, dataset, command, parameters)
    except (ValueError, ArithmeticError) as error:
        raise ServiceError(422, str(error)[:300], outcome="bad-parameters") from None
    if plan is None:
        raise ServiceError(404, "no accuracy plot of a GROUP BY ROLLUP (its levels' "
                                "half-widths are in the preview)", outcome="not-found")
    return accuracy_figure(plan)

"""The web dashboard at ``/``: server-rendered (Jinja2), no JavaScript needed.

Definition
----------
Sign in with a token (``POST /login``): the service opens a server-side
session (:mod:`privloss.service.sessions`) whose random id, never the token,
goes into the cookie ``privloss_session`` (HttpOnly, SameSite=Strict, Secure
over HTTPS); the session expires on the server after ``session_hours``, ends
at logout and when the token is re-issued.  Every form carries a CSRF token
(the session's; the sign-in form's is a double-submit cookie).  Per dataset: gauges of epsilon
and delta spent (mine and the dataset's), a query form whose first button is
the dry run (``/datasets/{name}/preview``: nothing spent) and whose second
button, shown with the preview, releases; the release history with receipts;
and the tradeoff curve (f-DP) of the budget spent so far as a PNG.

The curve is the (epsilon, delta)-DP tradeoff function f_{eps,delta} of the
ledger's spent (epsilon, delta) (mine, and the dataset's): under the fully
adaptive model the ledger's guarantee is an (epsilon, delta) pair from a
privacy filter, and (eps, delta)-DP is exactly f_{eps,delta}-DP
(Dong, Roth and Su, Prop. 2.5), so the curve is sound for any interaction.

Privacy guarantee
-----------------
Shows only what the JSON API returns to the same analyst.  POSTs from another
origin (``Origin: null`` too) or without the form's CSRF token are refused
(403) on top of SameSite=Strict.

Runtime
-------
One page: the ledger's ``show`` and ``history``; the PNG: one matplotlib figure.
"""

from __future__ import annotations

import io
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from privloss.service.app import ServiceError

__all__ = ["router", "mount_static"]

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


def _number(text, cast):
    text = (text or "").strip()
    return None if not text else cast(text)


def _form_parameters(form) -> tuple[str, dict]:
    """(command, parameters) from the query form; ValueError naming the field."""
    command = form.get("command", "topk")
    if command not in ("topk", "histogram"):
        raise ValueError(f"command must be topk or histogram, got {command!r}")
    parameters = {"column": form.get("column", "")}
    for key, cast in (("epsilon", float), ("delta", float), ("k", int), ("l0", int),
                      ("linf", int), ("d_bar", int)):
        try:
            value = _number(form.get(key), cast)
        except ValueError:
            raise ValueError(f"{key} must be a number, got {form.get(key)!r}") from None
        if value is not None:
            parameters[key] = value
    domain = (form.get("domain") or "").strip()
    if domain:
        parameters["domain"] = [item.strip() for item in domain.split(",") if item.strip()]
    choice = (form.get("algorithm") or "").strip()
    if choice:
        parameters["algorithm" if command == "topk" else "noise"] = choice
    return command, _checked(parameters)


def _checked(parameters: dict) -> dict:
    """The API's checks and ranges (routes.QueryParameters), before anything is
    charged: ValueError naming the field."""
    from pydantic import ValidationError

    from privloss.service.routes import QueryParameters

    try:
        return QueryParameters.model_validate(parameters).model_dump(exclude_none=True)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "form"
        raise ValueError(f"{field}: {first.get('msg', 'invalid')}") from None


def _dataset_page(request: Request, name: str, *, plan=None, release=None, error=None,
                  form=None, status: int = 200):
    from privloss.service.routes import (analyst_history, call_ledger, dataset_entry,
                                         granted_dataset)

    analyst = _signed_in(request)
    if analyst is None:
        return RedirectResponse("/", status_code=303)
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(dataset_entry, state, analyst, dataset)
    releases = call_ledger(analyst_history, state, analyst, dataset)
    return _page(request, "dataset.html",
                 {"analyst": analyst, "dataset": entry, "releases": list(reversed(releases)),
                  "plan": plan, "release": release, "error": error, "form": form or {}},
                 status)


@router.get("/datasets/{name}", response_class=HTMLResponse)
def dataset_page(request: Request, name: str):
    return _dataset_page(request, name)


async def _act(request: Request, name: str, action: str):
    from starlette.concurrency import run_in_threadpool

    from privloss.service.queries import plan_release, run_release
    from privloss.service.routes import call_ledger, granted_dataset

    _same_origin(request)
    form = dict((await request.form()).items())
    analyst = await run_in_threadpool(_signed_in, request)
    if analyst is None:
        return RedirectResponse("/", status_code=303)
    _check_csrf(request, form, _session(request))
    form.pop("csrf", None)
    dataset = granted_dataset(request, analyst, name)
    state = request.app.state.service
    try:
        command, parameters = _form_parameters(form)
        request.state.audit["parameters"] = {"command": command, **parameters}
        if action == "preview":
            result = await run_in_threadpool(call_ledger, plan_release, state.ledger, dataset,
                                             analyst, command, parameters)
            request.state.outcome = "planned"
            return await run_in_threadpool(_dataset_page, request, name, plan=result,
                                           form=form)
        snapshot = await run_in_threadpool(state.snapshots.current, dataset)
        result = await run_in_threadpool(call_ledger, run_release, state.ledger, dataset,
                                         analyst, command, parameters, snapshot=snapshot)
        request.state.audit["release_id"] = result["receipt"]["release_id"]
        request.state.outcome = "stored-answer" if result["receipt"]["cached"] else "released"
        return await run_in_threadpool(_dataset_page, request, name, release=result, form=form)
    except ValueError as error:
        return await run_in_threadpool(_dataset_page, request, name, error=str(error),
                                       form=form, status=422)
    except ServiceError as error:
        if error.status in (401, 429, 503):
            raise
        request.state.outcome = error.outcome
        return await run_in_threadpool(_dataset_page, request, name, error=error.message,
                                       form=form, status=error.status)


@router.post("/datasets/{name}/preview", response_class=HTMLResponse)
async def preview(request: Request, name: str):
    return await _act(request, name, "preview")


@router.post("/datasets/{name}/release", response_class=HTMLResponse)
async def release(request: Request, name: str):
    return await _act(request, name, "release")


def tradeoff_png(budget: dict) -> bytes:
    """The f_{eps,delta} curves of my and the dataset's spent budget (see the
    module docstring), as PNG bytes."""
    from matplotlib.figure import Figure

    from privloss.fdp.plot import plot_tradeoffs
    from privloss.fdp.tradeoff import ApproxDPTradeoff

    curves, labels = [], []
    for who, label in (("dataset", "everything released (dataset)"), ("mine", "my releases")):
        spent = budget[who]
        epsilon = min(float(spent["spent_epsilon"]), 50.0)
        delta = min(float(spent["spent_delta"]), 1.0)
        curves.append(ApproxDPTradeoff(epsilon, delta))
        labels.append(f"{label}: eps={spent['spent_epsilon']:.4g}, "
                      f"delta={spent['spent_delta']:.2g}")
    figure = Figure(figsize=(5.2, 5.0))
    axes = figure.subplots()
    plot_tradeoffs(curves, labels=labels, ax=axes, title="what an attacker can do so far")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()


@router.get("/datasets/{name}/tradeoff.png")
def tradeoff(request: Request, name: str):
    from privloss.service.routes import dataset_entry, call_ledger, granted_dataset

    analyst = _signed_in(request)
    if analyst is None:
        raise ServiceError(401, "sign in first", outcome="unauthorized")
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(dataset_entry, state, analyst, dataset)
    return Response(tradeoff_png(entry["budget"]), media_type="image/png",
                    headers={"Cache-Control": "no-store"})

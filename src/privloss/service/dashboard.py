"""The web dashboard at ``/``: server-rendered (Jinja2), no JavaScript needed.

Definition
----------
Sign in with a token (``POST /login``): the token goes into a cookie
``privloss_session`` (HttpOnly, SameSite=Strict, Secure over HTTPS) and is
verified like a bearer token on every page.  Per dataset: gauges of epsilon
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
origin are refused (403) on top of SameSite=Strict.

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


def _signed_in(request: Request):
    from privloss.service.routes import authenticate
    if not request.cookies.get(COOKIE):
        return None
    return authenticate(request, cookie=True)


def _same_origin(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is not None and origin != "null" \
            and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
        raise ServiceError(403, "cross-origin form refused", outcome="cross-origin")


def _page(request: Request, name: str, context: dict, status: int = 200):
    return templates.TemplateResponse(request, name, context, status_code=status)


@router.get("/", response_class=HTMLResponse)
def home(request: Request):
    from privloss.service.routes import _dataset_entry, call_ledger

    try:
        analyst = _signed_in(request)
    except ServiceError as error:
        return _page(request, "login.html", {"error": error.message}, error.status)
    if analyst is None:
        return _page(request, "login.html", {"error": None})
    state = request.app.state.service
    entries = [call_ledger(_dataset_entry, state, analyst, state.config.datasets[name])
               for name in analyst.datasets]
    return _page(request, "home.html", {"analyst": analyst, "datasets": entries})


@router.post("/login")
async def login(request: Request):
    _same_origin(request)
    form = await request.form()
    token = str(form.get("token", "")).strip()
    state = request.app.state.service
    client = request.client.host if request.client else "?"
    if not state.failures.available(client):
        return _page(request, "login.html", {"error": "too many failed sign-ins; wait a "
                                                      "little"}, 429)
    name = state.tokens.verify(token) if token else None
    if name is None or name not in state.config.analysts:
        state.failures.allow(client)
        request.state.outcome = "unauthorized"
        return _page(request, "login.html", {"error": "unknown token"}, 401)
    request.state.audit = {"analyst": name}
    request.state.outcome = "signed-in"
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/", max_age=8 * 3600)
    return response


@router.post("/logout")
def logout(request: Request):
    _same_origin(request)
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
    return command, parameters


def _dataset_page(request: Request, name: str, *, plan=None, release=None, error=None,
                  form=None, status: int = 200):
    from privloss.service.routes import _dataset_entry, _history, call_ledger, granted_dataset

    analyst = _signed_in(request)
    if analyst is None:
        return RedirectResponse("/", status_code=303)
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(_dataset_entry, state, analyst, dataset)
    releases = call_ledger(_history, state, analyst, dataset)
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
        result = await run_in_threadpool(call_ledger, run_release, state.ledger, dataset,
                                         analyst, command, parameters)
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
    from privloss.service.routes import _dataset_entry, call_ledger, granted_dataset

    analyst = _signed_in(request)
    if analyst is None:
        raise ServiceError(401, "sign in first", outcome="unauthorized")
    state = request.app.state.service
    dataset = granted_dataset(request, analyst, name)
    entry = call_ledger(_dataset_entry, state, analyst, dataset)
    return Response(tradeoff_png(entry["budget"]), media_type="image/png",
                    headers={"Cache-Control": "no-store"})

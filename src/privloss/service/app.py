"""The FastAPI application: :func:`create_app`.

Definition
----------
``/v1`` is the JSON API (:mod:`privloss.service.routes`), ``/`` the dashboard
(:mod:`privloss.service.dashboard`), ``/openapi.json`` the schema.  Around
every request, outermost first: the audit record (one JSON line whatever the
outcome, :mod:`privloss.service.audit`), the body limit (413 past
``max_body_bytes``, counted while reading, so a chunked body cannot
bypass it), then authentication and the per-analyst rate limit inside the
routes; every response carries the security headers of
:mod:`privloss.service.web`.  Every error is RFC 9457 problem details
(``application/problem+json``: ``type``, ``title``, ``status``, ``detail``,
and ``field`` / ``value`` for a bad parameter); an unexpected exception
becomes a 500 with a fixed message and an id that names the server log record
(never a traceback).  Before serving, every dataset is read and checked
(:mod:`privloss.service.snapshots`): a configuration that cannot be served
does not start.

Status codes: 401 no or bad token; 403 dataset or column not granted (an
unknown dataset is also 403, so dataset names do not leak); 413 body too
large; 422 bad parameters (naming field, value and allowed range); 409 the
budget, an analyst's cap or the plan refuses (naming the binding
constraint); 429 rate limit; 503 the ledger is damaged or unavailable, or the
engine failed after the charge (an engine fault such as memory, since the data
was bound and read at start-up; the charge stays: a free failure would be an
oracle).

Privacy guarantee
-----------------
See :mod:`privloss.service`: only DP outputs, public parameters and budget
figures leave.

Runtime
-------
Routes that touch the ledger or the data run in the server's thread pool.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from privloss.service.audit import AuditLog
from privloss.service.auth import TokenStore
from privloss.service.sessions import SessionStore
from privloss.service.ratelimit import RateLimiter
from privloss.service.web import SecurityHeaders, client_address, problem_response, shown

__all__ = ["create_app", "ServiceError", "ServiceState"]

LOGGER = logging.getLogger("privloss.service")
#: failed sign-ins per client address: (per second, burst); past it, failing
#: tokens from that address get 429 (valid tokens never do)
FAILED_SIGN_INS = (1.0, 10)


class ServiceError(Exception):
    """An error answered to the client as ``status`` with a JSON body."""

    def __init__(self, status: int, message: str, *, field: str | None = None, value=None,
                 outcome: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.field, self.value = status, message, field, value
        self.outcome = outcome or f"error-{status}"
        self.headers = headers


@dataclass
class ServiceState:
    config: object
    tokens: TokenStore
    audit: AuditLog
    limiter: RateLimiter
    failures: RateLimiter
    snapshots: object = None
    sessions: object = None
    _local: threading.local = field(default_factory=threading.local)
    _loop_ledger: object = None

    @property
    def ledger(self):
        """This thread's own ``Ledger`` on the configured store.  One instance
        per thread: a Ledger shared by threads was seen to refuse with a false
        integrity error (its verified-records cache raced with a release
        finishing; reproduced with 30 threads); separate instances are the
        ledger's tested multi-process case, and the store's lock serialises
        their charges."""
        ledger = getattr(self._local, "ledger", None)
        if ledger is None:
            ledger = self._local.ledger = _opened_or_503(self.config)
        return ledger

    def loop_ledger(self):
        """The event loop's own ``Ledger`` if it is open and needs no new database
        connection (so a call waits neither for the verification of the whole
        history nor for a handshake), else None; only the loop thread uses it."""
        ledger = self._loop_ledger
        return ledger if ledger is not None and ledger.connection_ready() else None

    def prepare_loop_ledger(self) -> None:
        """Open the event loop's ledger, or give it an idle connection again; runs
        in a worker thread (it touches only the store's locked idle stack)."""
        if self._loop_ledger is None:
            self._loop_ledger = _opened_or_503(self.config)
        elif not self._loop_ledger.connection_ready():
            self._loop_ledger.warm()


class BodyLimit:
    """Pure ASGI middleware: 413 for a request body over ``max_bytes`` (by
    Content-Length, or counted while streaming)."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await _too_large(self.max_bytes, scope, send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await _too_large(self.max_bytes, scope, send)
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()
        return await self.app(scope, replay, send)


class AuditTrail:
    """Pure ASGI middleware (Starlette's ``BaseHTTPMiddleware`` costs a task
    group and streams per request): one audit record per HTTP request, from what
    the routes put in ``request.state.audit`` / ``outcome`` and the status sent."""

    def __init__(self, app, log: AuditLog, trusted_proxies=()):
        self.app, self.log, self.trusted_proxies = app, log, trusted_proxies

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500
        address = client_address(scope, self.trusted_proxies)
        scope.setdefault("state", {})["client_address"] = address

        async def send_and_note(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)
        try:
            await self.app(scope, receive, send_and_note)
        finally:
            state = scope.get("state") or {}
            record = state.get("audit") or {}        # set by the routes
            self.log.write(
                analyst=record.get("analyst"), dataset=record.get("dataset"),
                parameters=record.get("parameters"), release_id=record.get("release_id"),
                spent=record.get("spent"),
                outcome=state.get("outcome") or record.get("outcome")
                or ("ok" if status < 400 else f"error-{status}"),
                status=status, method=scope.get("method"), path=scope.get("path"),
                client=address,
                seconds=round(time.perf_counter() - started, 6))


async def _too_large(limit: int, scope, send):
    response = problem_response(413, f"request body larger than {limit} bytes",
                                outcome="body-too-large")
    scope.setdefault("state", {})["audit"] = {"outcome": "body-too-large"}
    await response(scope, None, send)


def _state_dir(config):
    from pathlib import Path

    if config.state_dir is not None:
        return Path(config.state_dir)
    base = Path(config.tokens).parent
    return base / "privloss.state"


def check_datasets(config):
    """Read and check every dataset (:mod:`privloss.service.snapshots`); the
    :class:`~privloss.service.snapshots.SnapshotStore` serving them, or
    ``StartupError`` naming the dataset and the column or expression."""
    from privloss.service.snapshots import SnapshotStore

    directory = _state_dir(config)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)     # snapshots hold rows
    store = SnapshotStore(directory)
    store.load_all(config.datasets.values())
    return store


def check_service(config):
    """What start-up checks, without serving: every dataset
    (:func:`check_datasets`) and every plan file; the snapshot store."""
    from privloss.service.queries import check_plan
    from privloss.service.snapshots import StartupError

    store = check_datasets(config)
    for dataset in config.datasets.values():
        try:
            check_plan(dataset)
        except ValueError as error:
            raise StartupError(str(error)) from None
    return store


def open_anchored_ledger(config, *, startup: bool = True):
    """The service's ledger, anchored to its witness (``LEDGER.witness``, or
    ``AUDIT_LOG.witness`` for PostgreSQL; key ``$PRIVLOSS_LEDGER_KEY`` or the
    0600 file beside it, docs/ledger.md "Anchoring") and audited before serving:
    a ledger behind its witness, a witnessed dataset missing, a deleted ledger
    file or damaged records raise :class:`~privloss.budget.LedgerError`
    naming what was found, so the service does not start (and never recreates
    a dataset the witness knows). ``startup=False``: a request thread's own
    ledger on the same anchor (never created; checked against the witness on
    open, each charge refused if behind)."""
    from privloss.budget import Ledger, default_anchor

    anchor = default_anchor(config.ledger, beside=config.audit_log)
    ledger = Ledger(config.ledger, create=startup, witness=anchor["witness"],
                    key_file=anchor["key_file"])
    if startup:
        ledger.verify()
    return ledger


def _opened_or_503(config):
    """A request thread's ledger; a ledger found damaged, behind its witness or
    missing when the thread opens it is a 503 (as routes.call_ledger maps the
    same errors later), never a 500: nothing was charged or read."""
    from privloss.budget import LedgerError, LedgerIntegrityError

    try:
        return open_anchored_ledger(config, startup=False)
    except LedgerIntegrityError as error:
        LOGGER.error("ledger integrity check failed: %s", error)
        raise ServiceError(503, "the budget ledger failed its integrity check; the operator "
                                "must run 'privloss ledger verify' (nothing was charged or "
                                "read)", outcome="ledger-integrity") from None
    except LedgerError as error:
        LOGGER.error("ledger unavailable: %s", error)
        raise ServiceError(503, "the budget ledger is unavailable; try again later",
                           outcome="ledger-unavailable") from None


def create_app(config) -> FastAPI:
    """The service for a checked :class:`~privloss.service.config.ServiceConfig`.
    Creates the ledger (if missing) and its datasets (the current windows)."""
    from privloss.service import accuracy_route, dashboard, routes, running_route, sql_route
    from privloss.service.queries import ensure_dataset

    snapshots = check_service(config)           # StartupError: nothing is served
    ledger = open_anchored_ledger(config)
    for dataset in config.datasets.values():
        ensure_dataset(ledger, dataset)
    state = ServiceState(config=config, tokens=TokenStore(config.tokens),
                         audit=AuditLog(config.audit_log),
                         limiter=RateLimiter(config.rate, config.burst),
                         failures=RateLimiter(*FAILED_SIGN_INS),
                         snapshots=snapshots,
                         sessions=SessionStore(_state_dir(config) / "sessions.sqlite",
                                               hours=config.session_hours))
    app = FastAPI(title="privloss query service", version="1",
                  description="Differentially private top-k and histograms over datasets you "
                              "cannot see, charged to budgets you cannot bypass.",
                  docs_url=None, redoc_url=None)
    app.state.service = state

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, error: ServiceError):
        request.state.outcome = error.outcome
        return problem_response(error.status, error.message, field=error.field,
                                value=error.value, outcome=error.outcome, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError):
        request.state.outcome = "bad-parameters"
        first = error.errors()[0] if error.errors() else {}
        location = [str(part) for part in first.get("loc", ()) if part != "body"]
        field = ".".join(location) or None
        message = f"{field or 'body'}: {first.get('msg', 'invalid request')}"
        return problem_response(422, message, field=field, value=shown(first.get("input")),
                                outcome="bad-parameters")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        request.state.outcome = f"error-{error.status_code}"
        return problem_response(error.status_code, str(error.detail),
                                headers=getattr(error, "headers", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        error_id = secrets.token_hex(4)
        LOGGER.error("privloss service error %s: %s: %s", error_id, type(error).__name__,
                     ascii(str(error)))
        return problem_response(500, f"internal error (error id {error_id})",
                                outcome="internal-error")

    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)

    app.add_middleware(AuditTrail, log=state.audit, trusted_proxies=config.trusted_proxies)
    app.add_middleware(SecurityHeaders)

    app.include_router(routes.router)
    app.include_router(sql_route.router)
    app.include_router(running_route.router)
    app.include_router(accuracy_route.router)
    app.include_router(dashboard.router)
    dashboard.mount_static(app)
    return app

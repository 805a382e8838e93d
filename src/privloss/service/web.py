"""HTTP details shared by the API and the dashboard: problem details (RFC 9457),
security headers, and the client's address behind trusted proxies.

Definition
----------
* :func:`problem_response`: every error is ``application/problem+json``
  ``{"type", "title", "status", "detail"}`` plus ``field`` and ``value`` (the
  offending parameter, shown back JSON-safe and cut at 200 characters) when
  one parameter is at fault.  ``type`` is ``urn:privloss:error:<outcome>``
  (``bad-parameters``, ``refused-budget``, ...: the audit log's outcome).
* :class:`SecurityHeaders`: every response carries a Content-Security-Policy
  (nothing but this origin's scripts, style sheets, images and form targets:
  no inline script or style, no other origin; not framed), ``X-Content-Type-Options: nosniff``,
  ``X-Frame-Options: DENY`` and ``Referrer-Policy: same-origin`` (not
  ``no-referrer``: under it browsers send ``Origin: null`` with same-origin
  forms, which the dashboard refuses).
* :func:`client_address`: the TCP peer, unless the peer is one of the
  configured ``trusted_proxies``; then the right-most ``X-Forwarded-For``
  address that is not itself a trusted proxy (what the nearest untrusted hop
  claimed cannot be forged by the client past a trusted proxy).  Without
  ``trusted_proxies`` (the default) the header is ignored.

Privacy guarantee
-----------------
None (transport and presentation).

Runtime
-------
O(1) per response; the address: one parse per forwarded hop.
"""

from __future__ import annotations

import ipaddress
import json
from http import HTTPStatus

from fastapi.responses import JSONResponse

__all__ = ["problem_response", "shown", "SecurityHeaders", "SECURITY_HEADERS",
           "client_address"]

PROBLEM_TYPE = "application/problem+json"

SECURITY_HEADERS = (
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
     b"form-action 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


def shown(value):
    """The offending input as shown back: JSON-safe (NaN as text, lone
    surrogates escaped) and short."""
    try:       # as the response will encode it: a lone surrogate anywhere fails here
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
    except (TypeError, ValueError):      # UnicodeEncodeError is a ValueError
        return ascii(value)[:200]
    return value if len(text) <= 200 else text[:200] + "..."


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def problem_response(status: int, detail: str, *, field=None, value=None, outcome=None,
                     headers=None) -> JSONResponse:
    """An RFC 9457 problem details response (see the module docstring)."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    if not _encodable(detail):
        detail = detail.encode("utf-8", "backslashreplace").decode("utf-8")
    body = {"type": f"urn:privloss:error:{outcome or f'error-{status}'}", "title": title,
            "status": status, "detail": detail}
    if field is not None:
        body["field"] = field
        body["value"] = shown(value)
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_TYPE)


class SecurityHeaders:
    """Pure ASGI middleware: the headers of :data:`SECURITY_HEADERS` on every
    HTTP response (unless a route set its own)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in SECURITY_HEADERS
                            if name not in present]
                message = {**message, "headers": headers}
            await send(message)
        return await self.app(scope, receive, send_with_headers)


def _address(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address, networks) -> bool:
    return address is not None and any(address in network for network in networks)


def client_address(scope, trusted_proxies) -> str:
    """The client's address (see the module docstring)."""
    peer = scope.get("client")
    host = peer[0] if peer else "?"
    if not trusted_proxies or not _trusted(_address(host), trusted_proxies):
        return host
    hops = []
    for name, value in scope.get("headers") or ():
        if name.lower() == b"x-forwarded-for":
            hops += [part.strip() for part in value.decode("latin-1").split(",")]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:          # a malformed hop: believe nothing before it
            return host
        if not _trusted(address, trusted_proxies):
            return str(address)
    return host

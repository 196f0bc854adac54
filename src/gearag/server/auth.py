"""The API key: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY`` on every endpoint but ``/health``, the page and
the API docs."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Request

from gearag.server.errors import APIError

#: Paths reachable without a key: the health check, the page and its static files (the page's
#: API calls still need the key), and the API docs with their schema and files (they describe the API and say
#: how to send the key; nothing of the index).
PUBLIC_PATHS = ("/health", "/", "/favicon.ico", "/docs", "/openapi.json")
PUBLIC_PREFIXES = ("/static/", "/docs-assets/")


def presented_key(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.headers.get("x-api-key") or None


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def check_key(request: Request, expected: str | None) -> None:
    """Raise a 401 unless no key is configured or the request presents it (compared in constant time)."""
    if expected is None or is_public(request.url.path):
        return
    given = presented_key(request)
    if given is None:
        raise APIError(401, "missing API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'")
    if not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8")):
        raise APIError(401, "invalid API key")


class AuthMiddleware:
    """ASGI middleware applying :func:`check_key` to every HTTP request (unknown paths included)."""

    def __init__(self, app: Any, api_key: str | None) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.api_key is not None:
            request = Request(scope)
            try:
                check_key(request, self.api_key)
            except APIError as exc:
                from gearag.server.errors import error_response

                response = error_response(exc.status, exc.message, exc.type, {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

"""Every error is a JSON body ``{"error": {"message", "type"}}`` with the right status, never a traceback.

Types (OpenAI-style names, so chat clients show them sensibly): ``invalid_request_error``
(400/404/405/413/422), ``authentication_error`` (401), ``upstream_error`` (502, the LLM
endpoint), ``overloaded_error`` (503), ``timeout_error`` (504), ``server_error`` (500).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gearag.errors import GearagError, LLMError

log = logging.getLogger("gearag.server")

_TYPES = {401: "authentication_error", 503: "overloaded_error", 504: "timeout_error"}


class APIError(Exception):
    """An error with an HTTP status and a one-line message for the client."""

    def __init__(self, status: int, message: str, type: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or error_type(status)
        self.headers = headers


def error_type(status: int) -> str:
    if status in _TYPES:
        return _TYPES[status]
    return "invalid_request_error" if status < 500 else "server_error"


def error_body(message: str, type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type}}


def error_response(status: int, message: str, type: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, type or error_type(status)), status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    """One line naming the first bad field: ``body.top_k: Input should be less than or equal to 100``."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body" or len(err.get("loc", ())) == 1)
        if err.get("type") == "json_invalid":
            parts.append("malformed JSON body: " + str(err.get("ctx", {}).get("error", err.get("msg"))))
            continue
        parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    return "; ".join(parts) or "invalid request"


def install(app: FastAPI) -> None:
    """Register the handlers that turn every exception into a JSON error body."""

    @app.exception_handler(APIError)
    async def _api(request: Request, exc: APIError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.type, exc.headers)

    @app.exception_handler(LLMError)
    async def _llm(request: Request, exc: LLMError) -> JSONResponse:
        return error_response(502, f"the LLM endpoint failed: {exc}", "upstream_error")

    @app.exception_handler(GearagError)
    async def _gearag(request: Request, exc: GearagError) -> JSONResponse:
        # Bad options, unknown methods: the library's one-line messages are meant for users.
        return error_response(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        return error_response(exc.status_code, message, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal server error (see the server log)")

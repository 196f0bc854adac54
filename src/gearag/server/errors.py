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

from gearag.deadline import StoppedError
from gearag.errors import GearagError, LLMError

log = logging.getLogger("gearag.server")

#: What a client is told when the operator's LLM endpoint fails: the endpoint, its address and the
#: connection error stay in the server log (they would let a client map the operator's network).
UPSTREAM_FAILED = "the LLM endpoint failed; the server log says why"

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


def client_error(exc: BaseException, timeout: float | None = None) -> tuple[int, str, str]:
    """(status, message, type) a client is told for ``exc`` raised by a method call: the library's one-line
    messages for what the request caused (400), nothing of the operator's endpoint for an LLM failure (502,
    logged here in full), 504 for a call stopped at its deadline, and a bare 500 for anything else (logged)."""
    if isinstance(exc, APIError):
        return exc.status, exc.message, exc.type
    if isinstance(exc, StoppedError):
        limit = f" ({timeout:g} s)" if timeout is not None else ""
        return 504, f"the request took longer than the server's time limit{limit}", error_type(504)
    if isinstance(exc, LLMError):
        log.error("LLM endpoint failed: %s", exc)
        return 502, UPSTREAM_FAILED, "upstream_error"
    if isinstance(exc, GearagError):
        return 400, str(exc), error_type(400)
    log.error("method call failed", exc_info=exc)
    return 500, "internal server error (see the server log)", error_type(500)


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

    @app.exception_handler(GearagError)
    @app.exception_handler(StoppedError)
    async def _gearag(request: Request, exc: Exception) -> JSONResponse:
        # Bad options, unknown methods: the library's one-line messages are meant for users; an LLM failure is
        # told without the endpoint's details; a call stopped at its deadline is a 504.
        status, message, type_ = client_error(exc, request.app.state.settings.request_timeout)
        return error_response(status, message, type_)

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

"""Request limits enforced before a route runs: the body size (413) — see :mod:`.runner` for time and concurrency."""

from __future__ import annotations

from typing import Any

from gearag.server.errors import error_response


class BodyLimitMiddleware:
    """Reject bodies over ``max_bytes`` with 413: by ``Content-Length`` at once, else while reading.

    The body (small by construction) is read here and replayed to the app, so
    a chunked upload cannot slip past the limit.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        too_big = error_response(413, f"request body too large (limit {self.max_bytes} bytes)")
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_bytes:
                    await too_big(scope, receive, send)
                    return
            except ValueError:
                await error_response(400, "invalid Content-Length header")(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await too_big(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # later calls wait for the disconnect, as Starlette expects

        await self.app(scope, replay, send)

"""Request limits enforced before a route runs: the body's size (413) and the time it may take to arrive (408) —
see :mod:`.protocol` for the headers' deadline and :mod:`.runner` for a call's time and concurrency."""

from __future__ import annotations

import asyncio
from typing import Any

from gearag.server.errors import error_response


class BodyLimitMiddleware:
    """Reject bodies over ``max_bytes`` with 413: by ``Content-Length`` at once, else while reading; and bodies
    not received whole within ``timeout`` seconds with 408 (a client that trickles its body holds no slot).

    The body (small by construction) is read here and replayed to the app, so
    a chunked upload cannot slip past the limit.
    """

    def __init__(self, app: Any, max_bytes: int, timeout: float = 10.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                slow = error_response(408, f"request body not received within {self.timeout:g} s",
                                      headers={"Connection": "close"})
                await slow(scope, receive, send)
                return
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

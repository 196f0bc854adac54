"""Slow clients are cut off: a deadline for a request's headers, enforced where uvicorn reads them.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``) but not a
client that trickles its request line and headers: 300 half-sent requests held
their connections for as long as the clients liked. The ASGI app is not called
until the headers are complete, so the bound has to live in the HTTP protocol:
:func:`protocol_class` is uvicorn's h11 protocol with a timer armed when a
connection opens (and again when a keep-alive connection starts its next
request), cancelled once a request's headers have arrived, and closing the
connection when it fires first. The body has its own deadline, enforced by
:class:`~gearag.server.limits.BodyLimitMiddleware` (408).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request headers take over ``header_timeout`` s."""

    header_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # no response: the client has not sent a request to answer

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a request's headers are in: its body has its own deadline
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # a kept-alive connection's next request gets the same deadline
            if self.conn.their_state is not h11.IDLE:  # a pipelined request was already read whole
                self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def protocol_class(header_timeout: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class to give ``uvicorn.run(http=...)`` for this deadline."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout": header_timeout})

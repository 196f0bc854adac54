"""A deadline and stop flag that reach the work of one call, wherever it runs.

The service (:mod:`gearag.server.runner`) runs each request's method call in a
worker thread. A Python thread cannot be killed, so a request past its time
limit must be stopped by the work itself: the call runs under a
:class:`Deadline` (:func:`running_under`), and the places where work can last
— each agent step, each LLM attempt and the wait before a retry, PPR
iterations — call :func:`check`, which raises :class:`StoppedError` once the
deadline has passed or the request was abandoned. An LLM request's own
deadline is also cut to what is left (:func:`remaining`), so a slow endpoint
cannot hold the worker past the request's limit.

Outside a :func:`running_under` block (the CLI, the library) there is no
deadline: :func:`check` does nothing and :func:`remaining` is infinite.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field


class StoppedError(Exception):
    """Raised inside a call whose deadline passed or whose client went away."""


@dataclass
class Deadline:
    """When a call must stop (``time.monotonic()`` seconds), and a flag that stops it sooner."""

    at: float = math.inf
    stop: threading.Event = field(default_factory=threading.Event)
    #: Why the call stops (the message of the StoppedError :func:`check` raises).
    reason: str = "the request timed out or was abandoned"

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def passed(self) -> bool:
        return self.stop.is_set() or time.monotonic() >= self.at

    def remaining(self) -> float:
        return 0.0 if self.stop.is_set() else max(0.0, self.at - time.monotonic())


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("gearag_deadline", default=None)


@contextlib.contextmanager
def running_under(deadline: Deadline) -> Iterator[Deadline]:
    """Run the block (in this thread or context) under ``deadline``."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def current() -> Deadline | None:
    return _CURRENT.get()


def check() -> None:
    """Raise :class:`StoppedError` if the current call's deadline has passed or it was stopped."""
    deadline = _CURRENT.get()
    if deadline is not None and deadline.passed():
        raise StoppedError(deadline.reason)


def remaining() -> float:
    """Seconds the current call has left (``inf`` outside a deadline)."""
    deadline = _CURRENT.get()
    return math.inf if deadline is None else deadline.remaining()

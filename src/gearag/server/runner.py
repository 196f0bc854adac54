"""Method calls off the event loop: a bounded thread pool, a concurrency limit (503), a time limit (504).

The index and the methods are shared by every request (see :mod:`gearag.api`);
each call runs in one of ``settings.workers`` threads. At most
``settings.max_concurrency`` calls are admitted (running or queued); the next
one gets 503 at once instead of waiting. A call past ``request_timeout`` gets
504 and its slot is freed as soon as the work notices: the work runs under a
:class:`~gearag.deadline.Deadline` that every agent step, PPR iteration and LLM
attempt checks (an LLM request's own deadline is cut to the time left), so a
timed-out or abandoned call stops within one step of its limit. What one call
may ask for is bounded by the request options' limits
(:mod:`gearag.server.requests`).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gearag.api import Gearag
from gearag.deadline import Deadline, StoppedError, check, running_under
from gearag.results import Result
from gearag.server.errors import APIError, client_error
from gearag.server.requests import request_config
from gearag.server.settings import ServerSettings
from gearag.trace import StepTrace

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["Call", "Runner", "StoppedError"]


@dataclass
class Call:
    """One admitted method call: its future, its deadline (with the stop flag) and the steps it reported so far."""

    future: asyncio.Future[Result]
    deadline: Deadline
    steps: asyncio.Queue[dict[str, Any]]

    @property
    def stop(self) -> threading.Event:
        return self.deadline.stop


def _accepts_on_step(method: object) -> bool:
    try:
        return "on_step" in inspect.signature(method.__call__).parameters  # type: ignore[operator]
    except (TypeError, ValueError):
        return False


class Runner:
    """Runs ``gearag`` method calls for the service with its limits."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.executor = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="gearag-call")
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._lock = threading.Lock()
        self.active = 0

    def config(self, method: str, options: dict[str, Any]) -> DataclassInstance:
        """The method's typed config for a request: the request's options (question-time ones only, within their
        bounds) over the operator's, as the method's config dataclass; unknown methods, options a request may not
        set and bad values raise ConfigError (→ 400 naming the key) before any work."""
        return request_config(method, options, self.settings.method_options)

    def submit(self, gearag: Gearag, method: str, config: Any, question: str, top_k: int, *,
               stream: bool = False) -> Call:
        """Admit and start one call on ``gearag`` (503 when ``max_concurrency`` calls are in flight). The caller
        formats the result with the same ``gearag``: rows are that index's, even if an update is opened meanwhile."""
        if not self._slots.acquire(blocking=False):
            raise APIError(503, f"server busy ({self.settings.max_concurrency} calls in flight); retry shortly",
                           headers={"Retry-After": "1"})
        with self._lock:
            self.active += 1
        loop = asyncio.get_running_loop()
        # The deadline starts at admission, as the 504 does: queued time counts.
        deadline = Deadline.after(self.settings.request_timeout)
        steps: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def on_step(step: StepTrace) -> None:
            if stream:
                loop.call_soon_threadsafe(steps.put_nowait, step.to_dict())

        def work() -> Result:
            try:
                with running_under(deadline):
                    check()  # a call that waited in the queue past its limit does not start
                    m = gearag.method(method, config)
                    if _accepts_on_step(m):
                        return m(question, top_k, on_step=on_step)  # type: ignore[call-arg]
                    return m(question, top_k)
            finally:
                with self._lock:
                    self.active -= 1
                self._slots.release()

        future = loop.run_in_executor(self.executor, work)
        # A call that outlives its request still finishes; retrieve its outcome so nothing is logged as lost.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return Call(future, deadline, steps)

    def _timeout(self, call: Call) -> APIError:
        call.stop.set()
        status, message, type_ = client_error(StoppedError(), self.settings.request_timeout)
        return APIError(status, message, type_)

    async def result(self, call: Call) -> Result:
        """Wait for ``call`` within the time limit."""
        try:
            return await asyncio.wait_for(asyncio.shield(call.future), self.settings.request_timeout)
        except (TimeoutError, StoppedError):  # the wait, or the work itself at its deadline
            raise self._timeout(call) from None
        except asyncio.CancelledError:
            call.stop.set()
            raise

    async def run(self, gearag: Gearag, method: str, options: dict[str, Any], question: str, top_k: int) -> Result:
        config = self.config(method, options)
        return await self.result(self.submit(gearag, method, config, question, top_k))

    async def events(self, call: Call) -> AsyncIterator[tuple[str, Any]]:
        """``("step", step_dict)`` as each agent step finishes, then ``("result", Result)``; 504 past the limit."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.request_timeout
        try:
            while True:
                getter: asyncio.Future[Any] = asyncio.ensure_future(call.steps.get())
                waiting: set[asyncio.Future[Any]] = {getter, call.future}
                done, _ = await asyncio.wait(waiting, timeout=max(0.0, deadline - loop.time()),
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield "step", getter.result()
                    continue
                getter.cancel()
                if call.future in done:
                    while not call.steps.empty():  # steps are queued before the result is set
                        yield "step", call.steps.get_nowait()
                    try:
                        outcome = call.future.result()
                    except StoppedError:
                        raise self._timeout(call) from None
                    yield "result", outcome
                    return
                raise self._timeout(call)
        finally:
            if not call.future.done():
                call.stop.set()  # the client went away or the deadline passed: stop at the next step

    def shutdown(self) -> None:
        """Let running calls finish (uvicorn has already stopped accepting requests)."""
        self.executor.shutdown(wait=True, cancel_futures=True)


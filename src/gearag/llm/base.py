"""What every role of gearag needs from a language model: the :class:`LLM` interface and its reply.

Also the helpers every implementation shares: prompt normalisation, a
token estimate for servers that report no usage, and :func:`ordered_map`,
bounded concurrency over threads with results in input order.
Implementations: :class:`~gearag.llm.client.LLMClient` (any OpenAI-compatible
HTTP endpoint) and :class:`~gearag.llm.fake.FakeLLM` (scripted, in process).
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from gearag.llm.usage import Usage, UsageLedger

Message = Mapping[str, Any]
#: A chat prompt: a list of ``{"role": ..., "content": ...}`` messages, or a
#: bare string taken as one user message.
Messages = Sequence[Message] | str

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Completion:
    """One reply: its text, token usage and how it was obtained."""

    text: str
    usage: Usage
    #: Served from the response cache (no request was sent).
    cached: bool = False
    #: Wall-clock seconds of the call, retries and waits included (0 for cache hits).
    latency: float = 0.0
    #: The model that answered, as the server names it.
    model: str = ""
    #: ``stop``, ``length`` (cut off by max_tokens)... when the server says.
    finish_reason: str | None = None
    #: Attempts retried before this reply arrived.
    retries: int = 0

    @property
    def truncated(self) -> bool:
        """The reply hit the token limit, so structured output may be cut off."""
        return self.finish_reason == "length"


@runtime_checkable
class LLM(Protocol):
    """What every role of gearag needs from a language model."""

    #: Model name; part of cache and checkpoint keys.
    model: str
    #: Where usage is recorded.
    ledger: UsageLedger
    #: Requests in flight at once in batch work.
    concurrency: int

    def complete(
        self, messages: Messages, *, role: str, question_id: str | None = None, **params: Any
    ) -> Completion:
        """Send one chat prompt and return the reply. Raises :class:`LLMError` when it fails for good."""
        ...

    async def acomplete(
        self, messages: Messages, *, role: str, question_id: str | None = None, **params: Any
    ) -> Completion:
        """Async :meth:`complete`."""
        ...

    def complete_many(
        self,
        batch: Sequence[Messages],
        *,
        role: str,
        question_ids: Sequence[str | None] | None = None,
        **params: Any,
    ) -> list[Completion]:
        """Complete many prompts concurrently (at most ``concurrency`` at once); results in input order."""
        ...


def as_messages(messages: Messages) -> list[dict[str, Any]]:
    """Normalise a prompt: a bare string becomes a single user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def estimate_tokens(text: str) -> int:
    """Rough token count (≈ 4 characters a token) for servers that report no usage."""
    return max(1, (len(text) + 3) // 4) if text else 0


def prompt_text(messages: Sequence[Message]) -> str:
    """The text of every message, one after another (for token estimates and test assertions)."""
    return "\n".join(str(m.get("content") or "") for m in messages)


def pair_question_ids(
    batch: Sequence[Messages], question_ids: Sequence[str | None] | None
) -> list[tuple[Messages, str | None]]:
    """Pair prompts with their question ids (None when not given)."""
    qids = list(question_ids) if question_ids is not None else [None] * len(batch)
    if len(qids) != len(batch):
        raise ValueError("question_ids must have one entry per prompt")
    return list(zip(batch, qids, strict=True))


def ordered_map(
    fn: Callable[[T], R], items: Iterable[T], concurrency: int, *, ahead: int | None = None
) -> Iterator[R]:
    """Apply ``fn`` to ``items`` on up to ``concurrency`` threads; yield results lazily, in input order.

    At most ``ahead`` items (default ``2 * concurrency``) are started before
    the oldest one is yielded, so a consumer that checkpoints each result
    loses at most that much work on a crash (and nothing if the results are
    cached). The first exception is re-raised in order; work not yet started
    is then dropped. Worker threads are daemons: an interrupted run exits
    without waiting for requests in flight. Each item runs in a copy of the
    caller's context (as asyncio tasks do), so context variables such as the
    usage scope (:func:`gearag.llm.usage.usage_scope`) reach the workers.
    """
    if concurrency <= 1:
        for item in items:
            yield fn(item)
        return
    window = max(concurrency, ahead if ahead is not None else 2 * concurrency)
    tasks: queue.SimpleQueue[tuple[Future[R], T, contextvars.Context] | None] = queue.SimpleQueue()

    def worker() -> None:
        while True:
            job = tasks.get()
            if job is None:
                return
            future, item, context = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(context.run(fn, item))
            except BaseException as exc:  # handed to the consumer
                future.set_exception(exc)

    threads = [threading.Thread(target=worker, name=f"gearag-llm-{i}", daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    source = iter(items)
    pending: deque[Future[R]] = deque()

    def submit_one() -> bool:
        try:
            item = next(source)
        except StopIteration:
            return False
        future: Future[R] = Future()
        pending.append(future)
        tasks.put((future, item, contextvars.copy_context()))
        return True

    try:
        while len(pending) < window and submit_one():
            pass
        while pending:
            result = pending.popleft().result()
            submit_one()
            yield result
    finally:
        for future in pending:
            future.cancel()
        for _ in threads:
            tasks.put(None)

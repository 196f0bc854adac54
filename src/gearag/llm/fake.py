"""An in-process :class:`~gearag.llm.base.LLM` for tests and dry runs (no network).

Replies come from a function ``(messages, role) -> str``, a list consumed in
order, or a dict from role name to a string or such a function. Usage is
estimated from text length and recorded in the ledger like the HTTP client's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gearag.errors import LLMError
from gearag.llm.base import (
    Completion,
    Messages,
    as_messages,
    estimate_tokens,
    ordered_map,
    pair_question_ids,
    prompt_text,
)
from gearag.llm.usage import Usage, UsageLedger

Responder = Callable[[list[dict[str, Any]], str], str]


@dataclass(frozen=True, slots=True)
class FakeCall:
    role: str
    messages: list[dict[str, Any]]
    question_id: str | None
    params: dict[str, Any]

    @property
    def prompt(self) -> str:
        return prompt_text(self.messages)


class FakeLLM:
    """Scripted replies with the :class:`LLM` interface; records every call in :attr:`calls`."""

    def __init__(
        self,
        replies: Responder | Sequence[str] | Mapping[str, str | Responder],
        *,
        model: str = "fake-llm",
        ledger: UsageLedger | None = None,
        concurrency: int = 4,
    ) -> None:
        self.model = model
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.concurrency = concurrency
        self.calls: list[FakeCall] = []
        self._replies = replies
        self._queue = list(replies) if isinstance(replies, Sequence) and not isinstance(replies, str) else None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return f"{self.model}|fake"

    def _reply(self, messages: list[dict[str, Any]], role: str) -> str:
        replies = self._replies
        if self._queue is not None:
            with self._lock:
                if not self._queue:
                    raise LLMError(f"FakeLLM ran out of scripted replies (role {role!r})")
                return self._queue.pop(0)
        if isinstance(replies, Mapping):
            if role not in replies:
                raise LLMError(f"FakeLLM has no reply for role {role!r}")
            reply = replies[role]
            return reply(messages, role) if callable(reply) else str(reply)
        if callable(replies):
            return replies(messages, role)
        raise TypeError(f"FakeLLM replies must be a function, a list or a mapping, not {type(replies).__name__}")

    def complete(self, messages: Messages, *, role: str, question_id: str | None = None, **params: Any) -> Completion:
        msgs = as_messages(messages)
        with self._lock:
            self.calls.append(FakeCall(role, msgs, question_id, dict(params)))
        text = self._reply(msgs, role)
        usage = Usage(estimate_tokens(prompt_text(msgs)), estimate_tokens(text))
        self.ledger.record(role, usage, model=self.model, question_id=question_id)
        return Completion(text, usage, model=self.model, finish_reason="stop")

    async def acomplete(self, messages: Messages, *, role: str, question_id: str | None = None,
                        **params: Any) -> Completion:
        return self.complete(messages, role=role, question_id=question_id, **params)

    def complete_many(self, batch: Sequence[Messages], *, role: str,
                      question_ids: Sequence[str | None] | None = None, **params: Any) -> list[Completion]:
        jobs = pair_question_ids(batch, question_ids)
        return list(ordered_map(lambda j: self.complete(j[0], role=role, question_id=j[1], **params),
                                jobs, self.concurrency))

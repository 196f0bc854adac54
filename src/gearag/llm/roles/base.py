"""A role is one kind of LLM call: the prompt it sends, the parser of its replies and their type.

:class:`Role` declares one; :class:`RoleCaller` runs roles over one
:class:`~gearag.llm.base.LLM` and one :class:`~gearag.llm.prompts.PromptSet`,
records each call in the LLM's ledger under the role's name (and
``question_id`` when given) and counts parse outcomes per role.

Bad replies never raise: a role's parser degrades to its safe fallback value
(:func:`~gearag.llm.parse.never_raise`) and the outcome is counted in
:attr:`RoleCaller.parse_stats`. Endpoint failures (after retries) do raise
:class:`~gearag.errors.LLMError`: the caller decides whether a question can
be skipped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gearag.llm.base import LLM, Completion
from gearag.llm.bounds import input_chars, reply_params
from gearag.llm.parse import Parsed, Parser, ParseStats
from gearag.llm.prompts import DEFAULT_PROMPTS, PromptSet

log = logging.getLogger("gearag.llm")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Role(Generic[T]):
    """One LLM role: ledger name, prompt template and reply parser (which fixes the output type ``T``)."""

    #: Name in the usage ledger and in :attr:`RoleCaller.parse_stats` (variants of a role share it).
    name: str
    #: Key of the prompt template in a :class:`~gearag.llm.prompts.PromptSet`.
    prompt: str
    #: Reply parser; never raises, falls back to the role's safe value.
    parser: Parser[T]

    def messages(self, prompts: PromptSet, values: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages of this role's prompt with ``values`` filled in."""
        return prompts.render(self.prompt, **values)

    def bounds(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``max_tokens`` (and stop sequences) for a call on ``values``: :data:`gearag.llm.bounds.BOUNDS`."""
        return reply_params(self.name, input_chars(values))

    def parse(self, completion: Completion) -> Parsed[T]:
        """The parsed reply; a reply the server cut off at the token limit is marked truncated."""
        parsed = self.parser(completion.text)
        if completion.truncated and not parsed.truncated:
            parsed.truncated = True
            parsed.problems.append("reply hit the token limit")
        return parsed


class RoleCaller:
    """Calls roles over one LLM: render the prompt, complete, parse, count."""

    def __init__(self, llm: LLM, prompts: PromptSet | None = None) -> None:
        self.llm = llm
        self.prompts = prompts or DEFAULT_PROMPTS
        self._last = threading.local()
        #: Parse outcomes per role (replies, repaired, unusable, items kept/dropped).
        self.parse_stats: dict[str, ParseStats] = {}

    def call(self, role: Role[T], values: Mapping[str, Any], question_id: str | None = None) -> Parsed[T]:
        """One LLM call for ``role``, its reply bounded by the role (:mod:`gearag.llm.bounds`); raises
        :class:`~gearag.errors.LLMError` only if the endpoint fails."""
        completion = self.llm.complete(role.messages(self.prompts, values), role=role.name, question_id=question_id,
                                       **role.bounds(values))
        return self._count(role, role.parse(completion))

    async def acall(self, role: Role[T], values: Mapping[str, Any], question_id: str | None = None) -> Parsed[T]:
        """Async :meth:`call`."""
        messages = role.messages(self.prompts, values)
        completion = await self.llm.acomplete(messages, role=role.name, question_id=question_id, **role.bounds(values))
        return self._count(role, role.parse(completion))

    def last_ok(self) -> bool:
        """Whether this thread's last reply parsed into the structure its role asked for (``Parsed.ok``)."""
        parsed = getattr(self._last, "parsed", None)
        return parsed is None or bool(parsed.ok)

    def _count(self, role: Role[T], parsed: Parsed[T]) -> Parsed[T]:
        self._last.parsed = parsed
        stats = self.parse_stats.get(role.name)
        if stats is None:
            stats = self.parse_stats.setdefault(role.name, ParseStats())
        stats.add(parsed)
        if parsed.problems:
            log.debug("LLM %s reply: %s", role.name, "; ".join(parsed.problems))
        return parsed

    def parse_summary(self) -> dict[str, dict[str, int]]:
        """Parse outcomes per role as plain data."""
        return {role: stats.to_dict() for role, stats in sorted(self.parse_stats.items())}

"""The agent's roles through an OpenAI-compatible LLM (prompts of GEAR App. K.2–K.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gearag.engine import Answer, Engine, EngineConfig
from gearag.expand.llm_reader import LLMReader, llm_roles
from gearag.model import Fact, Passage, Reasoning
from gearag.store.index import Index


class LLMReasoner:
    """``reason(G, q)`` (Eq. 6); a malformed reply degrades to "not answerable"."""

    def __init__(self, roles: Any) -> None:
        self.roles = roles

    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning:
        result = self.roles.reason_full(list(memory), question)
        answer = result.answer_or_why if result.answerable else None
        return Reasoning(bool(result.answerable), result.answer_or_why, answer)


class LLMRewriter:
    """``rewrite(G, q, r)`` (Eq. 7); falls back to the original question."""

    def __init__(self, roles: Any) -> None:
        self.roles = roles

    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str:
        return self.roles.rewrite(list(memory), question, reasoning.text)


class LLMAnswerer:
    """The concise-answer prompt over the top passages (Table 3's setup)."""

    LABEL = "answer"

    def __init__(self, roles: Any) -> None:
        self.roles = roles

    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact]) -> Answer:
        return Answer(self.roles.answer(list(passages), question) or "", self.LABEL, [])


def llm_engine(index: Index, config: EngineConfig, roles: Any | None = None) -> Engine:
    """The roles through an OpenAI-compatible endpoint (registry factory); ``roles`` injects ready LLM roles."""
    if roles is None:
        roles = llm_roles(config)
    reader = LLMReader(index, roles)
    return Engine(
        name="openai",
        reader=reader,
        gist=reader,
        reasoner=LLMReasoner(roles),
        rewriter=LLMRewriter(roles),
        answerer=LLMAnswerer(roles),
        ledger=roles.llm.ledger,
    )

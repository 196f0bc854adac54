"""The agent's roles through an OpenAI-compatible LLM (prompts of GEAR App. K.2–K.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gearag.engine import Answer, Engine, EngineConfig
from gearag.expand.llm_reader import LLMReader, llm_roles
from gearag.model import Fact, Passage, Reasoning
from gearag.store.index import Index

if TYPE_CHECKING:
    from gearag.llm.roles import LLMRoles


class LLMReasoner:
    """``reason(G, q)`` (Eq. 6); a malformed reply degrades to "not answerable"."""

    def __init__(self, roles: LLMRoles) -> None:
        self.roles = roles

    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning:
        return self.roles.reason(memory, question)


class LLMRewriter:
    """``rewrite(G, q, r)`` (Eq. 7); falls back to the original question."""

    def __init__(self, roles: LLMRoles) -> None:
        self.roles = roles

    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str:
        return self.roles.rewrite(memory, question, reasoning.text)


class LLMAnswerer:
    """The concise-answer prompt over the top passages (Table 3's setup)."""

    LABEL = "answer"

    def __init__(self, roles: LLMRoles) -> None:
        self.roles = roles

    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact],
               rows: Sequence[int] | None = None) -> Answer:
        return Answer(self.roles.answer(passages, question), self.LABEL, [])


def llm_engine(index: Index, config: EngineConfig, roles: LLMRoles | None = None) -> Engine:
    """The ``openai`` and ``local`` engines (registry factory): every agent role through one LLM client and one
    ledger (``local``: the client's transport runs a GGUF model in process, :mod:`gearag.llm.local`).

    ``roles`` injects ready LLM roles (tests, the API); otherwise they are made from ``config``.
    """
    if roles is None:
        roles = llm_roles(config)
    reader = LLMReader(index, roles)
    return Engine(
        name=config.engine,
        reader=reader,
        gist=reader,
        reasoner=LLMReasoner(roles),
        rewriter=LLMRewriter(roles),
        answerer=LLMAnswerer(roles),
        ledger=roles.llm.ledger,
    )

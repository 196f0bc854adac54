"""The agent's roles through an OpenAI-compatible LLM (prompts of GEAR App. K.2–K.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gearag.agent.offline import offline_engine
from gearag.engine import Answer, Answerer, Engine, EngineConfig, Reasoner, Rewriter
from gearag.expand.llm_reader import LLMReader, llm_roles
from gearag.llm.fallback import played_call
from gearag.model import Fact, Passage, Reasoning
from gearag.store.interface import IndexStore

if TYPE_CHECKING:
    from gearag.llm.roles import LLMRoles


class LLMReasoner:
    """``reason(G, q)`` (Eq. 6); a reply that does not parse is the offline reasoner's, else "not answerable"."""

    def __init__(self, roles: LLMRoles, offline: Reasoner | None = None) -> None:
        self.roles = roles
        self.offline = offline

    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning:
        offline = self.offline
        return played_call("reason", lambda: self.roles.reason(memory, question), lambda _: self.roles.last_ok(),
                           (lambda: offline.reason(question, memory)) if offline is not None else None)


class LLMRewriter:
    """``rewrite(G, q, r)`` (Eq. 7); a reply with no new question is the offline rewriter's, else the question."""

    def __init__(self, roles: LLMRoles, offline: Rewriter | None = None) -> None:
        self.roles = roles
        self.offline = offline

    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str:
        offline = self.offline
        return played_call("rewrite", lambda: self.roles.rewrite(memory, question, reasoning.text),
                           lambda query: self.roles.last_ok() and query.strip() != question.strip(),
                           (lambda: offline.rewrite(question, memory, reasoning)) if offline is not None else None)


class LLMAnswerer:
    """The concise-answer prompt over the top passages (Table 3's setup); an empty reply is the offline
    answerer's candidate."""

    LABEL = "answer"

    def __init__(self, roles: LLMRoles, offline: Answerer | None = None) -> None:
        self.roles = roles
        self.offline = offline

    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact],
               rows: Sequence[int] | None = None) -> Answer:
        offline = self.offline
        return played_call("answer", lambda: Answer(self.roles.answer(passages, question), self.LABEL, []),
                           lambda answer: bool(answer.text.strip()) and self.roles.last_ok(),
                           (lambda: offline.answer(question, passages, memory, rows)) if offline is not None else None)


def llm_engine(index: IndexStore, config: EngineConfig, roles: LLMRoles | None = None) -> Engine:
    """The ``openai`` and ``local`` engines (registry factory): every agent role through one LLM client and one
    ledger (``local``: the client's transport runs a GGUF model in process, :mod:`gearag.llm.local`).

    ``roles`` injects ready LLM roles (tests, the API); otherwise they are made from ``config``.
    """
    if roles is None:
        roles = llm_roles(config)
    # Weak models degrade, never break: each role's unusable reply is the offline engine's (gearag.llm.fallback).
    offline = offline_engine(index, config) if config.llm_fallback else None
    return Engine(
        name=config.engine,
        reader=LLMReader(index, roles, offline.reader if offline else None, "reader"),
        gist=LLMReader(index, roles, offline.gist if offline else None, "gist"),
        reasoner=LLMReasoner(roles, offline.reasoner if offline else None),
        rewriter=LLMRewriter(roles, offline.rewriter if offline else None),
        answerer=LLMAnswerer(roles, offline.answerer if offline else None),
        ledger=roles.llm.ledger,
    )

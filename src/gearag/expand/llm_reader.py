"""The LLM reader: the paper's reader prompt (App. K.2) through the LLM layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gearag.engine import EngineConfig
from gearag.model import Fact
from gearag.store.interface import IndexStore

if TYPE_CHECKING:  # the LLM layer imports httpx: load it only when an LLM method runs
    from gearag.expand.reader import Reader
    from gearag.llm.roles import LLMRoles


class LLMReader:
    """Proximal triples from an LLM reading the passages (Eq. 1, or Eq. 4 with a memory).

    Its triples are free text; tripleLink maps them to index triples. With an ``offline`` reader, a reply that
    yields no fact is replaced by that reader's facts for the same passages (:mod:`gearag.llm.fallback`),
    counted under ``name`` (``reader``, or ``gist`` for the gist memory's reader).
    """

    def __init__(self, index: IndexStore, roles: LLMRoles, offline: Reader | None = None, name: str = "reader") -> None:
        self.index = index
        self.roles = roles
        self.offline = offline
        self.name = name

    def read(self, question: str, passages: Sequence[int], memory: Sequence[Fact] = ()) -> list[Fact]:
        from gearag.llm.fallback import played_call

        docs = [self.index.passages[r] for r in passages]
        offline = self.offline
        return played_call(self.name, lambda: self.roles.read(docs, question, memory),
                           lambda facts: bool(facts) and self.roles.last_ok(),
                           (lambda: offline.read(question, passages, memory)) if offline is not None else None)


def llm_roles(config: EngineConfig) -> LLMRoles:
    """The LLM roles for an engine config: ``openai``'s endpoint and model, or ``local``'s GGUF file
    (the environment otherwise)."""
    from gearag.engine import llm_settings
    from gearag.llm import LLMRoles, make_llm

    return LLMRoles(make_llm(**llm_settings(config)))

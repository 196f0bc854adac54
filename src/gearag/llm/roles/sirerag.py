"""SiReRAG's LLM roles (App. G): summaries, coreference rewrites, entities and propositions.

Each role is declared once below (prompt + parser + output type);
:class:`SiReRAGRoles` fills their prompts. The roles return what the model
gave; the index build replaces an unusable proposition or summary reply by
the offline engine's for that passage or cluster when
:attr:`SiReRAGRoles.llm_fallback` is on (:mod:`gearag.llm.fallback`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gearag.llm.parse import Entity, Proposition, parse_answer, parse_entities, parse_propositions, parse_text
from gearag.llm.roles.base import Role, RoleCaller
from gearag.model import Passage

#: A detail-keeping summary of a cluster of texts (RAPTOR/SiReRAG tree nodes).
SUMMARIZE: Role[str] = Role("summarize", "summarize", parse_text)
#: A paragraph with its entity references resolved against the previous one.
COREF: Role[str] = Role("coref", "coref_rewrite", parse_text)
#: Named entities with types (Figure 7 format).
ENTITIES: Role[list[Entity]] = Role("entities", "extract_entities", parse_entities)
#: Facts with their triplets (Figure 8 format).
PROPOSITIONS: Role[list[Proposition]] = Role("propositions", "extract_propositions", parse_propositions)

#: SiReRAG §5's QA step: a concise answer from the top retrieval candidates (ledger role ``answer``).
CONCISE_ANSWER: Role[str] = Role("answer", "sirerag_answer", parse_answer)

ROLES: tuple[Role[Any], ...] = (SUMMARIZE, COREF, ENTITIES, PROPOSITIONS, CONCISE_ANSWER)


class SiReRAGRoles(RoleCaller):
    """SiReRAG's LLM steps over one LLM."""

    #: An index build with these roles replaces a passage's empty propositions and an empty cluster summary
    #: by the offline engine's (spaCy sentence facts, the extractive summary) and counts them under
    #: :data:`PROPOSITIONS` and :data:`SUMMARIZE`'s names (:mod:`gearag.llm.fallback`); False: the raw model
    #: (``gearag index --no-llm-fallback``).
    llm_fallback: bool = True

    def summarize(self, text: str) -> str:
        """A detail-keeping summary of ``text``; "" if the reply is empty."""
        return self.call(SUMMARIZE, {"text": text}).value

    def coref_rewrite(self, paragraph: str, previous: str = "") -> str:
        """``paragraph`` with entity references resolved against ``previous``; unchanged if the reply is empty."""
        values = {"paragraph": paragraph, "previous": previous or "(none)"}
        return self.call(COREF, values).value or paragraph

    def extract_entities(self, text: str) -> list[Entity]:
        """Named entities of ``text`` with their types."""
        return self.call(ENTITIES, {"passage": text}).value

    def extract_propositions(self, text: str, entities: Iterable[str | Entity] = ()) -> list[Proposition]:
        """Facts of ``text`` with their triplets, preferably about ``entities``."""
        names = [e.name if isinstance(e, Entity) else str(e) for e in entities]
        values = {"passage": text, "entities": ", ".join(names) if names else "(none given)"}
        return self.call(PROPOSITIONS, values).value

    def concise_answer(self, candidates: Sequence[Passage], question: str, *, question_id: str | None = None) -> str:
        """SiReRAG §5: answer ``question`` from the retrieval candidates in as few words as possible; "" if none."""
        from gearag.llm.roles.gear import format_passages

        values = {"passages": format_passages(candidates), "question": question}
        return self.call(CONCISE_ANSWER, values, question_id).value

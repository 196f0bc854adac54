"""The peer baselines' LLM roles: IRCoT's next reasoning sentence, HippoRAG's query NER and fact filter.

Prompts are :data:`~gearag.llm.prompts.IRCOT_THOUGHT`, ``HIPPORAG_NER`` and
``HIPPORAG_FILTER`` (our own words, following the published structure:
IRCoT's one-sentence-per-step chain of thought that ends with "So the answer
is:"; HippoRAG's question NER; HippoRAG 2's recognition-memory filter that
keeps at most four of the top facts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gearag.llm.parse import parse_facts, parse_names, parse_thought
from gearag.llm.roles.base import Role, RoleCaller
from gearag.llm.roles.gear import format_passages, format_triples
from gearag.model import Fact, Passage

#: One more sentence of reasoning over the passages retrieved so far (IRCoT's "reason" step).
IRCOT_THOUGHT: Role[str] = Role("ircot", "ircot_thought", parse_thought)
#: Named entities of the question (HippoRAG's query NER).
HIPPORAG_NER: Role[list[str]] = Role("ner", "hipporag_ner", parse_names)
#: The top facts that help answer the question (HippoRAG 2's recognition filter).
HIPPORAG_FILTER: Role[list[Fact]] = Role("filter", "hipporag_filter", parse_facts)

ROLES: tuple[Role[Any], ...] = (IRCOT_THOUGHT, HIPPORAG_NER, HIPPORAG_FILTER)


class BaselineRoles(RoleCaller):
    """IRCoT's and HippoRAG's LLM calls over one LLM."""

    def ircot_thought(self, passages: Sequence[Passage], question: str, thoughts: Sequence[str], *,
                      question_id: str | None = None) -> str:
        """The next reasoning sentence ("" when the reply has none)."""
        values = {"documents": format_passages(passages), "question": question, "thoughts": " ".join(thoughts)}
        return self.call(IRCOT_THOUGHT, values, question_id).value

    def query_entities(self, question: str, *, question_id: str | None = None) -> list[str]:
        """Named entities of ``question`` ([] when the reply has none)."""
        return self.call(HIPPORAG_NER, {"question": question}, question_id).value

    def filter_facts(self, question: str, facts: Sequence[Fact], *, question_id: str | None = None) -> list[Fact]:
        """The facts the model keeps (as it wrote them; callers match them back to the candidates)."""
        values = {"question": question, "facts": format_triples(facts)}
        return self.call(HIPPORAG_FILTER, values, question_id).value

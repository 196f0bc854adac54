"""The LLM roles of GEAR and SiReRAG: format a prompt, call the LLM, parse the reply.

Each method is one LLM call, recorded in the LLM's ledger under its role
name (``read``, ``reason``, ``rewrite``, ``answer``, ``extract``,
``summarize``, ``coref``, ``entities``, ``propositions``) and, when given,
under ``question_id``.

Bad replies never raise: they degrade to a safe value (no triples; *not
answerable*; the original question; an empty answer) and are counted in
:attr:`LLMRoles.parse_stats`. Endpoint failures (after retries) do raise
:class:`~gearag.errors.LLMError`: the caller decides whether a question can
be skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from gearag.llm.engine import LLM
from gearag.llm.parsing import (
    Entity,
    Parsed,
    ParseStats,
    Proposition,
    Reasoning,
    TripleExtraction,
    parse_answer,
    parse_entities,
    parse_facts,
    parse_next_question,
    parse_propositions,
    parse_reasoning,
    parse_text,
    parse_triples,
)
from gearag.llm.prompts import DEFAULT_PROMPTS, PromptSet
from gearag.model import Passage, Triple

log = logging.getLogger("gearag.llm")

Triple3 = tuple[str, str, str]
TripleLike = tuple[str, str, str] | Triple | Sequence[str]
T = TypeVar("T")


def _as_tuple(t: TripleLike) -> Triple3:
    """Accepts ``(s, p, o)`` sequences and any object with ``as_tuple()`` (``Triple``, the agent's triples)."""
    if isinstance(t, Triple) or hasattr(t, "as_tuple"):
        return tuple(str(x) for x in t.as_tuple())  # type: ignore[union-attr,return-value]
    s, p, o = t
    return (str(s), str(p), str(o))


def format_triples(triples: Iterable[TripleLike]) -> str:
    """Triples in the prompts' notation: ``("s", "p", "o"), ("s", "p", "o")``."""
    return ", ".join(
        "(" + ", ".join(json.dumps(x, ensure_ascii=False) for x in _as_tuple(t)) + ")" for t in triples
    )


def format_passages(passages: Sequence[Passage]) -> str:
    """Passages as ``Title: ...`` blocks separated by blank lines (GEAR K.2/K.3 layout)."""
    blocks = []
    for p in passages:
        blocks.append(f"Title: {p.title}\n{p.text}" if p.title else p.text)
    return "\n\n".join(blocks)


def _key(t: Triple3) -> tuple[str, ...]:
    return tuple(" ".join(x.casefold().split()) for x in t)


class LLMRoles:
    """GEAR's reader, reasoner, rewriter and answer generator, and SiReRAG's LLM steps, over one LLM."""

    def __init__(self, llm: LLM, prompts: PromptSet | None = None) -> None:
        self.llm = llm
        self.prompts = prompts or DEFAULT_PROMPTS
        #: Parse outcomes per role (replies, repaired, unusable, items kept/dropped).
        self.parse_stats: dict[str, ParseStats] = {}

    # -- plumbing --------------------------------------------------------------

    def _stats(self, role: str) -> ParseStats:
        stats = self.parse_stats.get(role)
        if stats is None:
            stats = self.parse_stats.setdefault(role, ParseStats())
        return stats

    def _call(self, role: str, prompt: str, values: dict[str, Any], parser: Callable[[str], Parsed[T]],
              question_id: str | None) -> Parsed[T]:
        messages = self.prompts.render(prompt, **values)
        completion = self.llm.complete(messages, role=role, question_id=question_id)
        return self._parsed(role, parser(completion.text), completion.truncated)

    async def _acall(self, role: str, prompt: str, values: dict[str, Any], parser: Callable[[str], Parsed[T]],
                     question_id: str | None) -> Parsed[T]:
        messages = self.prompts.render(prompt, **values)
        completion = await self.llm.acomplete(messages, role=role, question_id=question_id)
        return self._parsed(role, parser(completion.text), completion.truncated)

    def _parsed(self, role: str, parsed: Parsed[T], cut_off: bool) -> Parsed[T]:
        if cut_off and not parsed.truncated:
            parsed.truncated = True
            parsed.problems.append("reply hit the token limit")
        self._stats(role).add(parsed)
        if parsed.problems:
            log.debug("LLM %s reply: %s", role, "; ".join(parsed.problems))
        return parsed

    # -- GEAR: reader (Eq. 1 and 4) ---------------------------------------------

    def _read_values(self, passages: Sequence[Passage], question: str,
                     memory_triples: Iterable[TripleLike] | None) -> tuple[str, dict[str, Any], list[Triple3]]:
        memory = [_as_tuple(t) for t in memory_triples or ()]
        values: dict[str, Any] = {"documents": format_passages(passages), "question": question}
        if memory:
            values["memory"] = format_triples(memory)
            return "read_with_memory", values, memory
        return "read", values, memory

    @staticmethod
    def _new_facts(found: list[Triple3], memory: list[Triple3]) -> list[Triple3]:
        seen = {_key(t) for t in memory}
        out = []
        for t in found:
            k = _key(t)
            if k not in seen:
                seen.add(k)
                out.append(t)
        return out

    def read(self, passages: Sequence[Passage], question: str, memory_triples: Iterable[TripleLike] | None = None,
             *, question_id: str | None = None) -> list[Triple3]:
        """Proximal triples that help answer ``question`` (only new ones when a gist memory is given)."""
        prompt, values, memory = self._read_values(passages, question, memory_triples)
        parsed = self._call("read", prompt, values, parse_facts, question_id)
        return self._new_facts(parsed.value, memory)

    async def aread(self, passages: Sequence[Passage], question: str,
                    memory_triples: Iterable[TripleLike] | None = None, *, question_id: str | None = None
                    ) -> list[Triple3]:
        prompt, values, memory = self._read_values(passages, question, memory_triples)
        parsed = await self._acall("read", prompt, values, parse_facts, question_id)
        return self._new_facts(parsed.value, memory)

    # -- GEAR: reasoning for termination (Eq. 6) -------------------------------

    def reason_full(self, memory_triples: Iterable[TripleLike], question: str, *,
                    question_id: str | None = None) -> Reasoning:
        """The full :class:`Reasoning` (answerable, answer, why)."""
        values = {"question": question, "facts": format_triples(memory_triples)}
        return self._call("reason", "reason", values, parse_reasoning, question_id).value

    def reason(self, memory_triples: Iterable[TripleLike], question: str, *,
               question_id: str | None = None) -> tuple[bool, str]:
        """``(answerable, answer_or_why)``; a malformed reply counts as not answerable."""
        r = self.reason_full(memory_triples, question, question_id=question_id)
        return r.answerable, r.answer_or_why

    async def areason(self, memory_triples: Iterable[TripleLike], question: str, *,
                      question_id: str | None = None) -> tuple[bool, str]:
        values = {"question": question, "facts": format_triples(memory_triples)}
        r = (await self._acall("reason", "reason", values, parse_reasoning, question_id)).value
        return r.answerable, r.answer_or_why

    # -- GEAR: query rewriting (Eq. 7) -----------------------------------------

    def rewrite(self, memory_triples: Iterable[TripleLike], question: str, reason: str, *,
                question_id: str | None = None) -> str:
        """The next question to retrieve with; the original question if the reply has none."""
        values = {"question": question, "facts": format_triples(memory_triples), "reason": reason}
        parsed = self._call("rewrite", "rewrite", values, parse_next_question, question_id)
        return parsed.value or question

    async def arewrite(self, memory_triples: Iterable[TripleLike], question: str, reason: str, *,
                       question_id: str | None = None) -> str:
        values = {"question": question, "facts": format_triples(memory_triples), "reason": reason}
        parsed = await self._acall("rewrite", "rewrite", values, parse_next_question, question_id)
        return parsed.value or question

    # -- answer generation (GEAR K.3) -------------------------------------------

    def _answer_args(self, passages: Sequence[Passage], question: str) -> tuple[str, dict[str, Any]]:
        if passages:
            return "answer", {"passages": format_passages(passages), "question": question}
        return "answer_closed_book", {"question": question}

    def answer(self, passages: Sequence[Passage], question: str, *, question_id: str | None = None) -> str:
        """A concise answer (≤ 6 words asked); closed-book when ``passages`` is empty; "" if none."""
        prompt, values = self._answer_args(passages, question)
        return self._call("answer", prompt, values, parse_answer, question_id).value

    async def aanswer(self, passages: Sequence[Passage], question: str, *, question_id: str | None = None) -> str:
        prompt, values = self._answer_args(passages, question)
        return (await self._acall("answer", prompt, values, parse_answer, question_id)).value

    # -- offline: GEAR triple extraction -------------------------------------------

    def extract_triples(self, passage: Passage) -> TripleExtraction:
        """Named entities and triples of one passage (GEAR K.1)."""
        values = {"title": passage.title, "passage": passage.text}
        return self._call("extract", "extract_triples", values, parse_triples, None).value

    # -- offline: SiReRAG ------------------------------------------------------------

    def summarize(self, text: str) -> str:
        """A detail-keeping summary of a cluster of texts (RAPTOR/SiReRAG tree nodes)."""
        return self._call("summarize", "summarize", {"text": text}, parse_text, None).value

    def coref_rewrite(self, paragraph: str, previous: str = "") -> str:
        """``paragraph`` with entity references resolved against ``previous``; unchanged if the reply is empty."""
        values = {"paragraph": paragraph, "previous": previous or "(none)"}
        return self._call("coref", "coref_rewrite", values, parse_text, None).value or paragraph

    def extract_entities(self, text: str) -> list[Entity]:
        """Named entities with types (SiReRAG Figure 7 format)."""
        return self._call("entities", "extract_entities", {"passage": text}, parse_entities, None).value

    def extract_propositions(self, text: str, entities: Iterable[str | Entity] = ()) -> list[Proposition]:
        """Facts with their triplets (SiReRAG Figure 8 format)."""
        names = [e.name if isinstance(e, Entity) else str(e) for e in entities]
        values = {"passage": text, "entities": ", ".join(names) if names else "(none given)"}
        return self._call("propositions", "extract_propositions", values, parse_propositions, None).value

    def parse_summary(self) -> dict[str, dict[str, int]]:
        """Parse outcomes per role as plain data."""
        return {role: stats.to_dict() for role, stats in sorted(self.parse_stats.items())}

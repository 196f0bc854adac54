"""GEAR's LLM roles: triple extraction (App. K.1), reader, reasoner, rewriter and answer generator (K.2–K.3).

Each role is declared once below (prompt + parser + output type); :class:`GearRoles`
fills their prompts and applies the safe fallbacks that need the call's inputs
(the original question when a rewrite is unusable, only new facts from a reader
given a gist memory).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from gearag.llm.parse import (
    TripleExtraction,
    parse_answer,
    parse_facts,
    parse_next_question,
    parse_reasoning,
    parse_triples,
)
from gearag.llm.roles.base import Role, RoleCaller
from gearag.model import Fact, Passage, Reasoning, Triple

#: Named entities and triples of one passage (offline indexing, GEAR §6.2).
EXTRACT: Role[TripleExtraction] = Role("extract", "extract_triples", parse_triples)
#: Proximal triples from the retrieved passages (Eq. 1) ...
READ: Role[list[Fact]] = Role("read", "read", parse_facts)
#: ... and given the gist memory, new ones only (Eq. 4).
READ_WITH_MEMORY: Role[list[Fact]] = Role("read", "read_with_memory", parse_facts)
#: Can the memory answer the question, and with what (Eq. 6)? Unclear replies: not answerable.
REASON: Role[Reasoning] = Role("reason", "reason", parse_reasoning)
#: The next question to retrieve with (Eq. 7).
REWRITE: Role[str] = Role("rewrite", "rewrite", parse_next_question)
#: A concise answer over the top passages (Table 3's setup) ...
ANSWER: Role[str] = Role("answer", "answer", parse_answer)
#: ... or closed-book, without passages.
ANSWER_CLOSED_BOOK: Role[str] = Role("answer", "answer_closed_book", parse_answer)

ROLES: tuple[Role[Any], ...] = (EXTRACT, READ, READ_WITH_MEMORY, REASON, REWRITE, ANSWER, ANSWER_CLOSED_BOOK)


def format_triples(triples: Iterable[Fact | Triple]) -> str:
    """Triples in the prompts' notation: ``("s", "p", "o"), ("s", "p", "o")``."""
    return ", ".join(
        "(" + ", ".join(json.dumps(x, ensure_ascii=False) for x in t.as_tuple()) + ")" for t in triples
    )


def format_passages(passages: Sequence[Passage]) -> str:
    """Passages as ``Title: ...`` blocks separated by blank lines (GEAR K.2/K.3 layout)."""
    return "\n\n".join(f"Title: {p.title}\n{p.text}" if p.title else p.text for p in passages)


def extract_values(passage: Passage) -> dict[str, str]:
    """The extraction prompt's values for ``passage``."""
    return {"title": passage.title, "passage": passage.text}


def _key(fact: Fact) -> tuple[str, ...]:
    return tuple(" ".join(x.casefold().split()) for x in fact)


def new_facts(found: Iterable[Fact], memory: Iterable[Fact]) -> list[Fact]:
    """``found`` without facts already in ``memory`` or repeated (compared case- and space-insensitively)."""
    seen = {_key(t) for t in memory}
    out = []
    for t in found:
        k = _key(t)
        if k not in seen:
            seen.add(k)
            out.append(t)
    return out


class GearRoles(RoleCaller):
    """GEAR's reader, reasoner, rewriter and answer generator, and its triple extraction, over one LLM."""

    # -- reader (Eq. 1 and 4) ------------------------------------------------------

    @staticmethod
    def _read(passages: Sequence[Passage], question: str,
              memory: Sequence[Fact]) -> tuple[Role[list[Fact]], dict[str, Any]]:
        values = {"documents": format_passages(passages), "question": question}
        if memory:
            return READ_WITH_MEMORY, {**values, "memory": format_triples(memory)}
        return READ, values

    def read(self, passages: Sequence[Passage], question: str, memory: Iterable[Fact] | None = None,
             *, question_id: str | None = None) -> list[Fact]:
        """Proximal triples that help answer ``question`` (only new ones when a gist memory is given)."""
        known = list(memory or ())
        role, values = self._read(passages, question, known)
        return new_facts(self.call(role, values, question_id).value, known)

    async def aread(self, passages: Sequence[Passage], question: str, memory: Iterable[Fact] | None = None,
                    *, question_id: str | None = None) -> list[Fact]:
        """Async :meth:`read`."""
        known = list(memory or ())
        role, values = self._read(passages, question, known)
        return new_facts((await self.acall(role, values, question_id)).value, known)

    # -- reasoning for termination (Eq. 6) -----------------------------------------

    def reason(self, memory: Iterable[Fact], question: str, *, question_id: str | None = None) -> Reasoning:
        """Whether ``memory`` answers ``question``: ``text`` is the answer, or why not; malformed means not."""
        values = {"question": question, "facts": format_triples(memory)}
        return self.call(REASON, values, question_id).value

    async def areason(self, memory: Iterable[Fact], question: str, *,
                      question_id: str | None = None) -> Reasoning:
        """Async :meth:`reason`."""
        values = {"question": question, "facts": format_triples(memory)}
        return (await self.acall(REASON, values, question_id)).value

    # -- query rewriting (Eq. 7) ------------------------------------------------------

    def rewrite(self, memory: Iterable[Fact], question: str, reason: str, *,
                question_id: str | None = None) -> str:
        """The next question to retrieve with; the original question if the reply has none."""
        values = {"question": question, "facts": format_triples(memory), "reason": reason}
        return self.call(REWRITE, values, question_id).value or question

    async def arewrite(self, memory: Iterable[Fact], question: str, reason: str, *,
                       question_id: str | None = None) -> str:
        """Async :meth:`rewrite`."""
        values = {"question": question, "facts": format_triples(memory), "reason": reason}
        return (await self.acall(REWRITE, values, question_id)).value or question

    # -- answer generation (K.3) --------------------------------------------------------

    @staticmethod
    def _answer(passages: Sequence[Passage], question: str) -> tuple[Role[str], dict[str, Any]]:
        if passages:
            return ANSWER, {"passages": format_passages(passages), "question": question}
        return ANSWER_CLOSED_BOOK, {"question": question}

    def answer(self, passages: Sequence[Passage], question: str, *, question_id: str | None = None) -> str:
        """A concise answer (≤ 6 words asked); closed-book when ``passages`` is empty; "" if none."""
        role, values = self._answer(passages, question)
        return self.call(role, values, question_id).value

    async def aanswer(self, passages: Sequence[Passage], question: str, *, question_id: str | None = None) -> str:
        """Async :meth:`answer`."""
        role, values = self._answer(passages, question)
        return (await self.acall(role, values, question_id)).value

    # -- offline: triple extraction (K.1) -------------------------------------------------

    def extract_triples(self, passage: Passage) -> TripleExtraction:
        """Named entities and triples of one passage."""
        return self.call(EXTRACT, extract_values(passage)).value

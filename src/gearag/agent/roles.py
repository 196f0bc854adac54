"""The agent's roles, each with an offline and an LLM implementation.

* reader — proximal triples from passages (Eq. 1 and 4); see :mod:`gearag.expand.reader`;
* reasoner — is the question answerable from the gist memory (Eq. 6)?
* rewriter — the next query (Eq. 7);
* answerer — a short answer from the final passages (Table 3's QA setup).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gearag.expand.reader import Reader
from gearag.model import Fact, Passage, Reasoning


@dataclass
class Answer:
    text: str
    #: How to present it: an LLM answer, or the offline engine's extracted candidate.
    label: str
    evidence: list[str] = field(default_factory=list)


class Reasoner(Protocol):
    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning: ...


class Rewriter(Protocol):
    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str: ...


class Answerer(Protocol):
    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact]) -> Answer: ...


@dataclass
class Engine:
    """One implementation of every role, plus its token ledger (None for the offline engine)."""

    name: str
    reader: Reader
    gist: Reader
    reasoner: Reasoner
    rewriter: Rewriter
    answerer: Answerer
    ledger: object | None = None

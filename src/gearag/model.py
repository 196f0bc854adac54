"""The data model: passages, triples, questions and ranked results.

GEAR §3: ``C`` is the index of passages and ``T`` the index of triples
``(s, p, o)``, each triple tied to exactly one passage (``Triple.passage``).
Entities are the normalised heads and tails of triples; two triples are
neighbours in the triple graph when they share a head or tail entity.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrievable chunk of text (an element of ``C``)."""

    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """The text that retrievers index: the title, a newline, the body."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Triple:
    """A (subject, predicate, object) fact tied to exactly one passage (an element of ``T``).

    ``passage`` is the row of the source passage in the index (0-based).
    """

    subject: str
    predicate: str
    object: str
    passage: int = -1

    @property
    def text(self) -> str:
        """The triple as a short sentence, the form retrievers and embedders see."""
        return f"{self.subject} {self.predicate} {self.object}"

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)


@dataclass(frozen=True, slots=True)
class Fact:
    """A (subject, predicate, object) statement as text: what extractors emit, readers pick and the gist memory holds.

    ``source`` is the index triple id when the fact is one of the index's
    triples (the offline reader's), ``None`` when a model wrote it.
    Unpacks like a tuple: ``s, p, o = fact``.
    """

    subject: str
    predicate: str
    object: str
    source: int | None = None

    @property
    def text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)

    def __iter__(self) -> Iterator[str]:
        return iter((self.subject, self.predicate, self.object))


@dataclass(slots=True)
class Reasoning:
    """``a(n), r(n) = reason(G(n), q)`` (GEAR §5.2, Eq. 6): answerability and its reason or answer."""

    answerable: bool
    #: The answer when answerable, else why not.
    text: str = ""
    answer: str | None = None
    #: Evidence path behind the decision, as readable triples.
    evidence: list[str] = field(default_factory=list)
    #: Evidence facts the reasoner read beyond the gist memory (e.g. from the pages a
    #: comparison's branches resolve to), with their index triple ids; the agent's
    #: output ranking seeds them with the memory.
    facts: list[Fact] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GoldRef:
    """A gold passage as a benchmark names it: a title, and the text where titles repeat."""

    title: str
    text: str | None = None


@dataclass(slots=True)
class Question:
    """A question with optional answers and gold passages."""

    id: str
    question: str
    answer: str | None = None
    answer_aliases: list[str] = field(default_factory=list)
    gold: list[GoldRef] = field(default_factory=list)

    @property
    def answers(self) -> list[str]:
        """Every acceptable answer string (the answer first, then aliases)."""
        out = [self.answer] if self.answer else []
        return out + [a for a in self.answer_aliases if a and a not in out]


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result: a row of a collection of the index and its score (higher is better)."""

    idx: int
    score: float
    #: The collection ``idx`` is a row of (methods return passage rows).
    collection: str = "passages"

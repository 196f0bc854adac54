"""The data model: passages, triples, questions and ranked results.

GEAR §3: ``C`` is the index of passages and ``T`` the index of triples
``(s, p, o)``, each triple tied to exactly one passage (``Triple.passage``).
Entities are the normalised heads and tails of triples; two triples are
neighbours in the triple graph when they share a head or tail entity.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from dataclasses import dataclass, field

_ARTICLES = re.compile(r"^(the|a|an)\s+")
_NON_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1 << 18)
def normalise_entity(name: str) -> str:
    """Canonical form of an entity mention, used as the graph's node key.

    Unicode NFKC, case-folded, accents stripped, punctuation dropped, a
    leading English article removed and whitespace collapsed, so that
    ``"The Beatles"``, ``"the beatles"`` and ``"Beatles"`` meet in one node.
    """
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.casefold()
    text = _NON_WORD.sub(" ", text)
    text = _SPACES.sub(" ", text).strip()
    text = _ARTICLES.sub("", text)
    return text


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
    """One ranked result: a row in the searched index and its score (higher is better)."""

    idx: int
    score: float

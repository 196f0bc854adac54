"""Light question analysis for the offline engine: answer type, content terms, option entities."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from gearag.retrieve.bm25 import tokenize
from gearag.text import YEAR as _YEAR
from gearag.text import has_date, is_named

__all__ = ["ANSWER_TYPES", "QuestionInfo", "analyse", "matches_type"]

ANSWER_TYPES = ("date", "number", "place", "person", "yesno", "entity")

_NUMBER = re.compile(r"\d")
_AUX = ("is ", "are ", "was ", "were ", "do ", "does ", "did ", "can ", "could ", "has ", "have ", "had ", "will ")
_PLACE_WORDS = ("where", "place", "city", "country", "state", "county", "town", "location", "nationality",
                "born in", "located", "headquarter", "province", "region", "continent", "river")
_PERSON_WORDS = ("who ", "whom", "whose", "father", "mother", "spouse", "wife", "husband", "son ", "daughter",
                 "director", "composer", "performer", "author", "founder", "grandfather", "grandmother",
                 "brother", "sister", "child", "producer", "writer", "singer", "actor", "actress", "ceo", "leader")


@dataclass(frozen=True)
class QuestionInfo:
    text: str
    answer_type: str
    #: Stemmed content terms (BM25 tokenisation: no stop words).
    terms: tuple[str, ...]
    #: For "X or Y" comparison questions, the two options.
    options: tuple[str, ...] = ()


@lru_cache(maxsize=4096)
def analyse(question: str) -> QuestionInfo:
    q = question.strip()
    low = " " + q.lower() + " "
    options = _options(q)
    if options and any(w in low for w in (" first", " earlier", " later", " older", " younger", " more ", " longer",
                                          " born first", " died first", " last")):
        kind = "entity"
    elif q.lower().startswith(_AUX):
        kind = "yesno"
    elif re.search(r"\b(when|what year|which year|what date|date of|year)\b", low):
        kind = "date"
    elif re.search(r"\bhow (many|much|old|long|tall)\b|\bpopulation\b", low):
        kind = "number"
    elif any(w in low for w in _PLACE_WORDS):
        kind = "place"
    elif any(w in low for w in _PERSON_WORDS):
        kind = "person"
    else:
        kind = "entity"
    return QuestionInfo(q, kind, tuple(tokenize([q])[0]), options)


def _options(question: str) -> tuple[str, ...]:
    """``A or B`` at the end of a question ("Which film came out first, A or B?")."""
    m = re.search(r"[,:]\s*([^,?]+?)\s+or\s+([^?]+?)\s*\?*$", question)
    if not m:
        return ()
    return (m.group(1).strip(), m.group(2).strip())


def matches_type(value: str, answer_type: str) -> bool:
    """Whether a fact's value can answer a question of ``answer_type``."""
    if answer_type == "date":
        return has_date(value)
    if answer_type == "number":
        return bool(_NUMBER.search(value))
    if answer_type in ("place", "person"):
        return is_named(value) and not _YEAR.search(value)
    return bool(value.strip())

"""Light question analysis for the offline engine: answer type, content terms, option entities.

The English words it looks for are :class:`gearag.words.WordLists`
(place, person, date, number, auxiliary and comparison words); pass your own
to :func:`analyse` to change them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from gearag.text import YEAR as _YEAR
from gearag.text import has_date, is_named
from gearag.tokenizer import tokenize
from gearag.words import DEFAULT_WORDS, WordLists

__all__ = ["ANSWER_TYPES", "QuestionInfo", "analyse", "matches_type"]

ANSWER_TYPES = ("date", "number", "place", "person", "yesno", "entity")

_NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class QuestionInfo:
    text: str
    answer_type: str
    #: Stemmed content terms (BM25 tokenisation: no stop words).
    terms: tuple[str, ...]
    #: For "X or Y" comparison questions, the two options.
    options: tuple[str, ...] = ()


@lru_cache(maxsize=64)
def _phrases(words: tuple[str, ...]) -> re.Pattern[str]:
    """Any of ``words`` as whole words (``(?!)`` never matches: an empty list asks for nothing)."""
    if not words:
        return re.compile(r"(?!)")
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b")


@lru_cache(maxsize=4096)
def analyse(question: str, words: WordLists = DEFAULT_WORDS) -> QuestionInfo:
    q = question.strip()
    low = " " + q.lower() + " "
    options = _options(q)
    if options and any(f" {w}" in low for w in words.comparison_words):
        kind = "entity"
    elif q.lower().startswith(tuple(f"{w} " for w in words.aux_words)):
        kind = "yesno"
    elif _phrases(words.date_words).search(low):
        kind = "date"
    elif _phrases(words.number_words).search(low):
        kind = "number"
    elif any(w in low for w in words.place_words):
        kind = "place"
    elif any(w in low for w in words.person_words):
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

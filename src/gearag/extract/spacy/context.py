"""What the rules know about one passage, and the helpers every rule uses.

:class:`RuleContext` holds a passage's topic (its title without the
disambiguator), the names that stand for the topic, the class nouns that
refer to it ("the film"), the name spans of the piece being read and the
triples found so far. Its methods record triples (:meth:`RuleContext.add`),
read spans, expand a token to its name or noun chunk, resolve what a noun or
pronoun refers to and find a verb's subjects and objects. The rules
themselves are mixins over it: :mod:`.verbs`, :mod:`.nouns` and
:mod:`.passage`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gearag.extract.spacy.clean import split_title
from gearag.extract.spacy.vocab import (
    COMMON_TAGS,
    COPULAS,
    NAME_LINKS,
    NOUN_TAGS,
    PRONOUN_TAGS,
    REL_TAGS,
    SUBJ_DEPS,
    Span,
)
from gearag.model import Fact
from gearag.text import normalise_entity

#: Pronouns that, in an encyclopedia passage, refer to the passage's topic.
_TOPIC_PRONOUNS = frozenset({
    "he", "she", "it", "they", "his", "her", "its", "their", "him", "them", "hers", "theirs", "himself", "herself",
    "itself", "themselves",
})
_MAX_CHUNK_TOKENS = 6
_LEFT_MODS = frozenset({"compound", "amod", "nummod", "nmod", "quantmod"})
_STOP = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "he", "she", "they", "him", "her", "them", "his",
    "hers", "their", "theirs", "we", "us", "our", "you", "your", "i", "me", "my", "who", "whom", "whose", "which",
    "what", "there", "here", "one", "ones", "some", "any", "all", "both", "each", "other", "others", "such", "same",
    "own", "s", "many", "much", "more", "most", "several", "few",
})
_MAX_PRED_WORDS = 4


def clean_span(text: str) -> str:
    """A mention as triple text: whitespace collapsed, edge punctuation and quotes stripped."""
    text = " ".join(text.split())
    return text.strip(" ,;:.-–—'\"“”‘’`()[]")


def degenerate(norm: str) -> bool:
    """Whether a normalised mention says nothing (empty, or only pronouns, articles and quantifiers)."""
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
_GENERIC_NOUNS = frozenset({
    "world", "time", "people", "life", "year", "day", "way", "thing", "part", "man", "woman", "family",
})


class RuleContext:
    """State and shared helpers of the rules for one passage: its title and its parsed pieces."""

    def __init__(self, title: str) -> None:
        self.title = " ".join(title.split())
        self.topic, self.disambiguator = split_title(self.title)
        self.topic_norm = normalise_entity(self.topic)
        self.head_name = self.topic.split(",")[0].strip()
        self.topic_words = normalise_entity(self.head_name).split() or [""]
        self.aliases = self._aliases()
        self.class_nouns: set[str] = set()
        if self.disambiguator:
            self.learn_noun(self.disambiguator.split()[-1].lower())
        title_words = self.head_name.split()
        if len(title_words) >= 2 and title_words[-1].isalpha():
            last = title_words[-1].lower()  # "the airport" in "Chiang Rai International Airport"
            if last not in _GENERIC_NOUNS:
                self.learn_noun(last)
        self.triples: list[Fact] = []
        self._seen: set[tuple[str, str, str]] = set()
        self._objects: set[str] = set()
        self.spans: dict[int, Span] = {}
        self._subj_cache: dict[int, list[str]] = {}

    def _aliases(self) -> set[str]:
        out = {normalise_entity(self.title), self.topic_norm, normalise_entity(self.head_name)}
        words = self.head_name.split()
        if len(words) >= 3 and words[1] in NAME_LINKS and words[0].isalpha():
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
            return words[0] == self.topic_words[0] and words[1] in NAME_LINKS
        if words[0] != self.topic_words[0] or words[-1] != self.topic_words[-1]:
            return False
        it = iter(words)
        return all(w in it for w in self.topic_words)

    def learn_noun(self, noun: str) -> None:
        self.class_nouns.add(noun)
        for group in _CLASS_SYNONYMS:
            if noun in group:
                self.class_nouns |= group

    # -- emit --------------------------------------------------------------

    def add(self, subj: str, pred: str, obj: str, *, raw: bool = False) -> None:
        """Record a triple; subjects and objects that name the title become the title."""
        subj, obj = clean_span(subj), clean_span(obj)
        pred = _short_pred(pred.split())
        if not subj or not obj or not pred:
            return
        ns, no = normalise_entity(subj), normalise_entity(obj)
        if not raw:
            if ns in self.aliases or self.expands_topic(ns):
                subj, ns = self.topic, self.topic_norm
            if no in self.aliases or self.expands_topic(no):
                obj, no = self.topic, self.topic_norm
        if ns == no or degenerate(ns) or degenerate(no):
            return
        key = (ns, pred, no)
        if key in self._seen:
            return
        self._seen.add(key)
        self._objects.add(no)
        self.triples.append(Fact(subj, pred, obj))

    # -- spans and references ----------------------------------------------

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
        if tok.tag_ in PRONOUN_TAGS:
            return low in _TOPIC_PRONOUNS
        if tok.tag_ in COMMON_TAGS and low in self.class_nouns and tok.i not in self.spans:
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
        if tok.tag_ in REL_TAGS or (tok.lower_ == "that" and tok.dep_ in SUBJ_DEPS):
            # "..., who directed X": the noun the relative clause hangs on.
            clause = tok.head
            if clause.dep_ in ("relcl", "acl") and clause.head.i != clause.i:
                return self.referent(clause.head, depth + 1)
            return None
        if self.refers_to_topic(tok):
            return self.topic
        if tok.tag_ in PRONOUN_TAGS or tok.tag_ == "EX" or tok.lower_ in _STOP:
            return None
        if tok.tag_ in COMMON_TAGS and tok.i not in self.spans:
            names = self.appos_names(tok)
            if names:  # "His father, John Smith, was ..." → John Smith
                return self.expand(names[0])
            owners = [c for c in tok.children if c.dep_ == "poss"]
            if owners:  # "His father died in 1586" → "X's father", not a bare "father"
                poss = owners[0]
                owner = self.referent(poss, depth + 1) if poss.tag_ in PRONOUN_TAGS else self.expand(poss)
                if owner:
                    return f"{owner}'s {self.expand(tok)}"
            if tok.dep_ == "attr" and tok.head.lower_ in COPULAS:
                # "X is a journal published by Y": the journal is X.
                subs = [c for c in tok.head.children if c.dep_ in SUBJ_DEPS]
                if subs:
                    return self.referent(subs[0], depth + 1)
            if tok.dep_ in ("appos", "conj") and tok.head.i != tok.i and tok.head.tag_ in NOUN_TAGS:
                return self.referent(tok.head, depth + 1)
        return self.expand(tok)

    # -- clauses: subjects and objects --------------------------------------

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
        subs = [c for c in v.children if c.dep_ in SUBJ_DEPS and not self.is_date(c)]
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
                    if not (c.tag_ in NOUN_TAGS or c.tag_ == "CD" or c.i in self.spans):
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
            if (t.tag_ in NOUN_TAGS or t.tag_ == "CD" or t.i in self.spans) and t.tag_ not in PRONOUN_TAGS
        ]

    def has_descent(self, o: Any) -> bool:
        """A bare relational noun with an "of" object ("son of X"): the noun alone says little."""
        if o.tag_ not in COMMON_TAGS or o.i in self.spans:
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
        if o.tag_ not in COMMON_TAGS or o.i in self.spans:
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
                words = [pred[-1], o.lower_, c.lower_] if pred[-1] in COPULAS else [*pred, o.lower_, c.lower_]
                for q in c.children:
                    if q.dep_ == "pobj":
                        for qq in self.objects(q):
                            self.add(subj, " ".join(words), self.expand(qq))


"""Rules over a whole passage: the title, the first sentences, life dates, the fallback, and the driver.

:class:`PassageRules` reads a passage's parsed pieces sentence by sentence:
the title's own facts first (``"Rosemary (1958 film)"`` → ``(Rosemary, is,
1958 film)``), then from the first sentence the topic's other names and its
class ("X is an American rock band": "the band" is X) and the life dates in
its bracket, then the verb and noun rules on every token, and last a
fallback that makes every name and date of a sentence the object of at least
one triple.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gearag.extract.spacy.context import clean_span, degenerate
from gearag.extract.spacy.nouns import NounRules
from gearag.extract.spacy.spans import name_spans
from gearag.extract.spacy.verbs import VerbRules
from gearag.extract.spacy.vocab import COMMON_TAGS, COPULAS, DASHES, NOUN_TAGS, PREP_DEPS, SUBJ_DEPS, Span
from gearag.model import Fact
from gearag.text import normalise_entity


class PassageRules(VerbRules, NounRules):
    """All the rules, applied to one passage: its title and its parsed pieces."""

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
            elif t.lower_ in ("died", "d.") or (t.text in DASHES and not explicit and found_date):
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
            if t.dep_ in SUBJ_DEPS:
                return [], None
            h = t.head
            if h.i == t.i:
                break
            if own is not None and own[0] <= h.i < own[1]:
                t = h
                continue
            if t.dep_ == "pobj" and h.dep_ in PREP_DEPS and prep is None:
                prep = h
            elif h.tag_.startswith("VB"):
                return self.verb_words(h) + ([prep.lower_] if prep is not None else []), h
            elif prep is not None and h.tag_ in COMMON_TAGS and t.i == prep.i:
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
            text = clean_span(tok.doc[span[0] : span[1]].text)
            norm = normalise_entity(text)
            if not norm or norm in self._objects or norm in self.aliases or degenerate(norm):
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
            if tok.dep_ == "attr" and tok.tag_ in COMMON_TAGS and tok.head.lower_ in COPULAS:
                subs = [c for c in tok.head.children if c.dep_ in SUBJ_DEPS]
                if subs and self.referent(subs[0]) != self.topic:
                    continue
                self.learn_noun(tok.lower_)
                for c in tok.children:
                    if c.dep_ in ("conj", "compound") and c.tag_ in COMMON_TAGS:
                        self.learn_noun(c.lower_)

    def learn_alias(self, sent: Any) -> None:
        """The name a passage opens with is its topic's name ("Sandra Miju Oh (born ...) is")."""
        root = sent.root
        for c in root.children:
            if c.dep_ not in SUBJ_DEPS or not self.is_name(c):
                continue
            span = self.spans[c.i]
            if span[0] - sent.start > 1 or span[2] == "DATE":
                continue
            name = clean_span(sent.doc[span[0] : span[1]].text)
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

    def run(self, docs: Iterable[Any]) -> list[Fact]:
        """Apply the rules to the passage's parsed pieces, in reading order (read once, each let go when read:
        a long passage's pieces need not all be parsed at once); returns the triples."""
        self.title_facts()
        names = [self.topic] if self.head_name == self.topic else [self.topic, self.head_name]
        first = True
        n_sents = 0
        for doc in docs:
            self.spans, facts = name_spans(doc, names)
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
                    elif tag in NOUN_TAGS:
                        self.do_noun(tok)
                self.fallback(sent)
        return self.triples


def triples_from_docs(title: str, docs: Iterable[Any]) -> list[Fact]:
    """Apply the rules to the parsed pieces of one passage."""
    return PassageRules(title).run(docs)

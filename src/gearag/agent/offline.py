"""The offline engine: the agent's roles without a language model.

* gist constructor — :class:`~gearag.expand.reader.OfflineReader` over the
  step's passages, reading "with the memory" (it favours facts that share an
  entity with the gist memory, Eq. 4), a few triples per step;
* reasoner — answerable when a chain of gist triples starts at an entity
  the question names, covers most of the question's relation words, and ends
  in a value of the type the question asks for (a date for "when", a
  proper name for "who"/"where", ...); "A or B" comparisons by date are
  answerable once both options have a date;
* rewriter — substitutes the bridge entity the best partial chain reached
  for the part of the question it resolves ("the performer of song X" →
  "Aretha Franklin") and keeps the unresolved rest;
* answerer — the reasoner's chain terminal, else the best typed value in the
  memory and the top passages' triples; labelled as an extracted candidate.

With ``chain=True`` (default) the engine uses the index's entity
resolution (:mod:`gearag.graph.resolve`) so that it finishes its chains:

* the gist keeps facts that *advance the chain* — facts ending in a name that
  resolves to a passage (a bridge one can follow), in a value of the asked
  type, or through a relation the question asks about — not generic
  attributes ("is American");
* the rewrite substitutes the bridge's resolved page title ("Duke Blue
  Devils" → "Duke Blue Devils men's basketball") for the span it resolves;
* a question that names the kind of place it wants with a noun English
  names of such places carry ("which county", "which river") is answered
  only by a terminal carrying that noun ("Summit County", not "Akron");
* "A or B" comparisons follow both branches through the resolved pages:
  the option's page → the fact for the asked relation (its director) → that
  entity's page → the date asked for (born / died), then compare.

So that the agent stops when it has the answer (GEAR §5.2, Eq. 6) and asks
next for what is missing (Eq. 7; :mod:`gearag.agent.slots`):

* the relation words a chain must cover leave out the question's own names
  and the kind it asks for ("which Canadian *actress*"); the *kind* of each
  entity a chain passes — the head noun of its page's definition, "Counting
  Crows is an American rock *band*" — counts as covered, and so does the
  description the chain's bridge fills ("the band of the songwriter who
  created Maria" once Maria → Counting Crows);
* the last hop may land on the answer without a word of its own once the
  hops before resolved every relation ("In which county is the city where
  Stephen Curry was born?" → "In which county is Akron?"), but no hop before
  it may be a *detour* (a hop that expressed nothing new);
* a value answers only if it is of the kind the question names where its
  page has one ("based in what *state*?" is not answered by a city), and a
  terminal reached backwards (the subject of a fact entered through its
  object) only if it is a name;
* the rewrite puts the bridge into the open slot: the span the chain
  resolves, with the article before it and the noun phrase a relative clause
  describes ("Where was Counting Crows formed?"); a chain whose last hop
  lands on a candidate answer rewrites with the entity before it (never
  "the Berkeley"), and bridges reached without detours come first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from gearag import setops
from gearag.agent.slots import (
    asked_kind,
    asked_noun,
    in_question,
    name_stems,
    page_kind,
    resolved_span,
    same_entity,
    substitute,
)
from gearag.embed import index_embedder
from gearag.engine import Answer, Engine, EngineConfig
from gearag.expand.reader import OfflineReader, OfflineReaderConfig
from gearag.model import Fact, Passage, Reasoning
from gearag.question_analysis import QuestionInfo, analyse, matches_type
from gearag.retrieve.bm25 import tokenize
from gearag.store.collection import PASSAGES
from gearag.store.interface import IndexStore
from gearag.text import date_key, is_named, normalise_entity
from gearag.words import DEFAULT_WORDS, WordLists, word_lists_for

#: Share of the question's relation words a chain must cover to be an answer.
COVERAGE = 0.5

@lru_cache(maxsize=1 << 16)
def _stems(text: str) -> frozenset[str]:
    """Stemmed content words; cached, since chain search re-reads the same triples many times."""
    return frozenset(tokenize([text])[0])


def _covers(term: str, chain_terms: AbstractSet[str], words: WordLists = DEFAULT_WORDS) -> bool:
    """Whether a relation stem of the question is expressed by ``chain_terms`` (itself or a related stem)."""
    if term in chain_terms:
        return True
    related = words.related_map.get(term, ())  # a tuple: one startswith per chain term tries every related stem
    return bool(related) and any(c.startswith(related) for c in chain_terms)


#: The built-in place nouns (``WordLists.name_nouns``; kept for callers of the old constant).
NAME_NOUNS = DEFAULT_WORDS.name_nouns


class Resolver:
    """Names → the passage about them, through the index's entity resolution."""

    #: A name resolves when its best candidate holds at least this share of its weight
    #: (see the ambiguity policy in :mod:`gearag.graph.resolve`).
    MIN_SHARE = 0.5

    def __init__(self, index: IndexStore, words: WordLists = DEFAULT_WORDS) -> None:
        from gearag.derive.graph_for import resolution_of

        self.index = index
        self.words = words
        self._kinds: dict[int, frozenset[str]] = {}
        # The prepared graph's name hashes and about rows (the stored one memory-mapped): the resolution's ids and
        # rows without its strings (only usable keys have about edges, and every one a passage mentions is there).
        prepared = resolution_of(index)
        self.about, names = prepared.about, prepared.names
        self._ner_only = np.asarray(prepared.ner_keys)  # sorted
        self._find: Callable[[str], int | None] = names.get
        self._about_of: Callable[[int], Any] = lambda e: prepared.about_rows(np.asarray([e]))
        self._cache: dict[str, int | None] = {}

    def row(self, name: str) -> int | None:
        from gearag.graph.trie import name_key

        if name not in self._cache:
            eid = self._find(name_key(name))
            # Entities only NER found (an index built with NER mentions) are left out, so the agent
            # behaves the same whether or not the index stores them.
            if eid is not None and setops.present(self._ner_only, np.asarray([eid]),
                                                  np.searchsorted(self._ner_only, [eid]))[0]:
                eid = None
            row = None
            if eid is not None:
                about = self._about_of(eid)  # one row: passages ascending, the weight of each
                if about.nnz:
                    j = int(np.argmax(about.data))
                    if about.data[j] >= self.MIN_SHARE:
                        row = int(about.indices[j])
            self._cache[name] = row
        return self._cache[name]

    def kind(self, name: str) -> frozenset[str]:
        """What the page ``name`` resolves to is about (:func:`gearag.agent.slots.page_kind`: "band"; empty if
        it resolves to none)."""
        row = self.row(name)
        if row is None:
            return frozenset()
        if row not in self._kinds:
            page = self.index.passages[row]
            self._kinds[row] = page_kind(page.title, page.text, self.words)
        return self._kinds[row]

    def title(self, name: str) -> str | None:
        row = self.row(name)
        return self.index.passages[row].title if row is not None else None

    def relevance(self, question: str, names: Sequence[str]) -> list[float]:
        """Cosine of the question and the page each name resolves to (-1 when it resolves to none)."""
        rows = [self.row(n) for n in names]
        if all(r is None for r in rows):
            return [-1.0] * len(rows)
        q = index_embedder(self.index).encode([question])[0]
        found = [r for r in rows if r is not None]
        vecs = self.index.collection(PASSAGES).rows_vectors(found)  # one read (a take on a Lance index)
        score = {r: float(v @ q) for r, v in zip(found, vecs, strict=True)}
        return [score[r] if r is not None else -1.0 for r in rows]

    def facts(self, name: str, limit: int = 64) -> list[Fact]:
        """The triples of the passage ``name`` resolves to."""
        row = self.row(name)
        if row is None:
            return []
        r = self.index.passage_triples(row)
        return self.index.triples.facts(range(r.start, min(r.stop, r.start + limit)))


@dataclass
class Chain:
    triples: list[Fact]
    terminal: str
    #: Share of the question's relation words the chain's text covers.
    coverage: float
    #: The terminal is a value of the asked type.
    typed: bool
    #: The last triple's predicate expresses one of the question's relation words.
    hit: bool
    #: Stems the chain expresses: its facts' words and the kinds of the entities it passes.
    terms: frozenset[str] = frozenset()
    #: Hops that expressed no relation word of the question the hops before had not (a drift, not a bridge).
    drift: int = 0
    #: Such hops before the last (the last may land on the answer without a new word: "In which county is
    #: Akron?").
    detour: int = 0

    @property
    def answers(self) -> bool:
        """A typed value, reached through a relation the question asks about, by a
        chain that covers most of the question's relation words without a detour."""
        return self.typed and self.hit and self.coverage >= COVERAGE and self.detour == 0

    def describe(self) -> list[str]:
        return [f"({t.subject}; {t.predicate}; {t.object})" for t in self.triples]


class OfflineReasoner:
    """Answerability from chains of gist triples; see the module docstring."""

    def __init__(self, max_length: int = 3, resolver: Resolver | None = None,
                 words: WordLists = DEFAULT_WORDS) -> None:
        self.max_length = max_length
        #: The English word lists (relation words, type words, comparison words, place nouns).
        self.words = words
        #: With a resolver: type nouns are enforced and comparisons follow both branches.
        self.resolver = resolver

    def chains(self, info: QuestionInfo, memory: Sequence[Fact]) -> list[Chain]:
        qnorm = normalise_entity(info.text)
        resolver = self.resolver
        anchors = [(t, end) for t in memory for end in (t.subject, t.object) if in_question(end, qnorm)]
        entity_terms: set[str] = set()
        for _, end in anchors:
            entity_terms |= _stems(end)
        words = self.words
        # The question's own names anchor chains; they are not relations a chain must express.
        named_terms = name_stems(info.text) | asked_kind(info.text, words)  # and the kind its answer is
        relation_terms = [x for x in info.terms if x not in entity_terms and x not in named_terms
                          and x not in words.type_stems] or list(info.terms)
        named = [(normalise_entity(end), t) for t in memory for end in (t.subject, t.object) if is_named(end)]
        noun = asked_noun(info.text, words) if self.resolver is not None else None

        def continuing(entity: str) -> list[Fact]:
            # Chains continue through named entities only, as the graph does; "Akron" meets "Akron, Ohio",
            # and with a resolver two names meet when they resolve to the same page.
            out = [t for key, t in named if same_entity(key, entity)]
            if resolver is not None:
                row = resolver.row(entity)
                if row is not None:
                    first = set(out)  # facts are frozen (hashable, equal when equal): not a scan of the list per fact
                    out += [t for key, t in named if t not in first and resolver.row(key) == row]
            return out

        out: list[Chain] = []

        def hop_terms(t: Fact) -> frozenset[str]:
            terms = _stems(f"{t.subject} {t.predicate} {t.object}")
            if resolver is not None:  # the kinds of the entities passed: "the band of ..." is Counting Crows
                terms = terms.union(*(resolver.kind(e) for e in (t.subject, t.object) if is_named(e)))
            return terms

        def meets(name: str, other: str) -> bool:
            if same_entity(name, other):
                return True
            row = resolver.row(name) if resolver is not None else None
            return row is not None and resolver.row(other) == row  # type: ignore[union-attr]

        asked = asked_kind(info.text, words)

        def kind_fits(value: str) -> bool:
            # "Based in what state?" is not answered by a page about a city: where the question names the kind
            # of its answer and the value's page has one (its definition's head noun), they must agree.
            kind = resolver.kind(value) if resolver is not None and asked and is_named(value) else frozenset()
            return not kind or bool(kind & asked) or any(_covers(a, kind, words) for a in asked)

        def walk(path: list[Fact], came_in: str, before: frozenset[str], drift: int = 0, had: int = 0) -> None:
            last = path[-1]
            forward = meets(normalise_entity(last.subject), came_in)
            far = last.object if forward else last.subject
            terms = before | hop_terms(last)
            # What the hops before the last resolve is the question's span they fill (the open slot's
            # description, "the band of the songwriter who created Maria"): its words need no fact of their own.
            filled = resolved_span(info.text, lambda s: all(_covers(x, before, words) for x in s)) if before else ()
            inside = frozenset().union(*(_stems(w) for w in filled))
            n_covered = sum(1 for x in relation_terms if x in inside or _covers(x, terms, words))
            covered = n_covered / len(relation_terms)
            detour = drift  # the hops before this one that expressed nothing new
            drift += n_covered <= had
            # The last hop expresses a relation the question asks about — or the hops before resolved every
            # one ("In which county is the city where Stephen Curry was born?": after "born in Akron" the
            # question is "In which county is Akron?", which any fact placing Akron answers).
            hit = (any(_covers(x, _stems(last.predicate), words) for x in relation_terms)
                   or (len(path) > 1 and all(x in inside or _covers(x, before, words) or x in words.question_stems
                                             for x in relation_terms)))
            if not in_question(far, qnorm):
                # A fact is about its subject: a terminal that is the subject of the last fact, entered through
                # its object, answers only if it is a name ("films; released under; Walt Disney Pictures" is
                # about no film in particular).
                typed = (matches_type(far, info.answer_type) and (noun is None or noun in far.lower())
                         and kind_fits(far) and (forward or is_named(far)))
                out.append(Chain(list(path), far, covered, typed, hit, terms, drift, detour))
            if len(path) >= self.max_length:
                return
            if not is_named(far):
                return
            for nxt in continuing(normalise_entity(far)):
                if nxt not in path:
                    walk([*path, nxt], normalise_entity(far), terms, drift, n_covered)

        for t, end in anchors:
            walk([t], normalise_entity(end), frozenset())
        out.sort(key=lambda c: (c.answers, c.hit and c.typed, c.coverage, c.typed, -len(c.triples)), reverse=True)
        return out

    def compare(self, info: QuestionInfo, memory: Sequence[Fact]) -> Reasoning | None:
        """Date comparisons between the two options of an "A or B" question."""
        if len(info.options) != 2:
            return None
        if self.resolver is not None:
            bridged = self.compare_bridged(info)
            if bridged is not None:
                return bridged
        dates: dict[str, tuple[tuple[int, int, int], Fact]] = {}
        for option in info.options:
            onorm = normalise_entity(option)
            for t in memory:
                if normalise_entity(t.subject) == onorm or onorm in normalise_entity(t.subject):
                    key = date_key(t.object)
                    if key and (option not in dates or key < dates[option][0]):
                        dates[option] = (key, t)
        if len(dates) < 2:
            missing = [o for o in info.options if o not in dates]
            return Reasoning(False, f"No date known for {', '.join(missing)}.")
        low = info.text.lower()
        latest = any(f" {w}" in low for w in self.words.latest_words)
        pick = max if latest else min
        choice = pick(info.options, key=lambda o: dates[o][0])
        evidence = [f"({t.subject}; {t.predicate}; {t.object})" for _, t in dates.values()]
        return Reasoning(True, f"Compared dates: {'; '.join(evidence)}.", choice, evidence)

    def compare_bridged(self, info: QuestionInfo) -> Reasoning | None:
        """Follow both options through their pages: option → relation fact → entity → asked date.

        "Which film has the director born earlier, A or B?": for A and B, the
        fact on the option's page whose predicate expresses a relation word of
        the question ("directed by" for "director") and ends in a name that
        resolves; on that page, the date fact for the asked event ("born").
        Without a relation word the option's own date is compared ("came out
        first"). ``None`` when either branch cannot be followed.
        """
        resolver = self.resolver
        assert resolver is not None
        low = info.text.lower()
        option_terms = set().union(*(_stems(o) for o in info.options))
        words = self.words
        event: tuple[str, ...] = ()
        for kind in (words.birth_words, words.death_words):
            if any(re.search(r"\b" + re.escape(w), low) for w in kind):
                event = kind
                break
        relation = [x for x in info.terms if x not in option_terms and x not in words.type_stems
                    and x not in words.event_stems and x not in words.class_stems]

        def dated(facts: list[Fact], subject: str) -> tuple[tuple[int, int, int], Fact] | None:
            best = None
            for t in facts:
                t_subject, wanted = normalise_entity(t.subject), normalise_entity(subject)
                if not same_entity(t_subject, wanted) and wanted not in t_subject:
                    continue
                if event and not any(p.startswith(e) for p in _stems(t.predicate) | _stems(t.object) for e in event):
                    continue
                key = date_key(t.object)
                if key and (best is None or key < best[0]):
                    best = (key, t)
            return best

        found: dict[str, tuple[tuple[int, int, int], list[Fact]]] = {}
        for option in info.options:
            facts = resolver.facts(option)
            if not facts:
                return None
            bridges = [t for t in facts if is_named(t.object) and resolver.row(t.object) is not None
                       and any(_covers(x, _stems(t.predicate), words) for x in relation)] if relation else []
            for bridge in bridges:
                hit = dated(resolver.facts(bridge.object), bridge.object)
                if hit is not None:
                    found[option] = (hit[0], [bridge, hit[1]])
                    break
            if option in found:
                continue
            # The option's own date, when the question asks about the option itself ("released
            # first", "who is older") or the dated fact expresses the asked relation ("released in").
            own = [t for t in facts if not relation or any(_covers(x, _stems(t.predicate), words) for x in relation)]
            hit = dated(own, facts[0].subject)
            if hit is None:
                return None
            found[option] = (hit[0], [hit[1]])
        latest = any(f" {w}" in f" {low}" for w in words.latest_words)
        pick = max if latest else min
        choice = pick(info.options, key=lambda o: found[o][0])
        evidence = [f"({t.subject}; {t.predicate}; {t.object})" for _, path in found.values() for t in path]
        facts = [t for _, path in found.values() for t in path]
        return Reasoning(True, f"Compared through both branches: {'; '.join(evidence)}.", choice, evidence, facts)

    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning:
        info = analyse(question, self.words)
        compared = self.compare(info, memory)
        if compared is not None and compared.answerable:
            return compared
        chains = self.chains(info, memory)
        if not chains:
            return Reasoning(False, "No remembered fact mentions an entity of the question.")
        best = chains[0]
        if best.answers:
            return Reasoning(
                True,
                f"The chain {' → '.join(best.describe())} answers with {best.terminal}.",
                best.terminal,
                best.describe(),
            )
        why = f"Reached {best.terminal} via {' → '.join(best.describe())}, but "
        why += (
            f"it is not a {info.answer_type}." if not best.typed else "part of the question is not covered yet."
        )
        return Reasoning(False, why, None, best.describe())


class OfflineRewriter:
    """Next query: the bridge entity substituted for the part of the question it resolves."""

    def __init__(self, reasoner: OfflineReasoner) -> None:
        self.reasoner = reasoner
        self.resolver = reasoner.resolver

    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str:
        words = self.reasoner.words
        info = analyse(question, words)
        if info.options:
            # Ask about the option still missing a fact.
            qnorm = normalise_entity(question)
            known = {normalise_entity(t.subject) for t in memory}
            missing = [o for o in info.options if normalise_entity(o) not in known]
            if missing:
                rest = re.sub(r",[^,]*\bor\b[^?]*\??$", "", question).strip()
                return f"{missing[0]} {rest}" if normalise_entity(missing[0]) not in qnorm else f"{rest} {missing[0]}"
        # Bridge: the best-covering chain that ends in a named entity the question does not name. A chain whose
        # last hop lands on a candidate answer (a value of the asked type, through a relation the question asks
        # about) went one hop past its bridge: the bridge is the entity before ("Maria → Counting Crows →
        # Berkeley" asks next about Counting Crows, never "the Berkeley").
        chains = self.reasoner.chains(info, memory)
        by_path = {tuple(c.triples): c for c in chains}
        bridges: list[Chain] = []
        for c in chains:
            if c.answers:
                continue
            if len(c.triples) > 1 and c.typed and c.hit:
                c = by_path.get(tuple(c.triples[:-1]), c)
            if is_named(c.terminal) and c not in bridges:
                bridges.append(c)
        if not bridges:
            return question
        if self.resolver is not None:
            # The best-covering bridge reached without drifting (a hop that expressed nothing new of the
            # question leads away from it); then the one whose page bears most on the question,
            # then the furthest ("Seth Curry" → "Duke Blue Devils" is where the next step starts).
            relevance = [self.resolver.relevance(_unresolved(question, c, words), [c.terminal])[0] for c in bridges]
            scored = zip(bridges, relevance, strict=True)
            bridge = max(scored, key=lambda cr: (cr[0].coverage, -cr[0].drift, cr[1], len(cr[0].triples)))[0]
        else:
            bridge = max(bridges, key=lambda c: (c.coverage, -len(c.triples)))
        name = (self.resolver.title(bridge.terminal) if self.resolver is not None else None) or bridge.terminal
        return substitute(question, lambda s: all(_covers(x, bridge.terms, words) for x in s), name, words)


def _unresolved(question: str, chain: Chain, words: WordLists = DEFAULT_WORDS) -> str:
    """The question's words the chain does not cover yet (what the next page must bear on)."""
    return " ".join(w for w in question.rstrip("?").split()
                    if not (_stems(w) and all(_covers(x, chain.terms, words) for x in _stems(w))))


class OfflineAnswerer:
    """The best supported answer candidate, with its evidence."""

    LABEL = "offline answer candidate (extracted, no language model)"

    def __init__(self, index: IndexStore, reasoner: OfflineReasoner) -> None:
        self.index = index
        self.reasoner = reasoner

    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact],
               rows: Sequence[int] | None = None) -> Answer:
        """``rows``: the passages' index rows (else found by id: :meth:`IndexStore.passage_rows` reads every id
        once)."""
        info = analyse(question, self.reasoner.words)
        reasoning = self.reasoner.reason(question, memory)
        if info.answer_type == "yesno":  # a chain's terminal does not answer "Are A and B both ...?"
            return Answer("yes" if reasoning.answerable else "no", self.LABEL, reasoning.evidence)
        if reasoning.answerable and reasoning.answer:
            return Answer(reasoning.answer, self.LABEL, reasoning.evidence)
        if info.options and self.reasoner.resolver is not None:
            # An "A or B" question is answered by A or B: undecided, the first option (a guess, labelled).
            return Answer(info.options[0], self.LABEL + "; undecided comparison, first option", reasoning.evidence)
        chains = self.reasoner.chains(info, memory)
        typed = [c for c in chains if c.typed and c.hit] or [c for c in chains if c.typed]
        if typed:
            return Answer(typed[0].terminal, self.LABEL, typed[0].describe())
        # Fall back to typed values in the top passages' triples, best passage first.
        qnorm = normalise_entity(question)
        table = self.index.triples
        if rows is None:
            by_id = self.index.passage_rows()
            rows = [by_id.get(p.id, -1) for p in passages]
        for row in rows:
            if row < 0:
                continue
            for t in self.index.passage_triples(row):
                value = table.objects[t]
                if matches_type(value, info.answer_type) and not in_question(value, qnorm):
                    return Answer(value, self.LABEL, [f"({table.subjects[t]}; {table.predicates[t]}; {value})"])
        return Answer("unknown", self.LABEL, [])


class ChainGist:
    """Gist constructor that keeps the facts that advance a chain (see the module docstring).

    A fact advances the chain when its far end is a name that resolves to a
    passage (a bridge one can follow), or a value of the asked type, or when
    its predicate expresses a relation word of the question. Generic
    attributes ("is American", "is 1957 film") do none of these.
    """

    def __init__(self, index: IndexStore, resolver: Resolver, max_triples: int = 5,
                 words: WordLists = DEFAULT_WORDS) -> None:
        self.reader = OfflineReader(index, OfflineReaderConfig(max_triples=max_triples), words)
        self.index = index
        self.resolver = resolver
        self.max_triples = max_triples
        self.words = words

    def advances(self, fact: Fact, info: QuestionInfo, relation: list[str], reached: set[str]) -> bool:
        obj = fact.object
        # Only specific types count here: for "person"/"place" any name matches the type ("American").
        if info.answer_type in ("date", "number") and matches_type(obj, info.answer_type):
            return True
        # "A or B" questions compare dates (born, died, released, founded).
        if info.options and matches_type(obj, "date"):
            return True
        noun = asked_noun(info.text, self.words)
        if noun and noun in obj.lower():
            return True
        if any(_covers(x, _stems(fact.predicate), self.words) for x in relation):
            return True
        if not is_named(obj):
            return False
        # A named value of a fact about an entity the chain has reached continues the chain.
        subject = normalise_entity(fact.subject)
        return self.resolver.row(obj) is not None or any(same_entity(subject, e) for e in reached)

    def read(self, question: str, passages: Sequence[int], memory: Sequence[Fact] = ()
             ) -> list[Fact]:
        info = analyse(question, self.words)
        relation = [x for x in info.terms if x not in self.words.type_stems]
        known = {m.source for m in memory if m.source is not None}
        ranked = [t for t in self.reader.rank_triples(question, passages, memory) if t not in known]
        reached = {normalise_entity(e) for m in memory for e in (m.subject, m.object) if is_named(e)}
        facts = self.index.triples.facts(ranked)  # read together (one take per column on a Lance index)
        keep = [f for f in facts if self.advances(f, info, relation, reached)] or facts
        return keep[: self.max_triples]


#: Proximal triples the offline reader returns per read (GEAR's beam width) and the gist reader keeps per step.
READ_TRIPLES = 10
GIST_TRIPLES = 5


def offline_engine(index: IndexStore, config: EngineConfig | None = None, llm_roles: object | None = None) -> Engine:
    """The model-free engine (registry factory; it ignores ``llm_roles``).

    With ``chain_agent`` (an agent setting, :class:`gearag.agent.config.AgentEngineConfig`; default on)
    the gist, reasoner and rewriter use the index's entity resolution to finish their chains.
    ``word_lists`` (same config) names a JSON file replacing the English word lists
    (:class:`gearag.words.WordLists`).
    """
    read_triples, gist_triples = READ_TRIPLES, GIST_TRIPLES
    words = word_lists_for(getattr(config, "word_lists", None))
    resolver = Resolver(index, words) if getattr(config, "chain_agent", False) else None
    reasoner = OfflineReasoner(resolver=resolver, words=words)
    gist = (ChainGist(index, resolver, gist_triples, words) if resolver is not None
            else OfflineReader(index, OfflineReaderConfig(max_triples=gist_triples), words))
    return Engine(
        name="offline",
        reader=OfflineReader(index, OfflineReaderConfig(max_triples=read_triples), words),
        gist=gist,
        reasoner=reasoner,
        rewriter=OfflineRewriter(reasoner),
        answerer=OfflineAnswerer(index, reasoner),
    )

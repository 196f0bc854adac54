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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

from gearag.engine import Answer, Engine, EngineConfig
from gearag.expand.reader import OfflineReader, OfflineReaderConfig
from gearag.model import Fact, Passage, Reasoning
from gearag.question_analysis import QuestionInfo, analyse, matches_type
from gearag.retrieve.bm25 import tokenize
from gearag.store.index import Index
from gearag.text import date_key, is_named, normalise_entity

#: Relation words that share no stem with the predicates that express them.
_RELATED = {
    "death": ("die", "death", "dead", "kill"),
    "die": ("die", "death", "dead"),
    "birth": ("born", "birth"),
    "born": ("born", "birth"),
    "spous": ("marri", "wife", "husband", "spous", "wed"),
    "wife": ("marri", "wife", "spous"),
    "husband": ("marri", "husband", "spous"),
    "director": ("direct", "director"),
    "perform": ("perform", "sung", "sing", "record"),
    "compos": ("compos", "written", "music"),
    "author": ("written", "wrote", "author"),
    "father": ("father", "son", "daughter", "child"),
    "mother": ("mother", "son", "daughter", "child"),
    "found": ("found", "establish", "creat"),
    "bury": ("buri", "grave", "interr"),
    "buri": ("buri", "grave", "interr"),
    "nation": ("citizen", "nation", "american", "british", "french", "german"),
    "releas": ("releas", "premier", "publish"),
    "locat": ("locat", "in", "situat", "base"),
    "headquart": ("headquart", "base"),
    "educ": ("educ", "studi", "graduat", "attend", "school", "univers"),
}

#: Share of the question's relation words a chain must cover to be an answer.
COVERAGE = 0.5

#: Words that name the answer's type rather than a relation; the type check covers them.
_TYPE_WORDS = frozenset({
    "year", "date", "time", "day", "month", "citi", "countri", "counti", "place", "state", "town", "locat", "nation",
    "mani", "much", "old", "name", "person",
})


@lru_cache(maxsize=1 << 16)
def _stems(text: str) -> frozenset[str]:
    """Stemmed content words; cached, since chain search re-reads the same triples many times."""
    return frozenset(tokenize([text])[0])


def _covers(term: str, chain_terms: AbstractSet[str]) -> bool:
    if term in chain_terms:
        return True
    return any(any(c.startswith(a) for c in chain_terms) for a in _RELATED.get(term, ()))


def _in_question(entity: str, qnorm: str) -> bool:
    """Whether a named entity occurs in the (normalised) question; common nouns never anchor."""
    if not is_named(entity):
        return False
    e = normalise_entity(entity)
    return len(e) >= 3 and f" {e} " in f" {qnorm} "


def same_entity(a: str, b: str) -> bool:
    """Normalised names of one entity: equal, or one a whole-word prefix of the other ("akron" / "akron ohio")."""
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return len(short) >= 4 and long.startswith(short + " ")


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

    @property
    def answers(self) -> bool:
        """A typed value, reached through a relation the question asks about, by a
        chain that covers most of the question's relation words."""
        return self.typed and self.hit and self.coverage >= COVERAGE

    def describe(self) -> list[str]:
        return [f"({t.subject}; {t.predicate}; {t.object})" for t in self.triples]


class OfflineReasoner:
    """Answerability from chains of gist triples; see the module docstring."""

    def __init__(self, max_length: int = 3) -> None:
        self.max_length = max_length

    def chains(self, info: QuestionInfo, memory: Sequence[Fact]) -> list[Chain]:
        qnorm = normalise_entity(info.text)
        anchors = [
            (t, end)
            for t in memory
            for end in (t.subject, t.object)
            if _in_question(end, qnorm)
        ]
        entity_terms: set[str] = set()
        for _, end in anchors:
            entity_terms |= _stems(end)
        relation_terms = [x for x in info.terms if x not in entity_terms and x not in _TYPE_WORDS] or list(
            info.terms
        )
        named = [(normalise_entity(end), t) for t in memory for end in (t.subject, t.object) if is_named(end)]

        def continuing(entity: str) -> list[Fact]:
            # Chains continue through named entities only, as the graph does; "Akron" meets "Akron, Ohio".
            return [t for key, t in named if same_entity(key, entity)]

        out: list[Chain] = []

        def walk(path: list[Fact], came_in: str) -> None:
            last = path[-1]
            far = last.object if same_entity(normalise_entity(last.subject), came_in) else last.subject
            terms = set().union(*(_stems(f"{t.subject} {t.predicate} {t.object}") for t in path))
            covered = sum(1 for x in relation_terms if _covers(x, terms)) / len(relation_terms)
            hit = any(_covers(x, _stems(last.predicate)) for x in relation_terms)
            if not _in_question(far, qnorm):
                out.append(Chain(list(path), far, covered, matches_type(far, info.answer_type), hit))
            if len(path) >= self.max_length:
                return
            if not is_named(far):
                return
            for nxt in continuing(normalise_entity(far)):
                if nxt not in path:
                    walk([*path, nxt], normalise_entity(far))

        for t, end in anchors:
            walk([t], normalise_entity(end))
        out.sort(key=lambda c: (c.answers, c.hit and c.typed, c.coverage, c.typed, -len(c.triples)), reverse=True)
        return out

    def compare(self, info: QuestionInfo, memory: Sequence[Fact]) -> Reasoning | None:
        """Date comparisons between the two options of an "A or B" question."""
        if len(info.options) != 2:
            return None
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
        latest = any(w in low for w in (" later", " last", " younger", " most recent", " more recent"))
        pick = max if latest else min
        choice = pick(info.options, key=lambda o: dates[o][0])
        evidence = [f"({t.subject}; {t.predicate}; {t.object})" for _, t in dates.values()]
        return Reasoning(True, f"Compared dates: {'; '.join(evidence)}.", choice, evidence)

    def reason(self, question: str, memory: Sequence[Fact]) -> Reasoning:
        info = analyse(question)
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

    def rewrite(self, question: str, memory: Sequence[Fact], reasoning: Reasoning) -> str:
        info = analyse(question)
        if info.options:
            # Ask about the option still missing a fact.
            qnorm = normalise_entity(question)
            known = {normalise_entity(t.subject) for t in memory}
            missing = [o for o in info.options if normalise_entity(o) not in known]
            if missing:
                rest = re.sub(r",[^,]*\bor\b[^?]*\??$", "", question).strip()
                return f"{missing[0]} {rest}" if normalise_entity(missing[0]) not in qnorm else f"{rest} {missing[0]}"
        # Bridge: the best-covering chain that ends in a named entity the question does not name.
        chains = [c for c in self.reasoner.chains(info, memory) if is_named(c.terminal) and not c.answers]
        if not chains:
            return question
        bridge = max(chains, key=lambda c: (c.coverage, -len(c.triples)))
        return substitute(question, bridge)


def substitute(question: str, chain: Chain) -> str:
    """Replace the question span the chain resolves by the chain's terminal entity."""
    words = question.rstrip("?").split()
    stems_by_word = [_stems(w) for w in words]
    chain_text = " ".join(f"{t.subject} {t.predicate} {t.object}" for t in chain.triples)
    chain_terms = _stems(chain_text)
    marked = [bool(s) and all(_covers(x, chain_terms) for x in s) for s in stems_by_word]
    if not any(marked):
        return f"{chain.terminal} {question}"
    first = marked.index(True)
    last = len(marked) - 1 - marked[::-1].index(True)
    # Keep a leading function word ("of the", "the") attached to what remains.
    head = words[:first]
    tail = words[last + 1 :]
    rewritten = " ".join([*head, chain.terminal, *tail]).strip()
    return rewritten + "?"


class OfflineAnswerer:
    """The best supported answer candidate, with its evidence."""

    LABEL = "offline answer candidate (extracted, no language model)"

    def __init__(self, index: Index, reasoner: OfflineReasoner) -> None:
        self.index = index
        self.reasoner = reasoner
        self._rows = {p.id: i for i, p in enumerate(index.passages)}

    def answer(self, question: str, passages: Sequence[Passage], memory: Sequence[Fact]) -> Answer:
        info = analyse(question)
        reasoning = self.reasoner.reason(question, memory)
        if reasoning.answerable and reasoning.answer:
            return Answer(reasoning.answer, self.LABEL, reasoning.evidence)
        if info.answer_type == "yesno":
            return Answer("yes" if reasoning.answerable else "no", self.LABEL, reasoning.evidence)
        chains = self.reasoner.chains(info, memory)
        typed = [c for c in chains if c.typed and c.hit] or [c for c in chains if c.typed]
        if typed:
            return Answer(typed[0].terminal, self.LABEL, typed[0].describe())
        # Fall back to typed values in the top passages' triples, best passage first.
        qnorm = normalise_entity(question)
        table = self.index.triples
        for p in passages:
            row = self._rows.get(p.id)
            if row is None:
                continue
            for t in self.index.passage_triples(row):
                value = table.objects[t]
                if matches_type(value, info.answer_type) and not _in_question(value, qnorm):
                    return Answer(value, self.LABEL, [f"({table.subjects[t]}; {table.predicates[t]}; {value})"])
        return Answer("unknown", self.LABEL, [])


#: Proximal triples the offline reader returns per read (GEAR's beam width) and the gist reader keeps per step.
READ_TRIPLES = 10
GIST_TRIPLES = 5


def offline_engine(index: Index, config: EngineConfig | None = None, llm_roles: object | None = None) -> Engine:
    """The model-free engine (registry factory; it needs no settings and ignores ``llm_roles``)."""
    read_triples, gist_triples = READ_TRIPLES, GIST_TRIPLES
    reasoner = OfflineReasoner()
    return Engine(
        name="offline",
        reader=OfflineReader(index, OfflineReaderConfig(max_triples=read_triples)),
        gist=OfflineReader(index, OfflineReaderConfig(max_triples=gist_triples)),
        reasoner=reasoner,
        rewriter=OfflineRewriter(reasoner),
        answerer=OfflineAnswerer(index, reasoner),
    )

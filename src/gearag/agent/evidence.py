"""The passages an answer rests on: evidence facts → the passages they were read from.

An answer's evidence is a chain of facts: the reasoner's (GEAR §5.2, Eq. 6:
``r(n)`` names what the gist memory answers with) or, when the reasoner did
not answer, the offline answerer's pick. A fact the offline engine read is one
of the index's triples (``Fact.source`` is its id), so the passage it came
from is known exactly: ``index.triples.passage[source]``. Facts a language
model wrote carry no source; they name no passage here (GEAR's passageLink,
Eq. 8, would only guess one).

The agent puts these passages first in its ranking and flags them
(``AgentConfig.evidence_first``), so that what an answer cites is what it
came from. The paper ranks its output by Eq. 9 alone; this is a deviation,
measured both ways (docs/benchmarks-log.md, ``--no-evidence-first``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gearag.agent.slots import in_question
from gearag.model import Fact
from gearag.text import normalise_entity

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore


def describe(fact: Fact) -> str:
    """A fact as evidence reads it: ``(subject; predicate; object)``."""
    return f"({fact.subject}; {fact.predicate}; {fact.object})"


def evidence_facts(evidence: Sequence[str], known: Iterable[Fact]) -> list[Fact]:
    """The facts of ``known`` that the readable triples ``evidence`` name, in evidence order.

    A triple named twice, or by facts with and without a source, resolves to
    the first fact with a source (the one that names a passage).
    """
    by_text: dict[str, Fact] = {}
    for fact in known:
        key = describe(fact)
        if key not in by_text or (by_text[key].source is None and fact.source is not None):
            by_text[key] = fact
    return [by_text[e] for e in dict.fromkeys(evidence) if e in by_text]


def named_first(question: str, facts: Sequence[Fact]) -> list[Fact]:
    """``facts`` with those about a name the question gives first, each group in its order.

    A comparison's evidence runs option A → A's director → option B → B's director; the options' own pages
    (where the answer, A or B, is written) lead, then the bridges', so the answer is in the top two (2Wiki's AR@2).
    """
    qnorm = normalise_entity(question)
    about = [any(in_question(e, qnorm) for e in (f.subject, f.object)) for f in facts]
    return [f for f, a in zip(facts, about, strict=True) if a] + [f for f, a in zip(facts, about, strict=True)
                                                                  if not a]


def evidence_rows(index: IndexStore, facts: Iterable[Fact]) -> list[int]:
    """The passage rows ``facts`` were read from, first seen first (facts without a source name none)."""
    owner = index.triples.passage
    rows: dict[int, None] = {}
    for fact in facts:
        if fact.source is not None and 0 <= fact.source < len(owner):
            rows[int(owner[fact.source])] = None
    return list(rows)


def passage_facts(index: IndexStore, rows: Iterable[int]) -> list[Fact]:
    """Every triple of the passages ``rows`` as facts with their ids (what the offline answerer reads)."""
    ids = [t for row in rows if row >= 0 for t in index.passage_triples(row)]
    return index.triples.facts(ids) if ids else []


def evidence_first(order: Sequence[int], rows: Sequence[int]) -> list[int]:
    """``rows`` first (in their order), then the rest of ``order`` in its order."""
    first = list(dict.fromkeys(rows))
    taken = set(first)
    return [*first, *(r for r in order if r not in taken)]

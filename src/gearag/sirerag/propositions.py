"""Propositions with their entities, per passage: the input of :mod:`gearag.sirerag.aggregates`.

Two engines produce the same structure, ``list[list[Proposition]]`` (one list per
passage row):

* **offline** (:func:`offline_propositions`): one proposition per sentence,
  from spaCy (``en_core_web_sm`` through :func:`gearag.extract.spacy.pipeline.load_nlp`).
  It stands in for §4.2's three LLM steps cheaply:

  1. *coreference*: Wikipedia-style passages are about their title, so a
     pronoun subject or possessive (``he``, ``she``, ``it``, ``his``, ``its`` …)
     and a definite description of the title's class (``"The film"`` when the
     first sentence says the topic is a film) are rewritten to the title's
     name (without its disambiguator: ``"Rosemary (1958 film)"`` → ``Rosemary``);
  2. *entities*: the names the sentence mentions — spaCy's named entities
     merged with runs of proper nouns, short quoted titles and mentions of the
     passage's title (:func:`gearag.extract.spacy.spans.name_spans`); dates and
     numbers are not entities by default (an aggregate keyed by ``"1998"``
     groups unrelated facts);
  3. *propositions*: the rewritten sentence is the fact. Deviation: the LLM
     writes several atomic facts per sentence; we keep the sentence whole
     (never truncated), so facts are longer and fewer.

* **LLM** (:func:`llm_propositions`, :func:`facts_from_llm`): the project's
  SiReRAG roles in the paper's order — :meth:`LLMRoles.coref_rewrite` →
  :meth:`LLMRoles.extract_entities` → :meth:`LLMRoles.extract_propositions` —
  turned into facts whose entities are the extracted names the fact mentions
  (falling back to the heads and tails of its triplets). A passage whose
  replies give no proposition (the parser found none, or the reply was prose)
  gets the offline engine's facts of that passage instead, counted as an
  unusable ``propositions`` reply (:mod:`gearag.llm.fallback`), unless the
  roles' ``llm_fallback`` is off (``gearag index --no-llm-fallback``). The
  model's own output is what ``on_passage`` checkpoints; the fallback is
  applied after, to new and checkpointed passages alike, so a checkpoint
  serves a build with the fallback on or off and a resume is exact (the
  offline facts of a passage do not depend on the other passages).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gearag.model import Passage
from gearag.sirerag.aggregates import Proposition

#: Pronouns that, in a passage about its title, refer to the title.
_SUBJECT_PRONOUNS = frozenset({"he", "she", "it"})
_POSSESSIVE_PRONOUNS = frozenset({"his", "her", "its"})
_SUBJ_DEPS = frozenset({"nsubj", "nsubjpass"})
_COPULAS = frozenset({"is", "was", "are", "were", "'s"})
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class OfflinePropositionConfig:
    """Options of :func:`offline_propositions`."""

    #: Labels never used as entities (spaCy's numeric labels and our date runs).
    skip_labels: frozenset[str] = frozenset(
        {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"}
    )
    #: Rewrite pronoun subjects/possessives and class descriptions to the title (§4.2 step 1, cheaply).
    resolve_to_title: bool = True
    #: Sentences shorter than this many words are not facts (list fragments, headings).
    min_words: int = 3
    #: spaCy ``pipe`` batch size and worker processes (1: in this process).
    batch_size: int = 64
    processes: int = 1


def _title_name(title: str) -> str:
    from gearag.extract.spacy.clean import split_title

    return split_title(title)[0]


def _class_noun(sent: Any) -> str | None:
    """``"X is a 1958 American film ..."`` → ``"film"`` (the attribute of the first sentence's copula)."""
    for tok in sent:
        if tok.dep_ == "attr" and tok.head.lower_ in _COPULAS and tok.pos_ in ("NOUN", "PROPN"):
            return tok.lower_
    return None


def _in_main_clause(tok: Any) -> bool:
    """Whether ``tok`` hangs off the sentence's root verb (or a verb conjoined to it).

    ``it``/``its`` refer to the title far less reliably than ``he``/``she``
    (``"... the demon provides energy if it is available"``), so they are
    resolved only as the subject of the main clause.
    """
    head = tok.head
    return head.dep_ == "ROOT" or (head.dep_ == "conj" and head.head.dep_ == "ROOT")


def _rewrite(sent: Any, name: str, class_noun: str | None) -> tuple[str, bool]:
    """The sentence with title references replaced by ``name``; and whether any was."""
    doc = sent.doc
    out: list[str] = []
    resolved = False
    skip_until = -1
    for tok in sent:
        if tok.i < skip_until:
            continue
        low = tok.lower_
        text = None
        if tok.tag_ == "PRP" and low in _SUBJECT_PRONOUNS and tok.dep_ in _SUBJ_DEPS and (
            low != "it" or _in_main_clause(tok)
        ):
            text = name
        elif tok.tag_ == "PRP$" and low in _POSSESSIVE_PRONOUNS and tok.dep_ == "poss" and (
            low != "its" or (tok.head.dep_ in _SUBJ_DEPS and _in_main_clause(tok.head))
        ):
            text = f"{name}'s"
        elif (
            class_noun
            and low in ("the", "this")
            and tok.dep_ == "det"
            and tok.head.lower_ == class_noun
            and tok.head.dep_ in _SUBJ_DEPS
            and tok.head.i == tok.i + 1
        ):
            text = name
            skip_until = tok.i + 2
        if text is None:
            out.append(tok.text_with_ws)
            continue
        resolved = True
        if tok.i == sent.start and text[:1].islower():
            text = text[:1].upper() + text[1:]
        last = doc[skip_until - 1] if skip_until > tok.i else tok
        out.append(text + last.whitespace_)
    return "".join(out).strip(), resolved


def _sentence_facts(doc: Any, title: str, cfg: OfflinePropositionConfig) -> list[Proposition]:
    from gearag.extract.spacy.spans import name_spans

    name = _title_name(title)
    topic_names = [n for n in dict.fromkeys((title, name)) if n]
    spans, _ = name_spans(doc, topic_names)
    sents = list(doc.sents)
    class_noun = _class_noun(sents[0]) if sents and cfg.resolve_to_title else None
    facts: list[Proposition] = []
    for sent in sents:
        if sum(1 for t in sent if not t.is_punct) < cfg.min_words:
            continue
        entities: list[str] = []
        seen_spans: set[tuple[int, int]] = set()
        for tok in sent:
            span = spans.get(tok.i)
            if span is None or (span[0], span[1]) in seen_spans:
                continue
            seen_spans.add((span[0], span[1]))
            start, end, label = span
            if label in cfg.skip_labels:
                continue
            text = _SPACES.sub(" ", doc[start:end].text).strip()
            if label == "TOPIC" or text.lower() in (title.lower(), name.lower()):
                text = name
            if text and any(ch.isalpha() for ch in text):
                entities.append(text)
        fact = _SPACES.sub(" ", sent.text).strip()
        if cfg.resolve_to_title and name:
            fact, resolved = _rewrite(sent, name, class_noun)
            fact = _SPACES.sub(" ", fact)
            if resolved:
                entities.insert(0, name)
        facts.append(Proposition(fact, tuple(dict.fromkeys(entities))))
    return facts


def offline_propositions(
    passages: Sequence[Passage], config: OfflinePropositionConfig | None = None
) -> list[list[Proposition]]:
    """Sentence-level facts with entities for every passage, in passage order (deterministic)."""
    from gearag.extract.spacy.clean import clean_text
    from gearag.extract.spacy.pipeline import load_nlp

    cfg = config or OfflinePropositionConfig()
    nlp = load_nlp()
    texts = (clean_text(p.text) for p in passages)
    kwargs: dict[str, Any] = {"batch_size": cfg.batch_size}
    if cfg.processes > 1:
        kwargs["n_process"] = cfg.processes
    out: list[list[Proposition]] = []
    for passage, doc in zip(passages, nlp.pipe(texts, **kwargs), strict=False):
        out.append(_sentence_facts(doc, passage.title, cfg))
    return out


# --------------------------------------------------------------------------- LLM


class PropositionRoles(Protocol):
    """What :func:`llm_propositions` needs (a subset of :class:`gearag.llm.roles.LLMRoles`)."""

    def coref_rewrite(self, paragraph: str, previous: str = "") -> str: ...

    def extract_entities(self, text: str) -> list[Any]: ...

    def extract_propositions(self, text: str, entities: Iterable[Any] = ()) -> list[Any]: ...


def facts_from_llm(propositions: Iterable[Any], entities: Iterable[Any] = ()) -> list[Proposition]:
    """Facts from parsed LLM output (:class:`gearag.llm.parse.Proposition` / ``Entity``).

    A fact's entities are the extracted entity names that occur in it
    (case-insensitively, in order of occurrence), then the heads and tails of
    its triplets that are not among them; a fact with neither has none and
    will be dropped by the aggregator, as in the released code.
    """
    names = [getattr(e, "name", e) for e in entities]
    names = [str(n).strip() for n in names if n and str(n).strip()]
    out: list[Proposition] = []
    for prop in propositions:
        fact = str(getattr(prop, "fact", prop) or "").strip()
        if not fact:
            continue
        low = fact.lower()
        found = sorted(
            ((low.find(n.lower()), n) for n in names if n.lower() in low), key=lambda x: (x[0], -len(x[1]))
        )
        ents = [n for _, n in found]
        for extra in getattr(prop, "entities", []) or []:
            extra = str(extra).strip()
            if extra and extra.lower() not in {e.lower() for e in ents}:
                ents.append(extra)
        out.append(Proposition(fact, tuple(dict.fromkeys(ents))))
    return out


def llm_passage_propositions(roles: PropositionRoles, passage: Passage) -> list[Proposition]:
    """§4.2's three LLM steps for one passage: coreference rewrite → entities → propositions."""
    text = roles.coref_rewrite(passage.content)
    entities = roles.extract_entities(text)
    return facts_from_llm(roles.extract_propositions(text, entities), entities)


def llm_propositions(
    roles: PropositionRoles,
    passages: Sequence[Passage],
    *,
    on_passage: Callable[[int, list[Proposition]], None] | None = None,
    done: dict[int, list[Proposition]] | None = None,
    concurrency: int = 1,
    fallback: bool | None = None,
) -> list[list[Proposition]]:
    """§4.2 with the LLM: coreference rewrite → entities → propositions, per passage.

    ``done`` maps passage rows already processed (e.g. loaded from a
    checkpoint) to the model's propositions (as ``on_passage`` was given
    them); they are not sent again. ``on_passage`` is called after each new
    passage, in row order, with the model's propositions (e.g. to append them
    to a checkpoint). Passages run ``concurrency`` at a time (their three steps
    stay sequential). The coreference step sees the passage alone
    (``title + "\\n" + text``): the corpus's passages are independent documents.

    ``fallback`` (default: the roles' ``llm_fallback``, else on): a passage
    without propositions gets :func:`offline_propositions`' (module docstring).
    """
    from gearag.llm.base import ordered_map

    done = done or {}
    todo = [row for row in range(len(passages)) if row not in done]
    results = dict(done)
    for row, facts in zip(
        todo, ordered_map(lambda r: llm_passage_propositions(roles, passages[r]), todo, concurrency), strict=True
    ):
        results[row] = facts
        if on_passage is not None:
            on_passage(row, facts)
    raw = [results[row] for row in range(len(passages))]
    return with_offline_fallback(passages, raw, getattr(roles, "llm_fallback", True) if fallback is None
                                 else fallback)


def with_offline_fallback(passages: Sequence[Passage], facts: Sequence[list[Proposition]],
                          fallback: bool = True) -> list[list[Proposition]]:
    """``facts`` (the model's, one list per passage) with each empty list replaced by the offline engine's
    facts of that passage when ``fallback``; every passage counts as one ``propositions`` reply
    (:func:`gearag.llm.fallback.played`). spaCy is loaded only when a passage has none."""
    from gearag.llm.fallback import played_all
    from gearag.llm.roles.sirerag import PROPOSITIONS

    def offline(rows: list[int]) -> list[list[Proposition]]:  # one parse of them all; each depends on itself
        return offline_propositions([passages[r] for r in rows])

    return played_all(PROPOSITIONS.name, [list(found) for found in facts], [bool(found) for found in facts],
                      offline if fallback else None)

"""Proposition aggregates: the facts that share an entity, concatenated (SiReRAG §4.2).

Input: for every passage (row ``i`` of the corpus), its propositions as
:class:`Proposition` (or the released files' ``{"fact": ..., "entities": [...]}``
mappings). Output: :class:`Aggregate` pseudo-documents, the leaves of the
relatedness tree.

The released code's rules, kept:

* a fact without entities never enters an aggregate;
* the key of an entity is its string lower-cased (exact match otherwise);
* facts are appended in document order (passage by passage, fact by fact);
* the text of an aggregate is its facts joined by ``"\\n"`` (with
  ``AggregateConfig(titled=False)``, ``--sirerag-aggregate-text facts``; the
  default adds the passages' titles, see the deviations);
* an entity with exactly one fact, whose fact also appears under another
  entity, is skipped (that fact is already indexed elsewhere);
* single facts are never indexed by themselves (see :mod:`gearag.sirerag.pool`
  for the Table-5 ablations that do).

Deviations, and why:

* Order is deterministic: aggregates come in the order their entity first
  appears in the corpus (the released code dedups them through a Python set).
* The same fact text listed twice under one entity (a duplicate passage, or
  a fact naming the entity twice) appears once; its sources are merged.
* Aggregates with identical texts (two entities with exactly the same facts)
  are merged into the first, keeping every entity name, so that the pool has
  no duplicate nodes.
* Optional :attr:`AggregateConfig.max_facts` splits very frequent entities
  into consecutive parts (off by default, as in the released code).
* Every aggregate carries the passage rows its facts come from.
* With :attr:`AggregateConfig.titled` (the default; ``False`` is the released
  text) and the passages' titles given, the text names where each fact comes
  from: consecutive facts of one passage form a block headed by the passage's
  title (``"title\\nfact\\nfact"``), blocks are separated by a blank line —
  the ``title + "\\n" + text`` form the released code gives every leaf. Why:
  §4.2's first step rewrites every chunk so that each fact names its entities
  ("make each sentence clear and unambiguous", Figure 6; "avoid pronouns or
  ambiguous references in facts", Figure 8). The offline engine's rewrite only
  substitutes the title for pronouns and a few class nouns, so many of its
  facts ("The film was nominated for two Academy Awards.") still lean on the
  passage they came from; the title restores that context for the reader and
  for the embedding, and lets the extractive summaries above the aggregates
  keep each sentence's source, as they already do for leaves
  (:mod:`gearag.sirerag.summarise`). Measured in docs/benchmarks-log.md ("SiReRAG
  offline pool, 2Wiki (branch sire4)") with the offline engine only; it is
  also the default for LLM facts, which §4.2's rewrite already makes
  self-contained (there the title only adds provenance; not measured).
  The Table-5 single propositions (:mod:`gearag.sirerag.pool`) stay untitled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Proposition:
    """One proposition: a self-contained sentence and the entities it mentions, in order.

    Not :class:`gearag.model.Fact` (a triple) nor :class:`gearag.llm.parse.Proposition`
    (an LLM reply: a fact with its triplets), which
    :func:`gearag.sirerag.propositions.facts_from_llm` turns into these.
    """

    text: str
    entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The facts of one entity, in document order."""

    #: The entity as first written (its key is ``entity.lower()``).
    entity: str
    #: The facts, distinct, in document order.
    facts: tuple[str, ...]
    #: Sorted passage rows the facts come from.
    sources: tuple[int, ...]
    #: Other entities whose aggregate had exactly the same facts (merged here).
    also: tuple[str, ...] = ()
    #: Per fact, the title of the passage it comes from (its first row); empty: untitled text, as released.
    titles: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The facts joined by newlines (as released); with titles, one ``title``-headed block per passage run."""
        if not self.titles:
            return "\n".join(self.facts)
        blocks: list[tuple[str, list[str]]] = []
        for title, fact in zip(self.titles, self.facts, strict=True):
            if blocks and blocks[-1][0] == title:
                blocks[-1][1].append(fact)
            else:
                blocks.append((title, [fact]))
        return "\n\n".join("\n".join([title, *facts]) if title else "\n".join(facts) for title, facts in blocks)


@dataclass(frozen=True, slots=True)
class AggregateConfig:
    """Options of :func:`build_aggregates`."""

    #: Apply the released code's skip rule (single fact indexed under another entity).
    skip_redundant_singletons: bool = True
    #: Split an entity's facts into parts of at most this many (``None``: no cap, as released).
    max_facts: int | None = None
    #: Head each passage's facts with the passage's title (needs ``titles``); ``False``: the released text.
    titled: bool = True


@dataclass
class AggregateStats:
    facts_in: int = 0
    facts_without_entities: int = 0
    entities: int = 0
    skipped_singletons: int = 0
    merged_duplicates: int = 0
    aggregates: int = 0
    per_entity: list[int] = field(default_factory=list)


def as_proposition(item: Proposition | Mapping[str, Any]) -> Proposition:
    """A :class:`Proposition` from itself or from a released-file ``{"fact", "entities"}`` mapping."""
    if isinstance(item, Proposition):
        return item
    text = item.get("fact", item.get("text", ""))
    entities = item.get("entities") or ()
    if isinstance(entities, str):
        entities = (entities,)
    return Proposition(str(text or "").strip(), tuple(str(e) for e in entities if e is not None))


def build_aggregates(
    facts_by_passage: Sequence[Iterable[Proposition | Mapping[str, Any]]],
    config: AggregateConfig | None = None,
    stats: AggregateStats | None = None,
    *,
    titles: Sequence[str] | None = None,
) -> list[Aggregate]:
    """Group facts by shared entity; ``facts_by_passage[i]`` are the facts of passage row ``i``.

    ``titles[i]`` is the title of passage row ``i``; with :attr:`AggregateConfig.titled` the
    aggregates' texts name each fact's passage (see the module's docstring). Without titles,
    or with ``titled=False``, the text is the released one.
    """
    cfg = config or AggregateConfig()
    if titles is not None and len(titles) != len(facts_by_passage):
        raise ValueError(f"need one title per passage ({len(facts_by_passage)}), got {len(titles)}")
    heads_of: Sequence[str] = titles if (cfg.titled and titles is not None) else ()
    stats = stats if stats is not None else AggregateStats()
    # key -> (display name, {fact text -> set of rows}) ; dicts keep insertion (document) order.
    groups: dict[str, tuple[str, dict[str, set[int]]]] = {}
    for row, facts in enumerate(facts_by_passage):
        for raw in facts:
            fact = as_proposition(raw)
            if not fact.text:
                continue
            stats.facts_in += 1
            names = [e.strip() for e in fact.entities if e and e.strip()]
            if not names:
                stats.facts_without_entities += 1
                continue
            for name in dict.fromkeys(names):
                key = name.lower()
                entry = groups.get(key)
                if entry is None:
                    entry = groups[key] = (name, {})
                entry[1].setdefault(fact.text, set()).add(row)
    stats.entities = len(groups)

    # How many entities list each fact (for the skip rule).
    listed: dict[str, int] = {}
    for _, by_fact in groups.values():
        for text in by_fact:
            listed[text] = listed.get(text, 0) + 1

    out: list[Aggregate] = []
    by_text: dict[tuple[str, ...], int] = {}
    for name, by_fact in groups.values():
        if cfg.skip_redundant_singletons and len(by_fact) == 1:
            (only,) = by_fact
            if listed[only] > 1:
                stats.skipped_singletons += 1
                continue
        stats.per_entity.append(len(by_fact))
        texts = list(by_fact)
        size = cfg.max_facts or len(texts)
        for start in range(0, len(texts), size):
            part = tuple(texts[start : start + size])
            rows = sorted(set().union(*(by_fact[t] for t in part)))
            seen = by_text.get(part)
            if seen is not None:
                prev = out[seen]
                out[seen] = Aggregate(prev.entity, prev.facts, prev.sources, (*prev.also, name), prev.titles)
                stats.merged_duplicates += 1
                continue
            by_text[part] = len(out)
            heads = tuple(" ".join(str(heads_of[min(by_fact[t])]).split()) for t in part) if heads_of else ()
            out.append(Aggregate(name, part, tuple(rows), titles=heads))
    stats.aggregates = len(out)
    return out

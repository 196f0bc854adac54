"""The passage graph's edge kinds: one registry, from the arrays an index stores to how a push reads them.

Every edge kind is an :class:`EdgeKind`: the ``ResolveConfig`` switch that
stores it (none for the core kinds: ``mentions``, ``about``, ``relations``),
how its edges are derived (the resolution's own; :attr:`EdgeKind.over_keys`, a
function of the entity keys, as the synonyms are; :attr:`EdgeKind.span_mentions`,
name occurrences each shard keeps, as the NER spans are), and the sources the
PPR transition reads it through (:class:`TransitionSource`: which nodes to
which, the query setting that weighs it, whether its entries carry the about
terms' scale ids, and which source it is the transpose of). The transition,
the derived entity-only graph, the stored prepared graph and an add's delta
iterate :data:`EDGE_KINDS`. docs/architecture.md, "Edge kinds", has the table
of kinds, what reads the registry and how to add a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

from gearag.config import ResolveConfig
from gearag.graph.synonyms import synonym_matrix


@dataclass(frozen=True)
class EdgeInputs:
    """What an edge kind may read besides the graph arrays, each computed only when a kind asks."""

    #: Names → unit rows, with the index's embedder (:func:`gearag.embed.base.make_embedder`).
    embed: Callable[[list[str]], np.ndarray]


class TransitionSource(NamedTuple):
    """How the PPR transition reads one edge kind's edges in one direction (:mod:`gearag.graph.scaled`)."""

    name: str  #: its name in a stored prepared graph (``source_<name>_*.npy``)
    of_passages: bool  #: its rows are passages (else entities)
    to_passages: bool  #: its targets are passages (else entities)
    #: The :class:`~gearag.graph.config.PassageGraphConfig` setting that weighs it (None: weight 1, always kept).
    weight: str | None = None
    scaled: bool = False  #: its entries carry scale ids (about terms, read with their title name's scale)
    #: The source it is the transpose of (made from it; an add's delta gains its changes the other way).
    transpose_of: str | None = None

    def weight_in(self, config: object) -> float:
        """Its weight under ``config`` (a :class:`~gearag.graph.config.PassageGraphConfig`): 1 when no setting
        weighs it."""
        return 1.0 if self.weight is None else float(getattr(config, self.weight))


@dataclass(frozen=True)
class EdgeKind:
    """One edge kind of the passage graph (module docstring)."""

    name: str
    #: The :class:`~gearag.config.ResolveConfig` switch that stores it; None: a core kind, always stored.
    setting: str | None
    #: How the transition reads it, in the order a push sums a column.
    sources: tuple[TransitionSource, ...] = ()
    #: Its entity × entity edges as a function of the entity keys alone (None: a core kind, or NER mentions): an
    #: add or a delete through the delta derives them again over the keys after it, in its own numbering, and
    #: keeps the rows that changed.
    over_keys: Callable[[Sequence[str | None], ResolveConfig, EdgeInputs], sparse.csr_matrix] | None = None
    #: Its entries are the passages' NER spans (each shard's, ``ShardColumns.ner_spans``), mentions resolved
    #: like triple ends, read as mention edges: a second stream of names in the resolution.
    span_mentions: bool = False


#: The registry, in the order kinds derive.
EDGE_KINDS: dict[str, EdgeKind] = {}


def register_edge_kind(kind: EdgeKind) -> EdgeKind:
    """Register ``kind`` (after every kind registered so far)."""
    if kind.name in EDGE_KINDS:
        raise ValueError(f"edge kind {kind.name!r} is registered already")
    if kind.setting is not None and not hasattr(ResolveConfig(), kind.setting):
        raise ValueError(f"edge kind {kind.name!r}: ResolveConfig has no setting {kind.setting!r}")
    if (kind.setting is None) != (kind.over_keys is None and not kind.span_mentions):
        raise ValueError(f"edge kind {kind.name!r}: an optional kind has a derivation (over the keys or as span "
                         f"mentions), a core kind none")
    names = {s.name for k in EDGE_KINDS.values() for s in k.sources}
    for src in kind.sources:
        if src.name in names or (src.transpose_of is not None and src.transpose_of not in names):
            raise ValueError(f"edge kind {kind.name!r}: source {src.name!r} is registered already, or the "
                             f"transpose of a source not registered before it")
        names.add(src.name)
    EDGE_KINDS[kind.name] = kind
    return kind


def stored_kinds(config: ResolveConfig) -> list[EdgeKind]:
    """The optional kinds an index built with ``config`` stores, in derivation order."""
    return [k for k in EDGE_KINDS.values() if k.setting is not None and getattr(config, k.setting)] \
        if config.entity_graph else []


def transition_sources() -> tuple[TransitionSource, ...]:
    """Every registered kind's transition sources, in registry order (the order a push sums a column)."""
    return tuple(src for kind in EDGE_KINDS.values() for src in kind.sources)


def transition_source(name: str) -> TransitionSource:
    """The registered source called ``name``."""
    for src in transition_sources():
        if src.name == name:
            return src
    raise KeyError(f"no transition source {name!r} is registered")


def _synonym_edges(keys: Sequence[str | None], config: ResolveConfig, inputs: EdgeInputs) -> sparse.csr_matrix:
    """Synonym edges between every entity's name (HippoRAG §3.2; :func:`~gearag.graph.synonyms.synonym_matrix`:
    the same names give the same edges whatever their ids)."""
    return synonym_matrix(keys, inputs.embed, config.synonym_threshold, config.synonym_neighbours)


register_edge_kind(EdgeKind("mentions", None, (
    TransitionSource("mentions", of_passages=True, to_passages=False),
    TransitionSource("backlinks", of_passages=False, to_passages=True, weight="backlink_weight",
                     transpose_of="mentions"))))
register_edge_kind(EdgeKind("about", None, (
    TransitionSource("terms", of_passages=False, to_passages=True, weight="about_weight", scaled=True),
    TransitionSource("terms_by_passage", of_passages=True, to_passages=False, weight="about_weight", scaled=True,
                     transpose_of="terms"))))
register_edge_kind(EdgeKind("relations", None, (
    TransitionSource("relations", of_passages=False, to_passages=False),)))
register_edge_kind(EdgeKind("ner_mentions", "ner_mentions", span_mentions=True))
register_edge_kind(EdgeKind("synonyms", "synonyms", (
    TransitionSource("synonyms", of_passages=False, to_passages=False, weight="synonym_weight"),), _synonym_edges))

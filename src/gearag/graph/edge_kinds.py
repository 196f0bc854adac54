"""The passage graph's optional edge kinds: each one registered derivation over the corpus's resolution.

The graph's core edges (mentions, about, relations) come from the entity
resolution itself (:mod:`gearag.graph.resolve`). The edge kinds an index
stores on request are registered here, each as an :class:`EdgeKind`:

==================  ===========================  ===========================  =================================
kind                stored when (``--…``)        weighed at query time by     reads
==================  ===========================  ===========================  =================================
``ner_mentions``    ``index_ner_mentions``       ``ner_mentions`` (on/off)    the passages' NER spans
``synonyms``        ``synonyms``                 ``synonym_weight``           the entity names, embedded
==================  ===========================  ===========================  =================================

A kind's ``derive`` takes the graph arrays made so far and returns them with
its edges; kinds run in registration order (NER mentions add entities, so
they come before the synonyms, which join every entity's name). Every path
that makes an index's graph arrays calls :func:`with_edge_kinds`: a build
(:func:`gearag.indexing.union_files.write_union` over its passages as one
shard) and every add, delete and compact (the same ``write_union`` over the
union of the shards). An index built with a kind therefore grows like a
rebuild. Each input is read only
when a kind asks for it (:class:`EdgeInputs`): the NER spans are a
per-passage file every shard keeps (:mod:`gearag.indexing.ner`).

To add an edge kind: write its derivation (GraphArrays → GraphArrays, exact
whatever the order passages arrived in), register it here with the
``ResolveConfig`` switch that stores it, store its matrix in
:class:`~gearag.graph.graph_arrays.GraphArrays`, and give the transition its
weight (:mod:`gearag.graph.scaled`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gearag.config import ResolveConfig
from gearag.graph.graph_arrays import GraphArrays
from gearag.graph.resolve import with_span_mentions
from gearag.graph.synonyms import synonym_edges
from gearag.text import is_named


@dataclass(frozen=True)
class EdgeInputs:
    """What an edge kind may read besides the graph arrays, each computed only when a kind asks."""

    #: Per passage row of the corpus (the union's, for a sharded index), its named-entity span texts.
    ner_spans: Callable[[], Sequence[Sequence[str]]]
    #: Names → unit rows, with the index's embedder (:func:`gearag.embed.base.make_embedder`).
    embed: Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class EdgeKind:
    """One optional edge kind of the passage graph."""

    name: str
    #: The :class:`~gearag.config.ResolveConfig` switch that stores it.
    setting: str
    #: The query-time :class:`~gearag.graph.config.PassageGraphConfig` setting that weighs (or uses) it.
    weight: str
    derive: Callable[[GraphArrays, ResolveConfig, EdgeInputs], GraphArrays]


#: The registry, in the order kinds derive (a kind that adds entities before one over every entity).
EDGE_KINDS: dict[str, EdgeKind] = {}


def register_edge_kind(kind: EdgeKind) -> EdgeKind:
    """Register ``kind`` (after every kind registered so far)."""
    if kind.name in EDGE_KINDS:
        raise ValueError(f"edge kind {kind.name!r} is registered already")
    if not hasattr(ResolveConfig(), kind.setting):
        raise ValueError(f"edge kind {kind.name!r}: ResolveConfig has no setting {kind.setting!r}")
    EDGE_KINDS[kind.name] = kind
    return kind


def stored_kinds(config: ResolveConfig) -> list[EdgeKind]:
    """The kinds an index built with ``config`` stores, in derivation order."""
    return [k for k in EDGE_KINDS.values() if getattr(config, k.setting)] if config.entity_graph else []


def with_edge_kinds(arrays: GraphArrays, config: ResolveConfig, inputs: EdgeInputs) -> GraphArrays:
    """``arrays`` with the edges of every kind ``config`` stores."""
    for kind in stored_kinds(config):
        arrays = kind.derive(arrays, config, inputs)
    return arrays


def _ner_mentions(arrays: GraphArrays, config: ResolveConfig, inputs: EdgeInputs) -> GraphArrays:
    """NER spans as mentions (:func:`~gearag.graph.resolve.with_span_mentions`); the new entities' rows and
    columns of the relation counts are empty (no triple joins them)."""
    res = with_span_mentions(arrays.resolution, inputs.ner_spans(), is_named)
    n = len(res.keys)
    r = arrays.relations
    relations = type(r)((r.data, r.indices, np.concatenate([r.indptr, np.full(n - r.shape[0], r.indptr[-1],
                                                                                     dtype=r.indptr.dtype)])),
                        shape=(n, n))
    return replace(arrays, resolution=res, relations=relations)


def _synonyms(arrays: GraphArrays, config: ResolveConfig, inputs: EdgeInputs) -> GraphArrays:
    """Synonym edges between every entity's name (HippoRAG §3.2; :mod:`gearag.graph.synonyms`)."""
    keys = list(arrays.resolution.keys)
    edges = synonym_edges(np.asarray(inputs.embed(keys), dtype=np.float32), config.synonym_threshold,
                          config.synonym_neighbours)
    return replace(arrays, synonyms=edges.astype(np.float32))


register_edge_kind(EdgeKind("ner_mentions", "ner_mentions", "ner_mentions", _ner_mentions))
register_edge_kind(EdgeKind("synonyms", "synonyms", "synonym_weight", _synonyms))

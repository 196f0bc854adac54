"""The triple graph's one derivation: onto a base it appends, where it cannot it gives the whole graph of a build."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.config import GraphConfig
from gearag.derive.endpoints import EndpointTable, UnionTriples
from gearag.derive.triple_graph import KeyStats, TripleInputs, count_keys, triple_graph
from gearag.derive.union_vocab import UnionVocab
from gearag.graph import hubs
from gearag.store.graph import LayeredTripleGraph, TripleGraph

Triples = list[tuple[str, str, int]]  # (subject, object, passage)


def _inputs(shards: list[Triples], n_passages: int, **kw) -> TripleInputs:  # type: ignore[no-untyped-def]
    tables = [EndpointTable.compute([t[0] for t in s], [t[1] for t in s]) for s in shards]
    vocab = UnionVocab.extend(None, [t.keys for t in tables])
    owner = np.asarray([t[2] for s in shards for t in s], dtype=np.int64)
    return TripleInputs(UnionTriples(tables, [np.ones(len(s), dtype=bool) for s in shards], owner), n_passages,
                        vocab, **kw)


def _whole(config: GraphConfig, shards: list[Triples], n_passages: int) -> tuple[TripleGraph, KeyStats]:
    out = triple_graph(config, _inputs(shards, n_passages))
    assert out is not None and isinstance(out[0], TripleGraph)
    return out[0], out[1]


def _ends(g: TripleGraph | LayeredTripleGraph) -> list[tuple[str | None, str | None]]:
    """Each triple's subject and object entity, by name (None: not linked)."""
    head, tail = (np.asarray(x.whole() if isinstance(g, LayeredTripleGraph) else x) for x in (g.head, g.tail))
    return [(g.entities[h] if h >= 0 else None, g.entities[t] if t >= 0 else None)
            for h, t in zip(head.tolist(), tail.tolist(), strict=True)]


def _postings(g: TripleGraph | LayeredTripleGraph) -> dict[str, list[int]]:
    return {g.entities[e]: g.entity_triples(e).tolist() for e in range(g.n_entities)}


def _corpus(n: int, first: int, names: list[str]) -> Triples:
    """Triples over passages ``first`` to ``first + n``: each passage links two of ``names`` and a lower-case
    endpoint (not a name: never linked)."""
    return [(names[(p * 3) % len(names)], names[(p * 5 + 1) % len(names)], p) for p in range(first, first + n)] + \
        [(names[p % len(names)], "a thing", p) for p in range(first, first + n)]


def test_an_add_onto_a_base_appends_and_is_the_whole_graph_with_the_bases_ids() -> None:
    config = GraphConfig(max_entity_share=1.0)
    # "Omega" is only an object in the base: a build numbers it after the added shard's new subjects.
    base_triples = [*_corpus(12, 0, ["Alpha", "Beta", "Gamma", "Delta"]), ("Alpha", "Omega", 11)]
    added = _corpus(6, 12, ["Gamma", "Epsilon", "Alpha", "Zeta", "Eta"])
    base, prior = _whole(config, [base_triples], 12)
    inputs = _inputs([base_triples, added], 18, prior=prior, counted=1)
    assert count_keys(config, inputs, 12).moved is None  # a delta can say it
    out = triple_graph(config, inputs, base, 12)
    assert out is not None
    grown, stats = out
    assert isinstance(grown, LayeredTripleGraph)
    want, want_stats = _whole(config, [base_triples, added], 18)
    assert list(grown.entities)[: base.n_entities] == list(base.entities)  # the base's ids kept
    np.testing.assert_array_equal(grown.head.whole()[: len(base.head)], base.head)
    assert _ends(grown) == _ends(want) and _postings(grown) == _postings(want)
    assert sorted(grown.entities) == sorted(want.entities) and list(grown.entities) != list(want.entities)
    # The statistics counted onto the base's are those counted from nothing; their ids are the grown graph's.
    np.testing.assert_array_equal(stats.first, want_stats.first)
    np.testing.assert_array_equal(stats.passages, want_stats.passages)
    keys = _inputs([base_triples, added], 18).keys.items
    assert stats.entity is not None
    assert {keys[k]: grown.entities[e] for k, e in enumerate(stats.entity.tolist()) if e >= 0} == \
        {k: k for k in grown.entities}


@pytest.mark.parametrize("move", ["becomes a hub", "stops being one"])
def test_an_add_that_moves_the_hub_cut_over_the_base_gives_the_whole_graph_of_a_build(
        monkeypatch: pytest.MonkeyPatch, move: str) -> None:
    monkeypatch.setattr(hubs, "MIN_HUB_PASSAGES", 1)
    config = GraphConfig(max_entity_share=0.3)
    # "Hub" is in 3 of 10 base passages (the cap is 3: not a hub) or 4 (a hub).
    in_base = 3 if move == "becomes a hub" else 4
    base_triples = [("Hub" if p < in_base else "Other", f"Name{p}", p) for p in range(10)]
    # Then in 3 of 5 added passages (6 of 15 > 4.5), or in none of 10 (4 of 20 < 6).
    added = [("Hub", f"Name{p}", p) for p in range(10, 13)] + [("Other", "Last", 13), ("Other", "Last", 14)] \
        if move == "becomes a hub" else [("Other", f"Name{p}", p) for p in range(10, 20)]
    n = 15 if move == "becomes a hub" else 20
    base, prior = _whole(config, [base_triples], 10)
    assert ("hub" in base.entities) is (move == "becomes a hub")
    inputs = _inputs([base_triples, added], n, prior=prior, counted=1)
    # Known from the add's triples, before either graph is made: the cut moved over one base key ("hub").
    count = count_keys(config, inputs, 10)
    assert count.moved == "the add moved the hub cut (--max-entity-share 0.3) over 1 of the base's " \
                          "entity names"
    assert triple_graph(config, inputs, base, 10, whole=False, count=count) is None  # no delta can say it
    out = triple_graph(config, inputs, base, 10)
    assert out is not None and isinstance(out[0], TripleGraph)
    want, want_stats = _whole(config, [base_triples, added], n)
    assert ("hub" in out[0].entities) is (move != "becomes a hub")
    assert list(out[0].entities) == list(want.entities)  # numbered as a build numbers it
    for part in ("head", "tail", "indptr", "indices"):
        np.testing.assert_array_equal(getattr(out[0], part), getattr(want, part))
    np.testing.assert_array_equal(out[1].passages, want_stats.passages)


def test_the_endpoint_memo_is_bounded_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.derive import endpoints

    subjects = [f"Name {i % 7}" for i in range(50)] + ["the river", "Name 1", "x"]
    objects = [f"Place {i % 5}" for i in range(50)] + ["Name 2", "", "Place 3"]
    whole = EndpointTable.compute(subjects, objects)
    monkeypatch.setattr(endpoints, "SEEN_SURFACES", 3)  # forgets every few surfaces
    small = EndpointTable.compute(subjects, objects)
    assert small.keys == whole.keys and small.names == whole.names
    for part in ("ends", "named", "name_ends"):
        np.testing.assert_array_equal(getattr(small, part), getattr(whole, part))

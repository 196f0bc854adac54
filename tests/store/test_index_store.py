"""The storage interface: an index directory and its Lance export are both an IndexStore, and read the same.

Every method on both backends is tests/test_contract.py; this checks the interface itself on a small index:
each implementation has every member of the protocols, none derives from the other's concrete class, and
both hand out the same passages, triples, graph, collection rows and search results. The Lance half is
skipped when the ``lance`` extra is not installed.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gearag.embed import index_embedder
from gearag.errors import ConfigError
from gearag.retrieve.bm25 import bm25_scores, search_bm25
from gearag.retrieve.dense import search_dense
from gearag.store import CollectionStore, IndexStore, TripleGraphStore
from gearag.store.backend import open_index
from gearag.store.collection import PASSAGES, TRIPLES, Collection
from gearag.store.graph import TripleGraph
from gearag.store.index import Index

#: Dense scores: Lance returns ``1 - dot`` in float32, so scores agree to float32 rounding.
SCORE_TOL = 1e-5


def members(protocol: type) -> set[str]:
    """The names a protocol declares (methods, properties, and ``__len__``)."""
    return {name for name in vars(protocol) if not name.startswith("_")} | (
        {"__len__"} if "__len__" in vars(protocol) else set())


def assert_has_members(obj: object, protocol: type) -> None:
    # Looked up statically: a property such as a collection's bm25_dir may raise when read (no bm25s model).
    missing = set()
    for name in members(protocol):
        try:
            inspect.getattr_static(obj, name)
        except AttributeError:
            missing.add(name)
    assert not missing, f"{type(obj).__name__} lacks {sorted(missing)} of {protocol.__name__}"


@pytest.fixture(scope="module")
def embedded(tiny_index: Index) -> Index:
    """The tiny index opened anew: what these tests cache and read stays out of the session's shared object."""
    return Index.load(tiny_index.path)


@pytest.fixture(scope="module")
def lance(tiny_index: Index, tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("lancedb", reason="the lance extra is not installed")
    from gearag.indexing.export import export_index

    uri = tmp_path_factory.mktemp("index-store") / "lance"
    export_index(tiny_index.path, uri)
    return open_index(uri)


@pytest.fixture(params=["embedded", "lance"])
def store(request: pytest.FixtureRequest, embedded: Index) -> IndexStore:
    if request.param == "embedded":
        return embedded
    opened: IndexStore = request.getfixturevalue("lance")
    return opened


def test_each_backend_is_an_index_store_with_store_collections_and_graph(store: IndexStore) -> None:
    assert isinstance(store, IndexStore)
    assert_has_members(store, IndexStore)
    assert_has_members(store.graph, TripleGraphStore)
    assert set(store.collections) >= {PASSAGES, TRIPLES}
    for coll in store.collections.values():
        assert_has_members(coll, CollectionStore)
        assert len(coll) == coll.spec.rows and coll.name == coll.spec.name
    with pytest.raises(ConfigError, match="no collection 'nope'"):
        store.collection("nope")
    store.close()  # nothing it holds is needed to read it afterwards: the tests go on with it


def test_the_lance_backend_derives_from_no_concrete_class_of_the_embedded_one(lance: Any) -> None:
    from gearag.store.lance.collection import LanceCollection
    from gearag.store.lance.index import LanceIndex, LanceTripleGraph

    assert isinstance(lance, LanceIndex) and not isinstance(lance, Index)
    assert not issubclass(LanceIndex, Index) and not issubclass(Index, LanceIndex)
    assert not issubclass(LanceCollection, Collection) and not issubclass(LanceTripleGraph, TripleGraph)


def test_both_read_the_same_passages_triples_and_graph(embedded: Index, lance: IndexStore) -> None:
    a, b = embedded, lance
    assert list(b.passages) == list(a.passages) and b.passage_rows() == a.passage_rows()
    assert b.config == a.config and b.manifest.get("counts") == a.manifest.get("counts")
    assert [b.triples[t] for t in range(len(a.triples))] == [a.triples[t] for t in range(len(a.triples))]
    assert b.triples.facts(range(len(a.triples))) == a.triples.facts(range(len(a.triples)))
    assert [b.passage_triples(r) for r in range(len(a.passages))] == [a.passage_triples(r)
                                                                      for r in range(len(a.passages))]
    ga, gb = a.graph, b.graph
    assert gb.n_entities == ga.n_entities and list(gb.entities) == list(ga.entities)
    np.testing.assert_array_equal(np.asarray(gb.head), np.asarray(ga.head))
    np.testing.assert_array_equal(np.asarray(gb.tail), np.asarray(ga.tail))
    for e in range(-1, ga.n_entities):
        np.testing.assert_array_equal(gb.entity_triples(e), ga.entity_triples(e))
        assert gb.degree(e) == ga.degree(e)
    for t in range(len(a.triples)):
        np.testing.assert_array_equal(gb.neighbours(t), ga.neighbours(t))


def test_both_collections_hold_the_same_rows(embedded: Index, lance: IndexStore) -> None:
    assert set(lance.collections) == set(embedded.collections)
    for name in (PASSAGES, TRIPLES):
        a, b = embedded.collection(name), lance.collection(name)
        rows = np.arange(len(a))
        assert list(b.texts()) == list(a.texts())
        assert [b.sources(int(r)) for r in rows] == [a.sources(int(r)) for r in rows]
        np.testing.assert_array_equal(b.owner, a.owner)
        np.testing.assert_array_equal(b.rows_vectors(rows), a.rows_vectors(rows))
        assert b.vectors.shape == a.vectors.shape
        wa, wb = a.rows_weights(rows), b.rows_weights(rows)
        assert (wa is None) == (wb is None)
        if wa is not None:
            np.testing.assert_array_equal(wb, wa)


def test_both_search_to_the_same_results(embedded: Index, lance: IndexStore) -> None:
    """Dense: the same ranking (to float32 rounding). BM25: the same matching rows (the backends' BM25 variants
    differ, so scores may)."""
    queries = ["Who is the father of Stephen Curry?", "Which band was formed in Liverpool?"]
    q = index_embedder(embedded).encode(queries)
    for name in (PASSAGES, TRIPLES):
        a, b = embedded.collection(name), lance.collection(name)
        for ha, hb in zip(search_dense(a, q, 5), search_dense(b, q, 5), strict=True):
            assert [h.collection for h in hb] == [name] * len(ha)
            for x, y in zip(ha, hb, strict=True):
                assert abs(x.score - y.score) <= SCORE_TOL
                assert x.idx == y.idx or any(abs(h.score - x.score) <= SCORE_TOL and h.idx == y.idx for h in ha)
        for query in queries:
            found_a, found_b = search_bm25(a, query, len(a)), search_bm25(b, query, len(b))
            assert found_a and {h.idx for h in found_b} == {h.idx for h in found_a}
            rows = np.arange(len(a))
            np.testing.assert_array_equal(bm25_scores(b, query, rows) > 0, bm25_scores(a, query, rows) > 0)


def test_both_cache_what_is_built_over_them(store: IndexStore) -> None:
    built: list[int] = []
    first = store.cached("test:built", lambda: built.append(1) or len(built))
    assert store.cached("test:built", lambda: built.append(1) or len(built)) == first and built == [1]
    assert store.cached("test:variant", lambda: "x", variant="a") == "x"
    assert store.cached("test:variant", lambda: "y", variant="a") == "x"
    assert store.cached("test:variant", lambda: "y", variant="b") == "y"


def test_a_store_says_where_it_is(store: IndexStore, embedded: Index) -> None:
    if store is embedded:
        assert store.location == str(embedded.path)
    else:
        assert Path(store.location.rstrip("/")).name == "lance"
    assert store.identity

"""gearag add / delete / compact: a sharded index equals one index built from the union."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.derive.graph_for import passage_graph_for
from gearag.errors import DataError
from gearag.graph.prepared import stored_prepared
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.model import Passage
from gearag.registry import REGISTRY
from gearag.retrieve.bm25 import BM25Retriever, collection_bm25
from gearag.retrieve.bm25_postings import PostingsBM25
from gearag.store import shards as shard_store
from gearag.store.index import MANIFEST, Index, check_index, read_manifest
from gearag.store.stacked import StackedRows
from numbering import assert_same_graph_up_to_numbering, flattened_generation
from oracles import index_graph_arrays, reference_build

METHODS = REGISTRY.names("method")
STUB = IndexConfig.of(extractor="stub")


def not_growable(config: IndexConfig) -> IndexConfig:
    """``config`` with ``graph.growable`` off: a build that keeps no union state (its first add computes it)."""
    return replace(config, graph=replace(config.graph, growable=False))


def _passages(n: int, n_questions: int) -> tuple[list[Passage], list[str]]:
    rows, questions = wiki_slice(n, n_questions)
    return [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)], [q["question"] for q in questions]


def assert_same_index(a: Index, b: Index) -> None:
    """Same rows, graph, global statistics and BM25/dense scores (b built from scratch). Where ``a``'s generation
    is an add's delta written whole, its entities are numbered as the add appended them: its graphs are
    compared with ``b``'s through the map of the two numberings (:func:`assert_same_graph_up_to_numbering`)."""
    assert a.passages == b.passages
    assert (a.triples.subjects, a.triples.predicates, a.triples.objects) == (
        b.triples.subjects, b.triples.predicates, b.triples.objects)
    np.testing.assert_array_equal(a.triples.passage, b.triples.passage)
    np.testing.assert_array_equal(a.passage_triple_indptr, b.passage_triple_indptr)
    flat = flattened_generation(a)
    if flat:
        assert_same_graph_up_to_numbering(a, b)
    else:
        assert a.graph.entities == b.graph.entities  # ids in first-appearance order, hub cut on the union
        for name in ("head", "tail", "indptr", "indices"):
            np.testing.assert_array_equal(getattr(a.graph, name), getattr(b.graph, name))
    assert a.manifest["counts"] == b.manifest["counts"]
    for coll in ("passages", "triples"):
        ca, cb = a.collection(coll), b.collection(coll)
        assert len(ca) == len(cb)
        np.testing.assert_allclose(ca.vectors, cb.vectors, atol=1e-6)
        if cb.weights is not None:
            np.testing.assert_allclose(ca.weights, cb.weights, rtol=1e-6)
        # The sharded index scores from its shards' postings, the build from a bm25s model: same
        # statistics (documents, every term's document frequency) and the same float32 scores, bit for bit.
        ra, rb = collection_bm25(ca), collection_bm25(cb)
        assert isinstance(ra, PostingsBM25) and isinstance(rb, BM25Retriever)
        assert ra.size == rb.size
        assert ra.vocabulary() == rb.vocabulary()
        for query in ("film director born", b.passages[0].title, b.passages[-1].text[:80]):
            np.testing.assert_array_equal(ra.scores(query), rb.scores(query))
    # A generation that stores no graph arrays has them derived from its passages, without NER mentions: b's too.
    ga, gb = index_graph_arrays(a), index_graph_arrays(b, stored=not flat)
    assert ga.resolution.keys == gb.resolution.keys
    for name in ("about", "mentions"):
        diff = getattr(ga.resolution, name) - getattr(gb.resolution, name)
        assert abs(diff).sum() == 0
    np.testing.assert_array_equal(ga.resolution.triple_ends, gb.resolution.triple_ends)
    for name, ma, mb in (("ner_mentions", ga.resolution.ner_mentions, gb.resolution.ner_mentions),
                         ("synonyms", ga.synonyms, gb.synonyms), ("relations", ga.relations, gb.relations)):
        if flat and name == "ner_mentions":
            continue  # derived from its passages without NER spans: its prepared graph's are compared above
        assert (ma is None) == (mb is None), name  # the optional edge kinds: stored by both or by neither
        if ma is not None:
            assert ma.shape == mb.shape and abs(ma - mb).sum() == 0, name
    if flat:
        return  # its resolution arrays are not stored (the ones above are built from its passages)
    np.testing.assert_array_equal(passage_graph_for(a).specificity, passage_graph_for(b).specificity)
    pa, pb = stored_prepared(a), stored_prepared(b)  # what queries memory-map (none: --no-prepared-graph)
    assert (pa is None) == (pb is None)
    if pa is None or pb is None:
        return
    assert pa.meta() == pb.meta()
    for name, array in pb.files().items():
        np.testing.assert_array_equal(pa.files()[name], array, err_msg=name)


def assert_same_rankings(a: Index, b: Index, questions: list[str], methods: list[str]) -> None:
    ga, gb = Gearag(a), Gearag(b)
    for method in methods:
        for question in questions:
            ra, rb = ga.retrieve(question, method, 10), gb.retrieve(question, method, 10)
            assert [h.idx for h in ra.passages] == [h.idx for h in rb.passages], (method, question)
            np.testing.assert_allclose([h.score for h in ra.passages], [h.score for h in rb.passages],
                                       rtol=1e-5, atol=1e-7, err_msg=f"{method}: {question}")


def spy_priors(monkeypatch: pytest.MonkeyPatch) -> tuple[list[bool], list[bool]]:
    """Per generation from now on: whether its triple graph started from stored key statistics, and (one entry
    per generation) whether it was derived from nothing, as a build (``write_from_nothing``, which an add's or a
    delete's delta does not call)."""
    from gearag.derive import union_files
    from gearag.indexing import generation

    graph: list[bool] = []
    nothing: list[bool] = []
    real_graph, real_nothing = union_files.triple_graph, generation.write_from_nothing

    def graph_spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        graph.append(args[1].prior is not None)  # triple_graph(config, inputs, ...)
        return real_graph(*args, **kwargs)

    def nothing_spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        nothing.append(True)
        return real_nothing(*args, **kwargs)

    monkeypatch.setattr(union_files, "triple_graph", graph_spy)
    monkeypatch.setattr(generation, "write_from_nothing", nothing_spy)
    return graph, nothing


@pytest.mark.slow
def test_shards_rank_like_one_index_built_from_the_union(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real 2Wiki slice (spaCy triples, wordllama): base + 2 adds == a from-scratch build, for every method.

    The reference is built without the union state (``growable`` off: the plain graph and resolve stages).
    Each add counts only its own shard's endpoints: it starts from the union state (key and name statistics)
    the base build and then the first add's generation stored, and writes its delta whole.
    """
    passages, questions = _passages(30, 4)
    full = reference_build(passages, tmp_path / "full", IndexConfig())
    assert "union" not in full.manifest and not (tmp_path / "full" / "union").exists()
    n = len(passages)
    cut1, cut2 = n // 2, (3 * n) // 4
    build_index(passages[:cut1], tmp_path / "grown", IndexConfig())
    graph_prior, names_prior = spy_priors(monkeypatch)
    add_documents(tmp_path / "grown", passages[cut1:cut2])
    grown = add_documents(tmp_path / "grown", passages[cut2:])
    # Each add is its delta over the stored state (the key and name statistics), written whole: the triple graph
    # counts the add's shard onto the kept statistics, and neither is derived from nothing again.
    assert graph_prior == [True, True] and names_prior == [] and flattened_generation(grown)
    assert grown.manifest["layout"] == "sharded" and len(grown.manifest["shards"]) == 3
    assert grown.graph.n_entities > 0 and len(grown.triples) > n
    # Three shards' vectors are read in place (memory maps), never concatenated into one array.
    assert all(isinstance(grown.collection(c).vectors, StackedRows) for c in ("passages", "triples"))
    assert_same_index(grown, full)
    assert_same_rankings(Index.load(tmp_path / "grown"), full, questions[:3], METHODS)


def test_add_delete_compact_round_trip_equals_a_build_of_what_remains(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    use_stub_extractor(StubExtractor())
    passages, questions = _passages(46, 4)
    root = tmp_path / "idx"
    a, b = passages[:20], passages[20:32]
    build_index(a, root, STUB)
    add_documents(root, b)
    gone = {a[3].id, a[7].id, b[0].id, b[5].id}
    from gearag.derive import delta_delete

    real_deletion = delta_delete.resolve_deletion
    removals: list[bool] = []

    def spy_delete(inputs, base):  # type: ignore[no-untyped-def]
        out = real_deletion(inputs, base)
        removals.append(out is not None)
        return out

    monkeypatch.setattr(delta_delete, "resolve_deletion", spy_delete)
    deleted = delete_documents(root, sorted(gone))
    monkeypatch.setattr(delta_delete, "resolve_deletion", real_deletion)
    assert removals == [True] and flattened_generation(deleted)  # the delete's delta over the state, written whole
    remaining = [p for p in a + b if p.id not in gone]
    expected = reference_build(remaining, tmp_path / "expected", STUB)
    assert_same_index(deleted, expected)
    # A deleted id may be added again: tombstones name rows, not ids.
    again = [p for p in a if p.id == a[3].id] + passages[32:40]
    grown = add_documents(root, again)
    expected2 = reference_build(remaining + again, tmp_path / "expected2", STUB)
    assert_same_index(grown, expected2)
    shards_before = len(grown.manifest["shards"])
    from gearag.indexing import incremental

    def no_derivation(*_args: object, **_named: object) -> None:
        raise AssertionError("a compact derived its generation again")

    monkeypatch.setattr(incremental, "write_generation", no_derivation)  # the graphs kept, the state re-keyed
    compacted = compact(root)
    monkeypatch.undo()
    assert shards_before == 3 and len(compacted.manifest["shards"]) == 1
    assert_same_index(compacted, expected2)
    assert_same_rankings(compacted, expected2, questions, ["bm25", "hybrid", "syncge", "hipporag2"])
    # One clean shard: vectors memory-mapped from the shard, nothing left behind.
    assert isinstance(compacted.collection("passages").vectors, np.memmap)
    check_index(root, full=True)
    assert sorted(p.name for p in (root / "shards").iterdir()) == [compacted.manifest["shards"][0]["name"]]
    assert len(list((root / "generations").iterdir())) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert compact(root).identity == compacted.identity  # nothing to merge: nothing written
    # An add after the compact extends the union state the compact made for the merged shard.
    _, from_nothing = spy_priors(monkeypatch)
    after = add_documents(root, passages[40:])
    assert from_nothing == [] and flattened_generation(after)  # the add's delta over the compact's state, whole
    assert_same_index(after, reference_build(remaining + again + passages[40:], tmp_path / "expected3", STUB))


def test_converting_a_plain_index_reuses_the_token_ids_its_build_kept(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The first add does not tokenise the plain index's corpus again: its build kept the token ids."""
    from gearag.indexing import bm25 as bm25_stage

    use_stub_extractor(StubExtractor())
    passages, questions = _passages(30, 4)
    plain = build_index(passages[:20], tmp_path / "grown", STUB)
    assert "tokens/triples/ids.npy" in plain.manifest["files"]

    def no_tokenising(*_args: object) -> None:
        raise AssertionError("the conversion tokenised a collection again")

    monkeypatch.setattr(bm25_stage, "write_tokens", no_tokenising)  # what the conversion's shard_tokens calls
    grown = add_documents(tmp_path / "grown", passages[20:])
    full = reference_build(passages, tmp_path / "full", STUB)
    assert_same_index(grown, full)  # BM25 statistics and scores included
    assert_same_rankings(grown, full, questions[:2], ["bm25"])


def test_converting_an_older_plain_index_stores_its_row_offsets_and_id_hashes(tmp_path: Path) -> None:
    """A plain index built before row offsets and id hashes were kept gets them once, in its shard, so later
    adds neither scan its files nor read its ids."""
    from gearag.store.passage_ids import ID_HASHES
    from gearag.store.rows import offsets_rel

    use_stub_extractor(StubExtractor())
    passages, _ = _passages(24, 2)
    root = tmp_path / "grown"
    build_index(passages[:16], root, STUB)
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    for rel in (ID_HASHES, offsets_rel("passages.jsonl"), offsets_rel("triples.jsonl")):
        (root / rel).unlink()
        del manifest["files"][rel]
    (root / "offsets").rmdir()
    (root / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    grown = add_documents(root, passages[16:20])
    first = root / "shards" / grown.manifest["shards"][0]["name"]
    listed = read_manifest(first)["files"]
    assert {ID_HASHES, offsets_rel("passages.jsonl"), offsets_rel("triples.jsonl")} <= set(listed)
    with pytest.raises(DataError, match="already in the index"):
        # found through the converted shard's id hashes (its own content would be skipped as already there)
        add_documents(root, [Passage(passages[3].id, "Other", "Other content.")])
    grown = add_documents(root, passages[20:])
    assert_same_index(grown, reference_build(passages, tmp_path / "full", STUB))


def test_hub_cut_and_entity_ids_are_those_of_the_union(tmp_path: Path) -> None:
    """``max_entity_share`` counts the union's passages: an entity may be a hub in the union only (or a shard only)."""
    use_stub_extractor(StubExtractor())
    config = replace(STUB, graph=replace(STUB.graph, max_entity_share=0.4))  # 80 passages: cap 32; 40: cap 20

    def page(i: int) -> Passage:
        words = (["Hub"] if i < 25 else []) + (["Big"] if i < 15 or 40 <= i < 58 else []) + [f"Thing{i % 7}"]
        return Passage(f"q{i}", f"Page {i}", "This page names " + " and ".join(words) + ".")

    passages = [page(i) for i in range(80)]
    build_index(passages[:40], tmp_path / "grown", config)
    grown = add_documents(tmp_path / "grown", passages[40:60])  # 60 passages: cap 24, "hub" (25) is a hub
    assert "hub" not in grown.graph.entities
    assert_same_index(grown, reference_build(passages[:60], tmp_path / "full60", config))
    grown = add_documents(tmp_path / "grown", passages[60:])  # counted from the stored statistics
    full = reference_build(passages, tmp_path / "full", config)
    assert "hub" in full.graph.entities and "big" not in full.graph.entities  # 25 <= 32 < 33
    assert_same_index(grown, full)


def _count_endpoint_tables(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the triple count of every endpoint table computed from now on (the list fills as adds run)."""
    from gearag.derive import endpoints

    computed: list[int] = []
    real = endpoints.EndpointTable.compute.__func__  # type: ignore[attr-defined]

    def counting(cls, subjects, objects, spans=None):  # type: ignore[no-untyped-def]
        computed.append(len(subjects))
        return real(cls, subjects, objects, spans)

    monkeypatch.setattr(endpoints.EndpointTable, "compute", classmethod(counting))
    return computed


def test_later_adds_compute_only_the_new_shards_endpoints_and_stay_exact(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub cut moves with every add (its cap grows with the union): ids stay those of a build, and a
    second add reads the earlier shards' endpoint tables instead of recomputing them."""
    use_stub_extractor(StubExtractor())
    config = replace(STUB, graph=replace(STUB.graph, max_entity_share=0.4))

    def page(i: int) -> Passage:  # "Hub" in 22 of 40, 22 of 60, 37 of 90; "Big" in 15, 24, 37
        words = (["Hub"] if i < 22 or 60 <= i < 75 else []) + (["Big"] if i < 15 or 40 <= i < 49 or 60 <= i < 73
                                                              else [])
        return Passage(f"q{i}", f"Page {i}", "This page names " + " and ".join([*words, f"Thing{i % 7}"]) + ".")

    passages = [page(i) for i in range(90)]
    root = tmp_path / "grown"
    build_index(passages[:40], root, config)
    first = add_documents(root, passages[40:60])  # caps 20 -> 24: Hub stops being a hub
    assert "hub" in first.graph.entities and "big" in first.graph.entities
    computed = _count_endpoint_tables(monkeypatch)
    grown = add_documents(root, passages[60:])  # cap 36: both are hubs now (37 passages each)
    full = reference_build(passages, tmp_path / "full", config)
    assert "hub" not in full.graph.entities and "big" not in full.graph.entities
    new = len(grown.triples) - int(np.sum([len(Index.load(root / "shards" / s["name"]).triples)
                                           for s in grown.manifest["shards"][:2]]))
    # The new shard's own triple graph, then its table for the generation: the add's delta written whole, with the
    # union's triple graph (the hub cut moved).
    assert computed == [new, new] and flattened_generation(grown)
    assert_same_index(grown, full)


def test_an_add_the_delta_cannot_say_extends_a_generation_written_whole(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An add whose delta is written whole numbers entities as it appended them; the next one's delta cannot be
    said (a new name's hash is a base name's), so its generation is derived from nothing over every shard,
    numbered as a build numbers it, and equals a build."""
    from gearag.derive import delta_resolve

    use_stub_extractor(StubExtractor())
    config = replace(STUB, graph=replace(STUB.graph, max_entity_share=0.4))

    def page(i: int) -> Passage:  # "Hub" in 10 of 40, 10 of 50, then 40 of 80: a hub (cap 32) only then
        words = ["Hub"] if i < 10 or i >= 50 else []
        return Passage(f"h{i}", f"Place {i}", "This place names " + " and ".join([*words, f"Thing{i % 5}"]) + ".")

    passages = [page(i) for i in range(80)]
    root = tmp_path / "grown"
    build_index(passages[:40], root, config)
    first = add_documents(root, passages[40:50])
    assert flattened_generation(first) and "hub" in first.graph.entities
    real = delta_resolve.names_beside

    def taken(old, keys, ids):  # type: ignore[no-untyped-def]  # beside a base's names, a new name's hash is taken
        return None if old.size else real(old, keys, ids)

    monkeypatch.setattr(delta_resolve, "names_beside", taken)
    _, from_nothing = spy_priors(monkeypatch)
    grown = add_documents(root, passages[50:])
    assert from_nothing == [True] and flattened_generation(grown)
    assert "hub" not in grown.graph.entities
    assert_same_index(grown, reference_build(passages, tmp_path / "full", config))


def test_tables_of_another_version_are_recomputed_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    use_stub_extractor(StubExtractor())
    passages, _ = _passages(30, 1)
    root = tmp_path / "idx"
    build_index(passages[:10], root, STUB)
    add_documents(root, passages[10:20])
    computed = _count_endpoint_tables(monkeypatch)
    monkeypatch.setattr(shard_store, "TABLES_VERSION", shard_store.TABLES_VERSION + 1)  # rules changed since
    grown = add_documents(root, passages[20:])
    assert len(computed) == 1 + 3  # the new shard's own triple graph, then every shard's table, not the new one's only
    assert_same_index(grown, reference_build(passages, tmp_path / "full", STUB))

"""The triple graph (CSR), the atomic index writer and the loaded index."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import xxhash

from conftest import StubExtractor, tiny_passages
from gearag.config import IndexConfig
from gearag.embed import index_embedder
from gearag.errors import ConfigError, DataError, IndexFormatError
from gearag.indexing import build_index, work_dir_for
from gearag.model import Passage
from gearag.store.graph import TripleGraph
from gearag.store.index import (
    FORMAT_VERSION,
    MANIFEST,
    Index,
    read_manifest,
    verify_files,
)
from gearag.store.lease import LEASES_DIR
from gearag.store.writer import IndexWriter
from gearag.text import normalise_entity
from oracles import reference_triple_graph

# --------------------------------------------------------------------------- triple graph


def _neighbours_by_definition(subjects: list[str], objects: list[str], i: int) -> list[int]:
    ends = {normalise_entity(subjects[i]), normalise_entity(objects[i])} - {""}
    return [
        j for j in range(len(subjects))
        if j != i and ends & ({normalise_entity(subjects[j]), normalise_entity(objects[j])} - {""})
    ]


GRAPH_TRIPLES = [
    ("The Beatles", "formed in", "Liverpool"),       # 0
    ("beatles", "member", "John Lennon"),            # 1  same head as 0 after normalisation
    ("John Lennon", "born in", "Liverpool"),         # 2  shares tail with 0, head with 1's tail
    ("Liverpool", "is in", "England"),               # 3
    ("Narcissus", "loves", "narcissus"),             # 4  self-loop
    ("Mount Everest", "is in", "Nepal"),             # 5  isolated
    ("!!!", "is", "Nepal"),                          # 6  head normalises to nothing
]


@pytest.fixture
def graph() -> TripleGraph:
    return reference_triple_graph([t[0] for t in GRAPH_TRIPLES], [t[2] for t in GRAPH_TRIPLES])


def test_graph_entities_are_normalised_and_merged(graph: TripleGraph) -> None:
    assert sorted(graph.entities) == sorted(["beatles", "liverpool", "john lennon", "england", "narcissus",
                                             "mount everest", "nepal"])
    assert graph.n_entities == 7
    beatles = graph.entities.index("beatles")
    assert graph.head[0] == graph.head[1] == beatles
    assert graph.head[6] == -1
    assert graph.head.dtype == np.int32 and graph.tail.dtype == np.int32


def test_graph_csr_rows(graph: TripleGraph) -> None:
    ent = {name: i for i, name in enumerate(graph.entities)}
    expected = {
        "beatles": [0, 1],
        "liverpool": [0, 2, 3],
        "john lennon": [1, 2],
        "england": [3],
        "narcissus": [4],  # a self-loop is listed once
        "mount everest": [5],
        "nepal": [5, 6],
    }
    for name, rows in expected.items():
        assert graph.entity_triples(ent[name]).tolist() == rows
        assert graph.degree(ent[name]) == len(rows)
    assert graph.indptr[0] == 0
    assert graph.indptr[-1] == len(graph.indices) == sum(len(r) for r in expected.values())
    assert np.all(np.diff(graph.indptr) >= 0)
    assert graph.entity_triples(-1).tolist() == [] and graph.degree(-1) == 0


def test_graph_matches_scipy_csr(graph: TripleGraph) -> None:
    from scipy.sparse import csr_matrix

    n = len(GRAPH_TRIPLES)
    dense = np.zeros((graph.n_entities, n), dtype=np.int8)
    for t in range(n):
        for e in (graph.head[t], graph.tail[t]):
            if e >= 0:
                dense[e, t] = 1
    ref = csr_matrix(dense)
    assert graph.indptr.tolist() == ref.indptr.tolist()
    assert graph.indices.tolist() == ref.indices.tolist()


def test_graph_neighbours_share_head_or_tail(graph: TripleGraph) -> None:
    subjects, objects = [t[0] for t in GRAPH_TRIPLES], [t[2] for t in GRAPH_TRIPLES]
    assert graph.neighbours(0).tolist() == [1, 2, 3]
    assert graph.neighbours(4).tolist() == []  # self-loop: never its own neighbour
    assert graph.neighbours(5).tolist() == [6]
    assert graph.neighbours(6).tolist() == [5]
    for i in range(len(GRAPH_TRIPLES)):
        assert graph.neighbours(i).tolist() == _neighbours_by_definition(subjects, objects, i)


def test_graph_random_matches_definition() -> None:
    rng = np.random.default_rng(7)
    names = ["The Alpha", "alpha", "Beta", "GAMMA", "gamma!", "Delta", "an Epsilon", "epsilon", "..."]
    subjects = [names[i] for i in rng.integers(0, len(names), 200)]
    objects = [names[i] for i in rng.integers(0, len(names), 200)]
    g = reference_triple_graph(subjects, objects)
    assert g.n_entities == 5  # alpha, beta, gamma, delta, epsilon
    for i in range(0, 200, 7):
        assert g.neighbours(i).tolist() == _neighbours_by_definition(subjects, objects, i)
    for e in range(g.n_entities):
        row = g.entity_triples(e)
        assert np.all(np.diff(row) > 0)  # sorted, no duplicates


def test_graph_from_ids_lists_each_entitys_triples_ascending_once() -> None:
    """Heads, tails, unlinked ends (-1), self-loops and entities in no triple: each entity's row is the sorted
    set of the triples it ends (the definition), with int64 offsets and int32 triple ids."""
    rng = np.random.default_rng(3)
    n_entities, n_triples = 40, 500
    head = rng.integers(-1, n_entities - 3, n_triples).astype(np.int32)
    tail = np.where(rng.random(n_triples) < 0.1, head, rng.integers(-1, n_entities - 3, n_triples)).astype(np.int32)
    g = TripleGraph.from_ids([f"e{i}" for i in range(n_entities)], head, tail)
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int32 and len(g.indptr) == n_entities + 1
    for e in range(n_entities):
        expected = sorted({t for t in range(n_triples) if head[t] == e or tail[t] == e})
        assert g.entity_triples(e).tolist() == expected


def test_graph_empty() -> None:
    g = reference_triple_graph([], [])
    assert g.n_entities == 0
    assert g.indptr.tolist() == [0]
    assert len(g.indices) == 0


# --------------------------------------------------------------------------- index writer


def test_writer_commit_is_atomic(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    writer = IndexWriter(out)
    writer.write_json("a.json", {"x": 1})
    assert not out.exists()
    assert writer.tmp.parent == tmp_path and writer.tmp.name.startswith(".idx.tmp-")
    writer.commit({"counts": {}})
    assert out.is_dir() and not writer.tmp.exists()
    manifest = read_manifest(out)
    assert manifest["format_version"] == FORMAT_VERSION
    assert set(manifest["files"]) == {"a.json"}


def test_writer_abort_on_exception_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    with pytest.raises(RuntimeError), IndexWriter(out) as writer:
        writer.write_json("a.json", [1])
        raise RuntimeError("boom")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_existing(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    out.mkdir()
    (out / "precious.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="already exists"):
        IndexWriter(out)
    with pytest.raises(IndexFormatError, match="not a gearag index"):
        IndexWriter(out, overwrite=True)
    assert (out / "precious.txt").read_text(encoding="utf-8") == "keep me"


def test_build_refuses_existing_then_overwrites(tmp_path: Path) -> None:
    passages = tiny_passages()[:3]
    out = tmp_path / "idx"
    build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=StubExtractor())
    with pytest.raises(IndexFormatError, match="already exists"):
        build_index(passages, out, IndexConfig.of(extractor="stub"), extractor=StubExtractor())
    again = build_index(passages[:2], out, IndexConfig.of(extractor="stub"), extractor=StubExtractor(), overwrite=True)
    assert again.manifest["counts"]["passages"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no .old / .tmp / .work left


def test_build_empty_corpus_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty corpus"):
        build_index([], tmp_path / "idx", IndexConfig.of(extractor="stub"), extractor=StubExtractor())
    assert not (tmp_path / "idx").exists()


@pytest.mark.parametrize("off", ["prepared_graph", "entity_graph"])
def test_ner_mentions_without_the_stored_passage_graph_are_refused_before_any_work(tmp_path: Path, off: str) -> None:
    """NER mentions are kept in the stored passage graph (a query process derives the graph without them)."""
    config = IndexConfig.of(extractor="stub")
    config = replace(config, resolve=replace(config.resolve, ner_mentions=True, **{off: False}))
    with pytest.raises(ConfigError, match="--index-ner-mentions"):
        build_index(tiny_passages()[:3], tmp_path / "idx", config, extractor=StubExtractor())
    assert not (tmp_path / "idx").exists()


# --------------------------------------------------------------------------- the built index


def test_manifest_counts_and_checksums(tiny_index: Index) -> None:
    passages = tiny_passages()
    manifest = read_manifest(tiny_index.path)
    expected_triples = sum(len(StubExtractor.triples_for(p)) for p in passages)
    assert manifest["counts"]["passages"] == len(passages)
    assert manifest["counts"]["triples"] == expected_triples == len(tiny_index.triples)
    assert manifest["counts"]["entities"] == tiny_index.graph.n_entities
    assert manifest["config"]["extract"]["extractor"] == "stub"
    assert manifest["config"]["embed"]["embedder"] == "wordllama"
    assert manifest["extractor_key"] == "stub-v1"
    assert manifest["embedding_dim"] == 256
    on_disk = {
        p.relative_to(tiny_index.path).as_posix()
        for p in tiny_index.path.rglob("*") if p.is_file() and p.name != MANIFEST
        and LEASES_DIR not in p.relative_to(tiny_index.path).parts  # readers' leases: never listed
    }
    assert set(manifest["files"]) == on_disk
    for rel, meta in manifest["files"].items():
        data = (tiny_index.path / rel).read_bytes()
        assert meta["bytes"] == len(data)
        assert meta["xxh3_128"] == xxhash.xxh3_128(data).hexdigest()
    for rel in ("passages.jsonl", "triples.jsonl", "entities.json", "vectors/passages.npy",
                "vectors/triples.npy", "vectors/triple_weights.npy", "arrays/entity_indptr.npy"):
        assert rel in manifest["files"]


def test_index_contents_round_trip(tiny_index: Index) -> None:
    passages = tiny_passages()
    assert tiny_index.passages == passages
    row = 0
    for i, p in enumerate(passages):
        expected = StubExtractor.triples_for(p)
        ids = tiny_index.passage_triples(i)
        assert [tiny_index.triples[t].as_tuple() for t in ids] == expected
        assert all(tiny_index.triples[t].passage == i for t in ids)
        assert ids.start == row
        row = ids.stop
    assert tiny_index.triples.texts()[0] == tiny_index.triples.text(0) == " ".join(tiny_index.triples[0].as_tuple())
    # Entities are shared across passages: "Stephen Curry" is a title and a mention.
    ent = tiny_index.graph.entities
    assert "stephen curry" in ent and "curry" in ent
    assert tiny_index.config == IndexConfig.of(extractor="stub")


def test_index_arrays_are_memory_mapped(tiny_index: Index) -> None:
    assert isinstance(tiny_index.collection("passages").vectors, np.memmap)
    assert isinstance(tiny_index.collection("triples").vectors, np.memmap)
    assert isinstance(tiny_index.graph.indices, np.memmap)
    assert tiny_index.collection("passages").vectors.dtype == np.float32
    assert tiny_index.collection("passages").vectors.shape == (len(tiny_index.passages), 256)
    assert tiny_index.collection("triples").vectors.shape == (len(tiny_index.triples), 256)
    norms = np.linalg.norm(np.asarray(tiny_index.collection("passages").vectors), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_triple_weights_recover_token_sums(tiny_index: Index) -> None:
    embedder = index_embedder(tiny_index)
    sums, _ = embedder.token_sums(tiny_index.triples.texts())
    w = tiny_index.collection("triples").weights
    assert w is not None and w.shape == (len(tiny_index.triples),)
    vectors = np.asarray(tiny_index.collection("triples").vectors)
    np.testing.assert_allclose(w[:, None] * vectors, sums, rtol=1e-4, atol=1e-4)


@pytest.fixture
def index_copy(tiny_index: Index, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(tiny_index.path, out)
    return out


def _flip_byte(path: Path, offset: int = -1) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_verify_detects_same_size_corruption(index_copy: Path) -> None:
    _flip_byte(index_copy / "vectors" / "passages.npy")
    manifest = read_manifest(index_copy)
    # Sizes still match; small files are checksummed by default, not only with --verify.
    with pytest.raises(IndexFormatError, match=r"vectors/passages\.npy fails its checksum"):
        verify_files(index_copy, manifest, checksums=False)
    with pytest.raises(IndexFormatError, match=r"vectors/passages\.npy fails its checksum"):
        verify_files(index_copy, manifest, checksums=True)
    with pytest.raises(IndexFormatError, match="checksum"):
        Index.load(index_copy)
    with pytest.raises(IndexFormatError, match="checksum"):
        Index.load(index_copy, verify=True)


def test_load_detects_truncated_and_missing_files(index_copy: Path) -> None:
    path = index_copy / "triples.jsonl"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(IndexFormatError, match=r"triples\.jsonl has the wrong size"):
        Index.load(index_copy)
    (index_copy / "entities.json").unlink()
    with pytest.raises(IndexFormatError, match=r"missing file"):
        Index.load(index_copy)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m.update(format_version=FORMAT_VERSION + 1), "newer than this gearag supports"),
        (lambda m: m.update(format_version=0), "too old"),
        (lambda m: m.pop("format_version"), "missing format_version"),
        (lambda m: m.update(format="something-else"), "not a gearag index manifest"),
    ],
)
def test_manifest_version_checks(index_copy: Path, edit, needle: str) -> None:
    mpath = index_copy / MANIFEST
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    edit(manifest)
    mpath.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexFormatError, match=needle):
        Index.load(index_copy)


def test_unreadable_manifest(index_copy: Path) -> None:
    (index_copy / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="unreadable manifest"):
        Index.load(index_copy)


def test_counts_mismatch_is_detected(index_copy: Path) -> None:
    mpath = index_copy / MANIFEST
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    manifest["counts"]["passages"] += 1
    mpath.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexFormatError, match="do not match the manifest counts"):
        Index.load(index_copy)


def test_missing_and_non_index_dirs(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match="no such index directory"):
        Index.load(tmp_path / "nothing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(IndexFormatError, match="not a gearag index"):
        Index.load(tmp_path / "plain")


def test_index_with_no_triples(tmp_path: Path) -> None:
    class Nothing:
        key = "nothing-v1"

        def extract(self, passages):
            for _ in passages:
                yield []

    idx = build_index([Passage("a", "Alpha", "lower case only"), Passage("b", "Beta", "more words")],
                      tmp_path / "idx", IndexConfig.of(extractor="nothing"), extractor=Nothing())
    assert idx.manifest["counts"] == {"passages": 2, "triples": 0, "entities": 0}
    assert idx.collection("triples").vectors.shape == (0, 256)
    assert idx.passage_triples(0) == range(0)
    from gearag.retrieve import make_retriever

    assert make_retriever(idx, "bm25", "passages").retrieve("alpha", 1)[0].idx == 0
    assert make_retriever(idx, "dense", "triples").retrieve("alpha", 3) == []


def test_triples_are_cleaned_and_blank_ones_dropped(tmp_path: Path) -> None:
    class Messy:
        key = "messy-v1"

        def extract(self, passages):
            for _ in passages:
                yield [("  Alpha \n one ", "is", "Beta"), ("", "x", "y"), ("a", "  ", "b"), ("c", "d", "\t")]

    idx = build_index([Passage("a", "A", "text")], tmp_path / "idx", IndexConfig.of(extractor="messy"),
                      extractor=Messy())
    assert [idx.triples[i].as_tuple() for i in range(len(idx.triples))] == [("Alpha one", "is", "Beta")]
    assert not work_dir_for(tmp_path / "idx").exists()


# --------------------------------------------------------------------------- which endpoints link


def test_is_named() -> None:
    from gearag.text import is_named

    assert is_named("Aretha Franklin") and is_named("The Beatles") and is_named("BBC")
    assert not is_named("film") and not is_named("closing track")
    assert not is_named("1968") and not is_named("March 25, 1942") and not is_named("")


def test_unlinkable_endpoints_get_no_entity() -> None:
    from gearag.text import is_named

    subjects = ["Alpha", "Alpha", "Beta"]
    objects = ["film", "1968", "film"]
    g = reference_triple_graph(subjects, objects, is_named)
    assert g.entities == ["alpha", "beta"] and g.tail.tolist() == [-1, -1, -1]
    assert g.neighbours(0).tolist() == [1]
    assert g.neighbours(2).tolist() == []  # "film" does not join Beta to Alpha
    assert reference_triple_graph(subjects, objects).neighbours(2).tolist() == [0]


def test_hub_entities_link_nothing() -> None:
    from gearag.config import GraphConfig
    from oracles import linkable_for

    n = 30
    subjects = [f"Person{i}" for i in range(n)] + ["Person0"]
    objects = ["United States"] * n + ["Paris"]
    owner = [*range(n), 0]
    linkable = linkable_for(GraphConfig(), subjects, objects, owner, n)
    assert linkable is not None
    assert not linkable("United States")  # in 30 > max(20, 0.005 * 30) passages
    assert linkable("Person0") and linkable("Paris") and not linkable("film")
    everything = linkable_for(GraphConfig(link_entities="all", max_entity_share=1.0), subjects, objects, owner, n)
    assert everything is not None and everything("United States") and everything("film")


def test_format_1_index_still_loads(tiny_index: Index, tmp_path: Path) -> None:
    """An index written before collections were listed (format 1, flat config) loads and retrieves the same."""
    import shutil

    from gearag.retrieve import make_retriever

    old = tmp_path / "old"
    shutil.copytree(tiny_index.path, old)
    manifest = json.loads((old / MANIFEST).read_text(encoding="utf-8"))
    manifest["format_version"] = 1
    del manifest["collections"]
    cfg = manifest["config"]
    manifest["config"] = {"extractor": cfg["extract"]["extractor"], "embedder": cfg["embed"]["embedder"],
                          "link_entities": "all", "max_entity_share": 1.0, "bm25_k1": 1.2, "bm25_b": 0.75}
    (old / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    loaded = Index.load(old)
    assert set(loaded.collections) == {"passages", "triples"}
    assert loaded.config.graph.link_entities == "all" and loaded.config.bm25.k1 == 1.2
    assert loaded.config.extract.extractor == "stub"
    for method in ("bm25", "dense"):
        for coll in ("passages", "triples"):
            assert [h.idx for h in make_retriever(loaded, method, coll).retrieve("Everest", 3)] == \
                [h.idx for h in make_retriever(tiny_index, method, coll).retrieve("Everest", 3)]

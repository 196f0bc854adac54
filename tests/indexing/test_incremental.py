"""gearag add / delete / compact: a sharded index equals one index built from the union (issue 14, item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, StubExtractor, assert_clean_error, use_stub_extractor, wiki_slice, write_jsonl
from gearag.api import Gearag
from gearag.config import IndexConfig, TreesConfig
from gearag.data import load_corpus
from gearag.derive.graph_for import passage_graph_for
from gearag.errors import DataError, IndexFormatError
from gearag.graph.prepared import stored_prepared
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.model import Passage
from gearag.registry import REGISTRY
from gearag.retrieve.bm25 import BM25Retriever, collection_bm25
from gearag.retrieve.bm25_postings import PostingsBM25
from gearag.store import shards as shard_store
from gearag.store.index import MANIFEST, Index, check_index, manifest_identity, read_manifest
from gearag.store.stacked import StackedRows
from numbering import assert_same_graph_up_to_numbering, flattened_generation, union_generations
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

    def counting(cls, subjects, objects):  # type: ignore[no-untyped-def]
        computed.append(len(subjects))
        return real(cls, subjects, objects)

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


_KILLED_ADD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from conftest import StubExtractor, use_stub_extractor

    index_dir, corpus, stall_after = sys.argv[1], sys.argv[2], int(sys.argv[3])

    class Stalling(StubExtractor):
        def extract(self, passages):
            for n, triples in enumerate(super().extract(passages)):
                if n == stall_after:
                    while True:  # killed here by the test
                        time.sleep(1)
                yield triples

    use_stub_extractor(Stalling())
    from gearag.cli import main
    sys.exit(main(["add", index_dir, corpus]))
""")


def test_sigkill_during_add_leaves_the_old_index_and_the_add_resumes(tmp_path: Path) -> None:
    passages, questions = _passages(30, 3)
    base, new = passages[:18], passages[18:]
    root = tmp_path / "idx"
    use_stub_extractor(StubExtractor())
    build_index(base, root, STUB)
    extra = Passage("extra-0", "Extra page", "An extra page about Paris.")
    add_documents(root, [extra])  # sharded before the killed add (conversion is tested elsewhere)
    before = manifest_identity(root)
    corpus = write_jsonl(tmp_path / "new.jsonl", [{"id": p.id, "title": p.title, "text": p.text} for p in new])
    script = tmp_path / "killed_add.py"
    script.write_text(_KILLED_ADD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}", "GEARAG_PROGRESS": "0"}
    stall = 5
    proc = subprocess.Popen([sys.executable, str(script), str(root), str(corpus), str(stall)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            ckpts = list((root / "shards").glob(".s-*.work/extract-*.jsonl"))
            if ckpts and ckpts[0].read_text(encoding="utf-8").count("\n") >= stall:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the add never reached extraction"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The previous index is untouched and answers.
    assert manifest_identity(root) == before
    old = Index.load(root, verify=True)
    assert len(old.passages) == len(base) + 1
    assert Gearag(old).retrieve(questions[0], "hybrid", 5).passages
    # Rerunning the add extracts only what the killed run had not.
    counting = StubExtractor()
    use_stub_extractor(counting)
    grown = add_documents(root, new)
    assert len(counting.seen) == len(new) - stall
    expected = reference_build([*base, extra, *new], tmp_path / "expected", STUB)
    assert_same_index(grown, expected)
    assert not list((root / "shards").glob(".*"))  # the work directory went with the success


def test_errors_are_one_line_and_write_nothing(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(12, 0)
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)
    add_documents(root, passages[8:10])
    before = manifest_identity(root)
    rows = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]

    # w9 with other content: an id clash (w9 with its own content would be skipped as already there).
    dup = write_jsonl(tmp_path / "dup.jsonl", [{**rows[9], "text": "Other content."}, *rows[10:12]])
    assert_clean_error(cli("add", root, dup), "w9", "already in the index")
    conflicting = write_jsonl(tmp_path / "ok.jsonl", rows[10:12])
    assert_clean_error(cli("add", root, conflicting, "--embedder", "minilm"), "--embedder", "conflicts")
    # Checked before the documents are read: a missing corpus is not what the error names.
    assert_clean_error(cli("add", root, tmp_path / "missing.jsonl", "--embedder", "minilm"), "--embedder", "conflicts")
    ids = tmp_path / "ids.txt"
    ids.write_text("w1\nnope-1\nw2\nnope-2\n", encoding="utf-8")
    assert_clean_error(cli("delete", root, ids), "'nope-1', 'nope-2'", "nothing deleted")
    not_index = tmp_path / "plain-dir"
    not_index.mkdir()
    for argv in (("add", not_index, conflicting), ("delete", not_index, ids), ("compact", not_index)):
        assert_clean_error(cli(*argv), "not a gearag index")
    assert manifest_identity(root) == before

    trees = build_index(passages[:6], tmp_path / "trees", replace(STUB, trees=TreesConfig(raptor=True)))
    tree_before = manifest_identity(trees.path)
    assert_clean_error(cli("add", trees.path, conflicting), "tree pools", "gearag index")
    assert manifest_identity(trees.path) == tree_before
    assert json.loads((trees.path / MANIFEST).read_text(encoding="utf-8")).get("layout") is None

    # add's options default to the index's settings, and the help says so (not the defaults of a new build).
    shown = cli("add", "--help")
    assert shown.code == 0 and "index's own" in shown.stdout and "wordllama]" not in shown.stdout
    assert "--ray-workers" not in shown.stdout

    # The same commands succeed on good input.
    assert cli("add", root, conflicting, "--embedder", "wordllama").code == 0
    ids.write_text("w1\n", encoding="utf-8")
    assert cli("delete", root, ids).code == 0
    result = cli("compact", root)
    assert result.code == 0, result.stderr
    assert "1 shard(s)" in result.stderr
    assert cli("info", root).code == 0


def test_documents_without_ids_continue_the_index_numbering(tmp_path: Path, cli) -> None:
    """A corpus loaded without ids numbers its records p0, p1, …: each add continues after every number an
    earlier build or add used, deleted and compacted rows included, instead of clashing with p0."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(14, 0)
    rows = [{"title": p.title, "text": p.text} for p in passages]  # no ids
    root = tmp_path / "idx"
    build_index(load_corpus(write_jsonl(tmp_path / "base.jsonl", rows[:6])), root, STUB)

    def add(part: list[dict[str, str]]) -> None:
        result = cli("add", root, write_jsonl(tmp_path / "more.jsonl", part))
        assert result.code == 0, result.stderr

    add(rows[6:8])
    add(rows[8:10])
    assert [p.id for p in Index.load(root).passages] == [f"p{i}" for i in range(10)]
    # An index written before the number was kept: its shards' rows bound the numbers used.
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    assert manifest.pop("next_auto_id") == 10
    (root / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    add(rows[10:11])
    ids = tmp_path / "ids.txt"
    ids.write_text("p10\np9\np2\n", encoding="utf-8")
    assert cli("delete", root, ids).code == 0
    assert cli("compact", root).code == 0
    add(rows[11:13])
    expected = [f"p{i}" for i in range(9) if i != 2] + ["p11", "p12"]
    assert [p.id for p in Index.load(root).passages] == expected
    assert [p.text for p in Index.load(root).passages][-2:] == [r["text"] for r in rows[11:13]]


def test_a_sharded_index_is_verified_and_replaceable_like_a_plain_one(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(10, 0)
    root = tmp_path / "idx"
    build_index(passages[:6], root, STUB)
    grown = add_documents(root, passages[6:])
    info = cli("info", root)
    assert info.code == 0 and json.loads(info.stdout)["shards"] == 2
    assert json.loads(info.stdout)["last_update"]["op"] == "add"
    shard = root / "shards" / grown.manifest["shards"][1]["name"]
    # A shard or generation changed behind the manifest's back does not load.
    vectors = shard / "vectors" / "passages.npy"
    saved = vectors.read_bytes()
    vectors.write_bytes(saved[:-4] + b"\x00\x00\x80\x3f")
    with pytest.raises(IndexFormatError, match=r"passages\.npy fails its checksum"):
        Index.load(root)
    vectors.write_bytes(saved)
    tombstones = root / "generations" / grown.manifest["generation"]["name"] / "tombstones.json"
    tombstones.write_text('{"nope": [0]}', encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"tombstones\.json"):
        Index.load(root)
    # --overwrite replaces a sharded index like a plain one, and refuses when it holds a user's file.
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": p.id, "title": p.title, "text": p.text} for p in passages])
    (root / "shards" / "notes.txt").write_text("mine", encoding="utf-8")
    assert_clean_error(cli("index", corpus, "--out", root, "--overwrite", "--extractor", "stub"),
                       "shards/notes.txt")
    (root / "shards" / "notes.txt").unlink()
    assert cli("index", corpus, "--out", root, "--overwrite", "--extractor", "stub").code == 0
    assert Index.load(root).manifest.get("layout") is None


def _sharded(tmp_path: Path, n: int) -> tuple[Path, list[Passage], str]:
    """A stub index of 8 of 12 passages grown to ``n`` by one add: its root, the 12 passages, its identity."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(12, 0)
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)
    add_documents(root, passages[8:n])
    return root, passages, manifest_identity(root)


def test_an_add_that_failed_after_its_shard_reuses_the_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gearag.indexing.incremental as incremental

    root, passages, before = _sharded(tmp_path, 9)

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # killed between the shard's commit and the generation

    monkeypatch.setattr(incremental, "write_generation", crash)
    monkeypatch.setattr(incremental, "write_delta_generation", crash)
    with pytest.raises(KeyboardInterrupt):
        add_documents(root, passages[9:])
    assert manifest_identity(root) == before and len(Index.load(root).passages) == 9
    monkeypatch.undo()
    counting = StubExtractor()
    use_stub_extractor(counting)
    grown = add_documents(root, passages[9:])
    assert counting.seen == []  # the finished shard was found, nothing extracted again
    assert_same_index(grown, reference_build(passages, tmp_path / "expected", STUB))


def test_an_openie_index_takes_the_added_documents_triples_from_another_file(tmp_path: Path) -> None:
    """``openie:FILE`` names data, not a setting: ``add`` reads the new documents' triples from their own file."""
    from conftest import DATA
    from gearag.errors import ConfigError

    musique = DATA / "musique_train"
    corpus = json.loads((musique / "musique_train_corpus.json").read_text(encoding="utf-8"))
    openie = json.loads((musique / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json")
                        .read_text(encoding="utf-8"))
    rows = range(300, 330)
    passages = [Passage(f"m{i}", corpus[i]["title"], corpus[i]["text"]) for i in rows]

    def openie_file(name: str, picked: range) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({**openie, "docs": [openie["docs"][i] for i in picked]}), encoding="utf-8")
        return f"openie:{path}"

    whole = build_index(passages, tmp_path / "whole", IndexConfig.of(extractor=openie_file("all.json", rows)))
    grown = tmp_path / "grown"
    build_index(passages[:20], grown, IndexConfig.of(extractor=openie_file("first.json", range(300, 320))))
    rest = openie_file("rest.json", range(320, 330))
    with pytest.raises(ConfigError, match="--extractor spacy conflicts"):
        add_documents(grown, passages[20:], options={"extractor": "spacy"})
    added = add_documents(grown, passages[20:], options={"extractor": rest})
    assert sum(len(added.passage_triples(r)) for r in range(20, 30)) > 0
    assert_same_index(added, whole)


def test_add_with_an_llm_extractor_takes_the_endpoint_options(tmp_path: Path, monkeypatch) -> None:
    """``gearag add --llm-base-url/--llm-model`` reach the LLM extractor of the new shard."""
    from conftest import isolate_llm_env
    from gearag.extract import make_extractor
    from llm_server import Reply, ScriptedServer

    isolate_llm_env(monkeypatch, tmp_path / "cache")
    docs = [Passage(f"d{i}", f"Doc {i}", f"Entity{i} Alpha has index {i}.") for i in range(6)]

    def reply(body: dict) -> Reply:
        i = int(body["messages"][-1]["content"].split("has index ")[-1].split(".")[0])
        return Reply(json.dumps({"named_entities": [f"Entity{i} Alpha"],
                                 "triples": [[f"Entity{i} Alpha", "has index", str(i)]]}))

    with ScriptedServer(responder=reply) as server:
        out = tmp_path / "index"
        with make_extractor("llm", llm_base_url=server.base_url, llm_model="m") as extractor:
            build_index(docs[:4], out, IndexConfig.of(extractor="llm"), extractor=extractor)
        before = len(server.requests)
        added = add_documents(out, docs[4:], extractor_options={"llm_base_url": server.base_url, "llm_model": "m"})
        assert len(server.requests) == before + 2  # the two new passages, nothing else
    assert [added.triples[t].subject for t in range(len(added.triples))][-2:] == ["Entity4 Alpha", "Entity5 Alpha"]


@pytest.mark.parametrize("where", ["derive.union_files.triple_graph", "derive.delta_resolve.resolve_delta",
                                   "derive.union_files.apply_delta", "graph.flatten.flat_rows"])
def test_a_failure_on_any_generation_step_fails_the_add_and_keeps_the_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """An add's triple graph is made on a thread of its own beside its resolution: its error reaches the caller as
    the resolution's does, the previous index stays as it was, and nothing is left behind. So does an error
    while an add's delta is applied or written whole, or while a generation is derived from nothing."""
    import importlib

    module, name = where.rsplit(".", 1)
    root, passages, before = _sharded(tmp_path, 10)
    if module != "graph.flatten":
        union_generations(monkeypatch)

    def broken(*args: object, **kwargs: object) -> None:
        raise IndexFormatError(f"{name}: damaged")

    monkeypatch.setattr(importlib.import_module(f"gearag.{module}"), name, broken)
    with pytest.raises(IndexFormatError, match=name):
        add_documents(root, passages[10:])
    assert manifest_identity(root) == before and len(Index.load(root).passages) == 10
    assert not [p for p in (root / "generations").iterdir() if p.name.startswith(".")]  # no half-written one
    monkeypatch.undo()
    expected = reference_build(passages, tmp_path / "expected", STUB)
    assert_same_index(add_documents(root, passages[10:]), expected)


def test_a_delete_on_a_plain_index_converts_it_and_removes_the_rows_it_located(tmp_path: Path) -> None:
    """The ids are located in the plain index before it is converted; its one shard holds them at the same rows."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(12, 0)
    root = tmp_path / "idx"
    build_index(passages, root, STUB)
    gone = {passages[0].id, passages[5].id, passages[11].id}
    deleted = delete_documents(root, sorted(gone))
    assert deleted.manifest.get("layout") == "sharded" and len(deleted.passages) == 9
    rest = [p for p in passages if p.id not in gone]
    assert_same_index(deleted, reference_build(rest, tmp_path / "expected", STUB))

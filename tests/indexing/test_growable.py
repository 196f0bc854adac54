"""A growable plain build (``graph.growable``, the default) keeps the union state its first add extends."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_incremental import (
    STUB,
    _passages,
    assert_same_index,
    assert_same_rankings,
    not_growable,
    spy_priors,
)

from conftest import StubExtractor, use_stub_extractor, write_jsonl
from gearag.config import ResolveConfig
from gearag.derive import union_files
from gearag.derive.token_index import TokenIndex
from gearag.errors import IndexFormatError
from gearag.graph.prepared import stored_prepared
from gearag.graph.scaled import Scaled
from gearag.indexing import build_index
from gearag.indexing.delta_generation import DeltaConfig
from gearag.indexing.generation import NO_STATE, WHOLE_BECAUSE
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.indexing.ner import NER_SPANS
from gearag.store import shards as shard_store
from gearag.store.index import MANIFEST, manifest_identity, read_manifest
from gearag.store.shards import shard_key
from numbering import assert_same_graph, flattened_generation, resolution_keys
from oracles import reference_build


def _generation_manifest(root: Path) -> dict:
    return read_manifest(root / shard_store.GENERATIONS_DIR / read_manifest(root)["generation"]["name"])


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


@pytest.mark.parametrize("resolve", [ResolveConfig(), ResolveConfig(entity_graph=False),
                                     ResolveConfig(ner_mentions=True)], ids=["default", "no-entity-graph", "ner"])
def test_a_growable_build_writes_the_plain_builds_files_plus_the_state(tmp_path: Path, resolve: ResolveConfig) -> None:
    """A build is an add onto nothing (over one shard): the reference derivations' files (``growable`` off) byte
    for byte, but for the passage graph, which is the reference's up to the order of a row's entries and whose
    resolution arrays are not stored (as in any generation an add writes); plus the state the first add extends
    (on). NER mentions, which add entities, are numbered after the others, as the reference numbers them."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(40, 0)
    config = replace(STUB, resolve=resolve)
    entity_graph = resolve.entity_graph
    growable = build_index(passages, tmp_path / "growable", config)
    plain = build_index(passages, tmp_path / "plain", not_growable(config))
    reference = reference_build(passages, tmp_path / "reference", config)
    a, b, ref = _files(growable.path), _files(plain.path), _files(reference.path)
    in_graph = {rel for rel in ref if rel.startswith("graph/")}
    assert set(b) - in_graph == set(ref) - in_graph
    assert [rel for rel in set(ref) - in_graph if b[rel] != ref[rel]] == []
    assert {rel for rel in b if rel.startswith("graph/")} <= {rel for rel in in_graph if "/prepared/" in rel}
    if entity_graph:
        assert_same_graph(plain, reference)
    if resolve.ner_mentions:  # the corpus has entities only NER found
        prepared = stored_prepared(plain)
        assert prepared is not None and prepared.holds_ner and len(prepared.ner_keys)
    assert set(b) <= set(a)
    assert [rel for rel in b if a[rel] != b[rel]] == []
    extra = {rel.split("/", 1)[0] for rel in set(a) - set(b)}
    assert extra == ({"endpoints", "resolve", "union"} if entity_graph else {"endpoints", "union"})
    state = growable.manifest["union"]
    assert state["shard"] == f"s-{shard_key(passages)}"
    assert (state["tables"], state["union"]) == (shard_store.TABLES_VERSION, shard_store.UNION_VERSION)
    assert ("resolve" in growable.manifest) is entity_graph and plain.manifest.get("union") is None


def test_the_first_add_extends_the_builds_state_and_equals_a_build_of_the_union(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(40, 0)
    root = tmp_path / "idx"
    build_index(passages[:25], root, STUB)
    seen = spy_priors(monkeypatch)
    grown = add_documents(root, passages[25:])
    # The build's key and name statistics, extended by the add's delta (written whole): not computed again.
    assert seen == ([True], []) and flattened_generation(grown)
    shard = grown.manifest["shards"][0]["name"]
    assert shard == f"s-{shard_key(passages[:25])}"  # the name the build's state was kept under
    # The state moved to the generation; the shard holds the passages' files only.
    assert not any((root / "shards" / shard / d).exists() for d in union_files.STATE_DIRS)
    assert "union" not in read_manifest(root / "shards" / shard)
    assert_same_index(grown, reference_build(passages, tmp_path / "full", STUB))
    # A delete right after extends it as well (renumbered, not resolved from scratch).
    deleted = delete_documents(root, [passages[3].id, passages[30].id])
    rest = [p for i, p in enumerate(passages) if i not in (3, 30)]
    assert_same_index(deleted, reference_build(rest, tmp_path / "rest", STUB))


def test_a_delete_right_after_the_build_renumbers_its_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(30, 0)
    root = tmp_path / "idx"
    build_index(passages, root, STUB)
    seen = spy_priors(monkeypatch)
    deleted = delete_documents(root, [passages[0].id, passages[17].id])
    # The delete's delta over the build's state, written whole (not a generation from nothing); the triple graph
    # derived again from nothing.
    assert seen == ([False], []) and flattened_generation(deleted)
    rest = [p for i, p in enumerate(passages) if i not in (0, 17)]
    assert_same_index(deleted, reference_build(rest, tmp_path / "rest", STUB))


@pytest.mark.parametrize("why", ["not growable", "other rules"])
def test_without_usable_state_the_first_add_computes_it_and_is_still_exact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(30, 0)
    root = tmp_path / "idx"
    build_index(passages[:20], root, not_growable(STUB) if why == "not growable" else STUB)
    if why == "other rules":  # a newer gearag whose tables hold something else: the build's state is not trusted
        monkeypatch.setattr(shard_store, "TABLES_VERSION", shard_store.TABLES_VERSION + 1)
    seen = spy_priors(monkeypatch)
    grown = add_documents(root, passages[20:], delta=DeltaConfig(write="delta"))
    assert seen == ([False], [True])  # derived from nothing, as a build
    assert _generation_manifest(root)[WHOLE_BECAUSE] == NO_STATE  # asked for a delta, it says why
    assert_same_index(grown, reference_build(passages, tmp_path / "full", STUB))


def test_damaged_state_fails_the_add_like_any_damaged_index_file(tmp_path: Path) -> None:
    """The state is listed in the index's manifest with its checksum: damage is an error naming the file."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(30, 0)
    root = tmp_path / "idx"
    build_index(passages[:20], root, STUB)
    before = manifest_identity(root)
    names = root / "resolve" / "names.json"
    size = names.stat().st_size
    names.write_text('{"x": "' + "y" * (size - 9) + '"}', encoding="utf-8")  # same size, not the lexicon
    with pytest.raises(IndexFormatError, match=r"resolve/names\.json"):
        add_documents(root, passages[20:])
    assert manifest_identity(root) == before and read_manifest(root).get("layout") is None


KINDS = {"ner": ResolveConfig(ner_mentions=True), "synonyms": ResolveConfig(synonyms=True),
         # one neighbour each, among many: an add takes an old name's neighbour, a delete gives one back
         "nearest": ResolveConfig(synonyms=True, synonym_neighbours=1, synonym_threshold=0.3),
         "both": ResolveConfig(ner_mentions=True, synonyms=True)}


@pytest.mark.parametrize("kinds", list(KINDS))
def test_indices_with_optional_edge_kinds_grow_like_a_rebuild(tmp_path: Path, kinds: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Synonym edges are derived again over the entity keys by an add's or a delete's delta, NER mentions grow
    with the endpoint names (a second stream of them), and a compact keeps both: each step equals a from-scratch
    build of what the index then holds (graph arrays, prepared graph up to numbering, rankings), and none is
    derived from nothing."""
    use_stub_extractor(StubExtractor())
    passages, questions = _passages(36, 3)
    config = replace(STUB, resolve=KINDS[kinds])
    root = tmp_path / "idx"
    built = build_index(passages[:20], root, config)
    assert built.manifest.get("union") is not None  # growable: the build is the first shard of its adds
    assert (root / NER_SPANS).exists() is config.resolve.ner_mentions
    seen = spy_priors(monkeypatch)

    def check(index, held: list, name: str, flattened: bool = True) -> None:  # type: ignore[no-untyped-def]
        expected = reference_build(held, tmp_path / name, config)
        prepared, built = stored_prepared(index), stored_prepared(expected)
        assert prepared is not None and built is not None and isinstance(prepared.columns, Scaled)
        if flattened:  # a delta's, written whole (a delta generation's graphs are its base's and a delta)
            assert_same_index(index, expected)
            # The entities only NER found (which the agent's resolver leaves out) are the rebuild's.
            ka, kb = resolution_keys(index), resolution_keys(expected)
            assert {ka[e] for e in prepared.ner_keys.tolist()} == {kb[e] for e in built.ner_keys.tolist()}
        assert_same_rankings(index, expected, questions, ["gear", "hipporag2"])
        assert flattened_generation(index) is flattened
        assert ("synonyms" in {s.name for s in prepared.columns.sources}) is config.resolve.synonyms
        assert prepared.holds_ner is config.resolve.ner_mentions

    grown = add_documents(root, passages[20:30])
    check(grown, passages[:30], "after-add")
    gone = {passages[2].id, passages[24].id}
    deleted = delete_documents(root, sorted(gone))
    held = [p for p in passages[:30] if p.id not in gone]
    check(deleted, held, "after-delete")
    add_documents(root, passages[30:33])
    compacted = compact(root)
    check(compacted, held + passages[30:33], "after-compact")
    # The compact's re-keyed state (the merged shard's endpoint table and span stream) is what the next adds
    # extend, here as delta generations over it (the second over the first's text scan).
    check(add_documents(root, passages[33:35], delta=DeltaConfig(write="delta")), held + passages[30:35],
          "after-compact-add", flattened=False)
    check(add_documents(root, passages[35:], delta=DeltaConfig(write="delta")), held + passages[30:],
          "after-second-delta", flattened=False)
    assert seen[1] == []  # every step a delta (or, the compact, a re-keying) of the state before it


def test_an_ner_index_whose_tables_keep_no_spans_is_derived_again_once(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An index built with NER mentions before the endpoint tables kept the spans (simulated: built with tables
    that keep none) is derived from nothing at its first add, its tables and their names' token indices made
    again, and grows by deltas, exactly, from then on."""
    use_stub_extractor(StubExtractor())
    passages, questions = _passages(36, 3)
    config = replace(STUB, resolve=ResolveConfig(ner_mentions=True))
    root = tmp_path / "idx"
    with monkeypatch.context() as m:
        real = union_files.shard_table
        m.setattr(union_files, "shard_table", lambda *args: real(*args[:5]))  # no span stream
        build_index(passages[:20], root, config)
    seen = spy_priors(monkeypatch)
    add_documents(root, passages[20:28])
    # The build's shard's names' token index was made again with its table: it holds the spans' names too.
    gen = root / "generations" / read_manifest(root)["generation"]["name"]
    shard = read_manifest(root)["shards"][0]["name"]
    names = json.loads((gen / "endpoints" / shard / "names.json").read_text(encoding="utf-8"))
    held, want = TokenIndex.read(gen / "union" / "name_tokens" / shard, len(names)), TokenIndex.compute(
        names, lambda k: k.split(" "))
    assert held is not None and all(np.array_equal(getattr(held, a), getattr(want, a))
                                    for a in ("hashes", "indptr", "rows"))
    grown = add_documents(root, passages[28:])
    assert seen[1] == [True]  # the first add from nothing, the second a delta over it
    expected = reference_build(passages, tmp_path / "full", config)
    assert_same_index(grown, expected)
    assert_same_rankings(grown, expected, questions, ["gear", "hipporag2"])


@pytest.mark.parametrize("option", ["--index-ner-mentions", "--synonyms"])
def test_gearag_add_extends_an_index_built_with_an_optional_edge_kind(tmp_path: Path, cli, option: str) -> None:
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(10, 0)
    rows = [{"id": p.id, "title": p.title, "text": p.text} for p in passages]
    root = tmp_path / "idx"
    assert cli("index", write_jsonl(tmp_path / "c.jsonl", rows[:8]), "--out", root, "--extractor", "stub",
               option).code == 0
    result = cli("add", root, write_jsonl(tmp_path / "more.jsonl", rows[8:]))
    assert result.code == 0, result.stderr
    generation = read_manifest(root / "generations" / read_manifest(root)["generation"]["name"])
    edges = generation["edges"]
    assert (edges["ner_mentions"] is not None, edges["synonym_edges"] is not None) == (
        option == "--index-ner-mentions", option == "--synonyms")

"""The prepared passage graph: stored with the index, memory-mapped by queries, the same rankings."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import StubExtractor, wiki_slice
from gearag.config import IndexConfig
from gearag.derive.graph_for import passage_graph_for
from gearag.errors import IndexFormatError
from gearag.graph.passage_graph import GRAPH_DIR, PassageGraph, PassageGraphConfig
from gearag.graph.prepared import PREPARED, PreparedGraph, load_prepared, stored_prepared
from gearag.graph.scaled import Scaled
from gearag.graph.transition import Csr
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.retrieve.bm25 import collection_bm25
from gearag.store.backend import open_index
from gearag.store.npy import is_mapped
from oracles import index_graph_arrays
from prepared_oracle import graph_of, stored_graph_arrays


def _mapped(prepared: PreparedGraph) -> bool:
    """Whether the prepared transition's arrays are memory-mapped (read from the index, not made here)."""
    columns = prepared.columns
    data = columns.sources[0].rows.data if isinstance(columns, Scaled) else columns.rows.data
    return is_mapped(data)


def _base(index, question: str) -> list[tuple[int, float]]:
    hits = collection_bm25(index.collection("passages")).retrieve(question, 10)
    return [(h.idx, h.score) for h in hits]


def test_queries_memory_map_the_stored_graph_and_rank_as_one_prepared_in_memory(wiki) -> None:
    index, questions = wiki
    stored = passage_graph_for(index)
    assert _mapped(stored.prepared)  # nothing corpus-sized built in this process
    assert is_mapped(stored.trie.nodes)
    # Prepared here by the oracle from the resolution of the index's passages and triples: the same graph.
    fresh = graph_of(index_graph_arrays(index), PassageGraphConfig())
    same = ("names_nodes.npy", "names_name_hashes.npy", "names_name_ids.npy", "dangling.npy", "specificity.npy",
            "triple_ends.npy", "degree.npy", "about_indptr.npy", "about_indices.npy",
            *(f"source_{src}_{part}.npy" for src in ("mentions", "backlinks", "relations") for part in Csr._fields[:3]))
    for name in same:
        np.testing.assert_array_equal(np.asarray(stored.prepared.files()[name]), fresh.prepared.files()[name],
                                      err_msg=name)
    np.testing.assert_allclose(stored.operator.transition.toarray(), fresh.operator.transition.toarray(),
                               rtol=2e-6, atol=1e-9)
    for question in questions:
        base = _base(index, question)
        assert stored.question_entities(question) == fresh.question_entities(question)
        proximal = list(range(0, len(index.triples), max(1, len(index.triples) // 5)))[:3]
        assert stored.rank(question, base, proximal) == fresh.rank(question, base, proximal)
    assert any(stored.question_entities(q) for q in questions)


def test_other_settings_prepare_their_own_graph(wiki) -> None:
    index, questions = wiki
    for config in (PassageGraphConfig(about_weight=1.0), PassageGraphConfig(solver="power"),
                   PassageGraphConfig(passage_nodes=False)):
        graph = passage_graph_for(index, config)
        memory_mapped = _mapped(graph.prepared)
        # Power iteration reads the same stored edges, and other weights the stored edges reweighed; the
        # entity-only graph has other edges.
        assert memory_mapped == config.passage_nodes
        expected = graph_of(index_graph_arrays(index), config)
        base = _base(index, questions[0])
        assert graph.rank(questions[0], base) == expected.rank(questions[0], base)


def test_an_index_built_without_it_prepares_in_memory(tmp_path: Path) -> None:
    rows, questions = wiki_slice(40, 2)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    config = IndexConfig.of(extractor="stub")
    config = replace(config, resolve=replace(config.resolve, prepared_graph=False))
    index = build_index(passages, tmp_path / "index", config, extractor=StubExtractor())
    assert not (tmp_path / "index" / GRAPH_DIR / PREPARED).exists()
    assert stored_prepared(index) is None and stored_graph_arrays(index) is None  # the triple graph alone
    graph = passage_graph_for(index)
    assert not _mapped(graph.prepared)  # derived in memory, as a build derives it
    assert graph.rank(questions[0]["question"], _base(index, questions[0]["question"]))


def test_a_damaged_prepared_graph_is_one_line_and_another_version_is_ignored(wiki, tmp_path: Path) -> None:
    import shutil

    index, _ = wiki
    copy = tmp_path / "index"
    shutil.copytree(index.path, copy)
    directory = copy / GRAPH_DIR / PREPARED
    meta = json.loads((directory / "prepared.json").read_text())
    (directory / "prepared.json").write_text(json.dumps({**meta, "version": -1}))
    assert load_prepared(directory) is None  # a newer or older layout: prepared in memory instead
    (directory / "prepared.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "n_mention_keys"}))
    assert load_prepared(directory) is None  # a field this gearag needs is missing: the same
    (directory / "prepared.json").write_text(json.dumps(meta))
    damaged = bytearray((directory / "source_backlinks_data.npy").read_bytes())
    damaged[:6] = b"garbag"  # the same size (open's check passes), not an .npy header
    (directory / "source_backlinks_data.npy").write_bytes(bytes(damaged))
    with pytest.raises(IndexFormatError, match="graph/prepared/"):
        stored_prepared(open_index(copy))


def test_a_prepared_graph_refuses_settings_it_was_not_prepared_for(wiki) -> None:
    index, _ = wiki
    prepared = stored_prepared(index)
    assert isinstance(prepared, PreparedGraph)
    with pytest.raises(ValueError, match="cannot serve"):
        PassageGraph(prepared, PassageGraphConfig(backlink_weight=0.5))


def test_the_agents_resolver_reads_the_prepared_graph_as_it_reads_the_resolution(
        wiki, monkeypatch: pytest.MonkeyPatch) -> None:
    from gearag.agent.offline import Resolver

    index, _ = wiki
    hashed = Resolver(index)
    assert is_mapped(hashed.about.data)
    monkeypatch.setattr(index, "read_prepared", lambda open_: None)
    plain = Resolver(index)
    assert not is_mapped(plain.about.data)
    names = [p.title for p in index.passages] + list(index_graph_arrays(index).resolution.keys) + ["", "Nowhere At All"]
    assert [hashed.row(n) for n in names] == [plain.row(n) for n in names]
    assert sum(plain.row(n) is not None for n in names) > len(index.passages) // 2


def _names_of(keys: list[str], counted: np.ndarray):
    """The names a full preparation hashes: every usable, counted key."""
    from gearag.graph.prepared import usable_keys
    from gearag.graph.trie import HashedNames

    ids = np.flatnonzero(usable_keys(keys) & counted)
    return HashedNames.from_keys([keys[i] for i in ids.tolist()], ids), len(ids)


def test_new_names_hashed_beside_the_earlier_ones_read_as_all_hashed_at_once() -> None:
    """A delta's new keys hashed beside its base's names (``names_beside``) and merged are the names of every key
    hashed at once; a hash the two would share declines (the full build's rule decides)."""
    from gearag.graph.flatten import merged_names
    from gearag.graph.layered import LayeredNames
    from gearag.graph.prepared import names_beside

    old = ["alpha beta", "the", "gamma ray", "delta", "zed alpha band"]
    new = ["zed alpha", "a", "new york city", "gamma"]
    names, _ = _names_of(old, np.ones(len(old), dtype=bool))
    beside = names_beside(names, new, np.arange(len(old), len(old) + len(new)))
    assert beside is not None
    added, n_usable = beside
    assert added.size == n_usable == 3  # "a" is too short to look up
    expected, _ = _names_of(old + new, np.ones(len(old) + len(new), dtype=bool))
    merged = merged_names(LayeredNames(names, added))
    for part, array in expected.arrays().items():
        np.testing.assert_array_equal(np.asarray(merged.arrays()[part]), array, err_msg=part)
    assert merged.get("zed alpha") == 5 and merged.get("zed alpha band") == 4 and merged.get("the") is None
    assert names_beside(names, ["delta"], np.asarray([9])) is None  # a hash the earlier names hold
    assert names_beside(names, ["omega", "omega"], np.asarray([9, 10])) is None  # two new keys share one
    # Beside no name (a build, an add onto nothing), two keys that share a hash follow the full build's rule.
    from gearag.graph.prepared import empty_prepared
    from gearag.graph.trie import HashedNames

    both = names_beside(empty_prepared([]).names, ["omega", "the", "omega"], np.asarray([9, 10, 11]))
    expected = HashedNames.from_keys(["omega", "omega"], np.asarray([9, 11]))  # "the" is not looked up
    assert both is not None
    hashed, n_usable = both
    assert n_usable == 2  # both keys count, as a build counts them
    assert hashed.get("omega") == expected.get("omega") == 11
    for part, array in expected.arrays().items():
        np.testing.assert_array_equal(np.asarray(hashed.arrays()[part]), array, err_msg=part)

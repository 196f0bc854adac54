"""The passage graph of an index stored without one (``--no-entity-graph``) is derived as a build derives it
(gearag.derive.graph_for)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.config import IndexConfig
from gearag.derive.graph_for import derived_prepared, passage_graph_for
from gearag.graph.config import PassageGraphConfig
from gearag.graph.prepared import stored_prepared
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.store.index import Index
from numbering import assert_same_prepared
from oracles import reference_build
from prepared_oracle import stored_graph_arrays

STUB = IndexConfig.of(extractor="stub")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Index, list[str]]:
    """The same 2Wiki slice built with the entity graph and without it, and questions."""
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(120, 10)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path_factory.mktemp("graph_for")
    with_graph = build_index(passages, root / "with", STUB)
    without = build_index(passages, root / "without", replace(STUB, resolve=replace(STUB.resolve, entity_graph=False)))
    return with_graph, without, [q["question"] for q in questions]


def test_an_index_without_the_graph_derives_the_graph_a_build_stores(pair) -> None:
    with_graph, without, _ = pair
    assert stored_graph_arrays(without) is None and stored_prepared(without) is None
    derived = derived_prepared(without)
    stored = stored_prepared(with_graph)
    assert stored is not None
    assert_same_prepared(derived, stored)  # derived as a build derives it: the same graph, in the same numbering
    assert not any(isinstance(a, np.memmap) for a in derived.files().values())  # in memory: the scratch files go
    assert derived_prepared(without) is derived  # derived once per loaded index


def test_a_setting_the_stored_graph_cannot_give_is_derived_as_a_build_derives_it(tmp_path) -> None:
    """NER mentions turned off on an index that holds them: the graph of the same build without them."""
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(40, 4)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    ner = build_index(passages, tmp_path / "ner", replace(STUB, resolve=replace(STUB.resolve, ner_mentions=True)))
    plain = build_index(passages, tmp_path / "plain", STUB)
    off = PassageGraphConfig(ner_mentions=False)
    held = stored_prepared(ner)
    assert held is not None and held.holds_ner and held.derived(off) is None
    graph, reference = passage_graph_for(ner, off), passage_graph_for(plain)
    assert graph.prepared is derived_prepared(ner)
    stored = stored_prepared(plain)
    assert stored is not None
    assert_same_prepared(graph.prepared, stored)
    for q in questions:
        assert graph.rank(q["question"], k=10) == reference.rank(q["question"], k=10)


def test_it_ranks_as_the_index_built_with_the_graph(pair) -> None:
    with_graph, without, questions = pair
    a, b = passage_graph_for(with_graph), passage_graph_for(without)
    for q in questions:
        assert a.rank(q, k=10) == b.rank(q, k=10)


def test_an_older_index_with_only_graph_arrays_is_served_as_one_without_a_graph(pair, tmp_path) -> None:
    """An index an older gearag built with ``--no-prepared-graph`` stores the resolution's graph arrays alone: they
    are not read; its graph is derived from its passages and triples, and it ranks as a current build."""
    with_graph, _, questions = pair
    older = reference_build(list(with_graph.passages), tmp_path / "older",
                            replace(STUB, resolve=replace(STUB.resolve, prepared_graph=False)))
    assert stored_graph_arrays(older) is not None and stored_prepared(older) is None
    graph, reference = passage_graph_for(older), passage_graph_for(with_graph)
    assert graph.prepared is derived_prepared(older)
    for q in questions:
        assert graph.rank(q, k=10) == reference.rank(q, k=10)

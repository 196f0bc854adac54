"""A prepared graph as a base plus a delta (gearag.graph.delta, docs/delta.md): the union's graph with other ids."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.config import IndexConfig
from gearag.graph.delta import AppendedRows, delta_of, entity_map
from gearag.graph.layered import LayeredCsr, LayeredNames
from gearag.graph.passage_graph import PassageGraph, graph_arrays_for
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents
from gearag.model import Passage
from gearag.store.index import Index

STUB = IndexConfig.of(extractor="stub")


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory):
    """The prepared graph of a 120-passage build, of that build plus 60 passages added, the entity map, and
    the questions."""
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(170, 12)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path_factory.mktemp("delta")
    build_index(passages[:120], root / "base", STUB)
    shutil.copytree(root / "base", root / "union")
    union = add_documents(root / "union", passages[120:])
    base = Index.load(root / "base")
    entity_of = entity_map(list(graph_arrays_for(base).resolution.keys), list(graph_arrays_for(union).resolution.keys))
    assert entity_of is not None
    b, u = base.stored_prepared_graph(), union.stored_prepared_graph()
    assert b is not None and u is not None
    return b, u, entity_of, [q["question"] for q in questions]


def test_the_layered_graph_is_the_union_graph_with_other_ids(grown) -> None:
    base, union, entity_of, _ = grown
    layered = delta_of(base, union, entity_of)
    assert layered is not None
    layout = layered.layout
    assert (layout.base_passages, layout.base_entities) == (base.n_passages, base.n_entities)
    assert (layout.n_passages, layout.n_entities) == (union.n_passages, union.n_entities)
    assert isinstance(layered.columns, LayeredCsr) and isinstance(layered.names, LayeredNames)
    # Layered ids: the base's kept, the union's other entities after them in union order.
    did = np.full(union.n_entities, -1)
    did[entity_of] = np.arange(base.n_entities)
    fresh = np.flatnonzero(did < 0)
    did[fresh] = base.n_entities + np.arange(len(fresh))
    node_of = np.concatenate([layout.passage_nodes(np.arange(union.n_passages)), layout.entity_nodes(did)])
    # Every column, entry for entry: the union's, its targets renamed.
    nodes = np.arange(layout.n_nodes)
    u_counts, u_idx, u_data = union.columns.gather(nodes)
    l_counts, l_idx, l_data = layered.columns.gather(node_of)
    np.testing.assert_array_equal(u_counts, l_counts)
    starts = np.concatenate([[0], np.cumsum(u_counts)[:-1]])
    for j in range(layout.n_nodes):
        s, c = starts[j], u_counts[j]
        got = sorted(zip(l_idx[s : s + c].tolist(), l_data[s : s + c].tolist(), strict=True))
        want = sorted(zip(node_of[u_idx[s : s + c]].tolist(), u_data[s : s + c].tolist(), strict=True))
        assert got == want, j
    np.testing.assert_array_equal(layered.dangling[node_of], union.dangling)
    np.testing.assert_array_equal(layered.specificity[did], union.specificity)
    a_u = union.about.rows(np.arange(union.n_entities), union.n_passages)
    a_l = layered.about.rows(did, union.n_passages)
    assert abs(a_u - a_l).sum() == 0
    ends = layered.triple_ends
    assert isinstance(ends, AppendedRows) and len(ends) == len(union.triple_ends)
    np.testing.assert_array_equal(ends.whole(), np.where(union.triple_ends >= 0, did[union.triple_ends], -1))
    # Only what changed is stored again, and the base's arrays are the base's own.
    delta_rows = len(layered.columns.delta.indptr) - 1
    assert layout.n_nodes - layout.base_passages - layout.base_entities <= delta_rows < layout.n_nodes
    assert layered.columns.base is base.columns
    # The names: every union name found under its layered id.
    for key_hash, uid in zip(union.names.name_hashes.tolist(), union.names.name_ids.tolist(), strict=True):
        assert layered.names._id_of(key_hash) == did[uid]
    assert layered.names.size == union.names.size


def test_a_push_over_the_layers_ranks_as_the_union(grown) -> None:
    base, union, entity_of, questions = grown
    layered = delta_of(base, union, entity_of)
    assert layered is not None
    pu, pl = PassageGraph(union), PassageGraph(layered)
    ranked = 0
    for q in questions:
        assert pu.question_entities(q) == [] or len(pl.question_entities(q)) == len(pu.question_entities(q))
        ru, rl = pu.rank(q, k=10), pl.rank(q, k=10)
        assert ru == rl, q
        ranked += bool(ru)
        su, sl = pu.scores(pu.seeds(q)), pl.scores(pl.seeds(q))
        np.testing.assert_allclose(sl, su, rtol=1e-5, atol=1e-9)
    assert ranked >= len(questions) // 2


def test_a_delta_is_declined_where_it_cannot_say_the_union(grown) -> None:
    base, union, entity_of, _ = grown
    assert delta_of(base, union, entity_of[:-1]) is None  # not every base entity mapped
    swapped = entity_of.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # another numbering: the base's triple ends no longer hold
    assert delta_of(base, union, swapped) is None

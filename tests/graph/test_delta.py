"""A prepared graph as a base plus a delta (tests/delta_oracles.py, docs/delta.md): the union's graph with other ids."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from delta_oracles import AppendedRows, delta_of, entity_map
from gearag.config import IndexConfig
from gearag.graph.layered import LayeredCsr, LayeredNames
from gearag.graph.passage_graph import PassageGraph
from gearag.graph.prepared import stored_prepared
from gearag.graph.scaled import Scaled
from gearag.graph.transition import Csr
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents
from gearag.model import Passage
from gearag.store.index import Index
from numbering import union_generations
from oracles import index_graph_arrays

STUB = IndexConfig.of(extractor="stub")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """A 120-passage build, that build with ~90 passages added (some of them pages whose names the base's
    titles already have), and the questions."""
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(170, 12)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path_factory.mktemp("delta")
    build_index(passages[:120], root / "base", STUB)
    shutil.copytree(root / "base", root / "union")
    # Pages that share names with the base's (a title's base name gains pages): the scale of those names moves,
    # and so does every term over their pages.
    namesakes = [Passage(f"n{i}", f"{p.title} (film)", f"{p.title} is a film. {p.text[:200]}")
                 for i, p in enumerate(passages[:120:12])]
    with pytest.MonkeyPatch.context() as mp:  # the brute force's reference: the union in a build's numbering
        union_generations(mp)
        union = add_documents(root / "union", passages[120:] + namesakes)
    return Index.load(root / "base"), union, [q["question"] for q in questions]


@pytest.fixture(scope="module")
def grown(built):
    """The prepared graphs of the base and the union, the union id of each base entity, and the questions."""
    base, union, questions = built
    entity_of = entity_map(list(index_graph_arrays(base).resolution.keys),
                           list(index_graph_arrays(union).resolution.keys))
    assert entity_of is not None
    b, u = stored_prepared(base), stored_prepared(union)
    assert b is not None and u is not None
    return b, u, entity_of, questions


def _weights(counts, indices, data, sids, relabel=None, sid_map=None) -> list[dict]:
    """Per row, the total raw weight of each (target, scale id)."""
    out, at = [], 0
    sids = np.zeros(len(indices), dtype=np.int64) if sids is None else sids
    for c in counts.tolist():
        row: dict = {}
        for t, d, s in zip(indices[at : at + c].tolist(), data[at : at + c].tolist(), sids[at : at + c].tolist(),
                           strict=True):
            key = (int(relabel[t]) if relabel is not None else t, int(sid_map[s]) if sid_map is not None else s)
            row[key] = row.get(key, 0.0) + d
        out.append(row)
        at += c
    return out


def _same_rows(union, u_rows, layered, l_rows, relabel, sid_map) -> None:
    got = _weights(*layered.gather(l_rows))
    want = _weights(*union.gather(u_rows), relabel=relabel, sid_map=sid_map)
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.keys() == w.keys() and all(abs(g[k] - w[k]) <= 1e-6 * abs(w[k]) for k in w), j


def test_the_layered_graph_is_the_union_graph_with_other_ids(grown) -> None:
    base, union, entity_of, _ = grown
    layered = delta_of(base, union, entity_of)
    assert layered is not None
    layout = layered.layout
    assert (layout.base_passages, layout.base_entities) == (base.n_passages, base.n_entities)
    assert (layout.n_passages, layout.n_entities) == (union.n_passages, union.n_entities)
    cols, u_cols = layered.columns, union.columns
    assert isinstance(cols, Scaled) and isinstance(u_cols, Scaled) and isinstance(layered.names, LayeredNames)
    # Layered ids: the base's kept, the union's other entities after them in union order.
    did = np.full(union.n_entities, -1)
    did[entity_of] = np.arange(base.n_entities)
    fresh = np.flatnonzero(did < 0)
    did[fresh] = base.n_entities + np.arange(len(fresh))
    node_of = np.concatenate([layout.passage_nodes(np.arange(union.n_passages)), layout.entity_nodes(did)])
    sid_of = np.concatenate([[0], 1 + did[: len(u_cols.scale) - 1]])
    # Every source: the union's weight per (target, scale id), its rows and targets renamed (a weight may be
    # split in two: the base's and what the add gained).
    passages = np.arange(union.n_passages)
    for src, u_src in zip(cols.sources, u_cols.sources, strict=True):
        assert src.name == u_src.name and isinstance(src.rows, LayeredCsr)
        u_rows = passages if u_src.of_passages else np.arange(union.n_entities)
        l_rows = passages if src.of_passages else did
        _same_rows(u_src.rows, u_rows, src.rows, l_rows, None if src.to_passages else did, sid_of)
    np.testing.assert_array_equal(cols.scale[sid_of], u_cols.scale)
    np.testing.assert_array_equal(cols.sums[node_of], u_cols.sums)
    np.testing.assert_array_equal(cols.degree[node_of], u_cols.degree)
    np.testing.assert_array_equal(layered.dangling[node_of], union.dangling)
    # As a push reads it: the same normalised transition, node for node.
    got, want = cols.to_csr()[node_of][:, node_of], u_cols.to_csr()
    assert abs(got - want).max() <= 1e-12
    np.testing.assert_array_equal(layered.specificity[did], union.specificity)
    a_u = union.about_rows(np.arange(union.n_entities))
    a_l = layered.about_rows(did)
    np.testing.assert_allclose(a_l.toarray(), a_u.toarray(), rtol=1e-6)
    ends = layered.triple_ends
    assert isinstance(ends, AppendedRows) and len(ends) == len(union.triple_ends)
    np.testing.assert_array_equal(ends.whole(), np.where(union.triple_ends >= 0, did[union.triple_ends], -1))
    # Only what changed is stored again, mostly the weight base rows gained; the base's arrays are its own.
    gained = whole = 0
    for src, b_src in zip(cols.sources, base.columns.sources, strict=True):
        rows = src.rows
        assert rows.base is b_src.rows and rows.appends is not None
        in_delta = np.flatnonzero(rows.where[: rows.base.n_rows] >= 0)  # base rows the add changed
        assert rows.appends[in_delta].sum() >= 0.9 * len(in_delta), src.name
        gained += np.diff(rows.delta.indptr)[rows.where[in_delta]].sum()  # what they store: the gains, mostly
        whole += rows.counts(in_delta).sum()  # what replacing them would store
    assert gained < 0.6 * whole  # 65% more passages here; at 1M an add is 0.1%
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


def test_a_base_and_a_delta_are_stored_as_the_delta_beside_the_bases_files(grown, tmp_path) -> None:
    """Written as the base's files under ``base/`` and the delta's beside them, the graph reads back (memory-
    mapped) as the one in memory: the same arrays, the same rankings."""
    import json

    from gearag.graph.prepared import load_prepared
    from gearag.store.index import BASE_DIR
    from gearag.store.npy import is_mapped

    base, union, entity_of, questions = grown
    layered = delta_of(base, union, entity_of)
    assert layered is not None
    directory = tmp_path / "prepared"
    (directory / BASE_DIR).mkdir(parents=True)
    for name, array in base.files().items():
        np.save(directory / BASE_DIR / name, np.asarray(array))
    files = layered.files()
    assert not any(name in files for name in ("source_mentions_indices.npy", "about_data.npy"))  # the base's
    for name, array in files.items():
        np.save(directory / name, np.asarray(array))
    (directory / "prepared.json").write_text(json.dumps(layered.meta()))
    opened = load_prepared(directory)
    assert opened is not None and opened.layout == layered.layout and opened.meta() == layered.meta()
    assert isinstance(opened.columns, Scaled) and is_mapped(opened.columns.sources[0].rows.delta.indices)
    for name, array in files.items():
        np.testing.assert_array_equal(np.asarray(opened.files()[name]), np.asarray(array), err_msg=name)
    assert opened.names.size == layered.names.size
    pl, po = PassageGraph(layered), PassageGraph(opened)
    for q in questions:
        assert po.rank(q, k=10) == pl.rank(q, k=10)


def test_column_sums_move_with_the_delta_and_the_new_scales(grown) -> None:
    """The union's column sums, from the base's: the base terms whose title names gained pages moved by their new
    scale, the delta's entries added; no column the delta left alone is summed again."""
    from gearag.graph.scaled import TermsByName, updated_sums

    base, union, entity_of, _ = grown
    layered = delta_of(base, union, entity_of)
    assert layered is not None
    cols, b_cols = layered.columns, base.columns
    terms = next(s.rows for s in b_cols.sources if s.name == "terms")
    by_name = TermsByName.of(terms, len(b_cols.scale))
    assert len(by_name.raw) == len(terms.data)
    changed = np.flatnonzero(b_cols.scale != cols.scale[: len(b_cols.scale)])
    assert len(changed)  # title names gained pages: their scale moved
    got = updated_sums(b_cols, cols, by_name)
    np.testing.assert_allclose(got, cols.sums, rtol=1e-12, atol=1e-12)


def test_applying_the_resolutions_delta_gives_the_union_graphs_delta(grown) -> None:
    """From what the add changed in the resolution (mentions, about terms, relations, scales, triples, names),
    the prepared graph's delta is made without reading what the add left alone: the same sources' weights,
    column sums, degrees, specificity and rankings as the union's graph."""
    from delta_oracles import resolution_delta_of
    from gearag.graph.delta_apply import apply_delta
    from gearag.graph.scaled import TermsByName

    base, union, entity_of, questions = grown
    expected = delta_of(base, union, entity_of)
    changes = resolution_delta_of(base, union, entity_of)
    assert expected is not None and changes is not None
    terms = next(s.rows for s in base.columns.sources if s.name == "terms")
    got = apply_delta(base, changes._replace(by_name=TermsByName.of(terms, len(base.columns.scale))))
    assert got is not None and got.layout == expected.layout
    cols, want = got.columns, expected.columns
    rows = np.arange(got.layout.n_passages), np.arange(got.layout.n_entities)
    for src, w_src in zip(cols.sources, want.sources, strict=True):
        assert src.name == w_src.name and src.weight == w_src.weight
        which = rows[0] if src.of_passages else rows[1]
        _same_rows(w_src.rows, which, src.rows, which, None, None)
    np.testing.assert_allclose(cols.sums, want.sums, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(cols.degree, want.degree)
    np.testing.assert_array_equal(got.specificity, expected.specificity)
    np.testing.assert_array_equal(got.dangling, expected.dangling)
    assert got.names.size == expected.names.size
    pg, pe = PassageGraph(got), PassageGraph(expected)
    for q in questions:
        assert pg.rank(q, k=10) == pe.rank(q, k=10)


def test_membership_in_sorted_rows_is_found_by_bisection() -> None:
    from scipy import sparse

    from gearag.graph.delta_apply import in_sorted_rows

    rng = np.random.default_rng(5)
    dense = (rng.random((30, 40)) < 0.2).astype(np.float32)
    dense[4] = 0.0  # an empty row
    m = Csr.of(sparse.csr_matrix(dense))
    rows = rng.integers(0, 33, 500)  # rows past the matrix's hold nothing
    values = rng.integers(0, 40, 500)
    want = np.asarray([r < 30 and dense[r, v] > 0 for r, v in zip(rows.tolist(), values.tolist(), strict=True)])
    np.testing.assert_array_equal(in_sorted_rows(m, rows, values), want)
    assert not in_sorted_rows(m, np.zeros(0, np.int64), np.zeros(0, np.int64)).size


def test_entries_are_netted_in_the_order_of_a_three_key_lexsort() -> None:
    from gearag.graph.delta_apply import net_weights

    rng = np.random.default_rng(11)
    for n, distinct in ((0, False), (1, False), (7, False), (2_000, False), (150, True)):
        # Few distinct keys: many entries share a (row, target), some with other scale ids. ``distinct``: each
        # key once (a build's entries), the weights as they are.
        key = rng.permutation(9 * 6 * 3)[:n] if distinct else rng.integers(0, 9 * 6 * 3, n)
        row, target, sid = key // 18, key // 3 % 6, key % 3
        signed = rng.normal(size=n)
        by = np.lexsort((sid, target, row))
        first = np.ones(n, dtype=bool)
        first[1:] = np.diff(row[by]) != 0
        first[1:] |= (np.diff(target[by]) != 0) | (np.diff(sid[by]) != 0)
        got = net_weights(row, target, sid, signed)
        for have, want in zip(got[:3], (row[by][first], target[by][first], sid[by][first]), strict=True):
            np.testing.assert_array_equal(have, want)
        np.testing.assert_allclose(got[3], np.bincount(np.cumsum(first) - 1, weights=signed[by]))
        if distinct:
            np.testing.assert_array_equal(got[3], signed[by])


def test_the_triple_graph_as_a_base_and_a_delta_has_the_unions_neighbours(built, tmp_path) -> None:
    """Beam search's graph: the base's entities and triples kept, the union's other entities and triples after
    them, each entity's new triples appended; every triple has the union's neighbours. Where the add moved the
    hub cut (an entity's triples unlinked), no delta says the union."""
    from delta_oracles import triple_graph_delta
    from gearag.store.graph import LayeredTripleGraph

    base, hubbed, _ = built
    assert triple_graph_delta(base.graph, hubbed.graph) is None  # "it" became a hub: its triples unlinked
    shutil.copytree(base.path, tmp_path / "union")
    rows, _ = wiki_slice(150, 0)
    with pytest.MonkeyPatch.context() as mp:
        union_generations(mp)
        union = add_documents(tmp_path / "union", [Passage(f"w{i}", r["title"], r["text"])
                                                   for i, r in enumerate(rows) if i >= 120])
    b, u = base.graph, union.graph
    layered = triple_graph_delta(b, u)
    assert isinstance(layered, LayeredTripleGraph)
    assert layered.n_entities == u.n_entities and len(layered.head) == len(u.head)
    assert list(layered.entities[: b.n_entities]) == list(b.entities)
    assert sorted(layered.entities) == sorted(u.entities)
    ids = {k: i for i, k in enumerate(layered.entities)}
    did = np.asarray([ids[k] for k in u.entities] + [-1])  # union id → layered id (-1: none)
    np.testing.assert_array_equal(layered.head[np.arange(len(u.head))], did[u.head])
    for t in range(len(u.head)):
        np.testing.assert_array_equal(layered.neighbours(t), u.neighbours(t))  # triple ids are not renumbered
    for e in range(u.n_entities):
        assert layered.degree(int(did[e])) == u.degree(e)
        np.testing.assert_array_equal(layered.entity_triples(int(did[e])), u.entity_triples(e))
    rows = layered.postings
    grew = np.flatnonzero(np.asarray(rows.where[: b.n_entities]) >= 0)
    assert len(grew) and np.asarray(rows.appends)[grew].all()  # base entities only gained triples


def test_rows_that_differ_keep_only_the_rows_a_source_derived_again_changed() -> None:
    """A row with another target or weight at the same count is the delta's as much as one that grew; rows past
    the base are new; the others are read from the base."""
    from scipy import sparse

    from gearag.graph.delta_apply import rows_that_differ

    def csr(m: np.ndarray) -> Csr:
        s = sparse.csr_matrix(m.astype(np.float32))
        return Csr(s.indptr, s.indices, s.data, None)

    base = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
    new = np.array([[0, 1, 0, 0], [1, 0, 0, 3], [0, 2.5, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]])
    layered = rows_that_differ(csr(base), csr(new))
    assert layered.n_rows == 5
    assert (np.asarray(layered.where) >= 0).tolist() == [False, True, True, True, True]
    for row in range(5):
        _, idx, data, _ = layered.gather(np.array([row]))
        want = sparse.csr_matrix(new.astype(np.float32))[row]
        assert idx.tolist() == want.indices.tolist() and data.tolist() == want.data.tolist(), row

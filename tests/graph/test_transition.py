"""The prepared transition: the whole-matrix operator's columns, bit for bit, made serially or on two threads."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from gearag.graph.passage_graph import GraphArrays, PassageGraphConfig, graph_arrays_for
from gearag.graph.ppr import PageRankOperator
from gearag.graph.prepared import PreparedGraph
from gearag.graph.transition import Csr, normalised_rows, transition_columns


def _reference_columns(arrays, config: PassageGraphConfig, mentions, about):
    """The transition as a PageRankOperator of the whole bmat adjacency makes it (the code it replaced)."""
    mentions = mentions.astype(np.float64)
    about_t = (about.T * config.about_weight).astype(np.float64)
    to_passage = (mentions * config.backlink_weight + about_t).tocsr()
    to_entity = (mentions + about_t).T.tocsr()
    rel = arrays.relations.astype(np.float64)
    if arrays.synonyms is not None and config.synonym_weight > 0:
        rel = (rel + config.synonym_weight * arrays.synonyms.astype(np.float64)).tocsr()
    p = mentions.shape[0]
    adj = sparse.bmat([[sparse.csr_matrix((p, p)), to_passage], [to_entity, rel]], format="csr")
    return PageRankOperator(adj, dtype=np.float32, columns=True)


def test_the_transition_is_the_whole_matrix_operators_bit_for_bit(wiki) -> None:
    """Made block by block to bound memory, the columns equal the ones of the plain operator exactly."""
    index, _ = wiki
    arrays = graph_arrays_for(index)
    n = len(arrays.resolution.keys)
    rng = np.random.default_rng(0)
    syn = sparse.random(n, n, density=0.01, random_state=rng, format="csr", dtype=np.float32)
    with_synonyms = GraphArrays(arrays.resolution, arrays.relations, (syn + syn.T).tocsr())
    for a, config in ((arrays, PassageGraphConfig()), (arrays, PassageGraphConfig(about_weight=0.0)),
                      (arrays, PassageGraphConfig(backlink_weight=0.3, about_weight=1.7)),
                      (with_synonyms, PassageGraphConfig(synonym_weight=0.7))):
        prepared = PreparedGraph.build(a, config)
        reference = _reference_columns(a, config, a.resolution.mentions, a.resolution.about)
        cols = reference.columns
        np.testing.assert_array_equal(prepared.columns.indptr, cols.indptr)
        np.testing.assert_array_equal(prepared.columns.indices, cols.indices)
        assert prepared.columns.data.dtype == np.float32
        np.testing.assert_array_equal(prepared.columns.data, cols.data)  # bit for bit, not approximately
        np.testing.assert_array_equal(prepared.dangling, reference.dangling)
        # An add makes the two blocks at once, the entities' from the arrays alone: the same arrays.
        columns, dangling = transition_columns(a, config, a.resolution.mentions, a.resolution.about, threads=2)
        for part in Csr._fields:
            np.testing.assert_array_equal(getattr(columns, part), getattr(cols, part))
        np.testing.assert_array_equal(dangling, reference.dangling)


@pytest.mark.parametrize("tiny", [False, True])
def test_rows_are_normalised_as_the_plain_formula_with_and_without_vanishing_entries(tiny: bool) -> None:
    """Each row over its sum, float32; an entry whose product underflows to 0 is dropped, as a sparse
    product drops it (the short path without a mask must agree with the masked one)."""
    rng = np.random.default_rng(3)
    dense = rng.random((40, 30)) * (rng.random((40, 30)) < 0.2)
    dense[5] = 0.0  # a row with no weight
    if tiny:
        dense[7] = 0.0
        dense[7, :3] = [1e300, 1e-300, 1.0]  # 1e-300 / 1e300 underflows to 0 (and 1 / 1e300 in float32)
    counts, cols, values, empty = normalised_rows(sparse.csr_matrix(dense), shift=100)
    totals = dense.sum(axis=1, keepdims=True)
    want = np.divide(dense, totals, out=np.zeros_like(dense), where=totals > 0)
    rows = np.repeat(np.arange(40), counts)
    got = np.zeros_like(dense, dtype=np.float32)
    got[rows, cols - 100] = values
    assert np.array_equal(empty, totals.ravel() <= 0)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)
    if tiny:
        assert counts[7] == 2 and list(cols[counts[:7].sum():counts[:8].sum()]) == [100, 102]

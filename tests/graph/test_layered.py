"""A base and a delta read as one (gearag.graph.layered): rows, node ids and names."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from gearag.graph.layered import LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames, tokens


def _csr(dense: list[list[float]]) -> Csr:
    return Csr.of(sparse.csr_matrix(np.asarray(dense, dtype=np.float32)))


def test_rows_come_from_the_delta_where_it_lists_them_in_the_order_asked() -> None:
    base = _csr([[1, 0, 2], [0, 3, 0], [4, 0, 0]])
    delta = _csr([[0, 5, 6], [7, 0, 0]])  # replaces row 1; row 3 is new
    m = LayeredCsr(base, delta, np.asarray([-1, 0, -1, 1], dtype=np.int32))
    want = np.asarray([[1, 0, 2], [0, 5, 6], [4, 0, 0], [7, 0, 0]], dtype=np.float32)
    assert m.n_rows == 4
    np.testing.assert_array_equal(m.to_csr(3).toarray(), want)
    rows = np.asarray([3, 0, 1, 1, 2])
    np.testing.assert_array_equal(m.rows(rows, 3).toarray(), want[rows])
    np.testing.assert_array_equal(m.counts(rows), [1, 2, 2, 2, 1])
    counts, indices, data, sids = m.gather(rows)
    assert sids is None
    assert counts.tolist() == [1, 2, 2, 2, 1] and indices.tolist() == [0, 0, 2, 1, 2, 1, 2, 0]
    assert data.tolist() == [7, 1, 2, 5, 6, 5, 6, 4]
    # All from one layer: the same answers.
    np.testing.assert_array_equal(m.rows(np.asarray([0, 2]), 3).toarray(), want[[0, 2]])
    np.testing.assert_array_equal(m.rows(np.asarray([3, 1]), 3).toarray(), want[[3, 1]])


def test_a_delta_row_may_follow_the_base_row_instead_of_replacing_it() -> None:
    base = Csr(*Csr.of(sparse.csr_matrix(np.asarray([[1, 0, 2], [0, 3, 0]], dtype=np.float32)))[:3],
               np.asarray([4, 5, 6], dtype=np.int32))
    delta = Csr(np.asarray([0, 2, 3]), np.asarray([1, 0, 2]), np.asarray([7, 8, 9], dtype=np.float32),
                np.asarray([1, 2, 3], dtype=np.int32))
    # Row 0 gains (0, 1) = 7 and (0, 0) = 8 after its own entries; row 2 is new.
    m = LayeredCsr(base, delta, np.asarray([0, -1, 1], dtype=np.int32), np.asarray([True, False, False]))
    rows = np.asarray([2, 0, 1, 0])
    counts, indices, data, sids = m.gather(rows)
    assert counts.tolist() == [1, 4, 1, 4] == m.counts(rows).tolist()
    assert indices.tolist() == [2, 0, 2, 1, 0, 1, 0, 2, 1, 0]
    assert data.tolist() == [9, 1, 2, 7, 8, 3, 1, 2, 7, 8]
    assert sids is not None and sids.tolist() == [3, 4, 5, 1, 2, 6, 4, 5, 1, 2]
    # Repeats of a target add up where the rows are used as a matrix.
    np.testing.assert_array_equal(m.to_csr(3).toarray(), [[9, 7, 2], [0, 3, 0], [0, 0, 9]])
    with pytest.raises(ValueError, match="only a base row"):
        LayeredCsr(base, delta, np.asarray([0, -1, 1], dtype=np.int32), np.asarray([False, False, True]))


def test_a_layered_matrix_is_checked_when_made() -> None:
    base, delta = _csr([[1.0], [2.0]]), _csr([[3.0]])
    with pytest.raises(ValueError, match="over a base of 2"):
        LayeredCsr(base, delta, np.asarray([-1], dtype=np.int32))
    with pytest.raises(ValueError, match="past the base must be the delta's"):
        LayeredCsr(base, delta, np.asarray([-1, -1, -1], dtype=np.int32))
    with pytest.raises(ValueError, match="past its delta's 1 rows"):
        LayeredCsr(base, delta, np.asarray([-1, 1], dtype=np.int32))


def test_node_ids_keep_the_base_and_append_the_delta() -> None:
    layout = NodeLayout(n_passages=5, n_entities=4, base_passages=3, base_entities=2)
    # base passages 0-2, base entities 3-4, delta passages 5-6, delta entities 7-8
    assert layout.n_nodes == 9 and not layout.plain_layout
    assert layout.passage_nodes(np.arange(5)).tolist() == [0, 1, 2, 5, 6]
    assert layout.entity_nodes(np.arange(4)).tolist() == [3, 4, 7, 8]
    assert [layout.entity_node(e) for e in range(4)] == [3, 4, 7, 8]
    assert layout.passages_of(np.arange(9)).tolist() == [0, 1, 2, -1, -1, 3, 4, -1, -1]
    assert layout.entities_of(np.arange(9)).tolist() == [-1, -1, -1, 0, 1, -1, -1, 2, 3]
    plain = NodeLayout.plain(3, 2)
    assert plain.plain_layout and plain.entity_nodes(np.arange(2)).tolist() == [3, 4]
    with pytest.raises(ValueError, match="cannot grow"):
        NodeLayout(2, 2, 3, 2)


def test_layered_names_scan_as_one_set_of_names_would() -> None:
    base_keys = ["new york", "york", "paris"]
    delta_keys = ["new york city", "lyon", "paris"]  # "paris" again: the delta's id is the current one
    base = HashedNames.from_keys(base_keys, np.asarray([0, 1, 2]))
    delta = HashedNames.from_keys(delta_keys, np.asarray([3, 4, 5]))
    both = HashedNames.from_keys(base_keys + delta_keys, np.asarray([0, 1, 2, 3, 4, 5]))
    layered = LayeredNames(base, delta)
    text = tokens("From New York City to New York, York and Paris, then Lyon")
    assert list(layered.scan(text, require_capital=True)) == list(both.scan(text, require_capital=True))
    assert [m.name for m in layered.scan(text)] == [3, 0, 1, 5, 4]
    assert layered.get("Paris") == 5 and layered.get("York") == 1 and layered.get("Rome") is None
    assert layered.size == both.size == 5


def test_appended_rows_read_from_whichever_layer_holds_each() -> None:
    from gearag.graph.layered import AppendedRows

    ends = AppendedRows(np.asarray([[0, 1], [2, -1]], dtype=np.int32), np.asarray([[3, 0]], dtype=np.int32))
    assert len(ends) == 3 and ends.shape == (3, 2)
    assert ends[1].tolist() == [2, -1] and ends[2].tolist() == [3, 0]
    assert ends[np.asarray([2, 0, 2])].tolist() == [[3, 0], [0, 1], [3, 0]]
    np.testing.assert_array_equal(ends.whole(), [[0, 1], [2, -1], [3, 0]])

"""A union's text mentions: merged in row order, and their mention matrix one incidence (issue 14)."""

from __future__ import annotations

import numpy as np

from gearag.derive.text_mentions import _merged, mention_matrix
from gearag.graph.resolve import _incidence


def test_entries_in_row_order_are_merged_as_a_stable_sort_would() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = np.sort(rng.integers(0, 20, rng.integers(0, 30))), np.sort(rng.integers(0, 20, rng.integers(0, 30)))
        ca, cb = rng.integers(0, 99, len(a)), rng.integers(100, 199, len(b))
        rows, cols = np.concatenate([a, b]), np.concatenate([ca, cb])
        order = np.argsort(rows, kind="stable")
        got = _merged(a, ca, b, cb)
        assert got[0].tolist() == rows[order].tolist() and got[1].tolist() == cols[order].tolist()
        shuffled = rng.permutation(a)
        if not np.array_equal(shuffled, a):  # out of order: sorted
            merged = _merged(shuffled, ca, b, cb)[0]
            assert merged.tolist() == np.sort(np.concatenate([shuffled, b])).tolist()


def test_the_mention_matrix_is_one_incidence_of_the_triple_ends_and_the_text_mentions() -> None:
    """Summed from two incidences, it has the arrays of one incidence of both lists (shared pairs, repeated
    pairs and unlinked ends included)."""
    rng = np.random.default_rng(8)
    for _ in range(20):
        n_passages, n_entities = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        owner = np.sort(rng.integers(0, n_passages, int(rng.integers(0, 120))))
        ends = rng.integers(-1, n_entities, (len(owner), 2)).astype(np.int32)
        text_rows = np.sort(rng.integers(0, n_passages, int(rng.integers(0, 60))))
        text_names = rng.integers(0, n_entities, len(text_rows)).astype(np.int32)
        got = mention_matrix(owner, ends, text_rows, text_names, (n_passages, n_entities))
        flat = ends.ravel().astype(np.int64)
        rows = np.concatenate([np.repeat(owner, 2)[flat >= 0], text_rows])
        want = _incidence(rows, np.concatenate([flat[flat >= 0], text_names]), (n_passages, n_entities))
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(got, name), getattr(want, name)) and getattr(got, name).dtype == getattr(
                want, name).dtype, name

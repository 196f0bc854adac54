"""A union's text mentions: merged in row order, and their mention matrix one incidence."""

from __future__ import annotations

import numpy as np

from gearag.derive.text_mentions import merged_mentions


def test_entries_in_row_order_are_merged_as_a_stable_sort_would() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = np.sort(rng.integers(0, 20, rng.integers(0, 30))), np.sort(rng.integers(0, 20, rng.integers(0, 30)))
        ca, cb = rng.integers(0, 99, len(a)), rng.integers(100, 199, len(b))
        rows, cols = np.concatenate([a, b]), np.concatenate([ca, cb])
        order = np.argsort(rows, kind="stable")
        got = merged_mentions(a, ca, b, cb)
        assert got[0].tolist() == rows[order].tolist() and got[1].tolist() == cols[order].tolist()
        shuffled = rng.permutation(a)
        if not np.array_equal(shuffled, a):  # out of order: sorted
            merged = merged_mentions(shuffled, ca, b, cb)[0]
            assert merged.tolist() == np.sort(np.concatenate([shuffled, b])).tolist()

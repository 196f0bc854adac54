"""gearag.arrays.ranges, offsets and row_offsets."""

from __future__ import annotations

import numpy as np

from gearag.arrays import offsets, ranges, row_offsets


def test_ranges_is_the_concatenation_of_aranges() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(0, 20))
        starts, lengths = rng.integers(0, 100, n), rng.integers(0, 5, n)
        want = [np.arange(s, s + k) for s, k in zip(starts.tolist(), lengths.tolist(), strict=True)]
        assert ranges(starts, lengths).tolist() == (np.concatenate(want).tolist() if want else [])



def test_offsets_bound_each_run_of_entries() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        rows = np.sort(rng.integers(0, 7, int(rng.integers(0, 30))))
        ptr = row_offsets(rows, 9)
        assert ptr.dtype == np.int64 and len(ptr) == 10 and ptr[0] == 0
        for r in range(9):
            assert rows[ptr[r]:ptr[r + 1]].tolist() == [r] * int((rows == r).sum())
    assert offsets([2, 0, 3]).tolist() == [0, 2, 2, 5]
    assert offsets([]).tolist() == [0]

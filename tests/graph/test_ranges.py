"""gearag.arrays.ranges."""

from __future__ import annotations

import numpy as np

from gearag.arrays import ranges


def test_ranges_is_the_concatenation_of_aranges() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(0, 20))
        starts, lengths = rng.integers(0, 100, n), rng.integers(0, 5, n)
        want = [np.arange(s, s + k) for s, k in zip(starts.tolist(), lengths.tolist(), strict=True)]
        assert ranges(starts, lengths).tolist() == (np.concatenate(want).tolist() if want else [])


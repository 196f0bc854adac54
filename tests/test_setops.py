"""Set operations by sorting equal NumPy's (gearag.setops)."""

from __future__ import annotations

import numpy as np

from gearag import setops


def test_they_equal_numpys_on_integers_and_leave_other_dtypes_to_it() -> None:
    rng = np.random.default_rng(3)
    for dtype, high in ((np.int64, 10**12), (np.int32, 50), (np.uint8, 255), (bool, 2)):
        a = rng.integers(0, high, 500).astype(dtype)
        b = rng.integers(0, high, 300).astype(dtype)
        for got, want in ((setops.unique(a), np.unique(a)), (setops.union(a, b), np.union1d(a, b)),
                          (setops.isin(a, b), np.isin(a, b)), (setops.setdiff(a, b), np.setdiff1d(a, b))):
            assert got.dtype == want.dtype and np.array_equal(got, want), dtype
    grid = rng.integers(0, 40, (6, 7))
    assert np.array_equal(setops.unique(grid), np.unique(grid))
    assert np.array_equal(setops.isin(grid, [3, 5, 39]), np.isin(grid, [3, 5, 39]))
    for empty in (np.zeros(0, np.int64), np.zeros(0)):
        assert setops.unique(empty).shape == (0,) and setops.isin(empty, [1]).shape == (0,)
    floats = np.array([2.0, np.nan, 1.0, np.nan, 2.0])
    np.testing.assert_array_equal(setops.unique(floats), np.unique(floats))  # NaNs merged, as NumPy does
    assert setops.isin(np.array([1, 2, 7]), np.zeros(0, np.int64)).tolist() == [False, False, False]

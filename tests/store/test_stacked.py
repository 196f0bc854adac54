"""StackedRows: a sharded index's per-shard arrays read as one, equal to their concatenation (never built)."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.store.npy import write_blocks
from gearag.store.stacked import StackedRows


def _parts(seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray | None], np.ndarray]:
    rng = np.random.default_rng(seed)
    parts = [rng.standard_normal((n, 4)).astype(np.float32) for n in (5, 1, 7, 3)]
    keeps: list[np.ndarray | None] = [np.array([1, 0, 1, 1, 0], bool), None, np.ones(7, bool),
                                      np.array([0, 1, 1], bool)]
    union = np.concatenate([p if k is None else p[k] for p, k in zip(parts, keeps, strict=True)])
    return parts, keeps, union


def test_gathers_equal_the_concatenation() -> None:
    parts, keeps, union = _parts()
    s = StackedRows(parts, keeps)
    assert s.shape == union.shape and len(s) == len(union) and s.ndim == 2 and s.dtype == np.float32
    rng = np.random.default_rng(1)
    rows = rng.integers(0, len(union), 40)
    np.testing.assert_array_equal(s[rows], union[rows])
    np.testing.assert_array_equal(s[list(rows[:5])], union[rows[:5]])
    np.testing.assert_array_equal(s[3], union[3])
    np.testing.assert_array_equal(s[np.int64(-1)], union[-1])
    np.testing.assert_array_equal(s[2:11:3], union[2:11:3])
    np.testing.assert_array_equal(s[union[:, 0] > 0], union[union[:, 0] > 0])
    np.testing.assert_array_equal(np.asarray(s), union)
    np.testing.assert_array_equal(np.concatenate(list(s.chunks(4))), union)


def test_products_and_one_dimensional_parts() -> None:
    parts, keeps, union = _parts(2)
    s = StackedRows(parts, keeps)
    q = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(s @ q, union @ q, rtol=1e-6)
    queries = np.ones((4, 3), dtype=np.float32)
    np.testing.assert_allclose(s @ queries, union @ queries, rtol=1e-6)
    weights = StackedRows([p[:, 0] for p in parts], keeps)
    idx = np.array([0, 4, 9])
    np.testing.assert_array_equal(weights[idx, None], union[:, 0][idx, None])


def test_bad_rows_are_index_errors() -> None:
    s = StackedRows(*_parts()[:2])
    with pytest.raises(IndexError):
        s[np.array([len(s)])]
    with pytest.raises(IndexError):
        s[np.array([0.5])]
    with pytest.raises(ValueError):
        StackedRows([np.zeros((2, 3)), np.zeros((2, 4))], [None, None])


def test_write_blocks_is_np_save(tmp_path) -> None:
    _, _, union = _parts(3)
    write_blocks(tmp_path / "a.npy", union.shape, np.float32, [union[:4], union[4:9], union[9:]])
    np.save(tmp_path / "b.npy", union)
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    with pytest.raises(ValueError):
        write_blocks(tmp_path / "c.npy", union.shape, np.float32, [union[:4]])

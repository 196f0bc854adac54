"""StackedRows: a sharded index's per-shard arrays read as one, equal to their concatenation (never built)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gearag.store.npy import load_npy, write_blocks
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


def _resident_kb(path) -> int:
    """This process's resident kB of its memory maps of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text(encoding="utf-8").splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):  # a mapping's header line
            inside = line.rstrip().endswith(str(path))
        elif inside and first == "Rss:":
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc/self/smaps")
def test_chunks_of_mapped_parts_let_their_pages_go(tmp_path) -> None:
    """Writing a mapped union out block by block keeps resident about a block of its files (and the page-cache
    folio a read maps around it, up to 2 MB), not every page it read: ~30 MB here. The rows read are the same."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((n, 256)).astype(np.float32) for n in (20_000, 10_000)]  # 1 KB a row
    keeps: list[np.ndarray | None] = [None, np.arange(10_000) % 3 != 0]
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"p{i}.npy", a)
    parts = [load_npy(tmp_path / f"p{i}.npy") for i in range(2)]  # mapped, not read yet
    union = np.concatenate([a if k is None else a[k] for a, k in zip(arrays, keeps, strict=True)])
    s = StackedRows(parts, keeps)
    most = 0
    for i, block in enumerate(s.chunks(1000)):
        np.testing.assert_array_equal(block, union[i * 1000: (i + 1) * 1000])
        most = max(most, sum(_resident_kb(tmp_path / f"p{j}.npy") for j in range(2)))
    assert most < 1000 + 2 * 4096  # kB: a block and two folios' worth, where holding them would be 30,000
    assert sum(_resident_kb(tmp_path / f"p{j}.npy") for j in range(2)) < 2 * 4096

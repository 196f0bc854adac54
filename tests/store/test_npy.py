"""store.npy: kept state read as arrays, or None where a caller makes it again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gearag.store.npy import kept_arrays


def test_kept_arrays_reads_every_array_in_order(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(3))
    (tmp_path / "sub").mkdir()
    np.save(tmp_path / "sub" / "b.npy", np.ones((2, 2), dtype=bool))
    got = kept_arrays(tmp_path, "a.npy", "sub/b.npy")
    assert got is not None and [a.tolist() for a in got] == [[0, 1, 2], [[True, True], [True, True]]]


def test_kept_arrays_is_none_when_one_is_missing_or_damaged(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.arange(3))
    assert kept_arrays(tmp_path, "a.npy", "gone.npy") is None
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY not an array")
    assert kept_arrays(tmp_path, "a.npy", "bad.npy") is None
    np.save(tmp_path / "objects.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    assert kept_arrays(tmp_path, "objects.npy") is None  # never unpickled

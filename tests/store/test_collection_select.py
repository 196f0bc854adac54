"""Collections that share files through ``select``: rows, vectors, sources and records of the selected rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gearag.errors import IndexFormatError
from gearag.store.collection import Collection, CollectionSpec
from gearag.store.index import _records_texts

SOURCES = {"indptr": "arrays/indptr.npy", "indices": "arrays/indices.npy"}


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    (tmp_path / "arrays").mkdir()
    (tmp_path / "vectors").mkdir()
    np.save(tmp_path / "vectors/table.npy", np.arange(12, dtype=np.float32).reshape(6, 2))
    np.save(tmp_path / SOURCES["indptr"], np.array([0, 1, 2, 4, 5, 7, 8], dtype=np.int64))
    np.save(tmp_path / SOURCES["indices"], np.array([0, 1, 0, 1, 2, 0, 2, 1], dtype=np.int32))
    (tmp_path / "nodes.jsonl").write_text("".join(json.dumps({"text": f"node {i}", "kind": "k"}) + "\n"
                                                  for i in range(6)))
    return tmp_path


def collection(root: Path, rows: list[int] | None) -> Collection:
    select = None
    if rows is not None:
        select = f"arrays/sel{len(rows)}.npy"
        np.save(root / select, np.asarray(rows, dtype=np.int64))
    spec = CollectionSpec("c", 6 if rows is None else len(rows), vectors="vectors/table.npy", sources=SOURCES,
                          records="nodes.jsonl", select=select)
    return Collection(root, spec, _records_texts(root, spec))


@pytest.mark.parametrize("rows", [[0, 1, 2], [1, 4, 5], [5, 0, 3]])  # a run (a view), a subset, any order
def test_selected_rows_are_the_shared_rows(shared: Path, rows: list[int]) -> None:
    full, coll = collection(shared, None), collection(shared, rows)
    assert len(coll) == len(rows)
    np.testing.assert_array_equal(np.asarray(coll.vectors), np.asarray(full.vectors)[rows])
    assert [coll.sources(i) for i in range(len(rows))] == [full.sources(r) for r in rows]
    assert [coll.record(i) for i in range(len(rows))] == [full.record(r) for r in rows]
    assert list(coll.texts()) == [f"node {r}" for r in rows]
    spec = CollectionSpec.from_dict("c", coll.spec.to_dict())
    assert spec == coll.spec and coll.spec.select in spec.files()


def test_a_selection_beyond_the_shared_rows_is_a_format_error(shared: Path) -> None:
    coll = collection(shared, [0, 9])
    with pytest.raises(IndexFormatError, match="does not hold the rows"):
        _ = coll.vectors
    with pytest.raises(IndexFormatError):
        coll.record(0)

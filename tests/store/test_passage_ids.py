"""Finding passages by id from the stored id hashes (gearag add / delete at any corpus size)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gearag.store import passage_ids as module
from gearag.store.passage_ids import ID_HASHES, find_rows


def test_ids_are_found_by_their_hashes_without_reading_every_id(tiny_index, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = tiny_index.manifest["files"]
    assert ID_HASHES in listed
    ids = [p.id for p in tiny_index.passages]

    def every_id(path: Path) -> list[str]:
        raise AssertionError("read every stored id")

    monkeypatch.setattr(module, "stored_passage_ids", every_id)
    wanted = [ids[2], ids[0], "not-there"]
    assert find_rows(tiny_index.path, listed, wanted) == {ids[2]: 2, ids[0]: 0}
    assert find_rows(tiny_index.path, listed, wanted, passages=tiny_index.passages) == {ids[2]: 2, ids[0]: 0}
    assert find_rows(tiny_index.path, listed, wanted, dead=np.array([2])) == {ids[0]: 0}  # deleted rows are gone
    monkeypatch.undo()
    # An index written before the hashes were kept: its ids are read, with the same answer.
    older = [rel for rel in listed if rel != ID_HASHES]
    assert find_rows(tiny_index.path, older, wanted, dead=np.array([2])) == {ids[0]: 0}


def test_a_shared_hash_costs_a_read_never_a_wrong_answer(tiny_index, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "index"
    shutil.copytree(tiny_index.path, copy)
    ids = [p.id for p in tiny_index.passages]
    wanted_hash = module.stable_hashes([ids[1]])[0]
    np.save(copy / ID_HASHES, np.full(len(ids), wanted_hash, dtype=np.int64))  # every row "matches"
    assert find_rows(copy, tiny_index.manifest["files"], [ids[1]]) == {ids[1]: 1}


def test_the_id_to_row_map_is_read_on_first_use_not_when_a_method_is_made(tiny_index,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Making GEAR or SyncGE (their offline engine) reads no passage id: at a million passages the map of every
    id took 3.7 s of each method's first call. The map, once read, is the index's (shared with the service)."""
    from gearag.api import Gearag

    rows_type = type(tiny_index.passages)
    every = rows_type.__iter__
    walks: list[int] = []

    def counted(self):  # type: ignore[no-untyped-def]
        walks.append(1)
        return every(self)

    monkeypatch.setattr(rows_type, "__iter__", counted)
    gearag = Gearag(tiny_index)
    for name in ("syncge", "gear"):
        gearag.method(name)
    assert walks == []  # no pass over every passage
    for question in ("Who founded the company?", "When was the film released?", "Which city is it in?"):
        gearag.retrieve(question, "gear", 5)  # the answer is found from the rows of the passages it ranked
    assert walks == [] and "passage_rows" not in tiny_index._cache
    monkeypatch.undo()
    rows = tiny_index.passage_rows()
    assert rows == {p.id: i for i, p in enumerate(tiny_index.passages)} and tiny_index.passage_rows() is rows

"""A delete as a delta over the generation it deletes from (gearag.derive.delta_delete), written whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_incremental import STUB, _passages, assert_same_index, assert_same_rankings

from conftest import StubExtractor, use_stub_extractor
from gearag.derive import delta_delete
from gearag.indexing import build_index
from gearag.indexing.delta_generation import DeltaConfig
from gearag.indexing.incremental import add_documents, delete_documents
from gearag.store.index import Index
from numbering import flattened_generation
from oracles import reference_build


def test_deletes_through_the_delta_equal_rebuilds_and_the_next_add_extends_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two deletes in a row, then an add, each equal to a build of what remains (up to the entity numbering):
    the deleted pages' titles occur in the texts left, so lexicon names vanish and the texts holding them are
    scanned again; entities left with no edge keep their ids until the add appends after them."""
    use_stub_extractor(StubExtractor())
    passages, questions = _passages(44, 3)
    base, extra = passages[:34], passages[34:]
    cited = [p for p in base if p.title and sum(p.title in q.text for q in base if q is not p) > 0]
    first, second = {p.id for p in cited[:4]} | {base[1].id}, {p.id for p in cited[4:7]} | {base[-1].id}
    root = tmp_path / "idx"
    build_index(base, root, STUB)
    seen: list[tuple[int, int]] = []  # per delete: vanished lexicon names, texts scanned again
    real_shrunk, real_rows = delta_delete.shrunk, delta_delete.rows_holding

    def shrunk_spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real_shrunk(*args, **kwargs)
        seen.append((len(out[1]), 0))
        return out

    def rows_spy(indices, names):  # type: ignore[no-untyped-def]
        out = real_rows(indices, names)
        seen[-1] = (seen[-1][0], len(out))
        return out

    monkeypatch.setattr(delta_delete, "shrunk", shrunk_spy)
    monkeypatch.setattr(delta_delete, "rows_holding", rows_spy)
    rest = base
    for i, gone in enumerate((first, second)):
        deleted = delete_documents(root, sorted(gone))
        rest = [p for p in rest if p.id not in gone]
        assert flattened_generation(deleted) and len(seen) == i + 1
        expected = reference_build(rest, tmp_path / f"expected{i}", STUB)
        assert_same_index(deleted, expected)
        assert_same_rankings(Index.load(root), expected, questions, ["syncge", "hipporag2"])
    assert all(vanished for vanished, _ in seen) and any(again for _, again in seen)
    grown = add_documents(root, extra)
    assert_same_index(grown, reference_build(rest + extra, tmp_path / "expected_add", STUB))


def test_a_delete_right_after_a_delta_generation_writes_its_add_whole_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The delete's base is the delta generation's add written whole (a full generation): rows of the base's
    shard and of the added one are deleted through the delta, and only the delete's generation is kept."""
    use_stub_extractor(StubExtractor())
    passages, _ = _passages(36, 0)
    root = tmp_path / "idx"
    build_index(passages[:28], root, STUB)
    add_documents(root, passages[28:], delta=DeltaConfig(write="delta"))
    said: list[bool] = []
    real = delta_delete.resolve_deletion

    def spy(inputs, base):  # type: ignore[no-untyped-def]
        out = real(inputs, base)
        said.append(out is not None)
        return out

    monkeypatch.setattr(delta_delete, "resolve_deletion", spy)
    gone = {passages[2].id, passages[29].id, passages[33].id}
    deleted = delete_documents(root, sorted(gone))
    assert said == [True] and flattened_generation(deleted)
    assert len(list((root / "generations").iterdir())) == 1
    assert_same_index(deleted, reference_build([p for p in passages if p.id not in gone], tmp_path / "rest", STUB))

"""Read leases: an index opened before an add, delete or compact keeps answering from what it loaded."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.model import Passage
from gearag.store import lease
from gearag.store.cleanup import RETAINED
from gearag.store.index import Index, check_index, read_manifest
from gearag.store.lease import LEASES_DIR, PLAIN, claimed, lease_files, lease_name
from gearag.store.writer import check_replaceable

STUB = IndexConfig.of(extractor="stub")
METHODS = ["bm25", "dense", "syncge", "gear", "hipporag2"]


@pytest.fixture
def corpus() -> tuple[list[Passage], list[str]]:
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(16, 4)
    return [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)], [q["question"] for q in questions]


def rankings(index: Index, questions: list[str]) -> list[list[str]]:
    app = Gearag(index)
    return [[index.passages[h.idx].id for h in app.retrieve(q, m, 5).passages] for m in METHODS for q in questions]


def dirs(root: Path, sub: str) -> list[str]:
    return sorted(p.name for p in (root / sub).iterdir())


def sharded(tmp_path: Path, passages: list[Passage]) -> Path:
    """An index of the first 8 passages grown by the next 2: two shards, one generation."""
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)
    add_documents(root, passages[8:10])
    return root


def test_a_reader_keeps_its_generation_and_shards_through_add_delete_and_compact(
        tmp_path: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    root = sharded(tmp_path, passages)
    before = rankings(Index.load(root), questions)
    reader = Index.open(root)  # reads nothing yet: every file it reads lazily is opened after the updates
    assert reader.lease is not None and lease_files(root) == [lease_name(reader.manifest)]
    add_documents(root, passages[10:13])
    delete_documents(root, ["w1", "w9"])
    compact(root)
    assert rankings(reader, questions) == before  # every method, from the files it loaded
    kept = reader.manifest["generation"]["name"]
    assert kept in dirs(root, "generations") and len(dirs(root, "shards")) == 3  # its 2, the compacted one
    check_replaceable(root)  # what the lease kept is gearag's: --overwrite may replace it
    check_index(root, full=True)
    # Let go, the next update removes what only the reader held; a compact with nothing to merge does too.
    reader.close()
    compact(root)
    assert kept not in dirs(root, "generations")
    add_documents(root, passages[13:14])
    manifest = read_manifest(root)
    assert dirs(root, "generations") == [manifest["generation"]["name"]]
    assert dirs(root, "shards") == sorted(s["name"] for s in manifest["shards"])
    assert lease_files(root) == []
    # A reader dropped without close() lets go too (its lease goes with it).
    dropped = Index.open(root)
    name = lease_name(dropped.manifest)
    del dropped
    gc.collect()
    add_documents(root, passages[14:])
    assert name not in dirs(root, "generations")


def test_a_reader_of_a_plain_index_keeps_reading_through_its_conversion(
        tmp_path: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, questions = corpus
    root = tmp_path / "idx"
    build_index(passages[:10], root, STUB)
    before = rankings(Index.load(root), questions)
    reader = Index.open(root)  # reads nothing yet: every file it reads lazily is opened after the update
    assert reader.lease is not None and reader.lease.name == PLAIN
    add_documents(root, passages[10:12])  # converts the index: its files move into a shard
    assert rankings(reader, questions) == before
    retained = read_manifest(root)[RETAINED]
    assert "passages.jsonl" in retained and all((root / f).is_file() for f in retained)
    check_replaceable(root)
    check_index(root, full=True)
    reader.close()
    add_documents(root, passages[12:])
    assert RETAINED not in read_manifest(root)
    assert sorted(p.name for p in root.iterdir()) == [LEASES_DIR, "generations", "manifest.json", "shards"]
    assert len(Index.open(root).passages) == len(passages)


def test_a_reader_that_waited_on_an_update_opens_what_the_update_committed(
        tmp_path: Path, corpus: tuple[list[Passage], list[str]]) -> None:
    passages, _ = corpus
    root = sharded(tmp_path, passages)
    first = lease_name(read_manifest(root))
    Index.open(root).close()  # a reader came and went: its lease file stays, for the update to lock
    opened: list[Index] = []
    with claimed(root, first) as free:  # an update removing the first generation holds its lease so
        assert free
        waiting = threading.Thread(target=lambda: opened.append(Index.open(root)))
        waiting.start()
        add_documents(root, passages[10:])  # commits a second generation; the first is claimed: kept
        assert first in dirs(root, "generations")
    waiting.join()
    assert lease_name(opened[0].manifest) == lease_name(read_manifest(root)) != first
    assert len(opened[0].passages) == len(passages)


def test_where_no_lease_file_can_be_made_an_index_opens_without_one(
        tmp_path: Path, corpus: tuple[list[Passage], list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    passages, _ = corpus
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)

    def read_only(root: Path, name: str) -> int:
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(lease, "_open", read_only)
    index = Index.open(root)
    assert index.lease is None and len(index.passages) == 8
    with claimed(root, PLAIN) as free:
        assert free
    assert not (root / LEASES_DIR).exists()

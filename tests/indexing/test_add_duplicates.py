"""gearag add skips what the index already holds: a rerun is a no-op that says so, repeats in the file
are skipped with a count, --keep-duplicates keeps them, and the check reads only the rows whose hash matches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import StubExtractor, assert_clean_error, use_stub_extractor, wiki_slice, write_jsonl
from gearag.api import Gearag
from gearag.config import IndexConfig
from gearag.data import load_corpus
from gearag.errors import DataError
from gearag.indexing import build_index
from gearag.indexing.duplicates import NewDocuments
from gearag.indexing.incremental import add_documents, compact, delete_documents
from gearag.model import Passage
from gearag.store.index import MANIFEST, Index, manifest_identity
from gearag.store.passage_contents import CONTENT_HASHES, content_hash, find_contents

STUB = IndexConfig.of(extractor="stub")


def _rows(n: int) -> list[dict[str, str]]:
    """``n`` 2Wiki passages as id-less corpus records."""
    rows, _ = wiki_slice(n, 0)
    return [{"title": r["title"], "text": r["text"]} for r in rows]


def _stub_index(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    use_stub_extractor(StubExtractor())
    tmp_path.mkdir(parents=True, exist_ok=True)
    root = tmp_path / "idx"
    build_index(load_corpus(write_jsonl(tmp_path / "base.jsonl", rows)), root, STUB)
    return root


def _rankings(root: Path) -> list[list[tuple[int, float]]]:
    app = Gearag.open(root)
    questions = ("Who directed the film?", "Where was the director born?", "Which country is the band from?")
    return [[(h.idx, h.score) for h in app.retrieve(q, "bm25", top_k=5).passages] for q in questions]


def _ids_are_unique(root: Path) -> list[str]:
    ids = [p.id for p in Index.load(root).passages]
    assert len(ids) == len(set(ids))
    return ids


def test_rerunning_an_add_is_a_no_op_that_says_so(tmp_path: Path, cli) -> None:
    rows = _rows(16)
    root = _stub_index(tmp_path, rows[:6])
    more = write_jsonl(tmp_path / "more.jsonl", rows[6:16])
    first = cli("add", root, more)
    assert first.code == 0, first.stderr
    assert len(Index.load(root).passages) == 16
    before, ranked = manifest_identity(root), _rankings(root)

    again = cli("add", root, more)
    assert again.code == 0, again.stderr
    assert f"nothing to add: all 10 passages of {more} are already in {root}" in again.stderr
    assert "now has" not in again.stderr  # no update summary: nothing was updated
    assert manifest_identity(root) == before
    assert len(Index.load(root).passages) == 16
    assert _rankings(root) == ranked
    assert _ids_are_unique(root) == [f"p{i}" for i in range(16)]
    # A plain index (never added to) is not converted by a no-op add either.
    plain = _stub_index(tmp_path / "plain", rows[:6])
    plain_before = manifest_identity(plain)
    base = tmp_path / "plain" / "base.jsonl"
    assert cli("add", plain, base).code == 0
    assert manifest_identity(plain) == plain_before
    assert json.loads((plain / MANIFEST).read_text(encoding="utf-8")).get("layout") is None


def test_documents_in_the_index_and_repeats_in_the_file_are_skipped_with_a_count(tmp_path: Path, cli) -> None:
    rows = _rows(12)
    root = _stub_index(tmp_path, rows[:6])
    # Two documents the index has, one new document twice, two more new ones.
    part = [rows[1], rows[6], rows[3], rows[6], rows[7], rows[8]]
    result = cli("add", root, write_jsonl(tmp_path / "more.jsonl", part))
    assert result.code == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("skipping"))
    assert "skipping 3 of 6 passages" in line and "2 already in" in line and "1 repeating" in line
    assert "--keep-duplicates" in line
    index = Index.load(root)
    assert [p.title for p in index.passages] == [r["title"] for r in [*rows[:6], rows[6], rows[7], rows[8]]]
    ids = _ids_are_unique(root)
    # The added documents keep the ids of their rows in the file (p<next + row>), free and unique.
    assert ids[6:] == ["p7", "p10", "p11"]
    # A deleted document is not in the index any more: adding it again adds it.
    deleted = tmp_path / "ids.txt"
    deleted.write_text("p2\n", encoding="utf-8")
    assert cli("delete", root, deleted).code == 0
    again = cli("add", root, write_jsonl(tmp_path / "again.jsonl", [rows[2]]))
    assert again.code == 0 and "skipping" not in again.stderr
    assert sum(p.title == rows[2]["title"] for p in Index.load(root).passages) == 1
    _ids_are_unique(root)


def test_keep_duplicates_adds_every_document_with_fresh_ids(tmp_path: Path, cli) -> None:
    rows = _rows(8)
    root = _stub_index(tmp_path, rows[:6])
    part = write_jsonl(tmp_path / "more.jsonl", [rows[0], rows[6], rows[6], rows[7]])
    result = cli("add", root, part, "--keep-duplicates")
    assert result.code == 0, result.stderr
    assert "skipping" not in result.stderr
    titles = [p.title for p in Index.load(root).passages]
    assert len(titles) == 10 and titles.count(rows[0]["title"]) == 2 and titles.count(rows[6]["title"]) == 2
    assert _ids_are_unique(root)[6:] == ["p6", "p7", "p8", "p9"]


def test_an_id_the_index_gives_the_same_content_is_already_there(tmp_path: Path) -> None:
    """A rerun of an add whose documents have ids is a no-op too; an id the index holds for other content stays
    an error, and --keep-duplicates keeps the id check."""
    use_stub_extractor(StubExtractor())
    rows, _ = wiki_slice(10, 0)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path / "idx"
    build_index(passages[:6], root, STUB)
    add_documents(root, passages[6:8])
    before = manifest_identity(root)
    seen: list[NewDocuments] = []
    add_documents(root, passages[5:8], on_new=seen.append)
    assert seen[0].passages == [] and seen[0].in_index == [("w5", "w5"), ("w6", "w6"), ("w7", "w7")]
    assert manifest_identity(root) == before
    other = Passage("w7", "Something else", "A text the index does not have.")
    with pytest.raises(DataError, match=r"'w7' .*already in the index"):
        add_documents(root, [other, passages[8]])
    with pytest.raises(DataError, match=r"'w7' .*already in the index"):
        add_documents(root, [passages[7]], keep_duplicates=True)
    assert manifest_identity(root) == before
    # The same content under a new id is the passage already there: skipped, naming the id it has.
    renamed = Passage("new-1", passages[2].title, passages[2].text)
    add_documents(root, [renamed, passages[8]], on_new=seen.append)
    assert seen[-1].in_index == [("new-1", "w2")] and seen[-1].passages == [passages[8]]
    assert [p.id for p in Index.load(root).passages][-1] == "w8"


def test_the_check_reads_only_rows_whose_hash_matches_and_older_indices_are_read_in_full(
        tmp_path: Path) -> None:
    use_stub_extractor(StubExtractor())
    rows, _ = wiki_slice(12, 0)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    index = build_index(passages[:8], tmp_path / "idx", STUB)
    listed = index.manifest["files"]
    assert CONTENT_HASHES in listed
    wanted = [Passage("x", passages[3].title, passages[3].text), passages[9]]
    read: list[int] = []

    class Counted(list):  # the index's rows, counting reads
        def __getitem__(self, row):  # type: ignore[no-untyped-def]
            read.append(row)
            return super().__getitem__(row)

    rows_seen = Counted(index.passages)
    found = {(passages[3].title, passages[3].text): "w3"}
    assert find_contents(index.path, listed, wanted, passages=rows_seen) == found
    assert read == [3]
    # Written before the hashes were kept: every row is read, with the same answer; a deleted row holds nothing.
    older = [rel for rel in listed if rel != CONTENT_HASHES]
    assert find_contents(index.path, older, wanted) == {(passages[3].title, passages[3].text): "w3"}
    assert find_contents(index.path, older, wanted, dead=np.array([3])) == {}
    # A shared hash costs a read, never a wrong answer: every row "matches", only row 3 holds the content.
    copy = tmp_path / "copy"
    shutil.copytree(index.path, copy)
    np.save(copy / CONTENT_HASHES, np.full(8, content_hash(passages[3].title, passages[3].text), dtype=np.int64))
    assert find_contents(copy, listed, wanted) == {(passages[3].title, passages[3].text): "w3"}


def test_an_index_converted_or_compacted_stores_the_hashes_of_its_rows(tmp_path: Path) -> None:
    """A plain index written before the hashes were kept gets them when its first add converts it; a compacted
    index keeps them for every live row."""
    use_stub_extractor(StubExtractor())
    rows, _ = wiki_slice(10, 0)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path / "idx"
    build_index(passages[:6], root, STUB)
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    del manifest["files"][CONTENT_HASHES]
    (root / CONTENT_HASHES).unlink()
    (root / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    seen: list[NewDocuments] = []
    grown = add_documents(root, [passages[1], *passages[6:8]], on_new=seen.append)  # found by reading every row
    assert seen[0].in_index == [("w1", "w1")]
    first = root / "shards" / grown.manifest["shards"][0]["name"]
    assert CONTENT_HASHES in json.loads((first / MANIFEST).read_text(encoding="utf-8"))["files"]
    delete_documents(root, ["w2"])
    compact(root)
    add_documents(root, [passages[2], passages[3]], on_new=seen.append)
    assert seen[-1].in_index == [("w3", "w3")] and [p.id for p in seen[-1].passages] == ["w2"]


def test_a_no_op_add_of_an_id_less_file_is_one_line_on_the_command_line(tmp_path: Path, cli) -> None:
    rows = _rows(6)
    root = _stub_index(tmp_path, rows)
    result = cli("add", root, tmp_path / "base.jsonl")
    assert result.code == 0
    lines = result.stderr.splitlines()
    assert f"nothing to add: all 6 passages of {tmp_path / 'base.jsonl'} are already in {root}" in lines
    assert "now has" not in result.stderr and "error" not in result.stderr
    # An id clash with other content is still the one-line error it was.
    clash = write_jsonl(tmp_path / "clash.jsonl", [{"id": "p0", "title": "Other", "text": "Other text."}])
    assert_clean_error(cli("add", root, clash), "'p0'", "already in the index")

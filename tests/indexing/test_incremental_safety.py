"""gearag add / delete / compact / index --overwrite through a symlink, and on a full disk.

An update through a symlink changes the directory the link points at and
keeps the link; a write that finds no room is one line saying the index is
unchanged, and the same command run again (with room) finishes the job — an
add resumes from what the failed run extracted.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import StubExtractor, assert_clean_error, use_stub_extractor, write_jsonl
from gearag.config import IndexConfig
from gearag.indexing import build_index
from gearag.indexing.incremental import add_documents
from gearag.model import Passage
from gearag.store import writer
from gearag.store.index import Index, manifest_identity
from gearag.store.writer import storage_full

STUB = IndexConfig.of(extractor="stub")


def _passages(n: int) -> list[Passage]:
    return [Passage(f"w{i}", f"Page {i}", f"Page {i} is about Paris and Berlin, item {i}.") for i in range(n)]


def _rows(passages: list[Passage]) -> list[dict[str, str]]:
    return [{"id": p.id, "title": p.title, "text": p.text} for p in passages]


def _leftovers(*directories: Path) -> list[str]:
    return sorted(p.name for d in directories for p in d.iterdir() if p.name.startswith("."))


def test_updates_through_a_symlink_change_the_target_and_keep_the_link(tmp_path: Path, cli) -> None:
    use_stub_extractor(StubExtractor())
    passages = _passages(12)
    real = tmp_path / "real" / "idx"
    build_index(passages[:6], real, STUB)
    link = tmp_path / "link"
    link.symlink_to(real)
    (tmp_path / "folder-link").symlink_to(tmp_path / "real")

    def run(*argv: object) -> str:
        result = cli(*argv)
        assert result.code == 0, result.stderr
        assert link.is_symlink() and os.readlink(link) == str(real)
        return result.stderr

    # The first add converts the plain index: a directory swap, where the link once failed (IsADirectoryError).
    out = run("add", link, write_jsonl(tmp_path / "a.jsonl", _rows(passages[6:8])))
    assert f"added: {link} now has 8 passages" in " ".join(out.split())  # the name the user gave
    run("add", tmp_path / "folder-link" / "idx", write_jsonl(tmp_path / "b.jsonl", _rows(passages[8:10])))
    ids = tmp_path / "ids.txt"
    ids.write_text("w0\nw9\n", encoding="utf-8")
    run("delete", link, ids)
    assert [p.id for p in Index.load(real).passages] == [f"w{i}" for i in range(1, 9)]
    run("compact", link)
    assert len(Index.load(real).manifest["shards"]) == 1
    run("index", write_jsonl(tmp_path / "c.jsonl", _rows(passages[:3])), "--out", link, "--overwrite",
        "--extractor", "stub")
    assert [p.id for p in Index.load(real).passages] == ["w0", "w1", "w2"]
    assert Index.load(link, verify=True).manifest.get("layout") is None
    assert _leftovers(tmp_path, tmp_path / "real") == []  # no .idx.old-*, .link.work, locks


def _sharded(tmp_path: Path) -> tuple[Path, list[Passage]]:
    use_stub_extractor(StubExtractor())
    passages = _passages(12)
    root = tmp_path / "idx"
    build_index(passages[:8], root, STUB)
    add_documents(root, passages[8:9])
    return root, passages


def _full_disk(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Every array an index writer writes from now on finds no room (``kind``: an errno's name, or numpy's
    short write, which has no errno)."""

    def full(path: Path, array: np.ndarray) -> None:
        if kind == "short write":
            raise OSError(f"{array.nbytes} requested and 0 written")
        code = getattr(errno, kind)
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(writer, "save_npy", full)


@pytest.mark.parametrize("kind", ["ENOSPC", "EFBIG", "short write"])
def test_a_full_disk_during_add_is_one_line_and_the_same_command_resumes(tmp_path: Path, cli, kind: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root, passages = _sharded(tmp_path)
    before = manifest_identity(root)
    corpus = write_jsonl(tmp_path / "more.jsonl", _rows(passages[9:]))
    _full_disk(monkeypatch, kind)
    reason = "cut short" if kind == "short write" else os.strerror(getattr(errno, kind))
    assert_clean_error(cli("add", root, corpus), str(root), reason, "the index is unchanged",
                       "rerun the same command: it resumes")
    assert manifest_identity(root) == before
    assert [p.id for p in Index.load(root, verify=True).passages] == [p.id for p in passages[:9]]
    monkeypatch.undo()
    counting = StubExtractor()
    use_stub_extractor(counting)
    result = cli("add", root, corpus)
    assert result.code == 0, result.stderr
    assert counting.seen == []  # resumed: the failed run's extraction was kept and read back
    assert [p.id for p in Index.load(root, verify=True).passages] == [p.id for p in passages]
    assert _leftovers(tmp_path, root, root / "shards") == []


def test_a_full_disk_at_the_commit_leaves_no_temporary_manifest(tmp_path: Path, cli,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The root manifest's temporary file goes with a failed write: nothing the manifest does not list is left
    in the index (``--overwrite`` would call it a file the index did not write)."""
    import json
    import types

    from gearag.store import shards

    root, passages = _sharded(tmp_path)
    before = manifest_identity(root)

    def dump(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shards, "json", types.SimpleNamespace(**{**vars(json), "dump": dump}))
    corpus = write_jsonl(tmp_path / "more.jsonl", _rows(passages[9:]))
    assert_clean_error(cli("add", root, corpus), "No space left on device", "the index is unchanged")
    assert manifest_identity(root) == before
    assert _leftovers(root) == []
    monkeypatch.undo()
    assert cli("add", root, corpus).code == 0
    assert len(Index.load(root, verify=True).passages) == len(passages)


@pytest.mark.parametrize("command", ["delete", "compact", "index --overwrite", "index"])
def test_a_full_disk_during_any_other_update_is_one_line(tmp_path: Path, cli, command: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root, passages = _sharded(tmp_path)
    before = manifest_identity(root)
    ids = tmp_path / "ids.txt"
    ids.write_text("w1\n", encoding="utf-8")
    corpus = write_jsonl(tmp_path / "c.jsonl", _rows(passages[:4]))
    new = tmp_path / "new"
    argv = {"delete": ("delete", root, ids), "compact": ("compact", root),
            "index --overwrite": ("index", corpus, "--out", root, "--overwrite", "--extractor", "stub"),
            "index": ("index", corpus, "--out", new, "--extractor", "stub")}[command]
    _full_disk(monkeypatch, "ENOSPC")
    left = "no index was written" if command == "index" else "unchanged"
    assert_clean_error(cli(*argv), "No space left on device", left, "rerun")
    assert manifest_identity(root) == before and not new.exists()
    assert len(Index.load(root, verify=True).passages) == 9
    monkeypatch.undo()
    result = cli(*argv)
    assert result.code == 0, result.stderr


def test_what_counts_as_a_full_disk() -> None:
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        assert storage_full(OSError(code, os.strerror(code), "/x"))
    assert storage_full(OSError("4096 requested and 512 written"))  # numpy's tofile: no errno
    assert not storage_full(OSError(errno.EACCES, "Permission denied", "/x"))
    assert not storage_full(OSError("something else"))
    assert not storage_full(FileNotFoundError(errno.ENOENT, "No such file or directory", "/x"))

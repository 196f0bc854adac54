"""gearag add / delete / compact / index --overwrite through a symlink (issue 38).

An update through a symlink changes the directory the link points at and
keeps the link.
"""

from __future__ import annotations

import os
from pathlib import Path

from conftest import StubExtractor, use_stub_extractor, write_jsonl
from gearag.config import IndexConfig
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.store.index import Index

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

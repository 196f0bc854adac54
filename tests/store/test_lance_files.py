"""The Lance local file cache is pruned: stale exports' copies go, fresh ones and anything not gearag's stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from gearag.store.lance import files as files_module
from gearag.store.lance.files import MARKER, LocalFiles, prune_cache

DAY = 86_400.0


def _hex(n: int) -> str:
    return f"{n:032x}"


def _export_dir(lance: Path, n: int, *, age_days: float, marker: bool = True) -> Path:
    """A cache directory as gearag fills it, last opened ``age_days`` ago (without marker: filled then)."""
    directory = lance / _hex(n)
    (directory / "arrays").mkdir(parents=True)
    (directory / "graph" / "prepared").mkdir(parents=True)
    np.save(directory / "arrays" / "triple_head.npy", np.arange(4))
    np.save(directory / "graph" / "prepared" / "columns_data.npy", np.ones(3))
    (directory / "arrays" / ".triple_tail.npy.123.part").write_bytes(b"half")
    if marker:
        (directory / MARKER).touch()
    _age(directory, age_days)
    return directory


def _age(path: Path, days: float) -> None:
    """Set every mtime under ``path`` (not following symlinks) ``days`` in the past."""
    when = time.time() - days * DAY
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            os.utime(os.path.join(root, name), (when, when), follow_symlinks=False)
    os.utime(path, (when, when), follow_symlinks=False)


@pytest.fixture
def lance(tmp_path: Path) -> Path:
    (tmp_path / "lance").mkdir()
    return tmp_path / "lance"


def test_stale_exports_go_fresh_ones_and_foreign_files_stay(lance: Path, tmp_path: Path) -> None:
    stale = _export_dir(lance, 1, age_days=10)
    fresh = _export_dir(lance, 2, age_days=1)
    legacy_stale = _export_dir(lance, 3, age_days=30, marker=False)  # filled before markers existed
    legacy_fresh = _export_dir(lance, 4, age_days=0.5, marker=False)
    reopened = _export_dir(lance, 5, age_days=10)
    (reopened / MARKER).touch()  # opened again today: its files are old, its marker is not
    foreign = lance / _hex(6)  # a gearag-looking name holding someone else's file
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    odd_name = _export_dir(lance, 7, age_days=10).rename(lance / "backup")
    (lance / _hex(8)).write_text("a file, not a directory")
    outside = _export_dir(tmp_path, 9, age_days=10)  # reached only through symlinks
    (lance / _hex(10)).symlink_to(outside, target_is_directory=True)
    linked = _export_dir(lance, 11, age_days=10)
    (linked / "arrays" / "elsewhere.npy").symlink_to(outside / "arrays" / "triple_head.npy")
    _age(linked, 10)
    interrupted = _export_dir(lance, 12, age_days=0).rename(lance / f".prune-{_hex(12)}-99999")
    for path in (foreign, lance / _hex(8)):
        _age(path, 10)

    removed = prune_cache(lance, 7)

    assert sorted(removed) == [_hex(1), _hex(3)]
    assert not stale.exists() and not legacy_stale.exists() and not interrupted.exists()
    for kept in (fresh, legacy_fresh, reopened, foreign / "notes.txt", odd_name, lance / _hex(8), linked):
        assert kept.exists(), kept
    assert (lance / _hex(10)).is_symlink() and (outside / "arrays" / "triple_head.npy").is_file()
    assert sorted(p.name for p in lance.iterdir() if p.name.startswith(".")) == []


def test_zero_days_never_prunes(lance: Path) -> None:
    stale = _export_dir(lance, 1, age_days=1000)
    assert prune_cache(lance, 0) == [] and stale.exists()
    LocalFiles(None, "idx", {}, lance / _hex(2), keep_days=0)
    assert stale.exists()


def test_a_new_export_prunes_its_stale_siblings_but_never_what_this_process_opened(lance: Path) -> None:
    mine = _export_dir(lance, 1, age_days=0)
    LocalFiles(None, "idx", {}, mine, keep_days=7)  # opened by this process (exists: nothing pruned)
    _age(mine, 10)
    stale = _export_dir(lance, 2, age_days=10)
    again = LocalFiles(None, "idx", {}, _export_dir(lance, 3, age_days=2), keep_days=7)  # opened again: no prune
    assert time.time() - (again.directory / MARKER).stat().st_mtime < 60  # last used: now
    assert stale.exists()
    new = LocalFiles(None, "idx", {}, lance / _hex(4), keep_days=7)  # a new export: fills a new directory
    assert new.directory.is_dir() and (new.directory / MARKER).is_file()
    assert not stale.exists() and mine.exists()


def test_races_with_other_processes_are_ignored(lance: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _export_dir(lance, 1, age_days=10), _export_dir(lance, 2, age_days=10)
    real_rename = os.rename

    def rename(src: object, dst: object) -> None:
        if Path(str(src)).name == _hex(1):  # another process renamed or deleted it first
            raise FileNotFoundError(src)
        real_rename(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(files_module.os, "rename", rename)
    assert prune_cache(lance, 7) == [_hex(2)]
    assert first.exists() and not second.exists()
    monkeypatch.undo()
    real_walk = os.walk

    def vanishing(top: object, *args: object, **kwargs: object):  # deleted while it is looked at
        for root, dirs, names in real_walk(top, *args, **kwargs):  # type: ignore[call-overload]
            yield root, dirs, [*names, "gone.npy"]

    monkeypatch.setattr(files_module.os, "walk", vanishing)
    assert prune_cache(lance, 7) == [] and first.exists()


def test_an_opened_index_copies_a_file_again_when_its_directory_was_pruned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lancedb", reason="the lance extra is not installed")
    import shutil

    from conftest import StubExtractor, tiny_passages
    from gearag.config import IndexConfig
    from gearag.indexing import build_index
    from gearag.indexing.export import export_index
    from gearag.store.lance.collection import LanceSearchConfig
    from gearag.store.lance.index import open_lance_index

    index = build_index(tiny_passages(), tmp_path / "index", IndexConfig.of(extractor="stub"),
                        extractor=StubExtractor())
    export_index(index.path, tmp_path / "idx.lance")
    cache = tmp_path / "cache"
    stale = _export_dir(cache / "lance", 1, age_days=8)
    opened = open_lance_index(tmp_path / "idx.lance", config=LanceSearchConfig(cache_dir=str(cache)))
    assert not stale.exists() and (opened.files.directory / MARKER).is_file()
    kept = _export_dir(cache / "lance", 2, age_days=8)
    again = open_lance_index(tmp_path / "idx.lance", config=LanceSearchConfig(cache_dir=str(cache),
                                                                              cache_keep_days=1))
    assert kept.exists()  # the same export again: its directory exists, nothing is pruned
    shutil.rmtree(again.files.directory)  # another process pruned it (the mapped arrays stay readable)
    np.testing.assert_array_equal(again.files.array("arrays/triple_head.npy"), index.graph.head)
    assert again.graph.head.sum() == index.graph.head.sum()
    real_load, loads = np.load, []

    def pruned_meanwhile(path: Path, *args: object, **kwargs: object) -> object:
        loads.append(path)
        if len(loads) == 1:  # between the copy and the mapping
            shutil.rmtree(again.files.directory)
        return real_load(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files_module.np, "load", pruned_meanwhile)
    np.testing.assert_array_equal(again.files.array("arrays/triple_tail.npy"), index.graph.tail)
    assert len(loads) == 2

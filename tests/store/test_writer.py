"""IndexWriter's background checksums: the manifest lists what is on disk at commit, however a file was written."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from gearag.store import checksum
from gearag.store.checksum import file_digest
from gearag.store.index import read_manifest
from gearag.store.writer import IndexWriter


def _threads_hashing(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    real = checksum.file_digest

    def recorded(path: Path, name: str = checksum.WRITTEN) -> str:
        seen.append((path.name, threading.current_thread().name))
        return real(path, name)

    monkeypatch.setattr(checksum, "file_digest", recorded)
    return seen


def test_written_files_are_checksummed_off_the_main_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _threads_hashing(monkeypatch)
    out = tmp_path / "out"
    with IndexWriter(out) as w:
        w.write_array("a.npy", np.arange(1000))
        w.write_json("b.json", {"x": [1, 2]})
        w.write_jsonl("c.jsonl", [{"i": i} for i in range(3)], offsets=True)
        w.commit({})
    assert {name for name, _ in seen} >= {"a.npy", "b.json", "c.jsonl"}
    assert all(thread != threading.main_thread().name for _, thread in seen)
    files = read_manifest(out)["files"]
    for rel, meta in files.items():
        assert meta["xxh3_128"] == file_digest(out / rel) and meta["bytes"] == (out / rel).stat().st_size


def test_a_file_rewritten_after_its_background_checksum_is_checksummed_again(tmp_path: Path) -> None:
    """Same size, written through ``path()`` at once after ``write_array``: the listing is of the new bytes."""
    out = tmp_path / "out"
    with IndexWriter(out) as w:
        w.write_array("a.npy", np.zeros(1000, dtype=np.int64))
        w.write_json("b.json", [1, 2, 3])
        with w.path("a.npy").open("r+b") as fh:  # same size, maybe within the same mtime tick
            fh.seek(-8, os.SEEK_END)
            fh.write(np.int64(7).tobytes())
        w.path("b.json").write_text("[4, 5, 6]", encoding="utf-8")
        w.commit({})
    files = read_manifest(out)["files"]
    assert np.load(out / "a.npy")[-1] == 7
    assert files["a.npy"]["xxh3_128"] == file_digest(out / "a.npy")
    assert files["b.json"]["xxh3_128"] == file_digest(out / "b.json")


def test_an_aborted_writer_stops_its_checksum_thread(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with IndexWriter(out) as w:
        for i in range(20):
            w.write_array(f"a{i}.npy", np.arange(10_000))
    assert not out.exists()
    assert not any(t.name.startswith("gearag-seal") for t in threading.enumerate())

"""Manifest checksums: XXH3-128 for new files, SHA-256 entries of older indexes still read and checked."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import xxhash

from conftest import edit_manifest, flip_byte
from gearag.errors import IndexFormatError
from gearag.store import checksum
from gearag.store.index import Index, read_manifest
from gearag.store.writer import IndexWriter


def test_entries_hold_the_xxh3_digest_of_the_bytes_and_of_their_sampled_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "SMALL_FILE_BYTES", 1000)
    monkeypatch.setattr(checksum, "SAMPLE_BLOCK_BYTES", 100)
    monkeypatch.setattr(checksum, "SAMPLE_BLOCKS", 3)
    data = np.random.default_rng(0).bytes(2001)
    (tmp_path / "f").write_bytes(data)
    meta = checksum.entry(tmp_path / "f", len(data))
    blocks = data[0:100] + data[950:1050] + data[1901:2001]  # first, middle and last block
    assert meta == {"bytes": 2001, "xxh3_128": xxhash.xxh3_128(data).hexdigest(),
                    "sample": xxhash.xxh3_128(blocks).hexdigest()}
    assert checksum.mismatch(tmp_path / "f", meta, full=True) is None


def _to_sha256(index: Path) -> None:
    """Rewrite ``index``'s manifest as a format-2 gearag wrote it: every entry SHA-256, with a SHA-256 sample
    for files over the (patched) threshold."""
    def edit(m: dict) -> None:
        m["format_version"] = 2
        for rel, meta in m["files"].items():
            path = index / rel
            meta.pop("xxh3_128")
            meta["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
            if meta["bytes"] > checksum.SMALL_FILE_BYTES:
                meta["sample"] = checksum.sampled_digest(path, meta["bytes"], "sha256")
    edit_manifest(index, edit)


def test_an_index_with_sha256_entries_loads_and_is_checked_with_sha256(
        tiny_index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "SMALL_FILE_BYTES", 1024)
    index = tmp_path / "old"
    shutil.copytree(tiny_index.path, index)
    _to_sha256(index)
    assert len(Index.load(index, verify=True).passages) == len(tiny_index.passages)
    vectors = index / "vectors" / "passages.npy"
    flip_byte(vectors, vectors.stat().st_size - 1)  # in the last sampled block
    with pytest.raises(IndexFormatError, match=r"vectors/passages\.npy fails its sampled checksum"):
        Index.load(index)


def test_a_linked_sha256_entry_is_kept_beside_new_xxh3_ones(tiny_index: Index, tmp_path: Path) -> None:
    """An add links an older index's files into a generation: one manifest then mixes both algorithms."""
    source = tmp_path / "old"
    shutil.copytree(tiny_index.path, source)
    _to_sha256(source)
    out = tmp_path / "out"
    with IndexWriter(out) as w:
        w.link("entities.json", source / "entities.json", source)
        w.write_array("new.npy", np.arange(3))
        w.commit({})
    files = read_manifest(out)["files"]
    assert files["entities.json"] == read_manifest(source)["files"]["entities.json"]
    assert checksum.algorithm(files["entities.json"]) == "sha256"
    assert checksum.algorithm(files["new.npy"]) == "xxh3_128"
    assert checksum.same_content(files["entities.json"], read_manifest(source)["files"]["entities.json"])
    assert not checksum.same_content(files["new.npy"], files["entities.json"])


@pytest.mark.parametrize("entry", [{"bytes": 3}, {"bytes": 3, "sha256": "a", "xxh3_128": "b"},
                                   {"bytes": True, "xxh3_128": "b"}, {"bytes": 3, "xxh3_128": 5}])
def test_an_entry_without_exactly_one_digest_is_a_one_line_error(
        tiny_index: Index, tmp_path: Path, entry: dict) -> None:
    index = tmp_path / "copy"
    shutil.copytree(tiny_index.path, index)
    edit_manifest(index, lambda m: m["files"].update({"entities.json": entry}))
    with pytest.raises(IndexFormatError, match=r"files\.entities\.json.*malformed.*rebuild") as err:
        Index.load(index)
    assert "\n" not in str(err.value)
